"""Schemathesis against the REST API's own OpenAPI, with one project's key over two projects'
data (issue 15).

A real ``skillsight serve`` holds project A (a recorded Claude Code session, and a session of a
skill only A has, carrying a marker) and project B (another recorded session). For every
operation of ``/openapi.json`` schemathesis generates requests — valid and not — and sends them
with B's key: no answer is a server error, every answer conforms to the schema it documents
(status code aside: 401/403/404 are not in FastAPI's schemas), and none holds anything of A's.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from tests.harness.scenario_captures import load_capture
from tests.support.serve import RunningServer, running_server
from tests.support.tenants import KEY, MARK, SKILL, marker_session, post_as

KEYS = "key-a:alpha,key-b:beta,key-ops:ops:admin"
EXAMPLES = 12  # per operation and mode: ~600 requests


@pytest.fixture(scope="module")
def two_projects(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[RunningServer, set[str]]]:
    env = {
        "SKILLSIGHT_API_KEYS": KEYS,
        "SKILLSIGHT_REBUILD_QUIET_S": "0.3",
        "SKILLSIGHT_FLUSH_INTERVAL_S": "0.05",
    }
    with running_server(tmp_path_factory.mktemp("schemathesis") / "data", env=env) as server:
        alpha, beta = load_capture("allowed_tools_violation"), load_capture("one_skill")
        for request in (alpha.native_traces, alpha.native_logs):
            post_as(server, "key-a", request.signal, request.body, request.content_type)
        post_as(server, "key-a", "traces", marker_session(), "application/x-protobuf")
        for request in (beta.native_traces, beta.native_logs):
            post_as(server, "key-b", request.signal, request.body, request.content_type)
        deadline = time.monotonic() + 120
        activations: list[dict[str, Any]] = []
        while len(activations) < 2:
            assert time.monotonic() < deadline, "A's sessions were not rebuilt"
            time.sleep(0.1)
            activations = httpx.get(
                server.api + "/api/v1/activations", headers={KEY: "key-a"}, timeout=30
            ).json()
        spans = httpx.get(
            server.api + "/api/v1/spans", params={"limit": 5000}, headers={KEY: "key-a"}, timeout=30
        ).json()
        marks = {MARK, SKILL} | {a["activation_id"] for a in activations}
        marks |= {s["trace_id"] for s in spans} | {
            s["session_id"] for s in spans if s["session_id"]
        }
        yield server, marks


def test_every_operation_as_project_b(two_projects: tuple[RunningServer, set[str]]) -> None:
    """Each operation in turn, valid and invalid requests (schemathesis's strategies driven
    by hypothesis here: its pytest plugin does not run under pytest 9)."""
    server, marks = two_projects
    schema = schemathesis.openapi.from_url(server.api + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    checks = [not_a_server_error, response_schema_conformance, content_type_conformance]
    statuses: Counter[int] = Counter()
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                derandomize=True,
                suppress_health_check=list(HealthCheck),
            )
            def one(case: Any) -> None:
                response = case.call(headers={KEY: "key-b"}, timeout=60)
                statuses[response.status_code] += 1
                case.validate_response(response, checks=checks)
                given_in = str(case.path_parameters) + str(case.query) + str(case.body)
                found = sorted(m for m in marks if m in response.text and m not in given_in)
                assert not found, f"{case.method} {case.formatted_path}: project A's {found}"

            try:
                one()
            except Unsatisfiable:
                assert mode is GenerationMode.NEGATIVE  # no parameter to make invalid
    assert sum(statuses.values()) >= 200, statuses
    assert statuses[200] and statuses[422], statuses  # valid requests answered, invalid refused
