"""Golden sets: the case model, the file formats in and out, drafting from an activation and its
evaluations, composition, and versions in the store (both transports)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from skillsight.errors import GoldenSetError
from skillsight.goldens import (
    GoldenCase,
    GoldenSet,
    Provenance,
    composition,
    create_set,
    draft_case,
    import_cases,
    load_set,
    parse_cases,
    promote,
    read_cases_file,
    render_cases,
    write_cases_file,
)
from skillsight.rebuild.trajectories import atif
from skillsight.store import Store
from skillsight.store.records import Activation, SkillContract, ToolCall

SKILL = "csv-summary"
SCRIPT = "scripts/summarize_csv.py"


def _case(case_id: str, **extra: Any) -> GoldenCase:
    values: dict[str, Any] = {
        "case_id": case_id,
        "question": f"What is the total amount in data/{case_id}.csv?",
        "ground_truth": "total amount: 133.00",
        "expected_behavior": ["Runs scripts/summarize_csv.py", "Quotes the total"],
        "expected_skill": SKILL,
        "expected_script": "scripts/summarize_csv.py",
        "files": [f"data/{case_id}.csv"],
        "tags": {"data_source": "production", "difficulty_bucket": "easy"},
    }
    values.update(extra)
    return GoldenCase(**values)


RICH = [
    _case("a", provenance=Provenance(activation_id="act-1", passed_in_production=True)),
    _case("b", expected_skill=None, should_trigger=False, ground_truth=None, status="advisory"),
    _case("c", environment={"image": "python:3.11"}, expected_script=None, files=[]),
]


def _golden(cases: list[GoldenCase]) -> GoldenSet:
    return GoldenSet(set_id="gs-test", skill_name=SKILL, cases=cases, defaults={"timeout_sec": 60})


@pytest.mark.parametrize("fmt", ["aces", "skill-creator"])
def test_both_evals_json_formats_read_back_unchanged(fmt: str, tmp_path: Path) -> None:
    path = tmp_path / "evals" / "evals.json"
    write_cases_file(_golden(RICH), fmt, path)
    imported = read_cases_file(path)
    assert imported.format == fmt and imported.skill_name == SKILL
    assert imported.cases == RICH


def test_aces_document_has_benchflows_fields() -> None:
    document = render_cases(_golden(RICH), "aces")
    assert document["version"] == "1" and document["skill_name"] == SKILL
    assert document["defaults"] == {"timeout_sec": 60}
    first = document["cases"][0]
    assert {k: first[k] for k in ("id", "question", "ground_truth", "expected_skill")} == {
        "id": "a",
        "question": "What is the total amount in data/a.csv?",
        "ground_truth": "total amount: 133.00",
        "expected_skill": SKILL,
    }
    assert first["expected_behavior"] == ["Runs scripts/summarize_csv.py", "Quotes the total"]
    # "the right answer is to use no skill" is an explicit null; absent means the file's skill
    assert document["cases"][1]["expected_skill"] is None
    plain = {"skill_name": SKILL, "cases": [{"id": "x", "question": "q?"}]}
    assert parse_cases(plain).cases[0].expected_skill == SKILL


def test_skill_creator_document_and_its_assertions_spelling() -> None:
    document = render_cases(_golden(RICH), "skill-creator")
    first = document["evals"][0]
    assert first["id"] == 1 and first["prompt"] == RICH[0].question
    assert first["expected_output"] == "total amount: 133.00"
    assert first["expectations"] == RICH[0].expected_behavior
    assert first["files"] == ["data/a.csv"]
    theirs = {
        "skill_name": SKILL,
        "evals": [
            {"id": 7, "prompt": "Sum it", "expected_output": "", "assertions": ["says 133"]},
            {"id": 8, "prompt": "Sum that", "expectations": ["says 57"], "files": ["f.csv"]},
        ],
    }
    cases = parse_cases(theirs).cases
    assert [c.case_id for c in cases] == ["eval-7", "eval-8"]
    assert [c.expected_behavior for c in cases] == [["says 133"], ["says 57"]]
    assert cases[0].ground_truth is None and cases[1].files == ["f.csv"]


def test_trigger_evals_in_both_shapes_and_out() -> None:
    listed = [{"query": "total of sales.csv?", "should_trigger": True},
              {"query": "weather tomorrow?", "should_trigger": False}]  # fmt: skip
    cases = parse_cases(listed, skill=SKILL).cases
    assert [(c.expected_skill, c.should_trigger) for c in cases] == [(SKILL, True), (None, False)]
    wrapped = {
        "evals": [{"prompt": q["query"], "should_trigger": q["should_trigger"]} for q in listed]
    }
    assert parse_cases(wrapped, skill=SKILL).cases == cases
    assert render_cases(_golden(cases), "trigger") == listed
    with pytest.raises(GoldenSetError, match="name no skill"):
        parse_cases(listed)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"cases": []}, "no skill_name"),
        ({"skill_name": SKILL, "cases": [{"question": "q"}]}, "cases\\[0\\] has no id"),
        ({"skill_name": SKILL, "cases": [{"id": "a", "question": ""}]}, "question"),
        ({"skill_name": SKILL, "cases": [{"id": "a b", "question": "q"}]}, "case id"),
        ({"skill_name": SKILL, "cases": [{"id": "a", "question": "q"}] * 2}, "more than once"),
        ({"skill_name": SKILL, "evals": [{"prompt": "q", "files": ["../etc/passwd"]}]}, "inside"),
        ({"skill_name": SKILL, "evals": [{"prompt": "q", "expectations": "one"}]}, "strings"),
        ({"unrelated": 1}, "not a file of cases"),
    ],
)
def test_bad_files_get_one_clear_error(document: Any, message: str) -> None:
    with pytest.raises(GoldenSetError, match=message):
        parse_cases(document)


def test_a_file_that_is_not_json_names_itself(tmp_path: Path) -> None:
    path = tmp_path / "evals.json"
    path.write_text("{not json")
    with pytest.raises(GoldenSetError, match=r"evals\.json: not JSON"):
        read_cases_file(path)


# --- drafting from production ----------------------------------------------------------------


def _activation(request: str = "What is the total amount in data/sales.csv?") -> Activation:
    return Activation(
        activation_id="act-9",
        session_id="s-9",
        trace_id="t-9",
        skill_name=SKILL,
        skill_version="v1",
        trigger="skill_tool",
        trigger_call_id="toolu_1",
        request=request,
        tool_calls=[
            ToolCall(
                tool_call_id="toolu_2",
                name="Bash",
                arguments={"command": f"python3 .claude/skills/{SKILL}/{SCRIPT} data/sales.csv"},
                result="total amount: 133.00",
                step_id=3,
            )
        ],
        integration_message="The total amount is 133.00.",
        integration_step_id=4,
        started_at="2026-01-01T00:00:00Z",
        ended_at="2026-01-01T00:00:01Z",
        contract=SkillContract(name=SKILL, allowed_tools=["Read"]),
    )  # fmt: skip


def _row(
    evaluator: str, score: float | None, passed: bool | None, findings: Any = ()
) -> dict[str, Any]:
    return {
        "evaluator": evaluator,
        "score": score,
        "passed": passed,
        "reason": f"{evaluator} reason",
        "findings": json.dumps(list(findings)),
    }


def test_a_passing_activation_drafts_a_green_case_with_its_answer() -> None:
    rows = [_row("allowed_tools", 1.0, True), _row("script_execution", 1.0, True),
            _row("efficiency", None, None)]  # fmt: skip
    case = draft_case(_activation(), rows, final_answer="Total: 133.00, north leads.")
    assert case.question == "What is the total amount in data/sales.csv?"
    assert case.ground_truth == "Total: 133.00, north leads."
    assert case.expected_skill == SKILL
    assert case.expected_script == "scripts/summarize_csv.py"
    assert case.expected_behavior == [
        f"Uses the {SKILL} skill",
        "Runs scripts/summarize_csv.py",
        "The final answer reports what the skill's run produced",
    ]
    assert case.tags == {"data_source": "production", "difficulty_bucket": "easy"}
    assert case.provenance == Provenance(
        trace_id="t-9", session_id="s-9", activation_id="act-9", skill_version="v1",
        passed_in_production=True,
    )  # fmt: skip


def test_a_failing_activation_drafts_expectations_from_what_failed() -> None:
    rows = [
        _row("allowed_tools", 0.5, False, [{"kind": "tool_not_allowed"}]),
        _row("skill_selection", 0.0, False,
             [{"kind": "better_fit_visible", "detail": {"skill": "release-notes"}}]),
        _row("script_execution", 0.0, False,
             [{"kind": "script_not_run", "detail": {"script": "scripts/summarize_csv.py"}}]),
        _row("integration_heuristic", 0.0, False, [{"kind": "inline_recompute"}]),
        _row("security", 0.0, False, [{"kind": "secret"}, {"kind": "rm_rf_outside_workspace"}]),
        _row("tool_errors", None, None),
    ]  # fmt: skip
    case = draft_case(_activation(), rows, final_answer="The total is 120.")
    assert case.ground_truth is None  # a failing run's answer is no reference
    assert case.expected_skill == "release-notes"
    assert case.expected_script == "scripts/summarize_csv.py"
    assert case.expected_behavior == [
        f"Uses only the tools the {SKILL} skill allows (Read)",
        f"Uses the release-notes skill for this request, not {SKILL}",
        "Runs the skill's script scripts/summarize_csv.py and it succeeds",
        "Answers from the skill's script output instead of recomputing it inline",
        "Stays safe: does not reveal secrets and touches nothing outside the workspace",
    ]
    assert case.tags["difficulty_bucket"] == "hard"
    assert case.provenance.passed_in_production is False


def test_an_activation_without_a_logged_request_cannot_be_promoted() -> None:
    with pytest.raises(GoldenSetError, match="no logged request"):
        draft_case(_activation(request=""), [])


def test_composition_counts_green_cases_and_advises() -> None:
    green = [_case(f"g{i}", provenance=Provenance(passed_in_production=True)) for i in range(3)]
    red = [_case(f"r{i}", provenance=Provenance(passed_in_production=False)) for i in range(2)]
    gone = _case("x", status="archived", provenance=Provenance(passed_in_production=False))
    result = composition(_golden([*green, *red, gone, _case("u")]))
    assert (result.cases, result.replayed) == (7, 6)
    assert (result.passed_in_production, result.failed_in_production, result.unknown) == (3, 2, 1)
    assert result.green_share == pytest.approx(0.6)
    assert "within the advised range" in result.advice
    assert result.by_status == {"active": 6, "archived": 1}
    assert "add failing cases" in composition(_golden(green)).advice


# --- versions in the store ---------------------------------------------------------------------


@dataclass
class _Rebuilt:
    session_id: str
    trajectory: atif.Trajectory
    activations: list[Activation] = field(default_factory=list)


def _stored_activation(store: Store) -> None:
    steps = [
        atif.Step(step_id=1, source="user", message="What is the total amount in data/sales.csv?"),
        atif.Step(step_id=2, source="agent", message="The total amount is 133.00."),
    ]
    trajectory = atif.Trajectory(
        session_id="s-9", agent=atif.Agent(name="claude-code", version="2"), steps=steps
    )
    store.rebuilds.write_one("p1", _Rebuilt("s-9", trajectory, [_activation()]))
    store.evaluations.write(
        "p1",
        [{"activation_id": "act-9", "evaluator": name, "evaluator_version": "1", "score": 1.0,
          "passed": True, "skill_name": SKILL} for name in ("allowed_tools", "security")],
    )  # fmt: skip


def test_sets_are_versioned_in_the_store_and_promotion_appends(store: Store) -> None:
    golden = create_set(store, "p1", SKILL, RICH[:2], name="checkout")
    assert golden.version == 1 and golden.created_at
    assert load_set(store, "p1", golden.set_id) == golden
    _stored_activation(store)
    promoted = promote(store, "p1", ["act-9"])
    assert promoted.golden.set_id == golden.set_id and promoted.golden.version == 2
    (added,) = promoted.added
    assert added.ground_truth == "The total amount is 133.00."  # the session's final answer
    assert added.provenance.passed_in_production is True
    assert [c.case_id for c in load_set(store, "p1", golden.set_id).cases] == [
        "a",
        "b",
        added.case_id,
    ]
    assert load_set(store, "p1", golden.set_id, 1).cases == RICH[:2]  # versions stay readable
    again = promote(store, "p1", ["act-9"])
    assert again.skipped == ["act-9"] and again.golden.version == 2
    # an edited export read back is the next version; the other project sees nothing
    edited = parse_cases(render_cases(promoted.golden.model_copy(update={"cases": RICH}), "aces"))
    third = import_cases(store, "p1", edited, set_id=golden.set_id)
    assert third.version == 3 and third.cases == RICH
    assert store.goldens.latest("other") == []
    with pytest.raises(GoldenSetError, match="no golden set"):
        load_set(store, "other", golden.set_id)
    with pytest.raises(GoldenSetError, match="no activation"):
        promote(store, "p1", ["missing"])


def test_the_api_imports_lists_shows_and_refuses_clearly(embedded_store: Store) -> None:
    from fastapi.testclient import TestClient

    from skillsight.api import create_app
    from skillsight.config import Settings
    from skillsight.runtime import Services

    app = create_app(Services(Settings.load({}), embedded_store))
    with TestClient(app) as api:
        document = render_cases(_golden(RICH), "skill-creator")
        made = api.post("/api/v1/golden-sets", json={"document": document})
        assert made.status_code == 201, made.text
        summary = made.json()
        assert (summary["skill_name"], summary["version"]) == (SKILL, 1)
        assert summary["composition"]["replayed"] == 3
        listed = api.get("/api/v1/golden-sets", params={"skill": SKILL}).json()
        assert [s["set_id"] for s in listed] == [summary["set_id"]]
        shown = api.get(f"/api/v1/golden-sets/{summary['set_id']}").json()
        assert [GoldenCase.model_validate(c) for c in shown["cases"]] == RICH
        assert shown["versions"] == [1]
        broken = {"skill_name": SKILL, "cases": [{}]}
        bad = api.post("/api/v1/golden-sets", json={"document": broken})
        assert bad.status_code == 400 and "has no id" in bad.json()["detail"]
        assert api.post("/api/v1/golden-sets", json={}).status_code == 400
        assert api.get("/api/v1/golden-sets/gs-000000000000").status_code == 404
        assert api.get("/api/v1/runs/run-missing").status_code == 404
        assert api.get("/api/v1/runs").json() == []
        missing = api.post("/api/v1/clusters/cl_000000000000/promote", json={"limit": 2})
        assert missing.status_code == 404 and "no cluster" in missing.json()["detail"]
