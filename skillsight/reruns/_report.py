"""Building the rerun report from the stored per-attempt rows.

Attempts are averaged per case and condition first (over the attempts scored: status ``ok``),
then paired across conditions. Runs that timed out, failed to start, produced no telemetry or
no metric are counted in the evidence inventory and left out of every mean. Advisory cases are
reported but left out of the lift, pass@k, utility and trigger figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from skillsight.goldens import GoldenCase
from skillsight.reruns._report_model import (
    CaseResult,
    ConditionSummary,
    CostSummary,
    Flips,
    MetricLift,
    RerunReport,
    RunEntry,
    TriggerQuery,
    TriggerSummary,
)
from skillsight.reruns._scoring import BASELINE, METRICS, WITH_SKILL
from skillsight.reruns._stats import DEFAULT_RESAMPLES, DEFAULT_SEED, paired_lift, pass_at_k
from skillsight.reruns._utility import CaseOutcome, case_utility, security_status, utility

CONDITIONS: tuple[str, ...] = (WITH_SKILL, BASELINE)
STATUSES: tuple[str, ...] = ("ok", "timeout", "agent_error", "no_telemetry", "unscored")
Row = Mapping[str, Any]


def _mean(values: Sequence[float]) -> float | None:
    return round(math.fsum(values) / len(values), 6) if values else None


def _r(value: float | None) -> float | None:
    return round(value, 6) if value is not None else None


def scored(rows: Sequence[Row]) -> list[Row]:
    """The attempts that count: scored with at least one metric."""
    return [r for r in rows if r["status"] == "ok" and r.get("overall") is not None]


def _summary(rows: Sequence[Row]) -> ConditionSummary:
    ok = scored(rows)
    metrics = {m: _mean([r[m] for r in ok if r.get(m) is not None]) for m in METRICS}
    metrics["overall"] = _mean([r["overall"] for r in ok])
    judged = [r for r in ok if r.get("passed") is not None]
    return ConditionSummary(
        runs=len(ok),
        metrics=metrics,
        passed=_mean([1.0 if r["passed"] else 0.0 for r in judged]),
        invoked=_mean([1.0 if r["skill_invoked"] else 0.0 for r in ok]),
        tokens=_mean([float(r["tokens"]) for r in ok]),
        cost_usd=_mean([float(r["cost_usd"]) for r in ok]),
        seconds=_mean([float(r["duration_ms"]) / 1000.0 for r in ok]),
    )


def _deltas(with_skill: ConditionSummary, baseline: ConditionSummary) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for metric in METRICS:
        a, b = with_skill.metrics.get(metric), baseline.metrics.get(metric)
        out[metric] = round(a - b, 6) if a is not None and b is not None else None
    return out


def _outcome(case_id: str, with_skill: ConditionSummary, baseline: ConditionSummary) -> CaseOutcome:
    return CaseOutcome(
        case_id=case_id,
        invoked=(with_skill.invoked or 0.0) >= 0.5,
        with_succeeded=(with_skill.passed or 0.0) >= 0.5,
        baseline_succeeded=(baseline.passed or 0.0) >= 0.5,
        with_tokens=with_skill.tokens or 0.0,
        baseline_tokens=baseline.tokens or 0.0,
        with_seconds=with_skill.seconds or 0.0,
        baseline_seconds=baseline.seconds or 0.0,
    )


def _case_results(
    skill: str, cases: Sequence[GoldenCase], by_key: Mapping[tuple[str, str], list[Row]]
) -> list[CaseResult]:
    out = []
    for case in cases:
        with_skill = _summary(by_key.get((case.case_id, WITH_SKILL), []))
        baseline = _summary(by_key.get((case.case_id, BASELINE), []))
        deltas = _deltas(with_skill, baseline)
        present = [d for d in deltas.values() if d is not None]
        expects = case.triggers_for(skill)
        both = with_skill.passed is not None and baseline.passed is not None
        value = case_utility(_outcome(case.case_id, with_skill, baseline))
        out.append(
            CaseResult(
                case_id=case.case_id,
                question=case.question,
                status=case.status,
                expects_skill=expects,
                with_skill=with_skill,
                baseline=baseline,
                deltas=deltas,
                overall_delta=_mean(present),
                utility=_r(value) if expects and both else None,
            )
        )
    return out


def _metric_rows(active: Sequence[CaseResult], resamples: int, seed: int) -> list[MetricLift]:
    rows = []
    for metric in (*METRICS, "overall"):
        if metric == "overall":
            deltas = [c.overall_delta for c in active if c.overall_delta is not None]
        else:
            deltas = [d for c in active if (d := c.deltas[metric]) is not None]
        stats = paired_lift(deltas, resamples=resamples, seed=seed)
        with_values = [v for c in active if (v := c.with_skill.metrics[metric]) is not None]
        base_values = [v for c in active if (v := c.baseline.metrics[metric]) is not None]
        rows.append(
            MetricLift(
                metric=metric,
                with_skill=_mean(with_values),
                baseline=_mean(base_values),
                with_cases=len(with_values),
                baseline_cases=len(base_values),
                n=stats.n,
                lift=_r(stats.lift),
                sd=_r(stats.sd),
                ci_normal=[round(x, 6) for x in stats.normal_ci] if stats.normal_ci else None,
                ci_bootstrap=[round(x, 6) for x in stats.bootstrap_ci]
                if stats.bootstrap_ci
                else None,
                positive=_r(stats.positive),
                negative=_r(stats.negative),
                tied=_r(stats.tied),
            )
        )
    return rows


def _inventory(
    rows: Sequence[Row], cases: Sequence[GoldenCase], attempts: int
) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for condition in CONDITIONS:
        mine = [r for r in rows if r["condition"] == condition]
        counts = {"planned": len(cases) * attempts}
        for status in STATUSES:
            counts[status] = sum(1 for r in mine if r["status"] == status)
        counts["ok"] = len(scored(mine))
        counts["unscored"] += sum(1 for r in mine if r["status"] == "ok" and r["overall"] is None)
        counts["not_run"] = max(0, counts["planned"] - len(mine))
        out[condition] = counts
    return out


def _cost(rows: Sequence[Row]) -> CostSummary:
    ok = scored(rows)
    tokens = [int(r["tokens"]) for r in ok]
    costs = [float(r["cost_usd"]) for r in ok]
    return CostSummary(
        runs=len(ok),
        tokens_total=sum(tokens),
        tokens_mean=_mean([float(t) for t in tokens]),
        cost_usd_total=round(math.fsum(costs), 8),
        cost_usd_mean=_mean(costs),
        seconds_mean=_mean([float(r["duration_ms"]) / 1000.0 for r in ok]),
    )


def _trigger(
    skill: str, cases: Sequence[GoldenCase], results: Sequence[CaseResult]
) -> TriggerSummary:
    queries = []
    tp = fp = fn = 0
    for case, result in zip(cases, results, strict=True):
        should = case.triggers_for(skill)
        rate = result.with_skill.invoked
        queries.append(
            TriggerQuery(
                case_id=case.case_id,
                query=case.question,
                should_trigger=should,
                attempts=result.with_skill.runs,
                trigger_rate=rate,
            )
        )
        if rate is None:
            continue
        fired = rate >= 0.5
        tp += fired and should
        fp += fired and not should
        fn += should and not fired
    return TriggerSummary(
        precision=_r(tp / (tp + fp)) if tp + fp else None,
        recall=_r(tp / (tp + fn)) if tp + fn else None,
        queries=queries,
    )


def case_passes(rows: Sequence[Row]) -> dict[str, bool]:
    """Per case, whether its with-skill attempts passed (at least half of those scored)."""
    votes: dict[str, list[bool]] = {}
    for row in scored(rows):
        if row["condition"] == WITH_SKILL and row.get("passed") is not None:
            votes.setdefault(str(row["case_id"]), []).append(bool(row["passed"]))
    return {case: sum(v) / len(v) >= 0.5 for case, v in votes.items()}


def _flips(rows: Sequence[Row], previous: tuple[Row, Sequence[Row]] | None) -> Flips | None:
    if previous is None:
        return None
    meta, before_rows = previous
    before, now = case_passes(before_rows), case_passes(rows)
    common = sorted(set(before) & set(now))
    return Flips(
        previous_run_id=str(meta["run_id"]),
        previous_skill_version=str(meta["skill_version"]),
        pass_to_fail=[c for c in common if before[c] and not now[c]],
        fail_to_pass=[c for c in common if not before[c] and now[c]],
    )


def _pass_at(
    cases: Sequence[GoldenCase],
    by_key: Mapping[tuple[str, str], list[Row]],
    condition: str,
    attempts: int,
) -> dict[str, float | None]:
    counts = []
    for case in cases:
        judged = [
            r for r in scored(by_key.get((case.case_id, condition), [])) if r["passed"] is not None
        ]
        counts.append((len(judged), sum(1 for r in judged if r["passed"])))
    return {str(k): _r(pass_at_k(counts, k)[0]) for k in range(1, attempts + 1)}


def _entry(row: Row) -> RunEntry:
    reasons = row.get("reasons") or {}
    return RunEntry(
        case_id=str(row["case_id"]),
        condition=str(row["condition"]),
        attempt=int(row["attempt"]),
        status=str(row["status"]),
        session_ids=list(row.get("session_ids") or []),
        activation_ids=list(row.get("activation_ids") or []),
        skill_invoked=bool(row.get("skill_invoked")),
        metrics={m: row.get(m) for m in METRICS},
        overall=row.get("overall"),
        passed=row.get("passed"),
        tokens=int(row.get("tokens") or 0),
        cost_usd=float(row.get("cost_usd") or 0.0),
        duration_ms=float(row.get("duration_ms") or 0.0),
        exit_code=int(row.get("exit_code") or 0),
        error=str(row.get("error") or ""),
        reasons=dict(reasons) if isinstance(reasons, Mapping) else {},
    )


def build_report(
    meta: Row,
    cases: Sequence[GoldenCase],
    rows: Sequence[Row],
    *,
    previous: tuple[Row, Sequence[Row]] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> RerunReport:
    """The report of a run: ``meta`` (its ``runs`` row with ``config`` parsed), the replayed
    cases, its result rows (``reasons`` parsed), and the previous version's run for flips."""
    skill = str(meta["skill_name"])
    config = dict(meta.get("config") or {})
    attempts = int(config.get("attempts", 1))
    by_key: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        by_key.setdefault((str(row["case_id"]), str(row["condition"])), []).append(row)
    results = _case_results(skill, cases, by_key)
    active = [r for r in results if r.status == "active"]
    active_cases = [c for c in cases if c.status == "active"]
    metrics = _metric_rows(active, resamples, seed)
    pass_k = {c: _pass_at(active_cases, by_key, c, attempts) for c in CONDITIONS}
    outcomes = [
        _outcome(r.case_id, r.with_skill, r.baseline)
        for r in active
        if r.expects_skill and r.with_skill.passed is not None and r.baseline.passed is not None
    ]
    active_ids = {c.case_id for c in active_cases}
    active_rows = [r for r in rows if r["case_id"] in active_ids]
    with_rows = [r for r in active_rows if r["condition"] == WITH_SKILL]
    security = [float(r["security"]) for r in scored(with_rows) if r.get("security") is not None]
    security_score = _r(100.0 * math.fsum(security) / len(security)) if security else None
    return RerunReport(
        run_id=str(meta["run_id"]),
        skill=skill,
        skill_version=str(meta.get("skill_version") or ""),
        set_id=str(meta.get("set_id") or ""),
        set_version=int(meta.get("set_version") or 0),
        status=str(meta.get("status") or ""),
        started_at=str(meta.get("started_at") or ""),
        finished_at=str(meta.get("updated_at") or ""),
        config=config,
        inventory=_inventory(rows, cases, attempts),
        lift=metrics[-1].lift,
        metrics=metrics,
        pass_at_k=pass_k,
        utility=_r(utility(outcomes)),
        utility_cases=len(outcomes),
        security_score=security_score,
        security_status=security_status(security_score),
        cost={c: _cost([r for r in active_rows if r["condition"] == c]) for c in CONDITIONS},
        trigger=_trigger(skill, active_cases, active),
        flips=_flips(rows, previous),
        cases=results,
        advisory_cases=[c.case_id for c in cases if c.status == "advisory"],
        runs=[_entry(r) for r in rows],
    )
