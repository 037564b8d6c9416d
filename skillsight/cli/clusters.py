"""``skillsight clusters``: the failure clusters, their lifecycle, and a run on demand.

Each command reads a running service (``--api``) or the store itself (``--data`` /
``--clickhouse``, ``--project``); both print the same records (:mod:`skillsight.reports`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from skillsight.cli._common import (
    ApiOpt,
    ClickhouseOpt,
    DataOpt,
    KeyOpt,
    ProjectOpt,
    app,
    console,
    fail,
    load_settings,
    opened_store,
)
from skillsight.config import DEFAULT_PROJECT
from skillsight.errors import SkillsightError

clusters_app = typer.Typer(
    help="Failure clusters: failing activations grouped by cause, with ids that last.",
    no_args_is_help=True,
)
app.add_typer(clusters_app, name="clusters")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
AssigneeOpt = Annotated[
    str | None, typer.Option("--assignee", help="Who owns it now.", show_default=False)
]
NoteOpt = Annotated[
    str | None, typer.Option("--note", help="A note for the others.", show_default=False)
]


def _call(
    api: str | None,
    key: str | None,
    method: str,
    path: str,
    *,
    params: dict[str, Any] | None = None,
    body: dict[str, Any] | None = None,
) -> Any:
    """One request to a running service; errors become one clear line."""
    import httpx

    headers = {"x-skillsight-key": key} if key else {}
    try:
        response = httpx.request(
            method,
            (api or "").rstrip("/") + path,
            params={k: v for k, v in (params or {}).items() if v not in (None, "")},
            json=body,
            headers=headers,
            timeout=600,
        )
    except httpx.HTTPError as exc:
        raise fail(f"cannot reach {api}: {exc}") from exc
    if response.status_code != 200:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        raise fail(f"{api} answered {response.status_code}: {str(detail)[:300]}")
    return response.json()


def _direct(data: Any, clickhouse: str | None, action: Callable[[Any], Any]) -> Any:
    """Run ``action(store)`` on the store the options name; errors become one clear line."""
    try:
        with opened_store(data, clickhouse) as store:
            return action(store)
    except SkillsightError as exc:
        raise fail(str(exc)) from exc


@clusters_app.command("list")
def clusters_list(
    status: Annotated[
        list[str] | None,
        typer.Option("--status", help="Only this status (repeat for several).", show_default=False),
    ] = None,
    skill: Annotated[str, typer.Option("--skill", help="Only clusters of this skill.")] = "",
    limit: Annotated[int, typer.Option("--limit", help="Most clusters to show.")] = 20,
    as_json: JsonOpt = False,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """List failure clusters, the most pressing first (by size, trend and severity).

    Example: skillsight clusters list --status new --status regressed --api http://127.0.0.1:8000
    """
    if api:
        found = _call(
            api,
            key,
            "GET",
            "/api/v1/clusters",
            params={"status": status, "skill": skill, "limit": limit},
        )
    else:
        from skillsight.reports import list_clusters

        found = [
            c.model_dump()
            for c in _direct(
                data,
                clickhouse,
                lambda s: list_clusters(s, project, status=status or (), skill=skill, limit=limit),
            )
        ]
    if as_json:
        console.print_json(json.dumps(found))
        return
    if not found:
        console.print("no clusters (none found yet: `skillsight clusters run`)")
        return
    table = Table()
    table.add_column("cluster", no_wrap=True, min_width=15)
    table.add_column("status", no_wrap=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column("trend", no_wrap=True)
    table.add_column("label", overflow="fold")
    for c in found:
        trend = c["trend"]
        table.add_row(
            c["cluster_id"],
            c["status"],
            c["severity"],
            str(c["size"]),
            f"{trend['direction']} {trend['per_hour']:.1f}/h",
            escape(c["label"]),
        )
    console.print(table)


@clusters_app.command("show")
def clusters_show(
    cluster_id: Annotated[str, typer.Argument(help="The cluster id (cl_…).")],
    limit: Annotated[int, typer.Option("--limit", help="Members to list.")] = 20,
    as_json: JsonOpt = False,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Show one cluster: facts, exemplars, evaluators and its latest members.

    Example: skillsight clusters show cl_3f9a0c1d2e4b --api http://127.0.0.1:8000
    """
    if api:
        found = _call(api, key, "GET", f"/api/v1/clusters/{cluster_id}", params={"limit": limit})
    else:
        from skillsight.reports import cluster_detail

        found = _direct(
            data, clickhouse, lambda s: cluster_detail(s, project, cluster_id, limit=limit)
        ).model_dump()
    if as_json:
        console.print_json(json.dumps(found))
        return
    trend = found["trend"]
    console.print(f"[bold]{escape(found['label'])}[/]  ({found['cluster_id']})")
    console.print(
        f"status {found['status']}"
        + (f" · assignee {escape(found['assignee'])}" if found["assignee"] else "")
        + f" · severity {found['severity']} · {found['size']} activations in "
        f"{found['sessions']} sessions · {trend['direction']}, {trend['per_hour']:.1f}/h"
    )
    console.print(
        f"skills {', '.join(found['skills'])} · first bad version "
        f"{found['first_bad_version'][:12] or '-'} · seen {found['first_seen'][:16]} to "
        f"{found['last_seen'][:16]}"
    )
    console.print(f"evaluators {found['evaluators']} · kinds {found['kinds']}")
    console.print(f"exemplars {', '.join(found['exemplar_activation_ids'])}")
    if found["note"]:
        console.print(f"note: {escape(found['note'])}")
    if found.get("suggested_fix"):
        advice = found["advice"]
        console.print(f"suggested fix ({advice['layer']}): {escape(found['suggested_fix'])}")
    table = Table()
    table.add_column("activation", no_wrap=True, min_width=32)
    table.add_column("started", no_wrap=True)
    table.add_column("version", overflow="fold")
    table.add_column("joined", no_wrap=True)
    for m in found["members"]:
        table.add_row(
            m["activation_id"], m["started_at"][:19], m["skill_version"][:12], m["assigned_by"]
        )
    console.print(table)


