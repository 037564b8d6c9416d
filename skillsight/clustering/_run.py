"""A clustering run over one project's failures in the window: texts, fit, ids, facts, write.

1. collect the failing activations started in the window, each with its text and vector
   (stored ones reused, new ones embedded and stored);
2. fit HDBSCAN (after a PCA when configured);
3. match the clusters found to the previous ones (stable ids, splits, merges);
4. label each cluster, count its facts, and move statuses (new clusters, regressions);
5. write memberships, clusters and status changes, then the run row that commits them.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from skillsight.clustering._collect import (
    Failure,
    Thresholds,
    failing_now,
    with_causes,
    with_vectors,
)
from skillsight.clustering._facts import cause_of, cluster_row, retired_row
from skillsight.clustering._fit import FitOptions, centroid, fit
from skillsight.clustering._labels import cluster_label, ctfidf_terms
from skillsight.clustering._lifecycle import ClusterState, regressed_by
from skillsight.clustering._matching import Before, Found, match_clusters
from skillsight.clustering._trend import DAY_US
from skillsight.clustering._vectors import Matrix, unpack_all
from skillsight.evaluators import Embedder
from skillsight.store import ClusterRow, Store


@dataclass(frozen=True)
class RunOptions:
    window_days: int = 14
    fit: FitOptions = field(default_factory=FitOptions)
    thresholds: Thresholds = field(default_factory=Thresholds)
    exemplars: int = 3
    """Medoids shown per cluster."""
    spread: int = 8
    """Exemplars online assignment compares with, per cluster."""
    min_overlap_share: float = 0.2
    min_similarity: float = 0.9
    cause_weight: float = 0.5
    """Weight of the failing evaluators and finding kinds beside the text's embedding."""


@dataclass(frozen=True)
class RunSummary:
    """What one run did (``POST /api/v1/clusters/run`` returns it)."""

    project_id: str
    run_id: str
    started_at_us: int
    failures: int
    clusters: int
    novel: int
    new_clusters: int
    kept_share: float
    """Of the failures that had a cluster before and still fail, the share keeping its id."""
    matched: dict[str, int]
    """Clusters by how they got their id: overlap, centroid, split, new."""
    merged: int
    retired: int
    regressed: int
    dims: int
    seconds: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_clustering(
    store: Store,
    project_id: str,
    *,
    embedder: Embedder,
    options: RunOptions | None = None,
    now_us: int | None = None,
) -> RunSummary:
    """Cluster ``project_id``'s failures of the last ``window_days`` now, and commit it."""
    options = options or RunOptions()
    started = now_us if now_us is not None else time.time_ns() // 1000
    run_id = f"r{started}"
    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    since = started - options.window_days * DAY_US
    failing = failing_now(store, project_id, since, options.thresholds)
    stored = store.failures.stored(project_id, since)
    failures, texts = with_vectors(
        store, embedder, project_id, failing, stored, scored=options.thresholds.scored
    )
    vectors = with_causes(failures, texts, options.cause_weight)
    seconds["collect"], clock = time.perf_counter() - clock, time.perf_counter()

    # each skill apart: two skills failing alike are two clusters, each with its owner,
    # versions and fix (and no cluster's "first bad version" mixes two skills' versions)
    fitted = fit(vectors, options.fit, groups=[f.skill_name for f in failures])
    seconds["fit"], clock = time.perf_counter() - clock, time.perf_counter()

    previous = store.clusters.latest_run(project_id)
    before_rows = {r["cluster_id"]: r for r in store.clusters.get(project_id, with_vectors=True)}
    owners: defaultdict[str, set[str]] = defaultdict(set)
    for activation_id, cluster_id in store.clusters.membership(project_id, previous).items():
        owners[cluster_id].add(activation_id)
    before = [
        Before(cluster_id, frozenset(owners.get(cluster_id, ())), _centroid_of(row))
        for cluster_id, row in before_rows.items()
    ]
    groups: defaultdict[int, list[int]] = defaultdict(list)
    for row, label in enumerate(fitted.labels):
        if label >= 0:
            groups[int(label)].append(row)
    found = [
        Found(label, frozenset(failures[i].activation_id for i in rows), centroid(vectors[rows]))
        for label, rows in sorted(groups.items())
    ]

    def new_id(cluster: Found) -> str:
        seed = f"{project_id}\x1f{run_id}\x1f{min(cluster.members)}"
        return "cl_" + hashlib.sha256(seed.encode()).hexdigest()[:12]

    matching = match_clusters(
        before,
        found,
        new_id,
        still_failing=frozenset(f.activation_id for f in failures),
        min_overlap_share=options.min_overlap_share,
        min_similarity=options.min_similarity,
    )
    seconds["match"], clock = time.perf_counter() - clock, time.perf_counter()

    rows, members = _cluster_rows(
        failures, vectors, groups, matching.matches, run_id, started, options
    )
    active_ids = {r["cluster_id"] for r in rows}
    retired = [
        retired_row(dict(row), run_id, started, matching.merged_into.get(cluster_id, ""))
        for cluster_id, row in before_rows.items()
        if cluster_id not in active_ids and (row["active"] or cluster_id in matching.merged_into)
    ]
    statuses = _status_changes(store, project_id, rows, started)
    seconds["facts"], clock = time.perf_counter() - clock, time.perf_counter()

    store.clusters.write_members(project_id, members)
    store.clusters.write_clusters(project_id, rows + retired)
    store.clusters.write_status(project_id, statuses)
    how = Counter(m.how for m in matching.matches.values())
    summary = RunSummary(
        project_id=project_id,
        run_id=run_id,
        started_at_us=started,
        failures=len(failures),
        clusters=len(rows),
        novel=sum(1 for m in members if not m["cluster_id"]),
        new_clusters=how.get("new", 0) + how.get("split", 0),
        kept_share=round(matching.kept_share, 4),
        matched={k: how.get(k, 0) for k in ("overlap", "centroid", "split", "new")},
        merged=len(matching.merged_into),
        retired=len(retired),
        regressed=sum(1 for s in statuses if s["status"] == "regressed"),
        dims=fitted.dims,
        seconds=seconds,
    )
    seconds["write"] = time.perf_counter() - clock
    store.clusters.write_run(
        project_id,
        {
            "run_id": run_id,
            "started_at": started,
            "finished_at": time.time_ns() // 1000,
            "window_start": since,
            "failures": summary.failures,
            "clusters": summary.clusters,
            "novel": summary.novel,
            "kept_share": summary.kept_share,
            "summary": json.dumps(summary.to_dict()),
        },
    )
    return summary


