"""Literal prefilters: a scanner runs its regular expressions only over texts that contain one
of the literals every match needs, since ``in`` runs in C at memory speed while a pattern is
tried at every position. Most texts (script output, file contents) contain none."""

from __future__ import annotations


def contains_any(text: str, needles: tuple[str, ...]) -> bool:
    """Whether ``text`` contains one of ``needles`` (a plain loop: cheaper than ``any`` over a
    generator, which this is called often enough for that to show)."""
    for needle in needles:  # noqa: SIM110 - see the docstring
        if needle in text:
            return True
    return False
