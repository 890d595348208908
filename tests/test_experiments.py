"""benchmarks/experiments/: run.sh prepares an experiment's two sides from its diff and names
what is wrong, compare.py reads its results (timings and registers of both sides), and
gpu_env.sh, which sets a GPU machine up for one, fails with a clear line."""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys

import pytest

from .conftest import ROOT

COMPARE = ROOT / "benchmarks" / "experiments" / "compare.py"


def _breakdown(path, variant: str, shape: str, warm: float, cold: float) -> None:
    """A pass_breakdown.py --json file with one row (and an ablation row to be ignored)."""
    times = {"all": {"warm": warm, "cold": cold}, "partials": {"warm": 1.0, "cold": 1.0}}
    rows = [
        {"variant": variant, "shape": shape, "ablation": "as is", "times_us": times},
        {"variant": variant, "shape": shape, "ablation": "empty", "times_us": times | {
            "all": {"warm": 0.1, "cold": 0.1}}},
    ]  # fmt: skip
    path.write_text(json.dumps(rows))


def test_compare_puts_both_sides_and_the_changed_only_variants_side_by_side(tmp_path) -> None:
    shape = "256,8,4,4096"
    _breakdown(tmp_path / "library_a.json", "a", shape, 12.0, 15.0)
    _breakdown(tmp_path / "library_b.json", "b", shape, 13.0, 14.0)
    _breakdown(tmp_path / "changed_a.json", "a", shape, 11.0, 15.5)
    _breakdown(tmp_path / "changed_u8.json", "u8", shape, 10.0, 13.0)
    out = tmp_path / "compare.json"
    done = subprocess.run(
        [sys.executable, str(COMPARE), str(tmp_path), "--json", str(out)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())["times"][shape]
    assert [r["variant"] for r in rows] == ["a", "u8"]  # both sides first
    assert rows[0]["delta"] == [-1.0, 0.5]
    # a variant only the change has is held against the fastest library variant there
    assert rows[1]["best_library"] == "a" and rows[1]["delta"] == [-2.0, -2.0]
    assert "Δ  -1.0 /  +0.5" in done.stdout


def _stats(path, registers: dict[str, tuple[int, int]]) -> None:
    """A pipeline_stats.py --json file: {variant: (registers, NVIDIA's local memory field)}."""
    rows = [
        {"file": f"k__{v}", "entry": "partials", "error": None, "executables": [{"statistics": {
            "Register Count": r, "Local Memory Size": local, "Binary Size": 1}}]}
        for v, (r, local) in registers.items()
    ]  # fmt: skip
    path.write_text(json.dumps({"device": "x", "results": rows}))


def test_compare_lists_the_entry_points_whose_registers_or_spills_changed(tmp_path) -> None:
    _breakdown(tmp_path / "library_a.json", "a", "1,1,1,1", 12.0, 15.0)
    _breakdown(tmp_path / "changed_a.json", "a", "1,1,1,1", 11.0, 15.5)
    none, spill16 = 2**36, 2**36 + 16  # how NVIDIA's driver reports 0 and 16 bytes
    _stats(tmp_path / "stats_library.json", {"a": (80, none), "b": (64, spill16), "c": (40, none)})
    _stats(tmp_path / "stats_changed.json", {"a": (48, none), "b": (64, none), "c": (40, none)})
    out = tmp_path / "compare.json"
    done = subprocess.run(
        [sys.executable, str(COMPARE), str(tmp_path), "--json", str(out)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    changes = json.loads(out.read_text())["registers"]
    assert [(r["variant"], r["library"], r["changed"]) for r in changes] == [
        ("a", [80, 0], [48, 0]),
        ("b", [64, 16], [64, 0]),
    ]  # c is unchanged: not listed
    (tmp_path / "stats_changed.json").write_text("{}")
    done = subprocess.run(
        [sys.executable, str(COMPARE), str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode != 0 and "stats_changed.json: not a pipeline_stats.py" in done.stderr


def test_compare_names_a_file_it_cannot_read(tmp_path) -> None:
    (tmp_path / "changed_x.json").write_text("[{")
    done = subprocess.run(
        [sys.executable, str(COMPARE), str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "changed_x.json: not a pass_breakdown.py --json file" in done.stderr


def test_gpu_env_install_names_what_is_missing_and_must_be_sourced(tmp_path) -> None:
    script = ROOT / "benchmarks" / "gpu_env.sh"
    # sourced in a folder without the carried .gl/ and .whl/: one line saying what to do
    done = subprocess.run(
        ["bash", "-c", f"source {script} install"], cwd=tmp_path, capture_output=True, text=True
    )
    assert (
        done.returncode == 1 and "gpu_env.sh fetch" in done.stderr and "carry both" in done.stderr
    )
    # run rather than sourced, its exports would be lost: refused
    done = subprocess.run([str(script), "install"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1 and "source it" in done.stderr
    done = subprocess.run([str(script)], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1 and "usage:" in done.stderr


RUN = ROOT / "benchmarks" / "experiments" / "run.sh"
# A change to the forward template that every variant renders (a WGSL comment).
_DIFF = """--- a/templates/attention_split/attention_split.wgsl.j2
+++ b/templates/attention_split/attention_split.wgsl.j2
@@ -1,2 +1,3 @@
 {% import "_lib/softmax.wgsl.j2" as sm %}
+// the experiment's mark
 {% import "_lib/vec.wgsl.j2" as vec %}
"""


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(RUN), *args], capture_output=True, text=True, timeout=600,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_experiment_runner_prepares_both_sides_from_the_diff(tmp_path) -> None:
    exp = tmp_path / "mark"
    exp.mkdir()
    (exp / "change.diff").write_text(_DIFF)
    proc = _run("prepare", str(exp), "forward", env={"SPV_ROOT": str(tmp_path / "spv")})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    prepared = tmp_path / "spv" / "mark"
    changed = (prepared / "templates/attention_split/attention_split.wgsl.j2").read_text()
    assert "// the experiment's mark" in changed
    library = (ROOT / "templates/attention_split/attention_split.wgsl.j2").read_text()
    assert "// the experiment's mark" not in library
    for side in ("library", "changed"):
        spv = sorted((prepared / side / "attention_split").glob("*.spv"))
        assert spv and all("_e3_" in p.name and "wg256" in p.name for p in spv)
    # Prepared again, for the other family: both families' SPIR-V are kept (one device call
    # runs both); a folder it did not write is left alone.
    proc = _run("prepare", str(exp), "bwd_dq", env={"SPV_ROOT": str(tmp_path / "spv")})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    for side in ("library", "changed"):
        for kernel in ("attention_split", "attention_bwd_dq_split"):
            assert sorted((prepared / side / kernel).glob("*.spv")), (side, kernel)
    # bwd_dq_out has no `early` axis. Only the timed variants' SPIR-V is kept (a device call
    # carries 64 MiB in all); one whose naga and Tint texts differ (built as <name>.naga.wgsl
    # and <name>.tint.wgsl) has its SPIR-V, from the naga text, as <name>.spv.
    out = "attention_bwd_dq_split_out"
    timed = ["wg256_ch64_g2_u2_sf16_hd256", "wg256_ch128_g2_u4_sf16_hd128_sg2"]
    assert (ROOT / "generated" / out / f"{out}__{timed[1]}.naga.wgsl").is_file()
    env = {"SPV_ROOT": str(tmp_path / "spv"), "VARIANTS": " ".join(timed)}
    proc = _run("prepare", str(exp), "bwd_dq_out", env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    for side in ("library", "changed"):
        spv = sorted((prepared / side / out).glob("*.spv"))
        assert [p.stem for p in spv] == sorted(f"{out}__{v}" for v in timed), side
    # A timed wg128 variant: that workgroup size is transpiled too (pipeline_stats sizes it),
    # and prepared again, the folder holds this call's variants only
    env = {"SPV_ROOT": str(tmp_path / "spv"), "VARIANTS": "wg128_ch64_g2_u2_sf32_hd128"}
    proc = _run("prepare", str(exp), "bwd_dq_out", env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    spv = sorted((prepared / "changed" / out).glob("*.spv"))
    assert [p.stem for p in spv] == [f"{out}__wg128_ch64_g2_u2_sf32_hd128"]
    other = tmp_path / "other" / "mark"
    other.mkdir(parents=True)
    (other / "keep.txt").write_text("mine")
    proc = _run("prepare", str(exp), "forward", env={"SPV_ROOT": str(tmp_path / "other")})
    assert proc.returncode == 1 and "not replacing" in proc.stderr
    assert (other / "keep.txt").read_text() == "mine"


def test_experiment_runner_names_what_is_wrong(tmp_path) -> None:
    proc = _run()
    assert proc.returncode == 2 and "usage:" in proc.stderr
    proc = _run("prepare", str(tmp_path), "forward")
    assert proc.returncode == 2 and f"run.sh: no {tmp_path}/change.diff" in proc.stderr
    (tmp_path / "change.diff").write_text(_DIFF)
    proc = _run("prepare", str(tmp_path), "backward")
    assert (
        proc.returncode == 2
        and "family bwd_dq, bwd_dq_out or forward, not 'backward'" in proc.stderr
    )
    env = {"SPV_ROOT": str(tmp_path / "none")}
    proc = _run("gpu", str(tmp_path), "forward", str(tmp_path / "out"), env=env)
    assert proc.returncode == 1 and "run 'run.sh prepare" in proc.stderr
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "change.diff").write_text(_DIFF.replace("softmax", "nothing"))
    proc = _run("prepare", str(bad), "forward", env=env)
    assert proc.returncode != 0 and "patch does not apply" in proc.stderr
    # a variant name neither side builds (here another family's) is named, not skipped
    env = {"SPV_ROOT": str(tmp_path / "typo"), "VARIANTS": "wg256_ch64_g2_u2_sf16_hd256"}
    proc = _run("prepare", str(tmp_path), "forward", env=env)
    assert proc.returncode == 1
    assert (
        "VARIANTS names wg256_ch64_g2_u2_sf16_hd256, which neither side of attention_split builds"
        in proc.stderr
    )


def test_pass_breakdown_skips_a_shape_the_variant_does_not_apply_to(tmp_path) -> None:
    """A fixed_head_dim = 256 variant at head_dim 128: said and skipped, the other shape timed
    (lavapipe; run.sh times every variant at the four fair shapes, one of them head_dim 128)."""
    out = tmp_path / "b.json"
    args = ["--kernel", "attention_split", "--variant", "wg256_ch32_g1_u4_e3_sf16_hd256"]
    args += ["--shape", "128,2,1,40", "--shape", "256,2,1,40", "--adapter", "cpu"]
    script = ROOT / "benchmarks" / "pass_breakdown.py"
    proc = subprocess.run(
        [sys.executable, str(script), *args, "--budget-s", "0.02", "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "@ 128,2,1,40: n/a, not timed" in proc.stdout
    assert "head_dim == fixed_head_dim" in proc.stdout
    rows = json.loads(out.read_text())
    assert {r["shape"] for r in rows} == {"256,2,1,40"}
    assert rows[0]["times_us"]["all"]["warm"] > 0


def _pass_breakdown(tmp_path, *args: str) -> subprocess.CompletedProcess:
    """benchmarks/pass_breakdown.py on lavapipe with a short budget."""
    script = ROOT / "benchmarks" / "pass_breakdown.py"
    return subprocess.run(
        [sys.executable, str(script), *args, "--adapter", "cpu", "--budget-s", "0.02"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip


def test_pass_breakdown_value_keeping_ablations_are_checked_then_timed(tmp_path) -> None:
    """const-params / const-heads write the shape's values in and no-clamp drops the key
    clamp: the text changes as said, and each ablated variant is checked (it must stay right)
    before it is timed, so its row comes out."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import pass_breakdown as pb

    from wgslgen.render.renderer import render
    from wgslgen.spec.loader import discover, select

    spec = select(discover([ROOT / "templates"]), ["attention_split"])[0]
    variant = next(v for v in spec.variants if v.name.endswith("wg256_ch64_g2_u2_e3_sf16_hd128"))
    rendered = render(variant, "naga")
    sizes = {"head_dim": 128, "n_heads": 4, "n_kv_heads": 2, "history_len": 256}
    scope = variant.problem_scope({**sizes, "pos": 255, "window": 0})
    every = pb.ablated(rendered, ["const-params"], scope).source
    assert "params." not in every and "let kv = h0 / 2u;" in every
    heads = pb.ablated(rendered, ["const-heads"], scope).source
    assert "params.n_kv_heads" not in heads and "params.n_chunks" in heads
    assert "min(kg + 8u, last)" in rendered.source
    assert "min(kg + 8u, last)" not in pb.ablated(rendered, ["no-clamp"], scope).source
    with pytest.raises(SystemExit, match=r"reads params\.n_chunks, .* the shape does not give"):
        pb.ablated(rendered, ["const-params"], {k: v for k, v in scope.items() if k != "n_chunks"})

    out = tmp_path / "b.json"
    proc = _pass_breakdown(
        tmp_path, "--kernel", "attention_split", "--variant", "wg256_ch64_g2_u2_e3_sf16_hd128",
        "--shape", "128,4,2,256", "--json", str(out),
        "--ablate", "const-params", "--ablate", "const-heads,no-clamp",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    rows = json.loads(out.read_text())
    assert [r["ablation"] for r in rows] == ["as is", "const-params", "const-heads+no-clamp"]


def test_pass_breakdown_confines_an_ablation_to_one_entry_point() -> None:
    """NAME@ENTRY changes that entry point's body only; no-nwg drops the num_workgroups
    builtin from bwd_dq's finalize; an entry point that is not there is named."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import pass_breakdown as pb

    from wgslgen.render.renderer import render
    from wgslgen.spec.loader import discover, select

    spec = select(discover([ROOT / "templates"]), ["attention_bwd_dq_split"])[0]
    variant = next(v for v in spec.variants if v.name.endswith("wg256_ch64_g2_u2_e4_sf16_hd256"))
    rendered = render(variant, "naga")

    def body(source: str, entry: str) -> str:
        start = source.index(f"fn {entry}(")
        return source[start : source.index("\n}\n", start)]

    emptied = pb.ablated(rendered, ["empty@finalize"]).source
    assert body(emptied, "finalize").split("{", 1)[1].lstrip().startswith("return;")
    assert body(emptied, "partials") == body(rendered.source, "partials")
    hits = pb.ablated(rendered, ["part-hits@finalize"]).source
    assert "part[0u]" in body(hits, "finalize") and "part[0u]" not in body(hits, "partials")
    no_nwg = pb.ablated(rendered, ["no-nwg"]).source
    assert "num_workgroups" not in no_nwg and "nwg" not in body(no_nwg, "finalize")
    stub = body(pb.ablated(rendered, ["stub@finalize"]).source, "finalize")
    assert stub.split("{", 1)[1].strip() == "if (params.n_heads == 0u) { d_q[0] = 1.0; }"
    skipped = body(pb.ablated(rendered, ["skip-ds-stores@finalize"]).source, "finalize")
    assert "if (params.n_heads == 0u) { d_scores[i0] = " in skipped
    assert "// if" not in skipped  # a comment that mentions d_scores[h, j] is left alone
    with pytest.raises(SystemExit, match=r"name it, stub@ENTRY"):
        pb.ablated(rendered, ["stub"])
    with pytest.raises(SystemExit, match="no entry point combine"):
        pb.ablated(rendered, ["empty@combine"])


def test_pass_breakdown_in_sequence_times_each_pass_empty_and_says_what_it_adds(tmp_path) -> None:
    """--in-sequence adds all-empty and each entry point empty in turn, and prints what each
    pass adds to the whole sequence (all as is minus all with that pass empty)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import pass_breakdown as pb

    def row(label: str, warm: float) -> dict:
        return {"ablation": label, "times_us": {"all": {"warm": warm, "cold": warm}}}

    rows = [row("as is", 11.8), row("empty", 3.3), row("empty@partials", 5.7),
            row("empty@finalize", 9.0)]  # fmt: skip
    assert pb.sequence_summary(rows) == (
        "in sequence, warm µs: all 11.8, launches (all empty) 3.3; "
        "partials adds 6.1, finalize adds 2.8"
    )
    out = tmp_path / "b.json"
    proc = _pass_breakdown(
        tmp_path, "--kernel", "attention_split", "--variant", "wg256_ch64_g2_u2_e3_sf16_hd128",
        "--shape", "128,4,2,256", "--json", str(out), "--in-sequence",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    labels = [r["ablation"] for r in json.loads(out.read_text())]
    assert labels == ["as is", "empty", "empty@partials", "empty@combine"]
    assert "in sequence, warm µs: all " in proc.stdout
    assert "partials adds " in proc.stdout and "combine adds " in proc.stdout


def test_pass_breakdown_names_a_wrong_ablation_before_the_device_starts(tmp_path) -> None:
    """An unknown ablation, an entry point the kernel lacks and a bare stub each stop the
    run with a message naming them, before any adapter is opened."""
    for ablation, message in [
        ("k-hitz", "unknown ablation k-hitz"),
        ("empty@combine", "ablation empty@combine: attention_bwd_dq_split has no entry point "
                          "combine (it has partials, finalize)"),
        ("stub", "name it, stub@ENTRY"),
    ]:  # fmt: skip
        proc = _pass_breakdown(
            tmp_path, "--kernel", "attention_bwd_dq_split",
            "--variant", "wg256_ch64_g2_u2_e4_sf16_hd256", "--shape", "256,8,4,512",
            "--ablate", ablation,
        )  # fmt: skip
        assert proc.returncode != 0 and message in proc.stderr, proc.stderr
        assert "adapter:" not in proc.stdout


def test_experiment_runner_times_a_variant_the_change_adds_on_its_side_alone(tmp_path) -> None:
    """A diff that opens a constraint: the new variant is timed from the changed templates only
    and set beside the library's fastest; a variant both sides have is timed on both (lavapipe,
    pass_breakdown.py's default budget at one small shape)."""
    toml = ROOT / "templates/attention_bwd_dq_split_out/kernel.toml"
    before = toml.read_text().splitlines(keepends=True)
    line = '    "mlp == 4 or (chunk >= 64 and group <= 2)",\n'
    assert line in before
    after = [
        '    "mlp == 4 or (chunk >= 64 and group <= 2) or (chunk == 128 and group == 4)",\n'
        if x == line else x for x in before
    ]  # fmt: skip
    name = "templates/attention_bwd_dq_split_out/kernel.toml"
    exp = tmp_path / "opened"
    exp.mkdir()
    diff = difflib.unified_diff(before, after, f"a/{name}", f"b/{name}")
    (exp / "change.diff").write_text("".join(diff))
    new, old = "wg256_ch128_g4_u2_sf16_hd128", "wg256_ch128_g4_u4_sf16_hd128"
    # a library variant built as .naga.wgsl and .tint.wgsl (subgroups): both sides too
    both_texts = "wg256_ch128_g2_u4_sf16_hd128_sg2"
    env = {"SPV_ROOT": str(tmp_path / "spv"), "VARIANTS": f"{new} {old} {both_texts}"}
    assert _run("prepare", str(exp), "bwd_dq_out", env=env).returncode == 0
    env |= {"ADAPTER": "cpu", "SHAPES": "128,8,2,300", "PYTHON": sys.executable}
    proc = _run("gpu", str(exp), "bwd_dq_out", str(tmp_path / "out"), env=env)
    assert f"run.sh: {new}: not in the library, timed with the change only" in proc.stdout
    timed = sorted(p.name for p in (tmp_path / "out").glob("*_wg*.json"))
    sides = {new: ["changed"], old: ["changed", "library"], both_texts: ["changed", "library"]}
    assert timed == sorted(f"{side}_{v}.json" for v, names in sides.items() for side in names)
    rows = json.loads((tmp_path / "out" / "compare.json").read_text())["times"]["128,8,2,300"]
    by_variant = {row["variant"]: row for row in rows}
    assert by_variant[new]["best_library"] == old and "best_library" not in by_variant[old]


def test_experiment_step_logs_the_run_and_reports_its_exit_status(tmp_path) -> None:
    # a device-queue job's step: an experiment that was never prepared fails at once, and the
    # step says so in the call's output, keeps the whole output in OUTDIR.log and fails too
    exp = tmp_path / "unprepared"
    exp.mkdir()
    (exp / "change.diff").write_text(_DIFF)
    out = tmp_path / "job" / "hd256"
    env = {"SPV_ROOT": str(tmp_path / "spv")}
    proc = _run("step", str(exp), "forward", str(out), "60", env=env)
    assert proc.returncode == 1
    assert proc.stdout.startswith("hd256: rc=1 in ")
    log = (tmp_path / "job" / "hd256.log").read_text()
    assert "run.sh prepare" in log and "carry .spv" in log
    assert log.strip().splitlines()[-1] in proc.stdout  # the log's end is shown
    usage = _run("step", str(exp), "forward", str(out))
    assert usage.returncode != 0 and "no SECONDS" in usage.stderr
