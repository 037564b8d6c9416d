"""Which timestamps a span or log record may carry: the time window ingest accepts.

A span is filed under the month it started (``spans`` is partitioned by month), so a broken
clock — an agent at the epoch, a year in the far future — writes into partitions that hold
nothing else, and a replay of years of old exports into hundreds at once. Times before 2000, further
ahead than the allowed clock skew, or older than the retention (which would delete them at
the next merge anyway) are turned away item by item, with the reason in ``partial_success``.
A time of 0 means *not set* (OTLP/JSON omits zero fields) and is kept as it is — it lands in one
partition, January 1970 — unless a retention is set, which would delete such rows at once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

# 2000-01-01T00:00:00Z: no OpenTelemetry SDK existed before it; earlier means a broken clock.
EARLIEST_NS = 946_684_800 * 1_000_000_000
_DAY_NS = 86_400 * 1_000_000_000


@dataclass(frozen=True)
class Window:
    """The accepted range of start times, relative to now."""

    retention_days: int = 0  # 0: no lower bound but EARLIEST_NS
    future_s: float = 86_400.0  # how far ahead of this server's clock an agent's may be

    @property
    def keeps_unset(self) -> bool:
        """Whether a time of 0 (not set) is kept: without a retention that would delete it."""
        return self.retention_days <= 0

    def accepts(self, ns: int, bounds: tuple[int, int]) -> bool:
        return bounds[0] <= ns <= bounds[1] or (ns == 0 and self.keeps_unset)

    def bounds(self, now_ns: int | None = None) -> tuple[int, int]:
        """(earliest, latest) accepted time in ns since the epoch, now."""
        now = time.time_ns() if now_ns is None else now_ns
        low = EARLIEST_NS
        if self.retention_days > 0:
            low = max(low, now - self.retention_days * _DAY_NS)
        return low, now + int(self.future_s * 1_000_000_000)

    def refusal(self, ns: int, bounds: tuple[int, int]) -> str:
        """Why a time outside ``bounds`` is turned away (for partial_success)."""
        shown = _iso(ns)
        if ns == 0:
            return (
                f"no time is set, and the retention of {self.retention_days} days "
                "(SKILLSIGHT_RETENTION_DAYS) would delete it at once"
            )
        if ns > bounds[1]:
            return (
                f"time {shown} is more than {self.future_s:.0f} s ahead of the server's clock "
                "(SKILLSIGHT_INGEST_FUTURE_S); check the sender's clock"
            )
        if ns < EARLIEST_NS:
            return f"time {shown} is before 2000; check the sender's clock"
        return (
            f"time {shown} is older than the retention of {self.retention_days} days "
            "(SKILLSIGHT_RETENTION_DAYS)"
        )


def _iso(ns: int) -> str:
    try:
        return datetime.fromtimestamp(ns // 1_000_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return f"{ns} ns"
