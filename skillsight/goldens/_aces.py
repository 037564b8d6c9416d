"""BenchFlow / ACES ``evals/evals.json``: the format ``bench skills eval`` reads.

    {"version": "1", "skill_name": "csv-summary",
     "defaults": {"timeout_sec": 300},
     "cases": [{"id": "test-001", "question": "...", "ground_truth": "...",
                "expected_behavior": ["..."], "expected_skill": "csv-summary",
                "expected_script": "scripts/summarize_csv.py", "environment": {...}}]}

A case without ``expected_skill`` expects the file's skill; ``"expected_skill": null`` says the
right answer is to use no skill. What a golden case holds beyond these fields (fixture files,
``should_trigger``, tags, status, provenance, its id when the file's is not one of ours) travels
in a ``"skillsight"`` object of its own, which other readers ignore, so an export read back is
the same set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from skillsight.errors import GoldenSetError
from skillsight.goldens._model import (
    GoldenCase,
    Provenance,
    case_object,
    check_unique,
    first_error,
    string_list,
)

FORMAT = "aces"
SCHEMA_VERSION = "1"
DEFAULT_TIMEOUT_SEC = 300


def _extension(case: GoldenCase) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if case.files:
        extra["files"] = list(case.files)
    if case.should_trigger is not None:
        extra["should_trigger"] = case.should_trigger
    if case.tags:
        extra["tags"] = dict(case.tags)
    if case.status != "active":
        extra["status"] = case.status
    provenance = case.provenance.model_dump(exclude_defaults=True)
    if provenance:
        extra["provenance"] = provenance
    return extra


def write_aces(
    skill_name: str, cases: list[GoldenCase], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """The BenchFlow/ACES document of ``cases``."""
    out_cases = []
    for case in cases:
        item: dict[str, Any] = {"id": case.case_id, "question": case.question}
        if case.ground_truth is not None:
            item["ground_truth"] = case.ground_truth
        item["expected_behavior"] = list(case.expected_behavior)
        item["expected_skill"] = case.expected_skill
        if case.expected_script is not None:
            item["expected_script"] = case.expected_script
        if case.environment is not None:
            item["environment"] = case.environment
        extension = _extension(case)
        if extension:
            item["skillsight"] = extension
        out_cases.append(item)
    return {
        "version": SCHEMA_VERSION,
        "skill_name": skill_name,
        "defaults": {"timeout_sec": DEFAULT_TIMEOUT_SEC, **dict(defaults)},
        "cases": out_cases,
    }


def _case(item: Any, index: int, skill_name: str) -> GoldenCase:
    where = f"cases[{index}]"
    item, extra = case_object(item, where)
    raw_id = item.get("id")
    if raw_id is None or isinstance(raw_id, bool):
        raise GoldenSetError(f"{where} has no id")
    try:
        return GoldenCase(
            case_id=str(raw_id),
            question=item.get("question") or "",
            ground_truth=item.get("ground_truth"),
            expected_behavior=string_list(
                item.get("expected_behavior"), f"{where}.expected_behavior"
            ),
            expected_skill=item.get("expected_skill", skill_name),
            expected_script=item.get("expected_script"),
            environment=item.get("environment"),
            files=string_list(extra.get("files"), f"{where}.skillsight.files"),
            should_trigger=extra.get("should_trigger"),
            tags=dict(extra.get("tags") or {}),
            status=extra.get("status", "active"),
            provenance=Provenance.model_validate(extra.get("provenance") or {}),
        )
    except ValidationError as exc:
        raise GoldenSetError(f"{where}: {first_error(exc)}") from exc


def read_aces(document: Mapping[str, Any]) -> tuple[str, list[GoldenCase], dict[str, Any]]:
    """``(skill_name, cases, defaults)`` of a BenchFlow/ACES document."""
    skill_name = document.get("skill_name")
    if not isinstance(skill_name, str) or not skill_name:
        raise GoldenSetError("the file names no skill_name")
    items = document.get("cases")
    if not isinstance(items, list):
        raise GoldenSetError("'cases' must be a list")
    defaults = document.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise GoldenSetError("'defaults' must be an object")
    cases = [_case(item, index, skill_name) for index, item in enumerate(items)]
    check_unique(cases)
    return skill_name, cases, dict(defaults)
