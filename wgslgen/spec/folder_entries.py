"""Entries of a templates folder that discover() passes over, told so that a shader skipped
in silence never looks like one that passed: *.wgsl entries that cannot be read, and (for
validate) shaders it does not judge by the folder layout's rules."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from wgslgen.spec.loader import DEFAULT_TEMPLATES


def _children(template_dirs: Sequence[Path | str] | None) -> Iterator[Path]:
    """The entries of each templates folder given (not of a kernel folder or a file)."""
    for path in (Path(d) for d in (template_dirs or [DEFAULT_TEMPLATES])):
        if path.is_dir() and not (path / "kernel.toml").is_file():
            yield from sorted(path.iterdir())


def unreadable_wgsl_entries(
    template_dirs: Sequence[Path | str] | None = None,
) -> list[tuple[Path, str]]:
    """The entries named *.wgsl in the given folders that discover() passes over because
    they are not files (a dangling symbolic link or a loop of them, a folder without a
    kernel.toml, a pipe), each with why: a shader that cannot be read is not one that passed."""
    out = []
    for child in _children(template_dirs):
        if child.name.startswith((".", "_")):
            continue
        try:
            (child / "kernel.toml").is_file()
        except OSError as e:  # a folder that cannot be searched: its shaders unjudged
            out.append((child, f"a folder: {e.strerror or e}"))
            continue
        wgsl = child.suffix == ".wgsl"
        if wgsl and not child.is_file() and not (child / "kernel.toml").is_file():
            out.append((child, _why_unreadable(child)))
    return out


def _why_unreadable(path: Path) -> str:
    """Why the .wgsl entry ``path``, which is not a file, cannot be read (told without
    opening it: opening a pipe would wait for a writer)."""
    try:
        mode = path.stat().st_mode
    except OSError as e:
        if path.is_symlink() and e.errno == errno.ENOENT:
            return f"a symbolic link to {os.readlink(path)}, which does not exist"
        if e.errno == errno.ELOOP:
            return "a loop of symbolic links"
        return e.strerror or str(e)
    if stat.S_ISDIR(mode):
        return "a folder, not a file (and no kernel.toml in it)"
    return "not a regular file"


def passed_over_entries(
    template_dirs: Sequence[Path | str] | None = None,
) -> list[tuple[Path, str]]:
    """Shaders in the folders that discover() does not take, each with why (each is judged
    when named as a templates entry of its own): *.wgsl in a subfolder that is no kernel
    folder, a name starting with `_` or `.` (the layout's mark of macro libraries and hidden
    files), a `.WGSL` of other case."""
    out = []
    for child in _children(template_dirs):
        try:
            if child.is_dir() and not (child / "kernel.toml").is_file():
                if child.name.startswith((".", "_")) or child.suffix == ".wgsl":
                    continue  # a library or hidden folder; a *.wgsl folder: unreadable
                found = sum(1 for _ in child.rglob("*.wgsl"))
                if found:
                    why = f"a folder of {found} .wgsl file(s), not a kernel folder"
                    out.append((child, why))
                continue
        except OSError:
            continue  # told by unreadable_wgsl_entries
        if child.suffix.lower() != ".wgsl":
            continue
        if child.name.startswith((".", "_")):
            out.append((child, "a name starting with `_` or `.` (a library, a hidden file)"))
        elif child.suffix != ".wgsl":
            out.append((child, "not named *.wgsl (lower case)"))
    return out
