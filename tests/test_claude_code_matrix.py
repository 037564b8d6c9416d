"""Every recorded scenario, played live by the real Claude Code CLI twice — with the model
server's ``request-id`` header and without it, as behind a gateway — into one running
``skillsight serve`` over OTLP. The three protocols take turns by scenario (both variants of a
scenario use the same one), so each protocol carries sessions of both variants.

The service was started with no ``--skills``: each project's catalogue is pushed through
``POST /api/v1/skills`` from a copy of the skills in another folder (a CI checkout), and no
workspace is given. For every scenario the two variants must give the same activations
(skill, trigger, internal calls with arguments and results, integration message), the same
trajectory and the same deterministic verdicts, and those must be what the scenario expects.

Cost: 20 sessions of about 1.5 s, three at a time, plus one service; the recorded variants are
compared without the CLI in ``tests/test_claude_code_variants.py``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from demo.scenario_library import build_scenario
from demo.scenarios import SCENARIOS, ScenarioResult, mismatches, run_scenario_async
from demo.workload import PROTOCOLS
from skillsight.evaluators import DETERMINISTIC
from skillsight.skills import pack_skills
from tests.support.serve import RunningServer, running_server

pytestmark = [pytest.mark.claude, pytest.mark.slow]

VARIANTS = {"rid": True, "gateway": False}  # name -> the model server sends request-id
NAMES = list(SCENARIOS)
PROTOCOL = {name: PROTOCOLS[i % len(PROTOCOLS)] for i, name in enumerate(NAMES)}
ADMIN = "admin-key"


def project(name: str, variant: str) -> str:
    return f"{name}.{variant}"


def key(name: str, variant: str) -> str:
    return f"key-{name}-{variant}"


def get(server: RunningServer, name: str, variant: str, path: str, **params: Any) -> Any:
    response = httpx.get(
        server.api + path,
        params=params,
        headers={"x-skillsight-key": key(name, variant)},
        timeout=30,
    )
    assert response.status_code == 200, (path, response.text)
    return response.json()


@pytest.fixture(scope="module")
def played(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[RunningServer, dict[tuple[str, str], ScenarioResult]]]:
    root = tmp_path_factory.mktemp("matrix")
    keys = [f"{ADMIN}:admin:read+admin"] + [
        f"{key(n, v)}:{project(n, v)}:ingest+read+admin" for n in NAMES for v in VARIANTS
    ]
    env = {
        "SKILLSIGHT_API_KEYS": ",".join(keys),
        "SKILLSIGHT_HOST": "127.0.0.1",
        "SKILLSIGHT_REBUILD_QUIET_S": "0.3",
        "SKILLSIGHT_EVAL_ENABLED": "true",
    }
    with running_server(root / "data", env=env) as server:
        server.headers = {"x-skillsight-key": ADMIN}
        # each project's catalogue, pushed from another folder than the agent's workspace
        for name in NAMES:
            build_scenario(name, root / "ci" / name).write()
            archive = pack_skills(sorted((root / "ci" / name / ".claude" / "skills").iterdir()))
            for variant in VARIANTS:
                pushed = httpx.post(
                    server.api + "/api/v1/skills",
                    content=archive,
                    headers={
                        "x-skillsight-key": key(name, variant),
                        "content-type": "application/gzip",
                    },
                    timeout=30,
                )
                assert pushed.status_code == 200, pushed.text

        async def play() -> list[ScenarioResult]:
            gate = asyncio.Semaphore(3)

            async def one(name: str, variant: str) -> ScenarioResult:
                protocol = PROTOCOL[name]
                endpoint = server.otlp_http if protocol != "grpc" else f"http://{server.otlp_grpc}"
                async with gate:
                    return await run_scenario_async(
                        name,
                        workdir=root / "work" / variant / name,
                        endpoint=endpoint,
                        protocol=protocol,
                        project_key=key(name, variant),
                        request_ids=VARIANTS[variant],
                        timeout_s=90,
                    )

            return await asyncio.gather(*(one(n, v) for n in NAMES for v in VARIANTS))

        started = time.monotonic()
        results = dict(
            zip([(n, v) for n in NAMES for v in VARIANTS], asyncio.run(play()), strict=True)
        )
        deadline = time.monotonic() + 180
        while True:
            health: dict[str, Any] = server.get("/healthz")
            scored = health["evaluation"]["sessions_scored"] >= len(results)
            if scored and health["caught_up"]:
                break
            assert time.monotonic() < deadline, health
            time.sleep(0.1)
        print(
            f"matrix: {len(results)} sessions played and scored in "
            f"{time.monotonic() - started:.1f} s"
        )
        yield server, results


def activation_view(activation: dict[str, Any]) -> dict[str, Any]:
    return {
        "skill": activation["skill_name"],
        "trigger": activation["trigger"],
        "start": activation["trigger_call_id"],
        "load": activation["load_call_id"],
        "subagent": activation["subagent"],
        "tool_calls": [
            (c["tool_call_id"], c["name"], c["arguments"], c["result"], c["is_error"], c["step_id"])
            for c in activation["tool_calls"]
        ],
        "integration": (activation["integration_message"], activation["integration_step_id"]),
        "version": activation["skill_version"],
        "outcome": activation["outcome"],
    }


def verdict_view(activation: dict[str, Any]) -> list[Any]:
    return [
        (
            e["evaluator"],
            e["score"],
            e["label"],
            e["unseen"],
            [(f["kind"], f["tool_call_id"]) for f in e["findings"]],
        )
        for e in activation["evaluations"]
        if e["evaluator"] in DETERMINISTIC
    ]


def trajectory_view(document: dict[str, Any], session_id: str) -> Any:
    def steps(trajectory: dict[str, Any]) -> list[Any]:
        out: list[Any] = []
        for step in trajectory["steps"]:
            extra = step.get("extra") or {}
            calls = [
                (c["tool_call_id"], c["function_name"], c["arguments"])
                for c in step.get("tool_calls") or []
            ]
            results = [
                (r["source_call_id"], r.get("content"))
                for r in (step.get("observation") or {}).get("results", [])
            ]
            out.append(
                (step["source"], step.get("message"), calls, results, extra.get("message_logged"))
            )
        for sub in trajectory.get("subagent_trajectories") or []:
            out.append(steps(sub))
        return out

    return json.loads(json.dumps(steps(document)).replace(session_id, "<session>"))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", NAMES)
def test_with_and_without_request_id_the_service_reads_the_same(
    played: tuple[RunningServer, dict[tuple[str, str], ScenarioResult]], name: str
) -> None:
    server, results = played
    views = {}
    for variant in VARIANTS:
        result = results[(name, variant)]
        assert mismatches(result) == [], (name, variant)
        activations = get(server, name, variant, "/api/v1/activations")
        document = get(server, name, variant, f"/api/v1/trajectories/{result.session_id}")
        agent_steps = [s for s in document["steps"] if s["source"] == "agent"]
        with_ids = [s for s in agent_steps if (s.get("extra") or {}).get("request_id")]
        # the variant really happened: request ids on every model call, or on none
        assert len(with_ids) == (len(agent_steps) if VARIANTS[variant] else 0), variant
        ordered = sorted(activations, key=lambda a: a["started_at"])
        view = (
            [activation_view(a) for a in ordered],
            trajectory_view(document, result.session_id or ""),
            [verdict_view(a) for a in ordered],
        )
        # the two runs worked in different folders (they ran at the same time)
        text = json.dumps(view).replace(str(result.scenario.root.parent), "<work>")
        views[variant] = json.loads(text)
    assert views["gateway"] == views["rid"]

    expected = results[(name, "rid")].scenario.expected
    activations, _, verdicts = views["rid"]
    work = str(results[(name, "rid")].scenario.root.parent)
    assert [(a["skill"], a["trigger"]) for a in activations] == [
        (e.skill, e.trigger) for e in expected.activations
    ]
    for activation, want in zip(activations, expected.activations, strict=True):
        assert [c[0] for c in activation["tool_calls"]] == [c.tool_use_id for c in want.tool_calls]
        assert activation["integration"][0] == want.integration_message.replace(work, "<work>")
    wanted = {e.evaluator: e.passed for e in expected.evaluations}
    for scored in verdicts:
        by_name = {v[0]: v for v in scored}
        assert list(by_name) == list(DETERMINISTIC)
        security = by_name["security"]
        if wanted.get("security", True):
            assert security[4] == [], security  # a clean activation: no finding at all
        for evaluator, passed in wanted.items():
            score = by_name[evaluator][1]
            if passed:
                assert score is None or score >= 0.5, by_name[evaluator]
            else:
                assert score is not None and score < 1.0, by_name[evaluator]


def test_healthz_says_which_sessions_came_without_request_ids(
    played: tuple[RunningServer, dict[tuple[str, str], ScenarioResult]],
) -> None:
    server, results = played
    rebuild = server.get("/healthz")["rebuild"]
    # no session was held back by the completeness rule (it would have been rebuilt
    # provisionally after SKILLSIGHT_REBUILD_MAX_WAIT_S), nor scored before it completed
    assert (rebuild["provisional_rebuilds"], rebuild["settled_incomplete"]) == (0, 0)
    native = rebuild["sources"]["claude_code"]
    assert native["sessions"] == len(results)
    assert native["without_request_id"] == len(NAMES)
    assert (native["without_tool_output"], native["without_prompts"]) == (0, 0)
    assert native["without_workspace"] == 0
