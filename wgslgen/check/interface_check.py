"""A shader's declared bindings and uniform struct against the interface kernel.toml gives.

`wgslgen test` and the vendored bindings fill and bind buffers as kernel.toml says; a shader
that declares something else (a binding missing or extra, another address space, access mode
or element type, a uniform member at another offset or of another size) fails there or, worse,
reads the wrong bytes. This finds it statically, naming the binding or the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from wgslgen.check.wgsl_reader import Module, strip_comments
from wgslgen.errors import WgslgenError
from wgslgen.spec.interface import Binding, Interface, UniformLayout

__all__ = ["declares_only", "interface_mismatches"]

Declared = dict[tuple[int, int], tuple[str, str, Any]]  # (group, binding) -> space, name, type


def interface_mismatches(
    source: str, interface: Interface, overrides: Mapping[str, float] | None = None
) -> list[str]:
    """How the shader's bindings and uniform differ from ``interface`` ([] when they agree)."""
    if interface.uniform is None and not interface.bindings:
        return []
    try:
        mod = Module(_declarations_only(source), overrides)
        declared: Declared = {}
        for space, name, typ, attrs, _ in mod.vars:
            if "group" in attrs and "binding" in attrs:
                where = (mod.evaluate(*attrs["group"]), mod.evaluate(*attrs["binding"]))
                declared[where] = (space, name, typ)
        out = _uniform(mod, declared, interface.uniform) if interface.uniform else []
        for b in interface.bindings:
            out += _binding(mod, declared, b)
    except WgslgenError as e:
        return [f"cannot compare with kernel.toml: {str(e).splitlines()[0]}"]
    known = {(b.group, b.binding) for b in interface.bindings}
    if interface.uniform is not None:
        known.add((interface.uniform.group, interface.uniform.binding))
    for (group, number), (_, name, _) in sorted(declared.items()):
        if (group, number) not in known:
            out.append(f"`{name}` at @group({group}) @binding({number}) is not in kernel.toml")
    return out


_BINDING_ATTRIBUTE = re.compile(r"@\s*binding\s*\(")


def declares_only(source: str, interface: Interface) -> bool:
    """Whether ``source`` declares exactly ``interface``: it holds the declarations text that
    `{{ interface }}` renders, and no other binding beside it (then no check is needed)."""
    declarations = interface.declarations()
    if declarations not in source:
        return False
    return not _BINDING_ATTRIBUTE.search(strip_comments(source.replace(declarations, "", 1)))


# Without a leading \b: Python's re then scans at C speed (the word start is checked below).
_BRACE_OR_FN = re.compile(r"[{}]|fn\b")


def _declarations_only(source: str) -> str:
    """``source`` with every function body emptied: the module-scope declarations, which are
    all this check reads, at a fraction of the reading cost of a kernel's whole text."""
    text = strip_comments(source)
    out, depth, pos, in_fn, body = [], 0, 0, False, -1
    for m in _BRACE_OR_FN.finditer(text):
        token = m.group()
        if token == "fn":
            before = text[m.start() - 1 : m.start()]
            in_fn = in_fn or (depth == 0 and not (before.isalnum() or before == "_"))
        elif token == "{":
            if depth == 0 and in_fn:
                body = m.end()
            depth += 1
        else:
            depth -= 1
            if depth == 0 and body >= 0:
                out.append(text[pos:body])
                pos, body, in_fn = m.start(), -1, False
    return "".join([*out, text[pos:]])


def _at(group: int, binding: int) -> str:
    return f"@group({group}) @binding({binding})"


