"""Who is looking: the API key entered once on the login page, kept in a cookie for the site.

Without configured API keys every page is project ``default`` (a loopback-only local service).
With keys, a page asked for without a known key answers with the login page and nothing of any
project. The cookie is ``HttpOnly`` and ``SameSite=Strict``, and every form post must come from
this site (its ``Origin``), so another site can neither read the key nor act with it.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs, quote, urlsplit

from fastapi import Depends, Request
from fastapi.responses import RedirectResponse, Response

from skillsight.api._deps import services_of
from skillsight.config import DEFAULT_PROJECT
from skillsight.tenancy import KEY_HEADER, READ, Forbidden, Unauthenticated, project_for

COOKIE = "skillsight_key"
COOKIE_MAX_AGE = 30 * 24 * 3600


class LoginRequired(Exception):
    """The page needs an API key this service knows; the handler shows the login page."""

    def __init__(self, next_url: str) -> None:
        super().__init__(next_url)
        self.next_url = next_url


class ForeignPost(Exception):
    """A form post from another site (its ``Origin`` is not this one)."""


def keys_configured(request: Request) -> bool:
    return bool(services_of(request).settings.api_keys)


def project_of_key(request: Request, key: str) -> str | None:
    """The project ``key`` opens for reading, or None (an ingest-only key opens nothing)."""
    try:
        return project_for(services_of(request).settings.api_keys, {KEY_HEADER: key}, READ)
    except (Unauthenticated, Forbidden):
        return None


def page_project(request: Request) -> str:
    """The viewer's project: from the cookie (or the API key header, for scripts)."""
    keys = services_of(request).settings.api_keys
    if not keys:
        return DEFAULT_PROJECT
    key = request.headers.get(KEY_HEADER) or request.cookies.get(COOKIE, "")
    project = project_of_key(request, key) if key else None
    if project is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise LoginRequired(target)
    return project


PageProject = Annotated[str, Depends(page_project)]


def same_site(request: Request) -> None:
    """Refuse a state-changing post that another site's page sent."""
    origin = request.headers.get("origin")
    if origin and origin != "null":
        host = request.headers.get("host", "")
        if urlsplit(origin).netloc != host:
            raise ForeignPost(origin)


SameSite = Depends(same_site)


async def form_of(request: Request) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body as a dict (first value of each field)."""
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}


def safe_next(value: str) -> str:
    """A local path to go back to after logging in (never another site)."""
    if not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


def login_redirect(next_url: str) -> Response:
    return RedirectResponse(f"/login?next={quote(safe_next(next_url), safe='/')}", status_code=303)


def remember_key(response: Response, request: Request, key: str) -> None:
    response.set_cookie(
        COOKIE,
        key,
        max_age=COOKIE_MAX_AGE,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def forget_key(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
