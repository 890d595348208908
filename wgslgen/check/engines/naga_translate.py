"""naga's translations of WGSL to SPIR-V, MSL, HLSL, GLSL and WGSL, one source or many.

naga itself is found and probed by NagaEngine (naga.py); NagaTranslator runs it to translate.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from wgslgen.check.engines.naga import INSTALL_HINT, NagaEngine, _first_error, batch_spans
from wgslgen.children import Child, kill_group, run_process
from wgslgen.errors import WgslgenError

# Output file extensions naga-cli chooses its writer by.
_EXTENSIONS = {"spv": ".spv", "msl": ".metal", "hlsl": ".hlsl", "glsl": ".comp", "wgsl": ".wgsl"}
# translate_many's output names: naga-cli picks the writer by extension (GLSL: stage.glsl).
_TRANSLATE_EXTENSIONS = {**_EXTENSIONS, "glsl": ".comp.glsl"}

# translate_many's input: (id, WGSL source, entry point); its output per id and target.
TranslateSource = tuple[str, str, str]
Translation = bytes | str


class TranslationError(Exception):
    """Why naga wrote no ``target`` for one source; a value in translate_many's result.

    ``kind``: "parse" or "validation" (naga rejects the WGSL itself), "write" (naga's writer
    for this target refused the module, e.g. GLSL has no f16), or "engine" (naga crashed,
    hung or could not be run).
    """

    def __init__(self, target: str, kind: str, message: str, diagnostic: str = "") -> None:
        super().__init__(message)
        self.target = target
        self.kind = kind
        self.message = message
        self.diagnostic = diagnostic or message

    def __repr__(self) -> str:
        return f"TranslationError({self.target!r}, {self.kind!r}, {self.message!r})"


class NagaTranslator:
    """Translates with the naga that ``engine`` runs (its command, timeout, jobs, batch_size)."""

    def __init__(self, engine: NagaEngine | None = None, *, bulk: bool | None = None) -> None:
        """``engine``: how naga is found and run (default: ``NagaEngine()``).

        ``bulk``: whether translate_many uses naga_cli.mjs's --bulk-translate (None: when
        the engine's naga is that adapter, naga-wasm; naga-cli proper has no such mode).
        """
        self.engine = engine or NagaEngine()
        self.bulk = bulk

    def translate(self, source: str, to: str, entry_point: str = "main") -> Translation:
        """``source`` translated by naga to 'spv' (bytes), 'msl', 'hlsl', 'glsl' or 'wgsl'."""
        return self.translate_all(source, [to], entry_point)[to]

    def translate_all(
        self, source: str, targets: Sequence[str], entry_point: str = "main"
    ) -> dict[str, Translation]:
        """Several translations of one module by one naga process (naga-cli takes many outputs)."""
        _check_targets(targets)
        cmd = self.engine.command()
        if cmd is None:
            raise WgslgenError("naga is not available", hint=INSTALL_HINT)
        timeout = self.engine.timeout
        with tempfile.TemporaryDirectory(prefix="wgslgen-naga-") as tmp:
            src = os.path.join(tmp, "input.wgsl")
            Path(src).write_text(source, encoding="utf-8")
            outs = {t: os.path.join(tmp, f"output{_EXTENSIONS[t]}") for t in targets}
            done = run_process(
                [*cmd, "--entry-point", entry_point, src, *outs.values()], timeout=timeout
            )
            if done.returncode != 0:
                why = (
                    f"timed out after {timeout:g} s"
                    if done.timed_out
                    else _first_error(done.stderr)
                )
                raise WgslgenError(
                    f"naga could not translate to {', '.join(targets)}: {why}\n"
                    + done.stderr.replace(src, "input.wgsl").rstrip()
                )
            return {t: _read_output(t, p) for t, p in outs.items()}

    def translate_many(
        self,
        sources: Sequence[TranslateSource],
        targets: Sequence[str],
        on_progress: Callable[[int], None] | None = None,
    ) -> dict[str, dict[str, Translation | TranslationError]]:
        """Every source to every target; a failure is a TranslationError value, never raised.

        With naga_cli.mjs all sources go through a few Node processes (--bulk-translate), so
        naga's WebAssembly is compiled a few times rather than once per source; with naga-cli
        each source takes one process (native naga starts fast). ``on_progress(n)`` is
        called as n more sources are done.
        """
        _check_targets(targets)
        ids = [s[0] for s in sources]
        if len(set(ids)) != len(ids):
            raise ValueError("translate_many: source ids must be unique")
        cmd = self.engine.command()
        if cmd is None:
            raise WgslgenError("naga is not available", hint=INSTALL_HINT)
        if not sources or not targets:
            return {i: {} for i in ids}
        bulk = self.bulk
        if bulk is None:
            bulk = self.engine.version().startswith("naga-wasm")
        progress = on_progress or (lambda n: None)
        jobs_n = self.engine.jobs
        with tempfile.TemporaryDirectory(prefix="wgslgen-naga-") as tmp:
            jobs = []
            for k, (sid, source, entry_point) in enumerate(sources):
                src = os.path.join(tmp, f"s{k}.wgsl")
                Path(src).write_text(source, encoding="utf-8")
                outs = {t: os.path.join(tmp, f"s{k}{_TRANSLATE_EXTENSIONS[t]}") for t in targets}
                jobs.append(_Job(sid, src, entry_point or "main", outs))
            if bulk:
                # Few processes (each compiles naga's WebAssembly), but one per core.
                spans = batch_spans(len(jobs), self.engine.batch_size, jobs_n)
                batches = [jobs[a:b] for a, b in spans]
            else:
                batches = [[job] for job in jobs]

            def work(batch: list[_Job]) -> None:
                if bulk:
                    self._bulk_batch(cmd, batch, progress)
                else:
                    self._translate_one(cmd, batch[0], progress)

            with ThreadPoolExecutor(max_workers=min(jobs_n, len(batches))) as pool:
                list(pool.map(work, batches))
            return {job.id: {t: job.results[t] for t in targets} for job in jobs}

    def _bulk_batch(
        self, cmd: list[str], jobs: list[_Job], progress: Callable[[int], None]
    ) -> None:
        """Run jobs through --bulk-translate, in a fresh process after each crash or hang."""
        pending = list(jobs)
        started = False  # whether naga reported any output yet; before that, failing is its own
        while pending:
            before = sum(len(job.results) for job in pending)
            rc, stderr, hung, panicked = self._bulk_run(cmd, pending, progress)
            started = started or sum(len(job.results) for job in pending) > before
            pending = [j for j in pending if not j.complete()]
            if not pending or panicked:  # a panic is reported against its own output
                continue
            if hung:
                why = f"timed out after {self.engine.timeout:g} s without progress"
            elif rc in (0, 1):
                why = "exited without reporting every output"
            else:
                why = f"killed by signal {-rc}" if rc is not None and rc < 0 else f"exit code {rc}"
            # The first unreported output was the one in progress: blame it, rerun the rest.
            # If naga never reported anything it cannot run at all: fail everything once.
            for job in pending[:1] if started else pending:
                missing = [t for t in job.targets if t not in job.results]
                for t in missing[:1] if started else missing:
                    job.results[t] = job.engine_error(t, why, stderr)
                if job.complete():
                    progress(1)
            pending = [j for j in pending if not j.complete()]

    def _bulk_run(
        self, cmd: list[str], jobs: list[_Job], progress: Callable[[int], None]
    ) -> tuple[int | None, str, bool, bool]:
        """One --bulk-translate process over the outputs ``jobs`` still lack.

        Returns its exit code, stderr, whether it hung, and whether it reported a panic.
        """
        by_input = {job.src: job for job in jobs}
        listing = [
            {
                "input": j.src,
                "outputs": [p for t, p in j.outputs.items() if t not in j.results],
                "entryPoint": j.entry_point,
            }
            for j in jobs
        ]
        jobs_file = f"{jobs[0].src}.jobs.json"
        Path(jobs_file).write_text(json.dumps(listing), encoding="utf-8")
        panicked = False

        def on_line(line: str) -> None:
            nonlocal panicked
            try:
                msg = json.loads(line)
                job = by_input[msg["input"]]
                target = job.target_of(msg["output"])
            except (ValueError, KeyError, TypeError, StopIteration):
                return  # not a report line
            if msg.get("ok"):
                job.results[target] = _read_output(target, msg["output"])
            else:
                text = str(msg.get("error", ""))
                panicked = msg.get("kind") == "panic"
                job.results[target] = (
                    job.engine_error(target, "panicked", text)
                    if panicked
                    else job.error(target, msg.get("kind", "write"), text)
                )
            if job.complete():
                progress(1)

        argv = [*cmd, "--bulk-translate", jobs_file]
        rc, stderr, hung = _stream(argv, on_line, self.engine.timeout)
        return rc, stderr, hung, panicked

    def _translate_one(self, cmd: list[str], job: _Job, progress: Callable[[int], None]) -> None:
        """One naga-cli process for every target; one per target only when that fails."""
        self._run_single(cmd, job, job.targets)
        if not job.complete():
            # naga-cli stops at the first output it cannot write: ask for each one alone.
            for target in job.targets:
                self._run_single(cmd, job, [target])
        progress(1)

    def _run_single(self, cmd: list[str], job: _Job, targets: list[str]) -> None:
        """Translate ``job`` to ``targets`` in one naga-cli process and record what came of it."""
        timeout = self.engine.timeout
        outs = [job.outputs[t] for t in targets]
        done = run_process(
            [*cmd, "--entry-point", job.entry_point, job.src, *outs], timeout=timeout
        )
        if done.returncode == 0:
            for t in targets:
                job.results[t] = _read_output(t, job.outputs[t])
            return
        if done.timed_out or done.returncode not in (1, 255):
            rc = done.returncode or 0
            why = (
                f"timed out after {timeout:g} s"
                if done.timed_out
                else (f"killed by signal {-rc}" if rc < 0 else f"exit code {rc}")
            )
            for t in targets:  # a crash or hang says nothing about which target is at fault
                job.results[t] = job.engine_error(t, why, done.stderr)
            return
        if "Could not parse" in done.stderr:
            kind = "parse"
        elif done.returncode == 255 or "requires validation to succeed" in done.stderr:
            kind = "validation"
        elif len(targets) == 1:
            kind = "write"
        else:
            return  # one of several writers failed; the caller asks each target alone
        for t in targets:
            job.results[t] = job.error(t, kind, done.stderr)


def _check_targets(targets: Sequence[str]) -> None:
    unknown = [t for t in targets if t not in _EXTENSIONS]
    if unknown:
        raise WgslgenError(
            f"naga cannot translate to {', '.join(unknown)}; choose from {', '.join(_EXTENSIONS)}"
        )


def _read_output(target: str, path: str) -> Translation:
    return Path(path).read_bytes() if target == "spv" else Path(path).read_text(encoding="utf-8")


class _Job:
    """One source of translate_many: its temporary files and the results gathered so far."""

    def __init__(self, sid: str, src: str, entry_point: str, outputs: dict[str, str]) -> None:
        self.id, self.src, self.entry_point, self.outputs = sid, src, entry_point, outputs
        self.targets = list(outputs)
        self.results: dict[str, Translation | TranslationError] = {}

    def target_of(self, output: str) -> str:
        return next(t for t, p in self.outputs.items() if p == output)

    def complete(self) -> bool:
        return len(self.results) == len(self.outputs)

    def rename(self, text: str) -> str:
        """``text`` with the temporary file's names replaced by the source's id."""
        return text.replace(self.src, self.id).replace(
            f"┌─ {os.path.basename(self.src)}:", f"┌─ {self.id}:"
        )

    def error(self, target: str, kind: str, text: str) -> TranslationError:
        """naga's diagnostic ``text`` about this source as a TranslationError."""
        diagnostic = self.rename(text).strip()
        return TranslationError(target, kind, _first_error(diagnostic), diagnostic)

    def engine_error(self, target: str, why: str, stderr: str) -> TranslationError:
        """naga itself failed (crash, hang) while on this source."""
        message = f"naga engine failure: {why}"
        return TranslationError(target, "engine", message, f"{message}\n{self.rename(stderr)}")


def _stream(
    argv: list[str], on_line: Callable[[str], None], idle_timeout: float
) -> tuple[int | None, str, bool]:
    """Run ``argv`` feeding stdout lines to ``on_line``; kill it when a line is overdue.

    Returns (exit code, stderr, whether it was killed after ``idle_timeout`` s of silence).
    """
    child = Child(argv, text=True, stdin=subprocess.DEVNULL)
    with child.stderr as err:
        proc = child.proc
        last = [time.monotonic()]
        finished, hung = threading.Event(), threading.Event()

        def watchdog() -> None:
            while not finished.wait(0.1):
                if time.monotonic() - last[0] > idle_timeout:
                    hung.set()
                    kill_group(proc)
                    return

        guard = threading.Thread(target=watchdog, daemon=True)
        guard.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                last[0] = time.monotonic()
                on_line(line)
            proc.wait()
        finally:
            finished.set()
            guard.join()
            if proc.poll() is None:
                kill_group(proc)
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        err.seek(0)
        return (None if hung.is_set() else proc.returncode), err.read(), hung.is_set()
