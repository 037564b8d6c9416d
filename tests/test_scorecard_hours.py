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
from skillsight.store._day_states import DayState
from skillsight.store._rollups import ScorecardRollups
from skillsight.store._sql import micros
from skillsight.store._window_plan import WindowPlan, window_plan
from tests.test_scorecard_rollups import _equal, rescore
from tests.test_skills_overview_rollups import _normal, _same

PROJECT = "p"
SKILLS = skill_names(3)
END = datetime(2026, 11, 20, 15, 30, 12, tzinfo=UTC)
SINCE = END - timedelta(days=7)  # 2026-11-13 15:30:12: hours 16-23 whole, 15 partial
CUT = SINCE.replace(minute=0, second=0) + timedelta(hours=1)
HOUR_US = 3_600_000_000


def _state(
    day: str, *, clean: bool = True, hourly: bool = True, dirty: frozenset[int] = frozenset()
) -> DayState:
    return DayState(PROJECT, "s", day, 0, 1, clean and not dirty, hourly, dirty)


def test_a_windows_days_are_planned_by_day_by_hour_or_from_the_rows() -> None:
    day, next_day = "2026-11-13", "2026-11-14"
    start = micros(datetime(2026, 11, 13, tzinfo=UTC))
    base, next_base = start // HOUR_US, start // HOUR_US + 24
    states = [_state(day), _state(next_day)]
    # all time: every clean day whole
    assert window_plan(states, 0) == WindowPlan([day, next_day], [], [], [], [])
    # inside hour 15: hours 16 on from the rollups, hour 15 from the rows
    since = start + 15 * HOUR_US + 1_812_000_000
    first = [base + hour for hour in range(16, 24)]
    assert window_plan(states, since) == WindowPlan([next_day], [], [day], first, [base + 15])
    # on an hour: that hour on from the rollups, no row
    on_hour = window_plan(states, start + 15 * HOUR_US)
    assert on_hour == WindowPlan([next_day], [], [day], [base + 15, *first], [])
    assert window_plan(states, start) == window_plan(states, 0)  # at midnight: a whole day
    # inside the last hour: no whole hour left, that hour from the rows
    assert window_plan(states, start + 23 * HOUR_US + 1) == WindowPlan(
        [next_day], [], [], [], [base + 23]
    )
    # hours marked since the refresh (of any skill): those from the rows, the rest by the hour
    marked = _state(next_day, dirty=frozenset({3, 4}))
    plan = window_plan([_state(day), _state(next_day), marked], since)
    assert plan.clean == [] and plan.raw == [] and plan.hour_days == [day, next_day]
    assert plan.hours == first + [next_base + h for h in range(24) if h not in (3, 4)]
    assert plan.raw_hours == [base + 15, next_base + 3, next_base + 4]
    every_hour = _state(next_day, dirty=frozenset(range(24)))
    assert window_plan([every_hour], 0) == WindowPlan(
        [], [], [], [], [next_base + h for h in range(24)]
    )
    # any state of a day without readable hours (a whole-day mark, or refreshed before format
    # 4): that day whole from the rows, from the window's start
    for other in (_state(day, clean=False, hourly=False), _state(day, hourly=False)):
        assert window_plan([*states, other], since) == WindowPlan([next_day], [day], [], [], [])
    assert window_plan([_state(day, clean=False, hourly=False)], 0).raw == [day]
    # without hours (the gate, the usage charts): the first day and the marked days whole
    assert window_plan([*states, marked], since, hours=False) == WindowPlan(
        [], [day, next_day], [], [], []
    )
    assert window_plan([_state(next_day)], since) == WindowPlan([next_day], [], [], [], [])
    assert window_plan([_state("2026-11-12")], since) == WindowPlan([], [], [], [], [])


def _reads(
    store: Store, since: datetime | None = SINCE, *, read_models: bool = True
) -> dict[str, Any]:
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
    rollups = _backfilled(store)
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
    assert window_plan(list(older.values()), micros(SINCE)).raw == [day]
    for since in (SINCE, SINCE - timedelta(days=3)):  # the day first, then inside the window
        _same_as_raw(store, since)
    assert rollups.refresh_dirty() == len(older)
    assert all(s.hourly for s in rollups.day_states(PROJECT))
    for since in (SINCE, SINCE - timedelta(days=3)):
        _same_as_raw(store, since)


def _same_as_raw(store: Store, since: datetime | None) -> None:
    _same_reads(_reads(store, since, read_models=False), _reads(store, since))


