"""`wgslgen vendor`: choose, validate and describe the variants a project vendors, in memory.

Which variants: every variant the selection names for a kernel (winners and defaults, when
their tuned sha256 still matches the rendering), plus one portable fallback per kernel (no
optional feature, fits the `webgpu` limits, covers the most spec shapes). A variant that a
compiler rejects or that fits no limit profile is never vendored: it is listed with why.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wgslgen import __version__
from wgslgen.check.limits import BUILTIN_PROFILES, check_passes
from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import RenderedVariant, render_families
from wgslgen.spec.kernel import KernelSpec, Variant
from wgslgen.tune.db import SelectionEntry, read_selection
from wgslgen.vendor import rules as rl
from wgslgen.vendor.entries import float_sizes, shader_name, variant_entry
from wgslgen.vendor.models import SCHEMA_VERSION, Manifest, schema_text

GENERATOR = f"wgslgen {__version__}"
MANIFEST = "manifest.json"
SCHEMA = "manifest.schema.json"
LANGS = ("rust", "ts", "py")


@dataclass
class VendorPlan:
    """Every file of a vendored folder (manifest included), and what was left out and why."""

    files: dict[str, bytes] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    excluded: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def provenance(r: RenderedVariant, template_sha: str) -> str:
    """The first line of a vendored shader."""
    axes = ",".join(f"{k}={v}" for k, v in r.variant.param_items) or "-"
    return (
        f"// {GENERATOR} vendor: kernel={r.kernel} variant={r.name} family={r.family} "
        f"axes={axes} template_sha256={template_sha} -- generated: do not edit\n"
    )


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


def _portable(renderings: Sequence[RenderedVariant]) -> bool:
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


def _load_selection(path: Path | None, known: Sequence[str]) -> list[SelectionEntry]:
    """The selection's entries; one naming a kernel that exists nowhere is an error."""
    if path is None:
        return []
    try:
        text = path.read_text(encoding="utf-8") if path.is_file() else None
    except UnicodeDecodeError:
        text = None  # read_selection names the file ("not UTF-8 text")
    if text is not None:
        try:
            gen = json.loads(text).get("generator")
        except (ValueError, AttributeError):
            gen = None
        if gen is not None and gen != GENERATOR:
            raise WgslgenError(f"{path}: written by {gen}, this is {GENERATOR}; re-run tune")
    entries = read_selection(path)
    unknown = sorted({e.kernel for e in entries} - {*known, *(k.name for k in _all_kernels())})
    if unknown:
        raise WgslgenError(f"{path}: names unknown kernel(s) {', '.join(unknown)}")
    return entries


def _kernel_entries(
    kernels: Sequence[KernelSpec],
    entries: list[SelectionEntry],
    selection: Path | None,
    chosen: Chosen,
    fallbacks: dict[str, str],
    plan: VendorPlan,
) -> dict[str, Any]:
    """Each kernel's manifest entry: sizes, the variants it uses, its selector rules."""
    infos, samples = rl.device_facts(selection.parent / "results.jsonl") if selection else ({}, {})
    usable = _usable(chosen, plan)
    out: dict[str, Any] = {}
    for spec in kernels:
        mine = [e for e in entries if e.kernel == spec.name]
        rule_list = rl.kernel_rules(
            mine, infos, samples, usable, plan.warnings,
            sizes=_integer_sizes(spec), where=str(selection),
        )  # fmt: skip
        fallback = fallbacks[spec.name]
        default = rl.default_chain(mine, lambda n: n in chosen and _portable(chosen[n]))
        wide = fallbacks.get(spec.name + "+")  # covers shapes the fallback cannot
        default += [wide] if wide and wide not in default else []
        used = {c["variant"] for r in rule_list for c in r["chain"]} | set(default) | {fallback}
        out[spec.name] = {
            "sizes": list(spec.problem.sizes) if spec.problem else [],
            "variants": sorted(used),
            "selection": {
                "rules": rule_list,
                "default_chain": default,
                "portable_fallback": fallback,
            },
        }
    return out


def plan_vendor(
    kernels: Sequence[KernelSpec],
    selection: Path | None,
    langs: Sequence[str] = (),
    engines: Sequence[str] | None = None,
    package: str = "wgslgen_kernels",
    inputs: dict[str, Any] | None = None,
    strict: bool = False,
    known: Sequence[str] = (),
) -> VendorPlan:
    """The whole vendored folder in memory (deterministic: same inputs, same bytes).

    ``known``: every kernel of the templates, also those not vendored (``--kernel``): the
    selection may name them."""
    plan = VendorPlan()
    entries = _load_selection(selection, [*known, *(k.name for k in kernels)])
    chosen, verdicts, fallbacks = _choose(kernels, entries, selection, strict, engines, plan)
    manifest_kernels = _kernel_entries(kernels, entries, selection, chosen, fallbacks, plan)
    variants = _variants(
        plan, chosen, verdicts, {v for k in manifest_kernels.values() for v in k["variants"]}
    )
    plan.files[SCHEMA] = schema_text().encode()
    plan.manifest = {
        "schema_version": SCHEMA_VERSION,
        "abi_version": _abi(variants),
        "generator": GENERATOR,
        "files": {},
        "kernels": manifest_kernels,
        "variants": variants,
        "excluded": [{"variant": v, "reason": r} for v, r in plan.excluded],
        "warnings": sorted(set(plan.warnings)),
        "inputs": inputs or {},
    }
    _add_bindings(plan, langs, package)
    plan.manifest["files"] = {
        p: hashlib.sha256(b).hexdigest() for p, b in sorted(plan.files.items())
    }
    Manifest.model_validate(plan.manifest)
    plan.files[MANIFEST] = dumps(plan.manifest).encode()
    return plan


