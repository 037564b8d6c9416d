"""The daily spend cap judges share, reset at midnight UTC."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime

from skillsight.errors import SkillsightError

log = logging.getLogger(__name__)

RecordedSpend = Callable[[date], float]
"""The dollars the store's evaluation rows say judges spent on a UTC day (every process)."""


def _today() -> date:
    return datetime.now(UTC).date()


class SpendCap:
    """Dollars spent on judge calls today, against a limit.

    :meth:`allows` is asked before a judgement and :meth:`record` told after each call, so calls
    already in flight when the cap is reached still land: the overshoot is at most one call per
    concurrency slot. One cap may be shared by every judge of a process (the service does that).

    With ``recorded``, what the store says was spent today counts too: read when the cap is made
    (a restarted service does not start the day from zero) and again every ``refresh_s`` (other
    workers' judges spend from the same budget). The cap takes the larger of its own count and
    the store's, so its own calls are never counted twice; a failing read keeps the last figure.
    """

    def __init__(
        self,
        limit_usd: float,
        *,
        spent_usd: float = 0.0,
        today: Callable[[], date] = _today,
        recorded: RecordedSpend | None = None,
        refresh_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit_usd < 0:
            raise ValueError("a spend cap must not be negative")
        self.limit_usd = limit_usd
        self._today = today
        self._recorded = recorded
        self._refresh_s = refresh_s
        self._clock = clock
        self._lock = threading.Lock()
        self._day = today()
        self._spent = spent_usd
        self._refused = 0
        self._read_at: float | None = None
        with self._lock:
            self._refresh()

    def _roll(self) -> None:
        self._new_day()
        self._refresh()

    def _new_day(self) -> None:
        day = self._today()
        if day != self._day:
            self._day, self._spent, self._refused = day, 0.0, 0
            self._read_at = None

    def _refresh(self) -> None:
        if self._recorded is None:
            return
        now = self._clock()
        if self._read_at is not None and now - self._read_at < self._refresh_s:
            return
        self._read_at = now
        try:
            self._spent = max(self._spent, self._recorded(self._day))
        except SkillsightError as exc:
            log.warning("reading today's judge spend from the store failed: %s", exc)

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
    def known_usd(self) -> float:
        """:attr:`spent_usd` as last counted or read, without reading the store (for
        ``/healthz``, which runs beside the receivers: the store may be busy for seconds)."""
        with self._lock:
            self._new_day()
            return self._spent

    @property
    def refused(self) -> int:
        """Judgements refused today because the cap was reached."""
        with self._lock:
            self._new_day()
            return self._refused
