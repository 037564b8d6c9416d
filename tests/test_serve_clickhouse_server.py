"""`skillsight serve --clickhouse URL`: the whole service on the server transport."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.chdb_http import ChdbHttpServer
from tests.support.otlp_builders import export_request, span
from tests.support.serve import running_server


def test_serve_on_a_clickhouse_server(tmp_path: Path, chdb_http: ChdbHttpServer) -> None:
    url = chdb_http.url("serve_e2e")
    with running_server(tmp_path / "unused", args=("--clickhouse", url)) as server:
        body = export_request(
            [
                span(
                    "execute_tool Bash",
                    {
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "Bash",
                        "gen_ai.tool.call.id": "c-1",
                    },
                    trace=77,
                ),
            ]
        )
        response = httpx.post(
            server.otlp_http + "/v1/traces",
            content=body,
            headers={"content-type": "application/x-protobuf"},
        )
        assert response.status_code == 200
        server.wait_written(spans=1)
        health = server.get("/healthz")
        assert health["store"] == "server" and health["ok"]
        [stored] = server.spans(trace_id=(77).to_bytes(16, "big").hex())
        assert (stored["tool_name"], stored["tool_call_id"], stored["operation"]) == (
            "Bash",
            "c-1",
            "execute_tool",
        )
    assert not (tmp_path / "unused").exists()  # the embedded store was never opened
