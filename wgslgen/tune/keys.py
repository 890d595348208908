"""Results keys: which code a record is about (result_sha256) and how it was judged
(judge_sha256); what `db prune` keeps (current_keys)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import RenderedVariant, _body
from wgslgen.spec.expressions import Expression
from wgslgen.spec.kernel import KernelSpec, Variant

# Bump when the harness or the reference comparison changes how a variant is judged (inputs,
# canaries, comparison rule): every record judged the old way is then measured again.
JUDGE_VERSION = "1"


def result_sha256(rendered: RenderedVariant) -> str:
    """The results key of a rendering: sha256 of its variant name and its code.

    The provenance header is left out: it carries the template's sha256, so any template edit
    would change every variant's text and throw away results whose code did not change. The
    name is kept in: two variants with the same code (an axis that only the dispatch reads)
    must not share results.
    """
    return hashlib.sha256(f"{rendered.name}\n{_body(rendered.source)}".encode()).hexdigest()


def judge_sha256(variant: Variant) -> str:
    """What, besides the code, decides a variant's outcome: how it is dispatched and fed
    (dispatch, derived values, preconditions, counts, interface), the tolerance it is held
    to, the values of its WGSL overrides (kernel.toml [overrides]), the reference's code and
    the judging code's version (not the input seed: the key carries it apart, so a prune can
    judge records of any seed).

    Tightening one tolerance changes this only for the variants it applies to, and a
    precondition that holds from a variant's axis values alone (an axis added as
    ``fixed_x == 0 or x == fixed_x``) is not part of that variant's digest, so adding such an
    axis keeps the records of the variants it leaves as they were.
    """
    spec = variant.spec
    problem = spec.problem
    tol = variant.tolerance()
    reference = spec.reference_path
    doc = {
        "judge_version": JUDGE_VERSION,
        "problem": None
        if problem is None
        else {
            "sizes": list(problem.sizes),
            "derived": [(n, e.text) for n, e in problem.derived],
            "preconditions": [
                p.text for p in problem.preconditions if not _holds_anyway(p, variant.params)
            ],
            "passes": [(p.entry_point, [d.text for d in p.dispatch]) for p in problem.passes],
            "counts": [(n, e.text) for n, e in problem.counts],
        },
        "interface": None if spec.plain else variant.interface.to_dict(),
        "tolerance": [tol.rtol, tol.atol],
        "reference_sha256": hashlib.sha256(reference.read_bytes()).hexdigest()
        if reference is not None and reference.is_file()
        else None,
    }
    # [overrides] values change the run as code does; only a kernel that has them gets the
    # key, so the records of every kernel without them keep their digest.
    if variant.override_values:
        doc["constants"] = variant.override_values
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _holds_anyway(precondition: Expression, params: dict[str, Any]) -> bool:
    """True when ``precondition`` holds from the axis values alone, whatever the shape (it is
    decided without reading a size: reading one fails, and so counts as not holding)."""
    try:
        return precondition(params) is True
    except WgslgenError:
        return False


def recorded_variants(spec: KernelSpec, records: Iterable[Any]) -> list[Variant]:
    """The variants of ``spec`` that ``records`` are about and that its space still holds
    (found by their axis values, so a space of a million variants is never enumerated).

    A record made before an axis was added lacks that axis: it is about the variant at the
    axis's baseline (whether it still is, its code and judging digest tell)."""
    baselines = {a.name: a.baseline for a in spec.axes}
    found: dict[int, Variant] = {}
    for r in records:
        if r.kernel != spec.name:
            continue
        index = spec.space.index_of({**baselines, **r.params})
        if index is not None and index not in found:
            variant = spec.space.at(index)
            if variant is not None:
                found[index] = variant
    return list(found.values())


def current_keys(
    kernels: Iterable[KernelSpec], on_variant=None, records: Iterable[Any] | None = None
) -> set[tuple[str, str]]:
    """(results sha256, judge) of the variants of ``kernels`` (all of them, or only those
    ``records`` are about) as the templates render and judge them now: what `db prune` keeps."""
    from wgslgen.render.renderer import render

    records = None if records is None else list(records)
    keys: set[tuple[str, str]] = set()
    for spec in kernels:
        if spec.problem is None:
            continue  # nothing that cannot run was ever timed
        variants = spec.variants if records is None else recorded_variants(spec, records)
        for variant in variants:
            keys.add((result_sha256(render(variant, "naga")), judge_sha256(variant)))
            if on_variant:
                on_variant(variant.name)
    return keys
