"""What each role runs, built by the composition root from Settings on a real (embedded) store:
a worker's share of sessions is its shard and it scores every activation it rebuilt; a process
that only evaluates takes its share of activations instead. Mixing the two up would leave
activations of other workers' sessions unscored."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from skillsight.config import Settings
from skillsight.runtime import build_services


def built(tmp_path: Path, role: str, **overrides: Any) -> dict[str, Any]:
    settings = Settings.load(
        {
            "data_dir": tmp_path / "store",
            "eval_warm_up": False,
            "cluster_enabled": False,
            **overrides,
        },
        env={},
    )

    async def run() -> dict[str, Any]:
        async with build_services(settings, role=role) as services:
            return {
                "ingest": services.collector is not None,
                "rebuild": services.finalizer.shard if services.finalizer else None,
                "score": services.scheduler.worker if services.scheduler else None,
                "poll": services.poller is not None,
            }

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("role", "overrides", "expected"),
    [
        ("all", {}, {"ingest": True, "rebuild": (0, 1), "score": (0, 1), "poll": False}),
        (
            "worker",
            {"worker_index": 1, "workers": 3},
            # rebuilds a third of the sessions, scores everything it rebuilt
            {"ingest": False, "rebuild": (1, 3), "score": (0, 1), "poll": False},
        ),
        (
            "evaluate",
            {"worker_index": 2, "workers": 3},
            # finds every rebuilt session, scores a third of the activations
            {"ingest": False, "rebuild": None, "score": (2, 3), "poll": True},
        ),
        (
            "evaluate",
            {"eval_worker_index": 1, "eval_workers": 2},
            {"ingest": False, "rebuild": None, "score": (1, 2), "poll": True},
        ),
        ("collector", {}, {"ingest": True, "rebuild": None, "score": None, "poll": False}),
        ("api", {}, {"ingest": False, "rebuild": None, "score": None, "poll": False}),
    ],
)
def test_each_role_runs_its_services_with_its_share(
    tmp_path: Path, role: str, overrides: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert built(tmp_path, role, **overrides) == expected
