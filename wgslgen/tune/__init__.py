"""Stage 5: the timing method, search strategies, the results database and selection.

- ``measure``, ``head_to_head``, ``Measurement``: the one timing method (after Triton's
  do_bench): warm-up by time, cache flush outside the timed interval, all samples kept.
- ``tune``, ``TuneSession``, ``TuneOptions``: correctness-gated search per problem shape.
- ``ResultsDB``, ``Record``: the append-only results database, keyed by content.
- ``decide``, ``update_selection``: the winner per device and shape, and the selection file.
"""

from wgslgen._exports import lazy

__getattr__, __all__ = lazy(
    __name__,
    {
        "measure": "wgslgen.tune.bench",
        "head_to_head": "wgslgen.tune.bench",
        "Measurement": "wgslgen.tune.bench",
        "tune": "wgslgen.tune.runner",
        "TuneSession": "wgslgen.tune.runner",
        "TuneOptions": "wgslgen.tune.options",
        "ResultsDB": "wgslgen.tune.db",
        "Record": "wgslgen.tune.db",
        "decide": "wgslgen.tune.selection",
        "update_selection": "wgslgen.tune.selection_file",
        "STRATEGIES": "wgslgen.tune.search",
    },
)
