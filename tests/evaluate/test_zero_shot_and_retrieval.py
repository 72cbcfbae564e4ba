"""Zero-shot classification with prompt templates and retrieval recall (vitjax/evaluate/zero_shot.py,
retrieval.py) on hand-made embeddings and similarity matrices."""
import numpy as np
import pytest

from vitjax.evaluate import retrieval, zero_shot


def test_a_permutation_matrix_retrieves_every_pair_first():
    order = np.random.default_rng(0).permutation(7)
    similarity = np.eye(7)[order]  # image i is most like text order[i]
    relevant = similarity.astype(bool)
    assert retrieval.recall_at_k(similarity, relevant, ks=(1, 5)) == {
        "image_to_text_r1": 1.0, "image_to_text_r5": 1.0, "text_to_image_r1": 1.0, "text_to_image_r5": 1.0}
    diagonal = retrieval.recall_at_k(similarity, ks=(1,))  # relevant=None: pair i is (image i, text i)
    assert diagonal["image_to_text_r1"] == np.mean(order == np.arange(7))


def test_a_known_ranking_gives_known_recalls():
    # Image i's own text (the diagonal) ranks i + 1-th in its row: scores fall along the row from text 0,
    # except that the own text sits just below the first i texts.
    n = 6
    similarity = np.zeros((n, n))
    for i in range(n):
        others = [j for j in range(n) if j != i]
        ranked = others[:i] + [i] + others[i:]
        similarity[i, ranked] = np.arange(n, 0, -1) + 0.01 * i  # the offset keeps columns free of ties
    found = retrieval.recall_at_k(similarity, ks=(1, 2, 5))
    assert found["image_to_text_r1"] == 1 / 6 and found["image_to_text_r2"] == 2 / 6
    assert found["image_to_text_r5"] == 5 / 6
    # Columns: text j's own image by rank. Recomputed by counting images scoring above it.
    above = np.array([(similarity[:, j] > similarity[j, j]).sum() for j in range(n)])
    for k in (1, 2, 5):
        assert found[f"text_to_image_r{k}"] == np.mean(above < k)


def test_several_relevant_texts_count_a_hit_and_ties_rank_by_index():
    similarity = np.array([[0.9, 0.8, 0.1], [0.5, 0.5, 0.5]])
    relevant = np.array([[False, True, False], [False, False, True]])
    found = retrieval.recall_at_k(similarity, relevant, ks=(1, 2))
    assert found["image_to_text_r1"] == 0.0 and found["image_to_text_r2"] == 0.5  # row 1's tie: text 2 last
    with pytest.raises(ValueError, match="must be square"):
        retrieval.recall_at_k(similarity)


def test_class_embeddings_average_the_normalised_prompts_and_normalise_again():
    rng = np.random.default_rng(1)
    classes, templates, dim = 4, 3, 5
    prompts = rng.normal(size=(classes * templates, dim)) * rng.uniform(0.5, 3, (classes * templates, 1))
    found = np.asarray(zero_shot.class_embeddings(prompts, templates))
    expected = np.empty((classes, dim))
    for c in range(classes):
        rows = prompts[c * templates:(c + 1) * templates]
        mean = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).mean(axis=0)
        expected[c] = mean / np.linalg.norm(mean)
    np.testing.assert_allclose(found, expected, rtol=1e-5)
    images = expected[[2, 0, 3]] + 0.01 * rng.normal(size=(3, dim))
    np.testing.assert_array_equal(zero_shot.predict(images, found), [2, 0, 3])


def test_prompts_are_class_major_and_a_template_naming_an_unknown_field_is_an_error():
    classes = [{"colour": "red", "item": "bag"}, {"colour": "blue", "item": "coat"}]
    assert zero_shot.prompts(classes, ["a {colour} {item}", "a small {item}"]) == [
        "a red bag", "a small bag", "a blue coat", "a small coat"]
    with pytest.raises(ValueError, match="names 'shade'.*e.g. 'a {colour} {item}'"):
        zero_shot.prompts(classes, ["a {shade} {item}"])
    with pytest.raises(ValueError, match="names no field"):
        zero_shot.prompts(classes, ["a purple bag"])


def test_caption_retrieval_counts_each_caption_once():
    """Image 0's own caption (composition 1) is the second most similar of the captions shown; the
    first, composition 0, is the caption of five other pairs. Among the pairs' captions with their
    copies, those five tie at the top and image 0's R@5 would be a miss; among distinct captions it hits."""
    from vitjax.evaluate import caption_evals

    texts = np.eye(3)  # compositions 0, 1, 2 (2 not among the pairs)
    labels = np.array([1, 0, 0, 0, 0, 0])
    images = np.array([[0.9, 0.5, 0.0]] + [[1.0, 0.0, 0.0]] * 5)
    found = caption_evals.caption_retrieval(images, texts, labels)
    assert found["image_to_text_r1"] == 5 / 6 and found["image_to_text_r5"] == 1.0
    # Texts to images, each distinct caption one query: both find one of their images first.
    assert found["text_to_image_r1"] == 1.0
    # With every pair's caption as a candidate (copies included), image 0's top 5 is composition 0 alone.
    copies = retrieval.recall_at_k(images @ texts[labels].T, labels[:, None] == labels[None, :])
    assert copies["image_to_text_r5"] == copies["image_to_text_r1"] == 5 / 6
