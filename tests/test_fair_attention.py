"""benchmarks/fair_attention.py without CUDA: our side checks then times each variant on a real
device (lavapipe), the table sets the best of ours beside PyTorch's graphs and the floor, and
bad input is one line naming the file, key or value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "fair_attention.py"
sys.path.insert(0, str(ROOT / "benchmarks"))

from attention_shapes import bytes_moved  # noqa: E402

SHAPE = (16, 4, 2, 64)
VARIANT = "attention_bwd_dq_split__wg256_ch32_g1_u2_e0_sf16"


def _script(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=600
    )


def _torch_file(path: Path) -> Path:
    """A torch.json as `fair_attention.py torch` writes it: eager 100/200 µs, compile 50/80."""
    rows = [
        {"family": "bwd_dq", "shape": list(SHAPE), "kv": kv,
         "eager": {"warm": {"median_us": 100.0}, "cold": {"median_us": 200.0}},
         "compile": {"warm": {"median_us": 50.0}, "cold": {"median_us": 80.0}}}
        for kv in ("f32", "f16")
    ]  # fmt: skip
    path.write_text(json.dumps({"device": "H", "torch": "2.x", "results": rows}))
    return path


def test_ours_times_checked_variants_and_the_table_compares_them(tmp_path: Path) -> None:
    ours = tmp_path / "ours.json"
    shape = ",".join(map(str, SHAPE))
    proc = _script("ours", "--adapter", "cpu", "--families", "bwd_dq", "--shape", shape,
                   "--only", f"{VARIANT.split('__')[1]}$", "--json", str(ours))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(ours.read_text())
    assert data["dispatch_us"] > 0 and not data["failures"] and "partial" not in data
    by_name = {r["variant"]: r for r in data["results"]}
    # the two kernels' baselines (f32) and the one variant the regex names
    assert len(by_name) == 3 and by_name[VARIANT]["kv"] == "f16"
    assert {r["passes"] for r in data["results"]} == {1, 2}
    for r in data["results"]:
        assert r["check"] == "pass" and r["shape"] == list(SHAPE)
        assert r["warm"]["median_us"] > 0 and r["cold"]["median_us"] > 0

    bandwidth = 1e9
    proc = _script("table", str(_torch_file(tmp_path / "torch.json")), str(ours),
                   "--bandwidth", str(bandwidth))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    f16_row = next(line for line in proc.stdout.splitlines() if "| f16 |" in line)
    mine = by_name[VARIANT]
    floor = 2 * data["dispatch_us"] + bytes_moved("bwd_dq", SHAPE, "f16") / bandwidth * 1e6
    warm, cold = mine["warm"]["median_us"], mine["cold"]["median_us"]
    assert floor < 1000  # the table's one-decimal format
    assert f"| {floor:.1f} ({mine['passes']} passes) |" in f16_row, f16_row
    # ours ÷ the best PyTorch graph (compile: 50 warm, 80 cold), and cold ÷ the floor
    assert f"{warm / 50:.2f}× / {cold / 80:.2f}×" in f16_row, f16_row
    assert f"| {cold / floor:.2f}× |" in f16_row, f16_row


def test_bad_input_is_one_line_naming_the_file_key_or_value(tmp_path: Path) -> None:
    torch_json = _torch_file(tmp_path / "torch.json")
    broken = tmp_path / "ours.json"
    broken.write_text('{"results": [')
    proc = _script("table", str(torch_json), str(broken))
    assert proc.returncode == 1 and f"{broken}: not readable as JSON" in proc.stderr
    other = tmp_path / "other.json"
    row = {"family": "bwd_dq", "shape": list(SHAPE), "kv": "f16"}  # no "baseline", no times
    other.write_text(json.dumps({"adapter": "GPU", "dispatch_us": 2.0, "results": [row]}))
    proc = _script("table", str(torch_json), str(other))
    assert proc.returncode == 1 and "lacks 'baseline'" in proc.stderr, proc.stderr
    proc = _script("ours", "--adapter", "no-such-adapter", "--families", "bwd_dq")
    assert proc.returncode == 2 and "no adapter matches 'no-such-adapter'" in proc.stderr
    proc = _script("ours", "--shape", "16,4")
    assert proc.returncode == 2 and "'16,4': want d,H,KV,N" in proc.stderr
    for proc in (_script("table", str(torch_json), str(broken)), _script("table")):
        assert "Traceback" not in proc.stderr
