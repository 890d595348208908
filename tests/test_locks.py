"""The lock folder in the temporary directory does not only grow: a lock file nobody used for
a week and nobody holds is removed; a held one stays, however old."""

from __future__ import annotations

import os
import time
from pathlib import Path

import filelock

from wgslgen import locks


def _aged(path: Path, days: float) -> Path:
    path.touch()
    then = time.time() - days * 24 * 3600
    os.utime(path, (then, then))
    return path


def test_stale_free_lock_files_are_removed_and_held_or_recent_ones_stay(tmp_path: Path) -> None:
    stale = _aged(tmp_path / "db-old.lock", 8)
    recent = _aged(tmp_path / "db-new.lock", 1)
    held_file = _aged(tmp_path / "tune-held.lock", 30)
    other = _aged(tmp_path / "notes.txt", 30)  # not a lock file of ours
    held = filelock.FileLock(str(held_file))
    held.acquire()
    try:
        assert locks.prune_stale_locks(tmp_path) == 1
    finally:
        held.release()
    assert not stale.exists() and recent.exists() and held_file.exists() and other.exists()


def test_holding_a_lock_marks_it_used(tmp_path: Path) -> None:
    target = tmp_path / "results.jsonl"
    lock_file = _aged(locks.lock_path(target, "db"), 30)
    with locks.hold(target, "db"):
        pass
    assert time.time() - lock_file.stat().st_mtime < 60
    locks.prune_stale_locks(lock_file.parent)  # the real folder: other stale ones may go
    assert lock_file.exists()
