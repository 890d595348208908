"""The one exception type a user sees: a message that names the file, line or key at fault."""

from __future__ import annotations


class WgslgenError(Exception):
    """An error in the user's input or environment, reported without a traceback."""

    def __init__(self, message: str, *, hint: str | None = None, option: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint
        # The setting at fault (e.g. "adapter"): the command line names its flag, the API
        # its parameter; core text never spells a flag, so it reads right in both.
        self.option = option

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base}\n  hint: {self.hint}" if self.hint else base
