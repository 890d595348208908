"""benchmarks/h200_targets.sh: the H200 session's parts run on an H200 only (the issue's
targets are that GPU's), so a call given another GPU costs seconds, not the part's minutes;
and the gpu_fair.sh it runs refuses a misspelt step before it starts."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

from benchmarks.attention_shapes import FAMILIES
from wgslgen.spec.loader import discover

from .conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "h200_targets.sh"


def _run(
    tmp_path: Path, gpu: str, part: str = "dq", script: Path = SCRIPT, **extra: str
) -> subprocess.CompletedProcess:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fakes = {"nvidia-smi": f"echo '{gpu}, 580.159.04'", "dpkg": "true", "ldconfig": "true"}
    for name, body in fakes.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "OUT": str(out),
        "H200_TARGETS_DIR": str(tmp_path / "r"),  # not the device machine's /tmp/r
        **extra,
    }
    return subprocess.run(
        ["bash", str(script), part], capture_output=True, text=True, env=env, timeout=60
    )


def test_another_gpu_stops_at_once_and_says_which(tmp_path: Path) -> None:
    proc = _run(tmp_path, "NVIDIA H100 80GB HBM3")
    assert proc.returncode == 3, proc.stderr
    assert (tmp_path / "out" / "gpu.txt").read_text().startswith("NVIDIA H100 80GB HBM3")
    assert not (tmp_path / "out" / "r.tgz").exists()


def test_an_unknown_part_is_a_usage_error() -> None:
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    usage = "usage: h200_targets.sh dq|dq_out|fw_dkv|fw|dkv|modes"
    assert proc.returncode != 0 and usage in proc.stderr


def test_any_gpu_runs_the_part_on_another_gpu_and_says_it_is_not_the_h200(tmp_path: Path) -> None:
    # an unknown part: past the GPU check it stops at the part (a real part needs a GPU)
    proc = _run(
        tmp_path,
        "NVIDIA H100 80GB HBM3",
        part="nothing",
        ANY_GPU="1",
        GPU_ENV_ROOT=str(tmp_path / "root"),  # what gpu_env.sh installs stays in tmp_path
        GPU_ENV_SITE=str(tmp_path / "site"),
    )
    assert proc.returncode == 2, proc.stderr
    assert "unknown part nothing" in proc.stderr
    assert "not an H200: these figures compare the two sides on this GPU" in proc.stdout


def test_the_parts_run_on_one_machine_all_stay_in_gpu_txt(tmp_path: Path) -> None:
    # a warm device machine runs fw_dkv, then dq: the second must not wipe the first's lines
    for _ in range(2):
        proc = _run(
            tmp_path,
            "NVIDIA H100 80GB HBM3",
            part="nothing",
            ANY_GPU="1",
            GPU_ENV_ROOT=str(tmp_path / "root"),
            GPU_ENV_SITE=str(tmp_path / "site"),
        )
        assert proc.returncode == 2, proc.stderr
    lines = (tmp_path / "r" / "gpu.txt").read_text().splitlines()
    assert lines.count("NVIDIA H100 80GB HBM3, 580.159.04") == 2


def _tree_with_a_fake_gpu_run(tmp_path: Path) -> Path:
    """The script in a copy of the tree whose gpu_fair.sh (the GPU run) is faked: it logs what
    it was asked for (and its STEPS to `steps`) and fails for the forward, so each reported rc
    is traceable to its run."""
    bench = tmp_path / "tree" / "benchmarks"
    bench.mkdir(parents=True)
    (bench / "h200_targets.sh").write_text(SCRIPT.read_text())
    (bench / "gpu_env.sh").write_text("true\n")
    (bench / "gpu_fair.sh").write_text(
        f'#!/bin/sh\necho "$2" >> {tmp_path}/asked\necho "$STEPS" > {tmp_path}/steps\n'
        '[ "$2" = forward ] && exit 5\nexit 0\n'
    )
    (bench / "gpu_fair.sh").chmod(0o755)
    return bench


def test_each_part_runs_its_families_and_reports_its_runs_exit_status(tmp_path: Path) -> None:
    bench = _tree_with_a_fake_gpu_run(tmp_path)
    for part, asked, lines in [
        ("fw", ["forward"], ["fw rc=5"]),
        ("dkv", ["bwd_dkv"], ["dkv rc=0"]),
        ("fw_dkv", ["forward", "bwd_dkv"], ["fw rc=5", "fw_dkv rc=0"]),
    ]:
        for stale in (tmp_path / "asked", tmp_path / "r" / "gpu.txt"):
            stale.unlink(missing_ok=True)
        proc = _run(tmp_path, "NVIDIA H200", part=part, script=bench / "h200_targets.sh")
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / "asked").read_text().split() == asked
        gpu_txt = (tmp_path / "r" / "gpu.txt").read_text()
        assert all(f"{line} " in gpu_txt for line in lines), gpu_txt
        assert (tmp_path / "out" / "r.tgz").is_file()


def test_steps_default_to_the_whole_run_and_a_caller_can_run_less(tmp_path: Path) -> None:
    # a call with little device time left runs our side alone: STEPS="ours test"
    bench = _tree_with_a_fake_gpu_run(tmp_path)
    script = bench / "h200_targets.sh"
    for extra, steps in [
        ({}, "torch ours table test targets"),
        ({"STEPS": "ours test"}, "ours test"),
    ]:
        proc = _run(tmp_path, "NVIDIA H200", part="dq_out", script=script, **extra)
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / "steps").read_text().strip() == steps


def test_a_misspelt_step_stops_gpu_fair_before_it_writes_anything(tmp_path: Path) -> None:
    # STEPS="our test" would have run the test step alone, the timing skipped without a word
    out = tmp_path / "fair"
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_fair.sh"), str(out), "bwd_dq"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "STEPS": "our test"},
    )  # fmt: skip
    assert proc.returncode == 2
    assert "gpu_fair.sh: unknown step 'our' in STEPS" in proc.stderr
    assert not out.exists()


def _expand(pattern: str) -> list[str]:
    """Every string a pattern of literals, groups, `|`, `?` and a closing `$` names."""

    def seq(i: int) -> tuple[list[str], int]:
        alts, cur = [], [""]
        while i < len(pattern) and pattern[i] != ")":
            ch = pattern[i]
            if ch == "|":
                alts += cur
                cur, i = [""], i + 1
                continue
            if ch == "(":
                inner, i = seq(i + 1)
                i += 1  # the ")"
            else:
                inner, i = ["" if ch == "$" else ch], i + 1
            if i < len(pattern) and pattern[i] == "?":
                inner, i = [*inner, ""], i + 1
            cur = [a + b for a in cur for b in inner]
        return alts + cur, i

    return seq(0)[0]


def test_every_schedule_a_part_names_is_a_variant_that_exists(tmp_path: Path) -> None:
    # a misspelt schedule in a part's ONLY would time nothing for it, unnoticed until the call
    bench = _tree_with_a_fake_gpu_run(tmp_path)
    fake = bench / "gpu_fair.sh"
    asked = tmp_path / "asked"
    fake.write_text(f'#!/bin/sh\nshift\necho "$*" >> {asked}\necho "$ONLY" >> {asked}\n')
    names = {v.name for spec in discover([ROOT / "templates"]) for v in spec.variants}
    for part in ("dq", "dq_out", "fw", "dkv"):
        asked.unlink(missing_ok=True)
        proc = _run(tmp_path, "NVIDIA H200", part=part, script=bench / "h200_targets.sh")
        assert proc.returncode == 0, proc.stderr
        families, only = asked.read_text().splitlines()
        kernels = {k for f in families.split() for k in FAMILIES[f]}
        mine = {n for n in names if n.split("__")[0] in kernels}
        for schedule in _expand(only):
            assert any(n.endswith(schedule) for n in mine), (part, schedule)


def test_other_gpu_runs_its_command_there_and_keeps_what_it_wrote(tmp_path: Path) -> None:
    # a call lent an H100 tunes instead of leaving with nothing; its exit status is the command's
    script = _tree_with_a_fake_gpu_run(tmp_path) / "h200_targets.sh"
    for command, rc in [('echo tuned > "$R/results.jsonl"', 0), ("echo half; exit 7", 7)]:
        proc = _run(tmp_path, "NVIDIA H100 80GB HBM3", part="dkv", script=script, OTHER_GPU=command)
        assert proc.returncode == rc, proc.stderr
        assert not (tmp_path / "asked").exists()  # the part itself did not run
        with tarfile.open(tmp_path / "out" / "r.tgz") as tar:
            names = set(tar.getnames())
        assert {"r/other.log", "r/gpu.txt"} <= names
        assert f"other rc={rc}" in (tmp_path / "r" / "gpu.txt").read_text()
    assert (tmp_path / "r" / "results.jsonl").read_text() == "tuned\n"
    # on an H200 the part runs and OTHER_GPU is not used
    proc = _run(tmp_path, "NVIDIA H200", part="dkv", script=script, OTHER_GPU="exit 7")
    assert proc.returncode == 0 and (tmp_path / "asked").read_text().split() == ["bwd_dkv"]


def test_dq_out_also_times_the_schedules_the_h200s_tune_picked(tmp_path: Path) -> None:
    # a tune on the H200 may pick a bwd_dq_out schedule the fixed list lacks; another card's
    # picks, and a selection that cannot be read, add nothing
    bench = _tree_with_a_fake_gpu_run(tmp_path)
    fake = bench / "gpu_fair.sh"
    fake.write_text(f'#!/bin/sh\necho "$ONLY" > {tmp_path}/only\n')
    tuning = bench.parent / "tuning"
    tuning.mkdir()

    def entry(label: str, kernel: str, variant: str) -> dict:
        return {"device_label": label, "kernel": kernel, "winner": {"variant": variant}}

    out, h200 = "attention_bwd_dq_split_out", "NVIDIA H200 [Vulkan, DiscreteGPU]"
    entries = [
        entry(h200, out, f"{out}__wg128_ch64_g2_u2_sf16_hd256"),
        entry("NVIDIA H100 80GB HBM3 [Vulkan]", out, f"{out}__wg256_ch32_g4_u4_sf16_hd256"),
        entry(h200, "attention", "attention__wg64_sf16"),
    ]
    only = []
    for text in (json.dumps({"entries": entries}), "{not json"):
        (tuning / "selection.json").write_text(text)
        proc = _run(tmp_path, "NVIDIA H200", part="dq_out", script=bench / "h200_targets.sh")
        assert proc.returncode == 0, proc.stderr
        only.append((tmp_path / "only").read_text().strip())
    assert only[0] == only[1] + "|split_out__(wg128_ch64_g2_u2_sf16_hd256)$"
    assert "ch32_g4" not in only[0] and "wg64_sf16" not in only[0]
