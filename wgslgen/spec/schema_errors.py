"""A kernel.toml (or project table) checked against its schema: the first problem as one line.

The line names the file, the line the key is written on (``toml_lines``), the key's place as
authors read it (``axis[1].baseline``) and, for an unknown key, the valid ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from wgslgen.errors import WgslgenError
from wgslgen.spec.schema import KernelFile, field_names, tables
from wgslgen.spec.toml_lines import located


def parse(raw: dict[str, Any], path: Path) -> KernelFile:
    """Validate a parsed kernel.toml; the first problem becomes one WgslgenError."""
    try:
        return KernelFile.model_validate(raw)
    except ValidationError as exc:
        raise to_error(exc, path) from None


def to_error(
    exc: ValidationError,
    path: Path,
    root: type[BaseModel] | None = None,
    table: tuple[str, ...] = (),
) -> WgslgenError:
    """One line naming the file, the line and key and (for unknown keys) the valid ones.

    ``root`` is the model validated (default KernelFile): it lists the valid keys. ``table``:
    where in the file the validated table sits (``("tool", "wgslgen")`` in pyproject.toml).
    """
    errors = exc.errors(include_url=False)
    extra = [e for e in errors if e["type"] == "extra_forbidden"]
    if extra:
        parent = extra[0]["loc"][:-1]
        keys = [e["loc"][-1] for e in extra if e["loc"][:-1] == parent]
        section = ".".join(str(p) for p in parent if isinstance(p, str))
        model = tables(root).get(section, root or KernelFile)
        valid = sorted(field_names(model))
        # an entry of an array of tables by its index (axis[1]); a plain table as [kernel]
        indexed = any(isinstance(p, int) for p in parent)
        place = where(parent) if indexed else f"[{section or 'top level'}]"
        at = located(path, (*table, *extra[0]["loc"]))
        return WgslgenError(
            f"{at}: unknown key(s) {', '.join(map(str, keys))} in {place}; "
            f"valid: {', '.join(valid)}"
        )
    first = errors[0]
    loc = tuple(p for p in first["loc"] if not _is_union_tag(p))
    key = (first.get("ctx") or {}).get("key") if first["type"] == "wgslgen" else None
    at = located(path, (*table, *loc, *([key] if key else [])))
    if first["type"] == "missing" and isinstance(loc[-1], int):
        return WgslgenError(f"{at}: {where(loc[:-1])} has too few items")
    if first["type"] == "missing":
        return WgslgenError(f"{at}: {where(loc[:-1])} lacks {loc[-1]!r}")
    if first["type"] == "wgslgen":
        text = first["ctx"]["message"]
        return WgslgenError(f"{at}: {where(loc)} {text}" if loc else f"{at}: {text}")
    what = _TYPE_TEXT.get(first["type"]) or first["msg"][:1].lower() + first["msg"][1:]
    if first["type"] == "too_short":
        what = f"needs at least {first['ctx']['min_length']} item(s)"
    if first["type"] == "too_long":
        what = f"takes at most {first['ctx']['max_length']} item(s)"
    return WgslgenError(f"{at}: {where(loc)}: {what}, got {first.get('input')!r}")


# pydantic's texts name Python types ("a valid dictionary or instance of KernelTable").
_TYPE_TEXT = {
    "dict_type": "must be a table",
    "model_type": "must be a table",
    "model_attributes_type": "must be a table",
    "list_type": "must be an array",
    "tuple_type": "must be an array",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
}


def _is_union_tag(part: Any) -> bool:
    # pydantic adds the member type to the location of a union's errors ("int", "list[...]").
    return isinstance(part, str) and ("[" in part or part in {"int", "str", "float", "bool"})


def where(loc: tuple[Any, ...]) -> str:
    """A location as kernel.toml authors read it: [kernel].name, axis[1].key, [test].shapes[0]
    (a table in brackets, an array of tables indexed)."""
    if not loc:
        return "top level"
    head, *rest = loc
    text = f"[{head}]" if head in {"kernel", "uniform", "problem", "test", "tune"} else str(head)
    for part in rest:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text
