"""The selection file (tuning/selection.json): one decision per kernel, device and shape,
read, written atomically and updated under its lock."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wgslgen.atomic import atomic_write_text
from wgslgen.errors import WgslgenError
from wgslgen.tune.records import SELECTION_FORMAT, SelectionEntryModel, problem


@dataclass(frozen=True)
class Choice:
    """A variant as chosen for an entry, with its median time (sha256 may be unknown)."""

    variant: str
    median_ns: float
    sha256: str | None = None


@dataclass(frozen=True)
class SelectionEntry:
    """The decision for one kernel, device and shape."""

    kernel: str
    device: str  # DeviceKey.digest()
    device_label: str
    shape: str  # canonical_shape()
    winner: Choice
    default: Choice | None  # the portable default (fits the WebGPU defaults); None: none ran
    baseline: Choice | None  # what the winner is compared against; None: it did not run
    speedup: float | None  # baseline median / winner median; None without a baseline
    reason: str  # the tie-break reason from pick_winner

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        for k in ("winner", "default", "baseline"):
            c = d[k]
            d[k] = (
                None
                if c is None
                else {"variant": c.variant, "median_ns": c.median_ns, "sha256": c.sha256}
            )
        return d

    @classmethod
    def from_dict(cls, d: Any) -> SelectionEntry:
        """The inverse of to_dict, validated by SelectionEntryModel; ValueError names the
        first wrong field."""
        try:
            m = SelectionEntryModel.model_validate(d)
        except ValidationError as e:
            raise ValueError(problem(e)) from None

        def choice(c: Any) -> Choice | None:
            return None if c is None else Choice(c.variant, float(c.median_ns), c.sha256)

        return cls(
            kernel=m.kernel, device=m.device, device_label=m.device_label, shape=m.shape,
            winner=choice(m.winner), default=choice(m.default), baseline=choice(m.baseline),
            speedup=m.speedup, reason=m.reason,
        )  # fmt: skip


def write_selection(path: Path | str, entries: Iterable[SelectionEntry]) -> None:
    """Write the selection file atomically, entries sorted, keys sorted, one stable format."""
    ordered = sorted(entries, key=lambda e: (e.kernel, e.device, e.shape))
    doc = {"format": SELECTION_FORMAT, "entries": [e.to_dict() for e in ordered]}
    atomic_write_text(path, json.dumps(doc, sort_keys=True, indent=2) + "\n")


def read_selection(path: Path | str) -> list[SelectionEntry]:
    """Read the selection file; WgslgenError naming file and line:col when it is not valid."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise WgslgenError(f"cannot read selection file {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise WgslgenError(f"{path}: not a selection file (not UTF-8 text)") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise WgslgenError(
            f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}",
            hint="the file is written by wgslgen; regenerate it rather than edit it",
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != SELECTION_FORMAT:
        raise WgslgenError(f"{path}: not a selection file of format {SELECTION_FORMAT}")
    entries = doc.get("entries", [])
    if not isinstance(entries, list):
        raise WgslgenError(f"{path}: 'entries' is not a list")
    out = []
    for i, d in enumerate(entries):
        try:
            out.append(SelectionEntry.from_dict(d))
        except ValueError as e:
            raise WgslgenError(f"{path}: entries[{i}] is malformed: {e}") from None
    return out


KEPT_DEFAULT = "portable default kept from an earlier tune (no portable candidate in this one)"


def _choices(e: SelectionEntry) -> tuple[str | None, ...]:
    return tuple(c.variant if c else None for c in (e.winner, e.default, e.baseline))


def update_selection(
    path: Path | str,
    entries: Iterable[SelectionEntry],
    on_wait: Callable[[str], None] | None = None,
    keep_default_for: Collection[tuple[str, str, str]] = (),
    now_failing: Mapping[tuple[str, str, str], Collection[str]] | None = None,
    on_drop: Callable[[SelectionEntry, str], None] | None = None,
    nothing_measured: Collection[tuple[str, str, str]] = (),
) -> list[SelectionEntry]:
    """Replace the entries with the same (kernel, device, shape) in the file; keep the rest,
    except an entry whose winner or default this tune found failing there (``now_failing``:
    the variants per key that compiled wrong, crashed or gave wrong results): it is dropped
    (``on_drop(entry, variant)``), so `vendor` cannot ship a variant that fails now.
    An entry of a key in ``nothing_measured`` (every record reused) that chooses what the
    file's entry chose keeps the file's entry: only the head-to-head medians would differ,
    and a tune that changed nothing leaves a committed selection (and `vendor --check`) alone.

    An entry without a portable default whose key is in ``keep_default_for`` (a tune whose
    candidates held no portable variant, e.g. ``--set s=f16``) keeps the replaced entry's
    default: narrowing the candidates must not lose the fallback callers vendor. Read, change
    and write happen under the file's lock, so two tunes finishing together both keep their
    entries.
    """
    from wgslgen import locks

    path = Path(path)
    why = f"another wgslgen tune is updating {path}; waiting for it"
    with locks.hold(path, "selection", on_wait, why):
        current = {
            (e.kernel, e.device, e.shape): e
            for e in (read_selection(path) if path.exists() else [])
        }
        for e in entries:
            key = (e.kernel, e.device, e.shape)
            earlier = current.get(key)
            if e.default is None and key in keep_default_for and earlier and earlier.default:
                e = replace(e, default=earlier.default, reason=f"{e.reason}; {KEPT_DEFAULT}")
            if key in nothing_measured and earlier and _choices(earlier) == _choices(e):
                continue
            current[key] = e
        for key, failing in (now_failing or {}).items():
            old = current.get(key)
            chosen = [c.variant for c in (old.winner, old.default) if c] if old else []
            if bad := next((v for v in chosen if v in failing), None):
                del current[key]
                if on_drop is not None:
                    on_drop(old, bad)  # type: ignore[arg-type]
        write_selection(path, current.values())
    return list(current.values())
