"""The scorecard read models (migration 0012) give the raw-row query's answers: across skills,
windows, versions and the gate's reads, after a backfill, before and after a refresh, after
rescoring and after a second rebuild."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from benchmarks.eval import synthetic_activations
from benchmarks.scorecard import skill_names, zipf_counts
from benchmarks.synthetic_store import (
    EVALUATORS,
    SyntheticPlan,
    fill_synthetic_scorecards,
    skill_version,
)
from skillsight.config import Settings
from skillsight.errors import StoreError
from skillsight.evaluators.scheduler import EvaluationScheduler
from skillsight.rebuild.trajectories import atif
from skillsight.runtime import build_services
from skillsight.store import EmbeddedStore, ReadModelRefresher, Store
from skillsight.store._rollups import CLOCK_MARGIN_US, SWEEP_US, ScorecardRollups
from skillsight.store.records import Activation

pytestmark = pytest.mark.slow

PROJECT = "p"
SKILLS = skill_names(4)
# The newest activation starts mid-afternoon, so windows start inside a day.
END = datetime(2026, 11, 20, 15, 30, 12, tzinfo=UTC)


def _equal(raw: Any, fast: Any, where: str = "") -> None:
    """Equal, floats up to their summation order (a mean's last bits)."""
    if isinstance(raw, dict):
        assert raw.keys() == fast.keys(), where
        for key in raw:
            _equal(raw[key], fast[key], f"{where}.{key}")
    elif isinstance(raw, list):
        assert len(raw) == len(fast), f"{where}: {len(raw)} rows, {len(fast)} rows"
        for index, (a, b) in enumerate(zip(raw, fast, strict=True)):
            _equal(a, b, f"{where}[{index}]")
    elif isinstance(raw, float) and isinstance(fast, float):
        assert math.isclose(raw, fast, rel_tol=1e-12, abs_tol=1e-15), f"{where}: {raw} {fast}"
    else:
        assert raw == fast, f"{where}: {raw!r} != {fast!r}"


def _windows() -> list[datetime | None]:
    """All time, a window starting inside a day and inside an hour, one starting on an hour
    inside a day, one starting at midnight."""
    midnight = END.replace(hour=0, minute=0, second=0, microsecond=0)
    hour = END.replace(minute=0, second=0, microsecond=0)
    return [None, END - timedelta(days=7), hour - timedelta(days=3), midnight - timedelta(days=30)]


def _compare(store: Store, skills: tuple[str, ...] = SKILLS) -> int:
    """Every scorecard and gate read of these skills, read models against raw rows; returns
    the gate rows compared."""
    cards = store.scorecards
    gate_rows = 0
    for skill in skills:
        versions = ["", skill_version(skill, 2)]
        for since in _windows():
            for version in versions:
                where = f"{skill} since {since} version {version[:8]}"
                raw = cards.raw_rows(PROJECT, skill, version=version, since=since)
                _equal(raw, cards.rows(PROJECT, skill, version=version, since=since), where)
            for evaluator, below, version in (("security", 1.0, ""), ("", 0.5, versions[1])):
                args: dict[str, Any] = {
                    "evaluator": evaluator,
                    "version": version,
                    "since": since,
                    "limit": 7,
                }
                found = cards.below(PROJECT, skill, below, **args)
                assert found == cards.raw_below(PROJECT, skill, below, **args), f"{skill} {args}"
                gate_rows += len(found)
    return gate_rows


def rescore(
    store: Store, skill: str, day: str, score: float, version: str, *, hour: int = -1
) -> int:
    """New rows (through the store's write path) for every evaluation of a skill's
    activations started on one day (in one hour of it, when given)."""
    found = store.query(
        "SELECT activation_id, evaluator, skill_version FROM evaluations "
        "WHERE project_id = {p:String} AND skill_name = {s:String} AND activation_id IN ("
        "  SELECT activation_id FROM activations WHERE project_id = {p:String}"
        "  AND skill_name = {s:String} AND toDate(started_at) = {d:Date}"
        "  AND ({h:Int8} < 0 OR toHour(started_at) = {h:Int8})) "
        "LIMIT 1 BY activation_id, evaluator",
        {"p": PROJECT, "s": skill, "d": day, "h": hour},
    )
    stamp = int(datetime.now(UTC).timestamp() * 1e6)
    rows = [
        {
            "activation_id": r["activation_id"],
            "evaluator": r["evaluator"],
            "evaluator_version": version,
            "skill_name": skill,
            "skill_version": r["skill_version"],
            "score": score,
            "passed": score >= 1.0,
            "label": "rescored",
            "reason": f"rescored to {score}",
            "evidence_step_ids": [1],
            "evidence_tool_call_ids": [],
            "findings": "[]",
            "evaluated_at_us": stamp,
        }
        for r in found
    ]
    return store.evaluations.write(PROJECT, rows)


def test_the_read_models_answer_as_the_raw_rows(tmp_path: Path) -> None:
    """A few thousand synthetic activations over 90 days written by SQL (a store from before
    the read models), backfilled; then rescored through the store's write path, refreshed,
    rebuilt a second time and rescored again."""
    store = EmbeddedStore(tmp_path / "store")
    try:
        store.migrate()
        plan = SyntheticPlan(
            PROJECT, SKILLS, tuple(zipf_counts(2400, len(SKILLS))), int(END.timestamp() * 1e6)
        )
        fill_synthetic_scorecards(store, plan)
        rollups = store.scorecards.rollups
        assert not rollups.ready()  # rows the read models have not seen
        rollups.backfill()
        assert rollups.ready()
        assert all(state.clean for state in rollups.day_states(PROJECT))
        assert _compare(store) > 0
        _rescored_days_are_marked_and_refreshed(store)
        _second_rebuild(store)
    finally:
        store.close()


def _rescored_days_are_marked_and_refreshed(store: Store) -> None:
    rollups = store.scorecards.rollups
    popular, other = SKILLS[0], SKILLS[2]
    days = [(END - timedelta(days=n)).date().isoformat() for n in (0, 5)]
    assert rescore(store, popular, days[0], 0.25, "9") > 0
    assert rescore(store, popular, days[1], 1.0, "1") > 0
    assert rescore(store, other, days[1], 0.0, "2") > 0
    dirty = {(s.skill_name, s.day) for s in rollups.day_states(PROJECT) if not s.clean}
    assert dirty == {(popular, days[0]), (popular, days[1]), (other, days[1])}
    _compare(store, (popular, other))  # the marked days read from the copied rows
    before = {(s.skill_name, s.day): s.refreshed_us for s in rollups.day_states(PROJECT)}
    rollups.clock_margin_us = 0  # one clock here: a refresh begun after the marks cleans them
    with _statements(store) as statements:
        assert rollups.refresh_dirty() == 3
    # the two skills' three days together, by the hours marked (every mark named its hour):
    # the clock, the states, the hours kept from the last refresh, the marked hours, two inserts
    # (not four statements a skill)
    assert len(statements) == 6, "\n".join(statements)
    after = rollups.day_states(PROJECT)
    assert all(state.clean for state in after)
    redone = {
        (s.skill_name, s.day) for s in after if s.refreshed_us != before[(s.skill_name, s.day)]
    }
    assert redone == dirty  # only the marked days were recomputed
    newest = max(before.values())
    for table in ("scorecard_days", "scorecard_hours"):
        written = store.query(
            f"SELECT DISTINCT skill_name, toString(day) AS day FROM {table} "
            "WHERE project_id = {p:String} "
            "AND refreshed_at > fromUnixTimestamp64Micro({t:Int64}, 'UTC')",
            {"p": PROJECT, "t": newest},
        )
        assert {(r["skill_name"], r["day"]) for r in written} == dirty, table  # no other rows
    assert rollups.refresh_dirty() == 0
    rollups.clock_margin_us = CLOCK_MARGIN_US
    _compare(store, (popular, other))


Statement = Callable[..., Any]


@contextmanager
def wrapped_statements(store: Store, wrap: Callable[[str, Statement], Statement]) -> Iterator[None]:
    """The store's statement methods (``query``, ``execute``, ``insert_select``) replaced by
    ``wrap(name, method)`` inside the block, in every thread; the statements still run."""
    names = ("query", "execute", "insert_select")
    for name in names:
        setattr(store, name, wrap(name, getattr(store, name)))
    try:
        yield
    finally:
        for name in names:
            delattr(store, name)


@contextmanager
def _statements(store: Store) -> Iterator[list[str]]:
    """The statements the store runs inside the block (their first words)."""
    seen: list[str] = []

    def counted(name: str, method: Statement) -> Statement:
        def call(*args: Any, **kwargs: Any) -> Any:
            seen.append(f"{name}: {' '.join(str(args[0]).split()[:6])}")
            return method(*args, **kwargs)

        return call

    with wrapped_statements(store, counted):
        yield seen


def _second_rebuild(store: Store) -> None:
    skill = SKILLS[1]
    day = (END - timedelta(days=2)).date().isoformat()
    store.execute(
        "INSERT INTO activations SELECT * REPLACE (rebuilt_at + toIntervalHour(2) AS rebuilt_at,"
        " concat(session_id, '-again') AS session_id) FROM activations "
        "WHERE project_id = {p:String} AND skill_name = {s:String}"
        " AND toDate(started_at) = {d:Date}",
        {"p": PROJECT, "s": skill, "d": day},
    )
    _compare(store, (skill,))  # the gate names the newest rebuild's session
    assert rescore(store, skill, day, 0.5, "3") > 0
    _compare(store, (skill,))


def _activation_rows(store: Store, count: int) -> list[dict[str, Any]]:
    """Activations written by SQL (the rebuild's own writer is tested elsewhere)."""
    store.execute(
        "INSERT INTO activations (project_id, activation_id, session_id, trace_id, skill_name,"
        " skill_version, started_at, rebuilt_at) "
        "SELECT {p:String}, concat('a', toString(number)), concat('s', toString(number % 7)),"
        " 't', if(number % 3 = 0, 'csv', 'pdf'), if(number % 5 = 0, 'v2', 'v1'),"
        " fromUnixTimestamp64Micro({end:Int64} - number * 3600000000, 'UTC'), now64(6) "
        "FROM numbers({n:UInt64})",
        {"p": PROJECT, "end": int(END.timestamp() * 1e6), "n": count},
    )
    return store.query(
        "SELECT activation_id, skill_name, skill_version FROM activations "
        "WHERE project_id = {p:String} ORDER BY activation_id",
        {"p": PROJECT},
    )


def test_a_store_written_through_the_store_needs_no_backfill(store: Store) -> None:
    assert store.scorecards.rollups.ready()  # no evaluations yet: nothing to copy
    activations = _activation_rows(store, 300)
    base = int(END.timestamp() * 1e6)
    for attempt, evaluator_version in enumerate(("1", "1", "2")):
        rows = [
            {
                "activation_id": a["activation_id"],
                "evaluator": evaluator,
                "evaluator_version": evaluator_version,
                "skill_name": a["skill_name"],
                "skill_version": a["skill_version"],
                "score": None if (i + attempt) % 11 == 0 else ((i * 7 + attempt) % 10) / 9,
                "passed": None if (i + attempt) % 11 == 0 else (i * 7 + attempt) % 10 == 9,
                "label": "not_applicable" if (i + attempt) % 11 == 0 else "scored",
                "reason": f"attempt {attempt}",
                "evidence_step_ids": [],
                "evidence_tool_call_ids": [],
                "findings": "[]",
                "evaluated_at_us": base + attempt * 1_000_000,
            }
            for i, a in enumerate(activations)
            for evaluator in EVALUATORS[:3]
            if attempt == 0 or i % (attempt + 2) == 0
        ]
        store.evaluations.write(PROJECT, rows)
        cards = store.scorecards
        for skill in ("csv", "pdf"):
            for since in _windows():
                for version in ("", "v1", "v2"):
                    raw = cards.raw_rows(PROJECT, skill, version=version, since=since)
                    assert raw["versions"], "the data reaches every window"
                    _equal(raw, cards.rows(PROJECT, skill, version=version, since=since))
                expected = cards.raw_below(PROJECT, skill, 0.5, since=since, limit=9)
                assert cards.below(PROJECT, skill, 0.5, since=since, limit=9) == expected
        if attempt == 1:
            store.scorecards.rollups.refresh_dirty()


def test_evaluations_of_unstored_activations_stay_out_as_the_join_leaves_them(
    store: Store,
) -> None:
    activations = _activation_rows(store, 3)
    rows = [
        {
            "activation_id": activation_id,
            "evaluator": "security",
            "evaluator_version": "1",
            "skill_name": "csv",
            "skill_version": "v1",
            "score": 0.0,
            "passed": False,
            "label": "unsafe",
            "evaluated_at_us": int(END.timestamp() * 1e6),
        }
        for activation_id in (activations[0]["activation_id"], "never-stored")
    ]
    store.evaluations.write(PROJECT, rows)
    card = store.scorecards.rows(PROJECT, "csv")
    assert card == store.scorecards.raw_rows(PROJECT, "csv")
    assert [v["activations"] for v in card["versions"]] == [1]
    # a row that names its activation's start is filed under it without a look-up
    named = {**rows[1], "activation_id": "named", "activation_started_at": "2026-11-19T08:00:00Z"}
    store.evaluations.write(PROJECT, [named])
    filed = store.query(
        "SELECT toString(started_at) AS started FROM scorecard_rows "
        "WHERE project_id = {p:String} AND activation_id = 'named'",
        {"p": PROJECT},
    )
    assert filed == [{"started": "2026-11-19 08:00:00.000000"}]


def test_the_read_models_are_used_once_ready(tmp_path: Path) -> None:
    """With the copied rows emptied behind its back, a ready store's scorecard shows it reads
    the read models, not the raw rows."""
    store = EmbeddedStore(tmp_path / "store")
    try:
        store.migrate()
        activations = _activation_rows(store, 5)
        store.evaluations.write(
            PROJECT,
            [
                {
                    "activation_id": a["activation_id"],
                    "evaluator": "security",
                    "evaluator_version": "1",
                    "skill_name": a["skill_name"],
                    "skill_version": a["skill_version"],
                    "score": 1.0,
                    "passed": True,
                    "label": "clean",
                    "evaluated_at_us": int(END.timestamp() * 1e6),
                }
                for a in activations
            ],
        )
        assert store.scorecards.rows(PROJECT, "pdf")["versions"]
        store.execute("TRUNCATE TABLE scorecard_rows")
        assert store.scorecards.rows(PROJECT, "pdf")["versions"] == []
        assert store.scorecards.raw_rows(PROJECT, "pdf")["versions"]
    finally:
        store.close()


def test_the_refresher_backfills_then_refreshes_marked_days(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")
    try:
        store.migrate()
        plan = SyntheticPlan(PROJECT, SKILLS[:2], (60, 30), int(END.timestamp() * 1e6), days=5)
        fill_synthetic_scorecards(store, plan)
        refresher = ReadModelRefresher(store, interval_s=60, hold_s=3600)
        assert refresher.refresh_now() == 0  # the backfill refreshes what it copies
        assert refresher.stats.backfilled_skills == 2 and store.scorecards.rollups.ready()
        assert rescore(store, SKILLS[0], END.date().isoformat(), 0.0, "5") > 0
        store.scorecards.rollups.clock_margin_us = 0
        # refreshed by the backfill less than the hold ago, marked in some hours: it waits,
        # read from the rows meanwhile
        assert refresher.refresh_now() == 0
        assert refresher.health()["days_held"] == 1
        _equal(
            store.scorecards.raw_rows(PROJECT, SKILLS[0]), store.scorecards.rows(PROJECT, SKILLS[0])
        )
        refresher.hold_s = 0
        assert refresher.refresh_now() == 1
        health = refresher.health()
        assert (health["days_refreshed"], health["days_held"]) == (1, 0)
        _equal(
            store.scorecards.raw_rows(PROJECT, SKILLS[0]), store.scorecards.rows(PROJECT, SKILLS[0])
        )
    finally:
        store.close()


def test_evaluating_processes_run_a_refresher(embedded_store: EmbeddedStore) -> None:
    async def health(role: str) -> dict[str, Any]:
        settings = Settings(eval_warm_up=False, cluster_enabled=False)
        async with build_services(settings, role=role, store=embedded_store) as services:
            return services.health()

    assert asyncio.run(health("all"))["read_models"]["enabled"] is True
    assert asyncio.run(health("collector"))["read_models"] == {"enabled": False}


@dataclass
class _Rebuilt:
    session_id: str
    trajectory: atif.Trajectory
    activations: list[Activation] = field(default_factory=list)


def test_the_scheduler_files_rows_under_the_stored_start(store: Store) -> None:
    """The scheduler hands each row its activation's start (no lookup); the copy is filed
    under the start the activations table stored, fractions and offsets included."""
    activations, _ = synthetic_activations(30)
    starts = ("2026-11-20T23:59:59.999999Z", "2026-11-21T00:30:00+02:00", "2026-11-21T10:00:00Z")
    activations = [
        a.model_copy(update={"started_at": starts[i % 3], "session_id": f"s{i}"})
        for i, a in enumerate(activations)
    ]
    for a in activations:
        trajectory = atif.Trajectory(
            session_id=a.session_id,
            trajectory_id=f"t-{a.session_id}",
            agent=atif.Agent(name="claude-code", version="1"),
            steps=[atif.Step(step_id=1, source="user", message="go")],
        )
        store.rebuilds.write_one(PROJECT, _Rebuilt(a.session_id, trajectory, [a]))
    stored = store.activations.find(PROJECT, limit=100)

    async def score() -> None:
        async with EvaluationScheduler(store, evaluators=["tool_errors", "security"]) as s:
            await s.score(PROJECT, stored)

    asyncio.run(score())
    copied = store.query(
        "SELECT count() AS n, countIf(started_at = toDateTime64(0, 6, 'UTC')) AS epoch "
        "FROM scorecard_rows WHERE project_id = {p:String}",
        {"p": PROJECT},
    )[0]
    assert (copied["n"], copied["epoch"]) == (60, 0)
    for skill in {a.skill_name for a in stored}:
        for since in (None, datetime(2026, 11, 21, tzinfo=UTC)):
            raw = store.scorecards.raw_rows(PROJECT, skill, since=since)
            _equal(raw, store.scorecards.rows(PROJECT, skill, since=since), skill)


def _refreshed_store(store: Store) -> ScorecardRollups:
    """900 activations of the four skills, backfilled, on one clock (margin 0: a refresh begun
    after the marks cleans them), after the refresher's first pass, which reads every day and
    finds them all clean."""
    plan = SyntheticPlan(
        PROJECT, SKILLS, tuple(zipf_counts(900, len(SKILLS))), int(END.timestamp() * 1e6)
    )
    fill_synthetic_scorecards(store, plan)
    rollups = store.scorecards.rollups
    rollups.backfill()
    rollups.clock_margin_us = 0
    assert rollups.refresh_dirty() == 0
    return rollups


def test_a_pass_reads_the_days_marked_since_the_pass_before(store: Store) -> None:
    """After its first pass the refresher reads the state of the days marked since its last
    pass began, not of every day: a day changed without a mark waits for a pass over every
    day (read from the rows meanwhile); a pass that fails leaves its days to the next one."""
    rollups = _refreshed_store(store)
    days = [(END - timedelta(days=n)).date().isoformat() for n in (1, 4)]
    # refreshed behind the refresher's back in an older format (an older process): unmarked,
    # so read from the rows, and not seen by a pass over the marked days
    store.execute(
        "INSERT INTO scorecard_days (project_id, skill_name, day, kind, activations,"
        " refreshed_at) VALUES ({p:String}, {s:String}, {d:Date}, 0, 1, now64(6))",
        {"p": PROJECT, "s": SKILLS[1], "d": days[1]},
    )
    assert rescore(store, SKILLS[0], days[0], 0.5, "7") > 0
    assert rollups.refresh_dirty() == 1  # the rescored day only
    dirty = {(s.skill_name, s.day) for s in rollups.day_states(PROJECT) if not s.clean}
    assert dirty == {(SKILLS[1], days[1])}
    _compare(store, SKILLS[:2])
    rollups.sweep_every_us = 0  # every pass reads every day now
    assert rollups.refresh_dirty() == 1
    assert all(state.clean for state in rollups.day_states(PROJECT))
    rollups.sweep_every_us = SWEEP_US

    # a pass that fails after reading the states (the hour rollups gone for a moment): the
    # next one, reading the days marked since the last pass that finished, refreshes them
    assert rollups.refresh_dirty() == 0
    assert rescore(store, SKILLS[0], days[1], 0.0, "8") > 0
    store.execute("RENAME TABLE scorecard_hours TO scorecard_hours_away")
    try:
        with pytest.raises(StoreError):
            rollups.refresh_dirty()
    finally:
        store.execute("RENAME TABLE scorecard_hours_away TO scorecard_hours")
    assert rollups.refresh_dirty() == 1
    assert all(state.clean for state in rollups.day_states(PROJECT))
    _compare(store, (SKILLS[0],))


def test_a_day_of_live_traffic_waits_out_the_hold(store: Store) -> None:
    """A day refreshed less than ``hold_us`` ago whose marks since all name their hour (what
    live traffic writes) waits, read from the rows meanwhile, and a later pass sees it again
    without a new mark; a day marked whole does not wait, nor one refreshed before the hold."""
    rollups = _refreshed_store(store)
    newest = store.query(
        "SELECT toString(toDate(max(started_at))) AS day, toHour(max(started_at)) AS hour"
        " FROM activations WHERE project_id = {p:String} AND skill_name = {s:String}",
        {"p": PROJECT, "s": SKILLS[0]},
    )[0]
    day, hour = str(newest["day"]), int(newest["hour"])
    whole = (END - timedelta(days=3)).date().isoformat()
    assert rescore(store, SKILLS[0], day, 0.25, "7", hour=hour) > 0
    rollups.mark(PROJECT, SKILLS[1], [whole])
    an_hour = 3_600_000_000

    def dirty() -> dict[tuple[str, str], frozenset[int]]:
        found = rollups.day_states(PROJECT)
        return {(s.skill_name, s.day): s.dirty_hours for s in found if not s.clean}

    assert rollups.refresh_dirty(hold_us=an_hour) == 1  # the day marked whole
    assert rollups.held == 1
    assert dirty() == {(SKILLS[0], day): frozenset({hour})}
    _compare(store, SKILLS[:2])
    # no mark since: the pass before left its cursor at the held day's refresh, so this one
    # reads it again (and holds it again), and so does the one after, which refreshes it
    assert rollups.refresh_dirty(hold_us=an_hour) == 0
    assert rollups.held == 1
    assert rollups.refresh_dirty(hold_us=1) == 1  # refreshed longer ago than the hold
    assert rollups.held == 0
    assert dirty() == {}
    _compare(store, SKILLS[:2])
