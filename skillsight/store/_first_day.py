"""How a window's first (partial) day is read: its whole hours from the hour rollups
(``scorecard_hours``) when they are there, the rest of it from the rows."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from skillsight.store._rollups import DayState, day_of

HOUR_US = 3_600_000_000
DAY_US = 24 * HOUR_US


class FirstDay(NamedTuple):
    """How a window's first (partial) day is read: ``day`` ('' for a window without a start),
    from its hour ``hour`` on from ``scorecard_hours`` (24: none of it), and from the window's
    start up to ``until_us`` from the copied rows (0: up to the end of the day; the window's
    start: nothing)."""

    day: str
    hour: int
    until_us: int

    @property
    def cut(self) -> dict[str, object]:
        """The raw-row readers' parameters that end the first day's rows at ``until_us``."""
        return {"cut_day": self.day or "1970-01-01", "until": self.until_us}

    @property
    def params(self) -> dict[str, object]:
        """:attr:`cut`, and the hour readers' parameters: the day (``first``) and its first
        hour read from the hour rollups (``hour``)."""
        return {"first": self.day or "1970-01-01", "hour": self.hour, **self.cut}

    def reads_rows(self, since_us: int) -> bool:
        """Whether some of the day is read from the rows: all of it from the window's start
        (no hours), or the rest of the hour the window starts in (none when it starts on an
        hour)."""
        return bool(self.day) and (self.until_us == 0 or self.until_us > since_us)


def first_day(states: Iterable[DayState], since_us: int) -> FirstDay:
    """Where a window starting at ``since_us`` reads its first day: its whole hours from the
    hour rollups when every state of that day (of the skills in ``states``) is clean and was
    refreshed with its hours, and the rest of the hour it starts in from the rows; else all of
    it from the rows."""
    if since_us <= 0:
        return FirstDay("", 24, 0)
    day = day_of(since_us)
    on_day = [state for state in states if state.day == day]
    if not on_day or not all(state.hourly for state in on_day):
        return FirstDay(day, 24, 0)
    day_start = since_us - since_us % DAY_US
    hour = -(-(since_us - day_start) // HOUR_US)  # the first hour that starts inside the window
    return FirstDay(day, hour, day_start + hour * HOUR_US)
