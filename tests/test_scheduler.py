"""The evaluation scheduler on a real store (chdb): hash sampling, filters, partitions between
workers, idempotent rescoring, retries when the store refuses a write, context assembly.

The activations are what the finalizer rebuilt from real Claude Code's export of the
``one_skill`` scenario, copied under many ids. ``skill_selection`` is left out where it adds
nothing (it loads the embedding model; the end-to-end tests run it)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from demo.scenario_library import build_scenario
from skillsight.config import Settings
from skillsight.errors import ConfigError, EvaluatorError
from skillsight.evaluators import DETERMINISTIC, Evaluation
from skillsight.evaluators._baseline import Baseline, stored_baseline
from skillsight.evaluators._context import EvaluationContext
from skillsight.evaluators._evaluator import Evaluator
from skillsight.evaluators._registry import Registry
from skillsight.evaluators._skill_selection import restored_catalogue
from skillsight.evaluators.scheduler import (
    ContextAssembler,
    EvaluationScheduler,
    Policy,
    RebuiltSessionPoller,
    backfill,
    parse_rates,
    partition_of,
    sample_point,
)
from skillsight.rebuild.finalizer import ActivationsReady, default_rebuild, rebuild_sessions
from skillsight.rebuild.session import Rebuilt, rebuild_session
from skillsight.reports import EvaluationOut, scorecard, with_evaluations
from skillsight.runtime import build_scheduler
from skillsight.skills import load_skill
from skillsight.store import EmbeddedStore, ServerStore, Store
from skillsight.store.records import Activation, VisibleSkill
from tests.harness.scenario_captures import CAPTURES
from tests.test_activations import load

CHEAP = ["allowed_tools", "script_execution", "tool_errors", "security"]
PROJECT = "default"


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Rebuilt:
    """The recorded one_skill session, rebuilt through a real store."""
    store = EmbeddedStore(tmp_path_factory.mktemp("recorded") / "store")
    store.migrate()
    try:
        load(store, CAPTURES / "one_skill" / "claude_code")
        spans = store.spans.find(PROJECT, limit=100_000)
        events = store.events.find(PROJECT, limit=100_000)
    finally:
        store.close()
    return rebuild_session(spans, events)


@pytest.fixture(scope="module")
def recorded(session: Rebuilt) -> Activation:
    """Its one activation."""
    (activation,) = session.activations
    return activation


def copies(activation: Activation, count: int) -> list[Activation]:
    return [
        activation.model_copy(update={"activation_id": f"{i:032x}"}) for i in range(1, count + 1)
    ]


def rebuilt_again(activation: Activation) -> Activation:
    """The activation as a later rebuild finds it when late rows changed something its verdicts
    do not rest on (its cost): scored again, unlike one found unchanged."""
    return activation.model_copy(
        update={"rebuilt_at": "2099-01-01T00:00:00.000000Z", "cost_usd": activation.cost_usd + 1}
    )


def ready(activations: list[Activation]) -> ActivationsReady:
    return ActivationsReady(PROJECT, "session-1", tuple(activations), 1)


def stored(store: Store, activations: list[Activation]) -> dict[str, list[str]]:
    """Evaluators with a current row, per activation id."""
    rows = store.evaluations.of(PROJECT, [a.activation_id for a in activations])
    return {key: [r["evaluator"] for r in found] for key, found in rows.items()}


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


# -- sampling and partitions: pure functions of the ids ---------------------------------------


def test_sampling_points_are_fixed_per_evaluator_and_activation() -> None:
    ids = [f"{i:032x}" for i in range(2000)]
    points = [sample_point("security", a) for a in ids]
    assert points == [sample_point("security", a) for a in ids]
    assert all(0.0 <= p < 1.0 for p in points)
    tenth = {a for a, p in zip(ids, points, strict=True) if p < 0.1}
    assert 150 <= len(tenth) <= 250  # a tenth of 2000, give or take what a hash gives
    other = {a for a in ids if sample_point("tool_errors", a) < 0.1}
    assert len(tenth & other) < 60  # salted per evaluator: not the same tenth


def test_partitions_cover_every_activation_once() -> None:
    ids = [f"{i:032x}" for i in range(3000)]
    shares = [{a for a in ids if partition_of(a, 3) == index} for index in range(3)]
    assert set().union(*shares) == set(ids)
    assert sum(len(s) for s in shares) == len(ids)
    assert all(800 <= len(s) <= 1200 for s in shares)
    assert {partition_of(a, 1) for a in ids} == {0}


def test_policies_filter_then_sample(recorded: Activation) -> None:
    assert Policy().selects("security", recorded)
    assert not Policy(skills=frozenset({"other-skill"})).selects("security", recorded)
    assert not Policy(agents=frozenset({"other-agent"})).selects("security", recorded)
    assert not Policy(projects=frozenset({"other-project"})).selects("security", recorded)
    assert Policy(skills=frozenset({recorded.skill_name})).selects("security", recorded)
    assert not Policy(0.0).selects("security", recorded)
    point = sample_point("security", recorded.activation_id)
    assert Policy(min(1.0, point + 1e-9)).selects("security", recorded)
    assert not Policy(point).selects("security", recorded)


def test_sampling_settings_are_checked(embedded_store: EmbeddedStore) -> None:
    names = ["security", "tool_errors"]
    assert parse_rates(" security=0.25, tool_errors=1 ", names) == {
        "security": 0.25,
        "tool_errors": 1.0,
    }
    for raw, message in (
        ("security", "not name=rate"),
        ("judge=0.5", "not name=rate with a known evaluator"),
        ("security=half", "is no number"),
        ("security=1.5", "must be in"),
    ):
        with pytest.raises(ConfigError, match=message):
            parse_rates(raw, names)
    with pytest.raises(ConfigError, match=r"eval_worker_index=2 must be in 0\.\.1"):
        Settings.load(env={"SKILLSIGHT_EVAL_WORKERS": "2", "SKILLSIGHT_EVAL_WORKER_INDEX": "2"})
    with pytest.raises(ConfigError, match="unknown evaluators"):
        build_scheduler(
            embedded_store,
            Settings.load(env={"SKILLSIGHT_EVAL_EVALUATORS": "security,judge"}),
        )


# -- the scheduler on a store ---------------------------------------------------------------


def test_only_sampled_pairs_are_scored_and_written(
    embedded_store: EmbeddedStore, recorded: Activation
) -> None:
    activations = copies(recorded, 40)

    async def go() -> EvaluationScheduler:
        async with EvaluationScheduler(
            embedded_store, evaluators=["allowed_tools", "security"], rates={"security": 0.5}
        ) as scheduler:
            await scheduler.submit(ready(activations))
        return scheduler  # leaving drained the queue

    scheduler = run(go())
    sampled = {
        a.activation_id for a in activations if sample_point("security", a.activation_id) < 0.5
    }
    assert 0 < len(sampled) < 40
    assert stored(embedded_store, activations) == {
        a.activation_id: ["allowed_tools", "security"]
        if a.activation_id in sampled
        else ["allowed_tools"]
        for a in activations
    }
    health = scheduler.health()
    assert {k: health[k] for k in ("sessions_received", "sessions_scored", "sampled_out")} == {
        "sessions_received": 1,
        "sessions_scored": 1,
        "sampled_out": 40 - len(sampled),
    }
    assert health["evaluations_written"] == 40 + len(sampled)
    assert health["idle"] is True


def test_two_workers_split_the_activations_exactly(
    embedded_store: EmbeddedStore, recorded: Activation
) -> None:
    activations = copies(recorded, 60)

    async def go() -> list[set[str]]:
        shares = []
        for index in range(2):
            async with EvaluationScheduler(
                embedded_store, evaluators=CHEAP, worker=(index, 2)
            ) as scheduler:
                scored = await scheduler.score(PROJECT, activations)
            shares.append({e.activation_id for e in scored})
            assert scheduler.stats.activations_other_workers == 60 - len(shares[-1])
        return shares

    first, second = run(go())
    assert first and second and not first & second
    assert first | second == {a.activation_id for a in activations}
    assert stored(embedded_store, activations) == {
        a.activation_id: sorted(CHEAP) for a in activations
    }


def test_rescoring_replaces_rows_and_never_duplicates(
    embedded_store: EmbeddedStore, recorded: Activation
) -> None:
    """A rebuild that changed an activation gets its rows replaced (one per evaluator, never
    two); one that found the same activation leaves its rows as they are: nothing is scored or
    written again (counted as ``unchanged``)."""
    activations = copies(recorded, 5)
    changed = [  # late rows added cost the four evaluators do not look at
        a.model_copy(update={"cost_usd": a.cost_usd + 1, "rebuilt_at": "2099-01-01T00:00:00Z"})
        for a in activations
    ]
    same = [a.model_copy(update={"rebuilt_at": "2099-01-02T00:00:00Z"}) for a in changed]
    ids = [a.activation_id for a in activations]

    async def score_three_times() -> EvaluationScheduler:
        async with EvaluationScheduler(embedded_store, evaluators=CHEAP) as scheduler:
            await scheduler.score(PROJECT, activations)
            first = embedded_store.evaluations.of(PROJECT, ids)
            await scheduler.score(PROJECT, changed)
            second = embedded_store.evaluations.of(PROJECT, ids)
            assert await scheduler.score(PROJECT, same) == []
            assert embedded_store.evaluations.of(PROJECT, ids) == second
        drop = (
            "evaluated_at_us",
            "latency_ms",
            "activation_rebuilt_at",
            "activation_digest",
            "inputs_hash",
        )
        for key in first:
            assert [r["evaluator"] for r in second[key]] == [r["evaluator"] for r in first[key]]
            assert [r["evaluated_at_us"] for r in second[key]] > [
                r["evaluated_at_us"] for r in first[key]
            ]
            assert [{k: v for k, v in r.items() if k not in drop} for r in second[key]] == [
                {k: v for k, v in r.items() if k not in drop} for r in first[key]
            ]
            digests = {r["activation_digest"] for r in second[key]}
            assert digests == {changed[ids.index(key)].content_digest()}
        return scheduler

    scheduler = run(score_three_times())
    assert scheduler.stats.unchanged == len(same) * len(CHEAP)
    assert stored(embedded_store, activations) == {
        a.activation_id: sorted(CHEAP) for a in activations
    }


class _Flaky(Evaluator):
    """Fails on its first call (an evaluator bug, a resource briefly missing), then scores 1."""

    name = "flaky"
    version = "1"
    summary = "a test evaluator that fails once"

    def __init__(self) -> None:
        self.calls = 0

    def _evaluate(self, activation: Activation, context: EvaluationContext) -> Evaluation:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("briefly broken")
        return self.result(activation, 1.0, "ok", "ok")


def test_an_evaluator_that_failed_scores_an_unchanged_activation_again(
    embedded_store: EmbeddedStore, recorded: Activation
) -> None:
    """An error is not a verdict: the activation handed over again unchanged is scored again
    (a verdict that stands is kept only for a row that holds one)."""
    flaky = _Flaky()

    async def twice() -> tuple[list[Evaluation], list[Evaluation], EvaluationScheduler]:
        async with EvaluationScheduler(embedded_store, registry=Registry([flaky])) as scheduler:
            first = await scheduler.score(PROJECT, [recorded])
            again = recorded.model_copy(update={"rebuilt_at": "2099-01-01T00:00:00.000000Z"})
            second = await scheduler.score(PROJECT, [again])
            third = await scheduler.score(PROJECT, [again])
            assert third == []  # now it stands
        return first, second, scheduler

    first, second, scheduler = run(twice())
    assert [e.label for e in first] == ["error"] and [e.label for e in second] == ["ok"]
    assert scheduler.stats.unchanged == 1


@pytest.mark.parametrize(
    ("table", "step"),
    [
        ("scorecard_rows", "writing evaluations"),
        ("evaluations", "reading the context"),  # the baselines of earlier scorings
        ("skills", "reading the context"),
    ],
)
def test_store_errors_are_retried_until_the_store_answers(
    embedded_store: EmbeddedStore, recorded: Activation, table: str, step: str
) -> None:
    """A table is renamed away, so the statements on it really fail, until it is back."""
    activations = copies(recorded, 3)
    embedded_store.execute(f"RENAME TABLE {table} TO {table}_parked")

    async def go() -> EvaluationScheduler:
        async with EvaluationScheduler(
            embedded_store, evaluators=CHEAP, retries=50, backoff_s=0.02, max_backoff_s=0.05
        ) as scheduler:
            await scheduler.submit(ready(activations))
            while scheduler.stats.store_retries < 2:
                await asyncio.sleep(0.01)
            await asyncio.to_thread(
                embedded_store.execute, f"RENAME TABLE {table}_parked TO {table}"
            )
        return scheduler

    scheduler = run(go())
    assert scheduler.stats.store_retries >= 2
    assert (scheduler.stats.store_failures, scheduler.stats.sessions_scored) == (0, 1)
    assert scheduler.stats.last_error.startswith(f"{step} failed")  # it stays visible
    assert table in scheduler.stats.last_error
    assert stored(embedded_store, activations) == {
        a.activation_id: sorted(CHEAP) for a in activations
    }


def test_a_session_whose_retries_run_out_is_counted_and_the_next_is_scored(
    embedded_store: EmbeddedStore, recorded: Activation
) -> None:
    lost, kept = copies(recorded, 2)
    embedded_store.execute("RENAME TABLE evaluations TO evaluations_parked")

    async def go() -> EvaluationScheduler:
        async with EvaluationScheduler(
            embedded_store, evaluators=CHEAP, retries=2, backoff_s=0.01, concurrency=1
        ) as scheduler:
            await scheduler.submit(ready([lost]))
            while scheduler.stats.store_failures < 1:
                await asyncio.sleep(0.01)
            await asyncio.to_thread(
                embedded_store.execute, "RENAME TABLE evaluations_parked TO evaluations"
            )
            await scheduler.submit(ready([kept]))
        return scheduler

    scheduler = run(go())
    assert (scheduler.stats.store_retries, scheduler.stats.store_failures) == (1, 1)
    assert scheduler.stats.sessions_scored == 1
    assert stored(embedded_store, [lost, kept]) == {
        lost.activation_id: [],
        kept.activation_id: sorted(CHEAP),
    }


# -- context assembly ------------------------------------------------------------------------


@pytest.fixture
def scanned(embedded_store: EmbeddedStore, tmp_path: Path) -> Iterator[EmbeddedStore]:
    """The one_skill scenario's project on disk, its skills recorded in the catalogue."""
    scenario = build_scenario("one_skill", tmp_path / "project")
    scenario.write()
    skills = sorted((tmp_path / "project" / ".claude" / "skills").iterdir())
    embedded_store.skills.insert(PROJECT, [load_skill(folder) for folder in skills])
    yield embedded_store


