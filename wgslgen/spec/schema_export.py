"""The JSON Schema and the markdown key reference of kernel.toml, generated from schema.py.

``python -m wgslgen.spec.schema_export`` rewrites wgslgen/spec/kernel.schema.json (package
data, for editors) and the generated block of docs/kernel-format.md; tests/test_spec_errors.py
fails when either is stale.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from wgslgen.spec.loader import DEFAULT_TEMPLATES
from wgslgen.spec.schema import KernelFile, tables

SCHEMA_PATH = Path(__file__).with_name("kernel.schema.json")
SCHEMA_ID = "https://wgslgen.invalid/kernel.schema.json"  # an id, not a download location
DOCS_PATH = Path(__file__).resolve().parents[2] / "docs" / "kernel-format.md"


def json_schema() -> dict[str, Any]:
    """The JSON Schema of kernel.toml (for editors, e.g. taplo or Even Better TOML)."""
    schema = _drop_null(KernelFile.model_json_schema(by_alias=True))
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def _drop_null(node: Any) -> Any:
    # TOML has no null: an optional key is one left out, so "or null" would mislead editors.
    if isinstance(node, list):
        return [_drop_null(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: _drop_null(v) for k, v in node.items() if not (k == "default" and v is None)}
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o != {"type": "null"}]
        if len(options) == 1:
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            return {**options[0], **rest}
        node["anyOf"] = options
    return node


def schema_text() -> str:
    """The JSON Schema as the text of the shipped kernel.schema.json."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


def _type_text(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        return "table"
    if "anyOf" in prop:
        return " or ".join(_type_text(p) for p in prop["anyOf"] if p.get("type") != "null")
    if "enum" in prop:
        return " or ".join(f"`{v}`" for v in prop["enum"])
    kind = prop.get("type", "any")
    if "prefixItems" in prop:
        return "[" + ", ".join(_type_text(p) for p in prop["prefixItems"]) + "]"
    if kind == "array":
        items = prop.get("items", {})
        return "array of tables" if "$ref" in items else f"array of {_type_text(items)}"
    if kind == "object":
        return "table"
    return " or ".join(kind) if isinstance(kind, list) else str(kind)


def _default_text(value: Any) -> str:
    if value is None or isinstance(value, BaseModel):
        return "—"
    return f"`{json.dumps(value)}`"


def markdown_reference() -> str:
    """The key reference of docs/kernel-format.md, one table per TOML table."""
    lines: list[str] = []
    for section, model in tables().items():
        heading, _, about = (model.__doc__ or "").strip().partition(": ")
        lines += [f"### {heading}" if section else "### top level", "", about or heading, ""]
        lines += ["| key | type | default | meaning |", "|---|---|---|---|"]
        props = model.model_json_schema(by_alias=True)["properties"]
        for name, f in model.model_fields.items():
            key = f.alias or name
            default = "required" if f.is_required() else _default_text(f.get_default())
            meaning = (f.description or "").replace("|", "\\|")
            lines.append(f"| `{key}` | {_type_text(props[key])} | {default} | {meaning} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# _lib files that are kernel bodies shared through {% include %}, not macro libraries
BODY_SUFFIX = ".body.wgsl.j2"
_MACRO = re.compile(r"\{%-?\s*macro\s+(\w+)\((.*?)\)\s*-?%\}", re.S)
_COMMENT = re.compile(r"\{#-?(.*?)-?#\}", re.S)


def lib_macros(lib: Path | None = None) -> list[tuple[str, str, str, str]]:
    """(file, macro name, parameters, doc comment) of every _lib macro, in source order.

    The doc is the comment right above the macro. Only _lib's own text counts, so editing a
    kernel template never makes the documentation stale.
    """
    lib = lib or DEFAULT_TEMPLATES / "_lib"
    out = []
    for path in sorted(lib.glob("*.j2")):
        if path.name.endswith(BODY_SUFFIX):  # a shared kernel body, included whole
            continue
        text = path.read_text(encoding="utf-8")
        for m in _MACRO.finditer(text):
            before = text[: m.start()].rstrip()
            comments = list(_COMMENT.finditer(before))
            doc = ""
            if comments and comments[-1].end() == len(before):
                doc = " ".join(comments[-1].group(1).split())
            out.append((path.name, m.group(1), " ".join(m.group(2).split()), doc))
    return out


def markdown_macros() -> str:
    """The _lib reference of docs/kernel-format.md: the import, then each macro and a call."""
    lines: list[str] = []
    current = ""
    for file, name, params, doc in lib_macros():
        alias = file.split(".")[0]
        if file != current:
            lines += [f"### _lib/{file}", "", f'`{{% import "_lib/{file}" as {alias} %}}`', ""]
            current = file
        lines += [f"- **`{name}({params})`** — {doc or '(no comment in the source)'}"]
        lines += [f"  Call: `{{{{ {alias}.{name}({_arguments(params)}) }}}}`", ""]
    return "\n".join(lines).rstrip() + "\n"


def _arguments(params: str) -> str:
    # A call passes the required parameters; defaults (name=value) are left out.
    return ", ".join(p.strip() for p in params.split(",") if p.strip() and "=" not in p)


def _main() -> None:
    # Regenerate the shipped schema and the generated blocks of docs/kernel-format.md.
    from wgslgen.atomic import atomic_write_text

    atomic_write_text(SCHEMA_PATH, schema_text())
    if DOCS_PATH.is_file():
        atomic_write_text(DOCS_PATH, regenerated_docs(DOCS_PATH.read_text(encoding="utf-8")))


def _markers(block: str) -> tuple[str, str]:
    begin = (
        f"<!-- BEGIN {block}: generated by `python -m wgslgen.spec.schema_export`, do not edit -->"
    )
    return begin, f"<!-- END {block} -->"


def replace_block(text: str, block: str, body: str) -> str:
    """``text`` with the generated block ``block`` (keys or macros) replaced by ``body``."""
    begin, end = _markers(block)
    if begin not in text or end not in text:
        return text
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    return f"{head}{begin}\n\n{body}\n{end}{tail}"


def markdown_example() -> str:
    """The starter kernel of `wgslgen init` (kernel.toml, template, reference.py)."""
    from wgslgen import starter

    parts = [
        ("kernels/rmsnorm/kernel.toml", "toml", starter.KERNEL_TOML),
        ("kernels/rmsnorm/rmsnorm.wgsl.j2", "jinja", starter.TEMPLATE),
        ("kernels/rmsnorm/reference.py", "python", starter.REFERENCE),
    ]
    return "\n".join(
        f"`{name}`:\n\n```{lang}\n{text.rstrip()}\n```\n" for name, lang, text in parts
    )


def regenerated_docs(text: str) -> str:
    """docs/kernel-format.md with its key, macro and example blocks regenerated."""
    text = replace_block(text, "keys", markdown_reference())
    text = replace_block(text, "macros", markdown_macros())
    return replace_block(text, "example", markdown_example())


if __name__ == "__main__":
    _main()
