"""The scenarios: one factory per name, each building a :class:`Scenario` for a project root.

This module holds the activation scenarios (issue 3) and the registry; the evaluation
scenarios (issue 5) are in ``_evaluation_scenarios``, the writing helpers in
``_scenario_script``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from demo import _project_files as files
from demo._evaluation_scenarios import (
    allowed_tools_violation,
    distractor,
    secret_in_command,
    security,
    skipped_script,
)
from demo._scenario_script import (
    CSV,
    SUBAGENT,
    SUBAGENT_MARKER,
    UNIT_PRICE,
    ScenarioScript,
    echo,
    echo_subagent,
    make_scenario,
    passes,
    subagent_report,
    summary_command,
)
from demo.scenario_types import (
    ExpectedActivation,
    ExpectedEvaluation,
    Scenario,
)
from demo.scripted_anthropic import AgentScript, Text
from demo.workload import DEFAULT_PROMPT

__all__ = [
    "ISSUE_3_SCENARIOS",
    "ISSUE_5_SCENARIOS",
    "ISSUE_10_SCENARIOS",
    "SCENARIOS",
    "build_scenario",
    "subagent_report",
]


def one_skill(root: Path) -> Scenario:
    s = ScenarioScript("one_skill", root)
    s.csv_summary()
    skill, skill_call = s.skill("csv-summary")
    bash, bash_call = s.bash(
        summary_command(), "Summarise the CSV file", result=files.EXPECTED_SUMMARY
    )
    answer, text = echo("The csv-summary skill summarised data/sales.csv:\n\n{}", bash_call)
    return make_scenario(
        s,
        summary="Skill csv-summary, Bash runs its script, the answer quotes the output.",
        prompt=DEFAULT_PROMPT,
        turns=[[Text("I'll use the csv-summary skill for this."), skill], [bash], answer],
        final_answer=text,
        activations=[
            ExpectedActivation("csv-summary", "skill_tool", skill_call, (bash_call,), text)
        ],
        expected_skills=["csv-summary"],
        evaluations=passes(),
    )


def two_skills(root: Path) -> Scenario:
    s = ScenarioScript("two_skills", root)
    s.csv_summary()
    s.files[".claude/skills/unit-price/SKILL.md"] = files.unit_price_skill_md(UNIT_PRICE)
    s.files[UNIT_PRICE] = files.UNIT_PRICE_SCRIPT
    first, first_call = s.skill("csv-summary")
    summary, summary_call = s.bash(
        summary_command(), "Summarise the CSV file", result=files.EXPECTED_SUMMARY
    )
    step = "Now the unit-price skill for the per-unit prices."
    second, second_call = s.skill("unit-price")
    prices, prices_call = s.bash(
        f"python3 {UNIT_PRICE} {CSV}", "Price per unit", result=files.EXPECTED_UNIT_PRICES
    )
    answer, text = echo("From csv-summary:\n{}\n\nFrom unit-price:\n{}", summary_call, prices_call)
    return make_scenario(
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
        evaluations=passes(),
    )


def read_skill_md(root: Path) -> Scenario:
    s = ScenarioScript("read_skill_md", root)
    s.csv_summary()
    read, read_call = s.read(".claude/skills/csv-summary/SKILL.md")
    bash, bash_call = s.bash(
        summary_command(), "Summarise the CSV file", result=files.EXPECTED_SUMMARY
    )
    answer, text = echo("Following the csv-summary skill:\n\n{}", bash_call)
    return make_scenario(
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
    s = ScenarioScript("subagent_skill", root)
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
        summary_command(),
        "Summarise the CSV file",
        result=files.EXPECTED_SUMMARY,
        agent=SUBAGENT,
    )
    sub_answer, sub_text = echo("csv-summary output for data/sales.csv:\n{}", bash_call)
    answer, text = echo_subagent("The data-analyst agent reports:\n\n{}", delegate_call, sub_text)
    return make_scenario(
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
    s = ScenarioScript("no_skill", root)
    s.csv_summary()
    read, _ = s.read(CSV)
    text = "data/sales.csv has four columns: region, product, units, amount."
    return make_scenario(
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
    s = ScenarioScript("tool_error", root)
    s.csv_summary()
    skill, skill_call = s.skill("csv-summary")
    wrong, wrong_call = s.bash(
        summary_command("data/sale.csv"), "Summarise the CSV file", is_error=True
    )
    retry_text = "The file is data/sales.csv, not data/sale.csv; running it again."
    right, right_call = s.bash(
        summary_command(), "Summarise the CSV file", result=files.EXPECTED_SUMMARY
    )
    answer, text = echo("The csv-summary skill summarised data/sales.csv:\n\n{}", right_call)
    return make_scenario(
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
        evaluations=passes(
            ExpectedEvaluation(
                "tool_errors", False, (wrong_call.tool_use_id,), "the first run exits 1"
            )
        ),
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
    "secret_in_command": secret_in_command,
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
ISSUE_10_SCENARIOS = ("secret_in_command",)


def build_scenario(name: str, root: Path) -> Scenario:
    """The scenario ``name`` for a project at ``root`` (files not written yet)."""
    try:
        factory = SCENARIOS[name]
    except KeyError:
        known = ", ".join(SCENARIOS)
        raise ValueError(f"unknown scenario {name!r}; known: {known}") from None
    return factory(root)
