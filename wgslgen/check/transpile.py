"""Renderings → naga's SPIR-V, MSL, HLSL and GLSL; SPIR-V checked by spirv-val; atomic writes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wgslgen.atomic import atomic_write_bytes
from wgslgen.check import transpile_ledger as ledger
from wgslgen.check.engines.base import find_location
from wgslgen.check.engines.naga import NagaEngine
from wgslgen.check.engines.naga_translate import NagaTranslator, TranslationError
from wgslgen.errors import WgslgenError
from wgslgen.render.renderer import RenderedVariant

# Target name → file extension (GLSL: naga-cli reads the stage off "<name>.comp.glsl").
TARGETS: dict[str, str] = {"spv": ".spv", "msl": ".metal", "hlsl": ".hlsl", "glsl": ".comp.glsl"}
DEFAULT_OUT = Path("build/transpiled")
# naga writes SPIR-V 1.0 for Vulkan; the Vulkan environment adds Vulkan's own rules.
SPIRV_ENV = "vulkan1.0"
# Subgroup operations need SPIR-V 1.3 (Vulkan 1.1): the version a module's header names
# chooses spirv-val's environment.
SPIRV_1_3 = (1, 3)
SPIRV_ENV_1_3 = "vulkan1.1"
# Renderings whose text is meant for naga (the tint family's may use what naga rejects).
NAGA_FAMILIES = ("any", "naga")  # limits.FAMILIES less "tint": the texts naga reads
# naga writer errors meaning "this target cannot express the module", not a naga or wgslgen
# bug: GLSL has no f16 ("A scalar with an unsupported width was requested"), a feature a
# shading language or version lacks, a missing SPIR-V capability.
_UNSUPPORTED = re.compile(
    r"unsupported|not supported|not implemented|unimplemented|missing capabilit|"
    r"requires|is not available",
    re.IGNORECASE,
)
STATUSES = ("ok", "unsupported", "error", "rejected")


@dataclass
class TargetOutcome:
    """What came of one target of one rendering."""

    status: str  # "ok", "unsupported" (naga cannot write it), "error", "rejected" (spirv-val)
    path: Path | None = None  # the file written; None when nothing was
    message: str = ""
    diagnostic: str = ""
    template: str | None = None  # template file:line a diagnostic points at, when it does


@dataclass
class TranspiledVariant:
    """One rendering and its outcome per target."""

    rendered: RenderedVariant
    outcomes: dict[str, TargetOutcome] = field(default_factory=dict)


@dataclass
class TranspileReport:
    """Every rendering's translations, and the tools that made and checked them."""

    results: list[TranspiledVariant]
    targets: list[str]
    out: Path
    naga: str
    spirv_val: str | None  # the spirv-val that checked the SPIR-V; None when it was not run
    skipped: list[str]  # renderings for another compiler family (their files)

    def failures(self) -> list[tuple[TranspiledVariant, str]]:
        """(rendering, target) pairs that failed: errors and SPIR-V spirv-val rejected."""
        return [
            (r, t)
            for r in self.results
            for t, o in r.outcomes.items()
            if o.status in ("error", "rejected")
        ]

    def counts(self) -> dict[str, dict[str, Counter[str]]]:
        """kernel → target → status → how many renderings."""
        out: dict[str, dict[str, Counter[str]]] = {}
        for r in self.results:
            per_target = out.setdefault(r.rendered.kernel, {t: Counter() for t in self.targets})
            for t, o in r.outcomes.items():
                per_target[t][o.status] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        """Everything, every message and diagnostic included, for --json."""
        totals = {t: Counter(r.outcomes[t].status for r in self.results) for t in self.targets}
        return {
            "out": str(self.out),
            "targets": self.targets,
            "naga": self.naga,
            "spirv_val": self.spirv_val,
            "summary": {
                "renderings": len(self.results),
                "failures": len(self.failures()),
                "targets": {t: {s: totals[t][s] for s in STATUSES} for t in self.targets},
            },
            "skipped": self.skipped,
            "results": [
                {
                    "kernel": r.rendered.kernel,
                    "variant": r.rendered.name,
                    "family": r.rendered.family,
                    "source": r.rendered.relpath,
                    "targets": {
                        t: {
                            "status": o.status,
                            "path": str(o.path) if o.path else None,
                            "message": o.message,
                            "diagnostic": o.diagnostic,
                            "template": o.template,
                        }
                        for t, o in r.outcomes.items()
                    },
                }
                for r in self.results
            ],
        }


