"""Tuning results cannot go stale, winners deserve to win, and the database loses nothing."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from wgslgen.cli import main
from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import render
from wgslgen.spec.loader import discover
from wgslgen.tune import bench, records
from wgslgen.tune.bench import Measurement
from wgslgen.tune.db import Record, ResultsDB
from wgslgen.tune.runner import TuneOptions
from wgslgen.tune.selection import Candidate, decide, judge_sha256, result_sha256
from wgslgen.tune.selection_file import update_selection

from .conftest import GOOD_KERNELS, ROOT
from .test_db import entry, rec


@pytest.fixture
def scale(tmp_path: Path) -> Path:
    shutil.copytree(GOOD_KERNELS / "scale", tmp_path / "kern" / "scale")
    return tmp_path / "kern" / "scale"


def _judges(kernel: Path) -> dict[str, str]:
    (spec,) = discover([kernel.parent])
    return {v.name: judge_sha256(v) for v in spec.variants}


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_tightening_a_tolerance_invalidates_exactly_the_variants_it_applies_to(
    scale: Path,
) -> None:
    before = _judges(scale)
    _edit(scale / "kernel.toml", "rtol = 1e-3", "rtol = 1e-4")  # the f16 variants' tolerance
    after = _judges(scale)
    changed = {n for n in before if before[n] != after[n]}
    assert changed == {n for n in before if "sf16" in n} and changed


@pytest.mark.parametrize(
    ("file", "old", "new"),
    [
        ("reference.py", "2.0 *", "2.0000001 *"),  # a fixed reference
        ("kernel.toml", "workgroup_size - 1) // workgroup_size", "workgroup_size) // 1"),
        ("kernel.toml", 'alpha = "2.0"', 'alpha = "3.0"'),
    ],
)
def test_what_judges_a_variant_is_in_its_key(scale: Path, file: str, old: str, new: str) -> None:
    before = _judges(scale)
    _edit(scale / file, old, new)
    after = _judges(scale)
    assert all(before[n] != after[n] for n in before)


def test_a_record_judged_otherwise_or_with_another_seed_is_not_reused(tmp_path: Path) -> None:
    db = ResultsDB(tmp_path / "results.jsonl")
    r = rec()
    db.append(replace(r, key=replace(r.key, judge="j1", input_seed=0)))
    assert db.get(r.key.source_sha256, r.key.device, "n=1", "j1", 0) is not None
    assert db.get(r.key.source_sha256, r.key.device, "n=1", "j2", 0) is None
    assert db.get(r.key.source_sha256, r.key.device, "n=1", "j1", 7) is None
    assert db.get(r.key.source_sha256, r.key.device, "n=1") is None  # records before judging


def test_retry_failed_runs_wrong_records_again() -> None:
    assert not TuneOptions(retry_failed=True).reuses(rec(status="wrong"))
    assert TuneOptions(retry_failed=False).reuses(rec(status="wrong"))


def test_a_gpu_timing_without_the_spin_up_is_measured_again() -> None:
    # Records from before the spin-up may hold a GPU's low-clock timings (benchmarks/README.md
    # session 9); a CPU adapter has no such clock, so its records stay good.
    options = TuneOptions(l2_bytes=1 << 20)  # rec()'s flush: 2 MiB
    old, cpu, gpu = rec(), {"adapter_type": "CPU"}, {"adapter_type": "DiscreteGPU"}
    assert old.measurement is not None and old.measurement.spin_up_s == 0.0
    spun = replace(old.measurement, spin_up_s=bench.SPIN_UP_S)
    assert options.reuses(replace(old, device_info=cpu))
    assert not options.reuses(replace(old, device_info=gpu))
    assert options.reuses(replace(old, device_info=gpu, measurement=spun))
    # and the field survives the results file, or reads 0 where a record predates it
    d = replace(old, measurement=spun).to_dict()
    assert Record.from_dict(d).measurement.spin_up_s == bench.SPIN_UP_S
    del d["measurement"]["spin_up_s"]
    assert Record.from_dict(d).measurement.spin_up_s == 0.0
    jsonschema.validate(d, records.schemas()["results.schema.json"])


def _m(median: float, iqr: float = 0.0) -> Measurement:
    return replace(
        Measurement.from_samples([median] * 5, dispatches_per_sample=1, method="timestamp",
                                 warm=False, timer_resolution_ns=1.0, l2_flush_bytes=0),
        iqr_ns=iqr,
    )  # fmt: skip


def test_ties_prefer_fewer_features_and_more_profiles() -> None:
    (spec,) = [k for k in discover([GOOD_KERNELS]) if k.name == "scale"]
    by_name = {v.name: v for v in spec.variants}
    cands = {}
    for name in ("scale__wg64_sf32", "scale__wg64_sf16"):
        r = render(by_name[name], "naga")
        cands[name] = Candidate(r, r.facts[r.entry_point], (), not r.features)
    assert cands["scale__wg64_sf16"].rendered.features  # shader-f16
    # sf16 is 1% faster: within the noise, so the portable sf32 wins the tie.
    eligible = {"scale__wg64_sf16": _m(990.0), "scale__wg64_sf32": _m(1000.0)}
    d = decide(eligible, ["scale__wg64_sf32"], None, {}, lambda n: cands[n].tie_key(),
               list(eligible))  # fmt: skip
    assert d.winner == "scale__wg64_sf32"


def test_a_winner_slower_than_the_baseline_in_the_same_round_is_never_declared() -> None:
    eligible = {"fast_in_db": _m(900.0), "base": _m(1000.0)}
    h2h = {"fast_in_db": _m(1050.0), "base": _m(1000.0, iqr=100.0)}  # tied within the noise
    d = decide(eligible, ["base"], ("base", h2h["base"]), h2h,
               lambda n: (n != "fast_in_db", n), ["fast_in_db"])  # fmt: skip
    assert d.winner == "base" and "baseline beat fast_in_db" in d.reason
    assert d.speedup == 1.0


def test_a_record_with_a_wrong_type_is_skipped_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.jsonl"
    db = ResultsDB(path)
    db.append(rec(variant="good"))
    bad = rec(variant="bad").to_dict()
    bad["measurement"]["median_ns"] = "fast"
    with open(path, "a") as f:
        f.write(json.dumps(bad) + "\n")
    assert main(["db", "show", "--db", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "good" in out and "Traceback" not in err
    assert ":2: unreadable record skipped: measurement.median_ns" in " ".join(err.split())


def test_merge_reports_a_conflict_and_keeps_both(tmp_path: Path) -> None:
    a, b = ResultsDB(tmp_path / "a.jsonl"), ResultsDB(tmp_path / "b.jsonl")
    a.append(rec(variant="v", median=1000.0))
    b.append(rec(variant="v", median=5000.0))  # same key, time and variant; other timing
    stats = a.merge([b.path])
    assert stats.added == 1 and stats.duplicates == 0
    assert len(stats.conflicts) == 1 and "measurement" in stats.conflicts[0][1]
    medians = [r.measurement.median_ns for r in a.load().records]
    assert sorted(medians) == [1002.0, 5002.0]  # medians of 1000..1004, 5000..5004


def test_a_full_disk_leaves_no_torn_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = ResultsDB(tmp_path / "results.jsonl")
    db.append(rec(variant="first"))
    before = db.path.read_bytes()
    real_write = os.write

    def short_write(fd: int, data: bytes) -> int:
        return real_write(fd, data[: len(data) // 2])

    monkeypatch.setattr(os, "write", short_write)
    with pytest.raises(WgslgenError, match=r"No space left on device.*was not written"):
        db.append(rec(variant="second"))
    monkeypatch.undo()
    assert db.path.read_bytes() == before
    db.append(rec(variant="third"))
    assert [r.variant for r in db.load().records] == ["first", "third"]
    assert db.load().problems == []


@pytest.mark.parametrize("option", ["--db", "--selection"])
def test_an_unwritable_db_or_selection_is_refused_before_measuring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    folder = tmp_path / "a_folder"
    folder.mkdir()
    args = ["tune", "--templates", str(GOOD_KERNELS), "--kernel", "scale", option, str(folder)]
    started = time.monotonic()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "a_folder" in err and ("is a folder, not a file" in err or "Is a directory" in err)
    assert time.monotonic() - started < 10


def test_a_second_tune_on_one_database_waits_and_says_so(tmp_path: Path) -> None:
    first, second = (ResultsDB(tmp_path / "results.jsonl") for _ in range(2))
    first.begin_session()
    said: list[str] = []
    done = threading.Event()

    def other() -> None:
        second.begin_session(on_wait=said.append)
        done.set()
        second.end_session()

    t = threading.Thread(target=other)
    t.start()
    time.sleep(0.3)
    assert not done.is_set() and "another wgslgen tune" in said[0]
    first.end_session()
    t.join(10)
    assert done.is_set()


def _update(path: Path, kernel: str, n: int) -> None:
    for i in range(n):
        update_selection(path, [entry(kernel, f"n={i}")])


def test_concurrent_selection_updates_lose_no_entry(tmp_path: Path) -> None:
    import multiprocessing

    path = tmp_path / "selection.json"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_update, args=(path, k, 15)) for k in ("a", "b", "c")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    doc = json.loads(path.read_text())
    assert len(doc["entries"]) == 45


def test_shipped_schemas_are_current_and_the_bundled_files_validate() -> None:
    for name, schema in records.schemas().items():
        shipped = ROOT / "wgslgen" / "tune" / name
        assert json.loads(shipped.read_text()) == schema, f"regenerate {shipped}"
    results_schema = records.schemas()["results.schema.json"]
    lines = (ROOT / "tuning" / "results.jsonl").read_text().splitlines()
    assert lines
    for line in lines:
        jsonschema.validate(json.loads(line), results_schema)
    selection = json.loads((ROOT / "tuning" / "selection.json").read_text())
    jsonschema.validate(selection, records.schemas()["selection.schema.json"])
    bad = json.loads(lines[0])
    bad["measurement"]["median_ns"] = "fast"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, results_schema)


def test_an_axis_added_with_its_precondition_keeps_the_other_variants_records(
    scale: Path,
) -> None:
    """An axis whose baseline is left out of names, with `fixed_n == 0 or n == fixed_n`: the
    variants it leaves as they were keep their judging digest (their records stay valid);
    the new ones, which the precondition restricts, are judged apart from their twins."""
    before = _judges(scale)
    axis = (
        '[[axis]]\nname = "fixed_n"\nkey = "fn"\nvalues = [0, 1000]\nbaseline = 0\n'
        "omit_baseline_from_name = true\n\n[uniform]"
    )
    _edit(scale / "kernel.toml", "[uniform]", axis)
    _edit(
        scale / "kernel.toml",
        'preconditions = ["n >= 1"]',
        'preconditions = ["n >= 1", "fixed_n == 0 or n == fixed_n"]',
    )
    after = _judges(scale)
    assert {n: after[n] for n in before} == before
    fixed = [n for n in after if n.endswith("_fn1000")]
    assert fixed and all(after[n] != before[n.removesuffix("_fn1000")] for n in fixed)


def test_the_shipped_record_and_selection_schemas_are_current() -> None:
    # docs/json-output.md points consumers at these files.
    for name, doc in records.schemas().items():
        shipped = records.SCHEMA_DIR / name
        assert shipped.read_text() == records.schema_text(doc), f"regenerate {shipped}"


def _bundled_choices():
    """(entry, role, choice, its variant now) for every choice of tuning/selection.json (an
    entry has no baseline where the kernel's baseline does not apply to the shape)."""
    specs = {spec.name: spec for spec in discover([ROOT / "templates"])}
    selection = json.loads((ROOT / "tuning" / "selection.json").read_text())
    assert selection["entries"]
    for entry_ in selection["entries"]:
        variants = {v.name: v for v in specs[entry_["kernel"]].variants}
        for role in ("winner", "baseline", "default"):
            choice = entry_[role]
            if choice is None:
                assert role == "baseline", f"{entry_['kernel']} at {entry_['shape']}: no {role}"
                continue
            yield entry_, role, choice, variants[choice["variant"]]


def test_the_bundled_selection_names_its_variants_as_they_render_now() -> None:
    """A template edit that changes a tuned variant's code (a line moved is enough) makes
    `vendor` drop that tuned choice as stale: the bundled choices must survive every edit of
    the templates, or be tuned again."""
    for _, role, choice, variant in _bundled_choices():
        now = result_sha256(render(variant, "naga"))
        assert choice["sha256"] == now, f"{choice['variant']} ({role}) renders anew"


def test_the_bundled_selection_rests_on_records_prune_keeps() -> None:
    """A change of how variants are judged (the judging digest's inputs or formula) makes
    `db prune` drop the bundled records and the next tune measure them again: every choice
    of the bundled selection must have a record judged as its variant is judged now."""
    judged: dict[tuple[str, ...], set[str]] = {}
    for r in ResultsDB(ROOT / "tuning" / "results.jsonl").load().records:
        key = (r.variant, r.key.shape, r.key.device, r.key.source_sha256)
        judged.setdefault(key, set()).add(r.key.judge)
    for entry_, role, choice, variant in _bundled_choices():
        key = (choice["variant"], entry_["shape"], entry_["device"], choice["sha256"])
        assert key in judged, f"{choice['variant']} ({role}) at {entry_['shape']}: no record"
        assert judge_sha256(variant) in judged[key], (
            f"{choice['variant']} ({role}): judged otherwise now"
        )
