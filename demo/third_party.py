"""Run the demo session under published third-party Claude Agent SDK instrumentors.

Two instrumentors are covered, each exporting through the OpenTelemetry SDK's OTLP/HTTP
protobuf exporter: Arize's OpenInference ``ClaudeAgentSDKInstrumentor`` (wraps
``claude_agent_sdk.query`` and ``ClaudeSDKClient``) and traceAI's ``ClaudeAgentInstrumentor``
(wraps only ``ClaudeSDKClient``, so its run uses the client). Both patch the SDK module
globally; :func:`run_instrumented_demo` always uninstruments before returning.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, get_args

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from demo.workload import ClientKind, DemoResult, run_demo

__all__ = ["INSTRUMENTORS", "InstrumentorName", "instrumented", "run_instrumented_demo"]

InstrumentorName = Literal["openinference", "traceai"]
INSTRUMENTORS: tuple[InstrumentorName, ...] = get_args(InstrumentorName)

# (module, class, SDK entry point the instrumentor traces)
_SPECS: dict[InstrumentorName, tuple[str, str, ClientKind]] = {
    "openinference": (
        "openinference.instrumentation.claude_agent_sdk",
        "ClaudeAgentSDKInstrumentor",
        "query",
    ),
    "traceai": ("traceai_claude_agent_sdk", "ClaudeAgentInstrumentor", "client"),
}


def client_for(name: InstrumentorName) -> ClientKind:
    """The SDK entry point (``query`` or ``client``) the instrumentor traces."""
    return _SPECS[name][2]


@contextmanager
def instrumented(
    name: InstrumentorName,
    endpoint: str,
    *,
    headers: Mapping[str, str] | None = None,
    service_name: str | None = None,
) -> Iterator[TracerProvider]:
    """Instrument the Claude Agent SDK with ``name``, exporting OTLP/HTTP protobuf spans.

    ``endpoint`` is the OTLP/HTTP base URL (``/v1/traces`` is appended). On exit the provider
    is flushed and shut down and the SDK is uninstrumented, even on error.
    """
    module_name, class_name, _ = _SPECS[name]
    instrumentor_class: Any = getattr(importlib.import_module(module_name), class_name)
    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name or f"skillsight-demo-{name}"})
    )
    exporter = OTLPSpanExporter(
        endpoint=f"{endpoint.rstrip('/')}/v1/traces", headers=dict(headers or {})
    )
    # One batch per flush keeps the capture to one request body in the common case.
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=60_000))
    # Both classes are process-wide singletons, so instrument and uninstrument one instance.
    instrumentor = instrumentor_class()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield provider
    finally:
        instrumentor.uninstrument()
        provider.force_flush()
        provider.shutdown()


def run_instrumented_demo(
    name: InstrumentorName,
    endpoint: str,
    *,
    headers: Mapping[str, str] | None = None,
    workdir: Path | None = None,
    native_telemetry: Mapping[str, str] | None = None,
    timeout_s: float = 90.0,
) -> DemoResult:
    """Run the demo session with instrumentor ``name`` exporting spans to ``endpoint``.

    ``native_telemetry`` (e.g. :func:`demo.workload.telemetry_env`) also switches on
    Claude Code's own export; the SDK hands the instrumentor's active span to the CLI as
    ``TRACEPARENT``, so the CLI's spans join the instrumentor's trace.
    """
    with instrumented(name, endpoint, headers=headers):
        return run_demo(
            None,
            extra_env=native_telemetry,
            workdir=workdir,
            client=client_for(name),
            timeout_s=timeout_s,
        )
