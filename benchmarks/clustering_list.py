"""The cluster list over 10 million activations (``bench clustering``, part 4).

The activations and their evaluation rows are the scorecard bench's synthetic store
(:mod:`benchmarks.synthetic_store`, generated inside ClickHouse). Beside them, a clustering of
their failures is written the same way, by ``INSERT … SELECT``: every activation with a failing
evaluation (about one in six) becomes a member of one of 300 clusters (50 skills by 6 causes),
two runs' worth of cluster rows (the older superseded), a status log, and a thousand members
joined online after the latest run. Then the list (what ``GET /api/v1/clusters`` runs), a
cluster page and the route itself are timed: the first call apart, median and p95 of the rest.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.scorecard import skill_names, zipf_counts
from benchmarks.synthetic_store import SyntheticPlan, fill_synthetic_scorecards, synthetic_rows
from skillsight.store import EmbeddedStore

PROJECT = "bench"
MANIFEST = "clusters-bench.json"
TARGET_MS = 200.0
DAY_US = 86_400_000_000

# Members: the first failing evaluation of each activation picks the cluster.
_MEMBERS = """
INSERT INTO cluster_members
SELECT project_id, activation_id,
       concat('cl_', lower(hex(sipHash64(skill_name, evaluator)))) AS cluster_id, 'r2', 'run',
       toFloat32((sipHash64('d', activation_id) % 100) / 1000), '', skill_name, skill_version,
       any_started, fromUnixTimestamp64Micro({run_us:Int64}, 'UTC')
FROM (
    SELECT e.project_id AS project_id, e.activation_id AS activation_id,
           any(e.skill_name) AS skill_name, any(e.skill_version) AS skill_version,
           min(e.evaluator) AS evaluator, any(e.evaluated_at) AS any_started
    FROM evaluations AS e
    WHERE e.project_id = {project:String} AND e.passed = false
    GROUP BY e.project_id, e.activation_id
)
SETTINGS max_insert_threads = 2, max_threads = 2"""

_ONLINE = """
INSERT INTO cluster_members
SELECT project_id, concat('online-', toString(rn)), cluster_id, 'r2', 'online', 0.05,
       concat('ses-', toString(rn)), skill_name, skill_version,
       fromUnixTimestamp64Micro({run_us:Int64} + rn * 1000000, 'UTC'),
       fromUnixTimestamp64Micro({run_us:Int64} + rn * 1000000 + 500000, 'UTC')
FROM (SELECT project_id, cluster_id, skill_name, skill_version,
             toInt64(rowNumberInAllBlocks()) AS rn
      FROM cluster_members WHERE project_id = {project:String} LIMIT 1000)"""

_CLUSTERS = """
INSERT INTO clusters
SELECT project_id, cluster_id, run_id, true, concat(evaluator_name, ' · kind · terms · ', skill),
       ['alpha', 'beta', 'gamma'], evaluator_name, 'kind', severity, toUInt32(size),
       toUInt32(size), [skill], ['v1', 'v2'], 'v1', first_seen, last_seen,
       arrayMap(i -> toUInt32(size / 400), range(48)),
       arrayMap(i -> toUInt32(size / 14), range(14)),
       fromUnixTimestamp64Micro({run_us:Int64}, 'UTC'), '{"security": 1}', '{"security:secret": 1}',
       [any_member, any_member, any_member], arrayMap(i -> randomString(768), range(8)),
       randomString(768), '', '', fromUnixTimestamp64Micro({run_us:Int64} - offset, 'UTC')
FROM (
    SELECT project_id, cluster_id, any(skill_name) AS skill, count() AS size,
           min(started_at) AS first_seen, max(started_at) AS last_seen,
           any(activation_id) AS any_member,
           ['security', 'allowed_tools', 'tool_errors'][cityHash64(cluster_id) % 3 + 1]
               AS evaluator_name,
           ['critical', 'high', 'medium'][cityHash64(cluster_id) % 3 + 1] AS severity
    FROM cluster_members WHERE project_id = {project:String} AND assigned_by = 'run'
    GROUP BY project_id, cluster_id
) AS c
ARRAY JOIN [toInt64(0), toInt64(3600000000)] AS offset, ['r2', 'r1'] AS run_id"""

_STATUS = """
INSERT INTO cluster_status
SELECT project_id, cluster_id, ['new', 'acknowledged', 'resolved'][h % 3 + 1], '', '',
       fromUnixTimestamp64Micro({run_us:Int64}, 'UTC'), 'user',
       fromUnixTimestamp64Micro({run_us:Int64} - toInt64(h % 1000), 'UTC')
