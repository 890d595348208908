"""benchmarks/stream_floor.py and its kernels: the streamed bytes are summed right on a real
device (lavapipe), the write floor writes every vector right, a variant that skips a vector is
caught, every byte count a family needs is measured with each variant of its floor kernel
(bwd_dkv's: the write floor, at the bytes of d_k and d_v), and the table sets the floor beside
ours and the target."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "stream_floor.py"
sys.path.insert(0, str(ROOT / "benchmarks"))

from stream_floor import ROW_BYTES, floored_bytes, floors, table, workgroups  # noqa: E402

# (floor kernel, its per-thread axis, a broken copy of one line of its baseline's text): the
# stream floor reading one vector twice instead of the next (the sum is wrong); the write floor
# leaving one row of stores out (those vectors keep the buffer's zeros, not the values).
FLOOR_KERNEL_CASES = [
    ("stream_floor", "loads", "src[base + 256u]", "src[base + 0u]"),
    ("write_floor", "stores", "    dst[base + 256u] = x + vec4<u32>(base + 256u);\n", ""),
]


@pytest.mark.parametrize(("kernel", "axis", "line", "broken"), FLOOR_KERNEL_CASES)
def test_each_floor_kernel_moves_every_vector_right_and_a_broken_one_fails(
    kernel: str, axis: str, line: str, broken: str
) -> None:
    from wgslgen.render.renderer import render
    from wgslgen.run.harness import Harness
    from wgslgen.spec.loader import discover, select

    spec = select(discover([ROOT / "benchmarks" / "kernels"]), [kernel])[0]
    assert sorted(v.params[axis] for v in spec.variants) == [4, 8, 16, 32]
    with Harness("cpu") as h:
        for v in spec.variants:
            assert h.check(render(v, "naga"), {"n_wg": 37}).status == "pass", v.name
        rendered = render(spec.baseline, "naga")
        source = rendered.source.replace(line, broken)
        assert source != rendered.source
        skipped = dataclasses.replace(
            rendered, source=source, sha256=hashlib.sha256(source.encode()).hexdigest()
        )
        assert h.check(skipped, {"n_wg": 37}).status == "fail"


def test_bwd_dkv_is_floored_by_writing_its_outputs_the_others_by_streaming_all_bytes() -> None:
    from attention_shapes import bytes_moved

    s = (128, 32, 8, 4096)
    # d_k and d_v of 4096 positions × 8 KV heads × 128 columns: 33.5 MB in f32
    assert floored_bytes("bwd_dkv", s, "f32") == 2 * 4096 * 8 * 128 * 4 == 33_554_432
    assert floored_bytes("bwd_dkv", s, "f16") == 33_554_432 // 2
    assert floored_bytes("bwd_dq", s, "f32") == bytes_moved("bwd_dq", s, "f32")
    # bwd_dq's bytes_moved is bwd_dkv's: their floors are told apart by kernel, not bytes
    assert bytes_moved("bwd_dq", s, "f32") == bytes_moved("bwd_dkv", s, "f32")


def test_workgroups_cover_the_bytes_with_whole_rows() -> None:
    assert workgroups(1, 16) == 1
    assert workgroups(ROW_BYTES * 16, 16) == 1
    assert workgroups(ROW_BYTES * 16 + 1, 16) == 2
    # (256, 8, 4, 4096) f16 K/V: 16.8 MB, 256 workgroups of 16 loads (the partials pass's count)
    assert workgroups(4096 * 4 * 256 * 2 * 2, 16) == 256


def test_measure_times_every_variant_at_every_byte_count_of_the_family(tmp_path: Path) -> None:
    out = tmp_path / "stream.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "measure", "--adapter", "cpu", "--families", "forward",
         "--shape", "16,2,1,32", "--json", str(out)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert not data["failures"] and "partial" not in data
    # forward at (16, 2, 1, 32): f32 and f16 K/V move different byte counts, 4 variants each
    assert len({r["bytes"] for r in data["results"]}) == 2
    assert len(data["results"]) == 8
    for r in data["results"]:
        assert r["streamed"] >= r["bytes"] > r["streamed"] - ROW_BYTES * r["loads"]
        assert r["warm"]["median_us"] > 0 and r["cold"]["median_us"] > 0
        assert r["uses"][0]["family"] == "forward"
        assert r["kernel"] == "stream_floor"


def test_measure_floors_bwd_dkv_with_the_write_floor_beside_bwd_dq_s_stream(tmp_path: Path) -> None:
    out = tmp_path / "stream.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "measure", "--adapter", "cpu", "--families", "bwd_dq",
         "bwd_dkv", "--shape", "16,2,1,32", "--json", str(out)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert not data["failures"]
    # the same bytes_moved for both families, yet two kernels: 2 K/V dtypes × 4 variants each
    by_kernel = {
        k: [r for r in data["results"] if r["kernel"] == k] for k in ("stream_floor", "write_floor")
    }
    assert len(by_kernel["stream_floor"]) == len(by_kernel["write_floor"]) == 8
    for r in by_kernel["write_floor"]:
        assert r["variant"].startswith("write_floor__w")
        assert r["bytes"] == floored_bytes("bwd_dkv", (16, 2, 1, 32), r["uses"][0]["kv"])
        assert {u["family"] for u in r["uses"]} == {"bwd_dkv"}
    assert {u["family"] for r in by_kernel["stream_floor"] for u in r["uses"]} == {"bwd_dq"}


def _stream(rows: list[tuple[int, str, float, float]]) -> dict:
    return {
        "adapter": "GPU",
        "results": [
            {"bytes": b, "variant": f"stream_floor__{v}", "warm": {"median_us": w},
             "cold": {"median_us": c}}
            for b, v, w, c in rows
        ],
    }  # fmt: skip


def test_the_floor_is_the_fastest_variant_warm_and_cold_apart() -> None:
    f = floors(_stream([(100, "l4", 5.0, 9.0), (100, "l16", 6.0, 7.0), (200, "l8", 8.0, 8.5)]))
    assert f[100] == {"warm": (5.0, "l4"), "cold": (7.0, "l16")}
    assert f[200]["cold"] == (8.5, "l8")


def test_the_table_sets_ours_and_the_familys_share_of_torch_against_the_floor() -> None:
    from attention_shapes import bytes_moved

    s = (256, 8, 4, 4096)
    n = bytes_moved("bwd_dq", s, "f16")
    stream = _stream([(n, "l16", 6.0, 8.0), (n, "l4", 6.5, 7.5)])
    ours = {
        "results": [
            {"family": "bwd_dq", "shape": list(s), "kv": "f16", "baseline": False,
             "variant": "k__a", "warm": {"median_us": 12.0}, "cold": {"median_us": 15.0}},
            {"family": "bwd_dq", "shape": list(s), "kv": "f16", "baseline": True,
             "variant": "k__base", "warm": {"median_us": 1.0}, "cold": {"median_us": 1.0}},
        ]
    }  # fmt: skip
    torch = {
        "results": [
            {"family": "bwd_dq", "shape": list(s), "kv": "f16",
             "eager": {"warm": {"median_us": 30.0}, "cold": {"median_us": 40.0}},
             "compile": {"warm": {"median_us": 10.0}, "cold": {"median_us": 14.0}}}
        ]
    }  # fmt: skip
    text = table(stream, ours, torch)
    row = next(line for line in text.splitlines() if line.startswith("| (256, 8, 4, 4096) | f16"))
    # floor 6.0 warm (l16), 7.5 cold (l4); ours 12 / 15 (the baseline is not "best ours");
    # target 0.5 × 10 = 5.0 warm, 0.5 × 14 = 7.0 cold: below the floor
    assert "6.0 (l16) / 7.5 (l4)" in row
    assert "| 12.0 / 15.0 | 2.00× / 2.00× |" in row
    assert "| 5.0 / 7.0 | 0.83× / 0.93× |" in row
    assert "(256, 8, 4, 4096) | f32" not in text  # nothing measured for f32
    assert "### bwd_dq (target 0.5 × PyTorch)" in text
    # The forward's target is 0.7 × PyTorch: 7.0 warm, 9.8 cold at the same figures.
    as_forward = [{**r, "family": "forward"} for r in ours["results"]]
    f_torch = [{**r, "family": "forward"} for r in torch["results"]]
    n_fw = bytes_moved("forward", s, "f16")
    f_stream = {**stream, "results": [{**r, "bytes": n_fw} for r in stream["results"]]}
    text = table(f_stream, {"results": as_forward}, {"results": f_torch})
    assert "### forward (target 0.7 × PyTorch)" in text
    row = next(line for line in text.splitlines() if line.startswith("| (256, 8, 4, 4096) | f16"))
    assert "| 7.0 / 9.8 |" in row, row
    # bwd_dkv's floor is the write floor's row at d_k's and d_v's bytes; the stream floor's row
    # at its bytes_moved (bwd_dq's too) is not taken for it.
    as_dkv = [{**r, "family": "bwd_dkv"} for r in ours["results"]]
    d_torch = [{**r, "family": "bwd_dkv"} for r in torch["results"]]
    written = floored_bytes("bwd_dkv", s, "f16")
    rows = [
        {"kernel": "stream_floor", "bytes": n, "variant": "stream_floor__l4",
         "warm": {"median_us": 1.0}, "cold": {"median_us": 1.0}},
        {"kernel": "write_floor", "bytes": written, "variant": "write_floor__w8",
         "warm": {"median_us": 4.0}, "cold": {"median_us": 5.0}},
    ]  # fmt: skip
    text = table({"adapter": "GPU", "results": rows}, {"results": as_dkv}, {"results": d_torch})
    row = next(line for line in text.splitlines() if line.startswith("| (256, 8, 4, 4096) | f16"))
    assert "4.0 (w8) / 5.0 (w8)" in row and "| 3.00× / 3.00× |" in row, row


def _script(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_bad_files_and_shapes_are_named_in_one_line(tmp_path: Path) -> None:
    from attention_shapes import bytes_moved

    good = tmp_path / "stream.json"
    n = bytes_moved("forward", (256, 8, 4, 4096), "f16")
    good.write_text(json.dumps(_stream([(n, "l4", 5.0, 9.0)])))
    broken = tmp_path / "ours.json"
    broken.write_text('{"results": [')
    proc = _script("table", str(good), str(broken))
    assert proc.returncode == 1 and f"{broken}: not readable as JSON" in proc.stderr
    assert "Traceback" not in proc.stderr
    other = tmp_path / "other.json"
    other.write_text('{"rows": []}')
    proc = _script("table", str(good), str(other))
    assert proc.returncode == 1 and f"{other}: no 'results' list" in proc.stderr
    # a fair_attention row without its "baseline" key
    times = {"warm": {"median_us": 9.0}, "cold": {"median_us": 9.0}}
    row = {"family": "forward", "shape": [256, 8, 4, 4096], "kv": "f16", **times}
    other.write_text(json.dumps({"results": [row]}))
    proc = _script("table", str(good), str(other))
    assert proc.returncode == 1 and "lacks 'baseline'" in proc.stderr, proc.stderr
    proc = _script("table", str(good), str(tmp_path / "missing.json"))
    assert proc.returncode == 1 and "missing.json: not readable as JSON" in proc.stderr
    proc = _script("measure", "--shape", "256,8")
    assert proc.returncode == 2 and "'256,8': want d,H,KV,N" in proc.stderr
