"""Where templates may be read from, and how much work one rendering may do.

A template (and everything it includes or imports) is read only from its kernel folder and
the ``_lib`` folders of its templates set and of the bundled templates, after resolving
symbolic links: ``{% include "root/etc/passwd" %}`` through a symlink, or a name reaching the
kernel folder's parent, is refused. Each rendering has a time and a size budget.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jinja2
import jinja2.debug
import jinja2.loaders

from wgslgen.spec.expressions import BudgetExceeded, time_budget
from wgslgen.spec.loader import DEFAULT_TEMPLATES

RENDER_SECONDS = 5.0  # the bundled kernels render in milliseconds
RENDER_CHARS = 4 << 20  # the largest bundled rendering is ~40 KB


class TemplateRefused(Exception):
    """A template name that resolves outside the folders a kernel may read."""


class ConfinedLoader(jinja2.BaseLoader):
    """Loads from the kernel folder, then ``_lib/...`` from the shared macro folders.

    ``mark`` (source, file index) transforms each source (the renderer's line markers);
    ``files`` collects the file names in load order for it; ``sources`` keeps every loaded
    file's text by file name, as read.
    """

    def __init__(
        self,
        folder: str,
        files: list[str] | None = None,
        mark: Callable[[str, int], str] | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.files = files if files is not None else []
        self.mark = mark
        self.sources: dict[str, str] = {}
        self._mentions: dict[str, bool] = {}  # word -> named in sources (until a new load)

    def mentions(self, word: str) -> bool:
        """Whether any file loaded so far names ``word`` (as a whole word)."""
        if word not in self._mentions:
            pattern = re.compile(rf"\b{re.escape(word)}\b")
            self._mentions[word] = any(pattern.search(s) for s in self.sources.values())
        return self._mentions[word]

    def _roots(self, pieces: list[str]) -> Iterator[tuple[Path, Path]]:
        """(confinement root, candidate path) in search order."""
        yield self.folder.resolve(), self.folder.joinpath(*pieces)
        if pieces[0] == "_lib" and len(pieces) > 1:
            for templates in dict.fromkeys([self.folder.parent, DEFAULT_TEMPLATES]):
                lib = templates / "_lib"
                # A symlinked _lib could be `ln -s / _lib`: only a real folder is shared.
                if lib.is_dir() and not lib.is_symlink():
                    yield lib.resolve(), lib.joinpath(*pieces[1:])

    def _find(self, template: str) -> Path:
        pieces = jinja2.loaders.split_template_path(template)  # refuses ".." and "/x"
        if not pieces:
            raise jinja2.TemplateNotFound(template)
        for root, candidate in self._roots(pieces):
            if not os.path.lexists(candidate):
                continue
            real = candidate.resolve()
            if not real.is_relative_to(root):
                raise TemplateRefused(
                    f"template {template!r} resolves to {real}, outside {root} "
                    "(templates are read only from the kernel folder and the _lib folders)"
                )
            if real.is_file():
                return candidate
        raise jinja2.TemplateNotFound(template)

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        """The text of ``template``, its file name and an up-to-date check."""
        path = self._find(template)
        source = path.read_text(encoding="utf-8")
        mtime = path.stat().st_mtime
        filename = str(path)
        self.sources[filename] = source
        self._mentions.clear()
        if self.mark is not None:
            if filename not in self.files:
                self.files.append(filename)
            source = self.mark(source, self.files.index(filename))

        def uptodate() -> bool:
            try:
                return path.stat().st_mtime == mtime
            except OSError:
                return False

        return source, filename, uptodate


def template_relpath(folder: Path, template: Path) -> str:
    """The name a kernel's template is loaded by: its path relative to the kernel folder."""
    try:
        return template.relative_to(folder).as_posix()
    except ValueError:
        raise TemplateRefused(
            f"template {template} is not inside the kernel folder {folder}"
        ) from None


def render_bounded(template: jinja2.Template, context: dict[str, Any]) -> str:
    """Render within RENDER_SECONDS and RENDER_CHARS; BudgetExceeded names the template line
    (a `.where` attribute when the line is known only here)."""
    parts: list[str] = []
    size = 0
    with time_budget(RENDER_SECONDS):
        gen = template.generate(context)
        for chunk in gen:
            parts.append(chunk)
            size += len(chunk)
            if size > RENDER_CHARS:
                exc = BudgetExceeded(f"the rendering exceeds its budget of {RENDER_CHARS} chars")
                exc.where = _current_line(gen)  # type: ignore[attr-defined]
                gen.close()
                raise exc
    return "".join(parts)


def _current_line(gen: Any) -> str | None:
    """The template file and line a suspended ``Template.generate`` generator is at."""
    where = None
    while gen is not None:
        frame = getattr(gen, "gi_frame", None)
        tmpl = frame.f_globals.get("__jinja_template__") if frame is not None else None
        if tmpl is not None:
            where = f"{tmpl.filename}:{tmpl.get_corresponding_lineno(frame.f_lineno)}"
        gen = getattr(gen, "gi_yieldfrom", None)
    return where
