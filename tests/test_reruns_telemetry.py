"""A rerun's telemetry: the resource attributes that tag it, and finding a run's sessions by them.

Claude Code copies ``OTEL_RESOURCE_ATTRIBUTES`` onto every span and log record it exports, so the
rerun tags (``skillsight.rerun.*``) reach the attributes too; the spans must still read as Claude
Code's (not as skillsight's own instrumentation), and the tagged session must be found whole,
its spans without a session id included.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from skillsight.ingest import otlp
from skillsight.reruns import Launch, parse_agent
from skillsight.store import EmbeddedStore
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA

CAPTURES = Path(__file__).parent / "fixtures" / "captures" / "claude_code"
TAGS = {"skillsight.rerun.id": "run-1", "skillsight.rerun.key": "k-1"}


def _tag(document: dict[str, Any], where: str) -> bytes:
    """The capture as Claude Code exports it under a rerun: tags on the resource and on every
    span or log record."""
    extra = [{"key": k, "value": {"stringValue": v}} for k, v in TAGS.items()]
    for resource in document[f"resource{where}"]:
        resource["resource"].setdefault("attributes", []).extend(extra)
        for scope in resource[f"scope{where}"]:
            for item in scope["spans" if where == "Spans" else "logRecords"]:
                item.setdefault("attributes", []).extend(extra)
    return json.dumps(document).encode()


def store_tagged_capture(store: EmbeddedStore) -> None:
    """The recorded Claude Code session, tagged as one run's, decoded into project default."""
    for signal, where, schema, table in (
        (otlp.TRACES, "Spans", SPAN_SCHEMA, store.spans),
        (otlp.LOGS, "Logs", EVENT_SCHEMA, store.events),
    ):
        name = "traces.json" if signal == otlp.TRACES else "logs.json"
        body = _tag(json.loads((CAPTURES / name).read_text()), where)
        decoded = otlp.decode(signal, body, otlp.JSON, "default", otlp.Limits())
        table.insert(decoded.columns.to_arrow(schema))


def test_tagged_claude_code_telemetry_stays_claude_codes_and_is_found(
    embedded_store: EmbeddedStore,
) -> None:
    store_tagged_capture(embedded_store)
    conventions = embedded_store.query("SELECT DISTINCT source_convention AS c FROM spans")
    assert conventions == [{"c": "claude_code"}]
    found = embedded_store.runs.tagged_sessions("default", "skillsight.rerun.key", "k-1")
    sessions = {r["session_id"] for r in embedded_store.query("SELECT session_id FROM spans")}
    assert [s.session_id for s in found] == sorted(sessions - {""})
    assert embedded_store.runs.tagged_sessions("default", "skillsight.rerun.key", "other") == []
    assert embedded_store.runs.tagged_sessions("elsewhere", "skillsight.rerun.key", "k-1") == []


def test_the_agent_contract_environment(tmp_path: Path) -> None:
    agent = parse_agent("my-agent --task {prompt} --in {workspace} --file {prompt_file}")
    launch = Launch(
        run_id="run-1", case_id="c-1", condition="baseline", attempt=2, key="k-9",
        prompt="Sum 'it' $HOME", prompt_file=tmp_path / "prompt.txt", workspace=tmp_path / "ws",
        endpoint="http://127.0.0.1:9", headers={"x-skillsight-key": "secret"},
    )  # fmt: skip
    assert agent.argv(launch) == [
        "my-agent", "--task", "Sum 'it' $HOME", "--in", str(tmp_path / "ws"),
        "--file", str(tmp_path / "prompt.txt"),
    ]  # fmt: skip
    base = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://elsewhere",
        "OTEL_RESOURCE_ATTRIBUTES": "team=a",
    }
    env = agent.environment(launch, base)
    assert "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" not in env  # would win over the rerun's
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:9"
    assert env["OTEL_RESOURCE_ATTRIBUTES"] == (
        "team=a,skillsight.rerun.id=run-1,skillsight.rerun.case=c-1,"
        "skillsight.rerun.condition=baseline,skillsight.rerun.attempt=2,skillsight.rerun.key=k-9"
    )
    assert env["OTEL_EXPORTER_OTLP_HEADERS"] == "x-skillsight-key=secret"
    assert env["SKILLSIGHT_RERUN_PROMPT"] == "Sum 'it' $HOME"
    assert env["SKILLSIGHT_RERUN_SKILLS_DIR"] == str(tmp_path / "ws" / ".claude" / "skills")
    assert env["CLAUDE_CODE_ENABLE_TELEMETRY"] == "1" and "CLAUDE_CONFIG_DIR" not in env
