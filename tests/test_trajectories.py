"""ATIF-v1.7 trajectories rebuilt from real captures, and the ATIF rules themselves."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from skillsight.rebuild.session import rebuild_session
from skillsight.rebuild.trajectories import TrajectoryError, atif, build_trajectory
from skillsight.store import EmbeddedStore
from tests.test_activations import CAPTURES, SCENARIOS, load, manifest, stored_rows


def capture_folders() -> list[str]:
    folders = [CAPTURES / name for name in ("claude_code", "openinference", "traceai")]
    folders += [s for scenario in sorted(SCENARIOS.iterdir()) for s in sorted(scenario.iterdir())]
    return [str(f.relative_to(CAPTURES)) for f in folders if f.is_dir()]


def sessions(store: EmbeddedStore) -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Rows per session; a span without a session id (an instrumentor's tool span) belongs to
    the session of its trace."""
    spans, events = stored_rows(store)
    of_trace = {s["trace_id"]: s["session_id"] for s in spans if s["session_id"]}
    out: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for span in spans:
        session = span["session_id"] or of_trace.get(span["trace_id"], "")
        out.setdefault(session, ([], []))[0].append(span)
    for event in events:
        out.setdefault(event["session_id"], ([], []))[1].append(event)
    return out


@pytest.mark.parametrize("folder", capture_folders())
def test_every_capture_gives_valid_atif_that_round_trips(
    embedded_store: EmbeddedStore, folder: str
) -> None:
    load(embedded_store, CAPTURES / folder)
    for session_id, (spans, events) in sessions(embedded_store).items():
        trajectory = build_trajectory(spans, events)
        assert trajectory.session_id == session_id
        text = atif.dumps(trajectory)
        parsed = atif.parse(text)
        assert parsed == trajectory
        assert atif.dumps(parsed) == text
        assert json.loads(text)["schema_version"] == "ATIF-v1.7"
        steps = trajectory.steps
        assert steps[0].source == "user" and steps[-1].source == "agent"
        assert trajectory.final_metrics is not None
        assert trajectory.final_metrics.total_steps == len(steps)


def outline(trajectory: atif.Trajectory) -> list[tuple[str, str, list[tuple[str, str]]]]:
    return [
        (
            step.source,
            step.message,
            [(c.function_name, c.tool_call_id) for c in step.tool_calls or ()],
        )
        for step in trajectory.steps
    ]


def test_claude_code_native_trajectory(embedded_store: EmbeddedStore) -> None:
    load(embedded_store, CAPTURES / "claude_code")
    run = json.loads((CAPTURES / "manifest.json").read_text())["claude_code"]["http/json"]
    spans, events = sessions(embedded_store)[run["session_id"]]
    trajectory = build_trajectory(spans, events)
    texts = {
        e["attributes"]["request_id"]: e["attributes"]["response"]
        for e in events
        if e["event_name"] == "claude_code.assistant_response"
    }
    api = [e for e in events if e["event_name"] == "claude_code.api_request"]
    loop = [e for e in api if e["attributes"]["query_source"] == "sdk"]
    prompt = next(e for e in events if e["event_name"] == "claude_code.user_prompt")
    skill, bash = run["tool_calls"]
    assert outline(trajectory) == [
        ("user", prompt["attributes"]["prompt"], []),
        ("agent", texts[loop[0]["attributes"]["request_id"]], [("Skill", skill["tool_use_id"])]),
        ("agent", "", [("Bash", bash["tool_use_id"])]),  # a tool-use-only response
        ("agent", texts[loop[2]["attributes"]["request_id"]], []),
    ]
    step2, step3 = trajectory.steps[1], trajectory.steps[2]
    assert [c.arguments for c in step2.tool_calls or ()] == [skill["input"]]
    assert [c.arguments for c in step3.tool_calls or ()] == [bash["input"]]
    assert step3.observation is not None
    assert (step3.observation.results[0].content or "").startswith("rows: 5")
    assert [s.metrics.cost_usd for s in trajectory.steps[1:] if s.metrics] == [
        e["cost_usd"] for e in loop
    ]
    # the session-title request is not a step, but its tokens and cost count
    assert trajectory.final_metrics is not None
    assert trajectory.final_metrics.model_dump(exclude={"total_cost_usd"}) == {
        "total_prompt_tokens": sum(
            e["input_tokens"] + e["cache_read_tokens"] + e["cache_creation_tokens"] for e in api
        ),
        "total_completion_tokens": sum(e["output_tokens"] for e in api),
        "total_cached_tokens": sum(e["cache_read_tokens"] for e in api),
        "total_steps": 4,
        "extra": {
            "side_requests": 1,
            "total_cache_creation_tokens": sum(e["cache_creation_tokens"] for e in api),
        },
    }
    assert trajectory.final_metrics.total_cost_usd == pytest.approx(sum(e["cost_usd"] for e in api))
    assert trajectory.agent == atif.Agent(
        name="claude-code", version="2.1.330", model_name=loop[0]["model"]
    )
    assert step2.tool_calls is not None and step2.tool_calls[0].extra is not None
    assert step2.tool_calls[0].extra["skill_activated"]["skill_name"] == "csv-summary"


