"""The daily spend cap judges share, reset at midnight UTC."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, date, datetime


def _today() -> date:
    return datetime.now(UTC).date()


class SpendCap:
    """Dollars spent on judge calls today, against a limit.

    :meth:`allows` is asked before a judgement and :meth:`record` told after each call, so calls
    already in flight when the cap is reached still land: the overshoot is at most one call per
    concurrency slot. One cap may be shared by every judge of a process (the service does that).
    """

    def __init__(
        self, limit_usd: float, *, spent_usd: float = 0.0, today: Callable[[], date] = _today
    ) -> None:
        if limit_usd < 0:
            raise ValueError("a spend cap must not be negative")
        self.limit_usd = limit_usd
        self._today = today
        self._lock = threading.Lock()
        self._day = today()
        self._spent = spent_usd
        self._refused = 0

    def _roll(self) -> None:
        day = self._today()
        if day != self._day:
            self._day, self._spent, self._refused = day, 0.0, 0

    def allows(self) -> bool:
        """Whether a new judgement may start; a refusal is counted."""
        with self._lock:
            self._roll()
            if self._spent < self.limit_usd:
                return True
            self._refused += 1
            return False

    def record(self, cost_usd: float) -> None:
        with self._lock:
            self._roll()
            self._spent += max(0.0, cost_usd)

    @property
    def spent_usd(self) -> float:
        with self._lock:
            self._roll()
            return self._spent

    @property
    def refused(self) -> int:
        """Judgements refused today because the cap was reached."""
        with self._lock:
            self._roll()
            return self._refused
