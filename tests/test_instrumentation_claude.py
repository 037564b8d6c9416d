"""ClaudeAgentSDKInstrumentor on the real Claude Code CLI (its model scripted on 127.0.0.1).

Each test runs a real session through ``claude-agent-sdk`` with the instrumentor installed and
an in-memory exporter, then compares the whole span tree with what the session's own messages
say happened: the tool call ids, the per-call usage, the result's cost, the skill's SKILL.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from demo.scripted_anthropic import ScriptedAnthropic
from demo.workload import (
    DEFAULT_PROMPT,
    ClientKind,
    DemoProject,
    create_demo_project,
    demo_turns,
    run_session,
)
from skillsight import semconv as sc
from skillsight.instrumentation import ClaudeAgentSDKInstrumentor, configure, shutdown
from skillsight.skills import load_skill, skill_version
from tests.support.span_tree import names, span_tree


def _bundled_cli() -> bool:
    spec = importlib.util.find_spec("claude_agent_sdk")
    return bool(
        spec and spec.origin and (Path(spec.origin).parent / "_bundled" / "claude").exists()
    )


def claude_session(test: Any) -> Any:
    """Marks of a test that runs the real CLI."""
    for mark in (
        pytest.mark.claude,
        pytest.mark.slow,
        pytest.mark.timeout(120),
        pytest.mark.skipif(not _bundled_cli(), reason="claude-agent-sdk's bundled CLI is missing"),
    ):
        test = mark(test)
    return test


CHAT_KEYS = (
    sc.GEN_AI_OPERATION_NAME,
    sc.GEN_AI_REQUEST_MODEL,
    sc.GEN_AI_USAGE_INPUT_TOKENS,
    sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
    sc.GEN_AI_RESPONSE_FINISH_REASONS,
)
TOOL_KEYS = (
    sc.GEN_AI_OPERATION_NAME,
    sc.GEN_AI_TOOL_NAME,
    sc.GEN_AI_TOOL_CALL_ID,
    sc.GEN_AI_TOOL_CALL_ARGUMENTS,
    sc.GEN_AI_TOOL_CALL_RESULT,
)
ACTIVATION_KEYS = (
    sc.GEN_AI_OPERATION_NAME,
    sc.SKILLSIGHT_SPAN_KIND,
    sc.GEN_AI_SKILL_NAME,
    sc.GEN_AI_SKILL_DESCRIPTION,
    sc.GEN_AI_SKILL_VERSION,
    sc.GEN_AI_SKILL_SOURCE_URI,
    sc.SKILLSIGHT_SKILL_ALLOWED_TOOLS,
    sc.SKILLSIGHT_ACTIVATION_TRIGGER,
    sc.SKILLSIGHT_ACTIVATION_INPUT,
    sc.SKILLSIGHT_ACTIVATION_CALL_ID,
    sc.OPENINFERENCE_SPAN_KIND,
)
AGENT_KEYS = (
    sc.GEN_AI_OPERATION_NAME,
    sc.GEN_AI_AGENT_NAME,
    sc.GEN_AI_PROVIDER_NAME,
    sc.GEN_AI_CONVERSATION_ID,
    sc.GEN_AI_REQUEST_MODEL,
    sc.SKILLSIGHT_SKILLS_AVAILABLE,
    sc.SKILLSIGHT_COST_USD,
    sc.GEN_AI_USAGE_INPUT_TOKENS,
    sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    sc.GEN_AI_INPUT_MESSAGES,
    sc.GEN_AI_OUTPUT_MESSAGES,
)
KEYS = {"chat": CHAT_KEYS, "execute_tool": TOOL_KEYS, "activate_skill": ACTIVATION_KEYS}


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """The instrumentor installed for the test, its spans in memory."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    instrumentor = ClaudeAgentSDKInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield memory
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def tree(spans: Sequence[ReadableSpan], root: ReadableSpan | None = None) -> list[dict[str, Any]]:
    """The span tree with each kind's key attributes."""

    keys = sorted({k for group in (*KEYS.values(), AGENT_KEYS) for k in group})
    full = span_tree(spans, keep=keys, root=root)

    def trim(node: dict[str, Any]) -> dict[str, Any]:
        op = str(node.get("attrs", {}).get(sc.GEN_AI_OPERATION_NAME, ""))
        wanted = KEYS.get(op, AGENT_KEYS)
        attrs = {k: v for k, v in node.get("attrs", {}).items() if k in wanted}
        return {
            "name": node["name"],
            "attrs": attrs,
            "children": [trim(c) for c in node["children"]],
        }

    return [trim(node) for node in full]


