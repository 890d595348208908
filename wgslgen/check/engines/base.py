"""The engine interface: shaders in, one verdict per shader out; shared diagnostic parsing."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class ShaderInput:
    """One WGSL text to validate, with the device features and limits it is meant for."""

    id: str
    source: str
    features: frozenset[str] = frozenset()
    limits: Mapping[str, int] = field(default_factory=dict)
    path: str | None = None  # shown in diagnostics instead of the id when given
    entry_point: str | None = None  # None: the module's only entry point
    constants: Mapping[str, float] = field(default_factory=dict)  # pipeline-overridable values


@dataclass(frozen=True)
class Verdict:
    """One engine's judgement of one shader."""

    id: str
    engine: str
    ok: bool
    message: str = ""  # first line of the failure, "" when ok
    diagnostic: str = ""  # the compiler's full text
    line: int | None = None  # 1-based, in the WGSL text
    column: int | None = None


class Engine(Protocol):
    """A real compiler or runtime that judges WGSL."""

    name: str

    def availability(self) -> str | None:
        """None when usable, else why not (one line, with how to install)."""
        ...

    def version(self) -> str:
        """Which compiler answers, and its version."""
        ...

    def validate(self, shaders: list[ShaderInput]) -> list[Verdict]:
        """One verdict per shader, in order; a broken engine gives failing verdicts, not errors."""
        ...


# naga/wgpu codespan ("┌─ file:3:7"), and Tint (":3:7 error:" / "file.wgsl:3:7 error:").
_CODESPAN = re.compile(r"┌─ [^\n]*?:(\d+):(\d+)\s*$", re.MULTILINE)
_TINT = re.compile(r"(?:^|\s)[^\s:]*:(\d+):(\d+) error:", re.MULTILINE)


def find_location(text: str) -> tuple[int | None, int | None]:
    """The first line:column a compiler diagnostic points at, or (None, None)."""
    m = _CODESPAN.search(text) or _TINT.search(text)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def failure(engine: str, shader_id: str, message: str, diagnostic: str = "") -> Verdict:
    """A failing verdict whose location is read off ``diagnostic``."""
    line, column = find_location(diagnostic)
    return Verdict(shader_id, engine, False, message.strip(), diagnostic, line, column)


def engine_failure(
    engine: str, shaders: Sequence[ShaderInput], why: str, stderr: str = ""
) -> list[Verdict]:
    """The same failing verdict for every shader of a batch the engine itself failed on."""
    message = f"{engine} engine failure: {why}"
    diagnostic = f"{message}\n{stderr}".rstrip()
    return [Verdict(s.id, engine, False, message, diagnostic) for s in shaders]


def contiguous_shares(items: Sequence[T], most: int, fewest_each: int) -> list[Sequence[T]]:
    """``items`` in order, cut into at most ``most`` contiguous shares of at least
    ``fewest_each`` items (one share when there are too few for two): work for processes
    that each cost a start-up."""
    count = max(1, min(most, len(items) // max(1, fewest_each)))
    size = -(-len(items) // count) or 1
    return [items[i : i + size] for i in range(0, len(items), size)] or [items]
