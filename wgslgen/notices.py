"""What library code says that is not an error (a one-time install, a wait for a lock): through
the ``wgslgen`` logger, so that a program using wgslgen decides where it goes; the command line
shows it on stderr."""

from __future__ import annotations

import logging
import sys

logger = logging.getLogger("wgslgen")


class _CommandLineLines(logging.Handler):
    """A notice as the command line's own line: ``wgslgen: …``, or ``warning: …``."""

    def emit(self, record: logging.LogRecord) -> None:
        prefix = "warning" if record.levelno >= logging.WARNING else "wgslgen"
        # sys.stderr looked up per line: it may have been replaced since (tests, redirection)
        print(f"{prefix}: {record.getMessage()}", file=sys.stderr)


def show_on_stderr() -> None:
    """Let the command line print the logger's notices (informational ones too), once."""
    if not any(isinstance(h, _CommandLineLines) for h in logger.handlers):
        logger.addHandler(_CommandLineLines())
    logger.setLevel(logging.INFO)
