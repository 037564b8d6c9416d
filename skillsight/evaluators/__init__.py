"""Evaluators: score every completed skill activation on axes in [0, 1], with cited evidence.

The seven deterministic evaluators (:data:`DETERMINISTIC`) need no model call; each is defined
so that a reader can recompute its score by hand (``docs/evaluators.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillsight._faces import lazy_face

if TYPE_CHECKING:
    from skillsight.evaluators._allowed_tools import AllowedToolsEvaluator
    from skillsight.evaluators._baseline import Baseline, RollingBaseline, total_tokens
    from skillsight.evaluators._context import EMPTY_CONTEXT, EvaluationContext, GoldenExpectation
    from skillsight.evaluators._efficiency import EfficiencyEvaluator, log_ratio_score
    from skillsight.evaluators._embedding import (
        CachedEmbedder,
        Embedder,
        MiniLMEmbedder,
        cosine,
        default_embedder,
    )
    from skillsight.evaluators._evaluator import Evaluator
    from skillsight.evaluators._integration import IntegrationEvaluator
    from skillsight.evaluators._model import (
        DETERMINISTIC,
        ERROR,
        NOT_APPLICABLE,
        Evaluation,
        Evidence,
        Finding,
        Severity,
    )
    from skillsight.evaluators._otel import otel_attributes, otel_event
    from skillsight.evaluators._registry import (
        Registry,
        deterministic_registry,
        run_evaluators,
    )
    from skillsight.evaluators._script_execution import ScriptExecutionEvaluator
    from skillsight.evaluators._seen import (
        UNSEEN,
        arguments_unseen,
        describe_unseen,
        message_unseen,
        outputs_unseen,
    )
    from skillsight.evaluators._skill_selection import SkillSelectionEvaluator
    from skillsight.evaluators._tool_errors import ToolErrorsEvaluator
    from skillsight.evaluators._views import shared_views
    from skillsight.evaluators.security import SecurityEvaluator

__all__ = [
    "DETERMINISTIC",
    "EMPTY_CONTEXT",
    "ERROR",
    "NOT_APPLICABLE",
    "UNSEEN",
    "AllowedToolsEvaluator",
    "Baseline",
    "CachedEmbedder",
    "EfficiencyEvaluator",
    "Embedder",
    "Evaluation",
    "EvaluationContext",
    "Evaluator",
    "Evidence",
    "Finding",
    "GoldenExpectation",
    "IntegrationEvaluator",
    "MiniLMEmbedder",
    "Registry",
    "RollingBaseline",
    "ScriptExecutionEvaluator",
    "SecurityEvaluator",
    "Severity",
    "SkillSelectionEvaluator",
    "ToolErrorsEvaluator",
    "arguments_unseen",
    "cosine",
    "default_embedder",
    "describe_unseen",
    "deterministic_registry",
    "log_ratio_score",
    "message_unseen",
    "otel_attributes",
    "otel_event",
    "outputs_unseen",
    "run_evaluators",
    "shared_views",
    "total_tokens",
]

__getattr__, __dir__ = lazy_face(globals())