def _messages_of(messages: list[Any], kind: str) -> list[Any]:
    return [m for m in messages if type(m).__name__ == kind]


def expected_tree(project: DemoProject, messages: list[Any], prompt: str) -> list[dict[str, Any]]:
    """What the session's own messages and the skill's SKILL.md say the tree must be."""
    from claude_agent_sdk import ToolUseBlock

    (result,) = _messages_of(messages, "ResultMessage")
    assistant = _messages_of(messages, "AssistantMessage")
    usage_by_call: dict[str, dict[str, Any]] = {}
    for message in assistant:
        usage_by_call.setdefault(message.message_id, message.usage)
    model = assistant[0].model
    skill_call, bash_call = [b for m in assistant for b in m.content if isinstance(b, ToolUseBlock)]
    manifest = load_skill(project.skill_dir)

    def chat(usage: dict[str, Any], finish: str) -> dict[str, Any]:
        return {
            "name": f"chat {model}",
            "attrs": {
                sc.GEN_AI_OPERATION_NAME: "chat",
                sc.GEN_AI_REQUEST_MODEL: model,
                # GenAI's input tokens include the cached ones Anthropic counts apart
                sc.GEN_AI_USAGE_INPUT_TOKENS: usage["input_tokens"]
                + usage["cache_read_input_tokens"]
                + usage["cache_creation_input_tokens"],
                sc.GEN_AI_USAGE_OUTPUT_TOKENS: usage["output_tokens"],
                sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: usage["cache_read_input_tokens"],
                sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: usage["cache_creation_input_tokens"],
                sc.GEN_AI_RESPONSE_FINISH_REASONS: (finish,),
            },
            "children": [],
        }

    def tool(block: Any, result_text: str) -> dict[str, Any]:
        return {
            "name": f"execute_tool {block.name}",
            "attrs": {
                sc.GEN_AI_OPERATION_NAME: "execute_tool",
                sc.GEN_AI_TOOL_NAME: block.name,
                sc.GEN_AI_TOOL_CALL_ID: block.id,
                sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(block.input, separators=(",", ":")),
                sc.GEN_AI_TOOL_CALL_RESULT: result_text,
            },
            "children": [],
        }

    first, second, third = usage_by_call.values()
    skill_load_result = json.dumps(
        {
            "success": True,
            "commandName": project.skill_name,
            "allowedTools": ["Bash(python3:*)", "Read"],
        },
        separators=(",", ":"),
    )
    return [
        {
            "name": "invoke_agent claude-code",
            "attrs": {
                sc.GEN_AI_OPERATION_NAME: "invoke_agent",
                sc.GEN_AI_AGENT_NAME: "claude-code",
                sc.GEN_AI_PROVIDER_NAME: "anthropic",
                sc.GEN_AI_CONVERSATION_ID: result.session_id,
                sc.GEN_AI_REQUEST_MODEL: model,
                sc.SKILLSIGHT_SKILLS_AVAILABLE: json.dumps(
                    [{"name": project.skill_name, "description": manifest.description}]
                ),
                sc.SKILLSIGHT_COST_USD: result.total_cost_usd,
                sc.GEN_AI_USAGE_INPUT_TOKENS: result.usage["input_tokens"]
                + result.usage["cache_read_input_tokens"]
                + result.usage["cache_creation_input_tokens"],
                sc.GEN_AI_USAGE_OUTPUT_TOKENS: result.usage["output_tokens"],
                sc.GEN_AI_INPUT_MESSAGES: prompt,
                sc.GEN_AI_OUTPUT_MESSAGES: result.result,
            },
            "children": [
                chat(first, "tool_use"),
                {
                    "name": f"activate_skill {project.skill_name}",
                    "attrs": {
                        sc.GEN_AI_OPERATION_NAME: "activate_skill",
                        sc.SKILLSIGHT_SPAN_KIND: "skill_activation",
                        sc.GEN_AI_SKILL_NAME: project.skill_name,
                        sc.GEN_AI_SKILL_DESCRIPTION: manifest.description,
                        sc.GEN_AI_SKILL_VERSION: skill_version(project.skill_dir),
                        sc.GEN_AI_SKILL_SOURCE_URI: project.skill_dir.absolute().as_uri(),
                        # as declared in the demo's SKILL.md
                        sc.SKILLSIGHT_SKILL_ALLOWED_TOOLS: '["Bash(python3:*)", "Read"]',
                        sc.SKILLSIGHT_ACTIVATION_TRIGGER: "skill_tool",
                        sc.SKILLSIGHT_ACTIVATION_INPUT: prompt,
                        sc.SKILLSIGHT_ACTIVATION_CALL_ID: skill_call.id,
                        sc.OPENINFERENCE_SPAN_KIND: "AGENT",
                    },
                    "children": [
                        tool(skill_call, skill_load_result),
                        tool(bash_call, project.expected_output),
                    ],
                },
                chat(second, "tool_use"),
                chat(third, "end_turn"),
            ],
        }
    ]


