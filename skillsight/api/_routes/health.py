"""Liveness, the services' state, row counts, and the project's dead letters.

``/healthz`` shows as much as the caller may see. Without configured API keys (a single-user,
loopback service) and to ``admin`` keys: everything, including the writer's last error and the
spool. To any other known key: whether the service is up and accepting, without counters or
error texts (which may quote another tenant's rows). Without a known key: liveness only.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from skillsight.api._deps import ProjectId, ServicesDep, StoreDep
from skillsight.errors import SkillsightError
from skillsight.tenancy import ADMIN, identify

router = APIRouter(tags=["service"])

_STORE_TIMEOUT_S = 5.0
# What any known key may see of the service's state.
_PUBLIC = ("role", "store", "ack", "accepting", "writer_healthy")


class DeadLetterOut(BaseModel):
    """A row the store refused: when, why (ClickHouse's message) and the row as decoded."""

    signal: str
    dead_at: str
    trace_id: str
    item_id: str
    reason: str
    row_json: str


@router.get("/healthz")
async def healthz(request: Request, services: ServicesDep) -> dict[str, object]:
    """Liveness; with an API key, whether ingest is accepting; with an admin key (or no keys
    configured), the services' state: queue fill, rows written, spool, dead letters, crash
    exposure, rebuild and evaluation."""
    try:
        ok = await asyncio.wait_for(asyncio.to_thread(services.store.ping), _STORE_TIMEOUT_S)
    except (TimeoutError, SkillsightError):
        ok = False
    caller = identify(services.settings.api_keys, request.headers)
    if caller is None:
        return {"ok": ok}
    health = services.health()
    if ADMIN in caller.scopes:
        return {"ok": ok, **health}
    return {"ok": ok, **{k: v for k, v in health.items() if k in _PUBLIC}}


@router.get("/api/v1/stats")
async def stats(project_id: ProjectId, store: StoreDep) -> dict[str, dict[str, int]]:
    """Rows stored for the project: physical rows and distinct spans / events."""
    spans_count = await asyncio.to_thread(store.spans.count, project_id)
    events_count = await asyncio.to_thread(store.events.count, project_id)
    return {"spans": spans_count, "events": events_count}


@router.get("/api/v1/dead-letters", response_model=list[DeadLetterOut])
async def dead_letters(
    project_id: ProjectId, store: StoreDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100
) -> list[DeadLetterOut]:
    """Rows of the project the store refused (newest first), each with ClickHouse's reason
    and the row as decoded, to fix and send again."""
    rows = await asyncio.to_thread(store.dead_letters.find, project_id, limit=limit)
    return [DeadLetterOut(**row) for row in rows]
