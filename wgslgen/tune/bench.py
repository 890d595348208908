"""The timing method: one place decides how a kernel is timed (after Triton's do_bench)."""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Callable
from dataclasses import MISSING, asdict, dataclass
from typing import Any

import numpy as np

from wgslgen.run.device import is_cpu_adapter

# Default last-level cache size to evict before each cold repetition; the flush writes 2x this.
# 128 MiB is at least the LLC of every GPU wgslgen is likely to meet (H100/H200 L2 50 MB,
# RTX 4090 L2 72 MB, RDNA3 Infinity Cache 96 MB, B200 L2 126 MB), so 256 MiB are written,
# which is also exactly the WebGPU default max-buffer-size.
DEFAULT_L2_BYTES = 128 << 20
# One sample spans at least this many timer resolutions, so a ±1 tick quantisation error is
# ≤0.1% of it. For wall clock the "resolution" is the empty submit round trip, a bias rather
# than a quantum, and 100x (≤1% bias) keeps samples short.
TIMESTAMP_FACTOR = 1000
WALLCLOCK_FACTOR = 100
# The calibration run that estimates one dispatch's time spans at least this many timer
# resolutions: at one, a ±1 tick quantisation error (Chrome's 65,536 ns) can halve or double
# the estimate and so k, and a sample then falls short of its factor x resolution.
CALIBRATION_TICKS = 32
# Samples of the chosen batch taken to confirm it spans factor x resolution (growing it if not).
CONFIRM_ROUNDS = 3
# Recording a dispatch costs microseconds of Python; beyond this the recording dominates.
MAX_DISPATCHES_PER_SAMPLE = 4096
# wgpu caps a query set at 4096 queries: two per sample.
_MAX_BATCH = 2048
_TIMER_PROBES = 8
_HEAD_TO_HEAD_WARMUP_S = 0.025
# A few seconds idle and the NVIDIA driver drops the SM clock (1980 -> 345 MHz on an H200); a
# trickle of single timed dispatches (calibration) brings it back only over ~2 s, so a kernel
# timed then reads up to 2.8x slow (benchmarks/drift_cause.py --recovery: a 20 us kernel read
# 54 us after 5-8 s idle). Under back-to-back dispatches the clock was back within ~0.4 s
# (0.25 s of them fixed a 5 s idle spell but not an 8 s one), so every measurement on a GPU
# starts with this much of them. A CPU adapter has no such clock and skips it.
SPIN_UP_S = 0.5
# Each spin-up submit holds about this much work, so that a slow device still returns within
# the spin-up and a fast one is not starved by Python recording.
_SPIN_SUBMIT_S = 0.02


@dataclass(frozen=True)
class Measurement:
    """All samples of one kernel timing, per dispatch, and how they were taken."""

    samples_ns: tuple[float, ...]
    median_ns: float
    q1_ns: float
    q3_ns: float
    iqr_ns: float
    reps: int
    dispatches_per_sample: int
    method: str  # "timestamp" | "wallclock"
    warm: bool
    timer_resolution_ns: float
    l2_flush_bytes: int
    # Seconds of back-to-back dispatches before the samples (0: none, as on a CPU adapter or
    # in records from before the spin-up existed, whose GPU timings may be clock-drifted).
    spin_up_s: float = 0.0

    @classmethod
    def from_samples(cls, samples_ns: list[float], **how: Any) -> Measurement:
        """Summarise samples (ns per dispatch) into a Measurement."""
        q1, med, q3 = (float(x) for x in np.percentile(samples_ns, [25, 50, 75]))
        samples = tuple(float(s) for s in samples_ns)
        return cls(samples, med, q1, q3, q3 - q1, len(samples), **how)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        d = asdict(self)
        d["samples_ns"] = list(self.samples_ns)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Measurement:
        """The inverse of to_dict; raises KeyError/ValueError on a malformed dict."""
        fields = {
            name: d[name]
            for name, f in cls.__dataclass_fields__.items()
            if name in d or f.default is MISSING
        }
        fields["samples_ns"] = tuple(float(s) for s in fields["samples_ns"])
        if fields["method"] not in ("timestamp", "wallclock"):
            raise ValueError(f"unknown timing method {fields['method']!r}")
        return cls(**fields)


