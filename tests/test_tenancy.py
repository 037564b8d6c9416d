"""Key scopes, what /healthz shows to whom, and TLS on every listener (issue 15).

``key:project`` keeps working as a full-access key; ``key:project:ingest`` may send but not read,
``key:project:read`` read but not send, ``+admin`` sees the service's own state. ``/healthz``
without a key is liveness only. With a certificate every listener — API, OTLP/HTTP, OTLP/gRPC —
speaks TLS, and only then does a keyed service leave loopback by itself.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from fastapi.testclient import TestClient
from google.rpc import code_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from skillsight.api import create_app
from skillsight.config import Settings
from skillsight.errors import ConfigError
from skillsight.store import EmbeddedStore
from skillsight.tenancy import Forbidden, Unauthenticated, project_for
from tests.support.otlp_builders import export_request, span
from tests.support.serve import running_server

KEY = "x-skillsight-key"
PROTOBUF = {"content-type": "application/x-protobuf"}
KEYS = "a-full:alpha,a-ingest:alpha:ingest,a-read:alpha:read,ops:ops:admin,both:beta:ingest+read"
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def eventually(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_key_forms_parse_and_bad_scopes_fail_at_start() -> None:
    keys = Settings.load(env={"SKILLSIGHT_API_KEYS": KEYS}).api_keys
    assert keys == {
        "a-full": "alpha",
        "a-ingest": "alpha",
        "a-read": "alpha",
        "ops": "ops",
        "both": "beta",
    }
    assert project_for(keys, {KEY: "a-full"}, "read") == "alpha"
    assert project_for(keys, {"authorization": "Bearer a-full"}, "ingest") == "alpha"
    assert project_for(keys, {KEY: "both"}, "ingest") == "beta"
    with pytest.raises(Forbidden, match="may ingest only"):
        project_for(keys, {KEY: "a-ingest"}, "read")
    with pytest.raises(Forbidden, match="may read only"):
        project_for(keys, {KEY: "a-read"}, "ingest")
    with pytest.raises(Unauthenticated):
        project_for(keys, {KEY: "nope"}, "read")
    with pytest.raises(ConfigError, match="scopes are ingest, read, admin"):
        Settings.load(env={"SKILLSIGHT_API_KEYS": "k:p:write"})
    # no keys: single-tenant, everything allowed
    assert project_for({}, {}, "read") == "default"


@pytest.fixture
def keyed(embedded_store: EmbeddedStore) -> Iterator[TestClient]:
    settings = Settings.load(
        {"rebuild_enabled": False, "eval_enabled": False, "flush_interval_s": 0.05},
        env={"SKILLSIGHT_API_KEYS": KEYS},
    )
    with TestClient(create_app(settings=settings, store=embedded_store)) as client:
        yield client


def test_ingest_keys_cannot_read_and_read_keys_cannot_ingest(keyed: TestClient) -> None:
    body = export_request([span("scoped", trace=0x5C0)])
    sent = keyed.post("/v1/traces", content=body, headers={**PROTOBUF, KEY: "a-ingest"})
    assert sent.status_code == 200
    refused = keyed.post("/v1/traces", content=body, headers={**PROTOBUF, KEY: "a-read"})
    assert refused.status_code == 403
    status = status_pb2.Status.FromString(refused.content)
    assert status.code == code_pb2.PERMISSION_DENIED and "may read only" in status.message
    unknown = keyed.post("/v1/traces", content=body, headers={**PROTOBUF, KEY: "nope"})
    assert unknown.status_code == 401
    eventually(lambda: bool(keyed.get("/api/v1/spans", headers={KEY: "a-read"}).json()))
    assert [s["name"] for s in keyed.get("/api/v1/spans", headers={KEY: "a-read"}).json()] == [
        "scoped"
    ]
    assert [s["name"] for s in keyed.get("/api/v1/spans", headers={KEY: "a-full"}).json()] == [
        "scoped"
    ]
    denied = keyed.get("/api/v1/spans", headers={KEY: "a-ingest"})
    assert denied.status_code == 403 and "may ingest only" in denied.json()["detail"]
    assert keyed.get("/api/v1/spans", headers={KEY: "ops"}).status_code == 403  # admin alone
    assert keyed.get("/api/v1/spans", headers={KEY: "both"}).json() == []  # another project


def test_healthz_shows_each_caller_what_it_may_see(keyed: TestClient) -> None:
    for headers in ({}, {KEY: "nope"}):
        assert keyed.get("/healthz", headers=headers).json() == {"ok": True}
    plain = keyed.get("/healthz", headers={KEY: "a-full"}).json()
    assert plain == {
        "ok": True,
        "role": "all",
        "store": "embedded",
        "ack": "spool",
        "accepting": True,
        "writer_healthy": True,
    }
    full = keyed.get("/healthz", headers={KEY: "ops"}).json()
    for field in ("written_spans", "queue_rows", "last_error", "spool", "dead_letters", "rebuild"):
        assert field in full
    assert full["crash_exposure"]["acknowledged_rows"] == 0


def test_without_keys_healthz_is_the_operators_own(embedded_store: EmbeddedStore) -> None:
    settings = Settings.load({"rebuild_enabled": False, "eval_enabled": False}, env={})
    with TestClient(create_app(settings=settings, store=embedded_store)) as client:
        assert "written_spans" in client.get("/healthz").json()


# ---- TLS ----------------------------------------------------------------------------------------


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A test CA and a server certificate for 127.0.0.1 it signed: (CA file, key file); the CA
    file holds the server certificate first, then the CA's (the chain the server presents)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, server_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("skillsight test CA"))
        .issuer_name(_name("skillsight test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    server = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    (folder / "ca.pem").write_bytes(ca.public_bytes(pem))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(server.public_bytes(pem) + ca.public_bytes(pem))
    key_path.write_bytes(
        server_key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def test_keys_with_tls_open_the_service_keys_without_it_stay_on_loopback(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    env = {"SKILLSIGHT_API_KEYS": "k:p"}
    assert Settings.load(env=env).bind_host == "127.0.0.1"
    tls = {**env, "SKILLSIGHT_TLS_CERTFILE": str(cert), "SKILLSIGHT_TLS_KEYFILE": str(key)}
    assert Settings.load(env=tls).bind_host == "0.0.0.0"
    with pytest.raises(ConfigError, match="TLS needs"):
        Settings.load(env={"SKILLSIGHT_TLS_CERTFILE": str(cert)})
    with pytest.raises(ConfigError, match="not a readable file"):
        Settings.load(env={**tls, "SKILLSIGHT_TLS_KEYFILE": str(tmp_path / "missing.pem")})


def test_every_listener_speaks_tls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = self_signed(tmp_path)
    # requests (under the SDK's exporter) prefers REQUESTS_CA_BUNDLE, when set, to the
    # exporter's certificate_file; point both at the test CA
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "ca.pem"))
    env = {
        "SKILLSIGHT_API_KEYS": KEYS,
        "SKILLSIGHT_TLS_CERTFILE": str(cert),
        "SKILLSIGHT_TLS_KEYFILE": str(key),
        "SKILLSIGHT_HOST": "127.0.0.1",  # tests stay on loopback
        "SKILLSIGHT_FLUSH_INTERVAL_S": "0.05",
    }
    ca = tmp_path / "ca.pem"
    trusted = ssl.create_default_context(cafile=str(ca))
    with running_server(tmp_path / "data", env=env) as server:
        assert server.api.startswith("https://") and server.otlp_http.startswith("https://")
        with pytest.raises(httpx.HTTPError):
            httpx.get(server.api.replace("https://", "http://") + "/healthz", timeout=10)
        health = httpx.get(server.api + "/healthz", headers={KEY: "ops"}, verify=trusted)
        assert health.json()["ok"] is True

        collected = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(collected))
        provider.get_tracer("tls").start_span("over-tls").end()
        exporter = OTLPSpanExporter(
            endpoint=server.otlp_http + "/v1/traces",
            certificate_file=str(ca),
            headers={KEY: "a-ingest"},
            timeout=30,
        )
        assert exporter.export(collected.get_finished_spans()) == SpanExportResult.SUCCESS
        exporter.shutdown()

        credentials = grpc.ssl_channel_credentials(root_certificates=ca.read_bytes())
        with grpc.secure_channel(server.otlp_grpc, credentials) as channel:
            call = channel.unary_unary(TRACE_EXPORT, request_serializer=lambda b: b)
            call(export_request([span("grpc-over-tls", trace=0x715)]), metadata=((KEY, "a-full"),))
            with pytest.raises(grpc.RpcError) as refused:
                call(export_request([span("read-key")]), metadata=((KEY, "a-read"),), timeout=30)
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        with grpc.insecure_channel(server.otlp_grpc) as plain:
            call = plain.unary_unary(TRACE_EXPORT, request_serializer=lambda b: b)
            with pytest.raises(grpc.RpcError):
                call(export_request([span("plain")]), metadata=((KEY, "a-full"),), timeout=5)

        def names() -> list[str]:
            response = httpx.get(
                server.api + "/api/v1/spans", headers={KEY: "a-read"}, verify=trusted, timeout=30
            )
            return sorted(s["name"] for s in response.json())

        eventually(lambda: names() == ["grpc-over-tls", "over-tls"])
