"""Where naga-wasm comes from: the checkout's node_modules, or a pinned copy that an installed
wgslgen puts into the user cache on first use (``npm ci`` against a lock file that carries the
package's sha512, so npm refuses a tampered download).

naga_cli.mjs finds naga-wasm through its own node_modules chain, so the script that runs is
the shipped one in a checkout and a copy next to the cached node_modules otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from wgslgen.atomic import atomic_write_text
from wgslgen.notices import logger

VERSION = "30.1.0"
# The same pin as the checkout's package-lock.json (a test compares them).
INTEGRITY = "sha512-" + (
    "uROKRlHP61ZIBab0ztBIFN8dWloDm+fdgO+cg5A7m7KK50HeHECiV0C2HvV1a+XNYiHVQZ6VV7EYGWbW7LS3Ug=="
)
ADAPTER = Path(__file__).with_name("naga_cli.mjs")
INSTALL_TIMEOUT_S = 300.0


def cache_root() -> Path:
    """WGSLGEN_CACHE_DIR, else $XDG_CACHE_HOME/wgslgen, else ~/.cache/wgslgen."""
    if explicit := os.environ.get("WGSLGEN_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "wgslgen"


def install_dir() -> Path:
    """The folder that holds the pinned naga-wasm (node_modules/) and the adapter copy."""
    return cache_root() / f"naga-wasm-{VERSION}"


def checkout_modules() -> Path | None:
    """node_modules of the wgslgen checkout this module runs from, when it has naga-wasm."""
    modules = ADAPTER.resolve().parents[3] / "node_modules"
    return modules if (modules / "naga-wasm" / "package.json").is_file() else None


def adapter_script(install: bool = True) -> tuple[Path | None, str]:
    """(naga_cli.mjs to run with node, "") or (None, why naga-wasm cannot be had)."""
    if checkout_modules() is not None:
        return ADAPTER, ""
    folder = install_dir()
    if not _installed(folder):
        if not install or os.environ.get("WGSLGEN_NO_INSTALL"):
            return None, f"naga-wasm {VERSION} is not installed in {folder}"
        why = _install(folder)
        if why:
            return None, why
    script = folder / ADAPTER.name
    text = ADAPTER.read_text(encoding="utf-8")
    if not script.is_file() or script.read_text(encoding="utf-8") != text:
        atomic_write_text(script, text)  # follows the installed wgslgen's adapter
    return script, ""


def _installed(folder: Path) -> bool:
    manifest = folder / "node_modules" / "naga-wasm" / "package.json"
    try:
        return json.loads(manifest.read_text(encoding="utf-8")).get("version") == VERSION
    except (OSError, ValueError):
        return False


def lock_files() -> dict[str, str]:
    """package.json and package-lock.json that pin naga-wasm with its integrity hash."""
    name = "wgslgen-naga-wasm"
    package = {"name": name, "private": True, "dependencies": {"naga-wasm": VERSION}}
    lock = {
        "name": name,
        "lockfileVersion": 3,
        "requires": True,
        "packages": {
            "": {"name": name, "dependencies": {"naga-wasm": VERSION}},
            "node_modules/naga-wasm": {
                "version": VERSION,
                "resolved": f"https://registry.npmjs.org/naga-wasm/-/naga-wasm-{VERSION}.tgz",
                "integrity": INTEGRITY,
                "license": "MIT OR Apache-2.0",
            },
        },
    }
    return {
        "package.json": json.dumps(package, indent=2) + "\n",
        "package-lock.json": json.dumps(lock, indent=2) + "\n",
    }


def _install(folder: Path) -> str:
    """Install into ``folder`` (once, under a file lock); "" on success, else why not."""
    from filelock import FileLock

    npm = shutil.which("npm")
    if npm is None:
        return "npm is not on PATH (needed once, to install naga-wasm)"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if _installed(folder):  # another process finished it while we waited
            return ""
        staging = folder.parent / f".{folder.name}.{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        for name, text in lock_files().items():
            (staging / name).write_text(text, encoding="utf-8")
        logger.info("installing naga-wasm %s into %s (once)", VERSION, folder)
        cmd = [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline"]
        try:
            done = subprocess.run(
                cmd, cwd=staging, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            shutil.rmtree(staging, ignore_errors=True)
            return f"`npm ci` of naga-wasm {VERSION} took over {INSTALL_TIMEOUT_S:g} s"
        if done.returncode != 0 or not _installed(staging):
            shutil.rmtree(staging, ignore_errors=True)
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return f"`npm ci` of naga-wasm {VERSION} failed: {tail}"
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)  # whole or not at all: a half install is never seen
    return ""
