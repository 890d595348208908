"""Which variants a vendored folder holds: those the selection names (when their tuned sha256
still matches the rendering), the wide alternates of narrow choices (rules.wide_alternates),
and per kernel a portable fallback; each validated by the real compilers, the rejected listed
with why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wgslgen.check.limits import BUILTIN_PROFILES, check_passes
from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import RenderedVariant, render_families
from wgslgen.spec.kernel import KernelSpec, Variant
from wgslgen.tune.db import SelectionEntry
from wgslgen.tune.selection_file import Choice
from wgslgen.vendor import rules as rl

if TYPE_CHECKING:
    from wgslgen.vendor.plan import VendorPlan


def _distance(variant: Variant) -> int:
    base = variant.spec.baseline.params
    return sum(1 for k, v in variant.params.items() if base.get(k) != v)


def _coverage(variant: Variant) -> int:
    shapes = [*variant.spec.test_shapes, *variant.spec.tune_shapes]
    # The same shapes doubled: between two variants that cover the spec's shapes, prefer the
    # one with room to spare (a longer max_history).
    shapes += [{k: 2 * v for k, v in s.items()} for s in shapes]
    n = 0
    for s in shapes:
        try:
            variant.problem_scope(s)
            n += 1
        except WgslgenError:
            pass
    return n


def is_portable(renderings: Sequence[RenderedVariant]) -> bool:
    """No optional feature, and within the `webgpu` limits."""
    webgpu = BUILTIN_PROFILES["webgpu"]
    return all(not r.features and not check_passes(r.facts, webgpu, r.features) for r in renderings)


def portable_order(spec: KernelSpec) -> list[Variant]:
    """Fallback candidates: most spec shapes covered, then closest to the baseline, then name."""
    return sorted(spec.variants, key=lambda v: (-_coverage(v), _distance(v), v.name))


def _validate(renderings: list[RenderedVariant], engines: Sequence[str] | None) -> dict:
    """Per variant name: (ok, why, engines that accepted it)."""
    from wgslgen.check.validate import validate

    profiles = list(BUILTIN_PROFILES.values())
    report = validate(renderings, profiles, engines)
    out: dict[str, tuple[bool, str, set[str]]] = {}
    for res in report.results:
        name = res.rendered.name
        ok, why, by = out.get(name, (True, "", set()))
        errors = res.compile_errors()
        if errors:
            ok, why = False, f"{errors[0].engine}: {errors[0].message}"
        elif res.interface:  # the runtime binds what kernel.toml says: it would not bind
            ok, why = False, f"differs from kernel.toml: {res.interface[0]}"
        elif not any(res.fits(p.name) for p in profiles):
            reasons = "; ".join(res.profiles.get("webgpu", []))
            ok, why = False, f"fits no limit profile (webgpu: {reasons})"
        by |= {e for e, v in res.engines.items() if v.ok}
        out[name] = (ok, why, by)
    return out


def _named(
    spec: KernelSpec, entries: Sequence[SelectionEntry], where: str, strict: bool, plan: VendorPlan
) -> list[str]:
    """The variants the selection names for ``spec``; an unknown one is named (fatal if strict)."""
    known = {v.name for v in spec.variants}
    names: list[str] = []
    for e in entries:
        for role in ("winner", "default"):
            choice = getattr(e, role)
            if choice is None:
                continue
            if choice.variant not in known:
                msg = (
                    f"{where}: entry kernel={e.kernel} shape={e.shape} names unknown "
                    f"{role} variant {choice.variant!r} (not a variant of {spec.name} now)"
                )
                if strict:
                    raise WgslgenError(msg, hint="re-run `wgslgen tune` for this kernel")
                plan.warnings.append(msg + "; dropped")
                continue
            names.append(choice.variant)
    return list(dict.fromkeys(names))


Chosen = dict[str, list[RenderedVariant]]


@dataclass
class Widening:
    """A kernel's wide alternates (rules.wide_alternates): of its winners and defaults, and
    portable ones of its defaults; and what counts as wide for it."""

    alternates: dict[tuple[str, str], Choice]
    portable: dict[tuple[str, str], Choice]
    wide: Callable[[str], bool]


def choose(
    kernels: Sequence[KernelSpec],
    entries: Sequence[SelectionEntry],
    selection: Path | None,
    strict: bool,
    engines: Sequence[str] | None,
    plan: VendorPlan,
    facts: rl.TuningFacts,
) -> tuple[Chosen, dict, dict[str, str], dict[str, Widening]]:
    """Render the named variants, their wide alternates and a fallback per kernel; drop (and
    list) the invalid."""
    chosen: Chosen = {}
    widening: dict[str, Widening] = {}
    for spec in kernels:
        mine = [e for e in entries if e.kernel == spec.name]
        for name in _named(spec, mine, str(selection), strict, plan):
            chosen[name] = render_families(next(v for v in spec.variants if v.name == name))
        widening[spec.name] = _widening(spec, mine, facts, chosen)
    verdicts = _validate([r for rs in chosen.values() for r in rs], engines)
    fallbacks = _choose_fallbacks(kernels, engines, verdicts)
    for name, renderings in fallbacks.values():
        chosen[name] = renderings
    for name, (ok, why, _) in sorted(verdicts.items()):
        if not ok:
            plan.excluded.append((name, why))
            chosen.pop(name, None)
    fallback_names = {k: name for k, (name, _) in fallbacks.items() if name in chosen}
    return chosen, verdicts, fallback_names, widening


def _widening(
    spec: KernelSpec, entries: Sequence[SelectionEntry], facts: rl.TuningFacts, chosen: Chosen
) -> Widening:
    """``spec``'s wide alternates, rendered into ``chosen``; wide: covers as many spec shapes
    as the portable fallback would."""
    by_name = {v.name: v for v in spec.variants}
    coverage: dict[str, int] = {}
    order = portable_order(spec)
    least = _coverage(order[0]) if order else 0

    def wide(name: str) -> bool:
        if name not in by_name:
            return False
        if name not in coverage:
            coverage[name] = _coverage(by_name[name])
        return coverage[name] >= least

    rendered: Chosen = {}

    def renderings(name: str) -> list[RenderedVariant]:
        if name not in rendered:
            rendered[name] = chosen.get(name) or render_families(by_name[name])
        return rendered[name]

    def current(name: str, sha: str | None) -> str | None:
        if sha is not None and sha != _tuned_sha(renderings(name)):
            return "stale"
        chosen[name] = renderings(name)
        return None

    def wide_portable(name: str) -> bool:
        return wide(name) and is_portable(renderings(name))

    return Widening(
        alternates=rl.wide_alternates(entries, facts.timings, wide, current),
        portable=rl.wide_alternates(entries, facts.timings, wide_portable, current, ("default",)),
        wide=wide,
    )


def _tuned_sha(renderings: Sequence[RenderedVariant]) -> str:
    """The sha256 a tuning record of this variant carries."""
    from wgslgen.tune.selection import result_sha256

    return result_sha256(next(r for r in renderings if r.family in ("any", "naga")))


def unusable_reason(chosen: Chosen, plan: VendorPlan) -> Callable[[str, str | None], str | None]:
    """Why a tuned choice cannot be used (not vendored, or its record is stale), or None."""
    shas = {n: _tuned_sha(rs) for n, rs in chosen.items()}

    def usable(variant: str, sha: str | None) -> str | None:
        if variant not in chosen:
            why = dict(plan.excluded).get(variant, "not a variant of the templates now")
            return f"{variant} is not vendored ({why})"
        if sha is not None and sha != shas[variant]:
            now = shas[variant][:12]
            return f"tuning record of {variant} is stale (sha256 {sha[:12]} != {now}): dropped"
        return None

    return usable


def _fits_webgpu(renderings: Sequence[RenderedVariant]) -> bool:
    webgpu = BUILTIN_PROFILES["webgpu"]
    return all(not check_passes(r.facts, webgpu, r.features) for r in renderings)


def _first(spec: KernelSpec, ok, engines, verdicts) -> tuple[Variant, list[RenderedVariant]] | None:
    """The first variant in portable_order whose renderings satisfy ``ok`` and compile."""
    for variant in portable_order(spec):
        rs = render_families(variant)
        if not ok(rs):
            continue
        if variant.name not in verdicts:
            verdicts.update(_validate(rs, engines))
        if verdicts[variant.name][0]:
            return variant, rs
    return None


def _choose_fallbacks(kernels, engines, verdicts) -> dict[str, tuple[str, list[RenderedVariant]]]:
    """Per kernel the portable fallback, and (key ``kernel + "+"``) a wider variant when one
    that fits `webgpu` with optional features covers more spec shapes than it."""
    out = {}
    for spec in kernels:
        found = _first(spec, is_portable, engines, verdicts)
        if found is None:
            refused = [(n, v[1]) for n, v in verdicts.items() if not v[0]]
            first = next(
                (f"; {n}: {why}" for n, why in refused if n.startswith(spec.name + "__")), ""
            )
            raise WgslgenError(
                f"kernel {spec.name}: no variant is portable (no optional feature, fits webgpu,"
                f" compiles, matches kernel.toml){first}"
            )
        out[spec.name] = (found[0].name, found[1])
        wide = _first(spec, _fits_webgpu, engines, verdicts)
        if wide is not None and _coverage(wide[0]) > _coverage(found[0]):
            out[spec.name + "+"] = (wide[0].name, wide[1])
    return out
