"""The clusterer: a service that clusters on a schedule and assigns new failures at once.

Two loops run while it is entered (``skillsight.runtime`` enters it after the evaluation
scheduler, in every role that evaluates):

- **assignment** — every ``poll_s`` it asks the store which evaluations failed since its
  watermark (over every project), and assigns those activations to the nearest cluster of
  their project's latest run, or records them as novel (:mod:`._assign`). Evaluation stamps are
  taken before their insert commits, so each poll re-reads a few seconds back and skips what it
  handled already. A failure is in its cluster a poll and a query after it was scored.
- **runs** — a project whose latest run is older than ``interval_s`` (or that has none) is
  clustered again (:mod:`._run`); :meth:`Clusterer.run_now` runs one on demand. Runs of one
  project never overlap; assignment does not wait for them (it uses the clusters before the
  run, and what it assigned meanwhile is assigned again once the run commits).

Several workers split the projects between them by hash (``worker=(index, count)``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from skillsight.clustering._advice import advise
from skillsight.clustering._assign import ExemplarIndex, assign_failures
from skillsight.clustering._run import RunOptions, RunSummary, run_clustering
from skillsight.errors import SkillsightError
from skillsight.evaluators import Embedder, default_embedder
from skillsight.evaluators.judges import JudgeClient, JudgeSettings
from skillsight.evaluators.scheduler import partition_of
from skillsight.store import FailedSince, Store

log = logging.getLogger(__name__)

_OVERLAP_US = 5_000_000
_TICK_S = 30.0  # how often the run loop looks for projects due a run
_BATCH = 2_000  # failures assigned per poll at most
_DRAIN_S = 60.0  # how long leaving waits for a run or a pass in progress
_INDEX_CHECK_S = 5.0  # how often a project's latest run is checked for one of another process


@dataclass(frozen=True)
class ClustererOptions:
    run: RunOptions = field(default_factory=RunOptions)
    interval_s: float = 900.0
    """A project is clustered again once its latest run is this old; 0 = only on demand."""
    poll_s: float = 0.25
    max_distance: float = 0.15
    """Cosine distance to the nearest exemplar within which a new failure joins its cluster."""
    catchup_s: float = 600.0
    """At start, assign failures scored this far back."""
    worker: tuple[int, int] = (0, 1)
    advice: JudgeSettings | None = None
    """The judge model that advises on clusters after each run (None: no advice)."""
    advice_limit: int = 10
    """Clusters advised on per run at most (the most pressing first)."""


@dataclass
class ClustererStats:
    runs: int = 0
    run_failures: int = 0
    assigned: int = 0
    novel: int = 0
    assign_batches: int = 0
    errors: int = 0
    last_error: str = ""
    last_runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_assign_ms: float = 0.0
    """Wall time of the last assignment batch, from the poll to the rows written."""


class Clusterer:
    """Async context manager running the clustering loops of one process."""

    def __init__(
        self,
        store: Store,
        *,
        embedder: Embedder | None = None,
        options: ClustererOptions | None = None,
    ) -> None:
        self.store = store
        self.embedder: Embedder = embedder or default_embedder()
        self.options = options or ClustererOptions()
        self.stats = ClustererStats()
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._indexes: dict[str, ExemplarIndex] = {}
        self._during_run: dict[str, set[str]] = {}
        self._index_checked: dict[str, float] = {}
        self._handled: dict[tuple[str, str], int] = {}
        self._watermark_us = 0
        self._projects: list[str] = []
        self._projects_at = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()
        advice = self.options.advice
        self._advisor = JudgeClient(advice) if advice is not None else None

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> Clusterer:
        self._watermark_us = time.time_ns() // 1000 - int(self.options.catchup_s * 1e6)
        self._stopping.clear()
        self._tasks = [asyncio.create_task(self._assign_loop(), name="skillsight-cluster-assign")]
        if self.options.interval_s > 0:
            self._tasks.append(asyncio.create_task(self._run_loop(), name="skillsight-cluster-run"))
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Loops finish the pass they are in (a thread cannot be interrupted, and the store
        # closes after this), then stop; one stuck past the drain time is cancelled.
        self._stopping.set()
        _, pending = await asyncio.wait(self._tasks, timeout=_DRAIN_S) if self._tasks else ((), ())
        for task in pending:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def _pause(self, seconds: float) -> bool:
        """Wait ``seconds``, or less when the clusterer is stopping; True = keep going."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        return not self._stopping.is_set()

    def mine(self, project_id: str) -> bool:
        index, count = self.options.worker
        return partition_of(project_id, count) == index

    def health(self) -> dict[str, object]:
        s = self.stats
        return {
            "enabled": True,
            "runs": s.runs,
            "assigned": s.assigned,
            "novel": s.novel,
            "assign_batches": s.assign_batches,
            "errors": s.errors,
            "last_error": s.last_error,
            "last_assign_ms": round(s.last_assign_ms, 1),
            "last_runs": s.last_runs,
        }

    # -- runs ------------------------------------------------------------------------------------

    async def run_now(self, project_id: str) -> RunSummary:
        """Cluster one project now (after any run of it in progress) and return the summary.

        Online assignment goes on meanwhile, against the clusters before the run; what it
        assigned during the run is assigned again against the run's clusters once it commits."""
        async with self._locks[project_id]:
            self._during_run[project_id] = set()
            try:
                summary = await asyncio.to_thread(
                    run_clustering,
                    self.store,
                    project_id,
                    embedder=self.embedder,
                    options=self.options.run,
                )
                self._indexes[project_id] = await asyncio.to_thread(
                    ExemplarIndex.load, self.store, project_id
                )
                self._index_checked[project_id] = time.monotonic()
            finally:
                meanwhile = sorted(self._during_run.pop(project_id, set()))
            if meanwhile:
                await self._assign(project_id, meanwhile)
            if self._advisor is not None:
                await asyncio.to_thread(
                    advise,
                    self.store,
                    project_id,
                    self._advisor,
                    limit=self.options.advice_limit,
                )
        self.stats.runs += 1
        self.stats.run_failures += summary.failures
        self.stats.last_runs[project_id] = {
            "run_id": summary.run_id,
            "failures": summary.failures,
            "clusters": summary.clusters,
            "kept_share": summary.kept_share,
            "seconds": round(sum(summary.seconds.values()), 3),
        }
        return summary

    async def _run_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                for project_id in await asyncio.to_thread(self._due):
                    await self.run_now(project_id)
            except SkillsightError as exc:
                self._failed("a scheduled run", exc)
            except Exception as exc:  # the loop outlives any one run
                log.exception("a scheduled clustering run failed")
                self._failed("a scheduled run", exc)
            if not await self._pause(min(_TICK_S, self.options.interval_s)):
                return

    def _due(self) -> list[str]:
        now = time.time_ns() // 1000
        if now - self._projects_at >= self.options.interval_s * 1e6 or not self._projects:
            # which projects have failures: looked up once an interval, not every tick
            window_us = self.options.run.window_days * 86_400_000_000
            self._projects = self.store.failures.projects(now - window_us)
            self._projects_at = now
        due = []
        for project_id in self._projects:
            if not self.mine(project_id):
                continue
            latest = self.store.clusters.latest_run(project_id)
            if latest is None or latest["started_at"] <= now - self.options.interval_s * 1e6:
                due.append(project_id)
        return due

    # -- online assignment -----------------------------------------------------------------------

    async def _assign_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                await self.assign_new()
            except SkillsightError as exc:
                self._failed("assigning new failures", exc)
            except Exception as exc:
                log.exception("assigning new failures failed")
                self._failed("assigning new failures", exc)
            if not await self._pause(self.options.poll_s):
                return

    async def assign_new(self) -> int:
        """One pass: assign every failure scored since the last pass; return how many."""
        started = time.perf_counter()
        since = self._watermark_us - _OVERLAP_US
        found = await asyncio.to_thread(
            self.store.failures.failed_since,
            since,
            scored=self.options.run.thresholds.scored,
            limit=_BATCH,
        )
        fresh: defaultdict[str, list[FailedSince]] = defaultdict(list)
        for item in found:
            key = (item.project_id, item.activation_id)
            if self._handled.get(key) != item.evaluated_at_us and self.mine(item.project_id):
                fresh[item.project_id].append(item)
        done = 0
        for project_id, items in fresh.items():
            ids = [i.activation_id for i in items]
            done += await self._assign(project_id, ids)
            for item in items:
                self._handled[item.project_id, item.activation_id] = item.evaluated_at_us
            if project_id in self._during_run:
                self._during_run[project_id].update(ids)
        if found:
            self._watermark_us = max(self._watermark_us, max(i.evaluated_at_us for i in found))
            floor = self._watermark_us - _OVERLAP_US
            self._handled = {k: v for k, v in self._handled.items() if v >= floor}
        if fresh:
            self.stats.assign_batches += 1
            self.stats.last_assign_ms = (time.perf_counter() - started) * 1000
        return done

    async def _assign(self, project_id: str, activation_ids: list[str]) -> int:
        index = await asyncio.to_thread(self._index, project_id)
        assigned = await asyncio.to_thread(
            assign_failures,
            self.store,
            project_id,
            activation_ids,
            embedder=self.embedder,
            index=index,
            thresholds=self.options.run.thresholds,
            max_distance=self.options.max_distance,
            cause_weight=self.options.run.cause_weight,
        )
        self.stats.assigned += sum(1 for a in assigned if a.cluster_id)
        self.stats.novel += sum(1 for a in assigned if not a.cluster_id)
        return len(assigned)

    def _index(self, project_id: str) -> ExemplarIndex:
        """The project's exemplars, reloaded when another process committed a newer run
        (looked for at most every ``_INDEX_CHECK_S``)."""
        cached = self._indexes.get(project_id)
        checked = self._index_checked.get(project_id, 0.0)
        if cached is not None and time.monotonic() - checked < _INDEX_CHECK_S:
            return cached
        self._index_checked[project_id] = time.monotonic()
        latest = self.store.clusters.latest_run(project_id)
        latest_id = latest["run_id"] if latest else ""
        if cached is not None and (cached.run["run_id"] if cached.run else "") == latest_id:
            return cached
        self._indexes[project_id] = ExemplarIndex.load(self.store, project_id)
        return self._indexes[project_id]

    def _failed(self, what: str, exc: BaseException) -> None:
        self.stats.errors += 1
        self.stats.last_error = f"{what} failed: {exc}"[:500]
        log.warning("%s failed: %s", what, exc)


__all__ = ["Clusterer", "ClustererOptions", "ClustererStats"]
