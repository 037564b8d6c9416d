"""Skill activations rebuilt from real captures and from skillsight's own instrumentor.

The scenario captures (tests/fixtures/captures/scenarios/<name>/) are real Claude Code sessions
(scripted model) observed through Claude Code's native telemetry and through OpenInference's
instrumentor; each manifest states the activations the run must show. Every capture goes through
the real decode → ClickHouse (chdb) → read path before it is rebuilt.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from benchmarks.sessions import synthetic_session
from skillsight import semconv as sc
from skillsight.ingest import otlp
from skillsight.instrumentation import (
    agent_session,
    record_llm_call,
    record_tool_call,
    skill_activation,
)
from skillsight.rebuild.catalogue import Catalogue, store_catalogue
from skillsight.rebuild.session import Rebuilt, rebuild_session
from skillsight.skills import SkillManifest, load_skill
from skillsight.store import EmbeddedStore
from skillsight.store.records import Activation, SkillContract, VisibleSkill
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA

CAPTURES = Path(__file__).parent / "fixtures" / "captures"
SCENARIOS = CAPTURES / "scenarios"
LIMITS = otlp.Limits()
ROWS = 100_000


# --- loading captures through the real store ----------------------------------------------------


def insert(store: EmbeddedStore, path: Path) -> None:
    signal = otlp.TRACES if path.name.startswith("traces") else otlp.LOGS
    encoding = otlp.JSON if path.suffix == ".json" else otlp.PROTOBUF
    decoded = otlp.decode(signal, path.read_bytes(), encoding, "default", LIMITS)
    assert decoded.rejected == 0, decoded.message()
    if signal == otlp.TRACES:
        store.spans.insert(decoded.columns.to_arrow(SPAN_SCHEMA))
    else:
        store.events.insert(decoded.columns.to_arrow(EVENT_SCHEMA))


def load(store: EmbeddedStore, folder: Path) -> None:
    for path in sorted(folder.iterdir()):
        if path.name.startswith(("traces", "logs")):
            insert(store, path)


def stored_rows(store: EmbeddedStore) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return store.spans.find("default", limit=ROWS), store.events.find("default", limit=ROWS)


def rebuild(store: EmbeddedStore, **options: Any) -> Rebuilt:
    spans, events = stored_rows(store)
    return rebuild_session(spans, events, **options)


def scenario_cases() -> list[tuple[str, str]]:
    return [
        (scenario.name, source.name)
        for scenario in sorted(p for p in SCENARIOS.iterdir() if p.is_dir())
        for source in sorted(p for p in scenario.iterdir() if p.is_dir())
    ]


def manifest(scenario: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCENARIOS / scenario / "manifest.json").read_text())
    return data


# --- the shape an expectation can state -----------------------------------------------------------


def expected_view(expected: dict[str, Any]) -> dict[str, Any]:
    load_call = expected.get("load_call")
    return {
        "skill": expected["skill"],
        "trigger": expected["trigger"],
        "start": expected["start"]["tool_use_id"],
        "load_call": load_call["tool_use_id"] if load_call else None,
        "agent": expected["agent"],
        "tool_calls": [
            {
                "id": call["tool_use_id"],
                "name": call["name"],
                "arguments": call["input"],
                "is_error": call["is_error"],
                "result": call["result"],
            }
            for call in expected["tool_calls"]
        ],
        "integration_message": expected["integration_message"],
    }


def observed_view(activation: Activation, expected: dict[str, Any] | None = None) -> dict[str, Any]:
    """The activation in the expectation's terms; results only where the scenario fixes them."""
    fixed = {
        call["tool_use_id"]
        for call in (expected or {}).get("tool_calls", [])
        if call["result"] is not None
    }
    return {
        "skill": activation.skill_name,
        "trigger": activation.trigger,
        "start": activation.trigger_call_id,
        "load_call": activation.load_call_id if activation.trigger == "subagent" else None,
        "agent": activation.subagent or "main",
        "tool_calls": [
            {
                "id": call.tool_call_id,
                "name": call.name,
                "arguments": call.arguments,
                "is_error": call.is_error,
                "result": call.result if call.tool_call_id in fixed else None,
            }
            for call in activation.tool_calls
        ],
        "integration_message": activation.integration_message,
    }


