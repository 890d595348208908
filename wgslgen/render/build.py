"""`wgslgen build`: render every variant into a tree of files plus the manifest, atomically."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wgslgen.errors import WgslgenError
from wgslgen.render import manifest as mf
from wgslgen.render import outdir
from wgslgen.render.parallel import render_outcomes
from wgslgen.render.renderer import RenderedVariant
from wgslgen.spec.kernel import KernelSpec, Variant


@dataclass
class BuildPlan:
    """The files and manifest a build would write, all rendered in memory first."""

    files: dict[str, bytes] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    rendered: list[RenderedVariant] = field(default_factory=list)
    specs: list[KernelSpec] = field(default_factory=list)


@dataclass(frozen=True)
class Difference:
    """One file that differs between a plan and what is on disk."""

    kind: str  # "differs", "missing" or "extra"
    path: str


def apply_overrides(
    spec: KernelSpec, overrides: Mapping[str, str | Sequence[str]]
) -> list[Variant]:
    """The variants whose axes take one of the ``--set axis=value`` values of every axis named
    (several values of one axis select each of them); all variants when none."""
    if not overrides:
        return list(spec.variants)
    from wgslgen.spec.space import overridden  # its values, unknown ones named

    space = overridden(spec, overrides)
    chosen = list(space)
    if not chosen:
        raise WgslgenError(
            f"kernel {spec.name}: no variant satisfies the constraints with "
            + ", ".join(
                f"{name}={'|'.join(map(str, vals))}"
                for name, vals, full in zip(space.names, space.values, spec.axes, strict=True)
                if len(vals) < len(full.values)
            )
        )
    return chosen


def parse_overrides(items: Sequence[str] | None) -> dict[str, list[str]]:
    """``["axis=value", ...]`` → values by axis, repeats kept; a malformed item is named."""
    out: dict[str, list[str]] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise WgslgenError(f"{item!r}: expected axis=value", option="set")
        out.setdefault(name.strip(), []).append(value.strip())
    return out


def plan(
    kernels: Sequence[KernelSpec],
    overrides: Mapping[str, str] | None = None,
    on_variant: Callable[[str], None] | None = None,
) -> BuildPlan:
    """Render the selected variants of ``kernels`` in memory, with their manifest entries."""
    from wgslgen.check.limits import BUILTIN_PROFILES, check_passes

    result = BuildPlan(manifest={"generator": mf.GENERATOR, "kernels": {}, "variants": []})
    chosen = [(spec, list(apply_overrides(spec, overrides))) for spec in kernels]
    # Closed here, not by the garbage collector: a build that stops at a failing variant
    # stops the render processes in this thread (the collector may run in another).
    with closing(render_outcomes([v for _, variants in chosen for v in variants])) as outcomes:
        for spec, variants in chosen:
            result.manifest["kernels"][spec.name] = mf.kernel_entry(spec)
            result.specs.append(spec)
            for variant in variants:
                renderings = next(outcomes)
                if isinstance(renderings, Exception):
                    raise renderings
                for rendered in renderings:
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


def _safe_rel(path: object) -> bool:
    """Whether a manifest's file entry is a plain path inside the output folder."""
    if not isinstance(path, str) or not path or path.startswith("/") or "\\" in path:
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))


def _old_manifest(out: Path) -> dict[str, Any]:
    if (out / mf.MANIFEST_NAME).is_file():
        old = mf.load(out / mf.MANIFEST_NAME)
        old.setdefault("kernels", {})
        old["variants"] = [e for e in old["variants"] if _safe_rel(e.get("file"))]
        return old
    return {"kernels": {}, "variants": []}


def listed_files(out: Path) -> set[str]:
    """What wgslgen may replace or remove in ``out``: the files its manifest lists, and the
    manifest itself. Nothing else in the folder is ever touched."""
    if not (out / mf.MANIFEST_NAME).is_file():
        return set()
    return {e["file"] for e in _old_manifest(out)["variants"]} | {mf.MANIFEST_NAME}


def _source_file(spec: KernelSpec) -> Path:
    return (spec.spec_path or spec.template_path).resolve()


def _source_root(source_file: Path) -> Path:
    """The template set a kernel comes from: the folder holding its kernel folder (or its
    plain .wgsl file)."""
    return source_file.parent.parent if source_file.name == "kernel.toml" else source_file.parent


def _owner(new: BuildPlan, out: Path, kernels: Sequence[str], partial: bool):
    """Which old manifest entries this build replaces or removes.

    ``--set`` owns the files it renders and those of variants its kernels no longer have;
    ``--kernel`` those kernels; a full build the
    kernels it renders and the kernels of its own template sets whose spec is gone or now
    defines another kernel (renamed). Kernels from other template sets are never removed.
    """
    built = set(new.manifest["kernels"])
    roots = {_source_root(_source_file(s)) for s in new.specs}
    out_r = out.resolve()
    now_defines = {_source_file(s).resolve() for s in new.specs}

    def kernel_owned(name: str, old_kernel: Mapping[str, Any]) -> bool:
        if name in built:
            return True
        source = old_kernel.get("source")
        if kernels or not isinstance(source, str):
            return False
        path = (out_r / source).resolve()
        # Gone, or its kernel.toml now names another kernel (a renamed kernel).
        return _source_root(path) in roots and (not path.exists() or path in now_defines)

    specs = {s.name: s for s in new.specs}

    def gone(entry: Mapping[str, Any]) -> bool:
        """A rendered kernel's entry whose variant its space no longer holds (an axis value
        or a constraint changed): stale whichever --set rendered this time."""
        spec, params = specs.get(entry.get("kernel", "")), entry.get("params")
        if spec is None or not isinstance(params, dict):
            return False
        if set(params) != set(spec.axis_names) or spec.space.index_of(params) is None:
            return True
        return not all(c(params) for c in spec.constraints)

    def entry_owned(entry: Mapping[str, Any], old_kernel: Mapping[str, Any]) -> bool:
        if partial:
            return entry["file"] in new.files or gone(entry)
        return kernel_owned(entry.get("kernel", ""), old_kernel)

    return kernel_owned, entry_owned


