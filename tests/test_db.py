"""The results database and the selection file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wgslgen.errors import WgslgenError
from wgslgen.tune.bench import Measurement
from wgslgen.tune.db import (
    Choice,
    Record,
    ResultKey,
    ResultsDB,
    SelectionEntry,
    canonical_shape,
    read_selection,
    write_selection,
)

ROOT = Path(__file__).resolve().parents[1]


def meas(median: float = 1000.0, n: int = 5) -> Measurement:
    return Measurement.from_samples(
        [median + i for i in range(n)],
        dispatches_per_sample=1,
        method="timestamp",
        warm=False,
        timer_resolution_ns=1.0,
        l2_flush_bytes=2 << 20,
    )


def rec(
    sha: str = "a" * 64,
    *,
    variant: str = "v1",
    at: str = "2025-01-01T00:00:00.000000Z",
    status: str = "ok",
    shape: str = "n=1",
    median: float = 1000.0,
    n: int = 5,
) -> Record:
    """A record with plausible fields; only what a test varies is a parameter."""
    return Record(
        key=ResultKey(sha, "dev0123456789abc", shape),
        kernel="k",
        variant=variant,
        params={"wg": 64},
        device_info={"vendor": "llvmpipe"},
        status=status,
        measurement=meas(median, n) if status == "ok" else None,
        error=None if status == "ok" else "boom",
        versions={"wgslgen": "0.1.0", "wgpu": "0.32.0", "naga": "30.0.1"},
        measured_at=at,
    )


def test_canonical_shape():
    assert canonical_shape({"n": 4, "d": 256}) == "d=256,n=4"
    assert canonical_shape("n=4,d=256") == "d=256,n=4"
    with pytest.raises(WgslgenError, match="'n4' is not key=value"):
        canonical_shape("n4")


def test_append_load_round_trip(tmp_path):
    db = ResultsDB(tmp_path / "tuning" / "results.jsonl")
    assert db.load().records == [] and db.get("a" * 64, "dev0123456789abc", "n=1") is None
    r1, r2 = rec(), rec("b" * 64, status="compile-error")
    db.append(r1)
    db.append(r2)
    report = ResultsDB(db.path).load()
    assert report.records == [r1, r2] and report.problems == []
    assert db.get("b" * 64, "dev0123456789abc", {"n": 1}) == r2
    # Latest wins, by measurement time, whatever the line order.
    newer = rec(at="2025-02-01T00:00:00.000000Z", median=900.0)
    older = rec(at="2024-12-01T00:00:00.000000Z", median=1100.0)
    db.append(newer)
    db.append(older)
    assert db.get("a" * 64, "dev0123456789abc", "n=1") == newer
    assert ResultsDB(db.path).get("a" * 64, "dev0123456789abc", "n=1") == newer
    # A changed template is a different sha: no stale result is ever returned for it.
    assert db.get("c" * 64, "dev0123456789abc", "n=1") is None
    # Defaults fill versions and the time.
    fresh = Record(ResultKey("d" * 64, "x", "n=1"), "k", "v", {}, {}, "skipped")
    assert fresh.measured_at.endswith("Z") and set(fresh.versions) == {"wgslgen", "wgpu", "naga"}


def test_corrupt_middle_and_torn_last_line(tmp_path):
    db = ResultsDB(tmp_path / "results.jsonl")
    good = [rec(variant=f"v{i}", at=f"2025-01-0{i + 1}T00:00:00.000000Z") for i in range(3)]
    db.append(good[0])
    with open(db.path, "a") as f:
        f.write("{this is not json\n")
        f.write(json.dumps({"key": {}}) + "\n")  # JSON, but not a record
    db.append(good[1])
    line = json.dumps(good[2].to_dict())
    with open(db.path, "a") as f:
        f.write(line[: len(line) // 2])  # killed mid-write
    report = db.load()
    assert report.records == good[:2]
    assert [n for n, _ in report.problems] == [2, 3, 5]
    assert "torn" in report.problems[-1][1]
    assert "missing field" in report.problems[1][1]
    # Appending after a torn line ends it first: the new record survives intact.
    db.append(good[2])
    report = db.load()
    assert report.records == good and [n for n, _ in report.problems] == [2, 3, 5]


def test_unreadable_file_raises(tmp_path):
    (tmp_path / "results.jsonl").mkdir()
    with pytest.raises(WgslgenError, match="cannot read results database"):
        ResultsDB(tmp_path / "results.jsonl").load()


WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from test_db import rec
    from wgslgen.tune.db import ResultsDB
    db = ResultsDB({path!r})
    for i in range(100000):
        # big lines (1000 samples each) so the kill is likely to land inside a write
        db.append(rec(variant=f"v{{i}}", at=f"2025-01-01T00:00:00.{{i:06d}}Z", n=1000))
        print(i, flush=True)
    """
)


