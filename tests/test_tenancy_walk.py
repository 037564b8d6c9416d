"""Project B walks every endpoint and every CLI path over project A's data and finds nothing.

A real ``skillsight serve`` (rebuild and online evaluation on) holds two projects: A has a
recorded Claude Code session whose skill breaks its allowed-tools, plus a session of a skill
only A has, carrying a marker string; B has another recorded session. Every route the app serves
— REST, OTLP, health, UI pages, found from the app itself so new ones are walked too — is called
with B's key and A's identifiers in its path and query; every CLI command that reads through the
API is run with B's key, and every command that reads the store directly with ``--project``
B. No answer may contain anything of A's: its session and trace ids, activation ids, skill, or
the marker. Mutating routes called as B on A's ids change nothing of A's. A's ingest-only key
reads nothing at all.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from fastapi.routing import APIRoute
from typer.testing import CliRunner

from skillsight.api import create_app
from skillsight.cli import app as cli_app
from tests.harness.scenario_captures import load_capture
from tests.support.serve import RunningServer, running_server
from tests.support.tenants import KEY, MARK, SKILL, marker_session, post_as

pytestmark = pytest.mark.slow

KEYS = "key-a:alpha,key-a-ingest:alpha:ingest,key-b:beta,key-ops:ops:admin"
# Commands that start services, write or need more than a read: not walked.
NOT_READS = {
    "serve", "worker", "rebuild", "migrate", "ingest", "bench", "rerun", "eval run",
    "eval worker", "judges calibrate", "skills scan", "golden import", "golden promote",
    "clusters run",
}  # fmt: skip


@dataclass
class World:
    server: RunningServer
    data: Path
    ids: dict[str, str]  # A's identifiers by the parameter names that take them
    marks: set[str]  # strings only A's data contains


def admin_health(server: RunningServer) -> dict[str, Any]:
    found: dict[str, Any] = httpx.get(
        server.api + "/healthz", headers={KEY: "key-ops"}, timeout=30
    ).json()
    return found


def read_as(server: RunningServer, key: str, path: str, **params: Any) -> Any:
    response = httpx.get(server.api + path, params=params, headers={KEY: key}, timeout=60)
    assert response.status_code == 200, (path, response.text)
    return response.json()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    data = tmp_path_factory.mktemp("walk") / "data"
    env = {
        "SKILLSIGHT_API_KEYS": KEYS,
        "SKILLSIGHT_REBUILD_QUIET_S": "0.3",
        "SKILLSIGHT_EVAL_ENABLED": "true",
        "SKILLSIGHT_FLUSH_INTERVAL_S": "0.05",
    }
    with running_server(data, env=env) as server:
        alpha = load_capture("allowed_tools_violation")
        for request in (alpha.native_traces, alpha.native_logs):
            post_as(server, "key-a", request.signal, request.body, request.content_type)
        post_as(server, "key-a", "traces", marker_session(), "application/x-protobuf")
        beta = load_capture("one_skill")
        for request in (beta.native_traces, beta.native_logs):
            post_as(server, "key-b", request.signal, request.body, request.content_type)
        deadline = time.monotonic() + 180
        while True:
            health = admin_health(server)
            scored = health["evaluation"]["sessions_scored"]
            if scored >= 3 and health["caught_up"]:
                break
            assert time.monotonic() < deadline, health
            time.sleep(0.1)
        httpx.post(server.api + "/api/v1/clusters/run", headers={KEY: "key-a"}, timeout=120)
        activations = read_as(server, "key-a", "/api/v1/activations")
        clusters = read_as(server, "key-a", "/api/v1/clusters")
        spans = read_as(server, "key-a", "/api/v1/spans", limit=5000)
        marks = {MARK, SKILL}
        marks |= {s["trace_id"] for s in spans} | {
            s["session_id"] for s in spans if s["session_id"]
        }
        marks |= {a["activation_id"] for a in activations}
        ids = {
            "activation_id": activations[0]["activation_id"],
            "session_id": f"session-{MARK}",
            "trace_id": spans[0]["trace_id"],
            "name": SKILL,
            "skill": SKILL,
            "cluster_id": clusters[0]["cluster_id"] if clusters else f"cluster-{MARK}",
            "set_id": f"set-{MARK}",
            "run_id": f"run-{MARK}",
        }
        assert len(activations) >= 2 and any(a["skill_name"] == SKILL for a in activations)
        yield World(server, data, ids, marks)


def leaks(world: World, text: str, given: tuple[str, ...] = ()) -> list[str]:
    """A's marks in ``text``, but for the ones the caller gave (echoed in "x: not found")."""
    return sorted(m for m in world.marks if m and m in text and not any(m in g for g in given))


def api_routes() -> Iterator[APIRoute]:
    """Every route of the app, into included routers (new ones are walked as they come)."""

    def flat(routes: list[Any]) -> Iterator[Any]:
        for route in routes:
            inner = getattr(route, "original_router", None)
            yield from flat(inner.routes) if inner is not None else [route]

    yield from (r for r in flat(create_app().routes) if isinstance(r, APIRoute))