async def _session(
    root: Path, client: ClientKind, prompt: str = DEFAULT_PROMPT
) -> tuple[DemoProject, list[Any]]:
    project = create_demo_project(root)
    with ScriptedAnthropic(demo_turns(project)) as base_url:
        messages = await run_session(
            project, base_url=base_url, client=client, prompt=prompt, timeout_s=90
        )
    return project, messages


@claude_session
@pytest.mark.parametrize("client", ["query", "client"])
def test_skill_activation_holds_the_skill_load_and_its_script_run(
    client: ClientKind, tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    project, messages = asyncio.run(_session(tmp_path / "project", client))

    assert project.expected_output in (messages[-1].result or "")
    spans = exporter.get_finished_spans()
    assert tree(spans) == expected_tree(project, messages, DEFAULT_PROMPT)
    assert len({s.context.trace_id for s in spans}) == 1


@claude_session
def test_concurrent_sessions_in_one_event_loop_keep_their_own_spans(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    prompts: dict[ClientKind, str] = {
        "query": "Total amount in data/sales.csv, please.",
        "client": "Which region sold the most in data/sales.csv?",
    }

    async def both() -> list[tuple[DemoProject, list[Any]]]:
        return list(
            await asyncio.gather(
                *(_session(tmp_path / kind, kind, prompt) for kind, prompt in prompts.items())
            )
        )

    runs = asyncio.run(both())

    spans = exporter.get_finished_spans()
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == 2
    by_conversation = {(r.attributes or {})[sc.GEN_AI_CONVERSATION_ID]: r for r in roots}
    for (project, messages), prompt in zip(runs, prompts.values(), strict=True):
        (result,) = _messages_of(messages, "ResultMessage")
        root = by_conversation[result.session_id]
        in_trace = [s for s in spans if s.context.trace_id == root.context.trace_id]
        assert tree(in_trace) == expected_tree(project, messages, prompt)


@claude_session
def test_a_skill_used_inside_a_subagent_nests_under_the_subagent(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    from demo.scenarios import mismatches, run_scenario_async

    result = asyncio.run(run_scenario_async("subagent_skill", workdir=tmp_path))
    assert mismatches(result) == []

    spans = exporter.get_finished_spans()
    calls = {c.name: c for c in result.calls}
    model = next(m.model for m in result.messages if type(m).__name__ == "AssistantMessage")
    chat = f"chat {model}"
    assert names(span_tree(spans)) == [
        [
            "invoke_agent claude-code",
            [
                chat,
                [
                    "execute_tool Agent",
                    [
                        [
                            "invoke_agent data-analyst",
                            [
                                chat,
                                [
                                    "activate_skill csv-summary",
                                    ["execute_tool Skill", "execute_tool Bash"],
                                ],
                                chat,
                            ],
                        ]
                    ],
                ],
                chat,
            ],
        ]
    ]
    by_name = {s.name: s for s in spans}
    subagent = by_name["invoke_agent data-analyst"]
    activation = by_name["activate_skill csv-summary"]
    assert (subagent.attributes or {})[sc.GEN_AI_CONVERSATION_ID] == result.session_id
    assert (activation.attributes or {})[sc.GEN_AI_SKILL_VERSION] == skill_version(
        result.scenario.root / ".claude" / "skills" / "csv-summary"
    )
    assert {
        attrs[sc.GEN_AI_TOOL_NAME]: attrs[sc.GEN_AI_TOOL_CALL_ID]
        for attrs in (s.attributes or {} for s in spans)
        if sc.GEN_AI_TOOL_NAME in attrs
    } == {name: call.tool_use_id for name, call in calls.items()}


def test_uninstrument_restores_the_sdk() -> None:
    import claude_agent_sdk
    from claude_agent_sdk import ClaudeSDKClient

    methods = ("connect", "query", "receive_messages", "disconnect")
    before = (claude_agent_sdk.query, *(ClaudeSDKClient.__dict__[m] for m in methods))
    instrumentor = ClaudeAgentSDKInstrumentor()
    instrumentor.instrument(tracer_provider=TracerProvider())
    during = (claude_agent_sdk.query, *(ClaudeSDKClient.__dict__[m] for m in methods))
    assert all(a is not b for a, b in zip(before, during, strict=True))
    with pytest.raises(RuntimeError, match="already instrumented"):
        ClaudeAgentSDKInstrumentor().instrument()
    instrumentor.uninstrument()
    after = (claude_agent_sdk.query, *(ClaudeSDKClient.__dict__[m] for m in methods))
    assert after == before
    assert not instrumentor.is_instrumented


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@claude_session
def test_broken_telemetry_leaves_the_agents_answer_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing listens at the endpoint and the redaction hook raises: the agent answers anyway."""
    monkeypatch.delenv("SKILLSIGHT_INSTRUMENTATION_STRICT", raising=False)

    def broken_redactor(text: str) -> str:
        raise ValueError("redactor bug")

    provider = configure(
        f"http://127.0.0.1:{_unused_port()}",
        project_key="k",
        redact=broken_redactor,
        export_timeout_s=0.5,
        set_global=False,
    )
    instrumentor = ClaudeAgentSDKInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        project, messages = asyncio.run(_session(tmp_path / "project", "query"))
    finally:
        instrumentor.uninstrument()
        with contextlib.suppress(Exception):
            shutdown()

    (result,) = _messages_of(messages, "ResultMessage")
    assert not result.is_error
    assert result.result == (
        f"The {project.skill_name} skill summarised data/sales.csv:\n\n{project.expected_output}"
    )
    assert any(r.exc_info and "redactor bug" in str(r.exc_info[1]) for r in caplog.records)


@claude_session
def test_a_client_connection_is_one_agent_span_across_its_turns(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    import claude_agent_sdk
    from claude_agent_sdk import ClaudeAgentOptions, HookMatcher

    from demo.session import session_env

    seen_by_user_hook: list[str] = []

    async def user_hook(hook_input: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        seen_by_user_hook.append(str(tool_use_id))
        return {}

    user_hooks: Any = {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[user_hook])]}

    project = create_demo_project(tmp_path / "project")
    config_dir = tmp_path / "claude-config"
    config_dir.mkdir()
    prompts = (DEFAULT_PROMPT, "Thanks! Anything else?")

    async def two_turns() -> list[Any]:
        with ScriptedAnthropic(demo_turns(project)) as base_url:
            options = ClaudeAgentOptions(
                cwd=str(project.root),
                setting_sources=["project"],
                skills=[project.skill_name],
                allowed_tools=["Bash(python3:*)", "Read"],
                env=session_env(base_url, config_dir),
                max_turns=8,
                hooks=user_hooks,
            )
            results: list[Any] = []
            async with claude_agent_sdk.ClaudeSDKClient(options=options) as client:
                # ours were added to a copy: the caller's options are as they were
                assert client.options is options and options.hooks is user_hooks
                assert [len(v) for v in user_hooks.values()] == [1]
                for prompt in prompts:
                    await client.query(prompt)
                    async for message in client.receive_response():
                        if type(message).__name__ == "ResultMessage":
                            results.append(message)
            return results

    first, second = asyncio.run(asyncio.wait_for(two_turns(), 90))

    bash_calls = [
        (s.attributes or {}).get(sc.GEN_AI_TOOL_CALL_ID)
        for s in exporter.get_finished_spans()
        if s.name == "execute_tool Bash"
    ]
    assert seen_by_user_hook == bash_calls  # the user's own hook still ran, beside ours

    spans = exporter.get_finished_spans()
    model = f"chat {next(iter(first.model_usage))}"
    assert names(span_tree(spans)) == [
        [
            "invoke_agent claude-code",
            [
                model,
                ["activate_skill csv-summary", ["execute_tool Skill", "execute_tool Bash"]],
                model,
                model,
                model,  # the second turn: an answer without tools
            ],
        ]
    ]
    by_name = {s.name: s for s in spans}
    root = by_name["invoke_agent claude-code"].attributes or {}
    # The CLI reports the session's running cost; usage is per turn, so the span sums it.
    assert root[sc.SKILLSIGHT_COST_USD] == second.total_cost_usd
    assert root[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == (
        first.usage["output_tokens"] + second.usage["output_tokens"]
    )
    assert root[sc.GEN_AI_INPUT_MESSAGES] == DEFAULT_PROMPT
    activation = by_name["activate_skill csv-summary"]
    last_chat = max((s for s in spans if s.name == model), key=lambda s: s.start_time or 0)
    assert (activation.end_time or 0) <= (last_chat.start_time or 0)
