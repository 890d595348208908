"""Reference of the stream-floor kernel: the sum of every word of src, modulo 2^32."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """src: words of every size (a sum that drops or repeats a vector is wrong)."""
    return {"src": rng.integers(0, 2**32, size=shape["n_words"], dtype=np.uint64).astype(np.uint32)}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    """total = Σ src mod 2^32."""
    total = int(inputs["src"].astype(np.uint64).sum()) % 2**32
    return {"total": np.array([total], dtype=np.uint32)}
