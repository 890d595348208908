"""Experiments kept ready for a GPU (benchmarks/experiments/*/change.diff) still apply to the
templates: a template edit that breaks one fails here, not on the device machine."""

from __future__ import annotations

import subprocess

import pytest

from .conftest import ROOT

DIFFS = sorted((ROOT / "benchmarks" / "experiments").glob("*/change.diff"))


@pytest.mark.parametrize("diff", DIFFS, ids=[d.parent.name for d in DIFFS])
def test_experiment_diff_applies_to_the_templates(diff) -> None:
    done = subprocess.run(
        ["git", "apply", "--check", str(diff)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, f"{diff} no longer applies:\n{done.stderr}"


def test_there_is_an_experiment_to_check() -> None:
    assert DIFFS, "benchmarks/experiments/*/change.diff: none found"
