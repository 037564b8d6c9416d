"""Rows of the ``activations`` and ``trajectories`` tables, as Arrow batches for one insert each.

A rebuild of a session (:mod:`skillsight.rebuild.finalizer`) yields its ATIF trajectory and its
activation records. Both tables keep the full document as ZSTD-compressed JSON and a few columns
lifted out of it for filtering and sorting; ``rebuilt_at`` (microseconds) versions every row.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
from pydantic import BaseModel

from skillsight.store.records import Activation, iso

_STR = pa.string()
_I64 = pa.int64()
_F64 = pa.float64()


class RebuildResult(Protocol):
    """What a rebuild of one session produced (``skillsight.rebuild.session.Rebuilt``)."""

    @property
    def session_id(self) -> str: ...

    @property
    def trajectory(self) -> BaseModel: ...

    @property
    def activations(self) -> Sequence[Activation]: ...


@dataclass(frozen=True)
class SessionRebuild:
    """One session's rebuild, ready to be written."""

    project_id: str
    rebuilt: RebuildResult
    ingested_through_us: int = 0
    """Newest ``ingested_at`` (store clock, µs) among the rows the rebuild read; 0 = unknown."""
    settled: bool = True
    """May be scored: the session was complete, or waiting for the rest was given up."""


# (column, arrow type, ClickHouse type of the streamed column, expression that stores it)
ACTIVATION_ROW: tuple[tuple[str, pa.DataType, str, str], ...] = (
    ("project_id", _STR, "String", "project_id"),
    ("activation_id", _STR, "String", "activation_id"),
    ("session_id", _STR, "String", "session_id"),
    ("trace_id", _STR, "String", "trace_id"),
    ("skill_name", _STR, "String", "skill_name"),
    ("skill_version", _STR, "String", "skill_version"),
    ("trigger", _STR, "String", "trigger"),
    ("started_at", _STR, "String", "parseDateTime64BestEffortOrZero(started_at, 6, 'UTC')"),
    ("ended_at", _STR, "String", "parseDateTime64BestEffortOrZero(ended_at, 6, 'UTC')"),
    ("duration_ms", _F64, "Float64", "duration_ms"),
    ("agent", _STR, "String", "agent"),
    ("outcome", _STR, "String", "outcome"),
    ("tool_call_count", _I64, "Int64", "toUInt32(tool_call_count)"),
    ("input_tokens", _I64, "Int64", "toUInt64(input_tokens)"),
    ("output_tokens", _I64, "Int64", "toUInt64(output_tokens)"),
    ("cache_read_tokens", _I64, "Int64", "toUInt64(cache_read_tokens)"),
    ("cache_creation_tokens", _I64, "Int64", "toUInt64(cache_creation_tokens)"),
    ("cost_usd", _F64, "Float64", "cost_usd"),
    ("record", _STR, "String", "record"),
    ("rerun_id", _STR, "String", "rerun_id"),
    ("rebuilt_at", _I64, "Int64", "fromUnixTimestamp64Micro(rebuilt_at, 'UTC')"),
)

TRAJECTORY_ROW: tuple[tuple[str, pa.DataType, str, str], ...] = (
    ("project_id", _STR, "String", "project_id"),
    ("session_id", _STR, "String", "session_id"),
    ("agent", _STR, "String", "agent"),
    ("step_count", _I64, "Int64", "toUInt32(step_count)"),
    ("activation_count", _I64, "Int64", "toUInt32(activation_count)"),
    ("atif", _STR, "String", "atif"),
    (
        "ingested_through",
        _I64,
        "Int64",
        "fromUnixTimestamp64Micro(ingested_through, 'UTC')",
    ),
    ("settled", pa.bool_(), "Bool", "settled"),
    ("rebuilt_at", _I64, "Int64", "fromUnixTimestamp64Micro(rebuilt_at, 'UTC')"),
)


def columns(row: tuple[tuple[str, pa.DataType, str, str], ...]) -> list[str]:
    return [name for name, _, _, _ in row]


def select(row: tuple[tuple[str, pa.DataType, str, str], ...]) -> str:
    return ", ".join(expression for _, _, _, expression in row)


def structure(row: tuple[tuple[str, pa.DataType, str, str], ...]) -> str:
    return ", ".join(f"{name} {ch_type}" for name, _, ch_type, _ in row)


def _schema(row: tuple[tuple[str, pa.DataType, str, str], ...]) -> pa.Schema:
    return pa.schema([(name, kind) for name, kind, _, _ in row])


