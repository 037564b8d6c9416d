"""The scorecard read models stay exact while writers and the refresher run at once.

The other read-model tests take turns: write, then refresh, then read. A service does all three
at once: the scheduler copies and marks evaluation rows, the finalizer writes activations, the
refresher recomputes marked days and hours, and pages read meanwhile. What keeps that exact is
an ordering protocol (rows before their marks; a refresh's stamp taken before it reads the day
states and the rows, so a mark it misses is after its stamp). These tests race real threads
through the real write paths on one clock (the tightest margin the protocol allows) and check
every read against the raw rows: while only the refresher writes (its rollups half written at
any moment), after the writers stop with marked days left, and after a last refresh.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from benchmarks.eval import synthetic_activations
from skillsight.rebuild.trajectories import atif
from skillsight.store import Store
from skillsight.store.records import Activation
from tests.test_scorecard_hours import END, PROJECT, SINCE, SKILLS, _backfilled, _same_as_raw
from tests.test_scorecard_rollups import Statement, rescore, wrapped_statements

pytestmark = pytest.mark.slow

ROUNDS = 4
MARK_PAUSE_S = 0.05
NEW_SESSIONS = 5  # a round's new sessions, two activations each
DAYS = [(END - timedelta(days=n)).date().isoformat() for n in (0, 1, 2)]
# the windows a page reads: all time, 7 days (inside an hour), one starting on an hour of the
# raced days, one starting at the midnight between two of them
WINDOWS: tuple[datetime | None, ...] = (
    None,
    SINCE,
    END.replace(minute=0, second=0, microsecond=0) - timedelta(hours=30),
    END.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1),
)


@dataclass
class _Rebuilt:
    session_id: str
    trajectory: atif.Trajectory
    activations: list[Activation] = field(default_factory=list)


class _Race:
    """Threads running ``work`` until it returns or :meth:`stop`; the first error of any of
    them is raised by :meth:`join`."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []

    def run(self, work: Callable[[], None]) -> threading.Thread:
        def guarded() -> None:
            try:
                work()
            except BaseException as exc:  # reported by join, in the test's thread
                self._errors.append(exc)
                self.stopping.set()

        thread = threading.Thread(target=guarded, daemon=True)
        thread.start()
        self._threads.append(thread)
        return thread

    def join(self, *threads: threading.Thread) -> None:
        for thread in threads or tuple(self._threads):
            thread.join(timeout=600)
            assert not thread.is_alive(), "a racing thread did not finish within 10 minutes"
        if self._errors:
            raise self._errors[0]

    def stop(self) -> None:
        self.stopping.set()
        self.join()


def _rescorer(store: Store, seed: int, jobs: int, stopping: threading.Event) -> Callable[[], None]:
    """Rescores of one hour or a whole day of a skill's raced days, through the store's write
    path (rows copied, then their hours marked)."""
    rng = random.Random(seed)

    def work() -> None:
        for job in range(jobs):
            if stopping.is_set():
                return
            skill, day = rng.choice(SKILLS), rng.choice(DAYS)
            hour = rng.choice((-1, rng.randrange(24)))
            rescore(
                store, skill, day, rng.choice((0.0, 0.25, 0.5, 1.0)), f"r{seed}-{job}", hour=hour
            )

    return work


def _new_activations(
    store: Store, seed: int, jobs: int, stopping: threading.Event
) -> Callable[[], None]:
    """Sessions rebuilt for the first time (the finalizer's write: activations, then their
    hours marked), then, for every other one, their first scores (the scheduler's write; the
    others are counted unscored, as activations the scheduler has not reached yet)."""
    rng = random.Random(seed)
    made, _ = synthetic_activations(jobs * 2)

    def work() -> None:
        for job in range(jobs):
            if stopping.is_set():
                return
            session = f"race-{seed}-{job}"
            started = END - timedelta(minutes=rng.randrange(60 * 24 * len(DAYS) - 40))
            activations = [
                a.model_copy(
                    update={
                        "activation_id": f"{seed:08x}{job:08x}{i:016x}",
                        "skill_name": rng.choice(SKILLS),
                        "session_id": session,
                        "started_at": (started + timedelta(minutes=10 * i)).isoformat(),
                        "cost_usd": round(rng.random(), 4),
                    }
                )
                for i, a in enumerate(made[job * 2 : job * 2 + 2])
            ]
            trajectory = atif.Trajectory(
                session_id=session,
                trajectory_id=session,
                agent=atif.Agent(name="claude-code", version="1"),
                steps=[atif.Step(step_id=1, source="user", message="go")],
            )
            store.rebuilds.write_one(PROJECT, _Rebuilt(session, trajectory, activations))
            if job % 2:
                continue
            rows = [
                {
                    "activation_id": a.activation_id,
                    "evaluator": evaluator,
                    "evaluator_version": "1",
                    "skill_name": a.skill_name,
                    "skill_version": a.skill_version or "",
                    "score": score,
                    "passed": score >= 1.0,
                    "label": "scored",
                    "reason": "first score",
                    "evaluated_at_us": int(datetime.fromisoformat(a.started_at).timestamp() * 1e6),
                }
                for a in activations
                for evaluator, score in (("security", rng.choice((0.0, 1.0))), ("efficiency", 0.5))
            ]
            store.evaluations.write(PROJECT, rows)

    return work


