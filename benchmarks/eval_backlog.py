"""``skillsight bench eval --backlog``: the scheduler scoring a backlog, as the service does.

``run_eval_bench`` times the six cheap evaluators alone. The service does more for each
activation: the scheduler assembles its context (the skill's manifest from the catalogue, the
baseline before it, what the agent said after it), reads the verdicts stored for the batch,
digests what each evaluator is shown, builds the rows and writes them (four inserts:
``evaluations``, their digests, the scorecard rows and their hour marks). When sessions queue
up, a worker takes up to 256 of them at once and writes them together, so under load a
hand-over holds about a thousand activations and the inserts' fixed cost is spread over them.

This hands ``batches`` hand-overs of ``batch`` new activations (scenario-sized, the skills in
the project's catalogue) to :meth:`EvaluationScheduler.score`, on a fresh embedded store, in
the garbage collector settings of a service process, and splits the CPU per activation into
the evaluators, the rest of the scoring (contexts, stored verdicts, digests, the rows'
columns) and the write (the Arrow batch and the inserts). The activations carry the record
text the finalizer's write made (``stampless_json``), as the ones it hands over do.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.eval import CHEAP, synthetic_activations
from benchmarks.rebuild_prompts import CpuClock
from skillsight.config import Settings
from skillsight.evaluators.scheduler import EvaluationScheduler
from skillsight.store import EmbeddedStore

PROJECT = "backlog"


def run_eval_backlog_bench(*, batch: int = 1024, batches: int = 5) -> dict[str, Any]:
    """CPU microseconds per activation of the scheduler's hand-overs of ``batch`` new
    activations, split into the evaluators, the rest of the scoring and the write (medians of
    ``batches`` hand-overs, after one untimed)."""
    found, skills = synthetic_activations(batch * (batches + 1), rows=3)
    handed = [
        [a.model_copy(update={"project_id": PROJECT}) for a in found[n * batch : (n + 1) * batch]]
        for n in range(batches + 1)
    ]
    for activations in handed:
        for activation in activations:
            activation.stampless_json()  # what the finalizer's write of the rebuild made
    evaluators, write = CpuClock(), CpuClock()
    defaults = gc.get_threshold()
    young = Settings.load().gc_young_threshold
    totals: list[float] = []
    parts: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-eval-backlog-") as tmp:
        store = EmbeddedStore(Path(tmp) / "store")
        try:
            store.migrate()
            store.skills.insert(PROJECT, [manifest for manifest, _ in skills])
            writes = store.evaluations.write_columns
            store.evaluations.write_columns = write.wrap(writes)  # type: ignore[method-assign]

            async def replay() -> int:
                written = 0
                scheduler = EvaluationScheduler(store, evaluators=CHEAP)
                for name in CHEAP:  # each evaluator's batches, timed on the instance
                    evaluator = scheduler.registry.get(name)
                    evaluator.evaluate_many = evaluators.wrap(  # type: ignore[method-assign]
                        evaluator.evaluate_many
                    )
                async with scheduler:
                    for index, activations in enumerate(handed):
                        evaluators.cpu = write.cpu = 0.0
                        started = time.process_time()
                        written += len(await scheduler.score(PROJECT, activations))
                        if index:  # the first warms the catalogue, imports and caches
                            totals.append(time.process_time() - started)
                            parts.append((evaluators.cpu, write.cpu))
                return written

            gc.collect()
            gc.freeze()
            if young > 0:  # as a service process collects (skillsight.runtime.settle_heap)
                gc.set_threshold(young, *defaults[1:])
            written = asyncio.run(replay())
        finally:
            gc.set_threshold(*defaults)
            gc.unfreeze()
            store.close()
    total = statistics.median(totals)
    evaluators_s = statistics.median(p[0] for p in parts)
    write_s = statistics.median(p[1] for p in parts)
    per = 1e6 / batch
    return {
        "batch": batch,
        "batches": batches,
        "evaluators": len(CHEAP),
        "rows_written": written,
        "us_per_activation": round(total * per, 1),
        "activations_per_cpu_s": round(batch / total),
        "evaluators_us": round(evaluators_s * per, 1),
        "scoring_rest_us": round((total - evaluators_s - write_s) * per, 1),
        "write_us": round(write_s * per, 1),
    }
