"""Writing a vendored folder safely, and `--check`: hand-edited or stale, file by file."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wgslgen.atomic import atomic_write_bytes
from wgslgen.errors import WgslgenError
from wgslgen.vendor.plan import MANIFEST, VendorPlan


@dataclass(frozen=True)
class Finding:
    """One file of a vendored folder that is not what `wgslgen vendor` would write now."""

    path: str
    kind: str  # "hand-edited", "stale", "missing" or "removed"
    detail: str


def refuse_inside(out: Path, forbidden: list[Path]) -> None:
    """Refuse an output folder inside the templates or generated/ (wgslgen's own trees)."""
    target = out.resolve()
    for root in forbidden:
        root = root.resolve()
        if target == root or root in target.parents:
            raise WgslgenError(
                f"{out}: inside {root}, which wgslgen owns; vendor into your project",
                option="out",
            )


# A broken manifest cannot be vendored over: it alone says which files are wgslgen's.
_LOST = (
    "without it wgslgen cannot tell its files from yours, so it changes nothing: restore it "
    "(e.g. from version control), or vendor into a new folder and move your own files there"
)


def read_manifest(out: Path) -> dict[str, Any]:
    """The manifest of a folder `wgslgen vendor` wrote; a clear error for any other folder."""
    path = out / MANIFEST
    if not path.is_file():
        raise WgslgenError(f"{out}: not a vendored folder (no {MANIFEST}); vendor into it first")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise WgslgenError(f"{path}: not valid JSON ({exc}); {_LOST}") from None
    if not isinstance(data, dict) or "schema_version" not in data or "files" not in data:
        raise WgslgenError(f"{path}: not a manifest written by `wgslgen vendor`")
    files = data["files"]
    if not isinstance(files, dict):
        raise WgslgenError(f"{path}: 'files' is not a table of paths; {_LOST}")
    for rel in files:
        if not _inside(out, rel):
            raise WgslgenError(
                f"{path}: lists {rel!r}, which is not a file inside {out}; nothing was changed "
                "(a vendored manifest only lists its own files: vendor into a new folder)"
            )
    return data


def _inside(out: Path, rel: object) -> bool:
    """Whether ``rel`` names a path strictly inside ``out`` (no absolute path, no ``..``)."""
    if not isinstance(rel, str) or not rel or "\x00" in rel:
        return False
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts:
        return False
    root = out.resolve()
    return root in (out / rel).resolve().parents


def write(plan: VendorPlan, out: Path) -> list[str]:
    """Write the plan's files (each atomically; manifest last); remove only files the old
    manifest listed that the new one does not. Returns the paths that changed."""
    old: dict[str, str] = {}
    if (out / MANIFEST).is_file():
        old = read_manifest(out)["files"]
    elif out.is_dir() and any(out.iterdir()):
        raise WgslgenError(
            f"{out}: the folder has files and no {MANIFEST}; refusing to mix "
            "vendored files with yours (choose an empty or new folder)",
            option="out",
        )
    theirs = [
        rel
        for rel in sorted(plan.files)
        if rel != MANIFEST and rel not in old and (out / rel).is_file()
        and (out / rel).read_bytes() != plan.files[rel]
    ]  # fmt: skip
    if theirs and old:
        raise WgslgenError(
            f"{out}: {', '.join(theirs)} not written by wgslgen (the manifest does not list "
            "it), and this vendor would replace it: move it elsewhere first",
            option="out",
        )
    changed = []
    for rel in sorted(plan.files, key=lambda p: p == MANIFEST):
        path = out / rel
        data = plan.files[rel]
        if not path.is_file() or path.read_bytes() != data:
            atomic_write_bytes(path, data)
            changed.append(rel)
    for rel in sorted(set(old) - set(plan.files)):
        path = out / rel
        if path.is_file():
            path.unlink()
            changed.append(rel)
        _remove_emptied(path.parent, out)
    return changed


def _remove_emptied(folder: Path, out: Path) -> None:
    """Remove ``folder`` and its parents up to ``out`` (exclusive) while they are empty: the
    folders that removing the old manifest's files emptied (one holding anything else stays)."""
    root = out.resolve()
    folder = folder.resolve()
    while folder != root and root in folder.parents and folder.is_dir():
        if any(folder.iterdir()):
            return
        folder.rmdir()
        folder = folder.parent


def check(plan: VendorPlan, out: Path, old: dict[str, Any]) -> list[Finding]:
    """Every file that differs from ``plan``, saying whether it was edited by hand or is stale."""
    recorded: dict[str, str] = old.get("files", {})
    findings = []
    for rel, data in sorted(plan.files.items()):
        path = out / rel
        if not path.is_file():
            findings.append(Finding(rel, "missing", "not on disk"))
            continue
        have = path.read_bytes()
        if have == data:
            continue
        sha = hashlib.sha256(have).hexdigest()
        if rel != MANIFEST and rel in recorded and sha != recorded[rel]:
            findings.append(Finding(rel, "hand-edited", "its sha256 differs from the manifest's"))
        else:
            why = "the templates, selection or generator changed since it was vendored"
            if rel == MANIFEST:
                why = f"{_what_changed(have, data)}: {why}"
            findings.append(Finding(rel, "stale", why))
    for rel in sorted(set(recorded) - set(plan.files)):
        findings.append(Finding(rel, "removed", "vendored before, no longer generated"))
    return findings


def _what_changed(have: bytes, want: bytes) -> str:
    """The manifest's entries that differ (the kernels and variants one by one)."""
    try:
        old, new = json.loads(have), json.loads(want)
    except ValueError:
        return "not a manifest this vendor writes"
    if not isinstance(old, dict):
        return "not a manifest this vendor writes"
    parts = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if key in ("kernels", "variants") and isinstance(a, dict) and isinstance(b, dict):
            parts += [f"{key}.{n}" for n in sorted(set(a) | set(b)) if a.get(n) != b.get(n)]
        else:
            parts.append(key)
    shown = ", ".join(parts[:6]) + (f" and {len(parts) - 6} more" if len(parts) > 6 else "")
    return f"differs in {shown}"


BUNDLED = "@bundled"  # the recorded name of wgslgen's own library (wherever it is installed)


def recorded_path(path: Path, out: Path) -> str:
    """``path`` as a manifest records it: relative to the vendored folder ``out``."""
    from wgslgen.spec.loader import DEFAULT_TEMPLATES

    if path.resolve() == DEFAULT_TEMPLATES.resolve():
        return BUNDLED
    return Path(os.path.relpath(path.resolve(), out.resolve())).as_posix()


def _resolved(recorded: str, out: Path) -> Path:
    """A recorded path, found from the vendored folder ``out`` (absolute ones, as older
    manifests recorded them, stay as they are)."""
    from wgslgen.spec.loader import DEFAULT_TEMPLATES

    if recorded == BUNDLED:
        return DEFAULT_TEMPLATES
    # lexically: ``out`` may not exist yet (a first vendor), and relpath was taken of resolved paths
    return Path(os.path.normpath(out.resolve() / recorded))


def regenerate(inputs: dict[str, Any], out: Path, engines: list[str] | None = None) -> VendorPlan:
    """The plan `wgslgen vendor` makes from the inputs a manifest of ``out`` recorded."""
    from wgslgen.spec.loader import discover, select
    from wgslgen.vendor.plan import plan_vendor

    templates = [_resolved(t, out) for t in inputs.get("templates") or []]
    for folder in templates:
        if not folder.exists():
            raise WgslgenError(
                f"{folder}: not found: the templates that {out} was vendored from (its "
                "manifest records them relative to the folder)"
            )
    every = discover(templates or None)
    kernels = select(every, inputs.get("kernels") or [])
    kernels = [k for k in kernels if not k.plain and k.problem is not None]
    sel = _resolved(inputs["selection"], out) if inputs.get("selection") else None
    if sel is not None and not sel.is_file():
        raise WgslgenError(
            f"{sel}: no such file (the selection {out} was vendored with, recorded relative to it)",
            option="selection",
        )
    db = _resolved(inputs["db"], out) if inputs.get("db") else None
    if db is not None and not db.is_file():
        raise WgslgenError(
            f"{db}: no such file (the results database {out} was vendored with, recorded "
            "relative to it)",
            option="db",
        )
    strict = bool(inputs.get("strict"))
    langs = inputs.get("langs") or []
    known = [k.name for k in every]
    return plan_vendor(
        kernels, sel, langs, engines, inputs=inputs, strict=strict, known=known, db=db
    )


def check_folder(out: Path, engines: list[str] | None = None) -> list[Finding]:
    """`wgslgen vendor --check DIR`: every file that is hand-edited, stale, missing or removed."""
    old = read_manifest(out)
    return check(regenerate(old.get("inputs", {}), out, engines), out, old)
