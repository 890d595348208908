"""Ray for `wgslgen tune --ray`: importing it, and a session with a local instance or a
cluster that leaves the process's SIGTERM handling as it found it."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wgslgen.errors import WgslgenError

RAY_HINT = "pip install 'wgslgen[ray]'"
_ROOT = str(Path(__file__).resolve().parents[2])


def import_ray() -> Any:
    """The ray module, or a clear error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise WgslgenError(
            "Ray is not installed; tuning on a cluster needs it", hint=RAY_HINT, option="ray"
        ) from None
    return ray


def runtime_env() -> dict[str, Any]:
    """Ray workers started here find this checkout's wgslgen (and tests) on PYTHONPATH."""
    # ${PYTHONPATH}: Ray expands it to each node's own value, which this extends.
    return {"env_vars": {"PYTHONPATH": f"{_ROOT}{os.pathsep}${{PYTHONPATH}}"}}


@dataclass(frozen=True)
class Connection:
    """The ray module, initialised, and whether this process started the instance."""

    ray: Any
    # Started here: ray.shutdown() on the way out stops every worker of the instance, so
    # an interrupted run leaves nothing running without cancelling its tasks one by one.
    started_here: bool


@contextlib.contextmanager
def connect(address: str | None) -> Iterator[Connection]:
    """Ray, initialised: a local instance (``address`` None), or the cluster at ``address``
    ("auto": the one this machine belongs to). An instance already initialised is used and
    left running; one started here is shut down on the way out."""
    ray = import_ray()
    if ray.is_initialized():
        yield Connection(ray, started_here=False)
        return
    kwargs: dict[str, Any] = {"runtime_env": runtime_env(), "log_to_driver": False}
    on_term = signal.getsignal(signal.SIGTERM)
    try:
        if address:
            ray.init(address=address, **kwargs)
        else:
            # "local", not None: Ray's default joins the last `ray start` cluster it finds
            # recorded on this machine (or RAY_ADDRESS), even a dead one; --ray means our own.
            ray.init(address="local", include_dashboard=False, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        hint = _AUTH_HINT if address else ""
        raise WgslgenError(f"cannot start or reach {where}: {e}{hint}") from None
    finally:
        # Ray puts its own SIGTERM handler in (exit 1, a native stack dump): a CI runner's
        # SIGTERM must end a fleet tune as it ends a local one (exit 143, records kept).
        if on_term is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, on_term)
    try:
        yield Connection(ray, started_here=address is None)
    finally:
        ray.shutdown()


# What `ray start` does not say: a Ray that authenticates with tokens refuses, after retrying
# for ~20 s, a driver that does not (its log says InvalidAuthToken, its error only "failed").
_AUTH_HINT = (
    "; if the cluster uses token authentication (Ray's InvalidAuthToken in the log above), "
    "run this command and every `ray start` with RAY_AUTH_MODE=token and the head's "
    "~/.ray/auth_token on each machine (wgslgen docs fleet)"
)
