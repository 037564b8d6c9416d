"""What an evaluator returns: a score in [0, 1] with its reason, evidence and typed findings.

Plain slotted dataclasses rather than pydantic models: deterministic evaluators produce tens of
thousands of these per second, and building them must cost next to nothing. ``Finding`` and
``Evaluation`` are not ``frozen``: a frozen dataclass sets every field through
``object.__setattr__``, which made building a 17-field evaluation four times slower (2.4 µs
against 0.6 µs on the benchmark machine). Treat them as values all the same: nothing changes
one after the evaluator framework hands it out (it stamps ``latency_ms`` before), and
``dataclasses.replace`` makes a changed copy. ``Evidence`` stays frozen, since instances of it
are shared (the empty one by every evaluation that cites nothing).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Severity = Literal["info", "low", "medium", "high"]
SEVERITIES: tuple[Severity, ...] = ("info", "low", "medium", "high")

# Label of an evaluation that produced no score (the evaluator does not apply, or lacks input).
NOT_APPLICABLE = "not_applicable"
# Label of an evaluation whose evaluator raised: the error column says what happened.
ERROR = "error"

DETERMINISTIC: tuple[str, ...] = (
    "allowed_tools",
    "skill_selection",
    "script_execution",
    "tool_errors",
    "efficiency",
    "integration_heuristic",
    "security",
)
"""The deterministic evaluators, in the order they are reported."""


@dataclass(slots=True)
class Finding:
    """One thing an evaluator found, cited by the step and/or tool call it was found in."""

    kind: str
    message: str
    step_id: int | None = None
    tool_call_id: str | None = None
    severity: Severity = "medium"
    detail: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.step_id is None and not self.tool_call_id:
            raise ValueError(f"finding {self.kind!r} cites no step and no tool call")
        if self.severity not in SEVERITIES:
            raise ValueError(f"finding severity {self.severity!r} is not one of {SEVERITIES}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "message": self.message,
            "step_id": self.step_id,
            "tool_call_id": self.tool_call_id,
            "severity": self.severity,
            "detail": dict(self.detail),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        return cls(
            kind=str(data["kind"]),
            message=str(data.get("message", "")),
            step_id=data.get("step_id"),
            tool_call_id=data.get("tool_call_id"),
            severity=data.get("severity", "medium"),
            detail=dict(data.get("detail") or {}),
        )


@dataclass(frozen=True, slots=True)
class Evidence:
    """The trajectory steps and tool calls an evaluation rests on, in first-cited order."""

    step_ids: tuple[int, ...] = ()
    tool_call_ids: tuple[str, ...] = ()

    @classmethod
    def cite(
        cls,
        findings: Iterable[Finding] = (),
        *,
        step_ids: Iterable[int | None] = (),
        tool_call_ids: Iterable[str | None] = (),
    ) -> Evidence:
        steps: dict[int, None] = {}
        calls: dict[str, None] = {}
        for finding in findings:
            if finding.step_id is not None:
                steps[finding.step_id] = None
            if finding.tool_call_id:
                calls[finding.tool_call_id] = None
        for step in step_ids:
            if step is not None:
                steps[step] = None
        for call in tool_call_ids:
            if call:
                calls[call] = None
        if not steps and not calls:
            return NO_EVIDENCE
        return evidence(tuple(steps), tuple(calls))

    def to_dict(self) -> dict[str, list[Any]]:
        return {"step_ids": list(self.step_ids), "tool_call_ids": list(self.tool_call_ids)}


NO_EVIDENCE = Evidence()
"""The evidence of an evaluation that cites nothing (shared: ``Evidence`` is frozen)."""

_new = object.__new__
_set_steps = Evidence.__dict__["step_ids"].__set__
_set_calls = Evidence.__dict__["tool_call_ids"].__set__


def evidence(step_ids: tuple[int, ...], tool_call_ids: tuple[str, ...]) -> Evidence:
    """``Evidence(step_ids, tool_call_ids)`` at half the cost: a frozen dataclass sets each
    field through ``object.__setattr__``; this sets the slots directly (every evaluation that
    cites something builds one)."""
    made: Evidence = _new(Evidence)
    _set_steps(made, step_ids)
    _set_calls(made, tool_call_ids)
    return made


@dataclass(slots=True)
class Evaluation:
    """One evaluator's verdict on one activation.

    ``score`` is in [0, 1], higher is better, and ``None`` only when the evaluator did not apply
    or could not evaluate (``label`` then says which, and ``passed`` is ``None`` too).
    """

    activation_id: str
    evaluator: str
    version: str
    score: float | None
    passed: bool | None
    label: str
    reason: str
    evidence: Evidence = NO_EVIDENCE
    findings: tuple[Finding, ...] = ()
    error: str = ""
    judge_model: str = ""
    tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    project_id: str = "default"
    skill_name: str = ""
    skill_version: str = ""
    unseen: tuple[str, ...] = ()
    """What the evaluator could not see (codes of ``skillsight.evaluators.UNSEEN``): outputs
    not exported, message text not logged, the workspace unknown. The reason says it too."""
    inputs_hash: str = ""
    """A digest of what the evaluator was shown (a judge: its prompt); "" when not kept."""
    stands: bool = False
    """The activation's stored verdict, answered again (a judge shown the same prompt): not a
    new score, so nothing needs writing when its row already scored this activation. Not
    stored."""
    compared_with: str = ""
    """What the evaluator compared the activation with from outside it, as JSON (efficiency:
    the skill's baseline before it, ``"null"`` when there was none yet; skill_selection: the
    catalogue, when the telemetry did not record what the agent could see), so that a
    rescore, in this process or another, compares with the same; "" when nothing."""

    def __post_init__(self) -> None:
        if self.score is not None and not 0.0 <= self.score <= 1.0:
            raise ValueError(f"{self.evaluator}: score {self.score} is outside [0, 1]")
        if self.score is None and self.passed is not None:
            raise ValueError(f"{self.evaluator}: an evaluation without a score cannot pass/fail")

    def with_latency(self, latency_ms: float) -> Evaluation:
        return replace(self, latency_ms=latency_ms)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape the API serves."""
        return {
            "activation_id": self.activation_id,
            "evaluator": self.evaluator,
            "version": self.version,
            "score": self.score,
            "passed": self.passed,
            "label": self.label,
            "reason": self.reason,
            "evidence": self.evidence.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
            "error": self.error,
            "judge_model": self.judge_model,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "latency_ms": self.latency_ms,
            "unseen": list(self.unseen),
        }

    def to_row(self, evaluated_at_us: int, activation_rebuilt_at: str = "") -> dict[str, Any]:
        """A row of the store's ``evaluations`` table (plain values; the store knows no types
        of this package); ``activation_rebuilt_at`` names the rebuild of the activation that
        was scored."""
        columns = evaluation_columns(
            [self], evaluated_at_us, {self.activation_id: activation_rebuilt_at}
        )
        return {key: values[0] for key, values in columns.items()}

    @classmethod
    def of(
        cls,
        activation_id: str,
        evaluator: str,
        version: str,
        score: float | None,
        passed: bool | None,
        label: str,
        reason: str,
        evidence: Evidence,
        findings: tuple[Finding, ...],
        project_id: str,
        skill_name: str,
        skill_version: str,
        unseen: tuple[str, ...] = (),
    ) -> Evaluation:
        """A deterministic evaluation (no judge fields, no latency yet), built with positional
        arguments: half the cost of keywords, on the path every evaluation takes."""
        return cls(
            activation_id,
            evaluator,
            version,
            score,
            passed,
            label,
            reason,
            evidence,
            findings,
            "",
            "",
            0,
            0.0,
            0.0,
            project_id,
            skill_name,
            skill_version,
            unseen,
        )

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Evaluation:
        """Rebuild an evaluation from a row ``Store.evaluations.for_activation`` returned."""
        score = row.get("score")
        passed = row.get("passed")
        return cls(
            activation_id=str(row["activation_id"]),
            evaluator=str(row["evaluator"]),
            version=str(row["evaluator_version"]),
            score=None if score is None else float(score),
            passed=None if passed is None else bool(passed),
            label=str(row.get("label", "")),
            reason=str(row.get("reason", "")),
            evidence=Evidence(
                tuple(int(s) for s in row.get("evidence_step_ids", [])),
                tuple(str(c) for c in row.get("evidence_tool_call_ids", [])),
            ),
            findings=tuple(Finding.from_dict(f) for f in json.loads(row.get("findings") or "[]")),
            error=str(row.get("error", "")),
            judge_model=str(row.get("judge_model", "")),
            tokens=int(row.get("tokens", 0)),
            cost_usd=float(row.get("cost_usd", 0.0)),
            latency_ms=float(row.get("latency_ms", 0.0)),
            project_id=str(row.get("project_id", "default")),
            skill_name=str(row.get("skill_name", "")),
            skill_version=str(row.get("skill_version", "")),
            unseen=tuple(str(u) for u in row.get("unseen") or ()),
            inputs_hash=str(row.get("inputs_hash") or ""),
            compared_with=str(row.get("compared_with") or ""),
        )


