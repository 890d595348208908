"""`wgslgen vendor`: the tuned variants, a manifest and bindings, for another project."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from wgslgen.cli.output import add_common_options, console, emit_json
from wgslgen.errors import WgslgenError

DEFAULT_SELECTION = Path("tuning/selection.json")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``vendor`` command."""
    p = sub.add_parser("vendor", help="vendor tuned variants + manifest + bindings into a folder")
    add_common_options(p)
    p.add_argument("--out", type=Path, help="the folder to write (your project's)")
    p.add_argument(
        "--selection",
        type=Path,
        help="tuning selection file (default: the project's, tuning/selection.json, when it "
        "exists)",
    )
    p.add_argument(
        "--db",
        type=Path,
        help="the tuning results database the selection was made from (default: the "
        "project's db setting; outside a project, results.jsonl beside the selection)",
    )
    p.add_argument(
        "--lang",
        default="",
        help="bindings to write: rust,ts,py (comma-separated; default none: the shaders and "
        "manifest only). Bindings an earlier vendor wrote and this one does not are removed",
    )
    p.add_argument("--engine", action="append", help="validation engines (default: all found)")
    p.add_argument(
        "--strict",
        action="store_true",
        help="fail when the selection names a variant (or a kernel) the templates no longer have",
    )
    p.add_argument(
        "--check",
        type=Path,
        metavar="DIR",
        help="write nothing; exit 1 naming every file of DIR that is hand-edited or stale",
    )
    p.set_defaults(run=run)


def _inputs(args: argparse.Namespace) -> dict:
    """What the manifest records to regenerate the folder: paths relative to the folder itself
    (the bundled library by name), so `--check` works from any folder and any checkout that
    keeps the producing project where it was beside the vendored folder."""
    from wgslgen.vendor.folder import recorded_path

    selection = args.selection
    project = getattr(args, "project", None)
    if selection is None:
        default = project.selection if project is not None else DEFAULT_SELECTION
        selection = default if default.is_file() else None
    db = args.db
    if db is None and project is not None and project.file is not None and selection:
        db = project.db  # the project's, wherever its settings put it
    beside = selection.parent / "results.jsonl" if selection else None  # the default
    recorded = db is not None and db.is_file() and (not beside or db.resolve() != beside.resolve())
    inputs = {"db": recorded_path(db, args.out)} if recorded else {}
    return inputs | {
        "kernels": sorted(args.kernel or []),
        "selection": recorded_path(selection, args.out) if selection else None,
        "langs": sorted({x.strip() for x in args.lang.split(",") if x.strip()}),
        "templates": [recorded_path(Path(t), args.out) for t in args.templates or []],
        "strict": bool(args.strict),
    }


def run(args: argparse.Namespace) -> int:
    """Vendor into --out, or check a vendored folder."""
    from wgslgen.spec.loader import DEFAULT_TEMPLATES
    from wgslgen.vendor import folder

    if args.check is not None:
        return _check(args)
    if args.out is None:
        raise WgslgenError("wgslgen vendor: give --out DIR (or --check DIR)")
    roots = [DEFAULT_TEMPLATES, DEFAULT_TEMPLATES.parent / "generated", Path("generated")]
    folder.refuse_inside(args.out, roots + [Path(t) for t in args.templates or []])
    # Named here as given: regenerate()'s messages speak of what a manifest recorded.
    for given, option in ((args.selection, "selection"), (args.db, "db")):
        if given is not None and not given.is_file():
            what = "a folder, not a file" if given.is_dir() else "no such file"
            raise WgslgenError(f"{given}: {what}", option=option)
    for t in args.templates or []:
        if not Path(t).exists():
            raise WgslgenError(f"{t}: no such templates folder or file", option="templates")
    inputs = _inputs(args)
    if "py" in inputs["langs"] and not args.out.resolve().name.isidentifier():
        raise WgslgenError(
            f"--out {args.out}: with --lang py the folder is a Python package, so its name "
            "must be a Python identifier (e.g. gpu_kernels)"
        )
    plan = folder.regenerate(inputs, args.out, args.engine)
    changed = folder.write(plan, args.out)
    if args.json:
        emit_json({"out": str(args.out), "changed": changed, "manifest": plan.manifest})
        return 0
    kernels = plan.manifest["kernels"]
    for name, k in kernels.items():
        console.print(
            f"{name}: {len(k['variants'])} variant(s), {len(k['selection']['rules'])} rule(s), "
            f"fallback {k['selection']['portable_fallback']}"
        )
    for v, why in plan.excluded:
        console.print(f"[yellow]not vendored[/]: {v}: {why}")
    for w in plan.manifest["warnings"]:
        console.print(f"[yellow]warning[/]: {w}")
    gone: dict[str, int] = {}
    for path in changed:
        if not (args.out / path).exists():
            top = path.split("/")[0]
            gone[top] = gone.get(top, 0) + 1
    if gone:  # e.g. a narrower --lang than last time: say what went, it was not asked for
        # a folder that still holds other files lost only some of them
        what = [f"{t}/ ({n} file(s))" if (args.out / t).exists() else t for t, n in gone.items()]
        console.print(f"removed (no longer vendored): {', '.join(sorted(what))}", markup=False)
    console.print(f"{args.out}: {len(plan.files)} files, {len(changed)} changed")
    return 0


def _check(args: argparse.Namespace) -> int:
    """`vendor --check DIR`: each finding, and how to update the folder when that is safe."""
    from wgslgen.vendor import folder

    findings = folder.check_folder(args.check, args.engine)
    if args.json:
        emit_json({"clean": not findings, "findings": [f.__dict__ for f in findings]})
    for f in findings if not args.json else []:
        console.print(f"{args.check / f.path}: {f.kind}: {f.detail}")
    if not findings and not args.json:
        console.print(f"{args.check} is up to date")
    elif not args.json and all(f.kind != "hand-edited" for f in findings):  # keep edits
        from wgslgen.vendor.readme import vendor_command

        inputs = folder.read_manifest(args.check).get("inputs") or {}
        console.print(
            f"to update it: cd {shlex.quote(str(args.check))} && {vendor_command(inputs)}",
            markup=False,
        )
    return 1 if findings else 0
