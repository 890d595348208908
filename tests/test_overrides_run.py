"""kernel.toml [overrides] reach every pipeline, not only `validate`'s: `test` and `tune` run
the variant with them (lavapipe), the tuning key carries them, and a vendored folder's
manifest lists them and its Python, TypeScript and Rust bindings pass them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import vendor_helpers as vh
from tests.conftest import ROOT
from tests.test_vendor_node import ICD, run_node_client
from tests.vendor_clients import rust_conformance
from wgslgen.cli import main
from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import render
from wgslgen.spec.loader import load_kernel
from wgslgen.tune.db import ResultsDB
from wgslgen.tune.keys import judge_sha256, result_sha256
from wgslgen.vendor import conformance, folder
from wgslgen.vendor.plan import plan_vendor

# history_len: a size conformance.SMALL knows (96), so the vendored folder gets shared cases.
TOML = """
[kernel]
name = "ovr"

[[axis]]
name = "workgroup_size"
key = "wg"
values = [32, 64]

[uniform]
fields = [["history_len", "u32"]]
pad_to = 16

[[binding]]
name = "x"
type = "f32"
count = "history_len"

[[binding]]
name = "y"
access = "read_write"
type = "f32"
count = "history_len"

[problem]
sizes = ["history_len"]
dispatch = ["(history_len + workgroup_size - 1) // workgroup_size"]

[test]
shapes = [{ history_len = 96 }, { history_len = 1000 }]
tolerance = [{ rtol = 1e-6, atol = 0.0 }]
"""
# Neither override has a default: no pipeline exists without the values. `wg` sizes the
# workgroup and its memory (a wrong one leaves elements unwritten), `scale` the result.
TEMPLATE = """
override wg: u32;
override scale: f32;
{{ interface }}
var<workgroup> tile: array<f32, wg>;

@compute @workgroup_size(wg)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    let i = gid.x;
    if (i < params.history_len) {
        tile[li] = x[i];
    }
    workgroupBarrier();
    if (i >= params.history_len) {
        return;
    }
    y[i] = scale * tile[li];
}
"""
REFERENCE = """
import numpy as np


def make_inputs(shape, rng):
    return {{"x": rng.normal(size=shape["history_len"])}}


def reference(inputs, shape):
    return {{"y": {scale} * inputs["x"].astype(np.float64)}}