def fill(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: ids.get(m.group(1), MARK), path)


def test_every_route_as_project_b_finds_nothing_of_project_a(world: World) -> None:
    clusters_before = read_as(world.server, "key-a", "/api/v1/clusters")
    walked = []
    for route in api_routes():
        query = {p.name: world.ids.get(p.name, MARK) for p in route.dependant.query_params}
        query = {k: v for k, v in query.items() if k in world.ids}
        for method in sorted(route.methods - {"HEAD"}):
            url = world.server.api + fill(route.path, world.ids)
            response = httpx.request(
                method,
                url,
                params=query,
                headers={KEY: "key-b", "content-type": "application/json"},
                content=b"{}" if method == "POST" else None,
                timeout=60,
            )
            walked.append((method, route.path, response.status_code))
            assert response.status_code < 500, (method, route.path, response.text[:300])
            found = leaks(world, response.text, (url, *query.values()))
            assert not found, (method, route.path, found)
            if method == "POST":
                assert response.status_code >= 400 or "status" not in route.path, walked[-1]
    assert len(walked) >= 20, walked
    assert read_as(world.server, "key-a", "/api/v1/clusters") == clusters_before


def test_an_ingest_only_key_reads_nothing(world: World) -> None:
    for route in api_routes():
        if "GET" not in route.methods:
            continue
        if route.path in ("/livez", "/readyz", "/metrics", "/openapi.json"):
            continue  # no key asked: nothing of any project in them
        url = world.server.api + fill(route.path, world.ids)
        response = httpx.get(url, headers={KEY: "key-a-ingest"}, timeout=60)
        assert not leaks(world, response.text, (url,)), (route.path, response.text[:300])
        if route.path.startswith("/api/"):
            assert response.status_code == 403, (route.path, response.status_code)


def cli_commands() -> Iterator[tuple[tuple[str, ...], list[str]]]:
    """(command path, parameter names) of every leaf command."""
    root = typer.main.get_command(cli_app)

    def walk(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], list[str]]]:
        subcommands = getattr(command, "commands", None)
        if subcommands:
            for name, sub in subcommands.items():
                yield from walk(sub, (*path, name))
        else:
            yield path, [p.name for p in command.params]

    yield from walk(root, ())


def cli_args(world: World, path: tuple[str, ...], params: list[str]) -> list[str]:
    root = typer.main.get_command(cli_app)
    command: Any = root
    for name in path:
        command = command.commands[name]
    args: list[str] = list(path)
    for param in command.params:
        if param.param_type_name == "argument":
            args.append(world.ids.get(param.name, SKILL))
    if "skill" in params and path[0] == "gate":
        args += ["--skill", SKILL]
    return args


def cli_output(result: Any) -> str:
    try:
        errors = result.stderr
    except ValueError:  # stderr not captured apart
        errors = ""
    return str(result.output) + str(errors) + (repr(result.exception) if result.exception else "")


def test_every_cli_path_as_project_b_finds_nothing_of_project_a(world: World) -> None:
    runner = CliRunner()
    ran = []
    for path, params in cli_commands():
        if " ".join(path) in NOT_READS or "api" not in params:
            continue
        args = [*cli_args(world, path, params), "--api", world.server.api, "--key", "key-b"]
        result = runner.invoke(cli_app, args)
        output = cli_output(result)
        ran.append(" ".join(path))
        assert "Traceback" not in output, (args, output[-500:])
        assert not leaks(world, output, tuple(args)), (args, leaks(world, output, tuple(args)))
    assert {"activations show", "activations list", "trajectories export", "spans"} <= set(ran)


def test_cli_paths_on_the_store_with_project_b_find_nothing_of_project_a(world: World) -> None:
    """After the server stops, the commands that read the store directly, as ``--project``
    beta (the folder's owner has every project; ``--project`` must keep them apart)."""
    world.server.proc.terminate()
    world.server.proc.wait(60)
    runner = CliRunner()
    ran = []
    for path, params in cli_commands():
        if " ".join(path) in NOT_READS or "project" not in params or "data" not in params:
            continue
        args = [*cli_args(world, path, params), "--data", str(world.data), "--project", "beta"]
        if "output" in params:
            args += ["--output", str(world.data.parent / "out.json")]
        result = runner.invoke(cli_app, args)
        output = cli_output(result)
        out_file = world.data.parent / "out.json"
        if out_file.exists():
            output += out_file.read_text()
            out_file.unlink()
        ran.append(" ".join(path))
        assert "Traceback" not in output, (args, output[-500:])
        assert not leaks(world, output, tuple(args)), (args, leaks(world, output, tuple(args)))
    assert {"activations show", "golden list", "clusters list"} <= set(ran)
