"""Record every scenario of ``demo.scenarios`` as OTLP captures plus a manifest.

``python -m tests.harness.make_captures --scenarios [NAME ...]`` runs this. For each scenario
it plays the session with the real Claude Code CLI, once per source: Claude Code's native
traces and logs over OTLP/HTTP JSON (three variants, see :data:`NATIVE_VARIANTS`: as
recommended, behind a gateway that sends no ``request-id``, and with ``OTEL_LOG_TOOL_CONTENT``
off), and under Arize's OpenInference instrumentor (protobuf spans). It writes, under
``<out>/scenarios/<name>/``:

- ``<variant>/traces.json``, ``<variant>/logs.json`` (every export request merged into one)
- ``openinference/traces.pb`` (request bodies concatenated)
- ``manifest.json``: the scenario's expected facts, and per run the session id, trace ids,
  the tool calls the CLI executed (tool_use ids, names, key arguments, agent, error flag),
  the final answer, span and event names, and the export requests received.

A run that does not do what its scenario scripts fails loudly instead of writing a capture.
``--variant NAME`` records one source only and keeps the others (and their manifest entries).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from demo.scenarios import (
    ScenarioResult,
    executed_facts,
    mismatches,
    openinference,
    run_scenario,
)

from .otlp_capture import Capture, OtlpCapture, iter_log_records, iter_spans

PROJECT_KEY = "demo-project-key"
CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "captures" / "scenarios"


@dataclass(frozen=True)
class NativeVariant:
    """How Claude Code ran for one native capture."""

    request_ids: bool = True
    """The model server sent the ``request-id`` header (False: as behind a gateway)."""
    log_tool_content: bool = True
    """``OTEL_LOG_TOOL_CONTENT=1`` (tool output exported as ``tool.output`` span events)."""


NATIVE_VARIANTS: dict[str, NativeVariant] = {
    "claude_code": NativeVariant(),
    "claude_code_no_request_id": NativeVariant(request_ids=False),
    "claude_code_no_tool_content": NativeVariant(log_tool_content=False),
}
"""Folder name → how Claude Code ran; every folder holds ``traces.json`` and ``logs.json``."""
SOURCES = (*NATIVE_VARIANTS, "openinference")


@dataclass(frozen=True)
class ScenarioCapture:
    """One recorded scenario, ready to replay (``Capture.body`` is what an exporter sent)."""

    name: str
    manifest: dict[str, Any]
    native_traces: Capture
    """Claude Code's traces, OTLP/JSON (``POST /v1/traces`` as ``application/json``)."""
    native_logs: Capture
    """Claude Code's log events, OTLP/JSON (``POST /v1/logs``)."""
    openinference_traces: Capture
    """The OpenInference instrumentor's spans, OTLP protobuf (``POST /v1/traces``)."""
    folder: Path

    def native(self, variant: str = "claude_code") -> tuple[Capture, Capture]:
        """The traces and logs of one native variant (see :data:`NATIVE_VARIANTS`)."""
        if variant not in NATIVE_VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; known: {', '.join(NATIVE_VARIANTS)}")
        return (
            _read(self.folder, "traces", f"{variant}/traces.json", "application/json"),
            _read(self.folder, "logs", f"{variant}/logs.json", "application/json"),
        )


def _read(folder: Path, signal: Any, relative: str, content_type: str) -> Capture:
    return Capture(signal, "http", content_type, (folder / relative).read_bytes(), {})


def load_capture(name: str, root: Path = CAPTURES) -> ScenarioCapture:
    """The recorded capture of scenario ``name``."""
    folder = root / name
    if not (folder / "manifest.json").exists():
        raise FileNotFoundError(f"no capture for scenario {name!r} under {root}")

    return ScenarioCapture(
        name=name,
        manifest=json.loads((folder / "manifest.json").read_text(encoding="utf-8")),
        native_traces=_read(folder, "traces", "claude_code/traces.json", "application/json"),
        native_logs=_read(folder, "logs", "claude_code/logs.json", "application/json"),
        openinference_traces=_read(
            folder, "traces", "openinference/traces.pb", "application/x-protobuf"
        ),
        folder=folder,
    )


def _workdir(name: str) -> Path:
    # A fixed path keeps the project paths inside prompts and tool inputs the same each time.
    path = Path(tempfile.gettempdir()) / f"skillsight-capture-scenario-{name}"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def _checked(result: ScenarioResult) -> ScenarioResult:
    problems = mismatches(result)
    if problems:
        raise RuntimeError(
            f"scenario {result.scenario.name} did not play as scripted:\n" + "\n".join(problems)
        )
    return result


def _run_facts(result: ScenarioResult, captures: Sequence[Capture]) -> dict[str, Any]:
    spans = list(iter_spans(captures))
    return {
        "session_id": result.session_id,
        "trace_ids": sorted({s["traceId"] for s in spans}),
        "tool_calls": [
            {"tool_use_id": i, "name": n, "key": k, "agent": a, "is_error": e}
            for i, n, k, a, e in executed_facts(result)
        ],
        "result_text": result.transcript.result_text,
        "span_names": sorted({s["name"] for s in spans}),
        "log_events": sorted(
            {str(r.get("body", {}).get("stringValue")) for r in iter_log_records(captures)}
        ),
        "requests": [
            {"signal": c.signal, "content_type": c.content_type, "bytes": len(c.body)}
            for c in captures
        ],
        "duration_s": round(result.duration_s, 1),
    }


