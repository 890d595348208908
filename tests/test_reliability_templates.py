"""Templates read nothing outside their kernel folder, and hostile templates or expressions
end within seconds with a named error."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from wgslgen.cli import main
from wgslgen.render import template_loader

from .conftest import GOOD_KERNELS

SECRET = "TOP-SECRET-KEY-4711"


def _build(*args: str) -> int:
    return main(["build", "--no-validate", *args])


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    """A private copy of the `scale` kernel inside a templates set, a secret beside it."""
    root = tmp_path / "kern"
    shutil.copytree(GOOD_KERNELS / "scale", root / "scale")
    (root / "secret.txt").write_text(SECRET)
    (tmp_path / "outside.txt").write_text(SECRET)
    return root / "scale"


def _template(kernel: Path, body: str) -> None:
    path = kernel / "scale.wgsl.j2"
    path.write_text(body + "\n" + path.read_text())


def _run(kernel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    out = tmp_path / "gen"
    code = _build("--templates", str(kernel.parent), "--out", str(out))
    captured = capsys.readouterr()
    written = "".join(p.read_text() for p in out.rglob("*.wgsl")) if out.exists() else ""
    assert SECRET not in written + captured.out
    return code, captured.err


@pytest.mark.parametrize(
    "include",
    ["secret.txt", "../secret.txt", "../../outside.txt", "scale/../../secret.txt"],
)
def test_names_outside_the_kernel_folder_are_not_found(
    kernel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], include: str
) -> None:
    _template(kernel, f'// {{% include "{include}" %}}')
    code, err = _run(kernel, tmp_path, capsys)
    assert code == 2
    assert "not found" in err
    assert not (tmp_path / "gen").exists()


def test_a_symlink_out_of_the_kernel_folder_is_refused(
    kernel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (kernel / "root").symlink_to("/")
    (kernel / "up").symlink_to(tmp_path)
    for include in ("root/etc/passwd", "up/outside.txt"):
        _template(kernel, f'// {{% include "{include}" %}}')
        code, err = _run(kernel, tmp_path, capsys)
        assert code == 2
        assert "outside" in err and "scale.wgsl.j2:1" in err, err
        assert not (tmp_path / "gen").exists()
        (kernel / "scale.wgsl.j2").write_text(
            (GOOD_KERNELS / "scale" / "scale.wgsl.j2").read_text()
        )


def test_a_symlinked_lib_folder_is_not_searched(
    kernel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (kernel.parent / "_lib").symlink_to(tmp_path)
    _template(kernel, '// {% include "_lib/outside.txt" %}')
    code, err = _run(kernel, tmp_path, capsys)
    assert code == 2 and "not found" in err


def test_the_template_is_loaded_by_its_path_in_the_kernel_folder(
    kernel: Path, tmp_path: Path
) -> None:
    (kernel / "v2").mkdir()
    original = (kernel / "scale.wgsl.j2").read_text()
    (kernel / "v2" / "x.wgsl.j2").write_text("// from v2\n" + original)
    (kernel / "x.wgsl.j2").write_text("// from the top folder\n" + original)
    toml = kernel / "kernel.toml"
    toml.write_text(
        toml.read_text().replace(
            'name = "scale"\n', 'name = "scale"\ntemplate = "v2/x.wgsl.j2"\n', 1
        )
    )
    out = tmp_path / "gen"
    assert _build("--templates", str(kernel.parent), "--out", str(out)) == 0
    text = next(out.glob("scale/*.wgsl")).read_text()
    assert "// from v2" in text and "from the top folder" not in text


def _constraint(kernel: Path, expression: str) -> None:
    toml = kernel / "kernel.toml"
    toml.write_text(
        toml.read_text().replace("constraints = [", f"constraints = [{expression!r}, ", 1)
    )


@pytest.mark.parametrize(
    ("expression", "named"),
    [
        ("workgroup_size < 10**(10**10)", "more than 4096 bits"),
        ("workgroup_size < 2**100000", "more than 4096 bits"),
        ("('x' * 10**9) | length > 0", "exceeds"),
        ("workgroup_size * 10**2000 * 10**2000 > 0", "more than 4096 bits"),
        ("('%0999999999d' % 1) | length > 0", "width"),
    ],
)
def test_hostile_expressions_end_fast_with_a_named_error(
    kernel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], expression: str, named: str
) -> None:
    _constraint(kernel, expression)
    started = time.monotonic()
    code = main(["list", "--templates", str(kernel.parent)])
    err = capsys.readouterr().err
    assert time.monotonic() - started < 10
    assert code == 2
    assert named in err and "constraints[0]" in err and "kernel.toml" in err, err


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "s budget",
        ),
        (
            "{% set xs = range(100000) | list %}{% for a in xs %}{% for b in xs %}{% endfor %}"
            "{% endfor %}",
            "s budget",
        ),
        ("{% for i in range(100000) %}{{ 'y' * 4000 }}{% endfor %}", "budget of"),
        ("{{ 'x' * 10**9 }}", "exceeds"),
        ("{{ 2 ** 100000 }}", "bits"),
        # doubling a string or list in a loop: gigabytes long before the time budget ends
        (
            "{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}"
            "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
            "~ would build",
        ),
        (
            "{% set ns = namespace(s=[0]) %}{% for i in range(40) %}"
            "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s | length }}",
            "+ would build",
        ),
        ("{% set s = 'x' * 4000000 %}{{ ([s] * 1000) | join }}", "join would build"),
        ("{{ '{:>999999999}'.format(1) }}", "pads to a width of millions"),
    ],
)
def test_hostile_templates_end_fast_naming_the_template_line(
    kernel: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    body: str,
    named: str,
) -> None:
    monkeypatch.setattr(template_loader, "RENDER_SECONDS", 1.0)
    _template(kernel, "// line 1\n" + body)
    started = time.monotonic()
    code, err = _run(kernel, tmp_path, capsys)
    assert time.monotonic() - started < 10
    assert code == 2
    assert named in err and "scale.wgsl.j2:2" in err, err
    assert not (tmp_path / "gen").exists()


def _huge_space(kernel: Path, values: int, axes: int) -> None:
    toml = kernel / "kernel.toml"
    extra = "".join(
        f'\n[[axis]]\nname = "pad{i}"\nkey = "p{i}"\nvalues = {list(range(values))}\n'
        for i in range(axes)
    )
    text = toml.read_text().replace("\n[uniform]", extra + "\n[uniform]", 1)
    toml.write_text(text)


@pytest.mark.parametrize(
    ("values", "axes", "named"), [(40, 4, "axis combinations"), (4, 2, "variants to render")]
)
def test_a_huge_space_is_counted_and_refused_before_rendering(
    kernel: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    values: int,
    axes: int,
    named: str,
) -> None:
    _huge_space(kernel, values, axes)
    started = time.monotonic()
    out = tmp_path / "gen"
    args = ["--templates", str(kernel.parent), "--out", str(out), "--max-variants", "40"]
    assert _build(*args) == 2
    assert time.monotonic() - started < 10
    err = capsys.readouterr().err
    assert named in err and "--max-variants" in err, err
    assert not out.exists()
    if named == "variants to render":  # a space that fits the raised limit is built
        assert _build(*args[:-1], "1000") == 0


@pytest.mark.parametrize(
    ("body", "at", "opened"),
    [
        # unclosed: Jinja reports where the text ends; the message adds where the block opened
        ("// line 1\n// line 2\n{% if true %}\n// line 4", "Unexpected end of template", 3),
        # a wrong end tag, one block inside another
        ("{% for i in [1] %}\n{% if true %}\n{% endfor %}", "scale.wgsl.j2:3:", 2),
    ],
)
def test_a_syntax_error_names_its_line_and_the_unclosed_block(
    kernel: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    body: str,
    at: str,
    opened: int,
) -> None:
    _template(kernel, body)
    code, err = _run(kernel, tmp_path, capsys)
    assert code == 2
    assert "template syntax error" in err and at in err, err
    assert f"the 'if' opened at line {opened} is not closed" in err, err
    assert "variant" not in err, err  # the text's error, the same for every variant


def test_a_syntax_error_without_a_block_names_only_its_line(
    kernel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _template(kernel, "// line 1\n{{ (1 }}")
    code, err = _run(kernel, tmp_path, capsys)
    assert code == 2 and "scale.wgsl.j2:2: template syntax error" in err, err
    assert "opened at" not in err and "variant" not in err, err
