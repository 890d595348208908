"""`wgslgen tune` on a real device (lavapipe through wgpu-py); fakes only inject faults."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wgslgen.errors import WgslgenError
from wgslgen.tune import search
from wgslgen.tune.bench import Measurement
from wgslgen.tune.db import ResultsDB, read_selection
from wgslgen.tune.selection import decide, finalists

from .conftest import GOOD_KERNELS, ROOT

SCALE = ["--templates", str(GOOD_KERNELS), "--kernel", "scale"]
SHAPES = ["--shape", "n=1000", "--shape", "n=65536"]
# Small flush and few head-to-head rounds keep each tune of the 5-variant kernel to seconds.
FAST = ["--l2-bytes", "1M", "--rounds", "5", "--adapter", "cpu"]


# The CLI in a child process whose device workers are tests/fault_worker.py's.
_FAULTY_CLI = (
    "import sys; from tests.fault_worker import use_faulty_worker; use_faulty_worker(); "
    "from wgslgen.cli import main; sys.exit(main(sys.argv[1:]))"
)


def wgslgen(
    *args: str, tmp: Path, env: dict | None = None, timeout: float = 180, faulty: bool = False
):
    """Run ``python -m wgslgen ARGS`` with the DB and selection under ``tmp``."""
    files = ["--db", str(tmp / "results.jsonl"), "--selection", str(tmp / "selection.json")]
    if args[0] != "tune":
        files = files[:2]
    entry = ["-c", _FAULTY_CLI] if faulty else ["-m", "wgslgen"]
    return subprocess.run(
        [sys.executable, *entry, *args, *files],
        capture_output=True, text=True, cwd=ROOT, timeout=timeout,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


@pytest.fixture(scope="module")
def tuned(tmp_path_factory) -> Path:
    """One complete tune of the scale kernel over two shapes (shared, read-only)."""
    tmp = tmp_path_factory.mktemp("tuned")
    proc = wgslgen("tune", *SCALE, *SHAPES, *FAST, tmp=tmp)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    (tmp / "stdout.txt").write_text(proc.stdout)
    return tmp


def test_tune_two_shapes_prints_leaderboard_writes_db_and_selection(tuned):
    out = (tuned / "stdout.txt").read_text()
    for text in ("scale @ n=1000", "scale @ n=65536", "speedup", "% of best", "winner"):
        assert text in out
    records = ResultsDB(tuned / "results.jsonl").load().records
    # 5 variants x 2 shapes, each once, each passed the reference before it was timed.
    assert len(records) == 10 and {r.status for r in records} == {"ok"}
    assert len({r.key for r in records}) == 10
    r = records[0]
    assert r.measurement.reps >= 5 and len(r.measurement.samples_ns) == r.measurement.reps
    assert r.measurement.l2_flush_bytes == 2 << 20 and r.versions["wgpu"]
    assert r.versions["naga"].startswith("wgpu-native ")  # the naga that compiled it
    assert r.device_info["adapter_type"] == "CPU"
    entries = read_selection(tuned / "selection.json")
    assert sorted(e.shape for e in entries) == ["n=1000", "n=65536"]
    names = {r.variant for r in records}
    for e in entries:
        assert e.winner.variant in names and e.winner.sha256
        assert e.baseline.variant == "scale__wg64_sf32" and e.speedup > 0
        assert e.default.variant.endswith("_sf32")  # portable: no shader-f16


def test_a_tune_narrowed_to_f16_keeps_the_entrys_portable_default(tuned, tmp_path):
    # No f16 variant is portable: a tune of only those has no default of its own, and must not
    # wipe out the one an earlier tune chose (what vendoring falls back to without shader-f16).
    for name in ("results.jsonl", "selection.json"):
        shutil.copy(tuned / name, tmp_path / name)
    # The earlier winner an f32 one (its portable default): the full tune's own winner may have
    # been this f16 one by timing noise, and then nothing would change to keep a default for.
    doc = json.loads((tmp_path / "selection.json").read_text())
    entry = next(e for e in doc["entries"] if e["shape"] == "n=1000")
    entry["winner"] = entry["default"]
    (tmp_path / "selection.json").write_text(json.dumps(doc))
    before = {e.shape: e for e in read_selection(tmp_path / "selection.json")}
    proc = wgslgen("tune", *SCALE, "--shape", "n=1000", "--set", "s=f16", *FAST, tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "portable default: none among the candidates" in " ".join(proc.stdout.split())
    after = {e.shape: e for e in read_selection(tmp_path / "selection.json")}
    assert after["n=1000"].winner.variant.endswith("_sf16")
    assert after["n=1000"].default == before["n=1000"].default is not None
    assert "portable default kept from an earlier tune" in after["n=1000"].reason
    assert after["n=65536"] == before["n=65536"]
    # Without an earlier entry there is nothing to keep: no default, said so.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copy(tuned / "results.jsonl", fresh / "results.jsonl")
    proc = wgslgen("tune", *SCALE, "--shape", "n=1000", "--set", "s=f16", *FAST, tmp=fresh)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    (entry,) = read_selection(fresh / "selection.json")
    assert entry.default is None and "kept" not in entry.reason


def test_kill_midway_then_resume_measures_only_what_is_missing(tmp_path):
    db_path = tmp_path / "results.jsonl"
    cmd = [sys.executable, "-m", "wgslgen", "tune", *SCALE, *SHAPES, *FAST,
           "--db", str(db_path), "--selection", str(tmp_path / "selection.json")]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if db_path.exists() and db_path.read_bytes().count(b"\n") >= 4:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = ResultsDB(db_path).load().records
    assert 4 <= len(first) < 10, "the kill should land half way"

    again = wgslgen("tune", *SCALE, *SHAPES, *FAST, "--json", tmp=tmp_path)
    assert again.returncode == 0, again.stderr
    totals = json.loads(again.stdout)["totals"]
    assert totals["measured"] == 10 - len(first) and totals["reused"] == len(first)
    after = ResultsDB(db_path).load().records
    assert after[: len(first)] == first  # untouched: same samples, same measured_at
    assert len(after) == 10 and len({r.key for r in after}) == 10


def test_corrupt_line_is_reported_with_its_number_and_skipped(tuned, tmp_path):
    lines = (tuned / "results.jsonl").read_text().splitlines(keepends=True)
    lines.insert(2, '{"key": oops not json\n')
    (tmp_path / "results.jsonl").write_text("".join(lines))
    shutil.copy(tuned / "selection.json", tmp_path / "selection.json")
    db = str(tmp_path / "results.jsonl")

    show = wgslgen("db", "show", tmp=tmp_path)
    assert show.returncode == 0
    assert f"{db}:3: unreadable record skipped" in " ".join(show.stderr.split())
    assert "10 record(s), 1 unreadable line(s) skipped" in show.stdout

    tune = wgslgen("tune", *SCALE, *SHAPES, *FAST, "--json", tmp=tmp_path)
    assert tune.returncode == 0, tune.stderr
    assert f"{db}:3: unreadable record skipped" in " ".join(tune.stderr.split())
    doc = json.loads(tune.stdout)
    assert doc["totals"]["measured"] == 0 and doc["totals"]["reused"] == 10
    assert doc["skipped_lines"][0]["line"] == 3


def write_kernel(
    root: Path, wrong_f16: bool = False, comment: str = "", broken_wg128: bool = False
) -> Path:
    """A copy of the scale fixture: f16 variants may compute 3x (wrong) or carry a comment,
    the wg128 one may not compile."""
    folder = root / "scale"
    shutil.copytree(GOOD_KERNELS / "scale", folder, dirs_exist_ok=True)
    template = folder / "scale.wgsl.j2"
    text = template.read_text()
    if wrong_f16:
        text = text.replace(
            "params.alpha *", "{{ '1.5 *' if storage == 'f16' else '' }} params.alpha *"
        )
    if broken_wg128:  # a type error naga rejects: the pipeline cannot be created
        text = text.replace(
            "let i = gid.x;",
            "let i = gid.x;\n{% if workgroup_size == 128 %}let bad: u32 = 1.5;{% endif %}",
        )
    if comment:
        text = text.replace(
            "// y = alpha · x",
            "// y = alpha · x\n{% if storage == 'f16' %}// " + comment + "\n{% endif %}",
        )
    template.write_text(text)
    return root


def test_wrong_and_broken_are_recorded_never_timed_nor_selected(tmp_path):
    kernels = write_kernel(tmp_path / "k", wrong_f16=True, broken_wg128=True)
    proc = wgslgen("tune", "--templates", str(kernels), "--kernel", "scale", "--shape", "n=4096",
                   *FAST, "--json", tmp=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    records = ResultsDB(tmp_path / "results.jsonl").load().records
    wrong = [r for r in records if r.params["storage"] == "f16"]
    assert len(wrong) == 2 and all(r.status == "wrong" and r.measurement is None for r in wrong)
    assert "off" in wrong[0].error  # the harness says what differs
    (broken,) = [r for r in records if r.params["workgroup_size"] == 128]
    assert broken.status == "compile-error" and broken.measurement is None
    (entry,) = read_selection(tmp_path / "selection.json")
    assert "sf16" not in entry.winner.variant and "sf16" not in entry.default.variant


def test_a_chosen_variant_that_fails_now_leaves_the_selection(tmp_path):
    """Every variant wrong after the reference changed: the old entry, whose winner fails
    now, is dropped (vendor would ship it), and the tune says so."""
    kernels = write_kernel(tmp_path / "k")
    args = ["tune", "--templates", str(kernels), "--kernel", "scale", "--shape", "n=512", *FAST]
    assert wgslgen(*args, tmp=tmp_path).returncode == 0
    assert len(read_selection(tmp_path / "selection.json")) == 1
    reference = kernels / "scale" / "reference.py"
    reference.write_text(reference.read_text().replace("2.0 * inputs", "3.0 * inputs"))
    proc = wgslgen(*args, tmp=tmp_path)
    assert proc.returncode == 1
    assert read_selection(tmp_path / "selection.json") == []
    assert "entry scale at n=512" in proc.stderr and "fails now" in proc.stderr, proc.stderr


def test_a_tune_that_measures_nothing_new_leaves_the_selection_file_alone(tmp_path):
    """An entry whose records were all reused and whose choices are the file's keeps the
    file's entry (only the head-to-head medians differ: a committed selection would churn);
    new measurements or other choices replace it."""
    from wgslgen.tune.selection_file import Choice, SelectionEntry, update_selection

    def entry(winner: str, ns: float) -> SelectionEntry:
        c = Choice(winner, ns, "ab" * 32)
        return SelectionEntry("scale", "d" * 16, "lavapipe", "n=512", c, c, c, 1.0, "fastest")

    path, key = tmp_path / "selection.json", ("scale", "d" * 16, "n=512")
    update_selection(path, [entry("scale__wg64_sf32", 100.0)])
    first = path.read_bytes()
    update_selection(path, [entry("scale__wg64_sf32", 97.0)], nothing_measured=[key])
    assert path.read_bytes() == first
    update_selection(path, [entry("scale__wg32_sf32", 97.0)], nothing_measured=[key])
    assert read_selection(path)[0].winner.variant == "scale__wg32_sf32"
    update_selection(path, [entry("scale__wg32_sf32", 90.0)])  # measured anew: replaced
    assert read_selection(path)[0].winner.median_ns == 90.0


def test_changed_template_invalidates_exactly_its_records_and_prune(tmp_path):
    kernels = write_kernel(tmp_path / "k")
    args = ["tune", "--templates", str(kernels), "--kernel", "scale", "--shape", "n=512",
            *FAST, "--json"]  # fmt: skip
    assert wgslgen(*args, tmp=tmp_path).returncode == 0
    write_kernel(tmp_path / "k", comment="f16 variants changed")
    proc = wgslgen(*args, tmp=tmp_path)
    totals = json.loads(proc.stdout)["totals"]
    assert (totals["measured"], totals["reused"]) == (2, 3)  # only the two f16 texts changed

    dry = wgslgen("db", "prune", "--templates", str(kernels), "--dry-run", "--json", tmp=tmp_path)
    assert (
        json.loads(dry.stdout)["dropped"] == 2
        and len(ResultsDB(tmp_path / "results.jsonl").load().records) == 7
    )
    prune = wgslgen("db", "prune", "--templates", str(kernels), tmp=tmp_path)
    assert prune.returncode == 0 and "dropped 2 stale record(s), kept 5" in prune.stdout
    # Records of kernels these templates do not define are someone else's: kept.
    other = wgslgen("db", "prune", "--templates", str(ROOT / "templates"), "--json", tmp=tmp_path)
    assert json.loads(other.stdout)["dropped"] == 0


def test_hang_and_crash_are_recorded_and_the_search_goes_on(tmp_path):
    fault = "hang:bench:scale__wg32_sf16,crash:run:scale__wg128_sf32"
    proc = wgslgen("tune", *SCALE, "--shape", "n=2048", *FAST, "--timeout", "6", "--json",
                   tmp=tmp_path, env={"WGSLGEN_TEST_FAULT": fault}, faulty=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    status = {r.variant: r.status for r in ResultsDB(tmp_path / "results.jsonl").load().records}
    assert status == {
        "scale__wg32_sf16": "timeout",
        "scale__wg128_sf32": "crash",
        "scale__wg32_sf32": "ok",
        "scale__wg64_sf32": "ok",
        "scale__wg64_sf16": "ok",
    }
    (entry,) = read_selection(tmp_path / "selection.json")
    assert entry.winner.variant in {"scale__wg32_sf32", "scale__wg64_sf32", "scale__wg64_sf16"}
    # A re-run does not retry them (they are recorded), unless asked to.
    again = wgslgen("tune", *SCALE, "--shape", "n=2048", *FAST, "--json", tmp=tmp_path)
    assert json.loads(again.stdout)["totals"]["measured"] == 0
    retry = wgslgen("tune", *SCALE, "--shape", "n=2048", *FAST, "--json", "--retry-failed",
                    tmp=tmp_path)  # fmt: skip
    assert json.loads(retry.stdout)["totals"]["measured"] == 2


def test_budget_still_measures_the_baseline(tmp_path):
    args = [
        "--strategy",
        "random",
        "--budget",
        "1",
        "--search-seed",
        "3",
        "--set",
        "wg=32",
        "--json",
    ]
    proc = wgslgen("tune", *SCALE, "--shape", "n=256", *FAST, *args, tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    shape = json.loads(proc.stdout)["shapes"][0]
    assert shape["strategy"] == "random" and shape["candidates"] == 2
    assert shape["baseline_ran"] and shape["speedup"] > 0
    assert any("outside --set" in n for n in shape["notes"])
    # The baseline is outside --set: compared against, never selected.
    assert shape["winner"] != "scale__wg64_sf32"


def test_baseline_outside_the_profile_is_measured_but_never_selected(tmp_path):
    """The seed's baseline needs 16,640 B of workgroup memory, more than webgpu's 16,384 B."""
    proc = wgslgen("tune", "--kernel", "attention_bwd_dq", "--profile", "webgpu",
                   "--set", "wg=64", "--set", "s=f32", "--set", "w=f32",
                   "--shape", "head_dim=16,n_heads=2,n_kv_heads=1,history_len=32",
                   *FAST, "--json", tmp=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    shape = json.loads(proc.stdout)["shapes"][0]
    base = "attention_bwd_dq__wg64_mh4096_sf32_wf32"
    assert shape["candidates"] == 2  # mh1024 and mh2048 fit; mh4096 and mh8192 do not
    assert any("16,640 B > 16,384 B" in n and "speedup only" in n for n in shape["notes"])
    assert shape["winner"] != base and shape["baseline_ran"]
    row = next(r for r in shape["leaderboard"] if r["variant"] == base)
    assert "outside profile" in row["tags"] and not row["eligible"]


def test_optional_extras_say_how_to_install(tmp_path):
    if not search.have_optuna():
        proc = wgslgen("tune", *SCALE, "--shape", "n=8", "--strategy", "tpe", tmp=tmp_path)
        assert proc.returncode == 2 and "pip install optuna" in proc.stderr
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        proc = wgslgen("tune", *SCALE, "--shape", "n=8", "--plot", str(tmp_path / "p.png"),
                       tmp=tmp_path)  # fmt: skip
        assert proc.returncode == 2 and "pip install matplotlib" in proc.stderr
        assert not (tmp_path / "results.jsonl").exists()  # refused before measuring


# ---- strategies and decisions, without a device ----


def test_strategies_propose_each_candidate_once_reproducibly():
    ex = search.make("exhaustive", [{}] * 4)
    assert [ex.ask() for _ in range(5)] == [0, 1, 2, 3, None]
    a, b = search.make("random", [{}] * 6, seed=7), search.make("random", [{}] * 6, seed=7)
    seq = [a.ask() for _ in range(6)]
    assert seq == [b.ask() for _ in range(6)] and sorted(seq) == list(range(6))
    assert a.ask() is None
    assert search.resolve("auto", 10, search.Budget()) == ("exhaustive", search.Budget())
    name, budget = search.resolve("auto", 1000, search.Budget())
    assert name in ("tpe", "random") and budget.variants == search.DEFAULT_SAMPLE_BUDGET
    assert search.resolve("auto", 10, search.Budget(seconds=5))[1] == search.Budget(seconds=5)
    with pytest.raises(WgslgenError, match="unknown strategy"):
        search.resolve("annealing", 10, search.Budget())


def test_tpe_proposes_only_candidates():
    pytest.importorskip("optuna")
    points = [
        {"wg": w, "s": s} for w in (32, 64, 128) for s in ("f32", "f16") if (w, s) != (128, "f16")
    ]
    tpe = search.make("tpe", points, seed=1)
    seen = []
    while (i := tpe.ask()) is not None:
        seen.append(i)
        tpe.tell(i, float(points[i]["wg"]) if i % 3 else None)
    assert sorted(seen) == list(range(len(points)))


def m(median: float, iqr_frac: float = 0.001) -> Measurement:
    return Measurement.from_samples(
        [median * (1 - iqr_frac), median, median * (1 + iqr_frac)], dispatches_per_sample=1,
        method="timestamp", warm=False, timer_resolution_ns=1.0, l2_flush_bytes=0,
    )  # fmt: skip


def test_decide_head_to_head_wins_over_database_and_ties_are_deterministic():
    key = lambda n: (int(n[2:]), n)  # noqa: E731 - names like "wg64"
    db = {"wg32": m(100), "wg64": m(105), "wg128": m(150)}
    names = finalists(db, key)
    assert names == ["wg32", "wg64"]  # wg128 is more than 10% slower
    # Head-to-head: wg64 clearly faster; the baseline (not eligible) is compared, never chosen.
    h2h = {"wg32": m(100), "wg64": m(80), "base": m(60)}
    d = decide(db, ["wg32"], ("base", m(61)), h2h, key, names)
    assert d.winner == "wg64" and d.default == "wg32" and d.speedup == pytest.approx(60 / 80)
    assert d.significant is False and "faster than the winner" in d.notes[0]
    d = decide(db, ["wg32"], ("base", m(200)), {**h2h, "base": m(200)}, key, names)
    assert d.speedup == pytest.approx(2.5) and d.significant and not d.notes
    # Within noise (2%), the smaller tie key wins whatever the order of the medians.
    d = decide(db, [], None, {"wg32": m(100.5), "wg64": m(100)}, key, names)
    assert d.winner == "wg32" and d.speedup is None and d.default is None
    # No head-to-head (it failed): the database's medians decide.
    d = decide(db, ["wg64"], None, {}, key, names, notes=["h2h failed"])
    assert d.winner == "wg32" and d.default == "wg64" and d.source("wg32") == "database"


def test_fresh_worker_always_checks_and_times_each_variant_in_a_new_process(tmp_path, monkeypatch):
    from wgslgen.cli import main
    from wgslgen.run.worker_client import WorkerClient

    started: list[int] = []
    real_start = WorkerClient.start

    def counting_start(self):
        fresh = self.proc is None or self.proc.poll() is not None
        info = real_start(self)
        if fresh:
            started.append(info.pid)
        return info

    monkeypatch.setattr(WorkerClient, "start", counting_start)

    def tune(mode: str, sub: str) -> None:
        files = [
            "--db",
            str(tmp_path / sub / "r.jsonl"),
            "--selection",
            str(tmp_path / sub / "s.json"),
        ]
        args = ["tune", *SCALE, "--shape", "n=1000", *FAST, "--fresh-worker", mode, *files]
        assert main(args) == 0

    tune("always", "a")
    always = list(started)
    started.clear()
    tune("auto", "b")  # lavapipe is a CPU adapter: one worker does it all
    # 5 variants and the head-to-head, each in a worker of its own.
    assert len(set(always)) >= 6
    assert len(set(started)) == 1


def _as_if_on_a_gpu_with_drift(monkeypatch, drift_after: int | None) -> list[tuple[int, str]]:
    """The runner takes lavapipe for a GPU, and (an injected fault) every timing after the
    first ``drift_after`` of a worker process reads 1000x slower; returns each timing's
    (worker pid, variant)."""
    import dataclasses

    from wgslgen.run.harness import Harness
    from wgslgen.tune import runner

    monkeypatch.setattr(runner, "is_cpu_adapter", lambda info: False)
    timings: list[tuple[int, str]] = []
    real_bench = Harness.bench

    def drifting_bench(self, rendered, shape, **options):
        m = real_bench(self, rendered, shape, **options)
        pid = self.worker.info.pid
        timings.append((pid, rendered.name))
        if drift_after is None or [p for p, _ in timings].count(pid) <= drift_after:
            return m
        return dataclasses.replace(m, median_ns=m.median_ns * 1000)

    monkeypatch.setattr(Harness, "bench", drifting_bench)
    return timings


def _tune_json(tmp_path: Path, capsys, *extra: str) -> dict:
    from wgslgen.cli import main

    files = ["--db", str(tmp_path / "r.jsonl"), "--selection", str(tmp_path / "s.json")]
    assert main(["tune", *SCALE, "--shape", "n=1000", *FAST, "--json", *extra, *files]) == 0
    return json.loads(capsys.readouterr().out)


def test_auto_keeps_one_gpu_worker_and_times_a_canary_again(tmp_path, monkeypatch, capsys):
    timings = _as_if_on_a_gpu_with_drift(monkeypatch, drift_after=None)
    report = _tune_json(tmp_path, capsys)
    # 5 variants timed, then the first (the canary) once more, all in one worker.
    pids, names = zip(*timings, strict=True)
    assert len(set(pids[:6])) == 1 and len(set(names[:5])) == 5 and names[5] == names[0]
    if "drifted" in json.dumps(report):  # lavapipe's spread on a busy CPU can exceed the band
        assert len(timings) == 11 and len(set(pids[6:])) == 5 and pids[0] not in pids[6:]
    else:
        assert len(timings) == 6


def test_a_drifting_gpu_worker_is_caught_and_its_timings_redone_in_new_workers(
    tmp_path, monkeypatch, capsys
):
    timings = _as_if_on_a_gpu_with_drift(monkeypatch, drift_after=2)
    report = _tune_json(tmp_path, capsys)
    pids = [pid for pid, _ in timings]
    assert "the kept device worker's timings drifted" in json.dumps(report)
    # The canary and the first suspect were read in time, then 3 suspects and the canary's
    # second reading drifted: the canary and the 4 suspects are timed again, each in a worker
    # of its own.
    assert len(pids) == 6 + 5 and len(set(pids[6:])) == 5 and pids[0] not in pids[6:]
    db = ResultsDB(tmp_path / "r.jsonl").load()
    latest: dict[str, float] = {}
    superseded = 0
    for r in db.records:
        if r.status == "ok":
            superseded += r.variant in latest
            latest[r.variant] = r.measurement.median_ns
    assert superseded == 5
    fastest = min(latest.values())
    assert all(v < 100 * fastest for v in latest.values()), latest  # no drifted timing kept


def test_fresh_worker_never_keeps_a_gpu_worker_without_a_canary(tmp_path, monkeypatch, capsys):
    timings = _as_if_on_a_gpu_with_drift(monkeypatch, drift_after=None)
    _tune_json(tmp_path, capsys, "--fresh-worker", "never")
    assert len(timings) == 5 and len({pid for pid, _ in timings}) == 1


def test_the_drift_watch_checks_every_so_often_and_allows_for_the_noise():
    from types import SimpleNamespace

    from wgslgen.tune.drift import CHECK_EVERY, DriftWatch

    watch = DriftWatch()
    v = [SimpleNamespace(name=f"v{i}") for i in range(CHECK_EVERY + 2)]
    assert not watch.timed(v[0], m(100))  # the canary
    assert [watch.timed(c, m(100)) for c in v[1 : CHECK_EVERY + 1]][-2:] == [False, True]
    assert not watch.judge(m(110)) and watch.suspects == [] and watch.drifted is None
    assert not watch.judge(m(150, iqr_frac=0.2))  # within its own spread: noise
    watch.timed(v[-1], m(100))
    assert watch.judge(m(140)) and watch.suspects == [v[-1]]
    assert "v0 took 100 ns, then 140 ns after 1 more variant(s)" in watch.drifted
    watch.start_shape()
    assert watch.canary is None and watch.drifted  # a drift found stays found
