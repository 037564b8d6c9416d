"""A window's first (partial) day read from the hour rollups (migration 0022): its whole hours
from ``scorecard_hours``, only the rest of the hour it starts in from the copied rows, and the
whole day from the rows again when a refresh's hours are not all there. That the answers equal
the raw rows' is checked across windows by ``test_scorecard_rollups`` and
``test_skills_overview_rollups``; this file checks which rows are read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.scorecard import skill_names, zipf_counts
from benchmarks.synthetic_store import SyntheticPlan, fill_synthetic_scorecards
from skillsight.store import Store
from skillsight.store._first_day import FirstDay, first_day
from skillsight.store._rollups import DayState
from skillsight.store._sql import micros
from tests.test_scorecard_rollups import _equal
from tests.test_skills_overview_rollups import _normal, _same

PROJECT = "p"
SKILLS = skill_names(3)
END = datetime(2026, 11, 20, 15, 30, 12, tzinfo=UTC)
SINCE = END - timedelta(days=7)  # 2026-11-13 15:30:12: hours 16-23 whole, 15 partial
CUT = SINCE.replace(minute=0, second=0) + timedelta(hours=1)
HOUR_US = 3_600_000_000


def _state(day: str, *, clean: bool = True, hourly: bool = True) -> DayState:
    return DayState(PROJECT, "s", day, 0, 1, clean, clean and hourly)


def test_a_windows_first_day_is_read_by_whole_hours_when_every_state_of_it_has_them() -> None:
    day = "2026-11-13"
    start = micros(datetime(2026, 11, 13, tzinfo=UTC))
    states = [_state(day), _state("2026-11-14")]
    assert first_day(states, 0) == FirstDay("", 24, 0)  # all time: no first day
    # inside hour 15: hours 16 on from the rollups, the rows up to 16:00
    since = start + 15 * HOUR_US + 1_812_000_000
    assert first_day(states, since) == FirstDay(day, 16, start + 16 * HOUR_US)
    # on an hour: that hour on from the rollups, no row (the cut is the window's start)
    assert first_day(states, start + 15 * HOUR_US) == FirstDay(day, 15, start + 15 * HOUR_US)
    assert first_day(states, start) == FirstDay(day, 0, start)
    # inside the last hour: no whole hour left, the rows up to midnight
    assert first_day(states, start + 23 * HOUR_US + 1) == FirstDay(day, 24, start + 24 * HOUR_US)
    # any state of the day without its hours (dirty, or refreshed before format 4): the rows
    for other in (_state(day, clean=False), _state(day, hourly=False)):
        assert first_day([*states, other], since) == FirstDay(day, 24, 0)
    assert first_day([_state("2026-11-14")], since) == FirstDay(day, 24, 0)  # nothing that day
    assert FirstDay(day, 24, 0).cut == {"cut_day": day, "until": 0}


def _reads(store: Store, since: datetime = SINCE, *, read_models: bool = True) -> dict[str, Any]:
    """A window's skills list, usage charts and scorecards (the 7-day window's unless told),
    from the read models or from the raw rows."""
    cards = store.scorecards
    card = cards.rows if read_models else cards.raw_rows
    below = cards.below if read_models else cards.raw_below
    return {
        "overview": cards.overview(PROJECT, since=since, read_models=read_models),
        **{
            f"usage {skill}": cards.usage(PROJECT, skill, since=since, read_models=read_models)
            for skill in SKILLS
        },
        **{f"card {skill}": card(PROJECT, skill, since=since) for skill in SKILLS},
        # the gate's page, long enough to reach the window's first day
        **{f"gate {skill}": below(PROJECT, skill, 0.5, since=since, limit=500) for skill in SKILLS},
    }


def _changed(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    return {key for key in before if before[key] != after[key]}


def _same_reads(
    before: dict[str, Any], after: dict[str, Any], *, but: tuple[str, ...] = ()
) -> None:
    """Equal, means up to the order their sums were added in (reads named ``but…`` left out)."""
    for part, rows in _normal(before["overview"]).items():
        _same(rows, _normal(after["overview"])[part], f"overview {part}")
    for key in before:
        if key != "overview" and not key.startswith(but):
            _equal(before[key], after[key], key)


def test_the_first_days_whole_hours_are_read_from_the_hour_rollups(store: Store) -> None:
    plan = SyntheticPlan(
        PROJECT, SKILLS, tuple(zipf_counts(900, len(SKILLS))), int(END.timestamp() * 1e6)
    )
    fill_synthetic_scorecards(store, plan)
    # activations that named no skill version, in the first day's whole hours: their hour rows
    # are not the refresh's marker, whose version is '' too
    store.execute(
        "INSERT INTO activations (project_id, activation_id, session_id, trace_id, skill_name,"
        " skill_version, started_at, rebuilt_at, cost_usd) "
        "SELECT {p:String}, concat('unversioned-', toString(number)), 'unversioned', 't',"
        " {s:String}, '', {t:DateTime64(6)} + toIntervalMinute(number), now64(6), 0.5 "
        "FROM numbers(90)",
        {"p": PROJECT, "s": SKILLS[0], "t": CUT.replace(tzinfo=None)},
    )
    rollups = store.scorecards.rollups
    rollups.backfill()
    _same_as_raw(store, SINCE)
    first = [s for s in rollups.day_states(PROJECT) if s.day == SINCE.date().isoformat()]
    assert first and all(s.clean and s.hourly for s in first)
    before = _reads(store)
    assert before["overview"]["skills"] and before["card " + SKILLS[0]]["versions"]

    # the evaluations (and their copied rows) and the activations of the first day's whole
    # hours changed behind the read models' back (no mark): the reads do not see it, so they
    # did not read those rows
    params = {"p": PROJECT, "d": SINCE.date(), "cut": int(CUT.timestamp() * 1e6)}
    after_cut = (
        " WHERE project_id = {p:String} AND toDate(started_at) = {d:Date}"
        " AND started_at >= fromUnixTimestamp64Micro({cut:Int64}, 'UTC')"
    )
    assert int(store.query("SELECT count() AS n FROM scorecard_rows" + after_cut, params)[0]["n"])
    store.execute(
        "INSERT INTO scorecard_rows SELECT * REPLACE (0.0 AS score, false AS passed,"
        " evaluated_at + toIntervalHour(1) AS evaluated_at) FROM scorecard_rows FINAL" + after_cut,
        params,
    )
    store.execute(
        "INSERT INTO evaluations SELECT * REPLACE (0.0 AS score, false AS passed,"
        " evaluated_at + toIntervalHour(1) AS evaluated_at) FROM evaluations"
        " WHERE project_id = {p:String} AND activation_id IN"
        " (SELECT activation_id FROM scorecard_rows" + after_cut + ")",
        params,
    )
    store.execute(
        "INSERT INTO activations SELECT * REPLACE (cost_usd + 1 AS cost_usd,"
        " rebuilt_at + toIntervalHour(1) AS rebuilt_at) FROM activations FINAL" + after_cut,
        params,
    )
    # (the gate and the usage charts read the window's first day from the rows, whole: they
    # see the change)
    _same_reads(before, _reads(store), but=("gate", "usage"))

    # a newer refresh of the day whose hours are not here (a replica that has the day's rows
    # and not yet its hours): the whole first day is read from the rows again
    store.execute(
        "INSERT INTO scorecard_days (project_id, skill_name, day, kind, activations,"
        " refreshed_at) SELECT project_id, skill_name, day, 0, 4, refreshed_at + toIntervalHour(1)"
        " FROM scorecard_days WHERE project_id = {p:String} AND day = {d:Date} AND kind = 0"
        " ORDER BY skill_name, refreshed_at DESC LIMIT 1 BY skill_name",
        params,
    )
    fallen_back = _reads(store)
    changed = _changed(before, fallen_back)
    assert "overview" in changed and any(key.startswith("card") for key in changed)
    # and they say what the rows say
    _same_reads(_reads(store, read_models=False), fallen_back)


def test_the_hour_rollups_add_up_to_the_day_rollups(store: Store) -> None:
    """Every kind of a refreshed day, summed over its hours, is its day row (the hour rows are
    the day rows cut by the hour of each activation's start)."""
    plan = SyntheticPlan(PROJECT, SKILLS[:1], (400,), int(END.timestamp() * 1e6))
    fill_synthetic_scorecards(store, plan)
    store.scorecards.rollups.backfill()
    sums = """
        SELECT toString(day) AS day, kind, skill_version, evaluator, sum(activations) AS n,
               sum(scored) AS s, sum(not_evaluated) AS e, sum(passed) AS p,
               round(sum(score_sum), 9) AS t, minIf(score_min, scored > 0) AS m,
               toString(min(first_started)) AS f, toString(max(last_started)) AS l,
               round(sum(cost_usd), 9) AS c, sum(tokens) AS k, round(sum(duration_ms), 6) AS d,
               sum(tool_calls) AS x, uniqExact(hour) AS hours
        FROM (SELECT *, {hour} AS hour FROM {table} WHERE project_id = {{p:String}}
              AND kind IN (1, 2, 3, 4) ORDER BY refreshed_at DESC
              LIMIT 1 BY day, hour, kind, skill_version, evaluator)
        GROUP BY day, kind, skill_version, evaluator
        ORDER BY day, kind, skill_version, evaluator"""
    hours = store.query(sums.format(table="scorecard_hours", hour="hour"), {"p": PROJECT})
    days = store.query(sums.format(table="scorecard_days", hour="0"), {"p": PROJECT})
    assert len(days) > 20 and any(int(r["hours"]) > 1 for r in hours)
    strip = [{k: v for k, v in r.items() if k != "hours"} for r in hours]
    assert strip == [{k: v for k, v in r.items() if k != "hours"} for r in days]


def test_a_day_refreshed_before_the_hour_rollups_stays_clean_and_gets_its_hours(
    store: Store,
) -> None:
    """After an upgrade, a day whose newest refresh wrote format 3 (no hours) is still read
    from its day rows, its first day from the rows, and the refresher adds its hours."""
    plan = SyntheticPlan(
        PROJECT, SKILLS, tuple(zipf_counts(900, len(SKILLS))), int(END.timestamp() * 1e6)
    )
    fill_synthetic_scorecards(store, plan)
    rollups = store.scorecards.rollups
    rollups.backfill()
    rollups.clock_margin_us = 0
    day = SINCE.date().isoformat()
    store.execute(  # the day's newest refresh again, as format 3 wrote it: no hour rows
        "INSERT INTO scorecard_days SELECT * REPLACE (if(kind = 0, 3, activations) AS"
        " activations, refreshed_at + toIntervalMillisecond(1) AS refreshed_at) FROM scorecard_days"
        " WHERE project_id = {p:String} AND day = {d:Date}"
        " ORDER BY refreshed_at DESC LIMIT 1 BY skill_name, kind, skill_version, evaluator",
        {"p": PROJECT, "d": day},
    )
    older = {s.skill_name: s for s in rollups.day_states(PROJECT) if s.day == day}
    assert older and all(s.clean and not s.hourly for s in older.values())
    assert first_day(list(older.values()), micros(SINCE)) == FirstDay(day, 24, 0)
    for since in (SINCE, SINCE - timedelta(days=3)):  # the day first, then inside the window
        _same_as_raw(store, since)
    assert rollups.refresh_dirty() == len(older)
    assert all(s.hourly for s in rollups.day_states(PROJECT))
    for since in (SINCE, SINCE - timedelta(days=3)):
        _same_as_raw(store, since)


def _same_as_raw(store: Store, since: datetime) -> None:
    _same_reads(_reads(store, since, read_models=False), _reads(store, since))
