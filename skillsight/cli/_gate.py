"""``skillsight gate``: evaluation scores as a CI exit code.

Thresholds come from ``--min evaluator=value`` and from a ``skillsight.toml`` (found in the
current folder or the nearest parent, or named with ``--config``)::

    [gate]
    skill = "csv-summary"             # the skill gated when --skill is not given
    window = "30d"                    # activations started within this span
    [gate.min]                        # thresholds for every skill
    allowed_tools = 1.0
    security = 1.0
    [gate.skills.csv-summary.min]     # per-skill thresholds, over [gate.min]
    script_execution = 1.0

``--min`` wins over the file. An evaluator fails the gate when the mean of its current scores
over the selected activations is below its threshold; an evaluator with no scores (it did not
apply) does not. No activation at all is an error, not a pass.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillsight.errors import ConfigError
from skillsight.reports import ScorecardOut, ScoredActivationOut

CONFIG_NAME = "skillsight.toml"


@dataclass(frozen=True)
class GateConfig:
    skill: str = ""
    window: str = ""
    thresholds: Mapping[str, float] = field(default_factory=dict)
    source: Path | None = None


def find_config(start: Path) -> Path | None:
    """``skillsight.toml`` in ``start`` or its nearest parent that has one."""
    for folder in (start.resolve(), *start.resolve().parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def _thresholds(table: Any, where: str, known: Iterable[str]) -> dict[str, float]:
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where} must be a table of evaluator = threshold")
    return {name: _threshold(name, value, where, known) for name, value in table.items()}


def _threshold(name: str, value: Any, where: str, known: Iterable[str]) -> float:
    names = set(known)
    if name not in names:
        raise ConfigError(
            f"{where}: no evaluator named {name!r} (known: {', '.join(sorted(names))})"
        )
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ConfigError(f"{where}: {name} = {value!r} is not a threshold in [0, 1]")
    return float(value)


def read_config(path: Path, skill: str, known: Iterable[str]) -> GateConfig:
    """The ``[gate]`` table of ``path``, with ``skill``'s own thresholds merged over the
    shared ones (``skill`` = '' uses the file's default skill)."""
    names = list(known)
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    gate = data.get("gate", {})
    if not isinstance(gate, Mapping):
        raise ConfigError(f"{path}: [gate] must be a table")
    chosen = skill or str(gate.get("skill", ""))
    thresholds = _thresholds(gate.get("min", {}), f"{path}: [gate.min]", names)
    per_skill = gate.get("skills", {})
    if not isinstance(per_skill, Mapping):
        raise ConfigError(f"{path}: [gate.skills] must be a table of skills")
    own = per_skill.get(chosen, {}) if chosen else {}
    if not isinstance(own, Mapping):
        raise ConfigError(f"{path}: [gate.skills.{chosen}] must be a table")
    where = f"{path}: [gate.skills.{chosen}.min]"
    thresholds.update(_thresholds(own.get("min", {}), where, names))
    return GateConfig(chosen, str(gate.get("window", "")), thresholds, path)


def parse_min(items: Iterable[str], known: Iterable[str]) -> dict[str, float]:
    """``["allowed_tools=1.0", ...]`` -> thresholds by evaluator."""
    names = list(known)
    out: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--min {item!r} is not evaluator=threshold")
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(f"--min {item!r}: {value!r} is not a number") from None
        out[name.strip()] = _threshold(name.strip(), number, "--min", names)
    return out


@dataclass(frozen=True)
class Verdict:
    evaluator: str
    threshold: float
    scored: int
    mean_score: float | None
    pass_rate: float | None

    @property
    def ok(self) -> bool:
        return self.mean_score is None or self.mean_score >= self.threshold


@dataclass(frozen=True)
class GateResult:
    skill: str
    version: str
    activations: int
    verdicts: tuple[Verdict, ...]
    failing: tuple[ScoredActivationOut, ...] = ()

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.verdicts)


def judge(card: ScorecardOut, thresholds: Mapping[str, float]) -> tuple[Verdict, ...]:
    """Each threshold against the evaluator's scores in the scorecard."""
    by_name = {e.evaluator: e for e in card.evaluators}
    verdicts = []
    for name, threshold in thresholds.items():
        found = by_name.get(name)
        verdicts.append(
            Verdict(
                name,
                threshold,
                found.scored if found else 0,
                found.mean_score if found else None,
                found.pass_rate if found else None,
            )
        )
    return tuple(verdicts)
