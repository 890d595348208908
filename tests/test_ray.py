"""`wgslgen tune --ray` on a real local Ray instance (2 CPUs) and lavapipe.

The fault test kills real Ray worker processes (the device worker SIGKILLs its parent, the
Ray worker running the task: tests/fault_worker.py). Ray is shut down in a finally, and a
test checks that no process the tune started outlives it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from wgslgen.cli import main
from wgslgen.run.worker_client import WorkerClient
from wgslgen.tune.db import Record, ResultsDB, latest, read_selection

from .conftest import GOOD_KERNELS, ROOT

ray = pytest.importorskip("ray")

SCALE = ["tune", "--templates", str(GOOD_KERNELS), "--kernel", "scale"]
SHAPES = ["--shape", "n=1000", "--shape", "n=65536"]
FAST = ["--l2-bytes", "1M", "--rounds", "5", "--adapter", "cpu"]
VOLATILE = ("measurement", "measured_at")  # what two runs of one variant may differ in


def files(tmp: Path) -> list[str]:
    return ["--db", str(tmp / "results.jsonl"), "--selection", str(tmp / "selection.json")]


def content(r: Record) -> str:
    """A record without its timing: what a local and a fleet tune must agree on."""
    return json.dumps({k: v for k, v in r.to_dict().items() if k not in VOLATILE}, sort_keys=True)


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def alive(pids: set[int]) -> set[int]:
    """The pids that still run (zombies count as gone)."""
    out = set()
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                out.add(pid)
        except OSError:
            pass
    return out


def test_ray_tune_gives_the_local_tunes_records_and_leaves_no_process(tmp_path, capsys):
    local, fleet = tmp_path / "local", tmp_path / "ray"
    assert main([*SCALE, *SHAPES, *FAST, "--json", *files(local)]) == 0
    local_doc = {s["shape"]: s for s in json.loads(capsys.readouterr().out)["shapes"]}
    # The CLI starts (and must stop) its own local Ray instance, even where the last
    # `ray start` on this machine left its address behind and died: Ray's own default
    # would try to join that one (CI once waited 14 minutes on it).
    ray_tmp = Path(tempfile.mkdtemp(prefix="wr", dir="/tmp"))  # short: Ray's socket paths
    (ray_tmp / "ray").mkdir()
    (ray_tmp / "ray" / "ray_current_cluster").write_text("192.0.2.2:38467\n")
    env = {**os.environ, "RAY_TMPDIR": str(ray_tmp)}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "wgslgen", *SCALE, *SHAPES, *FAST, "--ray", "--json",
         *files(fleet)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    seen: set[int] = set()
    deadline = time.monotonic() + 300
    while proc.poll() is None:  # every process the tune starts: Ray's and the device workers
        seen |= descendants(proc.pid)
        if time.monotonic() > deadline:
            proc.kill()
        time.sleep(0.2)
    out, err = proc.communicate()
    shutil.rmtree(ray_tmp, ignore_errors=True)
    assert "Connecting to existing Ray cluster" not in err, err
    assert proc.returncode == 0, err
    mine = ResultsDB(local / "results.jsonl").load().records
    theirs = ResultsDB(fleet / "results.jsonl").load().records
    # variant x shape x device: the same set, each once, identical apart from the timings.
    assert len(theirs) == len({r.key for r in theirs}) == 10
    assert sorted(map(content, theirs)) == sorted(map(content, mine))
    assert {r.status for r in theirs} == {"ok"}
    doc = json.loads(out)
    assert doc["totals"]["measured"] == 10 and len(doc["devices"]) == 1
    assert doc["devices"][0]["digest"] == theirs[0].key.device
    for shape in doc["shapes"]:
        here = local_doc[shape["shape"]]
        # Same winner, or winners one of the runs found alike (both finalists, or tied within
        # the noise): lavapipe on two shared cores, timing two variants at once in the Ray
        # run, is too noisy for more at these microsecond sizes.
        a, b = shape["winner"], here["winner"]
        assert a == b or _close(shape, a, b) or _close(here, a, b), (shape, here)
    assert {e.shape for e in read_selection(fleet / "selection.json")} == {"n=1000", "n=65536"}
    assert len(seen) >= 3  # at least Ray's own processes and a device worker were seen
    deadline = time.monotonic() + 15
    while alive(seen) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(seen), "processes left behind by tune --ray"


def test_sigterm_ends_a_ray_tune_as_it_ends_a_local_one(tmp_path):
    """A CI runner's SIGTERM: exit 143 and the JSON error object, records kept (Ray's own
    handler, put in by ray.init, used to end it with exit 1, a native stack and no JSON)."""
    import signal

    ray_tmp = Path(tempfile.mkdtemp(prefix="wr", dir="/tmp"))  # short: Ray's socket paths
    env = {**os.environ, "RAY_TMPDIR": str(ray_tmp)}
    env.pop("RAY_ADDRESS", None)
    many = [f"--shape=n={n}" for n in (1000, 2000, 4000, 8000, 16000, 32000, 64000)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "wgslgen", *SCALE, *many, *FAST, "--ray", "--json",
         *files(tmp_path)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    db = tmp_path / "results.jsonl"
    deadline = time.monotonic() + 240
    while proc.poll() is None and not (db.exists() and db.read_text().count("\n") >= 1):
        assert time.monotonic() < deadline, "no record after 240 s"
        time.sleep(0.1)
    seen = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    shutil.rmtree(ray_tmp, ignore_errors=True)
    assert proc.returncode == 143, err[-3000:]
    assert json.loads(out)["exit_code"] == 143
    assert "SIGTERM received" not in err, err[-3000:]
    assert ResultsDB(db).load().records  # what was measured is kept
    deadline = time.monotonic() + 15
    while alive(seen) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(seen), "processes left behind by a terminated tune --ray"


def _close(shape: dict, a: str, b: str) -> bool:
    """Whether this run found ``a`` and ``b`` alike: both finalists (within the margin of the
    best median) or within the noise of each other in its head-to-head or leaderboard."""
    rows = {r["variant"]: r for r in shape["leaderboard"] if r["median_ns"]}
    final = {r["variant"] for r in shape["leaderboard"] if "finalist" in r["tags"]}
    if {a, b} <= final | {shape["winner"]}:
        return True
    for timings in (shape["head_to_head"], rows):
        if a in timings and b in timings:
            ma, mb = timings[a]["median_ns"], timings[b]["median_ns"]
            if abs(ma - mb) <= max(timings[a]["iqr_ns"], timings[b]["iqr_ns"], 0.02 * ma):
                return True
    return False


def test_a_dead_nodes_task_is_retried_on_another_node_of_its_device(tmp_path, monkeypatch, capsys):
    """Two worker nodes of one device key (and a head without CPUs, which gets no task);
    the first check of wg32_sf16 SIGKILLs its node's raylet."""
    from ray.cluster_utils import Cluster

    from wgslgen.tune.ray_session import runtime_env

    fast_health = {"health_check_period_ms": 500, "health_check_failure_threshold": 3}
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "include_dashboard": False, "_system_config": fast_health},
    )
    try:
        cluster.add_node(num_cpus=1)
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address, runtime_env=runtime_env(), log_to_driver=False)
        cluster.wait_for_nodes()
        (tmp_path / "markers").mkdir()
        monkeypatch.setenv("WGSLGEN_TEST_FAULT_MARKERS", str(tmp_path / "markers"))
        monkeypatch.setenv("WGSLGEN_TEST_FAULT", "killnode1:run:scale__wg32_sf16")
        monkeypatch.setattr(WorkerClient, "module", "tests.fault_worker")
        args = [*SCALE, "--shape", "n=2048", *FAST, "--ray", "--json", *files(tmp_path)]
        assert main(args) == 0
        doc = json.loads(capsys.readouterr().out)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and all(n["Alive"] for n in ray.nodes()):
            time.sleep(0.2)
        dead = [n["NodeID"] for n in ray.nodes() if not n["Alive"]]
    finally:
        ray.shutdown()
        cluster.shutdown()
    records = ResultsDB(tmp_path / "results.jsonl").load().records
    assert len(records) == 5 and {r.status for r in records} == {"ok"}  # nothing lost
    (device,) = doc["devices"]
    nodes = {n["node_id"]: n for n in device["nodes"]}
    assert len(nodes) == 2  # the head has no CPU for tasks: not used, and the JSON says so
    assert [n["why"] for n in doc["unused_nodes"]] == ["Ray gives it no CPU (or GPU) for tasks"]
    assert len(dead) == 1 and dead[0] in nodes  # the fault killed one worker node
    assert nodes[dead[0]]["retried"] >= 1  # its task (and any sent before its death was known)
    survivor = next(n for i, n in nodes.items() if i != dead[0])
    assert survivor["done"] >= 1 and survivor["lost"] == 0


