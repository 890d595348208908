"""`wgslgen build`: render every variant into generated/ with its manifest."""

from __future__ import annotations

import argparse
from pathlib import Path

from wgslgen.cli.kernels import selected_kernels
from wgslgen.cli.output import (
    add_common_options,
    console,
    emit_json,
    print_table,
    progress,
    warn,
)
from wgslgen.cli.space_guard import add_max_variants_option, check_space
from wgslgen.errors import WgslgenError
from wgslgen.render import build as builder
from wgslgen.render import outdir
from wgslgen.render.unused import unused_bindings

DEFAULT_OUT = Path("generated")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``build`` command."""
    p = sub.add_parser("build", help="render every variant into generated/ with a manifest")
    add_common_options(p, variants=True)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (generated/)")
    p.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 listing every file that differs, is missing or extra",
    )
    p.add_argument("--no-validate", action="store_true", help="skip `wgslgen validate` afterwards")
    p.add_argument("--verbose", action="store_true", help="the validation table of every rendering")
    add_max_variants_option(p, "render")
    from wgslgen.cli.cmd_validate import add_validation_options

    add_validation_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Render, then write (or compare with) the output tree."""
    kernels = selected_kernels(args)
    if not kernels:
        where = ", ".join(map(str, args.templates or ["the bundled templates"]))
        raise WgslgenError(f"no kernel found in {where}; nothing was written")
    overrides = builder.parse_overrides(args.set)
    if not args.check:
        outdir.check_out(args.out)  # before any work: a refused folder costs nothing
    total = check_space(kernels, overrides, args.max_variants, "render")
    with progress("rendering", total, enabled=not args.json) as bar:
        plan = builder.plan(kernels, overrides, on_variant=bar.advance)
    with outdir.locked(args.out, on_wait=warn):
        if not args.check:
            outdir.check_out(args.out)  # again: another build may have run meanwhile
        names = [k.name for k in kernels] if args.kernel else []
        tree = builder.merged_tree(plan, args.out, names, partial=bool(overrides))
        diffs = builder.compare(tree, args.out)
        if diffs and not args.check:
            _write(tree, args.out)
    counts = {k.name: sum(1 for r in plan.rendered if r.kernel == k.name) for k in kernels}
    for spec in kernels if not overrides else []:  # a part of the space may not use them all
        for message in unused_bindings(
            spec, (r.source for r in plan.rendered if r.kernel == spec.name)
        ):
            warn(message)
    if args.check:
        return _report_check(args, diffs, len(tree) - 1)
    validate = None
    if not args.no_validate:
        from wgslgen.cli import cmd_validate

        validate = cmd_validate.validate_after_build
    if args.json:
        # One JSON document: the validation's object nested in the build's (null when skipped).
        doc = {
            "out": str(args.out),
            "files_changed": len(diffs),
            "renderings": counts,
            "variants": len({(r.kernel, r.name) for r in plan.rendered}),
            "validation": None,
        }
        code = 0
        if validate is not None:
            code = validate(args, plan, emit=lambda found: doc.update(validation=found))
        emit_json(doc)
        return code
    print_table(
        f"wgslgen build → {args.out}",
        ["kernel", "renderings"],
        [(k, n) for k, n in counts.items()],
    )
    console.print(
        f"{sum(counts.values())} renderings written, {len(diffs)} file(s) changed", markup=False
    )
    return 0 if validate is None else validate(args, plan)


def _report_check(args: argparse.Namespace, diffs: list, files: int) -> int:
    """``build --check``: what differs (nothing: up to date); 1 when anything does."""
    if args.json:
        emit_json({"clean": not diffs, "differences": [d.__dict__ for d in diffs]})
    elif diffs:
        console.print(
            f"{args.out} is out of date ({len(diffs)} file(s)); run `wgslgen build`:",
            markup=False,
        )
        for d in diffs:
            console.print(f"  {d.kind:8} {args.out / d.path}", markup=False)
    else:
        console.print(f"{args.out} is up to date ({files} files)", markup=False)
    return 1 if diffs else 0


def _write(tree: dict[str, bytes], out: Path) -> None:
    """Write the tree; a full disk or a denied folder is a named error, the old tree kept."""
    try:
        builder.write_tree(tree, out)
    except OSError as e:
        where = e.filename or out
        raise WgslgenError(f"cannot write {where}: {e.strerror or e}; {out} is unchanged") from None