def test_context_has_the_catalogue_the_manifest_and_the_baseline(
    scanned: EmbeddedStore, recorded: Activation, tmp_path: Path
) -> None:
    skill = load_skill(tmp_path / "project" / ".claude" / "skills" / "csv-summary")
    assembler = ContextAssembler(scanned)
    context = assembler.context(recorded)
    assert context.catalogue == (VisibleSkill(name="csv-summary", description=skill.description),)
    assert context.manifest == skill
    assert context.baseline is None
    for activation in copies(recorded, 5) + copies(recorded, 5):  # each counted once
        assembler.observe(activation)
    baseline = assembler.context(recorded).baseline
    assert baseline is not None and baseline.samples == 5
    assert baseline.tool_calls == len(recorded.tool_calls)
    # a folder that changed since the activation ran is not the skill it ran
    changed = recorded.model_copy(update={"skill_version": "0" * 64})
    assert assembler.context(changed).manifest is None
    assert (
        assembler.context(recorded.model_copy(update={"skill_version": skill.version})).manifest
        == skill
    )


def test_a_skills_baseline_starts_from_its_stored_activations(
    embedded_store: EmbeddedStore, session: Rebuilt, recorded: Activation
) -> None:
    """What a restarted service already stored counts at once; the scored one never does."""
    earlier = copies(recorded, 6)
    stored_session = Rebuilt(session.session_id, session.trajectory, earlier)
    embedded_store.rebuilds.write_one(PROJECT, stored_session)
    baseline = ContextAssembler(embedded_store).context(earlier[0]).baseline
    assert baseline is not None and baseline.samples == 5  # the other five
    assert baseline.tool_calls == len(recorded.tool_calls)
    assert ContextAssembler(embedded_store, seed=False).context(earlier[0]).baseline is None

    async def score() -> list[Any]:
        async with EvaluationScheduler(embedded_store, evaluators=["efficiency"]) as scheduler:
            return await scheduler.score(PROJECT, earlier[:1])

    (efficiency,) = run(score())
    # every metric at the median: 0.5 each (docs/evaluators.md)
    assert (efficiency.evaluator, efficiency.score, efficiency.label) == (
        "efficiency",
        0.5,
        "efficient",
    )


