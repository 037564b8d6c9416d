"""``skillsight bench eval --prompts``: a session of many prompts, handed to the scheduler after
each prompt's rebuild, as Claude Code's one trace per prompt makes the finalizer do.

Each hand-over holds every activation of the session so far (the earlier ones with a newer
rebuild stamp and nothing else changed, the new prompt's new), as stamped copies of the same
objects carrying their digests, as the finalizer hands them over (its pass makes the digests,
outside what this measures). The scheduler scores what it must and writes it to a fresh
embedded store; the replay runs twice, once as the scheduler runs (an activation whose inputs
are those its stored rows scored keeps them) and once with that off (the scheduler before it:
everything scored and written again), and reports the rows written and the CPU of the
hand-overs.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.eval import CHEAP, synthetic_activations
from skillsight.evaluators.scheduler import ContextAssembler, EvaluationScheduler
from skillsight.store import EmbeddedStore

PROJECT = "prompts"


def run_prompts_eval_bench(
    *, prompts: int = 20, per_prompt: int = 5, console: Console | None = None
) -> dict[str, Any]:
    """Rows written and CPU-seconds of ``prompts`` hand-overs, with and without keeping the
    verdicts of unchanged activations."""
    console = console or Console()
    found, _ = synthetic_activations(prompts * per_prompt)
    session = [  # one session, a turn (request) per prompt
        a.model_copy(
            update={
                "session_id": "s1",
                "project_id": PROJECT,
                "request_step_id": 1000 * (i // per_prompt),
            }
        )
        for i, a in enumerate(found)
    ]
    report: dict[str, Any] = {"prompts": prompts, "activations_per_prompt": per_prompt}
    for label, keep in (("kept", True), ("rescored", False)):
        written, unchanged, cpu = _replay(session, prompts, per_prompt, keep=keep)
        report[label] = {"rows_written": written, "unchanged": unchanged, "cpu_s": round(cpu, 3)}
    kept, rescored = report["kept"], report["rescored"]
    console.print(
        f"session of {prompts} prompts x {per_prompt} activations, handed over after each, "
        f"{len(CHEAP)} evaluators: {kept['rows_written']:,} evaluation rows written "
        f"({kept['unchanged']:,} verdicts kept, {kept['cpu_s']:.2f} CPU-s) against "
        f"{rescored['rows_written']:,} when every hand-over is scored again "
        f"({rescored['cpu_s']:.2f} CPU-s)"
    )
    return report


def _replay(
    session: list[Any], prompts: int, per_prompt: int, *, keep: bool
) -> tuple[int, int, float]:
    with tempfile.TemporaryDirectory(prefix="skillsight-bench-eval-prompts-") as tmp:
        store = EmbeddedStore(Path(tmp) / "store")
        try:
            store.migrate()

            async def go() -> tuple[int, int, float]:
                # without recall the scheduler reads nothing it scored before: all is rescored
                assembler = ContextAssembler(store, recall=keep)
                async with EvaluationScheduler(
                    store, evaluators=CHEAP, assembler=assembler
                ) as scheduler:
                    cpu = 0.0
                    for prompt in range(1, prompts + 1):
                        stamp = f"2026-01-01T00:00:{prompt:02d}.000000Z"
                        # as the finalizer hands them over: stamped copies of the rebuild's
                        # own objects, whose digests its pass made (and which the session's
                        # next rebuild keeps)
                        for a in session[(prompt - 1) * per_prompt : prompt * per_prompt]:
                            a.content_digest()
                        handed = [
                            a.model_copy(update={"rebuilt_at": stamp})
                            for a in session[: prompt * per_prompt]
                        ]
                        started = time.process_time()
                        await scheduler.score(PROJECT, handed)
                        cpu += time.process_time() - started
                    stats = scheduler.stats
                    return stats.evaluations_written, stats.unchanged, cpu

            return asyncio.run(go())
        finally:
            store.close()