def _set_status(
    cluster_id: str,
    status: str,
    assignee: str | None,
    note: str | None,
    api: str | None,
    key: str | None,
    data: Any,
    clickhouse: str | None,
    project: str,
) -> None:
    if api:
        body = {"status": status, "assignee": assignee, "note": note}
        found = _call(api, key, "POST", f"/api/v1/clusters/{cluster_id}/status", body=body)
    else:
        from skillsight.reports import set_cluster_status

        found = _direct(
            data,
            clickhouse,
            lambda s: set_cluster_status(
                s, project, cluster_id, status, assignee=assignee, note=note
            ),
        ).model_dump()
    console.print(f"{found['cluster_id']} is {found['status']}: {escape(found['label'])}")


@clusters_app.command("ack")
def clusters_ack(
    cluster_id: Annotated[str, typer.Argument(help="The cluster id.")],
    assignee: AssigneeOpt = None,
    note: NoteOpt = None,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Acknowledge a cluster: someone is on it.

    Example: skillsight clusters ack cl_3f9a0c1d2e4b --assignee ana --note "allowed-tools fix"
    """
    _set_status(cluster_id, "acknowledged", assignee, note, api, key, data, clickhouse, project)


@clusters_app.command("resolve")
def clusters_resolve(
    cluster_id: Annotated[str, typer.Argument(help="The cluster id.")],
    note: NoteOpt = None,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Resolve a cluster; a failure like it that starts later marks it regressed.

    Example: skillsight clusters resolve cl_3f9a0c1d2e4b --note "fixed in v3"
    """
    _set_status(cluster_id, "resolved", None, note, api, key, data, clickhouse, project)


@clusters_app.command("run")
def clusters_run(
    as_json: JsonOpt = False,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Cluster the project's failures now and report what changed.

    Example: skillsight clusters run --data .skillsight/data --project default
    """
    if api:
        summary = _call(api, key, "POST", "/api/v1/clusters/run")
    else:
        from skillsight.clustering import run_clustering, run_options
        from skillsight.evaluators import default_embedder

        try:
            options = run_options(load_settings(data=data, clickhouse=clickhouse))
        except SkillsightError as exc:
            raise fail(str(exc)) from exc
        summary = _direct(
            data,
            clickhouse,
            lambda s: run_clustering(s, project, embedder=default_embedder(), options=options),
        ).to_dict()
    if as_json:
        console.print_json(json.dumps(summary))
        return
    console.print(
        f"{summary['failures']} failures: {summary['clusters']} clusters "
        f"({summary['new_clusters']} new, {summary['merged']} merged, {summary['regressed']} "
        f"regressed), {summary['novel']} novel; {summary['kept_share']:.1%} of members kept "
        f"their cluster id; {sum(summary['seconds'].values()):.1f} s"
    )
