"""Selector rules from the tuning results: adapter match + shape buckets → candidate chain.

Browsers show only vendor and architecture, so every tuned device gives two rules: one
matching its vendor/device/backend (native clients) and one matching its vendor (and
architecture when known) alone. Shapes fall into buckets with explicit edges: between two
tuned values of a size the edge is their geometric mean; a size tuned at one value only is
unbounded. Only integer sizes are bucketed: a float parameter of the shape (eps = 1e-5) is no
size, and the selector ignores it.

A rule's chain is the entry's winner and portable default; where both are narrower than the
kernel's portable fallback (a variant fixed to one head_dim), the fastest variant measured at
that shape and device that is as wide as the fallback follows them, so that a caller at
another head_dim gets a tuned variant, not the fallback.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wgslgen.errors import WgslgenError
from wgslgen.spec.kernel import parse_shape
from wgslgen.tune.db import ResultsDB, SelectionEntry, latest
from wgslgen.tune.selection_file import Choice


@dataclass
class TuningFacts:
    """What results.jsonl holds beside the selection."""

    infos: dict[str, dict] = field(default_factory=dict)  # device digest -> device_info
    samples: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (sha, device, shape)
    # (kernel, device, shape) -> every variant measured ok there, fastest first
    timings: dict[tuple[str, str, str], list[Choice]] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)  # "results.jsonl:line: why", skipped


def tuning_facts(results_path: Path) -> TuningFacts:
    """The device facts, sample counts and ok timings of ``results_path`` (latest per key)."""
    facts = TuningFacts()
    if not results_path.is_file():
        return facts
    loaded = ResultsDB(results_path).load()
    # By name: these go into the manifest, which must not depend on where the project sits.
    facts.unreadable = [f"{results_path.name}:{n}: {why}" for n, why in loaded.problems]
    for r in latest(loaded.records):
        facts.infos.setdefault(r.key.device, r.device_info)
        if r.measurement is not None and r.status == "ok":
            facts.samples[(r.key.source_sha256, r.key.device, r.key.shape)] = r.measurement.reps
            facts.timings.setdefault((r.kernel, r.key.device, r.key.shape), []).append(
                Choice(r.variant, r.measurement.median_ns, r.key.source_sha256)
            )
    for timed in facts.timings.values():
        timed.sort(key=lambda c: (c.median_ns, c.variant))
    return facts


def wide_alternates(
    entries: Sequence[SelectionEntry],
    timings: Mapping[tuple[str, str, str], list[Choice]],
    wide: Callable[[str], bool],
    usable: Callable[[str, str | None], str | None],
    roles: Sequence[str] = ("winner", "default"),
) -> dict[tuple[str, str], Choice]:
    """Per (device, shape) of ``entries`` whose choices in ``roles`` are all narrow (not
    ``wide``), the fastest usable wide variant measured there, where there is one."""
    out = {}
    for e in entries:
        chosen = [getattr(e, role) for role in roles]
        if any(c is not None and wide(c.variant) for c in chosen):
            continue
        for c in timings.get((e.kernel, e.device, e.shape), ()):
            if wide(c.variant) and usable(c.variant, c.sha256) is None:
                out[(e.device, e.shape)] = c
                break
    return out


def _parse(shape: str, where: str = "selection") -> dict[str, int | float]:
    """A selection entry's ``k=v,...`` shape; a bad one is an error naming ``where``."""
    try:
        return parse_shape(shape)
    except WgslgenError as exc:
        raise WgslgenError(
            f"{where}: shape {shape!r}: {exc}", hint="re-run `wgslgen tune` for this kernel"
        ) from None


