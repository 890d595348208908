"""How `wgslgen validate` shows its report to people: the table, the one-screen summary after
a build, the footer, and each distinct diagnostic once."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from wgslgen.check.validate import ValidationReport, VariantResult, is_limit_failure
from wgslgen.cli.output import clipped_frame, console, print_table

IMPLEMENTATIONS = ("naga", "tint")  # --require names besides the limit profiles


def _cell(verdict: Any) -> str:
    if verdict is None:
        return "-"
    if verdict.ok:
        return "ok"
    return ("limit: " if is_limit_failure(verdict) else "error: ") + verdict.message[:70]


def _implementation_cell(result: VariantResult, name: str) -> str:
    verdict = result.implementations.get(name)
    if result.problems:
        return result.problems[0][:70]
    if verdict is None or verdict.ok is None:
        return "-"
    if verdict.ok:
        return "ok" + (" (static)" if verdict.source == "static" else "")
    return ("gap: " if verdict.gap else "error: ") + verdict.reasons[0][:70]


def print_report(report: ValidationReport) -> None:
    """The table of every rendering (verdict per engine and profile), then the problems, each
    distinct diagnostic once, and the footer."""
    engines = list(report.engine_versions)
    usable = {p: report.usable_in(p) for p in report.profiles}
    rows = []
    for r in report.results:
        family = r.rendered.family if r.rendered else "any"
        rows.append(
            [
                r.name + ("" if family == "any" else f" [{family}]"),
                *(_cell(r.engines.get(e)) for e in engines),
                *(_implementation_cell(r, i) for i in IMPLEMENTATIONS),
                *(_profile_cell(r, p, usable[p]) for p in report.profiles),
            ]
        )
    columns = [*engines, "naga/wgpu (Firefox)", "Tint (Chrome)", *report.profiles]
    print_table("wgslgen validate", ["variant", *columns], rows)
    _print_problems(report)
    _print_diagnostics(report)
    _print_footer(report)


def print_summary(report: ValidationReport) -> None:
    """Counts per kernel and verdicts per profile; every failure in full."""
    kernels: dict[str, list[VariantResult]] = {}
    for r in report.results:
        kernels.setdefault(r.rendered.kernel if r.rendered else r.name, []).append(r)
    failed = report.compile_failures()
    usable = {p: report.usable_in(p) for p in report.profiles}
    rows = [
        [
            kernel,
            len(results),
            sum(1 for r in results if r in failed),
            *(sum(1 for r in results if r in usable[p]) for p in report.profiles),
        ]
        for kernel, results in kernels.items()
    ]
    columns = ["kernel", "renderings", "fail to compile", *(f"fit {p}" for p in report.profiles)]
    print_table("wgslgen validate (summary; --verbose for every rendering)", columns, rows)
    _print_problems(report)
    _print_diagnostics(report)
    _print_footer(report)


def _print_footer(report: ValidationReport) -> None:
    for name, why in report.engines_missing.items():
        console.print(f"[yellow]engine {escape(name)} not used:[/] {escape(why)}")  # [dawn]
    versions = "; ".join(f"{n}: {v}" for n, v in report.engine_versions.items())
    fits = ", ".join(f"{len(report.usable_in(p))} fit {p}" for p in report.profiles)
    differ = len(report.interface_mismatches())
    console.print(
        f"{len(report.results)} renderings, {len(report.compile_failures())} fail to compile, "
        f"{len(report.problems())} cannot be judged in full, "
        + (f"{differ} differ from their kernel.toml, " if differ else "")
        + f"{fits} ({versions})",
        markup=False,
    )


def _override_hint(r: VariantResult, names: list[str]) -> str:
    """How to give the missing override values: a template's kernel.toml [overrides] (naming
    its entries that this text does not declare: a misspelt name), or --override."""
    flags = " ".join(f"--override {n}=VALUE" for n in names)
    spec = r.rendered.variant.spec if r.rendered is not None else None
    if spec is None or spec.plain:
        return f"; pass {flags}"
    declared = {o for f in r.facts.values() for o in f.overrides}
    stray = [name for name, _ in spec.overrides if name not in declared]
    where = f"{spec.spec_path} [overrides]"
    if stray:
        return f"; {where} gives {', '.join(stray)}, which the template does not declare"
    return f"; give {', '.join(names)} in {where} (or pass {flags})"


def _print_problems(report: ValidationReport) -> None:
    for r in report.results:
        for problem in r.problems:
            hint = ""
            if problem.startswith("needs override values: "):
                hint = _override_hint(r, problem.split(": ", 1)[1].split(", "))
            console.print(f"[bold red]error[/]: {escape(f'{r.file}: {problem}{hint}')}")
        for mismatch in r.interface:
            text = f"{r.file}: differs from kernel.toml of {r.interface_of}: {mismatch}"
            console.print(f"[bold red]error[/]: {escape(text)}")
        for name, verdict in r.implementations.items():
            if verdict.gap:
                console.print(
                    f"[yellow]gap[/] ({escape(name)}): {escape(f'{r.file}: {verdict.reasons[0]}')}"
                )


def _profile_cell(r: VariantResult, profile: str, usable: list[VariantResult]) -> str:
    if r in usable:
        return "ok"
    if r.fits(profile):  # the limits hold, but no compiler takes the text
        return "-"
    return (r.profiles.get(profile) or ["-"])[0]


def _print_diagnostics(report: ValidationReport) -> None:
    for d in report.diagnostics():
        shown = ", ".join(d.variants[:4]) + (
            f" and {len(d.variants) - 4} more" if len(d.variants) > 4 else ""
        )
        console.print(
            f"[bold red]error[/] ({d.engine}): {escape(d.message)}\n"
            f"  --> {escape(d.generated)}\n"
            + (f"  --> template {escape(d.template)}\n" if d.template else "")
            + f"  in {len(d.variants)} variant(s): {escape(shown)}"
        )
        detail = clipped_frame(d.detail)
        if detail:
            console.print(detail, markup=False)
