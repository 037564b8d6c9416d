"""A rubric and a judge model as an :class:`~skillsight.evaluators.Evaluator`.

``evaluate`` is synchronous and thread-safe, like every evaluator's: the scheduler may call it
from many worker threads, and at most ``concurrency`` model calls of one judge are in flight at
once (the rest wait). :meth:`JudgeEvaluator.aevaluate` is the same in a worker thread, for
asyncio callers, and :meth:`JudgeEvaluator.evaluate_many` judges a batch concurrently.

A judgement that cannot be had is an evaluation with no score: ``label="error"`` with the
error (the tokens and cost it burnt still counted), or ``label="not_evaluated"`` with
``error="spend cap reached"``. Never a made-up score.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, ClassVar

from skillsight.evaluators import (
    EMPTY_CONTEXT,
    ERROR,
    Evaluation,
    EvaluationContext,
    Evaluator,
    arguments_unseen,
    message_unseen,
    outputs_unseen,
)
from skillsight.evaluators.judges._budget import SpendCap
from skillsight.evaluators.judges._cache import CacheKey, VerdictCache, inputs_hash
from skillsight.evaluators.judges._client import JudgeCallError, JudgeClient, litellm_module
from skillsight.evaluators.judges._context import JudgeContext
from skillsight.evaluators.judges._credit import credit
from skillsight.evaluators.judges._fence import PLACEHOLDER, new_boundary, seal
from skillsight.evaluators.judges._render import render_inputs
from skillsight.evaluators.judges._rubric import Check, Rubric, system_prompt
from skillsight.evaluators.judges._verdicts import verdict_schema
from skillsight.store.records import Activation

NOT_EVALUATED = "not_evaluated"
"""Label of an activation the judge did not look at (the spend cap was reached)."""
SPEND_CAP_REACHED = "spend cap reached"


class JudgeEvaluator(Evaluator):
    """Judges activations by one rubric with one model. Build with :meth:`for_rubric`."""

    record_decides = False  # see Evaluator.record_decides

    rubric: ClassVar[Rubric]

    def __init__(
        self,
        client: JudgeClient,
        *,
        spend_cap: SpendCap | None = None,
        cache: VerdictCache | None = None,
    ) -> None:
        self.client = client
        self.model = client.settings.model
        self.spend_cap = spend_cap or SpendCap(client.settings.daily_spend_usd)
        self.cache = cache if cache is not None else VerdictCache(client.settings.cache_size)
        self._slots = threading.BoundedSemaphore(client.settings.concurrency)
        self._system = system_prompt()
        self._counts = {"model_calls": 0, "cached": 0, "stored_reused": 0}
        self._counts_lock = threading.Lock()

    def _count(self, what: str) -> None:
        with self._counts_lock:
            self._counts[what] += 1

    def health(self) -> dict[str, object]:
        """Model calls made (failed ones too), verdicts answered from the in-memory cache and
        from the store (a rebuilt session's unchanged activation), and the day's spend cap."""
        with self._counts_lock:
            counts: dict[str, object] = dict(self._counts)
        cap = self.spend_cap
        return {
            **counts,
            "model": self.model,
            "spent_today_usd": round(cap.known_usd, 6),
            "daily_cap_usd": cap.limit_usd,
            "refused_today": cap.refused,
        }

    @classmethod
    def for_rubric(
        cls,
        rubric: Rubric,
        client: JudgeClient,
        *,
        spend_cap: SpendCap | None = None,
        cache: VerdictCache | None = None,
    ) -> JudgeEvaluator:
        """An evaluator named after the rubric, versioned by it."""
        attributes: dict[str, Any] = {
            "name": rubric.name,
            "version": rubric.version,
            "threshold": rubric.threshold,
            "summary": rubric.summary,
            "rubric": rubric,
        }
        kind = type(f"{rubric.name.title().replace('_', '')}Judge", (cls,), attributes)
        judge: JudgeEvaluator = kind(client, spend_cap=spend_cap, cache=cache)
        return judge

    # -- what the scheduler asks ------------------------------------------------------------

    def load(self) -> None:
        """litellm (seconds to import; imported once per process)."""
        litellm_module()

    def applies_to(self, activation: Activation) -> bool:
        return not self._missing(activation)

    def _missing(self, activation: Activation) -> str:
        needs = {
            "request": (bool(activation.request.strip()), "the request was not logged"),
            "decision_step": (
                activation.trigger_step_id is not None,
                "the activation has no decision step",
            ),
            "internal_steps": (bool(activation.tool_calls), "the skill made no tool calls"),
            "integration_message": (
                activation.integration_message is not None
                and activation.integration_step_id is not None,
                "no agent message followed the skill",
            ),
        }
        for requirement in self.rubric.requires:
            present, why = needs.get(requirement, (True, ""))
            if not present:
                return why
        return ""

    def checks(self, context: EvaluationContext) -> tuple[Check, ...]:
        """The checks this rubric asks about for one activation's context."""
        source = self.rubric.checks_from
        if source == "rubric":
            return self.rubric.checks
        judging = context if isinstance(context, JudgeContext) else None
        texts: tuple[str, ...] = ()
        if judging is not None and source == "expected_behavior":
            texts = judging.expected_behavior
        elif judging is not None and judging.skill_rubric is not None:
            rubric = judging.skill_rubric
            texts = rubric.key_steps if source == "key_steps" else rubric.reflection_checks
        return tuple(Check(f"{source}_{n}", text) for n, text in enumerate(texts, start=1))

    def unseen(self, activation: Activation) -> tuple[str, ...]:
        """What the prompt of this rubric could not show: outputs or inputs the telemetry did
        not carry (the judge then judged the rest; the reason says so)."""
        if "internal" not in self.rubric.inputs:
            return ()
        calls = activation.tool_calls
        return tuple(
            code
            for code, missing in (
                ("tool_outputs", bool(outputs_unseen(calls))),
                ("tool_arguments", bool(arguments_unseen(calls))),
            )
            if missing
        )

    def evaluate(
        self, activation: Activation, context: EvaluationContext = EMPTY_CONTEXT
    ) -> Evaluation:
        if not self.applies_to(activation):
            missing = self._missing(activation)
            unlogged = (
                ("request",)
                if "request" in self.rubric.requires and not activation.request_logged
                else ("messages",)
                if "integration_message" in self.rubric.requires and message_unseen(activation)
                else ()
            )
            return self.not_applicable(activation, f"{self.name}: {missing}", unlogged)
        return super().evaluate(activation, context)

    async def aevaluate(
        self, activation: Activation, context: EvaluationContext = EMPTY_CONTEXT
    ) -> Evaluation:
        """:meth:`evaluate` in a worker thread (litellm's blocking client stays off the loop)."""
        return await asyncio.to_thread(self.evaluate, activation, context)

    def evaluate_many(
        self,
        activations: Sequence[Activation],
        context: EvaluationContext | Callable[[Activation], EvaluationContext] = EMPTY_CONTEXT,
        *,
        contexts: Sequence[EvaluationContext] | None = None,
    ) -> list[Evaluation]:
        """Judge a batch, ``concurrency`` calls at a time; results in input order, each with
        its latency. ``contexts`` gives each activation its own context, by position."""
        if contexts is not None and len(contexts) != len(activations):
            raise ValueError("contexts must match activations one to one")

        def one(index: int) -> Evaluation:
            activation = activations[index]
            if contexts is not None:
                ctx = contexts[index]
            else:
                ctx = context(activation) if callable(context) else context
            started = time.perf_counter_ns()
            evaluation = self.evaluate(activation, ctx)
            return evaluation.with_latency(round((time.perf_counter_ns() - started) / 1e6, 4))

        workers = max(1, min(self.client.settings.concurrency, len(activations)))
        with ThreadPoolExecutor(workers, thread_name_prefix=f"judge-{self.name}") as pool:
            return list(pool.map(one, range(len(activations))))

    # -- the judgement ------------------------------------------------------------------------

    def _evaluate(self, activation: Activation, context: EvaluationContext) -> Evaluation:
        checks = self.checks(context)
        if not checks:
            return self.not_applicable(activation, f"{self.name}: no checks for this activation")
        settings = self.client.settings
        rendered = render_inputs(self.rubric, activation, context, settings.max_prompt_chars)
        listed = "\n".join(f"- `{c.id}`: {c.text}" for c in checks)
        user = self.rubric.prompt.substitute(
            skill_name=activation.skill_name, sections=rendered.text, checks=listed
        ).strip()
        system = self._system.substitute(boundary=PLACEHOLDER).strip()
        key = CacheKey(
            self.rubric.name,
            self.rubric.version,
            self.model,
            inputs_hash({"system": system, "user": user}),
        )
        stored = context.earlier.get((self.name, self.version))
        if (
            stored is not None
            and stored.inputs_hash == key.inputs_hash
            and stored.judge_model == self.model
            and stored.score is not None
            and not stored.error
        ):
            # judged before on this very prompt (in this process or another): the same
            # verdict, as stored; the scheduler keeps its row, or writes it for the new
            # rebuild with nothing spent now
            self._count("stored_reused")
            return replace(stored, stands=True)
        cached = self.cache.get(key)
        if cached is not None:
            self._count("cached")
            found = self._scored(activation, cached, checks, rendered.shown_steps, 0, 0.0)
            return replace(found, inputs_hash=key.inputs_hash)
        if not self.spend_cap.allows():
            return self._unscored(activation, NOT_EVALUATED, SPEND_CAP_REACHED)
        boundary = new_boundary(system, user)
        messages = [
            {"role": "system", "content": seal(system, boundary)},
            {"role": "user", "content": seal(user, boundary)},
        ]
        schema = verdict_schema(self.rubric.output, tuple(c.id for c in checks))
        try:
            with self._slots:
                self._count("model_calls")
                reply = self.client.complete(messages, schema, name=self.name)
        except JudgeCallError as exc:
            self.spend_cap.record(exc.cost_usd)
            return self._unscored(
                activation, ERROR, str(exc), tokens=exc.tokens, cost_usd=exc.cost_usd
            )
        self.spend_cap.record(reply.cost_usd)
        self.cache.put(key, reply.verdict)
        judged = self._scored(
            activation, reply.verdict, checks, rendered.shown_steps, reply.tokens, reply.cost_usd
        )
        return replace(judged, inputs_hash=key.inputs_hash)

    def _scored(
        self,
        activation: Activation,
        verdict: dict[str, Any],
        checks: tuple[Check, ...],
        shown: frozenset[int],
        tokens: int,
        cost_usd: float,
    ) -> Evaluation:
        scored = credit(verdict, checks, shown, activation)
        findings = list(scored.findings)
        reason = scored.describe(len(checks))
        better = verdict.get("better_skill")
        if better:
            reason += f"; better: {better}"
        summary = str(verdict.get("summary", "")).strip()
        if summary:
            reason += f". Judge: {summary}"
        evaluation = self.result(
            activation,
            scored.score,
            self.rubric.label(scored.score),
            reason[:1700],
            findings,
            step_ids=scored.cited_steps,
            unseen=self.unseen(activation),
        )
        return replace(evaluation, judge_model=self.model, tokens=tokens, cost_usd=cost_usd)

    def _unscored(
        self,
        activation: Activation,
        label: str,
        error: str,
        *,
        tokens: int = 0,
        cost_usd: float = 0.0,
    ) -> Evaluation:
        return Evaluation(
            activation_id=activation.activation_id,
            evaluator=self.name,
            version=self.version,
            score=None,
            passed=None,
            label=label,
            reason=f"{self.name} not judged: {error}"[:2000],
            error=error[:2000],
            judge_model=self.model,
            tokens=tokens,
            cost_usd=cost_usd,
            project_id=activation.project_id,
            skill_name=activation.skill_name,
            skill_version=activation.skill_version,
        )
