"""Ctrl-C during `validate` ends it at once with exit 130: child processes run in sessions of
their own (the terminal's SIGINT never reaches them), so the parent ends them; forked render
workers ignore SIGINT (one stopped inside the pool's queue lock hung the parent at exit); and
the main thread wakes often enough to see a Ctrl-C the kernel handed to another thread (it
used to wait for the naga, wgpu and Dawn work to finish: 18-38 s, or forever)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wgslgen.children import python_env


@pytest.mark.parametrize("after_s", [1.0, 3.0, 5.0])
def test_ctrl_c_ends_validate_within_seconds(tmp_path: Path, after_s: float) -> None:
    env = python_env({"WGSLGEN_RENDER_JOBS": "4", "WGSLGEN_CACHE_DIR": str(tmp_path / "cache")})
    proc = subprocess.Popen(
        [sys.executable, "-m", "wgslgen", "validate", "--no-cache"],
        cwd=tmp_path,  # outside any project: the bundled library, hundreds of renderings
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # a child of a background job may start with SIGINT ignored: give it the default
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(after_s)
    assert proc.poll() is None, "validate ended before the interrupt: nothing tested"
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"validate still ran 15 s after Ctrl-C (sent {after_s} s in)")
    assert proc.returncode == 130, err
    assert time.monotonic() - sent < 5, "Ctrl-C took more than 5 s to end validate"
    assert "interrupted; everything already written is kept" in err
    assert "Traceback" not in err


def test_an_interrupt_ends_the_children_threads_wait_on_and_later_runs_start_again() -> None:
    from wgslgen import children

    def interrupted() -> None:
        time.sleep(0.3)  # the child has started
        raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        children.in_threads([lambda: children.run_process(["sleep", "30"], 60)], interrupted)
    assert time.monotonic() - started < 5  # not the child's 30 s
    assert children.run_process(["true"], 10).returncode == 0  # not refused for good
