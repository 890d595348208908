"""benchmarks/worker_modes.py: the same tune in two --fresh-worker modes, side by side."""

from __future__ import annotations

import json
import subprocess
import sys

from .conftest import GOOD_KERNELS, ROOT

SCRIPT = ROOT / "benchmarks" / "worker_modes.py"
H100 = ROOT / "benchmarks" / "results" / "h100_s20" / "fresh"


def _script(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT,
        timeout=timeout,
    )  # fmt: skip


def test_compare_reads_session_20s_h100_tunes(tmp_path) -> None:
    out = tmp_path / "c.json"
    pair = (str(H100 / "always.json"), str(H100 / "never.json"))
    done = _script("compare", *pair, "--json", str(out))
    assert done.returncode == 0, done.stderr
    c = json.loads(out.read_text())
    assert c["same_winners"] and c["drift_notes"] == []
    assert len(c["variants"]) == 22 and c["within"] == 20
    slow = max(c["variants"], key=lambda r: abs(r["ratio"] - 1))
    assert slow["variant"].endswith("ch32_g1_u4_e3_sf16_hd256") and round(slow["ratio"], 3) == 0.899
    assert "wall: always 45.9 s, never 18.9 s (0.41x)" in done.stdout


def test_run_tunes_once_per_mode_with_nothing_shared(tmp_path) -> None:
    tune = ["--templates", str(GOOD_KERNELS), "--kernel", "scale", "--shape", "n=1000",
            "--l2-bytes", "1M", "--rounds", "3", "--adapter", "cpu"]  # fmt: skip
    done = _script("run", str(tmp_path), "--modes", "always,never", "--", *tune, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    for mode in ("always", "never"):
        report = json.loads((tmp_path / f"{mode}.json").read_text())
        assert report["totals"]["reused"] == 0 and report["totals"]["measured"] == 5
    assert "medians within 2.5%:" in done.stdout and " of 5" in done.stdout
    # A second run into the same folder would reuse the first's records: refused, nothing touched.
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    again = _script("run", str(tmp_path), "--modes", "always,never", "--", *tune)
    assert again.returncode == 2 and "already holds always.json" in again.stderr
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before


def test_compare_names_a_file_that_is_not_a_tune_report(tmp_path) -> None:
    (tmp_path / "x.json").write_text('{"results": []}')
    done = _script("compare", str(H100 / "always.json"), str(tmp_path / "x.json"))
    assert done.returncode == 2 and "is not a `wgslgen tune --json` report" in done.stderr
    assert "Traceback" not in done.stderr
