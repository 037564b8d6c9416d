"""JSON shapes of evaluations, scorecards and the gate's failing activations."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from skillsight.reports._telemetry import ActivationOut

Status = Literal["new", "acknowledged", "resolved", "regressed"]
"""Where a failure cluster stands in triage."""


class ClusterRefOut(BaseModel):
    """Which cluster an activation belongs to (on the activation's page)."""

    cluster_id: str
    label: str
    status: Status
    assigned_by: str


class EvidenceOut(BaseModel):
    step_ids: list[int] = Field(description="ATIF steps of the session trajectory cited")
    tool_call_ids: list[str] = Field(description="tool calls cited")


class FindingOut(BaseModel):
    kind: str
    message: str
    step_id: int | None
    tool_call_id: str | None
    severity: str
    detail: dict[str, Any]


class EvaluationOut(BaseModel):
    """One evaluator's verdict on an activation (the newest of its evaluator version)."""

    evaluator: str
    version: str = Field(description="evaluator version; a rerun of the same version replaces")
    score: float | None = Field(description="in [0, 1], higher is better; null = not scored")
    passed: bool | None
    label: str = Field(description="what the score means; not_applicable or error when unscored")
    reason: str
    evidence: EvidenceOut
    findings: list[FindingOut]
    error: str
    unseen: list[str] = Field(
        default_factory=list,
        description="what the evaluator could not see (tool_outputs, tool_arguments, messages, "
        "request, workspace, skill_content): the verdict rests on the rest, and the reason says "
        "so; a verdict whose essential input is missing is not_applicable",
    )
    latency_ms: float
    evaluated_at: str = Field(description="ISO 8601, UTC")
    activation_rebuilt_at: str = Field(
        default="",
        description="the rebuild of the activation that was scored (its rebuilt_at then; '' "
        "for rows written before this was recorded, never stale)",
    )
    stale: bool = Field(
        default=False,
        description="the activation was rebuilt after this score and came out different (late "
        "rows of its session arrived); its rescoring is queued, or failed (see /healthz "
        "evaluation). A rebuild that found the same activation leaves its scores standing",
    )


class EvaluationEventOut(BaseModel):
    """An evaluation as an OpenTelemetry ``gen_ai.evaluation.result`` event."""

    name: str
    attributes: dict[str, Any]


class ActivationDetailOut(ActivationOut):
    """One activation with its evaluations, also exported as OTel GenAI evaluation events.

    Both fields are left out until the activation has been scored (the routes serve unset
    fields as absent): an activation nobody evaluated reads exactly as the bare record.
    """

    evaluations: list[EvaluationOut] = Field(
        default_factory=list, description="absent until the activation has been scored"
    )
    evaluation_events: list[EvaluationEventOut] = Field(
        default_factory=list,
        description="gen_ai.evaluation.result events (gen_ai.evaluation.name, .score.value, "
        ".score.label, .explanation), one per evaluation; absent until scored",
    )
    cluster: ClusterRefOut | None = Field(
        default=None, description="the failure cluster it belongs to; absent when in none"
    )


class EvaluatorScoreOut(BaseModel):
    """One evaluator over a set of activations."""

    evaluator: str
    activations: int = Field(description="activations with a row of this evaluator")
    scored: int = Field(description="rows with a score (not_applicable and errors excluded)")
    not_evaluated: int = Field(
        default=0,
        description="activations due a score that has none: an evaluator or judge error, or "
        "the judges' spend cap reached (never counted as passes)",
    )
    passed: int
    pass_rate: float | None = Field(description="passed / scored; null when nothing was scored")
    mean_score: float | None
    min_score: float | None


class VersionScoreOut(BaseModel):
    version: str = Field(description="skill version (SHA-256 of the folder); '' when unknown")
    activations: int
    first_started: str
    last_started: str
    evaluators: list[EvaluatorScoreOut]


class TrendPointOut(BaseModel):
    day: str = Field(description="UTC day the activations started, YYYY-MM-DD")
    evaluator: str
    activations: int
    scored: int
    pass_rate: float | None
    mean_score: float | None


class ScorecardOut(BaseModel):
    """A skill's evaluations over a window: per evaluator, per skill version, per day."""

    skill: str
    window: str
    since: str | None = Field(description="activations started at or after (ISO 8601, UTC)")
    version: str = Field(description="the skill version asked for; '' = every version")
    activations: int
    evaluators: list[EvaluatorScoreOut]
    versions: list[VersionScoreOut] = Field(description="newest activation first")
    trend: list[TrendPointOut]


class ScoredActivationOut(BaseModel):
    """An activation's evaluation by one evaluator, with where it happened (gate output)."""

    activation_id: str
    session_id: str
    started_at: str
    skill_version: str
    evaluator: str
    version: str
    score: float | None
    passed: bool | None
    label: str
    reason: str
    evidence: EvidenceOut
    findings: list[FindingOut]
