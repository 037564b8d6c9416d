"""What the trace finalizer keeps: each pending session, what it knows of a held session's
spans without asking the store, and its counters.

A session held for completeness (its root span or a model request's log events not in yet) was
looked at through its span ids in the store whenever it came due: two queries of ~20 ms each
whatever its size. A Claude Code turn running for minutes exports its spans in batches and its
root span last, so that look came after every batch: a third of a 10,000-step turn's rebuild
work when it arrives in 100 batches. Past ``max_wait_s`` such a turn is rebuilt provisionally
(for the display) at most once per ``provisional_every_s`` and again only once its spans have
grown ``provisional_growth`` times (otherwise it is rebuilt in full after every batch, quadratic
in a long turn; growing by 2x bounds its provisional rebuilds to about twice a rebuild of the
whole); once complete it is rebuilt at once.

The finalizer's discovery query counts each session's new span rows and root spans
(:meth:`skillsight.store.Sessions.arrivals`). A session whose last look or read found a trace
that misses a parent and has no root span stays incomplete until a root span arrives (parent
pointers that form no cycle end at a missing parent or at a root), and it has at most the spans
counted then plus the span rows discovered since. While no root span has arrived, the look's
answer is known: incomplete, and under a growth mark while that sum is (:class:`SpanTally`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Discovery re-reads this far behind its watermark, and a session's rows are read again this far
# behind what was read last: another process's insert may commit rows stamped slightly before
# rows already seen. Keys already handled are recognised.
OVERLAP_US = 2_000_000


@dataclass
class Pending:
    """A session with rows not rebuilt yet, or rebuilt provisionally and waiting to settle."""

    last_ingested_us: int
    due: float  # monotonic time at which the quiet period (or the settle wait) ends
    first_seen: float
    unsettled: bool = False
    """Rebuilt provisionally (incomplete past max_wait_s), or held below its growth mark; due =
    when to settle it as it is."""


@dataclass
class FinalizerStats:
    sessions_rebuilt: int = 0
    activations_rebuilt: int = 0
    errors: int = 0
    last_error: str = ""
    last_pass_ms: float = 0.0
    incomplete_sessions: int = 0
    """Held past their quiet period in the last pass: a parent span or a model request's log
    events not in yet."""
    provisional_rebuilds: int = 0
    """Rebuilds of sessions still incomplete past max_wait_s: shown, not handed to scoring."""
    settled_incomplete: int = 0
    """Sessions handed to scoring incomplete, after settle_s without a new row (or at stop)."""
    parent_looks: int = 0
    """Sessions whose span ids were looked at to decide whether to hold them."""
    looks_spared: int = 0
    """Sessions held on what discovery counted (:class:`SpanTally`), without that look."""


@dataclass
class SpanTally:
    """What is known of a held session's spans since its last look or read."""

    spans: int
    """Its spans then, plus every span row discovered since: at least as many as it has."""
    waits_for_root: bool
    """A trace of it missed a parent and had no root span then, and no root span arrived since."""

    def arrived(self, span_rows: int, root_spans: int) -> None:
        """New rows were discovered: ``span_rows`` those past discovery's watermark (a span row
        committed late behind it goes uncounted, and a turn is shown again a little after its
        mark), ``root_spans`` all of them (re-read ones too: a root counted twice only brings
        the next look sooner)."""
        self.spans += span_rows
        if root_spans:
            self.waits_for_root = False

    def held(self, mark: int | None = None) -> bool:
        """Still incomplete (and below ``mark`` spans, when given), known without a look."""
        return self.waits_for_root and (mark is None or self.spans < mark)


Ident = tuple[str, str]
"""(project_id, session key)"""


@dataclass(frozen=True)
class PassPolicy:
    """What a pass does with each of its sessions (the rules above)."""

    waiting: set[Ident]
    """Before ``max_wait_s``: rebuilt only once complete."""
    provisional: set[Ident]
    """Past it and not settling: an incomplete one is written unsettled (shown, not scored)."""
    throttled: set[Ident]
    """Rebuilt provisionally less than ``provisional_every_s`` ago: rebuilt only complete."""
    growing: dict[Ident, int]
    """Rebuilt provisionally before: held below this many spans while incomplete."""
    held: set[Ident]
    """Known to wait for a root span still (and below its mark): held without a look."""


def pass_policy(
    keys: Sequence[Ident],
    pending: Mapping[Ident, Pending],
    provisional_at: Mapping[Ident, tuple[float, int]],
    tallies: Mapping[Ident, SpanTally],
    *,
    now: float,
    wait_for_roots: bool,
    max_wait_s: float,
    provisional_every_s: float,
    provisional_growth: float,
) -> PassPolicy:
    """The policy of a pass over ``keys``; ``provisional_at``: per session, the (monotonic
    time, spans) of its last provisional rebuild."""
    waiting = {
        ident for ident in keys if wait_for_roots and now - pending[ident].first_seen < max_wait_s
    }
    # Past max_wait_s a session is rebuilt as it is, for the display; it is scored once
    # complete, or when it has settled (settle_s without a row) or the service stops.
    provisional = {ident for ident in keys if wait_for_roots and not pending[ident].unsettled}
    # Rebuilt provisionally before: again once complete (a missing parent span is found
    # without reading the rows), or when the interval is over and the turn has grown.
    throttled = {
        ident
        for ident in keys
        if wait_for_roots
        and ident not in waiting
        and not pending[ident].unsettled  # settling: written as it is, now
        and ident in provisional_at
        and now - provisional_at[ident][0] < provisional_every_s
    }
    growing = {
        ident: math.ceil(provisional_at[ident][1] * provisional_growth)
        for ident in keys
        if wait_for_roots
        and ident not in waiting
        and ident not in throttled
        and not pending[ident].unsettled
        and ident in provisional_at
    }
    held = {i for i in waiting | throttled if i in tallies and tallies[i].held()} | {
        i for i, mark in growing.items() if i in tallies and tallies[i].held(mark)
    }
    return PassPolicy(waiting, provisional, throttled, growing, held)


def in_shard(key: str, shard: tuple[int, int]) -> bool:
    """The session ``key`` is rebuilt by the worker ``shard`` = (index, count)."""
    index, count = shard
    if count <= 1:
        return True
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count == index
