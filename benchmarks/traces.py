"""Generated agent traces shaped like real ones: an agent span, a skill activation, chat turns
and tool calls, each with 10-15 attributes, encoded as OTLP/protobuf export requests."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from skillsight import semconv as sc

_TOOLS = ("Bash", "Read", "Grep", "Edit", "Write", "Glob")
_SKILLS = ("pdf-report", "csv-summary", "git-release", "db-migrate", "k8s-debug")


def _kv(key: str, value: str | int | float | bool) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _span(
    rng: random.Random,
    trace_id: bytes,
    parent: bytes,
    name: str,
    start: int,
    attrs: dict[str, str | int | float | bool],
) -> Span:
    span = Span(
        trace_id=trace_id,
        span_id=rng.randbytes(8),
        parent_span_id=parent,
        name=name,
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=start,
        end_time_unix_nano=start + rng.randint(1_000_000, 900_000_000),
    )
    span.attributes.extend(_kv(k, v) for k, v in attrs.items())
    return span


def agent_trace(rng: random.Random, session: int, start: int) -> list[Span]:
    """One session: agent span, one skill activation, 2 chat turns, 4-8 tool calls."""
    trace_id = rng.randbytes(16)
    skill = rng.choice(_SKILLS)
    conv = f"session-{session:08d}"
    agent = _span(
        rng,
        trace_id,
        b"",
        "invoke_agent claude-code",
        start,
        {
            sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
            sc.GEN_AI_AGENT_NAME: "claude-code",
            sc.GEN_AI_CONVERSATION_ID: conv,
            sc.GEN_AI_PROVIDER_NAME: "anthropic",
            sc.GEN_AI_REQUEST_MODEL: "claude-sonnet-4-5",
            sc.GEN_AI_USAGE_INPUT_TOKENS: 18234,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: 912,
            sc.SKILLSIGHT_COST_USD: 0.0713,
            sc.SKILLSIGHT_SKILLS_AVAILABLE: json.dumps(
                [{"name": s, "description": f"Use for {s}"} for s in _SKILLS]
            ),
            "user.id": f"user-{rng.randint(1, 500)}",
            "deployment.environment": "production",
        },
    )
    activation = _span(
        rng,
        trace_id,
        agent.span_id,
        f"activate_skill {skill}",
        start + 1000,
        {
            sc.SKILLSIGHT_SPAN_KIND: sc.SPAN_KIND_SKILL_ACTIVATION,
            sc.GEN_AI_SKILL_NAME: skill,
            sc.GEN_AI_SKILL_DESCRIPTION: f"Use when the user asks for {skill} work",
            sc.GEN_AI_SKILL_VERSION: rng.randbytes(32).hex(),
            sc.GEN_AI_SKILL_SOURCE_URI: f"file:///repo/.claude/skills/{skill}/SKILL.md",
            sc.SKILLSIGHT_SKILL_ALLOWED_TOOLS: '["Bash(python3:*)", "Read"]',
            sc.SKILLSIGHT_ACTIVATION_TRIGGER: "skill_tool",
            sc.GEN_AI_CONVERSATION_ID: conv,
            "openinference.span.kind": "AGENT",
            sc.GEN_AI_OPERATION_NAME: "activate_skill",
        },
    )
    spans = [agent, activation]
    for turn in range(2):
        spans.append(
            _span(
                rng,
                trace_id,
                agent.span_id,
                "chat claude-sonnet-4-5",
                start + 2000 + turn,
                {
                    sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                    sc.GEN_AI_PROVIDER_NAME: "anthropic",
                    sc.GEN_AI_REQUEST_MODEL: "claude-sonnet-4-5",
                    sc.GEN_AI_RESPONSE_MODEL: "claude-sonnet-4-5-20250929",
                    sc.GEN_AI_USAGE_INPUT_TOKENS: rng.randint(2000, 30000),
                    sc.GEN_AI_USAGE_OUTPUT_TOKENS: rng.randint(50, 2000),
                    sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: rng.randint(0, 20000),
                    sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: rng.randint(0, 5000),
                    sc.GEN_AI_RESPONSE_FINISH_REASONS: "tool_use",
                    sc.GEN_AI_CONVERSATION_ID: conv,
                    "gen_ai.request.max_tokens": 32000,
                    "gen_ai.request.temperature": 1.0,
                },
            )
        )
    for call in range(rng.randint(4, 8)):
        tool = rng.choice(_TOOLS)
        spans.append(
            _span(
                rng,
                trace_id,
                activation.span_id,
                f"execute_tool {tool}",
                start + 3000 + call,
                {
                    sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
                    sc.GEN_AI_TOOL_NAME: tool,
                    sc.GEN_AI_TOOL_CALL_ID: f"toolu_{rng.randbytes(12).hex()}",
                    sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(
                        {"command": f"python3 scripts/run.py --input data/{call}.csv"}
                    ),
                    sc.GEN_AI_TOOL_CALL_RESULT: "rows=1200 mean=3.14 max=99.2 " * rng.randint(1, 8),
                    sc.GEN_AI_CONVERSATION_ID: conv,
                    "gen_ai.tool.type": "function",
                    "skillsight.tool.is_error": False,
                    "process.exit_code": 0,
                    "code.filepath": f"/repo/.claude/skills/{skill}/scripts/run.py",
                    "tool.duration_ms": rng.random() * 900,
                },
            )
        )
    return spans


def export_requests(total_spans: int, per_request: int, seed: int = 7) -> Iterator[bytes]:
    """Serialized ``ExportTraceServiceRequest`` bodies holding ``total_spans`` spans in all."""
    rng = random.Random(seed)
    pending: list[Span] = []
    made = 0
    session = 0
    start = 1_763_000_000_000_000_000
    while made < total_spans:
        while len(pending) < per_request:
            pending.extend(agent_trace(rng, session, start + session * 10_000_000_000))
            session += 1
        take = min(per_request, total_spans - made)
        request = ExportTraceServiceRequest()
        resource_spans = request.resource_spans.add()
        resource_spans.resource.attributes.extend(
            [
                _kv("service.name", "bench-agent"),
                _kv("service.version", "1.4.2"),
                _kv("telemetry.sdk.language", "python"),
            ]
        )
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.name = "skillsight.instrumentation"
        scope_spans.spans.extend(pending[:take])
        del pending[:take]
        made += take
        yield request.SerializeToString()
