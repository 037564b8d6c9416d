"""Skill Lift recomputed by hand from the stored ``run_results`` rows, with plain Python and the
formulas of docs/golden-sets.md, so a test can hold a rerun report to them."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any

import numpy as np

from skillsight.store import Store

METRICS = (
    "security", "skill_execution", "skill_efficiency", "accuracy", "goal_accuracy",
    "behavior_check",
)  # fmt: skip


def stored_rows(store: Store, project: str, run_id: str) -> list[dict[str, Any]]:
    """Every attempt's row, read with plain SQL (the newest of each key)."""
    return store.query(
        "SELECT * FROM run_results FINAL WHERE project_id = {p:String} AND run_id = {r:String} "
        "ORDER BY case_id, condition, attempt",
        {"p": project, "r": run_id},
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def by_hand(rows: list[dict[str, Any]], seed: int, attempts: int) -> dict[str, Any]:
    """Lift, both intervals, pass@k and utility of the overall metric and of goal_accuracy."""
    cells: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["status"] == "ok" and row["overall"] is not None:
            cells[(row["case_id"], row["condition"])].append(row)
    cases = sorted({case for case, _ in cells})
    means: dict[tuple[str, str], dict[str, float | None]] = {}
    for key, scored in cells.items():
        means[key] = {m: _mean([r[m] for r in scored if r[m] is not None]) for m in METRICS}
    deltas: dict[str, list[float]] = {"overall": [], "goal_accuracy": []}
    for case in cases:
        with_skill, baseline = means.get((case, "with_skill")), means.get((case, "baseline"))
        if with_skill is None or baseline is None:
            continue
        paired = {
            m: with_skill[m] - baseline[m]  # type: ignore[operator]
            for m in METRICS
            if with_skill[m] is not None and baseline[m] is not None
        }
        if paired:
            deltas["overall"].append(sum(paired.values()) / len(paired))
        if "goal_accuracy" in paired:
            deltas["goal_accuracy"].append(paired["goal_accuracy"])
    out: dict[str, Any] = {}
    for metric, values in deltas.items():
        n = len(values)
        lift = sum(values) / n
        half = 1.96 * statistics.stdev(values) / math.sqrt(n)
        rng = np.random.default_rng(seed)
        resampled = np.asarray(values)[rng.integers(0, n, size=(10_000, n))].mean(axis=1)
        low, high = np.quantile(resampled, [0.025, 0.975])
        out[metric] = {
            "n": n,
            "lift": lift,
            "ci_normal": [lift - half, lift + half],
            "ci_bootstrap": [float(low), float(high)],
        }
    for condition in ("with_skill", "baseline"):
        for k in range(1, attempts + 1):
            values = []
            for case in cases:
                judged = [r for r in cells.get((case, condition), []) if r["passed"] is not None]
                n, c = len(judged), sum(1 for r in judged if r["passed"])
                if n >= k:
                    values.append(1 - math.comb(n - c, k) / math.comb(n, k))
            out[f"{condition} pass@{k}"] = _mean(values)
    out["utility"] = _utility(cases, cells)
    return out


def _avg(rows: list[dict[str, Any]], key: str, scale: float = 1.0) -> float:
    return sum(float(r[key]) / scale for r in rows) / len(rows)


def _utility(cases: list[str], cells: dict[tuple[str, str], list[dict[str, Any]]]) -> float:
    """SkillTester's U over the cases with both sides scored (every test case expects the
    skill)."""
    values = []
    for case in cases:
        mine, theirs = cells.get((case, "with_skill"), []), cells.get((case, "baseline"), [])
        if not mine or not theirs:
            continue
        invoked = sum(1 for r in mine if r["skill_invoked"]) / len(mine) >= 0.5
        won = sum(1 for r in mine if r["passed"]) / len(mine) >= 0.5
        they_won = sum(1 for r in theirs if r["passed"]) / len(theirs) >= 0.5
        if not won:
            value = 0.0
        elif not they_won:
            value = 100.0
        else:
            ratios = [
                (_avg(mine, "tokens") + 1) / (_avg(theirs, "tokens") + 1),
                (_avg(mine, "duration_ms", 1000) + 1) / (_avg(theirs, "duration_ms", 1000) + 1),
            ]
            e = sum(min(100.0, max(0.0, 50 - 25 * math.log2(r))) for r in ratios) / 2
            value = 20 + 0.6 * e if e <= 50 else e
        values.append(value if invoked else 0.0)
    return sum(values) / len(values)