def test_after_a_restart_a_rescored_activation_is_not_part_of_its_own_baseline(
    embedded_store: EmbeddedStore, session: Rebuilt, recorded: Activation
) -> None:
    """A restarted scheduler loads the skill's stored window, which holds the activations of a
    session now rebuilt and scored again: each is compared with the window without itself."""
    earlier = copies(recorded, 6)
    embedded_store.rebuilds.write_one(
        PROJECT, Rebuilt(session.session_id, session.trajectory, earlier)
    )
    assembler = ContextAssembler(embedded_store)  # a fresh process: nothing compared yet
    first = assembler.context(earlier[0]).baseline  # loads the other five
    assembler.observe(earlier[0])
    second = assembler.context(earlier[1]).baseline  # in the window loaded at start
    assert first is not None and first.samples == 5
    assert second is not None and second.samples == 5  # the six stored, itself left out


def test_a_rescored_activation_keeps_the_baseline_from_before_it(
    embedded_store: EmbeddedStore, recorded: Activation
) -> None:
    """A session rebuilt again (its next prompt, late rows) is scored again. Its earlier
    activation is compared with the activations *before* it, as at its first scoring: not with a
    window that by then holds the activation itself and the ones after it, which would pull its
    efficiency towards the median with every prompt of a long session."""
    earlier = copies(recorded, 5)
    heavy = recorded.model_copy(
        update={
            "activation_id": "f" * 32,
            "tool_calls": recorded.tool_calls * 4,
            "duration_ms": recorded.duration_ms * 4,
        }
    )
    later = [
        a.model_copy(update={"activation_id": f"{i:032x}"})
        for i, a in enumerate([heavy] * 12, start=100)
    ]

    async def scores() -> tuple[Evaluation, Evaluation]:
        assembler = ContextAssembler(embedded_store, seed=False)
        async with EvaluationScheduler(
            embedded_store, evaluators=["efficiency"], assembler=assembler
        ) as scheduler:
            await scheduler.score(PROJECT, earlier)
            (first,) = await scheduler.score(PROJECT, [heavy])
            await scheduler.score(PROJECT, later)  # the baseline window is now mostly heavy
            again = rebuilt_again(heavy)
            (second,) = await scheduler.score(PROJECT, [again])
            return first, second

    first, second = run(scores())
    assert first.score is not None and first.score < 0.5  # 4x the median of the five before it
    assert (second.score, second.label, second.reason) == (first.score, first.label, first.reason)


