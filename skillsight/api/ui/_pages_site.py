"""Login and logout, the "go to" box, and what a page says when it has nothing to show."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse, Response

from skillsight.api._deps import StoreDep
from skillsight.api.ui._auth import (
    PageProject,
    SameSite,
    forget_key,
    form_of,
    keys_configured,
    project_of_key,
    remember_key,
    safe_next,
)
from skillsight.api.ui._render import render

router = APIRouter(include_in_schema=False)


@router.get("/login")
async def login_page(
    request: Request, next: Annotated[str, Query(max_length=2048)] = "/"
) -> Response:
    return render(
        request,
        "login.html",
        title="Enter your API key",
        next=safe_next(next),
        failed=False,
        needed=keys_configured(request),
    )


@router.post("/login", dependencies=[SameSite])
async def login(request: Request) -> Response:
    form = await form_of(request)
    key = form.get("key", "").strip()
    target = safe_next(form.get("next", "/"))
    if not keys_configured(request):
        return RedirectResponse(target, status_code=303)
    if not key or project_of_key(request, key) is None:
        return render(
            request,
            "login.html",
            status_code=401,
            title="Enter your API key",
            next=target,
            failed=True,
            needed=True,
        )
    response = RedirectResponse(target, status_code=303)
    remember_key(response, request, key)
    return response


@router.post("/logout", dependencies=[SameSite])
async def logout() -> Response:
    response = RedirectResponse("/login", status_code=303)
    forget_key(response)
    return response


@router.get("/go")
async def go(
    request: Request,
    project: PageProject,
    store: StoreDep,
    q: Annotated[str, Query(max_length=256)] = "",
) -> Response:
    """Jump to what ``q`` names: an activation id, a session id, else skills matching it."""
    text = q.strip()
    if text:
        if await asyncio.to_thread(store.activations.get, project, text) is not None:
            return RedirectResponse(f"/activations/{text}", status_code=303)
        if await asyncio.to_thread(store.trajectories.page, project, text, limit=0) is not None:
            return RedirectResponse(f"/sessions/{text}", status_code=303)
    return RedirectResponse(f"/skills?q={text}&window=all", status_code=303)
