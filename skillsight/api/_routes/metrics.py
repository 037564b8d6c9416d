"""``/metrics``: the process's counters in the Prometheus text format (version 0.0.4), for
dashboards, alerts and autoscaling (docs/operations.md says what to watch). Every role serves
it; each family appears where its service runs. No API key: scrapers call it."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from skillsight.api._deps import ServicesDep
from skillsight.runtime import Services

router = APIRouter(tags=["service"])

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@router.get("/metrics", response_class=PlainTextResponse)
async def metrics(services: ServicesDep) -> PlainTextResponse:
    """Queue depth, rows written, refused requests, rebuild and evaluation lag, and the rest of
    each service's counters."""
    return PlainTextResponse("".join(render(services)), media_type=CONTENT_TYPE)


def _family(name: str, kind: str, help: str, *samples: tuple[str, float]) -> Iterator[str]:
    yield f"# HELP skillsight_{name} {help}\n# TYPE skillsight_{name} {kind}\n"
    for labels, value in samples:
        yield f"skillsight_{name}{labels} {float(value)!r}\n"


def _one(name: str, kind: str, help: str, value: float) -> Iterator[str]:
    return _family(name, kind, help, ("", value))


def render(services: Services) -> Iterator[str]:
    """The exposition text, family by family."""
    role, store = services.role.name, services.store.kind
    yield from _family(
        "info", "gauge", "The process's role and store.", (f'{{role="{role}",store="{store}"}}', 1)
    )
    collector = services.collector
    if collector is not None:
        queue, written = collector.queue, collector.writer.written
        yield from _one("queue_rows", "gauge", "Rows held for writing.", queue.held_rows)
        yield from _one(
            "queue_capacity_rows", "gauge", "Rows the queue holds before refusing.", queue.max_rows
        )
        yield from _one(
            "queue_fill_ratio",
            "gauge",
            "Share of the write queue in use (scale collectors on it).",
            queue.held_rows / queue.max_rows if queue.max_rows else 0.0,
        )
        yield from _family(
            "rows_written_total",
            "counter",
            "Rows committed to ClickHouse, by signal.",
            ('{signal="traces"}', written["traces"]),
            ('{signal="logs"}', written["logs"]),
        )
        yield from _one(
            "requests_refused_total",
            "counter",
            "OTLP requests refused with 429/503 or RESOURCE_EXHAUSTED (queue full).",
            queue.refused_requests,
        )
        yield from _one(
            "writer_healthy", "gauge", "1 while the last write succeeded.", collector.writer.healthy
        )
    finalizer = services.finalizer
    if finalizer is not None:
        stats = finalizer.stats
        yield from _one(
            "rebuild_lag_seconds",
            "gauge",
            "Since the newest row of the session waiting longest to be rebuilt.",
            finalizer.lag_s(),
        )
        yield from _one(
            "rebuild_pending_sessions",
            "gauge",
            "Sessions with rows not rebuilt.",
            finalizer.pending,
        )
        yield from _one(
            "rebuild_sessions_total", "counter", "Sessions rebuilt.", stats.sessions_rebuilt
        )
        yield from _one(
            "rebuild_activations_total",
            "counter",
            "Activations rebuilt.",
            stats.activations_rebuilt,
        )
        yield from _one("rebuild_errors_total", "counter", "Rebuild failures.", stats.errors)
        yield from _one(
            "rebuild_last_pass_seconds",
            "gauge",
            "Duration of the last pass.",
            stats.last_pass_ms / 1e3,
        )
    scheduler = services.scheduler
    if scheduler is not None:
        s = scheduler.stats
        yield from _one(
            "evaluation_lag_seconds",
            "gauge",
            "Since the oldest rebuild still queued or being scored was stored.",
            scheduler.lag_s(),
        )
        yield from _one(
            "evaluation_queued_sessions",
            "gauge",
            "Sessions waiting to be scored.",
            scheduler.queued,
        )
        yield from _one(
            "evaluation_sessions_total", "counter", "Sessions scored.", s.sessions_scored
        )
        yield from _one(
            "evaluation_activations_total",
            "counter",
            "Activations received for scoring (this worker's and others').",
            s.activations_received,
        )
        yield from _one(
            "evaluations_written_total",
            "counter",
            "Evaluation rows written.",
            s.evaluations_written,
        )
        yield from _one(
            "evaluation_store_failures_total",
            "counter",
            "Sessions whose scores could not be written after every retry.",
            s.store_failures,
        )
        yield from _one(
            "evaluation_last_latency_seconds",
            "gauge",
            "From the last scored session's rebuild to its stored scores.",
            s.last_latency_ms / 1e3,
        )
        yield from _judges(scheduler.health().get("evaluator_health"))
    poller = services.poller
    if poller is not None:
        yield from _one(
            "evaluation_sessions_found_total",
            "counter",
            "Rebuilt sessions found in the store for scoring.",
            poller.sessions_found,
        )


def _judges(shown: object) -> Iterator[str]:
    """Each judge's calls, reused verdicts and the day's spend (``evaluator_health``)."""
    judges = {
        name: health
        for name, health in (shown.items() if isinstance(shown, dict) else ())
        if isinstance(health, dict) and "model_calls" in health
    }
    if not judges:
        return
    yield from _family(
        "judge_model_calls_total",
        "counter",
        "Calls to the judge model (failed ones too).",
        *((f'{{judge="{n}"}}', h["model_calls"]) for n, h in judges.items()),
    )
    yield from _family(
        "judge_verdicts_reused_total",
        "counter",
        "Verdicts answered without a call: from the cache or the store (a rebuilt session).",
        *(
            (f'{{judge="{n}",source="{source}"}}', h[key])
            for n, h in judges.items()
            for source, key in (("cache", "cached"), ("store", "stored_reused"))
        ),
    )
    yield from _family(
        "judge_spent_today_usd",
        "gauge",
        "Dollars judges spent today (UTC), every process's as the store says.",
        *((f'{{judge="{n}"}}', h["spent_today_usd"]) for n, h in judges.items()),
    )
    yield from _family(
        "judge_daily_cap_usd",
        "gauge",
        "The daily spend cap; judging stops when it is reached.",
        *((f'{{judge="{n}"}}', h["daily_cap_usd"]) for n, h in judges.items()),
    )