# Records one dispatch into a compute pass: set_pipeline, set_bind_group, dispatch_workgroups.
Recorder = Callable[[Any], None]
# One scratch allocation per device: the first write of 256 MiB costs ~0.8 s on lavapipe.
_scratch: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()


class _Timer:
    """Takes samples of k dispatches with one method on one device."""

    def __init__(self, device: Any, warm: bool, l2_bytes: int | None) -> None:
        import wgpu

        self.wgpu, self.device, self.warm = wgpu, device, warm
        self.method = "timestamp" if "timestamp-query" in device.features else "wallclock"
        self.fence = device.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
        self.flush_bytes = 0 if warm else _round4(2 * (l2_bytes or DEFAULT_L2_BYTES))
        self.flush_buffers = [] if warm else self._scratch(self.flush_bytes)
        self.period = self._timestamp_period()
        self.resolution_ns = self._probe_resolution()
        self.factor = TIMESTAMP_FACTOR if self.method == "timestamp" else WALLCLOCK_FACTOR
        self.spun_up_s = 0.0

    def _scratch(self, nbytes: int) -> list[Any]:
        bufs = _scratch.get(self.device, [])
        if sum(b.size for b in bufs) < nbytes:
            # Respect max-buffer-size by splitting the scratch into several buffers.
            chunk = min(nbytes, self.device.limits["max-buffer-size"]) // 4 * 4
            usage = self.wgpu.BufferUsage.COPY_DST
            n = math.ceil(nbytes / chunk)
            bufs = [self.device.create_buffer(size=chunk, usage=usage) for _ in range(n)]
            _scratch[self.device] = bufs
        return bufs

    def _timestamp_period(self) -> float:
        # wgpu-py 0.32 has no public API for it; wgpu-native exposes the C call.
        try:
            from wgpu.backends.wgpu_native._ffi import lib

            return float(lib.wgpuQueueGetTimestampPeriod(self.device.queue._internal)) or 1.0
        except Exception:
            return 1.0

    def wait(self) -> None:
        # on_submitted_work_done_sync is broken in wgpu-py 0.32; a read-back waits for the queue.
        self.device.queue.read_buffer(self.fence)

    def flush(self) -> None:
        enc = self.device.create_command_encoder()
        left = self.flush_bytes
        for buf in self.flush_buffers:
            enc.clear_buffer(buf, 0, min(buf.size, left))
            left -= buf.size
            if left <= 0:
                break
        self.device.queue.submit([enc.finish()])
        self.wait()

    def _probe_resolution(self) -> float:
        if self.method == "wallclock":
            times = []
            for _ in range(_TIMER_PROBES):
                t0 = time.perf_counter_ns()
                self.device.queue.submit([self.device.create_command_encoder().finish()])
                self.wait()
                times.append(time.perf_counter_ns() - t0)
            return float(min(times))
        # Every stamp is a multiple of the quantum plus a constant, so the gcd of differences
        # between stamps taken at unrelated moments (separate submits) is the quantum:
        # 65,536 ns in Chrome, one tick elsewhere.
        stamps: list[int] = []
        for _ in range(_TIMER_PROBES):
            stamps += self._timestamps(lambda p: None, 0, 2, flush=False).tolist()
        return _quantum(stamps) * self.period

    def _timestamps(self, record: Recorder, k: int, n: int, flush: bool) -> np.ndarray:
        """Raw begin/end stamps of n passes of k dispatches, flushed before each if asked."""
        wgpu, dev = self.wgpu, self.device
        qs = dev.create_query_set(type=wgpu.QueryType.timestamp, count=2 * n)
        usage = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
        out = dev.create_buffer(size=16 * n, usage=usage)
        enc = dev.create_command_encoder()
        for i in range(n):
            if flush:
                # Flush in its own submit and wait on both sides: submits on one queue may
                # overlap on the GPU, and the flush must not leak into the timed interval.
                dev.queue.submit([enc.finish()])
                self.wait()
                self.flush()
                enc = dev.create_command_encoder()
            tw = {"query_set": qs, "beginning_of_pass_write_index": 2 * i,
                  "end_of_pass_write_index": 2 * i + 1}  # fmt: skip
            cpass = enc.begin_compute_pass(timestamp_writes=tw)
            for _ in range(k):
                record(cpass)
            cpass.end()
        enc.resolve_query_set(qs, 0, 2 * n, out, 0)
        dev.queue.submit([enc.finish()])
        stamps = np.frombuffer(dev.queue.read_buffer(out), dtype=np.uint64).astype(np.int64)
        # Destroyed at once, not by the garbage collector: see worker.release.
        qs.destroy()
        out.destroy()
        return stamps

    def samples(self, record: Recorder, k: int, n: int, flush: bool) -> list[float]:
        """n samples, each the time of k dispatches / k, in ns; flushed before each if asked."""
        if self.method == "timestamp":
            out: list[float] = []
            while len(out) < n:
                m = min(n - len(out), _MAX_BATCH)
                stamps = self._timestamps(record, k, m, flush)
                out += ((stamps[1::2] - stamps[0::2]) * (self.period / k)).tolist()
            return out
        out = []
        for _ in range(n):
            if flush:
                self.flush()
            enc = self.device.create_command_encoder()
            cpass = enc.begin_compute_pass()
            for _ in range(k):
                record(cpass)
            cpass.end()
            t0 = time.perf_counter_ns()
            self.device.queue.submit([enc.finish()])
            self.wait()
            out.append((time.perf_counter_ns() - t0) / k)
        return out

    def spin_up(self, record: Recorder, seconds: float) -> None:
        """Keep the device busy with back-to-back dispatches for ``seconds`` (clocks up)."""
        end = time.perf_counter() + seconds
        if seconds <= 0 or _is_cpu(self.device):
            return
        per_dispatch_ns = max(self.samples(record, 1, 1, flush=False)[0], 1.0)
        n = max(1, min(MAX_DISPATCHES_PER_SAMPLE, int(_SPIN_SUBMIT_S * 1e9 / per_dispatch_ns)))
        while time.perf_counter() < end:
            enc = self.device.create_command_encoder()
            cpass = enc.begin_compute_pass()
            for _ in range(n):
                record(cpass)
            cpass.end()
            self.device.queue.submit([enc.finish()])
            self.wait()
        self.spun_up_s = seconds

    def calibrate(self, record: Recorder, warmup_s: float) -> tuple[int, float]:
        """Warm up by time; return (dispatches per sample, estimated seconds per sample)."""
        # Every wall-clock sample contains one submit round trip: that is not kernel time.
        overhead = self.resolution_ns if self.method == "wallclock" else 0.0
        k, t_end, runs = 1, time.perf_counter() + warmup_s, []
        while True:
            kernel_ns = self.samples(record, k, 1, flush=False)[0] * k - overhead
            too_short = kernel_ns < CALIBRATION_TICKS * self.resolution_ns
            if too_short and k < MAX_DISPATCHES_PER_SAMPLE:
                # The timer barely sees k dispatches: double k and start the estimate over.
                k, runs = min(2 * k, MAX_DISPATCHES_PER_SAMPLE), []
                continue
            runs.append(max(kernel_ns, 1.0) / k)
            # The first run pays one-time costs (shader JIT, first touch of memory): it only
            # warms, and the estimate comes from the (at least two) runs after it.
            if len(runs) >= 3 and time.perf_counter() >= t_end:
                break
        per_dispatch = float(np.median(runs[1:]))
        # k from the fastest run: a run slowed by a busy host would shrink k, and the samples
        # would then span fewer than factor x resolution.
        k = math.ceil(self.factor * self.resolution_ns / min(runs[1:]))
        k = max(1, min(k, MAX_DISPATCHES_PER_SAMPLE))
        # A dispatch in a long batch can cost less than in the short calibration runs (lavapipe
        # wakes its threads for each pass; a host busy during calibration): one sample of k
        # confirms the span, and k grows until it holds.
        for _ in range(CONFIRM_ROUNDS):
            span_ns = self.samples(record, k, 1, flush=False)[0] * k - overhead
            if span_ns >= self.factor * self.resolution_ns or k >= MAX_DISPATCHES_PER_SAMPLE:
                break
            per_dispatch = max(span_ns, 1.0) / k
            k = min(math.ceil(self.factor * self.resolution_ns / per_dispatch),
                    MAX_DISPATCHES_PER_SAMPLE)  # fmt: skip
        per_sample_s = (k * per_dispatch + overhead) * 1e-9
        if not self.warm:
            t0 = time.perf_counter()
            self.flush()
            self.wait()
            per_sample_s += time.perf_counter() - t0
        return k, per_sample_s

    def measurement(self, samples_ns: list[float], k: int) -> Measurement:
        """Wrap samples with this timer's description."""
        return Measurement.from_samples(
            samples_ns, dispatches_per_sample=k, method=self.method, warm=self.warm,
            timer_resolution_ns=self.resolution_ns, l2_flush_bytes=self.flush_bytes,
            spin_up_s=self.spun_up_s,
        )  # fmt: skip


