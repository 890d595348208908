"""The worker process that owns a WebGPU device and answers jobs (``python -m wgslgen.run.worker``).

It keeps one device per (features, limits) and one pipeline per device and source, so set-up
and shader compilation happen once per variant, not once per shape. Each job kind has one
handler (``Runner.HANDLERS``); the jobs and replies are the dataclasses of ``run.protocol``.
The parent's side is ``run.worker_client``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar

from wgslgen.check.source_guards import wgpu_nesting_refusal
from wgslgen.run.protocol import (
    BufferBinding,
    DispatchJob,
    HeadToHeadJob,
    Hello,
    JobKind,
    PassDispatch,
    Reply,
    Stage,
    encode,
    read_frame,
)

_PIPELINE_CACHE = 256  # compiled pipelines kept per worker (each holds LLVM code on lavapipe)


class ShaderRefused(Exception):
    """A source the worker does not hand to wgpu's compiler, and why (the device is fine)."""


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

    def describe(self) -> Hello:
        """Adapter facts for the parent: label, results key, limits and features."""
        from dataclasses import asdict

        from wgslgen.run.device import describe_adapter, device_key

        return Hello(
            ok=True,
            label=describe_adapter(self.adapter),
            key=asdict(device_key(self.adapter)),
            limits={k: int(v) for k, v in self.adapter.limits.items() if isinstance(v, int)},
            features=tuple(sorted(str(f) for f in self.adapter.features)),
            pid=os.getpid(),
        )

    def device(
        self, features: tuple[str, ...], limits: dict[str, int]
    ) -> tuple[tuple[Any, ...], Any]:
        """The cached device for these features and limits (created on first use)."""
        from wgslgen.run.device import create_device

        key = (tuple(sorted(features)), tuple(sorted(limits.items())))
        if key not in self.devices:
            self.devices[key] = create_device(self.adapter, list(features), limits)
        return key, self.devices[key]

    def forget(self, dev_key: tuple[Any, ...]) -> None:
        """Drop a device that failed mid-run (it may be lost) and the pipelines made on it."""
        self.devices.pop(dev_key, None)
        for key in [k for k in self.pipelines if k[0] == dev_key]:
            del self.pipelines[key]

    def pipeline(self, dev_key: tuple[Any, ...], device: Any, job: DispatchJob):
        """The compute pipelines (one per pass) and bind group layouts of the job."""
        layout_key = tuple((b.group, b.binding, b.type) for b in job.bindings)
        entries = tuple(p.entry_point for p in job.passes)
        constants = dict(job.constants)
        key = (dev_key, job.sha256, entries, layout_key, tuple(sorted(constants.items())))
        if key in self.pipelines:
            self.pipelines.move_to_end(key)
            return self.pipelines[key]
        # wgpu-native's parser overflows the stack on deep nesting and kills the process: the
        # same guard as validate's, so the case gets a reason instead of "worker died".
        refusal = wgpu_nesting_refusal(job.source)
        if refusal:
            raise ShaderRefused(refusal)
        layouts = self._layouts(device, job.bindings)
        module = device.create_shader_module(code=job.source)
        pipeline_layout = device.create_pipeline_layout(bind_group_layouts=layouts)
        # One pipeline per pass; they share the module, the layout of the interface and the
        # override values (wgpu-py takes any number and hands WebGPU a double).
        stage: dict[str, Any] = {"module": module}
        if constants:
            stage["constants"] = constants
        pipe = [
            device.create_compute_pipeline(
                layout=pipeline_layout, compute={**stage, "entry_point": entry}
            )
            for entry in entries
        ]
        self.pipelines[key] = (pipe, layouts)
        self.compiles += 1
        while len(self.pipelines) > _PIPELINE_CACHE:
            self.pipelines.popitem(last=False)
        return pipe, layouts

    def _layouts(self, device: Any, bindings: tuple[BufferBinding, ...]) -> list[Any]:
        # Layouts come from the declared interface, not from "auto": a kernel whose bindings
        # disagree with its interface fails here, with wgpu naming the binding.
        groups = max((b.group for b in bindings), default=-1) + 1
        compute = self.wgpu.ShaderStage.COMPUTE
        return [
            device.create_bind_group_layout(
                entries=[
                    {"binding": b.binding, "visibility": compute, "buffer": {"type": b.type}}
                    for b in bindings
                    if b.group == g
                ]
            )
            for g in range(groups)
        ]

    def handle(self, job: Any) -> Reply:
        """Answer one job with the handler of its kind."""
        handler = self.HANDLERS.get(getattr(job, "kind", None))
        if handler is None:
            return Reply.failure(Stage.JOB, f"unknown job {type(job).__name__}")
        return handler(self, job)

    def _ping(self, job: Any) -> Reply:
        return Reply(ok=True)

    def _dispatch(self, job: DispatchJob) -> Reply:
        times: dict[str, float] = {}
        t0 = time.perf_counter()
        dev_key: tuple[Any, ...] | None = None
        try:
            dev_key, device = self.device(job.features, job.limits)
            times["device_s"] = time.perf_counter() - t0
            pipe, layouts = self.pipeline(dev_key, device, job)
            times["pipeline_s"] = time.perf_counter() - t0 - times["device_s"]
        except Exception as exc:
            # A shader the compiler rejects leaves the device fine; anything else (a lost
            # device) must not poison the jobs after it.
            if dev_key is not None and not isinstance(
                exc, (self.wgpu.GPUValidationError, ShaderRefused)
            ):
                self.forget(dev_key)
            return Reply.failure(Stage.PIPELINE, _message(exc), times=times)
        t1 = time.perf_counter()
        try:
            if job.kind == JobKind.RUN:
                result = {"outputs": self._run(device, pipe, layouts, job)}
            else:
                result = {"measurement": self._bench(device, pipe, layouts, job)}
        except Exception as exc:
            self.forget(dev_key)
            return Reply.failure(Stage(job.kind.value), _message(exc), times=times)
        times[f"{job.kind}_s"] = time.perf_counter() - t1
        return Reply(ok=True, times=times, compiles=self.compiles, **result)

    def _head_to_head(self, job: HeadToHeadJob) -> Reply:
        """Finalists timed in strict alternation on one device, so drift hits them alike."""
        from wgslgen.tune.bench import head_to_head

        t0 = time.perf_counter()
        subs = list(job.finalists.values())
        features = tuple(sorted(set().union(*(j.features for j in subs))))
        buffers: list[Any] = []
        try:
            dev_key, device = self.device(features, subs[0].limits)
            records = {}
            for name, sub in job.finalists.items():
                pipe, layouts = self.pipeline(dev_key, device, sub)
                bound, groups = self._bind(device, layouts, sub)
                buffers += bound.values()
                records[name] = self._record(pipe, groups, sub.passes)
        except Exception as exc:
            release(buffers)
            return Reply.failure(Stage.PIPELINE, _message(exc))
        t1 = time.perf_counter()
        try:
            results = head_to_head(device, records, **job.options)
        except Exception as exc:
            self.forget(dev_key)
            return Reply.failure(Stage.HEAD_TO_HEAD, _message(exc))
        finally:
            release(buffers)
        times = {"setup_s": t1 - t0, "head_to_head_s": time.perf_counter() - t1}
        return Reply(ok=True, results={n: m.to_dict() for n, m in results.items()}, times=times)

    HANDLERS: ClassVar[dict[JobKind, Callable[..., Reply]]] = {
        JobKind.PING: _ping,
        JobKind.RUN: _dispatch,
        JobKind.BENCH: _dispatch,
        JobKind.HEAD_TO_HEAD: _head_to_head,
    }

    def _bind(self, device: Any, layouts: list[Any], job: DispatchJob):
        usage = self.wgpu.BufferUsage
        buffers, entries = {}, [[] for _ in layouts]
        for b in job.bindings:
            flags = usage.UNIFORM if b.type == "uniform" else usage.STORAGE
            if b.read_back:
                flags |= usage.COPY_SRC
            buf = device.create_buffer_with_data(data=b.data, usage=flags)
            buffers[(b.group, b.binding)] = buf
            entries[b.group].append({"binding": b.binding, "resource": {"buffer": buf}})
        groups = [
            device.create_bind_group(layout=lay, entries=ent)
            for lay, ent in zip(layouts, entries, strict=True)
        ]
        return buffers, groups

    def _record(self, pipes: list[Any], groups: list[Any], passes: tuple[PassDispatch, ...]):
        """A recorder of every pass in order; WebGPU makes a dispatch's writes visible to
        the next dispatch of the same compute pass."""

        def record(pass_encoder: Any) -> None:
            for i, group in enumerate(groups):
                pass_encoder.set_bind_group(i, group)
            for pipe, p in zip(pipes, passes, strict=True):
                pass_encoder.set_pipeline(pipe)
                pass_encoder.dispatch_workgroups(*p.dispatch)

        return record

    def _run(self, device: Any, pipe: Any, layouts: list[Any], job: DispatchJob):
        buffers, groups = self._bind(device, layouts, job)
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        self._record(pipe, groups, job.passes)(compute)
        compute.end()
        device.queue.submit([encoder.finish()])
        outputs = {
            (b.group, b.binding): bytes(device.queue.read_buffer(buffers[(b.group, b.binding)]))
            for b in job.bindings
            if b.read_back
        }
        release(buffers.values())
        return outputs

    def _bench(self, device: Any, pipe: Any, layouts: list[Any], job: DispatchJob):
        from wgslgen.tune.bench import measure

        buffers, groups = self._bind(device, layouts, job)
        record = self._record(pipe, groups, job.passes)
        try:
            return measure(device, record, **job.options).to_dict()
        finally:
            release(buffers.values())


