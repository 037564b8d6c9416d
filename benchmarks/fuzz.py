"""``python -m benchmarks fuzz``: millions of mutated OTLP requests through the decoders.

The suite's property tests (``tests/test_fuzz_otlp.py``) run thousands of structured inputs;
this run mutates real captures and generated requests as fast as the decoders take them — bits
flipped, bytes cut, inserted, repeated, two requests spliced — and feeds each to the protobuf
decoders of both signals, the fast path's screen and, for JSON seeds, the JSON decoders. Every
input must give rows or a :class:`DecodeError` within a second; anything else is a finding,
written to the findings folder to become a regression test.
"""

from __future__ import annotations

import base64
import json
import random
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from rich.console import Console

from benchmarks.traces import export_requests
from skillsight.errors import DecodeError
from skillsight.ingest import otlp
from skillsight.store.fastpath import screen

CAPTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "captures"
LIMITS = otlp.Limits(max_value_chars=4096, max_depth=4)
SLOW_S = 1.0


def seeds() -> tuple[list[bytes], list[bytes]]:
    """(protobuf seeds, JSON seeds): generated agent traces of a few spans each, and the real
    captures' smaller requests (small seeds keep the rate at thousands of inputs a second)."""
    protobuf = list(export_requests(3_000, 4))
    protobuf += [
        body for p in sorted(CAPTURES.glob("**/*.pb")) if len(body := p.read_bytes()) < 16_384
    ]
    text = [
        json.dumps(_otlp_json(ExportTraceServiceRequest.FromString(body))).encode()
        for body in protobuf[:100]
    ]
    text += [
        body for p in sorted(CAPTURES.glob("**/*.json")) if len(body := p.read_bytes()) < 16_384
    ]
    return protobuf, text


def _otlp_json(request: ExportTraceServiceRequest) -> dict[str, object]:
    """OTLP/JSON of a request: protobuf's JSON mapping with ids in hex, as OTLP writes them."""
    document: dict[str, object] = json_format.MessageToDict(request)
    for rs in document.get("resourceSpans", []):  # type: ignore[attr-defined]
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return document


def mutate(data: bytes, other: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        if not out:
            out += other[: rng.randint(0, 64)]
            continue
        at = rng.randrange(len(out))
        kind = rng.randrange(6)
        if kind == 0:
            out[at] ^= 1 << rng.randrange(8)
        elif kind == 1:
            out[at] = rng.choice((0, 0x7F, 0x80, 0xFF, rng.randrange(256)))
        elif kind == 2:
            del out[at : at + rng.randint(1, 64)]
        elif kind == 3:
            out[at:at] = rng.randbytes(rng.randint(1, 16))
        elif kind == 4:
            size = rng.randint(1, 32)
            out[at:at] = out[at : at + size] * rng.randint(2, 8)  # repeated fields and lengths
        else:
            cut = rng.randrange(len(other) + 1)
            out[at:] = other[cut:]  # spliced with another request
    return bytes(out)


def _checks(is_json: bool) -> list[tuple[str, Callable[[bytes], object]]]:
    if is_json:
        return [
            ("json traces", lambda b: otlp.decode(otlp.TRACES, b, otlp.JSON, "p", LIMITS)),
            ("json logs", lambda b: otlp.decode(otlp.LOGS, b, otlp.JSON, "p", LIMITS)),
        ]
    return [
        ("protobuf traces", lambda b: otlp.decode(otlp.TRACES, b, otlp.PROTOBUF, "p", LIMITS)),
        ("protobuf logs", lambda b: otlp.decode(otlp.LOGS, b, otlp.PROTOBUF, "p", LIMITS)),
        ("screen", lambda b: screen(b, otlp.Window().bounds())),
    ]


def inputs(count: int, rng: random.Random) -> Iterator[tuple[bool, bytes]]:
    protobuf, text = seeds()
    for i in range(count):
        pool = text if text and i % 5 == 0 else protobuf
        yield pool is text, mutate(rng.choice(pool), rng.choice(pool), rng)


def run_fuzz(*, count: int, seed: int, findings: Path, console: Console) -> dict[str, object]:
    rng = random.Random(seed)
    outcomes: Counter[str] = Counter()
    found = 0
    started = time.perf_counter()
    slowest = 0.0
    for n, (is_json, body) in enumerate(inputs(count, rng), 1):
        for name, check in _checks(is_json):
            began = time.perf_counter()
            try:
                check(body)
                outcomes[f"{name}: answered"] += 1
            except DecodeError:
                outcomes[f"{name}: refused (400)"] += 1
            except Exception:
                found += 1
                findings.mkdir(parents=True, exist_ok=True)
                (findings / f"finding-{seed}-{n}.bin").write_bytes(body)
                (findings / f"finding-{seed}-{n}.txt").write_text(
                    f"{name}\n{traceback.format_exc()}"
                )
            took = time.perf_counter() - began
            slowest = max(slowest, took)
            if took > SLOW_S:
                found += 1
                findings.mkdir(parents=True, exist_ok=True)
                (findings / f"slow-{seed}-{n}.bin").write_bytes(body)
        if n % 100_000 == 0:
            console.print(f"  {n} inputs, {found} findings", highlight=False)
    elapsed = time.perf_counter() - started
    report: dict[str, object] = {
        "inputs": count,
        "seed": seed,
        "seconds": round(elapsed, 1),
        "inputs_per_s": round(count / elapsed),
        "slowest_ms": round(slowest * 1000, 1),
        "findings": found,
        "outcomes": dict(sorted(outcomes.items())),
    }
    console.print(json.dumps(report, indent=2), highlight=False)
    return report
