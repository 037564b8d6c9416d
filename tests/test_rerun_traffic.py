"""Rerun traffic is stored and scored, and left out of production read models.

A paired rerun's agents export through the collector like live traffic, tagged with
``skillsight.rerun.*`` resource attributes. The rebuild files each activation of such a session
under its run (``rerun_id``, migration 0017); scorecards and the gate, the skills list, cost
lines, the efficiency evaluator's production baseline and failure clustering read production
activations only, while the session and activation pages still show rerun ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from skillsight.api.ui._render import _environment
from skillsight.api.ui._timeline import timeline
from skillsight.clustering import Thresholds
from skillsight.clustering._collect import failing_now
from skillsight.evaluators import Evaluation, deterministic_registry
from skillsight.evaluators.scheduler import ContextAssembler, Policy, score_activations
from skillsight.rebuild.finalizer import default_rebuild, rebuild_sessions
from skillsight.reports import ActivationDetailOut
from skillsight.reruns import production_baseline
from skillsight.store import EmbeddedStore, SessionRebuild, Store, stamp_iso
from skillsight.store.records import Activation, Tokens, ToolCall, iso
from tests.test_reruns_telemetry import store_tagged_capture


def stored_sessions(store: EmbeddedStore) -> list[dict[str, str]]:
    return store.query("SELECT DISTINCT session_id FROM activations")


def test_a_tagged_session_is_rebuilt_as_its_runs(embedded_store: EmbeddedStore) -> None:
    store_tagged_capture(embedded_store)
    rebuild_sessions(embedded_store, embedded_store.sessions.touched(0), rebuild=default_rebuild())
    stored = embedded_store.query("SELECT rerun_id, record FROM activations")
    assert stored and {r["rerun_id"] for r in stored} == {"run-1"}
    assert {json.loads(r["record"])["rerun_id"] for r in stored} == {"run-1"}
    (found,) = embedded_store.activations.find("default", limit=1)
    assert found.rerun_id == "run-1"  # the activation pages still show it, marked
    (session,) = {r["session_id"] for r in stored_sessions(embedded_store)}
    atif = json.loads(embedded_store.trajectories.get("default", session) or "{}")
    assert atif["extra"]["rerun_id"] == "run-1"


# --- production read models over a store holding both kinds of traffic ------------------------

P = "p"
SKILL = "csv-summary"
START_US = 1_790_000_000_000_000  # 2026-09-21; every activation starts on this day or the next
SCORED = {"tool_errors": Policy(), "efficiency": Policy()}


class _Doc(BaseModel):
    steps: list[int] = []


@dataclass(frozen=True)
class _Rebuilt:
    session_id: str
    trajectory: BaseModel
    activations: list[Activation] = field(default_factory=list)


def _activation(
    n: int, calls: int, errors: int = 0, *, rerun: str = "", skill: str = SKILL
) -> Activation:
    who = rerun or "prod"
    start = iso((START_US + n * 3_600_000_000) * 1000)
    return Activation(
        activation_id=f"{who}-{n:04d}",
        project_id=P,
        session_id=f"{who}-session-{n}",
        trace_id=f"{who}-trace-{n}",
        skill_name=skill,
        skill_version="v2" if rerun else "v1",
        trigger="skill_tool",
        trigger_call_id=f"{who}-load-{n}",
        started_at=start,
        ended_at=start,
        duration_ms=1000.0 * calls,
        tokens=Tokens(input=100 * calls, output=10 * calls),
        cost_usd=0.01 * calls,
        tool_calls=[
            ToolCall(
                tool_call_id=f"{who}-{n}-{k}",
                name="Bash",
                arguments={"command": "python3 scripts/summary.py data.csv"},
                result="Traceback: boom" if k < errors else "total 42",
                is_error=k < errors,
                step_id=k + 2,
            )
            for k in range(calls)
        ],
        rerun_id=rerun,
    )


def _store_and_score(
    store: Store, assembler: ContextAssembler, activations: list[Activation], at_us: int
) -> list[Evaluation]:
    """Rebuild each activation's session, then score them as the online scheduler does."""
    stamps = store.rebuilds.write(
        [SessionRebuild(P, _Rebuilt(a.session_id, _Doc(), [a])) for a in activations]
    )
    stored = [
        a.model_copy(update={"rebuilt_at": stamp_iso(stamp)})
        for a, stamp in zip(activations, stamps, strict=True)
    ]
    scored = score_activations(stored, assembler, registry=deterministic_registry(), chosen=SCORED)
    store.evaluations.write_columns(P, scored.columns(at_us))
    store.scorecards.rollups.refresh_dirty()
    return scored.evaluations


