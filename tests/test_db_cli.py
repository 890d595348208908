"""`wgslgen db show|merge|prune` on hand-made databases (no device needed)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from wgslgen.cli import main
from wgslgen.render.renderer import render
from wgslgen.spec.loader import discover
from wgslgen.tune.db import ResultsDB
from wgslgen.tune.selection import judge_sha256, result_sha256

from .conftest import GOOD_KERNELS
from .test_db import rec


def db_cmd(capsys, *args: str) -> tuple[int, str, str]:
    """Run ``wgslgen db ARGS`` in-process; (exit code, stdout, stderr)."""
    code = main(["db", *args])
    out, err = capsys.readouterr()
    return code, out, " ".join(err.split())  # rich wraps long warnings


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """Four records of two kernels and shapes, a newer re-measurement, and a corrupt line."""
    path = tmp_path / "results.jsonl"
    d = ResultsDB(path)
    d.append(rec("a" * 64, variant="k__wg64", shape="n=1", median=2000.0))
    d.append(rec("b" * 64, variant="k__wg32", shape="n=1", median=1000.0))
    with open(path, "a") as f:
        f.write("not json at all\n")
    d.append(rec("a" * 64, variant="k__wg64", shape="n=2", status="timeout"))
    d.append(rec("a" * 64, variant="k__wg64", shape="n=1", at="2025-06-01T00:00:00.000000Z"))
    return path


def test_show_latest_per_key_filters_and_reports_the_corrupt_line(db, capsys):
    code, out, err = db_cmd(capsys, "show", "--db", str(db))
    assert code == 0
    assert f"{db}:3: unreadable record skipped" in err
    assert "3 record(s), 1 unreadable line(s) skipped" in out  # latest per key: 3 keys
    assert "wg32" in out and "timeout" in out
    code, out, _ = db_cmd(capsys, "show", "--db", str(db), "--all", "--json")
    doc = json.loads(out)
    assert len(doc["records"]) == 4 and doc["skipped_lines"][0]["line"] == 3
    # Fastest first within a shape; filters by shape (any key order) and status.
    assert [r["variant"] for r in doc["records"]][:2] == ["k__wg32", "k__wg64"]
    code, out, _ = db_cmd(capsys, "show", "--db", str(db), "--shape", "n=2", "--json")
    assert [r["status"] for r in json.loads(out)["records"]] == ["timeout"]
    code, out, _ = db_cmd(
        capsys, "show", "--db", str(db), "--status", "crash", "--kernel", "k", "--json"
    )
    assert json.loads(out)["records"] == []
    # A kernel neither the templates nor the database know is a typo: said, exit 2.
    code, out, err = db_cmd(capsys, "show", "--db", str(db), "--kernel", "x")
    assert code == 2 and "error: unknown kernel(s) x; known: " in err and out == ""


def test_show_missing_database_is_empty_only_when_it_is_the_projects(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # outside a project: the default is tuning/results.jsonl
    code, out, _ = db_cmd(capsys, "show")
    assert code == 0 and "0 record(s)" in out  # before any tune
    code, _, err = db_cmd(capsys, "show", "--db", str(tmp_path / "none.jsonl"))
    assert code == 2 and "none.jsonl: no such results database" in err  # a mistyped --db
    code, _, err = db_cmd(capsys, "prune", "--dry-run", "--db", str(tmp_path / "none.jsonl"))
    assert code == 2 and "no such results database" in err


def test_merge_combines_machines_without_duplicates(db, tmp_path, capsys):
    other = ResultsDB(tmp_path / "other" / "results.jsonl")
    for r in ResultsDB(db).load().records[:2]:  # already in db: duplicates
        other.append(r)
    other.append(rec("c" * 64, variant="k__wg128", shape="n=1"))
    with open(other.path, "a") as f:
        f.write('{"torn')
    code, out, err = db_cmd(capsys, "merge", "--db", str(db), str(other.path), "--json")
    doc = json.loads(out)
    assert code == 0 and (doc["added"], doc["duplicates"]) == (1, 2)
    assert f"{other.path}:4: unreadable record skipped" in err
    assert len(ResultsDB(db).load().records) == 5
    # The database's own unreadable line is not silently dropped: moved aside and said so.
    assert doc["moved_lines"] == 1
    assert Path(doc["rejected_path"]).read_text() == "not json at all\n"
    code, out, _ = db_cmd(capsys, "merge", "--db", str(db), str(other.path))
    assert "0 record(s) added, 3 exact duplicate(s) dropped" in out


def test_merging_a_file_without_one_record_is_an_error_and_changes_nothing(db, tmp_path, capsys):
    before = db.read_bytes()
    wrong = tmp_path / "selection.json"
    wrong.write_text('{\n  "format": 1,\n  "entries": []\n}\n')
    code, _out, err = db_cmd(capsys, "merge", "--db", str(db), str(wrong))
    assert code == 2 and f"cannot merge {wrong}: not a results file" in err
    assert db.read_bytes() == before  # its own corrupt line not even moved aside


def current_record(v):
    """A record of scale variant ``v`` as the templates render and judge it now."""
    r = rec(result_sha256(render(v, "naga")), variant=v.name)
    judged = replace(r.key, judge=judge_sha256(v))
    return replace(r, kernel="scale", params=dict(v.params), key=judged)


def test_prune_drops_exactly_the_stale_renderings(tmp_path, capsys):
    (spec,) = [k for k in discover([GOOD_KERNELS]) if k.name == "scale"]
    path = tmp_path / "results.jsonl"
    d = ResultsDB(path)
    for v in spec.variants[:2]:
        d.append(current_record(v))
    current = [(v.name, result_sha256(render(v, "naga"))) for v in spec.variants[:2]]
    wg64 = {"workgroup_size": 64, "storage": "f32"}
    d.append(replace(rec("f" * 64, variant="scale__wg64_sf32"), kernel="scale", params=wg64))
    d.append(rec("e" * 64, variant="other__x"))  # kernel "k": not in these templates
    args = ["prune", "--db", str(path), "--templates", str(GOOD_KERNELS), "--kernel", "scale"]
    code, out, _ = db_cmd(capsys, *args, "--dry-run", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["dropped"] == 1 and doc["kept_other_kernels"] == 1
    assert doc["stale"][0]["sha256"] == "f" * 64 and len(ResultsDB(path).load().records) == 4
    code, out, _ = db_cmd(capsys, *args)
    assert "dropped 1 stale record(s), kept 3" in out
    assert [r.variant for r in ResultsDB(path).load().records] == [
        current[0][0],
        current[1][0],
        "other__x",
    ]
    code, out, _ = db_cmd(capsys, *args, "--all")  # --kernel: --all reaches no further
    assert "dropped 0 stale record(s), kept 3" in out
    code, out, _ = db_cmd(capsys, *args[:-2], "--all")
    assert "dropped 1 stale record(s), kept 2" in out


def test_prune_keeps_records_made_before_an_axis_was_added(tmp_path, capsys):
    """A record lacks the axes added after it was measured: it is about their baselines, and
    while its code and judging digest are current, prune keeps it."""
    kernel = tmp_path / "kern" / "scale"
    shutil.copytree(GOOD_KERNELS / "scale", kernel)
    (spec,) = discover([kernel.parent])
    path = tmp_path / "results.jsonl"
    d = ResultsDB(path)
    for v in spec.variants[:2]:
        d.append(current_record(v))
    toml = kernel / "kernel.toml"
    axis = '[[axis]]\nname = "extra"\nkey = "x"\nvalues = [0, 1]\nbaseline = 0\n'
    toml.write_text(
        toml.read_text().replace(
            "[uniform]", axis + "omit_baseline_from_name = true\n\n[uniform]", 1
        )
    )
    args = ["prune", "--db", str(path), "--templates", str(kernel.parent), "--dry-run", "--json"]
    code, out, _ = db_cmd(capsys, *args)
    assert code == 0 and json.loads(out)["dropped"] == 0
