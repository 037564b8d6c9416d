"""The clustering's tables on both store transports: which activations fail now (the verdict
rules), stored failure texts, memberships of runs and of online assignment, statuses."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from pydantic import BaseModel

from skillsight.clustering import ClusterState
from skillsight.evaluators import Evaluation, Evidence, Finding
from skillsight.store import SessionRebuild, Store, stamp_iso
from skillsight.store.records import Activation

P = "proj"
NOW = 1_790_000_000_000_000
HOUR = 3_600_000_000


class _Doc(BaseModel):
    steps: list[int] = []


@dataclass(frozen=True)
class _Rebuilt:
    session_id: str
    trajectory: BaseModel
    activations: list[Activation] = field(default_factory=list)


def _activation(name: str, started_us: int, project: str = P) -> Activation:
    from datetime import UTC, datetime

    start = datetime.fromtimestamp(started_us / 1e6, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return Activation(
        activation_id=f"act-{name}",
        project_id=project,
        session_id=f"ses-{name}",
        trace_id=f"tr-{name}",
        skill_name="csv-summary",
        skill_version="v1",
        trigger="skill_tool",
        trigger_call_id=f"toolu_{name}",
        started_at=start,
        ended_at=start,
    )


def _rebuild(store: Store, activation: Activation, project: str = P) -> Activation:
    """Store one session's rebuild holding ``activation``; return it as stored."""
    (stamp,) = store.rebuilds.write(
        [SessionRebuild(project, _Rebuilt(activation.session_id, _Doc(), [activation]))]
    )
    return activation.model_copy(update={"rebuilt_at": stamp_iso(stamp)})


def _score(
    store: Store,
    activation: Activation,
    evaluator: str,
    passed: bool | None,
    at_us: int,
    *,
    score: float | None = None,
    label: str = "",
    rebuilt_at: str | None = None,
    project: str = P,
) -> None:
    value = score if score is not None else (None if passed is None else float(passed))
    findings = () if passed is not False else (Finding("kind_" + evaluator, "it failed", 3),)
    evaluation = Evaluation(
        activation.activation_id,
        evaluator,
        "1",
        value,
        passed,
        label or ("ok" if passed else "not_applicable" if passed is None else "bad"),
        "reason",
        Evidence.cite(findings),
        findings,
        project_id=project,
        skill_name=activation.skill_name,
        skill_version=activation.skill_version,
    )
    row = evaluation.to_row(at_us, activation.rebuilt_at if rebuilt_at is None else rebuilt_at)
    store.evaluations.write(project, [row])


def _failing(store: Store, since: int = 0, **options: object) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for row in store.failures.failing(P, since, **options):  # type: ignore[arg-type]
        out.setdefault(row["activation_id"], set()).add(row["evaluator"])
    return out


def test_an_activation_fails_when_an_evaluation_of_its_newest_rebuild_failed(store: Store) -> None:
    plain = _rebuild(store, _activation("plain", NOW))
    _score(store, plain, "allowed_tools", False, NOW + 1)
    _score(store, plain, "security", True, NOW + 1)
    fixed = _rebuild(store, _activation("fixed", NOW))
    _score(store, fixed, "tool_errors", False, NOW + 1)
    _score(store, fixed, "tool_errors", True, NOW + 2)  # rescored: the newest row passes
    errored = _rebuild(store, _activation("errored", NOW))
    _score(store, errored, "skill_selection", None, NOW + 1, label="error")
    _score(store, errored, "efficiency", None, NOW + 1)  # not applicable
    stale = _rebuild(store, _activation("stale", NOW))
    _score(store, stale, "security", False, NOW + 1)
    newer = _rebuild(store, _activation("stale", NOW))  # late rows: rebuilt, not rescored yet
    legacy = _rebuild(store, _activation("legacy", NOW))
    _score(store, legacy, "integration_heuristic", False, NOW + 1, rebuilt_at="")
    old = _rebuild(store, _activation("old", NOW - 30 * 24 * HOUR))
    _score(store, old, "security", False, NOW + 1)
    other = _rebuild(store, _activation("plain", NOW, project="elsewhere"), project="elsewhere")
    _score(store, other, "security", False, NOW + 1, project="elsewhere")

    assert _failing(store) == {
        "act-plain": {"allowed_tools"},
        "act-legacy": {"integration_heuristic"},
        "act-old": {"security"},
    }
    assert set(_failing(store, NOW - HOUR)) == {"act-plain", "act-legacy"}
    rows = store.failures.failing(P, 0, activation_ids=["act-plain"])
    assert [(r["rebuilt_at"], r["session_id"], r["started_us"]) for r in rows] == [
        (plain.rebuilt_at, "ses-plain", NOW)
    ]
    _score(store, newer, "security", False, NOW + 3)  # the new rebuild fails too
    assert "act-stale" in _failing(store)
    (record,) = store.failures.records(P, [("act-stale", newer.rebuilt_at)])
    assert record.rebuilt_at == newer.rebuilt_at
    assert store.failures.records(P, [("act-stale", "2001-01-01T00:00:00.000000Z")]) == []
    found = store.failures.failed_since(NOW + 2)
    assert [(f.project_id, f.activation_id) for f in found] == [(P, "act-stale")]
    assert store.failures.projects(NOW) == ["elsewhere", P]


