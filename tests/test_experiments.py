"""Experiments kept ready for a GPU (benchmarks/experiments/*/change.diff) still apply to the
templates: a template edit that breaks one fails here, not on the device machine; and
compare.py reads their results."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import ROOT

COMPARE = ROOT / "benchmarks" / "experiments" / "compare.py"
DIFFS = sorted((ROOT / "benchmarks" / "experiments").glob("*/change.diff"))


@pytest.mark.parametrize("diff", DIFFS, ids=[d.parent.name for d in DIFFS])
def test_experiment_diff_applies_to_the_templates(diff) -> None:
    done = subprocess.run(
        ["git", "apply", "--check", str(diff)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, f"{diff} no longer applies:\n{done.stderr}"


def test_there_is_an_experiment_to_check() -> None:
    assert DIFFS, "benchmarks/experiments/*/change.diff: none found"


def _breakdown(path, variant: str, shape: str, warm: float, cold: float) -> None:
    """A pass_breakdown.py --json file with one row (and an ablation row to be ignored)."""
    times = {"all": {"warm": warm, "cold": cold}, "partials": {"warm": 1.0, "cold": 1.0}}
    rows = [
        {"variant": variant, "shape": shape, "ablation": "as is", "times_us": times},
        {"variant": variant, "shape": shape, "ablation": "empty", "times_us": times | {
            "all": {"warm": 0.1, "cold": 0.1}}},
    ]  # fmt: skip
    path.write_text(json.dumps(rows))


def test_compare_puts_both_sides_and_the_changed_only_variants_side_by_side(tmp_path) -> None:
    shape = "256,8,4,4096"
    _breakdown(tmp_path / "library_a.json", "a", shape, 12.0, 15.0)
    _breakdown(tmp_path / "library_b.json", "b", shape, 13.0, 14.0)
    _breakdown(tmp_path / "changed_a.json", "a", shape, 11.0, 15.5)
    _breakdown(tmp_path / "changed_u8.json", "u8", shape, 10.0, 13.0)
    out = tmp_path / "compare.json"
    done = subprocess.run(
        [sys.executable, str(COMPARE), str(tmp_path), "--json", str(out)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())[shape]
    assert [r["variant"] for r in rows] == ["a", "u8"]  # both sides first
    assert rows[0]["delta"] == [-1.0, 0.5]
    # a variant only the change has is held against the fastest library variant there
    assert rows[1]["best_library"] == "a" and rows[1]["delta"] == [-2.0, -2.0]
    assert "Δ  -1.0 /  +0.5" in done.stdout


def test_compare_names_a_file_it_cannot_read(tmp_path) -> None:
    (tmp_path / "changed_x.json").write_text("[{")
    done = subprocess.run(
        [sys.executable, str(COMPARE), str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "changed_x.json: not a pass_breakdown.py --json file" in done.stderr


def test_run_sh_refuses_an_unknown_family_and_a_missing_command() -> None:
    run = ROOT / "benchmarks" / "experiments" / "raw_kv" / "run.sh"
    done = subprocess.run([str(run), "gpu", "out", "nope"], capture_output=True, text=True)
    assert done.returncode == 2 and "family bwd_dq or forward, not 'nope'" in done.stderr
    done = subprocess.run([str(run)], capture_output=True, text=True)
    assert done.returncode == 2 and "usage:" in done.stderr


def test_gpu_env_install_names_what_is_missing_and_must_be_sourced(tmp_path) -> None:
    script = ROOT / "benchmarks" / "gpu_env.sh"
    # sourced in a folder without the carried .gl/ and .whl/: one line saying what to do
    done = subprocess.run(
        ["bash", "-c", f"source {script} install"], cwd=tmp_path, capture_output=True, text=True
    )
    assert (
        done.returncode == 1 and "gpu_env.sh fetch" in done.stderr and "carry both" in done.stderr
    )
    # run rather than sourced, its exports would be lost: refused
    done = subprocess.run([str(script), "install"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1 and "source it" in done.stderr
    done = subprocess.run([str(script)], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1 and "usage:" in done.stderr
