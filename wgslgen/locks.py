"""Inter-process locks on a user's files (filelock), kept out of the user's folders."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import filelock

# A lock file unused this long (its time is set at each acquisition) and free is removed.
STALE_AFTER_S = 7 * 24 * 3600
_pruned: set[Path] = set()


def lock_path(path: Path | str, purpose: str) -> Path:
    """The lock file guarding ``path`` for ``purpose``: in the temporary folder, so nothing
    litters the user's project, keyed by the resolved path so every spelling shares it."""
    digest = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:24]
    folder = Path(tempfile.gettempdir()) / f"wgslgen-locks-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder not in _pruned:  # once a process: the folder would otherwise only grow
        _pruned.add(folder)
        prune_stale_locks(folder)
    return folder / f"{purpose}-{digest}.lock"


def prune_stale_locks(folder: Path, now: float | None = None) -> int:
    """Remove the lock files of ``folder`` unused for STALE_AFTER_S that nobody holds; how many."""
    cutoff = (time.time() if now is None else now) - STALE_AFTER_S
    removed = 0
    for file in folder.glob("*.lock"):
        try:
            if file.stat().st_mtime >= cutoff:
                continue
            lock = filelock.FileLock(str(file))
            lock.acquire(timeout=0)  # held: in use, however old
        except (OSError, filelock.Timeout):
            continue
        try:
            file.unlink(missing_ok=True)
            removed += 1
        finally:
            lock.release()
    return removed


@contextlib.contextmanager
def hold(
    path: Path | str, purpose: str, on_wait: Callable[[str], None] | None = None, why: str = ""
) -> Iterator[None]:
    """Hold the lock; when another process has it, say so through ``on_wait`` (with ``why``)
    and wait for it."""
    lock = filelock.FileLock(str(lock_path(path, purpose)))
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        if on_wait is not None:
            on_wait(why or f"another wgslgen process is using {path}; waiting for it")
        lock.acquire()
    with contextlib.suppress(OSError):  # its last use, which prune_stale_locks goes by
        os.utime(lock.lock_file)
    try:
        yield
    finally:
        lock.release()
