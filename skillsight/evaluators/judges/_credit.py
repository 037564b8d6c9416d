"""From a judge's verdict to a score: credit only for satisfied checks that cite shown steps.

A check earns credit when the judge marks it satisfied *and* cites at least one step id, every
one of which was shown in the prompt. A satisfied check with no citation, or citing a step that
was not shown (an invented or elided step), earns nothing and is counted; so is a listed check
the judge left out. score = credited checks / listed checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillsight.evaluators import Finding
from skillsight.evaluators.judges._rubric import Check
from skillsight.store.records import Activation


@dataclass(frozen=True, slots=True)
class Credit:
    score: float
    credited: tuple[str, ...]
    findings: tuple[Finding, ...]
    cited_steps: tuple[int, ...]
    """Steps cited by credited checks, in first-cited order."""
    uncited: int
    unknown_citations: int
    missing: int

    def describe(self, total: int) -> str:
        parts = [f"{len(self.credited)}/{total} checks credited"]
        for count, what in (
            (self.uncited, "satisfied without a cited step"),
            (self.unknown_citations, "citations of steps not shown"),
            (self.missing, "checks the judge did not answer"),
        ):
            if count:
                parts.append(f"{count} {what}")
        return "; ".join(parts)


def credit(
    verdict: Mapping[str, Any],
    checks: Sequence[Check],
    shown: frozenset[int],
    activation: Activation,
) -> Credit:
    answers: dict[str, Mapping[str, Any]] = {}
    given = verdict.get("checks", [])
    if isinstance(given, Mapping):  # keyed by check id (the schema judges answer in)
        answers = {str(k): v for k, v in given.items() if isinstance(v, Mapping)}
    else:  # a list of {"check": id, ...} (calibration files, older cached verdicts)
        for answer in given:
            answers.setdefault(str(answer.get("check", "")), answer)
    anchor_step = activation.trigger_step_id
    anchor_call = activation.trigger_call_id if anchor_step is None else None
    credited: list[str] = []
    cited: dict[int, None] = {}
    findings: list[Finding] = []
    uncited = unknown_total = missing = 0
    for check in checks:
        answer = answers.get(check.id)
        if answer is None:
            missing += 1
            findings.append(
                Finding(
                    kind="check_unanswered",
                    message=f"{check.id}: the judge gave no answer",
                    step_id=anchor_step,
                    tool_call_id=anchor_call,
                    severity="low",
                    detail={"check": check.id, "text": check.text},
                )
            )
            continue
        steps = [int(s) for s in answer.get("step_ids", [])]
        valid = [s for s in steps if s in shown]
        unknown = [s for s in steps if s not in shown]
        reason = str(answer.get("reason", ""))[:500]
        detail = {"check": check.id, "text": check.text, "step_ids": steps, "reason": reason}
        step, call = (valid[0], None) if valid else (anchor_step, anchor_call)
        if not answer.get("satisfied"):
            findings.append(
                Finding(
                    kind="check_failed",
                    message=f"{check.id}: {reason}",
                    step_id=step,
                    tool_call_id=call,
                    severity="medium",
                    detail=detail,
                )
            )
        elif unknown:
            unknown_total += len(unknown)
            findings.append(
                Finding(
                    kind="unknown_citation",
                    message=f"{check.id}: satisfied, but cites steps not shown: "
                    + ", ".join(map(str, unknown)),
                    step_id=step,
                    tool_call_id=call,
                    severity="low",
                    detail={**detail, "unknown": unknown},
                )
            )
        elif not steps:
            uncited += 1
            findings.append(
                Finding(
                    kind="uncited_claim",
                    message=f"{check.id}: satisfied, but no step cited",
                    step_id=step,
                    tool_call_id=call,
                    severity="low",
                    detail=detail,
                )
            )
        else:
            credited.append(check.id)
            for s in valid:
                cited[s] = None
    score = len(credited) / len(checks) if checks else 0.0
    return Credit(
        score, tuple(credited), tuple(findings), tuple(cited), uncited, unknown_total, missing
    )
