"""Scoring a batch of activations: each chosen evaluator over the activations its policy selects,
less those whose stored verdict stands.

An activation a rebuilt session hands over again is scored again only when what an evaluator is
shown of it changed (:func:`inputs_digest`, kept in each row's ``inputs_hash``): its record
less its rebuild stamp, the skill's version as loaded, the baseline and catalogue it is compared
with, what the agent said after it in the turn. Judges decide by their prompt instead
(``Evaluator.record_decides``). Pure CPU and store reads; the scheduler writes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from skillsight.evaluators._baseline import stored_baseline
from skillsight.evaluators._context import EvaluationContext
from skillsight.evaluators._model import ERROR, Evaluation, evaluation_columns
from skillsight.evaluators._registry import Registry, run_evaluators
from skillsight.evaluators._skill_selection import stored_catalogue
from skillsight.evaluators._views import shared_views
from skillsight.evaluators.scheduler._context import ContextAssembler, LaterMessages
from skillsight.evaluators.scheduler._policy import Policy
from skillsight.store import ScoredBefore
from skillsight.store.records import Activation, VisibleSkill

__all__ = ["Scored", "inputs_digest", "score_activations"]


@dataclass(frozen=True)
class Scored:
    """What scoring a batch of activations produced."""

    evaluations: list[Evaluation]
    sampled_out: int
    """(activation, evaluator) pairs the policies left out."""
    unchanged: int = 0
    """(activation, evaluator) pairs whose stored row stands: the evaluator's record decides
    and its newest row was shown the same inputs (:func:`inputs_digest`), or a judge answered
    with the stored verdict of a row that scored this very activation."""
    digests: Mapping[str, str] = field(default_factory=dict)
    """Per activation id, its record's digest (each row keeps the one it scored)."""
    rebuilt_at: Mapping[str, str] = field(default_factory=dict)
    """Per activation id, the rebuild of it that was scored."""
    started_at: Mapping[str, str] = field(default_factory=dict)
    """Per activation id, its start (the scorecard read models file each row under it)."""
    rerun_id: Mapping[str, str] = field(default_factory=dict)
    """Per activation id of a paired rerun's session, its run (its rows stay out of the
    production scorecards)."""

    def columns(self, evaluated_at_us: int) -> dict[str, list[Any]]:
        """The evaluations as columns of the store's rows (``Store.evaluations.write_columns``),
        each naming the rebuild it scored, the activation's start and, for rerun traffic, its
        run."""
        columns = evaluation_columns(self.evaluations, evaluated_at_us, self.rebuilt_at)
        ids = columns["activation_id"]
        columns["activation_digest"] = [self.digests.get(i, "") for i in ids]
        columns["activation_started_at"] = [self.started_at.get(i, "") for i in ids]
        columns["activation_rerun_id"] = [self.rerun_id.get(i, "") for i in ids]
        return columns


