"""The code's shape: small modules and functions, and core errors that do not speak CLI."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from .conftest import ROOT

PACKAGE = ROOT / "wgslgen"
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
_ERRORS = {"WgslgenError", "ShapeError", "PreconditionError", "WorkerFailure"}
_FLAG = re.compile(r"(?<![\w-])--[a-z]")


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_the_package_has_modules_to_check() -> None:
    assert len(MODULES) > 40 and PACKAGE / "cli" / "__init__.py" in MODULES


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_module_over_400_lines(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_MODULE_LINES, f"{_name(path)} has {lines} lines: split its concerns"


def _long_functions(tree: ast.AST) -> list[str]:
    return [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_function_over_60_lines(path: Path) -> None:
    assert not _long_functions(ast.parse(path.read_text(encoding="utf-8")))


def _flags_in_errors(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        func = getattr(node, "func", None)
        called = getattr(func, "id", None) or getattr(func, "attr", None)
        if not isinstance(node, ast.Call) or called not in _ERRORS:
            continue
        for sub in ast.walk(node):
            if (
                isinstance(sub, ast.Constant)
                and isinstance(sub.value, str)
                and _FLAG.search(sub.value)
            ):
                found.append(f"line {sub.lineno}: {sub.value.strip()[:60]!r}")
    return found


@pytest.mark.parametrize("path", [p for p in MODULES if "cli" not in p.parts], ids=_name)
def test_core_errors_do_not_name_command_line_flags(path: Path) -> None:
    """The CLI adds the flag from ``WgslgenError.option``; the API's callers have none."""
    assert not _flags_in_errors(ast.parse(path.read_text(encoding="utf-8")))


def test_the_checks_catch_what_they_look_for() -> None:
    bad = "def f():\n" + "    x = 1\n" * 70 + "    raise WgslgenError('--out is wrong')\n"
    tree = ast.parse(bad)
    assert _long_functions(tree) == ["f (72 lines)"]
    assert _flags_in_errors(tree) == ["line 72: '--out is wrong'"]


@pytest.mark.parametrize("package", ["spec", "render", "check", "run", "tune", "vendor"])
def test_each_stage_package_exports_a_documented_api(package: str) -> None:
    import importlib

    module = importlib.import_module(f"wgslgen.{package}")
    assert module.__doc__ and module.__all__
    for name in module.__all__:
        obj = getattr(module, name)
        if callable(obj):
            assert obj.__doc__, f"wgslgen.{package}.{name} has no docstring"