def test_scored_evaluators_come_back_for_thresholds_of_their_own(store: Store) -> None:
    costly = _rebuild(store, _activation("costly", NOW))
    _score(store, costly, "efficiency", True, NOW + 1, score=0.3)
    assert _failing(store) == {}
    assert _failing(store, scored=["efficiency"]) == {"act-costly": {"efficiency"}}


def test_failure_texts_are_stored_once_per_activation_newest_first(store: Store) -> None:
    row = {
        "activation_id": "act-a",
        "session_id": "ses-a",
        "skill_name": "csv-summary",
        "skill_version": "v1",
        "started_at": NOW,
        "evaluators": ["security"],
        "kinds": ["security:secret"],
        "severity": "critical",
        "model": "all-MiniLM-L6-v2",
        "computed_at": NOW,
    }
    store.failures.write(P, [{**row, "source_key": "k1", "text": "old", "embedding": b"\x00\x3c"}])
    store.failures.write(
        P,
        [
            {
                **row,
                "source_key": "k2",
                "text": "new",
                "embedding": b"\x00\xbc",
                "computed_at": NOW + 1,
            }
        ],
    )
    (stored,) = store.failures.stored(P, 0)
    assert (stored["source_key"], stored["text"], stored["embedding"]) == ("k2", "new", b"\x00\xbc")
    assert store.failures.stored(P, NOW + 1) == [] and store.failures.stored("x", 0) == []


def _member(
    activation: str, cluster: str, run: str, by: str, at: int, started: int = NOW
) -> dict[str, object]:
    return {
        "activation_id": activation,
        "cluster_id": cluster,
        "run_id": run,
        "assigned_by": by,
        "distance": 0.05,
        "session_id": f"ses-{activation}",
        "skill_name": "csv-summary",
        "skill_version": "v1",
        "started_at": started,
        "assigned_at": at,
    }


def _run(run_id: str, started: int) -> dict[str, object]:
    return {
        "run_id": run_id,
        "started_at": started,
        "finished_at": started + 1,
        "window_start": 0,
        "failures": 0,
        "clusters": 0,
        "novel": 0,
        "kept_share": 1.0,
        "summary": "{}",
    }


def test_membership_is_the_latest_run_plus_what_came_online_after_it(store: Store) -> None:
    clusters = store.clusters
    clusters.write_members(
        P, [_member("a", "c1", "r1", "run", NOW), _member("b", "c1", "r1", "run", NOW)]
    )
    clusters.write_run(P, _run("r1", NOW))
    # between runs: c joins c1, a is rescored and joins again (counted by the run already)
    clusters.write_members(
        P,
        [
            _member("c", "c1", "r1", "online", NOW + 10, started=NOW + 5),
            _member("a", "c1", "r1", "online_known", NOW + 11),
            _member("n", "", "r1", "online", NOW + 12),
        ],
    )
    run = clusters.latest_run(P)
    assert run is not None and run["run_id"] == "r1"
    assert clusters.membership(P, run) == {"a": "c1", "b": "c1", "c": "c1"}
    online = clusters.online(P, run)
    assert list(online) == ["c1"] and online["c1"]["members"] == 1
    assert online["c1"]["started"] == [NOW + 5]
    page = clusters.members(P, "c1", run, limit=2)
    assert [m["activation_id"] for m in page] == ["c", "a"]  # latest started first
    assert [m["activation_id"] for m in clusters.members(P, "c1", run, limit=2, offset=2)] == ["b"]
    assert clusters.members_of(P, ["n", "zz"], run)["n"]["cluster_id"] == ""
    # the next run no longer finds b (fixed): it leaves every cluster
    clusters.write_members(
        P, [_member("a", "c2", "r2", "run", NOW + 20), _member("c", "c2", "r2", "run", NOW + 20)]
    )
    clusters.write_run(P, _run("r2", NOW + 20))
    run = clusters.latest_run(P)
    assert clusters.membership(P, run) == {"a": "c2", "c": "c2"}
    assert clusters.online(P, run) == {}


