"""The trace finalizer: rebuilds a session's trajectory and activations once it is complete.

A *session* is keyed by its session id, else by its trace id. It is complete when no new span
or event has reached the store for ``rebuild_quiet_s``, every span's parent has arrived (the
root span, exported when it ends, is there) and the log events of every model request the
spans record are in (:func:`is_complete`) — or, for a trace whose root never comes (a crashed
agent, a parent in a service that does not export here), once ``rebuild_max_wait_s`` has passed
since its first row. Rows that arrive after a rebuild make the session pending again and it is
rebuilt again; rebuilds are idempotent (deterministic activation ids, stamped rows).

How work is found: the finalizer asks the store which sessions got rows since its watermark
(:meth:`Store.sessions.touched`, a read of the newest parts only, through a min-max index on
``ingested_at``). Session ids are normalized inside ClickHouse at insert time, and the fast path
never decodes requests in Python, so the store is the one place that knows them. In
``skillsight serve`` the finalizer runs next to the batch writer and skips that read whenever
the writer has committed nothing since the last one (``commits``); a separate worker process
(server transport, scaled-out collectors) runs the same class without ``commits`` and polls.
Several workers split sessions by a hash of the key (``shard`` = (index, count)).

Rebuilds run in a worker thread, one batch at a time, so ingest is never blocked and CPU use is
bounded; a failing session is logged and counted (``/healthz``) and the loop goes on. Leaving the
context rebuilds everything still pending (enter it *before* the batch writer so the writer has
drained by then).

Hook for the evaluation scheduler: :meth:`Finalizer.subscribe` an async callback; it receives an
:class:`ActivationsReady` for every session rebuilt, in the finalizer's event loop. Keep it quick
(put the work on your own queue); an exception it raises is logged and counted, nothing else.
Enter the subscriber's own context before the finalizer's so it outlives the final flush.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType

from skillsight.errors import SkillsightError
from skillsight.rebuild._finalizer_state import (
    OVERLAP_US,
    FinalizerStats,
    Pending,
    SpanTally,
    in_shard,
    pass_policy,
)
from skillsight.rebuild._gc_pause import gc_paused
from skillsight.rebuild._row_cache import SessionRowCache
from skillsight.rebuild.catalogue import CatalogueFn
from skillsight.rebuild.rebuild_pass import (
    Outcome,
    RebuildFn,
    default_rebuild,
    is_complete,
    rebuild_sessions,
)
from skillsight.rebuild.visibility import Visibility
from skillsight.store import Arrival, Store, stamp_iso
from skillsight.store.records import Activation

__all__ = [
    "ActivationsReady",
    "Finalizer",
    "Outcome",
    "RebuildFn",
    "SessionRowCache",
    "SpanTally",
    "Subscriber",
    "default_rebuild",
    "gc_paused",
    "is_complete",
    "rebuild_sessions",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ActivationsReady:
    """A session was rebuilt: its current activations (possibly none)."""

    project_id: str
    session_id: str
    activations: tuple[Activation, ...]
    rebuilt_at_us: int


Subscriber = Callable[[ActivationsReady], Awaitable[None]]


class Finalizer:
    """Async context manager that rebuilds completed sessions in the background."""

    def __init__(
        self,
        store: Store,
        *,
        quiet_s: float = 1.0,
        max_wait_s: float = 30.0,
        settle_s: float = 300.0,
        poll_s: float = 0.2,
        batch_max: int = 64,
        catchup_s: float = 3600.0,
        rebuild: RebuildFn | None = None,
        catalogue: CatalogueFn | None = None,
        commits: Callable[[], int] | None = None,
        shard: tuple[int, int] = (0, 1),
        drain_timeout_s: float = 60.0,
        provisional_every_s: float = 10.0,
        provisional_growth: float = 2.0,
        cache_mb: int = 256,
    ) -> None:
        self.store = store
        self.quiet_s = quiet_s
        self.max_wait_s = max_wait_s
        self.settle_s = settle_s
        self.poll_s = poll_s
        self.batch_max = batch_max
        self.catchup_s = catchup_s
        self._rebuild = rebuild
        self.catalogue = catalogue
        self.commits = commits
        self.shard = shard
        self.drain_timeout_s = drain_timeout_s
        self.provisional_every_s = provisional_every_s
        self.provisional_growth = provisional_growth
        """How a turn running past max_wait_s is shown: see ``_finalizer_state``."""
        # a session rebuilt again (the next prompt of a Claude Code session) reads what is new
        self.rows = SessionRowCache(max_bytes=cache_mb << 20) if cache_mb > 0 else None
        # per session: (monotonic time, spans) of its last provisional rebuild
        self._provisional: dict[tuple[str, str], tuple[float, int]] = {}
        self._tallies: dict[tuple[str, str], SpanTally] = {}  # of held sessions
        self.stats = FinalizerStats()
        self.visibility = Visibility()
        """What each source's recently rebuilt sessions lacked (``health()["sources"]``)."""
        self._subscribers: list[Subscriber] = []
        self._pending: dict[tuple[str, str], Pending] = {}
        self._handled: dict[tuple[str, str], int] = {}  # key -> last_ingested_us rebuilt
        self._watermark_us = 0
        self._commits_seen: int | None = None
        self._catching_up = True
        self._handing_over = 0  # rebuilds not yet handed to every subscriber
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def subscribe(self, callback: Subscriber) -> None:
        """Call ``callback`` after every session rebuild (the evaluation scheduler's hook)."""
        self._subscribers.append(callback)

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> Finalizer:
        self._watermark_us = max(0, time.time_ns() // 1000 - int(self.catchup_s * 1e6))
        self._stop.clear()
        self._task = asyncio.create_task(self._run(), name="skillsight-finalizer")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None
        try:
            await asyncio.wait_for(self.flush(), self.drain_timeout_s)
        except TimeoutError:
            log.error("finalizer did not rebuild %d pending sessions in time", len(self._pending))

    async def flush(self) -> None:
        """Find what is new and rebuild every pending session now, complete or not."""
        self._commits_seen = None
        await self._discover()
        while self._pending:
            keys = list(self._pending)[: self.batch_max]
            await self._pass(keys, wait_for_roots=False)

    @property
    def pending(self) -> int:
        """Sessions with rows not rebuilt yet (not those waiting to settle)."""
        return sum(1 for p in self._pending.values() if not p.unsettled)

    @property
    def unsettled(self) -> int:
        """Sessions rebuilt while incomplete, waiting for their missing rows or to settle."""
        return sum(1 for p in self._pending.values() if p.unsettled)

    @property
    def idle(self) -> bool:
        """Every committed row has been looked at and every session it touched rebuilt (a
        session waiting to settle waits on its agent, not on the finalizer)."""
        caught_up = self.commits is None or self._commits_seen == self.commits()
        return caught_up and not self.pending and not self._catching_up and not self._handing_over

    def lag_s(self) -> float:
        """How far rebuilding is behind: the seconds since the newest row of the session that
        has waited longest to be rebuilt (store clock, quiet period and waits for missing
        parents included); 0 when none waits. Sessions rebuilt and waiting to settle do not
        count: they wait on their agent."""
        waiting = [p.last_ingested_us for p in self._pending.values() if not p.unsettled]
        if not waiting:
            return 0.0
        return max(0.0, (time.time_ns() // 1000 - min(waiting)) / 1e6)

    def health(self) -> dict[str, object]:
        return {
            "idle": self.idle,
            "lag_s": round(self.lag_s(), 3),
            "pending_sessions": self.pending,
            "incomplete_sessions": self.stats.incomplete_sessions,
            "unsettled_sessions": self.unsettled,
            "provisional_rebuilds": self.stats.provisional_rebuilds,
            "settled_incomplete": self.stats.settled_incomplete,
            "parent_looks": self.stats.parent_looks,
            "looks_spared": self.stats.looks_spared,
            "sessions_rebuilt": self.stats.sessions_rebuilt,
            "activations_rebuilt": self.stats.activations_rebuilt,
            "errors": self.stats.errors,
            "last_error": self.stats.last_error,
            "last_pass_ms": round(self.stats.last_pass_ms, 1),
            "sources": self.visibility.to_json(),
            "row_cache": self.rows.health() if self.rows is not None else {},
        }

    # -- the loop --------------------------------------------------------------------------------

    async def _run(self) -> None:
        while not self._stop.is_set():
            backlog = False
            try:
                await self._discover()
                now = time.monotonic()
                due = [k for k, p in self._pending.items() if p.due <= now]
                if due:
                    await self._pass(due[: self.batch_max], wait_for_roots=True)
                # more than a batch was due: the next batch goes at once, not after a poll
                backlog = len(due) > self.batch_max
            except Exception as exc:  # the loop outlives any one failure
                self._count_error(f"finalizer pass failed: {exc}")
                log.exception("finalizer pass failed")
            if backlog:
                await asyncio.sleep(0)  # let the rest of the loop run between batches
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.poll_s)

    async def _discover(self) -> None:
        count: int | None = None
        if self.commits is not None and not self._catching_up:
            count = self.commits()
            if count == self._commits_seen:
                return
        try:
            touched = await asyncio.to_thread(
                self.store.sessions.arrivals, self._watermark_us - OVERLAP_US, self._watermark_us
            )
        except SkillsightError as exc:
            self._commits_seen = None
            self._count_error(f"finding sessions to rebuild failed: {exc}")
            return
        if touched:
            self._watermark_us = max(self._watermark_us, max(t[2] for t in touched))
        touched = [t for t in touched if in_shard(t[1], self.shard)]
        if self._catching_up:
            owed = await asyncio.to_thread(self._not_yet_rebuilt, touched)
            # the rest was rebuilt before (by an earlier run): the overlap must not redo it
            for project_id, key, last_us, *_ in set(touched) - set(owed):
                self._handled[(project_id, key)] = last_us
            touched, self._catching_up = owed, False
        now = time.monotonic()
        wall_us = time.time_ns() // 1000
        for project_id, key, last_us, span_rows, root_spans in touched:
            ident = (project_id, key)
            if self._handled.get(ident, -1) >= last_us:
                continue
            pending = self._pending.get(ident)
            tally = self._tallies.get(ident)
            if pending is not None and pending.last_ingested_us >= last_us:
                if root_spans and tally is not None and tally.waits_for_root:
                    # a root span committed behind rows already seen (another writer): look
                    tally.arrived(0, root_spans)
                    pending.due, pending.unsettled = min(pending.due, now), False
                continue
            if tally is not None:
                tally.arrived(span_rows, root_spans)
            # The quiet period runs from the row's commit (store clock), not from discovery.
            waited = min(max((wall_us - last_us) / 1e6, 0.0), self.quiet_s)
            self._pending[ident] = Pending(
                last_us, now + self.quiet_s - waited, pending.first_seen if pending else now
            )
        horizon = self._watermark_us - 2 * OVERLAP_US
        self._handled = {k: v for k, v in self._handled.items() if v >= horizon}
        # Only now, with what they touched pending: while the query ran, `idle` must not
        # report these commits as looked at.
        if count is not None:
            self._commits_seen = count

    def _not_yet_rebuilt(self, touched: list[Arrival]) -> list[Arrival]:
        by_project: dict[str, list[Arrival]] = {}
        for item in touched:
            by_project.setdefault(item[0], []).append(item)
        out: list[Arrival] = []
        for project_id, items in by_project.items():
            through = self.store.rebuilds.through(project_id, [i.session_key for i in items])
            out.extend(i for i in items if through.get(i[1], -1) < i[2])
        return out

    async def _pass(self, keys: list[tuple[str, str]], *, wait_for_roots: bool) -> None:
        # The collector stays paused, as rebuild_sessions pauses it, until the pass's outcomes
        # are handled and dropped: their trajectories are freed by reference counting, and the
        # collection that follows walks what is handed on (the activations), not every model
        # of every trajectory (~60 of ~600 CPU-ms of a pass over 200 short sessions; a long
        # session's whole trajectory at each of its rebuilds).
        with gc_paused():
            ready = await self._rebuild_pass(keys, wait_for_roots=wait_for_roots)
        self._handing_over += len(ready)  # not idle until each is taken (a queue may be full)
        for item in ready:
            try:
                await self._publish(item)
            finally:
                self._handing_over -= 1

    async def _rebuild_pass(
        self, keys: list[tuple[str, str]], *, wait_for_roots: bool
    ) -> list[ActivationsReady]:
        batch = [(p, k, self._pending[(p, k)].last_ingested_us) for p, k in keys]
        policy = pass_policy(
            keys,
            self._pending,
            self._provisional,
            self._tallies,
            now=time.monotonic(),
            wait_for_roots=wait_for_roots,
            max_wait_s=self.max_wait_s,
            provisional_every_s=self.provisional_every_s,
            provisional_growth=self.provisional_growth,
        )
        waiting, throttled, held = policy.waiting, policy.throttled, policy.held
        started = time.perf_counter()

        def run() -> list[tuple[list[Outcome], list[int]]]:
            done = rebuild_sessions(
                self.store,
                batch,
                rebuild=self._rebuild,  # None: skillsight's, extending held sessions
                catalogue=self.catalogue,
                require_complete=waiting | throttled,
                provisional=policy.provisional,
                hold_below=policy.growing,
                held=held,
                cache=self.rows,
            )
            if self._subscribers:
                # The scheduler's digest of each activation handed over, made here, off the
                # event loop, on the rebuild's own objects: the stamped copies handed over
                # carry it, and so do the activations the session's next rebuild keeps.
                for outcome in done[0]:
                    if outcome.rebuilt is not None and outcome.settled:
                        for activation in outcome.rebuilt.activations:
                            activation.content_digest()
            # in a list emptied below: the executor's future keeps what the call returns
            return [done]

        try:
            outcomes, stamps = (await asyncio.to_thread(run)).pop()
        except SkillsightError as exc:  # the write failed: keep them pending, try again later
            self._count_error(f"writing rebuilds failed: {exc}")
            for ident in keys:
                self._pending[ident].due = time.monotonic() + self.quiet_s
            return []
        self.stats.last_pass_ms = (time.perf_counter() - started) * 1000
        now = time.monotonic()
        wall_us = time.time_ns() // 1000
        stamp_of = iter(stamps)
        ready: list[ActivationsReady] = []
        for outcome, (project_id, key, last_us) in zip(outcomes, batch, strict=True):
            ident = (project_id, key)
            pending = self._pending[ident]
            self.stats.parent_looks += outcome.looked
            self.stats.looks_spared += ident in held
            stays = outcome.incomplete or not outcome.settled  # held, or shown provisionally
            if stays and (outcome.looked or outcome.spans):  # what is known starts again here
                self._tallies[ident] = SpanTally(outcome.spans, outcome.waits_for_root)
            if outcome.incomplete:  # look again later (cheap while it waits for a root span)
                if ident in waiting:
                    pending.due = now + self.quiet_s
                elif ident in throttled:
                    pending.due = self._provisional[ident][0] + self.provisional_every_s
                elif pending.last_ingested_us == last_us:  # below its mark: settles as it is
                    waited = max(0.0, wall_us - last_us) / 1e6
                    pending.unsettled = True
                    pending.due = now + max(0.0, self.settle_s - waited)
                else:
                    pending.due = now + self.quiet_s
                continue
            if pending.last_ingested_us == last_us:  # else new rows arrived: stay pending
                if outcome.rebuilt is not None and not outcome.settled:
                    waited = max(0.0, wall_us - last_us) / 1e6
                    pending.unsettled = True
                    pending.due = now + max(0.0, self.settle_s - waited)
                else:
                    del self._pending[ident]
                    self._tallies.pop(ident, None)
            self._handled[ident] = last_us
            if outcome.error:
                self._count_error(f"session {key}: {outcome.error}")
            elif outcome.rebuilt is not None:
                self.visibility.observe(project_id, outcome.rebuilt.trajectory)
                self.stats.sessions_rebuilt += 1
                self.stats.activations_rebuilt += len(outcome.rebuilt.activations)
                stamp = next(stamp_of)
                if not outcome.settled:
                    self.stats.provisional_rebuilds += 1
                    self._provisional[ident] = (now, outcome.spans)
                    continue
                self._provisional.pop(ident, None)
                if not outcome.complete:
                    self.stats.settled_incomplete += 1
                rebuilt_at = stamp_iso(stamp)
                ready.append(
                    ActivationsReady(
                        project_id,
                        outcome.rebuilt.session_id,
                        tuple(
                            a.model_copy(update={"rebuilt_at": rebuilt_at})
                            for a in outcome.rebuilt.activations
                        ),
                        stamp,
                    )
                )
        self.stats.incomplete_sessions = sum(1 for o in outcomes if o.incomplete)
        return ready

    async def _publish(self, item: ActivationsReady) -> None:
        for callback in self._subscribers:
            try:
                await callback(item)
            except Exception as exc:
                self._count_error(f"activations-ready subscriber failed: {exc}")
                log.exception("activations-ready subscriber failed")

    def _count_error(self, message: str) -> None:
        self.stats.errors += 1
        self.stats.last_error = message[:500]
