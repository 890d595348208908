"""`wgslgen list`: the kernels, where each comes from, their axes, variant counts and
descriptions."""

from __future__ import annotations

import argparse
from typing import Any

from wgslgen.cli.kernels import selected_kernels
from wgslgen.cli.output import add_common_options, console, emit_json, print_table
from wgslgen.config import default_project, source_of
from wgslgen.spec.kernel import KernelSpec

SCHEMA_VERSION = 1  # of `list --json` (docs/json-output.md)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``list`` command."""
    p = sub.add_parser(
        "list", help="list kernels, where they come from, axes, variant counts, descriptions"
    )
    add_common_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print one row per kernel."""
    project = getattr(args, "project", None) or default_project()
    kernels = selected_kernels(args)
    if args.json:
        emit_json(
            {
                "schema_version": SCHEMA_VERSION,
                "project": str(project.file) if project.file else None,
                "kernels": [_kernel_json(k, source_of(k.folder, project)) for k in kernels],
            }
        )
        return 0
    rows, counts = [], [k.variant_count() for k in kernels]
    for k, n in zip(kernels, counts, strict=True):
        axes = (
            "  ".join(f"{a.name}({a.key})={{{','.join(map(str, a.values))}}}" for a in k.axes)
            or "(plain .wgsl)"
        )
        shown = f"{n.n}" if n.exact else f"<= {n.n}"
        rows.append((k.name, source_of(k.folder, project), shown, axes, k.baseline.name))
    print_table("kernels", ["kernel", "source", "variants", "axes", "baseline"], rows)
    # Descriptions go under the table, one line each: a column would squeeze the axes.
    for k in kernels:
        if k.description:
            console.print(f"{k.name}: {k.description}", markup=False)
    for k, n in zip(kernels, counts, strict=True):
        if not n.exact:  # too many combinations to evaluate every constraint on
            console.print(f"{k.name}: {n.text()}", markup=False)
    where = f" (project {project.file})" if project.file else ""
    total = sum(n.n for n in counts)
    bound = "" if all(n.exact for n in counts) else "at most "
    console.print(f"{bound}{total} variants in {len(rows)} kernel(s){where}", markup=False)
    return 0


def _kernel_json(k: KernelSpec, source: str) -> dict[str, Any]:
    count = k.variant_count()
    return {
        "kernel": k.name,
        "source": source,
        "folder": str(k.folder),
        "description": k.description,
        # Counted, not enumerated; an upper bound when a constraint was too costly to count.
        "variants": count.n,
        "variants_exact": count.exact,
        "uncounted_constraints": list(count.uncounted),
        "baseline": k.baseline.name,
        "axes": [
            {"name": a.name, "key": a.key, "values": list(a.values), "baseline": a.baseline}
            for a in k.axes
        ],
    }