def _merge_json(captures: Sequence[Capture], key: str) -> dict[str, Any]:
    merged: list[Any] = []
    for capture in captures:
        merged.extend(json.loads(capture.body).get(key, []))
    return {key: merged}


def _record_native(
    name: str, out: Path, variant: NativeVariant
) -> tuple[ScenarioResult, dict[str, Any]]:
    out.mkdir(parents=True)
    with OtlpCapture() as receiver:
        native = _checked(
            run_scenario(
                name,
                workdir=_workdir(name),
                endpoint=receiver.http_endpoint,
                protocol="http/json",
                project_key=PROJECT_KEY,
                request_ids=variant.request_ids,
                log_tool_content=variant.log_tool_content,
            )
        )
        captures = list(receiver.captures)
    for signal, key in (("traces", "resourceSpans"), ("logs", "resourceLogs")):
        chosen = [c for c in captures if c.signal == signal]
        if not chosen:
            raise RuntimeError(f"scenario {name}: Claude Code exported no {signal}")
        text = json.dumps(_merge_json(chosen, key), indent=1, ensure_ascii=False)
        (out / f"{signal}.json").write_text(text + "\n", encoding="utf-8")
    facts = {
        "protocol": "http/json",
        "request_ids": variant.request_ids,
        "log_tool_content": variant.log_tool_content,
        **_run_facts(native, captures),
    }
    return native, facts


def _record_openinference(name: str, out: Path) -> tuple[ScenarioResult, dict[str, Any]]:
    out.mkdir(parents=True)
    with OtlpCapture() as receiver:
        instrumented = _checked(
            run_scenario(
                name,
                workdir=_workdir(name),
                instrumentation=openinference(
                    receiver.http_endpoint, headers={"x-skillsight-key": PROJECT_KEY}
                ),
            )
        )
        captures = receiver.of("traces")
    if not captures:
        raise RuntimeError(f"scenario {name}: the OpenInference instrumentor exported nothing")
    (out / "traces.pb").write_bytes(b"".join(c.body for c in captures))
    return instrumented, {"protocol": "http/protobuf", **_run_facts(instrumented, captures)}


def capture_scenario(name: str, out: Path, sources: Sequence[str] = SOURCES) -> dict[str, Any]:
    """Record scenario ``name`` into ``out``, the ``sources`` given (default: all, replacing
    the folder); return its manifest. Sources not recorded keep their files and facts."""
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise ValueError(f"unknown sources {unknown}; known: {', '.join(SOURCES)}")
    old: dict[str, Any] = {}
    if set(sources) == set(SOURCES):
        shutil.rmtree(out, ignore_errors=True)
    elif (out / "manifest.json").exists():
        old = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    runs: dict[str, Any] = dict(old.get("runs", {}))
    result: ScenarioResult | None = None
    for source in sources:
        shutil.rmtree(out / source, ignore_errors=True)
        if source == "openinference":
            result, runs[source] = _record_openinference(name, out / source)
        else:
            result, runs[source] = _record_native(name, out / source, NATIVE_VARIANTS[source])
    assert result is not None, "no source recorded"
    scenario = result.scenario
    manifest = {
        "scenario": name,
        "summary": scenario.summary,
        "prompt": scenario.prompt,
        "project_root": str(scenario.root),
        "outside_dir": str(scenario.outside_dir) if scenario.outside_dir else None,
        "files": sorted(scenario.files),
        "expected": scenario.expected.to_json(),
        "runs": {source: runs[source] for source in SOURCES if source in runs},
        "versions": versions(),
    }
    text = json.dumps(manifest, indent=1, ensure_ascii=False)
    (out / "manifest.json").write_text(text + "\n", encoding="utf-8")
    return manifest


def versions() -> dict[str, str]:
    """The Claude Code CLI, SDK and instrumentor versions the captures come from."""
    from importlib.metadata import version

    from claude_agent_sdk._cli_version import __cli_version__
    from claude_agent_sdk._version import __version__ as sdk_version

    return {
        "claude_code": __cli_version__,
        "claude_agent_sdk": sdk_version,
        "openinference_instrumentation_claude_agent_sdk": version(
            "openinference-instrumentation-claude-agent-sdk"
        ),
    }


def capture_scenarios(names: Sequence[str], out: Path, sources: Sequence[str] = SOURCES) -> None:
    """Record each of ``names`` into ``out/scenarios/<name>/`` (the ``sources`` given)."""
    for name in names:
        manifest = capture_scenario(name, out / "scenarios" / name, sources)
        runs = manifest["runs"]
        done = ", ".join(
            f"{source} {runs[source]['session_id']} ({runs[source]['duration_s']} s)"
            for source in sources
        )
        print(f"{name:<24} {done}")