Chosen = dict[str, list[RenderedVariant]]


def _integer_sizes(spec: KernelSpec) -> list[str]:
    """The sizes the selector may bucket: not the float parameters (eps)."""
    floats = set(float_sizes(spec))
    return [s for s in (spec.problem.sizes if spec.problem else ()) if s not in floats]


def _choose(kernels, entries, selection, strict, engines, plan) -> tuple[Chosen, dict, dict]:
    """Render the named variants and a fallback per kernel; drop (and list) the invalid."""
    chosen: Chosen = {}
    for spec in kernels:
        mine = [e for e in entries if e.kernel == spec.name]
        for name in _named(spec, mine, str(selection), strict, plan):
            chosen[name] = render_families(next(v for v in spec.variants if v.name == name))
    verdicts = _validate([r for rs in chosen.values() for r in rs], engines)
    fallbacks = _choose_fallbacks(kernels, engines, verdicts)
    for name, renderings in fallbacks.values():
        chosen[name] = renderings
    for name, (ok, why, _) in sorted(verdicts.items()):
        if not ok:
            plan.excluded.append((name, why))
            chosen.pop(name, None)
    return chosen, verdicts, {k: name for k, (name, _) in fallbacks.items() if name in chosen}


def _usable(chosen: Chosen, plan: VendorPlan):
    """Why a tuned choice cannot be used (not vendored, or its record is stale), or None."""
    from wgslgen.tune.selection import result_sha256

    shas = {
        n: result_sha256(next(r for r in rs if r.family in ("any", "naga")))
        for n, rs in chosen.items()
    }

    def usable(variant: str, sha: str | None) -> str | None:
        if variant not in chosen:
            why = dict(plan.excluded).get(variant, "not a variant of the templates now")
            return f"{variant} is not vendored ({why})"
        if sha is not None and sha != shas[variant]:
            now = shas[variant][:12]
            return f"tuning record of {variant} is stale (sha256 {sha[:12]} != {now}): dropped"
        return None

    return usable


def _variants(plan: VendorPlan, chosen: Chosen, verdicts: dict, used: set[str]) -> dict:
    """Shader files (provenance line first) and manifest entries of the variants in use."""
    from wgslgen.render.renderer import template_sha256

    variants: dict[str, Any] = {}
    for name in sorted(used):
        rs = chosen[name]
        tsha = template_sha256(rs[0].variant.spec)
        for r in rs:
            plan.files[shader_name(name, r.family)] = (provenance(r, tsha) + r.source).encode()
        by = verdicts.get(name, (True, "", set()))[2]
        variants[name] = variant_entry(rs, _portable(rs), by)
    return variants


def _all_kernels() -> list[KernelSpec]:
    from wgslgen.spec.loader import discover

    return discover(None)


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
        found = _first(spec, _portable, engines, verdicts)
        if found is None:
            raise WgslgenError(
                f"kernel {spec.name}: no variant is portable (no optional feature, fits webgpu)"
            )
        out[spec.name] = (found[0].name, found[1])
        wide = _first(spec, _fits_webgpu, engines, verdicts)
        if wide is not None and _coverage(wide[0]) > _coverage(found[0]):
            out[spec.name + "+"] = (wide[0].name, wide[1])
    return out


def _abi(variants: dict[str, Any]) -> str:
    """A digest of what a caller binds, dispatches and creates pipelines with: changes
    exactly when that changes."""
    # "constants" and "float_sizes" are in a variant only when it has some: the digests of the
    # others stay.
    keys = (
        "bindings", "uniform", "passes", "scratch", "derived", "sizes", "constants", "float_sizes",
    )  # fmt: skip
    abi = {n: {k: v[k] for k in keys if k in v} for n, v in variants.items()}
    return hashlib.sha256(json.dumps(abi, sort_keys=True).encode()).hexdigest()[:16]


def _add_bindings(plan: VendorPlan, langs: Sequence[str], package: str) -> None:
    for lang in langs:
        if lang not in LANGS:
            raise WgslgenError(f"{lang!r}: expected one of {', '.join(LANGS)}", option="lang")
    if "py" in langs:
        from wgslgen.vendor.lang_py import python_files

        plan.files.update(python_files(plan.manifest))
    if "rust" in langs:
        from wgslgen.vendor.lang_rust import rust_files

        plan.files.update(rust_files(plan.manifest, package))
    if "ts" in langs:
        from wgslgen.vendor.lang_ts import ts_files

        plan.files.update(ts_files(plan.manifest, plan.files))


def dumps(manifest: dict[str, Any]) -> str:
    """Deterministic JSON text."""
    return json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
