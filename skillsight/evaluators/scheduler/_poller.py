"""``skillsight eval worker``: the evaluation scheduler as a process of its own.

For set-ups on a ClickHouse server where rebuilding runs apart from the collectors
(``skillsight worker``), evaluation can too: the poller asks the store which sessions got a new
rebuild (:meth:`Store.rebuilds.since`), reads their current activations and hands them to an
:class:`~skillsight.evaluators.scheduler.EvaluationScheduler`, exactly what the finalizer does
in ``skillsight serve``. A rebuild is complete by construction (the finalizer stores only
complete sessions), so nothing partial is scored. Several workers split activations by hash
(``SKILLSIGHT_EVAL_WORKER_INDEX`` / ``SKILLSIGHT_EVAL_WORKERS``); each polls every session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from types import TracebackType

from skillsight.errors import SkillsightError
from skillsight.evaluators.scheduler._scheduler import EvaluationScheduler
from skillsight.rebuild.finalizer import ActivationsReady
from skillsight.store import Store

log = logging.getLogger(__name__)

# Rebuild stamps are taken before the insert commits, so a later poll re-reads this far back;
# sessions already handed over at the same stamp are recognised and skipped.
_OVERLAP_US = 5_000_000
_MAX_ACTIVATIONS = 100_000


class RebuiltSessionPoller:
    """Async context manager feeding newly rebuilt sessions to a scheduler."""

    def __init__(
        self,
        store: Store,
        scheduler: EvaluationScheduler,
        *,
        poll_s: float = 0.5,
        catchup_s: float = 3600.0,
    ) -> None:
        self.store = store
        self.scheduler = scheduler
        self.poll_s = poll_s
        self.catchup_s = catchup_s
        self.sessions_found = 0
        self.errors = 0
        self.last_error = ""
        self._watermark_us = 0
        self._handed: dict[tuple[str, str], int] = {}
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> RebuiltSessionPoller:
        self._watermark_us = max(0, time.time_ns() // 1000 - int(self.catchup_s * 1e6))
        self._stop.clear()
        self._task = asyncio.create_task(self._run(), name="skillsight-evaluation-poller")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None
        await self.poll()  # what was rebuilt up to now is scored before the scheduler drains

    async def poll(self) -> int:
        """Hand every session rebuilt since the last poll to the scheduler; return how many."""
        try:
            found = await asyncio.to_thread(
                self.store.rebuilds.since, self._watermark_us - _OVERLAP_US
            )
        except SkillsightError as exc:
            self._count_error(f"finding rebuilt sessions failed: {exc}")
            return 0
        handed = 0
        for project_id, session_id, rebuilt_us in found:
            key = (project_id, session_id)
            if self._handed.get(key, -1) >= rebuilt_us:
                self._watermark_us = max(self._watermark_us, rebuilt_us)
                continue
            try:
                activations = await asyncio.to_thread(
                    self.store.activations.find,
                    project_id,
                    session_id=session_id,
                    limit=_MAX_ACTIVATIONS,
                )
            except SkillsightError as exc:
                self._count_error(f"reading session {session_id} failed: {exc}")
                break  # the watermark stays before it: read again next time
            self._handed[key] = rebuilt_us
            self._watermark_us = max(self._watermark_us, rebuilt_us)
            self.sessions_found += 1
            handed += 1
            await self.scheduler.submit(
                ActivationsReady(project_id, session_id, tuple(activations), rebuilt_us)
            )
        horizon = self._watermark_us - 2 * _OVERLAP_US
        self._handed = {k: v for k, v in self._handed.items() if v >= horizon}
        return handed

    def health(self) -> dict[str, object]:
        return {
            "sessions_found": self.sessions_found,
            "errors": self.errors,
            "last_error": self.last_error,
        }

    async def _run(self) -> None:
        while not self._stop.is_set():
            await self.poll()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.poll_s)

    def _count_error(self, message: str) -> None:
        self.errors += 1
        self.last_error = message[:500]
        log.warning("%s", message)
