"""What a convention mapper is: how to recognise its spans and where each normalized field is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# The normalized fields a mapper may fill; each expression yields a String ('' when absent).
SPAN_FIELDS = (
    "operation",
    "session_id",
    "agent",
    "model",
    "tool_name",
    "tool_call_id",
    "skill_name",
    "input",
    "output",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "cost_usd",
)
EVENT_FIELDS = (
    "event_name",
    "session_id",
    "prompt_id",
    "skill_name",
    "tool_name",
    "tool_call_id",
    "model",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "cost_usd",
)


@dataclass(frozen=True)
class Convention:
    """A telemetry convention the collector understands.

    ``detect`` / ``event_detect`` are ClickHouse boolean expressions over a row's ``name``,
    ``scope_name`` and raw attribute arrays (``attr_keys``, ``attr_values``, ``res_keys``,
    ``res_values``; see :mod:`._sql`). ``gated`` conventions use
    generic attribute keys (``model``, ``tool_name``), so their fields count only on rows they
    detect; namespaced ones (``gen_ai.*``) apply wherever their keys appear.
    """

    name: str
    detect: str
    span_fields: Mapping[str, str] = field(default_factory=dict)
    event_detect: str = "false"
    event_fields: Mapping[str, str] = field(default_factory=dict)
    gated: bool = False

    def __post_init__(self) -> None:
        unknown = (set(self.span_fields) - set(SPAN_FIELDS)) | (
            set(self.event_fields) - set(EVENT_FIELDS)
        )
        if unknown:
            raise ValueError(f"{self.name}: unknown normalized fields {sorted(unknown)}")
