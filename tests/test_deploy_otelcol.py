"""The OpenTelemetry Collector configs in deploy/ (compose's file and the Kubernetes ConfigMap):
every key of the loadbalancing exporter is one its documentation names, it routes by trace id,
and its resolver points at the skillsight collectors."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.support.deploy import DEPLOY, compose, find, load_yaml, manifests

# The loadbalancing exporter's documented configuration: config.schema.yaml of
# open-telemetry/opentelemetry-collector-contrib, exporter/loadbalancingexporter, at commit
# 0140961f9de290fdf809390d3153c1eb214a2300 (its top-level properties, the timeout_config and
# back_off_config it embeds, and each resolver's properties); routing_key values from its README.
LOADBALANCING_KEYS = {
    "protocol",
    "resolver",
    "routing_key",
    "routing_attributes",
    "sending_queue",
    "timeout",
    "retry_on_failure",
}
ROUTING_KEYS = {"service", "traceID", "metric", "resource", "streamID", "attributes"}
RESOLVER_KEYS = {
    "static": {"hostnames"},
    "dns": {"hostname", "port", "interval", "timeout"},
    "k8s": {"service", "ports", "timeout", "return_hostnames"},
    "aws_cloud_map": {
        "namespace",
        "service_name",
        "port",
        "health_status",
        "interval",
        "timeout",
        "owner_account",
    },
}
# protocol.otlp takes the OTLP exporter's configuration (open-telemetry/opentelemetry-collector,
# exporter/otlpexporter/testdata/config.yaml at 3adc81ecc65eb974f97e28e46380392f1c7cdf80), except
# `endpoint`, which the loadbalancing exporter sets per backend.
OTLP_KEYS = {
    "compression",
    "tls",
    "timeout",
    "sending_queue",
    "retry_on_failure",
    "batcher",
    "auth",
    "headers",
    "keepalive",
    "balancer_name",
}
TLS_KEYS = {
    "insecure",
    "ca_file",
    "cert_file",
    "key_file",
    "insecure_skip_verify",
    "server_name_override",
}
RETRY_KEYS = {
    "enabled",
    "initial_interval",
    "randomization_factor",
    "multiplier",
    "max_interval",
    "max_elapsed_time",
}
QUEUE_KEYS = {"enabled", "num_consumers", "queue_size"}


def _compose_config() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(DEPLOY / "otelcol" / "compose.yaml")
    return data


def _kubernetes_config() -> dict[str, Any]:
    configmap = find(manifests(), "ConfigMap", "skillsight-otelcol")
    data: dict[str, Any] = yaml.safe_load(configmap["data"]["config.yaml"])
    return data


CONFIGS = {"compose": _compose_config, "kubernetes": _kubernetes_config}


def check_loadbalancing(exporter: dict[str, Any]) -> list[str]:
    """What in an exporter config the documentation does not name (empty: all documented)."""
    problems = [f"unknown key {k}" for k in set(exporter) - LOADBALANCING_KEYS]
    if exporter.get("routing_key", "traceID") not in ROUTING_KEYS:
        problems.append(f"unknown routing_key {exporter['routing_key']}")
    resolver = exporter.get("resolver", {})
    if len(resolver) != 1 or not set(resolver) <= set(RESOLVER_KEYS):
        problems.append(f"resolver must be one of {sorted(RESOLVER_KEYS)}: {sorted(resolver)}")
    for kind, settings in resolver.items():
        problems += [
            f"resolver.{kind}: unknown key {k}"
            for k in set(settings) - RESOLVER_KEYS.get(kind, set())
        ]
    otlp = exporter.get("protocol", {}).get("otlp") or {}
    if set(exporter.get("protocol", {})) - {"otlp"}:
        problems.append("protocol: only otlp is supported")
    problems += [f"protocol.otlp: unknown key {k}" for k in set(otlp) - OTLP_KEYS]
    for key, allowed in (
        ("tls", TLS_KEYS),
        ("retry_on_failure", RETRY_KEYS),
        ("sending_queue", QUEUE_KEYS),
    ):
        problems += [
            f"protocol.otlp.{key}: unknown key {k}" for k in set(otlp.get(key) or {}) - allowed
        ]
    return problems


@pytest.mark.parametrize("where", sorted(CONFIGS))
def test_the_loadbalancing_exporter_uses_only_documented_keys(where: str) -> None:
    exporter = CONFIGS[where]()["exporters"]["loadbalancing"]
    assert check_loadbalancing(exporter) == []
    assert exporter["routing_key"] == "traceID"


def test_the_key_check_is_not_vacuous() -> None:
    good = _compose_config()["exporters"]["loadbalancing"]
    assert check_loadbalancing({**good, "routing": "traceID"}) == ["unknown key routing"]
    assert check_loadbalancing({**good, "routing_key": "trace_id"}) == [
        "unknown routing_key trace_id"
    ]
    both = {**good, "resolver": {"static": {"hostnames": []}, "dns": {"hostname": "x"}}}
    assert len(check_loadbalancing(both)) == 1
    endpoint = {**good, "protocol": {"otlp": {"endpoint": "x:4317"}}}
    assert check_loadbalancing(endpoint) == ["protocol.otlp: unknown key endpoint"]


@pytest.mark.parametrize("where", sorted(CONFIGS))
def test_pipelines_carry_traces_and_logs_to_the_collectors(where: str) -> None:
    config = CONFIGS[where]()
    pipelines = config["service"]["pipelines"]
    assert set(pipelines) == {"traces", "logs"}
    for pipeline in pipelines.values():
        assert set(pipeline["receivers"]) <= set(config["receivers"])
        assert set(pipeline["processors"]) <= set(config["processors"])
        assert pipeline["exporters"] == ["loadbalancing"]
        assert pipeline["processors"][0] == "memory_limiter"  # first, as its README asks
    assert set(config["service"]["extensions"]) <= set(config["extensions"])
    headers = config["exporters"]["loadbalancing"]["protocol"]["otlp"]["headers"]
    assert headers == {"x-skillsight-key": "${env:SKILLSIGHT_INGEST_KEY}"}


def test_the_compose_resolver_names_each_collector_service() -> None:
    services = compose()["services"]
    hostnames = _compose_config()["exporters"]["loadbalancing"]["resolver"]["static"]["hostnames"]
    collectors = sorted(
        name for name, s in services.items() if s.get("command", [])[-2:] == ["--role", "collector"]
    )
    assert sorted(h.split(":")[0] for h in hostnames) == collectors
    assert {h.split(":")[1] for h in hostnames} == {"4317"}  # skillsight's OTLP/gRPC port
    otelcol = services["otelcol"]
    assert "./otelcol/compose.yaml:/etc/otelcol-contrib/config.yaml:ro" in otelcol["volumes"]
    assert otelcol["environment"]["SKILLSIGHT_INGEST_KEY"]


def test_the_kubernetes_resolver_watches_the_collector_service() -> None:
    objects = manifests()
    k8s = _kubernetes_config()["exporters"]["loadbalancing"]["resolver"]["k8s"]
    name, namespace = k8s["service"].split(".")
    service = find(objects, "Service", name)
    assert service["metadata"]["namespace"] == namespace
    assert service["spec"]["clusterIP"] == "None"
    assert {p["port"] for p in service["spec"]["ports"]} >= set(k8s["ports"]) == {4317}
    role = find(objects, "Role", "skillsight-otelcol-resolver")
    [rule] = role["rules"]
    assert rule["resources"] == ["endpointslices"] and set(rule["verbs"]) == {
        "get",
        "list",
        "watch",
    }
    deployment = find(objects, "Deployment", "skillsight-otelcol")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "skillsight-otelcol"


def test_compose_and_kubernetes_front_collectors_differ_only_in_their_resolver() -> None:
    compose_config, kubernetes_config = _compose_config(), _kubernetes_config()
    for config in (compose_config, kubernetes_config):
        del config["exporters"]["loadbalancing"]["resolver"]
    assert compose_config == kubernetes_config
