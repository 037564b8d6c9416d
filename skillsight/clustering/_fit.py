"""HDBSCAN over failure vectors, optionally after a PCA, and each cluster's exemplars.

HDBSCAN (the ``hdbscan`` package) finds clusters of varying density and leaves what belongs to
none as noise (label -1): one-off failures stay novel instead of being forced into a pattern.
Its neighbour searches slow down sharply with dimensions, so vectors can be projected first onto
their top principal components (computed here with numpy; docs/clusters.md has the measurements
that chose the default). Exemplars are computed in the full space, by cosine.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from skillsight.clustering._vectors import Matrix, normalized

Labels = npt.NDArray[np.intp]


@dataclass(frozen=True)
class FitOptions:
    """How a run clusters (``cluster_*`` settings)."""

    min_cluster_size: int = 5
    min_samples: int | None = None
    """HDBSCAN's density smoothing; None = min_cluster_size."""
    reduce_to: int = 32
    """Project onto this many principal components first; 0 = cluster the full vectors."""
    reduce_above: int = 2000
    """Only a skill with more failures than this is clustered in the projection: HDBSCAN on
    a few thousand full vectors takes a second, and keeps one-offs apart better (measured in
    docs/clusters.md); past that its neighbour searches in 600 dimensions grow too slow."""
    selection_epsilon: float = 0.0
    """Clusters closer than this (Euclidean, in the clustered space) are not split."""
    merge_similarity: float = 0.85
    """Clusters whose centroids' cosine reaches this are one (0 = never merge): HDBSCAN makes
    a cluster of every dense variant of a pattern (instances whose texts normalize the same
    are the densest thing there is); a centroid test joins them without pulling noise in, as
    ``selection_epsilon`` would."""
    jobs: int = 2


@dataclass(frozen=True)
class Fitted:
    labels: Labels
    """Cluster index per row, -1 for noise."""
    probabilities: npt.NDArray[np.float64]
    dims: int
    """Dimensions clustered (after any projection)."""
    seconds: float

    @property
    def count(self) -> int:
        return int(self.labels.max()) + 1 if len(self.labels) else 0


def project(vectors: Matrix, dims: int) -> Matrix:
    """``vectors`` on their top ``dims`` principal components (unchanged when they have no
    more dimensions than that, or too few rows to estimate components)."""
    rows, columns = vectors.shape
    if dims <= 0 or columns <= dims or rows <= dims:
        return vectors
    centred = vectors - vectors.mean(axis=0, dtype=np.float64).astype(np.float32)
    covariance = (centred.T.astype(np.float64) @ centred.astype(np.float64)) / max(rows - 1, 1)
    _, eigenvectors = np.linalg.eigh(covariance)  # ascending eigenvalues
    basis = eigenvectors[:, ::-1][:, :dims].astype(np.float32)
    out: Matrix = centred @ basis
    return out


def fit(vectors: Matrix, options: FitOptions, groups: Sequence[str] | None = None) -> Fitted:
    """Cluster normalized row vectors; ``groups`` (one name per row, the skills) are clustered
    apart, so no cluster spans two groups. A group of fewer rows than ``min_cluster_size`` is
    all noise. The projection is fitted on all rows at once."""
    started = time.perf_counter()
    rows = len(vectors)
    labels = np.full(rows, -1, dtype=np.intp)
    probabilities = np.zeros(rows, dtype=np.float64)
    if rows < max(options.min_cluster_size, 2):
        return Fitted(labels, probabilities, vectors.shape[1] if rows else 0, 0.0)
    members = [np.arange(rows)] if groups is None else _grouped(groups)
    large = any(len(rows_of) > options.reduce_above for rows_of in members)
    space = project(vectors, options.reduce_to) if large else vectors
    for rows_of in members:
        if len(rows_of) < options.min_cluster_size:
            continue  # too few to make a cluster of: all novel
        chosen = space if len(rows_of) > options.reduce_above else vectors
        found, strength = _hdbscan(chosen[rows_of], options)
        offset = int(labels.max()) + 1
        labels[rows_of] = np.where(found >= 0, found + offset, -1)
        probabilities[rows_of] = strength
    if options.merge_similarity > 0:
        labels = merge_close(vectors, labels, options.merge_similarity, groups=groups)
    return Fitted(labels, probabilities, space.shape[1], time.perf_counter() - started)


def _grouped(groups: Sequence[str]) -> list[npt.NDArray[np.intp]]:
    by_group: dict[str, list[int]] = {}
    for row, group in enumerate(groups):
        by_group.setdefault(group, []).append(row)
    return [np.asarray(rows, dtype=np.intp) for rows in by_group.values()]


