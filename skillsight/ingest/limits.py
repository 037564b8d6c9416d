"""Per-project ingest rate limits and daily quotas (HTTP 429, gRPC RESOURCE_EXHAUSTED).

One project sending faster than its share must not fill the write queue that every project
shares. Each project has a token bucket of rows (refilled at its rate, holding up to ``burst_s``
seconds of it) and, optionally, a quota of rows per UTC day. A request is admitted while the
bucket holds any tokens — so a request larger than the bucket still gets through when the
project has been quiet — and refused with ``Retry-After`` (when the bucket will be positive, or
midnight UTC for a quota) otherwise. Limits are per process: N collectors admit N times the rate.

Specifications (``SKILLSIGHT_PROJECT_RATE_LIMIT``, ``SKILLSIGHT_PROJECT_DAILY_QUOTA``): a number
for every project, ``project=number`` pairs for some, or both: ``"20000,team-a=50000"``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from skillsight.errors import ConfigError, Overloaded

_DAY_S = 86_400


class RateLimited(Overloaded):
    """The project is past its rate or its daily quota; the client should retry later."""


@dataclass(frozen=True)
class PerProject:
    """A number for every project, with exceptions by name; 0 means unlimited."""

    default: float = 0.0
    projects: tuple[tuple[str, float], ...] = ()

    @classmethod
    def parse(cls, text: str, setting: str) -> PerProject:
        default = 0.0
        named: dict[str, float] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            name, sep, value = item.rpartition("=")
            try:
                number = float(value)
            except ValueError:
                number = -1.0
            if number < 0 or (sep and not name.strip()):
                raise ConfigError(
                    f"{setting}={text!r}: expected a number of rows and/or project=number "
                    "pairs, e.g. '20000,team-a=50000' (0 = unlimited)"
                )
            if sep:
                named[name.strip()] = number
            else:
                default = number
        return cls(default, tuple(sorted(named.items())))

    def of(self, project: str) -> float:
        for name, value in self.projects:
            if name == project:
                return value
        return self.default

    @property
    def limited(self) -> bool:
        return bool(self.default or any(v for _, v in self.projects))


class ProjectLimiter:
    """Admits or refuses a project's rows. Thread-safe."""

    def __init__(self, rate: PerProject, quota: PerProject, *, burst_s: float = 10.0) -> None:
        self.rate = rate
        self.quota = quota
        self.burst_s = burst_s
        self._clock = time.monotonic
        self._lock = threading.Lock()
        self._tokens: dict[str, tuple[float, float]] = {}  # project -> (tokens, at)
        self._used: dict[str, tuple[int, int]] = {}  # project -> (UTC day, rows)
        self.refused_requests = 0
        self.enabled = rate.limited or quota.limited

    def admit(self, project: str, rows: int) -> None:
        """Take ``rows`` from the project's allowance or raise :class:`RateLimited`."""
        if not self.enabled or rows <= 0:
            return
        now = self._clock()
        with self._lock:
            rate = self.rate.of(project)
            tokens = 0.0
            if rate:
                burst = rate * self.burst_s
                held, at = self._tokens.get(project, (burst, now))
                tokens = min(burst, held + (now - at) * rate)
                if tokens <= 0:
                    self.refused_requests += 1
                    wait = (1 - tokens) / rate
                    raise RateLimited(
                        f"project {project!r} is past its ingest rate of {rate:.0f} rows/s "
                        "(SKILLSIGHT_PROJECT_RATE_LIMIT)",
                        wait,
                    )
            quota = self.quota.of(project)
            if quota:
                wall = time.time()
                day = int(wall // _DAY_S)
                used_day, used = self._used.get(project, (day, 0))
                used = used if used_day == day else 0
                if used + rows > quota:
                    self.refused_requests += 1
                    raise RateLimited(
                        f"project {project!r} has used {used} of its {quota:.0f} rows for today "
                        "(SKILLSIGHT_PROJECT_DAILY_QUOTA); it resets at 00:00 UTC",
                        (day + 1) * _DAY_S - wall,
                    )
                self._used[project] = (day, used + rows)
            if rate:
                self._tokens[project] = (tokens - rows, now)

    def refund(self, project: str, rows: int) -> None:
        """Give back rows admitted for a request that was then refused for another reason."""
        if not self.enabled or rows <= 0:
            return
        with self._lock:
            if project in self._tokens:
                tokens, at = self._tokens[project]
                self._tokens[project] = (tokens + rows, at)
            if project in self._used:
                day, used = self._used[project]
                self._used[project] = (day, max(0, used - rows))
