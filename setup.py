"""Package list for setuptools (everything else is in pyproject.toml).

pyproject.toml cannot combine package discovery with an extra mapped package, so the
wgslgen* folders are found here and wgslgen._bundled (the top-level templates/ folder,
mapped in [tool.setuptools.package-dir]) is added to them.
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["wgslgen", "wgslgen.*"]), "wgslgen._bundled"])
