"""SkillTester's utility score and security status.

Per case (the cases that expect the skill, with both conditions scored):

    g = 1 when the skill was actually invoked (in at least half of the with-skill attempts), else 0
    v = 0        when the with-skill run fails
        100      when only the with-skill run succeeds
        phi(e)   when both succeed, where for tokens and for time (seconds)
                   r = (with + eps) / (baseline + eps)          (eps = 1)
                   e_x = clip(eta - alpha · log2 r, 0, 100)     (eta = 50, alpha = 25)
                   e = mean(e_tokens, e_time)
                   phi(e) = beta + (50 - beta)/50 · e for e ≤ 50, else e   (beta = 20)
    U = mean over cases of g · v

A condition "succeeds" on a case when at least half of its scored attempts passed; tokens and
time are the means over its scored attempts. Worked values: both ratios 0.5 → 75, 2 → 35,
4 → 20; tokens 2 with time 1 → 42.5.

Security status, from the mean security score of the with-skill runs x 100: 100 Pass,
≥ 80 Caution, else Risky.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

ETA = 50.0
ALPHA = 25.0
BETA = 20.0
EPSILON = 1.0


def efficiency_score(ratio: float) -> float:
    """e_x = clip(eta - alpha · log2 r, 0, 100)."""
    if ratio <= 0:
        raise ValueError(f"a cost ratio must be positive, not {ratio}")
    return min(100.0, max(0.0, ETA - ALPHA * math.log2(ratio)))


def phi(e: float) -> float:
    """phi(e): beta + (50 - beta)/50 · e up to 50, e above."""
    return BETA + (50.0 - BETA) / 50.0 * e if e <= 50.0 else e


def both_succeeded(token_ratio: float, time_ratio: float) -> float:
    """v when both conditions succeed, from the two cost ratios."""
    return phi((efficiency_score(token_ratio) + efficiency_score(time_ratio)) / 2.0)


def ratio(with_skill: float, baseline: float) -> float:
    """r = (with + eps) / (baseline + eps)."""
    return (with_skill + EPSILON) / (baseline + EPSILON)


@dataclass(frozen=True)
class CaseOutcome:
    """What the utility score needs of one case."""

    case_id: str
    invoked: bool
    with_succeeded: bool
    baseline_succeeded: bool
    with_tokens: float
    baseline_tokens: float
    with_seconds: float
    baseline_seconds: float


def case_value(outcome: CaseOutcome) -> float:
    """v of one case (before the invocation gate)."""
    if not outcome.with_succeeded:
        return 0.0
    if not outcome.baseline_succeeded:
        return 100.0
    return both_succeeded(
        ratio(outcome.with_tokens, outcome.baseline_tokens),
        ratio(outcome.with_seconds, outcome.baseline_seconds),
    )


def case_utility(outcome: CaseOutcome) -> float:
    """g · v of one case."""
    return case_value(outcome) if outcome.invoked else 0.0


def utility(outcomes: Sequence[CaseOutcome]) -> float | None:
    """U: the mean of g · v over the cases (None without any)."""
    if not outcomes:
        return None
    return math.fsum(case_utility(o) for o in outcomes) / len(outcomes)


def security_status(score: float | None) -> str | None:
    """``Pass`` at 100, ``Caution`` at 80 or more, else ``Risky`` (None without a score)."""
    if score is None:
        return None
    if score >= 100.0 - 1e-9:
        return "Pass"
    return "Caution" if score >= 80.0 else "Risky"
