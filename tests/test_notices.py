"""Library code's notices go through the `wgslgen` logger (a program decides where they go);
the command line prints them on stderr as its own lines."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from wgslgen.notices import logger, show_on_stderr
from wgslgen.tune.db import ResultsDB


def test_a_wait_for_the_tuning_lock_is_a_warning_of_the_wgslgen_logger(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = (ResultsDB(tmp_path / "results.jsonl") for _ in range(2))
    first.begin_session()
    done = threading.Event()

    def other() -> None:
        second.begin_session()  # no on_wait: the library's default
        done.set()
        second.end_session()

    with caplog.at_level(logging.WARNING, logger="wgslgen"):
        t = threading.Thread(target=other)
        t.start()
        time.sleep(0.3)
        first.end_session()
        t.join(10)
    assert done.is_set()
    [record] = [r for r in caplog.records if r.name == "wgslgen"]
    assert record.levelno == logging.WARNING and "another wgslgen tune" in record.getMessage()


def test_the_command_line_prints_notices_as_its_own_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    show_on_stderr()
    show_on_stderr()  # once, however often the CLI starts in one process
    logger.info("installing something (once)")
    logger.warning("waiting for a lock")
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "wgslgen: installing something (once)",
        "warning: waiting for a lock",
    ]


def test_a_program_that_imports_wgslgen_gets_no_informational_lines() -> None:
    code = (
        "import wgslgen.notices as n, wgslgen.tune.db, wgslgen.check.engines.naga_wasm\n"
        "n.logger.info('installing naga-wasm (once)')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
