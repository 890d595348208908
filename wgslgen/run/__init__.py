"""Stage 4: a device in a worker process, numpy references, and the correctness harness.

- ``Harness``: runs renderings on one adapter against their reference (check, run, bench,
  head_to_head); ``check_kernels`` tests whole kernels in one call.
- ``CaseResult``, ``Status``, ``Report``: what a run found.
- ``TestData``, ``make_case``, ``load_reference``: a case's inputs and expected outputs;
  ``ReferenceFailure``: the reference.py could not give them.
- ``WorkerClient``, ``WorkerFailure``; ``DispatchJob``, ``HeadToHeadJob``, ``Reply``, ``Stage``:
  the typed contract with the worker process (docs/CONTRACTS.md).
"""

from wgslgen._exports import lazy

__getattr__, __all__ = lazy(
    __name__,
    {
        "Harness": "wgslgen.run.harness",
        "check_kernels": "wgslgen.run.harness",
        "ReferenceFailure": "wgslgen.run.harness",
        "DEFAULT_TIMEOUT_S": "wgslgen.run.harness",
        "CaseResult": "wgslgen.run.report",
        "Status": "wgslgen.run.report",
        "Report": "wgslgen.run.report",
        "NotRun": "wgslgen.run.report",
        "TestData": "wgslgen.run.reference",
        "make_case": "wgslgen.run.reference",
        "load_reference": "wgslgen.run.reference",
        "compare": "wgslgen.run.reference",
        "WorkerClient": "wgslgen.run.worker_client",
        "WorkerFailure": "wgslgen.run.worker_client",
        "DispatchJob": "wgslgen.run.protocol",
        "HeadToHeadJob": "wgslgen.run.protocol",
        "Reply": "wgslgen.run.protocol",
        "Stage": "wgslgen.run.protocol",
        "JobKind": "wgslgen.run.protocol",
        "choose_adapter": "wgslgen.run.device",
        "DeviceKey": "wgslgen.run.device",
    },
)
