"""Where a template's syntax error is: Jinja reports an unclosed block where the text ends
(or where a wrong end tag stands), not where the block was opened."""

from __future__ import annotations

from pathlib import Path

import jinja2

_BLOCKS = frozenset({"if", "for", "macro", "call", "filter", "block", "with", "autoescape"})


def syntax_error_message(exc: jinja2.TemplateSyntaxError, fallback: Path) -> str:
    """``path:line: template syntax error: …``, naming the line that opened an unclosed block."""
    path = Path(exc.filename) if exc.filename else fallback
    message = f"{path}:{exc.lineno}: template syntax error: {exc.message}"
    if "needs to be closed" not in (exc.message or ""):
        return message
    opened = _innermost_open_block(path, exc.lineno)
    if opened is None:
        return message
    tag, line = opened
    return f"{message} (the '{tag}' opened at line {line} is not closed)"


def _innermost_open_block(path: Path, before_line: int) -> tuple[str, int] | None:
    """The innermost block tag still open at line ``before_line``, and the line it opened."""
    try:
        source = path.read_text(encoding="utf-8")
        tokens = list(jinja2.Environment().lex(source))
    except (OSError, UnicodeDecodeError, jinja2.TemplateSyntaxError):
        return None
    stack: list[tuple[str, int]] = []
    after_begin = False
    for lineno, kind, value in tokens:
        if lineno > before_line:
            break
        if kind == "block_begin":
            after_begin = True
            continue
        if kind == "whitespace":
            continue
        if after_begin and kind == "name":
            if value in _BLOCKS:
                stack.append((value, lineno))
            elif value.startswith("end") and stack and stack[-1][0] == value[3:]:
                stack.pop()
        after_begin = False
    return stack[-1] if stack else None
