"""`wgslgen validate`: per-file verdicts (naga/wgpu, Tint, limit profiles) that never abort."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from rich.markup import escape

from wgslgen.check.limits import load_profile
from wgslgen.check.validate import (
    FileProblem,
    ValidationReport,
    VariantResult,
    validate,
)
from wgslgen.check.wgsl import entry_point_stages
from wgslgen.cli.kernels import named_kernels
from wgslgen.cli.options import ListAction
from wgslgen.cli.output import (
    add_common_options,
    console,
    emit_json,
    err_console,
    print_error,
    progress,
    warn,
)
from wgslgen.cli.validate_output import IMPLEMENTATIONS, print_report, print_summary
from wgslgen.config import default_project
from wgslgen.errors import WgslgenError
from wgslgen.render.build import apply_overrides, parse_overrides
from wgslgen.render.parallel import render_outcomes
from wgslgen.render.renderer import RenderedVariant
from wgslgen.run.borrowed_reference import declared_axes, find_kernel
from wgslgen.spec.folder_entries import passed_over_entries, unreadable_wgsl_entries
from wgslgen.spec.interface import Interface
from wgslgen.spec.kernel import KernelSpec, Variant
from wgslgen.spec.loader import plain_name
from wgslgen.text_file import UnreadableText


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``validate`` command."""
    p = sub.add_parser(
        "validate",
        help="judge every variant or .wgsl file: naga/wgpu, Tint (Dawn or its rules), limits",
    )
    add_common_options(p, variants=True)
    add_validation_options(p)
    p.set_defaults(run=run)


def override_value(text: str) -> tuple[str, float]:
    """'NAME=VALUE' → (name, number): a pipeline-overridable constant's value."""
    name, sep, value = text.partition("=")
    try:
        number = float(value)
    except ValueError:
        number = None
    if not sep or not name.strip().isidentifier() or number is None:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=NUMBER, e.g. wg_size=64")
    return name.strip(), int(number) if number.is_integer() else number


def add_validation_options(p: argparse.ArgumentParser) -> None:
    """--engines, --profile, --require and --override (shared with `build`)."""
    p.add_argument(
        "--engines",
        action=ListAction,
        metavar="LIST",
        help="engines: naga,wgpu,dawn (repeatable or comma list; default: every available)",
    )
    p.add_argument(
        "--profile",
        action=ListAction,
        metavar="NAME",
        help="limit profile: webgpu (default), compat, wgpu-downlevel, adapter, "
        "or a JSON file (repeatable)",
    )
    p.add_argument(
        "--require",
        action=ListAction,
        metavar="NAME",
        help="exit 1 unless every file compiles and fits: a profile (webgpu: Chrome and "
        "Firefox at default limits), or only one implementation: tint, naga (repeatable)",
    )
    p.add_argument(
        "--override",
        action="append",
        type=override_value,
        metavar="NAME=VALUE",
        help="value of a WGSL `override` (a pipeline constant): used for workgroup sizes and "
        "array sizes and passed to wgpu and Dawn (repeatable)",
    )
    p.add_argument(
        "--reference",
        metavar="KERNEL",
        help="plain .wgsl files must declare this kernel's bindings and uniform layout "
        "(default: the kernel a wgslgen header in the file names, if any)",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="compile every shader again instead of reusing verdicts remembered from earlier "
        "runs (also WGSLGEN_NO_CACHE=1)",
    )


def _renderings(args: argparse.Namespace) -> tuple[list[RenderedVariant], list[FileProblem]]:
    """Every rendering, and each kernel or file that could not be rendered, with why."""
    # a kernel.toml in error is one problem, not the end
    kernels, broken = named_kernels(args.templates, args.kernel, skip_unreadable=True)
    project = getattr(args, "project", None) or default_project()
    args.interfaces = expected_interfaces(
        kernels, getattr(args, "reference", None), args.templates, project.templates
    )
    overrides = parse_overrides(getattr(args, "set", None))
    out: list[RenderedVariant] = []
    # kernels asked for by name are the ones found by name: an unreadable entry has none yet
    odd = [] if args.kernel else unreadable_wgsl_entries(args.templates)
    problems = [
        FileProblem(plain_name(path), str(path), f"cannot read: {why}") for path, why in odd
    ]
    for e in broken:
        where, _, why = str(e).splitlines()[0].partition(": ")
        problems.append(FileProblem(Path(where.split(":")[0]).parent.name, where, why))
    chosen = []
    for spec in kernels:
        try:
            chosen.append((spec, list(apply_overrides(spec, overrides))))
        except WgslgenError as e:
            problems.append(_unrenderable(spec, e))
    with closing(render_outcomes([v for _, variants in chosen for v in variants])) as outcomes:
        for spec, variants in chosen:
            results = [next(outcomes) for _ in variants]
            failure = next((r for r in results if isinstance(r, Exception)), None)
            if failure is None:
                out.extend(r for rendered in results for r in rendered)  # type: ignore[union-attr]
            else:
                problems.append(_unrenderable(spec, failure))
    return out, problems