def _hdbscan(space: Matrix, options: FitOptions) -> tuple[Labels, npt.NDArray[np.float64]]:
    import hdbscan  # type: ignore[import-untyped]  # no stubs; a heavy import, paid on first run

    clusterer = hdbscan.HDBSCAN(
        min_cluster_size=options.min_cluster_size,
        min_samples=options.min_samples,
        cluster_selection_epsilon=options.selection_epsilon,
        core_dist_n_jobs=options.jobs,
        metric="euclidean",
        # one skill often fails one way only: its whole group is then one cluster, which
        # HDBSCAN otherwise never selects (points that leave it early stay noise either way)
        allow_single_cluster=True,
    )
    with warnings.catch_warnings():
        # hdbscan passes arguments sklearn has deprecated; nothing the caller can act on
        warnings.simplefilter("ignore", category=FutureWarning)
        warnings.simplefilter("ignore", category=DeprecationWarning)
        clusterer.fit(np.ascontiguousarray(space, dtype=np.float64))
    labels = np.asarray(clusterer.labels_, dtype=np.intp)
    return labels, np.asarray(clusterer.probabilities_, dtype=np.float64)


def merge_close(
    vectors: Matrix,
    labels: Labels,
    min_similarity: float,
    *,
    groups: Sequence[str] | None = None,
) -> Labels:
    """``labels`` with clusters joined (transitively) whose centroids' cosine is at least
    ``min_similarity`` and, given ``groups``, whose members share a group; renumbered from 0
    in order of first appearance; noise stays -1."""
    found = [int(k) for k in dict.fromkeys(labels.tolist()) if k >= 0]
    if len(found) < 2:
        return labels
    centroids = np.stack([centroid(vectors[labels == k]) for k in found])
    similar = centroids @ centroids.T >= min_similarity
    if groups is not None:
        first = {int(k): i for i, k in reversed(list(enumerate(labels.tolist()))) if k >= 0}
        names = {name: code for code, name in enumerate(dict.fromkeys(groups))}
        codes = np.array([names[groups[first[k]]] for k in found])
        similar &= codes[:, None] == codes[None, :]
    parent = list(range(len(found)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in zip(*np.nonzero(np.triu(similar, k=1)), strict=True):
        parent[root(int(j))] = root(int(i))
    renumber: dict[int, int] = {}
    mapping = {k: renumber.setdefault(root(i), len(renumber)) for i, k in enumerate(found)}
    out = np.array([mapping.get(int(k), -1) for k in labels], dtype=np.intp)
    return out


def centroid(vectors: Matrix) -> Matrix:
    """The normalized mean direction of some normalized rows."""
    mean = vectors.mean(axis=0, keepdims=True, dtype=np.float64).astype(np.float32)
    out: Matrix = normalized(mean)[0]
    return out


def medoids(vectors: Matrix, count: int) -> list[int]:
    """Indices of the ``count`` rows nearest the rows' mean direction, nearest first: the
    members that look most like the cluster (what on-call reads first)."""
    if not len(vectors):
        return []
    similarity = vectors @ centroid(vectors)
    order = np.argsort(-similarity, kind="stable")
    return [int(i) for i in order[:count]]


def spread_exemplars(vectors: Matrix, count: int, *, sample: int = 2000) -> list[int]:
    """Indices of up to ``count`` rows covering the cluster: the medoid, then each time the row
    farthest from those chosen (on an evenly spaced sample of at most ``sample`` rows). Online
    assignment compares a new failure with these, so a cluster's edges count, not its centre
    alone."""
    rows = len(vectors)
    if not rows:
        return []
    pool = np.linspace(0, rows - 1, num=min(rows, sample)).astype(np.intp)
    pool = np.unique(pool)
    candidates = vectors[pool]
    chosen = [medoids(candidates, 1)[0]]
    nearest = candidates @ candidates[chosen[0]]
    while len(chosen) < min(count, len(pool)):
        farthest = int(np.argmin(nearest))
        if nearest[farthest] >= 0.9999:  # the rest are duplicates of chosen rows
            break
        chosen.append(farthest)
        nearest = np.maximum(nearest, candidates @ candidates[farthest])
    return [int(pool[i]) for i in chosen]


__all__ = [
    "FitOptions",
    "Fitted",
    "Labels",
    "centroid",
    "fit",
    "medoids",
    "merge_close",
    "project",
    "spread_exemplars",
]