def _backfilled(store: Store) -> ScorecardRollups:
    """A synthetic store, its read models backfilled, on one clock (a mark after a refresh is
    after it)."""
    plan = SyntheticPlan(
        PROJECT, SKILLS, tuple(zipf_counts(900, len(SKILLS))), int(END.timestamp() * 1e6)
    )
    fill_synthetic_scorecards(store, plan)
    rollups = store.scorecards.rollups
    rollups.backfill()
    rollups.clock_margin_us = 0
    return rollups


def _busiest_hours(store: Store, skill: str, day: str) -> list[int]:
    """The two hours of a skill's day with the most copied rows."""
    found = store.query(
        "SELECT toHour(started_at) AS h FROM scorecard_rows WHERE project_id = {p:String}"
        " AND skill_name = {s:String} AND toDate(started_at) = {d:Date}"
        " GROUP BY h ORDER BY count() DESC, h LIMIT 2",
        {"p": PROJECT, "s": skill, "d": day},
    )
    assert len(found) == 2
    return [int(r["h"]) for r in found]


def _rescore_hour(store: Store, skill: str, day: str, hour: int) -> int:
    """Every evaluation of a skill's activations started in one hour of a day scored 0, through
    the store's write path (which marks that hour)."""
    return rescore(store, skill, day, 0.0, "9", hour=hour)


def _refreshed_elsewhere(store: Store, params: dict[str, Any]) -> None:
    """A newer refresh of a skill's day (``params`` s, d) whose day rows are here and whose
    hours are not yet (a lagging replica)."""
    store.execute(
        "INSERT INTO scorecard_days SELECT * REPLACE (refreshed_at + toIntervalMillisecond(1) AS"
        " refreshed_at) FROM scorecard_days WHERE project_id = {p:String} AND skill_name ="
        " {s:String} AND day = {d:Date} ORDER BY refreshed_at DESC"
        " LIMIT 1 BY kind, skill_version, evaluator",
        params,
    )


def test_hours_marked_since_a_refresh_are_read_from_the_rows_the_others_by_the_hour(
    store: Store,
) -> None:
    """A day written to since its refresh (today, under live traffic) is read from the hour
    rollups but for the hours marked since, which are read from the rows; a mark naming the
    whole day sends all of it to the rows; the refresher cleans both."""
    rollups = _backfilled(store)
    skill, day = SKILLS[0], (END - timedelta(days=2)).date().isoformat()
    marked, other = _busiest_hours(store, skill, day)
    windows = (SINCE, SINCE - timedelta(days=3))
    clean = _reads(store)

    assert _rescore_hour(store, skill, day, marked) > 0
    state = next(s for s in rollups.day_states(PROJECT, skill) if s.day == day)
    assert not state.clean and state.hourly and state.dirty_hours == {marked}
    assert _changed(clean, _reads(store)) >= {"overview", f"card {skill}"}
    for since in windows:
        _same_as_raw(store, since)

    # the other hours' rows changed behind the read models' back (no mark): the skills list
    # and the scorecard do not see it, so they read those hours from the hour rollups
    before = {since: _reads(store, since) for since in windows}
    params = {"p": PROJECT, "s": skill, "d": day, "h": other}
    in_hour = (
        " WHERE project_id = {p:String} AND skill_name = {s:String}"
        " AND toDate(started_at) = {d:Date} AND toHour(started_at) = {h:UInt8}"
    )
    store.execute(
        "INSERT INTO scorecard_rows SELECT * REPLACE (0.0 AS score, false AS passed,"
        " evaluated_at + toIntervalHour(1) AS evaluated_at) FROM scorecard_rows FINAL" + in_hour,
        params,
    )
    store.execute(
        "INSERT INTO evaluations SELECT * REPLACE (0.0 AS score, false AS passed,"
        " evaluated_at + toIntervalHour(1) AS evaluated_at) FROM evaluations"
        " WHERE project_id = {p:String} AND activation_id IN"
        " (SELECT activation_id FROM scorecard_rows" + in_hour + ")",
        params,
    )
    store.execute(  # and activations nobody scored yet
        "INSERT INTO activations SELECT * REPLACE (concat(activation_id, '-late') AS"
        " activation_id) FROM activations FINAL" + in_hour,
        params,
    )
    for since in windows:
        _same_reads(before[since], _reads(store, since), but=("gate", "usage"))

    # a mark naming the whole day: all of it from the rows, which say what changed
    rollups.mark(PROJECT, skill, [day])
    state = next(s for s in rollups.day_states(PROJECT, skill) if s.day == day)
    assert not state.clean and not state.hourly
    for since in windows:
        whole = _reads(store, since)
        assert "overview" in _changed(before[since], whole)
        _same_reads(_reads(store, since, read_models=False), whole)

    assert rollups.refresh_dirty() == 1
    assert all(s.clean and s.hourly for s in rollups.day_states(PROJECT))
    for since in windows:
        _same_as_raw(store, since)

    # a newer refresh of the day whose hours are not here yet (a lagging replica), then a mark
    # of one hour: the day's hours are not read (its marker is missing), the rows are
    _refreshed_elsewhere(store, params)
    assert _rescore_hour(store, skill, day, marked) > 0
    state = next(s for s in rollups.day_states(PROJECT, skill) if s.day == day)
    assert not state.clean and state.hourly and state.dirty_hours == {marked}
    for since in windows:
        _same_as_raw(store, since)


