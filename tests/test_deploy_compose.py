"""deploy/docker-compose.yml: valid against the Compose Specification's JSON schema, and
consistent with itself, the ClickHouse cluster it configures and the settings it sets."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

import jsonschema
import pytest

from skillsight.config import Settings
from skillsight.runtime import ROLES
from tests.support.deploy import DEPLOY, SCHEMAS, clickhouse_cluster, compose, interpolated

# Compose durations: one or more number+unit pairs (as in 1m30s).
_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$")
SKILLSIGHT_SERVICES = ("migrate", "collector-1", "collector-2", "worker-0", "worker-1", "api")


def _compose_validator() -> jsonschema.protocols.Validator:
    schema = json.loads((SCHEMAS / "compose-spec.json").read_text(encoding="utf-8"))
    checker = jsonschema.FormatChecker()
    checker.checks("duration")(
        lambda value: not isinstance(value, str) or bool(_DURATION.match(value))
    )
    # The file names draft 2019-09 by a URI jsonschema does not know ("http://...schema#"), so
    # the draft is named here rather than guessed from it.
    assert "2019-09" in schema["$schema"]
    jsonschema.Draft201909Validator.check_schema(schema)
    return jsonschema.Draft201909Validator(schema, format_checker=checker)


def _command(service: dict[str, Any]) -> list[str]:
    command: list[str] = service.get("command", [])
    return command


def _env(service: dict[str, Any]) -> dict[str, str]:
    return {k: interpolated(str(v)) for k, v in service.get("environment", {}).items()}


def test_the_compose_file_validates_against_the_compose_specification() -> None:
    validator = _compose_validator()
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(compose())
    ]
    assert errors == []


def test_the_schema_check_catches_what_compose_would_reject() -> None:
    """The validator is not vacuous: a misspelt key, a bad duration, a wrong type all fail."""
    validator = _compose_validator()
    bad: list[dict[str, Any]] = [
        {"services": {"a": {"image": "x", "helthcheck": {}}}},
        {"services": {"a": {"image": "x", "healthcheck": {"interval": "five seconds"}}}},
        {"services": {"a": {"image": "x", "depends_on": {"b": {"condition": "service_ok"}}}}},
        {"services": {"a": {"image": "x", "deploy": {"resources": {"limits": {"memory": 4}}}}}},
    ]
    for doc in bad:
        assert list(validator.iter_errors(doc)), doc


def test_services_refer_only_to_what_exists() -> None:
    doc = compose()
    services = doc["services"]
    volumes = set(doc.get("volumes", {}))
    for name, service in services.items():
        for needed in service.get("depends_on", {}):
            assert needed in services, f"{name} depends on unknown {needed}"
        for mount in service.get("volumes", []):
            source = mount.split(":", 1)[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name} mounts missing {source}"
            else:
                assert source in volumes, f"{name} mounts undeclared volume {source}"
    build = services["api"]["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).is_file()


def test_every_long_running_service_has_limits_a_health_check_and_a_restart_policy() -> None:
    for name, service in compose()["services"].items():
        limits = service["deploy"]["resources"]["limits"] if name != "migrate" else None
        if name == "migrate":
            assert service["restart"] == "on-failure" and service["healthcheck"]["disable"]
            continue
        assert limits and limits["cpus"] and limits["memory"], name
        assert service["restart"] == "unless-stopped", name
        if name != "otelcol":  # distroless image: nothing to run a check with (see the file)
            assert service["healthcheck"]["test"], name


def test_skillsight_services_run_known_roles_and_known_settings() -> None:
    services = compose()["services"]
    known = {env for env, _, _ in Settings.describe()}
    roles: dict[str, list[str]] = {}
    for name in SKILLSIGHT_SERVICES:
        service = services[name]
        env = _env(service)
        assert set(env) <= known, f"{name}: unknown settings {set(env) - known}"
        Settings.load(env=env)  # every value parses and validates
        command = _command(service)
        if command[0] == "serve":
            role = command[command.index("--role") + 1]
            assert role in ROLES, f"{name}: unknown role {role}"
            roles.setdefault(role, []).append(name)
            assert "/readyz" in service["healthcheck"]["test"][-1]
        # after the schema is in place, never before
        assert name == "migrate" or service["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        )
    assert sorted(roles) == ["api", "collector", "worker"]
    assert len(roles["collector"]) == 2 and len(roles["worker"]) == 2


def test_collectors_keep_their_spool_on_a_volume_of_their_own() -> None:
    """With SKILLSIGHT_ACK=spool (the default) a 200 means the request is fsync'd to the spool
    in the data folder: it must outlive the container, and no two collectors may share it."""
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    data_dir = re.search(r"SKILLSIGHT_DATA_DIR=(\S+)", dockerfile)
    assert data_dir is not None
    doc = compose()
    mounts = []
    for service in doc["services"].values():
        if _command(service)[-2:] == ["--role", "collector"]:
            [mount] = service["volumes"]
            volume, target = mount.split("#")[0].strip().split(":")[:2]
            assert volume in doc["volumes"] and data_dir.group(1).startswith(target + "/")
            mounts.append(volume)
    assert len(mounts) == len(set(mounts)) == 2


def test_workers_split_the_sessions_between_them_exactly() -> None:
    services = compose()["services"]
    workers = [_env(s) for s in services.values() if _command(s)[-1:] == ["worker"]]
    counts = {int(w["SKILLSIGHT_WORKERS"]) for w in workers}
    assert counts == {len(workers)}
    assert sorted(int(w["SKILLSIGHT_WORKER_INDEX"]) for w in workers) == list(range(len(workers)))


def test_the_clickhouse_cluster_is_two_shards_of_two_replicas_on_the_compose_nodes() -> None:
    services = compose()["services"]
    cluster = clickhouse_cluster()
    assert [len(replicas) for replicas in cluster.shards] == [2, 2]
    assert cluster.macros_from_env == {"shard": "CLICKHOUSE_SHARD", "replica": "CLICKHOUSE_REPLICA"}
    replica_names = []
    for number, replicas in enumerate(cluster.shards, start=1):
        for host, port in replicas:
            node = services[host]  # every host is a compose service
            assert node["hostname"] == host and port == 9000
            env = _env(node)
            assert int(env["CLICKHOUSE_SHARD"]) == number
            replica_names.append(env["CLICKHOUSE_REPLICA"])
    # Keeper paths end in {shard} and replicas are named {replica}: unique across the cluster
    assert len(set(replica_names)) == len(replica_names) == 4
    [(keeper_host, keeper_port)] = cluster.keeper
    keeper_conf = ET.parse(DEPLOY / "clickhouse" / "keeper.xml").getroot()
    assert keeper_host in services
    assert int(keeper_conf.findtext("keeper_server/tcp_port", "0")) == keeper_port
    # skillsight names the cluster the config defines, and reaches only its nodes
    for name in SKILLSIGHT_SERVICES:
        env = _env(services[name])
        assert env["SKILLSIGHT_CLICKHOUSE_CLUSTER"] == cluster.name
        host = env["SKILLSIGHT_CLICKHOUSE_URL"].split("@", 1)[1].split(":", 1)[0]
        assert any(host == h for replicas in cluster.shards for h, _ in replicas), name


@pytest.mark.parametrize("name", ["cluster.xml", "keeper.xml", "profile.xml"])
def test_clickhouse_config_files_are_well_formed(name: str) -> None:
    assert ET.parse(DEPLOY / "clickhouse" / name).getroot().tag == "clickhouse"
