"""Online assignment: a failure scored between runs joins its cluster at once, or stays novel.

Each active cluster of the latest run keeps a few exemplars spread over it (the medoid first,
then the members farthest from those chosen). A new failure's vector is compared with every
exemplar; it joins the cluster of the nearest one when the cosine distance is at most
``max_distance``, and is recorded as novel otherwise. This is a dot product against a few
hundred vectors, not HDBSCAN's ``approximate_predict`` (slow, and able to invent clusters).
A resolved cluster that receives a member which started after it was resolved regresses.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from skillsight.clustering._collect import Thresholds, failing_now, with_causes, with_vectors
from skillsight.clustering._lifecycle import ClusterState, regressed_by
from skillsight.clustering._vectors import Matrix, unpack_all
from skillsight.evaluators import Embedder
from skillsight.store import RunRow, Store


@dataclass(frozen=True)
class ExemplarIndex:
    """The exemplars of a project's active clusters as of its latest run."""

    run: RunRow | None
    matrix: Matrix
    owners: tuple[str, ...]
    skills: tuple[str, ...] = ()
    """The skill of each exemplar's cluster (clusters never span skills)."""

    @classmethod
    def load(cls, store: Store, project_id: str) -> ExemplarIndex:
        run = store.clusters.latest_run(project_id)
        blobs: list[bytes] = []
        owners: list[str] = []
        skills: list[str] = []
        if run is not None:
            for row in store.clusters.get(project_id, with_vectors=True):
                if row["active"] and row["run_id"] == run["run_id"]:
                    blobs += row["exemplars"]
                    owners += [row["cluster_id"]] * len(row["exemplars"])
                    skills += [row["skills"][0] if row["skills"] else ""] * len(row["exemplars"])
        matrix = unpack_all(blobs, len(blobs[0]) // 2) if blobs else np.zeros((0, 0), np.float32)
        return cls(run, matrix, tuple(owners), tuple(skills))

    def nearest(
        self, vectors: Matrix, skills: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """Per row of ``vectors``, the cluster of the nearest exemplar (of a cluster of the
        row's skill, given ``skills``) and the cosine distance to it (``("", 2.0)`` when there
        is none)."""
        if not len(self.owners) or not len(vectors) or self.matrix.shape[1] != vectors.shape[1]:
            return [("", 2.0)] * len(vectors)
        similarity = vectors @ self.matrix.T
        if skills is not None:
            mine = np.array(self.skills)[None, :] == np.array(list(skills))[:, None]
            similarity = np.where(mine, similarity, -2.0)
        best = np.argmax(similarity, axis=1)
        return [
            (self.owners[int(j)], float(1.0 - similarity[i, j]))
            if similarity[i, j] > -2.0
            else ("", 2.0)
            for i, j in enumerate(best)
        ]


@dataclass(frozen=True)
class Assigned:
    activation_id: str
    cluster_id: str
    """'' when novel."""
    distance: float


def assign_failures(
    store: Store,
    project_id: str,
    activation_ids: Sequence[str],
    *,
    embedder: Embedder,
    index: ExemplarIndex,
    thresholds: Thresholds,
    max_distance: float,
    cause_weight: float = 0.5,
    now_us: int | None = None,
) -> list[Assigned]:
    """Assign those of ``activation_ids`` that fail now (the others are left alone) and
    record it: membership rows first (the assignment), then the failure texts and regressions.
    ``now_us`` stamps the rows (default: the moment they are written)."""
    failing = failing_now(store, project_id, 0, thresholds, activation_ids)
    if not failing:
        return []
    stored = store.failures.stored(project_id, 0, list(failing))
    texts_to_store: list[dict[str, Any]] = []
    failures, texts = with_vectors(
        store,
        embedder,
        project_id,
        failing,
        stored,
        scored=thresholds.scored,
        pending=texts_to_store,
    )
    vectors = with_causes(failures, texts, cause_weight)
    nearest = index.nearest(vectors, [f.skill_name for f in failures])
    run = index.run
    counted = {
        a
        for a, row in store.clusters.members_of(project_id, list(failing), run).items()
        if run is not None and row["run_id"] == run["run_id"]
    }
    out: list[Assigned] = []
    members: list[dict[str, Any]] = []
    newest: dict[str, int] = {}
    for failure, (cluster_id, distance) in zip(failures, nearest, strict=True):
        joined = cluster_id if distance <= max_distance else ""
        out.append(Assigned(failure.activation_id, joined, distance))
        members.append(
            {
                "activation_id": failure.activation_id,
                "cluster_id": joined,
                "run_id": run["run_id"] if run else "",
                "assigned_by": "online_known" if failure.activation_id in counted else "online",
                "distance": min(distance, 2.0),
                "session_id": failure.session_id,
                "skill_name": failure.skill_name,
                "skill_version": failure.skill_version,
                "started_at": failure.started_us,
                "assigned_at": 0,
            }
        )
        if joined:
            newest[joined] = max(newest.get(joined, 0), failure.started_us)
    now = now_us if now_us is not None else time.time_ns() // 1000
    for member in members:
        member["assigned_at"] = now
    store.clusters.write_members(project_id, members)
    store.failures.write(project_id, texts_to_store)
    changes = []
    statuses = store.clusters.statuses(project_id, list(newest)) if newest else {}
    for cluster_id, current in statuses.items():
        change = regressed_by(ClusterState.of(current), newest[cluster_id], now)
        if change is not None:
            changes.append(change.row(cluster_id))
    store.clusters.write_status(project_id, changes)
    return out


__all__ = ["Assigned", "ExemplarIndex", "assign_failures"]
