"""The REST routes, one module per resource."""

from __future__ import annotations

from fastapi import APIRouter

from skillsight.api._routes import (
    activations,
    catalogue,
    clusters,
    goldens,
    health,
    metrics,
    probes,
    skills,
    telemetry,
)

ROUTERS: tuple[APIRouter, ...] = (
    health.router,
    probes.router,
    metrics.router,
    telemetry.router,
    skills.router,
    catalogue.router,
    activations.router,
    clusters.router,
    goldens.router,
)

__all__ = ["ROUTERS"]
