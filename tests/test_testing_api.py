"""wgslgen.testing: asserting in a user's own pytest suite that kernels pass, without the CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from wgslgen.errors import WgslgenError
from wgslgen.testing import Report, assert_kernel_passes, check_kernel

from .conftest import GOOD_KERNELS, SEED, TEMPLATES

DQ = "attention_bwd_dq"
SMALL = {"workgroup_size": 64, "storage": "pf16", "wmem": "f32"}


@pytest.fixture(scope="module", autouse=True)
def _needs_cpu_adapter() -> None:
    from wgslgen.run.device import choose_adapter

    choose_adapter("cpu")  # scripts/setup.sh installs lavapipe: its absence is a failure


def test_check_kernel_returns_a_report() -> None:
    report = check_kernel(
        DQ, shapes=["head_dim=6,n_heads=2,n_kv_heads=1,history_len=9"], adapter="cpu", only=SMALL
    )
    assert isinstance(report, Report) and report.ok
    assert {r.variant for r in report.results} == {
        f"{DQ}__wg64_mh{mh}_spf16_wf32" for mh in (1024, 2048, 4096)
    }
    assert "llvmpipe" in report.adapter and report.profile == "adapter"


def test_a_users_own_kernel_folder_passes() -> None:
    report = assert_kernel_passes("scale", templates=[GOOD_KERNELS / "scale"], adapter="cpu")
    assert report.counts() == {"pass": 5 * 2}  # 5 variants × 2 test shapes


def test_a_plain_wgsl_file_can_borrow_a_reference() -> None:
    report = assert_kernel_passes(
        "seed",
        templates=[SEED],
        adapter="cpu",
        reference=DQ,
        shapes=[{"head_dim": 16, "n_heads": 4, "n_kv_heads": 2, "history_len": 100}],
    )
    assert [r.status for r in report.results] == ["pass"]


def test_assert_kernel_passes_raises_with_the_table_of_failures(tmp_path: Path) -> None:
    folder = tmp_path / DQ
    shutil.copytree(TEMPLATES / DQ, folder)
    template = folder / f"{DQ}.wgsl.j2"
    template.write_text(
        template.read_text().replace("d_q[q_off + d] = acc;", "d_q[q_off + d] = acc * 1.01;")
    )
    with pytest.raises(AssertionError) as info:
        assert_kernel_passes(
            DQ,
            templates=[folder],
            adapter="cpu",
            only=SMALL,
            shapes=["head_dim=8,n_heads=2,n_kv_heads=2,history_len=5"],
        )
    text = str(info.value)
    assert f"kernel {DQ} does not pass" in text
    assert f"FAIL     {DQ}__wg64_mh1024_spf16_wf32 @ head_dim=8" in text
    assert "d_q:" in text and "max rel" in text


def test_a_run_that_tests_nothing_does_not_pass() -> None:
    with pytest.raises(AssertionError, match="no interface"):
        assert_kernel_passes("seed", templates=[SEED], adapter="cpu")


def test_an_unknown_kernel_is_an_error() -> None:
    with pytest.raises(WgslgenError, match="unknown kernel"):
        check_kernel("no_such_kernel", adapter="cpu")


def test_templates_default_to_the_projects_as_the_cli_does(tmp_path: Path, monkeypatch) -> None:
    """Inside a project (wgslgen.toml naming its kernel folder, the bundled library off), a
    kernel of the project is found without templates=, from a subfolder too."""
    shutil.copytree(GOOD_KERNELS / "scale", tmp_path / "kernels" / "scale")
    (tmp_path / "wgslgen.toml").write_text('templates = ["kernels"]\nbundled = false\n')
    (tmp_path / "tests").mkdir()
    monkeypatch.chdir(tmp_path / "tests")
    report = assert_kernel_passes("scale", adapter="cpu", only={"storage": "f32"})
    assert report.ok and report.results
    with pytest.raises(WgslgenError, match="unknown kernel"):  # bundled = false
        check_kernel(DQ, adapter="cpu")


def test_api_edges_a_pytest_suite_meets(tmp_path: Path) -> None:
    """One folder as a str or Path; a timeout that is not seconds; a broken kernel beside the
    one asked for; a run where every case is n/a says why (API audit)."""
    folder = tmp_path / "kernels"
    shutil.copytree(GOOD_KERNELS / "scale", folder / "scale")
    only = {"storage": "f32", "workgroup_size": 64}
    for one in (str(folder), folder):  # a str was read letter by letter ("k: no such folder")
        assert check_kernel("scale", templates=one, adapter="cpu", only=only).ok
    with pytest.raises(WgslgenError, match="timeout must be a positive number of seconds"):
        check_kernel("scale", templates=[folder], adapter="cpu", timeout="10s")  # type: ignore[arg-type]
    shutil.copytree(GOOD_KERNELS / "scale", folder / "other")
    toml = folder / "other" / "kernel.toml"
    toml.write_text(
        toml.read_text().replace('name = "scale"', 'name = "other"').replace("values", "valuse", 1)
    )
    assert check_kernel("scale", templates=[folder], adapter="cpu", only=only).ok  # as the CLI
    with pytest.raises(AssertionError) as info:  # every case n/a: the precondition is named
        assert_kernel_passes("scale", [folder], [{"n": 0}], "cpu", only=only)
    assert "N/A" in str(info.value) and "precondition" in str(info.value), str(info.value)