def parse_targets(text: str) -> list[str]:
    """'spv,msl' → ['spv', 'msl']; an unknown target names the valid ones."""
    targets = list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    unknown = [t for t in targets if t not in TARGETS]
    if unknown or not targets:
        raise WgslgenError(
            f"{text!r}: unknown target(s) {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(TARGETS)}",
            option="to",
        )
    return targets


def output_path(out: Path, rendered: RenderedVariant, target: str) -> Path:
    """Where a target of a rendering is written: <out>/<kernel>/<variant><ext>."""
    return out / rendered.kernel / f"{rendered.name}{TARGETS[target]}"


def find_spirv_val() -> str | None:
    """The spirv-val executable on PATH (Debian spirv-tools), or None."""
    return shutil.which("spirv-val")


def spirv_val_version(exe: str) -> str:
    """E.g. 'SPIRV-Tools v2023.1 unknown hash, 2023-02-15T14:03:51'."""
    try:
        done = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"spirv-val ({e})"
    return (done.stdout.strip().splitlines() or ["spirv-val"])[0]


def spirv_version(words: bytes) -> tuple[int, int]:
    """(major, minor) of the SPIR-V version a module's header names."""
    word = int.from_bytes(words[4:8], "little") if len(words) >= 8 else 0
    return (word >> 16) & 0xFF, (word >> 8) & 0xFF


def spirv_env(words: bytes) -> str:
    """spirv-val's --target-env for a module: Vulkan 1.0, or 1.1 for SPIR-V 1.3."""
    return SPIRV_ENV_1_3 if spirv_version(words) >= SPIRV_1_3 else SPIRV_ENV


