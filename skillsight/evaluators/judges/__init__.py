"""LLM-judge rubrics: evaluators that ask a model of the user's choice, through litellm.

Each shipped rubric (``dispatch``, ``internal_trajectory``, ``integration``, ``behavior_check``,
``following``, ``reflection``) is versioned data in ``rubrics/``; :func:`judge_registry` turns the
service settings into a :class:`~skillsight.evaluators.Registry` of judges the scheduler runs
beside the deterministic evaluators. ``docs/judges.md`` describes the rubrics and their policies.
"""

from __future__ import annotations

from skillsight.evaluators.judges._budget import RecordedSpend, SpendCap
from skillsight.evaluators.judges._cache import CacheKey, VerdictCache, inputs_hash
from skillsight.evaluators.judges._calibrate import (
    Agreement,
    CalibrationItem,
    calibrate,
    cohen_kappa,
    load_labelled,
)
from skillsight.evaluators.judges._client import (
    JudgeCallError,
    JudgeClient,
    JudgeReply,
    release_connections,
)
from skillsight.evaluators.judges._context import JudgeContext, SkillRubric, judge_context
from skillsight.evaluators.judges._credit import Credit, credit
from skillsight.evaluators.judges._judge import NOT_EVALUATED, SPEND_CAP_REACHED, JudgeEvaluator
from skillsight.evaluators.judges._render import Limits, RenderedInputs, render_inputs
from skillsight.evaluators.judges._rubric import (
    RUBRIC_NAMES,
    Check,
    Rubric,
    load_rubric,
    system_prompt,
)
from skillsight.evaluators.judges._settings import JudgeSettings, StructuredOutput
from skillsight.evaluators.judges._setup import (
    JudgeSetup,
    build_judges,
    judge_registry,
    judge_settings,
)
from skillsight.evaluators.judges._verdicts import (
    CheckAnswer,
    CheckVerdict,
    DispatchVerdict,
    Verdict,
    verdict_schema,
)

__all__ = [
    "NOT_EVALUATED",
    "RUBRIC_NAMES",
    "SPEND_CAP_REACHED",
    "Agreement",
    "CacheKey",
    "CalibrationItem",
    "Check",
    "CheckAnswer",
    "CheckVerdict",
    "Credit",
    "DispatchVerdict",
    "JudgeCallError",
    "JudgeClient",
    "JudgeContext",
    "JudgeEvaluator",
    "JudgeReply",
    "JudgeSettings",
    "JudgeSetup",
    "Limits",
    "RecordedSpend",
    "RenderedInputs",
    "Rubric",
    "SkillRubric",
    "SpendCap",
    "StructuredOutput",
    "Verdict",
    "VerdictCache",
    "build_judges",
    "calibrate",
    "cohen_kappa",
    "credit",
    "inputs_hash",
    "judge_context",
    "judge_registry",
    "judge_settings",
    "load_labelled",
    "load_rubric",
    "release_connections",
    "render_inputs",
    "system_prompt",
    "verdict_schema",
]
