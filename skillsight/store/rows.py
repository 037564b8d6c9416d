"""Raw rows: what the decoders produce and the store's normalizing insert consumes.

A decoded OTLP request becomes columns (one Python list per column) of *raw* values: ids as hex,
times as integer nanoseconds, attributes as parallel key/value lists. Normalization (operation,
session, tool, skill, tokens, ...) happens inside ClickHouse at insert time, from the SQL that
:mod:`skillsight.store.normalize` composes, so both store transports and every decoder share
one definition of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

_STR = pa.string()
_I64 = pa.int64()
_LIST = pa.list_(pa.string())

# (column, arrow type, ClickHouse type) — the ClickHouse type is what the server transport's
# input() table function is told to expect.
SPAN_COLUMNS: tuple[tuple[str, pa.DataType, str], ...] = (
    ("project_id", _STR, "String"),
    ("trace_id", _STR, "String"),
    ("span_id", _STR, "String"),
    ("parent_span_id", _STR, "String"),
    ("name", _STR, "String"),
    ("kind", _STR, "String"),
    ("start_ns", _I64, "Int64"),
    ("end_ns", _I64, "Int64"),
    ("status_code", _STR, "String"),
    ("status_message", _STR, "String"),
    ("scope_name", _STR, "String"),
    ("scope_version", _STR, "String"),
    ("attr_keys", _LIST, "Array(String)"),
    ("attr_values", _LIST, "Array(String)"),
    ("res_keys", _LIST, "Array(String)"),
    ("res_values", _LIST, "Array(String)"),
    ("span_events", _STR, "String"),
    ("links", _STR, "String"),
)

EVENT_COLUMNS: tuple[tuple[str, pa.DataType, str], ...] = (
    ("project_id", _STR, "String"),
    ("record_id", _STR, "String"),
    ("time_ns", _I64, "Int64"),
    ("observed_ns", _I64, "Int64"),
    ("trace_id", _STR, "String"),
    ("span_id", _STR, "String"),
    ("severity_number", _I64, "Int64"),
    ("severity_text", _STR, "String"),
    ("event_name", _STR, "String"),
    ("body", _STR, "String"),
    ("scope_name", _STR, "String"),
    ("attr_keys", _LIST, "Array(String)"),
    ("attr_values", _LIST, "Array(String)"),
    ("res_keys", _LIST, "Array(String)"),
    ("res_values", _LIST, "Array(String)"),
)

SPAN_SCHEMA = pa.schema([(name, kind) for name, kind, _ in SPAN_COLUMNS])
EVENT_SCHEMA = pa.schema([(name, kind) for name, kind, _ in EVENT_COLUMNS])


def clickhouse_structure(columns: tuple[tuple[str, pa.DataType, str], ...]) -> str:
    """The ``name Type, ...`` structure string of a raw column set."""
    return ", ".join(f"{name} {ch_type}" for name, _, ch_type in columns)


@dataclass
class Columns:
    """Column lists under construction, all of equal length in rows.

    List columns (attribute keys and values) are kept flat with row offsets, the layout Arrow
    uses, so turning a batch into Arrow copies no per-row lists.
    """

    names: tuple[str, ...]
    list_names: frozenset[str] = frozenset()
    data: dict[str, list[object]] = field(default_factory=dict)
    offsets: dict[str, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.data:
            self.data = {name: [] for name in self.names}
            self.offsets = {name: [0] for name in self.list_names}

    def __len__(self) -> int:
        return len(self.data[self.names[0]])

    def add_list(self, name: str, items: list[str]) -> None:
        """Append one row's list value to list column ``name``."""
        flat = self.data[name]
        flat.extend(items)
        self.offsets[name].append(len(flat))

    def to_arrow(self, schema: pa.Schema) -> pa.Table:
        arrays = []
        for name in self.names:
            if name in self.list_names:
                arrays.append(
                    pa.ListArray.from_arrays(
                        pa.array(self.offsets[name], type=pa.int32()),
                        pa.array(self.data[name], type=pa.string()),
                    )
                )
            else:
                arrays.append(pa.array(self.data[name], type=schema.field(name).type))
        return pa.Table.from_arrays(arrays, schema=schema)


_LIST_COLUMNS = frozenset({"attr_keys", "attr_values", "res_keys", "res_values"})


def span_columns() -> Columns:
    return Columns(tuple(name for name, _, _ in SPAN_COLUMNS), _LIST_COLUMNS)


def event_columns() -> Columns:
    return Columns(tuple(name for name, _, _ in EVENT_COLUMNS), _LIST_COLUMNS)
