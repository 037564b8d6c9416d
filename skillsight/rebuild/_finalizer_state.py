"""What the trace finalizer keeps: each pending session, each provisionally rebuilt turn, and
its counters.

A Claude Code turn running for minutes exports its spans in batches and its root span last.
Past ``max_wait_s`` the finalizer rebuilds it provisionally (for the display) at most once per
``provisional_every_s``, and again only once its spans have grown ``provisional_growth`` times:
otherwise it is rebuilt in full after every batch, quadratic in a long turn; growing by 2x
bounds all its provisional rebuilds to about twice a rebuild of the whole. Once complete it is
rebuilt at once.

Deciding "still incomplete and still below that mark" took a look at the turn's span ids in
the store after every batch: two queries of ~20 ms each whatever the turn's size, a third of a
10,000-step turn's rebuild work when it arrives in 100 batches. The finalizer's discovery
query already counts each session's new span rows and root spans
(:meth:`skillsight.store.Sessions.arrivals`). A turn whose last look or read found a trace that
misses a parent and has no root span stays incomplete until a root span arrives (parent pointers
that form no cycle end at a missing parent or at a root), and it has at most the spans counted
then plus the span rows discovered since. While no root span has arrived and that sum is below
the mark, the look's answer is known: held (:meth:`ProvisionalTurn.held_below`).
"""

from __future__ import annotations

from dataclasses import dataclass


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


@dataclass
class ProvisionalTurn:
    """A session rebuilt provisionally (incomplete past ``max_wait_s``), maybe still arriving."""

    at: float
    """Monotonic time of its last provisional rebuild."""
    rebuilt_spans: int
    """Its spans then (the growth mark is a multiple of them)."""
    spans: int
    """Its spans at its last look or read, plus every span row discovered since: at least as
    many as it has."""
    waits_for_root: bool
    """A trace of it missed a parent and had no root span then, and no root span arrived since."""

    def arrived(self, span_rows: int, root_spans: int) -> None:
        """New rows were discovered: ``span_rows`` those past discovery's watermark (a span row
        committed late behind it goes uncounted, and the turn is shown again a little after its
        mark), ``root_spans`` all of them (re-read ones too: a root counted twice only brings
        the next look sooner)."""
        self.spans += span_rows
        if root_spans:
            self.waits_for_root = False

    def looked(self, spans: int, waits_for_root: bool) -> None:
        """Its span ids were looked at, or its rows read: what is known starts again there."""
        self.spans, self.waits_for_root = spans, waits_for_root

    def held_below(self, mark: int) -> bool:
        """Still incomplete and below ``mark`` spans, known without a look."""
        return self.waits_for_root and self.spans < mark
