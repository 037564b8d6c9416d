"""The manual API and ``configure()``: span trees, content capture, OTLP export for real."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from demo.workload import create_demo_project
from skillsight import semconv as sc
from skillsight.errors import ConfigError
from skillsight.instrumentation import (
    ContentPolicy,
    Usage,
    agent_session,
    configure,
    record_llm_call,
    record_tool_call,
    shutdown,
    skill_activation,
    tool_call,
)
from skillsight.skills import load_skill
from tests.harness.otlp_capture import OtlpCapture, iter_spans
from tests.support.span_tree import names, span_tree

OTEL_VARS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_SERVICE_NAME",
    "SKILLSIGHT_PROJECT_KEY",
    "SKILLSIGHT_CAPTURE_CONTENT",
    "SKILLSIGHT_MAX_CONTENT_CHARS",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No exporter settings leak in from the machine; configure() is undone after each test."""
    for name in OTEL_VARS:
        monkeypatch.delenv(name, raising=False)
    yield
    shutdown()


@pytest.fixture
def memory() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_activation_parents_the_calls_made_inside_it(
    tmp_path: Path, memory: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = memory
    project = create_demo_project(tmp_path / "project")
    manifest = load_skill(project.skill_dir)

    with agent_session(
        "report-bot",
        conversation_id="conv-1",
        provider="openai",
        model="gpt-test",
        skills_available=["csv-summary", ("other", "Does other things.")],
        cwd=project.root,
        input="Total of sales.csv?",
        tracer_provider=provider,
    ) as session:
        record_llm_call("gpt-test", 120, 8, cache_read_input_tokens=100, tracer_provider=provider)
        with skill_activation(
            "csv-summary", cwd=project.root, input="Total of sales.csv?", tracer_provider=provider
        ) as activation:
            record_tool_call(
                "Bash",
                "call-1",
                {"command": project.command},
                "total amount: 133.00",
                tracer_provider=provider,
            )
            with tool_call("Read", "call-2", {"file_path": "x"}, tracer_provider=provider) as call:
                call.set_result("contents")
        record_llm_call("gpt-test", 140, 20, finish_reason="stop", tracer_provider=provider)
        session.set_result("133.00", usage=Usage(260, 28), cost_usd=0.01)

    assert activation.skill.version == manifest.version
    spans = exporter.get_finished_spans()
    keep = [
        sc.GEN_AI_OPERATION_NAME,
        sc.GEN_AI_SKILL_NAME,
        sc.GEN_AI_SKILL_DESCRIPTION,
        sc.GEN_AI_SKILL_VERSION,
        sc.SKILLSIGHT_SKILL_ALLOWED_TOOLS,
        sc.SKILLSIGHT_ACTIVATION_TRIGGER,
        sc.SKILLSIGHT_ACTIVATION_INPUT,
        sc.SKILLSIGHT_SPAN_KIND,
        sc.OPENINFERENCE_SPAN_KIND,
        sc.GEN_AI_TOOL_CALL_ID,
        sc.GEN_AI_TOOL_CALL_RESULT,
        sc.GEN_AI_USAGE_INPUT_TOKENS,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS,
        sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
        sc.GEN_AI_RESPONSE_FINISH_REASONS,
        sc.GEN_AI_CONVERSATION_ID,
        sc.SKILLSIGHT_SKILLS_AVAILABLE,
        sc.SKILLSIGHT_COST_USD,
        sc.GEN_AI_OUTPUT_MESSAGES,
    ]
    assert span_tree(spans, keep=keep) == [
        {
            "name": "invoke_agent report-bot",
            "attrs": {
                sc.GEN_AI_OPERATION_NAME: "invoke_agent",
                sc.GEN_AI_CONVERSATION_ID: "conv-1",
                sc.SKILLSIGHT_SKILLS_AVAILABLE: json.dumps(
                    [
                        {"name": "csv-summary", "description": manifest.description},
                        {"name": "other", "description": "Does other things."},
                    ]
                ),
                sc.GEN_AI_USAGE_INPUT_TOKENS: 260,
                sc.GEN_AI_USAGE_OUTPUT_TOKENS: 28,
                sc.SKILLSIGHT_COST_USD: 0.01,
                sc.GEN_AI_OUTPUT_MESSAGES: "133.00",
            },
            "children": [
                {
                    "name": "chat gpt-test",
                    "attrs": {
                        sc.GEN_AI_OPERATION_NAME: "chat",
                        sc.GEN_AI_USAGE_INPUT_TOKENS: 120,
                        sc.GEN_AI_USAGE_OUTPUT_TOKENS: 8,
                        sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 100,
                    },
                    "children": [],
                },
                {
                    "name": "activate_skill csv-summary",
                    "attrs": {
                        sc.GEN_AI_OPERATION_NAME: "activate_skill",
                        sc.SKILLSIGHT_SPAN_KIND: "skill_activation",
                        sc.GEN_AI_SKILL_NAME: "csv-summary",
                        sc.GEN_AI_SKILL_DESCRIPTION: manifest.description,
                        sc.GEN_AI_SKILL_VERSION: manifest.version,
                        sc.SKILLSIGHT_SKILL_ALLOWED_TOOLS: '["Bash(python3:*)", "Read"]',
                        sc.SKILLSIGHT_ACTIVATION_TRIGGER: "manual",
                        sc.SKILLSIGHT_ACTIVATION_INPUT: "Total of sales.csv?",
                        sc.OPENINFERENCE_SPAN_KIND: "AGENT",
                    },
                    "children": [
                        {
                            "name": "execute_tool Bash",
                            "attrs": {
                                sc.GEN_AI_OPERATION_NAME: "execute_tool",
                                sc.GEN_AI_TOOL_CALL_ID: "call-1",
                                sc.GEN_AI_TOOL_CALL_RESULT: "total amount: 133.00",
                            },
                            "children": [],
                        },
                        {
                            "name": "execute_tool Read",
                            "attrs": {
                                sc.GEN_AI_OPERATION_NAME: "execute_tool",
                                sc.GEN_AI_TOOL_CALL_ID: "call-2",
                                sc.GEN_AI_TOOL_CALL_RESULT: "contents",
                            },
                            "children": [],
                        },
                    ],
                },
                {
                    "name": "chat gpt-test",
                    "attrs": {
                        sc.GEN_AI_OPERATION_NAME: "chat",
                        sc.GEN_AI_USAGE_INPUT_TOKENS: 140,
                        sc.GEN_AI_USAGE_OUTPUT_TOKENS: 20,
                        sc.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",),
                    },
                    "children": [],
                },
            ],
        }
    ]


def test_skill_dir_and_explicit_contract(
    tmp_path: Path, memory: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = memory
    project = create_demo_project(tmp_path / "project")
    with skill_activation("csv-summary", skill_dir=project.skill_dir, tracer_provider=provider):
        pass
    with skill_activation(
        "unknown-skill",
        description="Not on disk.",
        allowed_tools=["Read"],
        tracer_provider=provider,
    ):
        pass
    found, unknown = exporter.get_finished_spans()
    assert found.attributes is not None and unknown.attributes is not None
    assert found.attributes[sc.GEN_AI_SKILL_SOURCE_URI] == project.skill_dir.absolute().as_uri()
    assert {
        k: v
        for k, v in unknown.attributes.items()
        if k.startswith(("gen_ai.skill", "skillsight.skill"))
    } == {
        sc.GEN_AI_SKILL_NAME: "unknown-skill",
        sc.GEN_AI_SKILL_DESCRIPTION: "Not on disk.",
        sc.SKILLSIGHT_SKILL_ALLOWED_TOOLS: '["Read"]',
    }


def test_errors_are_recorded_and_propagate(
    memory: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = memory
    with (
        pytest.raises(RuntimeError, match="boom"),
        skill_activation("s", tracer_provider=provider),
        tool_call("Bash", "c1", {"command": "false"}, tracer_provider=provider),
    ):
        raise RuntimeError("boom")
    record_tool_call("Bash", "c2", {}, None, error="exit 1", tracer_provider=provider)
    assert [
        (s.name, s.status.status_code, s.status.description) for s in exporter.get_finished_spans()
    ] == [
        ("execute_tool Bash", StatusCode.ERROR, "RuntimeError: boom"),
        ("activate_skill s", StatusCode.ERROR, "RuntimeError: boom"),
        ("execute_tool Bash", StatusCode.ERROR, "exit 1"),
    ]


def test_decorated_functions_in_concurrent_tasks_and_threads_keep_their_own_children(
    memory: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = memory
    # Both activations are open before either records its call, in every run.
    both_open = asyncio.Barrier(2)

    @skill_activation("alpha", tracer_provider=provider)
    async def alpha() -> str:
        await both_open.wait()
        record_tool_call("Bash", "alpha-1", {}, "a", tracer_provider=provider)
        return "a"

    @skill_activation("beta", tracer_provider=provider)
    async def beta() -> str:
        await both_open.wait()
        record_tool_call("Bash", "beta-1", {}, "b", tracer_provider=provider)
        return "b"

    async def run_both() -> list[str]:
        return list(await asyncio.gather(alpha(), beta()))

    assert asyncio.run(run_both()) == ["a", "b"]

    threads_open = threading.Barrier(2)

    @skill_activation("gamma", tracer_provider=provider)
    def gamma(call_id: str) -> None:
        threads_open.wait(timeout=10)
        record_tool_call("Read", call_id, {}, "g", tracer_provider=provider)

    workers = [threading.Thread(target=gamma, args=(f"gamma-{i}",)) for i in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=10)

    spans = exporter.get_finished_spans()
    tree = span_tree(spans, keep=[sc.GEN_AI_TOOL_CALL_ID])
    shape = sorted(
        (root["name"], [c["attrs"][sc.GEN_AI_TOOL_CALL_ID] for c in root["children"]])
        for root in tree
    )
    assert shape == [
        ("activate_skill alpha", ["alpha-1"]),
        ("activate_skill beta", ["beta-1"]),
        ("activate_skill gamma", ["gamma-0"]),
        ("activate_skill gamma", ["gamma-1"]),
    ]
    assert len({s.context.trace_id for s in spans}) == 4


# --- content capture ------------------------------------------------------------------------


def _tool_result(provider: TracerProvider, exporter: InMemorySpanExporter, **kwargs: Any) -> Any:
    exporter.clear()
    record_tool_call(
        "Bash",
        "c",
        {"command": "cat .env"},
        kwargs.pop("result"),
        tracer_provider=provider,
        **kwargs,
    )
    (span,) = exporter.get_finished_spans()
    assert span.attributes is not None
    return {
        k: span.attributes.get(k)
        for k in (sc.GEN_AI_TOOL_CALL_ARGUMENTS, sc.GEN_AI_TOOL_CALL_RESULT)
    }


def test_content_is_capped_redacted_or_left_out(
    memory: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = memory
    secret = "API_KEY=sk-live-123456"

    def redact(text: str) -> str:
        return text.replace("sk-live-123456", "[REDACTED]")

    assert _tool_result(
        provider, exporter, result="x" * 30, content=ContentPolicy(max_chars=10)
    ) == {
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"command"…[truncated 12 chars]',
        sc.GEN_AI_TOOL_CALL_RESULT: "xxxxxxxxxx…[truncated 20 chars]",
    }
    assert _tool_result(
        provider, exporter, result=secret, content=ContentPolicy(redact=redact)
    ) == {
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"command":"cat .env"}',
        sc.GEN_AI_TOOL_CALL_RESULT: "API_KEY=[REDACTED]",
    }
    assert _tool_result(
        provider, exporter, result=secret, content=ContentPolicy(capture=False)
    ) == {
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: None,
        sc.GEN_AI_TOOL_CALL_RESULT: None,
    }
    # configure() sets the policy everything uses by default
    configure("http://127.0.0.1:9", redact=redact, max_content_chars=12, set_global=False)
    assert _tool_result(provider, exporter, result=secret) == {
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"command":"…[truncated 10 chars]',
        sc.GEN_AI_TOOL_CALL_RESULT: "API_KEY=[RED…[truncated 6 chars]",
    }


def test_capture_settings_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, memory: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = memory
    monkeypatch.setenv("SKILLSIGHT_CAPTURE_CONTENT", "false")
    configure("http://127.0.0.1:9", set_global=False)
    assert _tool_result(provider, exporter, result="out") == {
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: None,
        sc.GEN_AI_TOOL_CALL_RESULT: None,
    }
    # the argument wins over the variable
    configure("http://127.0.0.1:9", capture_content=True, set_global=False)
    assert _tool_result(provider, exporter, result="out")[sc.GEN_AI_TOOL_CALL_RESULT] == "out"


@pytest.mark.parametrize(
    ("kwargs", "env", "message"),
    [
        ({"protocol": "http/json"}, {}, "OTLP protocol 'http/json' is not supported"),
        (
            {},
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"},
            "'carrier-pigeon' is not supported",
        ),
        ({"endpoint": "127.0.0.1:4318"}, {}, "needs a scheme"),
        ({"max_content_chars": 0}, {}, "max_content_chars must be at least 1"),
        ({}, {"SKILLSIGHT_CAPTURE_CONTENT": "maybe"}, "SKILLSIGHT_CAPTURE_CONTENT='maybe'"),
        ({}, {"SKILLSIGHT_MAX_CONTENT_CHARS": "lots"}, "SKILLSIGHT_MAX_CONTENT_CHARS='lots'"),
    ],
)
def test_bad_settings_fail_with_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any], env: dict[str, str], message: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        configure(**kwargs, set_global=False)


def test_grpc_without_its_exporter_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # What an interpreter without the [grpc] extra sees when it imports the exporter.
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.grpc.trace_exporter", None)
    with pytest.raises(ConfigError, match=r"pip install 'skillsight\[grpc\]'"):
        configure("http://127.0.0.1:4317", protocol="grpc", set_global=False)


# --- real OTLP export ----------------------------------------------------------------------------


def _export_one(provider: TracerProvider) -> None:
    with skill_activation("csv-summary", tracer_provider=provider):
        record_tool_call("Bash", "c1", {}, "ok", tracer_provider=provider)
    shutdown()


def test_export_reaches_the_argument_endpoint_with_the_project_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with OtlpCapture() as wanted, OtlpCapture() as from_env:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", from_env.http_endpoint)
        monkeypatch.setenv(
            "OTEL_EXPORTER_OTLP_HEADERS", "x-team=data%20eng,x-skillsight-key=env-key"
        )
        monkeypatch.setenv("OTEL_SERVICE_NAME", "billing-agent")
        _export_one(configure(wanted.http_endpoint, "arg-key", set_global=False))
        received = list(wanted.captures)
        assert from_env.captures == []

    assert [(c.transport, c.content_type) for c in received] == [("http", "application/x-protobuf")]
    assert received[0].headers.get("x-skillsight-key") == "arg-key"
    assert received[0].headers.get("x-team") == "data eng"
    resource = received[0].as_json()["resourceSpans"][0]["resource"]["attributes"]
    assert {"key": "service.name", "value": {"stringValue": "billing-agent"}} in resource
    assert sorted(s["name"] for s in iter_spans(received)) == [
        "activate_skill csv-summary",
        "execute_tool Bash",
    ]


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_export_follows_the_standard_variables(
    monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    with OtlpCapture() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint_for(protocol))
        monkeypatch.setenv("SKILLSIGHT_PROJECT_KEY", "env-key")
        _export_one(configure(set_global=False))
        received = list(receiver.captures)

    assert {c.transport for c in received} == {"grpc" if protocol == "grpc" else "http"}
    assert {c.headers.get("x-skillsight-key") for c in received} == {"env-key"}
    assert len(list(iter_spans(received))) == 2


def test_the_per_signal_endpoint_is_used_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    with OtlpCapture() as receiver, OtlpCapture() as generic:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", generic.http_endpoint)
        monkeypatch.setenv(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{receiver.http_endpoint}/v1/traces"
        )
        _export_one(configure(set_global=False))
        assert len(list(iter_spans(receiver.captures))) == 2
        assert generic.captures == []


def _doc_example(heading: str) -> str:
    text = (Path(__file__).parents[1] / "docs" / "instrumentation.md").read_text()
    section = text.split(f"## {heading}\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_documented_manual_example_runs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    memory: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = memory
    project = create_demo_project(tmp_path / "project")
    monkeypatch.chdir(project.root)
    with OtlpCapture() as receiver:
        configure(receiver.http_endpoint, tracer_provider=provider, set_global=False)
        namespace: dict[str, Any] = {
            "session_id": "s-1",
            "user_request": "Sum the CSV",
            "call_id": "c-1",
            "command": project.command,
            "run_shell": lambda command: project.expected_output,
            "answer": "133.00",
        }
        exec(_doc_example("Manual API"), namespace)
        shutdown()
        exported = sorted(s["name"] for s in iter_spans(receiver.captures))

    tree = span_tree(exporter.get_finished_spans(), keep=[sc.GEN_AI_SKILL_VERSION])
    assert names(tree) == [
        [
            "invoke_agent report-bot",
            ["chat gpt-5", ["activate_skill csv-summary", ["execute_tool shell"]]],
        ]
    ]
    assert tree[0]["children"][1]["attrs"] == {
        sc.GEN_AI_SKILL_VERSION: load_skill(project.skill_dir).version
    }
    assert exported == sorted(
        [
            "invoke_agent report-bot",
            "chat gpt-5",
            "activate_skill csv-summary",
            "execute_tool shell",
        ]
    )
