"""Backfill: score stored activations with the same code the online scheduler runs.

``skillsight eval run`` uses it for activations rebuilt before the scheduler ran (a store filled
by ``skillsight ingest``, a new evaluator version, a session whose writes ran out of retries).
Activations are scored oldest first so each one's baseline holds the activations before it,
as online; rows replace earlier ones of the same (activation, evaluator, version).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from skillsight.errors import SkillsightError
from skillsight.evaluators._model import ERROR
from skillsight.evaluators._registry import Registry, deterministic_registry
from skillsight.evaluators.scheduler._context import ContextAssembler
from skillsight.evaluators.scheduler._policy import policies
from skillsight.evaluators.scheduler._scoring import score_activations
from skillsight.store import Store

MAX_ACTIVATIONS = 10_000_000


@dataclass
class BackfillReport:
    activations: int = 0
    evaluations: int = 0
    scored: int = 0
    failed: int = 0
    """Evaluations that passed ``False``."""
    errors: int = 0
    """Evaluators that raised (``error`` label)."""
    seconds: float = 0.0


def backfill(
    store: Store,
    project_id: str,
    *,
    since: datetime | None = None,
    skill: str = "",
    evaluators: Iterable[str] | None = None,
    registry: Registry | None = None,
    rates: Mapping[str, float] | None = None,
    trajectories: bool = False,
    judges: Collection[str] = (),
    batch: int = 500,
    on_total: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> BackfillReport:
    """Score every current activation of the project (started since ``since``, of ``skill``)
    with the chosen evaluators (all of ``registry`` by default, each at its ``rates`` share)
    and store the rows. ``trajectories`` reads each session's trajectory for the judges;
    ``judges``: the judges among them, whose stored verdicts are read (a judge shown the same
    prompt answers with its own)."""
    started = time.perf_counter()
    registry = registry or deterministic_registry()
    names = list(evaluators) if evaluators is not None else registry.names
    for name in names:
        registry.get(name)  # an unknown name fails before any work
    chosen = policies(names, rates=rates)
    found = store.activations.find(project_id, skill=skill, since=since, limit=MAX_ACTIVATIONS)
    found.reverse()  # oldest first: baselines grow as they did online
    if on_total is not None:
        on_total(len(found))
    # baselines grow in start order instead of being seeded or recalled
    assembler = ContextAssembler(
        store, seed=False, recall=False, trajectories=trajectories, judges=judges
    )
    report = BackfillReport(activations=len(found))
    for offset in range(0, len(found), batch):
        chunk = found[offset : offset + batch]
        scored = score_activations(chunk, assembler, registry=registry, chosen=chosen)
        stamp = time.time_ns() // 1000
        try:
            store.evaluations.write_columns(project_id, scored.columns(stamp))
        except SkillsightError as exc:
            message = f"writing evaluations failed after {offset} activations: {exc}"
            raise SkillsightError(message) from exc
        report.evaluations += len(scored.evaluations)
        report.scored += sum(1 for e in scored.evaluations if e.score is not None)
        report.failed += sum(1 for e in scored.evaluations if e.passed is False)
        report.errors += sum(1 for e in scored.evaluations if e.label == ERROR)
        if on_progress is not None:
            on_progress(len(chunk))
    report.seconds = time.perf_counter() - started
    return report
