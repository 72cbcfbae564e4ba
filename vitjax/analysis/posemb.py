"""Similarity of learned position embeddings (ViT paper Fig. 7 centre).

A ViT is told nothing about 2-D layout: its position embedding is a free vector per token. If the
trained vectors of nearby patches are similar (and those sharing a row or column), the model has
learned the image topology from data. Only learned tables can show this; fixed sin-cos tables are
similar by construction, and models without position embeddings have nothing to compare.
"""
import numpy as np


class NotApplicable(Exception):
    """The analysis does not apply to this model; the message says why, for the user."""


def learned_table(params) -> np.ndarray:
    """The [tokens, width] learned position embedding (CLS entry included), or NotApplicable."""
    posembed = params.get("Transformer", {}).get("posembed_input", {})
    if "pos_embedding" not in posembed:
        raise NotApplicable(
            "the model has no learned position embedding (posemb is 'sincos1d', 'sincos2d' or 'none', or "
            "it is not a ViT), so there is no learned similarity pattern to show")
    table = np.asarray(posembed["pos_embedding"], np.float64)
    return table.reshape(table.shape[-2], table.shape[-1])


def cosine_similarity(table: np.ndarray) -> np.ndarray:
    """[N, D] -> [N, N] cosine similarity of every row with every other."""
    norms = np.linalg.norm(table, axis=-1, keepdims=True)
    unit = table / np.maximum(norms, 1e-12)
    return unit @ unit.T


def similarity_grid(params, grid: tuple[int, int], num_prefix: int) -> np.ndarray:
    """[rows, cols, rows, cols]: entry [r, c] is the map of patch (r, c)'s similarity to every patch.

    The first `num_prefix` entries (the CLS token's) are left out: they have no place on the grid.
    """
    table = learned_table(params)
    if table.shape[0] != num_prefix + grid[0] * grid[1]:
        raise ValueError(
            f"the position embedding has {table.shape[0]} entries, but {num_prefix} prefix token(s) and a "
            f"{grid[0]}x{grid[1]} patch grid need {num_prefix + grid[0] * grid[1]}: were the images "
            f"preprocessed to the resolution the model was trained at?")
    similarity = cosine_similarity(table[num_prefix:])
    return similarity.reshape(grid[0], grid[1], grid[0], grid[1])


def similarity_rows(similarity: np.ndarray) -> list[dict]:
    """The table behind the figure: one row per (query patch, key patch) pair."""
    rows, cols = similarity.shape[:2]
    return [dict(query_row=qr, query_col=qc, key_row=kr, key_col=kc, cosine=float(similarity[qr, qc, kr, kc]))
            for qr in range(rows) for qc in range(cols) for kr in range(rows) for kc in range(cols)]


def neighbour_similarity(similarity: np.ndarray) -> dict:
    """Mean cosine similarity between distinct patches, by how they relate on the grid.

    'neighbour': 4-neighbours; 'same_row' / 'same_column': sharing a row / column but not adjacent;
    'other': sharing neither. A learned embedding that picked up the 2-D layout scores neighbour >
    same row/column > other; a random (initial) one scores about zero everywhere.
    """
    rows, cols = similarity.shape[:2]
    r = np.arange(rows)[:, None, None, None]
    c = np.arange(cols)[None, :, None, None]
    kr = np.arange(rows)[None, None, :, None]
    kc = np.arange(cols)[None, None, None, :]
    step = np.abs(r - kr) + np.abs(c - kc)
    relations = {"neighbour": step == 1,
                 "same_row": (r == kr) & (step > 1),
                 "same_column": (c == kc) & (step > 1),
                 "other": (r != kr) & (c != kc)}
    return {name: float(similarity[np.broadcast_to(mask, similarity.shape)].mean()) if mask.any() else None
            for name, mask in relations.items()}
