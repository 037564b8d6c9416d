"""Calibration: how far a judge agrees with people, per rubric, before anyone gates on it.

A labelled set is JSON Lines, one activation per line::

    {"activation": {...Activation JSON...}, "rubric": "dispatch", "label": "pass"}
    {"activation": "runs/session-7.atif.json", "skill": "csv-summary", "rubric": "integration",
     "label": false}
    {"activation_id": "0ec4f8…", "rubric": "behavior_check", "label": true,
     "expected_behavior": ["states the total", "names the top region"]}

``activation`` is an Activation object or the path of an ATIF trajectory (relative to the file;
``skill`` or ``index`` picks the activation when it has several); ``activation_id`` is looked up
in the store. ``label`` is the person's verdict: ``pass``/``fail`` (or true/false, yes/no).
Optional ``expected_behavior`` and ``skill_rubric`` feed the rubrics that need them.

Agreement counts only items the judge scored: an error or a spend-capped item is reported as
unscored, never guessed. Cohen's kappa is (p_o - p_e) / (1 - p_e) over the pass/fail labels,
undefined (``None``) when p_e = 1 (both raters used one label throughout).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from skillsight.errors import EvaluatorError
from skillsight.evaluators import Evaluation, Registry
from skillsight.evaluators.judges._context import JudgeContext, SkillRubric
from skillsight.evaluators.judges._judge import JudgeEvaluator
from skillsight.rebuild.activations.extract import extract_activations
from skillsight.rebuild.trajectories import atif
from skillsight.store.records import Activation

LABELS: tuple[str, str] = ("pass", "fail")
_YES = {"pass", "true", "yes", "1", "passed"}
_NO = {"fail", "false", "no", "0", "failed"}

Resolver = Callable[[str], Activation | None]


@dataclass(frozen=True)
class CalibrationItem:
    line: int
    rubric: str
    label: str
    activation: Activation
    context: JudgeContext


@dataclass(frozen=True)
class Agreement:
    """One rubric's agreement with the human labels."""

    rubric: str
    scored: int
    unscored: int
    accuracy: float | None
    kappa: float | None
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    """human label -> judge label -> count."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "rubric": self.rubric,
            "scored": self.scored,
            "unscored": self.unscored,
            "accuracy": self.accuracy,
            "kappa": self.kappa,
            "confusion": self.confusion,
        }


def _label(value: Any, where: str) -> str:
    text = str(value).strip().lower()
    if text in _YES:
        return "pass"
    if text in _NO:
        return "fail"
    raise EvaluatorError(f"{where}: label {value!r} is not pass/fail (or true/false, yes/no)")


def load_labelled(path: Path, resolve: Resolver | None = None) -> list[CalibrationItem]:
    """Read a labelled set; a bad line raises :class:`EvaluatorError` naming the line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EvaluatorError(f"{path}: {exc.strerror or exc}") from exc
    items = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise EvaluatorError(f"{where}: not JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise EvaluatorError(f"{where}: expected a JSON object")
        items.append(_item(data, number, where, path.parent, resolve))
    if not items:
        raise EvaluatorError(f"{path}: no labelled activations")
    return items


def _item(
    data: Mapping[str, Any], number: int, where: str, base: Path, resolve: Resolver | None
) -> CalibrationItem:
    if "rubric" not in data or "label" not in data:
        raise EvaluatorError(f"{where}: needs 'rubric' and 'label'")
    label = _label(data["label"], where)
    trajectory: atif.Trajectory | None = None
    source = data.get("activation")
    try:
        if isinstance(source, dict):
            activation = Activation.model_validate(source)
        elif isinstance(source, str):
            trajectory = atif.parse(_read(base / source, where))
            activation = _pick(extract_activations(trajectory), data, where)
        elif "activation_id" in data:
            if resolve is None:
                raise EvaluatorError(f"{where}: activation ids need a store (--data/--clickhouse)")
            found = resolve(str(data["activation_id"]))
            if found is None:
                raise EvaluatorError(f"{where}: no activation {data['activation_id']!r}")
            activation = found
        else:
            raise EvaluatorError(f"{where}: needs 'activation' (object or ATIF path) or an id")
        rubric = SkillRubric.from_dict(data.get("skill_rubric") or {})
    except (ValidationError, atif.TrajectoryError, ValueError) as exc:
        raise EvaluatorError(f"{where}: {exc}") from exc
    context = JudgeContext(
        expected_behavior=tuple(str(a) for a in data.get("expected_behavior") or ()),
        skill_rubric=rubric if rubric.key_steps or rubric.reflection_checks else None,
        trajectory=trajectory,
    )
    return CalibrationItem(number, str(data["rubric"]), label, activation, context)


def _read(path: Path, where: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EvaluatorError(f"{where}: {path}: {exc.strerror or exc}") from exc


def _pick(activations: list[Activation], data: Mapping[str, Any], where: str) -> Activation:
    skill = data.get("skill")
    chosen = [a for a in activations if not skill or a.skill_name == skill]
    index = int(data.get("index", 0))
    if not 0 <= index < len(chosen):
        raise EvaluatorError(
            f"{where}: the trajectory has {len(chosen)} matching activations, no index {index}"
        )
    return chosen[index]


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of (human, judge) label pairs; ``None`` when chance agreement is 1."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(h == j for h, j in pairs) / n
    human = Counter(h for h, _ in pairs)
    judge = Counter(j for _, j in pairs)
    expected = sum(human[label] * judge[label] for label in set(human) | set(judge)) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def calibrate(
    items: Sequence[CalibrationItem], judges: Registry
) -> tuple[list[Agreement], list[Evaluation]]:
    """Judge every item with its rubric; agreement per rubric (in first-seen order)."""
    rubrics = list(dict.fromkeys(item.rubric for item in items))
    for name in rubrics:
        judges.get(name)  # an unknown rubric fails before any model call
    evaluations: list[Evaluation] = []
    agreements = []
    for name in rubrics:
        chosen = [item for item in items if item.rubric == name]
        judge = judges.get(name)
        activations = [item.activation for item in chosen]
        if isinstance(judge, JudgeEvaluator):
            results = judge.evaluate_many(activations, contexts=[i.context for i in chosen])
        else:
            results = [judge.evaluate(i.activation, i.context) for i in chosen]
        evaluations.extend(results)
        agreements.append(_agreement(name, chosen, results))
    return agreements, evaluations


def _agreement(
    name: str, items: Sequence[CalibrationItem], results: Sequence[Evaluation]
) -> Agreement:
    pairs = [
        (item.label, "pass" if result.passed else "fail")
        for item, result in zip(items, results, strict=True)
        if result.passed is not None
    ]
    confusion = {h: {j: 0 for j in LABELS} for h in LABELS}
    for human, judged in pairs:
        confusion[human][judged] += 1
    accuracy = sum(h == j for h, j in pairs) / len(pairs) if pairs else None
    return Agreement(
        name, len(pairs), len(items) - len(pairs), accuracy, cohen_kappa(pairs), confusion
    )