def test_what_the_agent_said_in_a_later_turn_does_not_redeem_an_ignored_output(
    embedded_store: EmbeddedStore, recorded: Activation
) -> None:
    """Integration looks past an integration message that only announced the next step, to
    what the agent said after it in the same turn. A later prompt is another request: that the
    agent mentions the values there says nothing of whether it used them here, and the session
    rebuilt on that prompt must not turn this activation's failure into a pass."""
    assert recorded.integration_step_id is not None and recorded.request_step_id is not None
    ignored = recorded.model_copy(update={"integration_message": "Done, moving on."})
    step = recorded.integration_step_id

    def answer_in(turn: int) -> Activation:  # the values quoted by the next activation's answer
        return recorded.model_copy(
            update={
                "activation_id": "e" * 32,
                "trigger_step_id": step + 2,
                "integration_step_id": step + 4,
                "request_step_id": turn,
            }
        )

    async def integration(activations: list[Activation]) -> Evaluation:
        """Its stored verdict once the session's activations were handed over (scored again
        only when what it was shown changed)."""
        async with EvaluationScheduler(
            embedded_store, evaluators=["integration_heuristic"]
        ) as scheduler:
            await scheduler.score(PROJECT, activations)
        (row,) = embedded_store.evaluations.for_activation(PROJECT, ignored.activation_id)
        return Evaluation.from_row(row)

    alone = run(integration([ignored]))
    later_turn = run(integration([ignored, answer_in(step + 1)]))
    same_turn = run(integration([ignored, answer_in(recorded.request_step_id)]))
    assert alone.passed is False and "output_not_referenced" in {f.kind for f in alone.findings}
    assert (later_turn.passed, later_turn.score, later_turn.reason) == (
        alone.passed,
        alone.score,
        alone.reason,
    )
    assert same_turn.passed is True  # the same turn: its later answer uses the values


