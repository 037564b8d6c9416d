"""Regenerate ``tests/fixtures/captures/`` from live runs of the real Claude Code CLI.

Run from the repository root: ``python -m tests.harness.make_captures [--out DIR]``;
``--scenarios [NAME ...]`` records the scenario library instead (see ``scenario_captures``).

Writes, per source, the exact export request bodies received (see the README in the output
folder for the layout): Claude Code's native OTLP/JSON (``traces.json``, ``logs.json``) from an
``http/json`` run and OTLP protobuf (``traces.pb``, ``logs.pb``) from an ``http/protobuf`` run,
and the OpenInference and traceAI instrumentors' protobuf span exports.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from demo.third_party import INSTRUMENTORS, run_instrumented_demo
from demo.workload import DemoResult, Protocol, run_demo

from .otlp_capture import Capture, OtlpCapture, iter_log_records, iter_spans

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "fixtures" / "captures"
PROJECT_KEY = "demo-project-key"
_LIST_KEYS = {"traces": "resourceSpans", "logs": "resourceLogs", "metrics": "resourceMetrics"}


def merge_json(captures: Sequence[Capture]) -> dict[str, Any]:
    """One OTLP/JSON export request holding every resource entry of ``captures``, in order."""
    if not captures:
        raise ValueError("nothing captured")
    key = _LIST_KEYS[captures[0].signal]
    merged: list[Any] = []
    for capture in captures:
        merged.extend(json.loads(capture.body).get(key, []))
    return {key: merged}


def merge_protobuf(captures: Sequence[Capture]) -> bytes:
    """Concatenated bodies: protobuf parses that as one request with the lists appended."""
    if not captures:
        raise ValueError("nothing captured")
    return b"".join(capture.body for capture in captures)


def _workdir(name: str) -> Path:
    # A fixed path keeps the project path that appears in captured prompts the same each time.
    path = Path(tempfile.gettempdir()) / f"skillsight-capture-{name}"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _facts(result: DemoResult, captures: Sequence[Capture]) -> dict[str, Any]:
    spans = list(iter_spans(captures))
    return {
        "session_id": result.session_id,
        "trace_ids": sorted({s["traceId"] for s in spans}),
        "skill_name": result.project.skill_name,
        "bash_command": result.project.command,
        "tool_calls": [
            {"tool_use_id": call_id, "name": name, "input": tool_input}
            for call_id, name, tool_input in result.tool_calls
        ],
        "span_names": sorted({s["name"] for s in spans}),
        "log_events": sorted(
            {str(r.get("body", {}).get("stringValue")) for r in iter_log_records(captures)}
        ),
        "requests": [
            {"signal": c.signal, "content_type": c.content_type, "bytes": len(c.body)}
            for c in captures
        ],
    }


def capture_native(out: Path, protocol: Protocol) -> dict[str, Any]:
    """Run the demo with Claude Code exporting over ``protocol``; write its traces and logs."""
    out.mkdir(parents=True, exist_ok=True)
    with OtlpCapture() as receiver:
        result = run_demo(
            receiver.endpoint_for(protocol),
            protocol,
            project_key=PROJECT_KEY,
            workdir=_workdir("native"),
        )
        captures = list(receiver.captures)
    for signal in ("traces", "logs"):
        chosen = [c for c in captures if c.signal == signal]
        if protocol == "http/json":
            text = json.dumps(merge_json(chosen), indent=1, ensure_ascii=False)
            (out / f"{signal}.json").write_text(text + "\n", encoding="utf-8")
        else:
            (out / f"{signal}.pb").write_bytes(merge_protobuf(chosen))
    return _facts(result, captures)


def capture_third_party(out: Path) -> dict[str, dict[str, Any]]:
    """Run the demo under each third-party instrumentor; write ``<name>/traces.pb``."""
    facts: dict[str, dict[str, Any]] = {}
    for name in INSTRUMENTORS:
        with OtlpCapture() as receiver:
            result = run_instrumented_demo(
                name,
                receiver.http_endpoint,
                headers={"x-skillsight-key": PROJECT_KEY},
                workdir=_workdir(name),
            )
            captures = receiver.of("traces")
        (out / name).mkdir(parents=True, exist_ok=True)
        (out / name / "traces.pb").write_bytes(merge_protobuf(captures))
        facts[name] = _facts(result, captures)
    return facts


def main(argv: Sequence[str] | None = None) -> int:
    """Regenerate every capture under ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--scenarios",
        nargs="*",
        metavar="NAME",
        help="record the scenario captures instead (all scenarios, or the ones named) "
        "into OUT/scenarios/<name>/",
    )
    parser.add_argument(
        "--source",
        action="append",
        metavar="SOURCE",
        help="with --scenarios: record only this source (repeatable; default all): "
        "claude_code, claude_code_no_request_id, claude_code_no_tool_content, openinference",
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    if args.scenarios is not None:
        from demo.scenarios import SCENARIOS

        from .scenario_captures import SOURCES, capture_scenarios

        unknown = [n for n in args.scenarios if n not in SCENARIOS]
        if unknown:
            parser.error(f"unknown scenarios {unknown}; known: {', '.join(SCENARIOS)}")
        bad = [s for s in args.source or () if s not in SOURCES]
        if bad:
            parser.error(f"unknown sources {bad}; known: {', '.join(SOURCES)}")
        capture_scenarios(args.scenarios or list(SCENARIOS), out, args.source or SOURCES)
        print(f"scenario captures written under {out / 'scenarios'}")
        return 0
    native = out / "claude_code"
    manifest = {
        "claude_code": {
            "http/json": capture_native(native, "http/json"),
            "http/protobuf": capture_native(native, "http/protobuf"),
        },
        **capture_third_party(out),
    }
    from claude_agent_sdk._cli_version import __cli_version__
    from claude_agent_sdk._version import __version__ as sdk_version

    manifest["versions"] = {"claude_code": __cli_version__, "claude_agent_sdk": sdk_version}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(f"captures written under {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