def test_a_cluster_page_reads_its_cluster_sorted_by_start(store: Store) -> None:
    """A cluster's member page reads the table's projection sorted by cluster and start
    (migration 0024), its cluster's granules only, and gives the page the rows give; so after
    a merge, which rebuilds the projection from the merged rows."""
    from skillsight.store._clusters import _OF_CLUSTER, _run_params

    clusters, per_part, count = store.clusters, 20_000, 30
    for part in range(3):  # three inserts: three parts
        clusters.write_members(
            P,
            [
                _member(f"m{n:06d}", f"c{n % count}", "r1", "run", NOW, started=NOW - n * 1000)
                for n in range(part * per_part, (part + 1) * per_part)
            ],
        )
    clusters.write_run(P, _run("r1", NOW))
    moved = "m000003"  # a member of c3 that joined c4 since the run
    clusters.write_members(
        P,
        [_member(moved, "c4", "r1", "online", NOW + 10)]
        + [_member(f"o{n}", "c3", "r1", "online", NOW + 20, started=NOW + n) for n in range(5)],
    )
    run = clusters.latest_run(P)
    expected = [f"o{n}" for n in reversed(range(5))] + [
        f"m{n:06d}" for n in range(3, 3 * per_part, count) if f"m{n:06d}" != moved
    ]

    def page() -> list[str]:
        found = clusters.members(P, "c3", run, limit=25, offset=40)
        return [str(m["activation_id"]) for m in found]

    def plan() -> str:
        params = {**_run_params(P, run), "cluster": "c3", "limit": 25, "offset": 40}
        found = store.query("EXPLAIN indexes = 1 " + _OF_CLUSTER, params | {"window": 130})
        return "\n".join(str(row["explain"]) for row in found)

    for merged in (False, True):
        assert page() == expected[40:65], f"merged: {merged}"
        read = plan()
        assert "ReadFromMergeTree (by_cluster)" in read, read
        granules = re.search(r"Granules: (\d+)/(\d+)", read.split("PrimaryKey", 1)[1])
        assert granules and int(granules[1]) < int(granules[2]), read
        store.execute("OPTIMIZE TABLE cluster_members FINAL")


def test_the_status_log_keeps_the_latest_change_per_cluster(store: Store) -> None:
    rows = [
        ClusterState("new", changed_at_us=NOW, changed_by="clusterer").row("c1"),
        ClusterState("resolved", "ana", "v3", NOW + 5, NOW + 5, "user").row("c1"),
        ClusterState("new", changed_at_us=NOW, changed_by="clusterer").row("c2"),
    ]
    store.clusters.write_status(P, rows)
    statuses = store.clusters.statuses(P)
    assert {k: (v["status"], v["assignee"], v["resolved_at"]) for k, v in statuses.items()} == {
        "c1": ("resolved", "ana", NOW + 5),
        "c2": ("new", "", 0),
    }
    assert list(store.clusters.statuses(P, ["c2"])) == ["c2"]
    assert store.clusters.statuses("elsewhere") == {}


@pytest.mark.parametrize("with_vectors", [False, True])
def test_clusters_read_their_newest_row(store: Store, with_vectors: bool) -> None:
    base = {
        "run_id": "r1", "active": True, "label": "l", "terms": ["t"], "evaluator": "security",
        "kind": "secret", "severity": "critical", "size": 3, "sessions": 3, "skills": ["s"],
        "versions": ["v1"], "first_bad_version": "v1", "first_seen": NOW, "last_seen": NOW,
        "hourly": [0] * 48, "daily": [3], "counted_at": NOW, "evaluators": "{}", "kinds": "{}",
        "exemplar_activation_ids": ["a"], "exemplars": [b"\x01\x02", b"\x03\x04"],
        "centroid": b"\x05\x06", "split_from": "", "merged_into": "", "updated_at": NOW,
    }  # fmt: skip
    store.clusters.write_clusters(P, [{**base, "cluster_id": "c1"}, {**base, "cluster_id": "c2"}])
    store.clusters.write_clusters(
        P, [{**base, "cluster_id": "c1", "active": False, "size": 0, "updated_at": NOW + 1}]
    )
    rows = {r["cluster_id"]: r for r in store.clusters.get(P, with_vectors=with_vectors)}
    assert (rows["c1"]["active"], rows["c1"]["size"], rows["c2"]["size"]) == (False, 0, 3)
    if with_vectors:
        assert (
            rows["c2"]["exemplars"] == [b"\x01\x02", b"\x03\x04"]
            and rows["c2"]["centroid"] == b"\x05\x06"
        )
    else:
        assert rows["c2"]["exemplars"] == [] and rows["c2"]["centroid"] == b""
    assert [r["cluster_id"] for r in store.clusters.get(P, ["c2"])] == ["c2"]
