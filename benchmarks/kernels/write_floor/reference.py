"""Reference of the write-floor kernel: vector i of dst is src's vector i mod 256 plus i."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """src: one 4 KB row of words of every size."""
    return {"src": rng.integers(0, 2**32, size=1024, dtype=np.uint64).astype(np.uint32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    """dst[4i + c] = src[4 (i mod 256) + c] + i, modulo 2^32."""
    n_vec = shape["n_words"] // 4
    row = inputs["src"].astype(np.uint64).reshape(256, 4)
    i = np.arange(n_vec, dtype=np.uint64)
    dst = (row[i % 256] + i[:, None]) % 2**32
    return {"dst": dst.astype(np.uint32).reshape(-1)}
