"""Does wgpu zero workgroup memory before a workgroup runs, as WGSL says it must?

One pass fills a workgroup array with 7s; the next pass (another pipeline) only reads its own
array and writes each invocation's sum of 16 elements. Zeroed memory reads 0; memory left as
the previous pass wrote it reads 112 (16 × 7). Run twice, dirty then read. Session 41 ran this
on lavapipe and an NVIDIA H100 through wgpu-py 0.32: both printed 112 for the second read.
(Reformatted for ruff after the device call; the passes and dispatches are the same.)
"""

import numpy as np
import wgpu

DIRTY = """
var<workgroup> m: array<f32, 1024>;
@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(local_invocation_index) t: u32) {
  for (var i = t; i < 1024u; i += 64u) { m[i] = 7.0; }
  workgroupBarrier();
  o[t] = m[t];
}"""
READ = """
var<workgroup> m: array<f32, 1024>;
@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(local_invocation_index) t: u32) {
  var s = 0.0;
  for (var i = t; i < 1024u; i += 64u) { s += m[i]; }
  o[t] = s;
}"""


def run_pass(device: wgpu.GPUDevice, source: str, out: wgpu.GPUBuffer) -> np.ndarray:
    """Run one 64-workgroup dispatch of `source` and return the first outputs."""
    module = device.create_shader_module(code=source)
    pipeline = device.create_compute_pipeline(
        layout="auto", compute={"module": module, "entry_point": "main"}
    )
    bind_group = device.create_bind_group(
        layout=pipeline.get_bind_group_layout(0),
        entries=[{"binding": 0, "resource": {"buffer": out}}],
    )
    encoder = device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    compute.set_pipeline(pipeline)
    compute.set_bind_group(0, bind_group)
    compute.dispatch_workgroups(64)
    compute.end()
    device.queue.submit([encoder.finish()])
    return np.frombuffer(device.queue.read_buffer(out), np.float32)[:4]


def main() -> None:
    """Print the adapter, then each pass's first outputs."""
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    print(adapter.info["device"])
    device = adapter.request_device_sync()
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
    out = device.create_buffer(size=64 * 4, usage=usage)
    for name, source in (("dirty", DIRTY), ("read", READ), ("dirty", DIRTY), ("read", READ)):
        print(name, run_pass(device, source, out))


if __name__ == "__main__":
    main()
