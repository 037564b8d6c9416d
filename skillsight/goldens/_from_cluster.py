"""Promoting a failure cluster: its exemplars first, then its latest members, up to a limit.

A cluster's exemplars are its medoids (the members most like the rest), so they are the cases
that best stand for the failure; the latest members fill the rest. Members of another skill than
the set's are left out (a cluster may span skills; each skill's set takes its own members).
"""

from __future__ import annotations

from collections import Counter

from skillsight.errors import GoldenSetError
from skillsight.evaluators.judges import JudgeClient
from skillsight.goldens._sets import Promotion, load_set, promote
from skillsight.store import Store

DEFAULT_CASES = 10


def cluster_members(
    store: Store, project_id: str, cluster_id: str, *, limit: int = DEFAULT_CASES
) -> list[tuple[str, str]]:
    """``(activation_id, skill)`` of the cluster's exemplars, then its latest members."""
    run = store.clusters.latest_run(project_id)
    found = store.clusters.get(project_id, [cluster_id])
    if not found:
        raise GoldenSetError(f"no cluster {cluster_id!r} in project {project_id!r}")
    members = store.clusters.members(project_id, cluster_id, run, limit=max(limit * 4, 50))
    skill_of = {m["activation_id"]: m["skill_name"] for m in members}
    ordered = [a for a in found[0]["exemplar_activation_ids"] if a in skill_of]
    ordered += [m["activation_id"] for m in members if m["activation_id"] not in ordered]
    if not ordered:
        raise GoldenSetError(f"cluster {cluster_id!r} has no current member to promote")
    return [(a, skill_of[a]) for a in ordered]


def promote_cluster(
    store: Store,
    project_id: str,
    cluster_id: str,
    *,
    set_id: str = "",
    skill: str = "",
    limit: int = DEFAULT_CASES,
    judge: JudgeClient | None = None,
) -> Promotion:
    """Promote up to ``limit`` members of a cluster into the set ``set_id`` (default: the
    newest set of ``skill``, else of the cluster's most frequent skill)."""
    if limit < 1:
        raise GoldenSetError("promote at least one case (limit >= 1)")
    members = cluster_members(store, project_id, cluster_id, limit=limit)
    if set_id:
        skill = load_set(store, project_id, set_id).skill_name
    elif not skill:
        skill = Counter(s for _, s in members).most_common(1)[0][0]
    chosen = [a for a, s in members if s == skill][:limit]
    if not chosen:
        raise GoldenSetError(f"cluster {cluster_id!r} has no member of skill {skill!r}")
    return promote(store, project_id, chosen, set_id=set_id, skill=skill, cluster_id=cluster_id)
