"""Reads the pipeline makes per session or per batch find their rows through the tables' sort
keys, so that they cost what they return, not what the project has stored over the months.

A session's rows (what a rebuild reads) are checked on a project holding 80,000 other sessions:
each read's plan against the granules of the tables and of their projections (migration 0025),
and its rows against the plain reading of what belongs to a session (every row that names it,
that is in a trace it owns, or whose trace id is its key) over every row. The stored scores of
a scheduler's batch are checked on 1.6M evaluation rows, and read from their narrow digests once
those hold every row (migration 0026)."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from benchmarks.rebuild import raw_tables
from benchmarks.sessions import synthetic_session
from skillsight.evaluators.scheduler import ContextAssembler
from skillsight.rebuild.rebuild_pass import parents_in, waits_for_root
from skillsight.reports import with_evaluations
from skillsight.store import Store
from skillsight.store._sessions import _SESSIONS_OF_TRACES
from skillsight.store.records import Activation

P = "p"
KEY = "00000000-0000-4000-8000-00000000abcd"
OTHER = "00000000-0000-4000-8000-00000000ffff"  # a session not read, naming a row of KEY's trace
HISTORY_ROWS = 800_000  # ten rows a session: ~98 granules of each table

# The plain reading: every row of the project looked at, the newest copy of each.
_OWNED = """
    (session_id = {key:String} OR trace_id = {key:String} OR trace_id IN (
        SELECT trace_id FROM spans WHERE project_id = {project:String} AND session_id = {key:String}
        UNION ALL
        SELECT trace_id FROM events
        WHERE project_id = {project:String} AND session_id = {key:String} AND trace_id != ''))"""
_PLAIN_SPANS = f"""
SELECT DISTINCT trace_id, span_id FROM spans
WHERE project_id = {{project:String}} AND {_OWNED}
  AND (ingested_at >= fromUnixTimestamp64Micro({{since:Int64}}, 'UTC')
       OR trace_id IN {{fresh:Array(String)}})"""
_PLAIN_EVENTS = f"""
SELECT DISTINCT record_id FROM events
WHERE project_id = {{project:String}} AND {_OWNED}
  AND (ingested_at >= fromUnixTimestamp64Micro({{since:Int64}}, 'UTC')
       OR trace_id IN {{fresh:Array(String)}})"""


def _history(store: Store) -> None:
    """Ten spans and ten events for each of 80,000 sessions, one trace each, in one insert per
    table (so each table holds one large part beside the session's small ones)."""
    store.execute(
        f"""
        INSERT INTO spans (project_id, trace_id, span_id, parent_span_id, name, start_time,
                           end_time, session_id, source_convention)
        SELECT {{project:String}}, concat('h-trace-', toString(intDiv(number, 10))),
               lower(hex(number)), '', 'claude_code.tool',
               now64(9) - toIntervalSecond(number), now64(9) - toIntervalSecond(number),
               concat('h-session-', toString(intDiv(number, 10))), 'claude_code'
        FROM numbers({HISTORY_ROWS})""",
        {"project": P},
    )
    store.execute(
        f"""
        INSERT INTO events (project_id, record_id, timestamp, observed_time, trace_id,
                            event_name, session_id, source_convention)
        SELECT {{project:String}}, concat('h-', toString(number)),
               now64(9) - toIntervalSecond(number), now64(9) - toIntervalSecond(number),
               concat('h-trace-', toString(intDiv(number, 10))), 'claude_code.api_request',
               concat('h-session-', toString(intDiv(number, 10))), 'claude_code'
        FROM numbers({HISTORY_ROWS})""",
        {"project": P},
    )


def _insert(store: Store, spans: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
    span_table, event_table = raw_tables(P, spans, events)
    if spans:
        store.spans.insert(span_table)
    if events:
        store.events.insert(event_table)


def _without_session(row: dict[str, Any]) -> dict[str, Any]:
    attributes = {k: v for k, v in row["attributes"].items() if k != "session.id"}
    return {**row, "session_id": "", "attributes": attributes}


def _naming(row: dict[str, Any], session: str, record: str) -> dict[str, Any]:
    attributes = {**row["attributes"], "session.id": session}
    return {**row, "session_id": session, "record_id": record, "attributes": attributes}


def _now_us(store: Store) -> int:
    return int(store.query("SELECT toUnixTimestamp64Micro(now64(6)) AS now")[0]["now"])


def _plain(store: Store, since_us: int = 0, fresh: list[str] | None = None) -> tuple[Any, Any]:
    params = {"project": P, "key": KEY, "since": since_us, "fresh": fresh or []}
    spans = {(r["trace_id"], r["span_id"]) for r in store.query(_PLAIN_SPANS, params)}
    events = {r["record_id"] for r in store.query(_PLAIN_EVENTS, params)}
    return spans, events


def _ids(rows: tuple[list[Any], list[Any]]) -> tuple[Any, Any]:
    spans, events = rows
    assert len(spans) == len({(s["trace_id"], s["span_id"]) for s in spans})  # newest copy only
    return {(s["trace_id"], s["span_id"]) for s in spans}, {e["record_id"] for e in events}


class _Reads:
    """Every statement the store runs while installed (the reads a call makes)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.seen: list[tuple[str, Any]] = []
        self._query = store.query

    def __enter__(self) -> list[tuple[str, Any]]:
        def query(sql: str, params: Any = None) -> Any:
            self.seen.append((sql, params))
            return self._query(sql, params)

        self.store.query = query  # type: ignore[method-assign]
        return self.seen

    def __exit__(self, *exc: object) -> None:
        self.store.query = self._query  # type: ignore[method-assign]


def _granules_read(store: Store, sql: str, params: Any) -> list[tuple[str, int, int]]:
    """Per table or projection read in the statement's plan: its name, the granules selected
    after every index, and all the granules its active parts hold. (The total comes from the
    parts, not the plan: ClickHouse may leave parts out before the plan's first index, as it
    sometimes does when choosing a projection, and a plan's first count then names only what
    was left.)"""
    plan = "\n".join(str(r["explain"]) for r in store.query("EXPLAIN indexes = 1 " + sql, params))
    reads = plan.split("ReadFromMergeTree (")[1:]
    assert reads, plan
    out = []
    for read in reads:
        found = re.findall(r"Granules: (\d+)/(\d+)", read)
        assert found, read
        name = read.split(")", 1)[0].split(".")[-1]
        out.append((name, int(found[-1][0]), _granules_held(store, name)))
    return out


def _granules_held(store: Store, name: str) -> int:
    """The granules of a table's active parts, or of a projection's (each part's marks but its
    final one)."""
    (row,) = store.query(
        """
        SELECT (SELECT sum(marks) - count() FROM system.parts
                WHERE active AND database = currentDatabase() AND table = {name:String})
             + (SELECT sum(marks) - count() FROM system.projection_parts
                WHERE active AND database = currentDatabase() AND name = {name:String})
               AS granules""",
        {"name": name},
    )
    return int(row["granules"])


def test_a_session_is_read_through_the_sort_keys_whatever_the_project_holds(
    store: Store,
) -> None:
    _history(store)
    spans, events = synthetic_session(8, skill_every=3, seed=41, session_id=KEY)
    trace = spans[0]["trace_id"]
    # an event of its trace naming no session, and one naming a session that is not read
    extra = [_without_session({**events[1], "record_id": "no-session"})]
    extra.append(_naming(events[2], OTHER, "other-session"))
    _insert(store, spans[:-3], events + extra)

    with _Reads(store) as reads:
        whole = store.sessions.rows_of(P, [KEY])[KEY]
        looked = store.sessions.parents(P, [KEY])[KEY]
    assert _ids(whole) == _plain(store)
    assert "no-session" in _ids(whole)[1] and "other-session" in _ids(whole)[1]
    assert looked == (len(whole[0]), not parents_in(whole[0]), waits_for_root(whole[0]))

    # Later: the rest of its trace, and a second trace whose spans name no session that joins
    # it through an event naming it. Read since then, knowing the first trace.
    since = _now_us(store)
    later, later_events = synthetic_session(4, skill_every=2, seed=42, session_id=KEY)
    joining = later[0]["trace_id"]
    assert joining != trace
    _insert(store, spans[-3:] + [_without_session(s) for s in later], later_events[:1])
    with _Reads(store) as more:
        got = store.sessions.rows_since(P, [KEY], since, {trace})
    assert got.traces[KEY] == {trace, joining}
    assert _ids(got.rows[KEY]) == _plain(store, since, [joining])
    assert {t for t, _ in _ids(got.rows[KEY])[0]} == {trace, joining}

    # Every statement, and the lookup of the sessions its traces' events name (a subquery,
    # which a plan does not show): a few granules of the table, or of a projection of it.
    lookup = (_SESSIONS_OF_TRACES, {"project": P, "traces": [trace, joining, KEY]})
    statements = [*reads, *more, lookup]
    assert len(statements) >= 7, statements
    read = {name for sql, params in statements for name, _, _ in _granules_read(store, sql, params)}
    assert read == {"spans", "events", "session_traces", "trace_sessions"}, read
    for sql, params in statements:
        for name, selected, total in _granules_read(store, sql, params):
            if name in ("spans", "events"):
                assert total >= 90, (total, sql)  # the history is there to be skipped
            assert selected * 4 <= total, (name, selected, total, sql)


EVALUATION_ROWS = 1_600_000  # 40 skills x 8,000 activations x 5 evaluators: ~195 granules


def test_a_batchs_stored_scores_are_read_by_skill_and_activation(store: Store) -> None:
    """The scheduler's read of what a batch's activations scored before, and the API's and
    UI's read of their evaluations, name each one's skill, so the evaluations' sort key picks a
    granule or two per activation; by id alone the bloom filter passes a granule whenever any
    of the batch's ids may be in it. Rows recorded under another skill (a record the activation
    no longer has) are not its scores then."""
    store.execute(
        f"""
        INSERT INTO evaluations (project_id, activation_id, evaluator, evaluator_version,
                                 skill_name, score, evaluated_at)
        SELECT {{project:String}}, lower(hex(MD5(toString(intDiv(number, 5))))),
               concat('e', toString(number % 5)), '1',
               concat('skill-', toString(intDiv(number, 5) % 40)), 1.0, now64(6)
        FROM numbers({EVALUATION_ROWS})""",
        {"project": P},
    )
    batch = [  # ten of the stored activations, each as its rows name it
        (f"skill-{n % 40}", hashlib.md5(str(n).encode()).hexdigest())
        for n in range(0, 160_000, 16_001)
    ]
    renamed = batch[0][1]  # also scored once as another skill
    store.execute(
        "INSERT INTO evaluations (project_id, activation_id, evaluator, evaluator_version, "
        "skill_name, score, evaluated_at) VALUES ({project:String}, {id:String}, 'e9', '1', "
        "'skill-old', 0.0, now64(6))",
        {"project": P, "id": renamed},
    )
    ids, skills = [i for _, i in batch], [s for s, _ in batch]
    # rows written before their digests were (migration 0026): read from the evaluations until
    # the refresher has copied them
    assert not store.evaluations.digests_ready()
    before_copy = store.evaluations.scored_before(P, ids, skills=skills)
    assert store.evaluations.backfill_digests() == 41 and store.evaluations.digests_ready()

    scored = store.evaluations.scored_before(P, ids, skills=skills)
    assert sorted(scored, key=repr) == sorted(before_copy, key=repr)
    assert sorted((r.activation_id, r.evaluator) for r in scored) == sorted(
        (i, f"e{e}") for i in ids for e in range(5)
    )
    anyhow = store.evaluations.scored_before(P, ids)
    assert {(r.activation_id, r.evaluator) for r in anyhow} - {
        (r.activation_id, r.evaluator) for r in scored
    } == {(renamed, "e9")}
    of = store.evaluations.of(P, ids, skills=skills)
    assert {i: sorted(str(r["evaluator"]) for r in rows) for i, rows in of.items()} == {
        i: [f"e{e}" for e in range(5)] for i in ids
    }

    # What the scheduler's context assembler runs for a batch: the stored scores by skill and
    # activation from their digests, in granules of 256 narrow rows instead of 8,192 wide ones;
    # with a judge, also the whole rows of the activations it scored (under their current
    # skill), a granule or two of the evaluations for each.
    activations = [
        Activation(
            project_id=P,
            activation_id=activation_id,
            skill_name=skill,
            session_id="s",
            trace_id="t",
            trigger="skill_tool",
            trigger_call_id="c",
            started_at="2026-11-29T00:00:00Z",
            ended_at="2026-11-29T00:00:01Z",
        )
        for skill, activation_id in batch
    ]
    for judges, judged in (((), False), (("e0",), True), (("e9",), False)):
        with _Reads(store) as reads:
            found = ContextAssembler(store, judges=judges).stored_scores(P, activations)
        assert {i: sorted(by) for i, by in found.before.items()} == {
            i: [(f"e{e}", "1") for e in range(5)] for i in ids
        }
        assert sorted(found.verdicts) == (sorted(ids) if judged else [])
        expected = [("evaluation_digests", 6_000)] + ([("evaluations", 190)] if judged else [])
        assert len(reads) == len(expected), reads
        for (sql, params), (table, granules) in zip(reads, expected, strict=True):
            ((name, selected, total),) = _granules_read(store, sql, params)
            assert name == table and total >= granules, (name, selected, total)
            assert selected <= 2 * len(ids), (selected, total)

    # The API and the UI show each activation's evaluations the same way, as its skill's
    # scorecard counts them: the row recorded under the skill it no longer has is not one.
    with _Reads(store) as reads:
        shown = with_evaluations(store, P, activations)
    assert {a.activation_id: sorted(e.evaluator for e in a.evaluations or []) for a in shown} == {
        i: [f"e{e}" for e in range(5)] for i in ids
    }
    scores = [(sql, params) for sql, params in reads if "FROM evaluations" in sql]
    assert len(scores) == 1, reads
    for name, selected, total in _granules_read(store, *scores[0]):
        assert name == "evaluations" and selected <= 2 * len(ids), (name, selected, total)
