"""What every route depends on: the caller's project and the process's services."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from skillsight.runtime import Services
from skillsight.store import Store
from skillsight.tenancy import READ, Forbidden, Unauthenticated, project_for


def services_of(request: Request) -> Services:
    """The services the app was started with (set when its lifespan starts)."""
    services: Services = request.app.state.services
    return services


def store_of(request: Request) -> Store:
    return services_of(request).store


def project_of(request: Request) -> str:
    """The caller's project, from an API key that may read (``default`` when no keys are
    configured): 401 without a known key, 403 for a key that may only ingest."""
    try:
        return project_for(services_of(request).settings.api_keys, request.headers, READ)
    except Unauthenticated as exc:
        raise HTTPException(401, str(exc)) from exc
    except Forbidden as exc:
        raise HTTPException(403, str(exc)) from exc


ProjectId = Annotated[str, Depends(project_of)]
StoreDep = Annotated[Store, Depends(store_of)]
ServicesDep = Annotated[Services, Depends(services_of)]