@pytest.mark.parametrize(("scenario", "source"), scenario_cases())
def test_scenario_activations(embedded_store: EmbeddedStore, scenario: str, source: str) -> None:
    load(embedded_store, SCENARIOS / scenario / source)
    rebuilt = rebuild(embedded_store)
    expected = manifest(scenario)["expected"]["activations"]
    want = [expected_view(e) for e in expected]
    if source == "claude_code_no_tool_content":  # no tool output is exported at all
        want = [{**w, "tool_calls": [{**c, "result": None} for c in w["tool_calls"]]} for w in want]
    assert [
        observed_view(a, e) for a, e in zip(rebuilt.activations, expected, strict=False)
    ] == want
    assert len(rebuilt.activations) == len(expected)
    run = manifest(scenario)["runs"][source]
    assert rebuilt.session_id == run["session_id"]
    assert {a.trace_id for a in rebuilt.activations} <= set(run["trace_ids"])
    for activation in rebuilt.activations:
        has_error = any(c.is_error for c in activation.tool_calls)
        # every scenario's agent recovers from a failing call, so the outcome stays completed
        assert activation.outcome == "completed", (has_error, activation.outcome)
        assert activation.request == manifest(scenario)["prompt"]
        # the turn it belongs to: the user step its request was read from
        turn = activation.request_step_id
        assert turn is not None, activation
        trajectory = rebuilt.trajectory
        if activation.decision_trajectory_id not in ("", trajectory.trajectory_id):
            trajectory = next(
                t
                for t in trajectory.subagent_trajectories or ()
                if t.trajectory_id == activation.decision_trajectory_id
            )
        user = trajectory.steps[turn - 1]
        assert (user.source, user.step_id) == ("user", turn)
        assert turn <= (activation.trigger_step_id or turn)
        assert activation.started_at <= activation.ended_at


def comparable(activation: Activation) -> dict[str, Any]:
    """What two sources of one session must agree on (they differ in ids, times and usage)."""
    data = activation.model_dump(
        include={
            "skill_name",
            "trigger",
            "trigger_call_id",
            "load_call_id",
            "mechanism",
            "trigger_step_id",
            "subagent",
            "request",
            "integration_message",
            "integration_step_id",
            "step_ids",
            "outcome",
        }
    )
    data["tool_calls"] = [
        (c.tool_call_id, c.name, c.arguments, c.is_error, c.step_id) for c in activation.tool_calls
    ]
    return data


@pytest.mark.parametrize(
    "scenario",
    sorted(
        p.name
        for p in SCENARIOS.iterdir()
        if (p / "claude_code").is_dir() and (p / "openinference").is_dir()
    ),
)
def test_native_and_openinference_agree(tmp_path: Path, scenario: str) -> None:
    found = {}
    for source in ("claude_code", "openinference"):
        store = EmbeddedStore(tmp_path / source)
        store.migrate()
        load(store, SCENARIOS / scenario / source)
        found[source] = [comparable(a) for a in rebuild(store).activations]
        store.close()
    assert found["claude_code"] == found["openinference"]


# --- the demo capture, field by field -------------------------------------------------------------


def test_demo_session_activation_in_full(embedded_store: EmbeddedStore) -> None:
    load(embedded_store, CAPTURES / "claude_code")
    spans, events = stored_rows(embedded_store)
    # the JSON and protobuf pairs are two runs; keep the JSON run
    run = json.loads((CAPTURES / "manifest.json").read_text())["claude_code"]["http/json"]
    spans = [s for s in spans if s["session_id"] == run["session_id"]]
    events = [e for e in events if e["session_id"] == run["session_id"]]
    rebuilt = rebuild_session(spans, events)
    [activation] = rebuilt.activations
    skill_call, bash_call = run["tool_calls"]
    tool_spans = {s["tool_call_id"]: s for s in spans if s["name"] == "claude_code.tool"}
    prompt = next(e for e in events if e["event_name"] == "claude_code.user_prompt")
    answer = [e for e in events if e["event_name"] == "claude_code.assistant_response"][-1]
    during = [
        e
        for e in events
        if e["event_name"] == "claude_code.api_request" and e["skill_name"] == run["skill_name"]
    ]
    bash_span = tool_spans[bash_call["tool_use_id"]]
    data = activation.model_dump()
    started, ended = data.pop("started_at"), data.pop("ended_at")
    tool_call = data["tool_calls"][0]
    assert tool_call.pop("started_at").startswith(started[:10])
    bash_ms = (bash_span["end_time_unix_nano"] - bash_span["start_time_unix_nano"]) / 1e6
    assert tool_call.pop("duration_ms") == pytest.approx(bash_ms, abs=0.001)
    assert data.pop("duration_ms") > bash_ms  # the Skill call, the script, the answer
    assert started < ended
    assert data == {
        "activation_id": data["activation_id"],
        "project_id": "default",
        "session_id": run["session_id"],
        "trace_id": run["trace_ids"][0],
        "skill_name": "csv-summary",
        "skill_version": "",
        "trigger": "skill_tool",
        "trigger_call_id": skill_call["tool_use_id"],
        "trigger_step_id": 2,
        "mechanism": "skill_tool",
        "load_call_id": skill_call["tool_use_id"],
        "trajectory_id": run["session_id"],
        "activation_span_id": "",
        "decision_trajectory_id": run["session_id"],
        "agent": "claude-code",
        "subagent": "",
        "parent_activation_id": "",
        "source_convention": "claude_code",
        "request": prompt["attributes"]["prompt"],
        "request_logged": True,
        "request_step_id": 1,  # the prompt opens the session's one turn
        "tool_calls": [
            {
                "tool_call_id": bash_call["tool_use_id"],
                "name": "Bash",
                "arguments": bash_call["input"],
                "result": bash_span["output"],
                "is_error": False,
                "step_id": 3,
                "span_id": bash_span["span_id"],
            }
        ],
        "skill_output": None,  # Claude Code does not log what the Skill tool returned
        "integration_message": answer["attributes"]["response"],
        "integration_step_id": 4,
        "step_ids": [3],
        "tokens": {
            "input": sum(e["input_tokens"] for e in during),
            "output": sum(e["output_tokens"] for e in during),
            "cache_read": sum(e["cache_read_tokens"] for e in during),
            "cache_creation": sum(e["cache_creation_tokens"] for e in during),
        },
        "cost_usd": pytest.approx(sum(e["cost_usd"] for e in during)),
        "outcome": "completed",
        "visible_skills": [],
        "contract": None,
        "workspace": "",  # this capture was recorded without process.working_directory
        "rebuilt_at": "",  # set when the store writes the record
        "rerun_id": "",  # production traffic: no skillsight.rerun.id resource attribute
        "settled": True,
    }
    assert len(during) == 2  # the two LLM calls Claude Code made while the skill was active


