"""Reading and writing files of cases in every supported format, detected by shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from skillsight.errors import GoldenSetError
from skillsight.goldens import _aces, _skill_creator
from skillsight.goldens._model import GoldenCase, GoldenSet

FORMATS: tuple[str, ...] = (_aces.FORMAT, _skill_creator.FORMAT, _skill_creator.TRIGGER_FORMAT)
"""``aces`` (BenchFlow/ACES evals.json), ``skill-creator`` (Anthropic skill-creator
evals.json), ``trigger`` (skill-creator trigger evals)."""


class ImportedCases(NamedTuple):
    format: str
    skill_name: str
    cases: list[GoldenCase]
    defaults: dict[str, Any]


def detect_format(document: Any) -> str:
    """Which format a parsed document is in."""
    if isinstance(document, list):
        return _skill_creator.TRIGGER_FORMAT
    if isinstance(document, dict):
        if "cases" in document:
            return _aces.FORMAT
        items = document.get("evals")
        if isinstance(items, list):
            shaped = [i for i in items if isinstance(i, dict)]
            if shaped and all(set(i) <= {"prompt", "query", "should_trigger"} for i in shaped):
                return _skill_creator.TRIGGER_FORMAT
            return _skill_creator.FORMAT
    raise GoldenSetError(
        "not a file of cases: expected BenchFlow/ACES evals.json ('cases'), skill-creator "
        "evals.json ('evals') or trigger evals (a list of {query, should_trigger})"
    )


def parse_cases(document: Any, *, skill: str = "", fmt: str = "") -> ImportedCases:
    """The cases of a parsed document; ``skill`` is needed for trigger evals, which name none,
    and must match the file's skill when both are given."""
    chosen = fmt or detect_format(document)
    if chosen == _aces.FORMAT:
        if not isinstance(document, dict):
            raise GoldenSetError("a BenchFlow/ACES evals.json is a JSON object")
        name, cases, defaults = _aces.read_aces(document)
    elif chosen == _skill_creator.FORMAT:
        if not isinstance(document, dict):
            raise GoldenSetError("a skill-creator evals.json is a JSON object")
        name, cases = _skill_creator.read_skill_creator(document)
        defaults = {}
    elif chosen == _skill_creator.TRIGGER_FORMAT:
        if not skill:
            raise GoldenSetError("trigger evals name no skill: pass the skill (--skill NAME)")
        name, cases, defaults = skill, _skill_creator.read_trigger_evals(document, skill), {}
    else:
        raise GoldenSetError(f"unknown format {chosen!r} (known: {', '.join(FORMATS)})")
    if skill and name != skill:
        raise GoldenSetError(f"the file's cases are for skill {name!r}, not {skill!r}")
    return ImportedCases(chosen, name, cases, defaults)


def read_cases_file(path: Path, *, skill: str = "", fmt: str = "") -> ImportedCases:
    """:func:`parse_cases` of a JSON file."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise GoldenSetError(f"{path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise GoldenSetError(f"{path}: not JSON ({exc})") from exc
    try:
        return parse_cases(document, skill=skill, fmt=fmt)
    except GoldenSetError as exc:
        raise GoldenSetError(f"{path}: {exc}") from exc


def render_cases(golden: GoldenSet, fmt: str) -> Any:
    """The set's replayed-or-not cases as a document of ``fmt``."""
    if fmt == _aces.FORMAT:
        return _aces.write_aces(golden.skill_name, golden.cases, golden.defaults)
    if fmt == _skill_creator.FORMAT:
        return _skill_creator.write_skill_creator(golden.skill_name, golden.cases)
    if fmt == _skill_creator.TRIGGER_FORMAT:
        return _skill_creator.write_trigger_evals(golden.skill_name, golden.cases)
    raise GoldenSetError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


def write_cases_file(golden: GoldenSet, fmt: str, path: Path) -> None:
    text = json.dumps(render_cases(golden, fmt), indent=2, ensure_ascii=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise GoldenSetError(f"{path}: {exc.strerror or exc}") from exc
