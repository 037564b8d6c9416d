"""The Claude Code demo harness: scripted model, real CLI, real telemetry.

Tests marked ``claude`` start the Claude Code CLI bundled with ``claude-agent-sdk`` (a few
seconds each); the rest exercise the scripted Messages API and the saved captures alone.
"""

from __future__ import annotations

import importlib.util
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from demo.scripted_anthropic import (
    AgentScript,
    ScriptedAnthropic,
    Text,
    ToolUse,
    Turn,
    classify_request,
    last_tool_result_text,
    tool_result_text,
    tool_use_id,
)
from demo.workload import SKILL_NAME, DemoResult, Protocol, run_demo
from tests.harness.otlp_capture import Capture, OtlpCapture, iter_log_records, iter_spans

CAPTURES = Path(__file__).parent / "fixtures" / "captures"


def _bundled_cli() -> Path | None:
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        return None
    cli = Path(spec.origin).parent / "_bundled" / "claude"
    return cli if cli.exists() else None


requires_claude = pytest.mark.skipif(
    _bundled_cli() is None, reason="claude-agent-sdk with its bundled CLI is not installed"
)
PROJECT_KEY = "test-project-key"
NATIVE_SPANS = {
    "claude_code.interaction",
    "claude_code.llm_request",
    "claude_code.tool",
    "claude_code.tool.execution",
}
NATIVE_EVENTS = {
    "claude_code.user_prompt",
    "claude_code.api_request",
    "claude_code.assistant_response",
    "claude_code.tool_decision",
    "claude_code.skill_activated",
    "claude_code.tool_result",
}


# --- scripted Messages API (no CLI) ------------------------------------------------------------


def _post(url: str, body: Any) -> tuple[int, str, bytes]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers.get("content-type", ""), response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers.get("content-type", ""), error.read()


def _sse_events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for chunk in raw.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines() if ": " in line)
        if "event" in lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


_TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


def test_scripted_server_streams_turns_by_conversation_position() -> None:
    turns: list[Turn] = [
        [Text("Using the skill."), ToolUse("Skill", {"skill": "demo"})],
        lambda body: [Text("saw: " + last_tool_result_text(body))],
    ]
    server = ScriptedAnthropic(turns)
    with server as base_url:
        first = {"model": "m", "stream": True, "tools": _TOOLS, "messages": [{"role": "user"}]}
        status, content_type, raw = _post(f"{base_url}/v1/messages?beta=true", first)
        assert status == 200 and content_type == "text/event-stream"
        events = _sse_events(raw)
        names = [name for name, _ in events]
        assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
        assert {"content_block_start", "content_block_delta", "content_block_stop"} <= set(names)
        starts = [data["content_block"] for name, data in events if name == "content_block_start"]
        assert starts[1] == {
            "type": "tool_use",
            "id": tool_use_id(0, 1),
            "name": "Skill",
            "input": {},
        }
        partial = "".join(
            data["delta"].get("partial_json", "")
            for name, data in events
            if name == "content_block_delta" and data["index"] == 1
        )
        assert json.loads(partial) == {"skill": "demo"}
        delta = next(data for name, data in events if name == "message_delta")
        assert delta["delta"]["stop_reason"] == "tool_use"
        assert set(delta["usage"]) >= {
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        }

        # A retry of the same conversation replays turn 0 instead of skipping ahead.
        _post(f"{base_url}/v1/messages", first)
        second = {
            "model": "m",
            "tools": _TOOLS,
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "text", "text": "Using the skill."}]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": "42"}],
                },
            ],
        }
        status, content_type, raw = _post(f"{base_url}/v1/messages", second)
        message = json.loads(raw)
        assert content_type == "application/json"
        assert message["content"] == [{"type": "text", "text": "saw: 42"}]
        assert message["stop_reason"] == "end_turn"

        # Side requests (no tools) get a schema-shaped answer and leave the script alone.
        title = {
            "model": "m",
            "messages": [{"role": "user", "content": "name it"}],
            "output_config": {
                "format": {
                    "type": "json_schema",
                    "schema": {"type": "object", "properties": {"title": {"type": "string"}}},
                }
            },
        }
        _, _, raw = _post(f"{base_url}/v1/messages", title)
        assert json.loads(json.loads(raw)["content"][0]["text"]) == {"title": "Demo session"}
        status, _, raw = _post(f"{base_url}/v1/messages/count_tokens", second)
        assert status == 200 and json.loads(raw)["input_tokens"] > 0
        status, _, raw = _post(f"{base_url}/v1/unknown", {})
        assert status == 404 and json.loads(raw)["type"] == "error"

    assert [r.turn for r in server.main_requests] == [0, 0, 1]
    assert [r.kind for r in server.requests] == [
        "main",
        "main",
        "main",
        "side",
        "count_tokens",
        "other",
    ]
    assert classify_request({"tools": [{"name": "Skill"}]}) == "main"
    assert classify_request({"tools": []}) == "side"