def _production_views(store: Store) -> dict[str, Any]:
    """What every production read model answers for the project."""
    cards = store.scorecards
    probe = _activation(9_999, 3)
    return {
        "scorecard": cards.rows(P, SKILL),
        "scorecard_raw": cards.raw_rows(P, SKILL),
        "gate": cards.below(P, SKILL, 1.0),
        "gate_raw": cards.raw_below(P, SKILL, 1.0),
        "skills": cards.overview(P),
        "skills_raw": cards.overview(P, read_models=False),
        "usage": cards.usage(P, SKILL),
        "failing": store.failures.failing(P, 0),
        "baseline": production_baseline(store, P, SKILL).get(SKILL),
        "seeded": ContextAssembler(store).context(probe).baseline,
    }


def test_rerun_traffic_is_scored_and_never_counts_in_production(store: Store) -> None:
    assembler = ContextAssembler(store)
    production = [_activation(n, 2 + n % 3, errors=int(n == 7)) for n in range(8)]
    _store_and_score(store, assembler, production, START_US)
    before = _production_views(store)
    assert before["failing"] and before["baseline"] is not None  # something to pollute
    online = assembler.context(_activation(9_999, 3)).baseline
    assert online == before["baseline"]

    # a rerun of the same skill on the same days: a new version, long and failing, and a
    # skill that only the rerun ran
    reruns = [_activation(n, 20, errors=20, rerun="run-1") for n in range(6)]
    reruns.append(_activation(6, 4, errors=4, rerun="run-1", skill="rerun-only"))
    evaluations = _store_and_score(store, assembler, reruns, START_US + 10**9)

    # stored and scored: the efficiency evaluator compared them with the production baseline
    efficiency = {e.activation_id: e for e in evaluations if e.evaluator == "efficiency"}
    assert efficiency.keys() >= {a.activation_id for a in reruns[:6]}
    assert all(efficiency[a.activation_id].passed is False for a in reruns[:6])
    assert all(e.passed is False for e in evaluations if e.evaluator == "tool_errors")
    for rerun in reruns:
        (found,) = store.activations.find(P, session_id=rerun.session_id)
        assert found.rerun_id == "run-1"
        assert {e["evaluator"] for e in store.evaluations.for_activation(P, found.activation_id)}
    assert len(store.activations.find(P, limit=100)) == len(production) + len(reruns)
    assert len(store.activations.find(P, limit=100, production=True)) == len(production)

    # ... and every production read model answers as before they ran
    after = _production_views(store)
    assert after == before
    assert assembler.context(_activation(9_999, 3)).baseline == online
    ids = [a.activation_id for a in reruns]
    assert failing_now(store, P, 0, Thresholds(), ids) == {}  # online failure assignment


def test_the_activation_pages_name_and_link_its_run() -> None:
    record = _activation(1, 2, rerun="run-1").model_dump()
    page = _environment().get_template("activation.html")
    detail = ActivationDetailOut(**record)
    html = page.render(a=detail, tl=timeline(detail), title="", nav="", keys_in_use=False)
    assert '<dt>Paired rerun</dt><dd><a href="/runs/run-1">run-1</a>' in html
    production = ActivationDetailOut(**{**record, "rerun_id": ""})
    html = page.render(a=production, tl=timeline(production), title="", nav="", keys_in_use=False)
    assert "Paired rerun" not in html
    listing = _environment().get_template("activations.html")
    context = {"skill": "", "session": "", "window": "7d", "page": 1, "more": False}
    html = listing.render(rows=[detail, production], title="", nav="", keys_in_use=False, **context)
    assert html.count(">rerun</a>") == 1 and 'href="/runs/run-1"' in html
