"""Failure clusters end to end, on activations built from the recorded real Claude Code scenarios.

The corpus (``benchmarks.clustering_corpus``): six failure patterns of 50 instances with ids, file
names, values and wording varied per instance, 75 clean activations and six one-off failures,
written as rebuilt sessions and scored by the real evaluation scheduler. Then the real clustering
(MiniLM, hdbscan, ClickHouse through chdb) runs over them, and so do the API, the CLI and the
services ``skillsight serve`` runs.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from benchmarks.clustering_corpus import CLEAN, PATTERNS, Corpus, Item, failed
from demo.scripted_openai import Json, ScriptedOpenAI
from skillsight.api import create_app
from skillsight.cli import app as cli_app
from skillsight.clustering import (
    Clusterer,
    RunSummary,
    advise,
    clusterer_options,
    run_clustering,
    run_options,
)
from skillsight.config import Settings
from skillsight.evaluators import default_embedder
from skillsight.evaluators.judges import JudgeClient, JudgeSettings
from skillsight.reports import set_cluster_status
from skillsight.runtime import Services, build_services
from skillsight.store import EmbeddedStore

pytestmark = pytest.mark.slow

PROJECT = "acme"
PER_PATTERN = 50
DAY_US = 86_400_000_000
KEY = "acme-key"
SETTINGS = Settings.load(
    {"cluster_interval_s": 0.0, "cluster_assign_poll_s": 0.1},
    env={"SKILLSIGHT_API_KEYS": f"{KEY}:{PROJECT}"},
)


@dataclass
class World:
    store: EmbeddedStore
    corpus: Corpus
    items: list[Item]
    rng: random.Random
    first: RunSummary

    @property
    def labels(self) -> dict[str, str]:
        return {i.activation.activation_id: i.pattern for i in self.items}

    def memberships(self) -> dict[str, str]:
        run = self.store.clusters.latest_run(PROJECT)
        return self.store.clusters.membership(PROJECT, run)

    def cluster_of(self, pattern: str) -> str:
        members = self.memberships()
        counts = Counter(
            members[a] for a, p in self.labels.items() if p == pattern and a in members
        )
        return counts.most_common(1)[0][0]

    def more(self, pattern: str, count: int, *, ago_us: int = DAY_US) -> list[Item]:
        now = time.time_ns() // 1000
        return self.corpus.instances(pattern, count, self.rng, end_us=now, span_us=ago_us)

    def run(self) -> RunSummary:
        return run_clustering(
            self.store, PROJECT, embedder=default_embedder(), options=run_options(SETTINGS)
        )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    store = EmbeddedStore(tmp_path_factory.mktemp("clusters") / "store")
    store.migrate()
    corpus = Corpus(store, PROJECT)
    rng = random.Random(20261124)
    now = time.time_ns() // 1000
    items: list[Item] = []
    for pattern in PATTERNS:
        items += corpus.instances(pattern, PER_PATTERN, rng, end_us=now, span_us=10 * DAY_US)
    for pattern in CLEAN:
        items += corpus.instances(pattern, 25, rng, end_us=now, span_us=10 * DAY_US)
    items += corpus.one_offs(rng, end_us=now, span_us=10 * DAY_US)
    evaluations = corpus.write_and_score(items)
    for item in items:  # the corpus is what it says: patterns fail, clean traffic does not
        assert failed(evaluations[item.activation.activation_id]) == (item.pattern != "clean")
    world = World(store, corpus, items, rng, None)  # type: ignore[arg-type]
    world.first = world.run()
    yield world
    store.close()


def test_the_failures_are_the_activations_an_evaluation_failed(world: World) -> None:
    failing = {row["activation_id"] for row in world.store.failures.failing(PROJECT, 0)}
    stored = {f["activation_id"] for f in world.store.failures.stored(PROJECT, 0)}
    assert failing == stored == {a for a, p in world.labels.items() if p != "clean"}
    assert world.first.failures == len(failing) == 6 * PER_PATTERN + 6


def test_each_pattern_lands_in_one_pure_cluster_and_clean_traffic_in_none(world: World) -> None:
    members = world.memberships()
    labels = world.labels
    by_cluster: dict[str, Counter[str]] = {}
    for activation_id, cluster_id in members.items():
        by_cluster.setdefault(cluster_id, Counter())[labels[activation_id]] += 1
    for cluster_id, counts in by_cluster.items():
        purity = max(counts.values()) / sum(counts.values())
        assert purity >= 0.9, (cluster_id, counts)
    for pattern in PATTERNS:
        best = max(counts[pattern] for counts in by_cluster.values())
        assert best >= 0.9 * PER_PATTERN, (pattern, by_cluster)
    assert not [a for a in members if labels[a] == "clean"]
    assert world.first.clusters == len(PATTERNS)
    assert world.first.novel == sum(1 for p in labels.values() if p.startswith("oneoff:"))


def test_clusters_carry_labels_facts_and_exemplars(world: World) -> None:
    rows = {r["cluster_id"]: r for r in world.store.clusters.get(PROJECT)}
    security = rows[world.cluster_of("security")]
    assert security["label"].startswith("security · ")
    assert security["severity"] == "critical" and security["skills"] == ["deploy-check"]
    assert security["size"] == security["sessions"] == PER_PATTERN
    allowed = rows[world.cluster_of("allowed_tools_violation")]
    assert allowed["label"].startswith("allowed_tools · tool_not_allowed · ")
    assert allowed["label"].endswith(" · sales-report") and allowed["severity"] == "high"
    assert len(allowed["versions"]) == 1 and allowed["first_bad_version"] == allowed["versions"][0]
    members = world.memberships()
    for row in rows.values():
        assert len(row["exemplar_activation_ids"]) == 3
        assert {members[a] for a in row["exemplar_activation_ids"]} == {row["cluster_id"]}
        assert sum(row["daily"]) == row["size"] and row["first_seen"] <= row["last_seen"]


def test_more_data_of_the_same_patterns_keeps_the_cluster_ids(world: World) -> None:
    before = {pattern: world.cluster_of(pattern) for pattern in PATTERNS}
    added: list[Item] = []
    for pattern in PATTERNS:
        added += world.more(pattern, 15)
    world.corpus.write_and_score(added)
    world.items += added
    summary = world.run()
    assert summary.kept_share >= 0.95
    assert summary.matched["new"] == summary.matched["split"] == 0
    assert {pattern: world.cluster_of(pattern) for pattern in PATTERNS} == before
    members = world.memberships()
    assert {members[i.activation.activation_id] for i in added} == set(before.values())


def test_a_resolved_cluster_that_gets_a_new_member_regresses(world: World) -> None:
    cluster_id = world.cluster_of("distractor")
    resolved = set_cluster_status(world.store, PROJECT, cluster_id, "resolved", note="fixed")
    assert resolved.status == "resolved"
    world.run()  # nothing new since: it stays resolved
    assert world.store.clusters.statuses(PROJECT)[cluster_id]["status"] == "resolved"
    late = world.more("distractor", 1, ago_us=1_000)  # started after the fix
    world.corpus.write_and_score(late)
    world.items += late
    world.run()
    state = world.store.clusters.statuses(PROJECT)[cluster_id]
    assert (state["status"], state["changed_by"], state["note"]) == (
        "regressed",
        "clusterer",
        "fixed",
    )


def test_a_new_failure_joins_its_cluster_within_a_second_of_being_scored(world: World) -> None:
    secure, errors = world.cluster_of("security"), world.cluster_of("tool_error")
    set_cluster_status(world.store, PROJECT, secure, "resolved")
    fresh = world.more("security", 1, ago_us=1_000) + world.more("tool_error", 1, ago_us=1_000)
    world.items += fresh
    ids = [i.activation.activation_id for i in fresh]
    settings = replace(SETTINGS, rebuild_catchup_s=0.0)
    clusterer = Clusterer(world.store, options=replace(clusterer_options(settings), catchup_s=0.0))

    async def scenario() -> dict[str, dict[str, int | str]]:
        async with build_services(
            settings, role="evaluate", store=world.store, clusterer=clusterer
        ) as services:
            assert services.clusterer is clusterer and services.poller is not None
            world.corpus.write(fresh)  # rebuilt, not scored: the poller and scheduler do that
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                run = world.store.clusters.latest_run(PROJECT)
                found = world.store.clusters.members_of(PROJECT, ids, run)
                if len(found) == len(ids):
                    return {a: dict(m) for a, m in found.items()}  # type: ignore[misc]
                await asyncio.sleep(0.05)
            raise AssertionError(f"not assigned within 120 s: {services.health()}")

    assigned = asyncio.run(scenario())
    assert {a: m["cluster_id"] for a, m in assigned.items()} == dict(
        zip(ids, [secure, errors], strict=True)
    )
    failing = world.store.failures.failing(PROJECT, 0, activation_ids=ids)
    scored_at = {
        a: max(r["evaluated_at_us"] for r in failing if r["activation_id"] == a) for a in ids
    }
    for activation_id, member in assigned.items():
        assert member["assigned_by"] == "online"  # not by a clustering run
        # DESIGN's target is within a second of scoring (met on an idle machine; `benchmarks
        # clustering` reports it); this test must also hold while other work loads the two
        # cores (1.19 s seen with two suites running at once), so only a gross miss fails here
        assert 0 < int(member["assigned_at"]) - scored_at[activation_id] < 5_000_000, member
    assert world.store.clusters.statuses(PROJECT)[secure]["status"] == "regressed"


@pytest.fixture(scope="module")
def api(world: World) -> Iterator[TestClient]:
    app = create_app(Services(SETTINGS, world.store))
    with TestClient(app, headers={"x-skillsight-key": KEY}) as client:
        yield client


def test_the_api_lists_ranks_shows_and_moves_clusters(world: World, api: TestClient) -> None:
    listed = api.get("/api/v1/clusters").json()
    assert len(listed) == len(PATTERNS)
    assert [c["rank"] for c in listed] == sorted((c["rank"] for c in listed), reverse=True)
    assert listed[0]["severity"] == "critical"  # the security pattern outranks larger ones
    keys = {"cluster_id", "label", "status", "severity", "size", "sessions", "skills", "versions",
            "first_seen", "last_seen", "trend", "exemplar_activation_ids"}  # fmt: skip
    assert keys <= set(listed[0])
    skipped = world.cluster_of("skipped_script")
    only = api.get("/api/v1/clusters", params={"skill": "deploy-check"}).json()
    assert [c["skills"] for c in only] == [["deploy-check"]]
    detail = api.get(f"/api/v1/clusters/{skipped}", params={"limit": 10, "offset": 5}).json()
    assert len(detail["members"]) == 10 and detail["suggested_fix"] is None
    assert set(detail["evaluators"]) == {"script_execution", "integration_heuristic"}
    page = [m["activation_id"] for m in detail["members"]]
    assert {world.labels[a] for a in page} == {"skipped_script"}
    body = {"status": "acknowledged", "assignee": "ana", "note": "SKILL.md body"}
    moved = api.post(f"/api/v1/clusters/{skipped}/status", json=body).json()
    assert (moved["status"], moved["assignee"]) == ("acknowledged", "ana")
    assert [
        c["cluster_id"]
        for c in api.get("/api/v1/clusters", params={"status": "acknowledged"}).json()
    ] == [skipped]
    assert (
        api.post(f"/api/v1/clusters/{skipped}/status", json={"status": "regressed"}).status_code
        == 422
    )
    assert api.get("/api/v1/clusters/cl_000000000000").status_code == 404
    activation = api.get(f"/api/v1/activations/{page[0]}").json()
    assert activation["cluster"]["cluster_id"] == skipped
    clean = next(a for a, p in world.labels.items() if p == "clean")
    assert "cluster" not in api.get(f"/api/v1/activations/{clean}").json()
    run = api.post("/api/v1/clusters/run").json()
    assert run["clusters"] == len(PATTERNS) and run["kept_share"] >= 0.95


@pytest.fixture(scope="module")
def served(world: World) -> Iterator[str]:
    """The API on a real port (uvicorn in a thread), for the CLI's --api path."""
    config = uvicorn.Config(
        create_app(Services(SETTINGS, world.store)), host="127.0.0.1", port=0, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(30)


def test_the_cli_lists_shows_acknowledges_and_resolves(world: World, served: str) -> None:
    runner = CliRunner()
    cluster_id = world.cluster_of("tool_error")

    def cli(*args: str) -> str:
        done = runner.invoke(cli_app, ["clusters", *args, "--api", served, "--key", KEY])
        assert done.exit_code == 0, done.output
        return done.output

    listed = json.loads(cli("list", "--json", "--skill", "csv-summary"))
    assert cluster_id in [c["cluster_id"] for c in listed]
    table = cli("list")
    assert cluster_id in table and "critical" in table
    shown = cli("show", cluster_id, "--limit", "3")
    assert cluster_id in shown and "tool_errors" in shown and "exemplars" in shown
    assert "is acknowledged" in cli("ack", cluster_id, "--assignee", "bo", "--note", "retry loop")
    assert "is resolved" in cli("resolve", cluster_id)
    state = world.store.clusters.statuses(PROJECT)[cluster_id]
    assert (state["status"], state["assignee"], state["note"]) == ("resolved", "bo", "retry loop")
    summary = json.loads(cli("run", "--json"))
    assert summary["clusters"] == len(PATTERNS)
    missing = runner.invoke(
        cli_app, ["clusters", "show", "cl_000000000000", "--api", served, "--key", KEY]
    )
    assert missing.exit_code == 1 and "no cluster" in missing.output


def test_the_docs_example_runs() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "clusters.md").read_text()
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(example, "docs/clusters.md", "exec"), {})


