"""Vendoring once per test session: the repo's kernels + selection, every binding, the cases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from wgslgen.spec.loader import discover
from wgslgen.vendor import conformance, folder
from wgslgen.vendor.plan import VendorPlan, plan_vendor

SELECTION = ROOT / "tuning" / "selection.json"
LANGS = ["py", "rust", "ts"]


def inputs(langs=LANGS, selection: Path | None = SELECTION, templates=()) -> dict:
    """What the CLI records in the manifest for `--check`."""
    return {
        "kernels": [],
        "selection": str(selection) if selection else None,
        "langs": sorted(langs),
        "templates": [str(t) for t in templates],
        "strict": False,
    }


def specs(templates=()):
    """The runnable kernels."""
    return [k for k in discover(list(templates) or None) if k.problem is not None]


def vendor(out: Path, langs=LANGS, selection: Path | None = SELECTION, templates=()) -> VendorPlan:
    """Vendor into ``out`` (and write conformance cases next to it as cases.json)."""
    ks = specs(templates)
    plan = plan_vendor(ks, selection, langs, inputs=inputs(langs, selection, templates))
    folder.write(plan, out)
    return plan


def write_cases(plan: VendorPlan, path: Path) -> dict:
    """The shared conformance cases of a vendored manifest, as JSON at ``path``."""
    cases = conformance.build(plan.manifest, specs())
    path.write_text(json.dumps(cases, sort_keys=True))
    return cases


_SHARED: list[tuple[Path, VendorPlan, dict]] = []


def shared(tmp_path_factory) -> tuple[Path, VendorPlan, dict]:
    """The repo's kernels vendored once per test session with every binding, and the shared
    cases (site/wgk/ and site/cases.json, laid out as the browser page expects)."""
    if not _SHARED:
        site = tmp_path_factory.mktemp("site")
        plan = vendor(site / "wgk")
        _SHARED.append((site / "wgk", plan, write_cases(plan, site / "cases.json")))
    return _SHARED[0]


def run_python_client(out: Path, cwd: Path) -> list[dict]:
    """Run the vendored Python runtime of ``out`` on the cases beside it, in a fresh ``-I``
    interpreter (tests/vendor_clients/python_client.py): its JSON lines, the footer last."""
    script = ROOT / "tests" / "vendor_clients" / "python_client.py"
    proc = subprocess.run(
        [sys.executable, "-I", str(script), str(out), str(out.parent / "cases.json")],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [json.loads(x) for x in proc.stdout.splitlines()]


TSC = ROOT / "node_modules" / ".bin" / "tsc"


def rust_conformance_passes(out: Path, cases: dict, manifest: dict, tmp_path: Path) -> str:
    """Compile the vendored Rust module's conformance test with ``rustc --test`` and run it:
    every shared case must pass, without a compiler warning. Returns the test's source."""
    from tests.vendor_clients import rust_conformance

    src = tmp_path / "conformance_test.rs"
    src.write_text(rust_conformance.generate(out, cases, manifest, "wgslgen_kernels.rs"))
    rust_tests_pass(src, 3)
    return src.read_text()


def rust_tests_pass(src: Path, tests: int) -> None:
    """``rustc --test`` of ``src``, without a compiler warning, and all ``tests`` pass."""
    import shutil

    rustc = shutil.which("rustc")
    assert rustc, "rustc is needed for the Rust binding's tests"
    exe = src.with_suffix("")
    build = subprocess.run(
        [rustc, "--edition", "2021", "--test", "-O", str(src), "-o", str(exe)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-4000:]
    assert "warning" not in build.stderr, build.stderr[-2000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert f"{tests} passed" in run.stdout


def ts_module_typechecks(module: Path) -> None:
    """``tsc --strict`` on a vendored TypeScript module, against @webgpu/types."""
    proc = subprocess.run(
        [str(TSC), "--noEmit", "--strict", "--target", "ES2022", "--module", "ES2022",
         "--skipLibCheck", "--types", "@webgpu/types", "--typeRoots", str(ROOT / "node_modules"),
         str(module)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