def test_subagent_requests_get_their_own_script() -> None:
    marker = "You are the data-analyst subagent."
    server = ScriptedAnthropic(
        [[ToolUse("Agent", {"subagent_type": "data-analyst"})], [Text("main done")]],
        agents={
            "data-analyst": AgentScript(
                marker,
                [
                    [ToolUse("Bash", {"command": "true"})],
                    lambda body: [Text("sub saw " + str(tool_result_text(body, "toolu_x")))],
                ],
            )
        },
    )
    system = [{"type": "text", "text": "You are a Claude agent."}, {"type": "text", "text": marker}]
    # A subagent with only Read is still an agent loop: it routes by its system prompt.
    sub_tools = [{"name": "Read", "input_schema": {"type": "object"}}]
    with server as base_url:
        main_first = {"model": "m", "tools": _TOOLS, "messages": [{"role": "user"}]}
        sub_first = {"model": "m", "system": system, "tools": sub_tools, "messages": []}
        sub_second = {
            **sub_first,
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "text", "text": "x"}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "other", "content": "no"},
                        {"type": "tool_result", "tool_use_id": "toolu_x", "content": "42"},
                    ],
                },
            ],
        }
        answers = [
            json.loads(_post(f"{base_url}/v1/messages", body)[2])["content"]
            for body in (main_first, sub_first, sub_second)
        ]

    assert answers == [
        [
            {
                "type": "tool_use",
                "id": tool_use_id(0, 0),
                "name": "Agent",
                "input": {"subagent_type": "data-analyst"},
            }
        ],
        [
            {
                "type": "tool_use",
                "id": tool_use_id(0, 0, "data-analyst"),
                "name": "Bash",
                "input": {"command": "true"},
            }
        ],
        [{"type": "text", "text": "sub saw 42"}],
    ]
    assert tool_use_id(0, 0, "data-analyst") != tool_use_id(0, 0)
    assert [(r.agent, r.kind, r.turn) for r in server.requests] == [
        ("main", "main", 0),
        ("data-analyst", "main", 0),
        ("data-analyst", "main", 1),
    ]
    with pytest.raises(ValueError, match="'main' names the main script"):
        ScriptedAnthropic([], agents={"main": AgentScript("x", [])})


# --- saved captures ----------------------------------------------------------------------------


def _parse(path: Path, message: Message) -> Message:
    message.ParseFromString(path.read_bytes())
    return message


