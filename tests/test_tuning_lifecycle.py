"""The tuning lifecycle as a project sets it up (a fourth audit): a results database at a path
of the project's choosing reaches `vendor`, and a plot file matplotlib cannot write is
refused before the tune, not after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wgslgen.cli import main

from .conftest import scale_project

FAST = ["--l2-bytes", "1M", "--rounds", "3", "--adapter", "cpu", "--shape", "n=1000"]
TUNE = ["tune", "--kernel", "scale", "--set", "s=f32", "--set", "wg=32", "--set", "wg=64", *FAST]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose results database is not beside its selection."""
    return scale_project(
        tmp_path, monkeypatch, 'templates = ["kernels"]\ndb = "perf/timings.jsonl"\n'
    )


def test_vendor_reads_the_projects_db_wherever_it_is(project: Path, capsys) -> None:
    # vendor looked for results.jsonl beside the selection only: every tuned rule was
    # dropped with a warning, and vendor, --strict and --check all exited 0.
    assert main(TUNE) == 0
    assert Path("perf/timings.jsonl").is_file() and not Path("tuning/results.jsonl").exists()
    capsys.readouterr()
    assert main(["vendor", "--out", "app/k", "--lang", "py", "--strict"]) == 0
    out = capsys.readouterr().out
    assert "dropped" not in out and "no device facts" not in out, out
    manifest = json.loads(Path("app/k/manifest.json").read_text())
    assert manifest["kernels"]["scale"]["selection"]["rules"], manifest["kernels"]["scale"]
    assert manifest["inputs"]["db"] == "../../perf/timings.jsonl"
    assert main(["vendor", "--check", "app/k"]) == 0
    Path("perf/timings.jsonl").rename("perf/moved.jsonl")
    assert main(["vendor", "--check", "app/k"]) == 2
    assert "timings.jsonl: no such file (the results database" in capsys.readouterr().err


def test_a_plot_format_matplotlib_cannot_write_is_refused_before_tuning(
    project: Path, capsys
) -> None:
    assert main([*TUNE, "--plot", "out.txt", "--json"]) == 2
    captured = capsys.readouterr()
    assert "--plot: out.txt: matplotlib writes no .txt files" in captured.err
    assert json.loads(captured.out)["exit_code"] == 2  # the one --json object
    assert not Path("perf/timings.jsonl").exists()  # nothing was measured
    assert main([*TUNE, "--plot", "timing"]) == 0
    assert Path("timing.png").is_file() and "plot: timing.png" in capsys.readouterr().out


def test_an_interrupted_tune_keeps_the_shapes_it_decided(
    project: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every record was kept, but the selection lost the shapes already decided.
    from wgslgen.tune.runner import TuneSession

    real_run, calls = TuneSession.run, []

    def run_then_interrupt(self, plan):  # a Ctrl-C while the second shape is tuned
        calls.append(plan)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_run(self, plan)

    monkeypatch.setattr(TuneSession, "run", run_then_interrupt)
    argv = [a for a in TUNE if a not in ("--shape", "n=1000")]
    assert main([*argv, "--shape", "n=1000", "--shape", "n=3000"]) == 130
    assert "holds the 1 shape(s) decided before the interrupt" in capsys.readouterr().err
    entries = json.loads(Path("tuning/selection.json").read_text())["entries"]
    assert [e["shape"] for e in entries] == ["n=1000"]


def test_merge_refuses_a_record_whose_device_info_is_not_its_key(project: Path, capsys) -> None:
    # An edited copy labelled lavapipe's timings "NVIDIA H100": db show and vendor's rules
    # then named a device that never ran them.
    assert main(TUNE) == 0
    lines = Path("perf/timings.jsonl").read_text().splitlines()
    kept, edited = json.loads(lines[0]), json.loads(lines[0])
    kept["measured_at"] = "2030-01-01T00:00:00Z"  # another measurement of the same key
    edited["measured_at"] = "2030-01-02T00:00:00Z"
    edited["device_info"]["device"] = "NVIDIA H100 80GB HBM3"
    Path("other.jsonl").write_text(json.dumps(kept) + "\n" + json.dumps(edited) + "\n")
    capsys.readouterr()
    assert main(["db", "merge", "other.jsonl", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["added"] == 1
    err = " ".join(captured.err.split())
    assert "other.jsonl:2:" in err and "NVIDIA H100 80GB HBM3" in err, err
    assert "is not the device of key.device" in err
    assert len(Path("perf/timings.jsonl").read_text().splitlines()) == len(lines) + 1


def test_a_rerun_that_measures_nothing_new_keeps_the_selections_choice(
    project: Path, capsys
) -> None:
    """README: "A re-run measures only what is missing". It used to race the finalists again
    (and on lavapipe, about one rerun in five, pick another winner by noise)."""
    three = [*TUNE, "--set", "wg=128", "--json"]
    assert main(three) == 0
    capsys.readouterr()
    # The file's choice stands even where the medians would say otherwise: make it another
    # variant that passed (its code's sha256 from its record), as a reviewer might.
    selection = Path("tuning/selection.json")
    doc = json.loads(selection.read_text())
    (entry,) = doc["entries"]
    records = [json.loads(line) for line in Path("perf/timings.jsonl").read_text().splitlines()]
    other = next(r for r in records if r["variant"] != entry["winner"]["variant"])
    entry["winner"] = {**entry["winner"], "variant": other["variant"],
                       "sha256": other["key"]["source_sha256"]}  # fmt: skip
    selection.write_text(json.dumps(doc))
    for _ in range(3):
        assert main(three) == 0
        again = json.loads(capsys.readouterr().out)
        assert again["totals"]["head_to_head_s"] == 0 and again["totals"]["measured"] == 0
        (shape,) = again["shapes"]
        assert shape["winner"] == other["variant"]
        assert "the selection's choice stands" in shape["reason"]
        assert json.loads(selection.read_text()) == doc
    selection.unlink()  # no standing choice: decided again (raced when there are finalists)
    assert main(three) == 0
    (shape,) = json.loads(capsys.readouterr().out)["shapes"]
    assert "stands" not in shape["reason"]
