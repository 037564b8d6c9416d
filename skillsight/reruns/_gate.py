"""``--fail-under METRIC=VALUE``: the rerun report as a CI exit code.

Names a threshold may be put on:

==========================  =============================================================
``lift``                    the overall Skill Lift
``lift.<metric>``           one metric's lift (``lift.goal_accuracy``; also ``<metric>``)
``ci_low``, ``ci_low.<m>``  the lower end of the normal 95% interval
``bootstrap_low[.<m>]``     the lower end of the bootstrap 95% interval
``with.<metric>``           the with-skill mean of a metric (``with.security``)
``pass@K``                  the with-skill pass@K (``pass@1``, ``pass@3``)
``utility``                 SkillTester's utility score (0-100)
``security_score``          100 x the mean security score of the with-skill runs
==========================  =============================================================

A value under its threshold fails (exit 1). A value the report does not have (no paired case
for that metric, no interval from one case) cannot be judged: the gate says so and exits 2,
never passing or failing it silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from skillsight.errors import RerunError
from skillsight.reruns._report_model import RerunReport
from skillsight.reruns._scoring import METRICS, WITH_SKILL

_METRIC_NAMES = (*METRICS, "overall")


@dataclass(frozen=True)
class Threshold:
    name: str
    minimum: float


@dataclass(frozen=True)
class Verdict:
    name: str
    minimum: float
    value: float | None
    ok: bool | None
    """None: the report has no value for it (not applicable)."""
    reason: str


def parse_thresholds(items: Sequence[str]) -> list[Threshold]:
    out = []
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise RerunError(f"--fail-under {item!r} is not METRIC=VALUE")
        try:
            minimum = float(raw)
        except ValueError:
            raise RerunError(f"--fail-under {item!r}: {raw!r} is not a number") from None
        _check_name(name)
        out.append(Threshold(name, minimum))
    return out


def _split(name: str) -> tuple[str, str]:
    head, _, metric = name.partition(".")
    return head, metric or "overall"


def _check_name(name: str) -> None:
    if name in METRICS or name in {"lift", "utility", "security_score", "ci_low", "bootstrap_low"}:
        return
    if name.startswith("pass@") and name[5:].isdigit():
        return
    head, metric = _split(name)
    if head in {"lift", "ci_low", "bootstrap_low", "with"} and metric in _METRIC_NAMES:
        return
    raise RerunError(
        f"--fail-under: unknown name {name!r} (lift, lift.<metric>, ci_low[.<metric>], "
        f"bootstrap_low[.<metric>], with.<metric>, pass@K, utility, security_score; metrics: "
        f"{', '.join(_METRIC_NAMES)})"
    )


def value_of(report: RerunReport, name: str) -> float | None:
    """The report's value for a threshold name (None when it has none)."""
    if name in METRICS:
        name = f"lift.{name}"
    if name == "utility":
        return report.utility
    if name == "security_score":
        return report.security_score
    if name.startswith("pass@"):
        return report.pass_at_k.get(WITH_SKILL, {}).get(name[5:])
    head, metric = _split(name)
    row = report.metric(metric)
    if head == "lift":
        return row.lift
    if head == "with":
        return row.with_skill
    interval = row.ci_normal if head == "ci_low" else row.ci_bootstrap
    return interval[0] if interval else None


def judge(report: RerunReport, thresholds: Sequence[Threshold]) -> list[Verdict]:
    verdicts = []
    for threshold in thresholds:
        value = value_of(report, threshold.name)
        if value is None:
            verdicts.append(
                Verdict(threshold.name, threshold.minimum, None, None, "the report has no value")
            )
            continue
        ok = value >= threshold.minimum - 1e-12
        relation = ">=" if ok else "<"
        verdicts.append(
            Verdict(
                threshold.name,
                threshold.minimum,
                value,
                ok,
                f"{value:.6g} {relation} {threshold.minimum:g}",
            )
        )
    return verdicts


def exit_code(verdicts: Sequence[Verdict]) -> int:
    """1 when a threshold failed, 2 when none failed but one could not be judged, else 0."""
    if any(v.ok is False for v in verdicts):
        return 1
    return 2 if any(v.ok is None for v in verdicts) else 0