def test_catalogue_supplies_the_contract(embedded_store: EmbeddedStore) -> None:
    load(embedded_store, SCENARIOS / "one_skill" / "claude_code")
    contract = SkillContract(
        name="csv-summary",
        description="Summarise a CSV file",
        allowed_tools=["Bash(python3:*)", "Read"],
        version="ab" * 32,
        source_uri="file:///skills/csv-summary",
    )
    [activation] = rebuild(embedded_store, catalogue={"csv-summary": contract}).activations
    assert activation.contract == contract
    assert activation.skill_version == "ab" * 32


def test_openinference_reports_the_declared_allowed_tools(embedded_store: EmbeddedStore) -> None:
    load(embedded_store, SCENARIOS / "one_skill" / "openinference")
    [activation] = rebuild(embedded_store).activations
    assert activation.contract == SkillContract(
        name="csv-summary",
        allowed_tools=["Bash(python3:*)", "Read"],
        catalogued=False,
        reported=["allowed_tools"],
    )
    assert activation.skill_output is not None
    assert activation.skill_output.startswith("Base directory for this skill:")


# --- late, shuffled and repeated delivery --------------------------------------------------------


def decoded(path: Path) -> pa.Table:
    signal = otlp.TRACES if path.name.startswith("traces") else otlp.LOGS
    encoding = otlp.JSON if path.suffix == ".json" else otlp.PROTOBUF
    result = otlp.decode(signal, path.read_bytes(), encoding, "default", LIMITS)
    table: pa.Table = result.columns.to_arrow(
        SPAN_SCHEMA if signal == otlp.TRACES else EVENT_SCHEMA
    )
    return table


