"""`wgslgen list`: the kernels, their axes and how many variants each has."""

from __future__ import annotations

import argparse

from wgslgen.cli.output import add_common_options, console, emit_json, print_table
from wgslgen.spec.loader import discover, select


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``list`` command."""
    p = sub.add_parser("list", help="list kernels, their axes and variant counts")
    add_common_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print one row per kernel."""
    kernels = select(discover(args.templates), args.kernel)
    rows = []
    for k in kernels:
        axes = (
            "  ".join(f"{a.name}({a.key})={{{','.join(map(str, a.values))}}}" for a in k.axes)
            or "(plain .wgsl)"
        )
        rows.append((k.name, len(k.variants), axes, k.baseline.name))
    if args.json:
        emit_json(
            [
                {
                    "kernel": k.name,
                    "variants": len(k.variants),
                    "baseline": k.baseline.name,
                    "axes": [
                        {
                            "name": a.name,
                            "key": a.key,
                            "values": list(a.values),
                            "baseline": a.baseline,
                        }
                        for a in k.axes
                    ],
                }
                for k in kernels
            ]
        )
        return 0
    print_table("kernels", ["kernel", "variants", "axes", "baseline"], rows)
    console.print(f"{sum(r[1] for r in rows)} variants in {len(rows)} kernel(s)")
    return 0
