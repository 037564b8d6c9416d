"""``configure()``: one call from an agent process to an OTLP endpoint, plus content settings.

Precedence for every value: the argument > ``SKILLSIGHT_*`` variable > the standard
``OTEL_EXPORTER_OTLP_*`` / ``OTEL_SERVICE_NAME`` variables > the default. The configured tracer
provider and content policy are what the manual API and the instrumentors use when they are not
given their own; :func:`shutdown` flushes and forgets them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.util.re import parse_env_headers

from skillsight import semconv as sc
from skillsight.errors import ConfigError
from skillsight.instrumentation._content import DEFAULT_MAX_CONTENT_CHARS, ContentPolicy, Redactor

__all__ = [
    "ENV_CAPTURE_CONTENT",
    "ENV_MAX_CONTENT_CHARS",
    "ENV_PROJECT_KEY",
    "ExportProtocol",
    "configure",
    "content_policy",
    "resolve_tracer_provider",
    "shutdown",
]

ExportProtocol = Literal["http/protobuf", "grpc"]
_PROTOCOLS: tuple[ExportProtocol, ...] = ("http/protobuf", "grpc")
_DEFAULT_ENDPOINTS: dict[ExportProtocol, str] = {
    "http/protobuf": "http://localhost:4318",
    "grpc": "http://localhost:4317",
}
DEFAULT_SERVICE_NAME = "skillsight-agent"

ENV_PROJECT_KEY = "SKILLSIGHT_PROJECT_KEY"
ENV_CAPTURE_CONTENT = "SKILLSIGHT_CAPTURE_CONTENT"
ENV_MAX_CONTENT_CHARS = "SKILLSIGHT_MAX_CONTENT_CHARS"


@dataclass(frozen=True)
class _Configured:
    provider: TracerProvider
    policy: ContentPolicy
    owned: bool
    """Whether configure() created the provider (and so shuts it down)."""


# Process configuration, like OpenTelemetry's global tracer provider: set by configure(),
# cleared by shutdown(). Sessions keep none of their state here.
_lock = threading.Lock()
_configured: _Configured | None = None


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def _parse_bool(name: str, raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name}={raw!r}: expected true or false")


def _resolve_protocol(protocol: str | None) -> ExportProtocol:
    chosen = protocol or _env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
    if chosen is None:
        return "http/protobuf"
    for known in _PROTOCOLS:
        if chosen == known:
            return known
    raise ConfigError(
        f"OTLP protocol {chosen!r} is not supported here; use one of {', '.join(_PROTOCOLS)} "
        "(argument protocol= or OTEL_EXPORTER_OTLP_PROTOCOL)"
    )


def _resolve_endpoint(endpoint: str | None, protocol: ExportProtocol) -> str:
    """The URL the exporter posts to: ``…/v1/traces`` for HTTP, ``host:port`` for gRPC."""
    if endpoint is None:
        per_signal = _env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        if per_signal is not None:
            # The per-signal variable is the full URL by specification: used as is.
            return per_signal
        endpoint = _env("OTEL_EXPORTER_OTLP_ENDPOINT") or _DEFAULT_ENDPOINTS[protocol]
    if "://" not in endpoint:
        raise ConfigError(f"OTLP endpoint {endpoint!r} needs a scheme, e.g. http://127.0.0.1:4318")
    base = endpoint.rstrip("/")
    if protocol == "grpc" or base.endswith("/v1/traces"):
        return base
    return f"{base}/v1/traces"


def _resolve_headers(headers: Mapping[str, str] | None, project_key: str | None) -> dict[str, str]:
    raw = _env("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
    merged = dict(parse_env_headers(raw, liberal=True)) if raw else {}
    merged.update(headers or {})
    key = project_key if project_key is not None else _env(ENV_PROJECT_KEY)
    if key is not None:
        merged[sc.SKILLSIGHT_PROJECT_KEY_HEADER] = key
    return {name.lower(): value for name, value in merged.items()}


def _resolve_policy(
    capture_content: bool | None, max_content_chars: int | None, redact: Redactor | None
) -> ContentPolicy:
    if capture_content is None:
        raw = _env(ENV_CAPTURE_CONTENT)
        capture_content = True if raw is None else _parse_bool(ENV_CAPTURE_CONTENT, raw)
    if max_content_chars is None:
        raw = _env(ENV_MAX_CONTENT_CHARS)
        try:
            max_content_chars = DEFAULT_MAX_CONTENT_CHARS if raw is None else int(raw)
        except ValueError as exc:
            raise ConfigError(f"{ENV_MAX_CONTENT_CHARS}={raw!r}: expected an integer") from exc
    try:
        return ContentPolicy(capture=capture_content, max_chars=max_content_chars, redact=redact)
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from exc


def _exporter(
    protocol: ExportProtocol, endpoint: str, headers: dict[str, str], timeout_s: float | None
) -> SpanExporter:
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=endpoint, headers=headers, timeout=timeout_s)
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcSpanExporter,
        )
    except ImportError as exc:
        raise ConfigError(
            "protocol='grpc' needs the gRPC exporter: pip install 'skillsight[grpc]' "
            "(or use protocol='http/protobuf')"
        ) from exc

    return GrpcSpanExporter(
        endpoint=endpoint,
        insecure=endpoint.startswith("http://"),
        headers=headers,
        timeout=timeout_s,
    )


def configure(
    endpoint: str | None = None,
    project_key: str | None = None,
    *,
    protocol: ExportProtocol | None = None,
    headers: Mapping[str, str] | None = None,
    capture_content: bool | None = None,
    max_content_chars: int | None = None,
    redact: Redactor | None = None,
    tracer_provider: TracerProvider | None = None,
    service_name: str | None = None,
    export_timeout_s: float | None = None,
    set_global: bool = True,
) -> TracerProvider:
    """Export this process's agent spans over OTLP to skillsight (or any OTLP endpoint).

    ``endpoint`` is the OTLP base URL (``http://host:4318``; gRPC ``http://host:4317``);
    without it ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` apply.
    ``project_key`` (or ``SKILLSIGHT_PROJECT_KEY``) is sent as the ``x-skillsight-key`` header,
    beside the headers of ``OTEL_EXPORTER_OTLP_HEADERS``. Content capture is on unless
    ``capture_content=False`` (``SKILLSIGHT_CAPTURE_CONTENT=0``); each captured text is passed
    through ``redact`` and cut at ``max_content_chars``. Spans go through a batch processor on
    ``tracer_provider`` (a new one named ``service_name`` by default, made the global provider
    when ``set_global`` and none is set yet). Returns the provider.
    """
    global _configured
    chosen_protocol = _resolve_protocol(protocol)
    url = _resolve_endpoint(endpoint, chosen_protocol)
    exporter = _exporter(
        chosen_protocol, url, _resolve_headers(headers, project_key), export_timeout_s
    )
    policy = _resolve_policy(capture_content, max_content_chars, redact)
    owned = tracer_provider is None
    if tracer_provider is None:
        name = service_name or _env("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
        tracer_provider = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: name}))
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    with _lock:
        previous, _configured = _configured, _Configured(tracer_provider, policy, owned)
    if previous is not None and previous.owned and previous.provider is not tracer_provider:
        previous.provider.shutdown()
    if set_global and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        trace.set_tracer_provider(tracer_provider)
    return tracer_provider


def shutdown() -> None:
    """Flush what is buffered and forget the configuration made by :func:`configure`."""
    global _configured
    with _lock:
        previous, _configured = _configured, None
    if previous is None:
        return
    previous.provider.force_flush()
    if previous.owned:
        previous.provider.shutdown()


def content_policy(override: ContentPolicy | None = None) -> ContentPolicy:
    """The policy to apply: ``override``, else the configured one, else the default."""
    if override is not None:
        return override
    configured = _configured
    return configured.policy if configured is not None else ContentPolicy()


def resolve_tracer_provider(
    override: trace.TracerProvider | None = None,
) -> trace.TracerProvider:
    """The provider to use: ``override``, else the configured one, else OpenTelemetry's global."""
    if override is not None:
        return override
    configured = _configured
    return configured.provider if configured is not None else trace.get_tracer_provider()