def _heavy_session(
    recorded: Activation, before: int
) -> tuple[list[Activation], Activation, list[Activation]]:
    """``before`` activations like the recorded one, then one with 4x its calls and duration,
    then 12 more like that one."""
    earlier = copies(recorded, before)
    heavy = recorded.model_copy(
        update={
            "activation_id": "f" * 32,
            "tool_calls": recorded.tool_calls * 4,
            "duration_ms": recorded.duration_ms * 4,
        }
    )
    later = [heavy.model_copy(update={"activation_id": f"{i:032x}"}) for i in range(100, 112)]
    return earlier, heavy, later


@pytest.mark.parametrize("before", [5, 2], ids=["with-a-baseline", "before-any-baseline"])
def test_after_a_restart_a_rescored_activation_keeps_the_baseline_it_was_compared_with(
    embedded_store: EmbeddedStore, session: Rebuilt, recorded: Activation, before: int
) -> None:
    """A session's next prompt can arrive after a deploy: the new process scores its earlier
    activations again. It reads the baseline each was compared with from the stored
    evaluation, instead of comparing it with the window it loads, which by then holds the
    activation itself and the ones after it. One scored before the skill had a baseline stays
    not applicable."""
    earlier, heavy, later = _heavy_session(recorded, before)
    # everything is stored, as the rebuilds had written it before the restart
    embedded_store.rebuilds.write_one(
        PROJECT, Rebuilt(session.session_id, session.trajectory, [*earlier, heavy, *later])
    )

    async def first_process() -> Evaluation:
        assembler = ContextAssembler(embedded_store, seed=False)  # the window grows as scored
        async with EvaluationScheduler(
            embedded_store, evaluators=["efficiency"], assembler=assembler
        ) as scheduler:
            await scheduler.score(PROJECT, earlier)
            (first,) = await scheduler.score(PROJECT, [heavy])
            await scheduler.score(PROJECT, later)
            return first

    async def after_restart() -> Evaluation:
        again = rebuilt_again(heavy)
        async with EvaluationScheduler(embedded_store, evaluators=["efficiency"]) as scheduler:
            (second,) = await scheduler.score(PROJECT, [again])
            return second

    first = run(first_process())
    if before >= 5:
        assert first.score is not None and first.score < 0.5  # 4x the median of those before
    else:
        assert first.label == "not_applicable" and first.compared_with == "null"
    (row,) = embedded_store.evaluations.for_activation(PROJECT, heavy.activation_id)
    assert row["compared_with"] == first.compared_with != ""

    async def unchanged_after_restart() -> list[Evaluation]:
        same = heavy.model_copy(update={"rebuilt_at": "2099-01-01T00:00:00.000000Z"})
        async with EvaluationScheduler(embedded_store, evaluators=["efficiency"]) as scheduler:
            return await scheduler.score(PROJECT, [same])

    assert run(unchanged_after_restart()) == []  # the same inputs in a new process: kept
    second = run(after_restart())
    assert (second.score, second.label, second.reason) == (first.score, first.label, first.reason)
    assert second.compared_with == first.compared_with


def test_a_rescore_sees_the_catalogue_the_activation_was_first_shown(
    scanned: EmbeddedStore, recorded: Activation, tmp_path: Path
) -> None:
    """Claude Code does not report which skills the agent could see, so skill_selection
    compares with the project's catalogue. A skill added to it after an activation was scored
    (a scan, a push from CI) was not there when the agent chose: a rescore of that activation,
    in the same process or after a restart, compares with the catalogue it was first shown
    with. A new activation sees the catalogue as it is."""
    assert not recorded.visible_skills

    async def score(assembler: ContextAssembler, activation: Activation) -> Evaluation:
        async with EvaluationScheduler(
            scanned, evaluators=["skill_selection"], assembler=assembler
        ) as scheduler:
            (evaluation,) = await scheduler.score(PROJECT, [activation])
            return evaluation

    live = ContextAssembler(scanned, catalogue_ttl_s=0)  # every context reads the catalogue
    first = run(score(live, recorded))
    # the request ("... data/sales.csv ...") names the new skill
    folder = tmp_path / "later" / "sales"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: sales\ndescription: Answers questions about sales figures.\n---\nBody.\n"
    )
    scanned.skills.insert(PROJECT, [load_skill(folder)])
    again = rebuilt_again(recorded)
    second = run(score(live, again))
    after_restart = run(score(ContextAssembler(scanned), rebuilt_again(again)))
    fresh = run(score(live, recorded.model_copy(update={"activation_id": "e" * 32})))

    assert first.label == "plausible" and first.score is not None and first.score > 0
    verdict = (first.score, first.label, first.reason, first.compared_with)
    assert (second.score, second.label, second.reason, second.compared_with) == verdict
    assert (
        after_restart.score,
        after_restart.label,
        after_restart.reason,
        after_restart.compared_with,
    ) == verdict
    assert (fresh.score, fresh.label) == (0.0, "named_other")  # the new catalogue counts
    skill = load_skill(tmp_path / "project" / ".claude" / "skills" / "csv-summary")
    shown = (VisibleSkill(name="csv-summary", description=skill.description),)
    assert restored_catalogue(first.compared_with) == shown


