"""benchmarks/largest_shapes.py: every variant of a fair run's ours.json checked on a real device
(lavapipe here, at shapes it can run), the history cut to a variant's max_history, and a loud
exit 1 for a variant that cannot take the shape, an unknown name or a corrupt file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "largest_shapes.py"
SPLIT = "attention_bwd_dq_split__wg256_ch64_g2_u2_e4_sf16"
BASELINE = "attention_bwd_dq__wg64_mh4096_sf32_wf32"  # shared memory for 4096 keys


def ours_file(tmp_path: Path, names: list[str], shape: tuple[int, ...] = (16, 2, 1, 8)) -> Path:
    """A fair_attention.py ``ours`` file that timed ``names`` at ``shape``."""
    rows = [{"kernel": n.split("__")[0], "variant": n, "shape": list(shape)} for n in names]
    path = tmp_path / "ours.json"
    path.write_text(json.dumps({"adapter": "x", "results": rows + rows[:1]}))
    return path


def largest(*args: str | Path) -> subprocess.CompletedProcess:
    """Run the script on the CPU adapter."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args), "--adapter", "cpu"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


def test_every_timed_variant_is_checked_once_and_history_is_cut_to_max_history(
    tmp_path: Path,
) -> None:
    ours = ours_file(tmp_path, [SPLIT, BASELINE])
    out = tmp_path / "largest.json"
    proc = largest(ours, "--shape", "16,2,1,4100", "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["variant"]: r for r in json.loads(out.read_text())["results"]}
    assert set(rows) == {SPLIT, BASELINE}  # the repeated row is checked once
    assert all(r["status"] == "pass" for r in rows.values())
    assert rows[SPLIT]["shape"]["history_len"] == 4100
    assert rows[BASELINE]["shape"]["history_len"] == 4096
    assert "2 of 2 variants pass" in proc.stdout


def test_a_variant_n_a_at_the_shape_is_checked_at_its_timed_heads_with_the_same_history(
    tmp_path: Path,
) -> None:
    # group 2 needs an even number of query heads per KV head: n/a at 3 heads, so it is
    # checked at the heads it was timed at (the larger of two), history still 300
    ours = ours_file(tmp_path, [SPLIT])
    rows = json.loads(ours.read_text())["results"]
    rows.append({**rows[0], "shape": [8, 2, 1, 8]})
    ours.write_text(json.dumps({"adapter": "x", "results": rows}))
    out = tmp_path / "largest.json"
    proc = largest(ours, "--shape", "16,3,1,300", "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (row,) = json.loads(out.read_text())["results"]
    assert row["status"] == "pass"
    assert (row["shape"]["head_dim"], row["shape"]["n_heads"], row["shape"]["n_kv_heads"]) == (
        16, 2, 1,
    )  # fmt: skip
    assert row["shape"]["history_len"] == 300
    assert "the --shape heads are n/a" in row["message"]
    assert "heads_per_kv % group == 0" in proc.stdout
    assert "1 of 1 variants pass" in proc.stdout


def test_a_variant_that_can_take_neither_shape_fails_the_run(tmp_path: Path) -> None:
    # timed (in this made-up file) at 3 heads per KV head too: not "checked" anywhere
    proc = largest(ours_file(tmp_path, [SPLIT], (16, 3, 1, 8)), "--shape", "16,3,1,300")
    assert proc.returncode == 1
    assert "n/a" in proc.stdout and "heads_per_kv % group == 0" in proc.stdout
    assert "0 of 1 variants pass" in proc.stdout


def test_unknown_variant_and_corrupt_file_are_named(tmp_path: Path) -> None:
    proc = largest(ours_file(tmp_path, [SPLIT + "_gone"]), "--shape", "16,2,1,8")
    assert proc.returncode == 1
    assert f"not in templates/: {SPLIT}_gone" in proc.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"results": [')
    proc = largest(bad)
    assert proc.returncode == 1
    assert f"{bad}: not a fair_attention.py ours file" in proc.stderr
    assert "Traceback" not in proc.stderr
    bad.write_text('{"results": [{"variant": "x"}]}')  # a row without its kernel
    proc = largest(bad)
    assert proc.returncode == 1
    assert f"{bad}: not a fair_attention.py ours file (KeyError('kernel'))" in proc.stderr
    proc = largest(ours_file(tmp_path, [SPLIT]), "--shape", "16,2,8")
    assert proc.returncode == 2
    assert "--shape '16,2,8': four positive integers d,H,KV,N" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_no_such_adapter_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(ours_file(tmp_path, [SPLIT])), "--adapter", "no-such"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: no adapter matches 'no-such'")
    assert "Traceback" not in proc.stderr
