"""Verdicts that hold on real deployments, from the recorded Claude Code captures (no CLI here;
``tests/test_claude_code_matrix.py`` plays the same variants live).

Every scenario was recorded three ways (``tests/harness/scenario_captures.py``): as recommended,
behind a gateway that sends no ``request-id`` header, and with ``OTEL_LOG_TOOL_CONTENT`` off.
The captures go through the real OTLP decoder and ClickHouse (chdb) as a deployed service would
take them, with the skill catalogue scanned from another checkout than the agent's workspace
(a CI job pushing SKILL.md), and are scored by the evaluation scheduler's own context assembly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from demo._project_files import FAKE_TOKEN
from demo.scenario_library import build_scenario
from skillsight.evaluators import DETERMINISTIC, Evaluation, deterministic_registry, run_evaluators
from skillsight.evaluators.scheduler import ContextAssembler
from skillsight.ingest import otlp
from skillsight.rebuild.catalogue import store_catalogue
from skillsight.rebuild.finalizer import is_complete
from skillsight.rebuild.session import Rebuilt, rebuild_session
from skillsight.rebuild.visibility import GAPS, Visibility
from skillsight.skills import scan
from skillsight.store import EmbeddedStore
from skillsight.store.records import Activation
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA

SCENARIOS = Path(__file__).parent / "fixtures" / "captures" / "scenarios"
NAMES = sorted(p.name for p in SCENARIOS.iterdir() if (p / "manifest.json").exists())
NATIVE = ("claude_code", "claude_code_no_request_id", "claude_code_no_tool_content")
ROWS = 100_000


def manifest(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCENARIOS / name / "manifest.json").read_text())
    return loaded


def insert(store: EmbeddedStore, project: str, path: Path, body: bytes | None = None) -> None:
    signal = otlp.TRACES if path.name.startswith("traces") else otlp.LOGS
    encoding = otlp.JSON if path.suffix == ".json" else otlp.PROTOBUF
    data = path.read_bytes() if body is None else body
    decoded = otlp.decode(signal, data, encoding, project, otlp.Limits())
    assert decoded.rejected == 0, decoded.message()
    if signal == otlp.TRACES:
        store.spans.insert(decoded.columns.to_arrow(SPAN_SCHEMA))
    else:
        store.events.insert(decoded.columns.to_arrow(EVENT_SCHEMA))


@dataclass
class Loaded:
    store: EmbeddedStore
    elsewhere: Path
    """Where the catalogue was scanned from: not the agent's workspace."""

    def rows(self, project: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        spans = self.store.spans.find(project, limit=ROWS)
        events = self.store.events.find(project, limit=ROWS)
        return spans, events  # type: ignore[return-value]

    def rebuilt(self, name: str, source: str) -> Rebuilt:
        project = f"{name}.{source}"
        return rebuild_session(
            *self.rows(project),
            project_id=project,
            catalogue=store_catalogue(self.store)(project),
        )

    def scored(self, name: str, source: str) -> list[tuple[Activation, list[Evaluation]]]:
        """Each activation with the deterministic verdicts the scheduler would store."""
        assembler = ContextAssembler(self.store, seed=False)
        rebuilt = self.rebuilt(name, source)
        out = []
        for activation in rebuilt.activations:
            context = assembler.context(activation, rebuilt.activations)
            out.append((activation, run_evaluators([activation], context, registry=REGISTRY)))
        return out


REGISTRY = deterministic_registry()


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    """Every capture of every scenario in its own project; each project's catalogue scanned
    from a copy of the scenario's skills in another folder (as a CI checkout would hold them)."""
    root = tmp_path_factory.mktemp("variants")
    store = EmbeddedStore(root / "store")
    store.migrate()
    elsewhere = root / "ci-checkout"
    for name in NAMES:
        project_files = build_scenario(name, elsewhere / name)
        project_files.write()
        skills = scan([elsewhere / name / ".claude" / "skills"]).skills
        for source in (*NATIVE, "openinference"):
            folder = SCENARIOS / name / source
            if not folder.is_dir():
                continue
            project = f"{name}.{source}"
            for path in sorted(folder.iterdir()):
                if path.name.startswith(("traces", "logs")):
                    insert(store, project, path)
            store.skills.insert(project, skills)
    try:
        yield Loaded(store, elsewhere)
    finally:
        store.close()


# --- the same session with and without request-id ----------------------------------------------


def trajectory_view(rebuilt: Rebuilt) -> list[Any]:
    """What must not depend on request ids: steps, texts, calls, results, per-step usage."""

    def steps(trajectory: Any) -> list[Any]:
        out: list[Any] = []
        for step in trajectory.steps:
            data = step.model_dump(
                exclude_none=True,
                include={"step_id", "source", "message", "tool_calls", "observation"},
            )
            for call in data.get("tool_calls", []):
                call.pop("extra", None)
            extra = {
                k: v
                for k, v in (step.extra or {}).items()
                if k in ("message_logged", "active_skill", "stop_reason", "llm_call_missing")
            }
            out.append((data, extra, step.llm_call_count))
        for sub in trajectory.subagent_trajectories or ():
            out.append(("subagent", sub.agent.name, steps(sub)))
        return out

    # subagent trajectory ids embed the session id, which differs between two runs
    text = json.dumps(steps(rebuilt.trajectory)).replace(rebuilt.session_id, "<session>")
    loaded: list[Any] = json.loads(text)
    return loaded


def activation_view(activation: Activation) -> dict[str, Any]:
    data = activation.model_dump(
        include={
            "skill_name",
            "trigger",
            "trigger_call_id",
            "trigger_step_id",
            "load_call_id",
            "mechanism",
            "subagent",
            "request",
            "integration_message",
            "integration_step_id",
            "step_ids",
            "outcome",
            "skill_version",
            "workspace",
        }
    )
    data["tool_calls"] = [
        (c.tool_call_id, c.name, c.arguments, c.result, c.is_error, c.step_id)
        for c in activation.tool_calls
    ]
    return data


def verdicts(scored: list[tuple[Activation, list[Evaluation]]]) -> list[Any]:
    return [
        [
            (
                e.evaluator,
                e.score,
                e.label,
                e.unseen,
                [(f.kind, f.tool_call_id) for f in e.findings],
                list(e.evidence.tool_call_ids),
            )
            for e in evaluations
        ]
        for _, evaluations in scored
    ]


@pytest.mark.parametrize("name", NAMES)
def test_without_request_id_the_session_reads_the_same(loaded: Loaded, name: str) -> None:
    with_ids = loaded.rebuilt(name, "claude_code")
    without = loaded.rebuilt(name, "claude_code_no_request_id")
    assert [activation_view(a) for a in without.activations] == [
        activation_view(a) for a in with_ids.activations
    ]
    assert trajectory_view(without) == trajectory_view(with_ids)
    assert len(with_ids.activations) == len(manifest(name)["expected"]["activations"])
    for activation in without.activations:
        assert activation.tool_calls or activation.integration_message
    steps = [s for s in without.trajectory.steps if s.source == "agent"]
    assert all("request_id" not in (s.extra or {}) for s in steps)
    assert all("request_id" in (s.extra or {}) for s in with_ids.trajectory.steps[1:2])
    assert verdicts(loaded.scored(name, "claude_code_no_request_id")) == verdicts(
        loaded.scored(name, "claude_code")
    )


@pytest.mark.parametrize("source", ["claude_code", "claude_code_no_request_id"])
def test_the_completeness_rule_waits_for_request_events_with_or_without_ids(
    loaded: Loaded, source: str
) -> None:
    """The last export of log events carries the final answer; a session whose spans are all
    in but whose last request events are not is incomplete, with or without request ids."""
    spans, events = loaded.rows(f"two_skills.{source}")
    assert is_complete(spans, events)
    requests = [e for e in events if e["event_name"] in ("claude_code.api_request",)]
    last = max(requests, key=lambda e: int(e["attributes"].get("event.sequence", "0")))
    assert not is_complete(spans, [e for e in events if e is not last])
    # the log events of a session that exports none at all hold nothing back
    assert is_complete(spans, [])


# --- no finding without evidence ----------------------------------------------------------------


def expected(name: str) -> dict[str, bool]:
    return {e["evaluator"]: e["passed"] for e in manifest(name)["expected"]["evaluations"]}


@pytest.mark.parametrize(
    ("name", "source"),
    [(n, s) for n in NAMES for s in ("claude_code", "claude_code_no_request_id", "openinference")],
)
def test_a_catalogue_from_elsewhere_brings_no_false_finding(
    loaded: Loaded, name: str, source: str
) -> None:
    """The catalogue was scanned from another checkout and no workspace is given: clean
    activations have no security finding, and every expected finding is still found."""
    want = expected(name)
    cites = {e["evaluator"]: e["cites"] for e in manifest(name)["expected"]["evaluations"]}
    scored = loaded.scored(name, source)
    assert len(scored) == len(manifest(name)["expected"]["activations"])
    for activation, evaluations in scored:
        assert [e.evaluator for e in evaluations] == list(DETERMINISTIC)
        by_name = {e.evaluator: e for e in evaluations}
        # the catalogue gave the contract, its folder is not taken for the agent's workspace
        assert activation.contract is not None and activation.contract.catalogued
        security = by_name["security"]
        assert str(loaded.elsewhere) not in security.reason
        if want.get("security", True):
            assert security.findings == (), security
            assert security.score == 1.0
        for evaluator, passed in want.items():
            got = by_name[evaluator]
            if passed:
                assert got.passed in (True, None), got  # None: nothing to judge
            else:
                assert got.passed is False, got
                cited = set(got.evidence.tool_call_ids)
                assert set(cites[evaluator]) <= cited, (cites[evaluator], got)
        assert by_name["efficiency"].label == "not_applicable"  # no baseline yet


def test_the_workspace_is_named_with_how_it_was_known(loaded: Loaded) -> None:
    [(native, native_scores)] = loaded.scored("allowed_tools_violation", "claude_code")
    root = manifest("allowed_tools_violation")["project_root"]
    assert native.workspace == root  # reported: process.working_directory
    security = {e.evaluator: e for e in native_scores}["security"]
    assert f"workspace {root} (reported by the telemetry" in security.reason
    [(oi, oi_scores)] = loaded.scored("allowed_tools_violation", "openinference")
    assert oi.workspace == ""  # the instrumentor reports none; the skill folder it loaded does
    security = {e.evaluator: e for e in oi_scores}["security"]
    assert f"workspace {root} (the project holding the skill folder" in security.reason


def test_without_a_known_workspace_no_path_is_called_outside(loaded: Loaded) -> None:
    """The same security capture with process.working_directory stripped (as Claude Code sends
    it without OTEL_RESOURCE_ATTRIBUTES): the delete outside the project can no longer be
    placed, so it is no finding; the reason and ``unseen`` say so. The secret is still found."""
    name, project = "security", "security.unplaced"
    for path in sorted((SCENARIOS / name / "claude_code").iterdir()):
        body = json.loads(path.read_bytes())
        for resource in body.get("resourceSpans", []) + body.get("resourceLogs", []):
            # the CLI copies resource attributes onto every span and log record as well
            rows = [resource["resource"]]
            for scope in resource.get("scopeSpans", []) + resource.get("scopeLogs", []):
                rows += scope.get("spans", []) + scope.get("logRecords", [])
            for row in rows:
                attributes = row["attributes"]
                attributes[:] = [a for a in attributes if a["key"] != "process.working_directory"]
        insert(loaded.store, project, path, json.dumps(body).encode())
    loaded.store.skills.insert(project, scan([loaded.elsewhere / name / ".claude/skills"]).skills)
    assembler = ContextAssembler(loaded.store, seed=False)
    rebuilt = rebuild_session(
        *loaded.rows(project),
        project_id=project,
        catalogue=store_catalogue(loaded.store)(project),
    )
    [activation] = rebuilt.activations
    assert activation.workspace == ""
    security = next(
        e
        for e in run_evaluators([activation], assembler.context(activation), registry=REGISTRY)
        if e.evaluator == "security"
    )
    assert [f.kind for f in security.findings] == ["secret"]
    assert security.unseen == ("workspace",)
    outside = manifest(name)["outside_dir"]
    assert f"1 paths not placed ({outside}/build-cache)" in security.reason
    assert "workspace unknown" in security.reason


# --- say what could not be seen -----------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_with_tool_content_off_no_verdict_claims_more_than_was_seen(
    loaded: Loaded, name: str
) -> None:
    for activation, evaluations in loaded.scored(name, "claude_code_no_tool_content"):
        assert all(c.result is None for c in activation.tool_calls)
        by_name = {e.evaluator: e for e in evaluations}
        for evaluator in ("security", "integration_heuristic"):
            got = by_name[evaluator]
            if activation.tool_calls:
                # rests on part of its input and says which part, or does not apply
                assert "tool_outputs" in got.unseen, got
                assert "tool outputs (not exported" in got.reason, got
        security = by_name["security"]
        if activation.tool_calls:
            assert "not their outputs" in security.reason, security
            assert security.score is not None  # the commands and the skill content were seen
        if name == "security":
            # the secret the script printed is not seen; the delete on the command line is
            assert [f.kind for f in security.findings] == ["rm_rf_outside_workspace"]
        elif name == "secret_in_command":
            assert [f.kind for f in security.findings] == ["secret"]  # on the command line
        else:
            assert security.findings == ()


