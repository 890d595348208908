"""Selector rules from the tuning results: adapter match + shape buckets → candidate chain.

Browsers show only vendor and architecture, so every tuned device gives two rules: one
matching its vendor/device/backend (native clients) and one matching its vendor (and
architecture when known) alone. Shapes fall into buckets with explicit edges: between two
tuned values of a size the edge is their geometric mean; a size tuned at one value only is
unbounded.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from wgslgen.tune.db import ResultsDB, SelectionEntry


def device_facts(results_path: Path) -> tuple[dict[str, dict], dict[tuple[str, str, str], int]]:
    """Per device digest its device_info, and samples per (sha256, device, shape)."""
    if not results_path.is_file():
        return {}, {}
    infos: dict[str, dict] = {}
    samples: dict[tuple[str, str, str], int] = {}
    for r in ResultsDB(results_path).load().records:
        infos.setdefault(r.key.device, r.device_info)
        if r.measurement is not None and r.status == "ok":
            samples[(r.key.source_sha256, r.key.device, r.key.shape)] = r.measurement.reps
    return infos, samples


def _parse(shape: str) -> dict[str, int]:
    return {k: int(v) for k, v in (p.split("=", 1) for p in shape.split(",") if p)}


def buckets(shapes: Sequence[dict[str, int]]) -> list[dict[str, dict[str, int | None]]]:
    """For each shape, per size the interval [min, max) that holds it and no other tuned value."""
    values = {k: sorted({s[k] for s in shapes}) for k in (shapes[0] if shapes else {})}
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
    infos: Mapping[str, dict],
    samples: Mapping[tuple[str, str, str], int],
    usable: Callable[[str, str | None], str | None],
    warnings: list[str],
) -> list[dict[str, Any]]:
    """One kernel's rules, most specific first; ``usable(variant, sha)`` says why not (or None)."""
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
            )
            continue
        group = sorted(group, key=lambda e: e.shape)
        for e, bucket in zip(group, buckets([_parse(e.shape) for e in group]), strict=True):
            chain = []
            for choice in (e.winner, e.default):
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


def default_chain(entries: Sequence[SelectionEntry], ok: Callable[[str], bool]) -> list[str]:
    """The portable defaults tuning chose, most often chosen first."""
    counts = Counter(e.default.variant for e in entries if e.default is not None)
    return [n for n, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if ok(n)]
