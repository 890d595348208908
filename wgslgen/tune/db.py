"""The results database (tuning/results.jsonl): every outcome of every variant, append-only.

The selection file lives in selection_file.py (re-exported here); the record types are
declared in records.py.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wgslgen import locks
from wgslgen.atomic import atomic_write_text
from wgslgen.errors import WgslgenError
from wgslgen.notices import logger
from wgslgen.spec.kernel import format_shape, parse_shape
from wgslgen.tune.bench import Measurement
from wgslgen.tune.records import SELECTION_FORMAT, STATUSES, RecordModel, problem
from wgslgen.tune.selection_file import Choice, SelectionEntry, read_selection, write_selection

__all__ = [
    "SELECTION_FORMAT", "STATUSES", "Choice", "LoadReport", "MergeStats", "Record", "ResultKey",
    "ResultsDB", "SelectionEntry", "canonical_shape", "check_writable", "current_versions",
    "latest", "read_selection", "stale", "utc_now", "write_selection",
]  # fmt: skip


def canonical_shape(shape: Mapping[str, object] | str) -> str:
    """The shape as 'k=v,k=v' sorted by key (spec.kernel's one parser and format)."""
    return format_shape(parse_shape(shape) if isinstance(shape, str) else shape)


def current_versions() -> dict[str, str]:
    """The versions a record carries: wgslgen, wgpu (wgpu-py) and the naga that compiled the
    timed shader (the one inside wgpu-native, named by wgpu-native's version)."""
    from importlib.metadata import PackageNotFoundError, version

    def of(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "unknown"

    try:
        from wgpu.backends.wgpu_native import __version__ as native
    except ImportError:
        native = "unknown"
    return {"wgslgen": of("wgslgen"), "wgpu": of("wgpu"), "naga": f"wgpu-native {native}"}


def utc_now() -> str:
    """The current time as ISO 8601 UTC with microseconds, e.g. '2025-01-31T12:00:00.123456Z'."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def check_writable(path: Path | str, what: str) -> None:
    """Refuse, before any work, a file that could not be written at the end (a folder in its
    place, a read-only file or folder)."""
    path = Path(path)
    if path.is_dir():
        raise WgslgenError(f"{what} {path} is a folder, not a file")
    folder = next((p for p in [path.parent, *path.parent.parents] if p.exists()), Path("."))
    if not folder.is_dir():
        raise WgslgenError(f"{what} {path}: {folder} is not a folder")
    target = path if path.exists() else folder
    if not os.access(target, os.W_OK):
        raise WgslgenError(f"{what} {path}: {target} is not writable")


@dataclass(frozen=True)
class ResultKey:
    """What a result is about: this code, on this device, at this shape, judged this way."""

    source_sha256: str
    device: str  # DeviceKey.digest()
    shape: str  # canonical_shape()
    # selection.judge_sha256: dispatch, counts, tolerance, reference, judging code. A record
    # judged another way (a tightened tolerance, a fixed reference) is not reused.
    judge: str = ""
    input_seed: int = 0


@dataclass(frozen=True)
class Record:
    """One line of results.jsonl: the outcome of one variant on one device at one shape."""

    key: ResultKey
    kernel: str
    variant: str
    params: dict[str, Any]
    device_info: dict[str, Any]
    status: str
    measurement: Measurement | None = None
    error: str | None = None
    versions: dict[str, str] = field(default_factory=current_versions)
    measured_at: str = field(default_factory=utc_now)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (the line format, records.RecordModel)."""
        k = self.key
        return {
            "key": {"source_sha256": k.source_sha256, "device": k.device, "shape": k.shape,
                    "judge": k.judge, "input_seed": k.input_seed},
            "kernel": self.kernel,
            "variant": self.variant,
            "params": self.params,
            "device_info": self.device_info,
            "status": self.status,
            "measurement": self.measurement.to_dict() if self.measurement else None,
            "error": self.error,
            "versions": self.versions,
            "measured_at": self.measured_at,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, d: Any) -> Record:
        """Parse a line's dict, validated by records.RecordModel; ValueError names the field."""
        try:
            m = RecordModel.model_validate(d)
        except ValidationError as e:
            raise ValueError(problem(e)) from None
        k = m.key
        return cls(
            key=ResultKey(k.source_sha256, k.device, k.shape, k.judge, k.input_seed),
            kernel=m.kernel,
            variant=m.variant,
            params=dict(m.params),
            device_info=dict(m.device_info),
            status=m.status,
            measurement=None
            if m.measurement is None
            else Measurement.from_dict(m.measurement.model_dump()),
            error=m.error,
            versions=dict(m.versions),
            measured_at=m.measured_at,
        )

    def identity(self) -> tuple[Any, ...]:
        """What makes two records the same measurement (for merging): key, time, variant."""
        return (*self.key.__dict__.values(), self.measured_at, self.variant)


def latest(records: Iterable[Record]) -> list[Record]:
    """The latest record per key, in first-seen order: the latest by measurement time, and
    on equal times the later line (the rule ResultsDB.get follows)."""
    best: dict[ResultKey, Record] = {}
    for r in records:
        old = best.get(r.key)
        if old is None or r.measured_at >= old.measured_at:
            best[r.key] = r
    return list(best.values())


def stale(
    records: Iterable[Record],
    current: set[tuple[str, str]],
    kernels: set[str],
    all_kernels: bool = False,
) -> list[Record]:
    """The records prune drops: of ``kernels``, those whose (source sha256, judge) the
    templates no longer produce; records of other kernels only with ``all_kernels`` (they may
    come from another templates folder)."""
    return [
        r
        for r in records
        if (r.kernel in kernels or all_kernels)
        and (r.key.source_sha256, r.key.judge) not in current
    ]


@dataclass(frozen=True)
class LoadReport:
    """The records of a file, and the lines that could not be read (1-based line, problem)."""

    records: list[Record]
    problems: list[tuple[int, str]]
    raw_problems: list[bytes] = field(default_factory=list)  # the unreadable lines' bytes


@dataclass(frozen=True)
class MergeStats:
    """What a merge did: records added, exact duplicates dropped, conflicts kept (same
    measurement, different content), unreadable lines skipped, lines moved aside."""

    added: int
    duplicates: int
    problems: list[tuple[str, int, str]]  # (file, line, problem)
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # (file, what differs)
    moved_lines: int = 0  # the database's own unreadable lines, moved to rejected_path
    rejected_path: Path | None = None


def _line(record: Record) -> str:
    return json.dumps(record.to_dict(), sort_keys=True, separators=(",", ":")) + "\n"


class ResultsDB:
    """An append-only JSON Lines file of Records; a kill at any point loses nothing written.

    Each append is one write() of a whole line on an O_APPEND descriptor, then fsync; a short
    write (full disk) is undone. Rewrites (merge, prune) go through a temporary file and a
    rename. Appends and rewrites hold the file's lock (filelock); a whole tuning session holds
    a second lock, so two tunes on one database run one after the other and the second reuses
    what the first measured.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._index: dict[ResultKey, Record] | None = None
        self._session: contextlib.ExitStack | None = None

    @property
    def rejected_path(self) -> Path:
        """Where unreadable lines go when a rewrite would otherwise drop them."""
        return self.path.with_name(self.path.name + ".rejected")

    def _lock(self) -> contextlib.AbstractContextManager[None]:
        return locks.hold(self.path, "db")

    def begin_session(self, on_wait: Callable[[str], None] | None = None) -> None:
        """Hold the tuning lock until end_session; another tune waits (saying so)."""
        if self._session is None:
            why = f"another wgslgen tune is using {self.path}; waiting for it to finish"
            stack = contextlib.ExitStack()
            stack.enter_context(locks.hold(self.path, "tune", on_wait or logger.warning, why))
            self._session, self._index = stack, None  # re-read: the other tune added lines

    def end_session(self) -> None:
        """Release the tuning lock."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def load(self) -> LoadReport:
        """All readable records in file order, and (line, problem) for each unreadable line."""
        return _load(self.path)

    def get(
        self,
        source_sha256: str,
        device_digest: str,
        shape: Mapping | str,
        judge: str = "",
        input_seed: int = 0,
    ) -> Record | None:
        """The latest record for this source, device, shape and judging, or None."""
        if self._index is None:
            self._index = {r.key: r for r in latest(self.load().records)}
        key = ResultKey(source_sha256, device_digest, canonical_shape(shape), judge, input_seed)
        return self._index.get(key)

    def append(self, record: Record) -> None:
        """Append one record durably (one write, fsync); a failed write leaves no torn line."""
        data = _line(record).encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock():
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                end = os.lseek(fd, 0, os.SEEK_END)
                # After a torn last line, end it first so this record starts a line of its own.
                if end and os.pread(fd, 1, end - 1) != b"\n":
                    data = b"\n" + data
                try:
                    if os.write(fd, data) != len(data):
                        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                    os.fsync(fd)
                except OSError as e:
                    os.ftruncate(fd, end)  # undo: the file is as it was before this record
                    raise WgslgenError(
                        f"cannot append to results database {self.path}: "
                        f"{e.strerror or e}; the record of {record.variant} was not written"
                    ) from None
            finally:
                os.close(fd)
        if self._index is not None:
            old = self._index.get(record.key)
            if old is None or record.measured_at >= old.measured_at:
                self._index[record.key] = record

    def merge(self, other_paths: Iterable[Path | str]) -> MergeStats:
        """Add the records of other results files (e.g. other machines), each once.

        A record with the same key, time and variant as one already here but other content
        is a conflict: both are kept (the later line is the one used) and it is reported.
        """
        others = [Path(p) for p in other_paths]
        for p in others:
            if not p.is_file():
                raise WgslgenError(f"cannot merge {p}: no such results file")
        with self._lock():
            own = _load(self.path)
            self._refuse_foreign(own)
            out = list(own.records)
            seen = {r.identity(): _line(r) for r in out}
            problems: list[tuple[str, int, str]] = [(str(self.path), n, w) for n, w in own.problems]
            conflicts: list[tuple[str, str]] = []
            duplicates = 0
            for p in others:
                report = _load(p)
                if report.problems and not report.records:  # e.g. selection.json: nothing added
                    first = "line {}: {}".format(*report.problems[0])
                    raise WgslgenError(f"cannot merge {p}: not a results file ({first})")
                problems += [(str(p), n, why) for n, why in report.problems]
                for r in report.records:
                    line = _line(r)
                    known = seen.get(r.identity())
                    if known == line:
                        duplicates += 1
                        continue
                    if known is not None:
                        conflicts.append((str(p), _conflict(known, r)))
                    seen[r.identity()] = line
                    out.append(r)
            self._rewrite(out, own.raw_problems)
        added = len(out) - len(own.records)
        return MergeStats(
            added, duplicates, problems, conflicts, len(own.raw_problems), self.rejected_path
        )

    def prune(self, drop: Callable[[Record], bool]) -> tuple[int, int]:
        """Drop the records ``drop`` selects (see ``stale``): (records dropped, unreadable
        lines moved to rejected_path)."""
        with self._lock():
            report = _load(self.path)
            self._refuse_foreign(report)
            kept = [r for r in report.records if not drop(r)]
            self._rewrite(kept, report.raw_problems)
        return len(report.records) - len(kept), len(report.raw_problems)

    def _refuse_foreign(self, own: LoadReport) -> None:
        """A file with lines but not one readable record is not a results database (a
        mistyped --db): it is never rewritten."""
        if own.raw_problems and not own.records:
            raise WgslgenError(
                f"{self.path}: not one line is a results record (line {own.problems[0][0]}: "
                f"{own.problems[0][1]}); not a results database? nothing was changed"
            )

    def _rewrite(self, records: list[Record], rejected: list[bytes]) -> None:
        if rejected:  # never silently lost: moved aside, next to the database
            with open(self.rejected_path, "ab") as f:
                f.write(b"".join(r.rstrip(b"\n") + b"\n" for r in rejected))
                f.flush()
                os.fsync(f.fileno())
        try:
            atomic_write_text(self.path, "".join(_line(r) for r in records))
        except OSError as e:
            raise WgslgenError(
                f"cannot rewrite results database {self.path}: {e.strerror or e}; it is unchanged"
            ) from None
        self._index = None


def _conflict(known_line: str, other: Record) -> str:
    mine = json.loads(known_line)
    theirs = other.to_dict()
    fields = sorted(k for k in theirs if mine.get(k) != theirs.get(k))
    return (
        f"{other.variant} {other.key.shape} measured {other.measured_at}: differs in "
        f"{', '.join(fields)}; both kept, the later line (this file's) is used"
    )


def _load(path: Path) -> LoadReport:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return LoadReport([], [])
    except OSError as e:
        raise WgslgenError(f"cannot read results database {path}: {e.strerror}") from None
    records: list[Record] = []
    problems: list[tuple[int, str]] = []
    raw: list[bytes] = []
    lines = data.split(b"\n")
    torn = lines[-1] != b""  # a complete file ends with a newline
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(Record.from_dict(json.loads(line)))
        except (UnicodeDecodeError, json.JSONDecodeError, ValueError, RecursionError) as e:
            why = "torn last line (interrupted write)" if torn and n == len(lines) else str(e)
            problems.append((n, why))
            raw.append(line)
    return LoadReport(records, problems, raw)
