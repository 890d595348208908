"""Reference of the launch-floor kernel: every element is 1."""

from __future__ import annotations

import numpy as np


def make_inputs(shape: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """No inputs."""
    return {}


def reference(inputs: dict[str, np.ndarray], shape: dict[str, int]) -> dict[str, np.ndarray]:
    """out = 1."""
    return {"out": np.ones(shape["n"])}
