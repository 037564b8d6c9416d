"""Evaluators by name, and running a set of them over activations."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from skillsight.errors import EvaluatorError
from skillsight.evaluators._allowed_tools import AllowedToolsEvaluator
from skillsight.evaluators._context import EMPTY_CONTEXT, EvaluationContext
from skillsight.evaluators._efficiency import EfficiencyEvaluator
from skillsight.evaluators._evaluator import Evaluator
from skillsight.evaluators._integration import IntegrationEvaluator
from skillsight.evaluators._model import Evaluation
from skillsight.evaluators._script_execution import ScriptExecutionEvaluator
from skillsight.evaluators._skill_selection import SkillSelectionEvaluator
from skillsight.evaluators._tool_errors import ToolErrorsEvaluator
from skillsight.evaluators._views import shared_views
from skillsight.evaluators.security import SecurityEvaluator
from skillsight.store.records import Activation


class Registry:
    """Evaluator instances by name."""

    def __init__(self, evaluators: Iterable[Evaluator] = ()) -> None:
        self._by_name: dict[str, Evaluator] = {}
        for evaluator in evaluators:
            self.register(evaluator)

    def register(self, evaluator: Evaluator) -> None:
        if evaluator.name in self._by_name:
            raise EvaluatorError(f"an evaluator named {evaluator.name!r} is already registered")
        self._by_name[evaluator.name] = evaluator

    def get(self, name: str) -> Evaluator:
        try:
            return self._by_name[name]
        except KeyError:
            known = ", ".join(self._by_name) or "none"
            raise EvaluatorError(f"no evaluator named {name!r} (known: {known})") from None

    def select(self, names: Iterable[str] | None = None) -> list[Evaluator]:
        return list(self._by_name.values()) if names is None else [self.get(n) for n in names]

    @property
    def names(self) -> list[str]:
        return list(self._by_name)

    def __iter__(self) -> Iterator[Evaluator]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)


def deterministic_registry() -> Registry:
    """A fresh registry of the seven deterministic evaluators."""
    return Registry(
        [
            AllowedToolsEvaluator(),
            SkillSelectionEvaluator(),
            ScriptExecutionEvaluator(),
            ToolErrorsEvaluator(),
            EfficiencyEvaluator(),
            IntegrationEvaluator(),
            SecurityEvaluator(),
        ]
    )


def run_evaluators(
    activations: Sequence[Activation],
    context: EvaluationContext | Callable[[Activation], EvaluationContext] = EMPTY_CONTEXT,
    *,
    registry: Registry | None = None,
    names: Iterable[str] | None = None,
) -> list[Evaluation]:
    """Every selected evaluator over every activation, with each evaluation's latency.

    ``context`` is one context for all activations, or a function giving each its own (the
    skill's manifest and baseline differ per skill). Activations an evaluator does not apply to
    get a ``not_applicable`` evaluation, so every (activation, evaluator) pair has a row.
    """
    chosen = (registry or deterministic_registry()).select(names)
    contexts = [context(a) if callable(context) else context for a in activations]
    # Each evaluator takes the whole batch (judges call their model several at a time); the
    # rows come back grouped by activation, in the registry's order.
    # Each activation's views are derived once for all of them.
    with shared_views():
        by_evaluator = [e.evaluate_many(activations, contexts=contexts) for e in chosen]
    return [row[i] for i in range(len(activations)) for row in by_evaluator]
