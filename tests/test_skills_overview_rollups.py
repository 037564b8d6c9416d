"""The skills list (``Scorecards.overview``, the web UI's skills page) and a skill's usage
(``Scorecards.usage``, its page's cost and usage charts) read from the scorecard read models
give the raw rows' answer, on both transports: across windows (all time, one starting inside
a day and an hour, one on an hour inside a day, one at midnight), before the activations' days
are all marked (an older store), with activations written after the last refresh through the
rebuild write path (nobody scored them; a paired rerun's, not counted; a session rebuilt
again), after rescoring (marked days, then refreshed), for a day refreshed in an older format,
and after a second rebuild."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.scorecard import skill_names, zipf_counts
from benchmarks.synthetic_store import SyntheticPlan, fill_synthetic_scorecards
from skillsight.rebuild.trajectories import atif
from skillsight.reports import skills_overview
from skillsight.store import Store
from skillsight.store.records import Activation
from tests.test_scorecard_rollups import rescore

PROJECT = "p"
SKILLS = skill_names(3)
# The newest activation starts mid-afternoon, so a 7-day window starts inside a day.
END = datetime(2026, 11, 20, 15, 30, 12, tzinfo=UTC)


def _windows() -> list[datetime | None]:
    midnight = END.replace(hour=0, minute=0, second=0, microsecond=0)
    hour = END.replace(minute=0, second=0, microsecond=0)
    return [None, END - timedelta(days=7), hour - timedelta(days=3), midnight - timedelta(days=30)]


def _day(days_before_end: int) -> str:
    return (END - timedelta(days=days_before_end)).date().isoformat()


def _normal(rows: dict[str, list[dict[str, Any]]]) -> dict[str, dict[Any, tuple[Any, ...]]]:
    """The overview's rows keyed by what they count, in the columns the skills page shows."""
    return {
        "skills": {
            str(r["skill_name"]): (
                int(r["activations"]),
                int(r["failing"]),
                int(r["first_started_us"]),
                int(r["last_started_us"]),
            )
            for r in rows["skills"]
        },
        "evaluators": {
            (str(r["skill_name"]), str(r["evaluator"])): (
                int(r["activations"]),
                *(
                    (int(r["scored"]), int(r["not_evaluated"]), int(r["passed"]))
                    if r["evaluator"]
                    else ()
                ),
                *(
                    (float(r["mean_score"]), float(r["min_score"]))
                    if r["evaluator"] and int(r["scored"])
                    else ()
                ),
            )
            for r in rows["evaluators"]
        },
        "days": {
            (str(r["skill_name"]), str(r["day"])): (int(r["activations"]), int(r["failing"]))
            for r in rows["days"]
        },
    }


def _same(raw: dict[Any, tuple[Any, ...]], fast: dict[Any, tuple[Any, ...]], where: str) -> None:
    assert raw.keys() == fast.keys(), where
    for key, values in raw.items():
        for a, b in zip(values, fast[key], strict=True):
            if isinstance(a, float):  # a mean: sums added in another order
                assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15), f"{where} {key}"
            else:
                assert a == b, f"{where} {key}: {values} != {fast[key]}"


def _usage(rows: list[dict[str, Any]]) -> dict[Any, tuple[Any, ...]]:
    """A skill's usage rows (its page's cost and usage charts) keyed by day and version."""
    assert [(r["day"], r["skill_version"]) for r in rows] == sorted(
        (r["day"], r["skill_version"]) for r in rows
    )
    return {
        (str(r["day"]), str(r["skill_version"])): (
            int(r["activations"]),
            float(r["cost_usd"]),
            int(r["tokens"]),
            float(r["duration_ms"]),
            int(r["tool_calls"]),
        )
        for r in rows
    }


def _compare(store: Store) -> int:
    """The overview of every window, and each skill's usage, from the read models against the
    raw rows'; returns the (skill, day) rows compared."""
    compared = 0
    for since in _windows():
        raw = _normal(store.scorecards.overview(PROJECT, since=since, read_models=False))
        fast = _normal(store.scorecards.overview(PROJECT, since=since, read_models=True))
        for part in raw:
            _same(raw[part], fast[part], f"since {since} {part}")
        compared += len(raw["days"])
        for skill in SKILLS:
            raw_usage = _usage(
                store.scorecards.usage(PROJECT, skill, since=since, read_models=False)
            )
            fast_usage = _usage(
                store.scorecards.usage(PROJECT, skill, since=since, read_models=True)
            )
            _same(raw_usage, fast_usage, f"since {since} {skill} usage")
            compared += len(raw_usage)
    return compared


@dataclass
class _Rebuilt:
    """The shape ``rebuild_session`` returns, built by hand."""

    session_id: str
    trajectory: atif.Trajectory
    activations: list[Activation] = field(default_factory=list)


def _rebuild(store: Store, session: str, skill: str, day: str, count: int, rerun: str = "") -> None:
    """A session's rebuild through the store's write path: ``count`` activations of a skill
    started on one day, nobody scored them (``rerun``: a paired rerun's)."""
    trajectory = atif.Trajectory(
        session_id=session,
        agent=atif.Agent(name="claude-code", version="2.1.330"),
        steps=[atif.Step(step_id=1, source="user", message="go")],
    )
    activations = [
        Activation(
            activation_id=f"{session}-{n}",
            session_id=session,
            trace_id="4bf92f3577b34da6a3ce929d0e0e4736",
            skill_name=skill,
            skill_version="v",
            trigger="skill_tool",
            trigger_call_id=f"toolu_{n}",
            started_at=f"{day}T{n % 24:02d}:{n % 60:02d}:07.250000Z",
            ended_at=f"{day}T{n % 24:02d}:{n % 60:02d}:09Z",
            rerun_id=rerun,
        )
        for n in range(count)
    ]
    store.rebuilds.write_one(PROJECT, _Rebuilt(session, trajectory, activations))


