"""`wgslgen completion SHELL`: the shell code that completes wgslgen commands and values."""

from __future__ import annotations

import argparse
import sys

SHELLS = ("bash", "zsh", "fish", "tcsh", "powershell")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``completion`` command."""
    p = sub.add_parser(
        "completion",
        help="print shell code that completes commands, options, kernels and axis values",
    )
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print argcomplete's registration code for ``wgslgen``."""
    import argcomplete

    sys.stdout.write(argcomplete.shellcode(["wgslgen"], shell=args.shell))
    return 0
