"""Goal accuracy: how much of a case's ground truth the run's final answer states.

The ground truth's *values* are its numbers, each normalized (thousands separators dropped,
trailing zeros after the point dropped, so ``1,334.50`` is ``1334.5`` and ``133.00`` is
``133``); a ground truth without numbers is taken by its words (lower case, letters, digits,
``_`` and ``-``). The score is the share of distinct values the answer contains:

    goal_accuracy = |values(truth) ∩ values(answer)| / |values(truth)|

No ground truth: the metric is absent (nothing to compare with). No final answer: 0 (the run
did not answer). Harbor task verifiers written by ``golden export --format harbor`` apply the
same rule.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")
_WORD = re.compile(r"[a-z0-9][a-z0-9_-]*")


def numbers(text: str) -> list[str]:
    """The normalized numbers of ``text``, in order."""
    found = []
    for raw in _NUMBER.findall(text):
        value = raw.replace(",", "")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        found.append(value)
    return found


def values(text: str) -> tuple[list[str], str]:
    """The distinct values of a ground truth and their kind (``numbers`` or ``words``)."""
    found = list(dict.fromkeys(numbers(text)))
    if found:
        return found, "numbers"
    return list(dict.fromkeys(_WORD.findall(text.lower()))), "words"


class GoalScore(NamedTuple):
    score: float | None
    reason: str


def goal_accuracy(ground_truth: str | None, answer: str | None) -> GoalScore:
    """The share of the ground truth's values in the answer (see the module)."""
    if not ground_truth or not ground_truth.strip():
        return GoalScore(None, "the case has no ground truth")
    wanted, kind = values(ground_truth)
    if not wanted:
        return GoalScore(None, "the ground truth has no number or word to look for")
    if not answer or not answer.strip():
        return GoalScore(0.0, "the run gave no final answer")
    have = set(numbers(answer)) if kind == "numbers" else set(_WORD.findall(answer.lower()))
    found = [v for v in wanted if v in have]
    missing = [v for v in wanted if v not in have]
    reason = f"{len(found)}/{len(wanted)} ground-truth {kind} in the answer"
    if missing:
        reason += f"; missing {', '.join(missing[:8])}"
    return GoalScore(round(len(found) / len(wanted), 6), reason)
