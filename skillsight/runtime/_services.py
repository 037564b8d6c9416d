"""The composition root: one function builds every service of a process from its Settings.

A process runs one *role* (DESIGN.md, *Scale-out*): ``all`` (the single-machine service),
``collector`` (OTLP in, no session state), ``worker`` (rebuild and evaluation), or ``api``
(reads only). :func:`build_services` enters the role's services in one exit stack, in the order
that keeps "nothing acknowledged is lost" and "nothing complete goes unscored":

1. the store (closed last);
2. the evaluation scheduler (left after everything that feeds it has flushed), and beside it
   the read-model refresher (the scorecard aggregates of the days it scored) and the clusterer,
   which assigns each failure the scheduler writes to its cluster (it polls the store every
   ``cluster_assign_poll_s``) and re-clusters on a schedule; failures scored in the last
   moments before a stop are not assigned online: the next run, which reads them from the
   store, clusters them;
3. the finalizer, which rebuilds sessions and feeds the scheduler (left after the writer has
   drained, so its final pass sees every acknowledged row), or, in a process that evaluates
   without rebuilding, the poller that finds rebuilt sessions in the store;
4. the collector and its batch writer (left first: its queue drains into the store).

Every collaborator can be injected (a store, a scheduler, a rebuild function), so tests build
the same graph the service runs.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace

from skillsight.clustering import Clusterer, clusterer_options
from skillsight.config import DEFAULT_PROJECT, Settings
from skillsight.errors import ConfigError
from skillsight.evaluators.scheduler import EvaluationScheduler, RebuiltSessionPoller
from skillsight.ingest.collector import Collector
from skillsight.rebuild.catalogue import register_skill_dirs, skill_dirs, store_catalogue
from skillsight.rebuild.finalizer import Finalizer
from skillsight.rebuild.rebuild_pass import RebuildFn
from skillsight.runtime._evaluation import build_scheduler
from skillsight.store import ReadModelRefresher, Store, open_store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Role:
    """Which stages a process runs."""

    name: str
    ingest: bool
    rebuild: bool
    evaluate: bool


ROLES: dict[str, Role] = {
    "all": Role("all", ingest=True, rebuild=True, evaluate=True),
    "collector": Role("collector", ingest=True, rebuild=False, evaluate=False),
    "worker": Role("worker", ingest=False, rebuild=True, evaluate=True),
    "rebuild": Role("rebuild", ingest=False, rebuild=True, evaluate=False),
    "evaluate": Role("evaluate", ingest=False, rebuild=False, evaluate=True),
    "api": Role("api", ingest=False, rebuild=False, evaluate=False),
}


def role_named(name: str) -> Role:
    try:
        return ROLES[name]
    except KeyError:
        raise ConfigError(f"unknown role {name!r}; known: {', '.join(ROLES)}") from None


@dataclass
class Services:
    """What a process runs; absent services are None."""

    settings: Settings
    store: Store
    role: Role = field(default_factory=lambda: ROLES["all"])
    collector: Collector | None = None
    finalizer: Finalizer | None = None
    scheduler: EvaluationScheduler | None = None
    poller: RebuiltSessionPoller | None = None
    clusterer: Clusterer | None = None
    refresher: ReadModelRefresher | None = None

    def health(self) -> dict[str, object]:
        """The state of every service, for ``/healthz`` and the CLI.

        ``caught_up``: nothing this process accepted is still on its way: every acknowledged
        row is committed (``rebuild.idle`` alone does not say so: it looks at committed rows
        only), every session they touched is rebuilt, and every rebuild is scored. Sessions
        waiting for their agent to settle do not count, as in ``rebuild.idle``."""
        # The queue first: ingest releases a batch's rows only after counting them written, so
        # a finalizer that reads idle after this has seen them.
        caught_up = (
            (self.collector is None or self.collector.queue.held_rows == 0)
            and (self.finalizer is None or self.finalizer.idle)
            and (self.scheduler is None or self.scheduler.idle)
        )
        health: dict[str, object] = {"role": self.role.name, "caught_up": caught_up}
        if self.collector is not None:
            health.update(self.collector.health())
        else:
            health["store"] = self.store.kind
        health["rebuild"] = self.finalizer.health() if self.finalizer else {"enabled": False}
        health["evaluation"] = self.scheduler.health() if self.scheduler else {"enabled": False}
        health["clustering"] = self.clusterer.health() if self.clusterer else {"enabled": False}
        health["read_models"] = self.refresher.health() if self.refresher else {"enabled": False}
        # the process's collector (skillsight.runtime.settle_heap): its young threshold, and the
        # objects of start-up it no longer walks
        health["gc"] = {"young_threshold": gc.get_threshold()[0], "frozen": gc.get_freeze_count()}
        return health


@asynccontextmanager
async def build_services(
    settings: Settings,
    *,
    role: Role | str = "all",
    store: Store | None = None,
    scheduler: EvaluationScheduler | None = None,
    rebuild: RebuildFn | None = None,
    shard: tuple[int, int] | None = None,
    warm_up: bool = False,
    clusterer: Clusterer | None = None,
) -> AsyncIterator[Services]:
    """Open the role's services, run them while the block runs, and stop them in order.

    ``store`` (given: left open) and ``scheduler`` replace the ones the settings would build;
    ``rebuild`` replaces the rebuild algorithm; ``shard`` is this process's share of the work
    (INDEX, COUNT; default ``SKILLSIGHT_WORKER_INDEX`` of ``SKILLSIGHT_WORKERS``): the sessions
    it rebuilds, or, in a process that evaluates without rebuilding, the activations it scores;
    ``warm_up`` loads the embedding model at start (long-running processes); ``clusterer``
    replaces the one the settings would build (it runs beside the scheduler).
    """
    role = role_named(role) if isinstance(role, str) else role
    shard = shard or (settings.worker_index, settings.workers)
    async with AsyncExitStack() as stack:
        if store is None:
            store = await asyncio.to_thread(open_store, settings)
            stack.push_async_callback(asyncio.to_thread, store.close)
        services = Services(settings, store, role)
        if settings.skills_dirs and role.name != "api":
            projects = sorted(set(settings.api_keys.values())) or [DEFAULT_PROJECT]
            report = await asyncio.to_thread(
                register_skill_dirs, store, skill_dirs(settings.skills_dirs), projects
            )
            log.info("catalogue: %d skills from %s", len(report.skills), settings.skills_dirs)
        rebuilding = role.rebuild and settings.rebuild_enabled
        # a process that rebuilds scores what it rebuilt; one that does not polls the store
        if role.evaluate and settings.eval_enabled and (rebuilding or not role.rebuild):
            services.scheduler = scheduler or build_scheduler(
                store, _scoring_share(settings, shard, rebuilding), warm_up=warm_up
            )
            await stack.enter_async_context(services.scheduler)
            if settings.scorecard_refresh_s > 0:  # the scorecard aggregates of what it scores
                services.refresher = ReadModelRefresher(
                    store,
                    interval_s=settings.scorecard_refresh_s,
                    hold_s=settings.scorecard_refresh_hold_s,
                    shard=shard,
                )
                await stack.enter_async_context(services.refresher)
            if settings.cluster_enabled:
                services.clusterer = clusterer or Clusterer(
                    store, options=clusterer_options(settings, worker=shard)
                )
                await stack.enter_async_context(services.clusterer)
        if role.ingest:
            services.collector = Collector(store, settings)
        if rebuilding:
            services.finalizer = _finalizer(store, settings, services.collector, rebuild, shard)
            if services.scheduler is not None:
                services.finalizer.subscribe(services.scheduler.submit)
            await stack.enter_async_context(services.finalizer)
        elif services.scheduler is not None:
            services.poller = RebuiltSessionPoller(
                store,
                services.scheduler,
                poll_s=settings.rebuild_poll_s,
                catchup_s=settings.rebuild_catchup_s,
            )
            await stack.enter_async_context(services.poller)
        if services.collector is not None:
            await stack.enter_async_context(services.collector)
        yield services


def _scoring_share(settings: Settings, shard: tuple[int, int], rebuilding: bool) -> Settings:
    """The settings the scheduler is built from. Beside a finalizer it scores every activation
    its finalizer rebuilt (its share of sessions is the share); alone, it takes the worker's
    share of activations, by id hash, unless ``eval_workers`` says otherwise."""
    if rebuilding:
        return replace(settings, eval_worker_index=0, eval_workers=1)
    if shard[1] > 1:
        return replace(settings, eval_worker_index=shard[0], eval_workers=shard[1])
    return settings


def _finalizer(
    store: Store,
    settings: Settings,
    collector: Collector | None,
    rebuild: RebuildFn | None,
    shard: tuple[int, int],
) -> Finalizer:
    return Finalizer(
        store,
        quiet_s=settings.rebuild_quiet_s,
        max_wait_s=settings.rebuild_max_wait_s,
        settle_s=settings.rebuild_settle_s,
        poll_s=settings.rebuild_poll_s,
        batch_max=settings.rebuild_batch_max,
        cache_mb=settings.rebuild_cache_mb,
        catchup_s=settings.rebuild_catchup_s,
        rebuild=rebuild,
        catalogue=store_catalogue(store),
        commits=collector.commits if collector is not None else None,
        shard=shard,
    )
