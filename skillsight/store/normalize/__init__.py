"""Normalization of every supported convention into one span model, as ClickHouse SQL.

Each convention is a :class:`Convention` (in its own module): a detector and, per normalized
field, where that convention keeps it. :func:`span_projection` and :func:`event_projection` compose
them into the SELECT list of the store's inserts, so ClickHouse normalizes each batch in one
vectorized pass and both store transports share the same definition. Conventions are tried in
order; for every field the first convention that yields a non-empty value wins, and
``source_convention`` names the first convention that recognised the row.
"""

from __future__ import annotations

from skillsight.store.normalize._convention import EVENT_FIELDS, SPAN_FIELDS, Convention
from skillsight.store.normalize._projection import event_projection, span_projection
from skillsight.store.normalize.claude_code import CLAUDE_CODE
from skillsight.store.normalize.genai import GENAI
from skillsight.store.normalize.openinference import OPENINFERENCE, TRACEAI
from skillsight.store.normalize.skillsight_own import SKILLSIGHT

CONVENTIONS: tuple[Convention, ...] = (SKILLSIGHT, CLAUDE_CODE, OPENINFERENCE, TRACEAI, GENAI)

__all__ = [
    "CONVENTIONS",
    "EVENT_FIELDS",
    "SPAN_FIELDS",
    "Convention",
    "event_projection",
    "span_projection",
]