def test_saved_captures_parse_and_hold_the_skill_session() -> None:
    native = CAPTURES / "claude_code"
    traces_json = Capture(
        "traces", "http", "application/json", (native / "traces.json").read_bytes(), {}
    )
    logs_json = Capture("logs", "http", "application/json", (native / "logs.json").read_bytes(), {})
    traces_pb = Capture(
        "traces", "http", "application/x-protobuf", (native / "traces.pb").read_bytes(), {}
    )
    logs_pb = Capture(
        "logs", "http", "application/x-protobuf", (native / "logs.pb").read_bytes(), {}
    )
    for traces, logs in ((traces_json, logs_json), (traces_pb, logs_pb)):
        _assert_native_telemetry([traces, logs], skill_command=None)
    assert isinstance(_parse(native / "traces.pb", ExportTraceServiceRequest()), Message)
    assert isinstance(_parse(native / "logs.pb", ExportLogsServiceRequest()), Message)

    openinference = _parse(CAPTURES / "openinference" / "traces.pb", ExportTraceServiceRequest())
    traceai = _parse(CAPTURES / "traceai" / "traces.pb", ExportTraceServiceRequest())
    assert {"ClaudeAgentSDK.query", "Skill", "Bash"} <= _span_names(openinference)
    assert {"claude_agent.conversation", "tool.Skill", "tool.Bash"} <= _span_names(traceai)


def _span_names(request: Any) -> set[str]:
    return {
        span.name
        for resource_spans in request.resource_spans
        for scope_spans in resource_spans.scope_spans
        for span in scope_spans.spans
    }


# --- live Claude Code runs ---------------------------------------------------------------------


def _assert_native_telemetry(captures: list[Capture], *, skill_command: str | None) -> None:
    spans = list(iter_spans(captures))
    names = {span["name"] for span in spans}
    assert names >= NATIVE_SPANS, names

    (root,) = [s for s in spans if s["name"] == "claude_code.interaction"]
    assert not root.get("parentSpanId")
    assert {s["traceId"] for s in spans} == {root["traceId"]}
    assert len(root["traceId"]) == 32 and len(root["spanId"]) == 16

    tools = [s for s in spans if s["name"] == "claude_code.tool"]
    skill_span = next(s for s in tools if s["attrs"].get("tool_name") == "Skill")
    bash_span = next(s for s in tools if s["attrs"].get("tool_name") == "Bash")
    assert skill_span["attrs"]["skill_name"] == SKILL_NAME
    assert skill_span["attrs"]["tool_use_id"].startswith("toolu_")
    assert "csv-summary/scripts/summarize_csv.py" in bash_span["attrs"]["full_command"]
    if skill_command is not None:
        assert bash_span["attrs"]["full_command"] == skill_command
    executions = [s for s in spans if s["name"] == "claude_code.tool.execution"]
    by_id = {s["spanId"]: s for s in spans}
    for execution in executions:
        parent = by_id[execution["parentSpanId"]]
        assert parent["name"] == "claude_code.tool"
        assert execution["attrs"]["tool_use_id"] == parent["attrs"]["tool_use_id"]

    records = list(iter_log_records(captures))
    events = {str(record["body"]["stringValue"]) for record in records}
    assert events >= NATIVE_EVENTS, events
    (activated,) = [r for r in records if r["attrs"].get("event.name") == "skill_activated"]
    assert activated["attrs"]["skill.name"] == SKILL_NAME
    assert activated["attrs"]["skill.source"] == "projectSettings"
    assert activated["traceId"] == root["traceId"]
    results = {
        r["attrs"]["tool_use_id"]: r
        for r in records
        if r["attrs"].get("event.name") == "tool_result"
    }
    assert skill_span["attrs"]["tool_use_id"] in results
    assert bash_span["attrs"]["tool_use_id"] in results


def _assert_session(result: DemoResult) -> None:
    assert result.result_text is not None
    assert result.project.expected_output in result.result_text
    assert [
        (name, tool_input.get("skill") or tool_input.get("command"))
        for _, name, tool_input in result.tool_calls
    ] == [
        ("Skill", SKILL_NAME),
        ("Bash", result.project.command),
    ]
    turns = sorted({r.turn for r in result.requests if r.turn is not None})
    assert turns == [0, 1, 2]


