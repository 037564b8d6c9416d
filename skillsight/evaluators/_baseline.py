"""A skill's rolling baseline: medians of tool calls, tokens and duration of recent activations."""

from __future__ import annotations

import statistics
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from skillsight.collector.activations import Activation

DEFAULT_WINDOW = 200
DEFAULT_MIN_SAMPLES = 5


def total_tokens(activation: Activation) -> int:
    """Every token the model processed for the activation (fresh, cached and generated)."""
    t = activation.tokens
    return t.input + t.output + t.cache_read + t.cache_creation


@dataclass(frozen=True, slots=True)
class Baseline:
    """Medians over ``samples`` earlier activations of one skill."""

    tool_calls: float
    tokens: float
    duration_ms: float
    samples: int

    @classmethod
    def of(cls, activations: Iterable[Activation]) -> Baseline:
        items = list(activations)
        if not items:
            raise ValueError("a baseline needs at least one activation")
        return cls(
            tool_calls=statistics.median(len(a.tool_calls) for a in items),
            tokens=statistics.median(total_tokens(a) for a in items),
            duration_ms=statistics.median(a.duration_ms for a in items),
            samples=len(items),
        )


class RollingBaseline:
    """Per skill, the last ``window`` activations observed; thread-safe.

    Evaluate an activation against :meth:`get` *before* you :meth:`observe` it, so that it is
    never compared with itself.
    """

    def __init__(
        self, *, window: int = DEFAULT_WINDOW, min_samples: int = DEFAULT_MIN_SAMPLES
    ) -> None:
        if window < 1 or not 1 <= min_samples <= window:
            raise ValueError(
                f"need window >= 1 and 1 <= min_samples <= window, got {window}, {min_samples}"
            )
        self.window = window
        self.min_samples = min_samples
        self._recent: dict[str, deque[tuple[int, int, float]]] = {}
        self._lock = threading.Lock()

    def observe(self, activation: Activation) -> None:
        sample = (len(activation.tool_calls), total_tokens(activation), activation.duration_ms)
        with self._lock:
            recent = self._recent.setdefault(activation.skill_name, deque(maxlen=self.window))
            recent.append(sample)

    def get(self, skill_name: str) -> Baseline | None:
        """The skill's baseline, or None while fewer than ``min_samples`` were observed."""
        with self._lock:
            recent = list(self._recent.get(skill_name, ()))
        if len(recent) < self.min_samples:
            return None
        return Baseline(
            tool_calls=statistics.median(s[0] for s in recent),
            tokens=statistics.median(s[1] for s in recent),
            duration_ms=statistics.median(s[2] for s in recent),
            samples=len(recent),
        )
