"""attention_bwd_dq_split_out: bwd_dq given the forward's output, on lavapipe.

The bundled reference builds `out` as probs·V, where D = d_out·out equals Σ probs·d_probs, so
the library's test shapes cannot tell a kernel that reads `out` from one that sums over the
history as attention_bwd_dq_split does. Here `out` is moved off probs·V: the kernel must then
follow D = d_out·out (the contract of its interface), which the two-sum math does not.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wgslgen.spec.kernel import parse_shape
from wgslgen.testing import check_kernel

ROOT = Path(__file__).resolve().parents[1]
KERNEL = "attention_bwd_dq_split_out"
SCHEDULE = {"chunk": 32, "group": 2, "mlp": 4, "storage": "f32", "fixed_head_dim": 128}
SHAPE = "head_dim=128,n_heads=4,n_kv_heads=2,history_len=100"
# subgroup_sums = 1: four heads a KV head, and a last chunk of 44 keys
SUBGROUP_SHAPE = "head_dim=128,n_heads=8,n_kv_heads=2,history_len=300"
SUBGROUP_SCHEDULES = [
    {"workgroup_size": 256, "chunk": 128, "group": 4, "storage": "f16"},
    {"workgroup_size": 256, "chunk": 64, "group": 2, "storage": "f32"},
]
SUBGROUP_BODY = "_lib/attention_bwd_dq_split_out.sg.wgsl.j2"

SHIFTED_OUT = '''
_bundled_make_inputs = make_inputs


def make_inputs(shape, rng):
    """The bundled inputs with `out` moved off probs·V."""
    inputs = _bundled_make_inputs(shape, rng)
    inputs["out"] = inputs["out"] + rng.normal(0.0, 0.5, size=inputs["out"].shape)
    return inputs
'''


def _with_shifted_out(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "templates", tmp_path / "templates")
    folder = tmp_path / "templates" / KERNEL
    reference = folder / "reference.py"
    reference.write_text(reference.read_text() + SHIFTED_OUT)
    return folder.parent


def test_d_scores_and_d_q_follow_the_given_out(tmp_path: Path) -> None:
    templates = _with_shifted_out(tmp_path)
    report = check_kernel(KERNEL, templates, shapes=[SHAPE], adapter="cpu", only=SCHEDULE)
    assert report.counts() == {"pass": 1}, report.results


def test_a_shifted_out_changes_the_answer_the_kernel_must_give(tmp_path: Path) -> None:
    """The test above has teeth: with `out` shifted, D = d_out·out is not Σ probs·d_probs."""
    path = _with_shifted_out(tmp_path) / KERNEL / "reference.py"
    module_spec = importlib.util.spec_from_file_location("shifted_reference", path)
    ref = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(ref)
    shape = parse_shape(SHAPE)
    inputs = ref.make_inputs(shape, np.random.default_rng(0))
    given = ref.reference(inputs, shape)["d_scores"]
    consistent = ref.reference(
        inputs | {"out": ref._bundled_make_inputs(shape, np.random.default_rng(0))["out"]}, shape
    )["d_scores"]
    assert np.abs(given - consistent).max() > 100 * 1e-4 * np.abs(consistent).max()


def _subgroup_schedule(schedule: dict) -> dict:
    return {**schedule, "mlp": 4, "fixed_head_dim": 128, "subgroup_sums": 1}


@pytest.mark.parametrize("schedule", SUBGROUP_SCHEDULES, ids=lambda s: f"g{s['group']}")
def test_subgroup_sums_follow_the_given_out(tmp_path: Path, schedule: dict) -> None:
    # lavapipe's subgroups hold 8 invocations, fewer than a row of 32: its run-time check
    # sends every workgroup to the workgroup-memory fallback, which this runs
    templates = _with_shifted_out(tmp_path)
    only = _subgroup_schedule(schedule)
    report = check_kernel(KERNEL, templates, shapes=[SUBGROUP_SHAPE], adapter="cpu", only=only)
    assert report.counts() == {"pass": 1}, report.results


def test_on_lavapipe_the_subgroup_check_is_what_keeps_the_answer_right(tmp_path: Path) -> None:
    # The check's verdict forced to "subgroups of 32": the shuffles then sum rows that
    # lavapipe's 8-wide subgroups do not hold whole, and the answer is wrong.
    templates = _with_shifted_out(tmp_path)
    body = templates / SUBGROUP_BODY
    text = body.read_text()
    verdict = "sg_flag = select(0u, seen, "
    assert text.count(verdict) == 1
    body.write_text(text.replace(verdict, "sg_flag = select(32u, 32u, "))
    only = _subgroup_schedule(SUBGROUP_SCHEDULES[0])
    report = check_kernel(KERNEL, templates, shapes=[SUBGROUP_SHAPE], adapter="cpu", only=only)
    assert report.counts() == {"fail": 1}, report.results


# subgroup_sums = 2: rows of 16 invocations. llvmpipe's subgroups are LP_NATIVE_VECTOR_WIDTH / 32
# wide, read when the driver loads: 16 at 512, so a fresh process with it set runs the subgroup
# path on the CPU (the check passes), where the default 8 runs the fallback.
ROWS_OF_16 = {"workgroup_size": 256, "chunk": 128, "group": 2, "mlp": 4, "fixed_head_dim": 128}
FALLBACK_LANE_SUM = "t = t + s_part[uc * WG + kg * {{ LANES }}u + l];"


def _check_in_fresh_process(templates: Path, storage: str, vector_width: str | None) -> set[str]:
    env = {k: v for k, v in os.environ.items() if k != "LP_NATIVE_VECTOR_WIDTH"}
    if vector_width:
        env["LP_NATIVE_VECTOR_WIDTH"] = vector_width
    axes = {**ROWS_OF_16, "storage": storage, "subgroup_sums": 2}
    sets = [arg for axis, value in axes.items() for arg in ("--set", f"{axis}={value}")]
    cmd = [sys.executable, "-m", "wgslgen", "test", "--templates", str(templates)]
    cmd += ["--kernel", KERNEL, *sets, "--shape", SUBGROUP_SHAPE, "--adapter", "cpu", "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    report = json.loads(done.stdout)
    return {r["status"] for r in report["results"]} | {f"rc{done.returncode}"}


@pytest.mark.parametrize("storage", ["f16", "f32"])
def test_rows_of_16_sum_by_subgroup_on_16_wide_subgroups(tmp_path: Path, storage: str) -> None:
    # The fallback's lane sums doubled: a run that still passes took the subgroup path, and the
    # same text on 8-wide subgroups (the fallback) fails, so the doubling bites.
    templates = _with_shifted_out(tmp_path)
    body = templates / SUBGROUP_BODY
    text = body.read_text()
    assert text.count(FALLBACK_LANE_SUM) == 1
    doubled = FALLBACK_LANE_SUM.replace("t + s", "t + 2.0 * s")
    body.write_text(text.replace(FALLBACK_LANE_SUM, doubled))
    assert _check_in_fresh_process(templates, storage, "512") == {"pass", "rc0"}
    assert "fail" in _check_in_fresh_process(templates, storage, None)


def test_rows_of_16_follow_the_given_out_on_the_fallback(tmp_path: Path) -> None:
    templates = _with_shifted_out(tmp_path)
    only = {**ROWS_OF_16, "storage": "f16", "subgroup_sums": 2}
    report = check_kernel(KERNEL, templates, shapes=[SUBGROUP_SHAPE], adapter="cpu", only=only)
    assert report.counts() == {"pass": 1}, report.results


# The finalize sums a thread's chunk partials eight at a time, then four, then one. With 128
# threads (four groups of 32 columns at head_dim 128) and chunks of 32 keys, 51 chunks run each
# loop once: 8·4 + 4·4 + 3. The library's test shapes stop at 10 chunks, the eight-load loop unrun.
EVERY_FINALIZE_LOOP = "head_dim=128,n_heads=4,n_kv_heads=1,history_len=1617"
FINALIZE_SCHEDULE = {**SCHEDULE, "workgroup_size": 128, "group": 4}
# The finalize's macro of one chunk's load; k = 7 is only the eight-load sum's last chunk
CHUNK_PART = "{% macro chunk_part(k) %}part["


def test_the_finalize_sums_every_chunk_through_all_three_loops(tmp_path: Path) -> None:
    templates = _with_shifted_out(tmp_path)
    report = check_kernel(
        KERNEL, templates, shapes=[EVERY_FINALIZE_LOOP], adapter="cpu", only=FINALIZE_SCHEDULE
    )
    assert report.counts() == {"pass": 1}, report.results


def test_a_chunk_dropped_from_the_eight_load_sum_fails_there(tmp_path: Path) -> None:
    templates = _with_shifted_out(tmp_path)
    body = templates / "_lib" / "attention_bwd_dq_split.body.wgsl.j2"
    text = body.read_text()
    assert text.count(CHUNK_PART) == 1
    dropped = CHUNK_PART.replace("part[", "{{ '0.0 * ' if k == 7 }}part[")
    body.write_text(text.replace(CHUNK_PART, dropped))
    report = check_kernel(
        KERNEL, templates, shapes=[EVERY_FINALIZE_LOOP], adapter="cpu", only=FINALIZE_SCHEDULE
    )
    assert report.counts() == {"fail": 1}, report.results
