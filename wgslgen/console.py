"""The ``wgslgen`` console script: Ctrl-C while Python is still importing ends quietly too."""

from __future__ import annotations

import sys


def main() -> int:
    """Import the CLI and run it; an interrupt during the import is exit 130, no traceback."""
    try:
        from wgslgen.cli import main as run
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return run()
