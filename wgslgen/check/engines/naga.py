"""naga as a subprocess: naga-cli when on PATH, else naga-wasm under Node via naga_cli.mjs.

NagaEngine finds, probes and validates with naga; naga_translate.py translates with it.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from wgslgen.check.engines import naga_wasm
from wgslgen.check.engines.base import (
    ShaderInput,
    Verdict,
    engine_failure,
    find_location,
)
from wgslgen.children import run_process

ADAPTER = Path(__file__).with_name("naga_cli.mjs")
INSTALL_HINT = (
    "install naga-cli (`cargo install naga-cli`), or Node.js with npm: wgslgen then installs "
    "the pinned naga-wasm into its user cache on first use (`npm ci` in a checkout)"
)
_SECTION = re.compile(r"^Error validating (.+):$", re.MULTILINE)
_SUMMARY = "Validation failed for the following inputs:"


class NagaEngine:
    """Validates with naga, many files per process (naga-cli's --bulk-validate)."""

    name = "naga"

    def __init__(
        self,
        command: Sequence[str] | None = None,
        *,
        timeout: float = 60.0,
        batch_size: int = 256,
        jobs: int | None = None,
    ) -> None:
        """``command`` overrides how naga is run (also env WGSLGEN_NAGA, a shell-quoted line).

        ``timeout``, ``batch_size`` and ``jobs`` also govern NagaTranslator's naga processes.
        """
        self._command = list(command) if command else None
        self.timeout = timeout
        self.batch_size = batch_size
        self.jobs = jobs or min(4, os.cpu_count() or 1)
        self._availability: tuple[str | None, str] | None = None

    def command(self) -> list[str] | None:
        """The argv prefix that runs naga, or None when there is none."""
        if self._command:
            return self._command
        if os.environ.get("WGSLGEN_NAGA"):
            return shlex.split(os.environ["WGSLGEN_NAGA"])
        if naga := shutil.which("naga"):
            return [naga]
        if node := shutil.which("node"):
            script, self._missing = naga_wasm.adapter_script()  # may install it, once
            return [node, str(script)] if script else None
        return None

    def _probe(self) -> tuple[str | None, str]:
        if self._availability is None:
            cmd = self.command()
            if cmd is None:
                why = getattr(self, "_missing", "") or "neither `naga` nor `node` is on PATH"
                why = f"naga not found: {why}; {INSTALL_HINT}"
                self._availability = (why, "")
            elif not shutil.which(cmd[0]):
                origin = "WGSLGEN_NAGA" if os.environ.get("WGSLGEN_NAGA") else "the naga command"
                self._availability = (f"{origin}: {cmd[0]!r} is not an executable file", "")
            else:
                done = run_process([*cmd, "--version"], timeout=min(self.timeout, 30.0))
                out = done.stdout.strip()
                if done.returncode == 0 and out:
                    self._availability = (None, out.splitlines()[0])
                else:
                    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
                    why = f"naga not usable (`{shlex.join([*cmd, '--version'])}`: {tail}); "
                    self._availability = (why + INSTALL_HINT, "")
        return self._availability

    def availability(self) -> str | None:
        """None when naga answers --version, else why not and how to install it."""
        return self._probe()[0]

    def version(self) -> str:
        """E.g. 'naga-wasm 30.1.0 (naga 30.0.1) via node v20.20.2' or 'naga-cli 26.0.0'."""
        why, version = self._probe()
        if why:
            return "unavailable"
        return f"naga-cli {version}" if version[:1].isdigit() else version

    def identity(self) -> str:
        """Which naga build answers, and how it is run (verdicts are remembered by it)."""
        return f"{self.version()} | {shlex.join(self.command() or [])}"

    def validate(self, shaders: list[ShaderInput]) -> list[Verdict]:
        """One verdict per shader; a crashed or hung batch fails all of its shaders."""
        if not shaders:
            return []
        cmd = self.command()
        if cmd is None:
            return engine_failure(self.name, shaders, self._probe()[0] or "naga not found")
        with tempfile.TemporaryDirectory(prefix="wgslgen-naga-") as tmp:
            paths = []
            for k, shader in enumerate(shaders):
                path = os.path.join(tmp, f"s{k}.wgsl")
                Path(path).write_text(shader.source, encoding="utf-8")
                paths.append(path)
            spans = batch_spans(len(shaders), self.batch_size, self.jobs)
            with ThreadPoolExecutor(max_workers=min(self.jobs, len(spans))) as pool:
                parts = pool.map(
                    lambda span: self._batch(
                        cmd, shaders[span[0] : span[1]], paths[span[0] : span[1]]
                    ),
                    spans,
                )
                return [v for part in parts for v in part]

    def _batch(
        self, cmd: list[str], shaders: Sequence[ShaderInput], paths: list[str]
    ) -> list[Verdict]:
        done = run_process([*cmd, "--bulk-validate", *paths], timeout=self.timeout)
        if done.timed_out:
            return engine_failure(
                self.name, shaders, f"timed out after {self.timeout:g} s", done.stderr
            )
        if done.returncode == 0:
            return [Verdict(s.id, self.name, True) for s in shaders]
        if done.returncode != 1 or _SUMMARY not in done.stderr:
            rc = done.returncode or 0
            why = f"killed by signal {-rc}" if rc < 0 else f"exit code {rc}"
            return engine_failure(self.name, shaders, why, done.stderr)
        sections = _sections(done.stderr)
        summary = done.stderr.split(_SUMMARY, 1)[1]
        invalid = {line.strip() for line in summary.splitlines() if line.strip()}
        out = []
        for shader, path in zip(shaders, paths, strict=True):
            if path not in invalid and path not in sections:
                out.append(Verdict(shader.id, self.name, True))
                continue
            raw = sections.get(path, "")
            line, column = find_location(raw)
            shown = shader.path or shader.id
            diagnostic = raw.replace(path, shown).replace(
                f"┌─ {os.path.basename(path)}:", f"┌─ {shown}:"
            )
            out.append(
                Verdict(shader.id, self.name, False, _first_error(raw), diagnostic, line, column)
            )
        return out


def _sections(stderr: str) -> dict[str, str]:
    """Per-file diagnostics of a --bulk-validate run, keyed by the path naga printed."""
    marks = list(_SECTION.finditer(stderr))
    out = {}
    for k, m in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(stderr)
        body = stderr[m.end() : end].split(_SUMMARY, 1)[0]
        out[m.group(1)] = body.strip("\n")
    return out


def _first_error(text: str) -> str:
    """The first 'error: ...' line without its prefix, else the first meaningful line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("error:"):
            return ln[len("error:") :].strip()
    rest = [ln for ln in lines if not ln.startswith("Could not parse")]
    return (rest or lines or ["naga reported no message"])[0]


def batch_spans(count: int, batch_size: int, jobs: int) -> list[tuple[int, int]]:
    """[start, end) spans of ``count`` items: few naga processes, but one per core.

    Each process pays naga's start-up (Node compiles naga's WebAssembly), so batches are as
    large as ``batch_size`` allows, yet at least ``jobs`` of them to use every core.
    """
    n_batches = max(math.ceil(count / batch_size), min(jobs, count))
    size = math.ceil(count / n_batches)
    return [(i, min(i + size, count)) for i in range(0, count, size)]
