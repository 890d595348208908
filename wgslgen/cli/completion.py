"""Shell completion of kernel names and axis values (argcomplete completers)."""

from __future__ import annotations

from typing import Any

from wgslgen.config import load_project
from wgslgen.spec.loader import discover, select


def _kernels(parsed_args: Any, only_selected: bool) -> list:
    templates = getattr(parsed_args, "templates", None) or list(load_project().templates)
    kernels = discover(templates)
    if only_selected and getattr(parsed_args, "kernel", None):
        kernels = select(kernels, parsed_args.kernel)
    return kernels


def kernel_names(prefix: str, parsed_args: Any = None, **_: Any) -> list[str]:
    """Names of the kernels in the project's (or --templates) folders."""
    try:
        return [k.name for k in _kernels(parsed_args, False) if k.name.startswith(prefix)]
    except Exception:  # a broken kernel.toml must not break the shell
        return []


def axis_values(prefix: str, parsed_args: Any = None, **_: Any) -> list[str]:
    """``axis=value`` for every axis value of the selected kernels (all kernels by default)."""
    try:
        kernels = _kernels(parsed_args, True)
    except Exception:  # a broken kernel.toml must not break the shell
        return []
    items = {f"{a.name}={v}" for k in kernels for a in k.axes for v in a.values}
    items |= {f"{a.key}={v}" for k in kernels for a in k.axes for v in a.values}
    return sorted(i for i in items if i.startswith(prefix))
