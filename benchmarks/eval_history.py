"""``skillsight bench eval --history``: the scheduler's hand-overs in a project that has history.

``run_eval_bench`` scores activations without a store, and ``--prompts`` writes to an empty
one, so what the scheduler's reads cost in a project that has stored months of evaluations
does not show there. This hands the same batches of activations to the scheduler (the six cheap
evaluators, a fresh embedded store each time) in an empty project and in one already holding
``history`` evaluation rows of other activations of the same skills, twice each: first as new
activations (scored and written), then again unchanged (the stored verdicts read and kept, as a
session rebuilt after its next prompt hands them over).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.eval import CHEAP, synthetic_activations
from skillsight.evaluators.scheduler import EvaluationScheduler
from skillsight.store import EmbeddedStore
from skillsight.store.records import Activation

PROJECT = "history"
_EVALUATORS = 6  # rows of history per activation


def run_eval_history_bench(
    *, history: int = 2_000_000, batch: int = 64, batches: int = 5
) -> dict[str, Any]:
    """CPU microseconds per activation of the scheduler's hand-overs, new and handed over again,
    with no history and with ``history`` evaluation rows stored (medians over ``batches``
    hand-overs of ``batch`` activations)."""
    found, _ = synthetic_activations(batch * batches)
    handed = [
        [a.model_copy(update={"project_id": PROJECT}) for a in found[n * batch : (n + 1) * batch]]
        for n in range(batches)
    ]
    skills = sorted({a.skill_name for a in found})
    report: dict[str, Any] = {
        "history_rows": history,
        "batch": batch,
        "batches": batches,
        "evaluators": len(CHEAP),
    }
    for label, rows in (("empty", 0), ("history", history)):
        new, again, kept = _replay(handed, skills, rows)
        report[label] = {
            "new_us_per_activation": round(new / batch * 1e6),
            "again_us_per_activation": round(again / batch * 1e6),
            "kept_again": kept,
        }
    return report


def _replay(
    handed: list[list[Activation]], skills: list[str], rows: int
) -> tuple[float, float, int]:
    """Median CPU seconds of a new hand-over and of the same again, and the verdicts the
    hand-overs again kept (the scheduler's ``unchanged``: every one, when the stored scores
    are read back)."""
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-eval-history-") as tmp:
        store = EmbeddedStore(Path(tmp) / "store")
        try:
            store.migrate()
            if rows:
                _history(store, skills, rows)

            async def go() -> tuple[float, float, int]:
                new: list[float] = []
                again: list[float] = []
                kept = 0
                async with EvaluationScheduler(store, evaluators=CHEAP) as scheduler:
                    for activations in handed:
                        for times in (new, again):
                            unchanged = scheduler.stats.unchanged
                            started = time.process_time()
                            await scheduler.score(PROJECT, activations)
                            times.append(time.process_time() - started)
                        kept += scheduler.stats.unchanged - unchanged
                return statistics.median(new), statistics.median(again), kept

            return asyncio.run(go())
        finally:
            store.close()


def _history(store: EmbeddedStore, skills: list[str], rows: int) -> None:
    """``rows`` evaluation rows of other activations of these skills, six evaluators each, in
    one insert, merged into one part as an old project's rows end up; their digests copied as a
    service's refresher copies them."""
    store.execute(
        f"""
        INSERT INTO evaluations (project_id, activation_id, evaluator, evaluator_version,
                                 skill_name, score, passed, label, evaluated_at)
        SELECT {{project:String}}, lower(hex(MD5(toString(intDiv(number, {_EVALUATORS})))))
                                   AS activation,
               concat('history-', toString(number % {_EVALUATORS})), '1',
               arrayElement({{skills:Array(String)}},
                            1 + cityHash64(activation) % length({{skills:Array(String)}})),
               1.0, true, 'pass', now64(6) - toIntervalSecond(number)
        FROM numbers({int(rows)})""",
        {"project": PROJECT, "skills": skills},
    )
    store.execute("OPTIMIZE TABLE evaluations FINAL")
    # the read model refresher's first pass in a service: the rows' digests copied (migration
    # 0026), which the scheduler reads from then on
    store.evaluations.backfill_digests()
    store.execute("OPTIMIZE TABLE evaluation_digests FINAL")