def test_a_judge_model_advises_on_the_most_pressing_clusters_once(
    world: World, api: TestClient
) -> None:
    def answer(body: dict[str, Any]) -> list[Json]:
        prompt = body["messages"][-1]["content"]
        exemplar = re.search(r"activation ([0-9a-f]{32}) \(skill", prompt)
        assert exemplar is not None and "====" in prompt and "skill contract" in prompt
        advice = {
            "label": "the skill runs a tool its contract does not allow",
            "fix": "Declare the tool in allowed-tools, or do the work with Read.",
            "layer": "allowed_tools",
            "activation_id": exemplar.group(1),
            "cited_steps": [4, 999],  # 999 is no step of the exemplar
        }
        return [Json(advice)]

    server = ScriptedOpenAI(answer)
    with server as url:
        judge = JudgeSettings(model="openai/advice-test", api_base=url, api_key="k", max_attempts=1)
        client = JudgeClient(judge)
        assert advise(world.store, PROJECT, client, limit=2) == 2
        assert len(server.model_requests) == 2
        assert advise(world.store, PROJECT, client, limit=10) == len(PATTERNS) - 2
        assert advise(world.store, PROJECT, client, limit=10) == 0  # nothing changed since
    listed = api.get("/api/v1/clusters").json()
    detail = api.get(f"/api/v1/clusters/{listed[0]['cluster_id']}").json()
    assert detail["suggested_fix"] == "Declare the tool in allowed-tools, or do the work with Read."
    advice = detail["advice"]
    assert (advice["layer"], advice["model"]) == ("allowed_tools", "openai/advice-test")
    assert advice["cited_activation"] in detail["exemplar_activation_ids"]
    assert 999 not in advice["cited_steps"]


def test_the_clusterer_reclusters_each_project_on_its_schedule(world: World) -> None:
    before = world.store.clusters.latest_run(PROJECT)
    assert before is not None
    options = replace(clusterer_options(SETTINGS), interval_s=0.5, catchup_s=0.0)
    clusterer = Clusterer(world.store, options=options)

    async def scenario() -> str:
        async with clusterer:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                run = world.store.clusters.latest_run(PROJECT)
                if run is not None and run["run_id"] != before["run_id"]:
                    return run["run_id"]
                await asyncio.sleep(0.1)
        raise AssertionError(f"no scheduled run within 120 s: {clusterer.health()}")

    run_id = asyncio.run(scenario())
    health = clusterer.health()
    assert health["runs"] >= 1 and health["errors"] == 0
    assert health["last_runs"][PROJECT]["clusters"] == len(PATTERNS)  # type: ignore[index]
    assert run_id.startswith("r")
