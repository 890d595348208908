"""The name every binding and the vendored README give a kernel's types (one spelling)."""

from __future__ import annotations


def kernel_type_name(kernel: str) -> str:
    """``attention_bwd_dq`` → ``AttentionBwdDq``: the stem of the kernel's shape type."""
    return "".join(part.capitalize() for part in kernel.split("_"))