def _rollups_of(store: Store, skill: str, day: str) -> dict[str, list[dict[str, Any]]]:
    """The hour and day rows of a skill's day, of its newest refresh (stamp left out)."""
    out = {}
    for table, hour in (("scorecard_hours", "hour"), ("scorecard_days", "0")):
        out[table] = store.query(
            f"SELECT {hour} AS h, kind, skill_version, evaluator, activations, scored,"
            " not_evaluated, passed, score_sum, score_min, toString(first_started) AS f,"
            " toString(last_started) AS l, cost_usd, tokens, duration_ms, tool_calls"
            f" FROM {table} WHERE project_id = {{p:String}} AND skill_name = {{s:String}}"
            " AND day = {d:Date} AND refreshed_at = (SELECT max(refreshed_at) FROM scorecard_days"
            " WHERE project_id = {p:String} AND skill_name = {s:String} AND day = {d:Date}"
            " AND kind = 0) ORDER BY h, kind, skill_version, evaluator",
            {"p": PROJECT, "s": skill, "d": day},
        )
    return out


def test_a_day_marked_by_the_hour_is_refreshed_by_those_hours(store: Store) -> None:
    """The refresher recomputes only the hours marked since a day's refresh and takes the other
    hours' rows from that refresh: the result is a whole recompute's, and rows changed behind
    the read models' back in an unmarked hour stay unseen; a refresh whose hours are not here
    (a lagging replica) is redone whole."""
    rollups = _backfilled(store)
    skill, day = SKILLS[0], (END - timedelta(days=2)).date().isoformat()
    marked, other = _busiest_hours(store, skill, day)
    assert _rescore_hour(store, skill, day, marked) > 0
    assert rollups.refresh_dirty() == 1
    by_hour = _rollups_of(store, skill, day)
    rollups.refresh(PROJECT, skill, [day])
    _equal(_rollups_of(store, skill, day), by_hour, "by the hour against whole")
    assert any(float(r["score_sum"]) == 0.0 for r in by_hour["scorecard_hours"])

    # another hour's rows changed behind the read models' back, then the marked hour again:
    # the refresh does not read the other hour
    params = {"p": PROJECT, "s": skill, "d": day, "h": other}
    store.execute(
        "INSERT INTO scorecard_rows SELECT * REPLACE (0.5 AS score,"
        " evaluated_at + toIntervalHour(1) AS evaluated_at) FROM scorecard_rows FINAL"
        " WHERE project_id = {p:String} AND skill_name = {s:String}"
        " AND toDate(started_at) = {d:Date} AND toHour(started_at) = {h:UInt8}",
        params,
    )
    before = _rollups_of(store, skill, day)
    assert _rescore_hour(store, skill, day, marked) > 0
    assert rollups.refresh_dirty() == 1
    after = _rollups_of(store, skill, day)
    assert [r for r in after["scorecard_hours"] if r["h"] == other] == [
        r for r in before["scorecard_hours"] if r["h"] == other
    ]

    # a newer refresh of the day whose hours are not here, then a mark of one hour: the day is
    # recomputed whole (beside another day marked whole, counted once each), and sees the
    # other hour's rows as they are now
    _refreshed_elsewhere(store, params)
    assert _rescore_hour(store, skill, day, marked) > 0
    rollups.mark(PROJECT, skill, [(END - timedelta(days=4)).date().isoformat()])
    assert rollups.refresh_dirty() == 2
    redone = _rollups_of(store, skill, day)
    assert [r for r in redone["scorecard_hours"] if r["h"] == other] != [
        r for r in before["scorecard_hours"] if r["h"] == other
    ]
    rollups.refresh(PROJECT, skill, [day])
    _equal(_rollups_of(store, skill, day), redone, "redone whole")


# Skill names as telemetry may carry them: quotes, escapes, control characters, braces that look
# like query parameters, and names that end like a day or a cell's name.
HOSTILE_SKILLS = (
    "it's",
    "back\\slash",
    "tab\there",
    "new\nline",
    "ünïcödé",
    "{skill:String}",
    "2026-11-18",
    "x2026-11-1",
)


