"""Rows read as Arrow are exactly the rows ClickHouse's JSON output parses to (the embedded
store reads a large result as Arrow: ``skillsight.store._arrow_rows``)."""

from __future__ import annotations

import json
import math
import random
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillsight.store import EmbeddedStore
from skillsight.store import _arrow_rows as arrow_rows
from skillsight.store._embedded import _ARROW_CLAUSE, _COLUMNAR_ROWS, _READ_CLAUSE


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1 is not 1.0, dict order counts)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def both(store: EmbeddedStore, sql: str) -> tuple[list[dict[str, Any]] | None, Any]:
    """(the Arrow conversion, what the JSON output parses to) of one statement."""
    table = store._conn.query(sql + _ARROW_CLAUSE, "ArrowTable")
    raw = store._conn.query(sql + _READ_CLAUSE, "JSONEachRow").bytes()
    return arrow_rows.rows(table), json.loads(raw) if raw else []


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    opened = EmbeddedStore(tmp_path / "store")
    yield opened
    opened.close()


def floats() -> list[str]:
    rng = random.Random(16)
    values = ["0", "-0.", "1", "-1", "0.1", "1e15", "1e16", "1e17", "123456789012345678"]
    values += ["1e20", "1e21", "1e22", "1e300", "-1e300", "5e-324", "2.5e-7", "9007199254740993"]
    values += ["nan", "inf", "-inf", "4503599627370496.5", "278908409818195070000"]
    for _ in range(1500):
        bits = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        if math.isfinite(bits):
            values.append(repr(bits))
        values.append(f"{rng.randint(-(10**22), 10**22)}.0")
        values.append(repr(round(rng.uniform(0, 10), rng.randint(0, 8))))
        values.append(repr(float(rng.randint(0, 2**60) * 2.0 ** rng.randint(-60, 60))))
    return values


def test_float64_reads_as_its_json_text(store: EmbeddedStore) -> None:
    values = floats()
    store.execute("CREATE TABLE f (i UInt32, s String) ENGINE = Memory")
    store.execute("INSERT INTO f VALUES " + ",".join(f"({i}, '{v}')" for i, v in enumerate(values)))
    arrow, parsed = both(store, "SELECT toFloat64(s) AS x FROM f ORDER BY i")
    assert arrow is not None
    assert [same(a, p) for a, p in zip(arrow, parsed, strict=True)] == [True] * len(values)


def test_every_exact_type_reads_as_json_parses_it(store: EmbeddedStore) -> None:
    sql = """
    SELECT number AS n, toInt8(-number) AS i8, toUInt64(18446744073709551615 - number) AS u64,
           toInt64(-9223372036854775807 + number) AS i64, number % 2 = 0 AS even,
           toBool(number % 3) AS flag, concat('é/"\\\\', toString(number), '\n') AS text,
           if(number % 2, NULL, toString(number)) AS maybe, map('a', toString(number), 'b', '')
           AS attributes, map() :: Map(String, String) AS empty, [toString(number), 'x'] AS list,
           [[number, 1], []] AS nested, number / 7 AS ratio, toFloat64(number) AS whole,
           toLowCardinality(toString(number % 3)) AS low
    FROM numbers(50) ORDER BY n"""
    arrow, parsed = both(store, sql)
    assert arrow is not None
    assert same(arrow, parsed)


@pytest.mark.parametrize(
    "column",
    [
        "now64(6) AS t",
        "toDate('2026-01-01') AS d",
        "toFloat32(0.1) AS f",
        "toDecimal64(1.5, 2) AS d",
        "(1, 'a') AS t",
        "[(1, 'a')] AS pairs",
        "map(1, 'a') AS m",
        "map('a', 0.5) AS m",
        "toUUID('00000000-0000-4000-8000-000000000001') AS u",
        "NULL AS nothing",
        "toInt128(1) AS big",
    ],
)
def test_other_types_are_left_to_json(store: EmbeddedStore, column: str) -> None:
    arrow, _ = both(store, f"SELECT {column}")
    assert arrow is None


def test_a_large_result_is_read_as_arrow_after_the_first(store: EmbeddedStore) -> None:
    sql = (
        "SELECT number AS n, toString(number) AS s, map('k', toString(number)) AS m,"
        " number / 3 AS r FROM numbers({rows:UInt32}) ORDER BY n"
    )
    _, expected = both(store, sql.replace("{rows:UInt32}", str(_COLUMNAR_ROWS)))
    first = store.query(sql, {"rows": _COLUMNAR_ROWS})  # as JSON: its size is not known yet
    assert sql in store._columnar
    second = store.query(sql, {"rows": _COLUMNAR_ROWS})  # as Arrow
    assert same(first, expected) and same(second, expected)
    few = store.query(sql, {"rows": 3})  # still as Arrow
    assert same(few, expected[:3]) and sql in store._columnar


def test_a_large_result_arrow_cannot_give_exactly_stays_json(store: EmbeddedStore) -> None:
    sql = "SELECT number AS n, toDateTime64(number, 6, 'UTC') AS t FROM numbers(2000) ORDER BY n"
    first = store.query(sql)
    assert sql in store._columnar
    second = store.query(sql)  # tried as Arrow once, then remembered as JSON only
    assert sql in store._json_only and sql not in store._columnar
    assert same(first, second) and store.query(sql) == first
