"""wgpu-native through wgpu-py: shader module plus compute pipeline on a device with set limits."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from wgslgen.check.engines.base import ShaderInput, Verdict, failure
from wgslgen.errors import WgslgenError

# wgslgen uses wgpu-py's feature names; the WebGPU spec's "subgroups" is wgpu's "subgroup".
_FEATURE_NAMES = {"subgroups": "subgroup"}


def wgpu_message(text: str) -> str:
    """The cause chain of a wgpu-native validation error on one line, without the preamble."""
    parts: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not parts and (
            line in ("", "Validation Error", "Caused by:") or line.startswith("In wgpu")
        ):
            continue
        if not line or line.startswith(("┌─", "│")):
            break
        parts.append(line)
    message = ": ".join(parts) or text.strip().split("\n", 1)[0]
    return re.sub(r"^Shader '[^']*' ", "", message)


class WgpuEngine:
    """Validates by creating a shader module and an auto-layout compute pipeline."""

    name = "wgpu"

    def __init__(self, adapter: str | None = None) -> None:
        """``adapter`` is a selector for wgslgen.device.choose_adapter (None: auto)."""
        self.selector = adapter
        self._adapter: Any = None
        self._devices: dict[tuple[frozenset[str], tuple[tuple[str, int], ...]], Any] = {}

    def _get_adapter(self) -> Any:
        if self._adapter is None:
            from wgslgen.run.device import choose_adapter

            self._adapter = choose_adapter(self.selector)
        return self._adapter

    def availability(self) -> str | None:
        """None when wgpu-py imports and finds an adapter."""
        try:
            import wgpu  # noqa: F401
        except ImportError:
            return "wgpu-py is not installed: pip install 'wgpu>=0.29,<0.33'"
        try:
            self._get_adapter()
        except WgslgenError as e:
            return str(e).replace("\n", " ")
        return None

    def version(self) -> str:
        """wgpu-py and wgpu-native versions and the adapter, e.g. 'wgpu-py 0.32.0 (...)'."""
        import wgpu
        from wgpu.backends import wgpu_native

        from wgslgen.run.device import describe_adapter

        return (
            f"wgpu-py {wgpu.__version__} (wgpu-native {wgpu_native.__version__}) "
            f"on {describe_adapter(self._get_adapter())}"
        )

    def device(self, features: Iterable[str], limits: Mapping[str, int]) -> Any:
        """A cached device with exactly ``features`` and ``limits`` (clamped to the adapter)."""
        from wgslgen.run.device import create_device

        feats = frozenset(_FEATURE_NAMES.get(f, f) for f in features)
        key = (feats, tuple(sorted(limits.items())))
        if key not in self._devices:
            self._devices[key] = create_device(self._get_adapter(), feats, limits)
        return self._devices[key]

    def validate(self, shaders: list[ShaderInput]) -> list[Verdict]:
        """One verdict per shader, each compiled on a device with only its declared features."""
        import wgpu

        out = []
        for shader in shaders:
            try:
                device = self.device(shader.features, shader.limits)
            except WgslgenError as e:  # e.g. the adapter lacks a feature the shader declares
                out.append(failure(self.name, shader.id, str(e).split("\n")[0], str(e)))
                continue
            try:
                module = device.create_shader_module(code=shader.source)
                compute: dict[str, Any] = {"module": module}
                if shader.entry_point:
                    compute["entry_point"] = shader.entry_point
                if shader.constants:
                    compute["constants"] = dict(shader.constants)
                device.create_compute_pipeline(layout="auto", compute=compute)
                out.append(Verdict(shader.id, self.name, True))
            except wgpu.GPUValidationError as e:
                text = str(e)
                out.append(failure(self.name, shader.id, wgpu_message(text), text))
            except Exception as e:  # device lost, out of memory, internal errors
                # Never reuse a device that failed in an unexpected way for the next shader.
                self._devices = {k: d for k, d in self._devices.items() if d is not device}
                why = f"wgpu engine failure: {type(e).__name__}: {e}".split("\n")[0]
                out.append(failure(self.name, shader.id, why, str(e)))
        return out
