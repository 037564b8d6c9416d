"""The six paired metrics of one run (ACES's), each in [0, 1] or absent with the reason.

=================  ======================================================================
security           the ``security`` evaluator over the whole run (the run view), both
                   conditions
skill_execution    with the skill, on a case that expects it: the mean ``script_execution``
                   score of the skill's activations (``tool_errors`` when no script is
                   expected); 0 when the skill was available, expected and never invoked;
                   absent in the baseline (the skill is withheld) and on cases that do not
                   expect it
skill_efficiency   the ``efficiency`` evaluator on the skill's activations against the skill's
                   production baseline; absent without one, and in the baseline
accuracy           the LLM judge: does the final answer answer the request (the ground truth
                   shown as a reference when the case has one); absent without a judge model
goal_accuracy      the share of the ground truth's values in the final answer
                   (:mod:`._goal`); absent without a ground truth
behavior_check     the ``behavior_check`` judge over the case's ``expected_behavior``; absent
                   without a judge model or expectations
=================  ======================================================================

``overall`` is the mean of the metrics present; the run *passed* when every present metric
meets its threshold (those of the evaluators: 1.0, efficiency 0.25). A run with no metric
present is unscored and goes to the evidence inventory.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from skillsight.evaluators import (
    Baseline,
    EfficiencyEvaluator,
    Evaluation,
    EvaluationContext,
    GoldenExpectation,
    ScriptExecutionEvaluator,
    SecurityEvaluator,
    ToolErrorsEvaluator,
)
from skillsight.evaluators.judges import JudgeClient, JudgeEvaluator, Rubric, judge_context
from skillsight.evaluators.judges import load_rubric as load_judge_rubric
from skillsight.goldens import GoldenCase
from skillsight.rebuild.trajectories import Trajectory
from skillsight.reruns._goal import goal_accuracy
from skillsight.reruns._run_view import run_tokens, run_view
from skillsight.skills import SkillManifest
from skillsight.store.records import Activation

METRICS: tuple[str, ...] = (
    "security",
    "skill_execution",
    "skill_efficiency",
    "accuracy",
    "goal_accuracy",
    "behavior_check",
)
THRESHOLDS: Mapping[str, float] = {
    "security": 1.0,
    "skill_execution": 1.0,
    "skill_efficiency": EfficiencyEvaluator.threshold,
    "accuracy": 1.0,
    "goal_accuracy": 1.0,
    "behavior_check": 1.0,
}
WITH_SKILL, BASELINE = "with_skill", "baseline"

ACCURACY_RUBRIC = Rubric.from_dict(
    {
        "name": "answer_accuracy",
        "version": "1",
        "summary": "the final answer correctly and completely answers the request",
        "threshold": 1.0,
        "output": "checks",
        "inputs": ["request", "internal", "integration"],
        "requires": ["checks", "request", "integration_message"],
        "checks_from": "expected_behavior",
        "labels": {"pass": "accurate", "partial": "partly_accurate", "fail": "inaccurate"},
        "prompt": (
            "Judge whether the agent's final answer (the integration message) is correct and "
            "complete for the request. Cite the step of the final answer.\n\n$sections\n\n"
            "## Checks\n$checks\n"
        ),
    },
    "skillsight.reruns (answer accuracy)",
)


@dataclass
class RunScore:
    """The metrics of one run and what the report needs beside them."""

    metrics: dict[str, float | None]
    reasons: dict[str, str]
    skill_invoked: bool
    activation_ids: list[str]
    answer: str
    tokens: int
    cost_usd: float
    judge_cost_usd: float = 0.0
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def overall(self) -> float | None:
        present = [v for v in self.metrics.values() if v is not None]
        return round(math.fsum(present) / len(present), 6) if present else None

    @property
    def passed(self) -> bool | None:
        present = {k: v for k, v in self.metrics.items() if v is not None}
        if not present:
            return None
        return all(v >= THRESHOLDS[k] - 1e-9 for k, v in present.items())


def _mean(evaluations: Sequence[Evaluation]) -> tuple[float | None, str]:
    scored = [e for e in evaluations if e.score is not None]
    if not scored:
        reasons = "; ".join(dict.fromkeys(e.reason for e in evaluations)) or "no evaluation"
        return None, reasons
    value = round(math.fsum(e.score for e in scored if e.score is not None) / len(scored), 6)
    return value, "; ".join(dict.fromkeys(e.reason for e in scored))


class RunScorer:
    """Scores runs of one skill (one manifest, one production baseline, one judge)."""

    def __init__(
        self,
        skill: str,
        *,
        project_id: str,
        manifest: SkillManifest | None = None,
        baseline: Baseline | None = None,
        judge: JudgeClient | None = None,
    ) -> None:
        self.skill = skill
        self.project_id = project_id
        self.manifest = manifest
        self.baseline = baseline
        self._security = SecurityEvaluator()
        self._scripts = ScriptExecutionEvaluator()
        self._errors = ToolErrorsEvaluator()
        self._efficiency = EfficiencyEvaluator()
        self._accuracy = JudgeEvaluator.for_rubric(ACCURACY_RUBRIC, judge) if judge else None
        self._behavior = (
            JudgeEvaluator.for_rubric(load_judge_rubric("behavior_check"), judge) if judge else None
        )

    def score(
        self,
        case: GoldenCase,
        condition: str,
        trajectory: Trajectory,
        activations: Sequence[Activation],
        *,
        workspace: Path | None = None,
    ) -> RunScore:
        manifest = self.manifest if condition == WITH_SKILL else None
        view = run_view(trajectory, skill=self.skill, project_id=self.project_id, manifest=manifest)
        mine = [a for a in activations if a.skill_name == self.skill]
        tokens, cost = run_tokens(trajectory)
        score = RunScore(
            metrics={},
            reasons={},
            skill_invoked=bool(mine),
            activation_ids=[a.activation_id for a in activations],
            answer=view.integration_message or "",
            tokens=tokens,
            cost_usd=cost,
        )
        context = EvaluationContext(
            manifest=manifest,
            baseline=self.baseline,
            workspace=str(workspace) if workspace is not None else None,
            golden=GoldenExpectation(
                expected_skills=(case.expected_skill,) if case.expected_skill else (),
                expected_script=case.expected_script,
                activated_skills=tuple(sorted({a.skill_name for a in activations})),
            ),
        )
        self._put(score, "security", *_mean([self._security.evaluate(view, context)]))
        self._skill_metrics(score, case, condition, mine, context)
        truth = goal_accuracy(case.ground_truth, view.integration_message)
        self._put(score, "goal_accuracy", truth.score, truth.reason)
        self._judged(score, case, view, context)
        return score

    @staticmethod
    def _put(score: RunScore, metric: str, value: float | None, reason: str) -> None:
        score.metrics[metric] = value
        score.reasons[metric] = reason

    def _skill_metrics(
        self,
        score: RunScore,
        case: GoldenCase,
        condition: str,
        mine: Sequence[Activation],
        context: EvaluationContext,
    ) -> None:
        if condition != WITH_SKILL:
            for metric in ("skill_execution", "skill_efficiency"):
                self._put(score, metric, None, "the skill is withheld in the baseline")
            return
        if case.expected_skill != self.skill:
            why = f"the case expects {case.expected_skill or 'no skill'}, not {self.skill}"
            self._put(score, "skill_execution", None, why)
        elif not mine:
            self._put(score, "skill_execution", 0.0, "the skill was expected and never invoked")
        else:
            scripts = [self._scripts.evaluate(a, context) for a in mine]
            if any(e.score is not None for e in scripts):
                self._put(score, "skill_execution", *_mean(scripts))
            else:
                self._put(
                    score,
                    "skill_execution",
                    *_mean([self._errors.evaluate(a, context) for a in mine]),
                )
        if not mine:
            self._put(score, "skill_efficiency", None, "the skill was not invoked")
        else:
            efficiency = [self._efficiency.evaluate(a, context) for a in mine]
            self._put(score, "skill_efficiency", *_mean(efficiency))

    def _judged(
        self, score: RunScore, case: GoldenCase, view: Activation, context: EvaluationContext
    ) -> None:
        if self._accuracy is None or self._behavior is None:
            for metric in ("accuracy", "behavior_check"):
                self._put(score, metric, None, "no judge model (set SKILLSIGHT_JUDGE_MODEL)")
            return
        if not view.integration_message:
            self._put(score, "accuracy", 0.0, "the run gave no final answer")
        else:
            check = "The final answer correctly and completely answers the request"
            if case.ground_truth:
                check += f"; a reference answer is: {case.ground_truth}"
            asked = judge_context(context, expected_behavior=[check])
            judged = self._accuracy.evaluate(view, asked)
            score.judge_cost_usd += judged.cost_usd
            self._put(score, "accuracy", *_mean([judged]))
        if not case.expected_behavior:
            self._put(score, "behavior_check", None, "the case lists no expected behaviour")
            return
        judged = self._behavior.evaluate(
            view, judge_context(context, expected_behavior=case.expected_behavior)
        )
        score.judge_cost_usd += judged.cost_usd
        self._put(score, "behavior_check", *_mean([judged]))
