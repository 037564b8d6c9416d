"""The evaluators the service runs (the deterministic seven on everything, plus the LLM judges
when a judge model is configured, each on its sampled share) and the scheduler that runs them."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from datetime import time as dt_time

from skillsight.config import Settings
from skillsight.errors import ConfigError
from skillsight.evaluators import Registry, deterministic_registry
from skillsight.evaluators.judges import RecordedSpend, judge_registry
from skillsight.evaluators.scheduler import (
    ContextAssembler,
    EvaluationScheduler,
    parse_rates,
    split_names,
)
from skillsight.store import Store

log = logging.getLogger(__name__)

# Rubrics whose prompt shows the agent's text around the decision, read from the trajectory.
_TRAJECTORY_RUBRICS = frozenset({"dispatch"})


@dataclass(frozen=True)
class ServiceEvaluators:
    registry: Registry
    rates: dict[str, float] = field(default_factory=dict)
    judges: str = ""
    """One line for the log: which judges run, or why none do."""
    judge_names: tuple[str, ...] = ()

    @property
    def needs_trajectories(self) -> bool:
        return bool(_TRAJECTORY_RUBRICS & set(self.registry.names))


def service_evaluators(settings: Settings, store: Store | None = None) -> ServiceEvaluators:
    """Deterministic evaluators and configured judges; ``SKILLSIGHT_EVAL_SAMPLE`` rates win over
    ``SKILLSIGHT_JUDGE_SAMPLE_RATE`` for the evaluators it names. With ``store``, the judges'
    daily spend cap counts what the store's evaluation rows say was spent today."""
    registry = deterministic_registry()
    setup = judge_registry(
        settings, recorded_spend=None if store is None else _recorded_spend(store)
    )
    for judge in setup.registry or ():
        registry.register(judge)
    rates = {**setup.rates, **parse_rates(settings.eval_sample, registry.names)}
    judge_names = tuple(judge.name for judge in setup.registry or ())
    return ServiceEvaluators(registry, rates, setup.reason, judge_names)


def _recorded_spend(store: Store) -> RecordedSpend:
    def spent(day: date) -> float:
        return store.evaluations.judge_spend_since(datetime.combine(day, dt_time(), tzinfo=UTC))

    return spent


def build_scheduler(
    store: Store, settings: Settings, *, warm_up: bool = False
) -> EvaluationScheduler:
    """The scheduler the service runs, configured by the ``eval_*`` settings, with the LLM
    judges when ``SKILLSIGHT_JUDGE_MODEL`` names one. ``warm_up`` (a long-running process) loads
    the embedding model at once rather than on the first activation."""
    service = service_evaluators(settings, store)
    registry = service.registry
    log.info("evaluation: %s", service.judges)
    wanted = split_names(settings.eval_evaluators)
    unknown = sorted(wanted - set(registry.names))
    if unknown:
        raise ConfigError(
            f"SKILLSIGHT_EVAL_EVALUATORS names unknown evaluators {unknown}; "
            f"known: {', '.join(registry.names)}"
        )
    names = [name for name in registry.names if name in wanted] or None
    return EvaluationScheduler(
        store,
        registry=registry,
        evaluators=names,
        rates=service.rates,
        assembler=ContextAssembler(
            store,
            trajectories=service.needs_trajectories,
            # a judge answers an unchanged activation with its stored verdict
            judges=set(service.judge_names) & set(names or registry.names),
        ),
        skills=split_names(settings.eval_skills),
        agents=split_names(settings.eval_agents),
        projects=split_names(settings.eval_projects),
        concurrency=settings.eval_concurrency,
        queue_max=settings.eval_queue_max,
        worker=(settings.eval_worker_index, settings.eval_workers),
        retries=settings.eval_retries,
        backoff_s=settings.eval_retry_backoff_s,
        warm_up=warm_up and settings.eval_warm_up,
    )
