"""The output schemas a judge must answer in (JSON schema from these pydantic models).

Every field is required and no other field is allowed, which is what strict structured output
(OpenAI's ``strict: true``, and the tool-call fallback) expects. The answers to the checks are
an object whose required keys are the check ids (:func:`verdict_schema`), so a schema-valid
answer holds exactly one answer per listed check: an answer that leaves one out is malformed,
retried like broken JSON, and in the end an evaluation error, never a low score.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CheckVerdict(_Strict):
    check: str = Field(description="the id of the check, exactly as listed")
    satisfied: bool
    step_ids: list[int] = Field(
        description="ids of the listed steps that show the answer; required when satisfied"
    )
    reason: str = Field(description="one or two sentences")


class Verdict(_Strict):
    checks: list[CheckVerdict] = Field(description="one entry per listed check, in order")
    summary: str = Field(description="the overall judgement in one or two sentences")


class DispatchVerdict(_Strict):
    checks: list[CheckVerdict] = Field(description="one entry per listed check, in order")
    better_skill: str | None = Field(
        description="the visible skill that fits the request better, 'none' if no skill was "
        "needed, null if the activated skill was the right choice"
    )
    summary: str = Field(description="the overall judgement in one or two sentences")


SCHEMAS: dict[str, type[_Strict]] = {"checks": Verdict, "dispatch": DispatchVerdict}
"""Output schemas by the id a rubric's ``output`` names."""


class CheckAnswer(_Strict):
    satisfied: bool
    step_ids: list[int] = Field(
        description="ids of the listed steps that show the answer; required when satisfied"
    )
    reason: str = Field(description="one or two sentences")


@lru_cache(maxsize=256)
def verdict_schema(output: str, check_ids: tuple[str, ...]) -> type[BaseModel]:
    """The verdict model of rubric output ``output`` asking about ``check_ids``: ``checks`` is
    an object with one required :class:`CheckAnswer` per check id, and nothing else."""
    if output not in SCHEMAS:
        raise ValueError(f"unknown output schema {output!r}")
    if not check_ids or len(set(check_ids)) != len(check_ids):
        raise ValueError(f"check ids must be present and distinct: {check_ids!r}")
    fields: dict[str, Any] = {
        # no description beside the $ref: strict structured output refuses sibling keywords
        f"check_{n}": (CheckAnswer, Field(alias=check_id))
        for n, check_id in enumerate(check_ids)
    }
    answers = create_model(
        "CheckAnswers",
        __config__=ConfigDict(extra="forbid", populate_by_name=False),
        **fields,
    )
    top: dict[str, Any] = {
        "checks": (answers, Field()),
    }
    if output == "dispatch":
        top["better_skill"] = (
            str | None,
            Field(
                description="the visible skill that fits the request better, 'none' if no "
                "skill was needed, null if the activated skill was the right choice"
            ),
        )
    top["summary"] = (str, Field(description="the overall judgement in one or two sentences"))
    model: type[BaseModel] = create_model(
        "DispatchVerdict" if output == "dispatch" else "Verdict",
        __config__=ConfigDict(extra="forbid"),
        **top,
    )
    return model
