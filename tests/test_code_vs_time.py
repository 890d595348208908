"""benchmarks/code_vs_time.py: the driver's statistics joined with fair-run timings, the pairs
that differ in one name part, and one-line errors for files that are not what they should be."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "code_vs_time.py"
KERNEL = "attention_bwd_dq_split"
SHAPE = [256, 8, 4, 4096]


def stats_file(tmp_path: Path) -> Path:
    """Two entry points per variant: (registers, bytes) of partials and finalize."""
    entries = {
        "wg256_ch64_g2_u2_e0_sf16": [(63, 44288), (24, 9088)],
        "wg256_ch64_g2_u2_e4_sf16": [(78, 60672), (44, 47488)],
        "wg256_ch64_g2_u4_e4_sf16": [(102, 68352), (44, 47488)],
    }
    results = [
        {"file": f"{KERNEL}__{variant}", "entry": entry, "error": None,
         "executables": [{"statistics": {"Register Count": regs, "Binary Size": size}}]}
        for variant, pairs in entries.items()
        for entry, (regs, size) in zip(("partials", "finalize"), pairs, strict=True)
    ]  # fmt: skip
    results.append({"file": f"{KERNEL}__broken", "entry": "partials", "error": "no pipeline"})
    path = tmp_path / "stats.json"
    path.write_text(json.dumps({"device": "x", "results": results}))
    return path


def ours_file(tmp_path: Path, name: str, timed: dict[str, tuple[float, float]]) -> Path:
    """A fair_attention.py ``ours`` file with the given (warm, cold) µs per variant."""
    rows = [
        {"kernel": KERNEL, "variant": f"{KERNEL}__{v}", "shape": SHAPE, "kv": "f16",
         "warm": {"median_us": w}, "cold": {"median_us": c}}
        for v, (w, c) in timed.items()
    ]  # fmt: skip
    rows.append({"kernel": KERNEL, "variant": f"{KERNEL}__wg256_x", "shape": SHAPE, "kv": "f16"})
    rows.append({"kernel": "attention_split", "variant": "attention_split__y", "shape": SHAPE})
    path = tmp_path / name
    path.write_text(json.dumps({"adapter": "x", "results": rows}))
    return path


def run(*args: str | Path) -> subprocess.CompletedProcess:
    """The script in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=60
    )


def test_rows_and_one_part_pairs(tmp_path: Path) -> None:
    stats = stats_file(tmp_path)
    first = ours_file(
        tmp_path,
        "a.json",
        {"wg256_ch64_g2_u2_e0_sf16": (16.0, 19.0), "wg256_ch64_g2_u2_e4_sf16": (13.0, 15.0)},
    )
    second = ours_file(
        tmp_path,
        "b.json",
        {"wg256_ch64_g2_u2_e4_sf16": (12.0, 14.0), "wg256_ch64_g2_u4_e4_sf16": (13.5, 18.0)},
    )
    out = tmp_path / "out.json"
    done = run("--stats", stats, first, second, "--json", out)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    by_name = {r["variant"]: r for r in data["rows"]}
    assert set(by_name) == {
        "wg256_ch64_g2_u2_e0_sf16", "wg256_ch64_g2_u2_e4_sf16", "wg256_ch64_g2_u4_e4_sf16"
    }  # fmt: skip
    e4 = by_name["wg256_ch64_g2_u2_e4_sf16"]
    # registers of the larger entry point, code of both, medians over the two files
    assert e4["registers"] == 78 and e4["code_kb"] == (60672 + 47488) / 1024
    assert (e4["warm_us"], e4["cold_us"], e4["gap_us"]) == (12.5, 14.5, 2.0)
    changes = {p["change"]: p for p in data["pairs"]}
    # e0 and u4 differ from u2_e4 in one part each; e0 and u4 differ in two: no pair
    assert set(changes) == {"e0→e4", "u2→u4"}
    assert changes["e0→e4"]["from"] == "wg256_ch64_g2_u2_e0_sf16"
    assert changes["e0→e4"]["code_kb"] == (60672 + 47488 - 44288 - 9088) / 1024
    assert (changes["e0→e4"]["warm_us"], changes["e0→e4"]["cold_us"]) == (-3.5, -4.5)
    assert changes["u2→u4"]["registers"] == 24
    assert "| e0→e4 | wg256_ch64_g2_u2_e0_sf16 | +53.5 | +15 | -3.5 | -4.5 | -1.0 |" in done.stdout


def test_bad_files_are_one_line_errors(tmp_path: Path) -> None:
    stats = stats_file(tmp_path)
    ours = ours_file(tmp_path, "a.json", {"wg256_ch64_g2_u2_e4_sf16": (13.0, 15.0)})
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"results": [\n  {"kernel": ')
    done = run("--stats", stats, corrupt)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{corrupt}:2:" in done.stderr and "invalid JSON" in done.stderr

    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"results": [{"file": "x"}]}))
    done = run("--stats", ours, wrong)
    assert done.returncode == 2 and "not a pipeline_stats.py --json file" in done.stderr

    done = run("--stats", stats, ours, "--kernel", "attention_split")
    assert done.returncode == 2 and "no variant of attention_split is timed" in done.stderr

    done = run("--stats", tmp_path / "missing.json", ours)
    assert done.returncode == 2 and "missing.json: cannot read" in done.stderr
