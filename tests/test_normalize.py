"""Each convention's mapper, checked on real captures (tests/fixtures/captures) in real ClickHouse.

The captures are what Claude Code, OpenInference's and traceAI's Claude Agent SDK instrumentors
really exported during one scripted run (see tests/fixtures/captures/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skillsight.ingest import otlp
from skillsight.reports import event_out, span_out
from skillsight.store import EmbeddedStore
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA
from tests.support.otlp_builders import export_request, span

CAPTURES = Path(__file__).parent / "fixtures" / "captures"
LIMITS = otlp.Limits()


def load(store: EmbeddedStore, path: Path, signal: str) -> None:
    encoding = otlp.JSON if path.suffix == ".json" else otlp.PROTOBUF
    decoded = otlp.decode(signal, path.read_bytes(), encoding, "default", LIMITS)
    assert decoded.rejected == 0, decoded.message()
    if signal == otlp.TRACES:
        store.spans.insert(decoded.columns.to_arrow(SPAN_SCHEMA))
    else:
        store.events.insert(decoded.columns.to_arrow(EVENT_SCHEMA))


def spans_by_name(store: EmbeddedStore) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in store.spans.find("default"):
        out.setdefault(row["name"], []).append(span_out(row).model_dump())
    return out


@pytest.mark.parametrize("capture", ["traces.json", "traces.pb"])
def test_claude_code_native_spans(embedded_store: EmbeddedStore, capture: str) -> None:
    load(embedded_store, CAPTURES / "claude_code" / capture, otlp.TRACES)
    spans = spans_by_name(embedded_store)
    assert {s["source_convention"] for group in spans.values() for s in group} == {"claude_code"}
    tools = {s["tool_name"]: s for s in spans["claude_code.tool"]}
    skill, bash = tools["Skill"], tools["Bash"]
    assert skill["operation"] == "execute_tool"
    assert skill["skill_name"] == "csv-summary"
    assert skill["input"] == "csv-summary"
    assert skill["tool_call_id"].startswith("toolu_")
    assert bash["input"].startswith("python3 .claude/skills/csv-summary/scripts/summarize_csv.py")
    assert bash["tool_call_id"] != skill["tool_call_id"]
    assert bash["output"].startswith("rows: 5")  # from the tool.output span event
    session = skill["session_id"]
    assert session and all(s["session_id"] == session for g in spans.values() for s in g)
    assert all(s["agent"] == "claude-code" for g in spans.values() for s in g)
    interaction = spans["claude_code.interaction"][0]
    assert interaction["operation"] == "invoke_agent"
    assert interaction["input"].startswith("What is the total amount in data/sales.csv")
    chats = spans["claude_code.llm_request"]
    assert {c["operation"] for c in chats} == {"chat"}
    assert all(c["model"] for c in chats)
    assert sum(c["tokens"]["output"] for c in chats) > 0
    assert sum(c["tokens"]["cache_read"] for c in chats) > 0
    executions = spans["claude_code.tool.execution"]
    assert {e["operation"] for e in executions} == {"tool_execution"}
    assert {e["tool_call_id"] for e in executions} == {skill["tool_call_id"], bash["tool_call_id"]}
    # unknown attributes are kept verbatim
    assert bash["attributes"]["bash_argv0"] == "python"
    assert bash["resource_attributes"]["service.name"] == "claude-code"


@pytest.mark.parametrize("capture", ["logs.json", "logs.pb"])
def test_claude_code_native_events(embedded_store: EmbeddedStore, capture: str) -> None:
    load(embedded_store, CAPTURES / "claude_code" / capture, otlp.LOGS)
    events = [event_out(r).model_dump() for r in embedded_store.events.find("default")]
    by_name: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_name.setdefault(event["event_name"], []).append(event)
    assert {
        "claude_code.skill_activated",
        "claude_code.tool_decision",
        "claude_code.tool_result",
        "claude_code.api_request",
        "claude_code.user_prompt",
    } <= set(by_name)
    activated = by_name["claude_code.skill_activated"][0]
    assert activated["skill_name"] == "csv-summary"
    assert activated["source_convention"] == "claude_code"
    assert activated["attributes"]["skill.source"] == "projectSettings"
    assert activated["prompt_id"] and activated["session_id"]
    results = {e["tool_name"]: e for e in by_name["claude_code.tool_result"]}
    assert results["Bash"]["tool_call_id"].startswith("toolu_")
    assert "summarize_csv.py" in results["Bash"]["attributes"]["tool_input"]
    api = by_name["claude_code.api_request"]
    assert sum(e["cost_usd"] for e in api) > 0
    assert any(e["skill_name"] == "csv-summary" for e in api)
    assert all(e["model"] for e in api)


def test_json_and_protobuf_exports_normalize_alike(tmp_path: Path) -> None:
    """The JSON and protobuf captures are two runs of one script: same shape of rows."""
    shapes = []
    for capture in ("traces.json", "traces.pb"):
        store = EmbeddedStore(tmp_path / capture)
        store.migrate()
        load(store, CAPTURES / "claude_code" / capture, otlp.TRACES)
        shapes.append(
            sorted(
                (r["name"], r["operation"], r["tool_name"], r["skill_name"], r["source_convention"])
                for r in store.spans.find("default")
            )
        )
        store.close()
    assert shapes[0] == shapes[1]


def test_openinference_claude_agent_sdk(embedded_store: EmbeddedStore) -> None:
    load(embedded_store, CAPTURES / "openinference" / "traces.pb", otlp.TRACES)
    spans = spans_by_name(embedded_store)
    assert {s["source_convention"] for g in spans.values() for s in g} == {"openinference"}
    skill, bash = spans["Skill"][0], spans["Bash"][0]
    assert skill["operation"] == bash["operation"] == "execute_tool"
    assert skill["tool_name"] == "Skill" and bash["tool_name"] == "Bash"
    assert skill["tool_call_id"].startswith("toolu_")
    assert json.loads(skill["input"]) == {"skill": "csv-summary"}
    assert "summarize_csv.py" in json.loads(bash["input"])["command"]
    assert "rows: 5" in json.loads(bash["output"])["stdout"]
    agent = spans["ClaudeAgentSDK.query"][0]
    assert agent["operation"] == "invoke_agent"
    assert agent["session_id"]
    assert agent["model"] and agent["tokens"]["input"] > 0
    assert agent["tokens"]["cache_read"] > 0


def test_traceai_claude_agent_sdk(embedded_store: EmbeddedStore) -> None:
    load(embedded_store, CAPTURES / "traceai" / "traces.pb", otlp.TRACES)
    spans = spans_by_name(embedded_store)
    assert {s["source_convention"] for g in spans.values() for s in g} == {"traceai"}
    skill, bash = spans["tool.Skill"][0], spans["tool.Bash"][0]
    assert skill["operation"] == bash["operation"] == "execute_tool"
    assert (skill["tool_name"], bash["tool_name"]) == ("Skill", "Bash")
    assert skill["tool_call_id"].startswith("toolu_")
    assert json.loads(skill["input"]) == {"skill": "csv-summary"}
    assert "rows: 5" in bash["output"]
    conversation = spans["claude_agent.conversation"][0]
    assert conversation["operation"] == "invoke_agent"
    assert conversation["session_id"] and conversation["cost_usd"] > 0
    assert {t["operation"] for t in spans["claude_agent.assistant_turn"]} == {"chat"}


def test_genai_and_skillsight_conventions(embedded_store: EmbeddedStore) -> None:
    body = export_request(
        [
            span(
                "invoke_agent support",
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "support",
                    "gen_ai.conversation.id": "conv-1",
                    "gen_ai.request.model": "gpt-5",
                    "gen_ai.usage.input_tokens": 100,
                    "gen_ai.usage.output_tokens": 7,
                },
            ),
            span(
                "activate_skill pdf",
                {
                    "skillsight.span.kind": "skill_activation",
                    "gen_ai.skill.name": "pdf",
                    "skillsight.activation.input": "make a report",
                    "skillsight.cost_usd": 0.25,
                    "gen_ai.conversation.id": "conv-1",
                },
            ),
            span(
                "execute_tool load_skill",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "load_skill",
                    "gen_ai.tool.call.id": "call_1",
                    "gen_ai.tool.call.arguments": '{"name": "pdf"}',
                    "gen_ai.tool.call.result": "loaded",
                    "gen_ai.usage.cache_read.input_tokens": 5,
                },
            ),
            span("plain", {"http.method": "GET", "nested": {"a": [1, {"b": True}]}}),
        ]
    )
    decoded = otlp.decode(otlp.TRACES, body, otlp.PROTOBUF, "default", LIMITS)
    embedded_store.spans.insert(decoded.columns.to_arrow(SPAN_SCHEMA))
    spans = {s["name"]: s for g in spans_by_name(embedded_store).values() for s in g}
    agent = spans["invoke_agent support"]
    assert (agent["source_convention"], agent["operation"], agent["agent"]) == (
        "gen_ai",
        "invoke_agent",
        "support",
    )
    assert (agent["session_id"], agent["model"], agent["tokens"]["input"]) == (
        "conv-1",
        "gpt-5",
        100,
    )
    activation = spans["activate_skill pdf"]
    assert (activation["source_convention"], activation["operation"]) == (
        "skillsight",
        "activate_skill",
    )
    assert (activation["skill_name"], activation["input"], activation["cost_usd"]) == (
        "pdf",
        "make a report",
        0.25,
    )
    tool = spans["execute_tool load_skill"]
    assert (tool["tool_name"], tool["tool_call_id"], tool["output"]) == (
        "load_skill",
        "call_1",
        "loaded",
    )
    assert tool["tokens"]["cache_read"] == 5
    plain = spans["plain"]
    assert plain["source_convention"] == "otel" and plain["operation"] == ""
    assert json.loads(plain["attributes"]["nested"]) == {"a": [1, {"b": True}]}
