"""No request can poison the writer (issue 15).

A request whose spans start in 150 months, two of 60 months that the writer takes in one batch,
spans from broken clocks, rows the store refuses: each gets a clear answer (200 with
``partial_success`` naming what was turned away), every ordinary request before, between and
after them is stored, and the writer stays healthy. When the store itself cannot write, the
receivers say 503 with ``Retry-After`` — never 200 — and every acknowledged span is written once
it can. The service runs in-process (the app ``skillsight serve`` serves, on a real embedded
store); failures are real ClickHouse refusals (a table constraint, a detached table).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from fastapi.testclient import TestClient
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from skillsight.api import create_app
from skillsight.config import Settings
from skillsight.store import MAX_PARTITIONS_PER_INSERT, EmbeddedStore
from skillsight.store.rows import SPAN_SCHEMA, span_columns
from tests.support.otlp_builders import export_request, json_span, json_traces, span

PROTOBUF = {"content-type": "application/x-protobuf"}
JSON = {"content-type": "application/json"}


def month_starts(count: int) -> list[int]:
    """The first moment of each of the last ``count`` months (this one first), in ns: never
    ahead of the clock (the 15th of this month was, on its first fortnight)."""
    now = datetime.now(UTC)
    year, month = now.year, now.month
    out = []
    for _ in range(count):
        out.append(int(datetime(year, month, 1, tzinfo=UTC).timestamp()) * 1_000_000_000)
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    return out


def timed_spans(trace: int, starts: list[int], prefix: str, first_id: int = 1) -> bytes:
    spans = []
    for i, start in enumerate(starts):
        one = span(f"{prefix}-{i}", trace=trace, span_id=first_id + i)
        one.start_time_unix_nano, one.end_time_unix_nano = start, start + 1000
        spans.append(one)
    return export_request(spans)


def ordinary(trace: int, n: int = 5) -> bytes:
    return export_request([span(f"ordinary-{trace:x}-{i}", trace=trace) for i in range(n)])


@pytest.fixture
def service(embedded_store: EmbeddedStore) -> Iterator[TestClient]:
    """The API app (OTLP/HTTP included) over services built around the embedded store."""
    settings = Settings.load(
        {"rebuild_enabled": False, "eval_enabled": False, "flush_interval_s": 0.05}, env={}
    )
    with TestClient(create_app(settings=settings, store=embedded_store)) as client:
        yield client


def health(client: TestClient) -> dict[str, Any]:
    body: dict[str, Any] = client.get("/healthz").json()
    return body


def wait_written(client: TestClient, spans: int, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = health(client)
        if (
            state["written_spans"] + state["dead_letters"]["since_start"] >= spans
            and not (state["queue_rows"])
        ):
            return state
        time.sleep(0.05)
    raise AssertionError(f"not written in {timeout}s: {health(client)}")


def stored(store: EmbeddedStore, trace: int) -> list[str]:
    return sorted(s["name"] for s in store.spans.find("default", trace_id=f"{trace:032x}"))


def test_a_store_insert_of_any_number_of_months_is_cut_into_blocks(
    embedded_store: EmbeddedStore,
) -> None:
    columns = span_columns()
    starts = month_starts(150)
    for i, start in enumerate(starts):
        row: dict[str, Any] = {
            "project_id": "default",
            "trace_id": f"{0x150:032x}",
            "span_id": f"{i + 1:016x}",
            "parent_span_id": "",
            "name": f"m{i}",
            "kind": "internal",
            "start_ns": start,
            "end_ns": start,
            "status_code": "unset",
            "status_message": "",
            "scope_name": "",
            "scope_version": "",
            "span_events": "[]",
            "links": "[]",
        }
        for name in columns.names:
            if name in columns.list_names:
                columns.add_list(name, [])
            else:
                columns.data[name].append(row[name])
    table: pa.Table = columns.to_arrow(SPAN_SCHEMA)
    assert embedded_store.spans.insert(table) == 150  # ClickHouse alone refuses > 100 months
    assert embedded_store.spans.count("default") == {"rows": 150, "spans": 150}
    assert MAX_PARTITIONS_PER_INSERT < 100


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_many_months_and_broken_clocks_are_answered_and_ordinary_requests_stored(
    service: TestClient, embedded_store: EmbeddedStore, encoding: str
) -> None:
    def post(trace: int, starts: list[int], prefix: str) -> ExportTraceServiceResponse:
        if encoding == "protobuf":
            response = service.post(
                "/v1/traces", content=timed_spans(trace, starts, prefix), headers=PROTOBUF
            )
            assert response.status_code == 200, response.content
            return ExportTraceServiceResponse.FromString(response.content)
        doc = json_traces(
            [
                json_span(
                    f"{prefix}-{i}", f"{trace:032x}", f"{i + 1:016x}", startTimeUnixNano=str(s)
                )
                for i, s in enumerate(starts)
            ]
        )
        response = service.post("/v1/traces", content=json.dumps(doc).encode(), headers=JSON)
        assert response.status_code == 200, response.text
        return json_format.Parse(response.text, ExportTraceServiceResponse())

    broken = [
        int(datetime(1970, 2, 1, tzinfo=UTC).timestamp()) * 1_000_000_000,  # before 2000
        int(datetime(2200, 1, 1, tzinfo=UTC).timestamp()) * 1_000_000_000,  # far future
    ]
    sent = 0
    assert service.post("/v1/traces", content=ordinary(0xB1), headers=PROTOBUF).status_code == 200
    answer = post(0x150, month_starts(150) + broken, "month")
    assert answer.partial_success.rejected_spans == 2
    message = answer.partial_success.error_message
    assert "before 2000" in message and "ahead of the server's clock" in message
    sent += 5 + 150
    assert service.post("/v1/traces", content=ordinary(0xB2), headers=PROTOBUF).status_code == 200
    # two requests of 60 months each, sent at once: together they span more months than one
    # INSERT may touch, so the writer must never put them in one statement
    answers: list[ExportTraceServiceResponse] = []
    threads = [
        threading.Thread(target=lambda t=t: answers.append(post(t, month_starts(60), f"sixty{t}")))
        for t in (0x601, 0x602)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [a.HasField("partial_success") for a in answers] == [False, False]
    assert service.post("/v1/traces", content=ordinary(0xB3), headers=PROTOBUF).status_code == 200
    sent += 5 + 120 + 5

    state = wait_written(service, sent)
    assert state["writer_healthy"] and state["accepting"]
    assert state["dead_letters"] == {"rows": 0, "since_start": 0}
    assert len(stored(embedded_store, 0x150)) == 150
    assert len(stored(embedded_store, 0x601)) == len(stored(embedded_store, 0x602)) == 60
    for trace in (0xB1, 0xB2, 0xB3):
        assert len(stored(embedded_store, trace)) == 5
    assert embedded_store.spans.count("default")["spans"] == sent


def test_rows_the_store_refuses_are_dead_lettered_and_the_rest_written(
    service: TestClient, embedded_store: EmbeddedStore
) -> None:
    # a real refusal of the real engine, for these rows only
    embedded_store.execute("ALTER TABLE spans ADD CONSTRAINT no_poison CHECK name != 'poison'")
    names = [f"good-{i}" for i in range(300)]
    for at in (7, 150, 299):
        names[at] = "poison"
    mixed = export_request([span(n, trace=0xD1, span_id=i + 1) for i, n in enumerate(names)])
    doc = json_traces(
        [
            json_span("poison", f"{0xD2:032x}", "00000000000000d2"),
            json_span("fine", f"{0xD2:032x}", "00000000000000d3"),
        ]
    )
    assert service.post("/v1/traces", content=ordinary(0xC1), headers=PROTOBUF).status_code == 200
    assert service.post("/v1/traces", content=mixed, headers=PROTOBUF).status_code == 200
    answer = service.post("/v1/traces", content=json.dumps(doc).encode(), headers=JSON)
    assert answer.status_code == 200
    assert service.post("/v1/traces", content=ordinary(0xC2), headers=PROTOBUF).status_code == 200

    state = wait_written(service, 5 + 300 + 2 + 5)
    assert state["dead_letters"] == {"rows": 4, "since_start": 4}
    assert state["writer_healthy"]
    assert state["written_spans"] == 5 + 297 + 1 + 5
    assert stored(embedded_store, 0xD1) == sorted(n for n in names if n != "poison")
    assert stored(embedded_store, 0xD2) == ["fine"]
    assert len(stored(embedded_store, 0xC1)) == len(stored(embedded_store, 0xC2)) == 5
    letters = service.get("/api/v1/dead-letters").json()
    assert len(letters) == 4
    assert {json.loads(d["row_json"])["name"] for d in letters} == {"poison"}
    assert all("no_poison" in d["reason"] for d in letters)
    assert {d["trace_id"] for d in letters} == {f"{0xD1:032x}", f"{0xD2:032x}"}


def test_while_the_store_cannot_write_receivers_answer_503_never_200(
    service: TestClient, embedded_store: EmbeddedStore, tmp_path: Path
) -> None:
    assert service.post("/v1/traces", content=ordinary(0xE1), headers=PROTOBUF).status_code == 200
    wait_written(service, 5)
    embedded_store.execute("DETACH TABLE spans")  # every INSERT now fails: the store's condition
    acknowledged = [0xE1]
    first = service.post("/v1/traces", content=ordinary(0xE2), headers=PROTOBUF)
    if first.status_code == 200:  # taken before the writer knew; durable in the spool
        acknowledged.append(0xE2)
    deadline = time.monotonic() + 30
    while health(service)["writer_healthy"]:
        assert time.monotonic() < deadline, "the writer never noticed the store failing"
        time.sleep(0.05)
    assert not health(service)["accepting"]
    for trace in range(0xE10, 0xE14):
        refused = service.post("/v1/traces", content=ordinary(trace), headers=PROTOBUF)
        assert refused.status_code == 503
        assert int(refused.headers["retry-after"]) >= 1
        as_json = service.post(
            "/v1/traces",
            content=json.dumps(
                json_traces([json_span("j", f"{trace:032x}", "00000000000000aa")])
            ).encode(),
            headers=JSON,
        )
        assert as_json.status_code == 503 and "retry" in as_json.text
    embedded_store.execute("ATTACH TABLE spans")
    deadline = time.monotonic() + 60
    while not health(service)["writer_healthy"]:
        assert time.monotonic() < deadline, "the writer did not recover"
        time.sleep(0.05)
    assert service.post("/v1/traces", content=ordinary(0xE3), headers=PROTOBUF).status_code == 200
    acknowledged.append(0xE3)
    wait_written(service, 5 * len(acknowledged))
    for trace in acknowledged:
        assert len(stored(embedded_store, trace)) == 5, hex(trace)
    for trace in range(0xE10, 0xE14):
        assert stored(embedded_store, trace) == []
    assert health(service)["dead_letters"]["rows"] == 0