def test_a_backfill_grows_its_baselines_afresh_instead_of_recalling_them(
    embedded_store: EmbeddedStore, session: Rebuilt, recorded: Activation
) -> None:
    """``skillsight eval run`` scores oldest first from an empty window, as documented: the
    baseline an earlier scoring stored is not what it compares with."""
    earlier, heavy, _ = _heavy_session(recorded, 5)
    embedded_store.rebuilds.write_one(
        PROJECT, Rebuilt(session.session_id, session.trajectory, [*earlier, heavy])
    )
    stale = stored_baseline(Baseline(tool_calls=1e6, tokens=1e9, duration_ms=1e9, samples=99))
    scored = Evaluation(
        activation_id=heavy.activation_id,
        evaluator="efficiency",
        version="1",
        score=1.0,
        passed=True,
        label="efficient",
        reason="compared with a baseline from elsewhere",
        project_id=PROJECT,
        skill_name=heavy.skill_name,
        compared_with=stale,
    )
    embedded_store.evaluations.write(PROJECT, [scored.to_row(1)])
    recalling = ContextAssembler(embedded_store, seed=False)
    recalling.stored_scores(PROJECT, [heavy])
    assert stored_baseline(recalling.context(heavy).baseline) == stale
    not_recalling = ContextAssembler(embedded_store, seed=False, recall=False)
    assert not_recalling.stored_scores(PROJECT, [heavy]).before == {}
    assert not_recalling.context(heavy).baseline is None
    backfill(embedded_store, PROJECT, evaluators=["efficiency"])
    (row,) = embedded_store.evaluations.for_activation(PROJECT, heavy.activation_id)
    assert row["compared_with"] not in ("", stale)


# -- the evaluation worker's poller, on the server transport ----------------------------------


def test_the_poller_hands_each_new_rebuild_to_the_scheduler_once(server_store: ServerStore) -> None:
    load(server_store, CAPTURES / "one_skill" / "claude_code")  # type: ignore[arg-type]

    def rebuild() -> Activation:
        keys = server_store.sessions.touched(0)
        outcomes, _ = rebuild_sessions(server_store, keys, rebuild=default_rebuild())
        (outcome,) = outcomes
        assert outcome.rebuilt is not None
        (activation,) = outcome.rebuilt.activations
        return activation

    activation = rebuild()

    async def until(condition: Any) -> None:
        while not condition():
            await asyncio.sleep(0.01)

    async def go() -> tuple[EvaluationScheduler, RebuiltSessionPoller]:
        scheduler = EvaluationScheduler(server_store, evaluators=CHEAP)
        poller = RebuiltSessionPoller(server_store, scheduler, poll_s=0.02)
        async with scheduler, poller:
            await until(lambda: scheduler.stats.sessions_scored == 1)
            assert await poller.poll() == 0  # the same rebuild is not handed over twice
            # rebuilt again (late rows, say): handed over again; it found the same activation,
            # so its verdicts stand and nothing is written
            await asyncio.to_thread(rebuild)
            await until(lambda: scheduler.stats.sessions_scored == 2)
        return scheduler, poller

    scheduler, poller = run(go())
    assert (poller.sessions_found, poller.errors) == (2, 0)
    assert scheduler.stats.evaluations_written == len(CHEAP)
    assert scheduler.stats.unchanged == len(CHEAP)
    rows = server_store.evaluations.of(PROJECT, [activation.activation_id])
    assert [r["evaluator"] for r in rows[activation.activation_id]] == sorted(CHEAP)


def test_an_eval_worker_process_scores_what_was_rebuilt(server_store: ServerStore) -> None:
    """``skillsight eval worker`` against the ClickHouse server transport, as a real process."""
    load(server_store, CAPTURES / "one_skill" / "claude_code")  # type: ignore[arg-type]
    keys = server_store.sessions.touched(0)
    rebuild_sessions(server_store, keys, rebuild=default_rebuild())
    (activation,) = server_store.activations.find(PROJECT)
    worker = subprocess.Popen(
        [sys.executable, "-m", "skillsight.cli", "eval", "worker", "--worker", "0/1",
         "--clickhouse", server_store.address.redacted()],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={
            **os.environ,
            "SKILLSIGHT_REBUILD_POLL_S": "0.05",
            "SKILLSIGHT_EVAL_EVALUATORS": "security, allowed_tools",
        },
    )  # fmt: skip
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "SKILLSIGHT_EVAL_WORKER_READY"
        deadline = time.monotonic() + 60
        while not (rows := stored(server_store, [activation])[activation.activation_id]):
            assert time.monotonic() < deadline, "the worker scored nothing"
            time.sleep(0.05)
    finally:
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=60)
    assert worker.returncode == 0, output
    assert rows == ["allowed_tools", "security"]
    assert "scored 1 sessions, 2 evaluations (0 sessions failed)" in output


# -- the scorecard and gate queries, on both transports ---------------------------------------


