"""The rerun report as Markdown (for a CI job summary or a pull request comment)."""

from __future__ import annotations

from skillsight.reruns._report_model import MetricLift, RerunReport


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.3f}"


def _interval(values: list[float] | None) -> str:
    return "—" if not values else f"[{values[0]:+.3f}, {values[1]:+.3f}]"


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _metric_line(row: MetricLift) -> str:
    return (
        f"| {row.metric} | {_num(row.with_skill)} | {_num(row.baseline)} | {_signed(row.lift)} "
        f"| {_interval(row.ci_normal)} | {_interval(row.ci_bootstrap)} | {row.n} "
        f"| {_share(row.positive)} / {_share(row.negative)} / {_share(row.tied)} |"
    )


def render_markdown(report: RerunReport) -> str:
    """The report's headline, metric table, inventory, costs, flips and per-case deltas."""
    lines = [
        f"# Skill Lift: {report.skill}",
        "",
        f"Run `{report.run_id}` · skill version `{report.skill_version[:12]}` · golden set "
        f"`{report.set_id}` v{report.set_version} · {report.config.get('attempts')} attempts "
        f"per condition · agent `{report.config.get('agent')}` · {report.status}",
        "",
        f"**Skill Lift {_signed(report.lift)}** (overall; 95% CI normal "
        f"{_interval(report.metric('overall').ci_normal)}, bootstrap "
        f"{_interval(report.metric('overall').ci_bootstrap)}, "
        f"n = {report.metric('overall').n} paired cases)",
        "",
        "| metric | with skill | baseline | lift | 95% CI (normal) | 95% CI (bootstrap) | n "
        "| + / - / = |",
        "|---|---|---|---|---|---|---|---|",
        *(_metric_line(row) for row in report.metrics),
        "",
    ]
    passes = " · ".join(
        f"{condition}: " + ", ".join(f"pass@{k} {_num(v)}" for k, v in values.items())
        for condition, values in report.pass_at_k.items()
    )
    lines += [
        f"- pass@k: {passes}",
        f"- SkillTester utility: {_num(report.utility, 1)} over {report.utility_cases} cases",
        f"- security: {_num(report.security_score, 1)} ({report.security_status or 'unknown'})",
    ]
    for condition, cost in report.cost.items():
        lines.append(
            f"- cost, {condition}: {cost.runs} runs, {cost.tokens_total} tokens "
            f"(mean {_num(cost.tokens_mean, 0)}), ${cost.cost_usd_total:.4f}, "
            f"mean {_num(cost.seconds_mean, 1)} s"
        )
    trigger = report.trigger
    lines.append(
        f"- triggering: precision {_num(trigger.precision)}, recall {_num(trigger.recall)}"
    )
    if report.flips is not None:
        flips = report.flips
        lines.append(
            f"- flips since `{flips.previous_skill_version[:12]}` (run {flips.previous_run_id}): "
            f"pass→fail {', '.join(flips.pass_to_fail) or 'none'}; "
            f"fail→pass {', '.join(flips.fail_to_pass) or 'none'}"
        )
    lines += [
        "",
        "## Evidence inventory",
        "",
        "| condition | planned | ok | timeout | agent error | no telemetry | unscored | not run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for condition, counts in report.inventory.items():
        lines.append(
            f"| {condition} | {counts['planned']} | {counts['ok']} | {counts['timeout']} "
            f"| {counts['agent_error']} | {counts['no_telemetry']} | {counts['unscored']} "
            f"| {counts['not_run']} |"
        )
    lines += [
        "",
        "## Cases",
        "",
        "| case | status | with | baseline | Δ overall | utility |",
        "|---|---|---|---|---|---|",
    ]
    for case in report.cases:
        lines.append(
            f"| {case.case_id} | {case.status} | {_num(case.with_skill.metrics.get('overall'))} "
            f"| {_num(case.baseline.metrics.get('overall'))} | {_signed(case.overall_delta)} "
            f"| {_num(case.utility, 1)} |"
        )
    return "\n".join(lines) + "\n"
