"""The typed contract between the parent and the device worker: jobs, replies and framing.

Both sides import this module; a frame is an 8-byte big-endian length and a pickle of one of
these dataclasses. docs/CONTRACTS.md describes each field for people.
"""

from __future__ import annotations

import pickle
import struct
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, BinaryIO

HEADER = struct.Struct(">Q")


class JobKind(StrEnum):
    """What the worker is asked to do."""

    PING = "ping"
    RUN = "run"  # upload, dispatch every pass, read the outputs back
    BENCH = "bench"  # time the dispatch with tune.bench.measure
    HEAD_TO_HEAD = "head_to_head"  # time finalists in strict alternation on one device


class Stage(StrEnum):
    """Where a job failed: the parent decides what a failure means from this, never from text."""

    JOB = "job"  # a malformed or unknown job
    PIPELINE = "pipeline"  # device creation or shader/pipeline compilation
    RUN = "run"
    BENCH = "bench"
    HEAD_TO_HEAD = "head_to_head"
    WORKER = "worker"  # an unexpected error in the worker's own code


@dataclass(frozen=True)
class BufferBinding:
    """One buffer of a job: where it binds, its WebGPU buffer type and initial bytes."""

    group: int
    binding: int
    type: str  # "uniform", "storage" or "read-only-storage"
    data: bytes
    read_back: bool = False
    name: str = ""


@dataclass(frozen=True)
class PassDispatch:
    """One pass: the entry point and its workgroup counts."""

    entry_point: str
    dispatch: tuple[int, int, int]


@dataclass(frozen=True)
class DispatchJob:
    """Run or time one rendering on one case's buffers (kind RUN or BENCH)."""

    kind: JobKind
    label: str
    source: str
    sha256: str
    features: tuple[str, ...]
    limits: dict[str, int]
    bindings: tuple[BufferBinding, ...]
    passes: tuple[PassDispatch, ...]
    options: dict[str, Any] = field(default_factory=dict)  # bench.measure's keyword arguments
    constants: dict[str, float] = field(default_factory=dict)  # values of `override`s, by name


@dataclass(frozen=True)
class HeadToHeadJob:
    """Time finalists alternately on one device sharing the union of their features."""

    label: str
    finalists: dict[str, DispatchJob]  # by variant name
    options: dict[str, Any] = field(default_factory=dict)  # bench.head_to_head's arguments
    kind: JobKind = JobKind.HEAD_TO_HEAD


@dataclass(frozen=True)
class PingJob:
    """Ask the worker whether it is alive."""

    label: str = ""
    kind: JobKind = JobKind.PING


Job = DispatchJob | HeadToHeadJob | PingJob


@dataclass(frozen=True)
class Reply:
    """The worker's answer to one job; ``stage`` and ``error`` are set when ``ok`` is false."""

    ok: bool
    stage: Stage | None = None
    error: str = ""
    outputs: dict[tuple[int, int], bytes] = field(default_factory=dict)  # RUN: read-backs
    measurement: dict[str, Any] | None = None  # BENCH: Measurement.to_dict()
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # HEAD_TO_HEAD, by name
    times: dict[str, float] = field(default_factory=dict)  # seconds per step, for overheads
    compiles: int = 0  # pipelines the worker built so far (makes caching visible)

    @classmethod
    def failure(cls, stage: Stage, error: str, **extra: Any) -> Reply:
        """A failed reply."""
        return cls(ok=False, stage=stage, error=error, **extra)


@dataclass(frozen=True)
class Hello:
    """What a starting worker reports: its adapter, or why it has none."""

    ok: bool
    error: str = ""
    option: str | None = None  # the setting at fault when ``error`` is the user's (WgslgenError)
    label: str = ""
    key: dict[str, Any] = field(default_factory=dict)  # run.device.DeviceKey fields
    limits: dict[str, int] = field(default_factory=dict)
    features: tuple[str, ...] = ()
    pid: int = 0


def encode(obj: Any) -> bytes:
    """One frame."""
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(payload)) + payload


def read_frame(stream: BinaryIO) -> Any | None:
    """The next frame's object from a blocking stream, or None at end of stream."""
    header = _read_exact(stream, HEADER.size)
    if header is None:
        return None
    payload = _read_exact(stream, HEADER.unpack(header)[0])
    return None if payload is None else pickle.loads(payload)


def _read_exact(stream: BinaryIO, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
