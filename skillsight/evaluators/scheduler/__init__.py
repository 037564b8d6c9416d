"""Online evaluation: score completed activations as their sessions are rebuilt.

The scheduler takes each rebuilt session's activations (from the finalizer in ``serve``, or from
the store's rebuild log in ``eval worker``), assembles their context, samples and partitions them
per evaluator, and writes the evaluations; backfill scores what is already stored.
"""

from __future__ import annotations

from skillsight.evaluators.scheduler._backfill import backfill
from skillsight.evaluators.scheduler._context import ContextAssembler
from skillsight.evaluators.scheduler._policy import (
    Policy,
    parse_rates,
    partition_of,
    sample_point,
    split_names,
)
from skillsight.evaluators.scheduler._poller import RebuiltSessionPoller
from skillsight.evaluators.scheduler._scheduler import EvaluationScheduler
from skillsight.evaluators.scheduler._scoring import score_activations

__all__ = [
    "ContextAssembler",
    "EvaluationScheduler",
    "Policy",
    "RebuiltSessionPoller",
    "backfill",
    "parse_rates",
    "partition_of",
    "sample_point",
    "score_activations",
    "split_names",
]
