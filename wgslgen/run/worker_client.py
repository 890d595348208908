"""The parent's side of the device worker: start it, send jobs under deadlines, replace it.

A runaway shader can hang or kill the process that submitted it, so the device lives in a
child (``python -m wgslgen.run.worker``) and the parent never imports wgpu. Jobs go over the
child's stdin and replies come back on a private copy of its stdout (``run.protocol``); on a
timeout or a crash the client kills the child and starts a fresh one for the next job.
"""

from __future__ import annotations

import os
import pickle
import select
import subprocess
import sys
import time
import weakref
from typing import Any

from wgslgen.children import Child, python_env
from wgslgen.errors import WgslgenError
from wgslgen.run.protocol import HEADER, Hello, Job, Reply, encode

STARTUP_TIMEOUT_S = 120.0


class WorkerFailure(WgslgenError):
    """The worker did not answer a job: ``kind`` is "timeout" or "crash"."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class WorkerClient:
    """Starts, feeds and (on a deadline or crash) replaces one worker process."""

    module = "wgslgen.run.worker"  # what ``python -m`` runs (tests point it at a faulty one)

    def __init__(self, adapter: str | None = None, startup_timeout: float = STARTUP_TIMEOUT_S):
        self.adapter = adapter
        self.startup_timeout = startup_timeout
        self.child: Child | None = None
        self.info = Hello(ok=False)
        self.restarts = 0

    @property
    def proc(self) -> subprocess.Popen | None:
        """The worker process (None before the first start and after close)."""
        return self.child.proc if self.child is not None else None

    def start(self) -> Hello:
        """Start the worker if none runs; returns what it reports about its adapter."""
        if self.child is not None and self.child.alive():
            return self.info
        if self.child is not None:
            self.restarts += 1
            self.child.close()
        cmd = [sys.executable, "-m", self.module]
        if self.adapter:
            cmd += ["--adapter", self.adapter]
        self.child = Child(cmd, env=python_env())
        # A client dropped without close() (a Harness in a user's test, say) must not leave
        # its worker running until the interpreter exits.
        weakref.finalize(self, self.child.close)
        try:
            hello = self._receive(time.monotonic() + self.startup_timeout, "starting the worker")
        except WorkerFailure as exc:
            self._kill()
            raise WgslgenError(f"the device worker did not start: {exc}") from None
        if not isinstance(hello, Hello) or not hello.ok:
            self.close()
            why = getattr(hello, "error", "") or "the device worker failed to start"
            raise WgslgenError(why, option=getattr(hello, "option", None))
        self.info = hello
        return hello

    def call(self, job: Job, timeout: float) -> Reply:
        """Send ``job`` and wait at most ``timeout`` s; WorkerFailure when it hangs or dies."""
        self.start()
        deadline = time.monotonic() + timeout
        what = f"{job.kind} {job.label}".strip()
        try:
            self._send(encode(job), deadline, what)
            return self._receive(deadline, what)
        except WorkerFailure:
            self._kill()
            raise

    def close(self) -> None:
        """Stop the worker (politely: closing its stdin ends its loop)."""
        if self.child is not None:
            self.child.close()
        self.child = None

    def _kill(self) -> None:
        # SIGKILL: a shader stuck on lavapipe ignores anything gentler
        if self.child is not None:
            self.child.kill()

    def _stderr_tail(self, limit: int = 2000) -> str:
        return self.child.stderr_tail(limit) if self.child is not None else ""

    def _died(self, what: str) -> WorkerFailure:
        assert self.proc is not None
        code = self.proc.wait()
        how = f"signal {-code}" if code < 0 else f"exit status {code}"
        tail = self._stderr_tail()
        return WorkerFailure(
            "crash",
            f"worker died ({how}) during {what}" + (f"; its stderr ends:\n{tail}" if tail else ""),
        )

    def _send(self, data: bytes, deadline: float, what: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        fd = self.proc.stdin.fileno()
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                raise WorkerFailure("timeout", f"worker stopped reading during {what}")
            try:
                written = os.write(fd, view[: 1 << 16])
            except (BrokenPipeError, OSError):
                raise self._died(what) from None
            view = view[written:]

    def _receive(self, deadline: float, what: str) -> Any:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        header = self._read(fd, HEADER.size, deadline, what)
        return pickle.loads(self._read(fd, HEADER.unpack(header)[0], deadline, what))

    def _read(self, fd: int, n: int, deadline: float, what: str) -> bytes:
        chunks, left = [], n
        while left:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise WorkerFailure("timeout", f"no answer within the deadline during {what}")
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                raise self._died(what)
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