def test_subagent_is_embedded_and_referenced(embedded_store: EmbeddedStore) -> None:
    load(embedded_store, SCENARIOS / "subagent_skill" / "claude_code")
    trajectory = rebuild_session(*stored_rows(embedded_store)).trajectory
    delegate, skill, bash = manifest("subagent_skill")["expected"]["tool_calls"]
    step = next(s for s in trajectory.steps if s.tool_calls)
    assert step.observation is not None
    [result] = step.observation.results
    assert result.source_call_id == delegate["tool_use_id"]
    [ref] = result.subagent_trajectory_ref or []
    [sub] = trajectory.subagent_trajectories or []
    assert ref.trajectory_id == sub.trajectory_id
    assert sub.agent.name == delegate["input"]["subagent_type"]
    assert outline(sub) == [
        ("user", delegate["input"]["prompt"], []),
        ("agent", "", [("Skill", skill["tool_use_id"])]),
        ("agent", "", [("Bash", bash["tool_use_id"])]),
        ("agent", sub.steps[-1].message, []),
    ]
    assert sub.steps[-1].message.startswith("csv-summary output for data/sales.csv:")
    # the parent's totals include the subagent's
    assert sub.final_metrics is not None and trajectory.final_metrics is not None
    sub_cost = sub.final_metrics.total_cost_usd or 0.0
    own = sum(s.metrics.cost_usd or 0.0 for s in trajectory.steps if s.metrics)
    assert (trajectory.final_metrics.total_cost_usd or 0.0) > own + sub_cost - 1e-9
    assert not any(s.tool_calls for s in trajectory.steps if s is not step)


def test_one_session_seen_by_two_sources_is_merged(tmp_path: Path) -> None:
    """Claude Code's native export and the SDK instrumentor share the toolu ids of one
    session: the tool calls appear once, the costs once, and each source adds what it has."""
    rows: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for source in ("claude_code", "openinference"):
        store = EmbeddedStore(tmp_path / source)
        store.migrate()
        load(store, SCENARIOS / "one_skill" / source)
        rows[source] = stored_rows(store)
        store.close()
    native = rebuild_session(*rows["claude_code"])
    session = native.session_id
    instrumented = [dict(span, session_id=session) for span in rows["openinference"][0]]
    both = rebuild_session(rows["claude_code"][0] + instrumented, rows["claude_code"][1])
    assert outline(both.trajectory) == outline(native.trajectory)
    assert both.trajectory.final_metrics == native.trajectory.final_metrics
    skill_call = (both.trajectory.steps[1].tool_calls or [])[0]
    assert skill_call.extra is not None
    assert skill_call.extra["sources"] == ["claude_code", "openinference"]
    [activation] = both.activations
    [alone] = native.activations
    assert activation.tokens == alone.tokens and activation.cost_usd == alone.cost_usd
    assert alone.skill_output is None  # Claude Code does not log the skill's body …
    assert (activation.skill_output or "").startswith("Base directory for this skill:")  # … OI does
    assert activation.contract is not None and activation.contract.allowed_tools


def test_traces_without_log_events_say_what_is_missing(embedded_store: EmbeddedStore) -> None:
    """Only the traces arrived: no texts, no tool inputs beyond what spans carry; the
    trajectory says so instead of inventing text, and the activation is still found."""
    folder = SCENARIOS / "one_skill" / "claude_code"
    from tests.test_activations import insert

    insert(embedded_store, folder / "traces.json")
    rebuilt = rebuild_session(*stored_rows(embedded_store))
    trajectory = rebuilt.trajectory
    assert trajectory.notes is not None
    assert "log events were not received" in trajectory.notes
    agent_steps = [s for s in trajectory.steps if s.source == "agent"]
    assert all(s.message == "" and (s.extra or {})["message_logged"] is False for s in agent_steps)
    expected = manifest("one_skill")["expected"]["activations"][0]
    [activation] = rebuilt.activations
    assert activation.trigger_call_id == expected["start"]["tool_use_id"]
    assert [c.tool_call_id for c in activation.tool_calls] == [
        c["tool_use_id"] for c in expected["tool_calls"]
    ]
    # a Bash span carries its command, not the description the model gave
    assert activation.tool_calls[0].arguments == {
        "command": expected["tool_calls"][0]["input"]["command"]
    }
    assert activation.integration_message is None