def test_shuffled_repeated_and_late_delivery_rebuilds_the_same(tmp_path: Path) -> None:
    """A trace delivered shuffled, twice, with one span an hour late: the same result."""
    folder = SCENARIOS / "two_skills" / "claude_code"
    clean = EmbeddedStore(tmp_path / "clean")
    clean.migrate()
    load(clean, folder)
    expected = rebuild(clean)
    clean.close()

    spans, events = decoded(folder / "traces.json"), decoded(folder / "logs.json")
    starts = spans.column("start_ns").to_pylist()
    late = starts.index(max(starts))  # the LLM call that wrote the final answer
    shuffle = random.Random(7)
    messy = EmbeddedStore(tmp_path / "messy")
    messy.migrate()
    for _ in range(2):
        order = [i for i in range(spans.num_rows) if i != late]
        shuffle.shuffle(order)
        for batch in (order[: len(order) // 2], order[len(order) // 2 :]):
            messy.spans.insert(spans.take(batch))
        events_order = list(range(events.num_rows))
        shuffle.shuffle(events_order)
        messy.events.insert(events.take(events_order))
    before = rebuild(messy)
    messy.spans.insert(spans.take([late, late]))  # an hour later, and twice
    after = rebuild(messy)
    messy.close()

    assert before.trajectory != expected.trajectory  # the late span mattered
    assert after.trajectory == expected.trajectory
    assert after.activations == expected.activations


def test_rebuild_ignores_row_order_and_copies() -> None:
    spans, events = synthetic_session(60, skill_every=7)
    clean = rebuild_session(spans, events)
    messy_spans = spans + spans[::3]
    messy_events = events + events[::5]
    random.Random(3).shuffle(messy_spans)
    random.Random(4).shuffle(messy_events)
    assert rebuild_session(messy_spans, messy_events) == clean
    assert len(clean.activations) == len(range(0, 60, 7))


# --- skillsight's own instrumentor: explicit activation spans ------------------------------------


class CountingIds(IdGenerator):
    """Incremental ids, so span trees are the same on every run."""

    def __init__(self) -> None:
        self.span = 0
        self.trace = 0

    def generate_span_id(self) -> int:
        self.span += 1
        return self.span

    def generate_trace_id(self) -> int:
        self.trace += 1
        return self.trace


@pytest.fixture
def recorder() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(id_generator=CountingIds())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def exported(store: EmbeddedStore, exporter: InMemorySpanExporter) -> Rebuilt:
    body = encode_spans(exporter.get_finished_spans()).SerializeToString()
    decoded = otlp.decode(otlp.TRACES, body, otlp.PROTOBUF, "default", LIMITS)
    assert decoded.rejected == 0
    store.spans.insert(decoded.columns.to_arrow(SPAN_SCHEMA))
    return rebuild(store)


def said(text: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": [{"type": "text", "text": text}]}]


def test_explicit_activation_span_bounds_exactly(
    embedded_store: EmbeddedStore, recorder: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tp, exporter = recorder
    request = "Summarise data/sales.csv"
    with agent_session(
        "support",
        conversation_id="conv-1",
        skills_available=[("csv-summary", "Summarise a CSV"), ("pdf", "Make PDFs")],
        input=request,
        tracer_provider=tp,
    ) as session:
        record_llm_call("m1", 100, 10, output=said("Using csv-summary."), tracer_provider=tp)
        with skill_activation(
            "csv-summary",
            trigger="skill_tool",
            description="Summarise a CSV",
            allowed_tools=["Bash(python3:*)"],
            skill_dir="/nonexistent/csv-summary",
            tracer_provider=tp,
        ):
            record_tool_call(
                "Skill", "call-1", {"skill": "csv-summary"}, "loaded", tracer_provider=tp
            )
            record_llm_call("m1", 200, 20, output=said(""), tracer_provider=tp)
            record_tool_call(
                "Bash", "call-2", {"command": "python3 s.py"}, "rows: 5", tracer_provider=tp
            )
        # after the span closed: the agent's own work, not the skill's
        record_tool_call("Read", "call-3", {"file_path": "notes.txt"}, "n", tracer_provider=tp)
        record_llm_call("m1", 300, 30, output=said("Total is 133."), tracer_provider=tp)
        session.set_result("Total is 133.", cost_usd=0.05)
    rebuilt = exported(embedded_store, exporter)
    # tokens per LLM call, the cost only as the run's total: both reach final_metrics
    final = rebuilt.trajectory.final_metrics
    assert final is not None
    assert (final.total_prompt_tokens, final.total_completion_tokens) == (600, 60)
    assert final.total_cost_usd == 0.05
    [activation] = rebuilt.activations
    # the Skill call inside the span loaded the skill: it is the trigger, the span the bounds
    assert observed_view(activation) == {
        "skill": "csv-summary",
        "trigger": "skill_tool",
        "start": "call-1",
        "load_call": None,
        "agent": "main",
        "tool_calls": [
            {
                "id": "call-2",
                "name": "Bash",
                "arguments": {"command": "python3 s.py"},
                "is_error": False,
                "result": None,
            }
        ],
        "integration_message": "Total is 133.",
    }
    assert activation.tool_calls[0].result == "rows: 5"
    assert activation.skill_output == "loaded"
    assert activation.load_call_id == "call-1"
    activation_span = next(
        s for s in stored_rows(embedded_store)[0] if s["operation"] == "activate_skill"
    )
    assert activation.activation_span_id == activation_span["span_id"]
    assert [s.name for s in activation.visible_skills] == ["csv-summary", "pdf"]
    assert activation.contract is not None
    assert activation.contract.allowed_tools == ["Bash(python3:*)"]
    assert activation.contract.description == "Summarise a CSV"
    assert activation.request == request
    assert activation.session_id == "conv-1"
    # the LLM call inside the span, and the one that answered after it
    assert activation.tokens.output == 20 + 30


def test_nested_and_back_to_back_activation_spans(
    embedded_store: EmbeddedStore, recorder: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tp, exporter = recorder
    with agent_session("support", conversation_id="conv-2", input="report", tracer_provider=tp):
        record_llm_call("m", 1, 1, output=said("Building the report."), tracer_provider=tp)
        with skill_activation("report", composes=True, tracer_provider=tp):
            record_tool_call("Bash", "a", {"command": "prep"}, "ok", tracer_provider=tp)
            with skill_activation("csv-summary", tracer_provider=tp):
                record_tool_call("Bash", "b", {"command": "sum"}, "133", tracer_provider=tp)
            record_tool_call("Bash", "c", {"command": "render"}, "ok", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=said("Report built; now the chart."), tracer_provider=tp)
        with skill_activation("chart", tracer_provider=tp):
            record_tool_call("Bash", "d", {"command": "plot"}, "ok", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=said("Done."), tracer_provider=tp)
    activations = exported(embedded_store, exporter).activations
    by_skill = {a.skill_name: a for a in activations}
    assert [a.skill_name for a in activations] == ["report", "csv-summary", "chart"]
    assert [c.tool_call_id for c in by_skill["report"].tool_calls] == ["a", "b", "c"]
    assert [c.tool_call_id for c in by_skill["csv-summary"].tool_calls] == ["b"]
    assert [c.tool_call_id for c in by_skill["chart"].tool_calls] == ["d"]
    assert by_skill["csv-summary"].parent_activation_id == by_skill["report"].activation_id
    assert by_skill["report"].parent_activation_id == ""
    assert by_skill["chart"].parent_activation_id == ""
    assert by_skill["report"].integration_message == "Report built; now the chart."
    assert by_skill["chart"].integration_message == "Done."
    # no loading call inside: the span itself is the start
    assert {a.trigger for a in activations} == {"span"}
    assert all(a.trigger_call_id == a.activation_span_id for a in activations)
    assert len({a.activation_id for a in activations}) == 3


# --- flat GenAI tool spans: inferred starts ----------------------------------------------------


def test_inferred_starts_from_flat_tool_spans(
    embedded_store: EmbeddedStore, recorder: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    """No activation spans: load_skill, a Read of SKILL.md and a Skill call start activations,
    each ending where the next starts; a failing last call makes the outcome an error."""
    tp, exporter = recorder
    with agent_session("agent", conversation_id="conv-3", input="do it", tracer_provider=tp):
        record_llm_call("m", 1, 1, output=said("Loading pdf."), tracer_provider=tp)
        record_tool_call("load_skill", "l1", {"name": "pdf"}, "# pdf skill", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=said(""), tracer_provider=tp)
        record_tool_call("Bash", "p1", {"command": "make-pdf"}, "pdf ok", tracer_provider=tp)
        record_llm_call(
            "m", 1, 1, output=said("PDF made; reading the csv skill."), tracer_provider=tp
        )
        record_tool_call(
            "Read",
            "r1",
            {"file_path": "/repo/.claude/skills/csv-summary/SKILL.md"},
            "# csv",
            tracer_provider=tp,
        )
        record_llm_call("m", 1, 1, output=said(""), tracer_provider=tp)
        record_tool_call("Bash", "c1", {"command": "sum"}, "133", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=said("Now the chart."), tracer_provider=tp)
        record_tool_call("Skill", "s1", {"skill": "chart"}, "loaded", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=said(""), tracer_provider=tp)
        record_tool_call("Bash", "x1", {"command": "plot"}, error="exit 1", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=said("The chart failed."), tracer_provider=tp)
    activations = exported(embedded_store, exporter).activations
    assert [
        (a.skill_name, a.trigger, a.trigger_call_id, [c.tool_call_id for c in a.tool_calls])
        for a in activations
    ] == [
        ("pdf", "load_skill_tool", "l1", ["p1"]),
        ("csv-summary", "read_skill_md", "r1", ["c1"]),
        ("chart", "skill_tool", "s1", ["x1"]),
    ]
    assert [a.integration_message for a in activations] == [
        "PDF made; reading the csv skill.",
        "Now the chart.",
        "The chart failed.",
    ]
    assert [a.outcome for a in activations] == ["completed", "completed", "error"]
    assert activations[2].tool_calls[0].is_error
    assert [a.skill_output for a in activations] == ["# pdf skill", "# csv", "loaded"]


# --- Claude Code: an activation known only from its event ---------------------------------------


def test_skill_activated_event_without_a_skill_call(embedded_store: EmbeddedStore) -> None:
    """A skill run without the Skill tool (e.g. a slash command) is known from its event."""
    folder = SCENARIOS / "one_skill" / "claude_code"
    load(embedded_store, folder)
    spans, events = stored_rows(embedded_store)
    skill_id = manifest("one_skill")["runs"]["claude_code"]["tool_calls"][0]["tool_use_id"]
    spans = [s for s in spans if s["tool_call_id"] != skill_id]
    events = [e for e in events if e["tool_call_id"] != skill_id]
    [activation] = rebuild_session(spans, events).activations
    event = next(e for e in events if e["event_name"] == "claude_code.skill_activated")
    expected = manifest("one_skill")["expected"]["activations"][0]
    assert activation.trigger == "event"
    assert activation.trigger_call_id == f"event:{event['record_id']}"
    assert (
        observed_view(activation, expected)["tool_calls"] == expected_view(expected)["tool_calls"]
    )
    assert activation.integration_message == expected["integration_message"]


def test_prompt_logging_off_leaves_texts_unknown(embedded_store: EmbeddedStore) -> None:
    """Without OTEL_LOG_USER_PROMPTS Claude Code sends <REDACTED>; nothing is invented."""
    load(embedded_store, SCENARIOS / "one_skill" / "claude_code")
    spans, events = stored_rows(embedded_store)
    for row in spans + events:
        for key in ("prompt", "prompt_text", "user_prompt", "response"):
            if key in row["attributes"]:
                row["attributes"][key] = "<REDACTED>"
        if row.get("input") and row.get("name") == "claude_code.interaction":
            row["input"] = "<REDACTED>"
    rebuilt = rebuild_session(spans, events)
    [activation] = rebuilt.activations
    assert (activation.request, activation.request_logged) == ("", False)
    assert activation.integration_message is None
    assert activation.integration_step_id is not None
    assert (
        rebuilt.trajectory.notes is not None
        and "did not log message text" in rebuilt.trajectory.notes
    )


def test_a_model_request_whose_events_are_late_said_something_unknown(
    embedded_store: EmbeddedStore,
) -> None:
    """Rebuilt before the last request's log events arrived (the finalizer holds a session
    back for them, up to its max wait), the answer's text is unknown rather than empty, so no
    evaluator reads an empty answer as one that ignored the skill."""
    load(embedded_store, SCENARIOS / "one_skill" / "claude_code")
    spans, events = stored_rows(embedded_store)
    last = max(
        (s for s in spans if s["name"] == "claude_code.llm_request"),
        key=lambda s: s["start_time_unix_nano"],
    )
    request = last["attributes"]["request_id"]
    arrived = [e for e in events if e["attributes"].get("request_id") != request]
    assert len(arrived) < len(events)
    [activation] = rebuild_session(spans, arrived).activations
    assert activation.integration_message is None
    assert activation.integration_step_id is not None
    # a request whose events are in and that said nothing (a tool-only turn) stays ""
    [complete] = rebuild_session(spans, events).activations
    assert complete.integration_message


# --- skillsight's Claude Agent SDK instrumentor on the real CLI --------------------------------


def test_skillsight_instrumentor_gives_the_expected_activations(tmp_path: Path) -> None:
    """Real Claude Code (scripted model) under skillsight's own instrumentor: its explicit
    activation spans give the activations the scenarios state, with the same ids and triggers
    as the native and OpenInference captures."""
    import asyncio
    import contextlib

    from demo.scenarios import run_scenarios_async
    from skillsight.instrumentation import ClaudeAgentSDKInstrumentor

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

    names = ["two_skills", "subagent_skill"]
    results = asyncio.run(
        run_scenarios_async(names, tmp_path, concurrency=2, instrumentation=instrumentation)
    )
    provider.shutdown()
    store = EmbeddedStore(tmp_path / "store")
    store.migrate()
    body = encode_spans(exporter.get_finished_spans()).SerializeToString()
    store.spans.insert(
        otlp.decode(otlp.TRACES, body, otlp.PROTOBUF, "default", LIMITS).columns.to_arrow(
            SPAN_SCHEMA
        )
    )
    spans = store.spans.find("default", limit=ROWS)
    store.close()
    of_trace = {s["trace_id"]: s["session_id"] for s in spans if s["session_id"]}
    for name in names:
        result = results[name]
        mine = [s for s in spans if of_trace.get(s["trace_id"]) == result.session_id]
        rebuilt = rebuild_session(mine, [])
        expected = result.scenario.expected.to_json()["activations"]
        assert [
            observed_view(a, e) for a, e in zip(rebuilt.activations, expected, strict=True)
        ] == [expected_view(e) for e in expected], name
        assert all(a.activation_span_id for a in rebuilt.activations)
        assert all(a.source_convention == "gen_ai" for a in rebuilt.activations)
        visible = result.scenario.expected.visible_skills
        assert all(
            sorted(s.name for s in a.visible_skills) == sorted(visible) for a in rebuilt.activations
        ), name


def test_activation_span_names_its_starting_call(
    embedded_store: EmbeddedStore, recorder: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    """The loading call may end before the span opens (a sibling), or not be recorded at all:
    ``skillsight.activation.call_id`` still ties the activation to it, and never twice."""
    tp, exporter = recorder
    with agent_session("agent", conversation_id="conv-4", input="go", tracer_provider=tp):
        record_llm_call("m", 1, 1, output=said("Loading."), tracer_provider=tp)
        record_tool_call("load_skill", "l1", {"name": "pdf"}, "# pdf", tracer_provider=tp)
        with skill_activation("pdf", trigger="load_skill_tool", call_id="l1", tracer_provider=tp):
            record_tool_call("Bash", "p1", {"command": "make-pdf"}, "ok", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=said("Next one."), tracer_provider=tp)
        with skill_activation("chart", trigger="skill_tool", call_id="s9", tracer_provider=tp):
            record_tool_call("Bash", "c1", {"command": "plot"}, "ok", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=said("Both done."), tracer_provider=tp)
    activations = exported(embedded_store, exporter).activations
    assert [
        (
            a.skill_name,
            a.trigger,
            a.trigger_call_id,
            [c.tool_call_id for c in a.tool_calls],
            a.integration_message,
            a.skill_output,
        )
        for a in activations
    ] == [
        ("pdf", "load_skill_tool", "l1", ["p1"], "Next one.", "# pdf"),
        ("chart", "skill_tool", "s9", ["c1"], "Both done.", None),
    ]
    assert all(a.activation_span_id for a in activations)


def test_the_documented_example_runs() -> None:
    text = (Path(__file__).parent.parent / "docs" / "activations.md").read_text()
    [example] = [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]
    exec(compile(example, "docs/activations.md", "exec"), {})


def test_outcomes_and_turn_boundaries(
    embedded_store: EmbeddedStore, recorder: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    """A failed loading call is an error; a turn that stops without an answer (the user speaks
    next) leaves the activation interrupted, with no integration message."""
    tp, exporter = recorder
    for prompt, script in (
        ("first", [("say", "Using a."), ("call", "Skill", "s1", {"skill": "a"}, "unknown skill")]),
        ("second", [("say", "Using b."), ("call", "Skill", "s2", {"skill": "b"}, None)]),
        ("third", [("say", "Hello.")]),
    ):
        with agent_session("agent", conversation_id="conv-5", input=prompt, tracer_provider=tp):
            for entry in script:
                if entry[0] == "say":
                    record_llm_call("m", 1, 1, output=said(str(entry[1])), tracer_provider=tp)
                    continue
                _, name, call_id, arguments, error = entry
                record_tool_call(
                    str(name), str(call_id), arguments, "ok", error=error, tracer_provider=tp
                )
            if prompt == "first":
                record_llm_call("m", 1, 1, output=said("No such skill."), tracer_provider=tp)
            if prompt == "second":
                record_llm_call("m", 1, 1, output=said(""), tracer_provider=tp)
                record_tool_call("Bash", "b1", {"command": "x"}, "ok", tracer_provider=tp)
    rebuilt = exported(embedded_store, exporter)
    assert [s.message for s in rebuilt.trajectory.steps if s.source == "user"] == [
        "first",
        "second",
        "third",
    ]
    assert [
        (
            a.skill_name,
            a.outcome,
            a.request,
            [c.tool_call_id for c in a.tool_calls],
            a.integration_message,
        )
        for a in rebuilt.activations
    ] == [
        ("a", "error", "first", [], "No such skill."),
        ("b", "interrupted", "second", ["b1"], None),
    ]


def test_claude_code_events_without_traces(embedded_store: EmbeddedStore) -> None:
    """Only the log events arrived (no enhanced-telemetry beta): the same activation, with the
    texts and inputs of the events but no tool output (only spans carry it)."""
    insert(embedded_store, SCENARIOS / "one_skill" / "claude_code" / "logs.json")
    [activation] = rebuild(embedded_store).activations
    expected = manifest("one_skill")["expected"]["activations"][0]
    view = observed_view(activation)
    assert view == {
        **expected_view(expected),
        "tool_calls": [{**call, "result": None} for call in expected_view(expected)["tool_calls"]],
    }
    assert activation.tool_calls[0].result is None
    assert activation.cost_usd > 0


def test_an_activation_span_with_nothing_beneath_it(
    embedded_store: EmbeddedStore, recorder: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tp, exporter = recorder
    with agent_session("agent", conversation_id="conv-6", input="go", tracer_provider=tp):
        record_llm_call("m", 1, 1, output=said("Thinking."), tracer_provider=tp)
        with skill_activation("noop", tracer_provider=tp):
            pass
        record_llm_call("m", 1, 1, output=said("Nothing to do."), tracer_provider=tp)
    [activation] = exported(embedded_store, exporter).activations
    assert (activation.skill_name, activation.trigger, activation.tool_calls) == (
        "noop",
        "span",
        [],
    )
    assert activation.integration_message == "Nothing to do."
    assert activation.trigger_call_id == activation.activation_span_id


def test_visible_skills_from_the_catalogue_message(
    embedded_store: EmbeddedStore, recorder: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    """No skillsight.skills.available: Claude Code's catalogue message, as the model received
    it, says which skills the agent could see."""
    tp, exporter = recorder
    catalogue = (
        "The following skills are available for use with the Skill tool:\n\n"
        "- pdf: Make PDF reports\n- csv-summary: Summarise a CSV file"
    )
    prompt = [{"role": "system", "content": catalogue}, {"role": "user", "content": "sum it"}]
    with agent_session("agent", conversation_id="conv-7", input="sum it", tracer_provider=tp):
        record_llm_call("m", 1, 1, input=prompt, output=said(""), tracer_provider=tp)
        record_tool_call("Skill", "s1", {"skill": "csv-summary"}, "ok", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=said("133."), tracer_provider=tp)
    [activation] = exported(embedded_store, exporter).activations
    assert activation.visible_skills == [
        VisibleSkill(name="pdf", description="Make PDF reports"),
        VisibleSkill(name="csv-summary", description="Summarise a CSV file"),
    ]
    assert (activation.request, activation.integration_message) == ("sum it", "133.")


# --- joined to the catalogue by name and version ------------------------------------------------

UNSCANNED = "0" * 64


def csv_skill(folder: Path, frontmatter: str) -> SkillManifest:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: csv-summary\n{frontmatter}---\n\nRun `python3 scripts/summary.py FILE`.\n"
    )
    return load_skill(folder)


def catalogued(manifest: SkillManifest) -> SkillContract:
    return SkillContract(
        name=manifest.name,
        description=manifest.description,
        allowed_tools=manifest.allowed_tools,
        version=manifest.version,
        source_uri=manifest.path.absolute().as_uri(),
    )


def versioned_span(tp: TracerProvider, call_id: str, version: str) -> Any:
    """An activation span of another instrumentor: the generic ``gen_ai.skill.*`` name and
    version, nothing of the skill's contract."""
    return tp.get_tracer("another-instrumentor").start_as_current_span(
        "activate_skill csv-summary",
        attributes={
            sc.GEN_AI_OPERATION_NAME: sc.OP_ACTIVATE_SKILL,
            sc.GEN_AI_SKILL_NAME: "csv-summary",
            sc.GEN_AI_SKILL_VERSION: version,
            sc.SKILLSIGHT_ACTIVATION_CALL_ID: call_id,
            sc.SKILLSIGHT_ACTIVATION_TRIGGER: sc.TRIGGER_SKILL_TOOL,
        },
    )


def test_an_activation_gets_the_contract_of_the_version_it_ran(
    embedded_store: EmbeddedStore,
    recorder: tuple[TracerProvider, InMemorySpanExporter],
    tmp_path: Path,
) -> None:
    """Two versions of a skill are catalogued, the newer one declaring allowed-tools. A span
    naming the older version gets the older contract (whatever it leaves out comes from that
    version, never the newer one); a span naming a version never scanned keeps only what it
    reported; a start that names no version (a bare Skill call, as Claude Code reports it)
    gets the latest."""
    tp, exporter = recorder
    folder = tmp_path / "skills" / "csv-summary"
    older = csv_skill(folder, "description: Summarise a CSV file.\n")
    with agent_session("agent", conversation_id="conv-v", input="sum it", tracer_provider=tp):
        # the manual API reads the folder as it is now: the older version, no allowed-tools
        with skill_activation(
            "csv-summary", skill_dir=folder, trigger="skill_tool", call_id="a1", tracer_provider=tp
        ):
            record_tool_call("Bash", "b1", {"command": "wc -l x.csv"}, "5", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=said("Again."), tracer_provider=tp)
        with versioned_span(tp, "a2", older.version):
            record_tool_call("Bash", "b2", {"command": "wc -l y.csv"}, "6", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=said("Once more."), tracer_provider=tp)
        with versioned_span(tp, "a3", UNSCANNED):
            record_tool_call("Bash", "b3", {"command": "wc -l z.csv"}, "7", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=said("Last."), tracer_provider=tp)
        record_tool_call("Skill", "a4", {"skill": "csv-summary"}, "loaded", tracer_provider=tp)
        record_tool_call("Bash", "b4", {"command": "wc -l w.csv"}, "8", tracer_provider=tp)
        record_llm_call("m", 1, 1, output=said("Done."), tracer_provider=tp)
    newer = csv_skill(
        folder,
        "description: Summarise a CSV file and chart it.\nallowed-tools: Bash(python3:*) Read\n",
    )
    assert newer.version != older.version
    embedded_store.skills.insert("default", [older], scanned_at=datetime(2026, 11, 1, tzinfo=UTC))
    embedded_store.skills.insert("default", [newer], scanned_at=datetime(2026, 11, 2, tzinfo=UTC))
    catalogue = store_catalogue(embedded_store)("default")
    assert isinstance(catalogue, Catalogue)
    assert catalogue.versions("csv-summary") == (catalogued(newer), catalogued(older))

    exported(embedded_store, exporter)  # into the store; rebuilt below with the catalogue
    activations = rebuild(embedded_store, catalogue=catalogue).activations
    # each contract also names what the telemetry itself reported (the rest is the catalogue's)
    assert [(a.trigger_call_id, a.skill_version, a.contract) for a in activations] == [
        (
            "a1",
            older.version,
            catalogued(older).model_copy(
                update={"reported": ["description", "source_uri", "version"]}
            ),
        ),
        ("a2", older.version, catalogued(older).model_copy(update={"reported": ["version"]})),
        (
            "a3",
            UNSCANNED,
            SkillContract(
                name="csv-summary", version=UNSCANNED, catalogued=False, reported=["version"]
            ),
        ),
        ("a4", newer.version, catalogued(newer)),
    ]
    # a version the catalogue lacks, reported with no allowed-tools: "not reported", which is
    # not "declares none"
    assert activations[2].contract is not None
    assert not activations[2].contract.allowed_tools_known
    assert activations[0].contract is not None and activations[0].contract.allowed_tools_known


def test_a_catalogue_refuses_what_it_cannot_join() -> None:
    contract = SkillContract(name="pdf", version="ab" * 32)
    with pytest.raises(ValueError, match="skill 'pdf' with no version"):
        Catalogue({"pdf": []})
    with pytest.raises(ValueError, match="a contract of 'pdf' under 'csv-summary'"):
        Catalogue({"csv-summary": [contract]})
    # a plain mapping is a catalogue of one version per skill
    plain = Catalogue.of({"pdf": contract})
    assert (dict(plain), plain.contract("pdf", "ab" * 32), plain.contract("pdf", "cd" * 32)) == (
        {"pdf": contract},
        contract,
        None,
    )
