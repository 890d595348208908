# ruff: noqa: E501  (templates of generated Rust lines; splitting them hurts reading)
"""The generated Rust module compiles with `rustc --test` and passes the shared cases; at odd
shapes it agrees with the reference runtime or refuses, and never panics."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import vendor_helpers as vh
from tests.vendor_clients import rust_conformance as rc
from wgslgen.vendor import conformance
from wgslgen.vendor.runtime import wgslgen_runtime as rt

RUSTC = shutil.which("rustc")
needs_rustc = pytest.mark.skipif(
    RUSTC is None, reason="rustc is not installed (no Rust toolchain on PATH)"
)
# i64's ends: Python's integers go past them, Rust's arithmetic reports "overflows i64" there,
# so only "it refuses and does not panic" is checked, not the reasons.
EXTREMES = [-(2**63), 2**63 - 1]


@pytest.fixture(scope="module")
def vendored(tmp_path_factory):
    return vh.shared(tmp_path_factory)


@needs_rustc
def test_rust_module_conformance(tmp_path, vendored):
    out, _, cases = vendored
    manifest = json.loads((out / "manifest.json").read_text())
    vh.rust_conformance_passes(out, cases, manifest, tmp_path)


def _odd_shapes(small: dict) -> list[tuple[dict, bool]]:
    """Shapes past the selector cases', each with whether the reference's reasons must be
    met word for word: negative sizes, and i64's ends (every size, then one at a time)."""
    out = [({s: -1 for s in small}, True), *(({**small, s: -1}, True) for s in small)]
    for x in EXTREMES:
        out += [({s: x for s in small}, False), *(({**small, s: x}, False) for s in small)]
    return out


def _reference(manifest: dict, kernel: str, adapter: str, shape: dict) -> str:
    """Rust code comparing select()'s outcome with the Python reference's."""
    try:
        plan = rt.select(manifest, kernel, conformance.facts(adapter), shape)
        want, rejected = f"Some({json.dumps(plan.variant)})", plan.rejected
    except rt.NoViable as exc:
        want, rejected = "None", exc.rejected
    pairs = ", ".join(f"({json.dumps(v)}, {json.dumps(r)})" for v, r in rejected)
    return (
        "    let (got, rej) = match &r { Ok(p) => (Some(p.variant), &p.rejected), Err(e) => (None, &e.rejected) };\n"
        "    let rej: Vec<(&str, &str)> = rej.iter().map(|(v, r)| (*v, r.as_str())).collect();\n"
        f'    assert_eq!((got, rej), ({want}, vec![{pairs}]), "{{}}", {json.dumps(f"{adapter} {shape}")});'
    )


def _odd_source(out: Path, cases: dict, manifest: dict) -> str:
    small: dict[str, dict] = {}
    for c in cases["selector"]:
        small.setdefault(c["kernel"], c["shape"])  # each kernel's first: its conformance shape
    body = []
    for kernel, shape0 in sorted(small.items()):
        floats = {s for v in manifest["variants"].values() for s in v.get("float_sizes", ())}
        variants = [n for n, v in sorted(manifest["variants"].items()) if v["kernel"] == kernel]
        for shape, exact in _odd_shapes(shape0):
            literal = rc._shape(kernel, shape, floats)
            for adapter in sorted(cases["adapters"]):
                body.append(
                    f"    let r = k::select(&facts_{adapter.replace('-', '_')}(), &{literal});"
                )
                body.append(
                    _reference(manifest, kernel, adapter, shape) if exact else "    drop(r);"
                )
            body += [f"    let _ = k::plan_for({json.dumps(n)}, &{literal});" for n in variants]
    head = [f'#[path = "{(out / "rust" / "wgslgen_kernels.rs").as_posix()}"]\nmod k;']
    head += [rc._facts(n, a) for n, a in sorted(cases["adapters"].items())]
    return "\n".join([*head, "#[test]\nfn odd_shapes() {", *body, "}\n"])


