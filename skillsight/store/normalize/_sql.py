"""Tiny builders of ClickHouse expressions, so mappers read as data rather than SQL strings."""

from __future__ import annotations

from collections.abc import Mapping


def lit(value: str) -> str:
    """A ClickHouse string literal."""
    escaped = value.replace("\\", "\\\\").replace("'", "\\'")
    return f"'{escaped}'"


# Lookups read the raw key and value arrays (skillsight.store.rows) rather than the Map
# built from them: the projection makes ~90 of them a row, and a Map lookup costs more than
# indexOf over the keys. Both find the first of repeated keys, so the values are the same.


def attr(key: str) -> str:
    """The span (or log record) attribute ``key``; '' when absent."""
    return f"attr_values[indexOf(attr_keys, {lit(key)})]"


def res(key: str) -> str:
    """The resource attribute ``key``; '' when absent."""
    return f"res_values[indexOf(res_keys, {lit(key)})]"


def has_attr(key: str) -> str:
    return f"has(attr_keys, {lit(key)})"


def has_attr_prefix(prefix: str) -> str:
    return f"arrayExists(k -> startsWith(k, {lit(prefix)}), attr_keys)"


def first(*exprs: str) -> str:
    """The first of ``exprs`` that is not ''."""
    if len(exprs) == 1:
        return exprs[0]
    return f"arrayFirst(x -> x != '', [{', '.join(exprs)}])"


def lookup(expr: str, table: Mapping[str, str], default: str = "''") -> str:
    """Map the value of ``expr`` through ``table``; ``default`` for anything else."""
    keys = ", ".join(lit(k) for k in table)
    values = ", ".join(lit(v) for v in table.values())
    return f"transform({expr}, [{keys}], [{values}], {default})"


def when(condition: str, expr: str) -> str:
    return f"if({condition}, {expr}, '')"
