"""The cyclic garbage collector paused while a rebuild pass runs.

A pass turns thousands of rows into dicts, drafts, ATIF documents and activation records:
millions of short-lived objects, nearly all freed by reference counting as soon as the pass is
done with them. The cyclic collector, triggered every 700 allocations, walks the young ones
again and again meanwhile: 25-30% of a pass's CPU over 20-step sessions
(docs/performance.md). Paused for the pass and re-enabled after it, the collector then finds
whatever cycles the pass left in one collection.

The pause is process-wide (``gc`` has no other kind) and counted, so passes in several
threads overlap safely: the collector is re-enabled when the last one ends, and only if it was
enabled when the first began.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the block with the cyclic garbage collector disabled (reference counting goes on)."""
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()
