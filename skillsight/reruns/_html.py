"""The rerun report as one self-contained HTML page: two inline SVG plots (per-metric lift with
both intervals; per-case overall deltas), the tables of the Markdown report, no script, no
external asset."""

from __future__ import annotations

from html import escape

from skillsight.reruns._markdown import _interval, _num, _share, _signed
from skillsight.reruns._report_model import RerunReport

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1000px;color:#1d232a}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{padding:.25rem .6rem;
border-bottom:1px solid #dde2e7;text-align:right}td:first-child,th:first-child{text-align:left}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}.headline{font-size:1.15rem}
svg text{font:12px system-ui,sans-serif;fill:#1d232a}.muted{color:#5c6670}
"""


def _x(value: float, low: float, high: float, left: float, width: float) -> float:
    return left + (value - low) / (high - low) * width if high > low else left + width / 2


def lift_plot(report: RerunReport) -> str:
    """Per metric: the lift (dot), the normal interval (thick bar) and the bootstrap interval
    (thin bar) on one axis through zero."""
    rows = [r for r in report.metrics if r.lift is not None]
    bounds = [0.0, *[r.lift for r in rows if r.lift is not None]]
    for row in rows:
        bounds += [*(row.ci_normal or []), *(row.ci_bootstrap or [])]
    low, high = min(min(bounds), -0.1), max(max(bounds), 0.1)
    left, width, step = 150.0, 520.0, 30
    height = 40 + step * max(1, len(rows))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="720" height="{height}" '
        f'role="img" aria-label="Skill Lift per metric with 95% intervals">'
    ]
    zero = _x(0.0, low, high, left, width)
    parts.append(
        f'<line x1="{zero:.1f}" y1="10" x2="{zero:.1f}" y2="{height - 20}" stroke="#9aa4ae" '
        'stroke-dasharray="4 3"/>'
    )
    for tick in (low, 0.0, high):
        x = _x(tick, low, high, left, width)
        parts.append(f'<text x="{x:.1f}" y="{height - 4}" text-anchor="middle">{tick:+.2f}</text>')
    for index, row in enumerate(rows):
        y = 25 + index * step
        label = escape(row.metric)
        parts.append(f'<text x="{left - 10}" y="{y + 4}" text-anchor="end">{label}</text>')
        if row.ci_bootstrap:
            a, b = (_x(v, low, high, left, width) for v in row.ci_bootstrap)
            parts.append(
                f'<line x1="{a:.1f}" y1="{y + 7}" x2="{b:.1f}" y2="{y + 7}" stroke="#7a5af8" '
                'stroke-width="2"><title>bootstrap 95% CI</title></line>'
            )
        if row.ci_normal:
            a, b = (_x(v, low, high, left, width) for v in row.ci_normal)
            parts.append(
                f'<line x1="{a:.1f}" y1="{y}" x2="{b:.1f}" y2="{y}" stroke="#2e90fa" '
                'stroke-width="5"><title>normal 95% CI</title></line>'
            )
        assert row.lift is not None
        cx = _x(row.lift, low, high, left, width)
        colour = "#12b76a" if row.lift > 0 else "#f04438" if row.lift < 0 else "#667085"
        parts.append(
            f'<circle cx="{cx:.1f}" cy="{y}" r="5" fill="{colour}">'
            f"<title>{escape(row.metric)}: {row.lift:+.3f} (n={row.n})</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)


def delta_plot(report: RerunReport) -> str:
    """Per case, the overall delta (with - baseline) as a bar, sorted."""
    cases = sorted(
        (c for c in report.cases if c.overall_delta is not None),
        key=lambda c: (c.overall_delta or 0.0, c.case_id),
    )
    width, height, top = 720.0, 200.0, 10.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        'role="img" aria-label="Per-case overall deltas">'
    ]
    middle = top + (height - 2 * top) / 2
    parts.append(f'<line x1="40" y1="{middle}" x2="{width}" y2="{middle}" stroke="#9aa4ae"/>')
    parts.append(f'<text x="35" y="{top + 8}" text-anchor="end">+1</text>')
    parts.append(f'<text x="35" y="{height - top}" text-anchor="end">-1</text>')
    if cases:
        slot = (width - 50) / len(cases)
        for index, case in enumerate(cases):
            delta = case.overall_delta or 0.0
            bar = abs(delta) * (height - 2 * top) / 2
            y = middle - bar if delta >= 0 else middle
            colour = "#12b76a" if delta > 0 else "#f04438" if delta < 0 else "#667085"
            parts.append(
                f'<rect x="{45 + index * slot:.1f}" y="{y:.1f}" width="{max(1.0, slot - 2):.1f}" '
                f'height="{max(bar, 1.0):.1f}" fill="{colour}"><title>{escape(case.case_id)}: '
                f"{delta:+.3f}</title></rect>"
            )
    parts.append("</svg>")
    return "".join(parts)


def _table(head: list[str], rows: list[list[str]]) -> str:
    out = ["<table><tr>", *(f"<th>{escape(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        out += ["<tr>", *(f"<td>{escape(cell)}</td>" for cell in row), "</tr>"]
    out.append("</table>")
    return "".join(out)


def render_html(report: RerunReport) -> str:
    overall = report.metric("overall")
    metrics = _table(
        ["metric", "with skill", "baseline", "lift", "95% CI normal", "95% CI bootstrap", "n",
         "+ / - / ="],
        [
            [r.metric, _num(r.with_skill), _num(r.baseline), _signed(r.lift),
             _interval(r.ci_normal), _interval(r.ci_bootstrap), str(r.n),
             f"{_share(r.positive)} / {_share(r.negative)} / {_share(r.tied)}"]
            for r in report.metrics
        ],
    )  # fmt: skip
    inventory = _table(
        ["condition", "planned", "ok", "timeout", "agent error", "no telemetry", "unscored",
         "not run"],
        [[c, *(str(v[k]) for k in ("planned", "ok", "timeout", "agent_error", "no_telemetry",
                                    "unscored", "not_run"))]
         for c, v in report.inventory.items()],
    )  # fmt: skip
    cases = _table(
        ["case", "status", "with", "baseline", "Δ overall", "utility", "question"],
        [
            [c.case_id, c.status, _num(c.with_skill.metrics.get("overall")),
             _num(c.baseline.metrics.get("overall")), _signed(c.overall_delta),
             _num(c.utility, 1), c.question[:120]]
            for c in report.cases
        ],
    )  # fmt: skip
    passes = "; ".join(
        f"{cond}: " + ", ".join(f"pass@{k} {_num(v)}" for k, v in values.items())
        for cond, values in report.pass_at_k.items()
    )
    facts = [
        f"pass@k — {passes}",
        f"SkillTester utility {_num(report.utility, 1)} over {report.utility_cases} cases",
        f"security {_num(report.security_score, 1)} ({report.security_status or 'unknown'})",
        f"triggering precision {_num(report.trigger.precision)}, "
        f"recall {_num(report.trigger.recall)}",
    ]
    if report.flips is not None:
        facts.append(
            f"flips since {report.flips.previous_skill_version[:12]}: pass→fail "
            f"{', '.join(report.flips.pass_to_fail) or 'none'}; fail→pass "
            f"{', '.join(report.flips.fail_to_pass) or 'none'}"
        )
    items = "".join(f"<li>{escape(f)}</li>" for f in facts)
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>Skill Lift: {escape(report.skill)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>Skill Lift: {escape(report.skill)}</h1>"
        f"<p class='muted'>run {escape(report.run_id)} · version "
        f"{escape(report.skill_version[:12])} · set {escape(report.set_id)} "
        f"v{report.set_version} · {escape(str(report.config.get('attempts')))} attempts · "
        f"{escape(report.status)}</p>"
        f"<p class='headline'><b>Skill Lift {_signed(report.lift)}</b> — 95% CI normal "
        f"{_interval(overall.ci_normal)}, bootstrap {_interval(overall.ci_bootstrap)}, "
        f"n = {overall.n}</p>"
        f"<h2>Lift per metric</h2>{lift_plot(report)}{metrics}<ul>{items}</ul>"
        f"<h2>Per-case deltas</h2>{delta_plot(report)}"
        f"<h2>Evidence inventory</h2>{inventory}<h2>Cases</h2>{cases}</body></html>\n"
    )
