"""The kernels a command works on: those of the --templates folders that --kernel names."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from wgslgen.cli.output import warn
from wgslgen.errors import WgslgenError
from wgslgen.spec.folder_entries import unreadable_wgsl_entries
from wgslgen.spec.kernel import KernelSpec
from wgslgen.spec.loader import discover, select


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
    kernels, broken = named_kernels(args.templates, args.kernel)
    if broken:  # every kernel is asked for: a broken one is an error
        raise broken[0]
    if not args.kernel:
        for path, why in unreadable_wgsl_entries(args.templates):
            warn(f"{path}: cannot read: {why}; skipped")
    return kernels
