"""numpy reference for attention_bwd_dq_split_out, written from the math (float64, GQA-aware)."""

from __future__ import annotations

import numpy as np


def _per_head(hist: np.ndarray, shape: dict[str, int]) -> np.ndarray:
    """K or V [n, kv_heads, d] as [n, n_heads, d]: query head h reads KV head h / heads_per_kv."""
    h, kvh = shape["n_heads"], shape["n_kv_heads"]
    return hist.astype(np.float64)[:, np.arange(h) // (h // kvh), :]


def make_inputs(shape: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs of realistic range: probs a softmax, out the forward's output probs · V."""
    d, h, kvh, n = shape["head_dim"], shape["n_heads"], shape["n_kv_heads"], shape["history_len"]
    logits = rng.normal(0.0, 2.0, size=(h, n))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    v_hist = rng.normal(0.0, 1.0, size=(n, kvh, d))
    return {
        "k_hist": rng.normal(0.0, 1.0, size=(n, kvh, d)),
        "v_hist": v_hist,
        "probs": probs,
        "d_out": rng.normal(0.0, 1.0, size=(h, d)),
        "out": np.einsum("hn,nhd->hd", probs, _per_head(v_hist, shape)),
    }


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    """d_scores [n_heads, history_len] and d_q [n_heads, head_dim], D taken as d_out · out."""
    k = _per_head(inputs["k_hist"], shape)
    v = _per_head(inputs["v_hist"], shape)
    probs = inputs["probs"].astype(np.float64)
    d_out = inputs["d_out"].astype(np.float64)
    d_probs = np.einsum("hd,nhd->hn", d_out, v)
    big_d = (d_out * inputs["out"].astype(np.float64)).sum(axis=1, keepdims=True)
    d_scores = probs * (d_probs - big_d)
    return {"d_scores": d_scores, "d_q": np.einsum("hn,nhd->hd", d_scores, k)}
