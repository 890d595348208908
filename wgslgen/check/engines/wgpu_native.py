"""wgpu-native through wgpu-py: shader module plus compute pipeline on a device with set limits."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from wgslgen.check.engines.base import ShaderInput, Verdict, failure
from wgslgen.check.source_guards import WGPU_THREAD_STACK, wgpu_nesting_refusal
from wgslgen.children import stopping
from wgslgen.errors import WgslgenError

# wgslgen uses wgpu-py's feature names; the WebGPU spec's "subgroups" is wgpu's "subgroup".
_FEATURE_NAMES = {"subgroups": "subgroup"}


# threading.stack_size is one setting for the whole process: held while threads start.
_STACK_SIZE_LOCK = threading.Lock()


@contextmanager
def thread_stack(size: int) -> Iterator[None]:
    """Threads started inside get ``size`` bytes of stack (address space, used only as
    deep as a compile goes); the default where the platform cannot set it."""
    with _STACK_SIZE_LOCK:
        try:
            before = threading.stack_size(size)
        except (ValueError, RuntimeError):  # no settable stack size here
            yield
            return
        try:
            yield
        finally:
            threading.stack_size(before)


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

    def __init__(self, adapter: str | None = None, threads: int | None = None) -> None:
        """``adapter`` is a selector for wgslgen.device.choose_adapter (None: auto);
        ``threads`` make pipelines at once (default: one per core, at most 8)."""
        self.selector = adapter
        self.threads = threads or min(8, len(os.sched_getaffinity(0)))
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

    def identity(self) -> str:
        """wgpu's versions and the adapter's driver (verdicts are remembered by them)."""
        from wgslgen.run.device import device_key

        return f"{self.version()} | {device_key(self._get_adapter()).digest()}"

    def device(self, features: Iterable[str], limits: Mapping[str, int]) -> Any:
        """A cached device with exactly ``features`` and ``limits`` (clamped to the adapter)."""
        from wgslgen.run.device import create_device

        feats = frozenset(_FEATURE_NAMES.get(f, f) for f in features)
        key = (feats, tuple(sorted(limits.items())))
        if key not in self._devices:
            self._devices[key] = create_device(self._get_adapter(), feats, limits)
        return self._devices[key]

    def validate(self, shaders: list[ShaderInput]) -> list[Verdict]:
        """One verdict per shader, each compiled on a device with only its declared features.

        Pipelines are made on a few threads (wgpu-native's calls release the GIL and the
        driver's compile is most of the time), and a module whose text, features and limits
        were seen already is reused for its other entry points: the verdicts are the ones a
        fresh module per shader gives, since a module is judged by its text alone.

        wgpu-native parses on the calling thread and recurses per nested bracket: the
        threads have a stack of their own size (the default of a thread may be 512 KiB),
        and a text nested deeper than that stack survives is refused, not compiled.
        """
        modules: dict[tuple[int, str], Any] = {}
        lock = threading.Lock()
        refusals = {s.source: wgpu_nesting_refusal(s.source) for s in shaders}

        def one(shader: ShaderInput) -> Verdict:
            if stopping():  # interrupted: the rest is not compiled
                raise KeyboardInterrupt
            if refusals[shader.source]:
                return Verdict(shader.id, self.name, False, refusals[shader.source])
            return self._one(shader, modules, lock)

        if not shaders:
            return []
        # every thread starts at its submit(): all of them inside thread_stack
        with thread_stack(WGPU_THREAD_STACK):
            pool = ThreadPoolExecutor(max_workers=min(self.threads, len(shaders)))
            futures = [pool.submit(one, s) for s in shaders]
        with pool:
            return [f.result() for f in futures]

    def _one(self, shader: ShaderInput, modules: dict, lock: threading.Lock) -> Verdict:
        import wgpu

        try:
            with lock:
                device = self.device(shader.features, shader.limits)
        except WgslgenError as e:  # e.g. the adapter lacks a feature the shader declares
            return failure(self.name, shader.id, str(e).split("\n")[0], str(e))
        try:
            seen = modules.get((id(device), shader.source))
            if seen is not None and seen[0] is device:  # not a dropped device's id reused
                module = seen[1]
            else:
                module = device.create_shader_module(code=shader.source)
                modules[(id(device), shader.source)] = (device, module)
            compute: dict[str, Any] = {"module": module}
            if shader.entry_point:
                compute["entry_point"] = shader.entry_point
            if shader.constants:
                compute["constants"] = dict(shader.constants)
            device.create_compute_pipeline(layout="auto", compute=compute)
            return Verdict(shader.id, self.name, True)
        except wgpu.GPUValidationError as e:
            modules.pop((id(device), shader.source), None)  # reused only once it made a pipeline
            text = str(e)
            return failure(self.name, shader.id, wgpu_message(text), text)
        except Exception as e:  # device lost, out of memory, internal errors
            # Never reuse a device that failed in an unexpected way for the next shader.
            with lock:
                self._devices = {k: d for k, d in self._devices.items() if d is not device}
            why = f"wgpu engine failure: {type(e).__name__}: {e}".split("\n")[0]
            return failure(self.name, shader.id, why, str(e))
