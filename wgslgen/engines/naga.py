"""naga as a subprocess: naga-cli when on PATH, else naga-wasm under Node via naga_cli.mjs."""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..errors import WgslgenError
from .base import ShaderInput, Verdict, engine_failure, find_location, kill_group, run_process

ADAPTER = Path(__file__).with_name("naga_cli.mjs")
INSTALL_HINT = (
    "install naga-cli (`cargo install naga-cli`) or Node.js and run `npm ci` in the wgslgen "
    "checkout (for naga-wasm)"
)
# Output file extensions naga-cli chooses its writer by.
_EXTENSIONS = {"spv": ".spv", "msl": ".metal", "hlsl": ".hlsl", "glsl": ".comp", "wgsl": ".wgsl"}
_SECTION = re.compile(r"^Error validating (.+):$", re.MULTILINE)
_SUMMARY = "Validation failed for the following inputs:"

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
        bulk_translate: bool | None = None,
    ) -> None:
        """``command`` overrides how naga is run (also env WGSLGEN_NAGA, a shell-quoted line).

        ``bulk_translate``: whether translate_many uses naga_cli.mjs's --bulk-translate
        (None: when the command is that adapter; naga-cli proper has no such mode).
        """
        self._command = list(command) if command else None
        self.timeout = timeout
        self.batch_size = batch_size
        self.jobs = jobs or min(4, os.cpu_count() or 1)
        self.bulk_translate = bulk_translate
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
            return [node, str(ADAPTER)]
        return None

    def _probe(self) -> tuple[str | None, str]:
        if self._availability is None:
            cmd = self.command()
            if cmd is None:
                why = f"naga not found: neither `naga` nor `node` is on PATH; {INSTALL_HINT}"
                self._availability = (why, "")
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
            # Few processes (Node starts in ~0.1 s), but enough to use every core.
            n_batches = max(math.ceil(len(shaders) / self.batch_size), min(self.jobs, len(shaders)))
            size = math.ceil(len(shaders) / n_batches)
            spans = [(i, min(i + size, len(shaders))) for i in range(0, len(shaders), size)]
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

    def translate(self, source: str, to: str, entry_point: str = "main") -> bytes | str:
        """``source`` translated by naga to 'spv' (bytes), 'msl', 'hlsl', 'glsl' or 'wgsl'."""
        return self.translate_all(source, [to], entry_point)[to]

    def translate_all(
        self, source: str, targets: Sequence[str], entry_point: str = "main"
    ) -> dict[str, bytes | str]:
        """Several translations of one module by one naga process (naga-cli takes many outputs)."""
        unknown = [t for t in targets if t not in _EXTENSIONS]
        if unknown:
            raise WgslgenError(
                f"naga cannot translate to {', '.join(unknown)}; "
                f"choose from {', '.join(_EXTENSIONS)}"
            )
        cmd = self.command()
        if cmd is None:
            raise WgslgenError("naga is not available", hint=INSTALL_HINT)
        with tempfile.TemporaryDirectory(prefix="wgslgen-naga-") as tmp:
            src = os.path.join(tmp, "input.wgsl")
            Path(src).write_text(source, encoding="utf-8")
            outs = {t: os.path.join(tmp, f"output{_EXTENSIONS[t]}") for t in targets}
            done = run_process(
                [*cmd, "--entry-point", entry_point, src, *outs.values()], timeout=self.timeout
            )
            if done.returncode != 0:
                why = (
                    f"timed out after {self.timeout:g} s"
                    if done.timed_out
                    else _first_error(done.stderr)
                )
                raise WgslgenError(
                    f"naga could not translate to {', '.join(targets)}: {why}\n"
                    + done.stderr.replace(src, "input.wgsl").rstrip()
                )
            return {
                t: Path(p).read_bytes() if t == "spv" else Path(p).read_text(encoding="utf-8")
                for t, p in outs.items()
            }

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
        cmd = self.command()
        if cmd is None:
            raise WgslgenError("naga is not available", hint=INSTALL_HINT)
        if not sources or not targets:
            return {i: {} for i in ids}
        bulk = self.bulk_translate
        if bulk is None:
            bulk = self.version().startswith("naga-wasm")
        progress = on_progress or (lambda n: None)
        with tempfile.TemporaryDirectory(prefix="wgslgen-naga-") as tmp:
            jobs = []
            for k, (sid, source, entry_point) in enumerate(sources):
                src = os.path.join(tmp, f"s{k}.wgsl")
                Path(src).write_text(source, encoding="utf-8")
                outs = {t: os.path.join(tmp, f"s{k}{_TRANSLATE_EXTENSIONS[t]}") for t in targets}
                jobs.append(_Job(sid, src, entry_point or "main", outs))
            if bulk:
                # Few processes (each compiles naga's WebAssembly), but one per core.
                n_batches = max(math.ceil(len(jobs) / self.batch_size), min(self.jobs, len(jobs)))
                size = math.ceil(len(jobs) / n_batches)
                batches = [jobs[i : i + size] for i in range(0, len(jobs), size)]
            else:
                batches = [[job] for job in jobs]

            def work(batch: list[_Job]) -> None:
                if bulk:
                    self._bulk_batch(cmd, batch, progress)
                else:
                    self._translate_one(cmd, batch[0], progress)

            with ThreadPoolExecutor(max_workers=min(self.jobs, len(batches))) as pool:
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
                why = f"timed out after {self.timeout:g} s without progress"
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

        rc, stderr, hung = _stream([*cmd, "--bulk-translate", jobs_file], on_line, self.timeout)
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
        outs = [job.outputs[t] for t in targets]
        done = run_process(
            [*cmd, "--entry-point", job.entry_point, job.src, *outs], timeout=self.timeout
        )
        if done.returncode == 0:
            for t in targets:
                job.results[t] = _read_output(t, job.outputs[t])
            return
        if done.timed_out or done.returncode not in (1, 255):
            rc = done.returncode or 0
            why = (
                f"timed out after {self.timeout:g} s"
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


# translate_many's output names: naga-cli picks the writer by extension (GLSL: stage.glsl).
_TRANSLATE_EXTENSIONS = {**_EXTENSIONS, "glsl": ".comp.glsl"}


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
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as err:
        # stderr goes to a file so that a chatty process never blocks on a full pipe.
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,
        )
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
