"""Run every conformance case through a vendored package, as a consuming project would.

Usage: python python_client.py PACKAGE_DIR CASES_JSON  (prints one JSON line per case).
Runs in a fresh interpreter with only the vendored package's parent folder on sys.path.
"""

import base64
import importlib
import json
import sys
from pathlib import Path

import numpy as np
import wgpu

pkg_dir, cases_path = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, str(pkg_dir.parent))
kernels = importlib.import_module(pkg_dir.name)
cases = json.loads(cases_path.read_text())
adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")

for case in cases["runs"]:
    plan = kernels.plan_for(case["variant"], case["shape"])
    features, limits = kernels.required(plan)
    device = adapter.request_device_sync(required_features=features, required_limits=limits)
    usage = wgpu.BufferUsage
    buffers = {}
    result = {"variant": case["variant"], "ok": True, "errors": {}}
    for name, size in plan.buffer_sizes.items():
        if name in case["inputs"]:
            data = base64.b64decode(case["inputs"][name])
            # the caller's own path: values in the plan's encoding (f16 where it says so)
            if kernels.encode(plan, name, kernels.decode(plan, name, data)) != data:
                result["ok"] = False
                result["errors"][name] = f"encode/decode as {plan.encodings[name]} changed it"
            buffers[name] = device.create_buffer_with_data(data=data, usage=usage.STORAGE)
        elif name in case["outputs"]:
            buffers[name] = device.create_buffer(size=size, usage=usage.STORAGE | usage.COPY_SRC)
    short = next(n for n in plan.encodings if n in buffers)
    try:  # one byte short of what the binding needs: refused, not run with clamped reads
        kernels.run(
            device,
            plan,
            {
                **buffers,
                short: device.create_buffer(
                    size=max(4, (plan.buffer_sizes[short] - 1) // 4 * 4), usage=usage.STORAGE
                ),
            },
        )
        result["short_buffer"] = "ran"
    except ValueError as exc:
        result["short_buffer"] = str(exc)
    kernels.run(device, plan, buffers)
    for name, want in case.get("derived", {}).items():  # wgslgen's own derived values
        if plan.scope[name] != want:
            result["ok"] = False
            result["errors"][name] = f"derived {plan.scope[name]!r} != wgslgen's {want!r}"
    result["derived"] = {name: plan.scope[name] for name in case.get("derived", {})}
    for name, want in case["outputs"].items():
        raw = device.queue.read_buffer(buffers[name])
        if plan.encodings[name] != want["encoding"]:
            result["ok"] = False
            result["errors"][name] = f"plan says {plan.encodings[name]}, not {want['encoding']}"
        got = kernels.decode(plan, name, raw, len(want["values"]))
        w = np.asarray(want["values"])
        bad = ~(np.abs(got.astype(np.float64) - w) <= want["atol"] + want["rtol"] * np.abs(w))
        if bad.any():
            result["ok"] = False
            result["errors"][name] = f"{int(bad.sum())}/{w.size} off"
    print(json.dumps(result), flush=True)
WGPU_PY_NAMES = {"subgroups": "subgroup"}  # wgpu-py's feature names that differ from WebGPU's
kebab = lambda k: "".join("-" + c.lower() if c.isupper() else c for c in k)  # noqa: E731
requirements = [
    [case["variant"], kernels.required(kernels.plan_for(case["variant"], case["shape"])),
     [[WGPU_PY_NAMES.get(f, f) for f in case["features"]],
      {kebab(k): n for k, n in case["limits"].items()}]]
    for case in cases["requirements"]
]  # fmt: skip
print(json.dumps({"wgslgen_imported": "wgslgen" in sys.modules, "adapter": adapter.info["device"],
                  "requirements": requirements}))  # fmt: skip
