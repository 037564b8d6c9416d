"""The web UI: server-rendered pages for triage and skill scorecards, served by the API at ``/``.

Templates and static assets live in this package (nothing from a CDN, nothing fetched at run
time). Every page reads the read models of :mod:`skillsight.reports`, is paged and filtered on
the server, and has a stable URL; ``docs/ui.md`` tells what each page shows.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles

from skillsight.api.ui import (
    _pages_activity,
    _pages_clusters,
    _pages_goldens,
    _pages_site,
    _pages_skills,
)
from skillsight.api.ui._auth import ForeignPost, LoginRequired, login_redirect
from skillsight.api.ui._render import STATIC

STATIC_PATH = "/ui/static"

__all__ = ["STATIC_PATH", "install_ui"]


async def _login_required(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, LoginRequired)
    return login_redirect(exc.next_url)


async def _foreign_post(request: Request, exc: Exception) -> Response:
    return PlainTextResponse("a form of another site cannot post here", status_code=403)


def install_ui(app: FastAPI) -> None:
    """Add the UI's pages, static assets and handlers to ``app``."""
    for module in (_pages_site, _pages_clusters, _pages_activity, _pages_skills, _pages_goldens):
        app.include_router(module.router)
    app.mount(STATIC_PATH, StaticFiles(directory=STATIC), name="ui-static")
    app.add_exception_handler(LoginRequired, _login_required)
    app.add_exception_handler(ForeignPost, _foreign_post)
