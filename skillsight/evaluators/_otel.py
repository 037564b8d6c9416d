"""Evaluations as OpenTelemetry GenAI evaluation results (the ``gen_ai.evaluation.result``
event's attributes)."""

from __future__ import annotations

from typing import Any

from skillsight import semconv
from skillsight.evaluators._model import Evaluation


def otel_attributes(evaluation: Evaluation) -> dict[str, Any]:
    """The attributes of one ``gen_ai.evaluation.result`` event; a missing score is left out,
    as the convention asks, rather than sent as a number it is not."""
    attributes: dict[str, Any] = {
        semconv.GEN_AI_EVALUATION_NAME: evaluation.evaluator,
        semconv.GEN_AI_EVALUATION_SCORE_LABEL: evaluation.label,
        semconv.GEN_AI_EVALUATION_EXPLANATION: evaluation.reason,
    }
    if evaluation.score is not None:
        attributes[semconv.GEN_AI_EVALUATION_SCORE_VALUE] = evaluation.score
    return attributes


def otel_event(evaluation: Evaluation) -> dict[str, Any]:
    """``{"name": "gen_ai.evaluation.result", "attributes": {...}}`` for the activation JSON."""
    return {"name": semconv.GEN_AI_EVALUATION_RESULT, "attributes": otel_attributes(evaluation)}