def test_skills_with_any_name_are_refreshed_and_read_by_the_hour(store: Store) -> None:
    """Hostile skill names go through the marks, the refresh of whole days and of marked hours
    (whose cells and stamps are named by concatenation) and every read, equal to the raw rows."""
    store.execute(
        "INSERT INTO activations (project_id, activation_id, session_id, trace_id, skill_name,"
        " skill_version, started_at, rebuilt_at) "
        "SELECT {p:String}, concat('h', toString(number)), 's', 't',"
        " {skills:Array(String)}[number % length({skills:Array(String)}) + 1], 'v1',"
        " fromUnixTimestamp64Micro({end:Int64} - number * 1700000000, 'UTC'), now64(6) "
        "FROM numbers(400)",
        {"p": PROJECT, "skills": list(HOSTILE_SKILLS), "end": micros(END)},
    )
    rollups = store.scorecards.rollups
    rollups.clock_margin_us = 0
    assert rollups.ready()

    def score(value: float, hour: int = -1) -> None:
        found = store.query(
            "SELECT activation_id, skill_name FROM activations WHERE project_id = {p:String}"
            " AND ({h:Int8} < 0 OR toHour(started_at) = {h:Int8})",
            {"p": PROJECT, "h": hour},
        )
        rows = [
            {
                "activation_id": r["activation_id"],
                "evaluator": "security",
                "evaluator_version": "1",
                "skill_name": r["skill_name"],
                "skill_version": "v1",
                "score": value,
                "passed": value >= 1.0,
                "label": "scored",
                "reason": "",
                "evidence_step_ids": [],
                "evidence_tool_call_ids": [],
                "findings": "[]",
                "evaluated_at_us": int(datetime.now(UTC).timestamp() * 1e6),
            }
            for r in found
        ]
        assert store.evaluations.write(PROJECT, rows) == len(rows) > 0

    score(1.0)
    assert rollups.refresh_dirty() > 0  # whole days
    assert all(s.clean and s.hourly for s in rollups.day_states(PROJECT))
    score(0.0, hour=5)  # one hour of each day (one digit: cells pad it): refreshed by the hour
    marked = [s for s in rollups.day_states(PROJECT) if not s.clean]
    assert {s.skill_name for s in marked} == set(HOSTILE_SKILLS)
    assert all(s.hourly and s.dirty_hours == {5} for s in marked)
    cards = store.scorecards
    for refreshed in (False, True):
        if refreshed:
            assert rollups.refresh_dirty() == len(marked)
            assert all(s.clean for s in rollups.day_states(PROJECT))
        for since in (SINCE, None):
            overview = cards.overview(PROJECT, since=since, read_models=True)
            raw = cards.overview(PROJECT, since=since, read_models=False)
            for part, rows in _normal(raw).items():
                _same(rows, _normal(overview)[part], f"overview {part}")
            assert {r["skill_name"] for r in overview["skills"]} == set(HOSTILE_SKILLS)
            for skill in HOSTILE_SKILLS:
                _equal(
                    cards.raw_rows(PROJECT, skill, since=since),
                    cards.rows(PROJECT, skill, since=since),
                    skill,
                )


def test_a_reader_of_every_skill_gets_one_state_for_each_day_clean_for_all(store: Store) -> None:
    """The skills list reads a day clean for every skill alike for all of them, so it asks for
    one state of such a day (ClickHouse decides which are); a day some skill wrote to since its
    refresh, and the window's first day, keep every skill's state (read by the hour, with
    each skill's marker checked); the plan is the same either way."""
    rollups = _backfilled(store)
    skill, day = SKILLS[1], (END - timedelta(days=2)).date().isoformat()
    assert _rescore_hour(store, skill, day, _busiest_hours(store, skill, day)[0]) > 0
    for since in (None, SINCE):
        since_us = micros(since) if since else 0
        every = rollups.day_states(PROJECT, since_us=since_us)
        once = rollups.day_states(PROJECT, since_us=since_us, clean_days_once=True)
        first = SINCE.date().isoformat() if since else ""
        kept = {d for d in {s.day for s in every} if d in (day, first)}
        assert {(s.skill_name, s.day) for s in once if s.day in kept} == {
            (s.skill_name, s.day) for s in every if s.day in kept
        }
        others = [s for s in once if s.day not in kept]
        assert others and all(s.clean for s in others)
        assert len(others) == len({s.day for s in others})  # one state a clean day
        assert len(once) < len(every)
        assert window_plan(once, since_us) == window_plan(every, since_us)
        _same_as_raw(store, since)