def test_traceai_trajectory_matches_the_native_outline(tmp_path: Path) -> None:
    outlines = []
    for source in ("claude_code", "traceai"):
        store = EmbeddedStore(tmp_path / source)
        store.migrate()
        load(store, CAPTURES / source)
        by_session = sessions(store)
        first = min(
            by_session, key=lambda k: min(s["start_time_unix_nano"] for s in by_session[k][0])
        )
        outlines.append(outline(build_trajectory(*by_session[first])))
        store.close()
    assert outlines[0] == outlines[1]


# --- the ATIF rules ------------------------------------------------------------------------------


def valid_document() -> dict[str, Any]:
    return {
        "schema_version": "ATIF-v1.7",
        "session_id": "s1",
        "trajectory_id": "s1",
        "agent": {"name": "agent", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "hi"},
            {
                "step_id": 2,
                "source": "agent",
                "message": "",
                "model_name": "m",
                "tool_calls": [
                    {"tool_call_id": "c1", "function_name": "Task", "arguments": {"x": 1}}
                ],
                "observation": {
                    "results": [
                        {
                            "source_call_id": "c1",
                            "content": "done",
                            "subagent_trajectory_ref": [{"trajectory_id": "sub"}],
                        }
                    ]
                },
                "metrics": {"prompt_tokens": 3, "completion_tokens": 2, "cost_usd": 0.1},
                "llm_call_count": 1,
            },
            {"step_id": 3, "source": "agent", "message": "bye"},
        ],
        "final_metrics": {"total_steps": 3},
        "subagent_trajectories": [
            {
                "schema_version": "ATIF-v1.7",
                "trajectory_id": "sub",
                "agent": {"name": "helper", "version": "1"},
                "steps": [{"step_id": 1, "source": "agent", "message": "ok"}],
            }
        ],
    }


def broken(path: str, value: Any) -> dict[str, Any]:
    """The valid document with ``value`` set at ``path`` (appended when past a list's end)."""
    document = copy.deepcopy(valid_document())
    *parents, last = path.split("/")
    target: Any = document
    for key in parents:
        target = target[int(key)] if key.isdigit() else target[key]
    if value is DELETE:
        del target[int(last) if last.isdigit() else last]
    elif isinstance(target, list) and int(last) == len(target):
        target.append(value)
    else:
        target[int(last) if last.isdigit() else last] = value
    return document


DELETE = object()


def test_valid_document_parses_and_round_trips() -> None:
    document = valid_document()
    parsed = atif.parse(document)
    assert atif.dump(parsed) == document
    assert atif.parse(atif.dumps(parsed)) == parsed


@pytest.mark.parametrize(
    ("path", "value", "rule"),
    [
        ("unexpected", 1, "Extra inputs are not permitted"),
        ("schema_version", "ATIF-v1.6", "ATIF-v1.7"),
        ("steps/2/step_id", 4, "step ids run from 1 in order"),
        ("steps/0/step_id", 0, "greater than or equal to 1"),
        ("steps/1/observation/results/0/source_call_id", "c9", "not a tool call of this step"),
        (
            "steps/1/tool_calls/1",
            {"tool_call_id": "c1", "function_name": "Bash", "arguments": {}},
            "duplicate tool_call_id",
        ),
        ("steps/0/model_name", "m", "only allowed on agent steps"),
        ("steps/0/metrics", {"prompt_tokens": 1}, "only allowed on agent steps"),
        ("steps/0/reasoning_content", "thinking", "only allowed on agent steps"),
        ("steps/0/llm_call_count", 1, "only allowed on agent steps"),
        ("steps/1/source", "robot", "Input should be 'system', 'user' or 'agent'"),
        (
            "steps/1/observation/results/0/subagent_trajectory_ref/0/trajectory_id",
            "x",
            "matches no",
        ),
        ("subagent_trajectories/0/trajectory_id", DELETE, "needs a trajectory_id"),
        ("agent/version", DELETE, "Field required"),
        ("steps/1/metrics/cost_usd", -1, "greater than or equal to 0"),
    ],
)
def test_documents_breaking_a_rule_are_refused(path: str, value: Any, rule: str) -> None:
    document = broken(path, value)
    with pytest.raises(TrajectoryError, match=rule):
        atif.parse(json.dumps(document))


