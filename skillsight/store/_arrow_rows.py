"""Result rows from an Arrow table, exactly as ClickHouse's JSON output parses.

The embedded store reads rows as Arrow when every column has a type whose values convert to
what ``json.loads`` makes of ClickHouse's ``JSONEachRow`` (with the store's read settings):
ClickHouse writes Arrow faster than JSON, and a column converts in one call. A result with any
other type (dates, decimals, tuples, Float32 …) is read as JSON instead (:func:`rows`
answers None).

Float64 is the one type whose JSON text is not its value: ClickHouse writes an integral value
below 1e21 as an integer (``0``, ``278908409818195070000``: the shortest digits, padded with
zeros), any other finite value as the shortest text that reads back as it, and NaN and the
infinities as ``null``; :func:`json_number` gives what ``json.loads`` reads from each.
"""

from __future__ import annotations

from decimal import Decimal
from functools import partial
from typing import Any

import pyarrow as pa

_INTEGERS = frozenset(
    {pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32()}
    | {pa.uint64(), pa.bool_()}
)
_TEXTS = frozenset({pa.string(), pa.large_string()})
_EXACT = 2.0**53  # integral floats below this are their int


def json_number(value: float) -> int | float | None:
    """A Float64 value as ``json.loads`` reads ClickHouse's JSON text of it."""
    if value.is_integer():
        if -_EXACT < value < _EXACT:
            return int(value)
        if -1e21 < value < 1e21:
            return int(Decimal(repr(value)))  # the shortest digits, zero-padded
        return value
    return value if value - value == 0 else None  # NaN and ±inf are written as null


def _plain(kind: pa.DataType) -> bool:
    """Values of this type convert by ``to_pylist`` as JSON parses them."""
    if kind in _INTEGERS or kind in _TEXTS:
        return True
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _plain(kind.value_type)
    return False


def _map_of_texts(kind: pa.DataType) -> bool:
    return pa.types.is_map(kind) and kind.key_type in _TEXTS and _plain(kind.item_type)


def exact(schema: pa.Schema) -> bool:
    """Every column converts to exactly what the JSON output parses to."""
    return all(_plain(f.type) or _map_of_texts(f.type) or f.type == pa.float64() for f in schema)


def rows(table: pa.Table) -> list[dict[str, Any]] | None:
    """The table's rows as dicts, as JSON would give them; None when a column's type has no
    exact conversion."""
    if not exact(table.schema):
        return None
    columns: list[list[Any]] = []
    for field, column in zip(table.schema, table.columns, strict=True):
        values = column.to_pylist()
        if pa.types.is_map(field.type):  # (key, value) pairs; ClickHouse has no null map
            values = (
                list(map(dict, values))
                if column.null_count == 0
                else [None if m is None else dict(m) for m in values]
            )
        elif field.type == pa.float64():
            # a finite fraction reads back as itself; the rest as json_number says
            values = [
                v if v is None or (v - v == 0 and not v.is_integer()) else json_number(v)
                for v in values
            ]
        columns.append(values)
    pair_names = partial(zip, table.column_names)  # each row's values with their names
    return list(map(dict, map(pair_names, zip(*columns, strict=True))))
