"""The real compilers and runtimes wgslgen validates with: one module per engine."""

from __future__ import annotations

from typing import Any

from wgslgen.check.engines.base import Engine, ShaderInput, Verdict
from wgslgen.check.engines.dawn import DawnEngine
from wgslgen.check.engines.naga import NagaEngine
from wgslgen.check.engines.wgpu_native import WgpuEngine
from wgslgen.errors import WgslgenError

ENGINES: dict[str, type[Any]] = {"naga": NagaEngine, "wgpu": WgpuEngine, "dawn": DawnEngine}

__all__ = [
    "ENGINES",
    "Engine",
    "ShaderInput",
    "Verdict",
    "get_engine",
]


def get_engine(name: str, **options: Any) -> Engine:
    """A new engine by registry name ('naga', 'wgpu', 'dawn')."""
    if name not in ENGINES:
        raise WgslgenError(f"unknown engine {name!r}; choose from {', '.join(ENGINES)}")
    return ENGINES[name](**options)