def check_spirv(exe: str, words: bytes, timeout: float = 60.0) -> str | None:
    """None when spirv-val accepts the binary, else its diagnostic."""
    try:
        # One process per binary: spirv-val takes a single input, and it starts in ~5 ms.
        done = subprocess.run(
            [exe, "--target-env", spirv_env(words), "-"],
            input=words,
            capture_output=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return f"spirv-val timed out after {timeout:g} s"
    except OSError as e:
        return f"spirv-val could not run: {e}"
    if done.returncode == 0:
        return None
    text = (done.stdout + done.stderr).decode("utf-8", "replace").strip()
    return text or f"spirv-val exited with code {done.returncode}"


def _outcome(rendered: RenderedVariant, value: bytes | str | TranslationError) -> TargetOutcome:
    if not isinstance(value, TranslationError):
        return TargetOutcome("ok")
    unsupported = value.kind == "write" and bool(_UNSUPPORTED.search(value.message))
    line, _ = find_location(value.diagnostic)
    origin = rendered.origin(line) if line else None
    return TargetOutcome(
        "unsupported" if unsupported else "error",
        None,
        value.message,
        value.diagnostic,
        f"{origin[0]}:{origin[1]}" if origin and origin[1] else None,
    )


def _spirv_for_subgroups(rendered: RenderedVariant, words: bytes) -> bytes:
    """``words`` as SPIR-V 1.3 where ``rendered`` uses subgroups: naga's writer here
    (naga-wasm has no version option) names 1.0 in the header, and subgroup operations need
    1.3, which wgpu asks naga for when it compiles for a device. Only the header changes;
    spirv-val then checks the module against Vulkan 1.1."""
    if "subgroup" not in rendered.features or len(words) < 8 or spirv_version(words) >= SPIRV_1_3:
        return words
    major, minor = SPIRV_1_3
    return words[:4] + ((major << 16) | (minor << 8)).to_bytes(4, "little") + words[8:]


def _check_spirv_outcomes(exe: str, spirv: list[tuple[TargetOutcome, bytes]]) -> None:
    """spirv-val each binary (in parallel); a rejected one's outcome says why."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        verdicts = list(pool.map(lambda job: check_spirv(exe, job[1]), spirv))
    for (outcome, _), verdict in zip(spirv, verdicts, strict=True):
        if verdict is not None:
            first = next((ln for ln in verdict.splitlines() if ln.strip()), verdict)
            outcome.status, outcome.message = "rejected", f"spirv-val: {first.strip()}"
            outcome.diagnostic = verdict


def _refuse_unchecked_headers(spirv: list[tuple[TargetOutcome, bytes]]) -> None:
    """Without spirv-val, a module whose header was raised to 1.3 is not written: nothing
    would have checked that naga's 1.0 module is also valid 1.3."""
    for outcome, words in spirv:
        if spirv_version(words) >= SPIRV_1_3:
            outcome.status = "unsupported"
            outcome.message = (
                "subgroup operations need SPIR-V 1.3, written only where spirv-val checks it "
                "(apt-get install spirv-tools); naga writes 1.0 here"
            )


def _sort_translations(
    chosen: Sequence[RenderedVariant], translations: Any, targets: Sequence[str], out: Path
) -> tuple[list[TranspiledVariant], list[tuple[TargetOutcome, str, Path, bytes]], list[Path]]:
    """Each rendering's outcomes; the files to write once checked; the paths to remove."""
    results = []
    files: list[tuple[TargetOutcome, str, Path, bytes]] = []
    stale: list[Path] = []
    for r in chosen:
        result = TranspiledVariant(r)
        for t in targets:
            value = translations[r.relpath][t]
            outcome = result.outcomes[t] = _outcome(r, value)
            if isinstance(value, TranslationError):
                stale.append(output_path(out, r, t))
            else:
                data = value if isinstance(value, bytes) else value.encode("utf-8")
                if t == "spv":
                    data = _spirv_for_subgroups(r, data)
                files.append((outcome, t, output_path(out, r, t), data))
        results.append(result)
    return results, files, stale


def _known_targets(targets: Sequence[str]) -> list[str]:
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        raise WgslgenError(f"unknown target {unknown[0]!r}; choose from {', '.join(TARGETS)}")
    return list(targets)


def transpile(
    rendered: Sequence[RenderedVariant],
    targets: Sequence[str],
    out: Path | str = DEFAULT_OUT,
    *,
    engine: NagaEngine | None = None,
    spirv_val: str | bool | None = True,
    on_progress: Callable[[int], None] | None = None,
) -> TranspileReport:
    """Translate each naga-family rendering to ``targets`` and write the files under ``out``.

    ``spirv_val``: True finds it on PATH (skipped when absent), a path uses that executable,
    False or None skips the check. ``on_progress(n)``: n more renderings translated.
    """
    out, targets = Path(out), _known_targets(targets)
    ledger.check_folder(out)
    chosen = [r for r in rendered if r.family in NAGA_FAMILIES]
    skipped = [r.relpath for r in rendered if r.family not in NAGA_FAMILIES]
    engine = engine or NagaEngine()
    if why := engine.availability():
        raise WgslgenError(why)
    exe = find_spirv_val() if spirv_val is True else (spirv_val or None)

    sources = [(r.relpath, r.source, r.entry_point) for r in chosen]
    translations = NagaTranslator(engine).translate_many(sources, targets, on_progress=on_progress)
    results, files, stale = _sort_translations(chosen, translations, targets, out)
    spirv = [(o, data) for o, t, _, data in files if t == "spv" and o.status == "ok"]
    if exe:
        _check_spirv_outcomes(exe, spirv)
    else:
        _refuse_unchecked_headers(spirv)
    owned = ledger.claim(out, [path for outcome, _, path, _ in files if outcome.status == "ok"])
    for outcome, _, path, data in files:
        if outcome.status == "ok":
            atomic_write_bytes(path, data)
            outcome.path = path
        else:
            stale.append(path)  # rejected SPIR-V is reported, never written
    # A file of an earlier run would pass for this run's output: removed, if the ledger has it.
    ledger.release(out, owned, stale)
    return TranspileReport(
        results=results,
        targets=targets,
        out=out,
        naga=engine.version(),
        spirv_val=spirv_val_version(exe) if exe and "spv" in targets else None,
        skipped=skipped,
    )
