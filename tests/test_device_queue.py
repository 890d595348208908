"""benchmarks/device_queue.sh: the GPU jobs waiting for a device call run in order within the
call's time, each only on the GPU it needs and once per machine, and every finished job's
results come back even when a later one fails or the call is cut short."""

from __future__ import annotations

import os
import subprocess
import tarfile

from .conftest import ROOT

QUEUE = ROOT / "benchmarks" / "device_queue.sh"


def _job(queue, name: str, body: str, seconds: int | None = 30, needs: str = "",
         prepare: str = "") -> None:  # fmt: skip
    """A job file: its header lines, then BODY."""
    lines = ["#!/usr/bin/env bash"]
    if seconds is not None:
        lines.append(f"# seconds: {seconds}")
    if needs:
        lines.append(f"# needs: {needs}")
    if prepare:
        lines.append(f"# prepare: {prepare}")
    (queue / f"{name}.sh").write_text("\n".join([*lines, body, ""]))


def _queue(
    tmp_path, command: str, gpu: str = "NVIDIA H100 80GB HBM3", call_seconds: int = 570,
    args: list[str] | None = None,
):  # fmt: skip
    """Run device_queue.sh COMMAND on tmp_path's queue, as on a GPU machine named GPU."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    env = os.environ | {
        "QUEUE_DIR": str(tmp_path / "queue"), "QUEUE_DONE": str(tmp_path / "done"),
        "OUT": str(out), "GPU_NAME": gpu, "QUEUE_SETUP": "0", "CALL_SECONDS": str(call_seconds),
    }  # fmt: skip
    return subprocess.run(
        ["bash", str(QUEUE), command, *(args or [])],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def _summary(tmp_path) -> dict[str, str]:
    """queue.txt as {job: status}."""
    lines = (tmp_path / "out" / "queue.txt").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines)


def _packed(tmp_path) -> dict[str, str]:
    """queue.tgz's files as {path: text}."""
    with tarfile.open(tmp_path / "out" / "queue.tgz") as tar:
        return {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile()}


def test_jobs_run_in_order_on_their_gpu_and_a_failure_stops_nothing(tmp_path) -> None:
    queue = tmp_path / "queue"
    queue.mkdir()
    _job(queue, "10-h200-only", 'echo tuned > "$JOB_OUT/r.txt"', needs="H200")
    _job(queue, "20-fails", 'echo partial > "$JOB_OUT/r.txt"; exit 3')
    _job(queue, "30-times", 'echo "$GPU_NAME" > "$JOB_OUT/r.txt"')
    done = _queue(tmp_path, "run")
    assert done.returncode == 0, done.stderr
    summary = _summary(tmp_path)
    assert list(summary) == ["gpu", "10-h200-only", "20-fails", "30-times"]
    assert summary["10-h200-only"] == "skipped: needs H200"
    assert summary["20-fails"].startswith("failed (exit 3)")
    assert summary["30-times"].startswith("ok")
    packed = _packed(tmp_path)
    # the failed job's partial results come back too; the skipped job has no folder
    assert packed["queue/20-fails/r.txt"] == "partial\n"
    assert packed["queue/30-times/r.txt"] == "NVIDIA H100 80GB HBM3\n"
    assert not any(p.startswith("queue/10-h200-only") for p in packed)


def test_a_job_that_does_not_fit_the_call_waits_and_a_finished_one_is_not_run_again(
    tmp_path,
) -> None:
    queue = tmp_path / "queue"
    queue.mkdir()
    _job(queue, "10-tune", f"echo x >> {tmp_path}/runs", seconds=300, needs="H200")
    _job(queue, "20-experiment", 'echo y > "$JOB_OUT/r.txt"', seconds=320)
    # (what is left counts the time the earlier jobs took, not their `seconds`)
    done = _queue(tmp_path, "run", gpu="NVIDIA H200", call_seconds=319)
    assert done.returncode == 0, done.stderr
    summary = _summary(tmp_path)
    assert summary["10-tune"].startswith("ok")
    assert summary["20-experiment"].startswith("skipped: needs 320 s, ")
    # the next call on the same warm machine runs what waited, not the finished tune again
    done = _queue(tmp_path, "run", gpu="NVIDIA H200", call_seconds=570)
    assert done.returncode == 0, done.stderr
    summary = _summary(tmp_path)
    assert summary["10-tune"] == "skipped: finished in an earlier call on this machine"
    assert summary["20-experiment"].startswith("ok")
    assert _packed(tmp_path)["queue/20-experiment/r.txt"] == "y\n"
    assert (tmp_path / "runs").read_text() == "x\n"  # the tune ran once


def test_a_job_past_its_seconds_is_cut_and_the_queue_goes_on(tmp_path) -> None:
    queue = tmp_path / "queue"
    queue.mkdir()
    _job(queue, "10-hangs", 'echo started > "$JOB_OUT/r.txt"; sleep 60', seconds=1)
    _job(queue, "20-next", "true")
    done = _queue(tmp_path, "run")
    assert done.returncode == 0, done.stderr
    summary = _summary(tmp_path)
    assert summary["10-hangs"].startswith("timed out after 1 s")
    assert summary["20-next"].startswith("ok")
    assert _packed(tmp_path)["queue/10-hangs/r.txt"] == "started\n"


