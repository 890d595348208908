"""numpy reference for attention (forward decode), written from the math (float64, GQA-aware)."""

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
    """q, K, V with scores of a few units (a peaked but not one-hot softmax).

    Masked keys are pushed towards each KV group's queries, so their scores are the largest
    of the row: a kernel that lets any of them through gets a visibly wrong answer.
    """
    d, h, kvh, n = shape["head_dim"], shape["n_heads"], shape["n_kv_heads"], shape["history_len"]
    scale = 1.5 / d**0.25  # q·k then has a standard deviation of about 2.25
    q = rng.normal(0.0, scale, size=(h, d))
    k = rng.normal(0.0, scale, size=(n, kvh, d))
    v = rng.normal(0.0, 1.0, size=(n, kvh, d))
    group_q = q.reshape(kvh, h // kvh, d).mean(axis=1)  # [kvh, d]
    direction = group_q / np.linalg.norm(group_q, axis=1, keepdims=True)
    masked = ~_visible(shape)
    k[masked] += 3.0 * direction[None, :, :]
    v[masked] += 5.0
    return {"k_hist": k, "v_hist": v, "q": q}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    """out [n_heads, head_dim] = softmax over visible j of q[h]·k[j, kv], times v[j, kv]."""
    h, kvh = shape["n_heads"], shape["n_kv_heads"]
    kv_of_head = np.arange(h) // (h // kvh)
    k = inputs["k_hist"].astype(np.float64)[:, kv_of_head, :]  # [n, h, d]
    v = inputs["v_hist"].astype(np.float64)[:, kv_of_head, :]
    q = inputs["q"].astype(np.float64)
    scores = np.einsum("hd,nhd->hn", q, k)
    scores = np.where(_visible(shape)[None, :], scores, -np.inf)
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return {"out": np.einsum("hn,nhd->hd", p, v)}