def _cluster_rows(
    failures: list[Failure],
    vectors: Matrix,
    groups: dict[int, list[int]],
    matches: dict[int, Any],
    run_id: str,
    started: int,
    options: RunOptions,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    causes = {label: cause_of([failures[i] for i in rows]) for label, rows in groups.items()}
    documents = {
        str(label): Counter(failures[i].text for i in rows).items()
        for label, rows in groups.items()
    }
    exclude = {
        str(label): [
            causes[label].evaluator,
            *causes[label].kind.split("_"),
            *{failures[i].skill_name for i in rows},
        ]
        for label, rows in groups.items()
    }
    terms = ctfidf_terms(documents, exclude=exclude)
    cluster_of = [""] * len(failures)
    distance = np.ones(len(failures), dtype=np.float32)
    rows_out = []
    for label, rows in sorted(groups.items()):
        match = matches[label]
        members = [failures[i] for i in rows]
        skills = [s for s, _ in Counter(m.skill_name for m in members).most_common()]
        cause = causes[label]
        row = cluster_row(
            match.cluster_id,
            run_id,
            members,
            vectors[rows],
            now_us=started,
            window_days=options.window_days,
            label=cluster_label(cause.evaluator, cause.kind, terms[str(label)], skills),
            terms=terms[str(label)],
            cause=cause,
            split_from=match.split_from,
            exemplars=options.exemplars,
            spread=options.spread,
        )
        rows_out.append(row)
        middle = centroid(vectors[rows])
        for i in rows:
            cluster_of[i] = match.cluster_id
            distance[i] = 1.0 - float(vectors[i] @ middle)
    members_out = [
        {
            "activation_id": f.activation_id,
            "cluster_id": cluster_of[i],
            "run_id": run_id,
            "assigned_by": "run",
            "distance": float(distance[i]),
            "session_id": f.session_id,
            "skill_name": f.skill_name,
            "skill_version": f.skill_version,
            "started_at": f.started_us,
            "assigned_at": started,
        }
        for i, f in enumerate(failures)
    ]
    return rows_out, members_out


def _status_changes(
    store: Store, project_id: str, rows: list[dict[str, Any]], now_us: int
) -> list[dict[str, Any]]:
    known = store.clusters.statuses(project_id, [r["cluster_id"] for r in rows])
    out = []
    for row in rows:
        current = known.get(row["cluster_id"])
        if current is None:
            change: ClusterState | None = ClusterState(changed_at_us=now_us, changed_by="clusterer")
        else:
            change = regressed_by(ClusterState.of(current), row["last_seen"], now_us)
        if change is not None:
            out.append(change.row(row["cluster_id"]))
    return out


def _centroid_of(row: ClusterRow) -> Matrix | None:
    blob = row["centroid"]
    return unpack_all([blob], len(blob) // 2)[0] if blob else None


__all__ = ["RunOptions", "RunSummary", "run_clustering"]
