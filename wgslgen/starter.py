"""The starter project `wgslgen init` writes: a config and an RMSNorm kernel folder.

docs/kernel-format.md shows this kernel as its worked example (generated from these texts),
and tests/test_config.py builds, tests and tunes it on lavapipe, so the example always works.
"""

from __future__ import annotations

CONFIG = """\
# wgslgen project settings (paths are relative to this file's folder).
templates = ["kernels"]            # folders of kernel folders and/or .wgsl files
bundled = false                    # true: also build/test/tune wgslgen's bundled kernels here
output = "generated"               # wgslgen build
db = "tuning/results.jsonl"        # wgslgen tune / db
selection = "tuning/selection.json"
# profile = "webgpu"               # default limit profile
# adapter = "gpu"                  # default adapter: cpu, gpu or a name substring
"""

KERNEL_TOML = """\
# RMSNorm over the last axis: y = x * w / sqrt(mean(x^2) + eps). `wgslgen docs kernel-format`
# has every key; the JSON Schema (wgslgen/spec/kernel.schema.json) gives editors completion.
[kernel]
name = "rmsnorm"
description = "RMSNorm over rows: y = x * w / sqrt(mean(x^2) + eps), one workgroup per row."

[[axis]]
name = "workgroup_size"
key = "wg"
values = [32, 64, 128]
baseline = 64

[[axis]]
name = "storage"
key = "s"
values = ["f32", "f16"]
doc = "dtype of x in storage"

[uniform]
fields = [["rows", "u32"], ["dim", "u32"], ["eps", "f32"], ["inv_dim", "f32"]]

[[binding]]
name = "x"
type = "storage"
count = "rows * dim"

[[binding]]
name = "w"
type = "f32"
count = "dim"

[[binding]]
name = "y"
access = "read_write"
type = "f32"
count = "rows * dim"

[problem]
sizes = ["rows", "dim", "eps"]         # eps is a float parameter: set once, in each shape
derived = { inv_dim = "1.0 / dim" }
preconditions = ["rows >= 1 and dim >= 1", "eps > 0", "rows <= 65535"]
dispatch = ["rows"]

[test]
shapes = [
    { rows = 1, dim = 1, eps = 1e-5 },
    { rows = 3, dim = 100, eps = 1e-5 },
    { rows = 4, dim = 1000, eps = 0.5 },
]
tolerance = [
    { when = "storage == 'f16'", rtol = 1e-3, atol = 1e-4 },
    { rtol = 1e-5, atol = 1e-6 },
]

[tune]
shapes = [{ rows = 64, dim = 2048, eps = 1e-5 }]
"""

TEMPLATE = """\
{% import "_lib/dtype.wgsl.j2" as dt %}
{% import "_lib/reduce.wgsl.j2" as red %}
{{ dt.enables([storage]) }}
// RMSNorm, one workgroup per row: y[r, i] = x[r, i] * w[i] / sqrt(mean(x[r, :]^2) + eps)
{{ interface }}

var<workgroup> partial: array<f32, {{ workgroup_size }}>;

{{ red.block_reduce('row_sum', 'partial', workgroup_size, 'sum') }}

@compute @workgroup_size({{ workgroup_size }})
fn main(@builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(workgroup_id) wid: vec3<u32>) {
    let base = wid.x * params.dim;
    var acc = 0.0;
    for (var i = lid.x; i < params.dim; i += {{ workgroup_size }}u) {
        let v = {{ dt.load('x', 'base + i', storage) }};
        acc += v * v;
    }
    partial[lid.x] = acc;
    workgroupBarrier();
    let scale = inverseSqrt(row_sum(lid.x) * params.inv_dim + params.eps);
    for (var i = lid.x; i < params.dim; i += {{ workgroup_size }}u) {
        y[base + i] = {{ dt.load('x', 'base + i', storage) }} * scale * w[i];
    }
}
"""

REFERENCE = '''\
"""numpy reference for rmsnorm, written from the math (float64)."""

import numpy as np


def make_inputs(shape, rng):
    """x [rows, dim] and the weight w [dim]; ``shape`` also holds eps and inv_dim."""
    rows, dim = shape["rows"], shape["dim"]
    return {"x": rng.normal(size=(rows, dim)), "w": rng.uniform(0.5, 1.5, size=dim)}


def reference(inputs, shape):
    """y [rows, dim]; eps comes from the shape, inv_dim is [problem].derived's value."""
    x = inputs["x"].astype(np.float64)
    mean_sq = (x * x).sum(axis=1, keepdims=True) * shape["inv_dim"]
    return {"y": x / np.sqrt(mean_sq + shape["eps"]) * inputs["w"]}
'''
