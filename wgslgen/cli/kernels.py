"""The kernels a command works on: those of the --templates folders that --kernel names."""

from __future__ import annotations

import argparse

from wgslgen.cli.output import warn
from wgslgen.spec.folder_entries import unreadable_wgsl_entries
from wgslgen.spec.kernel import KernelSpec
from wgslgen.spec.loader import discover, select


def selected_kernels(args: argparse.Namespace) -> list[KernelSpec]:
    """The kernels of ``args.templates`` named by ``args.kernel`` (all when none is), saying
    which *.wgsl entries could not be read: one that is skipped in silence looks like none."""
    kernels = select(discover(args.templates), args.kernel)
    if not args.kernel:
        for path, why in unreadable_wgsl_entries(args.templates):
            warn(f"{path}: cannot read: {why}; skipped")
    return kernels
