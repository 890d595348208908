"""The validation report: every file's verdicts, grouped diagnostics, and the JSON form."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wgslgen.check.validate import VariantResult


@dataclass
class Diagnostic:
    """One failure message, shown once with every rendering it occurred in."""

    engine: str
    message: str
    generated: str  # generated/<file>:line
    template: str  # template file:line the line came from
    detail: str
    variants: list[str]


@dataclass
class ValidationReport:
    """Verdicts of every rendering, the engines used and those that were not available."""

    results: list[VariantResult]
    engine_versions: dict[str, str]
    engines_missing: dict[str, str]
    profiles: list[str]
    written_to: str | None = None  # where the renderings are files (None: in memory only)

    def compile_failures(self) -> list[VariantResult]:
        """Renderings a compiler rejected (not for a limit, not for a known gap), and
        renderings Tint's static rules reject when Dawn did not judge them."""
        return [r for r in self.results if r.compile_errors() or _static_tint_refusal(r)]

    def problems(self) -> list[VariantResult]:
        """Files that could not be judged in full: unreadable, not WebGPU, overrides missing."""
        return [r for r in self.results if r.problems]

    def interface_mismatches(self) -> list[VariantResult]:
        """Files whose bindings or uniform layout differ from their kernel.toml's."""
        return [r for r in self.results if r.interface]

    def not_fitting(self, profile: str) -> list[VariantResult]:
        """Renderings that do not fit ``profile``."""
        return [r for r in self.results if not r.fits(profile)]

    def usable_in(self, profile: str) -> list[VariantResult]:
        """Renderings that compile and fit ``profile`` (one no compiler takes fits nothing)."""
        failed = {id(r) for r in self.compile_failures()}
        return [r for r in self.results if r.fits(profile) and id(r) not in failed]

    def not_compiling(self, implementation: str) -> list[VariantResult]:
        """Renderings ``implementation`` ('naga' or 'tint') refuses, gaps included."""
        return [r for r in self.results if not r.compiles(implementation)]

    def diagnostics(self) -> list[Diagnostic]:
        """Compile errors and static Tint findings grouped by (engine, message, template line)."""
        groups: dict[tuple[str, str, str], Diagnostic] = {}
        for r in self.results:
            if r.rendered is None:
                continue
            located = [(v.engine, v.message, v.line, v.diagnostic) for v in r.compile_errors()]
            if _static_tint_refusal(r):
                located += [
                    ("tint (static)", f.message, f.line, f.text())
                    for f in r.implementations["tint"].findings
                ]
            for engine, message, line, detail in located:
                origin = r.rendered.origin(line) if line else ("?", 0)
                template = f"{origin[0]}:{origin[1]}" if origin[1] else origin[0]
                key = (engine, message, template)
                if key not in groups:
                    if r.rendered.variant.spec.plain and not self.written_to:
                        # only the user's own file exists: its lines, not the rendering's
                        where = f"{r.file}:{_file_line(r, line) or '?'}"
                        detail = _in_users_file(r, detail, line)
                        template = ""  # the user's file is the template: said once
                    else:
                        where = f"{file_path(self.written_to, r.rendered.relpath)}:{line or '?'}"
                    groups[key] = Diagnostic(engine, message, where, template, detail, [])
                groups[key].variants.append(r.rendered.name)
        return list(groups.values())

    def to_dict(self) -> dict[str, Any]:
        """Everything, every diagnostic included, for --json."""
        return {
            "engines": self.engine_versions,
            "engines_missing": self.engines_missing,
            "profiles": self.profiles,
            "summary": {
                "renderings": len(self.results),
                "compile_failures": len(self.compile_failures()),
                "problems": len(self.problems()),
                "interface_mismatches": len(self.interface_mismatches()),
                "not_fitting": {p: len(self.not_fitting(p)) for p in self.profiles},
                "not_compiling": {i: len(self.not_compiling(i)) for i in ("naga", "tint")},
            },
            "results": [_result_dict(r) for r in self.results],
        }


def _static_tint_refusal(r: VariantResult) -> bool:
    tint = r.implementations.get("tint")
    return bool(tint and tint.source == "static" and tint.findings)


def _result_dict(r: VariantResult) -> dict[str, Any]:
    from wgslgen.check.validate import is_limit_failure

    rendered = r.rendered
    out: dict[str, Any] = {
        "kernel": r.kernel,
        "variant": r.name,
        "family": rendered.family if rendered else None,
        "file": r.file,
        "problems": r.problems,
        "constants": r.constants,
        "interface": {"kernel": r.interface_of, "mismatches": r.interface}
        if r.interface_of
        else None,
        "entry_points": list(r.facts),
        "engines": {
            name: {
                "ok": v.ok,
                "limit": is_limit_failure(v),
                "message": v.message,
                "line": _file_line(r, v.line),
                "column": v.column,
                "diagnostic": _users_diagnostic(r, v.diagnostic, v.line),
                "template": _origin(r, v.line) if not v.ok else None,
            }
            for name, v in r.engines.items()
        },
        "implementations": {name: i.to_dict() for name, i in r.implementations.items()},
        "profiles": r.profiles,
    }
    if r.tint_static is not None:
        out["tint_static"] = r.tint_static.to_dict()
        out["tint_static"]["findings"] = [
            {"rule": f.rule, "message": f.message, "line": _file_line(r, f.line),
             "column": f.column, "template": _origin(r, f.line)}
            for f in r.tint_static.findings
        ]  # fmt: skip
    return out


def _users_diagnostic(r: VariantResult, detail: str | None, line: int | None) -> str | None:
    """A verdict's diagnostic as the JSON tells it: of ``r.file`` (a plain file: its own)."""
    plain = r.rendered is not None and r.rendered.variant.spec.plain
    return _in_users_file(r, detail, line) if plain and detail else detail


def _in_users_file(r: VariantResult, detail: str, line: int | None) -> str:
    """A compiler's text about a plain file's rendering, told of the file itself: the
    rendering's name and line numbers (its code frame's too) moved back by the header."""
    shift = line - (_file_line(r, line) or line) if line else 0
    # naga names the rendering's path; wgpu-native calls the module `wgsl`; Tint names
    # none (":5:60 error: ...").
    named = rf"(?:{re.escape(r.rendered.relpath)}|(?<![\w./])wgsl|(?<![\w./:]))"
    detail = re.sub(
        named + r":(\d+)(?=:\d+|\b)",
        lambda m: f"{r.file}:{max(1, int(m[1]) - shift)}",
        detail,
    )
    if not shift:
        return detail
    return re.sub(
        r"^(\s*)(\d+)(\s+│)",
        lambda m: f"{m[1]}{str(int(m[2]) - shift).rjust(len(m[2]))}{m[3]}",
        detail,
        flags=re.M,
    )


def _file_line(r: VariantResult, line: int | None) -> int | None:
    """``line`` of the rendering as a line of ``r.file``: a plain file's own line (its
    rendering starts with the provenance header), a template's rendering's as it is."""
    if r.rendered is None or not line or not r.rendered.variant.spec.plain:
        return line
    return r.rendered.origin(line)[1] or None


def _origin(r: VariantResult, line: int | None) -> str | None:
    if r.rendered is None or not line:
        return None
    file, number = r.rendered.origin(line)
    return f"{file}:{number}"


def file_path(folder: str | None, relpath: str) -> str:
    """A rendering's path: in the folder it was written to, else its path in any output."""
    return f"{folder.rstrip('/')}/{relpath}" if folder else relpath
