"""LLM judges in the service: the same registry and scheduler as the deterministic evaluators.

``skillsight eval run`` and the online scheduler pick the judges up from the settings
(``SKILLSIGHT_JUDGE_MODEL`` and friends), read the session's trajectory for the dispatch rubric,
and store the judge's verdict beside the deterministic scores. The model is the scripted
OpenAI-compatible server, reached through litellm's real client.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from demo.scripted_openai import Json, Reply, ScriptedOpenAI, Usage
from skillsight.api._routes.metrics import _judges as judge_metrics
from skillsight.cli import app
from skillsight.config import Settings
from skillsight.evaluators import DETERMINISTIC, Evaluation
from skillsight.evaluators.judges import release_connections
from skillsight.rebuild.finalizer import ActivationsReady
from skillsight.rebuild.session import rebuild_session
from skillsight.runtime import build_scheduler
from skillsight.store import EmbeddedStore
from skillsight.store.records import Activation
from tests.test_activations import SCENARIOS, load

MODEL = "openai/judge-test"
USAGE = Usage(input_tokens=1000, output_tokens=50)
runner = CliRunner()


@pytest.fixture(autouse=True)
def _closed_connections() -> Iterator[None]:
    yield
    release_connections()


def dispatch_verdict(body: dict[str, Any]) -> Reply:
    """A verdict crediting the decision step the prompt names (any other rubric: not asked)."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    step = int(re.search(r"## The decision: step (\d+)", user).group(1))  # type: ignore[union-attr]
    return Reply(
        [
            Json(
                {
                    "checks": {
                        "right_skill": {
                            "satisfied": True,
                            "step_ids": [step],
                            "reason": "the request asks for CSV totals",
                        }
                    },
                    "better_skill": None,
                    "summary": "csv-summary fits",
                }
            )
        ],
        usage=USAGE,
    )


def judge_env(url: str) -> dict[str, str]:
    return {
        "SKILLSIGHT_JUDGE_MODEL": MODEL,
        "SKILLSIGHT_JUDGE_API_BASE": url,
        "SKILLSIGHT_JUDGE_SAMPLE_RATE": "1.0",
        "SKILLSIGHT_JUDGE_INPUT_USD_PER_MTOK": "2.0",
        "SKILLSIGHT_JUDGE_OUTPUT_USD_PER_MTOK": "8.0",
        "OPENAI_API_KEY": "test-key",
    }


@contextmanager
def dispatch_only(
    data: Path,
) -> Iterator[tuple[ScriptedOpenAI, Settings, EmbeddedStore, Activation]]:
    """The scripted judge model, the service's settings with the dispatch judge as the one
    evaluator, the store and its one activation."""
    server = ScriptedOpenAI(dispatch_verdict)
    with server as url:
        settings = Settings.load(
            {"data_dir": data, "eval_evaluators": "dispatch"}, env=judge_env(url)
        )
        store = EmbeddedStore(data)
        try:
            (activation,) = store.activations.find("default")
            yield server, settings, store, activation
        finally:
            store.close()


@pytest.fixture
def one_skill(tmp_path: Path) -> tuple[Path, str]:
    """An embedded store holding the rebuilt one_skill session; (data dir, activation id)."""
    data = tmp_path / "data"
    store = EmbeddedStore(data)
    try:
        store.migrate()
        load(store, SCENARIOS / "one_skill" / "claude_code")
        spans = store.spans.find("default", limit=100_000)
        events = store.events.find("default", limit=100_000)
        rebuilt = rebuild_session(spans, events)
        store.rebuilds.write_one("default", rebuilt)
        (activation,) = rebuilt.activations
    finally:
        store.close()
    return data, activation.activation_id


