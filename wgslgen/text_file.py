"""Reading a user's text file: a file that cannot be read, or is not UTF-8, is a
WgslgenError naming it (and where the first bad byte is), never a traceback."""

from __future__ import annotations

from pathlib import Path

from wgslgen.errors import WgslgenError


class UnreadableText(WgslgenError):
    """A file that cannot be read as UTF-8 text; ``reason`` says why without the path."""

    def __init__(self, path: Path, where: str, reason: str) -> None:
        super().__init__(f"{path}{where}: {reason}")
        self.reason = f"{reason} (at {where.lstrip(':')})" if where else reason


def read_user_text(path: Path) -> str:
    """The UTF-8 text of ``path``; UnreadableText naming file (and line:col) when unreadable."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UnreadableText(path, "", f"cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        reason = f"not UTF-8 text (byte 0x{data[exc.start]:02x})"
        raise UnreadableText(path, f":{line}:{col}", reason) from None
