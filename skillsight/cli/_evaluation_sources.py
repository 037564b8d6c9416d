"""Where ``skillsight skills scorecard`` and ``skillsight gate`` read evaluations from: a running
service (``--api``) or the store itself (``--data`` / ``--clickhouse``). Both give the same
shapes, built by the same code (:mod:`skillsight.reports._scorecard`)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from skillsight.cli._api import ServiceClient
from skillsight.reports import ScorecardOut, ScoredActivationOut

if TYPE_CHECKING:  # the store's read models are loaded by the commands that open the store
    from skillsight.store import Store


class EvaluationSource(Protocol):
    def scorecard(
        self, skill: str, *, window: str, since: datetime | None, version: str
    ) -> ScorecardOut: ...

    def below(
        self,
        skill: str,
        evaluator: str,
        threshold: float,
        *,
        window: str,
        since: datetime | None,
        version: str,
        limit: int,
    ) -> list[ScoredActivationOut]: ...


class StoreEvaluations:
    def __init__(self, store: Store, project_id: str) -> None:
        self.store = store
        self.project_id = project_id

    def scorecard(
        self, skill: str, *, window: str, since: datetime | None, version: str
    ) -> ScorecardOut:
        from skillsight.reports import scorecard

        return scorecard(
            self.store, self.project_id, skill, window=window, since=since, version=version
        )

    def below(
        self,
        skill: str,
        evaluator: str,
        threshold: float,
        *,
        window: str,
        since: datetime | None,
        version: str,
        limit: int,
    ) -> list[ScoredActivationOut]:
        from skillsight.reports import scored_activation, window_start

        rows = self.store.scorecards.below(
            self.project_id,
            skill,
            threshold,
            evaluator=evaluator,
            version=version,
            since=since if since is not None else window_start(window),
            limit=limit,
        )
        return [scored_activation(r) for r in rows]


class ApiEvaluations:
    def __init__(self, api: str, key: str | None) -> None:
        self._client = ServiceClient(api, key)

    def _get(self, path: str, params: dict[str, Any]) -> Any:
        return self._client.get(path, {k: v for k, v in params.items() if v != ""})

    def scorecard(
        self, skill: str, *, window: str, since: datetime | None, version: str
    ) -> ScorecardOut:
        params = {
            "window": window,
            "since": since.isoformat() if since else None,
            "version": version,
        }
        return ScorecardOut.model_validate(
            self._get(f"/api/v1/skills/{quote(skill, safe='')}/scorecard", params)
        )

    def below(
        self,
        skill: str,
        evaluator: str,
        threshold: float,
        *,
        window: str,
        since: datetime | None,
        version: str,
        limit: int,
    ) -> list[ScoredActivationOut]:
        params = {
            "below": threshold,
            "evaluator": evaluator,
            "window": window,
            "since": since.isoformat() if since else None,
            "version": version,
            "limit": limit,
        }
        rows = self._get(f"/api/v1/skills/{quote(skill, safe='')}/evaluations", params)
        return [ScoredActivationOut.model_validate(r) for r in rows]