def test_two_device_types_fill_one_database_and_a_node_gets_only_what_it_can_run(
    tmp_path, monkeypatch, capsys
):
    """Two worker nodes; one plays another device without shader-f16 (tests/fault_worker.py
    changes what its worker reports, and dies if a job needing shader-f16 reaches it)."""
    from ray.cluster_utils import Cluster

    from wgslgen.tune.ray_session import runtime_env

    head = {"num_cpus": 0, "include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    try:
        cluster.add_node(num_cpus=1)
        other = cluster.add_node(num_cpus=1)
        raylet = other.all_processes["raylet"][0].process.pid
        ray.init(address=cluster.address, runtime_env=runtime_env(), log_to_driver=False)
        cluster.wait_for_nodes()
        monkeypatch.setenv("WGSLGEN_TEST_FAKE_DEVICE", str(raylet))
        monkeypatch.setattr(WorkerClient, "module", "tests.fault_worker")
        args = [*SCALE, "--shape", "n=2048", *FAST, "--ray", "--json", *files(tmp_path)]
        assert main(args) == 0
        doc = json.loads(capsys.readouterr().out)
    finally:
        ray.shutdown()
        cluster.shutdown()
    by_device: dict[str, list[Record]] = {}
    for r in ResultsDB(tmp_path / "results.jsonl").load().records:
        by_device.setdefault(r.device_info["label"], []).append(r)
    (simulated,) = [d for d in by_device if d.startswith("simulated")]
    (real,) = [d for d in by_device if d != simulated]
    assert len(doc["devices"]) == 2 and all(len(d["nodes"]) == 1 for d in doc["devices"])
    assert {r.status for rs in by_device.values() for r in rs} == {"ok"}
    assert len(by_device[real]) == 5
    # The f16 variants were never sent to the device without shader-f16 (its worker would
    # have died: a crash record), nor recorded for it.
    assert sorted(r.variant for r in by_device[simulated]) == [
        "scale__wg128_sf32",
        "scale__wg32_sf32",
        "scale__wg64_sf32",
    ]
    assert by_device[simulated][0].key.device != by_device[real][0].key.device
    sim = next(s for s in doc["shapes"] if len(s["leaderboard"]) == 3)
    assert {e["variant"] for e in sim["excluded"]} == {"scale__wg32_sf16", "scale__wg64_sf16"}
    assert all("shader-f16" in e["reason"] for e in sim["excluded"])
    entries = read_selection(tmp_path / "selection.json")
    assert len({e.device for e in entries}) == 2  # a winner per device


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray instance of two CPUs for the in-process tests; shut down in the end."""
    from wgslgen.tune.ray_session import runtime_env

    ray.init(
        address="local",  # not a cluster a past `ray start` on this machine recorded
        num_cpus=2,
        include_dashboard=False,
        runtime_env=runtime_env(),
        log_to_driver=False,
    )
    try:
        yield ray
    finally:
        ray.shutdown()


def test_killed_ray_workers_are_retried_or_lost_and_a_rerun_completes(
    local_ray, tmp_path, monkeypatch
):
    # wg32_sf16's check kills the Ray worker running it every time: lost after 3 attempts.
    # wg128_sf32's kills it once: the retry completes it.
    (tmp_path / "markers").mkdir()
    monkeypatch.setenv("WGSLGEN_TEST_FAULT_MARKERS", str(tmp_path / "markers"))
    monkeypatch.setenv(
        "WGSLGEN_TEST_FAULT", "killparent:run:scale__wg32_sf16,killparent1:run:scale__wg128_sf32"
    )
    monkeypatch.setattr(WorkerClient, "module", "tests.fault_worker")
    args = [*SCALE, "--shape", "n=2048", *FAST, "--ray", *files(tmp_path)]
    assert main(args) == 0
    db = ResultsDB(tmp_path / "results.jsonl")
    status = {r.variant: r for r in db.load().records}
    assert len(status) == 5 and len(db.load().records) == 5
    lost = status["scale__wg32_sf16"]
    assert lost.status == "lost" and lost.measurement is None
    assert "WorkerCrashedError" in lost.error and "after 3 attempt(s)" in lost.error
    assert status["scale__wg128_sf32"].status == "ok"  # retried after its worker was killed
    assert sorted(r.status for r in status.values()) == ["lost", "ok", "ok", "ok", "ok"]

    monkeypatch.delenv("WGSLGEN_TEST_FAULT")
    monkeypatch.setattr(WorkerClient, "module", "wgslgen.run.worker")
    assert main([*args, "--json"]) == 0
    records = db.load().records
    assert len(records) == 6 and records[:5] == list(status.values())  # appended, untouched
    assert records[5].variant == "scale__wg32_sf16" and records[5].status == "ok"
    assert sorted(r.status for r in latest(records)) == ["ok"] * 5


def _sleep_then_return(folder: str, digest: str, host: str, seconds: float) -> float:
    """An injected task: says which process runs it (a file named after ``seconds``), sleeps
    ``seconds``, and says it is done."""
    (Path(folder) / str(seconds)).write_text(str(os.getpid()))
    time.sleep(seconds)
    (Path(folder) / f"{seconds}.done").write_text("")
    return seconds


@pytest.mark.parametrize("owns_instance", [False, True], ids=["joined", "own"])
def test_an_interrupted_fleet_run_cancels_its_tasks_only_on_a_cluster_it_joined(
    local_ray, tmp_path, owns_instance
):
    """Interrupted (Ctrl-C, SIGTERM), a run force-cancels its tasks on a cluster it joined;
    on an instance of its own it leaves them to ray.shutdown(), which stops every worker (a
    forced cancel meeting a task's reply can abort the driver in Ray 2.60)."""
    from wgslgen.tune.fleet import DeviceGroup, Fleet, Node

    fleet = Fleet(local_ray, str(tmp_path), owns_instance=owns_instance)
    fleet._task = local_ray.remote(_sleep_then_return)  # the hang injected
    here = Node(local_ray.get_runtime_context().get_node_id(), "here", slots=2, gpu=False)
    run = fleet.run(DeviceGroup("digest", None, [here]), [("quick", 0.0), ("slow", 10.0)])
    assert next(run) == ("quick", 0.0)
    deadline = time.monotonic() + 60
    while not (tmp_path / "10.0").exists():
        assert time.monotonic() < deadline, "the slow task never started"
        time.sleep(0.1)
    worker = int((tmp_path / "10.0").read_text())
    run.close()  # what an exception leaving the caller's loop does
    deadline = time.monotonic() + 5
    while alive({worker}) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert bool(alive({worker})) == owns_instance
    # Ray's processes are left as found (the module's instance goes on to the next test).
    deadline = time.monotonic() + 30
    while owns_instance and not (tmp_path / "10.0.done").exists():
        assert time.monotonic() < deadline, "the slow task never ended"
        time.sleep(0.2)
    assert (tmp_path / "10.0.done").exists() == owns_instance


def test_tpe_search_in_waves_on_ray(local_ray, tmp_path, capsys):
    pytest.importorskip("optuna")
    args = ["--strategy", "tpe", "--budget", "3", "--search-seed", "1", "--json"]
    assert main([*SCALE, "--shape", "n=512", *FAST, "--ray", *args, *files(tmp_path)]) == 0
    shape = json.loads(capsys.readouterr().out)["shapes"][0]
    assert shape["strategy"] == "tpe" and shape["winner"]
    records = ResultsDB(tmp_path / "results.jsonl").load().records
    # 3 proposed (2 per wave on 2 slots) plus perhaps the baseline; each once.
    assert 3 <= len(records) <= 4 and len({r.key for r in records}) == len(records)


def test_without_ray_installed_the_error_says_how_to_install(tmp_path):
    code = (
        "import sys; sys.modules['ray'] = None; from wgslgen.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *SCALE, "--shape", "n=8", *FAST, "--ray", *files(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ},
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--ray: Ray is not installed" in proc.stderr
    assert "pip install 'wgslgen[ray]'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "results.jsonl").exists()


def test_db_show_groups_a_fleets_records_by_device(tmp_path, capsys):
    from dataclasses import replace

    from .test_db import rec

    db = ResultsDB(tmp_path / "results.jsonl")
    for digest, label in (("aaaa000011112222", "H200 [Vulkan, DiscreteGPU]"),
                          ("bbbb000011112222", "llvmpipe [Vulkan, CPU]")):  # fmt: skip
        for sha, variant in (("a" * 64, "k__wg32"), ("b" * 64, "k__wg64")):
            r = rec(sha, variant=variant)
            db.append(replace(r, key=replace(r.key, device=digest), device_info={"label": label}))
    assert main(["db", "show", "--db", str(db.path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    h200 = out.index("H200 [Vulkan, DiscreteGPU] [aaaa000011112222]")
    cpu = out.index("llvmpipe [Vulkan, CPU] [bbbb000011112222]")
    assert h200 < out.index("wg32", h200) < cpu < out.index("wg32", cpu)  # a table per device
    assert "4 record(s) on 2 devices" in out
