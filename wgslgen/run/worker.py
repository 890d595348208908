"""The worker process that owns a WebGPU device, and the parent's client that drives it.

A runaway shader can hang or kill the process that submitted it, so the device lives in a
child (``python -m wgslgen.worker``) and the parent never imports wgpu. The parent sends
jobs over the child's stdin and reads replies from a private copy of its stdout, each job
under a deadline; on a timeout or a crash it kills the child and starts a fresh one for the
next job. The child keeps one device per (features, limits) and one pipeline per device and
source, so set-up and shader compilation happen once per variant, not once per shape.

Frames are an 8-byte big-endian length and a pickle. Job kinds: ``run`` (upload, dispatch,
read back), ``bench`` (time the dispatch with :func:`wgslgen.bench.measure`), ``ping`` and
``abort`` (a fault injected on purpose, for tests of crash recovery).
"""

from __future__ import annotations

import argparse
import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, BinaryIO

from wgslgen.errors import WgslgenError

_HEADER = struct.Struct(">Q")
_PIPELINE_CACHE = 256  # compiled pipelines kept per worker (each holds LLVM code on lavapipe)
STARTUP_TIMEOUT_S = 120.0


class WorkerFailure(WgslgenError):
    """The worker did not answer a job: ``kind`` is "timeout" or "crash"."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# ---------------------------------------------------------------- framing (both sides)


def _encode(obj: Any) -> bytes:
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(payload)) + payload


def _read_exact(stream: BinaryIO, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# ---------------------------------------------------------------- parent side


class WorkerClient:
    """Starts, feeds and (on a deadline or crash) replaces one worker process."""

    module = "wgslgen.run.worker"  # what ``python -m`` runs; a subclass may name an extended worker

    def __init__(self, adapter: str | None = None, startup_timeout: float = STARTUP_TIMEOUT_S):
        self.adapter = adapter
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.info: dict[str, Any] = {}
        self.restarts = 0
        self._stderr: Any = None

    def start(self) -> dict[str, Any]:
        """Start the worker if none runs; returns what it reports about its adapter."""
        if self.proc is not None and self.proc.poll() is None:
            return self.info
        if self.proc is not None:
            self.restarts += 1
        if self._stderr is not None:
            self._stderr.close()
        # A file, not a pipe: a chatty driver can never block on a full pipe.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        root = str(Path(__file__).resolve().parents[2])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p),
        }
        cmd = [sys.executable, "-m", self.module]
        if self.adapter:
            cmd += ["--adapter", self.adapter]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            start_new_session=True,  # a Ctrl-C in the terminal reaches the parent only
        )
        try:
            hello = self._receive(time.monotonic() + self.startup_timeout, "starting the worker")
        except WorkerFailure as exc:
            self._kill()
            raise WgslgenError(f"the device worker did not start: {exc}") from None
        if not hello.get("ok"):
            self.close()
            raise WgslgenError(hello.get("error", "the device worker failed to start"))
        self.info = hello
        return hello

    def call(self, job: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``job`` and wait at most ``timeout`` s; WorkerFailure when it hangs or dies."""
        self.start()
        deadline = time.monotonic() + timeout
        what = f"{job.get('kind')} {job.get('label', '')}".strip()
        try:
            self._send(_encode(job), deadline, what)
            return self._receive(deadline, what)
        except WorkerFailure:
            self._kill()
            raise

    def close(self) -> None:
        """Stop the worker (politely: closing its stdin ends its loop)."""
        if self.proc is None:
            return
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self._kill()
        self.proc = None

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()  # SIGKILL: a shader stuck on lavapipe ignores anything gentler
            self.proc.wait()

    def _stderr_tail(self, limit: int = 2000) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - limit))
        return self._stderr.read().decode("utf-8", "replace").strip()

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

    def _receive(self, deadline: float, what: str) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        header = self._read(fd, _HEADER.size, deadline, what)
        return pickle.loads(self._read(fd, _HEADER.unpack(header)[0], deadline, what))

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


# ---------------------------------------------------------------- worker side


