"""Verdicts already paid for, keyed by (rubric, rubric version, model, inputs hash).

The inputs hash covers everything the prompt is made of (the rendered inputs, not the random
fence boundaries), so the same activation judged twice by the same rubric version and model costs
one call, and any change to the rubric's text or version, or to the model, misses.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CacheKey:
    rubric: str
    version: str
    model: str
    inputs_hash: str


def inputs_hash(inputs: Any) -> str:
    """A stable digest of JSON-ready prompt inputs."""
    text = json.dumps(inputs, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class VerdictCache:
    """A thread-safe in-process LRU of parsed verdicts (JSON-ready dicts)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[CacheKey, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: CacheKey) -> dict[str, Any] | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return found

    def put(self, key: CacheKey, verdict: dict[str, Any]) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._items[key] = verdict
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
