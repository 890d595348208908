"""The ``wgslgen`` console script: Ctrl-C while Python is still importing ends quietly too,
and a crash of native code in this process (a reference.py's extension, ctypes) names the
Python line it happened under instead of ending without a word."""

from __future__ import annotations

import faulthandler
import sys


def main() -> int:
    """Import the CLI and run it; an interrupt during the import is exit 130, no traceback."""
    faulthandler.enable()  # on SIGSEGV and the like: the Python stack, on stderr
    try:
        from wgslgen.cli import main as run
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return run()
