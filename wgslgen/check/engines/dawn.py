"""Dawn/Tint (the compiler inside Chrome) through wgpudawn, in a worker subprocess."""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import queue
import subprocess
import sys
import threading
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from wgslgen.check.engines.base import (
    ShaderInput,
    Verdict,
    contiguous_shares,
    engine_failure,
    failure,
)
from wgslgen.children import Child, kill_group, python_env

INSTALL_HINT = "pip install 'wgslgen[dawn]' (the wgpudawn package)"
# Fewest shaders per worker process: a worker's start-up (about 0.5 s) buys this many.
_SHADERS_PER_WORKER = 64


class _Worker:
    """One running dawn_worker process with a reader thread feeding a queue of reply lines."""

    def __init__(self, argv: Sequence[str], startup_timeout: float) -> None:
        self.child = Child(argv, env=python_env({"WGPU_BACKEND_TYPE": "Null"}), text=True)
        self.proc, self.stderr = self.child.proc, self.child.stderr
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        _LIVE.add(self)
        try:
            hello = self.reply(startup_timeout)
        except (queue.Empty, ValueError):
            self.close()
            raise RuntimeError(f"worker did not start within {startup_timeout:g} s") from None
        if not isinstance(hello, dict) or not hello.get("ready"):
            why = hello.get("error") if isinstance(hello, dict) else None
            if not why:
                last = (self.stderr_tail().strip().splitlines() or [""])[-1]
                why = f"{self.death()}: {last}" if last else self.death()
            self.close()
            raise RuntimeError(why)
        self.version = str(hello.get("version", "wgpudawn"))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def reply(self, timeout: float) -> dict[str, Any] | None:
        """The next reply, or None when the worker died; raises queue.Empty on timeout."""
        line = self.lines.get(timeout=timeout)
        return None if line is None else json.loads(line)

    def send(self, request: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()

    def death(self) -> str:
        """Why the worker is gone, from its exit status."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        return f"worker exited with code {code}" if code is not None else "worker stopped answering"

    def stderr_tail(self, limit: int = 4000) -> str:
        self.stderr.flush()
        self.stderr.seek(0)
        text = self.stderr.read()
        lines = [ln for ln in text.splitlines() if not ln.startswith("Forcing backend")]
        return "\n".join(lines)[-limit:]

    def close(self) -> None:
        if self.proc.poll() is None:
            kill_group(self.proc)
        self.proc.wait()
        # The reader ends at EOF once the process is gone; closing stdout under it would not.
        self.reader.join(timeout=5)
        streams = [self.proc.stdin] + ([] if self.reader.is_alive() else [self.proc.stdout])
        for stream in streams:
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self.stderr.close()
        _LIVE.discard(self)


_LIVE: weakref.WeakSet[_Worker] = weakref.WeakSet()


def _send_all(worker: _Worker, shaders: Sequence[ShaderInput]) -> None:
    """Write one request per shader; stops quietly when the worker is gone."""
    for shader in shaders:
        request = {
            "id": shader.id,
            "source": shader.source,
            "features": sorted(shader.features),
            "limits": dict(shader.limits),
            "entry_point": shader.entry_point,
            "constants": dict(shader.constants),
        }
        try:
            worker.send(request)
        except (OSError, ValueError):  # broken pipe, or closed after a hang or crash
            return


@atexit.register
def _close_all() -> None:
    # Before interpreter finalization, while the reader threads can still run to EOF.
    for worker in list(_LIVE):
        worker.close()


class DawnEngine:
    """Validates with Dawn's Null backend (WebGPU default limits), never in wgpu-py's process."""

    name = "dawn"

    def __init__(
        self,
        *,
        timeout: float = 30.0,
        startup_timeout: float = 60.0,
        command: Sequence[str] | None = None,
        workers: int = 1,
    ) -> None:
        """``timeout`` is per shader; ``command`` replaces the worker's argv (fault injection);
        ``workers`` is how many worker processes share a validate() call's shaders."""
        self.timeout = timeout
        self.workers = workers
        self._helpers: list[DawnEngine] = []  # the other workers' engines, kept across calls
        self.startup_timeout = startup_timeout
        self.argv = (
            list(command)
            if command
            else [sys.executable, "-m", "wgslgen.check.engines.dawn_worker"]
        )
        self._worker: _Worker | None = None

    def _ensure(self) -> _Worker:
        if self._worker is None or self._worker.proc.poll() is not None:
            if self._worker is not None:
                self._worker.close()
            self._worker = None
            self._worker = _Worker(self.argv, self.startup_timeout)
        return self._worker

    def availability(self) -> str | None:
        """None when wgpudawn imports and Dawn's Null adapter answers, else why not."""
        if importlib.util.find_spec("wgpudawn") is None:
            return f"Dawn is not installed: {INSTALL_HINT}"
        try:
            self._ensure()
        except (RuntimeError, OSError) as e:
            return f"Dawn is not usable ({e}); {INSTALL_HINT}"
        return None

    def version(self) -> str:
        """E.g. 'wgpudawn 0.32.0.4 (Dawn 20261009.190412, Null backend)'."""
        try:
            return self._ensure().version
        except (RuntimeError, OSError):
            return "unavailable"

    def identity(self) -> str:
        """Which Dawn build answers, and the worker's command (verdicts are remembered by it)."""
        return f"{self.version()} | {' '.join(self.argv)}"

    def validate(self, shaders: list[ShaderInput]) -> list[Verdict]:
        """One verdict per shader, from ``workers`` worker processes when there are enough
        shaders for each to be worth its start-up, each taking a contiguous share."""
        shares = contiguous_shares(shaders, self.workers, _SHADERS_PER_WORKER)
        if len(shares) == 1:
            return self._validate_here(shaders)
        while len(self._helpers) < len(shares) - 1:
            self._helpers.append(
                DawnEngine(
                    timeout=self.timeout, startup_timeout=self.startup_timeout, command=self.argv
                )
            )
        engines = [self, *self._helpers][: len(shares)]
        with ThreadPoolExecutor(max_workers=len(shares)) as pool:
            parts = pool.map(lambda e, s: e._validate_here(s), engines, shares)
            return [v for part in parts for v in part]

    def _validate_here(self, shaders: list[ShaderInput]) -> list[Verdict]:
        """One verdict per shader; a hang or crash fails that shader and the worker restarts.

        Requests are written by a thread of their own while the replies are read here, so
        the worker never waits for this process between shaders; each shader still has
        ``timeout`` seconds from the previous reply (the worker answers in order).
        """
        out: list[Verdict] = []
        while len(out) < len(shaders):
            rest = shaders[len(out) :]
            try:
                worker = self._ensure()
            except (RuntimeError, OSError) as e:
                return out + engine_failure(self.name, rest, f"cannot start worker: {e}")
            writer = threading.Thread(target=_send_all, args=(worker, rest), daemon=True)
            writer.start()
            for shader in rest:
                verdict = self._answer(worker, shader)
                out.append(verdict)
                if self._worker is None:  # it hung or died: the rest go to a new worker
                    break
            writer.join(timeout=self.timeout)
        return out

    def _answer(self, worker: _Worker, shader: ShaderInput) -> Verdict:
        """The worker's next reply as the verdict of ``shader``."""
        try:
            answer = worker.reply(self.timeout)
        except queue.Empty:
            why, stderr = f"timed out after {self.timeout:g} s", worker.stderr_tail()
            self.close()
            return engine_failure(self.name, [shader], why, stderr)[0]
        except ValueError:  # a garbled reply
            answer = None
        if answer is None or answer.get("id") != shader.id:
            why, stderr = worker.death(), worker.stderr_tail()
            self.close()
            return engine_failure(self.name, [shader], why, stderr)[0]
        if answer.get("ok"):
            return Verdict(shader.id, self.name, True)
        return failure(
            self.name, shader.id, answer.get("message", ""), answer.get("diagnostic", "")
        )

    def close(self) -> None:
        """Stop the workers (a later validate() starts new ones)."""
        for helper in self._helpers:
            helper.close()
        self._helpers = []
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
