"""What ``skillsight activations`` and ``skillsight trajectories`` read and how they print it.

Two sources with one interface: a running service (``--api``) or the store itself. The
timeline of ``activations show`` is rendered here so the command stays a few lines.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Protocol

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from skillsight.cli._api import NotFound, ServiceClient, SourceError
from skillsight.reports import evaluations_of
from skillsight.store.records import Activation

__all__ = [
    "ApiSource",
    "NotFound",
    "Source",
    "SourceError",
    "StoreSource",
    "print_activation",
    "print_activations",
    "print_evaluations",
]


class Source(Protocol):
    def activations(
        self, *, skill: str, session_id: str, since: datetime | None, limit: int
    ) -> list[Activation]: ...

    def activation(self, activation_id: str) -> Activation: ...

    def trajectory(self, session_id: str) -> str: ...

    def evaluations(self, activation: Activation) -> list[dict[str, Any]]: ...


class ApiSource:
    """A running ``skillsight serve`` (its REST API)."""

    def __init__(self, api: str, key: str | None) -> None:
        self._get = ServiceClient(api, key).get

    def activations(
        self, *, skill: str, session_id: str, since: datetime | None, limit: int
    ) -> list[Activation]:
        params: dict[str, Any] = {"skill": skill, "session_id": session_id, "limit": limit}
        if since is not None:
            params["since"] = since.isoformat()
        return [Activation.model_validate(a) for a in self._get("/api/v1/activations", params)]

    def activation(self, activation_id: str) -> Activation:
        return Activation.model_validate(self._get(f"/api/v1/activations/{activation_id}"))

    def trajectory(self, session_id: str) -> str:
        return json.dumps(self._get(f"/api/v1/trajectories/{session_id}"), ensure_ascii=False)

    def evaluations(self, activation: Activation) -> list[dict[str, Any]]:
        """Its current evaluations (an activation not scored yet has none)."""
        record = self._get(f"/api/v1/activations/{activation.activation_id}")
        return list(record.get("evaluations") or [])


class StoreSource:
    """The store itself (embedded folder or ClickHouse server), one project."""

    def __init__(self, store: Any, project: str) -> None:
        self.store = store
        self.project = project

    def activations(
        self, *, skill: str, session_id: str, since: datetime | None, limit: int
    ) -> list[Activation]:
        found: list[Activation] = self.store.activations.find(
            self.project, skill=skill, session_id=session_id, since=since, limit=limit
        )
        return found

    def activation(self, activation_id: str) -> Activation:
        found: Activation | None = self.store.activations.get(self.project, activation_id)
        if found is None:
            raise NotFound(f"no activation {activation_id!r} in project {self.project!r}")
        return found

    def trajectory(self, session_id: str) -> str:
        document: str | None = self.store.trajectories.get(self.project, session_id)
        if document is None:
            raise NotFound(f"no trajectory for session {session_id!r} in project {self.project!r}")
        return document

    def evaluations(self, activation: Activation) -> list[dict[str, Any]]:
        rows = self.store.evaluations.for_activation(
            self.project, activation.activation_id, skill=activation.skill_name
        )
        return [e.model_dump() for e in evaluations_of(rows, activation)]


# -- printing -------------------------------------------------------------------------------------


def _moment(text: str) -> datetime | None:
    """An ISO 8601 time with up to nanosecond digits (Python reads at most micro)."""
    if not text:
        return None
    value = text.strip().replace("Z", "+00:00")
    head, dot, rest = value.partition(".")
    if dot:
        digits = "".join(ch for ch in rest if ch.isdigit())
        zone = rest[len(digits) :]
        value = f"{head}.{digits[:6].ljust(6, '0')}{zone}"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _excerpt(value: Any, width: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def print_activations(console: Console, found: list[Activation]) -> None:
    """One line each, narrow enough for 80 columns with the whole id (``show`` takes it)."""
    table = Table(box=None, header_style="bold")
    table.add_column("started UTC", no_wrap=True)
    table.add_column("skill", min_width=12, overflow="fold")
    table.add_column("trigger", no_wrap=True)
    table.add_column("calls", justify="right", no_wrap=True)
    table.add_column("id", no_wrap=True, min_width=32)
    for a in found:
        table.add_row(
            a.started_at[5:16].replace("T", " "),
            escape(a.skill_name),
            a.trigger,
            str(len(a.tool_calls)),
            a.activation_id,
        )
    console.print(table)
    console.print(f"{len(found)} activations", style="dim")


def print_activation(console: Console, a: Activation) -> None:
    """A readable timeline: decision, each internal call, integration, and the bill."""
    start = _moment(a.started_at)
    console.print(
        f"[bold]{escape(a.skill_name)}[/] activated by [cyan]{a.trigger}[/]"
        f"{' in subagent ' + escape(a.subagent) if a.subagent else ''}"
        f"  [dim]{a.activation_id}[/]",
        highlight=False,
    )
    console.print(
        f"[dim]session[/] {escape(a.session_id)}  [dim]trace[/] {a.trace_id}  "
        f"[dim]agent[/] {escape(a.agent or '?')}  [dim]outcome[/] {a.outcome}"
        + ("" if a.settled else "  [yellow]provisional: the session is still incomplete[/]"),
        highlight=False,
    )
    if a.contract is not None:
        tools = a.contract.allowed_tools
        console.print(
            f"[dim]contract[/] allowed-tools {escape(' '.join(tools)) if tools else '(any)'}"
            f"  version {a.skill_version[:12] or a.contract.version[:12] or '?'}",
            highlight=False,
        )
    request = a.request if a.request_logged else "(not logged by the source)"
    console.print(f"[dim]request[/] {escape(_excerpt(request, 300))}", highlight=False)
    if a.visible_skills:
        names = ", ".join(s.name for s in a.visible_skills)
        console.print(f"[dim]visible skills[/] {escape(names)}", highlight=False)
    console.print()
    console.print(
        f"  [dim]{'+0.000s':>9}[/]  [bold cyan]▶ start[/] {a.trigger} "
        f"[dim]{escape(a.trigger_call_id)}[/]",
        highlight=False,
    )
    if a.skill_output:
        console.print(f"{'':13}[dim]→ {escape(_excerpt(a.skill_output))}[/]", highlight=False)
    for call in a.tool_calls:
        moment = _moment(call.started_at)
        offset = f"+{(moment - start).total_seconds():.3f}s" if moment is not None and start else ""
        took = f" [dim]{call.duration_ms:.0f} ms[/]" if call.duration_ms is not None else ""
        mark = "[red]✗[/]" if call.is_error else "•"
        console.print(
            f"  [dim]{offset:>9}[/]  {mark} [bold]{escape(call.name)}[/]"
            f" {escape(_excerpt(call.arguments))}{took} [dim](step {call.step_id})[/]",
            highlight=False,
        )
        if call.result is not None:
            style = "red" if call.is_error else "dim"
            console.print(f"{'':13}[{style}]→ {escape(_excerpt(call.result))}[/]", highlight=False)
    if not a.tool_calls:
        console.print(f"{'':13}[dim](no tool calls while the skill was active)[/]")
    console.print()
    if a.integration_message is not None:
        console.print(
            f"[dim]integration[/] {escape(_excerpt(a.integration_message, 400))}", highlight=False
        )
    else:
        console.print("[dim]integration[/] (no agent message after the activation)")
    console.print(
        f"[dim]tokens[/] in {a.tokens.input} out {a.tokens.output} "
        f"cache read {a.tokens.cache_read} write {a.tokens.cache_creation}  "
        f"[dim]cost[/] ${a.cost_usd:.4f}  [dim]duration[/] {a.duration_ms / 1000:.2f} s",
        highlight=False,
    )


def print_evaluations(console: Console, evaluations: list[dict[str, Any]]) -> None:
    """One line per evaluator: score, verdict and the reason (as the API shows them)."""
    if not evaluations:
        console.print("[dim]not scored yet[/]")
        return
    table = Table(box=None, header_style="bold", title="evaluations", title_justify="left")
    for column in ("evaluator", "score", "verdict", "reason"):
        table.add_column(column, overflow="fold", justify="right" if column == "score" else "left")
    for row in sorted(evaluations, key=lambda r: str(r["evaluator"])):
        score, passed = row.get("score"), row.get("passed")
        verdict = (
            f"[dim]{row.get('label') or 'not scored'}[/]"
            if score is None
            else ("[green]pass[/]" if passed else "[red]FAIL[/]")
        )
        if row.get("stale"):  # scored an earlier rebuild; the rescore is pending
            verdict += " [yellow]stale[/]"
        table.add_row(
            escape(str(row["evaluator"])),
            "-" if score is None else f"{float(score):.2f}",
            verdict,
            escape(_excerpt(str(row.get("reason") or row.get("error") or ""), 160)),
        )
    console.print(table)
