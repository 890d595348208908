"""The device worker plus one job kind tuning needs: ``head_to_head`` (bench.head_to_head).

wgslgen.worker's ``bench`` job times one variant; choosing between finalists needs them timed
in strict alternation on one device, in one job, under one deadline. This module runs the
same worker with that job kind added: ``python -m wgslgen.tune_worker`` speaks the worker's
protocol and answers every job kind the worker does, plus::

    {"kind": "head_to_head", "label": str, "jobs": [bench job, ...], "names": [str, ...],
     "options": {"rounds", "warm", "l2_bytes"}}
    -> {"ok": True, "results": {name: Measurement.to_dict()}, "times": {...}}

Each entry of ``jobs`` is what Harness.job(rendered, case, "bench") builds. All finalists
share one device (the union of their features), so drift hits them alike.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from wgslgen.run import worker as _worker
from wgslgen.run.worker import WorkerClient

# Test-only fault injection: "ACTION:KIND:TEXT[,...]" makes the worker hang (ACTION "hang") or
# die ("crash") on a job of KIND (run, bench, head_to_head) whose label contains TEXT.
FAULT_ENV = "WGSLGEN_TUNE_FAULT"


def _maybe_fault(job: dict[str, Any]) -> None:
    for fault in filter(None, os.environ.get(FAULT_ENV, "").split(",")):
        action, _, rest = fault.partition(":")
        kind, _, text = rest.partition(":")
        if kind != job.get("kind") or text not in str(job.get("label", "")):
            continue
        if action == "hang":
            time.sleep(1e6)
        elif action == "crash":
            os.abort()


class TuneRunner(_worker.Runner):
    """The worker's Runner with the ``head_to_head`` job kind."""

    def handle(self, job: dict[str, Any]) -> dict[str, Any]:
        """Answer ``head_to_head`` here, everything else as the worker does."""
        _maybe_fault(job)
        if job.get("kind") != "head_to_head":
            return super().handle(job)
        t0 = time.perf_counter()
        jobs = job["jobs"]
        features = sorted(set().union(*(j["features"] for j in jobs)))
        shared = {"features": features, "limits": jobs[0]["limits"]}
        try:
            dev_key, device = self.device(shared)
            records, buffers = {}, []
            for name, sub in zip(job["names"], jobs, strict=True):
                pipe, layouts = self.pipeline(dev_key, device, {**sub, **shared})
                bound, groups = self._bind(device, layouts, sub)
                buffers += bound.values()
                records[name] = self._record(pipe, groups, sub["passes"])
        except Exception as exc:
            return {"ok": False, "stage": "pipeline", "error": _worker._message(exc)}
        t1 = time.perf_counter()
        try:
            from wgslgen.tune.bench import head_to_head

            results = head_to_head(device, records, **job.get("options", {}))
        except Exception as exc:
            self.forget(dev_key)
            return {"ok": False, "stage": "head_to_head", "error": _worker._message(exc)}
        finally:
            _worker.release(buffers)
        return {
            "ok": True,
            "results": {name: m.to_dict() for name, m in results.items()},
            "times": {"setup_s": t1 - t0, "head_to_head_s": time.perf_counter() - t1},
        }


class TuneWorkerClient(WorkerClient):
    """A WorkerClient whose worker also answers ``head_to_head``."""

    module = "wgslgen.tune.tune_worker"


def main(argv: list[str] | None = None) -> int:
    """The worker's loop, with TuneRunner answering jobs."""
    return _worker.main(argv, TuneRunner)


if __name__ == "__main__":
    sys.exit(main())
