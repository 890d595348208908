"""Lazy re-exports for the stage packages: ``from wgslgen.run import Harness`` works without
importing every stage's modules (and without import cycles between stages)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], list[str]]:
    """A module ``__getattr__`` resolving each exported name from its module, and ``__all__``."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(exports[name]), name)
        # Importing a submodule of the same name (wgslgen.check.validate, which holds the
        # function validate) binds the submodule to the package's attribute, so that
        # `from wgslgen.check import validate` gave the module: the export wins.
        setattr(sys.modules[package], name, value)
        return value

    __getattr__.exports = dict(exports)  # type: ignore[attr-defined]  # name -> its module
    return __getattr__, sorted(exports)
