"""deploy/kubernetes: every object valid against the Kubernetes JSON schemas (strict: unknown
fields are errors), and the manifests consistent with one another and with the service."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from skillsight.api import create_app
from skillsight.config import Settings
from skillsight.runtime import ROLES
from tests.support.deploy import KUBERNETES, find, load_yaml, manifests, pod_spec

# The oldest release the manifests support (workers read the pod-index label, 1.28+) and the
# newest kubernetes-validate ships.
VERSIONS = ["1.30.0", kubernetes_validate.utils.latest_version()]
# Kinds no registry package holds a schema for; checked by hand below.
CUSTOM_KINDS = {"Kustomization", "ClickHouseInstallation", "ClickHouseKeeperInstallation"}


def _all_objects() -> list[tuple[Path, dict[str, Any]]]:
    return manifests(KUBERNETES) + manifests(KUBERNETES / "clickhouse")


@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_validates_against_the_kubernetes_schemas(version: str) -> None:
    checked = 0
    for path, obj in _all_objects():
        if obj["kind"] in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = ".".join(map(str, exc.path))
            pytest.fail(
                f"{path.name} {obj['kind']}/{obj['metadata']['name']}: {where}: {exc.message}"
            )
        checked += 1
    assert checked >= 20


def test_the_strict_schemas_reject_what_kubernetes_would() -> None:
    deployment = find(manifests(), "Deployment", "skillsight-api")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    typo = {**deployment, "spec": {**deployment["spec"], "replica": 2}}
    wrong_type = {**container, "ports": [{"containerPort": "http"}]}
    bad_pod = {**deployment["spec"]["template"]["spec"], "containers": [wrong_type]}
    for obj in (
        typo,
        {**deployment, "spec": {**deployment["spec"], "template": {"spec": bad_pod}}},
    ):
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(obj, VERSIONS[0], strict=True)


def test_kustomizations_list_every_file_beside_them() -> None:
    for folder in (KUBERNETES, KUBERNETES / "clickhouse"):
        kustomization = load_yaml(folder / "kustomization.yaml")
        assert kustomization["kind"] == "Kustomization"
        files = {p.name for p in folder.glob("*.yaml")} - {"kustomization.yaml"}
        assert sorted(kustomization["resources"]) == sorted(files), folder


def test_every_container_runs_a_role_with_probes_the_api_serves() -> None:
    paths = set(create_app().openapi()["paths"])
    roles = set()
    for _, obj in manifests():
        spec = pod_spec(obj)
        if spec is None or obj["metadata"]["name"] == "skillsight-otelcol":
            continue
        [container] = spec["containers"]
        args = container["args"]
        if obj["kind"] == "Job":
            assert args == ["migrate"]
            continue
        assert args[:2] == ["serve", "--role"] and args[2] in ROLES
        roles.add(args[2])
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            if probe in container:
                assert container[probe]["httpGet"]["path"] in paths
        assert container["resources"]["limits"] and container["resources"]["requests"]
        assert (
            obj["spec"]["template"]["metadata"]["annotations"]["prometheus.io/path"] == "/metrics"
        )
    assert roles == {"collector", "worker", "api"}
    assert {"/readyz", "/livez", "/metrics", "/healthz"} <= paths


def test_settings_and_secrets_hold_known_settings_and_are_the_ones_referenced() -> None:
    objects = manifests()
    known = {env for env, _, _ in Settings.describe()}
    settings = find(objects, "ConfigMap", "skillsight-settings")["data"]
    secrets = find(objects, "Secret", "skillsight-secrets")["stringData"]
    assert set(settings) <= known
    assert set(secrets) - {"SKILLSIGHT_INGEST_KEY"} <= known  # that one is for the OTel Collector
    loaded = Settings.load(env={**settings, **{k: v for k, v in secrets.items() if k in known}})
    # the front collector's key may ingest and nothing else
    assert loaded.api_keys.scopes[secrets["SKILLSIGHT_INGEST_KEY"]] == {"ingest"}
    for _, obj in objects:
        spec = pod_spec(obj)
        for container in spec["containers"] if spec else []:
            for source in container.get("envFrom", []):
                ref = source.get("configMapRef") or source["secretRef"]
                kind = "ConfigMap" if "configMapRef" in source else "Secret"
                find(objects, kind, ref["name"])


def test_collectors_spool_to_a_volume() -> None:
    spec = find(manifests(), "Deployment", "skillsight-collector")["spec"]["template"]["spec"]
    [container] = spec["containers"]
    [mount] = container["volumeMounts"]
    assert mount["mountPath"] == "/var/lib/skillsight"
    assert mount["name"] in {v["name"] for v in spec["volumes"]}
    dockerfile = (KUBERNETES.parent / "Dockerfile").read_text(encoding="utf-8")
    assert "SKILLSIGHT_DATA_DIR=/var/lib/skillsight/data" in dockerfile


def test_workers_are_as_many_as_the_setting_says_and_take_their_index_from_the_pod() -> None:
    objects = manifests()
    workers = find(objects, "StatefulSet", "skillsight-worker")
    settings = find(objects, "ConfigMap", "skillsight-settings")["data"]
    assert workers["spec"]["replicas"] == int(settings["SKILLSIGHT_WORKERS"])
    [container] = workers["spec"]["template"]["spec"]["containers"]
    index = {e["name"]: e for e in container["env"]}["SKILLSIGHT_WORKER_INDEX"]
    assert (
        index["valueFrom"]["fieldRef"]["fieldPath"]
        == "metadata.labels['apps.kubernetes.io/pod-index']"
    )
    assert not [
        o
        for _, o in objects
        if o["kind"] == "HorizontalPodAutoscaler"
        and o["spec"]["scaleTargetRef"]["name"] == "skillsight-worker"
    ]


def test_selectors_autoscalers_and_budgets_point_at_real_pods() -> None:
    objects = manifests()
    workloads = {o["metadata"]["name"]: o for _, o in objects if pod_spec(o) is not None}
    pod_labels = [o["spec"]["template"]["metadata"]["labels"] for o in workloads.values()]
    for _, obj in objects:
        if obj["kind"] == "Service":
            selector = obj["spec"]["selector"]
            assert any(selector.items() <= labels.items() for labels in pod_labels), obj
        if obj["kind"] == "PodDisruptionBudget":
            selector = obj["spec"]["selector"]["matchLabels"]
            assert any(selector.items() <= labels.items() for labels in pod_labels), obj
        if obj["kind"] == "HorizontalPodAutoscaler":
            target = workloads[obj["spec"]["scaleTargetRef"]["name"]]
            assert target["kind"] == obj["spec"]["scaleTargetRef"]["kind"]
            assert obj["spec"]["minReplicas"] <= obj["spec"]["maxReplicas"]
        if obj["kind"] in ("Deployment", "StatefulSet"):
            assert obj["spec"]["selector"]["matchLabels"].items() <= (
                obj["spec"]["template"]["metadata"]["labels"].items()
            )
    collector_hpa = find(objects, "HorizontalPodAutoscaler", "skillsight-collector")
    metrics = {m["type"]: m for m in collector_hpa["spec"]["metrics"]}
    assert metrics["Pods"]["pods"]["metric"]["name"] == "skillsight_queue_fill_ratio"
    assert metrics["Resource"]["resource"]["name"] == "cpu"


def test_the_operator_cluster_is_the_one_skillsight_is_told_about() -> None:
    """No registry package ships the Altinity operator's CRD schemas, so the custom resources
    are checked for what skillsight relies on: the cluster's name and shape, Keeper, the
    Service the Secret's URL names, and the password's Secret."""
    objects = manifests(KUBERNETES / "clickhouse")
    chi = find(objects, "ClickHouseInstallation", "skillsight")
    chk = find(objects, "ClickHouseKeeperInstallation", "skillsight")
    settings = find(manifests(), "ConfigMap", "skillsight-settings")["data"]
    url = find(manifests(), "Secret", "skillsight-secrets")["stringData"][
        "SKILLSIGHT_CLICKHOUSE_URL"
    ]
    [cluster] = chi["spec"]["configuration"]["clusters"]
    assert cluster["name"] == settings["SKILLSIGHT_CLICKHOUSE_CLUSTER"]
    assert cluster["layout"] == {"shardsCount": 2, "replicasCount": 2}
    assert url.split("@", 1)[1].startswith(
        f"clickhouse-{chi['metadata']['name']}.skillsight.svc:8123/"
    )
    [keeper] = chi["spec"]["configuration"]["zookeeper"]["nodes"]
    assert keeper["host"] == f"keeper-{chk['metadata']['name']}"
    assert chk["spec"]["configuration"]["clusters"][0]["layout"]["replicasCount"] % 2 == 1
    secret_ref = chi["spec"]["configuration"]["users"]["skillsight/k8s_secret_password"]
    name, key = secret_ref.split("/")
    assert key in find(objects, "Secret", name)["stringData"]