def test_eval_run_judges_dispatch_with_the_session_trajectory(
    one_skill: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, activation_id = one_skill
    server = ScriptedOpenAI(dispatch_verdict)
    with server as url:
        for name, value in judge_env(url).items():
            monkeypatch.setenv(name, value)
        result = runner.invoke(app, ["eval", "run", "--evaluator", "dispatch", "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert "LLM judges" in result.output and MODEL in result.output

    (request,) = server.model_requests
    user = next(m["content"] for m in request.body["messages"] if m["role"] == "user")
    # the trajectory was read: the prompt shows the agent's words before the decision
    assert "I'll use the csv-summary skill" in user

    store = EmbeddedStore(data)
    try:
        (row,) = store.evaluations.for_activation("default", activation_id)
    finally:
        store.close()
    assert (row["evaluator"], row["score"], row["passed"]) == ("dispatch", 1.0, True)
    assert row["judge_model"] == MODEL
    assert row["tokens"] == 1050
    assert row["cost_usd"] == pytest.approx((1000 * 2.0 + 50 * 8.0) / 1e6)

    # run again (a new process, its verdict cache empty): the stored verdict of the same
    # prompt answers, nothing is paid twice
    with server as url:
        for name, value in judge_env(url).items():
            monkeypatch.setenv(name, value)
        again = runner.invoke(app, ["eval", "run", "--evaluator", "dispatch", "--data", str(data)])
    assert again.exit_code == 0, again.output
    assert len(server.model_requests) == 1
    store = EmbeddedStore(data)
    try:
        (row,) = store.evaluations.for_activation("default", activation_id)
    finally:
        store.close()
    assert (row["score"], row["tokens"], row["cost_usd"]) == (1.0, 0, 0.0)


def test_without_a_judge_model_eval_run_says_so_and_scores_deterministically(
    one_skill: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, activation_id = one_skill
    monkeypatch.delenv("SKILLSIGHT_JUDGE_MODEL", raising=False)
    result = runner.invoke(app, ["eval", "run", "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert "no judge model configured (set SKILLSIGHT_JUDGE_MODEL)" in result.output
    store = EmbeddedStore(data)
    try:
        names = sorted(
            r["evaluator"] for r in store.evaluations.for_activation("default", activation_id)
        )
    finally:
        store.close()
    assert names == sorted(DETERMINISTIC)


def test_the_online_scheduler_runs_the_judges_beside_the_deterministic_evaluators(
    one_skill: tuple[Path, str],
) -> None:
    data, activation_id = one_skill
    server = ScriptedOpenAI(dispatch_verdict)
    with server as url:
        env = judge_env(url)
        settings = Settings.load(
            {"data_dir": data, "eval_evaluators": "dispatch,tool_errors"}, env=env
        )
        store = EmbeddedStore(data)
        try:
            (activation,) = store.activations.find("default")
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("OPENAI_API_KEY", "test-key")
                scheduler = build_scheduler(store, settings)

                async def score() -> None:
                    async with scheduler:
                        await scheduler.submit(
                            ActivationsReady("default", activation.session_id, (activation,), 1)
                        )

                asyncio.run(score())
            rows = {
                r["evaluator"]: r
                for r in store.evaluations.for_activation("default", activation_id)
            }
        finally:
            store.close()
    assert set(rows) == {"dispatch", "tool_errors"}
    assert rows["dispatch"]["score"] == 1.0 and rows["dispatch"]["judge_model"] == MODEL
    assert rows["tool_errors"]["score"] == 1.0 and not rows["tool_errors"]["judge_model"]
    assert len(server.model_requests) == 1


def test_past_the_spend_cap_the_scorecard_shows_not_evaluated_never_passes(
    one_skill: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, _ = one_skill
    server = ScriptedOpenAI(dispatch_verdict)
    with server as url:
        for name, value in judge_env(url).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("SKILLSIGHT_JUDGE_DAILY_SPEND_USD", "0")
        ran = runner.invoke(app, ["eval", "run", "--evaluator", "dispatch", "--data", str(data)])
    assert ran.exit_code == 0, ran.output
    assert server.model_requests == []  # the cap is reached before the first call

    shown = runner.invoke(
        app,
        ["skills", "scorecard", "csv-summary", "--window", "all", "--json", "--data", str(data)],
    )
    assert shown.exit_code == 0, shown.output
    (dispatch,) = json.loads(shown.stdout)["evaluators"]
    assert {k: dispatch[k] for k in ("evaluator", "activations", "scored", "not_evaluated")} == {
        "evaluator": "dispatch",
        "activations": 1,
        "scored": 0,
        "not_evaluated": 1,
    }
    assert (dispatch["passed"], dispatch["pass_rate"], dispatch["mean_score"]) == (0, None, None)
    table = runner.invoke(
        app, ["skills", "scorecard", "csv-summary", "--window", "all", "--data", str(data)]
    )
    assert "not evaluated" in table.stdout


def test_the_spend_cap_counts_what_the_store_says_judges_spent_today(
    one_skill: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restarted service (or a second worker) does not start the day's budget from zero:
    the judge rows already stored today count against the cap; older rows and deterministic
    rows do not."""
    data, activation_id = one_skill
    now_us = time.time_ns() // 1000
    day_us = 86_400 * 1_000_000

    def row(evaluator: str, model: str, cost: float, at_us: int) -> dict[str, Any]:
        return Evaluation(
            activation_id=f"{activation_id}-{evaluator}-{at_us}",
            evaluator=evaluator,
            version="1",
            score=1.0,
            passed=True,
            label="ok",
            reason="earlier",
            judge_model=model,
            cost_usd=cost,
        ).to_row(at_us)

    store = EmbeddedStore(data)
    try:
        store.evaluations.write(
            "other-project",
            [
                row("dispatch", MODEL, 0.75, now_us),
                row("integration", MODEL, 0.5, now_us),
                row("dispatch", MODEL, 9.0, now_us - 2 * day_us),  # another day
                row("tool_errors", "", 9.0, now_us),  # not a judge
            ],
        )
    finally:
        store.close()
    server = ScriptedOpenAI(dispatch_verdict)
    with server as url:
        for name, value in judge_env(url).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("SKILLSIGHT_JUDGE_DAILY_SPEND_USD", "1.25")
        capped = runner.invoke(app, ["eval", "run", "--evaluator", "dispatch", "--data", str(data)])
        assert capped.exit_code == 0, capped.output
        assert "$1.25 spent today" in capped.output
        assert server.model_requests == []
        monkeypatch.setenv("SKILLSIGHT_JUDGE_DAILY_SPEND_USD", "1.5")
        judged = runner.invoke(app, ["eval", "run", "--evaluator", "dispatch", "--data", str(data)])
    assert judged.exit_code == 0, judged.output
    assert len(server.model_requests) == 1


def test_what_judges_spent_stays_counted_when_a_rebuilt_session_is_scored_again(
    one_skill: tuple[Path, str],
) -> None:
    """A session rebuilt on late rows that changed the activation outside what the judge is
    shown (its cost) is scored again; the judge answers with its stored verdict, for nothing,
    and that row, naming the new rebuild, replaces the one that paid. What was spent must stay
    counted against the day's cap (a restarted service or a second worker reads it from the
    store), also once ClickHouse has merged the old row away."""
    data, activation_id = one_skill
    with dispatch_only(data) as (server, settings, store, activation):
        rebuilt = activation.model_copy(
            update={"rebuilt_at": "2099-01-01T00:00:00.000000Z", "cost_usd": 1.0}
        )
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("OPENAI_API_KEY", "test-key")
            scheduler = build_scheduler(store, settings)

            async def score() -> None:
                async with scheduler:
                    await scheduler.score("default", [activation])
                    await scheduler.score("default", [rebuilt])  # its session rebuilt

            asyncio.run(score())
        store.execute("OPTIMIZE TABLE evaluations FINAL")
        (row,) = store.evaluations.for_activation("default", activation_id)
        midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        spent = store.evaluations.judge_spend_since(midnight)
    assert len(server.model_requests) == 1  # the second scoring was the stored verdict
    assert row["activation_rebuilt_at"] == rebuilt.rebuilt_at and row["cost_usd"] == 0.0
    paid = (USAGE.input_tokens * 2.0 + USAGE.output_tokens * 8.0) / 1e6
    assert spent == pytest.approx(paid)


def test_an_unchanged_activation_keeps_the_judge_row_that_paid(
    one_skill: tuple[Path, str],
) -> None:
    """Handed over again unchanged (its session's next prompt), in the same process or after a
    restart, an activation keeps the judge's row as it was: what the verdict cost stays on it,
    it still names the rebuild it scored, and nothing is written."""
    data, activation_id = one_skill
    with dispatch_only(data) as (server, settings, store, activation):
        same = activation.model_copy(update={"rebuilt_at": "2099-01-01T00:00:00.000000Z"})
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("OPENAI_API_KEY", "test-key")
            scheduler = build_scheduler(store, settings)

            async def score() -> tuple[list[Evaluation], list[Evaluation]]:
                async with scheduler:
                    first = await scheduler.score("default", [activation])
                    return first, await scheduler.score("default", [same])

            first, again = asyncio.run(score())
            restarted = build_scheduler(store, settings)  # its judges' caches are empty

            async def score_after_restart() -> list[Evaluation]:
                async with restarted:
                    return await restarted.score("default", [same])

            after_restart = asyncio.run(score_after_restart())
        (row,) = store.evaluations.for_activation("default", activation_id)
    (paid,) = first
    assert paid.cost_usd > 0 and again == [] and after_restart == []
    assert (scheduler.stats.unchanged, restarted.stats.unchanged) == (1, 1)
    assert len(server.model_requests) == 1
    assert (row["cost_usd"], row["tokens"]) == (paid.cost_usd, paid.tokens)
    assert row["activation_rebuilt_at"] == activation.rebuilt_at


def test_a_restarted_service_does_not_pay_again_for_an_unchanged_activation(
    one_skill: tuple[Path, str],
) -> None:
    """The verdict cache lives in the process (2,048 verdicts), so a restarted service, or a
    busy one whose cache moved on before the session's next prompt, would judge an unchanged
    activation again: pay again, and perhaps answer differently. The stored verdict of the same
    prompt (its SHA-256 is kept with the row) is the answer instead; a changed activation is
    judged anew."""
    data, activation_id = one_skill
    shown: list[dict[str, Any]] = []  # /healthz evaluation.evaluator_health.dispatch
    exposed: list[str] = []  # and its lines of /metrics
    with dispatch_only(data) as (server, settings, store, activation):

        def score_in_a_new_process(version: Activation) -> Evaluation:
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("OPENAI_API_KEY", "test-key")
                scheduler = build_scheduler(store, settings)  # its judges' caches are empty

                async def score() -> list[Evaluation]:
                    async with scheduler:
                        return await scheduler.score("default", [version])

                (evaluation,) = asyncio.run(score())
                health = scheduler.health()["evaluator_health"]
                assert isinstance(health, dict)
                shown.append(health["dispatch"])
                exposed.append("".join(judge_metrics(health)))
                return evaluation

        first = score_in_a_new_process(activation)
        # late rows changed what it cost, nothing the judge is shown
        rebuilt = activation.model_copy(
            update={"rebuilt_at": "2099-01-01T00:00:00.000000Z", "cost_usd": 1.0}
        )
        again = score_in_a_new_process(rebuilt)
        calls_after_unchanged = len(server.model_requests)
        changed = rebuilt.model_copy(
            update={"rebuilt_at": "2099-01-02T00:00:00.000000Z", "request": "Sum the CSV."}
        )
        anew = score_in_a_new_process(changed)
        (row,) = store.evaluations.for_activation("default", activation_id)
        midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        spent = store.evaluations.judge_spend_since(midnight)
    assert calls_after_unchanged == 1
    counts = [{k: h[k] for k in ("model_calls", "cached", "stored_reused")} for h in shown]
    assert counts == [
        {"model_calls": 1, "cached": 0, "stored_reused": 0},
        {"model_calls": 0, "cached": 0, "stored_reused": 1},
        {"model_calls": 1, "cached": 0, "stored_reused": 0},
    ]
    assert shown[0]["model"] == MODEL and shown[0]["spent_today_usd"] > 0
    assert 'skillsight_judge_model_calls_total{judge="dispatch"} 0.0\n' in exposed[1]
    assert (
        'skillsight_judge_verdicts_reused_total{judge="dispatch",source="store"} 1.0\n'
        in exposed[1]
    )
    assert "# TYPE skillsight_judge_spent_today_usd gauge" in exposed[1]
    assert first.tokens > 0 and first.inputs_hash
    assert (again.score, again.label, again.reason, again.findings, again.evidence) == (
        first.score,
        first.label,
        first.reason,
        first.findings,
        first.evidence,
    )
    assert (again.tokens, again.cost_usd, again.inputs_hash) == (0, 0.0, first.inputs_hash)
    assert len(server.model_requests) == 2 and anew.tokens > 0
    assert anew.inputs_hash != first.inputs_hash
    assert row["activation_rebuilt_at"] == changed.rebuilt_at
    assert row["inputs_hash"] == anew.inputs_hash
    assert spent == pytest.approx(2 * (USAGE.input_tokens * 2.0 + USAGE.output_tokens * 8.0) / 1e6)


def test_the_spend_cap_rereads_the_store_and_keeps_its_figure_when_the_read_fails() -> None:
    from datetime import date

    from skillsight.errors import StoreError
    from skillsight.evaluators.judges import SpendCap

    recorded = {date(2026, 1, 1): 0.25}
    reads: list[date] = []
    clock = [0.0]
    day = [date(2026, 1, 1)]

    def spent(when: date) -> float:
        reads.append(when)
        if when not in recorded:
            raise StoreError("the store is down")
        return recorded[when]

    cap = SpendCap(1.0, recorded=spent, refresh_s=60, clock=lambda: clock[0], today=lambda: day[0])
    assert cap.spent_usd == 0.25  # read when made
    cap.record(0.1)  # its own call, also written to the store by now
    recorded[day[0]] = 0.35 + 0.7  # and another worker's
    clock[0] = 30.0
    assert cap.spent_usd == pytest.approx(0.35)  # not read again yet
    clock[0] = 61.0
    # what /healthz shows (beside the receivers) never waits on the store, even when due
    assert (cap.known_usd, cap.refused, len(reads)) == (pytest.approx(0.35), 0, 1)
    assert (cap.spent_usd, cap.allows()) == (pytest.approx(1.05), False)
    assert cap.known_usd == pytest.approx(1.05)
    day[0] = date(2026, 1, 2)  # a new day: reset, and the failed read leaves it at zero
    assert (cap.spent_usd, cap.allows()) == (0.0, True)
    assert reads == [date(2026, 1, 1), date(2026, 1, 1), date(2026, 1, 2)]


def empty_answers(body: dict[str, Any]) -> Reply:
    """Schema-shaped, but no check answered (a judge model that "answered" nothing)."""
    return Reply([Json({"checks": {}, "better_skill": None, "summary": "looks fine"})], usage=USAGE)


def test_a_judge_that_answers_no_check_has_not_judged(
    one_skill: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every attempt is retried like malformed JSON; the stored row is an error with no score,
    and the scorecard counts it as not evaluated, never as a failure."""
    data, activation_id = one_skill
    server = ScriptedOpenAI(empty_answers)
    with server as url:
        for name, value in judge_env(url).items():
            monkeypatch.setenv(name, value)
        ran = runner.invoke(app, ["eval", "run", "--evaluator", "dispatch", "--data", str(data)])
    assert ran.exit_code == 0, ran.output
    assert len(server.model_requests) == 3  # retried like malformed JSON
    store = EmbeddedStore(data)
    try:
        (row,) = store.evaluations.for_activation("default", activation_id)
    finally:
        store.close()
    assert (row["score"], row["passed"], row["label"]) == (None, None, "error")
    assert "checks.right_skill: Field required" in row["error"]
    assert row["findings"] == "[]"  # no check_unanswered "failure" either
    shown = runner.invoke(
        app,
        ["skills", "scorecard", "csv-summary", "--window", "all", "--json", "--data", str(data)],
    )
    assert shown.exit_code == 0, shown.output
    (dispatch,) = json.loads(shown.stdout)["evaluators"]
    assert {k: dispatch[k] for k in ("scored", "not_evaluated", "passed", "pass_rate")} == {
        "scored": 0,
        "not_evaluated": 1,
        "passed": 0,
        "pass_rate": None,
    }
