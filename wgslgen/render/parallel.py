"""Many variants rendered on several processes.

Rendering is pure Python (Jinja and the WGSL reader), so one process renders one variant at
a time however many cores there are. On a machine with cores to spare, forked workers render
shares of the variants and send back each rendering's text, file name and facts; this
process makes the RenderedVariant objects around its own Variant objects. Workers are forked
because a kernel spec holds compiled templates, which cannot be pickled: they inherit them.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from wgslgen.render.renderer import RenderedVariant, render_families, rendered_from
from wgslgen.spec.kernel import Variant

MAX_JOBS = 8
# Fewest variants worth a worker process (forking and sending results back cost ~0.1 s).
MIN_VARIANTS_PER_JOB = 32

Outcome = list[RenderedVariant] | Exception

# The variants forked workers render, by index (inherited at the fork, never pickled).
_variants: Sequence[Variant] = ()


def render_jobs(count: int) -> int:
    """Processes worth using for ``count`` variants here (WGSLGEN_RENDER_JOBS overrides)."""
    if not sys.platform.startswith("linux"):  # where forking a threaded process is safe enough
        return 1
    wanted = os.environ.get("WGSLGEN_RENDER_JOBS")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    jobs = int(wanted) if wanted and wanted.isdigit() else min(MAX_JOBS, cores or 1)
    return max(1, min(jobs, count // MIN_VARIANTS_PER_JOB))


def render_outcomes(variants: Sequence[Variant]) -> Iterator[Outcome]:
    """Each variant's renderings (render_families), or the exception rendering it raised, in
    the order of ``variants``, as they are done."""
    jobs = render_jobs(len(variants))
    if jobs <= 1:
        yield from (_outcome(v) for v in variants)
        return
    # Each kernel's templates are compiled here first, so that the workers inherit them.
    first = {}
    for i, variant in enumerate(variants):
        if id(variant.spec) not in first:
            first[id(variant.spec)] = (i, _outcome(variant))
    warm = dict(first.values())
    global _variants
    _variants = variants
    pool = ProcessPoolExecutor(
        max_workers=jobs, mp_context=multiprocessing.get_context("fork"), initializer=_ignore_ctrl_c
    )
    try:
        todo = [i for i in range(len(variants)) if i not in warm]
        done = pool.map(_render_apart, todo, chunksize=8)
        for i, variant in enumerate(variants):
            if i in warm:
                yield warm[i]
                continue
            parts = next(done)
            # A failure is rendered again here, for the exception itself (it may not survive
            # pickling).
            yield (
                _outcome(variant)
                if parts is None
                else [rendered_from(variant, *part) for part in parts]
            )
    finally:
        # A caller that stops early (a build stops at its first failing variant) does not
        # wait for the rest to be rendered.
        pool.shutdown(wait=True, cancel_futures=True)
        _variants = ()


def _ignore_ctrl_c() -> None:
    # A Ctrl-C reaches the whole process group: a worker it stops while holding the pool's
    # queue lock leaves this process waiting forever. This process stops them instead.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _outcome(variant: Variant) -> Outcome:
    try:
        return render_families(variant)
    except Exception as e:  # the caller decides what a failure means for its kernel
        return e


def _render_apart(index: int) -> list[tuple[str, str, str, dict[str, Any]]] | None:
    """In a worker: the renderings of variant ``index`` as picklable parts, None on failure."""
    try:
        rendered = render_families(_variants[index])
    except Exception:
        return None
    return [(r.family, r.source, r.relpath, dict(r.facts)) for r in rendered]
