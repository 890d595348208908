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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])


def python_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for ``python -m wgslgen...`` children: ours, plus this package's root."""
    env = {**os.environ, **(extra or {})}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [PACKAGE_ROOT, env.get("PYTHONPATH")]))
    return env


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
        self.proc = subprocess.Popen(
            list(argv),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=None if env is None else dict(env),
            start_new_session=True,
            **({"text": True, "bufsize": 1, **encoding} if text else {}),
        )

    def alive(self) -> bool:
        """Whether the child still runs."""
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the child's whole group and reap it."""
        if self.alive():
            kill_group(self.proc)
        self.proc.wait()

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
    """Run ``argv`` to completion; kill its whole group when it overruns ``timeout`` s."""
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
    try:
        out, err = proc.communicate(input_text, timeout=timeout)
        return Completed(proc.returncode, out, err, False)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        return Completed(None, out or "", err or "", True)
