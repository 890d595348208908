"""The command line: a thin shell that parses, calls the API and prints."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from wgslgen import __version__
from wgslgen.cli.output import print_error
from wgslgen.errors import WgslgenError

# One module per command; each has register(subparsers) that sets `run` on its parser.
COMMAND_MODULES = (
    "cmd_build",
    "cmd_list",
    "cmd_validate",
    "cmd_transpile",
    "cmd_test",
    "cmd_tune",
    "cmd_db",
    "cmd_vendor",
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every command that is installed."""
    parser = argparse.ArgumentParser(
        prog="wgslgen",
        description="Render, validate, test and tune families of WGSL compute kernels.",
    )
    parser.add_argument("--version", action="version", version=f"wgslgen {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``wgslgen`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except WgslgenError as exc:
        print_error(str(exc))
        if args.debug:
            raise
        return 2
    except KeyboardInterrupt:
        print_error("interrupted; everything already written is kept")
        return 130


if __name__ == "__main__":
    sys.exit(main())
