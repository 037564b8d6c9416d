"""The service that keeps the scorecard read models caught up (:mod:`._rollups`).

Every ``interval_s`` it recomputes the (skill, day) aggregates whose rows were written since
their last refresh, off the event loop. Reads are exact without it (a marked day is read from
the copied rows), so it only keeps those days few: a scorecard then reads a handful of
aggregate rows per day. A day it refreshed less than ``hold_s`` ago whose marks since all name
their hour (steady traffic's newest hour, marked again within a second) waits. Its first pass
copies the rows written before the read models existed (:meth:`ScorecardRollups.backfill`,
and the evaluations' digests, :meth:`Evaluations.backfill_digests`), after which readers switch
to the read models.

Several processes may run one (the evaluation workers of a scaled-out deployment): each takes the
skills whose hash falls in its ``shard``; a day refreshed twice is harmless.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from skillsight.errors import ConfigError, SkillsightError
from skillsight.store._rollups import HOLD_US

if TYPE_CHECKING:
    from skillsight.store._store import Store

log = logging.getLogger(__name__)


@dataclass
class RefresherStats:
    passes: int = 0
    days_refreshed: int = 0
    days_held: int = 0
    """Days the last pass left waiting: refreshed less than ``hold_s`` ago, marked since in
    some hours only (live traffic's)."""
    backfilled_skills: int = 0
    backfilled_digests: int = 0
    """(project, skill) pairs whose evaluations' digests were copied (rows from before
    ``evaluation_digests`` existed)."""
    errors: int = 0
    last_error: str = ""
    last_pass_ms: float = 0.0


class ReadModelRefresher:
    """Async context manager refreshing the scorecard read models on a schedule."""

    def __init__(
        self,
        store: Store,
        *,
        interval_s: float = 5.0,
        hold_s: float = HOLD_US / 1e6,
        shard: tuple[int, int] = (0, 1),
    ) -> None:
        index, count = shard
        if interval_s <= 0 or hold_s < 0 or count < 1 or not 0 <= index < count:
            raise ConfigError(
                f"refresher: interval {interval_s} s, hold {hold_s} s, shard {index} of {count}"
            )
        self.store = store
        self.interval_s = interval_s
        self.hold_s = hold_s
        self.shard = (index, count)
        self.stats = RefresherStats()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ReadModelRefresher:
        self._task = asyncio.create_task(self._run(), name="skillsight-read-models")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def refresh_now(self) -> int:
        """One pass (backfilling first if needed); returns the days refreshed."""
        started = time.perf_counter()
        rollups = self.store.scorecards.rollups
        evaluations = self.store.evaluations
        if not evaluations.digests_ready() and self.shard[0] == 0:
            self.stats.backfilled_digests += evaluations.backfill_digests()
        if not rollups.ready() and self.shard[0] == 0:
            self.stats.backfilled_skills += rollups.backfill()
        elif not rollups.activations_ready() and self.shard[0] == 0:
            rollups.mark_activation_days()  # activations written before rebuilds marked days
        days = rollups.refresh_dirty(self.shard, hold_us=round(self.hold_s * 1e6))
        self.stats.passes += 1
        self.stats.days_refreshed += days
        self.stats.days_held = rollups.held
        self.stats.last_pass_ms = (time.perf_counter() - started) * 1000
        return days

    async def _run(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self.refresh_now)
            except SkillsightError as exc:
                self.stats.errors += 1
                self.stats.last_error = str(exc)[:500]
                log.warning("refreshing the scorecard read models failed: %s", exc)
            await asyncio.sleep(self.interval_s)

    def health(self) -> dict[str, object]:
        s = self.stats
        return {
            "enabled": True,
            "shard": list(self.shard),
            "passes": s.passes,
            "days_refreshed": s.days_refreshed,
            "days_held": s.days_held,
            "backfilled_skills": s.backfilled_skills,
            "backfilled_digests": s.backfilled_digests,
            "errors": s.errors,
            "last_error": s.last_error,
            "last_pass_ms": round(s.last_pass_ms, 1),
        }
