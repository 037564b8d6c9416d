"""Finished spans as a tree, for tests that compare the whole shape at once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan


def span_tree(
    spans: Iterable[ReadableSpan], *, keep: Sequence[str] = (), root: ReadableSpan | None = None
) -> list[dict[str, Any]]:
    """Nested ``{"name", "children"[, "attrs"]}`` dicts, siblings in start order.

    ``keep`` names the attributes to show (those a span has); roots are spans whose parent is
    not among ``spans`` (or only ``root`` when given).
    """
    spans = list(spans)
    ids = {span.context.span_id for span in spans}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent if parent in ids else None, []).append(span)

    def node(span: ReadableSpan) -> dict[str, Any]:
        result: dict[str, Any] = {"name": span.name}
        attrs = {k: span.attributes[k] for k in keep if span.attributes and k in span.attributes}
        if attrs:
            result["attrs"] = attrs
        kids = sorted(children.get(span.context.span_id, []), key=lambda s: s.start_time or 0)
        result["children"] = [node(kid) for kid in kids]
        return result

    roots = [root] if root is not None else children.get(None, [])
    return [node(span) for span in sorted(roots, key=lambda s: s.start_time or 0)]


def names(tree: list[dict[str, Any]]) -> list[Any]:
    """Only the names: ``[name, [children...]]`` per node, for compact assertions."""
    return [[n["name"], names(n["children"])] if n["children"] else n["name"] for n in tree]
