"""A skill's rolling baseline: medians of tool calls, tokens and duration of recent activations."""

from __future__ import annotations

import json
import math
import statistics
import threading
from bisect import insort
from collections import deque
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from skillsight.store.records import Activation

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


# The stored baselines' encoder, made once (``json.dumps`` with options builds one per call).
_BASELINE = json.JSONEncoder(separators=(",", ":"))
# The text of each baseline stored lately, by the object: a skill's baseline is one object
# until its next sample (``RollingBaseline``), compared with every activation of the skill a
# batch holds; the entry keeps the object, so its id names no other meanwhile.
_STORED: dict[int, tuple[Baseline, str]] = {}
_STORED_MAX = 1024


def stored_baseline(baseline: Baseline | None) -> str:
    """``baseline`` as the JSON an evaluation row keeps (``"null"``: none yet); floats exactly,
    a NaN median (a duration unknown) as ``null``."""
    if baseline is None:
        return "null"
    kept = _STORED.get(id(baseline))
    if kept is not None and kept[0] is baseline:
        return kept[1]
    # as floats: a median of ints is an int, the same baseline read back a float
    medians = [float(m) for m in (baseline.tool_calls, baseline.tokens, baseline.duration_ms)]
    text: str = _BASELINE.encode(
        {
            "tool_calls": medians[0] if math.isfinite(medians[0]) else None,
            "tokens": medians[1] if math.isfinite(medians[1]) else None,
            "duration_ms": medians[2] if math.isfinite(medians[2]) else None,
            "samples": baseline.samples,
        }
    )
    if len(_STORED) >= _STORED_MAX:
        _STORED.clear()
    _STORED[id(baseline)] = (baseline, text)
    return text


def restored_baseline(text: str) -> Baseline | None:
    """The baseline :func:`stored_baseline` wrote; ``ValueError`` when ``text`` is not one."""
    try:
        found = json.loads(text)
    except RecursionError as exc:  # nested past the parser's stack
        raise ValueError(f"not a stored baseline: {text[:80]!r}") from exc
    if found is None:
        return None
    if not isinstance(found, dict):
        raise ValueError(f"not a stored baseline: {text[:80]!r}")
    try:
        return Baseline(
            tool_calls=_median_of(found["tool_calls"]),
            tokens=_median_of(found["tokens"]),
            duration_ms=_median_of(found["duration_ms"]),
            samples=int(found["samples"]),
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a stored baseline: {text[:80]!r}") from exc


def _median_of(value: object) -> float:
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"a median must be a number, not {value!r}")
    return float(value)


def _of_samples(samples: Collection[tuple[int, int, float]]) -> Baseline:
    """The medians of (tool calls, tokens, duration) samples, by ``statistics.median``."""
    return Baseline(
        tool_calls=statistics.median(s[0] for s in samples),
        tokens=statistics.median(s[1] for s in samples),
        duration_ms=statistics.median(s[2] for s in samples),
        samples=len(samples),
    )


def _median(ordered: list[float]) -> float:
    """statistics.median of an already sorted list, with the same arithmetic."""
    n = len(ordered)
    if n % 2 == 1:
        return ordered[n // 2]
    return (ordered[n // 2 - 1] + ordered[n // 2]) / 2


class _Window:
    """One skill's recent samples: in arrival order (for eviction) and each metric kept sorted,
    so a median is an index instead of three sorts of the whole window per lookup."""

    __slots__ = ("baseline", "ids", "ordered", "samples", "unordered")

    def __init__(self, size: int) -> None:
        self.samples: deque[tuple[int, int, float]] = deque(maxlen=size)
        self.ids: deque[str] = deque(maxlen=size)
        """The activation id of each sample, in the same order."""
        self.ordered: tuple[list[float], list[float], list[float]] = ([], [], [])
        self.unordered = 0
        """Samples holding a NaN: sorted order means nothing while any is in the window."""
        self.baseline: Baseline | None = None

    def add(self, sample: tuple[int, int, float], key: str = "") -> None:
        self.ids.append(key)  # its maxlen drops the oldest id with the oldest sample
        samples = self.samples
        was_unordered = self.unordered > 0
        if len(samples) == samples.maxlen:
            old = samples[0]
            if old[2] != old[2]:
                self.unordered -= 1
            for values, value in zip(self.ordered, old, strict=True):
                # Equal values keep their arrival order, so the first equal one is the oldest.
                values.remove(value)
        samples.append(sample)
        if sample[2] != sample[2]:
            self.unordered += 1
        if was_unordered and not self.unordered:
            # The last NaN left: bisection misplaced values while it was there; sort afresh,
            # in arrival order as statistics.median would.
            for index, values in enumerate(self.ordered):
                values[:] = sorted(s[index] for s in samples)
        else:
            for values, value in zip(self.ordered, sample, strict=True):
                insort(values, value)
        self.baseline = None

    def get(self) -> Baseline:
        if self.baseline is None:
            if self.unordered:
                # statistics.median over a window with a NaN, exactly as it was computed before
                self.baseline = _of_samples(self.samples)
            else:
                calls, tokens, durations = self.ordered
                self.baseline = Baseline(
                    tool_calls=_median(calls),
                    tokens=_median(tokens),
                    duration_ms=_median(durations),
                    samples=len(self.samples),
                )
        return self.baseline


class RollingBaseline:
    """Per skill, the last ``window`` production activations observed; thread-safe.

    Evaluate an activation against :meth:`get` *before* you :meth:`observe` it, so that it is
    never compared with itself. A lookup costs a dict read: the medians are kept up to date as
    samples come and go, and the baseline object is reused until the next sample.
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
        self._recent: dict[str, _Window] = {}
        self._lock = threading.Lock()

    def observe(self, activation: Activation) -> None:
        """Add a production activation; a paired rerun's (``rerun_id``) is left out: the
        baseline is the skill's production behaviour, which reruns are compared with."""
        if activation.rerun_id:
            return
        sample = (len(activation.tool_calls), total_tokens(activation), activation.duration_ms)
        with self._lock:
            recent = self._recent.get(activation.skill_name)
            if recent is None:
                recent = self._recent[activation.skill_name] = _Window(self.window)
            recent.add(sample, activation.activation_id)

    def get(self, skill_name: str, *, excluding: str = "") -> Baseline | None:
        """The skill's baseline, or None while fewer than ``min_samples`` were observed;
        without the activation ``excluding`` when it is in the window (one scored again, once
        its own sample is there: never compared with itself)."""
        with self._lock:
            recent = self._recent.get(skill_name)
            if recent is None:
                return None
            if excluding and excluding in recent.ids:
                rest = [
                    s for s, k in zip(recent.samples, recent.ids, strict=True) if k != excluding
                ]
                return _of_samples(rest) if len(rest) >= self.min_samples else None
            if len(recent.samples) < self.min_samples:
                return None
            return recent.get()
