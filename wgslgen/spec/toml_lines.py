"""Where in a TOML file a key is written, so a schema error can name its line.

tomllib keeps no positions, so the text is scanned: table headers (``[a.b]``, ``[[a]]``, whose
occurrences are counted) and ``key =`` lines give each key its path, the same path a schema
error's location holds (``("axis", 1, "baseline")``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_BARE_OR_QUOTED = r"""(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')"""
_KEY = re.compile(rf"^\s*({_BARE_OR_QUOTED}(?:\s*\.\s*{_BARE_OR_QUOTED})*)\s*=")


def _parts(dotted: str) -> tuple[str, ...]:
    """``a."b.c".d`` → ("a", "b.c", "d")."""
    pieces = re.findall(r"""[^."']+|"[^"]*"|'[^']*'""", dotted)
    return tuple(p.strip().strip("\"'") for p in pieces if p.strip())


def line_of(text: str, loc: Sequence[str | int]) -> int | None:
    """The 1-based line that writes the longest leading part of ``loc``; None if none does."""
    want = tuple(loc)
    table: tuple[str | int, ...] = ()
    seen: dict[tuple[str, ...], int] = {}
    best, best_len = None, 0
    depth = 0  # inside a multi-line value ([ ... ] spanning lines): no keys or headers there
    for number, line in enumerate(text.splitlines(), start=1):
        code = line.split("#", 1)[0]  # a '#' inside a string cuts it short: brackets only count
        if depth == 0 and (m := _HEADER.match(line)):
            names = _parts(m.group(2))
            if m.group(1) == "[[":
                seen[names] = seen.get(names, -1) + 1
                table = (*names, seen[names])
            else:
                table = names
            if want[: len(table)] == table and len(table) > best_len:
                best, best_len = number, len(table)
            continue
        if depth == 0 and (m := _KEY.match(line)):
            path = (*table, *_parts(m.group(1)))
            if want[: len(path)] == path and len(path) > best_len:
                best, best_len = number, len(path)
        depth = max(0, depth + code.count("[") - code.count("]"))
    return best


def located(path: Path, loc: Sequence[str | int]) -> str:
    """``path:line`` where the file writes (the nearest part of) ``loc``; else ``path``."""
    try:
        line = line_of(path.read_text(encoding="utf-8"), loc)
    except (OSError, UnicodeDecodeError):
        line = None
    return f"{path}:{line}" if line else str(path)
