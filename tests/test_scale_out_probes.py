"""The probes and metrics every role serves, on real processes: ``/livez`` answers while the
process runs, ``/readyz`` follows the store, ``/metrics`` is Prometheus text with the families
of the role's services; a role that shares its store refuses the embedded one."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from benchmarks.scale_out_fleet import Fleet, export_bodies, send
from tests.support.chdb_http import ChdbHttpServer

# A sample line of the text exposition format: name, optional labels, a float.
_SAMPLE = re.compile(r'^[a-z_:][a-z0-9_:]*(\{([a-z_]+="[^"]*",?)*\})? -?[0-9.e+-]+$')


def test_probes_follow_the_store_and_metrics_follow_the_role(tmp_path: Path) -> None:
    with ChdbHttpServer(tmp_path / "clickhouse") as clickhouse:
        fleet = Fleet(clickhouse.url("probes"), tmp_path / "processes")
        with fleet:
            fleet.migrate()
            [collector, api] = fleet.start(("collector", ""), ("api", ""))
            send([collector], export_bodies(range(20), per_request=10))
            fleet.wait(
                lambda: collector.metrics()['skillsight_rows_written_total{signal="traces"}'] == 60,
                "rows written",
                timeout=60,
            )
            text = collector.get("/metrics")
            assert text.headers["content-type"].startswith("text/plain; version=0.0.4")
            lines = [line for line in text.text.splitlines() if not line.startswith("#")]
            assert lines and all(_SAMPLE.match(line) for line in lines), lines
            metrics = collector.metrics()
            assert metrics["skillsight_queue_rows"] == 0
            assert metrics["skillsight_requests_refused_total"] == 0
            assert metrics["skillsight_writer_healthy"] == 1
            assert "skillsight_queue_rows" not in api.metrics()
            for process in (collector, api):
                ready = process.get("/readyz")
                assert ready.status_code == 200, ready.text
                assert ready.json()["checks"]["store"] is True
            assert collector.get("/readyz").json()["checks"] == {
                "store": True,
                "writer": True,
                "queue_has_room": True,
            }
            clickhouse.__exit__(None, None, None)  # the store goes away
            for process in (collector, api):
                ready = process.get("/readyz")
                assert ready.status_code == 503
                assert ready.json()["checks"]["store"] is False
                assert process.get("/livez").json() == {"alive": True}  # not restarted for it


def test_a_role_other_than_all_needs_a_shared_store(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "skillsight.cli", "serve", "--role", "worker"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"SKILLSIGHT_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 1
    assert "--role worker shares its store" in result.stderr
    assert "Traceback" not in result.stderr
