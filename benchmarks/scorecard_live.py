"""Live traffic in ``skillsight bench scorecard``: the newest day written to since its refresh.

Under live traffic today is marked after its refresh almost all the time. With marks per hour
(migration 0023) the readers take the hours not written since the refresh from the hour rollups
and only the marked ones from the rows; a mark naming the whole day (how every mark was read
before) sends all of it to the rows. This times the skills list and the popular skill's 7-day
scorecard with the newest day's two latest hours marked for every skill, then with the day
marked whole, and the refresher's pass (CPU) that cleans each, then leaves the store clean.
:func:`sustain_live` keeps marking the newest hour for a while, as steady traffic does, and
counts what the refresher's passes cost with and without the service's hold.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from skillsight.reports import scorecard, window_start
from skillsight.store import Store

_MARK_HOURS = """
INSERT INTO scorecard_hour_marks (project_id, skill_name, day, hour, marked_at)
SELECT {project:String}, skill, {day:Date}, hour, now64(6)
FROM (SELECT arrayJoin({skills:Array(String)}) AS skill)
ARRAY JOIN {hours:Array(UInt8)} AS hour"""


Timer = Callable[[Callable[[], Any], int], tuple[Any, dict[str, float]]]


def time_live(
    store: Store,
    project: str,
    skills: tuple[str, ...],
    popular: str,
    end: datetime,
    timed: Timer,
    repeat: int,
) -> dict[str, Any]:
    """Reads (timed by ``timed``, the bench's cold, median and p95) and refresher passes with
    the newest day marked by the hour and whole."""
    rollups = store.scorecards.rollups
    margin, rollups.clock_margin_us = rollups.clock_margin_us, 0  # one process, one clock
    day = end.date().isoformat()
    hours = sorted({max(end.hour - 1, 0), end.hour})
    reads: list[dict[str, Any]] = []
    refresh_cpu_s: dict[str, float] = {}
    try:
        rollups.refresh_dirty()
        for marked in ("hours", "day"):
            if marked == "hours":
                params = {"project": project, "day": day, "skills": list(skills), "hours": hours}
                store.execute(_MARK_HOURS, params)
            else:
                for skill in skills:
                    rollups.mark(project, skill, [day])
            reads += _reads(store, project, popular, end, marked, timed, repeat)
            started = time.process_time()
            rollups.refresh_dirty()
            refresh_cpu_s[marked] = round(time.process_time() - started, 3)
    finally:
        rollups.clock_margin_us = margin
    return {"day": day, "hours": hours, "reads": reads, "refresh_cpu_s": refresh_cpu_s}


def sustain_live(
    store: Store,
    project: str,
    skills: tuple[str, ...],
    end: datetime,
    seconds: float,
    *,
    interval_s: float = 1.0,
    hold_s: float = 12.0,
) -> dict[str, Any]:
    """Steady traffic, time-scaled: the newest hour of every skill marked five times per
    refresher interval (a score a second against the service's 5 s passes), a pass every
    ``interval_s``, for ``seconds``; first with no hold, then holding a day refreshed less
    than ``hold_s`` ago (the service's 60 s against its 5 s passes, scaled by 1/5). The
    refresher's CPU over each run, and what it refreshed."""
    rollups = store.scorecards.rollups
    margin, rollups.clock_margin_us = rollups.clock_margin_us, 0  # one process, one clock
    params: dict[str, Any] = {
        "project": project,
        "day": end.date().isoformat(),
        "skills": list(skills),
        "hours": [end.hour],
    }
    runs: dict[str, dict[str, float]] = {}
    try:
        for name, hold in (("no_hold", 0.0), ("hold", hold_s)):
            rollups.refresh_dirty(sweep=True)
            cpu, passes, days, held = 0.0, 0, 0, 0
            started = time.monotonic()
            due = started
            while (now := time.monotonic()) - started < seconds:
                store.execute(_MARK_HOURS, params)
                if now >= due:
                    before = time.process_time()
                    days += rollups.refresh_dirty(hold_us=round(hold * 1e6))
                    cpu += time.process_time() - before
                    passes, held, due = passes + 1, held + rollups.held, due + interval_s
                time.sleep(interval_s / 5)
            runs[name] = {
                "passes": passes,
                "days_refreshed": days,
                "days_held": held,
                "refresher_cpu_s": round(cpu, 3),
                "cpu_share": round(cpu / seconds, 4),
            }
        rollups.refresh_dirty()
    finally:
        rollups.clock_margin_us = margin
    return {
        "seconds": seconds,
        "interval_s": interval_s,
        "hold_s": hold_s,
        "skills": len(skills),
    } | runs


def _reads(
    store: Store,
    project: str,
    popular: str,
    end: datetime,
    marked: str,
    timed: Timer,
    repeat: int,
) -> list[dict[str, Any]]:
    out = []
    for window in ("7d", "30d", "all"):
        since = window_start(window, end)

        def overview(since: Any = since) -> Any:
            return store.scorecards.overview(project, since=since)

        found, times = timed(overview, repeat)
        listed = sum(int(s["activations"]) for s in found["skills"])
        out.append(
            {"query": "skills_list", "marked": marked, "window": window, "activations": listed}
            | times
        )
    since = window_start("7d", end)

    def card() -> Any:
        return scorecard(store, project, popular, window="7d", since=since)

    result, times = timed(card, repeat)
    out.append(
        {"query": "scorecard", "marked": marked, "window": "7d", "activations": result.activations}
        | times
    )
    return out
