"""Bad kernel folders get one clear error naming the file, line or key (golden texts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wgslgen.errors import WgslgenError
from wgslgen.render.build import apply_overrides, parse_overrides
from wgslgen.render.renderer import render_families
from wgslgen.spec.loader import discover

from .conftest import BROKEN_KERNELS, GOOD_KERNELS, TEMPLATES

CASES = sorted(p.name for p in BROKEN_KERNELS.iterdir() if p.is_dir())


def _load_and_render(folder: Path) -> None:
    for spec in discover([folder]):
        for variant in spec.variants:
            render_families(variant)


@pytest.mark.parametrize("case", CASES)
def test_broken_kernel_reports_expected_error(case: str) -> None:
    folder = BROKEN_KERNELS / case
    expected = (folder / "expected_error.txt").read_text().strip()
    with pytest.raises(WgslgenError) as info:
        _load_and_render(folder)
    message = str(info.value).replace(str(folder.resolve()), "{dir}").replace(str(folder), "{dir}")
    assert message == expected


def test_every_broken_case_has_a_golden_text() -> None:
    assert len(CASES) >= 9
    for case in CASES:
        assert (BROKEN_KERNELS / case / "expected_error.txt").is_file(), case


def test_unknown_axis_in_set_lists_valid_axes() -> None:
    spec = discover([GOOD_KERNELS / "scale"])[0]
    valid = r"valid axes: workgroup_size \(wg\), storage \(s\)"
    with pytest.raises(WgslgenError, match=rf"unknown axis 'dtype'.*{valid}"):
        apply_overrides(spec, parse_overrides(["dtype=f16"]))


def test_set_value_not_in_axis_lists_values() -> None:
    spec = discover([GOOD_KERNELS / "scale"])[0]
    with pytest.raises(WgslgenError, match="has no value '48'; values: 32, 64, 128"):
        apply_overrides(spec, {"wg": "48"})


def test_set_selects_matching_variants_by_name_or_key() -> None:
    spec = discover([GOOD_KERNELS / "scale"])[0]
    chosen = apply_overrides(spec, {"wg": "64", "storage": "f16"})
    assert [v.name for v in chosen] == ["scale__wg64_sf16"]


def test_constraints_remove_combinations() -> None:
    spec = discover([GOOD_KERNELS / "scale"])[0]
    names = [v.name for v in spec.variants]
    assert "scale__wg128_sf16" not in names
    assert len(names) == 5


def test_precondition_failure_names_the_precondition() -> None:
    spec = discover([GOOD_KERNELS / "scale"])[0]
    with pytest.raises(WgslgenError, match=r"precondition 'n >= 1' fails for n=0"):
        spec.baseline.problem_scope({"n": 0})


def test_plain_wgsl_file_is_a_kernel_without_axes() -> None:
    spec = discover([GOOD_KERNELS / "seed.wgsl"])[0]
    assert spec.plain and spec.axes == ()
    assert [v.name for v in spec.variants] == ["seed"]
    assert spec.entry_point == "main"


# --- kernel.toml as declared models: error texts, the shipped JSON Schema ---------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"axis": [{"name": "wg", "values": [1]}]}, "axis[0] lacks 'key'"),
        ({"axis": [{"name": "a", "key": "a", "values": [1, 1]}]}, "axis[0] (a): values repeat"),
        (
            {"axis": [{"name": "a", "key": "a", "values": [1], "baseline": 2}]},
            "axis[0] (a): baseline 2 is not in values",
        ),
        ({"axis": [{"name": "a", "key": "a", "values": ["x/y"]}]}, "is not file-name safe"),
        ({"binding": [{"name": "x", "type": "f32", "count": "n", "access": "w"}]}, "access"),
        (
            {"binding": [{"name": "x", "type": "f32", "count": "n", "scratch": True}]},
            "binding[0] (x): scratch = true needs access = read_write",
        ),
        ({"uniform": {"pad_to": "16"}}, "[uniform].pad_to: must be an integer, got '16'"),
        ({"test": {"shapes": [{"n": "big"}]}}, "[test].shapes[0].n 'big' must be a number"),
        ({"test": {"tolerance": [{"rtol": 1e-3}]}}, "[test].tolerance[0] lacks 'atol'"),
        (
            {"test": {"tolerance": [{"rtol": 1, "atol": 1, "wen": "x"}]}},
            "unknown key(s) wen in [test].tolerance[0]; valid: atol, rtol, when",
        ),
        ({"pass": [{"entry_point": "a b", "dispatch": ["1"]}]}, "pass[0].entry_point must be"),
        ({"kernel": [1]}, "[kernel]: must be a table, got [1]"),
    ],
)
def test_schema_names_the_key_at_fault(change: dict, expected: str) -> None:
    from wgslgen.spec.schema_errors import parse

    with pytest.raises(WgslgenError) as info:
        parse(change, Path("k/kernel.toml"))
    assert str(info.value).startswith("k/kernel.toml: ")
    assert expected in str(info.value)


def test_shipped_json_schema_is_up_to_date() -> None:
    from wgslgen.spec.schema_export import SCHEMA_PATH, schema_text

    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "run `python -m wgslgen.spec.schema_export`"
    )


def test_every_kernel_toml_validates_against_the_json_schema() -> None:
    import tomllib

    import jsonschema

    from wgslgen.spec.schema_export import json_schema

    validator = jsonschema.Draft202012Validator(json_schema())
    tomls = sorted(TEMPLATES.glob("*/kernel.toml")) + sorted(GOOD_KERNELS.rglob("kernel.toml"))
    assert len(tomls) >= 7
    for path in tomls:
        errors = list(validator.iter_errors(tomllib.loads(path.read_text(encoding="utf-8"))))
        assert not errors, f"{path}: {errors[0].message}"
    # ... and the schema refuses what the loader refuses (it is not just `{}`).
    bad = tomllib.loads((BROKEN_KERNELS / "unknown_key" / "scale" / "kernel.toml").read_text())
    assert list(validator.iter_errors(bad))


def test_kernel_format_doc_is_generated_from_the_models() -> None:
    from wgslgen.spec.schema_export import DOCS_PATH, regenerated_docs

    text = DOCS_PATH.read_text(encoding="utf-8")
    assert regenerated_docs(text) == text, "run `python -m wgslgen.spec.schema_export`"


def test_kernel_format_doc_names_every_key_the_loader_accepts() -> None:
    import re

    from wgslgen.spec.schema import tables
    from wgslgen.spec.schema_export import DOCS_PATH

    documented: dict[str, set[str]] = {}
    section = None
    for line in DOCS_PATH.read_text(encoding="utf-8").splitlines():
        if m := re.match(r"### (top level|\[\[?([\w.]+)\]?\])$", line):
            section = "" if m.group(1) == "top level" else m.group(2)
            documented[section] = set()
        elif section is not None and (m := re.match(r"\| `(\w+)` \|", line)):
            documented[section].add(m.group(1))
    accepted = {
        name: {f.alias or key for key, f in model.model_fields.items()}
        for name, model in tables().items()
    }
    assert documented == accepted


def test_kernel_format_doc_covers_every_lib_macro() -> None:
    import re

    from wgslgen.spec.schema_export import BODY_SUFFIX, DOCS_PATH

    text = DOCS_PATH.read_text(encoding="utf-8")
    macros = [
        m.group(1)
        for path in sorted((TEMPLATES / "_lib").glob("*.j2"))
        if not path.name.endswith(BODY_SUFFIX)
        for m in re.finditer(r"\{%-?\s*macro\s+(\w+)\(", path.read_text(encoding="utf-8"))
    ]
    assert len(macros) >= 10
    missing = [m for m in macros if f"**`{m}(" not in text]
    assert not missing


# --- a typo in a real kernel.toml: the line it is on, and what was meant ----------------------


def _scale_with(tmp_path: Path, old: str, new: str, file: str = "kernel.toml") -> Path:
    import shutil

    folder = tmp_path / "scale"
    shutil.copytree(GOOD_KERNELS / "scale", folder)
    text = (folder / file).read_text()
    assert old in text
    (folder / file).write_text(text.replace(old, new, 1))
    return folder


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # the second axis's typo: its line and its index
        ('key = "s"', 'key = "s"\nbasline = "f32"', ":16: unknown key(s) basline in axis[1]; "
         "valid:"),
        ("baseline = 64", 'baseline = "64"', ":11: axis[0] (workgroup_size): baseline '64' is not "
         "in values: write it as values do"),
        ("values = [32, 64, 128]", 'values = [32, "64", 128]', ":10: axis[0] (workgroup_size): "
         "values mix numbers and quoted numbers ('64'): write 64 without quotes"),
        ('type = "storage"', 'type = "f64"', ":25: binding[0].type 'f64' is not a type: use f32, "),
        ("pad_to = 16", 'pad_to = "16"', ":21: [uniform].pad_to: must be an integer"),
    ],
)  # fmt: skip
def test_kernel_toml_errors_name_the_line(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    folder = _scale_with(tmp_path, old, new)
    with pytest.raises(WgslgenError) as info:
        discover([folder])
    assert str(info.value).startswith(f"{folder / 'kernel.toml'}{expected}"), str(info.value)


def test_a_misspelled_import_names_the_template_line(tmp_path: Path) -> None:
    folder = _scale_with(tmp_path, "", '{% import "_lib/reduc.wgsl.j2" as r %}\n', "scale.wgsl.j2")
    with pytest.raises(WgslgenError) as info:
        _load_and_render(folder)
    assert str(info.value) == (
        f"{folder / 'scale.wgsl.j2'}:1: template '_lib/reduc.wgsl.j2' not found"
    )


def test_a_derived_value_may_not_replace_a_size_nor_a_binding_name_repeat(tmp_path) -> None:
    # A derived `cols` silently replaced the caller's cols (reports named a shape never run);
    # two bindings named `x` failed only later, as a compile error per variant.
    import shutil

    from wgslgen.spec.loader import load_kernel

    from .conftest import GOOD_KERNELS

    kernel = tmp_path / "scale"
    shutil.copytree(GOOD_KERNELS / "scale", kernel)
    toml = kernel / "kernel.toml"
    original = toml.read_text()
    toml.write_text(original.replace('derived = { alpha = "2.0" }', 'derived = { n = "n * 2" }'))
    line = toml.read_text().splitlines().index('derived = { n = "n * 2" }') + 1
    with pytest.raises(
        WgslgenError,
        match=rf"kernel.toml:{line}: \[problem\]\.derived\.n: 'n' is already a problem size",
    ):
        load_kernel(kernel)
    toml.write_text(original.replace('name = "y"', 'name = "x"', 1))
    with pytest.raises(
        WgslgenError, match=r"kernel.toml:\d+: binding\[1\]\.name 'x' names two bindings"
    ):
        load_kernel(kernel)


@pytest.mark.parametrize(
    ("size", "op", "message"),
    [
        ("96", "'sum'", "block_reduce: size 96 is not a power of two"),
        ("64", "'min'", "block_reduce: op must be 'sum' or 'max', not min"),
    ],
)
def test_block_reduce_refuses_what_it_would_render_wrong(
    tmp_path, capsys, size: str, op: str, message: str
) -> None:
    # It rendered a wrong tree for 96 threads and a sum for 'min', with no error at all.
    import shutil

    from wgslgen.cli import main

    from .conftest import GOOD_KERNELS

    kernel = tmp_path / "kernels" / "scale"
    shutil.copytree(GOOD_KERNELS / "scale", kernel)
    template = kernel / "scale.wgsl.j2"
    call = (
        '{% import "_lib/reduce.wgsl.j2" as red %}\n'
        f"var<workgroup> buf: array<f32, {size}>;\n"
        f"{{{{ red.block_reduce('total', 'buf', {size}, {op}) }}}}\n"
    )
    template.write_text(call + template.read_text())
    out = tmp_path / "gen"
    argv = ["build", "--no-validate", "--templates", str(kernel.parent), "--out", str(out)]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_a_uniform_field_of_no_size_is_named_with_its_line(tmp_path: Path) -> None:
    import shutil

    from tests.conftest import GOOD_KERNELS
    from wgslgen.spec.loader import load_kernel

    folder = tmp_path / "scale"
    shutil.copytree(GOOD_KERNELS / "scale", folder)
    toml = folder / "kernel.toml"
    text = toml.read_text()
    toml.write_text(text.replace('["alpha", "f32"]]', '["alpha", "f32"], ["temperature", "f32"]]'))
    line = 1 + text[: text.index("fields = [")].count("\n")
    with pytest.raises(WgslgenError) as info:
        load_kernel(folder)
    assert str(info.value).startswith(f"{toml}:{line}: ")
    assert "uniform field 'temperature' is neither a problem size nor derived" in str(info.value)
