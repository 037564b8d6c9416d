"""The web UI's pages over 10 million activations (``python -m benchmarks ui``).

The store is the cluster-list bench's (:mod:`benchmarks.clustering_list`): the scorecard bench's
synthetic activations and evaluations, generated inside ClickHouse, plus a clustering of their
failures; it is generated once and kept (``--data``). The scorecard read models are backfilled
as the service's refresher would. Each page is then fetched through the real app (ASGI, the
same routes, templates and read models ``skillsight serve`` runs) with a project key: the first
call apart, median and p95 of the rest. Target (DESIGN.md): the clusters and skill pages render
in under 1 s.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

TARGET_MS = 1000.0
KEY = "bench-key"


def _timed(call: Callable[[], Any], repeat: int) -> dict[str, float]:
    times = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        response = call()
        times.append((time.perf_counter() - start) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"{response.request.url}: HTTP {response.status_code}")
    warm = sorted(times[1:]) or times
    return {
        "cold_ms": round(times[0], 1),
        "median_ms": round(statistics.median(warm), 1),
        "p95_ms": round(warm[min(len(warm) - 1, int(0.95 * len(warm)))], 1),
    }


def ui_bench(
    activations: int, data: Path | None, console: Console, repeat: int = 10
) -> dict[str, Any]:
    """Time the clusters page, a cluster's page, the skills list and the skill page of the
    busiest and of a typical skill, for 7 days, 30 days and all time."""
    from fastapi.testclient import TestClient

    from benchmarks.clustering_list import PROJECT
    from benchmarks.clustering_list import _prepare as prepare_store
    from benchmarks.scorecard import skill_names
    from skillsight.api import create_app
    from skillsight.config import Settings
    from skillsight.reports import list_clusters
    from skillsight.runtime import Services
    from skillsight.store import EmbeddedStore

    folder = data or Path(tempfile.gettempdir()) / "skillsight-bench-clusters"
    folder.mkdir(parents=True, exist_ok=True)
    store = EmbeddedStore(folder)
    report: dict[str, Any] = {"activations": activations, "pages": {}}
    try:
        store.migrate()
        prepare_store(store, folder, activations, console)
        rollups = store.scorecards.rollups
        if not rollups.ready():
            console.print("backfilling the scorecard read models …")
            rollups.backfill()
        if not rollups.activations_ready():  # a store generated before the activation counts
            rollups.mark_activation_days()
        started = time.perf_counter()
        refreshed = rollups.refresh_dirty()
        if refreshed:
            seconds = time.perf_counter() - started
            console.print(f"refreshed {refreshed} (skill, day) read-model days in {seconds:.1f} s")
        biggest = list_clusters(store, PROJECT, limit=1)[0].cluster_id
        names = skill_names(50)
        pages = {"clusters": "/?status=all&window=30d", "cluster": f"/clusters/{biggest}"}
        for window in ("7d", "30d", "all"):
            pages[f"skills list {window}"] = f"/skills?window={window}"
        for label, skill in (("busiest", names[0]), ("typical", names[len(names) // 2])):
            for window in ("7d", "30d", "all"):
                pages[f"skill {label} {window}"] = f"/skills/{skill}?window={window}"
                # its activity and cost charts, fetched by the page once it is shown
                pages[f"  usage {label} {window}"] = f"/skills/{skill}/usage?window={window}"
        settings = Settings.load(
            {"cluster_enabled": False}, env={"SKILLSIGHT_API_KEYS": f"{KEY}:{PROJECT}"}
        )
        app = create_app(Services(settings, store))
        with TestClient(app, headers={"x-skillsight-key": KEY}) as client:
            for name, path in pages.items():
                timing = _timed(lambda path=path: client.get(path), repeat)  # type: ignore[misc]
                report["pages"][name] = {"path": path, **timing}
                verdict = "ok" if timing["median_ms"] < TARGET_MS else "SLOW"
                console.print(
                    f"{name:<22} {timing['median_ms']:>8.1f} ms median, "
                    f"{timing['p95_ms']:>8.1f} p95, first {timing['cold_ms']:.0f}  {verdict}",
                    highlight=False,
                )
        slowest = max(p["median_ms"] for p in report["pages"].values())
        verdict = "meets" if slowest < TARGET_MS else "misses"
        console.print(f"slowest median {slowest:.0f} ms: {verdict} the {TARGET_MS:.0f} ms target")
        report["slowest_median_ms"] = slowest
        return report
    finally:
        store.close()


__all__ = ["ui_bench"]
