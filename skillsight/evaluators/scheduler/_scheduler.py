"""The online evaluation scheduler: scores activations as the trace finalizer hands them over.

It sees only what the finalizer publishes after rebuilding a *complete* session (its quiet period
passed and its root span is in), so it never scores a partial trace; a session rebuilt again on
late rows hands its activations over again, and those whose inputs changed are scored again
(:mod:`._scoring`), their rows replacing the earlier ones (keyed by activation, evaluator and
evaluator version).

Per activation and evaluator, a :class:`~skillsight.evaluators.scheduler.Policy` decides by a
hash of the activation id and by filters (skill, agent, project) whether it runs; a worker keeps
only the activations whose id hashes to its index (``worker=(index, count)``). Rebuilt sessions
wait in a bounded queue (a full queue holds the finalizer back rather than dropping work); up
to ``concurrency`` are scored at once in worker threads, off the event loop. A store error on
write is retried with exponential backoff, ``retries`` attempts in all, then counted and dropped
(``skillsight eval run`` backfills). Counters appear under ``evaluation`` in ``/healthz``.

Enter it before the finalizer that publishes to it (``skillsight.runtime`` does) so that it
outlives the finalizer's final flush; leaving drains the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import TracebackType
from typing import TypeVar

from skillsight.errors import ConfigError, SkillsightError
from skillsight.evaluators._evaluator import Evaluator
from skillsight.evaluators._model import ERROR, Evaluation
from skillsight.evaluators._registry import Registry, deterministic_registry
from skillsight.evaluators.scheduler._context import ContextAssembler
from skillsight.evaluators.scheduler._policy import (
    partition_of,
    policies,
)
from skillsight.evaluators.scheduler._scoring import Scored, score_activations
from skillsight.rebuild.finalizer import ActivationsReady
from skillsight.store import Store
from skillsight.store.records import Activation

log = logging.getLogger(__name__)

_SESSIONS_PER_WRITE = 256  # sessions a worker scores and writes together when they queue up
T = TypeVar("T")

__all__ = ["EvaluationScheduler", "SchedulerStats"]


@dataclass
class SchedulerStats:
    sessions_received: int = 0
    sessions_scored: int = 0
    activations_received: int = 0
    activations_other_workers: int = 0
    evaluations_written: int = 0
    sampled_out: int = 0
    unchanged: int = 0
    evaluator_errors: int = 0
    store_retries: int = 0
    store_failures: int = 0
    superseded: int = 0
    """Activations not scored, or whose scores were not written, because a newer rebuild of
    them had arrived (it is scored instead)."""
    last_error: str = ""
    last_batch_ms: float = 0.0
    last_latency_ms: float = 0.0
    """From the session's rebuild being stored to its scores being stored."""


