"""Finding what a launch produced: its sessions, their settled rebuilds, trajectories and
activations.

After the agent exits, its sessions are the ones whose telemetry carries the launch's key
(``skillsight.rerun.key``). A session is ready when its newest *settled* rebuild has read every
row ingested for it (the finalizer's own rule for "nothing owed"); the wait ends when every
session is ready and none new appeared for a moment, or at the deadline: a launch with no
session by then has *no telemetry*, one whose sessions never settled is scored from the rebuild
there is when one exists, else has no telemetry either.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from skillsight import semconv
from skillsight.rebuild.trajectories import Trajectory, TrajectoryError, atif
from skillsight.store import Store
from skillsight.store.records import Activation

log = logging.getLogger(__name__)

POLL_S = 0.1
STABLE_S = 0.2


@dataclass
class Evidence:
    """What the store holds of one launch."""

    session_ids: list[str] = field(default_factory=list)
    trajectory: Trajectory | None = None
    """The main session's trajectory (the one with the most steps)."""
    activations: list[Activation] = field(default_factory=list)
    settled: bool = False


def _ready(store: Store, project_id: str, sessions: dict[str, int]) -> bool:
    through = store.rebuilds.through(project_id, list(sessions))
    return all(through.get(s, 0) >= last for s, last in sessions.items())


def _read(store: Store, project_id: str, session_ids: list[str]) -> Evidence:
    evidence = Evidence(session_ids=session_ids)
    best = -1
    for session_id in session_ids:
        document = store.trajectories.get(project_id, session_id)
        if document is None:
            continue
        try:
            trajectory = atif.parse(document)
        except TrajectoryError:
            log.warning("stored trajectory of session %s does not parse", session_id)
            continue
        if len(trajectory.steps) > best:
            best, evidence.trajectory = len(trajectory.steps), trajectory
        evidence.activations += store.activations.find(
            project_id, session_id=session_id, limit=10_000
        )
    evidence.activations.sort(key=lambda a: (a.started_at, a.activation_id))
    return evidence


async def collect(
    store: Store,
    project_id: str,
    key: str,
    *,
    wait_s: float,
    drained: Callable[[], bool] = lambda: True,
) -> Evidence:
    """Wait for the launch's sessions to be rebuilt and settled (see the module); ``drained``
    says the collector has committed every row it took (the agent has exited, so whatever it
    exported was taken)."""
    deadline = time.monotonic() + wait_s
    seen: dict[str, int] = {}
    stable_since = time.monotonic()
    while True:
        found = await asyncio.to_thread(
            store.runs.tagged_sessions, project_id, semconv.SKILLSIGHT_RERUN_KEY, key
        )
        current = {s.session_id: s.last_ingested_us for s in found}
        if current != seen:
            seen, stable_since = current, time.monotonic()
        now = time.monotonic()
        settled = (
            seen
            and drained()
            and now - stable_since >= STABLE_S
            and await asyncio.to_thread(_ready, store, project_id, seen)
        )
        if settled:
            evidence = await asyncio.to_thread(_read, store, project_id, sorted(seen))
            evidence.settled = True
            return evidence
        if now >= deadline:
            evidence = await asyncio.to_thread(_read, store, project_id, sorted(seen))
            return evidence
        await asyncio.sleep(POLL_S)
