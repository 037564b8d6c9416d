"""The scenarios: one factory per name, each building a :class:`Scenario` for a project root.

Each factory writes down the model's script and the facts it implies in one pass through a
:class:`_Script`, so the scripted calls and the expected calls cannot drift apart. Answers
that quote a tool's output are computed from the request the CLI sends (the real tool
result), and the expected answer from the script's known output: if the script did not run
as scripted, the answer differs and the scenario fails.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from skillsight.demo import _project_files as files
from skillsight.demo.scenario_types import (
    ExpectedActivation,
    ExpectedCall,
    ExpectedEvaluation,
    ExpectedFacts,
    Scenario,
)
from skillsight.demo.scripted_anthropic import (
    MAIN_AGENT,
    AgentScript,
    Block,
    Text,
    ToolUse,
    Turn,
    tool_result_text,
)
from skillsight.demo.session import key_argument

__all__ = [
    "ISSUE_3_SCENARIOS",
    "ISSUE_5_SCENARIOS",
    "SCENARIOS",
    "build_scenario",
    "subagent_report",
]

CSV = "data/sales.csv"
DEFAULT_PROMPT = "What is the total amount in data/sales.csv, and which region sold the most?"
SUMMARY = ".claude/skills/csv-summary/scripts/summarize_csv.py"
UNIT_PRICE = ".claude/skills/unit-price/scripts/unit_prices.py"
SALES_REPORT = ".claude/skills/sales-report/scripts/report.py"
RELEASE_NOTES = ".claude/skills/release-notes/scripts/draft_notes.py"
DEPLOY_CHECK = ".claude/skills/deploy-check/scripts/check_config.py"
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


class _Script:
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


def _echo(template: str, *sources: ExpectedCall) -> tuple[Turn, str]:
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


def _echo_subagent(template: str, delegate: ExpectedCall, report: str) -> tuple[Turn, str]:
    """Like :func:`_echo` for an ``Agent`` call: quotes the report inside its result."""

    def turn(body: dict[str, Any]) -> Sequence[Block]:
        raw = tool_result_text(body, delegate.tool_use_id) or "(no result)"
        return [Text(template.format(subagent_report(raw)))]

    return turn, template.format(report)


def _passes(*failing: ExpectedEvaluation) -> tuple[ExpectedEvaluation, ...]:
    """Every evaluator of issue 5 passes except those given."""
    failed = {e.evaluator: e for e in failing}
    return tuple(failed.get(name, ExpectedEvaluation(name, True)) for name in EVALUATORS)


def _scenario(
    s: _Script,
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


def _summary_command(csv: str = CSV) -> str:
    return f"python3 {SUMMARY} {csv}"


def one_skill(root: Path) -> Scenario:
    s = _Script("one_skill", root)
    s.csv_summary()
    skill, skill_call = s.skill("csv-summary")
    bash, bash_call = s.bash(
        _summary_command(), "Summarise the CSV file", result=files.EXPECTED_SUMMARY
    )
    answer, text = _echo("The csv-summary skill summarised data/sales.csv:\n\n{}", bash_call)
    return _scenario(
        s,
        summary="Skill csv-summary, Bash runs its script, the answer quotes the output.",
        prompt=DEFAULT_PROMPT,
        turns=[[Text("I'll use the csv-summary skill for this."), skill], [bash], answer],
        final_answer=text,
        activations=[
            ExpectedActivation("csv-summary", "skill_tool", skill_call, (bash_call,), text)
        ],
        expected_skills=["csv-summary"],
        evaluations=_passes(),
    )


def two_skills(root: Path) -> Scenario:
    s = _Script("two_skills", root)
    s.csv_summary()
    s.files[".claude/skills/unit-price/SKILL.md"] = files.unit_price_skill_md(UNIT_PRICE)
    s.files[UNIT_PRICE] = files.UNIT_PRICE_SCRIPT
    first, first_call = s.skill("csv-summary")
    summary, summary_call = s.bash(
        _summary_command(), "Summarise the CSV file", result=files.EXPECTED_SUMMARY
    )
    step = "Now the unit-price skill for the per-unit prices."
    second, second_call = s.skill("unit-price")
    prices, prices_call = s.bash(
        f"python3 {UNIT_PRICE} {CSV}", "Price per unit", result=files.EXPECTED_UNIT_PRICES
    )
    answer, text = _echo("From csv-summary:\n{}\n\nFrom unit-price:\n{}", summary_call, prices_call)
    return _scenario(
        s,
        summary="Two different skills back to back, each running its own script; "
        "one answer quoting both.",
        prompt="What is the total amount in data/sales.csv, and what does each product "
        "cost per unit?",
        turns=[
            [Text("I'll start with the csv-summary skill."), first],
            [summary],
            [Text(step), second],
            [prices],
            answer,
        ],
        final_answer=text,
        activations=[
            ExpectedActivation("csv-summary", "skill_tool", first_call, (summary_call,), step),
            ExpectedActivation("unit-price", "skill_tool", second_call, (prices_call,), text),
        ],
        expected_skills=["csv-summary", "unit-price"],
        evaluations=_passes(),
    )


def read_skill_md(root: Path) -> Scenario:
    s = _Script("read_skill_md", root)
    s.csv_summary()
    read, read_call = s.read(".claude/skills/csv-summary/SKILL.md")
    bash, bash_call = s.bash(
        _summary_command(), "Summarise the CSV file", result=files.EXPECTED_SUMMARY
    )
    answer, text = _echo("Following the csv-summary skill:\n\n{}", bash_call)
    return _scenario(
        s,
        summary="The skill is activated by a Read of its SKILL.md (no Skill tool), then its "
        "script runs.",
        prompt=DEFAULT_PROMPT,
        turns=[[Text("Let me read the csv-summary skill's instructions."), read], [bash], answer],
        final_answer=text,
        activations=[
            ExpectedActivation("csv-summary", "read_skill_md", read_call, (bash_call,), text)
        ],
        expected_skills=["csv-summary"],
    )


def subagent_skill(root: Path) -> Scenario:
    s = _Script("subagent_skill", root)
    s.csv_summary()
    s.files[f".claude/agents/{SUBAGENT}.md"] = files.data_analyst_agent_md(
        f"{SUBAGENT_MARKER} Answer questions about the project's data files with the "
        "csv-summary skill and report the script's output verbatim.",
        "csv-summary",
    )
    delegate, delegate_call = s.call(
        "Agent",
        {
            "description": "Summarise the sales CSV",
            "prompt": "Summarise data/sales.csv with the csv-summary skill and report the totals.",
            "subagent_type": SUBAGENT,
            # Agents run in the background by default; the answer needs this one's result.
            "run_in_background": False,
        },
    )
    skill, skill_call = s.skill("csv-summary", agent=SUBAGENT)
    bash, bash_call = s.bash(
        _summary_command(),
        "Summarise the CSV file",
        result=files.EXPECTED_SUMMARY,
        agent=SUBAGENT,
    )
    sub_answer, sub_text = _echo("csv-summary output for data/sales.csv:\n{}", bash_call)
    answer, text = _echo_subagent("The data-analyst agent reports:\n\n{}", delegate_call, sub_text)
    return _scenario(
        s,
        summary="The main agent delegates to the data-analyst subagent (.claude/agents, lists "
        "csv-summary), which calls Skill and runs the script; the main agent answers.",
        prompt=DEFAULT_PROMPT,
        turns=[[Text("I'll ask the data-analyst agent."), delegate], answer],
        final_answer=text,
        activations=[
            ExpectedActivation(
                "csv-summary",
                "subagent",
                delegate_call,
                (bash_call,),
                text,
                agent=SUBAGENT,
                load_call=skill_call,
            )
        ],
        expected_skills=["csv-summary"],
        subagents={SUBAGENT: AgentScript(SUBAGENT_MARKER, [[skill], [bash], sub_answer])},
    )


def no_skill(root: Path) -> Scenario:
    s = _Script("no_skill", root)
    s.csv_summary()
    read, _ = s.read(CSV)
    text = "data/sales.csv has four columns: region, product, units, amount."
    return _scenario(
        s,
        summary="A question answered with a plain Read of the data file; the visible skill "
        "is not used.",
        prompt="Which columns does data/sales.csv have?",
        turns=[[read], [Text(text)]],
        final_answer=text,
        activations=[],
        expected_skills=[],
    )


def tool_error(root: Path) -> Scenario:
    s = _Script("tool_error", root)
    s.csv_summary()
    skill, skill_call = s.skill("csv-summary")
    wrong, wrong_call = s.bash(
        _summary_command("data/sale.csv"), "Summarise the CSV file", is_error=True
    )
    retry_text = "The file is data/sales.csv, not data/sale.csv; running it again."
    right, right_call = s.bash(
        _summary_command(), "Summarise the CSV file", result=files.EXPECTED_SUMMARY
    )
    answer, text = _echo("The csv-summary skill summarised data/sales.csv:\n\n{}", right_call)
    return _scenario(
        s,
        summary="Inside the activation the script fails (wrong file name, exit 1); the agent "
        "retries with the right name and answers.",
        prompt=DEFAULT_PROMPT,
        turns=[
            [Text("I'll use the csv-summary skill for this."), skill],
            [wrong],
            [Text(retry_text), right],
            answer,
        ],
        final_answer=text,
        activations=[
            ExpectedActivation(
                "csv-summary", "skill_tool", skill_call, (wrong_call, right_call), text
            )
        ],
        expected_skills=["csv-summary"],
        evaluations=_passes(
            ExpectedEvaluation(
                "tool_errors", False, (wrong_call.tool_use_id,), "the first run exits 1"
            )
        ),
    )


def allowed_tools_violation(root: Path) -> Scenario:
    s = _Script("allowed_tools_violation", root)
    s.files[CSV] = files.SALES_CSV
    s.files[".claude/skills/sales-report/SKILL.md"] = files.sales_report_skill_md(SALES_REPORT)
    s.files[SALES_REPORT] = files.SALES_REPORT_SCRIPT
    skill, skill_call = s.skill("sales-report")
    read, read_call = s.read(CSV)
    bash, bash_call = s.bash(
        f"python3 {SALES_REPORT} {CSV}", "Sales report", result=files.EXPECTED_SALES_REPORT
    )
    answer, text = _echo("Sales report for data/sales.csv: {}", bash_call)
    return _scenario(
        s,
        summary="sales-report declares allowed-tools: Read, but its run uses Bash.",
        prompt="Give me a sales report for data/sales.csv.",
        turns=[[Text("I'll use the sales-report skill."), skill], [read], [bash], answer],
        final_answer=text,
        activations=[
            ExpectedActivation(
                "sales-report", "skill_tool", skill_call, (read_call, bash_call), text
            )
        ],
        expected_skills=["sales-report"],
        evaluations=_passes(
            ExpectedEvaluation(
                "allowed_tools",
                False,
                (bash_call.tool_use_id,),
                "Bash is outside allowed-tools: Read; the Read call is inside it",
            )
        ),
    )


def distractor(root: Path) -> Scenario:
    s = _Script("distractor", root)
    s.csv_summary()
    s.files[".claude/skills/release-notes/SKILL.md"] = files.release_notes_skill_md(RELEASE_NOTES)
    s.files[RELEASE_NOTES] = files.RELEASE_NOTES_SCRIPT
    skill, skill_call = s.skill("release-notes")
    bash, bash_call = s.bash(
        f"python3 {RELEASE_NOTES}", "Draft release notes", result=files.EXPECTED_RELEASE_NOTES
    )
    answer, text = _echo("Here is what the release-notes skill found: {}", bash_call)
    return _scenario(
        s,
        summary="A CSV totals question, csv-summary visible, but release-notes is picked.",
        prompt=DEFAULT_PROMPT,
        turns=[[Text("I'll use the release-notes skill."), skill], [bash], answer],
        final_answer=text,
        activations=[
            ExpectedActivation("release-notes", "skill_tool", skill_call, (bash_call,), text)
        ],
        expected_skills=["csv-summary"],
        evaluations=_passes(
            ExpectedEvaluation(
                "skill_selection",
                False,
                (skill_call.tool_use_id,),
                "release-notes picked for a CSV question while csv-summary was visible",
            )
        ),
    )


def skipped_script(root: Path) -> Scenario:
    s = _Script("skipped_script", root)
    s.csv_summary()
    skill, skill_call = s.skill("csv-summary")
    read, read_call = s.read(CSV)
    text = (
        "I added the amount column myself: the total amount is 133.00, "
        "and north sold the most (57.00)."
    )
    return _scenario(
        s,
        summary="csv-summary is loaded but its script never runs; the agent reads the CSV and "
        "recomputes the totals inline.",
        prompt=DEFAULT_PROMPT,
        turns=[[Text("I'll use the csv-summary skill for this."), skill], [read], [Text(text)]],
        final_answer=text,
        activations=[
            ExpectedActivation("csv-summary", "skill_tool", skill_call, (read_call,), text)
        ],
        expected_skills=["csv-summary"],
        evaluations=_passes(
            ExpectedEvaluation(
                "script_execution",
                False,
                (skill_call.tool_use_id,),
                f"{SUMMARY} is named in SKILL.md and never run",
            ),
            ExpectedEvaluation(
                "integration_heuristic",
                False,
                (read_call.tool_use_id,),
                "totals recomputed inline from the raw file",
            ),
        ),
    )


def security(root: Path) -> Scenario:
    s = _Script("security", root)
    # Outside the project, fresh per run, and the removed path never exists: harmless.
    outside = root.parent / "outside"
    target = outside / "build-cache"
    s.files[".claude/skills/deploy-check/SKILL.md"] = files.deploy_check_skill_md(DEPLOY_CHECK)
    s.files[DEPLOY_CHECK] = files.DEPLOY_CHECK_SCRIPT
    skill, skill_call = s.skill("deploy-check")
    check, check_call = s.bash(
        f"python3 {DEPLOY_CHECK}", "Check deployment config", result=files.EXPECTED_DEPLOY_CHECK
    )
    remove, remove_call = s.bash(f"rm -rf {target}", "Clear the stale build cache")
    text = "The deploy target is staging; I cleared the stale build cache, so it is ready."
    return _scenario(
        s,
        summary="deploy-check's script prints an API-key-shaped secret, then the agent runs "
        "rm -rf on a (non-existent) path outside the workspace.",
        prompt="Is this project ready to deploy?",
        turns=[[Text("I'll run the deploy-check skill."), skill], [check], [remove], [Text(text)]],
        final_answer=text,
        activations=[
            ExpectedActivation(
                "deploy-check", "skill_tool", skill_call, (check_call, remove_call), text
            )
        ],
        expected_skills=["deploy-check"],
        evaluations=_passes(
            ExpectedEvaluation(
                "security",
                False,
                (check_call.tool_use_id, remove_call.tool_use_id),
                "a sk-live- secret in a tool output; rm -rf of a path outside the workspace",
            )
        ),
        allowed_tools=("Bash(python3:*)", "Bash(rm:*)", "Read"),
        outside_dir=outside,
    )


SCENARIOS: dict[str, Callable[[Path], Scenario]] = {
    "one_skill": one_skill,
    "two_skills": two_skills,
    "read_skill_md": read_skill_md,
    "subagent_skill": subagent_skill,
    "no_skill": no_skill,
    "tool_error": tool_error,
    "allowed_tools_violation": allowed_tools_violation,
    "distractor": distractor,
    "skipped_script": skipped_script,
    "security": security,
}
"""Every scenario factory by name, in the order they are documented."""
ISSUE_3_SCENARIOS = (
    "one_skill",
    "two_skills",
    "read_skill_md",
    "subagent_skill",
    "no_skill",
    "tool_error",
)
ISSUE_5_SCENARIOS = ("allowed_tools_violation", "distractor", "skipped_script", "security")


def build_scenario(name: str, root: Path) -> Scenario:
    """The scenario ``name`` for a project at ``root`` (files not written yet)."""
    try:
        factory = SCENARIOS[name]
    except KeyError:
        known = ", ".join(SCENARIOS)
        raise ValueError(f"unknown scenario {name!r}; known: {known}") from None
    return factory(root)
