"""What a run records about each cluster: size, spread, time, dominant cause, exemplars."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from skillsight.clustering._collect import Failure
from skillsight.clustering._fit import centroid, medoids, spread_exemplars
from skillsight.clustering._text import SEVERITY_ORDER
from skillsight.clustering._trend import DAY_US, HOUR_US, HOURS, bucket_counts
from skillsight.clustering._vectors import Matrix, pack

# A severity names the cluster when at least this share of its members reach it.
_SEVERITY_SHARE = 0.25


@dataclass(frozen=True)
class Cause:
    """The dominant failing evaluator of some failures, and its dominant finding kind."""

    evaluator: str
    kind: str
    evaluators: dict[str, int]
    kinds: dict[str, int]


def cause_of(failures: Sequence[Failure]) -> Cause:
    evaluators = Counter(e for f in failures for e in f.evaluators)
    kinds = Counter(k for f in failures for k in dict.fromkeys(f.kinds))
    evaluator = _most_common(evaluators)
    of_evaluator = Counter({k: n for k, n in kinds.items() if k.partition(":")[0] == evaluator})
    kind = _most_common(of_evaluator).partition(":")[2]
    return Cause(evaluator, kind, dict(evaluators.most_common()), dict(kinds.most_common()))


def severity_of_cluster(failures: Sequence[Failure]) -> str:
    """The most urgent severity that at least a quarter of the members reach."""
    counts = Counter(f.severity for f in failures)
    reached = 0
    for level in SEVERITY_ORDER:
        reached += counts.get(level, 0)
        if reached >= _SEVERITY_SHARE * len(failures):
            return level
    return SEVERITY_ORDER[-1]


def cluster_row(
    cluster_id: str,
    run_id: str,
    members: Sequence[Failure],
    vectors: Matrix,
    *,
    now_us: int,
    window_days: int,
    label: str,
    terms: Sequence[str],
    cause: Cause,
    split_from: str = "",
    exemplars: int = 3,
    spread: int = 8,
) -> dict[str, Any]:
    """The ``clusters`` row of one cluster of this run (``vectors`` row i is member i)."""
    started = [m.started_us for m in members]
    first = int(np.argmin(started))
    skills = Counter(m.skill_name for m in members)
    versions: dict[str, int] = {}
    for member in sorted(members, key=lambda m: m.started_us):
        versions.setdefault(member.skill_version, member.started_us)
    return {
        "cluster_id": cluster_id,
        "run_id": run_id,
        "active": True,
        "label": label,
        "terms": list(terms),
        "evaluator": cause.evaluator,
        "kind": cause.kind,
        "severity": severity_of_cluster(members),
        "size": len(members),
        "sessions": len({m.session_id for m in members}),
        "skills": [s for s, _ in skills.most_common()],
        "versions": [v for v in versions if v],
        "first_bad_version": members[first].skill_version,
        "first_seen": min(started),
        "last_seen": max(started),
        "hourly": bucket_counts(started, now_us, HOUR_US, HOURS),
        "daily": bucket_counts(started, now_us, DAY_US, window_days),
        "counted_at": now_us,
        "evaluators": json.dumps(cause.evaluators),
        "kinds": json.dumps(cause.kinds),
        "exemplar_activation_ids": [members[i].activation_id for i in medoids(vectors, exemplars)],
        "exemplars": [pack(vectors[i]) for i in spread_exemplars(vectors, spread)],
        "centroid": pack(centroid(vectors)),
        "split_from": split_from,
        "merged_into": "",
        "updated_at": now_us,
    }


def retired_row(row: dict[str, Any], run_id: str, now_us: int, merged_into: str) -> dict[str, Any]:
    """A cluster this run did not find again: kept (its id stays valid) with no members."""
    return {
        **row,
        "run_id": run_id,
        "active": False,
        "size": 0,
        "sessions": 0,
        "hourly": [0] * HOURS,
        "daily": [0] * len(row["daily"]),
        "counted_at": now_us,
        "merged_into": merged_into or row["merged_into"],
        "updated_at": now_us,
    }


def _most_common(counter: Counter[str]) -> str:
    if not counter:
        return ""
    best = max(counter.values())
    return min(k for k, n in counter.items() if n == best)


__all__ = ["Cause", "cause_of", "cluster_row", "retired_row", "severity_of_cluster"]
