"""Floats in vendored kernels: `wgslgen init`'s rmsnorm (eps, a float parameter in every shape;
inv_dim = 1.0 / dim, a float derived value) tuned on lavapipe and vendored to every binding,
each computing wgslgen's own values; float shape values in the selection; emptied folders."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests import vendor_helpers as vh
from tests.conftest import ROOT
from tests.test_vendor_node import ICD, run_node_client
from wgslgen.cli import main
from wgslgen.errors import WgslgenError
from wgslgen.vendor import conformance, folder, rules
from wgslgen.vendor.expr import OPS, evaluate, is_float, to_int_tree, to_tree, to_value
from wgslgen.vendor.plan import plan_vendor
from wgslgen.vendor.runtime import wgslgen_gpu as gpu_rt
from wgslgen.vendor.runtime import wgslgen_runtime as rt

RUSTC = shutil.which("rustc")
INTEGER_OPS = set(OPS) - {"fconst", "fdiv", "abs", "int", "float"}  # the ops before floats
ONE_TUNE_SHAPE = "shapes = [{ rows = 64, dim = 2048, eps = 1e-5 }]"
TWO_TUNE_SHAPES = (
    "shapes = [{ rows = 64, dim = 2048, eps = 1e-5 }, { rows = 64, dim = 256, eps = 1e-6 }]"
)


def _starter_project(path: Path) -> Path:
    """`wgslgen init` at ``path``, tuned at two shapes that differ in dim and in eps."""
    assert main(["init", str(path)]) == 0
    toml = path / "kernels" / "rmsnorm" / "kernel.toml"
    text = toml.read_text()
    assert ONE_TUNE_SHAPE in text
    toml.write_text(text.replace(ONE_TUNE_SHAPE, TWO_TUNE_SHAPES))
    return path


def _specs(project: Path):
    return vh.specs([project / "kernels"])


@pytest.fixture(scope="module")
def starter(tmp_path_factory):
    """The starter project tuned on lavapipe and vendored by the CLI with every binding, and
    the shared conformance cases beside it: (project, site/wgk, manifest, cases)."""
    project = _starter_project(tmp_path_factory.mktemp("starter") / "proj")
    site = tmp_path_factory.mktemp("floatsite")
    out = site / "wgk"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        tune = ["tune", "--adapter", "cpu", "--budget", "2", "--rounds", "3", "--set", "s=f32"]
        assert main(tune) == 0
        # the selection's shapes hold eps=1e-05: this crashed in rules._parse before
        assert "eps=1e-05" in (project / "tuning" / "selection.json").read_text()
        assert main(["vendor", "--out", str(out), "--lang", "rust,ts,py"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    cases = conformance.build(manifest, _specs(project))
    (site / "cases.json").write_text(json.dumps(cases, sort_keys=True))
    return project, out, manifest, cases


def _wgslgen_inv_dim(project: Path, variant: str, shape: dict) -> float:
    """inv_dim as wgslgen itself computes it for a run (Variant.case)."""
    spec = _specs(project)[0]
    return next(v for v in spec.variants if v.name == variant).case(shape).scope["inv_dim"]


def test_float_expressions_become_trees():
    inv = to_tree("1.0 / dim", {}, "k")
    assert inv == {
        "op": "fdiv", "args": [{"op": "fconst", "value": 1.0}, {"op": "var", "name": "dim"}],
    }  # fmt: skip
    assert is_float(inv) and evaluate(inv, {"dim": 100}) == 1.0 / 100
    assert to_value("2.0", {}, "k") == 2.0  # README's `scale`: derived alpha = "2.0"
    # Python's typing: int op int stays int except `/`; a float operand makes a float
    assert evaluate(to_tree("7 // 2 + n", {}, "k"), {"n": 1}) == 4
    assert evaluate(to_tree("n / 2", {}, "k"), {"n": 7}) == 3.5
    assert not is_float(to_tree("n // 2", {}, "k"))
    assert is_float(to_tree("n // 2", {}, "k", floats={"n"}), {"n"})
    assert evaluate(to_tree("x // 0.1", {}, "k"), {"x": 1.0}) == 1.0 // 0.1 == 9.0  # not 10
    assert evaluate(to_tree("x % 0.75", {}, "k"), {"x": -1.0}) == -1.0 % 0.75
    # (a + b - 1) // b is a ceiling division on integers only
    assert to_tree("(n + 4 - 1) // 4", {}, "k")["op"] == "ceil_div"
    on_float = to_tree("(eps + 4 - 1) // 4", {}, "k", floats={"eps"})
    assert on_float["op"] == "div" and evaluate(on_float, {"eps": 0.5}) == (0.5 + 4 - 1) // 4
    # dispatch and counts are what wgslgen takes: int() of the value
    half = to_int_tree("rows / 2", {}, "k")
    assert half["op"] == "int" and evaluate(half, {"rows": 7}) == 3
    assert to_int_tree("7 / 2", {}, "k") == {"op": "const", "value": 3}
    assert to_int_tree("rows * 2", {}, "k") == to_tree("rows * 2", {}, "k")
    assert evaluate(to_tree("n|float", {}, "k"), {"n": 3}) == 3.0
    assert evaluate(to_tree("(x|abs)|int", {}, "k"), {"x": -2.5}) == 2
    with pytest.raises(WgslgenError, match="cannot be vendored"):
        to_tree("n ** 2", {}, "k")


def test_integer_trees_are_unchanged():
    """Trees of integers only are exactly what they were before floats existed."""
    dkv = "[1, workgroup_size // ([1, out_cols] | max)] | max"
    assert to_tree(dkv, {"workgroup_size": 256}, "k") == {
        "op": "max", "args": [
            {"op": "const", "value": 1},
            {"op": "div", "args": [
                {"op": "const", "value": 256},
                {"op": "max", "args": [
                    {"op": "const", "value": 1}, {"op": "var", "name": "out_cols"},
                ]},
            ]},
        ],
    }  # fmt: skip
    ceil = {"op": "ceil_div", "args": [{"op": "var", "name": "n"}, {"op": "const", "value": 64}]}
    assert to_int_tree("(n + chunk - 1) // chunk", {"chunk": 64}, "k") == ceil


def test_bundled_kernels_use_integer_ops_only(tmp_path):
    """The bundled attention kernels vendor as before: no float node, no float_sizes key (so
    the abi_version is unchanged) and a Rust module without the float helpers."""
    ks = [k for k in vh.specs() if k.name in ("attention", "attention_bwd_dkv")]
    plan = plan_vendor(ks, None, ["rust"])

    def ops(tree):
        yield tree["op"]
        for a in tree.get("args", []):
            yield from ops(a)

    seen = set()
    for v in plan.manifest["variants"].values():
        assert "float_sizes" not in v
        trees = [d["expr"] for d in v["derived"]] + [p["expr"] for p in v["preconditions"]]
        trees += [d for p in v["passes"] for d in p["dispatch"]]
        trees += [b["min_binding_size"] for b in v["bindings"]]
        trees += [f["value"] for f in (v["uniform"] or {"fields": []})["fields"] if f["value"]]
        seen |= {op for t in trees for op in ops(t)}
    assert seen and seen <= INTEGER_OPS
    rust = plan.files["rust/wgslgen_kernels.rs"].decode()
    assert "py_divmod" not in rust and "f64" not in "".join(
        re.findall(r"pub struct \w*Shape.*", rust)
    )
    assert all("f64" not in line for line in re.findall(r"pub struct Vars .*", rust))


def test_buckets_skip_float_parameters():
    shapes = [{"dim": 2048, "eps": 1e-5, "rows": 64}, {"dim": 256, "eps": 1e-6, "rows": 64}]
    got = rules.buckets(shapes, ["rows", "dim"])
    assert got == [{"dim": {"min": 724, "max": None}}, {"dim": {"min": None, "max": 724}}]
    assert rules.buckets(shapes) == got  # a float value is never bucketed
    with pytest.raises(WgslgenError, match=r"selection.json: entry kernel=k: shape 'rows=abc'"):
        rules._parse("rows=abc", "selection.json: entry kernel=k")


def test_starter_manifest(starter):
    project, _, manifest, cases = starter
    assert set(manifest["kernels"]) == {"rmsnorm"}
    for v in manifest["variants"].values():
        assert v["float_sizes"] == ["eps"]
        assert v["derived"] == [{"name": "inv_dim", "expr": to_tree("1.0 / dim", {}, "k")}]
    sel = manifest["kernels"]["rmsnorm"]["selection"]
    assert sel["rules"], "tuning gave no rule"
    for r in sel["rules"]:  # eps is a parameter, never a bucket; dim was tuned at two values
        assert set(r["shape"]) == {"dim"}, r["shape"]
    assert cases["runs"] and all(c["derived"] for c in cases["runs"])
    for c in cases["runs"]:
        assert c["derived"]["inv_dim"] == _wgslgen_inv_dim(project, c["variant"], c["shape"])
    # the Python runtime packs the derived value as f32, as wgslgen does
    shape = {"rows": 3, "dim": 100, "eps": 1e-5}
    name = sel["portable_fallback"]
    plan = rt.plan_for(manifest, name, shape)
    spec = _specs(project)[0]
    assert plan.uniform == next(v for v in spec.variants if v.name == name).case(shape).uniform
    assert plan.scope["inv_dim"] == _wgslgen_inv_dim(project, name, shape) == 1.0 / 100


def test_starter_python_package_runs_on_lavapipe(starter, tmp_path):
    project, out, manifest, cases = starter
    lines = vh.run_python_client(out, tmp_path)
    results = lines[:-1]
    assert {r["variant"] for r in results} == set(manifest["variants"])
    assert [r for r in results if not r["ok"]] == []
    for r, c in zip(results, cases["runs"], strict=True):
        assert r["derived"]["inv_dim"] == _wgslgen_inv_dim(project, c["variant"], c["shape"])
    init = (out / "__init__.py").read_text()
    assert "class RmsnormShape:" in init and "    eps: float\n" in init and "    dim: int\n" in init


@pytest.mark.skipif(RUSTC is None, reason="rustc is not installed (no Rust toolchain on PATH)")
def test_starter_rust_module(starter, tmp_path):
    _, out, manifest, cases = starter
    rs = (out / "rust" / "wgslgen_kernels.rs").read_text()
    assert "pub struct RmsnormShape { pub rows: i64, pub dim: i64, pub eps: f64, }" in rs
    source = vh.rust_conformance_passes(out, cases, manifest, tmp_path)
    assert "inv_dim as f64).to_bits()" in source  # wgslgen's value, bit for bit


def test_starter_ts_module_typechecks(starter):
    out = starter[1]
    if not vh.TSC.exists():
        pytest.skip("typescript not installed")
    vh.ts_module_typechecks(out / "ts" / "wgslgen_kernels.ts")


@pytest.mark.skipif(ICD is None, reason="Debian chromium (SwiftShader ICD) not installed")
@pytest.mark.skipif(
    not (ROOT / "node_modules" / "webgpu").exists(), reason="npm webgpu not installed"
)
def test_starter_node_dawn_swiftshader(starter, tmp_path):
    project, out, manifest, cases = starter
    got = run_node_client(out, tmp_path)
    f16 = {n for n, v in manifest["variants"].items() if "shader-f16" in v["features"]}
    assert set(got["ran"]) == set(manifest["variants"]) - f16 and got["ran"]
    for c in cases["runs"]:
        want = _wgslgen_inv_dim(project, c["variant"], c["shape"])
        assert got["derived"][c["variant"]]["inv_dim"] == want


def test_bad_selection_shape_is_one_line(starter, tmp_path, capsys, monkeypatch):
    project = tmp_path / "proj"
    shutil.copytree(starter[0], project)
    selection = project / "tuning" / "selection.json"
    doc = json.loads(selection.read_text())
    doc["entries"][0]["shape"] = "dim=abc,eps=1e-05,rows=64"
    selection.write_text(json.dumps(doc))
    monkeypatch.chdir(project)
    capsys.readouterr()
    assert main(["vendor", "--out", str(tmp_path / "out"), "--lang", "rust"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "selection.json: entry kernel=rmsnorm" in err
    assert "'dim=abc,eps=1e-05,rows=64'" in err


def test_removing_a_language_removes_the_folders_it_emptied(starter, tmp_path):
    project = starter[0]
    templates = [project / "kernels"]
    out = tmp_path / "gpu"
    vh.vendor(out, langs=["rust", "ts", "py"], selection=None, templates=templates)
    assert (out / "ts").is_dir() and (out / "rust").is_dir()
    vh.vendor(out, langs=["rust"], selection=None, templates=templates)
    assert not (out / "ts").exists() and not (out / "_runtime.py").exists()
    assert (out / "rust" / "wgslgen_kernels.rs").is_file() and (out / "shaders").is_dir()
    # a folder that holds a file the manifest does not list stays, with that file
    vh.vendor(out, langs=["rust", "ts"], selection=None, templates=templates)
    (out / "ts" / "notes.txt").write_text("mine")
    vh.vendor(out, langs=["py"], selection=None, templates=templates)
    assert [p.name for p in (out / "ts").iterdir()] == ["notes.txt"]
    assert not (out / "rust").exists()
    assert folder.check_folder(out) == []


def test_python_run_wants_gpu_buffers(starter):
    _, out, manifest, _ = starter
    name = manifest["kernels"]["rmsnorm"]["selection"]["portable_fallback"]
    variant = manifest["variants"][name]
    plan = rt.plan_for(manifest, name, {"rows": 2, "dim": 8, "eps": 1e-5})
    with pytest.raises(TypeError, match=r"buffers\['x'\] is a ndarray, not a wgpu.GPUBuffer"):
        gpu_rt.run(None, variant, plan, {"x": np.zeros(16, np.float32)}, "")
    with pytest.raises(ValueError, match=r"no binding 'xx'; bindings: params, x, w, y"):
        gpu_rt.run(None, variant, plan, {"xx": np.zeros(16, np.float32)}, "")
    assert "wgpu.GPUBuffer" in (out / "__init__.py").read_text().split("def run(", 1)[1]


def test_python_runtime_shape_values(starter):
    _, _, manifest, _ = starter
    v = next(iter(manifest["variants"].values()))
    scope = rt.problem_scope(v, {"rows": np.int64(2), "dim": 64.0, "eps": 1})
    assert scope == {"rows": 2, "dim": 64, "eps": 1.0, "inv_dim": 1 / 64}
    assert isinstance(scope["dim"], int) and isinstance(scope["eps"], float)
    with pytest.raises(ValueError, match=r"size dim=2.5 is not an integer"):
        rt.problem_scope(v, {"rows": 2, "dim": 2.5, "eps": 1e-5})


FLOAT_CASES = [
    "n / 2", "n // 0.1", "-n % 0.75", "eps * n", "[eps, n, 2.5] | max", "[eps, n] | min",
    "(n + eps) // 2", "n|float / 3", "(eps * 10)|int", "(-eps)|abs", "-(eps * 10) // 3",
    "1.0 if eps > 0.25 else 2", "eps > 0 and n", "not eps", "(eps + 4 - 1) // 4", "n % 0.3",
]  # fmt: skip


def test_float_ops_agree_in_every_language(tmp_path):
    """Each float op in Python (expr.evaluate, the runtime), Rust (rs_typed) and JS (the
    compiled TS runtime): the same doubles, bit for bit (Python's // and % on floats)."""
    from wgslgen.vendor.lang_rust import FLOAT_HELPERS, rs_typed

    scope = {"n": 7, "eps": 0.3}
    trees = [to_tree(text, {}, text, floats={"eps"}) for text in FLOAT_CASES]
    want = [float(evaluate(t, scope)) for t in trees]
    assert want == [float(rt.evaluate(t, scope)) for t in trees]
    runtime_js = json.dumps(str(ROOT / "wgslgen/vendor/runtime/ts/runtime.js"))
    js = (
        f"import {{ evaluate }} from {runtime_js};"
        f"const trees = {json.dumps(trees)}, scope = {json.dumps(scope)};"
        "console.log(JSON.stringify(trees.map((t) => evaluate(t, scope))));"
    )
    node = subprocess.run(
        ["node", "--input-type=module", "-e", js], capture_output=True, text=True, timeout=60
    )
    assert node.returncode == 0, node.stderr
    assert json.loads(node.stdout) == want
    if RUSTC is None:
        pytest.skip("rustc is not installed")
    fns = "\n".join(
        f"    pub fn f{i}(v: &Vars) -> f64 {{ ({rs_typed(t, {'eps'})[0]}) as f64 }}"
        for i, t in enumerate(trees)
    )
    calls = "\n".join(f'    println!("{{}}", m::f{i}(&v).to_bits());' for i in range(len(trees)))
    src = tmp_path / "ops.rs"
    src.write_text(
        "#![allow(unused_parens)]\n" + FLOAT_HELPERS + "mod m {\n"
        "    pub struct Vars { pub n: i64, pub eps: f64 }\n" + fns + "\n}\n"
        "fn main() {\n    let v = m::Vars { n: 7, eps: 0.3 };\n" + calls + "\n}\n"
    )
    exe = tmp_path / "ops"
    build = subprocess.run(
        [RUSTC, "--edition", "2021", str(src), "-o", str(exe)], capture_output=True, text=True
    )
    assert build.returncode == 0, build.stderr[-3000:]
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    bits = [int(x) for x in got]
    assert bits == [struct.unpack("<Q", struct.pack("<d", w))[0] for w in want], FLOAT_CASES
