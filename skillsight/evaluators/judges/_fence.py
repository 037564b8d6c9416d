"""Untrusted text in a judge prompt: fenced with a boundary nobody could have guessed, and cut.

Everything an agent run recorded (the user's request, skill descriptions and bodies, tool
arguments and results, agent messages) may carry instructions aimed at the judge. Each such text
goes between ``<<<UNTRUSTED {boundary}`` and ``UNTRUSTED {boundary}>>>`` lines, where the
boundary is 16 random hex digits drawn per prompt; the system prompt names the boundary and tells
the judge that fenced text is evidence, never instructions. Text inside cannot close the fence
early, because it cannot know the boundary.
"""

from __future__ import annotations

import secrets

PLACEHOLDER = "\x00boundary\x00"
"""Stands for the boundary while a prompt is built, so the cache key does not depend on it."""


def fence(text: str, label: str) -> str:
    """``text`` as an untrusted block named ``label`` (the boundary filled in later)."""
    body = text.replace(PLACEHOLDER, "")
    return f"<<<UNTRUSTED {PLACEHOLDER} {label}\n{body}\nUNTRUSTED {PLACEHOLDER}>>>"


def clip(text: str, limit: int) -> str:
    """At most about ``limit`` characters: the head (two thirds) and the tail, with a marker
    saying how much was cut from the middle."""
    if len(text) <= limit:
        return text
    head = (limit * 2) // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[… {cut} characters cut …]\n{text[len(text) - tail :]}"


def new_boundary(*texts: str) -> str:
    """A random boundary that occurs in none of ``texts``."""
    while True:
        boundary = secrets.token_hex(8)
        if not any(boundary in text for text in texts):
            return boundary


def seal(text: str, boundary: str) -> str:
    return text.replace(PLACEHOLDER, boundary)