def _unscored_by_sql(store: Store, skill: str, day: str, count: int) -> None:
    """Activations written by SQL, as a writer older than the marks wrote them (no day is
    marked)."""
    store.execute(
        "INSERT INTO activations (project_id, activation_id, session_id, trace_id, skill_name,"
        " skill_version, started_at, rebuilt_at) "
        "SELECT {p:String}, concat('unscored-', toString(number)), 'unscored', 't', {s:String},"
        " 'v', toDateTime64({d:Date}, 6, 'UTC') + toIntervalMinute(number), now64(6) "
        "FROM numbers({n:UInt64})",
        {"p": PROJECT, "s": skill, "d": day, "n": count},
    )


def _dirty(store: Store) -> set[tuple[str, str]]:
    return {
        (s.skill_name, s.day) for s in store.scorecards.rollups.day_states(PROJECT) if not s.clean
    }


def _unscored(store: Store) -> dict[str, int]:
    return {s.name: s.unscored for s in skills_overview(store, PROJECT, window="all")}


def test_the_skills_list_reads_the_same_from_the_day_rollups(store: Store) -> None:
    plan = SyntheticPlan(
        PROJECT, SKILLS, tuple(zipf_counts(900, len(SKILLS))), int(END.timestamp() * 1e6)
    )
    fill_synthetic_scorecards(store, plan)
    # an older store: activations on a day nobody scored (the day after the last), unmarked
    _unscored_by_sql(store, SKILLS[2], _day(-1), 3)
    rollups = store.scorecards.rollups
    rollups.backfill(PROJECT)  # the scores only: activations still counted in their table
    assert not rollups.activations_ready()
    assert _compare(store) > 0
    rollups.backfill()  # marks the day nobody scored, then the read model is ready
    assert rollups.ready() and rollups.activations_ready()
    assert _dirty(store) == {(SKILLS[2], _day(-1))}
    _compare(store)
    rollups.clock_margin_us = 0  # one clock here: a refresh begun after the marks cleans them
    assert rollups.refresh_dirty() == 1
    assert not _dirty(store)
    assert _compare(store) > 0
    assert _unscored(store)[SKILLS[2]] == 3

    # activations written after the last refresh, nobody scored them: their days are marked,
    # read from the rows, then refreshed; the window's first (partial) day is read from the
    # rows whatever its state
    _rebuild(store, "late-1", SKILLS[1], _day(3), 4)
    _rebuild(store, "late-2", SKILLS[0], _day(7), 30)
    assert _dirty(store) == {(SKILLS[1], _day(3)), (SKILLS[0], _day(7))}
    _compare(store)
    assert _unscored(store)[SKILLS[1]] == 4
    assert rollups.refresh_dirty() == 2
    _compare(store)
    # a paired rerun's activations are not production traffic: no day marked, none counted
    _rebuild(store, "rerun-1", SKILLS[1], _day(3), 5, rerun="rerun-a")
    assert not _dirty(store)
    _compare(store)
    assert _unscored(store)[SKILLS[1]] == 4

    # the same session rebuilt again (same activations, a newer stamp): counted once, and the
    # day's refresh leaves the rerun's out
    _rebuild(store, "late-1", SKILLS[1], _day(3), 4)
    assert _dirty(store) == {(SKILLS[1], _day(3))}
    _compare(store)
    assert rollups.refresh_dirty() == 1
    _compare(store)
    assert _unscored(store)[SKILLS[1]] == 4

    # rescored: the marked days are read from the copied rows, then refreshed
    assert rescore(store, SKILLS[0], _day(0), 0.0, "9") > 0
    assert rescore(store, SKILLS[2], _day(4), 1.0, "9") > 0
    assert _dirty(store) == {(SKILLS[0], _day(0)), (SKILLS[2], _day(4))}
    _compare(store)
    assert rollups.refresh_dirty() == 2
    _compare(store)

    # a day whose newest refresh wrote an older format (1: no activation counts; an older
    # process refreshed it) is read from the rows until the refresher recomputes it: not at
    # the next pass, which looks at the days marked since the last (it is not marked), but at
    # the next that reads every day's state
    store.execute(
        "INSERT INTO scorecard_days (project_id, skill_name, day, kind, activations,"
        " refreshed_at) VALUES ({p:String}, {s:String}, {d:Date}, 0, 1, now64(6))",
        {"p": PROJECT, "s": SKILLS[0], "d": _day(2)},
    )
    assert _dirty(store) == {(SKILLS[0], _day(2))}
    _compare(store)
    assert rollups.refresh_dirty() == 0
    _compare(store)
    assert rollups.refresh_dirty(sweep=True) == 1
    _compare(store)

    # a session rebuilt a second time: its activations are counted once
    store.execute(
        "INSERT INTO activations SELECT * REPLACE (rebuilt_at + toIntervalHour(2) AS rebuilt_at)"
        " FROM activations WHERE project_id = {p:String} AND skill_name = {s:String}"
        " AND toDate(started_at) = {d:Date}",
        {"p": PROJECT, "s": SKILLS[1], "d": _day(1)},
    )
    _compare(store)
    assert skills_overview(store, PROJECT, window="all", read_models=True) == skills_overview(
        store, PROJECT, window="all", read_models=False
    )