class Runner:
    """What the worker process holds: the adapter, devices and compiled pipelines."""

    def __init__(self, selector: str | None) -> None:
        import wgpu

        from wgslgen.run.device import choose_adapter

        self.wgpu = wgpu
        self.adapter = choose_adapter(selector)
        self.devices: dict[tuple[Any, ...], Any] = {}
        self.pipelines: OrderedDict[tuple[Any, ...], tuple[Any, list[Any]]] = OrderedDict()
        self.compiles = 0  # pipelines built so far; replies carry it, so caching is visible

    def describe(self) -> dict[str, Any]:
        """Adapter facts for the parent: label, results key, limits and features."""
        from dataclasses import asdict

        from wgslgen.run.device import describe_adapter, device_key

        return {
            "label": describe_adapter(self.adapter),
            "key": asdict(device_key(self.adapter)),
            "limits": {k: int(v) for k, v in self.adapter.limits.items() if isinstance(v, int)},
            "features": sorted(str(f) for f in self.adapter.features),
            "pid": os.getpid(),
        }

    def device(self, job: dict[str, Any]) -> tuple[tuple[Any, ...], Any]:
        """The cached device for the job's features and limits (created on first use)."""
        from wgslgen.run.device import create_device

        key = (tuple(sorted(job["features"])), tuple(sorted(job["limits"].items())))
        if key not in self.devices:
            self.devices[key] = create_device(self.adapter, job["features"], job["limits"])
        return key, self.devices[key]

    def forget(self, dev_key: tuple[Any, ...]) -> None:
        """Drop a device that failed mid-run (it may be lost) and the pipelines made on it."""
        self.devices.pop(dev_key, None)
        for key in [k for k in self.pipelines if k[0] == dev_key]:
            del self.pipelines[key]

    def pipeline(self, dev_key: tuple[Any, ...], device: Any, job: dict[str, Any]):
        """The compute pipeline and bind group layouts for the job's source and bindings."""
        layout_key = tuple((b["group"], b["binding"], b["type"]) for b in job["bindings"])
        entries = tuple(p["entry_point"] for p in job["passes"])
        key = (dev_key, job["sha256"], entries, layout_key)
        if key in self.pipelines:
            self.pipelines.move_to_end(key)
            return self.pipelines[key]
        wgpu = self.wgpu
        groups = max((b["group"] for b in job["bindings"]), default=-1) + 1
        # Layouts come from the declared interface, not from "auto": a kernel whose bindings
        # disagree with its interface fails here, with wgpu naming the binding.
        layouts = [
            device.create_bind_group_layout(
                entries=[
                    {
                        "binding": b["binding"],
                        "visibility": wgpu.ShaderStage.COMPUTE,
                        "buffer": {"type": b["type"]},
                    }
                    for b in job["bindings"]
                    if b["group"] == g
                ]
            )
            for g in range(groups)
        ]
        module = device.create_shader_module(code=job["source"])
        pipeline_layout = device.create_pipeline_layout(bind_group_layouts=layouts)
        # One pipeline per pass; they share the module and the layout of the interface.
        pipe = [
            device.create_compute_pipeline(
                layout=pipeline_layout, compute={"module": module, "entry_point": entry}
            )
            for entry in entries
        ]
        self.pipelines[key] = (pipe, layouts)
        self.compiles += 1
        while len(self.pipelines) > _PIPELINE_CACHE:
            self.pipelines.popitem(last=False)
        return pipe, layouts

    def handle(self, job: dict[str, Any]) -> dict[str, Any]:
        """Run one job and build its reply."""
        kind = job.get("kind")
        if kind == "ping":
            return {"ok": True}
        if kind == "abort":  # an injected fault, so tests can see a crash recovered
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file for it
            os.abort()
        if kind not in ("run", "bench"):
            return {"ok": False, "stage": "job", "error": f"unknown job kind {kind!r}"}
        times: dict[str, float] = {}
        t0 = time.perf_counter()
        dev_key: tuple[Any, ...] | None = None
        try:
            dev_key, device = self.device(job)
            times["device_s"] = time.perf_counter() - t0
            pipe, layouts = self.pipeline(dev_key, device, job)
            times["pipeline_s"] = time.perf_counter() - t0 - times["device_s"]
        except Exception as exc:
            # A shader the compiler rejects leaves the device fine; anything else (a lost
            # device) must not poison the jobs after it.
            if dev_key is not None and not isinstance(exc, self.wgpu.GPUValidationError):
                self.forget(dev_key)
            return {"ok": False, "stage": "pipeline", "error": _message(exc), "times": times}
        t1 = time.perf_counter()
        try:
            reply = (
                self._run(device, pipe, layouts, job)
                if kind == "run"
                else self._bench(device, pipe, layouts, job)
            )
        except Exception as exc:
            self.forget(dev_key)
            return {"ok": False, "stage": kind, "error": _message(exc), "times": times}
        times[f"{kind}_s"] = time.perf_counter() - t1
        return {"ok": True, **reply, "times": times, "compiles": self.compiles}

    def _bind(self, device: Any, layouts: list[Any], job: dict[str, Any]):
        usage = self.wgpu.BufferUsage
        buffers, entries = {}, [[] for _ in layouts]
        for b in job["bindings"]:
            flags = usage.UNIFORM if b["type"] == "uniform" else usage.STORAGE
            if b.get("read_back"):
                flags |= usage.COPY_SRC
            buf = device.create_buffer_with_data(data=b["data"], usage=flags)
            buffers[(b["group"], b["binding"])] = buf
            entries[b["group"]].append({"binding": b["binding"], "resource": {"buffer": buf}})
        groups = [
            device.create_bind_group(layout=lay, entries=ent)
            for lay, ent in zip(layouts, entries, strict=True)
        ]
        return buffers, groups

    def _record(self, pipes: list[Any], groups: list[Any], passes: list[dict[str, Any]]):
        """A recorder of every pass in order; WebGPU makes a dispatch's writes visible to
        the next dispatch of the same compute pass."""

        def record(pass_encoder: Any) -> None:
            for i, group in enumerate(groups):
                pass_encoder.set_bind_group(i, group)
            for pipe, p in zip(pipes, passes, strict=True):
                pass_encoder.set_pipeline(pipe)
                pass_encoder.dispatch_workgroups(*p["dispatch"])

        return record

    def _run(self, device: Any, pipe: Any, layouts: list[Any], job: dict[str, Any]):
        buffers, groups = self._bind(device, layouts, job)
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        self._record(pipe, groups, job["passes"])(compute)
        compute.end()
        device.queue.submit([encoder.finish()])
        outputs = {
            (b["group"], b["binding"]): bytes(
                device.queue.read_buffer(buffers[(b["group"], b["binding"])])
            )
            for b in job["bindings"]
            if b.get("read_back")
        }
        release(buffers.values())
        return {"outputs": outputs}

    def _bench(self, device: Any, pipe: Any, layouts: list[Any], job: dict[str, Any]):
        from wgslgen.tune.bench import measure

        buffers, groups = self._bind(device, layouts, job)
        record = self._record(pipe, groups, job["passes"])
        try:
            return {"measurement": measure(device, record, **job.get("options", {})).to_dict()}
        finally:
            release(buffers.values())