def test_sigkill_mid_append_loses_nothing_completed(tmp_path):
    path = tmp_path / "results.jsonl"
    code = WRITER.format(tests=str(ROOT / "tests"), path=str(path))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    done = -1
    assert proc.stdout is not None
    for line in proc.stdout:
        done = int(line)
        if done >= 40:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    report = ResultsDB(path).load()
    variants = [r.variant for r in report.records]
    # every append that returned is there, in order, each once
    assert variants[: done + 1] == [f"v{i}" for i in range(done + 1)]
    assert len(set(variants)) == len(variants)
    # at most a torn last line
    assert len(report.problems) <= 1
    if report.problems:
        assert report.problems[0][0] == path.read_bytes().count(b"\n") + 1


def test_merge_without_duplicates(tmp_path):
    a, b, c = (ResultsDB(tmp_path / m / "results.jsonl") for m in ("a", "b", "c"))
    shared = rec(variant="shared")
    a.append(shared)
    a.append(rec(variant="only-a"))
    b.append(shared)
    b.append(rec(variant="only-b"))
    b.append(rec(variant="only-b"))  # duplicated within one file too
    c.append(rec(variant="only-c", at="2025-03-01T00:00:00.000000Z"))
    with open(c.path, "a") as f:
        f.write('{"torn')
    stats = a.merge([b.path, c.path])
    assert (stats.added, stats.duplicates) == (2, 2)
    assert stats.problems == [(str(c.path), 2, "torn last line (interrupted write)")]
    variants = [r.variant for r in a.load().records]
    assert variants == ["shared", "only-a", "only-b", "only-c"]
    assert a.load().problems == []
    # Merging again changes nothing.
    stats = a.merge([b.path, c.path])
    assert stats.added == 0 and len(a.load().records) == 4
    # No temporary files are left next to the database.
    assert sorted(p.name for p in a.path.parent.iterdir()) == ["results.jsonl"]
    with pytest.raises(WgslgenError, match="no such results file"):
        a.merge([tmp_path / "missing.jsonl"])


def test_prune(tmp_path):
    db = ResultsDB(tmp_path / "results.jsonl")
    for sha in ("a", "b", "a", "c"):
        db.append(rec(sha * 64, variant=sha))
    assert db.get("b" * 64, "dev0123456789abc", "n=1") is not None
    assert db.prune(lambda r: r.key.source_sha256 not in {"a" * 64, "c" * 64}) == (1, 0)
    assert [r.variant for r in db.load().records] == ["a", "a", "c"]
    assert db.get("b" * 64, "dev0123456789abc", "n=1") is None
    assert db.prune(lambda r: True) == (3, 0) and db.path.read_text() == ""


def entry(kernel: str, shape: str) -> SelectionEntry:
    return SelectionEntry(
        kernel=kernel,
        device="dev0123456789abc",
        device_label="llvmpipe [Vulkan, CPU]",
        shape=shape,
        winner=Choice("k__wg128", 500.0, "a" * 64),
        default=Choice("k__wg64", 600.0, "b" * 64),
        baseline=Choice("seed", 1000.0),
        speedup=2.0,
        reason="fastest by more than the noise (20 ns)",
    )


def test_selection_round_trip_stable(tmp_path):
    path = tmp_path / "tuning" / "selection.json"
    entries = [entry("k", "n=2"), entry("a", "n=1"), entry("k", "n=1")]
    write_selection(path, entries)
    first = path.read_bytes()
    got = read_selection(path)
    assert [(e.kernel, e.shape) for e in got] == [("a", "n=1"), ("k", "n=1"), ("k", "n=2")]
    assert set(got) == set(entries)
    write_selection(path, reversed(entries))
    assert path.read_bytes() == first  # stable formatting whatever the input order
    assert first.endswith(b"\n") and json.loads(first)["format"] == 1
    assert sorted(p.name for p in path.parent.iterdir()) == ["selection.json"]


def test_selection_corrupt_file_names_line_and_column(tmp_path):
    path = tmp_path / "selection.json"
    path.write_text('{\n  "format": 1,\n  "entries": [,]\n}\n')
    with pytest.raises(WgslgenError, match=r"selection\.json:3:15: invalid JSON"):
        read_selection(path)
    path.write_text('{"format": 1, "entries": [{"kernel": "k"}]}')
    with pytest.raises(WgslgenError, match=r"entries\[0\] is malformed: missing field .device."):
        read_selection(path)
    with pytest.raises(WgslgenError, match="cannot read selection file"):
        read_selection(tmp_path / "missing.json")


def test_selection_entry_without_baseline_or_default_round_trips(tmp_path):
    path = tmp_path / "selection.json"
    entry = SelectionEntry(
        kernel="k", device="d" * 16, device_label="GPU", shape="n=1",
        winner=Choice("k__wg64", 500.0, "a" * 64), default=None, baseline=None,
        speedup=None, reason="only one variant ran",
    )  # fmt: skip
    write_selection(path, [entry])
    assert read_selection(path) == [entry]
    assert json.loads(path.read_text())["entries"][0]["default"] is None