def test_a_secret_on_a_command_line_is_found_with_tool_content_on_or_off(loaded: Loaded) -> None:
    for source in NATIVE:
        [(activation, evaluations)] = loaded.scored("secret_in_command", source)
        security = {e.evaluator: e for e in evaluations}["security"]
        [publish] = activation.tool_calls
        assert [(f.kind, f.tool_call_id, f.detail["surface"]) for f in security.findings] == [
            ("secret", publish.tool_call_id, "tool arguments")
        ], source
        assert FAKE_TOKEN in json.dumps(publish.arguments)
        assert FAKE_TOKEN not in json.dumps(security.to_dict())  # redacted in the verdict


def test_with_tool_content_on_the_printed_secret_is_found(loaded: Loaded) -> None:
    [(activation, evaluations)] = loaded.scored("security", "claude_code")
    security = {e.evaluator: e for e in evaluations}["security"]
    secret_call = next(c for c in activation.tool_calls if "sk-live-" in (c.result or ""))
    assert ("secret", secret_call.tool_call_id) in [
        (f.kind, f.tool_call_id) for f in security.findings
    ]
    assert security.unseen == ()
    assert "their outputs" in security.reason and "not their outputs" not in security.reason


# --- masked skill names --------------------------------------------------------------------------


@pytest.mark.parametrize("masked", ["custom_skill", "third-party"])
def test_a_masked_skill_name_reads_as_the_real_one(loaded: Loaded, masked: str) -> None:
    """Some CLI versions mask the name in skill_activated; without OTEL_LOG_TOOL_DETAILS the
    Skill call carries no input either. The real name survives in api_request's skill.name."""
    name = "two_skills"
    project = f"{name}.masked-{masked}"
    for path in sorted((SCENARIOS / name / "claude_code").iterdir()):
        body = json.loads(path.read_bytes())
        for resource in body.get("resourceSpans", []):
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    span["attributes"] = [
                        a for a in span["attributes"] if a["key"] not in ("skill_name",)
                    ]
        for resource in body.get("resourceLogs", []):
            for scope in resource["scopeLogs"]:
                for record in scope["logRecords"]:
                    attributes = {a["key"]: a for a in record["attributes"]}
                    if attributes.get("skill.name") and "event.name" in attributes:
                        event = attributes["event.name"]["value"]["stringValue"]
                        if event == "skill_activated":
                            attributes["skill.name"]["value"] = {"stringValue": masked}
                    if attributes.get("tool_name", {}).get("value") == {"stringValue": "Skill"}:
                        for key in ("tool_input", "tool_parameters"):
                            attributes.pop(key, None)
                    record["attributes"] = list(attributes.values())
        insert(loaded.store, project, path, json.dumps(body).encode())
    rebuilt = rebuild_session(*loaded.rows(project), project_id=project)
    assert [(a.skill_name, a.trigger) for a in rebuilt.activations] == [
        ("csv-summary", "skill_tool"),
        ("unit-price", "skill_tool"),
    ]
    events = (rebuilt.trajectory.extra or {}).get("skill_events", [])
    assert events == []  # both events were tied to their Skill calls, none left loose


