"""The evaluators the service runs: the deterministic seven on everything, plus the LLM judges
when a judge model is configured, each judge on its sampled share."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from datetime import time as dt_time

from skillsight.collector.store import Store
from skillsight.config import Settings
from skillsight.evaluators._registry import Registry, deterministic_registry
from skillsight.evaluators._sched_policy import parse_rates
from skillsight.evaluators.judges import RecordedSpend, judge_registry

# Rubrics whose prompt shows the agent's text around the decision, read from the trajectory.
_TRAJECTORY_RUBRICS = frozenset({"dispatch"})


@dataclass(frozen=True)
class ServiceEvaluators:
    registry: Registry
    rates: dict[str, float] = field(default_factory=dict)
    judges: str = ""
    """One line for the log: which judges run, or why none do."""

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
    return ServiceEvaluators(registry, rates, setup.reason)


def _recorded_spend(store: Store) -> RecordedSpend:
    def spent(day: date) -> float:
        return store.judge_spend_since(datetime.combine(day, dt_time(), tzinfo=UTC))

    return spent