def merged_tree(
    new: BuildPlan, out: Path, kernels: Sequence[str], partial: bool
) -> dict[str, bytes]:
    """Every file wgslgen keeps in ``out`` after this build: the new renderings, the manifest,
    and the files of other kernels (other template sets, other ``--kernel``/``--set``)."""
    old = _old_manifest(out)
    kernel_owned, entry_owned = _owner(new, out, kernels, partial)
    old_kernels = old["kernels"]
    kept = [e for e in old["variants"] if not entry_owned(e, old_kernels.get(e.get("kernel"), {}))]
    files: dict[str, bytes] = {}
    for e in kept:
        path = out / e["file"]
        if path.is_file() and not path.is_symlink():
            files[e["file"]] = path.read_bytes()
    files.update(new.files)
    out_r = out.resolve()
    new_kernels = {
        spec.name: {
            **new.manifest["kernels"][spec.name],
            "source": os.path.relpath(_source_file(spec), out_r).replace(os.sep, "/"),
        }
        for spec in new.specs
    }
    kept_kernels = {n: k for n, k in old_kernels.items() if partial or not kernel_owned(n, k)}
    entries = kept + new.manifest["variants"]
    entries.sort(key=lambda e: (e["kernel"], e["name"], e["family"]))
    manifest = {
        "generator": mf.GENERATOR,
        "kernels": dict(sorted({**kept_kernels, **new_kernels}.items())),
        "variants": entries,
    }
    files[mf.MANIFEST_NAME] = mf.dumps(manifest).encode("utf-8")
    return files


def compare(tree: Mapping[str, bytes], out: Path) -> list[Difference]:
    """Every file that differs from, is missing from or is extra in ``out`` (extra: listed
    by the manifest on disk but no longer built; files wgslgen did not write never count)."""
    listed = listed_files(out)
    on_disk = {p: (out / p).read_bytes() for p in set(tree) | listed if (out / p).is_file()}
    diffs = [
        Difference("missing" if p not in on_disk else "differs", p)
        for p in sorted(tree)
        if on_disk.get(p) != tree[p]
    ]
    diffs += [Difference("extra", p) for p in sorted(set(on_disk) - set(tree))]
    return diffs


def write_tree(tree: Mapping[str, bytes], out: Path) -> None:
    """Replace ``out`` with ``tree`` in one swap: a crash leaves the old tree or the new one.

    Files in ``out`` that its manifest does not list (a user's notes, dotfiles) are carried
    into the new tree untouched; only listed files that ``tree`` lacks are removed.
    """
    out = out.resolve()
    _recover(out)
    removable = listed_files(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    try:
        mode = stat.S_IMODE(out.stat().st_mode) if out.is_dir() else outdir.folder_mode()
        os.chmod(staging, mode)
        for rel, data in tree.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        if out.is_dir():
            _carry_over(out, staging, set(tree) | removable)
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


def _carry_over(out: Path, staging: Path, owned: set[str]) -> None:
    """Hard-link (or copy) every entry of ``out`` that wgslgen does not own into ``staging``."""
    for folder, dirs, names in os.walk(out):
        here = Path(folder)
        rel_dir = here.relative_to(out)
        if not dirs and not names and here != out:  # a user's empty folder
            _mkdir_like(here, staging / rel_dir)
        for name in [d for d in dirs if (here / d).is_symlink()] + names:
            rel = (rel_dir / name).as_posix()
            if rel in owned:
                continue
            src, dst = here / name, staging / rel_dir / name
            if os.path.lexists(dst):
                raise WgslgenError(
                    f"{src}: not written by wgslgen, but this build needs that path for its own "
                    f"{'folder' if dst.is_dir() else 'file'}; move it away; {out} is unchanged"
                )
            _mkdir_like(here, dst.parent)
            if src.is_symlink():
                os.symlink(os.readlink(src), dst)
                continue
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
        dirs[:] = [d for d in dirs if not (here / d).is_symlink()]


def _mkdir_like(src: Path, dst: Path) -> None:
    if not dst.is_dir():
        dst.mkdir(parents=True)
        shutil.copymode(src, dst)


def _recover(out: Path) -> None:
    """Finish a swap a crash interrupted: the previous tree comes back into place."""
    old = out.parent / f".{out.name}.old"
    if old.is_dir() and not out.exists():
        os.rename(old, out)
    for stale in out.parent.glob(f".{out.name}.new-*"):
        shutil.rmtree(stale, ignore_errors=True)


def _fsync_tree(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            with open(path, "rb") as f:
                os.fsync(f.fileno())
