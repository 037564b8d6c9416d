"""Back-pressure and graceful stop of a real ``skillsight serve`` with a deliberately small queue.

More exporters than the queue can absorb: some requests are refused with 429 + ``Retry-After``
(HTTP) or RESOURCE_EXHAUSTED + ``RetryInfo`` (gRPC), the exporters retry, and in the end every
span is stored exactly once — a refused request is never partly taken. A SIGTERM while the queue
still holds acknowledged rows writes them before the process exits.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import grpc
import httpx
import pytest
from google.protobuf import json_format
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.otlp_builders import export_request, span
from tests.support.serve import RunningServer, running_server

pytestmark = pytest.mark.slow

PROTOBUF = {"content-type": "application/x-protobuf"}
TRACE_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

SMALL_QUEUE = {
    "SKILLSIGHT_QUEUE_MAX_ROWS": "2000",
    "SKILLSIGHT_FLUSH_INTERVAL_S": "0.5",
    "SKILLSIGHT_BATCH_MAX_ROWS": "1000",
}
HTTP_THREADS, HTTP_REQUESTS, SPANS_PER_REQUEST = 16, 10, 200
GRPC_EXPORTERS, GRPC_BATCHES = 3, 4
DEADLINE_S = 45.0


def sdk_batches(exporters: int, batches: int, size: int) -> list[list[list[ReadableSpan]]]:
    """Spans recorded by the real SDK: ``batches`` batches of ``size`` for each exporter."""
    collected = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "sdk-overload"}))
    provider.add_span_processor(SimpleSpanProcessor(collected))
    tracer = provider.get_tracer("overload")
    for i in range(exporters * batches * size):
        tracer.start_span(f"sdk-{i}").end()
    provider.shutdown()
    spans = list(collected.get_finished_spans())
    chunks = [spans[i : i + size] for i in range(0, len(spans), size)]
    return [chunks[e * batches : (e + 1) * batches] for e in range(exporters)]


def test_overload_refuses_then_stores_every_span_exactly_once(tmp_path: Path) -> None:
    bodies = [
        [
            export_request(
                [span(f"h{t}-{r}-{i}", trace=t * 1000 + r + 1, span_id=i + 1) for i in range(200)]
            )
            for r in range(HTTP_REQUESTS)
        ]
        for t in range(HTTP_THREADS)
    ]
    grpc_batches = sdk_batches(GRPC_EXPORTERS, GRPC_BATCHES, SPANS_PER_REQUEST)
    sent = (HTTP_THREADS * HTTP_REQUESTS + GRPC_EXPORTERS * GRPC_BATCHES) * SPANS_PER_REQUEST
    refusals: Counter[int] = Counter()
    retry_afters: set[str] = set()
    failures: list[str] = []
    lock = threading.Lock()

    with running_server(tmp_path / "data", env=SMALL_QUEUE) as server:
        address = urlsplit(server.otlp_http)
        deadline = time.monotonic() + DEADLINE_S

        def http_exporter(requests: list[bytes]) -> None:
            conn = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
            try:
                for body in requests:
                    while time.monotonic() < deadline:
                        conn.request("POST", "/v1/traces", body, PROTOBUF)
                        response = conn.getresponse()
                        content = response.read()
                        if response.status == 200:
                            ExportTraceServiceResponse.FromString(content)
                            break
                        retry_after = response.getheader("Retry-After")
                        status = status_pb2.Status.FromString(content)
                        with lock:
                            refusals[response.status] += 1
                            retry_afters.add(str(retry_after))
                        assert response.status in (429, 503), content
                        assert status.code in (code_pb2.RESOURCE_EXHAUSTED, code_pb2.UNAVAILABLE)
                        assert retry_after is not None and float(retry_after) >= 1
                        time.sleep(float(retry_after))  # then the same body again
                    else:
                        raise AssertionError("an HTTP exporter ran out of time")
            except BaseException as exc:
                with lock:
                    failures.append(f"http: {exc!r}")
            finally:
                conn.close()

        def grpc_exporter(batches: list[list[ReadableSpan]]) -> None:
            exporter = OTLPSpanExporter(endpoint=server.otlp_grpc, insecure=True, timeout=20)
            try:
                for batch in batches:
                    # the SDK retries RESOURCE_EXHAUSTED itself, a few times; the processor
                    # calling it would drop the batch after that, a careful one exports again
                    while exporter.export(batch) != SpanExportResult.SUCCESS:
                        if time.monotonic() > deadline:
                            raise AssertionError("a gRPC exporter ran out of time")
            except BaseException as exc:
                with lock:
                    failures.append(f"grpc: {exc!r}")
            finally:
                exporter.shutdown()

        threads = [threading.Thread(target=http_exporter, args=(b,)) for b in bodies]
        threads += [threading.Thread(target=grpc_exporter, args=(b,)) for b in grpc_batches]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(DEADLINE_S + 30)
        elapsed = time.monotonic() - started
        assert not failures, failures
        assert not any(t.is_alive() for t in threads)

        server.wait_written(spans=sent, timeout=30)
        stats = server.get("/api/v1/stats")["spans"]
        health = server.get("/healthz")

    http_refusals = sum(refusals.values())
    # the server counts every refusal; those the HTTP exporters did not see went to gRPC ones
    grpc_refusals = health["refused_requests"] - http_refusals
    print(
        f"\n{sent} spans in {elapsed:.1f}s; HTTP refusals {dict(refusals)}, "
        f"Retry-After {sorted(retry_afters)}; gRPC refusals {grpc_refusals}"
    )
    assert http_refusals > 0, "the queue never filled: the test proves nothing"
    assert set(refusals) <= {429, 503}
    assert grpc_refusals >= 0
    assert stats == {"rows": sent, "spans": sent}  # all of them, and none twice
    assert health["written_spans"] == sent


HELD_QUEUE = {
    "SKILLSIGHT_QUEUE_MAX_ROWS": "1000",
    "SKILLSIGHT_FLUSH_INTERVAL_S": "60",  # the writer waits for a full batch: rows stay held
    "SKILLSIGHT_BATCH_MAX_ROWS": "100000",
}


def _refused_over_grpc(server: RunningServer, body: bytes) -> grpc.RpcError:
    with grpc.insecure_channel(server.otlp_grpc) as channel:
        call = channel.unary_unary(
            TRACE_EXPORT,
            request_serializer=lambda b: b,
            response_deserializer=ExportTraceServiceResponse.FromString,
        )
        with pytest.raises(grpc.RpcError) as refused:
            call(body, timeout=10)
        return refused.value


def test_full_queue_answers_and_sigterm_drains_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    held = [
        export_request([span(f"held-{r}-{i}", trace=r + 1) for i in range(200)]) for r in range(5)
    ]
    extra = export_request([span("refused", trace=99)])
    with running_server(data, env=HELD_QUEUE) as server:
        for body in held:  # exactly fills the queue
            response = httpx.post(server.otlp_http + "/v1/traces", content=body, headers=PROTOBUF)
            assert response.status_code == 200

        # HTTP, protobuf and JSON: 429, Retry-After, a google.rpc.Status saying why
        refused = httpx.post(server.otlp_http + "/v1/traces", content=extra, headers=PROTOBUF)
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) >= 1
        status = status_pb2.Status.FromString(refused.content)
        assert status.code == code_pb2.RESOURCE_EXHAUSTED and "queue full" in status.message
        as_json = httpx.post(
            server.otlp_http + "/v1/traces",
            json={
                "resourceSpans": [
                    {
                        "scopeSpans": [
                            {
                                "spans": [
                                    {
                                        "traceId": "00000000000000000000000000000063",
                                        "spanId": "0000000000000001",
                                    }
                                ]
                            }
                        ]
                    }
                ]
            },
        )
        assert as_json.status_code == 429 and "retry-after" in as_json.headers
        assert json_format.Parse(as_json.text, status_pb2.Status()).code == 8

        # gRPC: RESOURCE_EXHAUSTED with RetryInfo, where Go and Python exporters look for it
        error = _refused_over_grpc(server, extra)
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        trailers = dict(error.trailing_metadata() or ())
        info = error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
        assert info.retry_delay.ToTimedelta().total_seconds() >= 1
        details = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
        assert details.code == code_pb2.RESOURCE_EXHAUSTED
        assert details.details[0].Is(error_details_pb2.RetryInfo.DESCRIPTOR)

        # the real SDK exporter is told to retry, and retries after the delay it was given
        # (counted by the server: the SDK's own log deduplicates its "retrying" warnings)
        refused_before = server.get("/healthz")["refused_requests"]
        exporter = OTLPSpanExporter(endpoint=server.otlp_grpc, insecure=True, timeout=3.5)
        started = time.monotonic()
        assert exporter.export(sdk_batches(1, 1, 3)[0][0]) == SpanExportResult.FAILURE
        gave_up_after = time.monotonic() - started
        exporter.shutdown()
        attempts = server.get("/healthz")["refused_requests"] - refused_before
        assert attempts >= 2 and gave_up_after >= (attempts - 1) * 0.9

        health = server.get("/healthz")
        assert (health["queue_rows"], health["written_spans"]) == (1000, 0)
        assert health["refused_requests"] >= 4
        stopping = time.monotonic()
    # leaving running_server sent SIGTERM and waited for the exit
    drained_in = time.monotonic() - stopping
    assert server.proc.returncode == 0, "".join(server.output[-30:])
    assert drained_in < 20

    with running_server(data) as reopened:
        assert reopened.get("/api/v1/stats")["spans"] == {"rows": 1000, "spans": 1000}
        names = {s["name"] for s in reopened.spans(trace_id=f"{3:032x}")}
        assert names == {f"held-2-{i}" for i in range(200)}
