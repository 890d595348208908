"""The manifest: what a caller of a generated variant needs to know, as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wgslgen import __version__
from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import RenderedVariant, stored_template_path, template_sha256
from wgslgen.spec.kernel import KernelSpec

MANIFEST_NAME = "manifest.json"
GENERATOR = f"wgslgen {__version__}"


def kernel_entry(spec: KernelSpec) -> dict[str, Any]:
    """The manifest's description of a kernel: its axes, baseline and problem."""
    problem = spec.problem
    return {
        "template": stored_template_path(spec),
        "template_sha256": template_sha256(spec),
        "plain": spec.plain,
        "entry_point": spec.entry_point,
        "description": spec.description,
        "axes": [
            {"name": a.name, "key": a.key, "values": list(a.values), "baseline": a.baseline}
            for a in spec.axes
        ],
        "baseline": spec.baseline.name,
        "problem": None
        if problem is None
        else {
            "sizes": list(problem.sizes),
            "derived": {n: e.text for n, e in problem.derived},
            "preconditions": [p.text for p in problem.preconditions],
            "dispatch": [d.text for d in problem.dispatch],
            "passes": [
                {"entry_point": p.entry_point, "dispatch": [d.text for d in p.dispatch]}
                for p in problem.passes
            ],
            "counts": {n: e.text for n, e in problem.counts},
        },
    }


def variant_entry(
    rendered: RenderedVariant, facts: dict[str, Any], fits: dict[str, list[str]]
) -> dict:
    """The manifest's record of one rendering of a variant (``facts`` per entry point)."""
    variant = rendered.variant
    problem = variant.spec.problem
    first = facts[rendered.entry_point]
    passes = [
        {
            "entry_point": p.entry_point,
            "dispatch": [d.text for d in p.dispatch],
            "workgroup_size": list(facts[p.entry_point].workgroup_size),
            "workgroup_bytes": facts[p.entry_point].workgroup_bytes,
        }
        for p in (problem.passes if problem else ())
    ]
    return {
        "kernel": rendered.kernel,
        "name": rendered.name,
        "params": rendered.params,
        "family": rendered.family,
        "file": rendered.relpath,
        "sha256": rendered.sha256,
        "entry_point": rendered.entry_point,
        "workgroup_size": list(first.workgroup_size),
        "invocations": max(f.invocations for f in facts.values()),
        "workgroup_bytes": max(f.workgroup_bytes for f in facts.values()),
        "features": sorted(rendered.features),
        "interface": variant.interface.to_dict() if not variant.spec.plain else None,
        "dispatch": [d.text for d in problem.dispatch] if problem else None,
        "passes": passes if len(passes) > 1 else None,
        "preconditions": [p.text for p in problem.preconditions] if problem else None,
        "baseline": variant.is_baseline,
        "fits": fits,
        "generator": GENERATOR,
    }


def dumps(manifest: dict[str, Any]) -> str:
    """Deterministic JSON text of a manifest."""
    return json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load(path: Path) -> dict[str, Any]:
    """Read a manifest; a corrupt file is named with line:col."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WgslgenError(f"{path}: no manifest; run `wgslgen build` first") from None
    except json.JSONDecodeError as exc:
        raise WgslgenError(
            f"{path}:{exc.lineno}:{exc.colno}: corrupt manifest: {exc.msg}"
        ) from None
    except UnicodeDecodeError:
        raise WgslgenError(f"{path}: corrupt manifest: not UTF-8 text") from None
    if not isinstance(data, dict) or "variants" not in data:
        raise WgslgenError(f"{path}: not a wgslgen manifest (no 'variants')")
    return data
