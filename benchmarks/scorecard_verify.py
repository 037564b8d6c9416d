"""``skillsight bench scorecard --verify``: the read models' answers against the raw rows'.

On the benchmark's store, for some skills, every window and every version: the scorecard the
service reads (the read models of migration 0012) is compared with the one the raw rows give
(``Scorecards.raw_rows``), and the gate's rows likewise. Then a share of two days' evaluations
of the popular skill is rescored through the store's write path (the window's first day and the
newest day), compared again while those days are marked (read from the copied rows), refreshed,
and compared once more. Counts must be equal; means may differ in their last bits (sums added in
another order), and the largest such difference is reported.

The rescores are written into the store: run it on a store that is not kept, or accept that the
kept one has a few more rows.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.synthetic_store import skill_version
from skillsight.errors import SkillsightError
from skillsight.reports import window_start
from skillsight.store import Store

_WINDOWS = ("7d", "30d", "all")
_GATES = (("security", 1.0), ("efficiency", 0.3), ("", 0.5))


class Mismatch(SkillsightError):
    """The read models and the raw rows disagree."""


class _Check:
    def __init__(self) -> None:
        self.compared = 0
        self.largest_float_gap = 0.0

    def equal(self, raw: Any, fast: Any, where: str) -> None:
        if isinstance(raw, dict) and isinstance(fast, dict):
            if raw.keys() != fast.keys():
                raise Mismatch(f"{where}: keys {sorted(raw)} != {sorted(fast)}")
            for key in raw:
                self.equal(raw[key], fast[key], f"{where}.{key}")
        elif isinstance(raw, list) and isinstance(fast, list):
            if len(raw) != len(fast):
                raise Mismatch(f"{where}: {len(raw)} rows raw, {len(fast)} from the read models")
            for index, (a, b) in enumerate(zip(raw, fast, strict=True)):
                self.equal(a, b, f"{where}[{index}]")
        elif isinstance(raw, float) and isinstance(fast, float):
            gap = abs(raw - fast)
            if not math.isclose(raw, fast, rel_tol=1e-9, abs_tol=1e-12):
                raise Mismatch(f"{where}: {raw} raw, {fast} from the read models")
            self.largest_float_gap = max(self.largest_float_gap, gap)
        elif raw != fast:
            raise Mismatch(f"{where}: {raw!r} raw, {fast!r} from the read models")

    def compare(self, store: Store, project: str, skills: list[str], end: datetime) -> None:
        cards = store.scorecards
        for skill in skills:
            versions = ["", *(skill_version(skill, i) for i in range(3))]
            for window in _WINDOWS:
                since = window_start(window, end)
                for version in versions:
                    where = f"{skill} {window} version {version[:8] or 'all'}"
                    raw = cards.raw_rows(project, skill, version=version, since=since)
                    fast = cards.rows(project, skill, version=version, since=since)
                    self.equal(raw, fast, where)
                    self.compared += 1
                for evaluator, below in _GATES:
                    args: dict[str, Any] = {"evaluator": evaluator, "since": since, "limit": 20}
                    raw_rows = cards.raw_below(project, skill, below, **args)
                    self.equal(raw_rows, cards.below(project, skill, below, **args), skill)
                    self.compared += 1


_DAY_EVALUATIONS = """
SELECT activation_id, evaluator, evaluator_version, skill_version, score
FROM evaluations
WHERE project_id = {project:String} AND skill_name = {skill:String}
  AND activation_id IN (
    SELECT activation_id FROM activations
    WHERE project_id = {project:String} AND skill_name = {skill:String}
      AND toDate(started_at) = {day:Date})
  AND sipHash64('bench-rescore', activation_id) % 10 = 0
ORDER BY activation_id, evaluator, evaluated_at DESC
LIMIT 1 BY activation_id, evaluator"""


def _rescore(store: Store, project: str, skill: str, day: str) -> int:
    """A tenth of a day's activations rescored (failures cleared, passes halved), half by a
    newer evaluator version, through the store's write path."""
    now_us = time.time_ns() // 1000
    rows: list[dict[str, Any]] = []
    for r in store.query(_DAY_EVALUATIONS, {"project": project, "skill": skill, "day": day}):
        score = r["score"]
        new = None if score is None else (1.0 if score < 1 else 0.5)
        rows.append(
            {
                "activation_id": r["activation_id"],
                "evaluator": r["evaluator"],
                "evaluator_version": "3" if len(rows) % 2 else str(r["evaluator_version"]),
                "skill_name": skill,
                "skill_version": r["skill_version"],
                "score": new,
                "passed": None if new is None else new >= 1.0,
                "label": "not_applicable" if new is None else "rescored",
                "reason": "bench rescore",
                "evaluated_at_us": now_us,
            }
        )
    return store.evaluations.write(project, rows)


def verify(
    store: Store, project: str, skills: list[str], popular: str, end: datetime
) -> dict[str, Any]:
    """Compare, rescore, compare, refresh, compare; raise :class:`Mismatch` on a difference."""
    check = _Check()
    started = time.perf_counter()
    check.compare(store, project, skills, end)
    first_day = (window_start("7d", end) or end).date().isoformat()
    days = [first_day, end.date().isoformat(), (end - timedelta(days=3)).date().isoformat()]
    rescored = sum(_rescore(store, project, popular, day) for day in days)
    rollups = store.scorecards.rollups
    rollups.clock_margin_us = 0  # one process, one clock: the refresh follows the marks
    marked = sum(1 for s in rollups.day_states(project, popular) if not s.clean)
    check.compare(store, project, [popular], end)
    refresh_started = time.perf_counter()
    refreshed = rollups.refresh_dirty()
    refresh_s = time.perf_counter() - refresh_started
    check.compare(store, project, [popular], end)
    return {
        "skills": skills,
        "comparisons": check.compared,
        "largest_mean_gap": check.largest_float_gap,
        "rescored_rows": rescored,
        "marked_days": marked,
        "refreshed_days": refreshed,
        "refresh_s": round(refresh_s, 3),
        "verify_s": round(time.perf_counter() - started, 1),
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
