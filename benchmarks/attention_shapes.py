"""The attention benchmarks' shapes, kernel families and the bytes each family must move.

Shared by fair_attention.py (both sides and the table), torch_graphs.py, stream_floor.py,
pass_breakdown.py and largest_shapes.py, so every script times and sizes the same problems.
"""

from __future__ import annotations

import argparse

# The shapes: (head_dim, n_heads, n_kv_heads, history_len).
SHAPES = [(256, 8, 4, 4096), (256, 8, 4, 1024), (256, 8, 1, 4096), (128, 32, 8, 4096)]
# math → wgslgen kernels that compute it (the first kernel's baseline is the baseline).
FAMILIES = {
    "bwd_dq": ["attention_bwd_dq", "attention_bwd_dq_split"],
    # the same outputs given the forward's output too (D = d_out·out, as FlashAttention's)
    "bwd_dq_out": ["attention_bwd_dq_split_out"],
    "bwd_dkv": ["attention_bwd_dkv"],
    "forward": ["attention", "attention_split"],
    "probs": ["attention_probs"],
}
# Issue 12's targets: ours ≤ this × PyTorch's best graph at the same K/V dtype (probs: none).
TARGET_OF_TORCH = {"bwd_dq": 0.5, "bwd_dq_out": 0.5, "bwd_dkv": 0.7, "forward": 0.7}
FORWARD = {"attention", "attention_split", "attention_probs"}
KV_OF_STORAGE = {"f32": "f32", "f16": "f16", "pf16": "f16"}


def shape_of(kernel: str, s: tuple[int, int, int, int]) -> dict[str, int]:
    """wgslgen's problem shape of ``kernel`` at (head_dim, n_heads, n_kv_heads, history)."""
    d, h, g, n = s
    shape = {"head_dim": d, "n_heads": h, "n_kv_heads": g, "history_len": n}
    if kernel in FORWARD:
        shape |= {"pos": n - 1, "window": 0}
    return shape


def bytes_moved(family: str, s: tuple[int, int, int, int], kv: str) -> int:
    """The bytes the math must read and write at least once (f32 except K/V)."""
    d, h, g, n = s
    kvb = 4 if kv == "f32" else 2
    hist = n * g * d * kvb
    if family == "bwd_dq":  # K, V, probs, d_out → d_scores, d_q
        return 2 * hist + 4 * (2 * h * n + 2 * h * d)
    if family == "bwd_dq_out":  # K, V, probs, d_out, out → d_scores, d_q
        return 2 * hist + 4 * (2 * h * n + 3 * h * d)
    if family == "bwd_dkv":  # q, d_out, probs, d_scores → d_k, d_v
        return 2 * hist + 4 * (2 * h * n + 2 * h * d)
    if family == "forward":  # K, V, q → out
        return 2 * hist + 4 * 2 * h * d
    return hist + 4 * (h * d + h * n)  # probs: K, q → probs


def parse_shape(text: str) -> tuple[int, int, int, int]:
    """``d,H,KV,N`` as four integers (an argparse type: a bad one is a usage error)."""
    try:
        d, h, kv, n = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: want d,H,KV,N (four integers)") from None
    return d, h, kv, n