class Stamps:
    """Strictly increasing rebuild stamps (µs since the epoch) for one process."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            self._last = max(time.time_ns() // 1000, self._last + 1)
            return self._last


def stamp_iso(stamp: int) -> str:
    """A rebuild stamp (µs) as activation records carry it: the trajectories' one timestamp
    format (ISO 8601, UTC, microseconds)."""
    return iso(stamp * 1000)


def trajectory_json(trajectory: BaseModel) -> str:
    """The ATIF document as stored and served: compact JSON, ``None`` left out, written by
    pydantic's own serializer (a fifth of the CPU of ``json.dumps`` over ``model_dump``: 13
    against 60-74 ms for 1,040 steps). A number that is not finite is written ``null``, which
    every JSON reader takes (``json.dumps`` wrote ``Infinity``, which ClickHouse's JSON
    functions and browsers refuse). A document that writes itself so (``compact_json``: the
    ATIF trajectory, which keeps each step's text for the rebuild that extends it) does."""
    compact = getattr(trajectory, "compact_json", None)
    if callable(compact):
        text: str = compact()
        return text
    return trajectory.model_dump_json(exclude_none=True)


def record_json(activation: Activation, project_id: str, stamp: int, settled: bool) -> str:
    """The record as stored: the activation under ``project_id``, stamped with its rebuild.
    What ``model_copy(update={"project_id": …, "rebuilt_at": …, "settled": …})`` then
    ``model_dump_json()`` write, made from the activation's text less its stamps (kept on it,
    so an activation a session's next rebuild keeps is not written out again): the stamps
    go around ``rerun_id``, the record's last field but ``settled``."""
    if activation.project_id == project_id:
        text = activation.stampless_json()
        cut = text.rfind(_RERUN_ID_KEY)
        if cut > 0 and text.endswith("}"):
            return (
                f'{text[:cut]},"rebuilt_at":"{stamp_iso(stamp)}"{text[cut:-1]},'
                f'"settled":{"true" if settled else "false"}}}'
            )
    # The record is stored under the project it was written for, whatever the algorithm set.
    record = activation.model_copy(
        update={"project_id": project_id, "rebuilt_at": stamp_iso(stamp), "settled": settled}
    )
    return record.model_dump_json()


_RERUN_ID_KEY = ',"rerun_id":'


def _activation_values(
    project_id: str, item: Activation, stamp: int, settled: bool
) -> dict[str, Any]:
    return {
        "project_id": project_id,
        "activation_id": item.activation_id,
        "session_id": item.session_id,
        "trace_id": item.trace_id,
        "skill_name": item.skill_name,
        "skill_version": item.skill_version,
        "trigger": item.trigger,
        "started_at": item.started_at,
        "ended_at": item.ended_at,
        "duration_ms": float(item.duration_ms),
        "agent": item.agent,
        "outcome": item.outcome,
        "tool_call_count": len(item.tool_calls),
        "input_tokens": item.tokens.input,
        "output_tokens": item.tokens.output,
        "cache_read_tokens": item.tokens.cache_read,
        "cache_creation_tokens": item.tokens.cache_creation,
        "cost_usd": float(item.cost_usd),
        "record": record_json(item, project_id, stamp, settled),
        "rerun_id": item.rerun_id,
        "rebuilt_at": stamp,
    }


def activation_table(items: Sequence[tuple[SessionRebuild, int]]) -> pa.Table:
    """Activation rows of several session rebuilds, each with its stamp."""
    rows = [
        _activation_values(item.project_id, activation, stamp, item.settled)
        for item, stamp in items
        for activation in item.rebuilt.activations
    ]
    return pa.Table.from_pylist(rows, schema=_schema(ACTIVATION_ROW))


def trajectory_table(items: Sequence[tuple[SessionRebuild, int]]) -> pa.Table:
    rows = []
    for item, stamp in items:
        document = item.rebuilt.trajectory
        steps = getattr(document, "steps", [])
        agent = getattr(getattr(document, "agent", None), "name", "")
        rows.append(
            {
                "project_id": item.project_id,
                "session_id": item.rebuilt.session_id,
                "agent": agent if isinstance(agent, str) else "",
                "step_count": len(steps) if isinstance(steps, list) else 0,
                "activation_count": len(item.rebuilt.activations),
                "atif": trajectory_json(document),
                "ingested_through": item.ingested_through_us,
                "settled": item.settled,
                "rebuilt_at": stamp,
            }
        )
    return pa.Table.from_pylist(rows, schema=_schema(TRAJECTORY_ROW))


STAMPS = Stamps()
