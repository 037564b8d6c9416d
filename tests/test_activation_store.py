"""The activations and trajectories tables, on both store transports (the ``store`` fixture)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from skillsight.ingest import otlp
from skillsight.rebuild.trajectories import atif
from skillsight.store import Store
from skillsight.store.records import Activation, Tokens, ToolCall
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA

CAPTURES = Path(__file__).parent / "fixtures" / "captures" / "claude_code"
# The session recorded in the protobuf captures.
CAPTURED_SESSION = "093ac2ae-a7ab-4b25-b958-3919a7e38a98"


@dataclass
class Rebuilt:
    """The shape ``rebuild_session`` returns, built by hand: these tests are about storage."""

    session_id: str
    trajectory: atif.Trajectory
    activations: list[Activation] = field(default_factory=list)


def _trajectory(session_id: str, steps: int = 1) -> atif.Trajectory:
    return atif.Trajectory(
        session_id=session_id,
        agent=atif.Agent(name="claude-code", version="2.1.330"),
        steps=[
            atif.Step(step_id=i + 1, source="user" if i == 0 else "agent", message=f"step {i + 1}")
            for i in range(steps)
        ],
    )


def _activation(session_id: str, name: str, skill: str, started: str) -> Activation:
    return Activation(
        activation_id=f"{session_id}-{name}",
        session_id=session_id,
        trace_id="4bf92f3577b34da6a3ce929d0e0e4736",
        skill_name=skill,
        trigger="skill_tool",
        trigger_call_id=f"toolu_{name}",
        started_at=started,
        ended_at=started,
        tool_calls=[
            ToolCall(
                tool_call_id=f"toolu_{name}_bash",
                name="Bash",
                arguments={"command": "python3 summarize.py data.csv"},
                result="rows: 5",
                step_id=2,
            )
        ],
        integration_message="The total is 133.00.",
        tokens=Tokens(input=120, output=30),
        cost_usd=0.0021,
    )


def _ids(activations: list[Activation]) -> list[str]:
    return [a.activation_id for a in activations]


def test_rebuild_round_trips_and_reads_filter_by_skill_session_and_time(store: Store) -> None:
    first = _activation("s1", "a", "csv-summary", "2026-11-20T10:00:00.250000Z")
    second = _activation("s1", "b", "pdf-fill", "2026-11-20T10:05:00Z")
    other = _activation("s2", "c", "csv-summary", "2026-11-21T09:00:00Z")
    stamp = store.rebuilds.write_one("p1", Rebuilt("s1", _trajectory("s1", 3), [first, second]))
    store.rebuilds.write_one("p1", Rebuilt("s2", _trajectory("s2"), [other]))

    stored = store.activations.get("p1", first.activation_id)
    # the record names the rebuild it comes from, to the microsecond of the stamp
    rebuilt_at = datetime.fromtimestamp(stamp // 1_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    assert stored == first.model_copy(
        update={"project_id": "p1", "rebuilt_at": f"{rebuilt_at}.{stamp % 1_000_000:06d}Z"}
    )
    assert _ids(store.activations.find("p1")) == ["s2-c", "s1-b", "s1-a"]
    assert _ids(store.activations.find("p1", skill="csv-summary")) == ["s2-c", "s1-a"]
    assert _ids(store.activations.find("p1", session_id="s1")) == ["s1-b", "s1-a"]
    assert _ids(store.activations.find("p1", since=datetime(2026, 11, 20, 10, 1))) == [
        "s2-c",
        "s1-b",
    ]
    assert _ids(store.activations.find("p1", limit=1)) == ["s2-c"]
    document = store.trajectories.get("p1", "s1")
    assert document is not None
    assert atif.parse(document) == _trajectory("s1", 3)


def test_a_rebuild_with_fewer_activations_leaves_none_stale(store: Store) -> None:
    a = _activation("s1", "a", "csv-summary", "2026-11-20T10:00:00Z")
    b = _activation("s1", "b", "csv-summary", "2026-11-20T10:01:00Z")
    store.rebuilds.write_one("p1", Rebuilt("s1", _trajectory("s1"), [a, b]))
    store.rebuilds.write_one("p1", Rebuilt("s1", _trajectory("s1", 2), [b]))
    assert _ids(store.activations.find("p1")) == ["s1-b"]
    assert store.activations.get("p1", a.activation_id) is None
    store.rebuilds.write_one("p1", Rebuilt("s1", _trajectory("s1", 2), []))
    assert store.activations.find("p1") == []
    assert store.activations.get("p1", b.activation_id) is None
    # the same rebuild written twice (a retried write) is still one row per activation
    store.rebuilds.write([])
    rebuilt = Rebuilt("s1", _trajectory("s1"), [a])
    store.rebuilds.write_one("p1", rebuilt)
    store.rebuilds.write_one("p1", rebuilt)
    assert _ids(store.activations.find("p1")) == ["s1-a"]


def test_projects_never_see_each_other(store: Store) -> None:
    a = _activation("s1", "a", "csv-summary", "2026-11-20T10:00:00Z")
    store.rebuilds.write_one("alpha", Rebuilt("s1", _trajectory("s1"), [a]))
    assert store.activations.find("beta") == []
    assert store.activations.get("beta", a.activation_id) is None
    assert store.trajectories.get("beta", "s1") is None
    assert store.activations.get("alpha", a.activation_id) is not None


def _ingest_captures(store: Store, project: str) -> None:
    limits = otlp.Limits()
    spans = otlp.decode(
        otlp.TRACES, (CAPTURES / "traces.pb").read_bytes(), "protobuf", project, limits
    )
    events = otlp.decode(
        otlp.LOGS, (CAPTURES / "logs.pb").read_bytes(), "protobuf", project, limits
    )
    store.spans.insert(spans.columns.to_arrow(SPAN_SCHEMA))
    store.events.insert(events.columns.to_arrow(EVENT_SCHEMA))


def test_touched_sessions_and_session_rows(store: Store) -> None:
    _ingest_captures(store, "p1")
    touched = store.sessions.touched(0)
    assert [(project, key) for project, key, _ in touched] == [("p1", CAPTURED_SESSION)]
    last = touched[0][2]
    assert store.sessions.touched(last) == []
    assert store.sessions.keys("p1") == [CAPTURED_SESSION]
    assert store.sessions.keys("p2") == []
    spans, events = store.sessions.rows("p1", CAPTURED_SESSION)
    assert (len(spans), len(events)) == (11, 18)
    # the listing's rows, but for the columns no rebuild reads (left out of a session's rows)
    listed = store.spans.find("p1", session_id=CAPTURED_SESSION)
    unread = {"kind", "service_name", "scope_name", "links"}
    assert spans == [{k: v for k, v in row.items() if k not in unread} for row in listed]
    assert unread <= set(listed[0]) and not unread & set(spans[0])
    found = store.events.find("p1", session_id=CAPTURED_SESSION)
    unread = {"severity_number", "severity_text", "body", "service_name", "scope_name"}
    assert events == [{k: v for k, v in row.items() if k not in unread} for row in found]
    assert store.sessions.rows("p2", CAPTURED_SESSION) == ([], [])
    assert store.sessions.rows_of("p1", [CAPTURED_SESSION, "no-such-session"]) == {
        CAPTURED_SESSION: (spans, events),
        "no-such-session": ([], []),
    }
    assert store.rebuilds.through("p1", [CAPTURED_SESSION]) == {}
    store.rebuilds.write_one(
        "p1", Rebuilt(CAPTURED_SESSION, _trajectory(CAPTURED_SESSION)), ingested_through_us=last
    )
    assert store.rebuilds.through("p1", [CAPTURED_SESSION]) == {CAPTURED_SESSION: last}


def test_a_span_without_session_id_belongs_to_the_session_of_its_trace(store: Store) -> None:
    """Claude Code puts session.id on every span; other sources only on the agent span."""
    _ingest_captures(store, "p1")
    store.execute(
        "INSERT INTO spans SELECT * REPLACE ('p3' AS project_id, "
        "if(name = 'claude_code.interaction', session_id, '') AS session_id) "
        "FROM (SELECT * FROM spans WHERE project_id = 'p1')"
    )
    touched = [(project, key) for project, key, _ in store.sessions.touched(0)]
    assert sorted(touched) == [("p1", CAPTURED_SESSION), ("p3", CAPTURED_SESSION)]
    assert store.sessions.keys("p3") == [CAPTURED_SESSION]
    spans, events = store.sessions.rows("p3", CAPTURED_SESSION)
    assert (len(spans), len(events)) == (11, 0)
