"""The evaluator interface.

An evaluator is pure: :meth:`Evaluator.evaluate` reads the activation and the context, touches
nothing else, and returns the same :class:`Evaluation` for the same inputs, so reruns are
idempotent and any worker may score any activation. Timing, sampling and storage belong to the
caller (:func:`skillsight.evaluators.run_evaluators`, the scheduler).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar

from skillsight.evaluators._context import EMPTY_CONTEXT, EvaluationContext
from skillsight.evaluators._model import (
    ERROR,
    NO_EVIDENCE,
    NOT_APPLICABLE,
    Evaluation,
    Evidence,
    Finding,
    evidence,
)
from skillsight.evaluators._seen import describe_unseen
from skillsight.store.records import Activation


class Evaluator(ABC):
    """One scoring axis. Subclasses set the class attributes and implement :meth:`_evaluate`."""

    name: ClassVar[str]
    version: ClassVar[str]
    threshold: ClassVar[float] = 1.0
    """``passed`` is ``score >= threshold``."""
    summary: ClassVar[str] = ""
    record_decides: ClassVar[bool] = True
    """The activation record decides the verdict, with what the scheduler keeps fixed for it
    (the baseline and catalogue it was first compared with, the skill's version): one handed
    over again unchanged keeps its stored verdict, not scored or written again. A judge's
    prompt can show more (the trajectory); it reuses a verdict by the prompt's digest."""
    reads_later_messages: ClassVar[bool] = False
    """The verdict reads what the agent said after the activation in its turn
    (``EvaluationContext.later_messages``): a later activation of the turn arriving changes
    its inputs."""

    _filters: ClassVar[bool] = False
    """Whether the class overrides :meth:`applies_to` (else it is not called)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._filters = cls.applies_to is not Evaluator.applies_to

    def applies_to(self, activation: Activation) -> bool:
        """Cheap filter on the activation alone; the scheduler skips what it rejects."""
        return True

    def load(self) -> None:  # noqa: B027 - an optional hook: most evaluators load nothing
        """Load now what scoring would load on first use and that takes seconds (a model, a
        client library), so that a service does it before it listens; raises
        :class:`~skillsight.errors.SkillsightError` when that cannot be loaded."""

    def health(self) -> dict[str, object]:
        """What ``/healthz`` shows of this evaluator beyond the scheduler's counters (a judge:
        its model calls, reused verdicts and the day's spend); most have nothing to add."""
        return {}

    def prepare(  # noqa: B027 - an optional hook: most evaluators need no warm-up
        self, activations: Sequence[Activation], context: EvaluationContext
    ) -> None:
        """Optional warm-up for a batch (embedding its texts at once); never changes results."""

    def evaluate(
        self, activation: Activation, context: EvaluationContext = EMPTY_CONTEXT
    ) -> Evaluation:
        """Score one activation; an evaluator bug becomes an ``error`` evaluation, not a raise."""
        if self._filters and not self.applies_to(activation):
            return self.not_applicable(activation, f"{self.name} does not apply")
        try:
            return self._evaluate(activation, context)
        except Exception as exc:  # one broken evaluator must not stop the others
            return Evaluation(
                activation_id=activation.activation_id,
                evaluator=self.name,
                version=self.version,
                score=None,
                passed=None,
                label=ERROR,
                reason=f"{self.name} failed",
                error=f"{type(exc).__name__}: {exc}"[:2000],
                project_id=activation.project_id,
                skill_name=activation.skill_name,
                skill_version=activation.skill_version,
            )

    def evaluate_many(
        self,
        activations: Sequence[Activation],
        context: EvaluationContext | Callable[[Activation], EvaluationContext] = EMPTY_CONTEXT,
        *,
        contexts: Sequence[EvaluationContext] | None = None,
    ) -> list[Evaluation]:
        """A batch, in input order; ``contexts`` gives each activation its own, by position.

        One at a time here (judges call their model several at a time), timed once for the
        batch: each evaluation's ``latency_ms`` is the batch's wall time, warm-up included,
        divided by its size. Two clock reads per evaluation cost more than many deterministic
        evaluations themselves."""
        if contexts is None:
            contexts = [context(a) if callable(context) else context for a in activations]
        elif len(contexts) != len(activations):
            raise ValueError("contexts must match activations one to one")
        if not activations:
            return []
        started = time.perf_counter_ns()
        # Batch warm-up needs only what contexts share (the embedder): the first one serves.
        self.prepare(activations, contexts[0])
        evaluate = self.evaluate
        out = [evaluate(a, c) for a, c in zip(activations, contexts, strict=True)]
        share = round((time.perf_counter_ns() - started) / len(out) / 1e6, 4)
        for evaluation in out:
            # evaluate() returns new objects no one else holds yet: stamped in place.
            evaluation.latency_ms = share
        return out

    @abstractmethod
    def _evaluate(self, activation: Activation, context: EvaluationContext) -> Evaluation:
        """The evaluation proper."""

    # -- helpers for subclasses ----------------------------------------------------------------

    def result(
        self,
        activation: Activation,
        score: float,
        label: str,
        reason: str,
        findings: Iterable[Finding] = (),
        *,
        step_ids: Iterable[int | None] = (),
        tool_call_ids: Iterable[str | None] = (),
        unseen: Iterable[str] = (),
    ) -> Evaluation:
        """A scored evaluation, ``score`` clamped to [0, 1] (NaN to 0) and rounded to 6 places;
        evidence is every step and call the findings cite, then the extra ``step_ids`` /
        ``tool_call_ids``. ``unseen``: what the verdict could not see (the reason says it)."""
        found = findings if type(findings) is tuple else tuple(findings)
        # round(min(1, max(0, score)), 6) with fewer calls: this runs for every evaluation
        if score >= 1.0:
            score = 1.0
        elif score > 0.0:
            score = round(score, 6)
        else:
            score = 0.0
        missing: tuple[str, ...] = ()
        if unseen:
            missing = tuple(dict.fromkeys(unseen))
            reason = f"{reason}; {describe_unseen(missing)}"
        # Evaluation.of's fields, positionally, without its call: every evaluation comes here
        return Evaluation(
            activation.activation_id,
            self.name,
            self.version,
            score,
            score >= self.threshold,
            label,
            reason,
            Evidence.cite(found, step_ids=step_ids, tool_call_ids=tool_call_ids)
            if found
            else _cited(step_ids, tool_call_ids),
            found,
            "",
            "",
            0,
            0.0,
            0.0,
            activation.project_id,
            activation.skill_name,
            activation.skill_version,
            missing,
        )

    def not_applicable(
        self, activation: Activation, reason: str, unseen: Iterable[str] = ()
    ) -> Evaluation:
        """No score: the evaluator does not apply, or (``unseen``) its essential input is
        missing; the reason says which."""
        missing = tuple(dict.fromkeys(unseen))
        if missing:
            reason = f"{reason}; {describe_unseen(missing)}"
        return Evaluation.of(
            activation.activation_id,
            self.name,
            self.version,
            None,
            None,
            NOT_APPLICABLE,
            reason,
            NO_EVIDENCE,
            (),
            activation.project_id,
            activation.skill_name,
            activation.skill_version,
            missing,
        )


def _cited(step_ids: Iterable[int | None], tool_call_ids: Iterable[str | None]) -> Evidence:
    """``Evidence.cite(step_ids=..., tool_call_ids=...)`` without findings, in fewer steps for
    the common case: at most one id of each (a pass citing the decision that loaded the skill),
    where there is nothing to de-duplicate."""
    if not step_ids and not tool_call_ids:
        return NO_EVIDENCE
    if (
        isinstance(step_ids, (list, tuple))
        and isinstance(tool_call_ids, (list, tuple))
        and len(step_ids) < 2
        and len(tool_call_ids) < 2
    ):
        steps: tuple[int, ...] = (step_ids[0],) if step_ids and step_ids[0] is not None else ()
        calls: tuple[str, ...] = (tool_call_ids[0],) if tool_call_ids and tool_call_ids[0] else ()
    else:
        steps = tuple({step: None for step in step_ids if step is not None})
        calls = tuple({call: None for call in tool_call_ids if call})
    return evidence(steps, calls) if steps or calls else NO_EVIDENCE