FROM (SELECT DISTINCT project_id, cluster_id, cityHash64(cluster_id) AS h FROM clusters
      WHERE project_id = {project:String})"""

_RUNS = """
INSERT INTO cluster_runs
SELECT {project:String}, tupleElement(r, 1), fromUnixTimestamp64Micro(tupleElement(r, 2), 'UTC'),
       fromUnixTimestamp64Micro(tupleElement(r, 2) + 60000000, 'UTC'),
       fromUnixTimestamp64Micro(tupleElement(r, 2) - 1209600000000, 'UTC'), 0, 0, 0, 1.0, '{}'
FROM (SELECT arrayJoin([('r1', {run_us:Int64} - 3600000000), ('r2', {run_us:Int64})]) AS r)"""


def _timed(call: Any, repeat: int) -> dict[str, float]:
    times = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    warm = sorted(times[1:])
    return {
        "cold_ms": round(times[0], 1),
        "median_ms": round(statistics.median(warm), 1),
        "p95_ms": round(warm[min(len(warm) - 1, int(0.95 * len(warm)))], 1),
    }


def _prepare(store: EmbeddedStore, folder: Path, activations: int, console: Console) -> None:
    manifest = folder / MANIFEST
    if manifest.exists() and json.loads(manifest.read_text())["activations"] == activations:
        console.print(f"reusing {activations:,} activations and their clusters in {folder}")
        return
    if synthetic_rows(store, PROJECT):
        raise SystemExit(f"{folder} holds another dataset; give an empty --data folder")
    start = time.perf_counter()
    end_us = time.time_ns() // 1000
    plan = SyntheticPlan(PROJECT, skill_names(50), tuple(zipf_counts(activations, 50)), end_us)
    fill_synthetic_scorecards(store, plan)
    params = {"project": PROJECT, "run_us": end_us}
    for sql in (_MEMBERS, _ONLINE, _CLUSTERS, _STATUS, _RUNS):
        store.execute(sql, params)
    manifest.write_text(json.dumps({"activations": activations, "run_us": end_us}))
    console.print(
        f"{activations:,} activations and a clustering generated in "
        f"{time.perf_counter() - start:.0f} s"
    )


def list_bench(
    activations: int, data: Path | None, console: Console, repeat: int = 20
) -> dict[str, Any]:
    """Time the cluster list, a cluster page and the route over ``activations``."""
    from fastapi.testclient import TestClient

    from skillsight.api import create_app
    from skillsight.config import Settings
    from skillsight.reports import cluster_detail, list_clusters
    from skillsight.runtime import Services

    folder = data or Path(tempfile.gettempdir()) / "skillsight-bench-clusters"
    folder.mkdir(parents=True, exist_ok=True)
    store = EmbeddedStore(folder)
    try:
        store.migrate()
        _prepare(store, folder, activations, console)
        members = store.query(
            "SELECT count() AS n FROM cluster_members WHERE project_id = {p:String}", {"p": PROJECT}
        )[0]["n"]
        listed = list_clusters(store, PROJECT, limit=50)
        biggest = listed[0].cluster_id
        report: dict[str, Any] = {
            "activations": activations,
            "member_rows": int(members),
            "clusters": len(list_clusters(store, PROJECT, limit=1000)),
            "list": _timed(lambda: list_clusters(store, PROJECT, limit=50), repeat),
            "list_skill": _timed(
                lambda: list_clusters(store, PROJECT, skill=listed[-1].skills[0]), repeat
            ),
            "detail": _timed(lambda: cluster_detail(store, PROJECT, biggest, limit=50), repeat),
        }
        settings = Settings.load(
            {"cluster_enabled": False}, env={"SKILLSIGHT_API_KEYS": f"bench-key:{PROJECT}"}
        )
        app = create_app(Services(settings, store))
        with TestClient(app, headers={"x-skillsight-key": "bench-key"}) as client:
            report["route"] = _timed(
                lambda: client.get("/api/v1/clusters", params={"limit": 50}), repeat
            )
        for name in ("list", "list_skill", "detail", "route"):
            console.print(f"cluster {name} over {activations:,} activations: {report[name]}")
        slowest = max(report[n]["median_ms"] for n in ("list", "list_skill", "detail"))
        verdict = "meets" if slowest < TARGET_MS else "misses"
        console.print(f"slowest median {slowest:.1f} ms: {verdict} the {TARGET_MS:.0f} ms target")
        return report
    finally:
        store.close()


__all__ = ["list_bench"]
