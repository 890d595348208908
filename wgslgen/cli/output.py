"""Output for people (rich tables, progress bars, errors without tracebacks) and for machines."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

# Piped output (a file, grep, a CI log) is not cut to any width: a path or a message wrapped
# mid-word cannot be searched or copied. A terminal gets its own width.
console = Console(
    highlight=False,
    width=None if sys.stdout.isatty() else 100_000,
    soft_wrap=not sys.stdout.isatty(),
)
err_console = Console(stderr=True, highlight=False)


def warn(message: str) -> None:
    """A warning for people, on stderr."""
    err_console.print("warning: " + message, markup=False, style="yellow", soft_wrap=True)


def print_error(message: str) -> None:
    """An error for people: 'error:' and the message, on stderr."""
    err_console.print("error: " + message, markup=False, style="bold red", soft_wrap=True)


JSON_SCHEMA_VERSION = 1  # of every command's --json object (docs/json-output.md)


_json_emitted = False


def emit_json(obj: Any) -> None:
    """Machine output: one JSON document on stdout. An object starts with ``schema_version``;
    the other keys, at every level, are sorted (the same run prints the same text)."""
    global _json_emitted
    _json_emitted = True
    if isinstance(obj, dict):
        rest = {k: v for k, v in obj.items() if k != "schema_version"}
        version = obj.get("schema_version", JSON_SCHEMA_VERSION)
        obj = {"schema_version": version, **_sorted_keys(rest)}
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")


def forget_json_output() -> None:
    """Start a run (of ``main``) with no JSON object printed yet."""
    global _json_emitted
    _json_emitted = False


def emit_json_failure(message: str, exit_code: int) -> None:
    """The one JSON object of a --json run that ended in an error before printing its own
    (a caller reading stdout gets an object, not an empty document)."""
    if not _json_emitted:
        emit_json({"error": message, "exit_code": exit_code})


def _sorted_keys(obj: Any) -> Any:
    """``obj`` with the keys of every dict in it sorted, a nested document's own
    ``schema_version`` first (a vendored manifest inside `vendor --json`)."""
    if isinstance(obj, dict):
        return {
            k: _sorted_keys(obj[k]) for k in sorted(obj, key=lambda k: (k != "schema_version", k))
        }
    if isinstance(obj, list | tuple):
        return [_sorted_keys(v) for v in obj]
    return obj


def print_adapter(info: dict[str, Any], json_mode: bool = False, extra: str = "") -> None:
    """Name the adapter that runs the work, and warn when it is not on Vulkan.

    wgpu falls back to OpenGL without a word when no Vulkan driver loads; its limits,
    features and timings are then another implementation's, so the user must hear of it.
    """
    backend = info.get("key", {}).get("backend", "")
    if not json_mode:
        console.print(f"adapter: {info.get('label', '?')}{extra}", markup=False)
    if backend and backend != "Vulkan":
        err_console.print(
            f"warning: running on {backend}, not Vulkan: wgpu found no Vulkan driver for this "
            "adapter (install mesa-vulkan-drivers or the GPU's Vulkan driver); limits, "
            "features and timings are those of that backend",
            markup=False,
            soft_wrap=True,
        )


FRAME_WIDTH = 160  # columns of a compiler's quoted source line shown around its caret


def clipped_frame(detail: str, max_lines: int = 12, width: int = FRAME_WIDTH) -> str:
    """A compiler's diagnostic for people: its first lines, indented, each quoted source line
    cut to ``width`` columns around the caret under it (a one-line file can be 10 KB)."""
    lines = detail.splitlines()[:max_lines]
    start = 0  # the left cut of the source line above a caret line, kept for that caret line
    for i, line in enumerate(lines):
        if len(line) <= width and not (start and "^" in line):
            start = 0
            continue
        below = lines[i + 1] if i + 1 < len(lines) else ""
        if "^" in line and start:  # a caret line under a cut source line
            cut = start
        else:
            caret = below.find("^") if "^" in below else 0
            cut = max(0, caret - width // 2)
        gutter = line.find("│ ") + 2 if "│ " in line[:12] else 0
        cut = max(cut, gutter)
        head = line[:gutter] + ("…" if cut > gutter else "")
        tail = "…" if len(line) > cut + width else ""
        lines[i] = head + line[cut : cut + width] + tail
        start = cut if "^" not in line else 0
    return "\n".join("      " + line for line in lines)


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A table for people. Every title and cell is plain text, never rich markup (a kernel
    name, path or message may hold [brackets]). A narrow terminal folds a long cell onto
    more lines, never cuts it to "…": two variant names that differ at the end stay apart."""
    print_title(title)
    table = Table(title_justify="left")
    for col in columns:
        table.add_column(Text(str(col)), overflow="fold")
    for row in rows:
        table.add_row(*(Text(str(c)) for c in row))
    console.print(table)


def print_title(title: str) -> None:
    """A table's title as a line of its own: a table title wraps at the table's width, which
    cuts a long path (`wgslgen build → /a/long/path`) mid-word."""
    console.print(Text(title, style="table.title"), soft_wrap=True)


@contextmanager
def progress(description: str, total: int, enabled: bool = True) -> Iterator[Any]:
    """A progress bar on stderr; ``advance()`` on the yielded object moves it one step."""

    class _Bar:
        def __init__(self, bar: Progress | None, task: Any) -> None:
            self._bar, self._task = bar, task

        def advance(self, label: str | None = None) -> None:
            if self._bar is not None:
                self._bar.update(self._task, advance=1, description=label or description)

    if not enabled or not err_console.is_terminal:
        yield _Bar(None, None)
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as bar:
        yield _Bar(bar, bar.add_task(description, total=total))


def add_common_options(parser: Any, *, templates: bool = True, variants: bool = False) -> None:
    """Options most commands share: --json, --templates DIR, --kernel K (and --set)."""
    parser.add_argument("--json", action="store_true", help="print JSON for machines")
    if templates:
        parser.add_argument(
            "--templates",
            action="append",
            metavar="DIR",
            help="folder of kernel folders and/or .wgsl files, or one .wgsl file "
            "(repeatable; default: the project's `templates` in wgslgen.toml or "
            "[tool.wgslgen], or the bundled templates/ outside a project)",
        )
        parser.add_argument(
            "--kernel", action="append", metavar="K", help="only this kernel (repeatable)"
        )
    if variants:
        parser.add_argument(
            "--set",
            action="append",
            metavar="AXIS=VALUE",
            help="only variants with this axis value (repeatable; axis name or short key)",
        )
