"""`wgslgen init`: a starter project config and the example kernel kernels/rmsnorm/ (never
overwrites)."""

from __future__ import annotations

import argparse
from pathlib import Path

from wgslgen.atomic import atomic_write_text
from wgslgen.cli.output import console, warn
from wgslgen.config import find_config
from wgslgen.errors import WgslgenError
from wgslgen.spec.kernel import read_toml
from wgslgen.starter import CONFIG, KERNEL_TOML, REFERENCE, TEMPLATE


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``init`` command."""
    p = sub.add_parser(
        "init", help="write a starter project config and an example kernel, kernels/rmsnorm/"
    )
    p.add_argument(
        "folder", nargs="?", type=Path, default=Path("."), help="project folder (default: .)"
    )
    p.add_argument(
        "--pyproject",
        action="store_true",
        help="put the settings in pyproject.toml as [tool.wgslgen] (default: wgslgen.toml, "
        "or pyproject.toml when one exists)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Write the config and kernels/rmsnorm/; refuse to touch any file that exists."""
    root: Path = args.folder
    root.mkdir(parents=True, exist_ok=True)
    pyproject = root / "pyproject.toml"
    use_pyproject = args.pyproject or pyproject.is_file()
    example = root / "kernels" / "rmsnorm"
    files = {
        example / "kernel.toml": KERNEL_TOML,
        example / "rmsnorm.wgsl.j2": TEMPLATE,
        example / "reference.py": REFERENCE,
    }
    clash = [p for p in files if p.exists()]
    if (root / "wgslgen.toml").exists() or (use_pyproject and _has_table(pyproject)):
        clash.insert(0, root / "wgslgen.toml" if not use_pyproject else pyproject)
    if clash:
        raise WgslgenError(
            f"{clash[0]}: already exists; init overwrites nothing (it only adds "
            "[tool.wgslgen] to a pyproject.toml without one)"
        )
    if outer := find_config(root.resolve().parent):  # a monorepo may want it; say what it does
        warn(
            f"{root} is inside the project of {outer}: commands run at or below {root} will use "
            "the new project and no longer see that one's kernels (to add a kernel to it, make "
            "a folder beside its others instead)"
        )
    if example.exists() and not example.is_dir():
        raise WgslgenError(f"{example}: exists and is not a folder; nothing was written")
    example.mkdir(parents=True, exist_ok=True)  # first: an existing empty folder is fine
    if use_pyproject:
        old = pyproject.read_text(encoding="utf-8") if pyproject.is_file() else ""
        table = "[tool.wgslgen]\n" + CONFIG.split("\n", 1)[1]
        atomic_write_text(pyproject, old + ("\n" if old else "") + table)
        config = pyproject
    else:
        config = root / "wgslgen.toml"
        atomic_write_text(config, CONFIG)
    for path, text in files.items():
        atomic_write_text(path, text)
    console.print(
        f"wrote {config} and {example}/ (kernel.toml, rmsnorm.wgsl.j2, reference.py)",
        markup=False,
    )
    console.print("next: wgslgen list; wgslgen build; wgslgen test --adapter cpu", markup=False)
    return 0


def _has_table(pyproject: Path) -> bool:
    return pyproject.is_file() and "wgslgen" in read_toml(pyproject).get("tool", {})
