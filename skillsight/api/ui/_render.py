"""Templates (inside the package) and the filters they format numbers, times and verdicts with."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
from fastapi import Request
from fastapi.templating import Jinja2Templates
from starlette.responses import Response

from skillsight.api.ui import _charts

HERE = Path(__file__).parent
NONE = "\u2013"  # what a missing value reads as
STATIC = HERE / "static"


def when(value: str | None) -> str:
    """ISO 8601 -> ``2026-11-22 12:56:08`` (UTC, to the second)."""
    if not value:
        return NONE
    return value.replace("T", " ")[:19]


def ms(value: float | None) -> str:
    if value is None:
        return NONE
    if value >= 60_000:
        return f"{value / 60_000:.1f} min"
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{value:.0f} ms"


def usd(value: float | None) -> str:
    if not value:
        return "$0"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def pct(value: float | None) -> str:
    return NONE if value is None else f"{value:.0%}"


def score(value: float | None) -> str:
    return NONE if value is None else f"{value:.2f}"


def short(value: str | None, length: int = 8) -> str:
    return (value or "")[:length] or NONE


def verdict(evaluation: Any) -> str:
    """``pass``, ``fail``, ``n/a`` (the evaluator did not apply) or ``error`` (it could not
    score): only a scored verdict is ever shown as a pass or a failure."""
    error = getattr(evaluation, "error", "") or ""
    label = getattr(evaluation, "label", "") or ""
    passed = getattr(evaluation, "passed", None)
    if error or label == "error":
        return "error"
    if passed is None:
        return "n/a"
    return "pass" if passed else "fail"


def pretty(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return str(value)
    return json.dumps(value, indent=2, ensure_ascii=False)


def age(value: str | None, now: datetime | None = None) -> str:
    """How long ago an ISO 8601 moment was, coarsely."""
    if not value:
        return NONE
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    seconds = ((now or datetime.now(moment.tzinfo)) - moment).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(
        when=when, ms=ms, usd=usd, pct=pct, score=score, short=short, pretty=pretty, age=age
    )
    env.globals.update(verdict=verdict, colour_of=_charts.colour_of)
    return env


TEMPLATES = Jinja2Templates(env=_environment())


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> Response:
    """The page ``template`` with ``context``; every page knows whether keys are in use."""
    services = request.app.state.services
    context.setdefault("keys_in_use", bool(services.settings.api_keys))
    context.setdefault("title", "")
    context.setdefault("nav", "")
    return TEMPLATES.TemplateResponse(request, template, context, status_code=status_code)
