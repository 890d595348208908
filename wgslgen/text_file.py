"""Reading a user's text file: a file that cannot be read, or is not UTF-8, is a
WgslgenError naming it (and where the first bad byte is), never a traceback."""

from __future__ import annotations

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
