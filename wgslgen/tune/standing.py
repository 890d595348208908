"""A tune that measured nothing new at a shape keeps the choices the selection file holds.

"A re-run measures only what is missing": racing the same finalists again could change the
winner only by noise (on lavapipe it did, about one rerun in five), churning a committed
selection and `vendor --check`. So when every record of the shape was reused and the file's
winner and default still pass with the same code, they stand; the head-to-head is skipped.
Dropping the entry (or the records) races them again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from wgslgen.tune.db import SelectionEntry
from wgslgen.tune.selection import Decision, Outcome

# (kernel, device digest, canonical shape) → ((winner, sha256), (default, sha256) or None)
Held = tuple[tuple[str, str], tuple[str, str] | None]
Standing = Mapping[tuple[str, str, str], Held]

KEPT = "the selection's choice stands: every record was reused, nothing new to race"


def standing_of(entries: Iterable[SelectionEntry]) -> dict[tuple[str, str, str], Held]:
    """The choices of a selection file's entries, by (kernel, device, shape)."""
    return {
        (e.kernel, e.device, e.shape): (
            (e.winner.variant, e.winner.sha256),
            (e.default.variant, e.default.sha256) if e.default else None,
        )
        for e in entries
    }


def held_choices(
    standing: Standing, key: tuple[str, str, str], outcomes: list[Outcome], eligible: Iterable[str]
) -> Held | None:
    """The file's choices for ``key`` when this run reused every record and they still pass
    (same sha256, still eligible); else None (decide as usual)."""
    held = standing.get(key)
    if held is None or not outcomes or not all(o.reused for o in outcomes):
        return None
    shas = {o.name: o.candidate.sha256 for o in outcomes}
    ok = set(eligible)
    chosen = [c for c in held if c is not None]
    return held if all(v in ok and shas.get(v) == sha for v, sha in chosen) else None


def kept(decision: Decision, held: Held) -> Decision:
    """``decision`` (made from the database's medians) with the held winner and default."""
    (winner, _), default = held
    finalists = tuple(dict.fromkeys([*decision.finalists, winner]))
    return replace(
        decision, winner=winner, default=default[0] if default else None, reason=KEPT,
        finalists=finalists, notes=(*decision.notes, KEPT),
    )  # fmt: skip
