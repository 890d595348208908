"""The results database (tuning/results.jsonl) and the selection file (tuning/selection.json)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wgslgen.atomic import atomic_write_text
from wgslgen.errors import WgslgenError
from wgslgen.spec.kernel import format_shape, parse_shape
from wgslgen.tune.bench import Measurement

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locking, appends are still one write
    fcntl = None  # type: ignore[assignment]

STATUSES = ("ok", "compile-error", "wrong", "timeout", "crash", "skipped")
SELECTION_FORMAT = 1


def canonical_shape(shape: Mapping[str, object] | str) -> str:
    """The shape as 'k=v,k=v' sorted by key (spec.kernel's one parser and format)."""
    return format_shape(parse_shape(shape) if isinstance(shape, str) else shape)


def current_versions(naga: str = "") -> dict[str, str]:
    """The versions a record carries: wgslgen, wgpu (wgpu-py) and naga (given by the caller)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        wgslgen = version("wgslgen")
    except PackageNotFoundError:
        wgslgen = "unknown"
    try:
        wgpu = version("wgpu")
    except PackageNotFoundError:
        wgpu = "unknown"
    return {"wgslgen": wgslgen, "wgpu": wgpu, "naga": naga}


def utc_now() -> str:
    """The current time as ISO 8601 UTC with microseconds, e.g. '2025-01-31T12:00:00.123456Z'."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class ResultKey:
    """What a result is about: exactly this WGSL text, on this device, at this shape."""

    source_sha256: str
    device: str  # DeviceKey.digest()
    shape: str  # canonical_shape()


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
        """A JSON-serialisable dict (the line format)."""
        return {
            "key": {"source_sha256": self.key.source_sha256, "device": self.key.device,
                    "shape": self.key.shape},
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
        """Parse a line's dict; raises ValueError naming the first problem."""
        try:
            if not isinstance(d, dict):
                raise ValueError("not a JSON object")
            if d["status"] not in STATUSES:
                raise ValueError(f"unknown status {d['status']!r}")
            k = d["key"]
            m = d["measurement"]
            return cls(
                key=ResultKey(str(k["source_sha256"]), str(k["device"]), str(k["shape"])),
                kernel=str(d["kernel"]),
                variant=str(d["variant"]),
                params=dict(d["params"]),
                device_info=dict(d["device_info"]),
                status=d["status"],
                measurement=Measurement.from_dict(m) if m is not None else None,
                error=d["error"],
                versions=dict(d["versions"]),
                measured_at=str(d["measured_at"]),
            )
        except KeyError as e:
            raise ValueError(f"missing field {e.args[0]!r}") from None
        except (TypeError, AttributeError) as e:
            raise ValueError(f"malformed record: {e}") from None

    def identity(self) -> tuple[str, str, str, str, str]:
        """What makes two records the same measurement (for merging): key, time, variant."""
        k = self.key
        return (k.source_sha256, k.device, k.shape, self.measured_at, self.variant)


@dataclass(frozen=True)
class LoadReport:
    """The records of a file, and the lines that could not be read (1-based line, problem)."""

    records: list[Record]
    problems: list[tuple[int, str]]


@dataclass(frozen=True)
class MergeStats:
    """What a merge did: records added, duplicates dropped, unreadable lines skipped."""

    added: int
    duplicates: int
    problems: list[tuple[str, int, str]]  # (file, line, problem)


def _line(record: Record) -> str:
    return json.dumps(record.to_dict(), sort_keys=True, separators=(",", ":")) + "\n"


class ResultsDB:
    """An append-only JSON Lines file of Records; a kill at any point loses nothing written.

    Each append is one write() of a whole line on an O_APPEND descriptor, then fsync: a crash
    leaves at most a torn last line, which load() reports and skips. Rewrites (merge, prune)
    go through a temporary file and a rename, under an exclusive lock that appends (shared)
    respect, so a concurrent appender cannot lose a line to a rewrite.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._index: dict[ResultKey, Record] | None = None

    @contextlib.contextmanager
    def _lock(self, exclusive: bool) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fcntl is None:
            yield
            return
        # Lock the directory rather than a side file, so no lock file litters tuning/.
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)  # releases the lock

    def load(self) -> LoadReport:
        """All readable records in file order, and (line, problem) for each unreadable line."""
        return _load(self.path)

    def get(self, source_sha256: str, device_digest: str, shape: Mapping | str) -> Record | None:
        """The latest record for this source, device and shape, or None."""
        if self._index is None:
            self._index = {}
            for r in self.load().records:
                self._remember(r)
        return self._index.get(ResultKey(source_sha256, device_digest, canonical_shape(shape)))

    def _remember(self, r: Record) -> None:
        assert self._index is not None
        old = self._index.get(r.key)
        # Latest by measurement time; on equal times, the later line wins.
        if old is None or r.measured_at >= old.measured_at:
            self._index[r.key] = r

    def append(self, record: Record) -> None:
        """Append one record durably (one write, flush, fsync)."""
        data = _line(record).encode()
        with self._lock(exclusive=False):
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                # After a torn last line, end it first so this record starts a line of its own.
                end = os.lseek(fd, 0, os.SEEK_END)
                if end and os.pread(fd, 1, end - 1) != b"\n":
                    data = b"\n" + data
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        if self._index is not None:
            self._remember(record)

    def merge(self, other_paths: Iterable[Path | str]) -> MergeStats:
        """Add the records of other results files (e.g. other machines), each once."""
        others = [Path(p) for p in other_paths]
        for p in others:
            if not p.is_file():
                raise WgslgenError(f"cannot merge {p}: no such results file")
        with self._lock(exclusive=True):
            sources = [(self.path, _load(self.path))]
            sources += [(p, _load(p)) for p in others]
            out: list[Record] = []
            seen: set[tuple[str, ...]] = set()
            problems: list[tuple[str, int, str]] = []
            own_unique = 0
            for i, (path, report) in enumerate(sources):
                problems += [(str(path), n, why) for n, why in report.problems]
                for r in report.records:
                    if r.identity() not in seen:
                        seen.add(r.identity())
                        out.append(r)
                if i == 0:
                    own_unique = len(out)
            total = sum(len(report.records) for _, report in sources)
            self._rewrite(out)
        return MergeStats(len(out) - own_unique, total - len(out), problems)

    def prune(self, keep_shas: set[str]) -> int:
        """Drop records whose source sha is not in ``keep_shas``; return how many were dropped.

        Unreadable lines (reported by load()) are dropped too.
        """
        with self._lock(exclusive=True):
            records = _load(self.path).records
            kept = [r for r in records if r.key.source_sha256 in keep_shas]
            self._rewrite(kept)
        return len(records) - len(kept)

    def _rewrite(self, records: list[Record]) -> None:
        atomic_write_text(self.path, "".join(_line(r) for r in records))
        self._index = None


def _load(path: Path) -> LoadReport:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return LoadReport([], [])
    except OSError as e:
        raise WgslgenError(f"cannot read results database {path}: {e.strerror}") from None
    records: list[Record] = []
    problems: list[tuple[int, str]] = []
    lines = data.split(b"\n")
    torn = lines[-1] != b""  # a complete file ends with a newline
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            records.append(Record.from_dict(json.loads(raw)))
        except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as e:
            why = "torn last line (interrupted write)" if torn and n == len(lines) else str(e)
            problems.append((n, why))
    return LoadReport(records, problems)


# ---- the selection file ----


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
    def from_dict(cls, d: dict[str, Any]) -> SelectionEntry:
        """The inverse of to_dict; raises KeyError/TypeError on a malformed dict."""
        choices = {
            k: None if d[k] is None else Choice(**d[k]) for k in ("winner", "default", "baseline")
        }
        if choices["winner"] is None:
            raise TypeError("an entry needs a winner")
        plain = ("kernel", "device", "device_label", "shape", "reason")
        speedup = None if d["speedup"] is None else float(d["speedup"])
        return cls(**{k: str(d[k]) for k in plain}, **choices, speedup=speedup)


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
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise WgslgenError(
            f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}",
            hint="the file is written by wgslgen; regenerate it rather than edit it",
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != SELECTION_FORMAT:
        raise WgslgenError(f"{path}: not a selection file of format {SELECTION_FORMAT}")
    out = []
    for i, d in enumerate(doc.get("entries", [])):
        try:
            out.append(SelectionEntry.from_dict(d))
        except (KeyError, TypeError, ValueError) as e:
            raise WgslgenError(f"{path}: entry {i} is malformed: {e!r}") from None
    return out