def _marker(store: Store, stopping: threading.Event) -> Callable[[], None]:
    """Whole-day marks and nothing else (an explicit ``mark``): the refresher keeps rewriting
    the raced days while the rows stay as they are."""
    rng = random.Random(7)

    def work() -> None:
        while not stopping.is_set():
            store.scorecards.rollups.mark(PROJECT, rng.choice(SKILLS), [rng.choice(DAYS)])
            stopping.wait(0.05)

    return work


@contextmanager
def _interleaved(store: Store) -> Iterator[None]:
    """Every statement of the store followed by a pause, in whichever thread ran it, so that a
    thread running two statements in a row leaves the others a turn between them, as a busy
    service would, instead of taking the store's lock straight back: a millisecond, and after a
    mark long enough for a whole refresher pass (a mark written before the rows it marks would
    let that pass stamp the day clean without them). The statements run as they are."""

    def paced(name: str, method: Statement) -> Statement:
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return method(*args, **kwargs)
            finally:
                marked = name != "query" and "_marks" in str(args[0])
                time.sleep(MARK_PAUSE_S if marked else 0.001)

        return run

    with wrapped_statements(store, paced):
        yield


def _all_as_raw(store: Store) -> None:
    for since in WINDOWS:
        _same_as_raw(store, since)


def test_reads_stay_exact_while_writers_and_the_refresher_race(store: Store) -> None:
    rollups = _backfilled(store)  # one clock, margin 0: a refresh begun after a mark cleans it
    passes = 0
    race = _Race()

    def refresher() -> None:
        nonlocal passes
        while not race.stopping.is_set():
            # every other pass holds the days refreshed in the last 50 ms that are marked in
            # some hours only (the service's hold): they wait for a later pass
            rollups.refresh_dirty(hold_us=50_000 * (passes % 2))
            passes += 1

    try:
        with _interleaved(store):
            _race(store, race, refresher)
    finally:
        race.stopping.set()  # a failed read leaves no thread writing to a closing store
    assert passes >= ROUNDS, "the refresher ran alongside the writers"

    # Whatever the race left marked is read from the rows; a last refresh cleans it all.
    _all_as_raw(store)
    rollups.refresh_dirty()
    assert all(state.clean for state in rollups.day_states(PROJECT))
    _all_as_raw(store)
    written = store.query(
        "SELECT count() AS n FROM activations WHERE project_id = {p:String}"
        " AND startsWith(session_id, 'race-')",
        {"p": PROJECT},
    )
    assert written[0]["n"] == 2 * NEW_SESSIONS * ROUNDS  # the new sessions' activations all arrived


def _race(store: Store, race: _Race, refresher: Callable[[], None]) -> None:
    race.run(refresher)
    for round_ in range(ROUNDS):
        writers = [
            race.run(_rescorer(store, 10 * round_ + 1, 6, race.stopping)),
            race.run(_rescorer(store, 10 * round_ + 2, 6, race.stopping)),
            race.run(_new_activations(store, 10 * round_ + 3, NEW_SESSIONS, race.stopping)),
        ]
        race.join(*writers)
        # Only the refresher writes now, and only read models: every read, taken while it
        # may be rewriting days and hours, equals the raw rows (which stay as they are). A
        # refresh that stamped a day clean without a write it raced would show here, before a
        # later mark sends the day back to the rows.
        for since in WINDOWS[:2]:
            _same_as_raw(store, since)

    # The refresher kept busy (whole days marked again and again) while pages read.
    race.run(_marker(store, race.stopping))
    _all_as_raw(store)
    race.stop()
