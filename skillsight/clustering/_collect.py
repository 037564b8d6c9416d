"""Failing activations, each with its failure text and vector, computed once and stored.

The store says which evaluations fail now (:meth:`Failures.failing`: the newest row per
activation and evaluator, of the activation's newest rebuild). Thresholds set per evaluator, or
per skill and evaluator, replace an evaluator's own verdict for its scored rows. A failure's
text and vector are keyed by its *source*: the rebuild and the failing evaluation rows (their
evaluator, version and time). While the source is unchanged, the stored text and vector are
reused; a rebuild or a rescore makes a new one.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from skillsight.clustering._text import failure_text
from skillsight.clustering._vectors import (
    Matrix,
    cause_features,
    combined,
    embed_texts,
    pack,
    unpack_all,
)
from skillsight.errors import ConfigError
from skillsight.evaluators import Embedder, Evaluation
from skillsight.store import FailingEvaluation, Store, StoredFailure

_CHUNK = 5_000  # failures whose texts are built, embedded and stored together


@dataclass(frozen=True)
class Thresholds:
    """Scores below which an evaluation fails, overriding the evaluator's own ``passed``:
    per evaluator, and per (skill, evaluator)."""

    by_evaluator: Mapping[str, float] = field(default_factory=dict)
    by_skill: Mapping[tuple[str, str], float] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: str) -> Thresholds:
        """``evaluator=0.5,skill:evaluator=0.8`` (the ``cluster_fail_below`` setting)."""
        by_evaluator: dict[str, float] = {}
        by_skill: dict[tuple[str, str], float] = {}
        for item in filter(None, (part.strip() for part in raw.split(","))):
            name, sep, value = item.partition("=")
            try:
                bound = float(value)
            except ValueError:
                bound = -1.0
            if not sep or not name or not 0.0 <= bound <= 1.0:
                raise ConfigError(
                    f"cluster_fail_below: {item!r} is not evaluator=score or "
                    "skill:evaluator=score with a score in [0, 1] (SKILLSIGHT_CLUSTER_FAIL_BELOW)"
                )
            skill, colon, evaluator = name.rpartition(":")
            if colon:
                by_skill[skill, evaluator] = bound
            else:
                by_evaluator[evaluator] = bound
        return cls(by_evaluator, by_skill)

    @property
    def scored(self) -> list[str]:
        """Evaluators whose scored rows the store must return (thresholds apply to them)."""
        return sorted(set(self.by_evaluator) | {e for _, e in self.by_skill})

    def fails(self, row: FailingEvaluation) -> bool:
        bound = self.by_skill.get(
            (row["skill_name"], row["evaluator"]), self.by_evaluator.get(row["evaluator"])
        )
        if bound is None or row["score"] is None:
            return row["passed"] is False
        return float(row["score"]) < bound


@dataclass(frozen=True)
class Failure:
    """A failing activation with its text and vector."""

    activation_id: str
    session_id: str
    skill_name: str
    skill_version: str
    started_us: int
    source_key: str
    text: str
    evaluators: tuple[str, ...]
    kinds: tuple[str, ...]
    severity: str


def failing_now(
    store: Store,
    project_id: str,
    since_us: int,
    thresholds: Thresholds,
    activation_ids: Sequence[str] | None = None,
) -> dict[str, list[FailingEvaluation]]:
    """Per failing activation started since ``since_us``, its failing evaluation rows."""
    out: dict[str, list[FailingEvaluation]] = {}
    rows = store.failures.failing(
        project_id, since_us, scored=thresholds.scored, activation_ids=activation_ids
    )
    for row in rows:
        if thresholds.fails(row):
            out.setdefault(row["activation_id"], []).append(row)
    return out


def source_key(rows: Sequence[FailingEvaluation]) -> str:
    """What a failure text was computed from: the rebuild and the failing rows."""
    evaluations = (
        f"{r['evaluator']}\x1f{r['evaluator_version']}\x1f{r['evaluated_at_us']}" for r in rows
    )
    parts = [rows[0]["rebuilt_at"], *sorted(evaluations)]
    return hashlib.sha256("\x1e".join(parts).encode()).hexdigest()[:24]


def with_vectors(
    store: Store,
    embedder: Embedder,
    project_id: str,
    failing: Mapping[str, Sequence[FailingEvaluation]],
    stored: Sequence[StoredFailure],
    *,
    scored: Sequence[str] = (),
    pending: list[dict[str, Any]] | None = None,
) -> tuple[list[Failure], Matrix]:
    """The failures of ``failing``, in activation-id order, and their vectors: stored ones
    reused when their source is unchanged, the others built, embedded and stored now (a few
    thousand at a time). An activation whose record or evaluations are gone meanwhile keeps
    its stored text, or is left out when it has none. ``scored`` are the evaluators whose
    passing rows may fail by a threshold (:attr:`Thresholds.scored`). Given ``pending``, the
    new ``failures`` rows are appended there for the caller to write, instead of written."""
    known = {s["activation_id"]: s for s in stored}
    keys = {a: source_key(rows) for a, rows in failing.items()}
    model = getattr(embedder, "name", "")
    fresh = [
        a
        for a in failing
        if (s := known.get(a)) is None or s["source_key"] != keys[a] or s["model"] != model
    ]
    built: dict[str, tuple[Failure, bytes]] = {}
    for start in range(0, len(fresh), _CHUNK):
        chunk = {a: failing[a] for a in fresh[start : start + _CHUNK]}
        built.update(_build(store, embedder, project_id, chunk, keys, scored, pending))
    order = sorted(failing)
    failures: list[Failure] = []
    blobs: list[bytes] = []
    for activation_id in order:
        if activation_id in built:
            failure, blob = built[activation_id]
        elif activation_id in known:
            failure, blob = _stored_failure(known[activation_id]), known[activation_id]["embedding"]
        else:
            continue
        failures.append(failure)
        blobs.append(blob)
    if not blobs:
        return failures, np.zeros((0, 0), dtype=np.float32)
    return failures, unpack_all(blobs, len(blobs[0]) // 2)


def with_causes(failures: Sequence[Failure], vectors: Matrix, weight: float) -> Matrix:
    """The failures' text vectors with their cause features appended (see ``combined``)."""
    if weight <= 0 or not failures:
        return vectors
    causes = np.vstack([cause_features(f.kinds, f.evaluators) for f in failures])
    return combined(vectors, causes, weight)


