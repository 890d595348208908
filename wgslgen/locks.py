"""Inter-process locks on a user's files (filelock), kept out of the user's folders."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import filelock


def lock_path(path: Path | str, purpose: str) -> Path:
    """The lock file guarding ``path`` for ``purpose``: in the temporary folder, so nothing
    litters the user's project, keyed by the resolved path so every spelling shares it."""
    digest = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:24]
    folder = Path(tempfile.gettempdir()) / f"wgslgen-locks-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder / f"{purpose}-{digest}.lock"


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
    try:
        yield
    finally:
        lock.release()