def test_scorecard_and_gate_queries(store: Store, session: Rebuilt, recorded: Activation) -> None:
    first, second, third = (
        a.model_copy(update={"skill_version": version})
        for a, version in zip(copies(recorded, 3), ("v1", "v1", "v2"), strict=True)
    )
    store.rebuilds.write_one(
        PROJECT, Rebuilt(session.session_id, session.trajectory, [first, second, third])
    )

    def security(activation: Activation, score: float | None) -> dict[str, Any]:
        return Evaluation(
            activation_id=activation.activation_id,
            evaluator="security",
            version="1",
            score=score,
            passed=None if score is None else score >= 1.0,
            label="clean" if score == 1.0 else "unsafe" if score is not None else "not_applicable",
            reason="",
            skill_name=activation.skill_name,
            skill_version=activation.skill_version,
        ).to_row(1_000)

    stale = security(second, 1.0)  # replaced below by a newer row of the same key
    store.evaluations.write(PROJECT, [stale, security(first, 1.0), security(third, None)])
    store.evaluations.write(PROJECT, [{**security(second, 0.5), "evaluated_at_us": 2_000}])
    card = scorecard(store, PROJECT, recorded.skill_name, window="all")
    # the third row is not_applicable: unscored, but not "not evaluated"
    line = {"evaluator": "security", "activations": 2, "scored": 2, "not_evaluated": 0, "passed": 1}
    assert card.activations == 3
    assert [e.model_dump() for e in card.evaluators] == [
        {**line, "activations": 3, "pass_rate": 0.5, "mean_score": 0.75, "min_score": 0.5}
    ]
    unscored = {"pass_rate": None, "mean_score": None, "min_score": None}
    # same start for all three: versions then go by name
    versions = [
        (v.version, v.activations, [e.model_dump() for e in v.evaluators]) for v in card.versions
    ]
    assert versions == [
        ("v1", 2, [{**line, "pass_rate": 0.5, "mean_score": 0.75, "min_score": 0.5}]),
        ("v2", 1, [{**line, "activations": 1, "scored": 0, "passed": 0, **unscored}]),
    ]
    assert [(p.day, p.activations, p.scored, p.pass_rate) for p in card.trend] == [
        (recorded.started_at[:10], 3, 2, 0.5)
    ]
    below = store.scorecards.below(PROJECT, recorded.skill_name, 1.0, evaluator="security")
    assert [(r["activation_id"], r["score"], r["skill_version"]) for r in below] == [
        (second.activation_id, 0.5, "v1")
    ]
    assert store.scorecards.below(PROJECT, recorded.skill_name, 0.5) == []
    only_v2 = scorecard(store, PROJECT, recorded.skill_name, window="all", version="v2")
    assert (only_v2.activations, only_v2.evaluators[0].scored) == (1, 0)
    assert scorecard(store, "other-project", recorded.skill_name, window="all").activations == 0


# -- a session rebuilt again while its first rebuild is being scored --------------------------


class _Held(Evaluator):
    """Scores 1, but holds the activation of one rebuild until released."""

    name = "held"
    version = "1"
    threshold = 1.0
    summary = "a test evaluator that waits"

    def __init__(self, hold: str) -> None:
        self.hold = hold
        self.entered = threading.Event()
        self.release = threading.Event()

    def _evaluate(self, activation: Activation, context: EvaluationContext) -> Evaluation:
        if activation.rebuilt_at == self.hold:
            self.entered.set()
            self.release.wait(30)
        return self.result(activation, 1.0, "ok", f"scored the rebuild of {activation.rebuilt_at}")


def _rebuilds(recorded: Activation) -> tuple[Activation, Activation]:
    return (
        recorded.model_copy(update={"rebuilt_at": "2026-11-22T10:00:00.000001Z"}),
        recorded.model_copy(update={"rebuilt_at": "2026-11-22T10:00:05.000000Z"}),
    )


def _ready(activation: Activation, stamp: int) -> ActivationsReady:
    return ActivationsReady(PROJECT, activation.session_id, (activation,), stamp)


def test_scores_of_a_superseded_rebuild_never_overwrite_the_newer_ones(
    embedded_store: EmbeddedStore, recorded: Activation
) -> None:
    old, new = _rebuilds(recorded)
    held = _Held(old.rebuilt_at)

    async def go() -> EvaluationScheduler:
        scheduler = EvaluationScheduler(embedded_store, registry=Registry([held]), concurrency=2)
        async with scheduler:
            await scheduler.submit(_ready(old, 1))
            assert await asyncio.to_thread(held.entered.wait, 30)
            # late rows: the session is rebuilt and scored while the old rebuild still is
            await scheduler.submit(_ready(new, 2))
            while scheduler.stats.evaluations_written == 0:
                await asyncio.sleep(0.02)
            held.release.set()
        return scheduler

    scheduler = run(go())
    rows = embedded_store.evaluations.for_activation(PROJECT, recorded.activation_id)
    assert [(r["evaluator"], r["activation_rebuilt_at"]) for r in rows] == [
        ("held", new.rebuilt_at)
    ]
    assert scheduler.stats.evaluations_written == 1
    assert scheduler.stats.superseded == 1
    assert scheduler.health()["superseded"] == 1


def test_rebuilds_queued_together_are_scored_once_at_the_newest(
    embedded_store: EmbeddedStore, recorded: Activation
) -> None:
    old, new = _rebuilds(recorded)

    async def go() -> EvaluationScheduler:
        scheduler = EvaluationScheduler(embedded_store, evaluators=["tool_errors"])
        await scheduler.submit(_ready(old, 1))  # queued before any worker runs
        await scheduler.submit(_ready(new, 2))
        async with scheduler:
            pass
        return scheduler

    scheduler = run(go())
    rows = embedded_store.evaluations.for_activation(PROJECT, recorded.activation_id)
    assert [r["activation_rebuilt_at"] for r in rows] == [new.rebuilt_at]
    assert (scheduler.stats.superseded, scheduler.stats.evaluations_written) == (1, 1)
    assert scheduler._newest == {}  # nothing left behind once both are done


