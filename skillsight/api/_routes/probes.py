"""Kubernetes-style probes: ``/livez`` (the process answers) and ``/readyz`` (this role can do
its work now). Neither needs an API key: orchestrators and load balancers call them."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from skillsight.api._deps import ServicesDep
from skillsight.errors import SkillsightError
from skillsight.runtime import Services

router = APIRouter(tags=["service"])

# A probe that waits on a stuck store must not hang the prober.
_STORE_TIMEOUT_S = 2.0


@router.get("/livez")
async def livez() -> dict[str, bool]:
    """The process is up and its event loop answers. Depends on nothing else, so a store
    outage never gets a process restarted."""
    return {"alive": True}


@router.get("/readyz", response_model=None)
async def readyz(services: ServicesDep) -> JSONResponse:
    """200 when this role can do its work now, else 503 with the reasons: the store answers,
    and a collector's writer is healthy with room in its queue (a collector that is not ready
    leaves the load balancer's rotation instead of refusing requests)."""
    checks = await readiness(services)
    ready = all(checks.values())
    body = {"ready": ready, "role": services.role.name, "checks": checks}
    return JSONResponse(body, status_code=200 if ready else 503)


async def readiness(services: Services) -> dict[str, bool]:
    """Each check this role's readiness rests on, and whether it passes."""
    checks: dict[str, bool] = {}
    try:
        checks["store"] = await asyncio.wait_for(
            asyncio.to_thread(services.store.ping), _STORE_TIMEOUT_S
        )
    except (TimeoutError, SkillsightError):
        checks["store"] = False
    collector = services.collector
    if collector is not None:
        checks["writer"] = collector.writer.healthy
        checks["queue_has_room"] = collector.queue.held_rows < collector.queue.max_rows
    return checks