def _integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def buckets(
    shapes: Sequence[Mapping[str, int | float]], sizes: Collection[str] | None = None
) -> list[dict[str, dict[str, int | None]]]:
    """For each shape, per size the interval [min, max) that holds it and no other tuned value.

    Only ``sizes`` (default: every key) whose values are integers in every shape are bucketed:
    a float parameter (eps) is not a size, and the selector ignores it."""
    keys = [
        k
        for k in (shapes[0] if shapes else {})
        if (sizes is None or k in sizes) and all(_integer(s.get(k)) for s in shapes)
    ]
    values = {k: sorted({int(s[k]) for s in shapes}) for k in keys}
    out = []
    for s in shapes:
        rule = {}
        for k, vals in values.items():
            if len(vals) == 1:
                continue
            i = vals.index(s[k])
            lo = None if i == 0 else math.isqrt(vals[i - 1] * vals[i])
            hi = None if i == len(vals) - 1 else math.isqrt(vals[i] * vals[i + 1])
            rule[k] = {"min": lo, "max": hi}
        out.append(rule)
    return out


def _matches(info: Mapping[str, Any]) -> list[dict[str, str | None]]:
    specific = {
        "vendor": info.get("vendor") or None,
        "architecture": info.get("architecture") or None,
        "device": info.get("device") or None,
        "backend": info.get("backend") or None,
    }
    browser = {"vendor": specific["vendor"], "architecture": specific["architecture"]}
    return [specific, browser] if specific["vendor"] else [specific]


def kernel_rules(
    entries: Sequence[SelectionEntry],
    facts: TuningFacts,
    usable: Callable[[str, str | None], str | None],
    warnings: list[str],
    sizes: Collection[str] | None = None,
    where: str = "selection",
    alternates: Mapping[tuple[str, str], Choice] | None = None,
) -> list[dict[str, Any]]:
    """One kernel's rules, most specific first; ``usable(variant, sha)`` says why not (or None).

    ``sizes``: the kernel's integer sizes, the only ones a rule buckets; ``where``: the
    selection file, named by errors; ``alternates``: wide_alternates, appended to their
    entries' chains."""
    infos, samples, alternates = facts.infos, facts.samples, alternates or {}
    by_device: dict[str, list[SelectionEntry]] = defaultdict(list)
    for e in entries:
        by_device[e.device].append(e)
    rules = []
    for device, group in sorted(by_device.items()):
        info = infos.get(device)
        if info is None:
            warnings.append(
                f"{group[0].kernel}: tuning on {group[0].device_label} ({device}) has no "
                "device facts in results.jsonl; its rules are dropped"
                + (
                    f" ({len(facts.unreadable)} line(s) of it could not be read)"
                    if facts.unreadable
                    else ""
                )
            )
            continue
        group = sorted(group, key=lambda e: e.shape)
        shapes = [_parse(e.shape, f"{where}: entry kernel={e.kernel}") for e in group]
        for e, bucket in zip(group, buckets(shapes, sizes), strict=True):
            chain = []
            for choice in (e.winner, e.default, alternates.get((e.device, e.shape))):
                if choice is None or any(c["variant"] == choice.variant for c in chain):
                    continue
                why = usable(choice.variant, choice.sha256)
                if why:
                    warnings.append(f"{e.kernel} on {e.device_label} at {e.shape}: {why}")
                    continue
                n = samples.get((choice.sha256 or "", device, e.shape))
                chain.append(
                    {"variant": choice.variant, "median_ns": choice.median_ns,
                     "samples": n, "sha256": choice.sha256}
                )  # fmt: skip
            if not chain:
                continue
            for match in _matches(info):
                rules.append(
                    {"label": e.device_label, "match": match, "shape": bucket, "chain": chain}
                )
    rules.sort(key=lambda r: -sum(v is not None for v in r["match"].values()))
    return rules


def default_chain(
    entries: Sequence[SelectionEntry],
    ok: Callable[[str], bool],
    alternates: Mapping[tuple[str, str], Choice] | None = None,
    wide: Callable[[str], bool] = lambda _: True,
) -> list[str]:
    """The portable defaults tuning chose, most often chosen first; where none is ``wide``,
    then ``alternates`` (wide_alternates of the defaults), most often chosen first."""

    def by_count(names: list[str]) -> list[str]:
        counts = Counter(names)
        return [n for n, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if ok(n)]

    chain = by_count([e.default.variant for e in entries if e.default is not None])
    if not any(wide(n) for n in chain):
        chain += [n for n in by_count([c.variant for c in (alternates or {}).values()])
                  if n not in chain]  # fmt: skip
    return chain