def test_the_api_marks_scores_of_an_earlier_rebuild_stale(
    embedded_store: EmbeddedStore, session: Rebuilt
) -> None:
    embedded_store.rebuilds.write_one(PROJECT, session)
    [first] = embedded_store.activations.find(PROJECT)
    assert first.rebuilt_at.endswith("Z")

    def scores() -> list[EvaluationOut]:
        [detail] = with_evaluations(
            embedded_store, PROJECT, embedded_store.activations.find(PROJECT)
        )
        return detail.evaluations

    run(EvaluationScheduler(embedded_store, evaluators=CHEAP).score(PROJECT, [first]))
    assert {(e.activation_rebuilt_at, e.stale) for e in scores()} == {(first.rebuilt_at, False)}
    embedded_store.rebuilds.write_one(PROJECT, session)  # rebuilt again, the same activation
    [same] = embedded_store.activations.find(PROJECT)
    assert same.rebuilt_at > first.rebuilt_at
    assert {(e.activation_rebuilt_at, e.stale) for e in scores()} == {(first.rebuilt_at, False)}
    (activation,) = session.activations
    changed = Rebuilt(session.session_id, session.trajectory, [rebuilt_again(activation)])
    embedded_store.rebuilds.write_one(PROJECT, changed)  # late rows changed it: not yet rescored
    [second] = embedded_store.activations.find(PROJECT)
    assert {(e.activation_rebuilt_at, e.stale) for e in scores()} == {(first.rebuilt_at, True)}
    run(EvaluationScheduler(embedded_store, evaluators=CHEAP).score(PROJECT, [second]))
    assert {(e.activation_rebuilt_at, e.stale) for e in scores()} == {(second.rebuilt_at, False)}


class _Loading(Evaluator):
    """Scores 1; loads something first (a model, a library), or fails to."""

    version = "1"
    summary = "a test evaluator with something to load"

    def __init__(self, name: str, failure: str = "") -> None:
        self.name = name  # type: ignore[misc]  # one class, two registered names
        self.failure = failure
        self.loads = 0

    def load(self) -> None:
        self.loads += 1
        if self.failure:
            raise EvaluatorError(self.failure)

    def _evaluate(self, activation: Activation, context: EvaluationContext) -> Evaluation:
        return self.result(activation, 1.0, "ok", "ok")


def test_warm_up_loads_each_evaluators_needs_before_scoring_starts(
    embedded_store: EmbeddedStore,
) -> None:
    """What the chosen evaluators load (the embedding model, litellm) is loaded when the
    scheduler is entered, so a service loads it before its receivers listen; one that cannot
    load says why in /healthz and the scheduler still starts; without warm-up nothing is loaded
    early."""
    model, broken = _Loading("model"), _Loading("broken", failure="no such model")
    registry = Registry([model, broken, _Held("")])

    async def entered(warm_up: bool) -> dict[str, object]:
        async with EvaluationScheduler(
            embedded_store, registry=registry, warm_up=warm_up
        ) as scheduler:
            return scheduler.health()

    health = run(entered(warm_up=True))
    assert (model.loads, broken.loads) == (1, 1)
    assert health["loaded"] == {"model": "loaded", "broken": "did not load: no such model"}
    health = run(entered(warm_up=False))
    assert (model.loads, broken.loads) == (1, 1)
    assert health["loaded"] == {
        "model": "on first use (warm-up off)",
        "broken": "on first use (warm-up off)",
    }
    # the service's own evaluators: skill_selection loads the model, a judge loads litellm
    judge_settings = Settings(judge_model="openai/scripted", judge_api_base="http://127.0.0.1:9")
    scheduler = build_scheduler(embedded_store, judge_settings)
    judges = set(scheduler.registry.names) - set(DETERMINISTIC)
    assert judges and set(scheduler.loaded) == {"skill_selection", *judges}


def test_a_session_whose_scores_cannot_be_written_costs_no_other_session_its_scores(
    embedded_store: EmbeddedStore, recorded: Activation
) -> None:
    """Sessions queued together are written together; one whose rows no encoder takes (a lone
    surrogate) is scored again alone, and fails alone."""
    bad = recorded.model_copy(
        update={"activation_id": "b" * 32, "session_id": "bad", "skill_name": "\ud800"}
    )
    good = recorded.model_copy(update={"activation_id": "a" * 32, "session_id": "good"})

    async def score() -> Any:
        async with EvaluationScheduler(embedded_store, evaluators=CHEAP, concurrency=1) as s:
            await s.submit(ActivationsReady(PROJECT, "bad", (bad,), 1))
            await s.submit(ActivationsReady(PROJECT, "good", (good,), 1))
        return s.stats

    stats = run(score())
    assert stored(embedded_store, [good]) == {good.activation_id: sorted(CHEAP)}
    assert not stored(embedded_store, [bad]).get(bad.activation_id)
    assert (stats.sessions_scored, stats.store_failures) == (1, 1)
    assert "surrogates not allowed" in stats.last_error
