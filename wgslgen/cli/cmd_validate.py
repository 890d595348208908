"""`wgslgen validate`: naga, wgpu and Dawn verdicts and limit profiles for every rendering."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from wgslgen.check.limits import load_profile
from wgslgen.check.validate import ValidationReport, is_limit_failure, validate
from wgslgen.cli.output import (
    add_common_options,
    console,
    emit_json,
    err_console,
    print_error,
    print_table,
    progress,
)
from wgslgen.render.build import apply_overrides, parse_overrides
from wgslgen.render.renderer import RenderedVariant, render_families
from wgslgen.spec.loader import discover, select


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``validate`` command."""
    p = sub.add_parser(
        "validate", help="compile every variant with naga, wgpu and Dawn; check limit profiles"
    )
    add_common_options(p, variants=True)
    add_validation_options(p)
    p.set_defaults(run=run)


def add_validation_options(p: argparse.ArgumentParser) -> None:
    """--engines, --profile and --require (shared with `build`)."""
    p.add_argument(
        "--engines",
        metavar="LIST",
        help="comma-separated engines: naga,wgpu,dawn (default: every available)",
    )
    p.add_argument(
        "--profile",
        action="append",
        metavar="NAME",
        help="limit profile: webgpu (default), compat, wgpu-downlevel, adapter, "
        "or a JSON file (repeatable)",
    )
    p.add_argument(
        "--require",
        action="append",
        metavar="PROFILE",
        help="exit 1 unless every variant fits this profile (repeatable)",
    )


def _renderings(args: argparse.Namespace) -> list[RenderedVariant]:
    kernels = select(discover(args.templates), args.kernel)
    overrides = parse_overrides(getattr(args, "set", None))
    out = []
    for spec in kernels:
        variants = apply_overrides(spec, overrides)
        for variant in variants:
            out.extend(render_families(variant))
    return out


def run(args: argparse.Namespace) -> int:
    """Validate the selected renderings and report."""
    return _validate_and_report(args, _renderings(args))


def validate_after_build(args: argparse.Namespace, plan: Any) -> int:
    """The validation `wgslgen build` runs on what it just rendered."""
    return _validate_and_report(args, plan.rendered)


def _validate_and_report(args: argparse.Namespace, rendered: Sequence[RenderedVariant]) -> int:
    names = sorted(
        {*(getattr(args, "profile", None) or ["webgpu"]), *(getattr(args, "require", None) or [])},
        key=lambda n: (n != (getattr(args, "profile", None) or ["webgpu"])[0], n),
    )
    profiles = [load_profile(n) for n in names]
    engines = (
        [e.strip() for e in args.engines.split(",")] if getattr(args, "engines", None) else None
    )
    with progress("validating", 3, enabled=not args.json) as bar:
        report = validate(rendered, profiles, engines, on_done=bar.advance)
    if args.json:
        emit_json(report.to_dict())
    else:
        _print_report(report)
    failed_requirements = [
        p
        for p in (getattr(args, "require", None) or [])
        if report.not_fitting(load_profile(p).name)
    ]
    for p in failed_requirements:
        # On stderr under --json: stdout must stay one JSON document.
        (err_console if args.json else console).print(
            f"[red]--require {p}:[/] {len(report.not_fitting(load_profile(p).name))} "
            "variant(s) do not fit"
        )
    # An engine asked for by name that could not run validated nothing: not a pass.
    unusable = {n: why for n, why in report.engines_missing.items() if n in (engines or [])}
    for name, why in unusable.items():
        print_error(f"--engines {name}: not available: {why}")
    if unusable:
        return 2
    return 1 if report.compile_failures() or failed_requirements else 0


def _cell(verdict: Any) -> str:
    if verdict is None:
        return "-"
    if verdict.ok:
        return "ok"
    return ("limit: " if is_limit_failure(verdict) else "error: ") + verdict.message[:70]


def _print_report(report: ValidationReport) -> None:
    engines = list(report.engine_versions)
    rows = []
    for r in report.results:
        rows.append(
            [
                r.rendered.name + ("" if r.rendered.family == "any" else f" [{r.rendered.family}]"),
                *(_cell(r.engines.get(e)) for e in engines),
                *("ok" if r.fits(p) else r.profiles[p][0] for p in report.profiles),
            ]
        )
    print_table("wgslgen validate", ["variant", *engines, *report.profiles], rows)
    for d in report.diagnostics():
        shown = ", ".join(d.variants[:4]) + (
            f" and {len(d.variants) - 4} more" if len(d.variants) > 4 else ""
        )
        console.print(
            f"[bold red]error[/] ({d.engine}): {d.message}\n"
            f"  --> {d.generated}\n  --> template {d.template}\n"
            f"  in {len(d.variants)} variant(s): {shown}"
        )
        detail = "\n".join("      " + line for line in d.detail.splitlines()[:12])
        if detail:
            console.print(detail, markup=False)
    for name, why in report.engines_missing.items():
        console.print(f"[yellow]engine {name} not used:[/] {why}")
    versions = "; ".join(f"{n}: {v}" for n, v in report.engine_versions.items())
    fits = ", ".join(
        f"{len(report.results) - len(report.not_fitting(p))} fit {p}" for p in report.profiles
    )
    console.print(
        f"{len(report.results)} renderings, "
        f"{len(report.compile_failures())} fail to compile, {fits} ({versions})"
    )
