"""A reference.py that hangs or fails while being imported: its import is bounded by the
user's --timeout (once per file, not once per case), and in `tune` it is that kernel's error
while the other kernels are tuned and kept."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wgslgen.tune.db import ResultsDB, read_selection

from .conftest import GOOD_KERNELS, ROOT

HANG = "import time\ntime.sleep(1000)\n"
RAISE = "raise RuntimeError('broken on purpose')\n"


def _kernels(root: Path, top_level: str) -> Path:
    """The scale fixture, and a copy named `bad` whose reference.py runs ``top_level`` first."""
    shutil.copytree(GOOD_KERNELS / "scale", root / "scale")
    bad = root / "bad"
    shutil.copytree(GOOD_KERNELS / "scale", bad)
    (bad / "scale.wgsl.j2").rename(bad / "bad.wgsl.j2")
    toml = bad / "kernel.toml"
    toml.write_text(toml.read_text().replace('name = "scale"', 'name = "bad"'))
    ref = bad / "reference.py"
    ref.write_text(top_level + ref.read_text())
    return root


def _wgslgen(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """`python -m wgslgen ARGS` in a child process (a hang there cannot hang pytest), with
    the seconds it took. Wide columns: rich does not wrap the paths in the text output."""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "wgslgen", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=180,
        env={**os.environ, "COLUMNS": "400"},
    )  # fmt: skip
    return proc, time.monotonic() - started


def test_a_hanging_import_waits_the_users_timeout_once_and_names_the_file(tmp_path: Path) -> None:
    kernels = _kernels(tmp_path / "k", HANG)
    proc, seconds = _wgslgen("test", "--templates", str(kernels), "--kernel", "bad",
                             "--adapter", "cpu", "--timeout", "3s", "--json")  # fmt: skip
    # 5 variants at 2 test shapes: one import bounded by --timeout, not 60 s nor once per case.
    assert seconds < 30, seconds
    assert proc.returncode == 1, proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert len(results) == 10
    ref = kernels / "bad" / "reference.py"
    for r in results:
        assert r["status"] == "error" and r["stage"] == "reference", r
        assert f"{ref}: importing the reference timed out" in r["message"], r["message"]
        assert "deadline of 3 s" in r["message"]


@pytest.mark.parametrize(
    ("top_level", "reason", "as_json"),
    [
        (HANG, "importing the reference timed out", True),
        (RAISE, "importing the reference failed: RuntimeError: broken on purpose", False),
    ],
    ids=["hang", "raise"],
)
def test_tune_reports_a_failing_reference_and_tunes_the_other_kernel(
    tmp_path: Path, top_level: str, reason: str, as_json: bool
) -> None:
    kernels = _kernels(tmp_path / "k", top_level)
    db, selection = tmp_path / "results.jsonl", tmp_path / "selection.json"
    proc, seconds = _wgslgen(
        "tune", "--templates", str(kernels), "--kernel", "bad", "--kernel", "scale",
        "--shape", "n=1000", "--adapter", "cpu", "--l2-bytes", "1M", "--rounds", "5",
        "--timeout", "3s", "--db", str(db), "--selection", str(selection),
        *(["--json"] if as_json else []),
    )  # fmt: skip
    assert seconds < 60, seconds
    assert proc.returncode == 1, proc.stderr + proc.stdout
    ref = kernels / "bad" / "reference.py"
    if as_json:
        bad, good = json.loads(proc.stdout)["shapes"]  # the failing kernel came first
        assert bad["kernel"] == "bad" and bad["winner"] is None and bad["leaderboard"] == []
        assert bad["error"].startswith(str(ref)) and reason in bad["error"], bad["error"]
        assert good["kernel"] == "scale" and good["error"] is None and good["winner"]
    else:
        assert f"not tuned bad @ n=1000: {ref}" in proc.stdout, proc.stdout
        assert reason in proc.stdout
        assert "selection: 1 entry written" in proc.stdout
    # The other kernel was tuned as usual: its records and its selection entry are kept.
    records = ResultsDB(db).load().records
    assert len(records) == 5 and {r.kernel for r in records} == {"scale"}
    (entry,) = read_selection(selection)
    assert entry.kernel == "scale"


def test_tune_of_only_a_failing_reference_prints_its_error_not_an_empty_table(
    tmp_path: Path,
) -> None:
    kernels = _kernels(tmp_path / "k", RAISE)
    proc, _ = _wgslgen(
        "tune", "--templates", str(kernels), "--kernel", "bad", "--shape", "n=1000",
        "--adapter", "cpu", "--l2-bytes", "1M", "--timeout", "3s",
        "--db", str(tmp_path / "r.jsonl"), "--selection", str(tmp_path / "s.json"),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr + proc.stdout
    assert "variant" not in proc.stdout and "median" not in proc.stdout, proc.stdout
    # "no variant passed" would be false: none ran; the error says why, once per place.
    assert "nothing selected" not in proc.stdout, proc.stdout
    assert proc.stdout.count("broken on purpose") == 2, proc.stdout
