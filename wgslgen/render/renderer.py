"""Variant → WGSL text: the sandboxed Jinja environment, provenance header and source map."""

from __future__ import annotations

import hashlib
import re
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn

import jinja2
import jinja2.sandbox

from wgslgen import __version__
from wgslgen.check import wgsl
from wgslgen.check.wgsl import WgslFacts
from wgslgen.errors import WgslgenError
from wgslgen.render.syntax import syntax_error_message
from wgslgen.render.template_loader import (
    ConfinedLoader,
    TemplateRefused,
    render_bounded,
    template_relpath,
)
from wgslgen.spec.expressions import BoundedSandbox, BudgetExceeded
from wgslgen.spec.kernel import KernelSpec, Variant
from wgslgen.spec.loader import DEFAULT_TEMPLATES
from wgslgen.text_file import read_user_text, with_lf_line_breaks

# A kernel that uses subgroups needs different text for naga and for Tint (naga 30 rejects
# `enable subgroups;`, Tint requires it), so every template is rendered once per family;
# identical texts collapse into one "any" file.
FAMILIES = ("naga", "tint")

_MARK = re.compile(r"\x02(\d+):(\d+)\x03")


@dataclass(frozen=True)
class RenderedVariant:
    """One rendering of a variant for one compiler family (see docs/CONTRACTS.md)."""

    kernel: str
    name: str
    params: dict[str, Any]
    family: str
    source: str
    entry_point: str  # the first pass's
    entry_points: tuple[str, ...]  # every pass's, in dispatch order
    features: frozenset[str]
    sha256: str
    relpath: str
    variant: Variant
    facts: Mapping[str, WgslFacts]  # per entry point, read once here and carried forward

    @property
    def constants(self) -> dict[str, float]:
        """Pipeline constants: the variant's [overrides] values of the overrides this text
        declares (WebGPU refuses a constant the module does not declare)."""
        declared = frozenset().union(*(f.overrides for f in self.facts.values()))
        return {k: v for k, v in self.variant.override_values.items() if k in declared}

    @property
    def source_map(self) -> tuple[tuple[str, int], ...]:
        """Per output line, the template file and line that produced it (made on first use,
        by rendering again with line markers: only diagnostics need it)."""
        found = self.__dict__.get("_source_map")
        if found is None:
            found = _map(self.variant, self.family, self.source)
            object.__setattr__(self, "_source_map", found)  # a cache, not state: still frozen
        return found

    def origin(self, line: int) -> tuple[str, int]:
        """The template file and line that produced 1-based output ``line``."""
        source_map = self.source_map
        if 1 <= line <= len(source_map):
            return source_map[line - 1]
        return ("<generated>", 0)


def _add_markers(source: str, file_id: int) -> str:
    lines = source.split("\n")
    closer: str | None = None
    for i, line in enumerate(lines):
        pos = 0
        while True:
            if closer is None:
                hits = [
                    (line.find(o, pos), c) for o, c in (("{%", "%}"), ("{{", "}}"), ("{#", "#}"))
                ]
                hits = [h for h in hits if h[0] >= 0]
                if not hits:
                    break
                start, closer = min(hits)
                pos = start + 2
            else:
                end = line.find(closer, pos)
                if end < 0:
                    break
                closer, pos = None, end + 2
        tail = line.rstrip()
        # Lines ending in a statement or comment produce no output of their own, and
        # trim_blocks must still see the newline right after the tag.
        if closer is None and not tail.endswith(("%}", "#}")) and i < len(lines) - 1:
            lines[i] = line + f"\x02{file_id}:{i + 1}\x03"
    return "\n".join(lines)


def _search_path(spec: KernelSpec) -> list[str]:
    # Only the kernel folder (and the _lib folders, see template_loader): never its parent.
    return [str(spec.folder)]


class TemplateFailed(Exception):
    """A template's own ``fail(message)``: it cannot render these axis values."""


def _fail(message: str) -> NoReturn:
    """``{{ fail("why") }}`` in a template: refuse the variant being rendered, saying why."""
    raise TemplateFailed(message)


