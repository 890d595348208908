"""numpy reference for attention_bwd_dq, written from the math (float64, GQA-aware)."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs of realistic range: probabilities are a softmax (each row sums to 1)."""
    d, h, kvh, n = shape["head_dim"], shape["n_heads"], shape["n_kv_heads"], shape["history_len"]
    logits = rng.normal(0.0, 2.0, size=(h, n))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    return {
        "k_hist": rng.normal(0.0, 1.0, size=(n, kvh, d)),
        "v_hist": rng.normal(0.0, 1.0, size=(n, kvh, d)),
        "probs": probs,
        "d_out": rng.normal(0.0, 1.0, size=(h, d)),
    }


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    """d_scores [n_heads, history_len] and d_q [n_heads, head_dim]."""
    h, kvh = shape["n_heads"], shape["n_kv_heads"]
    kv_of_head = np.arange(h) // (h // kvh)
    k = inputs["k_hist"].astype(np.float64)[:, kv_of_head, :]  # [n, h, d]
    v = inputs["v_hist"].astype(np.float64)[:, kv_of_head, :]
    probs = inputs["probs"].astype(np.float64)
    d_out = inputs["d_out"].astype(np.float64)
    d_probs = np.einsum("hd,nhd->hn", d_out, v)
    sum_pd = (probs * d_probs).sum(axis=1, keepdims=True)
    d_scores = probs * (d_probs - sum_pd)
    d_q = np.einsum("hn,nhd->hd", d_scores, k)
    return {"d_scores": d_scores, "d_q": d_q}