def release(resources: Any) -> None:
    """Destroy GPU resources now: left to the garbage collector, a long-lived worker's
    jobs were seen to slow down the jobs after them (4x over 36 variants on an H200)."""
    for resource in resources:
        resource.destroy()


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, ShaderRefused):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def main(argv: list[str] | None = None, runner_class: type[Runner] | None = None) -> int:
    """The worker's loop: answer jobs from stdin until it closes (``runner_class`` answers)."""
    parser = argparse.ArgumentParser(prog="python -m wgslgen.run.worker")
    parser.add_argument("--adapter", default=None)
    args = parser.parse_args(argv)
    # The protocol gets a private copy of stdout; fd 1 becomes stderr, so whatever the driver
    # or a reference prints cannot corrupt a frame.
    channel = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    try:
        runner = (runner_class or Runner)(args.adapter)
        channel.write(encode(runner.describe()))
    except Exception as exc:
        option = getattr(exc, "option", None)
        channel.write(encode(Hello(ok=False, error=str(exc), option=option)))
        return 1
    while (job := read_frame(sys.stdin.buffer)) is not None:
        try:
            reply = runner.handle(job)
        except Exception as exc:
            reply = Reply.failure(Stage.WORKER, _message(exc))
        channel.write(encode(reply))
    return 0


if __name__ == "__main__":
    sys.exit(main())
