"""Reading a user's text file: a file that cannot be read, or is not UTF-8, is a
WgslgenError naming it (and where the first bad byte is), never a traceback."""

from __future__ import annotations

import re
from pathlib import Path

from wgslgen.errors import WgslgenError


class UnreadableText(WgslgenError):
    """A file that cannot be read as UTF-8 text; ``reason`` says why without the path."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def read_user_text(path: Path) -> str:
    """The UTF-8 text of ``path``; UnreadableText naming file (and line:col) when unreadable."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise UnreadableText(f"{path}: cannot read: {why}", why) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        why = f"not UTF-8 text (byte 0x{data[exc.start]:02x})"
        raise UnreadableText(f"{path}:{line}:{col}: {why}", f"{why} (at {line}:{col})") from None


# WGSL's line breaks besides LF (CR LF counts as one): https://www.w3.org/TR/WGSL/#line-break
_WGSL_LINE_BREAK = re.compile("\r\n|[\r\x0b\x0c\x85\u2028\u2029]")


def with_lf_line_breaks(text: str) -> str:
    """``text`` with each of WGSL's line breaks written as LF: the same program, whose line
    numbers every compiler (naga counts LF alone) and every message then agree on."""
    return _WGSL_LINE_BREAK.sub("\n", text)