def _binding(mod: Module, declared: Declared, b: Binding) -> list[str]:
    where = _at(b.group, b.binding)
    got = declared.get((b.group, b.binding))
    if got is None:
        return [f"binding `{b.name}` ({where}) is not declared in the shader"]
    space, name, typ = got
    out = []
    if name != b.name:
        out.append(f"{where} is `{name}` in the shader, `{b.name}` in kernel.toml")
    if space != "storage":
        return [*out, f"binding `{b.name}` ({where}) is var<{space}>, not a storage buffer"]
    access = mod.access.get(name, "read")
    if access != b.access:
        out.append(
            f"binding `{b.name}` ({where}) is {access} in the shader, {b.access} in kernel.toml"
        )
    element = _element(mod, typ)
    atomic_ok = element == "atomic" and b.encoding.wgsl_element in ("u32", "i32")
    if element != b.encoding.wgsl_element and not atomic_ok:
        shown = element or "not an array of scalars or vectors"
        out.append(
            f"binding `{b.name}` ({where}) holds {shown} in the shader, "
            f"{b.encoding.wgsl_element} (encoding {b.encoding.name}) in kernel.toml"
        )
    return out


def _element(mod: Module, typ: Any) -> str | None:
    """The scalar type an array's elements are made of (vecN<T> and atomic<T> count as T)."""
    while typ and typ[0] == "named" and typ[1] in mod.aliases:
        typ = mod.aliases[typ[1]]
    if not typ or typ[0] != "array":
        return None
    elem = typ[1]
    while elem and elem[0] == "named" and elem[1] in mod.aliases:
        elem = mod.aliases[elem[1]]
    if elem == ("atomic",):  # the reader keeps no element type for atomics
        return "atomic"
    if elem and elem[0] == "vec":
        elem = elem[-1]
    return elem[1] if elem and elem[0] == "scalar" else None


def _uniform(mod: Module, declared: Declared, u: UniformLayout) -> list[str]:
    where = _at(u.group, u.binding)
    got = declared.get((u.group, u.binding))
    if got is None:
        return [f"the uniform `{u.var_name}` ({where}) is not declared in the shader"]
    space, name, typ = got
    if space != "uniform":
        return [f"{where} is var<{space}> `{name}` in the shader, the uniform in kernel.toml"]
    if not typ or typ[0] != "named" or typ[1] not in mod.structs:
        return [f"the uniform `{name}` ({where}) is not a struct in the shader"]
    fields = _struct_fields(mod, typ[1])
    out = []
    for f in u.fields:
        if f.padding:
            continue
        if f.name not in fields:
            out.append(f"uniform field `{f.name}` is not in the shader's struct {typ[1]}")
            continue
        offset, size, type_ = fields[f.name]
        if (offset, size, type_) != (f.offset, f.size, f.type):
            out.append(
                f"uniform field `{f.name}`: {type_} at offset {offset} ({size} B) in the shader, "
                f"{f.type} at offset {f.offset} ({f.size} B) in kernel.toml"
            )
    declared_names = {f.name for f in u.fields}
    for extra in fields:
        if extra not in declared_names and not extra.startswith("_"):
            out.append(f"uniform field `{extra}` of the shader is not in kernel.toml")
    size = mod.layout(typ)[1]
    if size > u.size:
        out.append(f"the uniform struct is {size} B in the shader, {u.size} B in kernel.toml")
    return out


def _struct_fields(mod: Module, struct: str) -> dict[str, tuple[int, int, str]]:
    """Each member's offset, size and type text (as WGSL lays the struct out)."""
    out, offset = {}, 0
    names = list(mod.member_attrs.get(struct, {}))
    for name, (typ, attrs) in zip(names, mod.structs[struct], strict=True):
        align, size = mod.layout(typ)
        align = mod.evaluate(*attrs["align"]) if "align" in attrs else align
        size = mod.evaluate(*attrs["size"]) if "size" in attrs else size
        offset = (offset + align - 1) // align * align
        out[name] = (offset, size, typ[1] if typ[0] == "scalar" else _type_text(typ))
        offset += size
    return out


def _type_text(typ: Any) -> str:
    kind = typ[0]
    if kind == "vec":
        return f"vec{typ[1]}<{_type_text(typ[2])}>"
    return typ[1] if kind in ("scalar", "named", "opaque") else kind
