"""Which files in a transpile output folder wgslgen wrote: the only ones it replaces or removes.

A user's files are sacred. `wgslgen transpile --out DIR` writes only into a folder that is new,
empty or holds this ledger (``wgslgen-transpiled.json``, the relative paths it wrote), never
into the current folder or one holding it, and overwrites or removes only files the ledger
lists. The ledger is written before the files (listing what is about to be written), then
again after (less what was removed), so an interrupted run never leaves a file of ours that
the next run would take for the user's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from wgslgen.atomic import atomic_write_text
from wgslgen.errors import WgslgenError
from wgslgen.render.outdir import refuse_unsafe

LEDGER_NAME = "wgslgen-transpiled.json"
GENERATOR = "wgslgen transpile"


def check_folder(out: Path) -> None:
    """Refuse an output folder transpiling could damage; say why, before any work is done."""
    refuse_unsafe(out, "transpile", "build/transpiled")
    if out.is_dir() and not (out / LEDGER_NAME).is_file() and any(out.iterdir()):
        raise WgslgenError(
            f"{out}: folder is not empty and holds no {LEDGER_NAME} (its files were not "
            "written by wgslgen transpile); refusing to write into it: choose a new or empty "
            "folder"
        )
    listed(out)  # a damaged ledger is named now, not after the translations


def listed(out: Path) -> set[str]:
    """The relative paths the folder's ledger says wgslgen transpile wrote (none: empty)."""
    path = out / LEDGER_NAME
    if not path.is_file():
        return set()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise WgslgenError(f"{path}: not readable ({exc}); nothing was written") from None
    if not isinstance(data, dict) or data.get("generator") != GENERATOR:
        raise WgslgenError(f"{path}: not a wgslgen transpile ledger; nothing was written")
    files = data.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise WgslgenError(f"{path}: 'files' is not a list of paths; nothing was written")
    return set(files)


def claim(out: Path, written: Iterable[Path]) -> set[str]:
    """Record that ``written`` (paths under ``out``) are about to be written; the ledger's set.

    A path that exists but the ledger does not list is the user's: refused, nothing written.
    """
    owned = listed(out)
    new = {p.relative_to(out).as_posix() for p in written}
    theirs = sorted(rel for rel in new - owned if (out / rel).exists())
    if theirs:
        raise WgslgenError(
            f"{out / theirs[0]}: exists and was not written by wgslgen transpile "
            f"({len(theirs)} such file(s)); nothing was written"
        )
    _write(out, owned | new)
    return owned | new


def release(out: Path, owned: set[str], stale: Iterable[Path]) -> None:
    """Remove the ``stale`` paths the ledger lists (never another file); record what is left."""
    for path in stale:
        rel = path.relative_to(out).as_posix()
        if rel in owned:
            path.unlink(missing_ok=True)
            owned.discard(rel)
    _write(out, owned)


def _write(out: Path, files: set[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"generator": GENERATOR, "files": sorted(files)}, indent=1) + "\n"
    atomic_write_text(out / LEDGER_NAME, text)
