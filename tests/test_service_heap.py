"""A service process's garbage-collector policy (``skillsight.runtime.settle_heap``): applied by
the process commands once started, shown in ``/healthz``, and off with
``SKILLSIGHT_GC_YOUNG_THRESHOLD=0``. Each check runs in a process of its own: freezing the test
process's heap would keep what the other tests leave behind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.serve import running_server

_PROBE = """
import gc, json
from skillsight.runtime import settle_heap
before = gc.get_threshold()
applied = settle_heap({threshold})
print(json.dumps([applied, before, gc.get_threshold(), gc.get_freeze_count()]))
"""


@pytest.mark.parametrize("threshold", [50_000, 0])
def test_settle_heap_freezes_start_up_and_raises_the_young_threshold(threshold: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(threshold=threshold)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    applied, before, after, frozen = json.loads(done.stdout)
    assert before == [700, 10, 10]
    if threshold:
        assert applied and after == [threshold, 10, 10] and frozen > 1000
    else:
        assert not applied and after == before and frozen == 0


@pytest.mark.parametrize(
    ("env", "young"), [({}, 50_000), ({"SKILLSIGHT_GC_YOUNG_THRESHOLD": "0"}, 700)]
)
def test_a_started_service_reports_the_collector_it_runs_with(
    tmp_path: Path, env: dict[str, str], young: int
) -> None:
    with running_server(tmp_path / "data", env=env) as server:
        collector = server.get("/healthz")["gc"]
    assert collector["young_threshold"] == young
    assert (collector["frozen"] > 1000) is (young != 700)
