"""Which evaluator scores which activation: hash sampling, filters and the worker's share.

Both decisions hash the activation id, never draw a random number, so every process (and every
rerun) agrees: an activation sampled for an evaluator once is always sampled for it, and N
workers with indexes 0..N-1 each own a disjoint share of the activations without talking to
each other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from skillsight.errors import ConfigError
from skillsight.store.records import Activation

_SCALE = float(1 << 64)


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def sample_point(evaluator: str, activation_id: str) -> float:
    """Where the activation falls in [0, 1) for ``evaluator``; it is sampled at rate r when
    this is below r. Salted by the evaluator so that two evaluators at 10 % do not pick the
    same tenth."""
    return _hash64(f"{evaluator}\x00{activation_id}") / _SCALE


def partition_of(activation_id: str, workers: int) -> int:
    """The index of the worker (of ``workers``) that owns the activation."""
    return _hash64(activation_id) % workers if workers > 1 else 0


@dataclass(frozen=True, slots=True)
class Policy:
    """When one evaluator runs: on a ``sample_rate`` share of the activations that pass the
    filters (an empty filter lets everything through)."""

    sample_rate: float = 1.0
    skills: frozenset[str] = frozenset()
    agents: frozenset[str] = frozenset()
    projects: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not 0.0 <= self.sample_rate <= 1.0:
            raise ConfigError(f"a sampling rate must be in [0, 1], got {self.sample_rate}")

    def selects(self, evaluator: str, activation: Activation) -> bool:
        if self.skills and activation.skill_name not in self.skills:
            return False
        if self.agents and activation.agent not in self.agents:
            return False
        if self.projects and activation.project_id not in self.projects:
            return False
        if self.sample_rate >= 1.0:
            return True
        return sample_point(evaluator, activation.activation_id) < self.sample_rate


def split_names(raw: str) -> frozenset[str]:
    """``"a, b,,c"`` -> ``{"a", "b", "c"}``."""
    return frozenset(part.strip() for part in raw.split(",") if part.strip())


def parse_rates(raw: str, known: Iterable[str]) -> dict[str, float]:
    """``"skill_selection=0.1,efficiency=0.5"`` -> rates by evaluator name."""
    names = set(known)
    rates: dict[str, float] = {}
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in names:
            raise ConfigError(
                f"SKILLSIGHT_EVAL_SAMPLE: {item!r} is not name=rate with a known evaluator "
                f"({', '.join(sorted(names))})"
            )
        try:
            rate = float(value)
        except ValueError:
            raise ConfigError(f"SKILLSIGHT_EVAL_SAMPLE: {item!r}: {value!r} is no number") from None
        if not 0.0 <= rate <= 1.0:
            raise ConfigError(f"SKILLSIGHT_EVAL_SAMPLE: {item!r}: the rate must be in [0, 1]")
        rates[name] = rate
    return rates


def policies(
    evaluators: Iterable[str],
    *,
    rates: Mapping[str, float] | None = None,
    skills: Iterable[str] = (),
    agents: Iterable[str] = (),
    projects: Iterable[str] = (),
) -> dict[str, Policy]:
    """One policy per evaluator: its own rate, the shared filters."""
    shared = {
        "skills": frozenset(skills),
        "agents": frozenset(agents),
        "projects": frozenset(projects),
    }
    return {name: Policy((rates or {}).get(name, 1.0), **shared) for name in evaluators}