def _is_cpu(device: Any) -> bool:
    """Whether the device runs on the CPU: no clock to raise."""
    return is_cpu_adapter(device.adapter.info)


def _quantum(stamps: list[int]) -> int:
    """The timer's tick in stamp units: the gcd of all differences (1 if they tell nothing)."""
    return max(math.gcd(*(s - stamps[0] for s in stamps)), 1)


def _round4(n: int) -> int:
    return (n + 3) // 4 * 4


def measure(
    device: Any,
    record: Recorder,
    *,
    warm: bool = False,
    l2_bytes: int | None = None,
    warmup_s: float = 0.025,
    spin_up_s: float = SPIN_UP_S,
    budget_s: float = 0.1,
    min_reps: int = 5,
    max_reps: int = 1000,
) -> Measurement:
    """Time one dispatch recorded by ``record(pass_encoder)``: cold cache unless ``warm``."""
    timer = _Timer(device, warm, l2_bytes)
    timer.spin_up(record, spin_up_s)
    k, per_sample_s = timer.calibrate(record, warmup_s)
    reps = max(min_reps, min(max_reps, int(budget_s / per_sample_s)))
    return timer.measurement(timer.samples(record, k, reps, flush=not warm), k)


def head_to_head(
    device: Any,
    records: dict[str, Recorder],
    *,
    rounds: int = 15,
    warm: bool = False,
    l2_bytes: int | None = None,
    spin_up_s: float = SPIN_UP_S,
) -> dict[str, Measurement]:
    """Time finalists in strict alternation (A B C A B C ...) so drift hits all alike."""
    timer = _Timer(device, warm, l2_bytes)
    if records:
        timer.spin_up(next(iter(records.values())), spin_up_s)
    ks = {name: timer.calibrate(rec, _HEAD_TO_HEAD_WARMUP_S)[0] for name, rec in records.items()}
    samples: dict[str, list[float]] = {name: [] for name in records}
    for _ in range(rounds):
        for name, rec in records.items():
            samples[name] += timer.samples(rec, ks[name], 1, flush=not warm)
    return {name: timer.measurement(samples[name], ks[name]) for name in records}


