"""wgpu-native (wgpu-py 0.32) does not zero var<workgroup> memory when a workgroup starts, on
lavapipe (Mesa 22.3) here and on an NVIDIA H100 (session 41), though WGSL promises it: a kernel
that relies on the promise fails, and `wgslgen test` says why; the same kernel zeroing its own
memory passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from wgslgen.run.report import WORKGROUP_ZEROING_NOTE

from .conftest import ROOT

KERNEL_TOML = """
[kernel]
name = "count"

[[axis]]
name = "zeroed"
key = "z"
values = [0, 1]

[[binding]]
name = "out"
access = "read_write"
type = "u32"
count = "n_wg"

[uniform]
fields = [["n_wg", "u32"]]
pad_to = 16

[problem]
sizes = ["n_wg"]
dispatch = ["n_wg"]

[test]
shapes = [{ n_wg = 256 }]
tolerance = [{ rtol = 0.0, atol = 0.0 }]
"""

# Each of the 64 invocations adds 1 to a workgroup counter: 64 when it starts at zero.
TEMPLATE = """{{ interface }}
var<workgroup> counter: atomic<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
{% if zeroed %}
    if (tid == 0u) { atomicStore(&counter, 0u); }
    workgroupBarrier();
{% endif %}
    atomicAdd(&counter, 1u);
    workgroupBarrier();
    if (tid == 0u) { out[wid.x] = atomicLoad(&counter); }
}
"""

REFERENCE = '''
import numpy as np


def make_inputs(shape, rng):
    """No inputs."""
    return {}


def reference(inputs, shape):
    """64 per workgroup."""
    return {"out": np.full(shape["n_wg"], 64, dtype=np.uint32)}
'''


def test_a_kernel_that_trusts_workgroup_zeroing_fails_on_lavapipe_and_is_told_why(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "kernels" / "count"
    folder.mkdir(parents=True)
    (folder / "kernel.toml").write_text(KERNEL_TOML)
    (folder / "count.wgsl.j2").write_text(TEMPLATE)
    (folder / "reference.py").write_text(REFERENCE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "wgslgen", "test", "--templates", str(folder.parent),
         "--adapter", "cpu", "--json"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    report = json.loads(proc.stdout)
    status = {r["variant"]: r["status"] for r in report["results"]}
    assert status == {"count__z0": "fail", "count__z1": "pass"}, proc.stderr
    assert WORKGROUP_ZEROING_NOTE in report["notes"]
    assert proc.returncode != 0
