"""`wgslgen test` and the harness on a real device (lavapipe): references, faults, preconditions."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from wgslgen.cli import main
from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import render
from wgslgen.run.borrowed_reference import find_kernel, with_reference
from wgslgen.run.harness import Harness, compare
from wgslgen.run.reference import load_reference, make_case
from wgslgen.run.worker_client import WorkerFailure
from wgslgen.spec.loader import discover, load_kernel

from .conftest import GOOD_KERNELS, SEED, TEMPLATES, cpu_harness

DQ = "attention_bwd_dq"
TEMPLATE = f"{DQ}.wgsl.j2"
# The bundled kernels and every test shape take ~20 s on a 2-core lavapipe: the full matrix.
BUNDLED = [k.name for k in discover([TEMPLATES])]


@pytest.fixture(scope="module")
def harness():
    """One worker on the CPU adapter (lavapipe), shared by the tests of this module."""
    with cpu_harness(timeout=60) as h:
        yield h


def _run_cli(capsys, *args: str) -> tuple[int, dict]:
    code = main(["test", "--adapter", "cpu", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def _kernel_copy(tmp_path: Path, name: str = DQ) -> Path:
    dest = tmp_path / "templates" / name
    shutil.copytree(TEMPLATES / name, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"anchor {old!r} not unique in {path}"
    path.write_text(text.replace(old, new))


# ---------------------------------------------------------------- comparison (no device)


def test_compare_reports_worst_multi_index_and_counts() -> None:
    want = np.arange(12, dtype=np.float64).reshape(3, 4) + 1.0
    got = want.copy()
    got[2, 1] += 0.5
    got[0, 3] += 0.01
    check = compare("out", got.reshape(-1), want, rtol=1e-3, atol=0.0)
    assert not check.ok and check.bad == 2 and check.count == 12
    assert check.worst_index == (2, 1) and check.max_abs == pytest.approx(0.5)
    assert check.max_rel == pytest.approx(0.5 / 10.0)
    assert "2/12 off" in check.summary() and "[2, 1]" in check.summary()


def test_compare_canary_nan_fails_unless_the_reference_has_it() -> None:
    want = np.array([1.0, np.nan, np.inf, 4.0])
    assert compare("o", np.array([1.0, np.nan, np.inf, 4.0]), want, 1e-6, 0).ok
    check = compare("o", np.array([1.0, np.nan, np.inf, np.nan]), want, 1e-6, 0)
    assert not check.ok and check.nonfinite == 1 and check.worst_index == (3,)
    assert "canary" in check.summary()
    assert not compare("o", np.array([1.0, 0.0, np.inf, 4.0]), want, 1e-6, 1.0).ok
    assert not compare("o", np.array([1.0, np.nan, -np.inf, 4.0]), want, 1e-6, 1.0).ok


# ---------------------------------------------------------------- preconditions


def test_a_call_breaking_a_precondition_is_refused_naming_it(harness) -> None:
    spec = find_kernel(DQ)
    short = next(v for v in spec.variants if v.params["max_history"] == 1024)
    shape = {"head_dim": 8, "n_heads": 2, "n_kv_heads": 1, "history_len": 2000}
    with pytest.raises(
        WgslgenError,
        match=r"precondition 'history_len <= max_history' fails "
        r"for history_len=2000, max_history=1024",
    ):
        harness.run(render(short), shape)
    with pytest.raises(WgslgenError, match=r"n_heads % n_kv_heads == 0"):
        make_case(short.case({**shape, "n_kv_heads": 3, "history_len": 4}), load_reference(spec))


def test_an_excluded_test_shape_is_n_a_not_a_failure(capsys) -> None:
    code, report = _run_cli(
        capsys,
        "--kernel",
        DQ,
        "--set",
        "workgroup_size=64",
        "--set",
        "storage=f32",
        "--set",
        "wmem=f32",
        "--shape",
        "head_dim=8,n_heads=2,n_kv_heads=1,history_len=1500",
    )
    status = {r["variant"]: r["status"] for r in report["results"]}
    assert status == {
        f"{DQ}__wg64_mh1024_sf32_wf32": "n/a",
        f"{DQ}__wg64_mh2048_sf32_wf32": "pass",
        f"{DQ}__wg64_mh4096_sf32_wf32": "pass",
    }
    assert code == 0 and report["ok"]
    na = next(r for r in report["results"] if r["status"] == "n/a")
    assert "history_len <= max_history" in na["message"]


# ---------------------------------------------------------------- the bundled kernels


@pytest.mark.parametrize("kernel", BUNDLED)
def test_bundled_variants_that_fit_the_adapter_pass(harness, kernel: str) -> None:
    spec = find_kernel(kernel)
    plan = harness.plan([spec])
    report = harness.execute(plan)
    assert report.ok, report.failure_table()
    assert len(report.results) == len(plan.cases) >= len(spec.test_shapes)
    run_variants = {r.variant for r in report.results}
    misfits = {n.variant for n in report.not_run}
    assert run_variants | misfits == {v.name for v in spec.variants}
    # Reduced-precision encodings are among what passed, within their own tolerances.
    declared = {str(v) for a in spec.axes for v in a.values} & {"f16", "pf16"}
    exercised = {b.encoding.name for r, _ in plan.cases for b in r.variant.interface.bindings}
    assert declared <= exercised


def test_seed_runs_as_a_plain_kernel_with_a_borrowed_reference(capsys) -> None:
    code, report = _run_cli(capsys, "--templates", str(SEED), "--reference", DQ)
    assert code == 0 and report["ok"]
    assert [r["status"] for r in report["results"]] == ["pass"] * len(find_kernel(DQ).test_shapes)
    assert {r["kernel"] for r in report["results"]} == {"seed"}


def test_seed_matches_the_baseline_variant(harness) -> None:
    spec = find_kernel(DQ)
    seed = with_reference(discover([SEED]), DQ)[0]
    for shape in spec.test_shapes:
        got = harness.run(render(seed.baseline), shape)
        want = harness.run(render(spec.baseline), shape)
        for name in want:
            scale = max(float(np.abs(want[name]).max()), 1e-30)
            assert np.abs(got[name] - want[name]).max() <= 1e-6 * scale, (name, shape)


def test_a_plain_kernel_without_reference_is_not_run_and_not_green(capsys) -> None:
    code, report = _run_cli(capsys, "--templates", str(SEED))
    assert code == 1 and not report["ok"] and not report["results"]
    assert "--reference" in report["not_run"][0]["reason"]


# ---------------------------------------------------------------- injected faults


def test_an_off_by_one_template_is_caught(tmp_path: Path, capsys) -> None:
    folder = _kernel_copy(tmp_path)
    _edit(folder / TEMPLATE, "d < head_dim; d = d + WG", "d + 1u < head_dim; d = d + WG")
    code, report = _run_cli(
        capsys, "--templates", str(folder.parent), "--set", "wmem=f32", "--set", "workgroup_size=64"
    )
    assert code == 1 and not report["ok"]
    failed = [r for r in report["results"] if r["status"] == "fail"]
    assert failed, "the off-by-one went unnoticed"
    check = next(c for c in failed[0]["checks"] if c["name"] == "d_q")
    head_dim = failed[0]["shape"]["head_dim"]
    assert check["worst_index"][1] == head_dim - 1 and check["got"] == "nan"
    assert "canary" in failed[0]["message"]


# On lavapipe every loop of an invocation ends after 65,535 iterations in total (Mesa 22.3),
# so an exit-less loop alone terminates; each iteration here does 400 dependent sin() calls
# that read a buffer, which takes minutes: to the harness it is a hang.
HANG = """
{% if workgroup_size == 128 %}
    var spin: f32 = f32(tid);
    loop {
        if (probs[0] > 2.0) { break; }  // probabilities never exceed 1: no exit
{% for i in range(400) %}
        spin = sin(spin * 1.0001 + d_out[{{ i % 7 }}u]);
{% endfor %}
    }
    if (spin == 12345.0) { d_q[0] = spin; }
{% endif %}
"""


def test_a_hanging_variant_times_out_and_the_run_goes_on(tmp_path: Path, capsys) -> None:
    folder = _kernel_copy(tmp_path)
    anchor = "    let kv = h / params.heads_per_kv;\n"
    _edit(folder / TEMPLATE, anchor, anchor + HANG)
    deadline = 6.0
    start = time.monotonic()
    code, report = _run_cli(
        capsys,
        "--templates",
        str(folder.parent),
        "--timeout",
        str(deadline),
        "--set",
        "storage=f32",
        "--set",
        "wmem=f32",
        "--set",
        "max_history=1024",
        "--shape",
        "head_dim=64,n_heads=4,n_kv_heads=4,history_len=1",
    )
    elapsed = time.monotonic() - start
    status = {r["variant"].split("__")[1]: r for r in report["results"]}
    assert [status[f"wg{wg}_mh1024_sf32_wf32"]["status"] for wg in (32, 64, 128, 256)] == [
        "pass",
        "pass",
        "timeout",
        "pass",
    ]
    hung = status["wg128_mh1024_sf32_wf32"]
    assert deadline <= hung["seconds"] < deadline + 2.0
    assert "deadline" in hung["message"]
    assert code == 1 and elapsed < 3 * deadline


def test_pipelines_are_built_once_per_variant_not_per_shape(harness) -> None:
    spec = find_kernel(DQ)
    rendered = render(next(v for v in spec.variants if v.params["workgroup_size"] == 32))
    compiles = []
    for shape in spec.test_shapes:
        job = harness.job(rendered, harness.test_data(rendered.variant.case(shape)))
        reply = harness.worker.call(job, timeout=60)
        assert reply.ok, reply
        compiles.append(reply.compiles)
    assert len(set(compiles)) == 1


def test_a_crashed_worker_is_replaced() -> None:
    from .fault_worker import AbortJob, FaultyWorkerClient

    spec = find_kernel(DQ)
    rendered = render(spec.baseline)
    with Harness(worker=FaultyWorkerClient()) as harness:
        harness.worker.start()
        with pytest.raises(WorkerFailure) as info:
            harness.worker.call(AbortJob(), timeout=30)  # an injected fault: SIGABRT
        assert info.value.kind == "crash" and "signal" in str(info.value)
        assert harness.check(rendered, spec.test_shapes[0]).status == "pass"
        assert harness.worker.restarts == 1


def test_a_shader_that_does_not_compile_is_an_error_not_a_crash(tmp_path: Path, harness) -> None:
    folder = _kernel_copy(tmp_path)
    _edit(folder / TEMPLATE, "let kv = h / params.heads_per_kv;", "let kv = h / params.no_such;")
    spec = load_kernel(folder)
    result = harness.check(render(spec.baseline), spec.test_shapes[0])
    assert result.status == "error" and "no_such" in result.message
    restarts = harness.worker.restarts
    assert harness.check(render(find_kernel(DQ).baseline), spec.test_shapes[0]).status == "pass"
    assert harness.worker.restarts == restarts


def test_brackets_nested_past_the_guard_are_an_error_not_a_dead_worker(
    tmp_path: Path, harness
) -> None:
    # 4000 levels overflow wgpu-native's parser on the worker's 8 MiB stack (signal 11 there).
    folder = _kernel_copy(tmp_path)
    _edit(
        folder / TEMPLATE,
        "let kv = h / params.heads_per_kv;",
        "let kv = " + "(" * 4000 + "h" + ")" * 4000 + " / params.heads_per_kv;",
    )
    spec = load_kernel(folder)
    restarts = harness.worker.restarts
    result = harness.check(render(spec.baseline), spec.test_shapes[0])
    assert result.status == "error"
    assert "not compiled by wgpu: brackets nest 4001 deep" in result.message  # + the body's {
    assert harness.worker.restarts == restarts
    assert harness.check(render(find_kernel(DQ).baseline), spec.test_shapes[0]).status == "pass"


# ---------------------------------------------------------------- references


def test_a_reference_of_the_wrong_size_is_named(tmp_path: Path, harness) -> None:
    folder = tmp_path / "scale"
    shutil.copytree(GOOD_KERNELS / "scale", folder)
    _edit(folder / "reference.py", 'rng.normal(size=shape["n"])', 'rng.normal(size=shape["n"] + 1)')
    spec = load_kernel(folder)
    result = harness.check(render(spec.baseline), {"n": 5})
    assert result.status == "error"
    assert "'x' has 6 elements" in result.message and "count = n = 5" in result.message


def test_f16_inputs_are_quantised_before_the_reference_sees_them() -> None:
    spec = load_kernel(GOOD_KERNELS / "scale")
    f16 = next(v for v in spec.variants if v.params["storage"] == "f16")
    case = make_case(f16.case({"n": 64}), load_reference(spec), seed=3)
    x = case.inputs["x"]
    assert np.array_equal(x, x.astype(np.float16).astype(np.float64))
    assert np.array_equal(case.expected["y"], 2.0 * x)
    assert np.isnan(np.frombuffer(case.data["y"], np.float32)).all()  # the canary


def test_the_worker_times_with_bench_measure(harness) -> None:
    spec = find_kernel(DQ)
    m = harness.bench(render(spec.baseline), spec.test_shapes[1], warm=True, budget_s=0.02)
    assert m.samples_ns and m.median_ns > 0


def test_a_case_is_built_once_per_check(harness, monkeypatch) -> None:
    """Variant.case is the one place a shape becomes a scope; check does it exactly once."""
    from wgslgen.spec.kernel import Variant

    spec = load_kernel(GOOD_KERNELS / "scale")
    rendered = render(spec.baseline)
    calls = []
    real = Variant.case
    monkeypatch.setattr(Variant, "case", lambda self, shape: calls.append(1) or real(self, shape))
    result = harness.check(rendered, {"n": 64})
    assert result.status == "pass" and len(calls) == 1


def test_a_shape_with_empty_buffers_is_a_user_error_not_a_crash(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "scale"
    shutil.copytree(GOOD_KERNELS / "scale", folder)
    toml = folder / "kernel.toml"
    toml.write_text(toml.read_text().replace('"n >= 1"', '"n >= 0"'))  # the device must refuse
    spec = load_kernel(folder)
    with pytest.raises(WgslgenError, match=r"buffers with no elements \(x = 0, y = 0\)"):
        spec.baseline.case({"n": 0})
    code = main(["test", "--templates", str(tmp_path), "--shape", "n=0", "--adapter", "cpu"])
    assert code == 2 and "no elements" in capsys.readouterr().err


def test_a_generated_or_vendored_f16_file_runs_with_the_buffers_its_header_declares(
    tmp_path: Path, capsys
) -> None:
    from wgslgen.run.borrowed_reference import declared_axes
    from wgslgen.vendor.plan import provenance

    spec = find_kernel(DQ)
    f16 = next(v for v in spec.variants if v.params["storage"] == "f16" and v.is_baseline is False)
    rendered = render(f16)
    generated = tmp_path / "copy_of_generated.wgsl"
    generated.write_text(rendered.source)
    vendored = tmp_path / "vendored.wgsl"
    vendored.write_text(provenance(rendered, "0" * 64) + rendered.source)
    for path in (generated, vendored):
        assert declared_axes(path, spec) == f16.params
    assert declared_axes(SEED, spec) is None  # a hand-written file: the baseline
    code = main(["test", "--templates", str(generated), "--reference", DQ, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["ok"], report


def test_a_harness_dropped_without_close_ends_its_worker() -> None:
    """An API user's test that forgets `with` or close(): the worker used to run on until
    the interpreter exited, one more per such test."""
    import gc
    import os

    harness = Harness("cpu")
    spec = load_kernel(GOOD_KERNELS / "scale")
    assert harness.check(render(spec.baseline), {"n": 5}).status == "pass"
    pid = harness.worker.proc.pid
    del harness
    gc.collect()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"worker {pid} still runs after its Harness was dropped")
