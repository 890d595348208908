"""attention_bwd_dq_split_out: bwd_dq given the forward's output, on lavapipe.

The bundled reference builds `out` as probs·V, where D = d_out·out equals Σ probs·d_probs, so
the library's test shapes cannot tell a kernel that reads `out` from one that sums over the
history as attention_bwd_dq_split does. Here `out` is moved off probs·V: the kernel must then
follow D = d_out·out (the contract of its interface), which the two-sum math does not.
"""

from __future__ import annotations

import importlib.util
import shutil
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
