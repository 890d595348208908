"""Child processes, started and ended one way: the device worker, Dawn's worker, naga.

Every child runs in its own session (a Ctrl-C in the terminal reaches the parent only, and a
kill reaches grandchildren too), writes stderr to a file (a chatty driver can never block on
a full pipe), and finds this package on PYTHONPATH when it is a Python module of ours.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])
T = TypeVar("T")


def python_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for ``python -m wgslgen...`` children: ours, plus this package's root."""
    env = {**os.environ, **(extra or {})}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [PACKAGE_ROOT, env.get("PYTHONPATH")]))
    return env


# Children run in sessions of their own, so a Ctrl-C never reaches them: the parent that
# catches it ends them (stop_children), or threads waiting on them would keep it alive.
_stopping = threading.Event()
_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()


def stop_children() -> None:
    """Kill every child this process started that still runs, and refuse new ones until
    resume_children(): threads waiting on them then end at once (a Ctrl-C)."""
    _stopping.set()
    with _live_lock:
        running = list(_live)
    for proc in running:
        kill_group(proc)


def resume_children() -> None:
    """Allow children again (once the threads that waited on the stopped ones have ended)."""
    _stopping.clear()


def stopping() -> bool:
    """Whether stop_children() was called: work in threads gives up instead of going on."""
    return _stopping.is_set()


def in_threads(calls: Sequence[Callable[[], T]], meanwhile: Callable[[], object]) -> list[T]:
    """Each call's result, the calls run in threads of their own while ``meanwhile`` runs in
    this one. A Ctrl-C here ends the children they wait on (stop_children), so the threads
    end at once instead of after their work."""
    resume_children()
    try:
        with ThreadPoolExecutor(max_workers=max(1, len(calls))) as pool:
            try:
                running = [pool.submit(call) for call in calls]
                meanwhile()
                return [result_of(future) for future in running]
            except BaseException:
                stop_children()
                raise
    finally:  # the threads have ended: later work in this process may start children again
        resume_children()


def result_of(future: Future[T]) -> T:
    """``future.result()``, waking up often: a Ctrl-C that the kernel hands to another thread
    is raised in the main thread only when it wakes, and a plain wait may last minutes."""
    while True:
        try:
            return future.result(timeout=0.1)
        except FutureTimeout:
            continue


def _started(proc: subprocess.Popen) -> subprocess.Popen:
    with _live_lock:
        _live.add(proc)
    if _stopping.is_set():  # started while stop_children() ran: ended like the others
        kill_group(proc)
        _ended(proc)
        raise KeyboardInterrupt
    return proc


def _ended(proc: subprocess.Popen) -> None:
    with _live_lock:
        _live.discard(proc)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a child started here, and its children."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


class Child:
    """A long-lived child with pipes on stdin/stdout and stderr kept in a file."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        text: bool = False,
        stdin: Any = subprocess.PIPE,
    ) -> None:
        mode = "w+" if text else "w+b"
        encoding = {"encoding": "utf-8", "errors": "replace"} if text else {}
        self.stderr: IO[Any] = tempfile.TemporaryFile(mode, **encoding)  # noqa: SIM115
        self.proc = _started(
            subprocess.Popen(
                list(argv),
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                env=None if env is None else dict(env),
                start_new_session=True,
                **({"text": True, "bufsize": 1, **encoding} if text else {}),
            )
        )

    def alive(self) -> bool:
        """Whether the child still runs."""
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the child's whole group and reap it."""
        if self.alive():
            kill_group(self.proc)
        self.proc.wait()
        _ended(self.proc)

    def stderr_tail(self, limit: int = 2000) -> str:
        """The last ``limit`` characters the child wrote to stderr."""
        self.stderr.seek(0, os.SEEK_END)
        size = self.stderr.tell()
        self.stderr.seek(max(0, size - limit))
        data = self.stderr.read()
        return (data.decode("utf-8", "replace") if isinstance(data, bytes) else data).strip()

    def close(self, grace: float = 5.0) -> None:
        """End the child politely (stdin closed), by force after ``grace`` seconds."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=grace)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
        _ended(self.proc)
        self.stderr.close()


@dataclass
class Completed:
    """What a subprocess did: exit code (None on timeout), its output, and whether it timed out."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool


def run_process(
    argv: Sequence[str],
    timeout: float,
    env: Mapping[str, str] | None = None,
    input_text: str | None = None,
) -> Completed:
    """Run ``argv`` to completion; kill its whole group when it overruns ``timeout`` s.
    After stop_children() it raises KeyboardInterrupt: its output would be a killed child's."""
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=None if env is None else dict(env),
        start_new_session=True,
    )
    _started(proc)
    try:
        out, err = proc.communicate(input_text, timeout=timeout)
        done = Completed(proc.returncode, out, err, False)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        done = Completed(None, out or "", err or "", True)
    finally:
        _ended(proc)
    if _stopping.is_set():
        raise KeyboardInterrupt
    return done
