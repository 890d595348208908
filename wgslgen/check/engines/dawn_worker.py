"""Dawn/Tint validation worker: JSON lines on stdin/stdout, kept apart from wgpu-py's process.

Started by wgslgen.engines.dawn as ``python -m wgslgen.engines.dawn_worker``. It first prints
``{"ready": true, "version": ...}`` (or ``{"ready": false, "error": ...}``), then answers each
request line ``{"id", "source", "features", "limits", "entry_point", "constants"}`` with one line
``{"id", "ok", "message", "diagnostic"}``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

# Dawn's Null backend validates without a GPU (with the WebGPU default limits).
os.environ.setdefault("WGPU_BACKEND_TYPE", "Null")
# wgslgen names subgroups as wgpu-py does; Dawn uses the WebGPU spec's name.
_FEATURE_NAMES = {"subgroup": "subgroups"}


def dawn_message(text: str) -> str:
    """First line of a Dawn error without Tint's 'Error while parsing WGSL: :L:C error: '."""
    first = text.strip().split("\n", 1)[0]
    first = re.sub(r"^Error while parsing WGSL: ", "", first)
    return re.sub(r"^\S*:\d+:\d+ error: ", "", first)


class _Validator:
    def __init__(self) -> None:
        import wgpudawn

        self.wgpu = wgpudawn
        # Kept for its features and limits only; devices come from adapters of their own.
        self.adapter = wgpudawn.gpu.request_adapter_sync()
        if self.adapter is None:
            raise RuntimeError("Dawn offers no adapter (Null backend)")
        self.devices: dict[Any, Any] = {}
        # The last module made, for the next entry point of the same text (a module is
        # judged by its text; requests for one file's entry points come one after another).
        self.last_module: tuple[Any, str, Any] | None = None

    def version(self) -> str:
        from wgpudawn.backends import dawn

        return f"wgpudawn {self.wgpu.__version__} (Dawn {dawn.__version__}, Null backend)"

    def device(self, features: list[str], limits: dict[str, int]) -> Any:
        feats = sorted({_FEATURE_NAMES.get(f, f) for f in features})
        missing = [f for f in feats if f not in self.adapter.features]
        if missing:
            raise LookupError(f"Dawn's adapter lacks feature(s) {', '.join(missing)}")
        have = self.adapter.limits
        # Dawn's Null adapter offers only the default limits: ask for no more than it has.
        wanted = {
            k: (max(v, have[k]) if k.startswith("min-") else min(v, have[k]))
            for k, v in limits.items()
            if k in have
        }
        key = (tuple(feats), tuple(sorted(wanted.items())))
        if key not in self.devices:
            # A WebGPU adapter is "consumed" by its first device: each device needs a new one.
            adapter = self.wgpu.gpu.request_adapter_sync()
            self.devices[key] = adapter.request_device_sync(
                required_features=feats, required_limits=wanted
            )
        return self.devices[key]

    def validate(self, req: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = {"id": req.get("id"), "ok": False, "message": "", "diagnostic": ""}
        try:
            device = self.device(req.get("features", []), req.get("limits", {}))
        except LookupError as e:
            answer.update(message=str(e), diagnostic=str(e))
            return answer
        except Exception as e:
            why = f"dawn engine failure: cannot create a device: {type(e).__name__}: {e}"
            answer.update(message=why.split("\n")[0], diagnostic=why)
            return answer
        try:
            last = self.last_module
            if last is not None and last[0] is device and last[1] == req["source"]:
                module = last[2]
            else:
                module = device.create_shader_module(code=req["source"])
                self.last_module = (device, req["source"], module)
            compute: dict[str, Any] = {"module": module}
            if req.get("entry_point"):
                compute["entry_point"] = req["entry_point"]
            if req.get("constants"):
                compute["constants"] = req["constants"]
            device.create_compute_pipeline(layout="auto", compute=compute)
            answer["ok"] = True
        except self.wgpu.GPUValidationError as e:
            self.last_module = None  # only a module that made a pipeline is reused
            answer.update(message=dawn_message(str(e)), diagnostic=str(e))
        except Exception as e:
            # A device that failed unexpectedly is dropped; the next request gets a fresh one.
            self.last_module = None
            self.devices = {k: d for k, d in self.devices.items() if d is not device}
            answer.update(
                message=f"dawn engine failure: {type(e).__name__}: {e}", diagnostic=str(e)
            )
        return answer


def main() -> int:
    """Serve validation requests until stdin closes."""
    # The protocol owns the real stdout; anything else printed (Dawn's "Forcing backend"
    # notice, native logging) goes to stderr so it cannot corrupt a reply.
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        validator = _Validator()
    except Exception as e:
        proto.write(json.dumps({"ready": False, "error": f"{type(e).__name__}: {e}"}) + "\n")
        return 1
    proto.write(json.dumps({"ready": True, "version": validator.version()}) + "\n")
    for line in sys.stdin:
        if line.strip():
            proto.write(json.dumps(validator.validate(json.loads(line))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
