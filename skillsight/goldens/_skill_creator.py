"""Anthropic skill-creator's ``evals/evals.json`` and its trigger evals.

evals.json::

    {"skill_name": "csv-summary",
     "evals": [{"id": 1, "prompt": "...", "expected_output": "...",
                "files": ["evals/files/sales.csv"], "expectations": ["..."]}]}

``expectations`` is also spelled ``assertions`` in skill-creator's documents; both are read,
``expectations`` is written. ``id`` is an integer there, so a case's own id, and what the format
has no field for (expected skill and script, environment, tags, status, provenance), travel in a
``"skillsight"`` object. Trigger evals are a list of ``{"query", "should_trigger"}`` (or
``{"evals": [{"prompt", "should_trigger"}]}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from skillsight.errors import GoldenSetError
from skillsight.goldens._model import (
    GoldenCase,
    Provenance,
    case_id_for,
    case_object,
    check_unique,
    first_error,
    string_list,
)

FORMAT = "skill-creator"
TRIGGER_FORMAT = "trigger"


def write_skill_creator(skill_name: str, cases: list[GoldenCase]) -> dict[str, Any]:
    """The skill-creator document of ``cases`` (ids numbered from 1 in order)."""
    evals = []
    for number, case in enumerate(cases, start=1):
        extension: dict[str, Any] = {"case_id": case.case_id}
        if case.expected_skill != skill_name:
            extension["expected_skill"] = case.expected_skill
        for name in ("expected_script", "environment", "should_trigger"):
            value = getattr(case, name)
            if value is not None:
                extension[name] = value
        if case.tags:
            extension["tags"] = dict(case.tags)
        if case.status != "active":
            extension["status"] = case.status
        provenance = case.provenance.model_dump(exclude_defaults=True)
        if provenance:
            extension["provenance"] = provenance
        item: dict[str, Any] = {"id": number, "prompt": case.question}
        item["expected_output"] = case.ground_truth if case.ground_truth is not None else ""
        item["files"] = list(case.files)
        item["expectations"] = list(case.expected_behavior)
        item["skillsight"] = extension
        evals.append(item)
    return {"skill_name": skill_name, "evals": evals}


def _eval(item: Any, index: int, skill_name: str) -> GoldenCase:
    where = f"evals[{index}]"
    item, extra = case_object(item, where)
    key = "expectations" if "expectations" in item else "assertions"
    expected_output = item.get("expected_output")
    raw_id = extra.get("case_id") or f"eval-{item.get('id', index + 1)}"
    try:
        return GoldenCase(
            case_id=str(raw_id),
            question=item.get("prompt") or "",
            ground_truth=expected_output if expected_output else None,
            expected_behavior=string_list(item.get(key), f"{where}.{key}"),
            expected_skill=extra.get("expected_skill", skill_name),
            expected_script=extra.get("expected_script"),
            environment=extra.get("environment"),
            files=string_list(item.get("files"), f"{where}.files"),
            should_trigger=extra.get("should_trigger"),
            tags=dict(extra.get("tags") or {}),
            status=extra.get("status", "active"),
            provenance=Provenance.model_validate(extra.get("provenance") or {}),
        )
    except ValidationError as exc:
        raise GoldenSetError(f"{where}: {first_error(exc)}") from exc


def read_skill_creator(document: Mapping[str, Any]) -> tuple[str, list[GoldenCase]]:
    """``(skill_name, cases)`` of a skill-creator evals.json."""
    skill_name = document.get("skill_name")
    if not isinstance(skill_name, str) or not skill_name:
        raise GoldenSetError("the file names no skill_name")
    items = document.get("evals")
    if not isinstance(items, list):
        raise GoldenSetError("'evals' must be a list")
    cases = [_eval(item, index, skill_name) for index, item in enumerate(items)]
    check_unique(cases)
    return skill_name, cases


def write_trigger_evals(skill_name: str, cases: list[GoldenCase]) -> list[dict[str, Any]]:
    """skill-creator's trigger evals: each case's request and whether the skill should fire."""
    return [{"query": c.question, "should_trigger": c.triggers_for(skill_name)} for c in cases]


def read_trigger_evals(document: Any, skill_name: str) -> list[GoldenCase]:
    """Cases from trigger evals (either shape); a case that should trigger expects the skill."""
    items = document.get("evals") if isinstance(document, Mapping) else document
    if not isinstance(items, list):
        raise GoldenSetError("trigger evals are a list of {query, should_trigger}")
    cases = []
    for index, item in enumerate(items):
        where = f"trigger eval {index}"
        if not isinstance(item, Mapping):
            raise GoldenSetError(f"{where} is not an object")
        query = item.get("query", item.get("prompt"))
        trigger = item.get("should_trigger")
        if not isinstance(query, str) or not query.strip():
            raise GoldenSetError(f"{where} has no query")
        if not isinstance(trigger, bool):
            raise GoldenSetError(f"{where}: should_trigger must be true or false")
        cases.append(
            GoldenCase(
                case_id=case_id_for(query, "trigger"),
                question=query,
                expected_skill=skill_name if trigger else None,
                should_trigger=trigger,
                tags={"data_source": "trigger_evals"},
            )
        )
    check_unique(cases)
    return cases