def _unrenderable(spec: KernelSpec, error: Exception) -> FileProblem:
    """The problem of a plain file that could not be rendered; a template's error (the user's
    own kernel) and any other exception are raised, as before."""
    if isinstance(error, (OSError, UnicodeDecodeError)):
        return FileProblem(spec.name, str(spec.template_path), f"cannot read: {error}")
    if isinstance(error, UnreadableText):
        return FileProblem(spec.name, str(spec.template_path), f"cannot read: {error.reason}")
    if isinstance(error, WgslgenError) and spec.plain:
        reason = f"cannot analyse: {_plain_reason(spec.template_path, error)}"
        return FileProblem(spec.name, str(spec.template_path), reason)
    raise error


# The kernel a wgslgen file names: generated/ ("// kernel: K   variant: ...") or vendored.
_HEADER_KERNEL = re.compile(r"^// kernel: (\S+) |^// .* vendor: kernel=(\S+) ", re.M)


def expected_interfaces(
    kernels: Sequence[KernelSpec], reference: str | None, templates: Any, fallback: Any = None
) -> dict[str, tuple[str, Interface]]:
    """By plain file path: the kernel whose interface it must declare, and that interface
    (for the axis values its header names, else the baseline's when asked by name)."""
    donors: dict[str, KernelSpec | None] = {}
    out = {}
    for spec in (k for k in kernels if k.plain):
        name = reference or _header_kernel(spec.template_path)
        if name and name not in donors:
            try:
                donors[name] = find_kernel(name, templates, fallback)
            except WgslgenError:
                if reference:
                    raise
                donors[name] = None  # a header naming a kernel not at hand: nothing to compare
        donor = donors.get(name) if name else None
        if donor is None or donor.plain:
            continue
        values = declared_axes(spec.template_path, donor)
        if values is None and not reference:
            continue  # another version of the kernel: its interface may differ
        values = values or {a.name: a.baseline for a in donor.axes}
        variant = Variant(donor, tuple((a.name, values[a.name]) for a in donor.axes))
        out[str(spec.template_path)] = (donor.name, variant.interface)
    return out


