"""`wgslgen vendor`: the vendored folder in memory: its manifest (kernels, selector rules,
variants), shaders and bindings, from the variants candidates.py chose.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wgslgen import __version__
from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import RenderedVariant
from wgslgen.spec.kernel import KernelSpec
from wgslgen.tune.db import SelectionEntry, read_selection
from wgslgen.vendor import rules as rl
from wgslgen.vendor.candidates import Chosen, Widening, choose, is_portable, unusable_reason
from wgslgen.vendor.entries import float_sizes, shader_name, variant_entry
from wgslgen.vendor.models import SCHEMA_VERSION, Manifest, schema_text

GENERATOR = f"wgslgen {__version__}"
MANIFEST = "manifest.json"
SCHEMA = "manifest.schema.json"
README = "README.md"
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


def _load_selection(
    path: Path | None, known: Sequence[str], strict: bool, plan: VendorPlan
) -> list[SelectionEntry]:
    """The selection's entries; those naming a kernel that exists nowhere (renamed, removed)
    are dropped with a warning, or are an error with ``strict``."""
    if path is None:  # outside a project that tuned: the user may not know it
        plan.warnings.append("no selection file: every kernel gets only its portable fallback "
                             "(tune first, or name a selection file)")  # fmt: skip
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
        message = f"{path}: names unknown kernel(s) {', '.join(unknown)}"
        if strict:
            raise WgslgenError(message, hint="re-run `wgslgen tune` or remove their entries")
        # by file name: the manifest must not depend on where the project sits
        plan.warnings.append(f"{path.name}: names unknown kernel(s) {', '.join(unknown)}; "
                             "their entries skipped")  # fmt: skip
    return [e for e in entries if e.kernel not in unknown]


def _kernel_entries(
    kernels: Sequence[KernelSpec],
    entries: list[SelectionEntry],
    selection: Path | None,
    chosen: Chosen,
    fallbacks: dict[str, str],
    plan: VendorPlan,
    facts: rl.TuningFacts,
    widening: dict[str, Widening],
) -> dict[str, Any]:
    """Each kernel's manifest entry: sizes, the variants it uses, its selector rules."""
    usable = unusable_reason(chosen, plan)
    out: dict[str, Any] = {}
    for spec in kernels:
        mine = [e for e in entries if e.kernel == spec.name]
        widened = widening[spec.name]
        rule_list = rl.kernel_rules(
            mine, facts, usable, plan.warnings,
            sizes=_integer_sizes(spec), where=str(selection), alternates=widened.alternates,
        )  # fmt: skip
        fallback = fallbacks[spec.name]
        default = rl.default_chain(
            mine, lambda n: n in chosen and is_portable(chosen[n]), widened.portable, widened.wide
        )
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
    db: Path | None = None,
) -> VendorPlan:
    """The whole vendored folder in memory (deterministic: same inputs, same bytes).

    ``db``: the results database the selection was made from (default: results.jsonl beside
    the selection); its timings give the device facts and the wide alternates.

    ``known``: every kernel of the templates, also those not vendored (``--kernel``): the
    selection may name them."""
    plan = VendorPlan()
    entries = _load_selection(selection, [*known, *(k.name for k in kernels)], strict, plan)
    results = db or (selection.parent / "results.jsonl" if selection else None)
    facts = rl.tuning_facts(results) if results else rl.TuningFacts()
    plan.warnings += [f"{line}; unreadable record skipped" for line in facts.unreadable]
    chosen, verdicts, fallbacks, widening = choose(
        kernels, entries, selection, strict, engines, plan, facts
    )
    manifest_kernels = _kernel_entries(
        kernels, entries, selection, chosen, fallbacks, plan, facts, widening
    )
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
    from wgslgen.vendor.readme import readme_text

    plan.files[README] = readme_text(plan.manifest, langs, package).encode()
    plan.manifest["files"] = {
        p: hashlib.sha256(b).hexdigest() for p, b in sorted(plan.files.items())
    }
    Manifest.model_validate(plan.manifest)
    plan.files[MANIFEST] = dumps(plan.manifest).encode()
    return plan


def _integer_sizes(spec: KernelSpec) -> list[str]:
    """The sizes the selector may bucket: not the float parameters (eps)."""
    floats = set(float_sizes(spec))
    return [s for s in (spec.problem.sizes if spec.problem else ()) if s not in floats]


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
        variants[name] = variant_entry(rs, is_portable(rs), by)
    return variants


def _all_kernels() -> list[KernelSpec]:
    from wgslgen.spec.loader import discover

    return discover(None)


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