def test_rows_without_ids_are_refused_clearly() -> None:
    from skillsight.rebuild.trajectories._rows import RowError

    with pytest.raises(RowError, match="span row without trace_id"):
        rebuild_session([{"span_id": "00000000000000a1", "name": "chat"}], [])
    with pytest.raises(RowError, match="event row without record_id"):
        rebuild_session([], [{"event_name": "claude_code.user_prompt"}])


def test_a_rows_texts_are_strings_whatever_its_fields_hold() -> None:
    """A row of strings is taken as it is; one field of another type (a number, None, a
    missing key) sends the whole row through the field-by-field conversion."""
    from skillsight.rebuild.trajectories._rows import Event, Span

    stored = {
        "trace_id": "t1",
        "span_id": "s1",
        "parent_span_id": "",
        "name": "chat",
        "source_convention": "claude_code",
        "operation": "chat",
        "tool_call_id": "toolu_1",
    }
    span = Span(stored)
    assert (span.trace_id, span.name, span.tool_call_id) == ("t1", "chat", "toolu_1")
    for odd in ({"name": 7}, {"parent_span_id": None}, {"operation": 1.5}):
        span = Span({**stored, **odd})
        assert all(type(getattr(span, f)) is str for f in ("trace_id", "parent_span_id", "name"))
        assert (span.name, span.parent_span_id) == (
            str(odd.get("name", "chat")),
            "",
        )
        assert span.operation == str(odd.get("operation", "chat"))
    partial = dict(stored)
    del partial["tool_call_id"]
    assert Span(partial).tool_call_id == ""
    event = Event({"record_id": "r1", "session_id": 42, "event_name": "claude_code.api_request"})
    assert (event.record_id, event.session_id, event.name, event.trace_id) == (
        "r1",
        "42",
        "claude_code.api_request",
        "",
    )


def test_a_session_with_nothing_to_show_is_still_a_valid_document() -> None:
    rebuilt = rebuild_session([], [], session_id="s-empty")
    assert rebuilt.activations == []
    assert atif.dump(rebuilt.trajectory) == {
        "schema_version": "ATIF-v1.7",
        "session_id": "s-empty",
        "trajectory_id": "s-empty",
        "agent": {"name": "agent", "version": "unknown"},
        "steps": [],
        "notes": "No agent, LLM or tool telemetry was received for this session.",
        "final_metrics": {
            "total_prompt_tokens": 0,
            "total_completion_tokens": 0,
            "total_cached_tokens": 0,
            "total_steps": 0,
        },
        "extra": {"source_convention": "", "trace_ids": []},
    }


def test_skill_named_without_tool_details(embedded_store: EmbeddedStore) -> None:
    """Without OTEL_LOG_TOOL_DETAILS Claude Code drops skill names and tool inputs, and says
    `custom_skill` in skill_activated; the API requests made while the skill is active still
    carry its real name, which names the activation."""
    load(embedded_store, SCENARIOS / "one_skill" / "claude_code")
    spans, events = stored_rows(embedded_store)
    for row in spans:
        for key in ("skill_name", "full_command"):
            row["attributes"].pop(key, None)
        if row["tool_name"] in ("Skill", "Bash"):
            row["skill_name"], row["input"] = "", ""
    for row in events:
        for key in ("tool_parameters", "tool_input"):
            row["attributes"].pop(key, None)
        if row["event_name"] == "claude_code.skill_activated":
            row["skill_name"] = row["attributes"]["skill.name"] = "custom_skill"
    rebuilt = rebuild_session(spans, events)
    expected = manifest("one_skill")["expected"]["activations"][0]
    [activation] = rebuilt.activations
    assert (activation.skill_name, activation.trigger, activation.trigger_call_id) == (
        "csv-summary",
        "skill_tool",
        expected["start"]["tool_use_id"],
    )
    assert [(c.tool_call_id, c.arguments) for c in activation.tool_calls] == [
        (call["tool_use_id"], None) for call in expected["tool_calls"]
    ]
    skill_call = (rebuilt.trajectory.steps[1].tool_calls or [])[0]
    assert skill_call.arguments == {}
    assert skill_call.extra is not None and skill_call.extra["arguments_logged"] is False