# The findings column's encoder, made once (``json.dumps`` with options builds one per call).
_FINDINGS = json.JSONEncoder(ensure_ascii=False)


def findings_json(findings: tuple[Finding, ...]) -> str:
    """The findings as the ``findings`` column keeps them (a JSON list)."""
    return _FINDINGS.encode([f.to_dict() for f in findings]) if findings else "[]"


def evaluation_columns(
    evaluations: Sequence[Evaluation],
    evaluated_at_us: int,
    rebuilt_at: Mapping[str, str],
) -> dict[str, list[Any]]:
    """Evaluations as columns of the store's ``evaluations`` table: what
    :meth:`Evaluation.to_row` gives per evaluation, a list per key, built without a dict per
    row. ``rebuilt_at``: per activation id, the rebuild of it that was scored."""
    ids = [e.activation_id for e in evaluations]
    return {
        "project_id": [e.project_id for e in evaluations],
        "activation_id": ids,
        "evaluator": [e.evaluator for e in evaluations],
        "evaluator_version": [e.version for e in evaluations],
        "skill_name": [e.skill_name for e in evaluations],
        "skill_version": [e.skill_version for e in evaluations],
        "score": [e.score for e in evaluations],
        "passed": [e.passed for e in evaluations],
        "label": [e.label for e in evaluations],
        "reason": [e.reason for e in evaluations],
        "evidence_step_ids": [list(e.evidence.step_ids) for e in evaluations],
        "evidence_tool_call_ids": [list(e.evidence.tool_call_ids) for e in evaluations],
        "findings": [findings_json(e.findings) for e in evaluations],
        "error": [e.error for e in evaluations],
        "judge_model": [e.judge_model for e in evaluations],
        "tokens": [e.tokens for e in evaluations],
        "cost_usd": [e.cost_usd for e in evaluations],
        "latency_ms": [e.latency_ms for e in evaluations],
        "evaluated_at_us": [evaluated_at_us] * len(ids),
        "activation_rebuilt_at": [rebuilt_at.get(i, "") for i in ids],
        "unseen": [list(e.unseen) for e in evaluations],
        "inputs_hash": [e.inputs_hash for e in evaluations],
        "compared_with": [e.compared_with for e in evaluations],
    }
