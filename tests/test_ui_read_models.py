"""The read models the web UI browses by (``skillsight.reports``): the skills overview, a skill's
per-version trends, pages of a session's ATIF steps and paged activation lists, on both store
transports, checked against the rows written."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from skillsight.rebuild.trajectories import atif
from skillsight.reports import scorecard, session_steps, skill_page, skills_overview
from skillsight.store import Store
from skillsight.store.records import Activation, Tokens, ToolCall


@dataclass
class Rebuilt:
    session_id: str
    trajectory: atif.Trajectory
    activations: list[Activation] = field(default_factory=list)


def _trajectory(session_id: str, steps: int, subagent_steps: int = 0) -> atif.Trajectory:
    subagents = (
        [
            atif.Trajectory(
                session_id=session_id,
                trajectory_id="sub-1",
                agent=atif.Agent(name="general-purpose", version="1"),
                steps=[
                    atif.Step(step_id=i + 1, source="agent", message=f"sub {i + 1}")
                    for i in range(subagent_steps)
                ],
            )
        ]
        if subagent_steps
        else None
    )
    return atif.Trajectory(
        session_id=session_id,
        trajectory_id=f"main-{session_id}",
        agent=atif.Agent(name="claude-code", version="2.1.330"),
        steps=[
            atif.Step(step_id=i + 1, source="user" if i == 0 else "agent", message=f"step {i + 1}")
            for i in range(steps)
        ],
        subagent_trajectories=subagents,
    )


def _activation(session: str, skill: str, version: str, started: str, cost: float) -> Activation:
    return Activation(
        activation_id=f"{session}-{skill}",
        session_id=session,
        trace_id="4bf92f3577b34da6a3ce929d0e0e4736",
        skill_name=skill,
        skill_version=version,
        trigger="skill_tool",
        trigger_call_id=f"toolu_{session}",
        started_at=started,
        ended_at=started,
        duration_ms=1000.0,
        tool_calls=[
            ToolCall(tool_call_id=f"toolu_{session}_b", name="Bash", arguments={}, step_id=2)
        ],
        tokens=Tokens(input=100, output=20),
        cost_usd=cost,
    )


def _evaluation(activation: Activation, evaluator: str, score: float | None) -> dict[str, Any]:
    return {
        "activation_id": activation.activation_id,
        "evaluator": evaluator,
        "evaluator_version": "1",
        "skill_name": activation.skill_name,
        "skill_version": activation.skill_version,
        "score": score,
        "passed": None if score is None else score >= 1.0,
        "label": "not_applicable" if score is None else ("pass" if score >= 1.0 else "fail"),
        "reason": "",
        "evidence_step_ids": [],
        "evidence_tool_call_ids": [],
        "findings": "[]",
        "error": "",
        "judge_model": "",
        "tokens": 0,
        "cost_usd": 0.0,
        "latency_ms": 0.1,
        "evaluated_at_us": int(datetime.now(UTC).timestamp() * 1_000_000),
        "activation_rebuilt_at": "",
    }


def _fill(store: Store) -> list[Activation]:
    """csv-summary: v1 on day 1 (one pass, one fail), v2 on day 2 (one pass); pdf-fill once,
    unscored."""
    made = [
        _activation("s1", "csv-summary", "v1", "2026-11-20T10:00:00Z", 0.01),
        _activation("s2", "csv-summary", "v1", "2026-11-20T11:00:00Z", 0.03),
        _activation("s3", "csv-summary", "v2", "2026-11-21T10:00:00Z", 0.02),
        _activation("s4", "pdf-fill", "", "2026-11-21T12:00:00Z", 0.0),
    ]
    for activation in made:
        store.rebuilds.write_one(
            "p", Rebuilt(activation.session_id, _trajectory("x", 2), [activation])
        )
    scores = {"s1": (1.0, None), "s2": (0.0, 1.0), "s3": (1.0, 1.0)}
    rows = []
    for activation in made[:3]:
        allowed, security = scores[activation.session_id]
        rows.append(_evaluation(activation, "allowed_tools", allowed))
        rows.append(_evaluation(activation, "security", security))
    store.evaluations.write("p", rows)
    return made


def test_the_skills_overview_counts_activations_failures_and_unscored_ones(store: Store) -> None:
    _fill(store)
    overview = {s.name: s for s in skills_overview(store, "p", window="all")}
    assert list(overview) == ["csv-summary", "pdf-fill"]
    csv = overview["csv-summary"]
    assert (csv.activations, csv.failing, csv.unscored) == (3, 1, 0)
    assert [(d.day, d.activations, d.failing) for d in csv.days] == [
        ("2026-11-20", 2, 1),
        ("2026-11-21", 1, 0),
    ]
    by_name = {e.evaluator: e for e in csv.evaluators}
    assert (by_name["allowed_tools"].scored, by_name["allowed_tools"].passed) == (3, 2)
    # a not-applicable evaluation is neither a pass nor a failure
    assert (by_name["security"].scored, by_name["security"].pass_rate) == (2, 1.0)
    pdf = overview["pdf-fill"]
    assert (pdf.activations, pdf.failing, pdf.unscored, pdf.evaluators) == (1, 0, 1, [])
    assert [s.name for s in skills_overview(store, "p", window="all", name="PDF")] == ["pdf-fill"]
    assert skills_overview(store, "other", window="all") == []


def test_the_skills_overview_reads_the_same_from_the_read_models(store: Store) -> None:
    made = _fill(store)
    store.rebuilds.write_one("p", Rebuilt("s1", _trajectory("x", 3), [made[0]]))
    rollups = store.scorecards.rollups
    if not rollups.ready():
        rollups.backfill()
    raw = skills_overview(store, "p", window="all", read_models=False)
    assert skills_overview(store, "p", window="all", read_models=True) == raw
    assert [(s.activations, s.failing, s.unscored) for s in raw] == [(3, 1, 0), (1, 0, 1)]


def test_the_skill_page_trends_add_up_to_the_scorecard(store: Store) -> None:
    made = _fill(store)
    # a session rebuilt again (late rows): its activation is counted once, at its newest rebuild
    store.rebuilds.write_one("p", Rebuilt("s1", _trajectory("x", 3), [made[0]]))
    page = skill_page(store, "p", "csv-summary", window="all")
    assert page.scorecard == scorecard(store, "p", "csv-summary", window="all")
    lines = {(p.evaluator, p.version, p.day): p for p in page.version_trend}
    assert sorted(lines) == [
        ("allowed_tools", "v1", "2026-11-20"),
        ("allowed_tools", "v2", "2026-11-21"),
        ("security", "v1", "2026-11-20"),
        ("security", "v2", "2026-11-21"),
    ]
    assert lines["allowed_tools", "v1", "2026-11-20"].pass_rate == 0.5
    assert lines["allowed_tools", "v1", "2026-11-20"].mean_score == 0.5
    assert (
        lines["security", "v1", "2026-11-20"].scored,
        lines["security", "v1", "2026-11-20"].activations,
    ) == (1, 2)
    usage = {(u.version, u.day): u for u in page.usage}
    assert usage["v1", "2026-11-20"].activations == 2
    assert abs(usage["v1", "2026-11-20"].cost_usd - 0.02) < 1e-9
    assert usage["v1", "2026-11-20"].tokens == 120
    assert usage["v2", "2026-11-21"].tool_calls == 1


def test_session_steps_are_paged_inside_the_store(store: Store) -> None:
    store.rebuilds.write_one("p", Rebuilt("long", _trajectory("long", 10_000, subagent_steps=3)))
    page = session_steps(store, "p", "long", offset=9_990, limit=100)
    assert page is not None
    assert page.total_steps == 10_000
    assert [s["step_id"] for s in page.steps] == list(range(9_991, 10_001))
    assert page.trajectory_id == "main-long"
    assert page.subagents == [("sub-1", 3)]
    assert page.agent["name"] == "claude-code"
    sub = session_steps(store, "p", "long", trajectory_id="sub-1")
    assert sub is not None
    assert (sub.total_steps, [s["message"] for s in sub.steps]) == (3, ["sub 1", "sub 2", "sub 3"])
    assert session_steps(store, "p", "never") is None
    assert session_steps(store, "other", "long") is None


def test_activation_lists_page_with_an_offset(store: Store) -> None:
    made = _fill(store)
    newest_first = [a.activation_id for a in sorted(made, key=lambda a: a.started_at, reverse=True)]
    first = store.activations.find("p", limit=2)
    second = store.activations.find("p", limit=2, offset=2)
    assert [a.activation_id for a in first + second] == newest_first