class EvaluationScheduler:
    """Async context manager that scores and stores the activations of rebuilt sessions."""

    def __init__(
        self,
        store: Store,
        *,
        registry: Registry | None = None,
        evaluators: Iterable[str] | None = None,
        rates: Mapping[str, float] | None = None,
        skills: Iterable[str] = (),
        agents: Iterable[str] = (),
        projects: Iterable[str] = (),
        concurrency: int = 2,
        queue_max: int = 1000,
        worker: tuple[int, int] = (0, 1),
        retries: int = 5,
        backoff_s: float = 0.2,
        max_backoff_s: float = 10.0,
        assembler: ContextAssembler | None = None,
        drain_timeout_s: float = 120.0,
        warm_up: bool = False,
    ) -> None:
        index, count = worker
        if count < 1 or not 0 <= index < count:
            raise ConfigError(f"worker {index} of {count}: need 0 <= index < count")
        if concurrency < 1 or queue_max < 1 or retries < 1:
            raise ConfigError("concurrency, queue_max and retries must be positive")
        self.store = store
        self.registry = registry or deterministic_registry()
        names = list(evaluators) if evaluators is not None else self.registry.names
        for name in names:
            self.registry.get(name)  # an unknown name fails here, at start-up
        self.policies = policies(
            names, rates=rates, skills=skills, agents=agents, projects=projects
        )
        self.concurrency = concurrency
        self.worker = (index, count)
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.assembler = assembler or ContextAssembler(store)
        self.drain_timeout_s = drain_timeout_s
        self.warm_up = warm_up
        # The chosen evaluators with something to load (a model, a client library).
        chosen = {n: type(self.registry.get(n)) for n in self.policies}
        loading = [n for n, kind in chosen.items() if kind.load is not Evaluator.load]
        self.loaded: dict[str, str] = dict.fromkeys(loading, "on first use (warm-up off)")
        """Per evaluator that loads something, what ``/healthz`` says of it: ``loaded``, on first
        use, or why it did not load. With warm-up, each is loaded before the service listens."""
        self.stats = SchedulerStats()
        self._queue: asyncio.Queue[ActivationsReady] = asyncio.Queue(queue_max)
        self._busy = 0
        self._tasks: list[asyncio.Task[None]] = []
        # Per (project, session) in the queue or being scored: the newest rebuild seen and how
        # many rebuilds are on their way. Scores of an older rebuild are never written after
        # a newer one arrived, so the last word on an activation is its latest rebuild's.
        self._newest: dict[tuple[str, str], tuple[str, int]] = {}
        # Rebuild stamps of the sessions queued or being scored, for lag_s().
        self._waiting: dict[int, int] = {}

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> EvaluationScheduler:
        if self.warm_up:
            # Loaded before anything listens, not beside it: importing torch and loading the
            # model hold the interpreter's lock for up to a second at a time (litellm's import
            # for a quarter), long enough for an exporter's request to wait seconds on a busy
            # machine (Claude Code gives its final flush 2 s at exit). The first activation
            # is not held up either.
            await self._warm_up()
        self._tasks = [
            asyncio.create_task(self._work(), name=f"skillsight-evaluation-{i}")
            for i in range(self.concurrency)
        ]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await asyncio.wait_for(self._queue.join(), self.drain_timeout_s)
        except TimeoutError:
            log.error("evaluation scheduler left %d sessions unscored", self._queue.qsize())
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def _warm_up(self) -> None:
        for name in self.loaded:
            try:
                await asyncio.to_thread(self.registry.get(name).load)
            except SkillsightError as exc:  # scoring reports it per activation later
                log.warning("%s did not load what it needs: %s", name, exc)
                self.loaded[name] = f"did not load: {exc}"[:300]
            else:
                self.loaded[name] = "loaded"

    async def submit(self, item: ActivationsReady) -> None:
        """The finalizer's subscriber: queue a rebuilt session (waits while the queue is full)."""
        self.stats.sessions_received += 1
        self.stats.activations_received += len(item.activations)
        for key, rebuilt_at in self._sessions_of(item).items():
            newest, pending = self._newest.get(key, ("", 0))
            self._newest[key] = (max(newest, rebuilt_at), pending + 1)
        self._waiting[id(item)] = item.rebuilt_at_us or time.time_ns() // 1000
        await self._queue.put(item)

    @staticmethod
    def _sessions_of(item: ActivationsReady) -> dict[tuple[str, str], str]:
        return {(item.project_id, a.session_id): a.rebuilt_at for a in item.activations}

    def _superseded(self, project_id: str, activation: Activation) -> bool:
        newest, _ = self._newest.get((project_id, activation.session_id), ("", 0))
        return activation.rebuilt_at < newest

    def _done(self, item: ActivationsReady) -> None:
        self._waiting.pop(id(item), None)
        for key in self._sessions_of(item):
            newest, pending = self._newest.get(key, ("", 1))
            if pending <= 1:
                self._newest.pop(key, None)
            else:
                self._newest[key] = (newest, pending - 1)

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing being scored."""
        return self._queue.empty() and self._busy == 0

    @property
    def queued(self) -> int:
        """Sessions waiting to be scored."""
        return self._queue.qsize()

    def lag_s(self) -> float:
        """How far scoring is behind: seconds since the oldest rebuild still queued or being
        scored was stored; 0 when nothing waits."""
        if not self._waiting:
            return 0.0
        return max(0.0, (time.time_ns() // 1000 - min(self._waiting.values())) / 1e6)

    def health(self) -> dict[str, object]:
        s = self.stats
        return {
            "enabled": True,
            "idle": self.idle,
            "evaluators": list(self.policies),
            "loaded": dict(self.loaded),
            "worker": list(self.worker),
            "queued_sessions": self._queue.qsize(),
            "lag_s": round(self.lag_s(), 3),
            "sessions_received": s.sessions_received,
            "sessions_scored": s.sessions_scored,
            "activations_received": s.activations_received,
            "activations_other_workers": s.activations_other_workers,
            "evaluations_written": s.evaluations_written,
            "sampled_out": s.sampled_out,
            "unchanged": s.unchanged,
            "evaluator_errors": s.evaluator_errors,
            "store_retries": s.store_retries,
            "store_failures": s.store_failures,
            "superseded": s.superseded,
            "last_error": s.last_error,
            "last_batch_ms": round(s.last_batch_ms, 1),
            "last_latency_ms": round(s.last_latency_ms, 1),
            # what evaluators tell of themselves (judges: calls, reused verdicts, spend)
            "evaluator_health": {
                name: shown for name in self.policies if (shown := self.registry.get(name).health())
            },
        }

    # -- scoring ---------------------------------------------------------------------------------

    def mine(self, activation: Activation) -> bool:
        index, count = self.worker
        return partition_of(activation.activation_id, count) == index

    async def score(self, project_id: str, activations: Sequence[Activation]) -> list[Evaluation]:
        """Score and store one project's activations now (this worker's share); return the
        evaluations written. Store errors (reading the context, writing the rows) are retried
        with backoff; the last one is raised once the retries are spent."""
        started = time.perf_counter()
        own = [a for a in activations if self.mine(a)]
        self.stats.activations_other_workers += len(activations) - len(own)
        current = [a for a in own if not self._superseded(project_id, a)]
        self.stats.superseded += len(own) - len(current)
        own = current
        if not own:
            return []
        scored = await self._retried(
            "reading the context",
            lambda: score_activations(
                own, self.assembler, registry=self.registry, chosen=self.policies
            ),
        )
        self.stats.sampled_out += scored.sampled_out
        self.stats.unchanged += scored.unchanged
        self.stats.evaluator_errors += sum(1 for e in scored.evaluations if e.label == ERROR)
        if scored.evaluations:
            written = await self._retried(
                "writing evaluations", lambda: self._write(project_id, own, scored)
            )
            self.stats.evaluations_written += written
        self.stats.last_batch_ms = (time.perf_counter() - started) * 1000
        return scored.evaluations

    def _write(self, project_id: str, scored_ones: Sequence[Activation], scored: Scored) -> int:
        # A fresh stamp per attempt (the newest write of a key is the one that stays), taken
        # before the check: a rebuild published after the check is scored and written later.
        evaluated_at_us = time.time_ns() // 1000
        stale = {a.activation_id for a in scored_ones if self._superseded(project_id, a)}
        if stale:
            self.stats.superseded += len(stale)
            scored = replace(
                scored, evaluations=[e for e in scored.evaluations if e.activation_id not in stale]
            )
        if not scored.evaluations:
            return 0
        return self.store.evaluations.write_columns(project_id, scored.columns(evaluated_at_us))

    async def _retried(self, what: str, call: Callable[[], T]) -> T:
        """``call()`` in a worker thread, again after a store error, waiting longer each time."""
        delay = self.backoff_s
        for attempt in range(1, self.retries + 1):
            try:
                return await asyncio.to_thread(call)
            except SkillsightError as exc:
                self.stats.last_error = f"{what} failed: {exc}"[:500]
                if attempt == self.retries:
                    raise
                self.stats.store_retries += 1
                log.warning("%s failed (attempt %d): %s", what, attempt, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.max_backoff_s)
        raise AssertionError("unreachable: retries is at least 1")

    async def _work(self) -> None:
        while True:
            items = [await self._queue.get()]
            # Under load, take what is already queued too: one store write per project for
            # all of it instead of one per session (embedded inserts run one at a time, so
            # per-session writes capped scoring near 25 sessions/s). Idle, a session goes alone.
            while len(items) < _SESSIONS_PER_WRITE and not self._queue.empty():
                items.append(self._queue.get_nowait())
            self._busy += 1
            try:
                by_project: dict[str, list[ActivationsReady]] = {}
                for item in items:
                    by_project.setdefault(item.project_id, []).append(item)
                for project_id, group in by_project.items():
                    await self._score_group(project_id, group)
            finally:
                self._busy -= 1
                for item in items:
                    self._done(item)
                    self._queue.task_done()

    async def _score_group(self, project_id: str, group: list[ActivationsReady]) -> None:
        sessions = ", ".join(item.session_id for item in group[:3]) + (
            f" and {len(group) - 3} more" if len(group) > 3 else ""
        )
        try:
            await self.score(project_id, [a for item in group for a in item.activations])
        except SkillsightError as exc:
            self.stats.store_failures += len(group)
            self.stats.last_error = f"sessions {sessions}: {exc}"[:500]
            log.error("scoring sessions %s failed: %s", sessions, exc)
            return
        except Exception as exc:  # the worker outlives any one batch
            if len(group) > 1:  # a value no encoder takes fails the batch: each alone, then
                for item in group:
                    await self._score_group(project_id, [item])
                return
            self.stats.store_failures += len(group)
            self.stats.last_error = f"sessions {sessions}: {exc}"[:500]
            log.exception("scoring sessions %s failed", sessions)
            return
        self.stats.sessions_scored += len(group)
        stamps = [item.rebuilt_at_us for item in group if item.rebuilt_at_us > 0]
        if stamps:
            waited_us = time.time_ns() // 1000 - min(stamps)
            self.stats.last_latency_ms = max(0.0, waited_us / 1000)
