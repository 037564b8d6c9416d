"""SVG charts drawn on the server: sparklines, bar trends and line charts with thresholds.

Each returns markup ready to embed (every text escaped), with ``role="img"`` and a title so a
screen reader says what it shows; the pages print the same numbers in a table beside it. A
missing value (nothing scored that day) is a gap in its line, never a zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

PALETTE = ("#7cc4ff", "#ffb454", "#c3a6ff", "#7ee2a8", "#ff8fa3", "#f2e27d", "#5fd7d7")


@dataclass(frozen=True)
class Series:
    """One line: a name (shown in the legend) and a value per x position (None = no data)."""

    name: str
    values: Sequence[float | None]
    title: str = ""


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def sparkline(
    values: Sequence[float],
    *,
    marked: Sequence[float] = (),
    label: str,
    width: int = 120,
    height: int = 26,
) -> Markup:
    """Counts as a small filled line; ``marked`` (e.g. the failing share of each count) is
    drawn over it in the failure colour."""
    top = max([*values, *marked, 1.0])
    step = width / max(len(values) - 1, 1)

    def points(series: Sequence[float]) -> str:
        if len(series) == 1:
            y = height - 2 - series[0] / top * (height - 4)
            return f"0,{_n(y)} {width},{_n(y)}"
        return " ".join(
            f"{_n(i * step)},{_n(height - 2 - v / top * (height - 4))}"
            for i, v in enumerate(series)
        )

    parts = [
        f'<svg class="spark" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(label)}"><title>{escape(label)}</title>'
    ]
    if values:
        parts.append(f'<polyline class="spark-all" points="{points(values)}"/>')
    if marked and any(marked):
        parts.append(f'<polyline class="spark-bad" points="{points(marked)}"/>')
    parts.append("</svg>")
    return Markup("".join(parts))


def bars(
    values: Sequence[int],
    labels: Sequence[str],
    *,
    title: str,
    width: int = 560,
    height: int = 120,
    every: int = 6,
) -> Markup:
    """Counts per bucket as bars, labelled every ``every`` buckets."""
    left, bottom = 30, 18
    plot_w, plot_h = width - left - 4, height - bottom - 6
    top = max([*values, 1])
    slot = plot_w / max(len(values), 1)
    out = [
        f'<svg class="chart bars" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>',
        f'<text class="axis" x="{left - 4}" y="12" text-anchor="end">{top}</text>',
        f'<text class="axis" x="{left - 4}" y="{6 + plot_h}" text-anchor="end">0</text>',
        f'<line class="grid" x1="{left}" x2="{width - 4}" y1="{6 + plot_h}" y2="{6 + plot_h}"/>',
    ]
    for i, (value, label) in enumerate(zip(values, labels, strict=True)):
        h = value / top * plot_h
        x = left + i * slot
        out.append(
            f'<rect class="bar" x="{_n(x + 1)}" y="{_n(6 + plot_h - h)}" '
            f'width="{_n(max(slot - 2, 1))}" height="{_n(h)}">'
            f"<title>{escape(label)}: {value}</title></rect>"
        )
        if i % every == 0:
            out.append(f'<text class="axis" x="{_n(x)}" y="{height - 4}">{escape(label)}</text>')
    out.append("</svg>")
    return Markup("".join(out))


def line_chart(
    series: Sequence[Series],
    x_labels: Sequence[str],
    *,
    title: str,
    y_max: float = 1.0,
    threshold: float | None = None,
    threshold_label: str = "",
    percent: bool = True,
    width: int = 560,
    height: int = 180,
) -> Markup:
    """One line per series over ``x_labels``, y from 0 to ``y_max``, with an optional dashed
    threshold; each point carries its value as a tooltip."""
    left, right, top_pad, bottom = 40, 8, 8, 22
    plot_w, plot_h = width - left - right, height - top_pad - bottom
    y_max = y_max or 1.0
    step = plot_w / max(len(x_labels) - 1, 1)

    def x_of(i: int) -> float:
        return left + (i * step if len(x_labels) > 1 else plot_w / 2)

    def y_of(v: float) -> float:
        return top_pad + plot_h - min(max(v / y_max, 0.0), 1.0) * plot_h

    def shown(v: float) -> str:
        return f"{v:.0%}" if percent else compact(v)

    out = [
        f'<svg class="chart lines" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for fraction in (0.0, 0.5, 1.0):
        y = y_of(fraction * y_max)
        out.append(
            f'<line class="grid" x1="{left}" x2="{width - right}" y1="{_n(y)}" y2="{_n(y)}"/>'
        )
        out.append(
            f'<text class="axis" x="{left - 4}" y="{_n(y + 4)}" text-anchor="end">'
            f"{shown(fraction * y_max)}</text>"
        )
    ticks = max(len(x_labels) // 6, 1)
    for i, label in enumerate(x_labels):
        if i % ticks == 0 or i == len(x_labels) - 1:
            out.append(
                f'<text class="axis" x="{_n(x_of(i))}" y="{height - 6}" text-anchor="middle">'
                f"{escape(label[5:] if len(label) == 10 else label)}</text>"
            )
    if threshold is not None:
        y = y_of(threshold)
        out.append(
            f'<line class="threshold" x1="{left}" x2="{width - right}" y1="{_n(y)}" '
            f'y2="{_n(y)}"><title>{escape(threshold_label)}</title></line>'
        )
    for index, line in enumerate(series):
        colour = PALETTE[index % len(PALETTE)]
        out.append(
            f'<g class="series" data-series="{escape(line.name)}" stroke="{colour}" '
            f'fill="{colour}">'
        )
        segment: list[str] = []
        segments: list[list[str]] = [segment]
        for i, value in enumerate(line.values):
            if value is None:
                segment = []
                segments.append(segment)
                continue
            segment.append(f"{_n(x_of(i))},{_n(y_of(value))}")
            out.append(
                f'<circle cx="{_n(x_of(i))}" cy="{_n(y_of(value))}" r="3">'
                f"<title>{escape(line.title or line.name)} {escape(x_labels[i])}: "
                f"{shown(value)}</title></circle>"
            )
        for points in segments:
            if len(points) > 1:
                out.append(f'<polyline fill="none" points="{" ".join(points)}"/>')
        out.append("</g>")
    out.append("</svg>")
    return Markup("".join(out))


def compact(value: float) -> str:
    """A number in at most five characters: 1.2M, 34.5k, 120, 3.4, 0.015."""
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:.1f}M"
    if size >= 1e3:
        return f"{value / 1e3:.1f}k"
    if size >= 10 or value == 0:
        return f"{value:.0f}"
    return f"{value:.1f}" if size >= 1 else f"{value:.3f}"


def colour_of(index: int) -> str:
    return PALETTE[index % len(PALETTE)]
