"""Small pieces every repository's SQL shares."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa

from skillsight.errors import StoreError

if TYPE_CHECKING:
    from skillsight.store._store import Store

# Settings that keep reads bounded and JSON numbers numeric.
READ_SETTINGS: Mapping[str, Any] = {
    "output_format_json_quote_64bit_integers": 0,
    "output_format_json_quote_64bit_floats": 0,
    "max_memory_usage": 4 * 1024**3,
}


def string_literal(text: str) -> str:
    """``text`` as a ClickHouse string literal."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    return f"'{escaped}'"


def parse_rows(raw: bytes, *, array: bool = True) -> list[dict[str, Any]]:
    """ClickHouse's JSON answer as rows: one JSON array (``output_format_json_array_of_rows``),
    or JSONEachRow lines when not ``array``. orjson parses it (a rebuild's rows in 60% of the
    standard parser's time); the standard parser, after replacing invalid UTF-8 (a string
    ClickHouse cut inside a character), reads what orjson refuses, so a stray byte or an
    integer past 64 bits never fails a read. Raises ValueError when it is not JSON."""
    try:
        if array:
            rows: list[dict[str, Any]] = orjson.loads(raw)
            return rows
        # bytes split on line breaks only; a JSON string holds none unescaped
        return [orjson.loads(line) for line in raw.split(b"\n") if line]
    except orjson.JSONDecodeError:
        text = raw.decode("utf-8", errors="replace")
        if array:
            rows = json.loads(text)
            return rows
        return [json.loads(line) for line in text.split("\n") if line]


# A streamed insert batch's layout: (column, arrow type, ClickHouse type of the streamed column,
# expression that stores it).
RowLayout = tuple[tuple[str, pa.DataType, str, str], ...]


def micros(moment: datetime | None) -> int:
    """A moment as µs since the epoch; naive datetimes are UTC; None is the epoch."""
    if moment is None:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1_000_000)


def iso_micros(value: int) -> str:
    """µs since the epoch as ISO 8601 in UTC ending in ``Z``."""
    return datetime.fromtimestamp(value / 1_000_000, UTC).isoformat().replace("+00:00", "Z")


# The score aggregates of scorecards and the skills overview, over rows with `score`, `passed`
# and `label` (the current row of each activation and evaluator).
SCORE_AGGREGATES = """
       count() AS evaluations,
       countIf(score IS NOT NULL) AS scored,
       countIf(score IS NULL AND label != 'not_applicable') AS not_evaluated,
       countIf(passed = true) AS passed,
       avgIf(assumeNotNull(score), score IS NOT NULL) AS mean_score,
       minIf(assumeNotNull(score), score IS NOT NULL) AS min_score"""


def insert_rows(store: Store, table: str, layout: RowLayout, rows: Sequence[dict[str, Any]]) -> int:
    """Insert ``rows`` (dicts keyed by column) in one batch through ``layout``."""
    if not rows:
        return 0
    schema = pa.schema([(name, kind) for name, kind, _, _ in layout])
    try:
        data = pa.Table.from_pylist(list(rows), schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError) as exc:
        raise StoreError(f"malformed {table} rows: {exc}") from exc
    structure = ", ".join(f"{name} {ch_type}" for name, _, ch_type, _ in layout)
    columns = [name for name, *_ in layout]
    select = ", ".join(expression for *_, expression in layout)
    store.insert_select(table, columns, select, data, structure)
    return int(data.num_rows)
