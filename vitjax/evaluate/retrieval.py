"""Image-text retrieval recall (R@k, both directions) from a similarity matrix, in numpy.

    recall_at_k(similarity, relevant, ks=(1, 5))
    # {'image_to_text_r1': ..., 'image_to_text_r5': ..., 'text_to_image_r1': ..., 'text_to_image_r5': ...}

`similarity` [images, texts]: higher is more alike. `relevant` [images, texts] bool says which texts
describe which image (None: the diagonal, pair i is image i and text i). R@k image -> text is the share
of images with a relevant text among their k most similar texts; text -> image the share of texts with
a relevant image among their k most similar images (COCO/Flickr's protocol, Karpathy & Fei-Fei 2015).
A `relevant` matrix lets several texts be right for one image and several images for one text. Pass
each distinct text once: copies of one text tie exactly and fill the top k with one text
(caption_evals.caption_retrieval does so for the caption data, whose 400 compositions repeat). Ties in
similarity rank by index (a stable sort), so the score never depends on the platform.
"""
import numpy as np


def recall_at_k(similarity, relevant=None, ks=(1, 5)) -> dict:
    similarity = np.asarray(similarity, np.float64)
    if similarity.ndim != 2:
        raise ValueError(f"similarity must be [images, texts], got shape {similarity.shape}")
    if relevant is None:
        if similarity.shape[0] != similarity.shape[1]:
            raise ValueError(f"without `relevant` pair i is image i and text i: the matrix must be square, got "
                             f"{similarity.shape}; pass relevant [images, texts] booleans")
        relevant = np.eye(similarity.shape[0], dtype=bool)
    relevant = np.asarray(relevant, bool)
    if relevant.shape != similarity.shape:
        raise ValueError(f"relevant {relevant.shape} must have similarity's shape {similarity.shape}")
    scores = {}
    for direction, sims, rel in (("image_to_text", similarity, relevant), ("text_to_image", similarity.T, relevant.T)):
        ranked = np.argsort(-sims, axis=1, kind="stable")
        hits = np.take_along_axis(rel, ranked, axis=1)
        for k in ks:
            scores[f"{direction}_r{k}"] = float(np.mean(hits[:, :k].any(axis=1)))
    return scores
