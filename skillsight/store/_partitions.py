"""Bounding the partitions one INSERT touches.

``spans`` and ``events`` are partitioned by month, and ClickHouse refuses a block that touches
more than ``max_partitions_per_insert_block`` (100 by default) partitions. One request replaying
years of old exports, or two requests whose months add up, would make a batch that can never be
written. So every insert is cut into blocks of at most :data:`MAX_PARTITIONS_PER_INSERT` months.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc

# Below ClickHouse's default of 100, with room for a server configured lower.
MAX_PARTITIONS_PER_INSERT = 64


def month_of(ns: int) -> int:
    """The month (year * 12 + month - 1, UTC) of a time in ns since the epoch: its partition."""
    moment = datetime.fromtimestamp(ns // 1_000_000_000, UTC)
    return moment.year * 12 + moment.month - 1


def _months(times: pa.ChunkedArray) -> pa.Array:
    stamps = pc.cast(times, pa.timestamp("ns", tz="UTC"))
    return pc.add(pc.multiply(pc.year(stamps), 12), pc.subtract(pc.month(stamps), 1))


def by_partitions(
    table: pa.Table, column: str, bound: int = MAX_PARTITIONS_PER_INSERT
) -> list[pa.Table]:
    """``table`` as blocks of at most ``bound`` months of ``column`` (ns since the epoch) each;
    ``[table]`` itself in the usual case of a batch within ``bound`` months."""
    if table.num_rows == 0:
        return [table]
    months = _months(table[column])
    distinct = pc.unique(months)
    if len(distinct) <= bound:
        return [table]
    ordered = sorted(distinct.to_pylist())
    return [
        table.filter(pc.is_in(months, value_set=pa.array(ordered[i : i + bound])))
        for i in range(0, len(ordered), bound)
    ]
