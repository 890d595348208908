"""The kernels a command works on: those of the --templates folders that --kernel names."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from wgslgen.cli.output import warn
from wgslgen.errors import WgslgenError
from wgslgen.spec.folder_entries import unreadable_wgsl_entries
from wgslgen.spec.kernel import KernelSpec
from wgslgen.spec.loader import DEFAULT_TEMPLATES, UnknownKernelError, discover, select


def named_kernels(
    templates: Sequence[Path | str] | None, names: Sequence[str] | None, skip_unreadable=False
) -> tuple[list[KernelSpec], list[WgslgenError]]:
    """The kernels ``names`` asks for (all when none), and the errors of the kernel folders
    that could not be loaded. With names, those errors are warnings (one broken kernel does
    not stop work on another), unless a name is not found: it may be the broken one."""
    broken: list[WgslgenError] = []
    found = discover(templates, skip_unreadable=skip_unreadable, broken=broken)
    try:
        kernels = select(found, names)
    except WgslgenError:
        if broken:
            raise broken[0] from None
        raise
    for error in broken if names else []:
        warn(f"{str(error).splitlines()[0]}; that kernel skipped")
    return kernels, [] if names else broken


def selected_kernels(args: argparse.Namespace) -> list[KernelSpec]:
    """The kernels of ``args.templates`` named by ``args.kernel`` (all when none is), saying
    which *.wgsl entries could not be read: one that is skipped in silence looks like none."""
    try:
        kernels, broken = named_kernels(args.templates, args.kernel)
    except UnknownKernelError as exc:  # say where they were looked for: a newcomer may be
        raise UnknownKernelError(f"{exc}{_looked_in(args)}") from None  # outside the project
    if broken:  # every kernel is asked for: a broken one is an error
        raise broken[0]
    if not args.kernel:
        for path, why in unreadable_wgsl_entries(args.templates):
            warn(f"{path}: cannot read: {why}; skipped")
    return kernels


def _looked_in(args: argparse.Namespace) -> str:
    project = getattr(args, "project", None)
    if project is not None and project.file is not None:
        return f" (the kernels of the project {project.file})"
    folders = [Path(t).resolve() for t in args.templates or []]
    if folders and folders != [DEFAULT_TEMPLATES.resolve()]:
        return f" (the kernels of {', '.join(map(str, folders))})"
    return (
        f" (no wgslgen.toml or [tool.wgslgen] at or above {Path.cwd()}, so the bundled "
        "library's: run from your project, or name its kernels' folder with --templates)"
    )
