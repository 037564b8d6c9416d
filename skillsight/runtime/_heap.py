"""The garbage-collector policy of a long-running skillsight process.

CPython's cyclic collector runs its young generation every 700 net allocations of tracked
objects. A skillsight process allocates millions of short-lived ones (decoded spans, rows,
views, evaluations) that reference counting frees at once, and the collector walks the young
ones again and again meanwhile: 10 to 15% of scoring a batch of activations (docs/performance.md).
Once a process has started (modules imported, the embedding model and judges loaded), what it
made lives as long as the process; frozen, the collector never walks it again, and the young
generation is collected every ``young_threshold`` allocations instead, the older two as before
(every 10 collections of the one below). The rebuild pauses the collector for its passes as
well (``skillsight.rebuild``): that stays.

Only a process of its own applies it (``skillsight serve``, ``worker``, ``eval worker``, from
their command), never a library call or a test process.
"""

from __future__ import annotations

import gc


def settle_heap(young_threshold: int) -> bool:
    """Apply the policy above once the process has started (``SKILLSIGHT_GC_YOUNG_THRESHOLD``,
    50,000 by default); 0 leaves Python's collector as it is. Returns whether it was applied."""
    if young_threshold <= 0:
        return False
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(young_threshold, middle, old)
    return True
