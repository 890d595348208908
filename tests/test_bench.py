"""The timing method, on a real device (lavapipe through wgpu-py) with a tiny inline kernel."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from wgslgen.tune import bench
from wgslgen.tune.bench import Measurement, head_to_head, measure, pick_winner

wgpu = pytest.importorskip("wgpu")

# Each invocation runs a dependent chain of `iters` multiply-adds: the work scales with iters
# and nothing can be hoisted or vectorised away.
SHADER = """
struct P { iters: u32, _a: u32, _b: u32, _c: u32 }
@group(0) @binding(0) var<storage, read_write> buf: array<f32>;
@group(0) @binding(1) var<uniform> p: P;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    var x = buf[g.x];
    for (var i = 0u; i < p.iters; i++) { x = x * 1.0001 + 0.5; }
    buf[g.x] = x;
}
"""
N = 4096
SMALL_L2 = 1 << 20  # tests flush 2 MiB, not the 256 MiB default


def _adapter():
    from wgslgen.run.device import choose_adapter

    return choose_adapter("cpu")  # scripts/setup.sh installs lavapipe: its absence fails


@pytest.fixture(scope="module")
def device():
    from wgslgen.run.device import create_device

    adapter = _adapter()
    if "timestamp-query" not in adapter.features:
        pytest.skip("adapter lacks timestamp-query")
    return create_device(adapter, ["timestamp-query"])


def kernel(device, iters: int):
    """A record() callable dispatching the chain kernel once over N invocations."""
    buf = device.create_buffer(size=N * 4, usage=wgpu.BufferUsage.STORAGE)
    uni = device.create_buffer_with_data(
        data=np.array([iters, 0, 0, 0], dtype=np.uint32).tobytes(),
        usage=wgpu.BufferUsage.UNIFORM,
    )
    module = device.create_shader_module(code=SHADER)
    pipe = device.create_compute_pipeline(
        layout="auto", compute={"module": module, "entry_point": "main"}
    )
    group = device.create_bind_group(
        layout=pipe.get_bind_group_layout(0),
        entries=[
            {"binding": 0, "resource": {"buffer": buf}},
            {"binding": 1, "resource": {"buffer": uni}},
        ],
    )

    def record(cpass) -> None:
        cpass.set_pipeline(pipe)
        cpass.set_bind_group(0, group)
        cpass.dispatch_workgroups(N // 64)

    return record


def test_measure_timestamp_basics(device):
    m = measure(device, kernel(device, 500), l2_bytes=SMALL_L2, min_reps=7, budget_s=0.05)
    assert m.method == "timestamp"
    assert m.reps == len(m.samples_ns) >= 7
    assert m.q1_ns <= m.median_ns <= m.q3_ns
    assert m.iqr_ns == pytest.approx(m.q3_ns - m.q1_ns)
    assert all(s > 0 for s in m.samples_ns)
    assert m.dispatches_per_sample >= 1
    assert 0 < m.timer_resolution_ns <= 1000  # lavapipe stamps are nanoseconds
    assert not m.warm and m.l2_flush_bytes == 2 * SMALL_L2
    assert m.spin_up_s == 0.0  # lavapipe is a CPU adapter: no clock to bring up
    # JSON round trip
    assert Measurement.from_dict(json.loads(json.dumps(m.to_dict()))) == m


def test_more_work_measures_slower(device):
    # Alternation keeps a noisy 2-core machine's drift from landing on one side only.
    res = head_to_head(
        device, {"1x": kernel(device, 1000), "4x": kernel(device, 4000)}, rounds=7, warm=True
    )
    assert res["4x"].median_ns / res["1x"].median_ns > 1.5
    assert all(m.reps == 7 for m in res.values())


def test_spin_up_keeps_the_device_busy_before_timing(device, monkeypatch):
    # A GPU idle for seconds runs slow until its clocks ramp back up; the spin-up is what
    # brings them up: back-to-back dispatches, many per pass, for the time asked. (lavapipe
    # is a CPU adapter, which skips it: here it is told otherwise to run the real thing.)
    monkeypatch.setattr(bench, "_is_cpu", lambda _device: False)
    inner = kernel(device, 200)
    passes: list[list] = []  # [pass encoder, dispatches recorded into it]

    def record(cpass) -> None:
        if not passes or passes[-1][0] is not cpass:
            passes.append([cpass, 0])
        passes[-1][1] += 1
        inner(cpass)

    t0 = time.perf_counter()
    bench._Timer(device, warm=True, l2_bytes=None).spin_up(record, 0.3)
    assert time.perf_counter() - t0 >= 0.3
    # and the measurement says it was taken so (a CPU adapter's says 0: see below)
    assert measure(device, inner, warm=True, spin_up_s=0.05, budget_s=0.01).spin_up_s == 0.05
    counts = [n for _, n in passes]
    # the first pass times one dispatch (its cost sizes the rest); the spin-up's passes hold many
    assert counts[0] == 1 and len(counts) >= 2
    assert min(counts[1:]) > 1


def test_no_spin_up_on_a_cpu_adapter_or_when_asked_for_none(device, monkeypatch):
    calls = []
    monkeypatch.setattr(bench._Timer, "samples", lambda self, *a, **k: calls.append(a) or [1.0])
    timer = bench._Timer(device, warm=True, l2_bytes=None)
    assert bench._is_cpu(device)  # lavapipe
    timer.spin_up(kernel(device, 10), 0.5)
    monkeypatch.setattr(bench, "_is_cpu", lambda _device: False)
    timer.spin_up(kernel(device, 10), 0.0)
    assert calls == [] and timer.spun_up_s == 0.0


def test_cold_flush_outside_interval(device, monkeypatch):
    flushes = []
    real_flush = bench._Timer.flush

    def counting_flush(self):
        flushes.append(self.flush_bytes)
        real_flush(self)

    monkeypatch.setattr(bench._Timer, "flush", counting_flush)
    rec = kernel(device, 20)  # ~0.1 ms on lavapipe
    warm = measure(device, rec, warm=True, min_reps=5, max_reps=5)
    assert flushes == [] and warm.l2_flush_bytes == 0 and warm.warm
    cold = measure(device, rec, l2_bytes=32 << 20, min_reps=5, max_reps=5)
    assert cold.l2_flush_bytes == 64 << 20 and not cold.warm
    assert len(flushes) >= 5  # one before each timed repetition (+1 to price it)
    # What one 64 MiB flush costs here (ms on lavapipe): had it been inside the interval,
    # every cold sample would carry it.
    timer = bench._Timer(device, False, 32 << 20)
    flush_ns = min(_timed(timer.flush) for _ in range(3))
    if flush_ns < 2 * warm.median_ns:  # pragma: no cover - a machine with a very fast memset
        pytest.skip("flush too cheap here to tell inside from outside")
    assert cold.median_ns < warm.median_ns + flush_ns / 2


def _timed(fn) -> float:
    t0 = time.perf_counter_ns()
    fn()
    return time.perf_counter_ns() - t0


def test_wallclock_without_timestamp_feature():
    from wgslgen.run.device import create_device

    dev = create_device(_adapter(), [])
    m = measure(dev, kernel(dev, 500), warm=True, budget_s=0.02, min_reps=3)
    assert m.method == "wallclock"
    assert m.reps >= 3 and m.q1_ns <= m.median_ns <= m.q3_ns
    # The resolution of wall clock is one submit round trip: tens of microseconds here.
    assert m.timer_resolution_ns > 1000


def test_coarse_timer_batches_dispatches(device, monkeypatch):
    # Quantise lavapipe's nanosecond stamps the way Chrome does (65,536 ns).
    rec = kernel(device, 50)
    real = bench._Timer._timestamps

    def chrome(self, *args, **kw):
        return real(self, *args, **kw) // 65536 * 65536

    monkeypatch.setattr(bench._Timer, "_timestamps", chrome)
    coarse = measure(device, rec, warm=True, budget_s=0.0, min_reps=3)
    monkeypatch.undo()
    assert coarse.timer_resolution_ns == 65536
    # each sample spans ≥1000 ticks, so the per-dispatch time is still resolved
    k = coarse.dispatches_per_sample
    assert k > 1 and k * coarse.median_ns >= 0.5 * 1000 * 65536
    # The nanosecond timer over the same batches: lavapipe runs a lone dispatch slower than
    # one of a batch, so only a batch of the same size is the like-for-like reference.
    fine = np.median(bench._Timer(device, True, None).samples(rec, k, 5, flush=False))
    assert 0.5 < coarse.median_ns / fine < 2


def test_samples_span_the_target_when_short_batches_cost_more_per_dispatch(device, monkeypatch):
    # A fixed cost per pass (lavapipe waking its threads, a busy host) makes the short
    # calibration runs overestimate a dispatch: the chosen batch must still span its target.
    rec = kernel(device, 50)
    real = bench._Timer._timestamps
    per_pass_ns = 40 * 65536

    def with_pass_cost(self, *args, **kw):
        stamps = real(self, *args, **kw)
        stamps[1::2] += per_pass_ns
        return stamps // 65536 * 65536

    monkeypatch.setattr(bench._Timer, "_timestamps", with_pass_cost)
    m = measure(device, rec, warm=True, budget_s=0.0, min_reps=3)
    target = bench.TIMESTAMP_FACTOR * m.timer_resolution_ns
    assert m.dispatches_per_sample * m.median_ns >= 0.5 * target  # without the check: ~0.08


def test_flush_splits_over_max_buffer_size():
    from wgslgen.run.device import create_device

    dev = create_device(_adapter(), ["timestamp-query"], {"max-buffer-size": 1 << 20})
    m = measure(dev, kernel(dev, 20), l2_bytes=3 << 19, min_reps=3, max_reps=3)
    assert m.l2_flush_bytes == 3 << 20
    assert [b.size for b in bench._scratch[dev]] == [1 << 20] * 3
    assert bench.DEFAULT_L2_BYTES * 2 == 256 << 20  # the documented default flush


def test_quantum_detects_browser_quantisation():
    rng = np.random.default_rng(0)
    raw = np.cumsum(rng.integers(0, 10**7, size=20)).tolist()
    assert bench._quantum([int(s) for s in raw]) == 1
    chrome = [int(s) // 65536 * 65536 + 12345 for s in raw]
    assert bench._quantum(chrome) == 65536
    assert bench._quantum([5, 5]) == 1  # nothing learned: assume one tick


def _m(median: float, iqr: float) -> Measurement:
    return Measurement.from_samples(
        [median - iqr / 2, median, median + iqr / 2],
        dispatches_per_sample=1,
        method="timestamp",
        warm=False,
        timer_resolution_ns=1.0,
        l2_flush_bytes=0,
    )


def test_pick_winner_tie_break_deterministic():
    key = {"wg256": (256, "wg256"), "wg64": (64, "wg64"), "wg128": (128, "wg128")}
    results = {"wg256": _m(1000, 10), "wg128": _m(1015, 10), "wg64": _m(1100, 10)}
    # wg128 is within the 2% floor (20 ns > IQR 10 ns) of the fastest; wg64 is not.
    for order in (results, dict(reversed(list(results.items())))):
        winner, reason = pick_winner(order, lambda n: key[n])
        assert winner == "wg128"
        assert "wg128" in reason and "wg64" not in reason.split(":")[-1]
    # A wide IQR widens the tie to everything; the smallest key then wins.
    noisy = {"wg256": _m(1000, 200), "wg128": _m(1015, 10), "wg64": _m(1100, 10)}
    assert pick_winner(noisy, lambda n: key[n])[0] == "wg64"
    # A clear winner stays the winner whatever its key.
    clear = {"wg256": _m(500, 10), "wg128": _m(1000, 10)}
    winner, reason = pick_winner(clear, lambda n: key[n])
    assert winner == "wg256" and "fastest" in reason
    with pytest.raises(ValueError):
        pick_winner({}, lambda n: (n,))
