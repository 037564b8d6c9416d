"""The scenario library: every scenario played once with the real Claude Code CLI.

The live tests check the *workload*, not skillsight: the tool calls the CLI really executed
(from the SDK messages, subagent calls included, in the order the model made them), that each
skill script really ran (its exact output came back as the tool result), and the final answer.
All scenarios run concurrently in one module-scoped batch. The capture tests check that the
recorded fixtures under ``tests/fixtures/captures/scenarios/`` still match the scenarios.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from demo.scenario_library import subagent_report
from demo.scenarios import (
    ISSUE_3_SCENARIOS,
    ISSUE_5_SCENARIOS,
    ISSUE_10_SCENARIOS,
    SCENARIOS,
    ScenarioResult,
    build_scenario,
    executed_facts,
    main,
    run_scenarios_async,
)
from demo.scripted_anthropic import MAIN_AGENT
from tests.harness.otlp_capture import Capture, iter_log_records, iter_spans
from tests.harness.scenario_captures import load_capture


def _bundled_cli() -> bool:
    spec = importlib.util.find_spec("claude_agent_sdk")
    return (
        spec is not None
        and spec.origin is not None
        and (Path(spec.origin).parent / "_bundled" / "claude").exists()
    )


requires_claude = pytest.mark.skipif(
    not _bundled_cli(), reason="claude-agent-sdk with its bundled CLI is not installed"
)


# --- the library itself (no CLI) ---------------------------------------------------------------


def test_the_library_holds_the_scenarios_the_issues_need() -> None:
    assert list(SCENARIOS) == [*ISSUE_3_SCENARIOS, *ISSUE_5_SCENARIOS, *ISSUE_10_SCENARIOS]
    assert ISSUE_3_SCENARIOS == (
        "one_skill",
        "two_skills",
        "read_skill_md",
        "subagent_skill",
        "no_skill",
        "tool_error",
    )
    assert ISSUE_5_SCENARIOS == (
        "allowed_tools_violation",
        "distractor",
        "skipped_script",
        "security",
    )
    assert ISSUE_10_SCENARIOS == ("secret_in_command",)


def test_expected_activations(tmp_path: Path) -> None:
    def summary(name: str) -> list[tuple[str, str, str, str, list[str], bool]]:
        scenario = build_scenario(name, tmp_path / name)
        return [
            (a.skill, a.trigger, a.start.name, a.agent, [c.name for c in a.tool_calls], a.has_error)
            for a in scenario.expected.activations
        ]

    assert {name: summary(name) for name in SCENARIOS} == {
        "one_skill": [("csv-summary", "skill_tool", "Skill", "main", ["Bash"], False)],
        "two_skills": [
            ("csv-summary", "skill_tool", "Skill", "main", ["Bash"], False),
            ("unit-price", "skill_tool", "Skill", "main", ["Bash"], False),
        ],
        "read_skill_md": [("csv-summary", "read_skill_md", "Read", "main", ["Bash"], False)],
        "subagent_skill": [("csv-summary", "subagent", "Agent", "data-analyst", ["Bash"], False)],
        "no_skill": [],
        "tool_error": [("csv-summary", "skill_tool", "Skill", "main", ["Bash", "Bash"], True)],
        "allowed_tools_violation": [
            ("sales-report", "skill_tool", "Skill", "main", ["Read", "Bash"], False)
        ],
        "distractor": [("release-notes", "skill_tool", "Skill", "main", ["Bash"], False)],
        "skipped_script": [("csv-summary", "skill_tool", "Skill", "main", ["Read"], False)],
        "security": [("deploy-check", "skill_tool", "Skill", "main", ["Bash", "Bash"], False)],
        "secret_in_command": [("release-publish", "skill_tool", "Skill", "main", ["Bash"], False)],
    }


def test_tool_use_ids_are_unique_across_scenarios(tmp_path: Path) -> None:
    ids = [
        call.tool_use_id
        for name in SCENARIOS
        for call in build_scenario(name, tmp_path / name).expected.tool_calls
    ]
    assert len(ids) == len(set(ids)) and all(i.startswith("toolu_01") for i in ids)


def test_unknown_scenario_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown scenario 'nope'; known: one_skill, "):
        build_scenario("nope", tmp_path)


def test_subagent_report_unwraps_the_hand_back_frame() -> None:
    # The Agent tool result as Claude Code 2.1.330 returns it (ids shortened).
    raw = (
        "<tools-used-before-summary>Bash, Skill</tools-used-before-summary>\n  \n"
        "[Subagent hand-back] The text below is the final report of a subagent. "
        "The report follows:\n"
        "  csv-summary output:\n  rows: 5\n\n  total: 133.00\n"
        "agentId: a711 (use SendMessage with to: 'a711')\n<usage>tool_uses: 2</usage>"
    )
    assert subagent_report(raw) == "csv-summary output:\nrows: 5\n\ntotal: 133.00"
    assert subagent_report("  plain text  ") == "plain text"


def test_cli_lists_every_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == list(SCENARIOS)


def test_cli_refuses_an_unknown_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--run", "nope"])
    assert exit_info.value.code == 2
    assert "--run takes one of: all, one_skill" in capsys.readouterr().err


# --- recorded captures -------------------------------------------------------------------------


def _load(name: str) -> tuple[dict[str, Any], list[Capture], list[Capture]]:
    capture = load_capture(name)
    native = [capture.native_traces, capture.native_logs]
    return capture.manifest, native, [capture.openinference_traces]


def _ordered_tool_ids(spans: list[dict[str, Any]], id_key: str) -> list[str]:
    tools = [s for s in spans if s["attrs"].get(id_key)]
    tools.sort(key=lambda s: int(s["startTimeUnixNano"]))
    return [s["attrs"][id_key] for s in tools if s["name"] != "claude_code.tool.execution"]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_capture_matches_its_scenario(name: str) -> None:
    manifest, native, oi = _load(name)
    scenario = build_scenario(name, Path(manifest["project_root"]))
    expected = scenario.expected
    assert manifest["expected"] == json.loads(json.dumps(expected.to_json()))
    want = [
        {
            "tool_use_id": c.tool_use_id,
            "name": c.name,
            "key": c.key,
            "agent": c.agent,
            "is_error": c.is_error,
        }
        for c in expected.tool_calls
    ]
    for run in ("claude_code", "openinference"):
        assert manifest["runs"][run]["tool_calls"] == want
        assert manifest["runs"][run]["result_text"] == expected.final_answer

    ids = [c.tool_use_id for c in expected.tool_calls]
    native_spans = list(iter_spans(native))
    assert _ordered_tool_ids(native_spans, "tool_use_id") == ids
    assert {s["attrs"]["session.id"] for s in native_spans} == {
        manifest["runs"]["claude_code"]["session_id"]
    }
    assert _ordered_tool_ids(list(iter_spans(oi)), "tool.id") == ids

    # What Claude Code logs as skill activations: one per Skill call, none for a Read of
    # SKILL.md (the read_skill_md scenario is invisible to this event).
    activated = [
        r["attrs"]["skill.name"]
        for r in iter_log_records(native)
        if r["attrs"].get("event.name") == "skill_activated"
    ]
    assert activated == [c.key for c in expected.tool_calls if c.name == "Skill"]


# --- live runs ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def played(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict[str, ScenarioResult], int]]:
    """Every scenario, played once, three at a time, under a counting instrumentation."""
    import claude_agent_sdk

    entered = 0

    @contextlib.contextmanager
    def counting() -> Iterator[None]:
        # What an instrumentor does: replace the SDK entry point while active.
        nonlocal entered
        original = claude_agent_sdk.query

        def query(*args: Any, **kwargs: Any) -> Any:
            nonlocal entered
            entered += 1
            return original(*args, **kwargs)

        claude_agent_sdk.query = query
        try:
            yield
        finally:
            claude_agent_sdk.query = original

    workdir = tmp_path_factory.mktemp("scenarios")
    results = asyncio.run(
        run_scenarios_async(
            list(SCENARIOS), workdir, concurrency=3, instrumentation=counting, timeout_s=75
        )
    )
    yield results, entered


@pytest.mark.claude
@pytest.mark.slow
@requires_claude
@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_plays_as_scripted(
    name: str, played: tuple[dict[str, ScenarioResult], int]
) -> None:
    result = played[0][name]
    expected = result.scenario.expected
    assert executed_facts(result) == [
        (c.tool_use_id, c.name, c.key, c.agent, c.is_error) for c in expected.tool_calls
    ]
    # The scripts really ran: their exact output came back as the tool result.
    ran = {c.tool_use_id: (c.result or "").strip() for c in result.calls}
    scripted = {c.tool_use_id: c.result for c in expected.tool_calls if c.result is not None}
    assert {call_id: ran.get(call_id) for call_id in scripted} == scripted
    assert result.transcript.result_text == expected.final_answer
    assert not result.transcript.is_error
    served = {
        agent: sorted({r.turn for r in result.requests if r.agent == agent and r.turn is not None})
        for agent in {MAIN_AGENT, *result.scenario.subagents}
    }
    assert served == {
        MAIN_AGENT: list(range(len(result.scenario.turns))),
        **{a: list(range(len(s.turns))) for a, s in result.scenario.subagents.items()},
    }


@pytest.mark.claude
@pytest.mark.slow
@requires_claude
def test_caller_instrumentation_wraps_every_session(
    played: tuple[dict[str, ScenarioResult], int],
) -> None:
    results, entered = played
    assert entered == len(results) == len(SCENARIOS)


@pytest.mark.claude
@pytest.mark.slow
@requires_claude
def test_subagent_requests_are_routed_and_preload_the_listed_skill(
    played: tuple[dict[str, ScenarioResult], int],
) -> None:
    result = played[0]["subagent_skill"]
    subagent = [r for r in result.requests if r.agent == "data-analyst"]
    assert subagent and all(r.kind == "main" for r in subagent)
    first = min(subagent, key=lambda r: r.turn or 0)
    assert sorted(t["name"] for t in first.body["tools"]) == ["Bash", "Read", "Skill"]
    # The definition's `skills:` line makes the CLI put the skill body into the first
    # subagent message, before any Skill call.
    assert "<command-name>csv-summary</command-name>" in json.dumps(first.body["messages"])


@pytest.mark.claude
@pytest.mark.slow
@requires_claude
def test_security_scenario_touches_nothing_real(
    played: tuple[dict[str, ScenarioResult], int],
) -> None:
    scenario = played[0]["security"].scenario
    assert scenario.outside_dir is not None
    assert not scenario.outside_dir.is_relative_to(scenario.root)
    assert list(scenario.outside_dir.iterdir()) == []


def _events(logs: list[Capture], name: str) -> list[dict[str, Any]]:
    return [r["attrs"] for r in iter_log_records(logs) if r["attrs"].get("event.name") == name]


def test_native_capture_subagent_spans_nest_under_the_agent_call() -> None:
    manifest, native, _ = _load("subagent_skill")
    spans = list(iter_spans(native))
    by_id = {s["spanId"]: s for s in spans}
    (agent_tool,) = [s for s in spans if s["attrs"].get("tool_name") == "Agent"]
    (execution,) = [
        s
        for s in spans
        if s["name"] == "claude_code.tool.execution" and s["parentSpanId"] == agent_tool["spanId"]
    ]
    inside = [s for s in spans if s.get("parentSpanId") == execution["spanId"]]
    session = manifest["runs"]["claude_code"]["session_id"]
    agent_ids = {s["attrs"]["agent_id"] for s in inside}
    assert agent_tool["attrs"]["subagent_type"] == "data-analyst"
    assert sorted((s["name"], s["attrs"].get("tool_name")) for s in inside) == [
        ("claude_code.llm_request", None),
        ("claude_code.llm_request", None),
        ("claude_code.llm_request", None),
        ("claude_code.tool", "Bash"),
        ("claude_code.tool", "Skill"),
    ]
    assert len(agent_ids) == 1 and agent_ids != {session}
    assert {s["attrs"]["gen_ai.conversation.id"] for s in inside} == agent_ids
    assert {s["attrs"]["session.id"] for s in inside} == {session}
    assert by_id[agent_tool["parentSpanId"]]["name"] == "claude_code.interaction"
    (completed,) = _events(native, "subagent_completed")
    assert (completed["agent_type"], completed["agent.source"], completed["agent_id"]) == (
        "data-analyst",
        "projectSettings",
        agent_ids.pop(),
    )
    assert [
        (e["skill.name"], e["invocation_trigger"]) for e in _events(native, "skill_activated")
    ] == [("csv-summary", "nested-skill")]


def test_native_capture_read_of_skill_md_names_no_skill() -> None:
    manifest, native, _ = _load("read_skill_md")
    (read,) = [s for s in iter_spans(native) if s["attrs"].get("tool_name") == "Read"]
    skill_md = manifest["project_root"] + "/.claude/skills/csv-summary/SKILL.md"
    assert read["attrs"]["file_path"] == skill_md
    assert "skill_name" not in read["attrs"]
    (output,) = [e for e in read["events"] if e["name"] == "tool.output"]
    content = {a["key"]: a["value"]["stringValue"] for a in output["attributes"]}["content"]
    assert content.startswith("---\nname: csv-summary\n")
    assert _events(native, "skill_activated") == []


def test_native_capture_second_skill_is_nested_skill() -> None:
    _, native, _ = _load("two_skills")
    assert [
        (e["skill.name"], e["invocation_trigger"]) for e in _events(native, "skill_activated")
    ] == [
        ("csv-summary", "claude-proactive"),
        ("unit-price", "nested-skill"),
    ]


def test_native_capture_failed_bash_marks_its_execution_span() -> None:
    manifest, native, _ = _load("tool_error")
    failed = manifest["expected"]["tool_calls"][1]["tool_use_id"]
    spans = [s for s in iter_spans(native) if s["attrs"].get("tool_use_id") == failed]
    assert sorted((s["name"], s.get("status", {}).get("code", 0)) for s in spans) == [
        ("claude_code.tool", 0),
        ("claude_code.tool.execution", 2),
    ]
    (result,) = [e for e in _events(native, "tool_result") if e["tool_use_id"] == failed]
    assert (result["success"], result["error"]) == ("false", "Shell command failed")