def release(resources: Any) -> None:
    """Destroy GPU resources now: left to the garbage collector, a long-lived worker's
    jobs were seen to slow down the jobs after them (4x over 36 variants on an H200)."""
    for resource in resources:
        resource.destroy()


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def main(argv: list[str] | None = None, runner_class: type[Runner] | None = None) -> int:
    """The worker's loop: answer jobs from stdin until it closes (``runner_class`` answers)."""
    parser = argparse.ArgumentParser(prog="python -m wgslgen.worker")
    parser.add_argument("--adapter", default=None)
    args = parser.parse_args(argv)
    # The protocol gets a private copy of stdout; fd 1 becomes stderr, so whatever the driver
    # or a reference prints cannot corrupt a frame.
    channel = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    source = sys.stdin.buffer

    def send(obj: dict[str, Any]) -> None:
        channel.write(_encode(obj))

    try:
        runner = (runner_class or Runner)(args.adapter)
        send({"ok": True, **runner.describe()})
    except Exception as exc:
        send({"ok": False, "error": str(exc)})
        return 1
    while True:
        header = _read_exact(source, _HEADER.size)
        if header is None:
            return 0
        payload = _read_exact(source, _HEADER.unpack(header)[0])
        if payload is None:
            return 0
        try:
            reply = runner.handle(pickle.loads(payload))
        except Exception as exc:
            reply = {"ok": False, "stage": "worker", "error": _message(exc)}
        send(reply)


if __name__ == "__main__":
    sys.exit(main())
