"""Liveness, the services' state, and row counts."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter

from skillsight.api._deps import ProjectId, ServicesDep, StoreDep

router = APIRouter(tags=["service"])


@router.get("/healthz")
async def healthz(services: ServicesDep) -> dict[str, object]:
    """Liveness and the services' state (queue fill, rows written, rebuild and evaluation)."""
    ok = await asyncio.to_thread(services.store.ping)
    return {"ok": ok, **services.health()}


@router.get("/api/v1/stats")
async def stats(project_id: ProjectId, store: StoreDep) -> dict[str, dict[str, int]]:
    """Rows stored for the project: physical rows and distinct spans / events."""
    spans_count = await asyncio.to_thread(store.spans.count, project_id)
    events_count = await asyncio.to_thread(store.events.count, project_id)
    return {"spans": spans_count, "events": events_count}