"""


def _kernel(root: Path, scale: str = "3.0", wg: str = "workgroup_size", ref: str = "3.0") -> Path:
    """The kernel folder under ``root``/kernels; kernel.toml's values and the reference's
    factor are set apart, so that a test can make them disagree."""
    folder = root / "kernels" / "ovr"
    folder.mkdir(parents=True, exist_ok=True)
    overrides = f'\n[overrides]\nwg = "{wg}"\nscale = {scale}\n'
    (folder / "kernel.toml").write_text(TOML + overrides, encoding="utf-8")
    (folder / "ovr.wgsl.j2").write_text(TEMPLATE, encoding="utf-8")
    (folder / "reference.py").write_text(REFERENCE.format(scale=ref), encoding="utf-8")
    return folder


def _test(capsys, templates: Path) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["test", "--adapter", "cpu", "--json", "--templates", str(templates)])
    return code, json.loads(capsys.readouterr().out)


def test_variant_override_values_and_pipeline_constants(tmp_path: Path) -> None:
    spec = load_kernel(_kernel(tmp_path))
    wg32, wg64 = spec.variants
    assert wg64.override_values == {"wg": 64, "scale": 3.0}
    rendered = render(wg64)
    assert rendered.constants == {"wg": 64, "scale": 3.0}
    # The facts are the pipeline's: the workgroup and its memory are sized by `wg`.
    facts = rendered.facts["main"]
    assert facts.workgroup_size == (64, 1, 1) and facts.workgroup_bytes == 64 * 4
    assert facts.needs_overrides == () and facts.unset_overrides == ()
    assert render(wg32).facts["main"].workgroup_size == (32, 1, 1)


def test_an_override_not_declared_is_not_a_pipeline_constant(tmp_path: Path) -> None:
    folder = _kernel(tmp_path)
    with (folder / "kernel.toml").open("a", encoding="utf-8") as f:
        f.write("unused_elsewhere = 7\n")  # WebGPU refuses a constant the module lacks
    rendered = render(load_kernel(folder).variants[0])
    assert rendered.variant.override_values["unused_elsewhere"] == 7
    assert rendered.constants == {"wg": 32, "scale": 3.0}


def test_a_value_that_is_not_a_number_names_the_key(tmp_path: Path) -> None:
    folder = _kernel(tmp_path, wg="workgroup_size > 32")
    variant = load_kernel(folder).variants[0]
    with pytest.raises(WgslgenError) as info:
        _ = variant.override_values
    lines = (folder / "kernel.toml").read_text().splitlines()
    line = 1 + next(i for i, text in enumerate(lines) if text.startswith("wg = "))
    expected = f"kernel.toml:{line}: overrides.wg: must be a number, got False for ovr__wg32"
    assert expected in str(info.value)


def test_test_runs_the_pipelines_with_the_values(capsys, tmp_path: Path) -> None:
    _kernel(tmp_path)
    code, report = _test(capsys, tmp_path / "kernels")
    assert report["not_run"] == []
    assert [(r["variant"], r["status"]) for r in report["results"]] == [
        ("ovr__wg32", "pass"),
        ("ovr__wg32", "pass"),
        ("ovr__wg64", "pass"),
        ("ovr__wg64", "pass"),
    ]
    assert code == 0 and report["ok"]


@pytest.mark.parametrize(
    ("values", "why"),
    [
        ({"scale": "4.0"}, "scale multiplies the output"),
        ({"wg": "workgroup_size // 2"}, "half of every workgroup's elements go unwritten"),
    ],
)
def test_a_changed_value_changes_the_output(capsys, tmp_path: Path, values, why) -> None:
    # The reference stays at 3·x: only the kernel.toml value changed, so a failure proves
    # that the value, not a default, reached the pipeline.
    _kernel(tmp_path, **values)
    code, report = _test(capsys, tmp_path / "kernels")
    assert code != 0, why
    assert {r["status"] for r in report["results"]} == {"fail"}, why
    assert all(r["stage"] is None for r in report["results"])  # the pipeline was made


def test_tuning_times_it_and_its_key_carries_the_values(capsys, tmp_path: Path) -> None:
    spec = load_kernel(_kernel(tmp_path))
    db = tmp_path / "results.jsonl"
    capsys.readouterr()
    code = main(
        ["tune", "--templates", str(tmp_path / "kernels"), "--kernel", "ovr",
         "--shape", "history_len=1000", "--l2-bytes", "1M", "--rounds", "5",
         "--adapter", "cpu", "--db", str(db), "--selection", str(tmp_path / "sel.json")]
    )  # fmt: skip
    assert code == 0, capsys.readouterr()
    records = ResultsDB(db).load().records
    assert {r.status for r in records} == {"ok"} and len(records) == 2
    by_name = {v.name: v for v in spec.variants}
    for r in records:
        assert r.key.judge == judge_sha256(by_name[r.variant])
    # Another scale: the same code, judged apart (its old records are not reused).
    other = load_kernel(_kernel(tmp_path / "other", scale="4.0"))
    for v, w in zip(spec.variants, other.variants, strict=True):
        assert result_sha256(render(v)) == result_sha256(render(w))
        assert judge_sha256(v) != judge_sha256(w)


@pytest.fixture(scope="module")
def vendored(tmp_path_factory) -> tuple[Path, dict, dict]:
    """The kernel vendored with every binding (no selection: its portable fallback), and the
    shared cases of its manifest."""
    root = tmp_path_factory.mktemp("ovr")
    spec = load_kernel(_kernel(root))
    plan = plan_vendor([spec], None, vh.LANGS, inputs=vh.inputs(selection=None))
    out = root / "site" / "wgk"
    folder.write(plan, out)
    cases = conformance.build(plan.manifest, [spec])
    (out.parent / "cases.json").write_text(json.dumps(cases, sort_keys=True))
    return out, plan.manifest, cases


def test_the_manifest_carries_the_constants(vendored) -> None:
    _, manifest, cases = vendored
    [(name, v)] = manifest["variants"].items()
    wg = v["params"]["workgroup_size"]
    assert v["constants"] == {"scale": 3.0, "wg": wg}
    assert v["passes"][0]["workgroup_size"] == [wg, 1, 1]
    assert v["passes"][0]["workgroup_bytes"] == 4 * wg
    assert [c["variant"] for c in cases["runs"]] == [name]


def test_the_vendored_python_runtime_runs_it(vendored, tmp_path: Path) -> None:
    out, manifest, _ = vendored
    results = vh.run_python_client(out, tmp_path)[:-1]
    assert [r["variant"] for r in results] == list(manifest["variants"])
    assert [r for r in results if not r["ok"]] == []


@pytest.mark.skipif(ICD is None, reason="Debian chromium (SwiftShader ICD) not installed")
@pytest.mark.skipif(
    not (ROOT / "node_modules" / "webgpu").exists(), reason="npm webgpu not installed"
)
def test_the_vendored_js_module_runs_it_on_dawn(vendored, tmp_path: Path) -> None:
    out, manifest, _ = vendored
    assert run_node_client(out, tmp_path)["ran"] == list(manifest["variants"])


@pytest.mark.skipif(shutil.which("rustc") is None, reason="rustc is not installed")
def test_the_rust_module_plans_carry_the_constants(vendored, tmp_path: Path) -> None:
    out, manifest, cases = vendored
    [(name, v)] = manifest["variants"].items()
    wg = v["params"]["workgroup_size"]
    shape = rust_conformance._shape("ovr", {"history_len": 96})
    src = tmp_path / "conformance_test.rs"
    src.write_text(
        rust_conformance.generate(out, cases, manifest, "wgslgen_kernels.rs")
        + "#[test]\nfn constants() {\n"
        f'    let p = k::plan_for("{name}", &{shape}).unwrap();\n'
        f'    assert_eq!(p.constants, &[("scale", 3.0), ("wg", {wg}.0)]);\n'
        "}\n"
    )
    exe = tmp_path / "conformance"
    build = subprocess.run(
        ["rustc", "--edition", "2021", "--test", "-O", str(src), "-o", str(exe)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-4000:]
    assert "warning" not in build.stderr, build.stderr[-2000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "4 passed" in run.stdout, run.stdout[-4000:]
