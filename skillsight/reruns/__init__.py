"""Paired offline reruns: replay a golden set with and without the skill, report Skill Lift.

Each case is played in fresh workspaces, K attempts per condition (the target skill present, or
withheld while support and decoy skills stay), by any command-line agent through a documented
contract (the Claude Code CLI first) or the Claude Agent SDK under skillsight's instrumentor.
The agents export their telemetry to a collector the rerun hosts, so every run is rebuilt and
scored like live traffic; the report pairs the conditions per case and gives Skill Lift with a
normal and a seeded bootstrap interval, shares, pass@k, SkillTester's utility and security
status, cost, triggering and flips since the previous skill version. ``docs/golden-sets.md``.
"""

from __future__ import annotations

from skillsight.reruns._agents import (
    AgentCommand,
    Launch,
    claude_agent,
    claude_cli,
    parse_agent,
    sdk_agent,
)
from skillsight.reruns._benchmark_json import benchmark_json
from skillsight.reruns._gate import Threshold, Verdict, exit_code, judge, parse_thresholds, value_of
from skillsight.reruns._goal import GoalScore, goal_accuracy
from skillsight.reruns._harbor_import import Trial, harbor_trials, import_harbor
from skillsight.reruns._host import Hosted, hosted_service
from skillsight.reruns._html import render_html
from skillsight.reruns._markdown import render_markdown
from skillsight.reruns._protocol import (
    Progress,
    RerunOptions,
    RerunPlan,
    execute,
    parsed_results,
    planned,
    report_of,
)
from skillsight.reruns._report import build_report, case_passes, scored
from skillsight.reruns._report_model import (
    CaseResult,
    ConditionSummary,
    CostSummary,
    Flips,
    MetricLift,
    RerunReport,
    RunEntry,
    TriggerQuery,
    TriggerSummary,
)
from skillsight.reruns._rerun import (
    import_harbor_run,
    new_run_id,
    production_baseline,
    project_headers,
    rerun,
)
from skillsight.reruns._run_view import run_tokens, run_view
from skillsight.reruns._scoring import (
    BASELINE,
    METRICS,
    THRESHOLDS,
    WITH_SKILL,
    RunScore,
    RunScorer,
)
from skillsight.reruns._stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    PairedLift,
    bootstrap_interval,
    normal_interval,
    paired_lift,
    pass_at_k,
    pass_at_k_case,
)
from skillsight.reruns._utility import (
    CaseOutcome,
    both_succeeded,
    case_utility,
    case_value,
    efficiency_score,
    security_status,
    utility,
)
from skillsight.reruns._workspace import MODES, SkillFolders

__all__ = [
    "BASELINE",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "METRICS",
    "MODES",
    "THRESHOLDS",
    "WITH_SKILL",
    "AgentCommand",
    "CaseOutcome",
    "CaseResult",
    "ConditionSummary",
    "CostSummary",
    "Flips",
    "GoalScore",
    "Hosted",
    "Launch",
    "MetricLift",
    "PairedLift",
    "Progress",
    "RerunOptions",
    "RerunPlan",
    "RerunReport",
    "RunEntry",
    "RunScore",
    "RunScorer",
    "SkillFolders",
    "Threshold",
    "Trial",
    "TriggerQuery",
    "TriggerSummary",
    "Verdict",
    "benchmark_json",
    "bootstrap_interval",
    "both_succeeded",
    "build_report",
    "case_passes",
    "case_utility",
    "case_value",
    "claude_agent",
    "claude_cli",
    "efficiency_score",
    "execute",
    "exit_code",
    "goal_accuracy",
    "harbor_trials",
    "hosted_service",
    "import_harbor",
    "import_harbor_run",
    "judge",
    "new_run_id",
    "normal_interval",
    "paired_lift",
    "parse_agent",
    "parse_thresholds",
    "parsed_results",
    "pass_at_k",
    "pass_at_k_case",
    "planned",
    "production_baseline",
    "project_headers",
    "render_html",
    "render_markdown",
    "report_of",
    "rerun",
    "run_tokens",
    "run_view",
    "scored",
    "sdk_agent",
    "security_status",
    "utility",
    "value_of",
]
