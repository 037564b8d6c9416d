"""Paired offline reruns: replay a golden set with and without the skill, report Skill Lift."""

from __future__ import annotations

__all__: list[str] = []