@needs_rustc
def test_odd_shapes_meet_the_reference_or_are_refused_without_a_panic(tmp_path, vendored):
    """Negative sizes: the reference's outcome, reasons and all. i64's ends: select refuses
    and plan_for gives None, in a debug build, where an overflow would panic."""
    out, _, cases = vendored
    manifest = json.loads((out / "manifest.json").read_text())
    src = tmp_path / "odd_test.rs"
    src.write_text(_odd_source(out, cases, manifest))
    exe = tmp_path / "odd_test"
    build = subprocess.run(
        [RUSTC, "--edition", "2021", "--test", "-C", "overflow-checks=on", str(src), "-o", str(exe)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-4000:]
    assert "warning" not in build.stderr, build.stderr[-2000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-4000:] + run.stderr[-2000:]


def _int_cases() -> str:
    """Rust asserts of the module's integer ops against Python's (an Err past i64's ends)."""
    ends = [-(2**63), -(2**63) + 1, 2**63 - 2, 2**63 - 1]
    values = [*range(-7, 8), *ends]
    ops = {
        "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
        "div": lambda a, b: a // b, "mod": lambda a, b: a % b, "ceil_div": lambda a, b: -(-a // b),
    }  # fmt: skip
    out = []
    for a in values:
        out.append(f"    assert_eq!(k::int_abs({a}), {_want(abs, a)});")
        for b in values:
            for name, fn in ops.items():
                want = _want(fn, a, b)
                out.append(f'    assert_eq!(k::int_{name}({a}, {b}), {want}, "{name} {a} {b}");')
    return "\n".join(out)


def _want(fn, *args: int) -> str:
    try:
        x = fn(*args)
    except ZeroDivisionError:
        return "Err(k::DIVIDES_BY_ZERO)"
    return f"Ok({x})" if -(2**63) <= x < 2**63 else "Err(k::OVERFLOWS)"


@needs_rustc
def test_integer_ops_are_pythons(tmp_path, vendored):
    """Floor division and modulo as Python's, signs and i64's ends included."""
    out = vendored[0]
    src = tmp_path / "ops_test.rs"
    module = (out / "rust" / "wgslgen_kernels.rs").as_posix()
    src.write_text(f'#[path = "{module}"]\nmod k;\n#[test]\nfn ops() {{\n{_int_cases()}\n}}\n')
    exe = tmp_path / "ops_test"
    build = subprocess.run(
        [RUSTC, "--edition", "2021", "--test", str(src), "-o", str(exe)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-4000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-4000:]


# Stubs of the wgpu items the glue names, shaped as docs.rs shows them in wgpu 25 and 29 (not
# wgpu itself, which no registry here serves): they catch a typo, and check that the glue's
# `..Default::default()` and `.into()` fit both shapes of PipelineLayoutDescriptor.
WGPU_STUB = """
use std::borrow::Cow;
use std::marker::PhantomData;
pub struct Device; pub struct CommandEncoder; pub struct BindGroupLayout; pub struct BindGroup;
pub struct ShaderModule; pub struct PipelineLayout; pub struct ComputePipeline; pub struct PipelineCache;
pub struct ComputePass<'a>(PhantomData<&'a ()>);
pub struct ShaderStages; impl ShaderStages { pub const COMPUTE: ShaderStages = ShaderStages; }
pub enum BufferBindingType { Uniform, Storage { read_only: bool } }
pub enum BindingType { Buffer { ty: BufferBindingType, has_dynamic_offset: bool, min_binding_size: Option<std::num::NonZeroU64> } }
pub struct BindGroupLayoutEntry { pub binding: u32, pub visibility: ShaderStages, pub ty: BindingType, pub count: Option<std::num::NonZeroU32> }
pub type Label<'a> = Option<&'a str>;
pub struct ShaderModuleDescriptor<'a> { pub label: Label<'a>, pub source: ShaderSource<'a> }
pub enum ShaderSource<'a> { Wgsl(Cow<'a, str>) }
pub struct PipelineCompilationOptions<'a> { pub constants: &'a [(&'a str, f64)], pub zero_initialize_workgroup_memory: bool }
impl Default for PipelineCompilationOptions<'_> { fn default() -> Self { Self { constants: &[], zero_initialize_workgroup_memory: true } } }
pub struct ComputePipelineDescriptor<'a> { pub label: Label<'a>, pub layout: Option<&'a PipelineLayout>, pub module: &'a ShaderModule, pub entry_point: Option<&'a str>, pub compilation_options: PipelineCompilationOptions<'a>, pub cache: Option<&'a PipelineCache> }
#[derive(Default)] pub struct ComputePassDescriptor<'a> { pub label: Label<'a> }
impl Device {
    pub fn create_shader_module(&self, _d: ShaderModuleDescriptor) -> ShaderModule { ShaderModule }
    pub fn create_pipeline_layout(&self, _d: &PipelineLayoutDescriptor) -> PipelineLayout { PipelineLayout }
    pub fn create_compute_pipeline(&self, _d: &ComputePipelineDescriptor) -> ComputePipeline { ComputePipeline }
}
impl CommandEncoder { pub fn begin_compute_pass<'e>(&'e mut self, _d: &ComputePassDescriptor<'_>) -> ComputePass<'e> { ComputePass(PhantomData) } }
impl ComputePass<'_> {
    pub fn set_pipeline(&mut self, _p: &ComputePipeline) {}
    pub fn set_bind_group<'a, BG>(&mut self, _i: u32, _bg: BG, _o: &[u32]) where Option<&'a BindGroup>: From<BG> {}
    pub fn dispatch_workgroups(&mut self, _x: u32, _y: u32, _z: u32) {}
}
"""
PIPELINE_LAYOUT = {
    "25": "pub struct PushConstantRange;\n#[derive(Default)] pub struct PipelineLayoutDescriptor<'a> { pub label: Label<'a>, pub bind_group_layouts: &'a [&'a BindGroupLayout], pub push_constant_ranges: &'a [PushConstantRange] }",
    "29": "#[derive(Default)] pub struct PipelineLayoutDescriptor<'a> { pub label: Label<'a>, pub bind_group_layouts: &'a [Option<&'a BindGroupLayout>], pub immediate_size: u32 }",
}


@needs_rustc
@pytest.mark.parametrize("version", sorted(PIPELINE_LAYOUT))
def test_the_wgpu_glue_type_checks_against_stubs_of_that_api(tmp_path, vendored, version):
    out, _, cases = vendored
    run = cases["runs"][0]
    stub = tmp_path / "wgpu.rs"
    stub.write_text(WGPU_STUB + PIPELINE_LAYOUT[version])
    lib = tmp_path / "libwgpu.rlib"
    main = tmp_path / "main.rs"
    main.write_text(
        f'#[path = "{(out / "rust" / "wgslgen_kernels.rs").as_posix()}"]\nmod wgslgen_kernels;\n'
        f'#[path = "{(out / "rust" / "wgpu_glue.rs").as_posix()}"]\nmod wgpu_glue;\n'
        "use wgslgen_kernels as k;\nfn main() {\n"
        f"    let plan = k::plan_for({json.dumps(run['variant'])}, &{rc._shape(run['kernel'], run['shape'])}).unwrap();\n"
        "    assert_eq!(wgpu_glue::layout_entries(&plan, 0).len(), plan.bindings.len());\n"
        "    let (layout, group) = (wgpu::BindGroupLayout, wgpu::BindGroup);\n"
        "    wgpu_glue::encode(&wgpu::Device, &mut wgpu::CommandEncoder, &plan, &[(&layout, &group)]);\n}\n"
    )
    rustc = [RUSTC, "--edition", "2021"]
    stubbed = subprocess.run(
        [*rustc, "--crate-type", "lib", "--crate-name", "wgpu", str(stub), "-o", str(lib)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert stubbed.returncode == 0, stubbed.stderr[-3000:]
    build = subprocess.run(
        [*rustc, "--cfg", 'feature="wgpu"', "--extern", f"wgpu={lib}", str(main), "-o", str(tmp_path / "main")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-4000:]
    assert "warning" not in build.stderr, build.stderr[-2000:]
    assert subprocess.run([str(tmp_path / "main")], timeout=60).returncode == 0
