"""numpy reference for attention_probs (forward decode softmax), from the math (float64, GQA)."""

from __future__ import annotations

import numpy as np


def _visible(shape: dict[str, int]) -> np.ndarray:
    """Boolean [history_len]: keys the query at `pos` sees (causal, sliding window if > 0)."""
    j = np.arange(shape["history_len"])
    pos, window = shape["pos"], shape["window"]
    mask = j <= pos
    if window > 0:
        mask &= j >= pos + 1 - window
    return mask


def make_inputs(shape: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """q and K with scores of a few units (a peaked but not one-hot softmax).

    Masked keys are pushed towards each KV group's queries, so their scores are the largest
    of the row: a kernel that lets any of them through gets a visibly wrong answer.
    """
    d, h, kvh, n = shape["head_dim"], shape["n_heads"], shape["n_kv_heads"], shape["history_len"]
    scale = 1.5 / d**0.25  # q·k then has a standard deviation of about 2.25
    q = rng.normal(0.0, scale, size=(h, d))
    k = rng.normal(0.0, scale, size=(n, kvh, d))
    group_q = q.reshape(kvh, h // kvh, d).mean(axis=1)  # [kvh, d]
    direction = group_q / np.linalg.norm(group_q, axis=1, keepdims=True)
    k[~_visible(shape)] += 3.0 * direction[None, :, :]
    return {"k_hist": k, "q": q}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    """probs [n_heads, history_len]: softmax of q[h]·k[j, kv] over visible j; 0 elsewhere."""
    h, kvh = shape["n_heads"], shape["n_kv_heads"]
    kv_of_head = np.arange(h) // (h // kvh)
    k = inputs["k_hist"].astype(np.float64)[:, kv_of_head, :]  # [n, h, d]
    q = inputs["q"].astype(np.float64)
    visible = _visible(shape)[None, :]
    scores = np.einsum("hd,nhd->hn", q, k)
    top = np.where(visible, scores, -np.inf).max(axis=1, keepdims=True)
    e = np.where(visible, np.exp(np.where(visible, scores, top) - top), 0.0)
    return {"probs": e / e.sum(axis=1, keepdims=True)}