def format_ns(ns: float | None) -> str:
    """A duration for people: '812 ns', '12.3 µs', '4.56 ms', '1.20 s' (as the tables show)."""
    if ns is None:
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            value = ns / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{ns:.0f} ns"


def pick_winner(
    results: dict[str, Measurement], tie_key: Callable[[str], tuple]
) -> tuple[str, str]:
    """Return (winner, reason): the smallest ``tie_key`` among those tied with the fastest.

    A candidate is tied when its median is within the noise of the fastest median, the noise
    being the fastest's IQR or 2% of its median, whichever is larger. The IQR is the spread
    seen in this run; the 2% floor covers what one run cannot see (clock states, thermal and
    run-to-run drift on GPUs are typically 1-3%), so a difference too small to reproduce never
    decides the winner. Among tied candidates, the caller's key (e.g. (workgroup size, name))
    picks, so the same timings always give the same winner.
    """
    if not results:
        raise ValueError("pick_winner needs at least one result")
    fastest = min(results, key=lambda n: (results[n].median_ns, tie_key(n)))
    best = results[fastest]
    noise = max(best.iqr_ns, 0.02 * best.median_ns)
    tied = sorted(
        (n for n in results if results[n].median_ns <= best.median_ns + noise), key=tie_key
    )
    winner = tied[0]
    if len(tied) == 1:
        return winner, f"fastest by more than the noise ({format_ns(noise)})"
    return winner, (
        f"tied within noise {format_ns(noise)} of fastest {fastest} "
        f"({format_ns(best.median_ns)}): "
        f"{', '.join(tied)}; the most portable of them wins (fewest optional features, most "
        "limit profiles, smallest workgroup, then the name)"
    )
