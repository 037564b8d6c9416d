"""Activations as people read them: each with its evaluations, newest rebuild first.

An evaluation names the rebuild it scored; one that scored an older rebuild than the
activation's current one is ``stale`` until the new scores land, unless that rebuild found the
same activation (its record's digest): then its verdict stands and no new score comes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from skillsight.evaluators import Evaluation, otel_event
from skillsight.reports._clusters import cluster_refs
from skillsight.reports._records import ActivationDetailOut, EvaluationEventOut, EvaluationOut
from skillsight.reports._scorecard import evaluator_order, iso_us
from skillsight.store.records import Activation

if TYPE_CHECKING:  # the store is loaded by whoever hands one in
    from skillsight.store import Store

__all__ = ["evaluation_events", "evaluations_of", "with_evaluations"]


def with_evaluations(
    store: Store, project_id: str, found: Sequence[Activation]
) -> list[ActivationDetailOut]:
    """Activations with their stored evaluations (one query for all of them), those recorded
    under each one's current skill (as its skill's scorecard counts them; one recorded under a
    skill it no longer has scored another record of it); serve them with
    ``response_model_exclude_unset``."""
    ids, skills = [a.activation_id for a in found], [a.skill_name for a in found]
    rows = store.evaluations.of(project_id, ids, skills=skills)
    clusters = cluster_refs(store, project_id, ids)
    out = []
    for activation in found:
        record = activation.model_dump()
        scored = rows[activation.activation_id]
        if scored:  # left unset otherwise, so that the route leaves the keys out
            record["evaluations"] = evaluations_of(scored, activation)
            record["evaluation_events"] = evaluation_events(scored)
        cluster = clusters.get(activation.activation_id)
        if cluster is not None:
            record["cluster"] = cluster
        out.append(ActivationDetailOut.model_validate(record))
    return out


def evaluations_of(
    rows: Sequence[Mapping[str, Any]], activation: Activation | None = None
) -> list[EvaluationOut]:
    """Stored evaluation rows as the API shows them; ``activation`` is their activation's
    current record: a row that scored an older rebuild of it is stale, unless that rebuild
    found the same activation."""
    rebuilt_at = activation.rebuilt_at if activation is not None else ""
    digest = ""
    out = []
    for row in rows:
        evaluation = Evaluation.from_row(row).to_dict()
        evaluation.pop("activation_id")
        scored = str(row.get("activation_rebuilt_at") or "")
        stale = bool(scored) and scored < rebuilt_at
        if stale and activation is not None and row.get("activation_digest"):
            digest = digest or activation.content_digest()
            stale = row["activation_digest"] != digest
        out.append(
            EvaluationOut(
                **evaluation,
                evaluated_at=iso_us(row["evaluated_at_us"]),
                activation_rebuilt_at=scored,
                stale=stale,
            )
        )
    return sorted(out, key=lambda e: (evaluator_order(e.evaluator), e.version))


def evaluation_events(rows: Sequence[Mapping[str, Any]]) -> list[EvaluationEventOut]:
    """The same evaluations as OTel ``gen_ai.evaluation.result`` events."""
    events = [(Evaluation.from_row(row), row) for row in rows]
    events.sort(key=lambda pair: (evaluator_order(pair[0].evaluator), pair[0].version))
    return [EvaluationEventOut(**otel_event(evaluation)) for evaluation, _ in events]