def test_a_job_without_seconds_is_named_before_anything_runs(tmp_path) -> None:
    queue = tmp_path / "queue"
    queue.mkdir()
    _job(queue, "10-fine", f"echo ran > {tmp_path}/ran")
    _job(queue, "20-no-limit", "true", seconds=None)
    for command in ("list", "run"):
        done = _queue(tmp_path, command)
        assert done.returncode == 2
        assert "20-no-limit.sh: no '# seconds: N' line" in done.stderr
    assert not (tmp_path / "ran").exists()


def test_list_and_prepare_show_and_run_each_jobs_prepare_line(tmp_path) -> None:
    queue = tmp_path / "queue"
    queue.mkdir()
    _job(queue, "10-a", "true", seconds=100, needs="H200",
         prepare=f"echo a >> {tmp_path}/prepared")  # fmt: skip
    _job(queue, "20-b", "true", seconds=50, prepare="exit 4")
    _job(queue, "30-c", "true", seconds=20, prepare=f"echo c >> {tmp_path}/prepared")
    listed = _queue(tmp_path, "list")
    assert listed.returncode == 0, listed.stderr
    rows = listed.stdout.splitlines()
    assert rows[1].split()[:3] == ["10-a", "100", "H200"]
    assert rows[-1].startswith("total: 170 s")
    prepared = _queue(tmp_path, "prepare")
    # a failing prepare line is named, and the others still run
    assert prepared.returncode == 1
    assert "20-b.sh: prepare failed" in prepared.stderr
    assert (tmp_path / "prepared").read_text() == "a\nc\n"


def test_collect_files_what_ran_and_leaves_only_unfinished_jobs_queued(tmp_path) -> None:
    queue = tmp_path / "queue"
    queue.mkdir()
    _job(queue, "10-h200-only", "true", needs="H200")
    _job(queue, "20-fails", 'echo partial > "$JOB_OUT/r.txt"; exit 3')
    _job(queue, "30-ok", 'echo figures > "$JOB_OUT/r.txt"')
    assert _queue(tmp_path, "run").returncode == 0
    dest = tmp_path / "results" / "h100_s43"
    done = _queue(tmp_path, "collect", args=[str(tmp_path / "out"), str(dest)])
    assert done.returncode == 0, done.stderr
    # the finished job left the queue with its results; the failed one's results are kept as
    # a record and it stays queued; the skipped one is untouched
    assert sorted(p.name for p in queue.iterdir()) == ["10-h200-only.sh", "20-fails.sh"]
    assert (dest / "30-ok" / "r.txt").read_text() == "figures\n"
    assert (dest / "30-ok" / "job.sh").read_text().startswith("#!/usr/bin/env bash")
    assert (dest / "20-fails" / "r.txt").read_text() == "partial\n"
    assert not (dest / "10-h200-only").exists()
    assert "30-ok: ok" in (dest / "queue.txt").read_text()
    # a DEST that holds a call's records already is refused before anything moves
    before = (dest / "queue.txt").read_text()
    _job(queue, "40-next", 'echo more > "$JOB_OUT/r.txt"')
    assert _queue(tmp_path, "run").returncode == 0
    again = _queue(tmp_path, "collect", args=[str(tmp_path / "out"), str(dest)])
    assert again.returncode == 1 and "not replacing" in again.stderr
    assert (dest / "queue.txt").read_text() == before
    assert (dest / "30-ok" / "r.txt").read_text() == "figures\n"
    assert not (dest / "40-next").exists() and (queue / "40-next.sh").exists()


def test_collect_names_a_folder_without_the_calls_files(tmp_path) -> None:
    (tmp_path / "queue").mkdir()
    done = _queue(tmp_path, "collect", args=[str(tmp_path / "nothing"), str(tmp_path / "d")])
    assert done.returncode == 2
    assert "nothing has no queue.txt and queue.tgz" in done.stderr
    assert not (tmp_path / "d").exists()


def test_collect_names_a_broken_archive_and_moves_nothing(tmp_path) -> None:
    queue = tmp_path / "queue"
    queue.mkdir()
    _job(queue, "10-ok", "true")
    assert _queue(tmp_path, "run").returncode == 0
    (tmp_path / "out" / "queue.tgz").write_bytes(b"cut short")
    done = _queue(tmp_path, "collect", args=[str(tmp_path / "out"), str(tmp_path / "d")])
    assert done.returncode == 1
    assert "queue.tgz cannot be unpacked" in done.stderr
    assert (queue / "10-ok.sh").exists() and not (tmp_path / "d").exists()


def test_run_without_out_says_so(tmp_path) -> None:
    (tmp_path / "queue").mkdir()
    env = os.environ | {"QUEUE_DIR": str(tmp_path / "queue"), "QUEUE_SETUP": "0"}
    env.pop("OUT", None)
    done = subprocess.run(
        ["bash", str(QUEUE), "run"], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode != 0
    assert "OUT (where results go back) is not set" in done.stderr


def test_the_queued_jobs_are_well_formed() -> None:
    """The repository's own queue lists cleanly, so a device call will not stop at its header."""
    done = subprocess.run(["bash", str(QUEUE), "list"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
