"""Terminal output of scorecards and gate results (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from skillsight.cli._gate import GateResult
from skillsight.reports import EvaluatorScoreOut, ScorecardOut


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _scores_table(title: str, scores: list[EvaluatorScoreOut]) -> Table:
    table = Table(title=title, title_justify="left", box=None, header_style="bold")
    columns = ("evaluator", "activations", "scored", "not evaluated", "passed", "pass rate", "mean")
    for column in (*columns, "min"):
        table.add_column(column, justify="left" if column == "evaluator" else "right")
    for s in scores:
        table.add_row(
            s.evaluator,
            str(s.activations),
            str(s.scored),
            str(s.not_evaluated),
            str(s.passed),
            _rate(s.pass_rate),
            _num(s.mean_score),
            _num(s.min_score),
        )
    return table


def print_scorecard(console: Console, card: ScorecardOut) -> None:
    since = f" since {card.since}" if card.since else ""
    console.print(
        f"[bold]{card.skill}[/]: {card.activations} activations, window {card.window}{since}",
        highlight=False,
    )
    if not card.activations:
        return
    console.print(_scores_table("all versions", card.evaluators))
    for version in card.versions:
        title = (
            f"version {version.version[:12] or '(unknown)'}: {version.activations} activations, "
            f"{version.first_started[:19]} .. {version.last_started[:19]}"
        )
        console.print(_scores_table(title, version.evaluators))
    trend = Table(title="trend (mean score per day)", title_justify="left", box=None)
    days = sorted({p.day for p in card.trend})
    names = [e.evaluator for e in card.evaluators]
    trend.add_column("evaluator")
    for day in days:
        trend.add_column(day, justify="right")
    cells = {(p.evaluator, p.day): p.mean_score for p in card.trend}
    for name in names:
        trend.add_row(name, *(_num(cells.get((name, day))) for day in days))
    console.print(trend)


def print_gate(console: Console, result: GateResult) -> None:
    version = f" version {result.version[:12]}" if result.version else ""
    console.print(
        f"gate [bold]{result.skill}[/]{version}: {result.activations} activations",
        highlight=False,
    )
    table = Table(box=None, header_style="bold")
    for column in ("evaluator", "min", "mean", "pass rate", "scored", "result"):
        table.add_column(column, justify="left" if column in ("evaluator", "result") else "right")
    for v in result.verdicts:
        outcome = "no scores" if v.mean_score is None else ("pass" if v.ok else "FAIL")
        style = "red" if not v.ok else ("dim" if v.mean_score is None else "green")
        table.add_row(
            v.evaluator,
            f"{v.threshold:.3f}",
            _num(v.mean_score),
            _rate(v.pass_rate),
            str(v.scored),
            f"[{style}]{outcome}[/]",
        )
    console.print(table)
    for item in result.failing:
        console.print(
            f"[red]✗[/] {item.evaluator} {_num(item.score)} activation {item.activation_id} "
            f"(session {item.session_id}, {item.started_at[:19]}): {item.reason}",
            highlight=False,
            soft_wrap=True,
        )
        for finding in item.findings:
            where = ", ".join(
                part
                for part in (
                    f"step {finding.step_id}" if finding.step_id is not None else "",
                    finding.tool_call_id or "",
                )
                if part
            )
            console.print(
                f"    {finding.kind} at {where}: {finding.message}", highlight=False, soft_wrap=True
            )
        if not item.findings and (item.evidence.step_ids or item.evidence.tool_call_ids):
            cited = [f"step {s}" for s in item.evidence.step_ids] + item.evidence.tool_call_ids
            console.print(f"    cites {', '.join(cited)}", highlight=False, soft_wrap=True)
    console.print("[green]gate passed[/]" if result.ok else "[red]gate failed[/]")