def _header_kernel(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8") as f:
            head = "".join(f.readline() for _ in range(6))
    except (OSError, UnicodeDecodeError):
        return None
    m = _HEADER_KERNEL.search(head)
    return (m.group(1) or m.group(2)) if m else None


def _plain_reason(path: Any, error: WgslgenError) -> str:
    """Why a plain file cannot be analysed, with line numbers of the file itself (the
    rendering that failed had a header)."""
    try:
        stages = entry_point_stages(path.read_text(encoding="utf-8"))
    except WgslgenError as own:
        return str(own).splitlines()[0]
    if not stages:  # `main` in the engines' message is only the name looked for by default
        return "no entry point: the file declares no @compute function (empty, or helpers only)"
    if "compute" not in stages.values():
        found = ", ".join(f"@{stage} {name}" for name, stage in stages.items())
        return f"no @compute entry point (found {found}): only compute pipelines are built"
    return str(error).splitlines()[0]


def run(args: argparse.Namespace) -> int:
    """Validate the selected renderings and report."""
    rendered, problems = _renderings(args)
    named = {Path(t).resolve() for t in args.templates or []}  # judged as entries of their own
    passed_over = [] if args.kernel else passed_over_entries(args.templates)
    passed_over = [(p, why) for p, why in passed_over if p.resolve() not in named]
    for path, why in passed_over:
        warn(f"{path}: {why}: not validated (name it with --templates to judge it)")
    # a library or hidden file (`_`, `.`) is left out on purpose; any other shader is unjudged
    unjudged = [(p, why) for p, why in passed_over if not p.name.startswith(("_", "."))]
    return _validate_and_report(args, rendered, problems, nothing_fails=True, unjudged=unjudged)


def validate_after_build(
    args: argparse.Namespace, plan: Any, emit: Callable[[dict[str, Any]], None] = emit_json
) -> int:
    """The validation `wgslgen build` runs on what it just rendered: a one-screen summary
    (the full table with ``--verbose``); under ``--json`` its object goes to ``emit`` (build
    nests it in its own: stdout holds one JSON document)."""
    return _validate_and_report(
        args, plan.rendered, [], summary=not args.verbose, written_to=args.out, emit=emit
    )


def _profile_names(args: argparse.Namespace) -> list[str]:
    asked = list(getattr(args, "profile", None) or ["webgpu"])
    required = [n for n in getattr(args, "require", None) or [] if n not in IMPLEMENTATIONS]
    if any(n in IMPLEMENTATIONS for n in getattr(args, "require", None) or []):
        required.append("webgpu")  # tint / naga: at the default limits
    return list(dict.fromkeys([asked[0], *sorted({*asked, *required} - {asked[0]})]))


def _unmet(report: ValidationReport, requirement: str) -> list[VariantResult]:
    """Renderings that break ``--require requirement``."""
    if requirement in IMPLEMENTATIONS:
        bad = report.not_compiling(requirement) + report.not_fitting("webgpu")
    else:
        name = load_profile(requirement).name
        bad = report.not_fitting(name) + report.not_compiling("naga")
        bad += report.not_compiling("tint")
    return list({id(r): r for r in bad}.values())


def _validate_and_report(
    args: argparse.Namespace,
    rendered: Sequence[RenderedVariant],
    problems: list[FileProblem],
    summary: bool = False,
    written_to: Path | None = None,
    emit: Callable[[dict[str, Any]], None] = emit_json,
    nothing_fails: bool = False,
    unjudged: Sequence[tuple[Path, str]] = (),
) -> int:
    """Validate, print (or emit) the report, and give the exit code; ``nothing_fails``:
    a run with nothing to validate exits 1 (it judged nothing, so it passed nothing);
    ``unjudged``: shaders of the folders passed over, which no --require can vouch for."""
    profiles = [load_profile(n) for n in _profile_names(args)]
    engines = getattr(args, "engines", None) or None
    overrides = dict(getattr(args, "override", None) or [])
    with progress("validating", 3, enabled=not args.json) as bar:
        report = validate(
            rendered,
            profiles,
            engines,
            bar.advance,
            overrides,
            problems,
            written_to,
            remember=False if getattr(args, "no_cache", False) else None,
            interfaces=getattr(args, "interfaces", None),
        )
    # An engine asked for by name that could not run validated nothing: not a pass. People
    # get the error alone (a summary's counts would read as a clean result); machines get
    # the object too, whose engines_missing names it, and the same exit code.
    unusable = {n: why for n, why in report.engines_missing.items() if n in (engines or [])}
    nothing = nothing_fails and not report.results  # people get the error alone, as above
    if args.json:
        not_validated = [{"path": str(p), "why": why} for p, why in unjudged]
        emit({**report.to_dict(), "not_validated": not_validated})
    elif not unusable and not nothing:
        (print_summary if summary else print_report)(report)
    declared = {k for r in report.results for k in r.constants}
    for name in sorted(set(overrides) - declared) if report.results else ():
        warn(f"--override {name}: no file validated declares an override of that name; unused")
    for name, why in unusable.items():
        print_error(f"--engines {name}: not available: {why}")
    if unusable:
        return 2
    if nothing:
        where = ", ".join(str(t) for t in getattr(args, "templates", None) or []) or "templates"
        print_error(f"nothing to validate: no kernel folder or .wgsl file in {where}")
        return 1
    failed = report.compile_failures() or report.problems() or report.interface_mismatches()
    return 1 if _requirements_unmet(args, report, unjudged) or failed else 0


def _requirements_unmet(
    args: argparse.Namespace, report: ValidationReport, unjudged: Sequence[tuple[Path, str]]
) -> bool:
    """Print each --require not met (on stderr under --json: stdout holds one JSON document)
    and whether any is; a shader passed over meets none, since nothing judged it."""
    required = getattr(args, "require", None) or []
    say = (err_console if args.json else console).print
    unmet = False
    for p in required:
        if bad := _unmet(report, p):
            say(
                f"[red]--require {escape(p)}:[/] {len(bad)} variant(s) do not fit or do not compile"
            )
            unmet = True
    if required and unjudged:
        say(
            f"[red]--require {escape(', '.join(required))}:[/] {len(unjudged)} shader file(s) or "
            "folder(s) above were not validated: name each with --templates, or move it out"
        )
        unmet = True
    return unmet