def test_background_subagent_is_nested_by_its_spans(embedded_store: EmbeddedStore) -> None:
    """An Agent call that returns at once (a background agent) still owns its subagent's work:
    Claude Code parents the subagent's spans to the call's execution span."""
    load(embedded_store, SCENARIOS / "subagent_skill" / "claude_code")
    spans, events = stored_rows(embedded_store)
    delegate = manifest("subagent_skill")["expected"]["tool_calls"][0]["tool_use_id"]
    for row in spans:
        if row["tool_call_id"] == delegate:
            row["end_time_unix_nano"] = row["start_time_unix_nano"] + 1_000_000
    clean = rebuild_session(*stored_rows(embedded_store))
    background = rebuild_session(spans, events)
    [sub] = background.trajectory.subagent_trajectories or []
    [expected] = clean.trajectory.subagent_trajectories or []
    assert outline(sub) == outline(expected)
    assert [comparable for comparable in map(_key, background.activations)] == [
        _key(a) for a in clean.activations
    ]


def _key(activation: Any) -> tuple[Any, ...]:
    return (
        activation.skill_name,
        activation.trigger,
        activation.trigger_call_id,
        activation.load_call_id,
        [c.tool_call_id for c in activation.tool_calls],
        activation.integration_message,
    )


def test_native_export_and_instrumentor_in_one_trace(tmp_path: Path) -> None:
    """Real Claude Code exporting natively while skillsight's instrumentor wraps the SDK: both
    land in one trace with the same toolu ids. Each call appears once, with both sources; the
    activation and its id are those each source gives alone; the totals are Claude Code's own
    accounting, counted once."""
    import asyncio
    import contextlib
    from collections.abc import Iterator

    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from demo.scenarios import run_scenario_async
    from skillsight.ingest import otlp
    from skillsight.instrumentation import ClaudeAgentSDKInstrumentor
    from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA
    from tests.harness.otlp_capture import OtlpCapture
    from tests.test_activations import LIMITS, expected_view, observed_view

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = ClaudeAgentSDKInstrumentor()

    @contextlib.contextmanager
    def instrumentation() -> Iterator[None]:
        instrumentor.instrument(tracer_provider=provider)
        try:
            yield
        finally:
            instrumentor.uninstrument()

    with OtlpCapture() as receiver:
        result = asyncio.run(
            run_scenario_async(
                "subagent_skill",
                workdir=tmp_path,
                endpoint=receiver.http_endpoint,
                protocol="http/protobuf",
                instrumentation=instrumentation,
            )
        )
        bodies = [(c.signal, c.body) for c in receiver.of("traces") + receiver.of("logs")]
    provider.shutdown()
    bodies.append((otlp.TRACES, encode_spans(exporter.get_finished_spans()).SerializeToString()))
    store = EmbeddedStore(tmp_path / "store")
    store.migrate()
    for signal, body in bodies:
        columns = otlp.decode(signal, body, otlp.PROTOBUF, "default", LIMITS).columns
        if signal == otlp.TRACES:
            store.spans.insert(columns.to_arrow(SPAN_SCHEMA))
        else:
            store.events.insert(columns.to_arrow(EVENT_SCHEMA))
    spans, events = stored_rows(store)
    store.close()
    assert len({s["trace_id"] for s in spans}) == 1

    both = rebuild_session(spans, events)
    native = rebuild_session([s for s in spans if s["source_convention"] == "claude_code"], events)
    ours = rebuild_session([s for s in spans if s["source_convention"] != "claude_code"], [])
    expected = result.scenario.expected.to_json()["activations"]
    for rebuilt in (both, native, ours):
        assert [
            observed_view(a, e) for a, e in zip(rebuilt.activations, expected, strict=True)
        ] == [expected_view(e) for e in expected]
    assert [a.activation_id for a in both.activations] == [
        a.activation_id for a in native.activations
    ]
    assert [a.activation_id for a in ours.activations] == [
        a.activation_id for a in native.activations
    ]
    trajectories = [both.trajectory, *(both.trajectory.subagent_trajectories or [])]
    sources = [
        (c.extra or {}).get("sources")
        for t in trajectories
        for s in t.steps
        for c in s.tool_calls or ()
    ]
    assert sources == [["claude_code", "gen_ai"]] * len(result.scenario.expected.tool_calls)
    mine, theirs = both.trajectory.final_metrics, native.trajectory.final_metrics
    assert mine is not None and theirs is not None
    tokens = ("total_prompt_tokens", "total_completion_tokens", "total_cached_tokens")
    assert [getattr(mine, k) for k in tokens] == [getattr(theirs, k) for k in tokens]
    assert mine.total_cost_usd == pytest.approx(theirs.total_cost_usd)
