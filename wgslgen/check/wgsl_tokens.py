"""WGSL text as tokens: comments blanked out (lines kept), token texts and kinds read at C
speed, each token's line and column computed only when a message needs them."""

from __future__ import annotations

import bisect
import re
from typing import Any, NamedTuple

from wgslgen.errors import WgslgenError

_COMMENT_START = re.compile(r"//|/\*")
_BLOCK_TOKEN = re.compile(r"/\*|\*/")


class Tok(NamedTuple):
    kind: str
    text: str
    line: int
    pos: int  # offset in the text


def strip_comments(source: str) -> str:
    """``source`` with // and (nested) /* */ comments blanked out; line numbers are kept."""
    out: list[str] = []
    pos = 0
    while m := _COMMENT_START.search(source, pos):
        out.append(source[pos : m.start()])
        if m.group() == "//":
            end = source.find("\n", m.start())
            end = len(source) if end < 0 else end
        else:
            depth, end = 1, m.end()
            while depth:
                b = _BLOCK_TOKEN.search(source, end)
                if not b:
                    line = source.count("\n", 0, m.start()) + 1
                    raise WgslgenError(f"line {line}: unterminated /* comment")
                depth += 1 if b.group() == "/*" else -1
                end = b.end()
        chunk = source[m.start() : end]
        out.append(re.sub(r"[^\n]", " ", chunk) if "\n" in chunk else " " * len(chunk))
        pos = end
    return "".join([*out, source[pos:]])


# The same tokens without whitespace and without groups: findall() gives their texts at C
# speed; kinds come from the first character, positions only when a message needs them.
_TEXTS = re.compile(
    r"0[xX][0-9a-fA-F]+[iu]?|(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?[fh]?"
    r"|\d+[eE][+-]?\d+[fh]?|\d+[iufh]?|[^\W\d]\w*|->|[^\s\w]"
)


def _kind(text: str) -> str:
    first = text[0]
    if first.isdigit() or (first == "." and len(text) > 1):
        return "num"
    return "ident" if first.isalpha() or first == "_" else "punct"


_KINDS: dict[str, str] = {}


def _new_kind(text: str) -> str:
    kind = _kind(text)
    if len(_KINDS) < 65536:  # bounded: numbers are many
        _KINDS[text] = kind
    return kind


class Tokens:
    """The tokens of a text, as a sequence of Tok built on demand from their texts."""

    def __init__(self, text: str) -> None:
        self.source = text
        self.texts: list[str] = _TEXTS.findall(text)
        known = _KINDS  # most token texts repeat: their kind is looked up, not worked out
        self.kinds = [known[t] if t in known else _new_kind(t) for t in self.texts]
        self._starts: list[int] | None = None
        self._newlines: list[int] = []

    def __len__(self) -> int:
        return len(self.texts)

    def __bool__(self) -> bool:
        return bool(self.texts)

    def _tok(self, i: int) -> Tok:
        if self._starts is None:
            self._starts = [m.start() for m in _TEXTS.finditer(self.source)]
            self._newlines = [m.start() for m in re.finditer("\n", self.source)]
        pos = self._starts[i]
        return Tok(self.kinds[i], self.texts[i], bisect.bisect_right(self._newlines, pos) + 1, pos)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._tok(k) for k in range(*i.indices(len(self.texts)))]
        return self._tok(i if i >= 0 else len(self.texts) + i)
