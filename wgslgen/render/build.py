"""`wgslgen build`: render every variant into a tree of files plus the manifest, atomically."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wgslgen.errors import WgslgenError
from wgslgen.render import manifest as mf
from wgslgen.render.renderer import RenderedVariant, render_families
from wgslgen.spec.kernel import KernelSpec, Variant


@dataclass
class BuildPlan:
    """The files and manifest a build would write, all rendered in memory first."""

    files: dict[str, bytes] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    rendered: list[RenderedVariant] = field(default_factory=list)


@dataclass(frozen=True)
class Difference:
    """One file that differs between a plan and what is on disk."""

    kind: str  # "differs", "missing" or "extra"
    path: str


def apply_overrides(spec: KernelSpec, overrides: Mapping[str, str]) -> list[Variant]:
    """The variants of ``spec`` whose axes match every ``--set axis=value`` (all when none)."""
    if not overrides:
        return list(spec.variants)
    wanted = {}
    for name, text in overrides.items():
        axis = spec.axis(name)
        matches = [v for v in axis.values if str(v) == text]
        if not matches:
            raise WgslgenError(
                f"kernel {spec.name}: axis {axis.name} has no value {text!r}; "
                f"values: {', '.join(map(str, axis.values))}"
            )
        wanted[axis.name] = matches[0]
    chosen = [v for v in spec.variants if all(v.params[k] == x for k, x in wanted.items())]
    if not chosen:
        raise WgslgenError(
            f"kernel {spec.name}: no variant satisfies the constraints with "
            + ", ".join(f"{k}={v}" for k, v in wanted.items())
        )
    return chosen


def parse_overrides(items: Sequence[str] | None) -> dict[str, str]:
    """``["axis=value", ...]`` → dict; a malformed item is named."""
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise WgslgenError(f"--set {item!r}: expected axis=value")
        out[name.strip()] = value.strip()
    return out


def plan(
    kernels: Sequence[KernelSpec],
    overrides: Mapping[str, str] | None = None,
    on_variant: Callable[[str], None] | None = None,
) -> BuildPlan:
    """Render the selected variants of ``kernels`` in memory, with their manifest entries."""
    from wgslgen.check.limits import BUILTIN_PROFILES, check_passes

    result = BuildPlan(manifest={"generator": mf.GENERATOR, "kernels": {}, "variants": []})
    for spec in kernels:
        variants = apply_overrides(spec, overrides)
        result.manifest["kernels"][spec.name] = mf.kernel_entry(spec)
        for variant in variants:
            for rendered in render_families(variant):
                facts = dict(rendered.facts)
                fits = {
                    name: check_passes(rendered.facts, profile, rendered.features)
                    for name, profile in BUILTIN_PROFILES.items()
                }
                result.files[rendered.relpath] = rendered.source.encode("utf-8")
                result.manifest["variants"].append(mf.variant_entry(rendered, facts, fits))
                result.rendered.append(rendered)
            if on_variant:
                on_variant(variant.name)
    return result


def _read_tree(out: Path) -> dict[str, bytes]:
    if not out.is_dir():
        return {}
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != mf.MANIFEST_NAME and not p.name.startswith(".")
    }


def merged_tree(
    new: BuildPlan, out: Path, kernels: Sequence[str], partial: bool
) -> dict[str, bytes]:
    """The complete tree after this build: files it owns replaced, every other file kept.

    A full build owns everything; ``--kernel`` owns those kernels' folders; ``--set`` owns
    only the files it renders (nothing is removed).
    """
    existing = _read_tree(out)
    old_manifest: dict[str, Any] = {"kernels": {}, "variants": []}
    if (out / mf.MANIFEST_NAME).is_file() and (kernels or partial):
        old_manifest = mf.load(out / mf.MANIFEST_NAME)

    def owned(path: str) -> bool:
        if partial:
            return path in new.files
        return not kernels or path.split("/", 1)[0] in kernels

    files = {p: b for p, b in existing.items() if not owned(p)} if (kernels or partial) else {}
    files.update(new.files)
    new_files = set(new.files)

    def kept(entry: dict[str, Any]) -> bool:
        return entry["file"] not in new_files if partial else entry["kernel"] not in kernels

    entries = [e for e in old_manifest["variants"] if kept(e)]
    entries += new.manifest["variants"]
    entries.sort(key=lambda e: (e["kernel"], e["name"], e["family"]))
    manifest = {
        "generator": mf.GENERATOR,
        "kernels": {**old_manifest["kernels"], **new.manifest["kernels"]},
        "variants": entries,
    }
    files[mf.MANIFEST_NAME] = mf.dumps(manifest).encode("utf-8")
    return files


def compare(tree: Mapping[str, bytes], out: Path) -> list[Difference]:
    """Every file that differs from, is missing from or is extra in ``out``."""
    on_disk = _read_tree(out)
    manifest_path = out / mf.MANIFEST_NAME
    if manifest_path.is_file():
        on_disk[mf.MANIFEST_NAME] = manifest_path.read_bytes()
    diffs = [
        Difference("missing" if p not in on_disk else "differs", p)
        for p in sorted(tree)
        if on_disk.get(p) != tree[p]
    ]
    diffs += [Difference("extra", p) for p in sorted(set(on_disk) - set(tree))]
    return diffs


def write_tree(tree: Mapping[str, bytes], out: Path) -> None:
    """Replace ``out`` with ``tree`` in one swap: a crash leaves the old tree or the new one."""
    out = out.resolve()
    _recover(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    try:
        for rel, data in tree.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        _fsync_tree(staging)
        if out.exists():
            old = out.parent / f".{out.name}.old"
            shutil.rmtree(old, ignore_errors=True)
            os.rename(out, old)
            os.rename(staging, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _recover(out: Path) -> None:
    """Finish a swap a crash interrupted: the previous tree comes back into place."""
    old = out.parent / f".{out.name}.old"
    if old.is_dir() and not out.exists():
        os.rename(old, out)
    for stale in out.parent.glob(f".{out.name}.new-*"):
        shutil.rmtree(stale, ignore_errors=True)


def _fsync_tree(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            with open(path, "rb") as f:
                os.fsync(f.fileno())
