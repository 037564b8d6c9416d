"""Reading deploy/: the compose file, the Kubernetes manifests, the OTel Collector configs and
the ClickHouse cluster config, as data for the deploy tests."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
SCHEMAS = ROOT / "tests" / "fixtures" / "schemas"

_DEFAULTED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?-([^}]*)\}")


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def compose() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(DEPLOY / "docker-compose.yml")
    return data


def interpolated(value: str) -> str:
    """A compose value with each ``${VAR:-default}`` replaced by its default, as ``docker
    compose`` would with none of those variables set."""
    return _DEFAULTED.sub(lambda m: m.group(2), value)


def manifests(folder: Path = KUBERNETES) -> list[tuple[Path, dict[str, Any]]]:
    """Every Kubernetes object in the folder's YAML files (not its subfolders), with its file."""
    out: list[tuple[Path, dict[str, Any]]] = []
    for path in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc:
                out.append((path, doc))
    return out


def find(objects: list[tuple[Path, dict[str, Any]]], kind: str, name: str) -> dict[str, Any]:
    found = [o for _, o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def pod_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The pod spec of a workload (Deployment, StatefulSet, Job), else None."""
    if obj["kind"] in ("Deployment", "StatefulSet", "Job", "DaemonSet"):
        spec: dict[str, Any] = obj["spec"]["template"]["spec"]
        return spec
    return None


@dataclass(frozen=True)
class ClickhouseCluster:
    name: str
    shards: list[list[tuple[str, int]]]  # per shard, its replicas' (host, port)
    macros_from_env: dict[str, str]  # macro -> environment variable
    keeper: list[tuple[str, int]]


def clickhouse_cluster() -> ClickhouseCluster:
    root = ET.parse(DEPLOY / "clickhouse" / "cluster.xml").getroot()
    servers = root.find("remote_servers")
    assert servers is not None and len(servers) == 1, "one cluster in remote_servers"
    cluster = servers[0]
    shards = [
        [(r.findtext("host", ""), int(r.findtext("port", "0"))) for r in shard.findall("replica")]
        for shard in cluster.findall("shard")
    ]
    macros = root.find("macros")
    assert macros is not None
    from_env = {m.tag: m.attrib["from_env"] for m in macros if "from_env" in m.attrib}
    keeper = [
        (n.findtext("host", ""), int(n.findtext("port", "0")))
        for n in root.findall("zookeeper/node")
    ]
    return ClickhouseCluster(cluster.tag, shards, from_env, keeper)