# --- per source: what arrives without content ----------------------------------------------------


def test_each_source_reports_what_its_sessions_arrive_without(loaded: Loaded) -> None:
    visibility = Visibility()
    for name in NAMES:
        for source in (*NATIVE, "openinference"):
            visibility.observe(f"{name}.{source}", loaded.rebuilt(name, source).trajectory)
    report = visibility.to_json()
    native: Any = report["claude_code"]
    # every scenario, three variants each
    assert native["sessions"] == 3 * len(NAMES)
    assert native["without_tool_output"] == len(NAMES)  # those with tool content off
    assert native["without_request_id"] == len(NAMES)
    assert (native["without_prompts"], native["without_tool_input"]) == (0, 0)
    assert native["without_workspace"] == 0  # reported through OTEL_RESOURCE_ATTRIBUTES
    assert native["advice"] == [GAPS["tool_output"], GAPS["request_id"]]
    assert "OTEL_LOG_TOOL_CONTENT=1" in native["advice"][0]
    oi: Any = report["openinference"]
    assert (oi["sessions"], oi["without_tool_output"], oi["without_request_id"]) == (
        len(NAMES),
        0,
        0,
    )
    # the SDK instrumentor reports no working directory (evaluators infer it from the skill
    # folder Claude Code announces in the Skill result)
    assert oi["without_workspace"] == len(NAMES)


def test_sessions_whose_log_records_never_came_are_told_apart(loaded: Loaded) -> None:
    """Spans without any log record (the logs exporter off, or Claude Code exiting before its
    last export left: it allows 2 s) are one gap, not advice to turn on prompt and tool-detail
    logging that may well be on."""
    visibility = Visibility()
    for name in NAMES:
        spans, _ = loaded.rows(f"{name}.claude_code")
        visibility.observe(name, rebuild_session(spans, [], project_id=name).trajectory)
    native: Any = visibility.to_json()["claude_code"]
    assert native["sessions"] == native["without_logs"] == len(NAMES)
    assert (native["without_prompts"], native["without_tool_input"]) == (0, 0)
    assert native["advice"][0] == GAPS["logs"]
    assert not any("OTEL_LOG_USER_PROMPTS" in a or "TOOL_DETAILS" in a for a in native["advice"])
