"""Tuning: per shape, search the space, time the variants that pass the harness, decide.

For each shape a strategy (search.py) proposes variants that satisfy the constraints, the
shape's preconditions and the limit profile. Each one is looked up in the results database
first (keyed by the sha256 of the code that runs, the device and the shape); only what is
missing is run: the harness checks it against the numpy reference in the worker process,
and only a pass is timed (bench.measure, in the same worker, under the same deadline). Every
outcome, failures included, is appended to the database at once, so an interrupted run
loses nothing and a re-run measures only what is missing. Then the finalists and the
baseline are timed head-to-head and selection.py names the winner and the portable default.
Candidates come in waves (wave_size); tune/fleet.py measures a wave on a Ray cluster.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from wgslgen.check.limits import BUILTIN_PROFILES, check_passes
from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import render
from wgslgen.run.device import DeviceKey, is_cpu_adapter
from wgslgen.run.harness import Harness, ReferenceFailure, Status
from wgslgen.run.worker_client import WorkerFailure
from wgslgen.spec.kernel import KernelSpec, Variant, format_shape
from wgslgen.spec.space import VariantSpace
from wgslgen.tune import planning, standing
from wgslgen.tune.bench import Measurement
from wgslgen.tune.db import (
    Record,
    ResultKey,
    ResultsDB,
    SelectionEntry,
    canonical_shape,
    current_versions,
)
from wgslgen.tune.drift import DriftWatch
from wgslgen.tune.options import Totals, TuneOptions
from wgslgen.tune.selection import (
    Candidate,
    Decision,
    Outcome,
    ShapePlan,
    ShapeReport,
    decide,
    entry,
    finalists,
    portable_default,
)
from wgslgen.tune.trial import ERROR_CHARS, precondition, record_status, sample_time_ns

Measured = tuple[Candidate, str, str | None, Measurement | None]  # (c, status, error, timing)


class TuneSession:
    """One device worker and one database for tuning any number of kernels and shapes."""

    def __init__(
        self,
        options: TuneOptions,
        db: ResultsDB,
        on_step: Callable[[str], None] | None = None,
        harness: Harness | None = None,
    ) -> None:
        """``harness``: another device's stand-in (tune/fleet.py); default a local worker."""
        self.options = options
        self.db = db
        db.begin_session()  # a second tune on this database waits, then reuses our results
        self.on_step = on_step or (lambda label: None)
        self.harness = harness or Harness(options.adapter, options.timeout, options.input_seed)
        self.totals = Totals()
        self._profile: Any = None
        self._device_key: DeviceKey | None = None
        self._candidates: dict[tuple[str, tuple], Candidate] = {}
        self.drift = DriftWatch(options.fresh_worker)

    def __enter__(self) -> TuneSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker."""
        self.harness.close()
        self.db.end_session()

    @property
    def device_key(self) -> DeviceKey:
        """The results key of the adapter the worker runs on."""
        if self._device_key is None:
            self._device_key = DeviceKey(**self.harness.adapter_info["key"])
        return self._device_key

    @property
    def device_label(self) -> str:
        """The adapter, for people."""
        return str(self.harness.adapter_info["label"])

    def candidate(self, variant: Variant) -> Candidate:
        """The variant's naga rendering (what wgpu-native compiles) and its static verdicts."""
        key = (variant.spec.name, variant.param_items)
        if key not in self._candidates:
            rendered = render(variant, "naga")
            facts = rendered.facts[rendered.entry_point]
            if self._profile is None:
                self._profile = self.harness.profile(self.options.profile)
            misfits = self.harness.misfits(rendered, self._profile)
            portable = not rendered.features and not check_passes(
                rendered.facts, BUILTIN_PROFILES["webgpu"], frozenset()
            )
            self._candidates[key] = Candidate(rendered, facts, tuple(misfits), portable)
        return self._candidates[key]

    def plan(
        self,
        spec: KernelSpec,
        shape: Mapping[str, int],
        variants: Sequence[Variant] | VariantSpace | None = None,
    ) -> ShapePlan:
        """The candidates at ``shape`` (fitting the profile and the shape's preconditions),
        rendered up front or, for a large sampled space, drawn lazily (tune/planning.py)."""
        return planning.plan_shape(self, spec, shape, variants)

    def run(self, plan: ShapePlan) -> ShapeReport:
        """Search, fill in the baseline and a portable variant, then decide; a failing
        reference.py ends the shape as the report's error (its records stay in the database)."""
        report = ShapeReport(plan)
        tried: dict[str, Outcome] = {}
        self.drift.start_shape()

        def obtain(cands: Sequence[Candidate], eligible: bool = True) -> list[Outcome]:
            new = [c for c in {c.name: c for c in cands}.values() if c.name not in tried]
            for out in self.obtain_many(new, plan.shape, eligible):
                tried[out.name] = out
                report.outcomes.append(out)
            return [tried[c.name] for c in cands]

        try:
            note = planning.run_search(plan, obtain, self.options.seed, self.wave_size)
            if not plan.eligible:  # a lazy plan knows only after drawing
                drawn = " drawn" if getattr(plan, "pool", None) else ""
                report.notes.append(
                    f"no variant{drawn} fits profile {self.options.profile} at this shape"
                )
            report.notes += [note] if note else []
            self._baseline(plan, report, lambda c, eligible: obtain([c], eligible)[0])
            if plan.eligible and not any(o.status == "ok" and o.portable for o in tried.values()):
                # The selection names a portable default: measure portable ones until one passes.
                todo = planning.portable_todo(plan, tried, self.options.seed)
                while wave := list(itertools.islice(todo, self.wave_size(plan))):
                    if any(o.status == "ok" for o in obtain(wave)):
                        break
            self._settle_drift(plan, report, tried)
            report.decision = self._decide(plan, report)
        except ReferenceFailure as exc:  # the kernel's fault, not a variant's: others go on
            report.error = str(exc)
        return report

    def wave_size(self, plan: ShapePlan) -> int:
        """How many candidates to propose before hearing back: one here, where they run one
        after another (a fleet runs more at once: tune/fleet.py)."""
        return 1

    def _baseline(
        self, plan: ShapePlan, report: ShapeReport, obtain: Callable[..., Outcome]
    ) -> None:
        """Measure the baseline whatever the budget; say when it cannot be or may not win."""
        b = plan.baseline
        adapter = self.harness.misfits(b.rendered, self.harness.profile("adapter"))
        why = precondition(b.rendered.variant, plan.shape)
        if why or adapter:
            report.notes.append(
                f"baseline {b.name} not run ({why or '; '.join(adapter)}): no speedup is reported"
            )
            return
        eligible = any(c.name == b.name for c in plan.eligible)
        if b.misfits:
            report.notes.append(
                f"baseline {b.name} does not fit profile {self.options.profile} "
                f"({'; '.join(b.misfits)}): measured for the speedup only, it cannot be selected"
            )
        elif not eligible:
            report.notes.append(
                f"baseline {b.name} is outside --set: measured for the speedup only"
            )
        out = obtain(b, eligible)
        if out.status != "ok":
            report.notes.append(f"baseline {b.name} {out.status}: no speedup is reported")

    def obtain(self, c: Candidate, shape: Mapping[str, int], eligible: bool = True) -> Outcome:
        """The record of ``c`` at ``shape`` from the database, or run, timed and appended."""
        return next(self.obtain_many([c], shape, eligible))

    def obtain_many(
        self, cands: Sequence[Candidate], shape: Mapping[str, int], eligible: bool = True
    ) -> Iterator[Outcome]:
        """The database's records of ``cands``, then the missing ones as they are measured,
        each appended to the database at once (a kill after that loses nothing)."""
        missing = []
        for c in cands:
            old = self.db.get(c.sha256, self.device_key.digest(), shape, c.judge,
                              self.options.input_seed)  # fmt: skip
            if old is not None and self.options.reuses(old):
                self.totals.reused += 1
                self.on_step(f"{c.name} @ {format_shape(shape)} (in database)")
                yield Outcome(c, old, True, eligible)
            else:
                missing.append(c)
        for c, status, error, m in self._measure_many(missing, shape):
            yield Outcome(c, self._record(c, shape, status, error, m), False, eligible)

    def _record(
        self, c: Candidate, shape: Mapping[str, int], status: str, error: str | None,
        m: Measurement | None,
    ) -> Record:  # fmt: skip
        """Append the outcome of a run to the database and count it."""
        record = Record(
            key=ResultKey(c.sha256, self.device_key.digest(), canonical_shape(shape), c.judge,
                          self.options.input_seed),
            kernel=c.rendered.kernel,
            variant=c.name,
            params=dict(c.rendered.params),
            device_info={**self.harness.adapter_info["key"], "label": self.device_label},
            status=status,
            measurement=m,
            error=error[:ERROR_CHARS] if error else None,
            versions=current_versions(),
        )  # fmt: skip
        self.db.append(record)  # at once: a kill after this line loses nothing
        self.totals.measured += 1
        self.totals.failed += status != "ok"
        if m is not None:
            self.totals.timed_ns += sample_time_ns(m)
        self.on_step(f"{c.name} @ {format_shape(shape)}: {status}")
        return record

    def _measure_many(self, cands: Sequence[Candidate], shape: Mapping[str, int]
                      ) -> Iterator[Measured]:  # fmt: skip
        """Check and time each of ``cands``, yielding each outcome as it is known."""
        for c in cands:
            yield (c, *self._measure(c, shape))

    def _measure(self, c: Candidate, shape: Mapping[str, int]):
        """(status, error, measurement): the harness check first, timing only after a pass."""
        self._fresh_worker()
        t0 = time.perf_counter()
        result = self.harness.check(c.rendered, shape)
        t1 = time.perf_counter()
        self.totals.check_s += t1 - t0
        if result.status == Status.ERROR and result.stage == "reference":
            # The user's reference.py failed, not the variant: nothing to record, stop here.
            raise ReferenceFailure(result.message.removeprefix("reference: "))
        if result.status != Status.PASS:
            return record_status(result), result.message, None
        try:
            m = self._bench(c, shape)
        except WorkerFailure as e:
            return e.kind, f"while timing: {e}", None
        except WgslgenError as e:
            return "crash", f"while timing: {e}", None
        if self._watching_drift() and self.drift.timed(c, m):
            self.drift.recheck(lambda canary: self._bench(canary, shape))
        return "ok", None, m

    def _bench(self, c: Candidate, shape: Mapping[str, int]) -> Measurement:
        t0 = time.perf_counter()
        try:
            return self.harness.bench(
                c.rendered, shape, warm=self.options.warm, l2_bytes=self.options.l2_bytes
            )
        finally:
            self.totals.bench_s += time.perf_counter() - t0

    def _watching_drift(self) -> bool:
        return self.drift.watching(on_cpu=is_cpu_adapter(self.harness.adapter_info["key"]))

    def _settle_drift(self, plan: ShapePlan, report: ShapeReport, tried: dict[str, Outcome]
                      ) -> None:  # fmt: skip
        """Before deciding: the canary's last reading, and the variants it no longer vouches
        for timed again in new workers (their new records supersede the drifted ones)."""
        if self.drift.suspects and self._watching_drift():
            self.drift.recheck(lambda canary: self._bench(canary, plan.shape))
        redo = self.drift.take_redo()
        if redo:
            report.notes.append(str(self.drift.drifted))
        for c, status, error, m in self._measure_many(redo, plan.shape):
            old = tried[c.name]
            new = Outcome(c, self._record(c, plan.shape, status, error, m), False, old.eligible)
            tried[c.name] = new
            report.outcomes[report.outcomes.index(old)] = new

    def _decide(self, plan: ShapePlan, report: ShapeReport) -> Decision | None:
        ok = {o.name: o for o in report.outcomes if o.status == "ok"}
        eligible = {n: o.measurement for n, o in ok.items() if o.eligible}
        if not eligible:
            report.notes.append("no variant passed: nothing is selected for this shape")
            return None
        by_name = {o.name: o.candidate for o in report.outcomes}

        def tie_key(n: str) -> tuple:
            return by_name[n].tie_key()

        names = finalists(eligible, tie_key, self.options.finalists, self.options.margin)
        base = ok.get(plan.baseline.name)
        portable = [n for n in eligible if by_name[n].portable]
        guess = portable_default(eligible, portable, tie_key, winner="")
        baseline = (base.name, base.measurement) if base else None
        key = (plan.spec.name, self.device_key.digest(), canonical_shape(plan.shape))
        if held := standing.held_choices(self.options.standing, key, report.outcomes, eligible):
            return standing.kept(decide(eligible, portable, baseline, {}, tie_key, names), held)
        race = list(dict.fromkeys([*names, *([base.name] if base else []), *filter(None, [guess])]))
        h2h, notes = {}, []
        if len(race) > 1:
            h2h, why = self._head_to_head([by_name[n] for n in race], plan.shape)
            if why:
                notes.append(f"head-to-head failed ({why}); decided on the database's medians")
        return decide(eligible, portable, baseline, h2h, tie_key, names, notes)

    def _fresh_worker(self) -> None:
        """Close the worker when the next variant must get a new one (tune/drift.py)."""
        if not self.drift.keeps_worker():
            self.harness.worker.close()

    def _head_to_head(self, cands: list[Candidate], shape: Mapping[str, int]):
        """Finalists (and the baseline) timed in alternation: ({name: Measurement}, error)."""
        self._fresh_worker()
        opts = self.options
        t0 = time.perf_counter()
        try:
            results = self.harness.head_to_head(
                [c.rendered for c in cands], shape,
                rounds=opts.rounds, warm=opts.warm, l2_bytes=opts.l2_bytes,
            )  # fmt: skip
        except WorkerFailure as e:
            return {}, f"{e.kind}: {str(e).splitlines()[0]}"
        except WgslgenError as e:
            return {}, str(e)
        finally:
            self.totals.head_to_head_s += time.perf_counter() - t0
        self.totals.head_to_head_ns += sum(sample_time_ns(m) for m in results.values())
        self.on_step(f"head-to-head @ {format_shape(shape)}")
        return results, None

    def select(self, report: ShapeReport) -> SelectionEntry | None:
        """The selection entry of a decided shape (also kept on the report)."""
        if report.decision is None:
            return None
        shas = {o.name: o.candidate.sha256 for o in report.outcomes}
        report.selection = entry(
            report.decision, report.plan.spec.name, self.device_key.digest(), self.device_label,
            canonical_shape(report.plan.shape), shas,
        )  # fmt: skip
        return report.selection


def tune(
    kernels: Iterable[tuple[KernelSpec, Sequence[Variant] | VariantSpace | None]],
    shapes: Sequence[Mapping[str, int]] | None,
    options: TuneOptions,
    db_path: Path | str,
    on_step: Callable[[str], None] | None = None,
) -> tuple[list[ShapeReport], Totals]:
    """Tune each (kernel, variants, a space or None for all) at ``shapes`` (default: its
    [tune] shapes)."""
    reports = []
    with TuneSession(options, ResultsDB(db_path), on_step) as session:
        for spec, variants in kernels:
            for shape in shapes or spec.tune_shapes:
                report = session.run(session.plan(spec, shape, variants))
                session.select(report)
                reports.append(report)
        return reports, session.totals