def _stored_failure(row: StoredFailure) -> Failure:
    return Failure(
        activation_id=row["activation_id"],
        session_id=row["session_id"],
        skill_name=row["skill_name"],
        skill_version=row["skill_version"],
        started_us=int(row["started_us"]),
        source_key=row["source_key"],
        text=row["text"],
        evaluators=tuple(row["evaluators"]),
        kinds=tuple(row["kinds"]),
        severity=row["severity"],
    )


def _build(
    store: Store,
    embedder: Embedder,
    project_id: str,
    failing: Mapping[str, Sequence[FailingEvaluation]],
    keys: Mapping[str, str],
    scored: Sequence[str],
    pending: list[dict[str, Any]] | None,
) -> dict[str, tuple[Failure, bytes]]:
    if not failing:
        return {}
    rebuilds = [(a, rows[0]["rebuilt_at"]) for a, rows in failing.items()]
    records = {r.activation_id: r for r in store.failures.records(project_id, rebuilds)}
    wanted = {
        (a, r["evaluator"], r["evaluator_version"], r["evaluated_at_us"])
        for a, rows in failing.items()
        for r in rows
    }
    evaluations: dict[str, list[Evaluation]] = {}
    for row in store.failures.texts(project_id, list(failing), scored=scored):
        key = (
            row["activation_id"],
            row["evaluator"],
            row["evaluator_version"],
            row["evaluated_at_us"],
        )
        if key in wanted:
            evaluations.setdefault(str(row["activation_id"]), []).append(Evaluation.from_row(row))
    texts = {
        a: failure_text(records[a], evaluations[a])
        for a in failing
        if a in records and a in evaluations
    }
    ordered = sorted(texts)
    vectors = embed_texts(embedder, [texts[a].text for a in ordered])
    now_us = time.time_ns() // 1000
    out: dict[str, tuple[Failure, bytes]] = {}
    rows_out = []
    model = getattr(embedder, "name", "")
    for activation_id, vector in zip(ordered, vectors, strict=True):
        head, text = failing[activation_id][0], texts[activation_id]
        failure = Failure(
            activation_id=activation_id,
            session_id=head["session_id"],
            skill_name=head["skill_name"],
            skill_version=head["skill_version"],
            started_us=int(head["started_us"]),
            source_key=keys[activation_id],
            text=text.text,
            evaluators=text.evaluators,
            kinds=text.kinds,
            severity=text.severity,
        )
        blob = pack(vector)
        out[activation_id] = (failure, blob)
        rows_out.append(
            {
                "activation_id": activation_id,
                "source_key": failure.source_key,
                "session_id": failure.session_id,
                "skill_name": failure.skill_name,
                "skill_version": failure.skill_version,
                "started_at": failure.started_us,
                "evaluators": list(failure.evaluators),
                "kinds": list(failure.kinds),
                "severity": failure.severity,
                "text": failure.text,
                "model": model,
                "embedding": blob,
                "computed_at": now_us,
            }
        )
    if pending is None:
        store.failures.write(project_id, rows_out)
    else:
        pending += rows_out
    return out


__all__ = ["Failure", "Thresholds", "failing_now", "source_key", "with_causes", "with_vectors"]
