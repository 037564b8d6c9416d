"""The Claude Agent SDK session tracker fed hook inputs and SDK messages directly (no CLI).

The live tests (``test_instrumentation_claude.py``) cover the paths a scripted session takes;
these cover the ones it cannot easily take: calls the CLI answers without a PostToolUse hook,
sessions whose hooks never fire, skills read as files, parallel subagents, skills not on disk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from demo.workload import DemoProject, create_demo_project
from skillsight import semconv as sc
from skillsight.instrumentation._claude_session import ClaudeSession
from skillsight.instrumentation._spans import SpanEmitter
from skillsight.skills import skill_version
from tests.support.span_tree import names, span_tree

MODEL = "claude-test"


@pytest.fixture
def project(tmp_path: Path) -> DemoProject:
    return create_demo_project(tmp_path / "project")


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def _session(exporter: InMemorySpanExporter, project: DemoProject) -> ClaudeSession:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return ClaudeSession(SpanEmitter(provider), agent_name="claude-code", cwd=str(project.root))


def pre(
    name: str, call_id: str, tool_input: dict[str, Any], agent: str | None = None
) -> dict[str, Any]:
    hook = {
        "hook_event_name": "PreToolUse",
        "tool_name": name,
        "tool_input": tool_input,
        "tool_use_id": call_id,
    }
    return {**hook, "agent_id": agent} if agent else hook


def post(call_id: str, response: Any, agent: str | None = None) -> dict[str, Any]:
    hook = {"hook_event_name": "PostToolUse", "tool_use_id": call_id, "tool_response": response}
    return {**hook, "agent_id": agent} if agent else hook


def assistant(*blocks: Any, message_id: str, parent: str | None = None) -> AssistantMessage:
    return AssistantMessage(list(blocks), MODEL, parent_tool_use_id=parent, message_id=message_id)


def result() -> ResultMessage:
    return ResultMessage("success", 10, 5, False, 3, "sess-1", total_cost_usd=0.5, result="done")


def test_a_call_answered_without_a_post_hook_ends_with_its_result_message(
    exporter: InMemorySpanExporter, project: DemoProject
) -> None:
    session = _session(exporter, project)
    session.handle_hook(pre("Skill", "c1", {"skill": "csv-summary"}))
    session.handle_hook(post("c1", {"success": True}))
    session.handle_hook(pre("Bash", "c2", {"command": "rm -rf /"}))
    session.handle_message(
        UserMessage([ToolResultBlock("c2", "Permission to use Bash denied", is_error=True)])
    )
    session.handle_message(result())
    session.end()

    spans = exporter.get_finished_spans()
    assert names(span_tree(spans)) == [
        [
            "invoke_agent claude-code",
            [["activate_skill csv-summary", ["execute_tool Skill", "execute_tool Bash"]]],
        ]
    ]
    (bash,) = [s for s in spans if s.name == "execute_tool Bash"]
    assert (bash.status.status_code, bash.status.description) == (
        StatusCode.ERROR,
        "Permission to use Bash denied",
    )


def test_calls_no_hook_reported_get_their_spans_from_the_messages(
    exporter: InMemorySpanExporter, project: DemoProject
) -> None:
    session = _session(exporter, project)
    session.handle_message(
        assistant(
            TextBlock("Using the skill."),
            ToolUseBlock("c1", "Skill", {"skill": "csv-summary"}),
            message_id="m1",
        )
    )
    session.handle_message(UserMessage([ToolResultBlock("c1", "Launching skill: csv-summary")]))
    session.handle_message(
        assistant(ToolUseBlock("c2", "Bash", {"command": project.command}), message_id="m2")
    )
    session.handle_message(UserMessage([ToolResultBlock("c2", project.expected_output)]))
    session.handle_message(assistant(TextBlock("The totals."), message_id="m3"))
    session.handle_message(result())
    session.end()

    spans = exporter.get_finished_spans()
    chat = f"chat {MODEL}"
    assert names(span_tree(spans)) == [
        [
            "invoke_agent claude-code",
            [
                chat,
                ["activate_skill csv-summary", ["execute_tool Skill", "execute_tool Bash"]],
                chat,
                chat,
            ],
        ]
    ]
    (bash,) = [s for s in spans if s.name == "execute_tool Bash"]
    assert bash.attributes is not None
    assert bash.attributes[sc.GEN_AI_TOOL_CALL_RESULT] == project.expected_output


def test_reading_skill_files_starts_activations_once_per_skill(
    exporter: InMemorySpanExporter, project: DemoProject
) -> None:
    skill_md = str(project.skill_dir / "SKILL.md")
    other_md = str(project.root / ".claude" / "skills" / "other" / "SKILL.md")
    session = _session(exporter, project)
    for call_id, tool, tool_input in [
        ("c1", "Read", {"file_path": skill_md}),
        ("c2", "Read", {"file_path": skill_md}),  # the active skill again: same activation
        ("c3", "Bash", {"command": project.command}),
        ("c4", "Read", {"file_path": other_md}),  # another skill (not on disk): a new one
    ]:
        session.handle_hook(pre(tool, call_id, tool_input))
        session.handle_hook(post(call_id, "ok"))
    session.handle_hook({"hook_event_name": "Stop"})
    session.handle_hook(pre("Bash", "c5", {"command": "ls"}))  # after the turn: no activation
    session.handle_hook(post("c5", "ok"))
    session.end()

    spans = exporter.get_finished_spans()
    assert names(span_tree(spans)) == [
        [
            "invoke_agent claude-code",
            [
                [
                    "activate_skill csv-summary",
                    ["execute_tool Read", "execute_tool Read", "execute_tool Bash"],
                ],
                ["activate_skill other", ["execute_tool Read"]],
                "execute_tool Bash",
            ],
        ]
    ]
    skills = {
        s.name: {k: v for k, v in (s.attributes or {}).items() if k.startswith("gen_ai.skill")}
        for s in spans
        if s.name.startswith("activate_skill")
    }
    assert skills["activate_skill other"] == {sc.GEN_AI_SKILL_NAME: "other"}
    assert skills["activate_skill csv-summary"][sc.GEN_AI_SKILL_VERSION] == skill_version(
        project.skill_dir
    )
    triggers = {
        (s.attributes or {}).get(sc.SKILLSIGHT_ACTIVATION_TRIGGER)
        for s in spans
        if s.name.startswith("activate")
    }
    assert triggers == {"read_skill_md"}


def test_parallel_subagents_each_get_their_own_span_and_activations(
    exporter: InMemorySpanExporter, project: DemoProject
) -> None:
    session = _session(exporter, project)
    session.handle_hook(pre("Task", "t1", {"subagent_type": "analyst", "prompt": "sum it"}))
    session.handle_hook(pre("Task", "t2", {"subagent_type": "writer", "prompt": "write it"}))
    # started in the other order than called: matched by type, not by arrival
    session.handle_hook(
        {"hook_event_name": "SubagentStart", "agent_id": "w", "agent_type": "writer"}
    )
    session.handle_hook(
        {"hook_event_name": "SubagentStart", "agent_id": "a", "agent_type": "analyst"}
    )
    session.handle_hook(pre("Skill", "a1", {"skill": "csv-summary"}, agent="a"))
    session.handle_hook(pre("Bash", "w1", {"command": "echo draft"}, agent="w"))
    session.handle_hook(post("w1", {"stdout": "draft"}, agent="w"))
    session.handle_hook(post("a1", {"success": True}, agent="a"))
    session.handle_hook(pre("Bash", "a2", {"command": project.command}, agent="a"))
    session.handle_hook(post("a2", {"stdout": project.expected_output}, agent="a"))
    session.handle_message(assistant(TextBlock("draft done"), message_id="mw", parent="t2"))
    session.handle_hook(
        {"hook_event_name": "SubagentStop", "agent_id": "w", "last_assistant_message": "draft done"}
    )
    session.handle_hook(post("t2", "draft done"))
    session.handle_hook(
        {"hook_event_name": "SubagentStop", "agent_id": "a", "last_assistant_message": "133"}
    )
    session.handle_hook(post("t1", "133"))
    session.end()

    spans = exporter.get_finished_spans()
    assert names(span_tree(spans)) == [
        [
            "invoke_agent claude-code",
            [
                [
                    "execute_tool Task",
                    [
                        [
                            "invoke_agent analyst",
                            [
                                [
                                    "activate_skill csv-summary",
                                    ["execute_tool Skill", "execute_tool Bash"],
                                ]
                            ],
                        ]
                    ],
                ],
                [
                    "execute_tool Task",
                    [["invoke_agent writer", ["execute_tool Bash", f"chat {MODEL}"]]],
                ],
            ],
        ]
    ]
    (analyst,) = [s for s in spans if s.name == "activate_skill csv-summary"]
    assert analyst.attributes is not None
    # inside a subagent, the request is the prompt its Task call gave it
    assert analyst.attributes[sc.SKILLSIGHT_ACTIVATION_INPUT] == "sum it"


def test_a_skill_found_only_through_the_folder_the_cli_names(
    exporter: InMemorySpanExporter, project: DemoProject, tmp_path: Path
) -> None:
    plugin_skill = tmp_path / "plugins" / "tools" / "skills" / "csv-summary"
    plugin_skill.parent.mkdir(parents=True)
    project.skill_dir.rename(plugin_skill)
    session = _session(exporter, project)
    session.handle_hook(pre("Skill", "c1", {"skill": "tools:csv-summary"}))
    session.handle_hook(post("c1", {"success": True}))
    session.handle_message(
        UserMessage(
            [TextBlock(f"Base directory for this skill: {plugin_skill}\n\n# CSV summary\n")]
        )
    )
    session.end()

    (activation,) = [s for s in exporter.get_finished_spans() if s.name.startswith("activate")]
    assert activation.name == "activate_skill tools:csv-summary"
    assert activation.attributes is not None
    assert activation.attributes[sc.GEN_AI_SKILL_VERSION] == skill_version(plugin_skill)
    assert activation.attributes[sc.GEN_AI_SKILL_SOURCE_URI] == plugin_skill.as_uri()


def test_bad_hook_input_is_logged_not_raised_unless_strict(
    exporter: InMemorySpanExporter,
    project: DemoProject,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import asyncio

    session = _session(exporter, project)
    hook = session.hooks(None)["PreToolUse"][-1].hooks[0]
    garbage: Any = {
        "hook_event_name": "PreToolUse",
        "tool_name": "Skill",
        "tool_input": ["not", "a", "dict"],
    }
    monkeypatch.delenv("SKILLSIGHT_INSTRUMENTATION_STRICT", raising=False)
    assert asyncio.run(hook(garbage, "c1", {"signal": None})) == {}
    assert any("Claude Agent SDK hook" in r.getMessage() for r in caplog.records)
    monkeypatch.setenv("SKILLSIGHT_INSTRUMENTATION_STRICT", "1")
    with pytest.raises(AttributeError):
        asyncio.run(hook(garbage, "c1", {"signal": None}))


def test_a_skill_that_fails_to_load_is_a_failed_activation(
    exporter: InMemorySpanExporter, project: DemoProject
) -> None:
    session = _session(exporter, project)
    session.handle_hook(pre("Skill", "c1", {"skill": "no-such-skill"}))
    session.handle_hook(
        {"hook_event_name": "PostToolUseFailure", "tool_use_id": "c1", "error": "Unknown skill"}
    )
    session.handle_hook({"hook_event_name": "Stop"})
    session.end()

    statuses = {
        s.name: (s.status.status_code, s.status.description)
        for s in exporter.get_finished_spans()
        if s.parent is not None
    }
    assert statuses == {
        "execute_tool Skill": (StatusCode.ERROR, "Unknown skill"),
        "activate_skill no-such-skill": (StatusCode.ERROR, "the skill failed to load"),
    }


def _canonical(tree: list[dict[str, Any]]) -> list[Any]:
    """The tree with siblings sorted by name: the shape, whatever the start times."""
    return sorted(
        ([node["name"], node.get("attrs", {}), _canonical(node["children"])] for node in tree),
        key=lambda item: (item[0], json.dumps(item[1], sort_keys=True, default=str)),
    )


def test_messages_read_late_give_the_same_tree(project: DemoProject) -> None:
    """Hooks arrive on time, messages when the caller reads them: the lag changes nothing."""
    from benchmarks.overhead import synthetic_session

    events = synthetic_session(project, tool_calls=2)
    keep = [sc.GEN_AI_TOOL_CALL_ID, sc.GEN_AI_TOOL_CALL_RESULT, sc.GEN_AI_USAGE_INPUT_TOKENS]
    trees = []
    for order in (
        events,
        [e for e in events if e[0] == "hook"] + [e for e in events if e[0] == "message"],
    ):
        exporter = InMemorySpanExporter()
        session = _session(exporter, project)
        for kind, event in order:
            if kind == "hook":
                session.handle_hook(event)
            else:
                session.handle_message(event)
        session.end()
        trees.append(_canonical(span_tree(exporter.get_finished_spans(), keep=keep)))
    on_time, late = trees
    assert late == on_time
    assert [name for name, _, _ in on_time[0][2]].count("chat claude-sonnet-4-5") == 4


def test_user_skills_are_found_under_the_clis_config_dir(
    exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """A skill installed for the user (``$CLAUDE_CONFIG_DIR/skills``), not in the project."""
    from claude_agent_sdk import ClaudeAgentOptions

    from skillsight.instrumentation import ClaudeAgentSDKInstrumentor

    elsewhere = create_demo_project(tmp_path / "elsewhere")
    config_dir = tmp_path / "claude-config"
    (config_dir / "skills").mkdir(parents=True)
    user_skill = elsewhere.skill_dir.rename(config_dir / "skills" / "csv-summary")
    empty_project = tmp_path / "project"
    empty_project.mkdir()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = ClaudeAgentSDKInstrumentor()
    instrumentor._tracer_provider = provider
    options = ClaudeAgentOptions(cwd=str(empty_project), env={"CLAUDE_CONFIG_DIR": str(config_dir)})
    session = instrumentor._new_session(options)
    assert session is not None
    session.handle_hook(pre("Skill", "c1", {"skill": "csv-summary"}))
    session.end()

    (activation,) = [s for s in exporter.get_finished_spans() if s.name.startswith("activate")]
    assert (activation.attributes or {})[sc.GEN_AI_SKILL_SOURCE_URI] == user_skill.as_uri()
