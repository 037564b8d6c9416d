"""What a golden set is made of: how many of its cases passed in production, by tag and status.

The seed's advice is to keep 60-70% of the replayed cases green (they passed in production): a
set of only failures cannot show a regression, a set of only passes cannot show a fix.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from skillsight.goldens._model import GoldenSet

GREEN_LOW, GREEN_HIGH = 0.60, 0.70


@dataclass(frozen=True)
class Composition:
    cases: int
    """Every case of the version, archived included."""
    replayed: int
    """Active and advisory cases (what a rerun plays)."""
    by_status: dict[str, int]
    passed_in_production: int
    failed_in_production: int
    unknown: int
    """Replayed cases not promoted from an evaluated activation (imported, hand-written)."""
    green_share: float | None
    """Passed / (passed + failed) over replayed cases; None when none is known."""
    by_tag: dict[str, dict[str, int]] = field(default_factory=dict)
    expecting_skill: int = 0
    expecting_none: int = 0
    advice: str = ""


def _advice(share: float | None, known: int) -> str:
    if share is None:
        return "no case came from an evaluated activation: the green share is unknown"
    if share < GREEN_LOW:
        return (
            f"{share:.0%} of the known cases passed in production: add passing cases "
            f"(aim for {GREEN_LOW:.0%}-{GREEN_HIGH:.0%}) so a regression can show"
        )
    if share > GREEN_HIGH:
        return (
            f"{share:.0%} of the known cases passed in production: add failing cases "
            f"(aim for {GREEN_LOW:.0%}-{GREEN_HIGH:.0%}) so an improvement can show"
        )
    return f"{share:.0%} of {known} known cases passed in production (within the advised range)"


def composition(golden: GoldenSet) -> Composition:
    """The composition of one version of a set."""
    replayed = golden.replayed()
    passed = sum(1 for c in replayed if c.provenance.passed_in_production is True)
    failed = sum(1 for c in replayed if c.provenance.passed_in_production is False)
    known = passed + failed
    share = round(passed / known, 6) if known else None
    tags: dict[str, Counter[str]] = {}
    for case in replayed:
        for key, value in case.tags.items():
            tags.setdefault(key, Counter())[value] += 1
    return Composition(
        cases=len(golden.cases),
        replayed=len(replayed),
        by_status=dict(Counter(c.status for c in golden.cases)),
        passed_in_production=passed,
        failed_in_production=failed,
        unknown=len(replayed) - known,
        green_share=share,
        by_tag={key: dict(sorted(counts.items())) for key, counts in sorted(tags.items())},
        expecting_skill=sum(1 for c in replayed if c.expected_skill == golden.skill_name),
        expecting_none=sum(1 for c in replayed if c.expected_skill is None),
        advice=_advice(share, known),
    )
