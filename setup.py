"""Packages and their data files for setuptools (everything else is in pyproject.toml).

pyproject.toml cannot combine package discovery with extra mapped packages, so the wgslgen*
folders are found here and wgslgen._bundled and wgslgen._docs (the top-level templates/ and
docs/ folders, mapped in [tool.setuptools.package-dir]) are added to them. Every folder is a
package of its own, data-only ones included: setuptools warns about each importable folder
(any folder) that a distribution leaves out. The data files are listed here too, because
package-data given in pyproject.toml would replace, not extend, the lists made here.
"""

from setuptools import find_namespace_packages, setup

BUNDLED = "wgslgen._bundled"
DOCS = "wgslgen._docs"  # the top-level docs/ folder (`wgslgen docs`)
# What a kernel folder ships: its spec, templates, trusted reference code, WGSL and notes.
KERNEL_FILES = ["*.toml", "*.j2", "*.py", "*.wgsl", "*.md"]
WGSLGEN_FILES = {
    "wgslgen.check": ["*.schema.json"],
    "wgslgen.check.engines": ["*.mjs"],
    "wgslgen.render": ["*.schema.json"],
    "wgslgen.spec": ["*.schema.json"],
    "wgslgen.tune": ["*.schema.json"],
    "wgslgen.vendor": ["*.schema.json"],
    "wgslgen.vendor.runtime": ["*.rs"],
    "wgslgen.vendor.runtime.ts": ["runtime.ts", "runtime.js", "runtime.d.ts", "tsconfig.json"],
}

wgslgen_folders = find_namespace_packages(
    include=["wgslgen", "wgslgen.*"], exclude=["*__pycache__*", f"{BUNDLED}*"]
)
kernel_folders = [
    f"{BUNDLED}.{name}"
    for name in find_namespace_packages(where="templates", exclude=["*__pycache__*"])
]
setup(
    packages=[*wgslgen_folders, BUNDLED, *kernel_folders, DOCS],
    package_data=WGSLGEN_FILES
    | {package: KERNEL_FILES for package in [BUNDLED, *kernel_folders]}
    | {DOCS: ["*.md"]},
)
