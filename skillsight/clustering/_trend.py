"""Counts over time, the trend they show, and the rank that orders the on-call list.

A run stores each cluster's members per hour for the last 48 hours and per day over the window;
readers add the members assigned online since. The trend compares the last 24 hours with the 24
before them, smoothed by one so a pattern going from 0 to 1 is not "infinitely" rising.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from skillsight.clustering._text import SEVERITY_ORDER

HOUR_US = 3_600_000_000
DAY_US = 24 * HOUR_US
HOURS = 48
# Rank weights: a security pattern of ten outranks a medium one of seventy.
_SEVERITY_WEIGHT = {"critical": 8.0, "high": 4.0, "medium": 2.0, "low": 1.0}
_RISING, _FALLING = 1.5, 1 / 1.5


@dataclass(frozen=True)
class Trend:
    direction: str
    """``new`` (first seen in the last 24 h), ``rising``, ``steady``, ``falling`` or ``quiet``
    (nothing in the last 24 h)."""
    last_24h: int
    previous_24h: int
    ratio: float
    """(last 24 h + 1) / (previous 24 h + 1)."""

    @property
    def per_hour(self) -> float:
        return self.last_24h / 24


def bucket_counts(moments_us: Iterable[int], end_us: int, width_us: int, buckets: int) -> list[int]:
    """How many moments fall in each of ``buckets`` intervals of ``width_us`` ending at
    ``end_us``, the oldest first (moments outside are not counted)."""
    counts = [0] * buckets
    start = end_us - width_us * buckets
    for moment in moments_us:
        if start <= moment < end_us:
            counts[(moment - start) // width_us] += 1
    return counts


def trend_of(hourly: Sequence[int], first_seen_us: int, now_us: int) -> Trend:
    """The trend of a cluster from its last 48 hourly counts (oldest first)."""
    padded = [0] * max(0, HOURS - len(hourly)) + list(hourly[-HOURS:])
    previous, last = sum(padded[:24]), sum(padded[24:])
    ratio = (last + 1) / (previous + 1)
    if last == 0:
        direction = "quiet"
    elif first_seen_us >= now_us - DAY_US:
        direction = "new"
    elif ratio >= _RISING:
        direction = "rising"
    elif ratio <= _FALLING:
        direction = "falling"
    else:
        direction = "steady"
    return Trend(direction, last, previous, round(ratio, 3))


def rank_score(size: int, trend: Trend, severity: str) -> float:
    """Size times trend times severity weight: what sorts the list (larger first)."""
    factor = min(max(trend.ratio, 0.25), 4.0)
    return size * factor * _SEVERITY_WEIGHT.get(severity, 1.0)


def most_severe(severities: Iterable[str]) -> str:
    """The most urgent of some severities (``low`` when there are none)."""
    found = [s for s in severities if s in SEVERITY_ORDER]
    return min(found, key=SEVERITY_ORDER.index) if found else "low"


__all__ = [
    "DAY_US",
    "HOURS",
    "HOUR_US",
    "Trend",
    "bucket_counts",
    "most_severe",
    "rank_score",
    "trend_of",
]
