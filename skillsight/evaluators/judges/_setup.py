"""The judges a service runs, from its settings, or none with the reason why."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from skillsight.config import Settings
from skillsight.evaluators import Registry
from skillsight.evaluators.judges._budget import RecordedSpend, SpendCap
from skillsight.evaluators.judges._cache import VerdictCache
from skillsight.evaluators.judges._client import JudgeClient
from skillsight.evaluators.judges._judge import JudgeEvaluator
from skillsight.evaluators.judges._rubric import RUBRIC_NAMES, load_rubric
from skillsight.evaluators.judges._settings import JudgeSettings, StructuredOutput


@dataclass(frozen=True)
class JudgeSetup:
    """What :func:`judge_registry` found: the judges, or ``None`` and why."""

    registry: Registry | None
    reason: str
    sample_rate: float = 0.0
    """Share of activations to judge (the scheduler samples by activation id hash)."""
    spend_cap: SpendCap | None = None

    @property
    def enabled(self) -> bool:
        return self.registry is not None

    @property
    def rates(self) -> dict[str, float]:
        """The sampling rate of each judge, by evaluator name (for the scheduler's policies)."""
        return {name: self.sample_rate for name in (self.registry.names if self.registry else ())}


def judge_settings(settings: Settings) -> JudgeSettings:
    """The judge call policy the service settings describe (the key comes from the
    provider's usual environment variable)."""
    mode: StructuredOutput = "auto"
    if settings.judge_structured_output == "json_schema":
        mode = "json_schema"
    elif settings.judge_structured_output == "tool":
        mode = "tool"
    return JudgeSettings(
        model=settings.judge_model,
        api_base=settings.judge_api_base,
        structured_output=mode,
        concurrency=settings.judge_concurrency,
        daily_spend_usd=settings.judge_daily_spend_usd,
        input_usd_per_mtok=settings.judge_input_usd_per_mtok,
        output_usd_per_mtok=settings.judge_output_usd_per_mtok,
    )


def build_judges(
    judge: JudgeSettings,
    rubrics: Iterable[str] = RUBRIC_NAMES,
    *,
    spend_cap: SpendCap | None = None,
) -> Registry:
    """A registry of judges, one per rubric, sharing one client, spend cap and cache."""
    client = JudgeClient(judge)
    cap = spend_cap or SpendCap(judge.daily_spend_usd)
    cache = VerdictCache(judge.cache_size)
    return Registry(
        JudgeEvaluator.for_rubric(load_rubric(name), client, spend_cap=cap, cache=cache)
        for name in rubrics
    )


def judge_registry(
    settings: Settings,
    rubrics: Iterable[str] = RUBRIC_NAMES,
    *,
    recorded_spend: RecordedSpend | None = None,
) -> JudgeSetup:
    """The LLM judges to run beside the deterministic evaluators, or none, with a reason for
    the service to log ("LLM judges off: …"). ``recorded_spend`` lets the spend cap count what
    the store says judges already spent today."""
    if not settings.judge_model.strip():
        return JudgeSetup(None, "no judge model configured (set SKILLSIGHT_JUDGE_MODEL)")
    if settings.judge_sample_rate <= 0:
        return JudgeSetup(None, "SKILLSIGHT_JUDGE_SAMPLE_RATE is 0")
    judge = judge_settings(settings)
    cap = SpendCap(judge.daily_spend_usd, recorded=recorded_spend)
    registry = build_judges(judge, rubrics, spend_cap=cap)
    where = f" at {judge.api_base}" if judge.api_base else ""
    reason = (
        f"LLM judges {', '.join(registry.names)} with {judge.model}{where} on "
        f"{settings.judge_sample_rate:.0%} of activations, spend cap "
        f"${judge.daily_spend_usd:g}/day (${cap.spent_usd:.4g} spent today)"
    )
    return JudgeSetup(registry, reason, settings.judge_sample_rate, cap)
