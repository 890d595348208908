"""Project configuration: ``[tool.wgslgen]`` in pyproject.toml, or a wgslgen.toml file.

Commands find it by walking up from the current folder (like ruff and pytest), so that in a
project `wgslgen build`, `test` and `tune` need no path options. Paths in the file are relative
to the folder that holds it. Without a project file, the bundled library is the templates
source and outputs go to the current folder (the behaviour before project files existed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from wgslgen.errors import WgslgenError
from wgslgen.spec.kernel import read_toml
from wgslgen.spec.loader import DEFAULT_TEMPLATES
from wgslgen.spec.schema_errors import to_error

CONFIG_FILE = "wgslgen.toml"
SECTION = "[tool.wgslgen]"


class ProjectTable(BaseModel):
    """The keys of ``[tool.wgslgen]`` (or of a wgslgen.toml file, at its top level)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    templates: list[StrictStr] = Field(
        ["kernels"], description="folders of kernel folders and/or .wgsl files"
    )
    bundled: StrictBool = Field(
        False, description="also offer the kernels bundled with wgslgen (render them here)"
    )
    output: StrictStr = Field("generated", description="where `wgslgen build` writes")
    db: StrictStr = Field("tuning/results.jsonl", description="tuning results database")
    selection: StrictStr = Field("tuning/selection.json", description="tuning selection file")
    transpiled: StrictStr = Field("build/transpiled", description="`wgslgen transpile` output")
    profile: StrictStr | None = Field(None, description="default limit profile (--profile)")
    adapter: StrictStr | None = Field(None, description="default adapter: cpu, gpu or a name")


@dataclass(frozen=True)
class Project:
    """Where a project's kernels, outputs and tuning files live (absolute paths)."""

    file: Path | None  # the pyproject.toml or wgslgen.toml read; None: no project found
    templates: tuple[Path, ...]
    output: Path
    db: Path
    selection: Path
    transpiled: Path
    profile: str | None = None
    adapter: str | None = None

    @property
    def root(self) -> Path | None:
        """The project folder (the config file's folder), or None outside a project."""
        return None if self.file is None else self.file.parent


def default_project() -> Project:
    """No project file: the bundled library, outputs relative to the current folder."""
    return Project(
        file=None,
        templates=(DEFAULT_TEMPLATES,),
        output=Path("generated"),
        db=Path("tuning/results.jsonl"),
        selection=Path("tuning/selection.json"),
        transpiled=Path("build/transpiled"),
    )


def find_config(start: Path | None = None) -> Path | None:
    """The nearest wgslgen.toml, or pyproject.toml with [tool.wgslgen], at or above ``start``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_FILE).is_file():
            return folder / CONFIG_FILE
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and _table_of(pyproject) is not None:
            return pyproject
    return None


def load_project(start: Path | None = None) -> Project:
    """The project around ``start`` (default: the current folder)."""
    path = find_config(start)
    if path is None:
        return default_project()
    table = _table_of(path) or {}
    try:
        cfg = ProjectTable.model_validate(table)
    except ValidationError as exc:
        inside = () if path.name == CONFIG_FILE else ("tool", "wgslgen")
        text = str(to_error(exc, path, ProjectTable, inside))
        if path.name != CONFIG_FILE:
            text = text.replace("[top level]", SECTION)
        raise WgslgenError(text) from None
    root = path.parent
    folders = [root / t for t in cfg.templates]
    if cfg.bundled:
        folders.append(DEFAULT_TEMPLATES)
    unique = dict.fromkeys(p.resolve() for p in folders)  # the same folder twice: once
    return Project(
        file=path,
        templates=tuple(unique),
        output=root / cfg.output,
        db=root / cfg.db,
        selection=root / cfg.selection,
        transpiled=root / cfg.transpiled,
        profile=cfg.profile,
        adapter=cfg.adapter,
    )


def _table_of(path: Path) -> dict | None:
    data = read_toml(path)
    if path.name == CONFIG_FILE:
        return data
    table = data.get("tool", {}).get("wgslgen")
    if table is not None and not isinstance(table, dict):
        raise WgslgenError(f"{path}: {SECTION} must be a table")
    return table


def source_of(folder: Path, project: Project) -> str:
    """Where a kernel comes from, for `wgslgen list`: 'bundled' or a path in the project."""
    folder = folder.resolve()
    if folder.is_relative_to(DEFAULT_TEMPLATES.resolve()):
        return "bundled"
    root = project.root or Path.cwd().resolve()
    return folder.relative_to(root).as_posix() if folder.is_relative_to(root) else str(folder)
