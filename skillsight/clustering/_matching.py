"""Stable cluster ids: a run's clusters matched to the clusters that existed before it.

HDBSCAN numbers its clusters afresh on every run. A ticket, a link or a golden set that points at
a cluster must stay right, so each new cluster inherits the id of the previous cluster it shares
the most members with (greedily, the largest overlaps first, one new cluster per id):

- **split** — a previous cluster whose members now sit in several new clusters keeps its id on
  the part holding most of them; each other part gets a new id with ``split_from`` naming it;
- **merge** — a previous cluster that lost the overlap contest to another (most of its members
  are now in a cluster that kept another id) records ``merged_into``;
- **centroid** — a new cluster sharing no member with any previous one (its old members left the
  window, or the pattern was quiet for a while) takes the id of the most similar unclaimed
  previous cluster when their centroids' cosine is at least ``min_similarity``;
- anything else is new.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from skillsight.clustering._vectors import Matrix


@dataclass(frozen=True)
class Before:
    """A cluster as the previous run (and online assignment since) left it."""

    cluster_id: str
    members: frozenset[str]
    centroid: Matrix | None = None


@dataclass(frozen=True)
class Found:
    """A cluster of this run: its index in the fit and its members."""

    index: int
    members: frozenset[str]
    centroid: Matrix


@dataclass(frozen=True)
class Match:
    cluster_id: str
    how: str
    """``overlap``, ``centroid``, ``split`` or ``new``."""
    split_from: str = ""


@dataclass
class Matching:
    matches: dict[int, Match] = field(default_factory=dict)
    """Per found cluster index, the id it carries."""
    merged_into: dict[str, str] = field(default_factory=dict)
    """Previous ids whose members were absorbed, and the id that absorbed them."""
    kept_share: float = 1.0
    """Of the activations that had a cluster before and are still failures, the share whose
    cluster id is unchanged (1.0 when there were none)."""


def match_clusters(
    before: Sequence[Before],
    found: Sequence[Found],
    new_id: Callable[[Found], str],
    *,
    still_failing: frozenset[str] | None = None,
    min_overlap_share: float = 0.2,
    min_similarity: float = 0.9,
) -> Matching:
    """Give each found cluster an id (see the module docstring).

    ``still_failing`` are the activations this run saw (default: the found clusters' members);
    previous members outside it (left the window, fixed) are left out of every overlap.
    ``min_overlap_share`` is the overlap a match needs, as a share of the smaller side's members
    that both runs saw.
    """
    current = still_failing if still_failing is not None else _union(f.members for f in found)
    owner: dict[str, str] = {}
    alive: dict[str, int] = {}
    for old in before:
        remaining = old.members & current
        alive[old.cluster_id] = len(remaining)
        for member in remaining:
            owner[member] = old.cluster_id
    seen_before = frozenset(owner)
    overlaps: dict[tuple[int, str], int] = {}
    for cluster in found:
        counts = Counter(owner[m] for m in cluster.members if m in owner)
        for cluster_id, count in counts.items():
            overlaps[cluster.index, cluster_id] = count

    result = Matching()
    claimed: set[str] = set()
    by_index = {f.index: f for f in found}
    for (index, cluster_id), count in sorted(overlaps.items(), key=lambda kv: (-kv[1], kv[0])):
        if index in result.matches or cluster_id in claimed:
            continue
        shared_side = min(len(by_index[index].members & seen_before), alive[cluster_id])
        if count < max(1.0, min_overlap_share * shared_side):
            continue
        result.matches[index] = Match(cluster_id, "overlap")
        claimed.add(cluster_id)

    # Parts of a previous cluster whose id went to a larger part: splits.
    for cluster in found:
        if cluster.index in result.matches:
            continue
        parents = [(c, cid) for (i, cid), c in overlaps.items() if i == cluster.index]
        if parents:
            _, parent = max(parents)
            result.matches[cluster.index] = Match(new_id(cluster), "split", split_from=parent)

    _match_centroids(before, found, result, claimed, new_id, min_similarity)

    # Previous clusters not carried on whose remaining members went mostly to one cluster.
    final = {m: result.matches[f.index].cluster_id for f in found for m in f.members}
    for old in before:
        if old.cluster_id in claimed:
            continue
        destinations = Counter(final[m] for m in old.members & current if m in final)
        if destinations:
            target, count = destinations.most_common(1)[0]
            if count * 2 >= alive[old.cluster_id] and target != old.cluster_id:
                result.merged_into[old.cluster_id] = target

    unchanged = sum(1 for member, cluster_id in owner.items() if final.get(member) == cluster_id)
    result.kept_share = unchanged / len(owner) if owner else 1.0
    return result


def _match_centroids(
    before: Sequence[Before],
    found: Sequence[Found],
    result: Matching,
    claimed: set[str],
    new_id: Callable[[Found], str],
    min_similarity: float,
) -> None:
    free = [b for b in before if b.cluster_id not in claimed and b.centroid is not None]
    pending = [f for f in found if f.index not in result.matches]
    pairs: list[tuple[float, int, str]] = []
    if free and pending:
        previous = np.stack([b.centroid for b in free if b.centroid is not None])
        similarity = np.stack([f.centroid for f in pending]) @ previous.T
        for row, cluster in enumerate(pending):
            for column, old in enumerate(free):
                if similarity[row, column] >= min_similarity:
                    pairs.append((float(similarity[row, column]), cluster.index, old.cluster_id))
    for _, index, cluster_id in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):
        if index in result.matches or cluster_id in claimed:
            continue
        result.matches[index] = Match(cluster_id, "centroid")
        claimed.add(cluster_id)
    for cluster in pending:
        if cluster.index not in result.matches:
            result.matches[cluster.index] = Match(new_id(cluster), "new")


def _union(sets: Iterable[frozenset[str]]) -> frozenset[str]:
    out: set[str] = set()
    for members in sets:
        out |= members
    return frozenset(out)


__all__ = ["Before", "Found", "Match", "Matching", "match_clusters"]
