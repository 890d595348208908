"""Every name a stage package exports lazily is, imported from the package, the object its
module defines, in a fresh interpreter and in either order of import: `from wgslgen.check
import validate` gave the submodule `wgslgen.check.validate`, not the function."""

from __future__ import annotations

import subprocess
import sys

PACKAGES = ["wgslgen.check", "wgslgen.render", "wgslgen.run", "wgslgen.spec", "wgslgen.tune"]

PROBE = """
import importlib, sys
package = importlib.import_module(sys.argv[1])
bad = []
for name in package.__all__:
    exec(f"from {sys.argv[1]} import {name} as got")
    home = importlib.import_module(package.__getattr__.exports[name])
    if got is not getattr(home, name) or getattr(package, name) is not got:
        bad.append(f"{name}: {type(got).__name__}")
print(";".join(bad))
"""


def test_every_lazy_export_is_the_object_its_module_defines() -> None:
    for package in PACKAGES:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, package], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == "", f"{package}: {done.stdout.strip()}"
