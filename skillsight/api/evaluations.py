"""Evaluation in the service: the scheduler's wiring and the scorecard / gate routes."""

# No postponed annotations here: the routes are defined inside a function, and FastAPI must
# resolve their Annotated parameters (which close over the project dependency) at definition.

import asyncio
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Query

from skillsight.api.evaluation_models import (
    ActivationDetailOut,
    ScorecardOut,
    ScoredActivationOut,
)
from skillsight.api.scorecard import (
    DEFAULT_WINDOW,
    evaluation_events,
    evaluations_of,
    scorecard,
    scored_activation,
    window_start,
)
from skillsight.collector.activations import Activation
from skillsight.collector.service import Collector
from skillsight.collector.store import Store
from skillsight.config import Settings
from skillsight.errors import SkillsightError
from skillsight.evaluators.scheduler import EvaluationScheduler


async def wire_scheduler(
    stack: AsyncExitStack,
    store: Store,
    settings: Settings,
    collector: Collector,
    *,
    warm_up: bool = False,
) -> EvaluationScheduler | None:
    """Enter an evaluation scheduler fed by the collector's finalizer, before the collector is
    entered (so the scheduler outlives the finalizer's last flush); None when disabled.
    ``warm_up`` (the long-running service) loads the embedding model at once."""
    if not settings.eval_enabled or collector.finalizer is None:
        return None
    scheduler = EvaluationScheduler.from_settings(store, settings)
    scheduler.warm_up = warm_up and settings.eval_warm_up
    collector.finalizer.subscribe(scheduler.submit)
    await stack.enter_async_context(scheduler)
    return scheduler


def with_evaluations(
    store: Store, project_id: str, found: Sequence[Activation]
) -> list[ActivationDetailOut]:
    """Activations with their stored evaluations (one query for all of them); serve them
    with ``response_model_exclude_unset``."""
    rows = store.evaluations_of(project_id, [a.activation_id for a in found])
    out = []
    for activation in found:
        record = activation.model_dump()
        scored = rows[activation.activation_id]
        if scored:  # left unset otherwise, so that the route leaves the keys out
            record["evaluations"] = evaluations_of(scored, activation.rebuilt_at)
            record["evaluation_events"] = evaluation_events(scored)
        out.append(ActivationDetailOut.model_validate(record))
    return out


Window = Annotated[
    str,
    Query(max_length=16, description="activations started within this span: 24h, 7d, 4w, or all"),
]
Version = Annotated[str, Query(max_length=128, description="only this skill version")]
Since = Annotated[
    datetime | None,
    Query(description="activations started at or after (ISO 8601; naive = UTC); overrides window"),
]


def _since(window: str, since: datetime | None) -> datetime | None:
    if since is not None:
        return since
    try:
        return window_start(window)
    except SkillsightError as exc:
        raise HTTPException(400, str(exc)) from exc


def evaluation_router(store_of: Callable[[], Store], project: Any) -> APIRouter:
    """Scorecard and scored-activation routes; ``project`` is the app's project dependency."""
    router = APIRouter(tags=["evaluations"])
    ProjectId = Annotated[str, Depends(project)]
    SkillName = Annotated[str, Path(max_length=256)]

    @router.get(
        "/api/v1/skills/{name}/scorecard",
        response_model=ScorecardOut,
        responses={400: {"description": "a malformed window"}},
    )
    async def skill_scorecard(
        project_id: ProjectId,
        name: SkillName,
        window: Window = DEFAULT_WINDOW,
        version: Version = "",
        since: Since = None,
    ) -> ScorecardOut:
        """A skill's evaluations: activation count, pass rate and mean score per evaluator,
        overall and per skill version, with a per-day trend."""
        start = _since(window, since)
        return await asyncio.to_thread(
            scorecard,
            store_of(),
            project_id,
            name,
            window="since" if since is not None else window,
            since=start,
            version=version,
        )

    @router.get(
        "/api/v1/skills/{name}/evaluations",
        response_model=list[ScoredActivationOut],
        responses={400: {"description": "a malformed window"}},
    )
    async def skill_evaluations(
        project_id: ProjectId,
        name: SkillName,
        below: Annotated[
            float, Query(ge=0, le=1.000001, description="scores strictly under this")
        ] = 1.0,
        evaluator: Annotated[str, Query(max_length=128)] = "",
        window: Window = DEFAULT_WINDOW,
        version: Version = "",
        since: Since = None,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    ) -> list[ScoredActivationOut]:
        """The skill's current evaluations scoring under ``below`` (what ``skillsight gate``
        prints), with their cited steps and findings, newest activation first."""
        start = _since(window, since)
        rows = await asyncio.to_thread(
            store_of().evaluations_below,
            project_id,
            name,
            below,
            evaluator=evaluator,
            version=version,
            since=start,
            limit=limit,
        )
        return [scored_activation(r) for r in rows]

    return router
