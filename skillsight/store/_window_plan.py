"""Where a window's days are read from: a clean day whole from the day rollups
(``scorecard_days``); a day whose newest refresh wrote its hours, the hours marked before that
refresh from the hour rollups (``scorecard_hours``) and the others from the copied rows; any
other day whole from the rows. The window's first day is partial: the hour it starts in is read
from the rows, its later hours as any day's."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from skillsight.store._day_states import DayState, day_of, epoch_hour

HOUR_US = 3_600_000_000
DAY_US = 24 * HOUR_US


class WindowPlan(NamedTuple):
    """A window's reads. Hours are counted from the epoch (UTC), as ``toUInt32(day) * 24 +
    hour`` counts a row of the hour rollups and ``intDiv(toUnixTimestamp64Micro(started_at),
    3600000000)`` a copied row's start."""

    clean: list[str]
    """Days read whole from ``scorecard_days``."""
    raw: list[str]
    """Days read whole from the rows (from the window's start)."""
    hour_days: list[str]
    """Days of which some hours are read from ``scorecard_hours``."""
    hours: list[int]
    """Those hours."""
    raw_hours: list[int]
    """Hours read from the rows (from the window's start): the one the window starts in, and
    the hours of ``hour_days`` marked since their refresh."""

    @property
    def reads_rows(self) -> bool:
        return bool(self.raw or self.raw_hours)

    @property
    def params(self) -> dict[str, object]:
        """The readers' parameters: ``clean``, ``days`` (read from the rows), ``hour_days``,
        ``hours`` and ``raw_hours``."""
        return {
            "clean": self.clean,
            "days": self.raw,
            "hour_days": self.hour_days,
            "hours": self.hours,
            "raw_hours": self.raw_hours,
        }


def window_plan(states: Iterable[DayState], since_us: int, *, hours: bool = True) -> WindowPlan:
    """The plan of a window starting at ``since_us`` (0: all time) over the day states of the
    skills it reads (a day is read alike for all of them). With ``hours`` false no hour
    rollup is read: a day not clean, and the partial first day, are read whole from the rows."""
    first = day_of(since_us) if since_us > 0 else ""
    by_day: dict[str, list[DayState]] = {}
    for state in states:
        if state.day >= first:
            by_day.setdefault(state.day, []).append(state)
    plan = WindowPlan([], [], [], [], [])
    for day, on_day in sorted(by_day.items()):
        start_hour = 0  # the first hour that starts inside the window
        partial_hour = -1  # the hour the window starts inside, if it is this day's
        if day == first and since_us % DAY_US:
            into = since_us % DAY_US
            start_hour = -(-into // HOUR_US)
            if into % HOUR_US:
                partial_hour = into // HOUR_US
        if start_hour == 0 and all(state.clean for state in on_day):  # a whole clean day
            plan.clean.append(day)
            continue
        if not hours or not all(state.hourly for state in on_day):
            plan.raw.append(day)
            continue
        dirty = frozenset().union(*(state.dirty_hours for state in on_day))
        base = epoch_hour(day, 0)
        whole = [base + hour for hour in range(start_hour, 24) if hour not in dirty]
        if partial_hour >= 0:
            plan.raw_hours.append(base + partial_hour)
        plan.raw_hours.extend(base + hour for hour in range(start_hour, 24) if hour in dirty)
        if whole:
            plan.hour_days.append(day)
            plan.hours.extend(whole)
    return plan
