# PYTHON_ARGCOMPLETE_OK  (argcomplete completes `wgslgen` only when this marker is here)
"""The command line: a thin shell that parses, calls the API and prints.

Defaults of path options (--templates, --out, --db, --selection) and of --profile/--adapter
come from the project file found by wgslgen.config (``[tool.wgslgen]``), so a command typed in
a project never writes into another project's folders.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from wgslgen import __version__
from wgslgen.cli.examples import EXAMPLES
from wgslgen.cli.output import emit_json_failure, forget_json_output, print_error
from wgslgen.config import Project, default_project, load_project
from wgslgen.errors import WgslgenError
from wgslgen.notices import show_on_stderr

# One module per command; each has register(subparsers) that sets `run` on its parser.
COMMAND_MODULES = (
    "cmd_init",
    "cmd_build",
    "cmd_list",
    "cmd_validate",
    "cmd_transpile",
    "cmd_test",
    "cmd_tune",
    "cmd_db",
    "cmd_vendor",
    "cmd_docs",
    "cmd_completion",
)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, remembering its usage error for the --json failure object."""

    last_error: str | None = None

    def error(self, message: str) -> NoReturn:
        _Parser.last_error = f"{self.prog}: {message}"
        super().error(message)


def build_parser(project: Project | None = None) -> argparse.ArgumentParser:
    """The argument parser with every command that is installed, defaults from ``project``."""
    parser = _Parser(
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
    for name, command in sub.choices.items():
        _finish_command(command, name, project or default_project())
    return parser


def _finish_command(parser: argparse.ArgumentParser, name: str, project: Project) -> None:
    """--debug after the command too, examples in --help, completers, project defaults."""
    # SUPPRESS: an absent --debug here must not overwrite one given before the command.
    parser.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks on errors"
    )
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    if name in EXAMPLES and not parser.epilog:
        parser.epilog = "examples:\n" + EXAMPLES[name]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, child in action.choices.items():
                _finish_command(child, f"{name} {sub_name}", project)
            continue
        _add_completer(action)
        value = _project_default(action, name, project)
        if value is not None and not isinstance(action, argparse._AppendAction):
            action.default = value


# Which option of which command takes its default from which project setting (the repeatable
# --templates and --profile are filled after parsing, by _fill_lists).
_PROJECT_DEFAULTS = {
    "build": {"out": "output"},
    "transpile": {"out": "transpiled"},
    "test": {"adapter": "adapter"},
    "tune": {"db": "db", "selection": "selection", "adapter": "adapter"},
    "db show": {"db": "db"},
    "db merge": {"db": "db"},
    "db prune": {"db": "db"},
}


def _project_default(action: argparse.Action, command: str, project: Project) -> Any:
    setting = _PROJECT_DEFAULTS.get(command, {}).get(action.dest)
    return None if setting is None else getattr(project, setting)


def _fill_lists(args: argparse.Namespace, project: Project) -> None:
    # Repeatable options start empty (argparse appends to a default), so fill them afterwards.
    if getattr(args, "templates", "absent") is None:
        args.templates = list(project.templates)
    if getattr(args, "profile", "absent") is None and project.profile:
        args.profile = [project.profile]


def _add_completer(action: argparse.Action) -> None:
    from wgslgen.cli import completion

    if action.dest == "kernel":
        action.completer = completion.kernel_names  # type: ignore[attr-defined]
    elif action.dest == "set":
        action.completer = completion.axis_values  # type: ignore[attr-defined]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``wgslgen`` console script."""
    words = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in words
    json_mode = "--json" in words
    forget_json_output()
    _Parser.last_error = None

    def fail(message: str, code: int) -> int:
        if debug:  # the traceback for whoever diagnoses; the exit code and JSON stay the same
            traceback.print_exc(file=sys.stderr)
        print_error(message)
        if json_mode:
            emit_json_failure(message, code)
        return code

    if any("\x00" in w for w in words):  # no file name or value can hold one
        return fail("an argument contains a NUL byte", 2)
    try:
        project = load_project()
    except WgslgenError as exc:
        return fail(str(exc), 2)
    parser = build_parser(project)
    _autocomplete(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        if exc.code == 2 and json_mode:
            emit_json_failure(_Parser.last_error or "usage error", 2)
        raise
    _fill_lists(args, project)
    args.project = project
    show_on_stderr()
    _terminate_like_interrupt()
    try:
        return int(args.run(args) or 0)
    except WgslgenError as exc:
        flag = f"--{exc.option.replace('_', '-')}: " if exc.option else ""
        return fail(flag + str(exc), 2)
    except KeyboardInterrupt as exc:
        how = "terminated" if isinstance(exc, Terminated) else "interrupted"
        return fail(
            f"{how}; everything already written is kept",
            143 if isinstance(exc, Terminated) else 130,
        )
    except OSError as exc:  # a path the user gave: a file where a folder belongs, no access
        return fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "), 2)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a `timeout`, a CI runner, `kill`): raised where the work is, so the clean-up a
    Ctrl-C gets (temporary folders, half-written outputs) runs for it too."""


def _terminate_like_interrupt() -> None:
    import signal
    import threading

    def raise_terminated(signum: int, frame: Any) -> None:
        raise Terminated

    if threading.current_thread() is threading.main_thread():  # signals reach only that one
        signal.signal(signal.SIGTERM, raise_terminated)


def _autocomplete(parser: argparse.ArgumentParser) -> None:
    # Only when the shell asks (argcomplete sets _ARGCOMPLETE); then it prints and exits.
    import os

    if "_ARGCOMPLETE" in os.environ:
        import argcomplete

        argcomplete.autocomplete(parser)


if __name__ == "__main__":
    sys.exit(main())