def score_activations(
    activations: Sequence[Activation],
    assembler: ContextAssembler,
    *,
    registry: Registry,
    chosen: Mapping[str, Policy],
) -> Scored:
    """Run each chosen evaluator over the activations its policy selects, less those whose
    stored verdict stands (the same inputs), then add them to their skills' baselines. Pure
    CPU and store reads; writes nothing."""
    contexts: dict[str, EvaluationContext] = {}
    sessions: dict[str, list[Activation]] = {}
    projects: dict[str, list[Activation]] = {}
    for activation in activations:
        sessions.setdefault(activation.session_id, []).append(activation)
        projects.setdefault(activation.project_id, []).append(activation)
    earlier: dict[str, dict[tuple[str, str], Evaluation]] = {}
    stored: dict[str, dict[tuple[str, str], ScoredBefore]] = {}
    for project_id, own in projects.items():
        scores = assembler.stored_scores(project_id, own)
        earlier.update(scores.verdicts)
        stored.update(scores.before)

    said_after = {session: LaterMessages(own) for session, own in sessions.items()}

    def context(activation: Activation) -> EvaluationContext:
        found = contexts.get(activation.activation_id)
        if found is None:
            found = contexts[activation.activation_id] = assembler.context(
                activation, said_after[activation.session_id], earlier.get(activation.activation_id)
            )
        return found

    digests = {a.activation_id: a.content_digest() for a in activations}
    inputs: dict[tuple[str, bool], str] = {}

    def shown(activation: Activation, later: bool) -> str:
        key = (activation.activation_id, later)
        found = inputs.get(key)
        if found is None:
            found = inputs[key] = inputs_digest(
                digests[activation.activation_id], context(activation), later=later
            )
        return found

    out: list[Evaluation] = []
    sampled_out = unchanged = 0
    # one evaluator at a time (each samples its own), sharing each activation's views
    with shared_views():
        for name, policy in chosen.items():
            selected = [a for a in activations if policy.selects(name, a)]
            sampled_out += len(activations) - len(selected)
            evaluator = registry.get(name)
            later = evaluator.reads_later_messages
            key = (name, evaluator.version)
            if evaluator.record_decides and stored:
                fresh = []
                for a in selected:
                    prior = stored.get(a.activation_id, {}).get(key)
                    if prior is None or prior.inputs_hash != shown(a, later):
                        fresh.append(a)
                unchanged += len(selected) - len(fresh)
                selected = fresh
            if not selected:
                continue
            found = run_evaluators(selected, context, registry=registry, names=[name])
            if evaluator.record_decides:
                by_id = {a.activation_id: a for a in selected}
                for evaluation in found:  # a rescore with the same inputs keeps this row
                    if evaluation.label != ERROR:  # an evaluator that failed tries again
                        evaluation.inputs_hash = shown(by_id[evaluation.activation_id], later)
            for evaluation in found:
                if not evaluation.stands:
                    out.append(evaluation)
                    continue
                prior = stored.get(evaluation.activation_id, {}).get(key)
                if (
                    prior is not None
                    and prior.activation_digest == digests[evaluation.activation_id]
                ):
                    unchanged += 1  # its row scored this very activation: it stays as it is
                else:  # the same verdict for a changed rebuild of it: nothing spent now
                    out.append(
                        replace(evaluation, tokens=0, cost_usd=0.0, latency_ms=0.0, stands=False)
                    )
    for activation in activations:
        assembler.observe(activation)
    return Scored(
        out,
        sampled_out,
        unchanged,
        digests,
        {a.activation_id: a.rebuilt_at for a in activations},
        {a.activation_id: a.started_at for a in activations},
        {a.activation_id: a.rerun_id for a in activations if a.rerun_id},
    )


# What inputs_digest encodes with, made once (``json.dumps`` with options builds one per call).
_SHOWN = json.JSONEncoder(ensure_ascii=False)
# What that encoder writes for a text (``encode_basestring``, as ``ensure_ascii=False`` picks).
_TEXT: Callable[[str], str] = json.encoder.encode_basestring
# The catalogue last shown, encoded: one object serves a batch's activations, and its text
# (kilobytes of names and descriptions) is what each digest would otherwise escape again.
_last_catalogue: tuple[object, str] = ((), _TEXT("[]"))


def _encoded_catalogue(catalogue: Sequence[VisibleSkill]) -> str:
    global _last_catalogue
    last, encoded = _last_catalogue
    if catalogue is not last:
        encoded = _TEXT(stored_catalogue(catalogue))
        _last_catalogue = (catalogue, encoded)
    return encoded


def inputs_digest(record_digest: str, context: EvaluationContext, *, later: bool) -> str:
    """A digest of all an evaluator whose record decides (``Evaluator.record_decides``) is
    shown of an activation: its record (``record_digest``), the skill's version as loaded, the
    baseline and catalogue it is compared with, and, ``later`` (an evaluator that reads them),
    what the agent said after it in the turn: the blake2b of the JSON list of them as
    ``json.dumps(..., ensure_ascii=False)`` writes it, put together from its items' encodings
    (the same text, the catalogue's encoded once)."""
    manifest = context.manifest
    version = manifest.version if manifest is not None else None
    text = ", ".join(
        [
            _TEXT(record_digest),
            _TEXT(version) if isinstance(version, str) else _SHOWN.encode(version),
            _TEXT(stored_baseline(context.baseline)),
            _encoded_catalogue(context.catalogue),
            _SHOWN.encode(list(context.later_messages)) if later else "null",
        ]
    )
    return hashlib.blake2b(f"[{text}]".encode(), digest_size=16).hexdigest()
