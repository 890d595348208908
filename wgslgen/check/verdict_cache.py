"""Engine verdicts remembered by what decides them, within a run and across runs.

A compiler's verdict on a shader is a function of the WGSL text, the device features and
limits, the entry point, the pipeline constants, the path shown in its diagnostic, the
engine's build (its version, command and adapter) and wgslgen's code that reads its output.
The key covers all of these, so an identical shader (two profiles, two runs, an unchanged
library) is compiled once. Failures of the engine itself (crash, hang, missing device) are
never remembered. The store is one SQLite file in wgslgen's cache folder; any trouble with
it (locked, corrupt, read-only) only means compiling again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from wgslgen import __version__
from wgslgen.check.engines.base import ShaderInput, Verdict
from wgslgen.check.engines.naga_wasm import cache_root

FORMAT = 1
MAX_ROWS = 200_000  # about 100 MB at most; the oldest go first
_FIELDS = ("ok", "message", "diagnostic", "line", "column")


def enabled() -> bool:
    """Whether verdicts are stored across runs (WGSLGEN_NO_CACHE=1 turns it off)."""
    return os.environ.get("WGSLGEN_NO_CACHE", "") in ("", "0")


def open_cache(remember: bool | None = None) -> VerdictCache:
    """The cache for one run: the stored one when ``remember`` (None: unless
    WGSLGEN_NO_CACHE is set), else one that forgets at the end of the run."""
    return VerdictCache(cache_file() if (enabled() if remember is None else remember) else None)


def cache_file() -> Path:
    """The SQLite file that holds remembered verdicts."""
    return cache_root() / "verdicts.sqlite3"


@cache
def _code_digest() -> str:
    """wgslgen's code that runs the engines, reads their output and applies Tint's rules
    (every module of wgslgen/check): a change judges everything again."""
    h = hashlib.sha256(f"{FORMAT} {__version__}".encode())
    folder = Path(__file__).parent
    for path in sorted([*folder.iterdir(), *(folder / "engines").iterdir()]):
        if path.suffix in (".py", ".mjs"):
            h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()


def value_key(kind: str, *parts: Any) -> str:
    """The key of a value wgslgen/check's code computes from ``parts`` alone (Tint's static
    findings from a text, a text's interface mismatches), as one digest."""
    text = json.dumps([_code_digest(), kind, *parts], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def shader_key(identity: str, shader: ShaderInput) -> str:
    """What decides ``shader``'s verdict by the engine ``identity``, as one digest."""
    text = json.dumps(
        [
            _code_digest(),
            identity,
            shader.source,
            sorted(shader.features),
            sorted(shader.limits.items()),
            shader.entry_point,
            sorted(shader.constants.items()),
            shader.path,
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _remembered(verdict: Verdict) -> bool:
    return verdict.ok or "engine failure" not in verdict.message


class VerdictCache:
    """Verdicts by key: lookups and stores batched per engine run."""

    def __init__(self, path: Path | None) -> None:
        """``path`` None keeps verdicts for this run only."""
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._broken = path is None
        self._lock = threading.Lock()  # engines run on threads of their own; one connection

    def _connect(self) -> sqlite3.Connection | None:
        if self._broken:
            return None
        if self._db is None:
            try:
                assert self.path is not None
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=10.0, check_same_thread=False)
                db.execute(
                    "CREATE TABLE IF NOT EXISTS verdicts "
                    "(key TEXT PRIMARY KEY, verdict TEXT NOT NULL, at REAL NOT NULL)"
                )
                self._db = db
            except (sqlite3.Error, OSError):
                self._broken = True
        return self._db

    def lookup(self, keys: Sequence[str]) -> dict[str, Any]:
        """The stored value (verdict fields, findings) of each key found."""
        with self._lock:
            return self._lookup(keys)

    def _lookup(self, keys: Sequence[str]) -> dict[str, Any]:
        db = self._connect()
        found: dict[str, Any] = {}
        if db is None:
            return found
        try:
            for i in range(0, len(keys), 500):
                part = list(keys[i : i + 500])
                marks = ",".join("?" * len(part))
                rows = db.execute(f"SELECT key, verdict FROM verdicts WHERE key IN ({marks})", part)
                found.update((k, json.loads(v)) for k, v in rows)
        except (sqlite3.Error, ValueError):
            self._broken = True
            return {}
        return found

    def store(self, entries: dict[str, Verdict]) -> None:
        """Remember each verdict under its key (engine failures excepted)."""
        fields = {k: {f: getattr(v, f) for f in _FIELDS} for k, v in entries.items()}
        self.store_values({k: fields[k] for k, v in entries.items() if _remembered(v)})

    def store_values(self, entries: dict[str, Any]) -> None:
        """Remember each JSON value under its key."""
        with self._lock:
            self._store(entries)

    def _store(self, entries: dict[str, Any]) -> None:
        db = self._connect()
        rows = [(k, json.dumps(v), time.time()) for k, v in entries.items()]
        if db is None or not rows:
            return
        try:
            with db:
                db.executemany("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?)", rows)
                (count,) = db.execute("SELECT COUNT(*) FROM verdicts").fetchone()
                if count > MAX_ROWS:
                    db.execute(
                        "DELETE FROM verdicts WHERE key IN "
                        "(SELECT key FROM verdicts ORDER BY at LIMIT ?)",
                        (count - MAX_ROWS,),
                    )
        except sqlite3.Error:
            self._broken = True

    def judge(
        self,
        identity: str | None,
        engine: str,
        shaders: Sequence[ShaderInput],
        compile_: Callable[[list[ShaderInput]], list[Verdict]],
    ) -> list[Verdict]:
        """One verdict per shader: remembered ones, and ``compile_`` of the others, each
        distinct shader once."""
        if identity is None:  # an engine that cannot say which build it is
            return compile_(list(shaders))
        keys = [shader_key(identity, s) for s in shaders]
        known = self.lookup(sorted(set(keys)))
        todo: dict[str, ShaderInput] = {}
        for key, shader in zip(keys, shaders, strict=True):
            if key not in known:
                todo.setdefault(key, shader)
        fresh = dict(zip(todo, compile_(list(todo.values())), strict=True))
        self.store(fresh)
        out = []
        for key, shader in zip(keys, shaders, strict=True):
            if key in fresh:
                out.append(dataclasses.replace(fresh[key], id=shader.id))
            else:
                out.append(Verdict(shader.id, engine, **known[key]))
        return out

    def close(self) -> None:
        """Close the database (a later call opens it again)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
