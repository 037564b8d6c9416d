"""One run, two sources, one answer: the collector's activations from our spans and Claude Code's.

A real Claude Code session (scripted model) runs under ClaudeAgentSDKInstrumentor while the CLI
exports its own native telemetry. Both go through the collector's real path (OTLP decode,
ClickHouse via chdb, session rebuild), each into a store of its own, and the activations the one
algorithm derives from them must agree on everything both sources observe.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from skillsight.ingest import otlp
from skillsight.instrumentation import ClaudeAgentSDKInstrumentor
from skillsight.rebuild.session import rebuild_session
from skillsight.store import EmbeddedStore
from skillsight.store.records import Activation
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA
from tests.harness.otlp_capture import OtlpCapture
from tests.test_instrumentation_claude import claude_session

Body = tuple[str, bytes]


def _rebuilt(folder: Path, bodies: list[Body]) -> list[Activation]:
    # chdb holds one data folder per process at a time: open, use and close each in turn.
    store = EmbeddedStore(folder)
    store.migrate()
    try:
        for signal, body in bodies:
            decoded = otlp.decode(signal, body, otlp.PROTOBUF, "default", otlp.Limits())
            assert decoded.rejected == 0, decoded.message()
            if signal == otlp.TRACES:
                store.spans.insert(decoded.columns.to_arrow(SPAN_SCHEMA))
            else:
                store.events.insert(decoded.columns.to_arrow(EVENT_SCHEMA))
        spans = store.spans.find("default", limit=100_000)
        events = store.events.find("default", limit=100_000)
    finally:
        store.close()
    return rebuild_session(spans, events).activations


def agreed(activation: Activation) -> dict[str, Any]:
    """What both sources observe of an activation (ids of spans and token counts differ)."""
    return {
        "session_id": activation.session_id,
        "trace_id": activation.trace_id,
        "skill": activation.skill_name,
        "agent": activation.agent,
        "subagent": activation.subagent,
        "request": activation.request,
        "tool_calls": [
            (c.tool_call_id, c.name, c.arguments, c.is_error, c.result)
            for c in activation.tool_calls
        ],
        "integration_message": activation.integration_message,
        "outcome": activation.outcome,
    }


@pytest.fixture
def recorder() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


@claude_session
@pytest.mark.parametrize("scenario", ["one_skill", "subagent_skill"])
def test_our_spans_and_native_telemetry_give_the_same_activations(
    scenario: str, tmp_path: Path, recorder: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    from demo.scenarios import mismatches, run_scenario_async

    provider, exporter = recorder

    @contextlib.contextmanager
    def instrumented() -> Iterator[None]:
        instrumentor = ClaudeAgentSDKInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            yield
        finally:
            instrumentor.uninstrument()

    with OtlpCapture() as receiver:
        result = asyncio.run(
            run_scenario_async(
                scenario,
                workdir=tmp_path,
                endpoint=receiver.http_endpoint,
                protocol="http/protobuf",
                instrumentation=instrumented,
            )
        )
        native: list[Body] = [
            (otlp.TRACES if c.signal == "traces" else otlp.LOGS, c.body)
            for c in receiver.captures
            if c.signal in ("traces", "logs")
        ]
    assert mismatches(result) == []
    ours: list[Body] = [
        (otlp.TRACES, encode_spans(exporter.get_finished_spans()).SerializeToString())
    ]

    from_native = _rebuilt(tmp_path / "native", native)
    from_ours = _rebuilt(tmp_path / "ours", ours)

    expected = result.scenario.expected.activations
    assert [a.skill_name for a in from_ours] == [e.skill for e in expected]
    assert [agreed(a) for a in from_ours] == [agreed(a) for a in from_native]
    # the native trace joined ours: the SDK handed our agent span to the CLI as TRACEPARENT
    assert {a.trace_id for a in from_ours} == {
        format(s.context.trace_id, "032x") for s in exporter.get_finished_spans()
    }
    # what only our spans carry: the skill's declared contract and the skills the agent saw
    for activation in from_ours:
        assert activation.skill_version
        assert activation.contract is not None
        assert activation.contract.allowed_tools == ["Bash(python3:*)", "Read"]
        assert [s.name for s in activation.visible_skills] == ["csv-summary"]
