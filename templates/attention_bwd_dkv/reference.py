"""numpy reference for attention_bwd_dkv, written from the math (float64, GQA-aware)."""

from __future__ import annotations

import numpy as np


def _softmax_rows(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def make_inputs(shape: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs of realistic range: probs is a softmax (rows sum to 1) and d_scores is what
    pass 1 makes of it, probs · (d_probs − Σ probs · d_probs), so each row sums to 0."""
    d, h, n = shape["head_dim"], shape["n_heads"], shape["history_len"]
    probs = _softmax_rows(rng.normal(0.0, 2.0, size=(h, n)))
    d_probs = rng.normal(0.0, 1.0, size=(h, n))
    d_scores = probs * (d_probs - (probs * d_probs).sum(axis=1, keepdims=True))
    return {
        "q": rng.normal(0.0, 1.0, size=(h, d)),
        "d_out": rng.normal(0.0, 1.0, size=(h, d)),
        "probs": probs,
        "d_scores": d_scores,
    }


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    """d_k and d_v [history_len, n_kv_heads, head_dim]: sums over each KV head's query heads."""
    d, h, kvh = shape["head_dim"], shape["n_heads"], shape["n_kv_heads"]
    group = h // kvh
    q = inputs["q"].astype(np.float64).reshape(kvh, group, d)
    d_out = inputs["d_out"].astype(np.float64).reshape(kvh, group, d)
    probs = inputs["probs"].astype(np.float64).reshape(kvh, group, -1)
    d_scores = inputs["d_scores"].astype(np.float64).reshape(kvh, group, -1)
    return {
        "d_k": np.einsum("kgn,kgd->nkd", d_scores, q),
        "d_v": np.einsum("kgn,kgd->nkd", probs, d_out),
    }
