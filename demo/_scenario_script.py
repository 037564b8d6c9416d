"""How the scenario factories write a scenario: model script and expected facts in one pass.

A :class:`ScenarioScript` collects a scenario's project files and its tool calls in the order
the model makes them, giving each a fixed tool-use id, so the scripted calls and the expected
calls cannot drift apart. Answers that quote a tool's output are computed from the request the
CLI sends (the real tool result), and the expected answer from the script's known output: if
the script did not run as scripted, the answer differs and the scenario fails.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from demo import _project_files as files
from demo.scenario_types import (
    ExpectedActivation,
    ExpectedCall,
    ExpectedEvaluation,
    ExpectedFacts,
    Scenario,
)
from demo.scripted_anthropic import (
    MAIN_AGENT,
    AgentScript,
    Block,
    Text,
    ToolUse,
    Turn,
    tool_result_text,
)
from demo.session import key_argument

CSV = "data/sales.csv"
SUMMARY = ".claude/skills/csv-summary/scripts/summarize_csv.py"
UNIT_PRICE = ".claude/skills/unit-price/scripts/unit_prices.py"
SALES_REPORT = ".claude/skills/sales-report/scripts/report.py"
RELEASE_NOTES = ".claude/skills/release-notes/scripts/draft_notes.py"
DEPLOY_CHECK = ".claude/skills/deploy-check/scripts/check_config.py"
RELEASE_PUBLISH = ".claude/skills/release-publish/scripts/publish.py"
SUBAGENT = "data-analyst"
SUBAGENT_MARKER = "You are the data-analyst subagent."
EVALUATORS = (
    "allowed_tools",
    "skill_selection",
    "script_execution",
    "tool_errors",
    "integration_heuristic",
    "security",
)


class ScenarioScript:
    """Collects a scenario's files, calls (in the order the model makes them) and ids."""

    def __init__(self, scenario: str, root: Path) -> None:
        self.scenario = scenario
        self.root = root
        self.files: dict[str, str] = {}
        self.calls: list[ExpectedCall] = []

    def csv_summary(self) -> None:
        self.files[CSV] = files.SALES_CSV
        self.files[".claude/skills/csv-summary/SKILL.md"] = files.csv_summary_skill_md(
            "csv-summary", SUMMARY
        )
        self.files[SUMMARY] = files.SUMMARY_SCRIPT

    def call(
        self,
        name: str,
        tool_input: dict[str, Any],
        *,
        agent: str = MAIN_AGENT,
        is_error: bool = False,
        result: str | None = None,
    ) -> tuple[ToolUse, ExpectedCall]:
        # Ids unique per scenario, so captures of different scenarios never share one.
        seed = f"skillsight-scenario:{self.scenario}:{len(self.calls)}"
        call_id = "toolu_01" + hashlib.sha256(seed.encode()).hexdigest()[:22]
        expected = ExpectedCall(
            tool_use_id=call_id,
            name=name,
            key=key_argument(name, tool_input),
            input=tool_input,
            agent=agent,
            is_error=is_error,
            result=result,
        )
        self.calls.append(expected)
        return ToolUse(name, tool_input, id=call_id), expected

    def skill(self, skill: str, *, agent: str = MAIN_AGENT) -> tuple[ToolUse, ExpectedCall]:
        return self.call("Skill", {"skill": skill}, agent=agent)

    def bash(
        self,
        command: str,
        description: str,
        *,
        result: str | None = None,
        is_error: bool = False,
        agent: str = MAIN_AGENT,
    ) -> tuple[ToolUse, ExpectedCall]:
        tool_input = {"command": command, "description": description}
        return self.call("Bash", tool_input, agent=agent, is_error=is_error, result=result)

    def read(self, relative: str) -> tuple[ToolUse, ExpectedCall]:
        # The Read tool takes absolute paths only.
        return self.call("Read", {"file_path": str(self.root / relative)})


def echo(template: str, *sources: ExpectedCall) -> tuple[Turn, str]:
    """A final turn quoting the real results of ``sources``, and the text it must produce."""

    def turn(body: dict[str, Any]) -> Sequence[Block]:
        quoted = [(tool_result_text(body, c.tool_use_id) or "(no result)").strip() for c in sources]
        return [Text(template.format(*quoted))]

    expected = template.format(*(c.result or "" for c in sources))
    return turn, expected


_HAND_BACK = "The report follows:\n"


def subagent_report(result: str) -> str:
    """The subagent's own final text inside the ``Agent`` tool result.

    Claude Code 2.1 frames it: a ``<tools-used-before-summary>`` line, a "[Subagent
    hand-back] … The report follows:" paragraph, the report indented by two spaces, then an
    ``agentId:`` line and a ``<usage>`` block.
    """
    _, found, rest = result.partition(_HAND_BACK)
    if not found:
        return result.strip()
    lines: list[str] = []
    for line in rest.splitlines():
        if line and not line.startswith("  "):
            break
        lines.append(line[2:])
    return "\n".join(lines).strip()


def echo_subagent(template: str, delegate: ExpectedCall, report: str) -> tuple[Turn, str]:
    """Like :func:`_echo` for an ``Agent`` call: quotes the report inside its result."""

    def turn(body: dict[str, Any]) -> Sequence[Block]:
        raw = tool_result_text(body, delegate.tool_use_id) or "(no result)"
        return [Text(template.format(subagent_report(raw)))]

    return turn, template.format(report)


def passes(*failing: ExpectedEvaluation) -> tuple[ExpectedEvaluation, ...]:
    """Every evaluator of issue 5 passes except those given."""
    failed = {e.evaluator: e for e in failing}
    return tuple(failed.get(name, ExpectedEvaluation(name, True)) for name in EVALUATORS)


def make_scenario(
    s: ScenarioScript,
    *,
    summary: str,
    prompt: str,
    turns: Sequence[Turn],
    final_answer: str,
    activations: Sequence[ExpectedActivation],
    expected_skills: Sequence[str],
    evaluations: Sequence[ExpectedEvaluation] = (),
    allowed_tools: Sequence[str] = ("Bash(python3:*)", "Read"),
    subagents: dict[str, AgentScript] | None = None,
    outside_dir: Path | None = None,
) -> Scenario:
    visible = tuple(
        sorted(
            p.split("/")[2]
            for p in s.files
            if p.startswith(".claude/skills/") and p.endswith("/SKILL.md")
        )
    )
    return Scenario(
        name=s.scenario,
        summary=summary,
        root=s.root,
        files=dict(s.files),
        prompt=prompt,
        turns=tuple(turns),
        expected=ExpectedFacts(
            tool_calls=tuple(s.calls),
            activations=tuple(activations),
            final_answer=final_answer,
            visible_skills=visible,
            expected_skills=tuple(expected_skills),
            evaluations=tuple(evaluations),
        ),
        skills=visible,
        allowed_tools=tuple(allowed_tools),
        subagents=dict(subagents or {}),
        outside_dir=outside_dir,
    )


def summary_command(csv: str = CSV) -> str:
    """The csv-summary script's command line for ``csv``."""
    return f"python3 {SUMMARY} {csv}"