@pytest.mark.claude
@requires_claude
@pytest.mark.timeout(90)
@pytest.mark.parametrize("protocol", ["http/json", "http/protobuf", "grpc"])
def test_claude_code_exports_native_telemetry(protocol: Protocol, tmp_path: Path) -> None:
    with OtlpCapture() as receiver:
        result = run_demo(
            receiver.endpoint_for(protocol),
            protocol,
            project_key=PROJECT_KEY,
            workdir=tmp_path,
            timeout_s=60,
        )
        captures = list(receiver.captures)

    _assert_session(result)
    assert {c.signal for c in captures} >= {"traces", "logs"}
    expected_type = {
        "http/json": "application/json",
        "http/protobuf": "application/x-protobuf",
        "grpc": "application/grpc",
    }[protocol]
    assert {c.content_type for c in captures} == {expected_type}
    assert all(c.headers.get("x-skillsight-key") == PROJECT_KEY for c in captures)
    _assert_native_telemetry(captures, skill_command=result.project.command)
    spans = list(iter_spans(captures))
    assert {s["attrs"]["session.id"] for s in spans} == {result.session_id}
    call_ids = {call_id for call_id, _, _ in result.tool_calls}
    assert call_ids == {s["attrs"]["tool_use_id"] for s in spans if s["name"] == "claude_code.tool"}


@pytest.mark.claude
@requires_claude
@pytest.mark.timeout(90)
@pytest.mark.parametrize(
    ("name", "expected_spans", "call_id_key"),
    [
        ("openinference", {"ClaudeAgentSDK.query", "Skill", "Bash"}, "tool.id"),
        (
            "traceai",
            {"claude_agent.conversation", "tool.Skill", "tool.Bash"},
            "claude_agent.tool.use_id",
        ),
    ],
)
def test_third_party_instrumentors_export_spans(
    name: str, expected_spans: set[str], call_id_key: str, tmp_path: Path
) -> None:
    import claude_agent_sdk

    from demo.third_party import InstrumentorName, run_instrumented_demo

    original = (claude_agent_sdk.query, claude_agent_sdk.ClaudeSDKClient)
    instrumentor: InstrumentorName = "openinference" if name == "openinference" else "traceai"
    with OtlpCapture() as receiver:
        result = run_instrumented_demo(
            instrumentor,
            receiver.http_endpoint,
            headers={"x-skillsight-key": PROJECT_KEY},
            workdir=tmp_path,
            timeout_s=60,
        )
        captures = receiver.of("traces")

    assert (claude_agent_sdk.query, claude_agent_sdk.ClaudeSDKClient) == original
    _assert_session(result)
    assert captures and all(c.content_type == "application/x-protobuf" for c in captures)
    assert all(c.headers.get("x-skillsight-key") == PROJECT_KEY for c in captures)
    spans = list(iter_spans(captures))
    assert expected_spans <= {s["name"] for s in spans}
    call_ids = {call_id for call_id, _, _ in result.tool_calls}
    assert call_ids <= {s["attrs"].get(call_id_key) for s in spans}


@pytest.mark.claude
@requires_claude
@pytest.mark.timeout(90)
def test_sdk_trace_context_reaches_claude_code(tmp_path: Path) -> None:
    from demo.third_party import run_instrumented_demo
    from demo.workload import telemetry_env

    with OtlpCapture() as receiver:
        run_instrumented_demo(
            "openinference",
            receiver.http_endpoint,
            workdir=tmp_path,
            native_telemetry=telemetry_env(receiver.http_endpoint, "http/json"),
            timeout_s=60,
        )
        captures = receiver.of("traces")

    spans = list(iter_spans(captures))
    (sdk_root,) = [s for s in spans if s["name"] == "ClaudeAgentSDK.query"]
    (interaction,) = [s for s in spans if s["name"] == "claude_code.interaction"]
    assert interaction["traceId"] == sdk_root["traceId"]
    assert interaction["parentSpanId"] == sdk_root["spanId"]
    assert interaction["attrs"]["parent.source"] == "env"
