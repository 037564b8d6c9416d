"""Where ``skillsight skills scorecard`` and ``skillsight gate`` read evaluations from: a running
service (``--api``) or the store itself (``--data`` / ``--clickhouse``). Both give the same
shapes, built by the same code (:mod:`skillsight.api.scorecard`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol
from urllib.parse import quote

from skillsight.api.evaluation_models import ScorecardOut, ScoredActivationOut
from skillsight.api.scorecard import scorecard, scored_activation, window_start
from skillsight.collector.store import Store
from skillsight.errors import SkillsightError


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
        rows = self.store.evaluations_below(
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
        self.api = api.rstrip("/")
        self.headers = {"x-skillsight-key": key} if key else {}

    def _get(self, path: str, params: dict[str, Any]) -> Any:
        import httpx

        clean = {k: v for k, v in params.items() if v not in (None, "")}
        try:
            response = httpx.get(self.api + path, params=clean, headers=self.headers, timeout=60)
        except httpx.HTTPError as exc:
            raise SkillsightError(f"cannot reach {self.api}: {exc}") from exc
        if response.status_code != 200:
            raise SkillsightError(
                f"{self.api} answered {response.status_code}: {response.text[:300]}"
            )
        return response.json()

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
