"""``efficiency``: tool calls, tokens and duration against the skill's rolling median.

Each metric maps through SkillTester's log-ratio curve (its ``_cost_subscore``), with the
skill's rolling median in the place of the baseline run::

    r = (x + 1) / (median + 1)                       # +1 keeps zeros finite
    s = clamp(50 - k * log2(r), 0, 100) / 100        # k = 50 / log2(3/2) when r <= 1, else 25

so ``s`` is 0.5 at the median, 1.0 at two thirds of it or less, 0.25 at twice it and 0 at four
times it or more. The score is the mean of the three sub-scores.
"""

from __future__ import annotations

import math
from functools import lru_cache

from skillsight.evaluators._baseline import Baseline, stored_baseline, total_tokens
from skillsight.evaluators._context import EvaluationContext
from skillsight.evaluators._evaluator import Evaluator
from skillsight.evaluators._model import Evaluation, Finding
from skillsight.store.records import Activation

ETA = 50.0
"""Sub-score (of 100) at the median."""
BETTER_SLOPE = ETA / math.log2(3 / 2)
"""Slope below the median: two thirds of the median reaches 100."""
ALPHA = 25.0
"""Slope above the median: each doubling costs 25 points."""
EPSILON = 1.0


def log_ratio_score(value: float, median: float) -> tuple[float, float]:
    """(ratio, sub-score in [0, 1]) of one metric."""
    ratio = (value + EPSILON) / (median + EPSILON)
    slope = BETTER_SLOPE if ratio <= 1.0 else ALPHA
    return ratio, min(100.0, max(0.0, ETA - slope * math.log2(ratio))) / 100.0


@lru_cache(maxsize=1024)
def _shown(baseline: Baseline) -> tuple[str, tuple[str, str, str], str]:
    """The parts of the reason that depend on the baseline alone, which many activations share
    (formatting a float costs about as much as scoring it), and the baseline as stored."""
    return (
        f"over {baseline.samples} earlier activations: ",
        (f"{baseline.tool_calls:g}", f"{baseline.tokens:g}", f"{baseline.duration_ms:g}"),
        stored_baseline(baseline),
    )


class EfficiencyEvaluator(Evaluator):
    """score = mean of the log-ratio sub-scores of tool calls, tokens and duration."""

    name = "efficiency"
    version = "1"
    threshold = 0.25
    summary = "tool calls, tokens and duration against the skill's rolling median"

    def _evaluate(self, activation: Activation, context: EvaluationContext) -> Evaluation:
        baseline = context.baseline
        if baseline is None:
            unscored = self.not_applicable(activation, "no baseline for this skill yet")
            unscored.compared_with = "null"
            return unscored
        over, medians, recorded = _shown(baseline)
        metrics = (
            ("tool_calls", float(len(activation.tool_calls)), baseline.tool_calls, medians[0]),
            ("tokens", float(total_tokens(activation)), baseline.tokens, medians[1]),
            ("duration_ms", float(activation.duration_ms), baseline.duration_ms, medians[2]),
        )
        subs: list[str] = []
        findings: list[Finding] = []
        total = 0.0
        for metric, value, median, shown in metrics:
            ratio, sub = log_ratio_score(value, median)
            total += sub
            subs.append(f"{metric} {value:g} vs median {shown} (x{ratio:.2f}) -> {sub:.3f}")
            if sub < self.threshold:
                findings.append(
                    Finding(
                        kind="over_baseline",
                        message=f"{metric} {value:g} is x{ratio:.2f} the skill's median {shown}",
                        step_id=activation.trigger_step_id,
                        tool_call_id=activation.trigger_call_id,
                        severity="low",
                        detail={
                            "metric": metric,
                            "value": value,
                            "median": median,
                            "ratio": round(ratio, 6),
                            "subscore": round(sub, 6),
                        },
                    )
                )
        score = total / len(metrics)
        if score >= 0.5:
            label = "efficient"
        elif score >= self.threshold:
            label = "costlier"
        else:
            label = "wasteful"
        reason = over + "; ".join(subs)
        scored = self.result(
            activation,
            score,
            label,
            reason,
            findings,
            step_ids=[activation.trigger_step_id],
            tool_call_ids=[activation.trigger_call_id],
        )
        scored.compared_with = recorded  # a rescore elsewhere compares with the same
        return scored