@lru_cache(maxsize=64)
def _environment(search: tuple[str, ...], marked: bool) -> jinja2.Environment:
    files: list[str] = []
    loader = ConfinedLoader(search[0], files, _add_markers if marked else None)
    env = BoundedSandbox(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.globals["marker_files"] = files
    env.globals["fail"] = _fail
    return env


def _template_name(spec: KernelSpec) -> str:
    return template_relpath(spec.folder, spec.template_path)


def _display_path(path: str | Path) -> str:
    """A template path for people reading an error: relative to the bundled library or to the
    current folder (so it can be opened from there)."""
    return _display_path_from(str(path), str(Path.cwd()))


@lru_cache(maxsize=1024)
def _display_path_from(path_text: str, cwd: str) -> str:
    # cached per current folder too: a cached answer for another folder would be wrong
    path = Path(path_text)
    for root in (DEFAULT_TEMPLATES, Path(cwd)):
        try:
            return path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
    return path.name if path.parent.name == "" else f"{path.parent.name}/{path.name}"


def stored_template_path(spec: KernelSpec) -> str:
    """The template's path as written into generated files and manifests: inside its templates
    folder (``<kernel>/<file>``; a plain file: ``<its folder>/<file>``), so what a build writes
    depends neither on the folder it runs in nor on where the project lies."""
    try:
        return spec.template_path.resolve().relative_to(spec.folder.resolve().parent).as_posix()
    except ValueError:  # a template outside its templates folder (a symlink): its file name
        return f"{spec.folder.name}/{spec.template_path.name}"


def template_sha256(spec: KernelSpec) -> str:
    """sha256 of the template and every shared macro file next to it (what a render reads)."""
    h = hashlib.sha256(spec.template_path.read_bytes())
    if not spec.plain:
        for root in dict.fromkeys([spec.folder.parent, DEFAULT_TEMPLATES]):
            for lib in sorted((root / "_lib").glob("*")):
                if lib.is_file():  # not a folder, nor a symlink to /dev/zero
                    h.update(lib.name.encode() + lib.read_bytes())
    return h.hexdigest()


def _header(variant: Variant, family: str) -> list[str]:
    spec = variant.spec
    axes = ", ".join(f"{k}={v}" for k, v in variant.param_items) or "(none)"
    return [
        f"// Generated by wgslgen {__version__} from {stored_template_path(spec)}."
        " Do not edit: edit the template and run `wgslgen build`.",
        f"// kernel: {spec.name}   variant: {variant.name}   family: {family}",
        f"// axes: {axes}",
        f"// template sha256: {template_sha256(spec)}",
    ]


def _render_text(variant: Variant, family: str, marked: bool) -> str:
    spec = variant.spec
    if spec.plain:
        return with_lf_line_breaks(read_user_text(spec.template_path))
    env = _environment(tuple(_search_path(spec)), marked)
    context = {
        **variant.params,
        "kernel": spec.name,
        "family": family,
        "interface": variant.interface.declarations(),
    }
    try:
        return render_bounded(env.get_template(_template_name(spec)), context)
    except jinja2.TemplateSyntaxError as exc:  # the text's, whatever the variant
        raise WgslgenError(syntax_error_message(exc, spec.template_path)) from None
    except jinja2.TemplateNotFound as exc:
        raise WgslgenError(
            f"{_line_naming(spec.template_path, exc.name)}: template {exc.name!r} not found"
        ) from None
    except (BudgetExceeded, TemplateRefused, TemplateFailed) as exc:
        where = getattr(exc, "where", None) or _template_frame(exc, spec)
        raise WgslgenError(f"{where}: {exc} (variant {variant.name})") from None
    except Exception as exc:
        raise WgslgenError(
            f"{_template_frame(exc, spec)}: {type(exc).__name__}: {exc} "
            f"(variant {variant.name}: {', '.join(f'{k}={v}' for k, v in variant.param_items)})"
        ) from None


def _line_naming(path: Path, name: str) -> str:
    """``path:line`` of the first line of the template that names ``name`` in quotes."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return str(path)
    quoted = (f'"{name}"', f"'{name}'")
    number = next((i for i, line in enumerate(lines, 1) if any(q in line for q in quoted)), None)
    return f"{path}:{number}" if number else str(path)


def _template_frame(exc: BaseException, spec: KernelSpec) -> str:
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if f.filename.endswith((".j2", ".wgsl", ".jinja")) or "/templates/" in f.filename
    ]
    if frames:
        return f"{frames[-1].filename}:{frames[-1].lineno}"
    return str(spec.template_path)


def _source_map(marked: str, files: list[str]) -> tuple[str, tuple[tuple[str, int], ...]]:
    text_lines, mapping = [], []
    last = ("<generated>", 0)
    for line in marked.split("\n"):
        hits = _MARK.findall(line)
        if hits:
            fid, lineno = hits[-1]
            last = (_display_path(files[int(fid)]), int(lineno))
        mapping.append(last)
        text_lines.append(_MARK.sub("", line))
    return "\n".join(text_lines), tuple(mapping)


def _text(variant: Variant, family: str) -> str:
    """The WGSL text of ``variant`` for ``family``, provenance header included."""
    source = "\n".join(_header(variant, family)) + "\n" + _render_text(variant, family, False)
    return source if source.endswith("\n") else source + "\n"


def _map(variant: Variant, family: str, source: str) -> tuple[tuple[str, int], ...]:
    """The line → template-line map of ``source``, the text of ``variant`` for ``family``."""
    spec = variant.spec
    header = _header(variant, family)
    body = source.split("\n", len(header))[-1]
    lines = body.count("\n")  # the text ends with a newline: the last "line" is empty
    body_map: tuple[tuple[str, int], ...]
    if spec.plain:
        body_map = tuple((_display_path(spec.template_path), i + 1) for i in range(lines + 1))
    else:
        env = _environment(tuple(_search_path(spec)), True)
        # The "any" text is every family's: the first one's markers map it.
        marked_family = FAMILIES[0] if family == "any" else family
        stripped, body_map = _source_map(
            _render_text(variant, marked_family, marked=True), env.globals["marker_files"]
        )
        if stripped != body and stripped + "\n" != body:
            # a filter saw the markers; better no map than a wrong one
            body_map = (("<unmapped>", 0),) * (lines + 1)
    if len(body_map) < lines + 1:  # the newline added after a body without one
        body_map = (*body_map, ("<generated>", 0))
    return tuple([("<generated>", 0)] * len(header)) + body_map


def _rendered(
    variant: Variant,
    family: str,
    source: str,
    relpath: str,
    facts: Mapping[str, WgslFacts] | None = None,
) -> RenderedVariant:
    """The RenderedVariant of one text: the only place its WGSL facts are read (``facts``:
    read already, by the process that rendered it)."""
    spec = variant.spec
    # kernel.toml's [overrides] size what an `override` sizes (@workgroup_size(wg)): with
    # them the facts are the pipeline's, so limits, test plans and vendoring see real sizes.
    # A kernel without them is read by the very call it always was.
    given = (variant.override_values,) if variant.override_values else ()
    if facts is None:
        facts = wgsl.analyze_entries(source, spec.entry_points, *given)
    needed = frozenset().union(*(wgsl.required_features(f) for f in facts.values()))
    return RenderedVariant(
        kernel=spec.name,
        name=variant.name,
        params=variant.params,
        family=family,
        source=source,
        entry_point=spec.entry_point,
        entry_points=spec.entry_points,
        features=needed | variant.interface.features,
        sha256=hashlib.sha256(source.encode()).hexdigest(),
        relpath=relpath,
        variant=variant,
        facts=MappingProxyType(facts),
    )


def render(variant: Variant, family: str = "naga") -> RenderedVariant:
    """Render ``variant`` for one compiler family, with its provenance header and source map."""
    relpath = f"{variant.spec.name}/{variant.name}.wgsl"
    return _rendered(variant, family, _text(variant, family), relpath)


def rendered_from(
    variant: Variant, family: str, source: str, relpath: str, facts: Mapping[str, WgslFacts]
) -> RenderedVariant:
    """A rendering of ``variant`` made elsewhere (its text, file and facts) as a RenderedVariant."""
    return _rendered(variant, family, source, relpath, facts)


def render_families(variant: Variant) -> list[RenderedVariant]:
    """Every distinct rendering of ``variant``: one "any" text, or one per compiler family."""
    first = _text(variant, FAMILIES[0])
    if _family_blind(variant):
        texts = dict.fromkeys(FAMILIES, first)
    else:
        texts = {FAMILIES[0]: first} | {f: _text(variant, f) for f in FAMILIES[1:]}
    if all(_body(t) == _body(first) for t in texts.values()):
        header = "\n".join(_header(variant, "any")) + "\n"
        relpath = f"{variant.spec.name}/{variant.name}.wgsl"
        return [_rendered(variant, "any", header + _body(first), relpath)]
    return [
        _rendered(variant, f, t, f"{variant.spec.name}/{variant.name}.{f}.wgsl")
        for f, t in texts.items()
    ]


def _family_blind(variant: Variant) -> bool:
    """Whether ``variant``'s text cannot depend on the family: a plain file, or a template
    none of whose loaded files (itself, what it imports and includes) names `family`; call
    after rendering it once, so that its files are loaded."""
    if variant.spec.plain:
        return True
    loader = _environment(tuple(_search_path(variant.spec)), False).loader
    assert isinstance(loader, ConfinedLoader)
    return bool(loader.sources) and not loader.mentions("family")


def _body(source: str) -> str:
    return source.split("\n", 4)[-1]
