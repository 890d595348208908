"""The output folder of a build: which folders may be written, and one build at a time.

A user's files are sacred: wgslgen writes only into a folder that is new, empty or holds a
wgslgen manifest, and removes only files that manifest lists (see build.write_tree).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from wgslgen import locks
from wgslgen.errors import WgslgenError
from wgslgen.render import manifest as mf


def refuse_unsafe(out: Path, action: str, subfolder: str) -> None:
    """Refuse, as ``out`` for ``action`` ("build", "transpile"), the current folder or one
    holding it, and a path that is not a folder."""
    resolved = out.resolve()
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        raise WgslgenError(
            f"{out}: refusing to {action} into the current folder or a folder that contains "
            f"it; choose a subfolder such as {subfolder}"
        )
    if out.exists() and not out.is_dir():
        raise WgslgenError(f"{out}: exists and is not a directory; nothing was written")


def check_out(out: Path) -> None:
    """Refuse an output folder that a build could damage: a file, the current folder or one
    holding it, or a non-empty folder that wgslgen did not write."""
    refuse_unsafe(out, "build", "generated (the build replaces the output folder)")
    if out.is_symlink() and not out.exists():
        raise WgslgenError(f"{out}: is a broken symbolic link; nothing was written")
    if not out.is_dir():
        return
    if not (out / mf.MANIFEST_NAME).is_file():
        if any(out.iterdir()):
            raise WgslgenError(
                f"{out}: folder exists, is not empty and holds no wgslgen {mf.MANIFEST_NAME}; "
                "refusing to write into it (its files were not written by wgslgen); "
                "choose a new or empty folder"
            )
        return
    manifest = mf.load(out / mf.MANIFEST_NAME)
    if not str(manifest.get("generator", "")).startswith("wgslgen"):
        raise WgslgenError(
            f"{out / mf.MANIFEST_NAME}: not written by wgslgen; refusing to write into {out}"
        )


@contextlib.contextmanager
def locked(out: Path, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the output folder's lock: a second build into it waits (saying so) until the
    first is done, so neither build's result vanishes."""
    why = f"another wgslgen build is writing {out}; waiting for it to finish"
    with locks.hold(out, "out", on_wait, why):
        yield


def folder_mode() -> int:
    """The mode a new folder gets under the current umask (mkdtemp would give 0700)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o777 & ~umask
