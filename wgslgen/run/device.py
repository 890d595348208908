"""Adapter choice and device creation through wgpu-py, and the key that names a device."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from wgslgen.errors import WgslgenError

# wgpu-native prints a harmless warning per adapter when XDG_RUNTIME_DIR is unset (headless).
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")


@dataclass(frozen=True)
class DeviceKey:
    """What identifies a device for results: two machines with equal keys time alike."""

    vendor: str
    architecture: str
    device: str
    driver: str
    backend: str
    adapter_type: str
    wgpu_version: str

    def digest(self) -> str:
        """A short stable id of this key, for file names and database keys."""
        text = "|".join(
            [
                self.vendor,
                self.architecture,
                self.device,
                self.driver,
                self.backend,
                self.adapter_type,
                self.wgpu_version,
            ]
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def label(self) -> str:
        """A short human description, e.g. 'llvmpipe (LLVM 15.0.6, 256 bits) [Vulkan, CPU]'."""
        return f"{self.device or self.vendor} [{self.backend}, {self.adapter_type}]"


def is_cpu_adapter(info: Mapping[str, Any]) -> bool:
    """Whether an adapter's info (or a DeviceKey dict) is a CPU one: lavapipe, WARP, SwiftShader."""
    return info.get("adapter_type") == "CPU"


def _wgpu():
    import wgpu

    return wgpu


def list_adapters() -> list[Any]:
    """All adapters wgpu-py can see, Vulkan first (the backend wgslgen runs on)."""
    adapters = _wgpu().gpu.enumerate_adapters_sync()
    return sorted(adapters, key=lambda a: a.info.get("backend_type") != "Vulkan")


def choose_adapter(selector: str | None = None) -> Any:
    """Pick an adapter: None/'auto' (a GPU if any, else CPU), 'gpu', 'cpu' or a name substring."""
    adapters = list_adapters()
    if not adapters:
        raise WgslgenError(
            "no WebGPU adapter found",
            hint="install Mesa's lavapipe (apt-get install mesa-vulkan-drivers) or a GPU driver",
        )
    sel = (selector or "auto").lower()

    if sel == "auto":
        gpus = [a for a in adapters if not is_cpu_adapter(a.info)]
        return (gpus or adapters)[0]
    if sel == "cpu":
        matches = [a for a in adapters if is_cpu_adapter(a.info)]
    elif sel == "gpu":
        matches = [a for a in adapters if not is_cpu_adapter(a.info)]
    else:
        matches = [a for a in adapters if sel in describe_adapter(a).lower()]
    if not matches:
        names = ", ".join(sorted({describe_adapter(a) for a in adapters}))
        raise WgslgenError(f"no adapter matches {selector!r}; available: {names}", option="adapter")
    return matches[0]


def describe_adapter(adapter: Any) -> str:
    """One line naming an adapter for people."""
    return device_key(adapter).label()


def device_key(adapter: Any) -> DeviceKey:
    """The results key of an adapter: vendor, architecture, device, driver, backend, wgpu."""
    info = adapter.info
    return DeviceKey(
        vendor=str(info.get("vendor", "")),
        architecture=str(info.get("architecture", "")),
        device=str(info.get("device", "")),
        driver=str(info.get("description", "")),
        backend=str(info.get("backend_type", "")),
        adapter_type=str(info.get("adapter_type", "")),
        wgpu_version=_wgpu().__version__,
    )


def create_device(
    adapter: Any,
    features: Iterable[str] = (),
    limits: Mapping[str, int] | None = None,
) -> Any:
    """A device with exactly ``features`` and the given limits (clamped to what the adapter has)."""
    wanted = sorted(set(features))
    missing = [f for f in wanted if f not in adapter.features]
    if missing:
        raise WgslgenError(
            f"adapter {describe_adapter(adapter)} lacks feature(s) {', '.join(missing)}"
        )
    required: dict[str, int] = {}
    for name, value in (limits or {}).items():
        if name in adapter.limits:
            have = adapter.limits[name]
            # "min-*" limits are alignments: a smaller value is the stricter one.
            required[name] = max(value, have) if name.startswith("min-") else min(value, have)
    return adapter.request_device_sync(required_features=wanted, required_limits=required)
