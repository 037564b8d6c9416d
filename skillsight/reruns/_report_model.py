"""The rerun report as JSON: what ``skillsight rerun --json`` prints and ``GET /api/v1/runs/{id}``
returns. Every number is recomputable from the stored ``run_results`` rows (docs/golden-sets.md
gives each formula)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class MetricLift(BaseModel):
    metric: str
    with_skill: float | None = Field(description="mean over cases of the with-skill case means")
    baseline: float | None
    with_cases: int = Field(description="cases with a with-skill value")
    baseline_cases: int
    n: int = Field(description="paired cases (both sides present, active cases only)")
    lift: float | None = Field(description="mean over paired cases of (with - baseline)")
    sd: float | None
    ci_normal: list[float] | None = Field(description="ACES: lift ± 1.96 sd/√n")
    ci_bootstrap: list[float] | None = Field(description="seeded paired bootstrap, 2.5%-97.5%")
    positive: float | None
    negative: float | None
    tied: float | None


class ConditionSummary(BaseModel):
    runs: int = Field(description="attempts scored (status ok)")
    metrics: dict[str, float | None]
    passed: float | None = Field(description="share of scored attempts that passed")
    invoked: float | None = Field(description="share of scored attempts that invoked the skill")
    tokens: float | None = Field(description="mean tokens per scored attempt")
    cost_usd: float | None
    seconds: float | None


class CaseResult(BaseModel):
    case_id: str
    question: str
    status: str
    expects_skill: bool
    with_skill: ConditionSummary
    baseline: ConditionSummary
    deltas: dict[str, float | None]
    overall_delta: float | None
    utility: float | None = Field(description="g·v of this case (SkillTester)")


class RunEntry(BaseModel):
    """One attempt, linkable to its sessions and activations."""

    case_id: str
    condition: str
    attempt: int
    status: str
    session_ids: list[str]
    activation_ids: list[str]
    skill_invoked: bool
    metrics: dict[str, float | None]
    overall: float | None
    passed: bool | None
    tokens: int
    cost_usd: float
    duration_ms: float
    exit_code: int
    error: str
    reasons: dict[str, str] = Field(default_factory=dict)


class CostSummary(BaseModel):
    runs: int
    tokens_total: int
    tokens_mean: float | None
    cost_usd_total: float
    cost_usd_mean: float | None
    seconds_mean: float | None


class TriggerQuery(BaseModel):
    case_id: str
    query: str
    should_trigger: bool
    attempts: int
    trigger_rate: float | None


class TriggerSummary(BaseModel):
    precision: float | None
    recall: float | None
    queries: list[TriggerQuery]


class Flips(BaseModel):
    previous_run_id: str
    previous_skill_version: str
    pass_to_fail: list[str]
    fail_to_pass: list[str]


class RerunReport(BaseModel):
    run_id: str
    skill: str
    skill_version: str
    set_id: str
    set_version: int
    status: str
    started_at: str
    finished_at: str
    config: dict[str, Any]
    inventory: dict[str, dict[str, int]] = Field(
        description="per condition: planned, ok, timeout, agent_error, no_telemetry, unscored, "
        "not_run (runs left out of the paired means, never imputed)"
    )
    lift: float | None = Field(description="overall Skill Lift (the 'overall' metric row)")
    metrics: list[MetricLift]
    pass_at_k: dict[str, dict[str, float | None]]
    utility: float | None
    utility_cases: int
    security_score: float | None
    security_status: str | None
    cost: dict[str, CostSummary]
    trigger: TriggerSummary
    flips: Flips | None
    cases: list[CaseResult]
    advisory_cases: list[str] = Field(description="replayed, reported, left out of the lift")
    runs: list[RunEntry]

    def metric(self, name: str) -> MetricLift:
        for row in self.metrics:
            if row.metric == name:
                return row
        raise KeyError(name)
