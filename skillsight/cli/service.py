"""The service's commands: serve, ingest files, read spans, rebuild sessions, the rebuild worker."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress
from rich.table import Table

from skillsight.cli._api import ServiceClient
from skillsight.cli._common import (
    ApiOpt,
    ClickhouseOpt,
    DataOpt,
    KeyOpt,
    ProjectOpt,
    app,
    console,
    err,
    explain_store_error,
    fail,
    load_settings,
    opened_store,
)
from skillsight.config import DEFAULT_PROJECT
from skillsight.errors import SkillsightError


@app.command()
def serve(
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    otlp_http_port: Annotated[
        int | None,
        typer.Option(
            "--otlp-http-port",
            help="OTLP/HTTP port [default 4318, env SKILLSIGHT_OTLP_HTTP_PORT].",
            show_default=False,
        ),
    ] = None,
    otlp_grpc_port: Annotated[
        int | None,
        typer.Option(
            "--otlp-grpc-port",
            help="OTLP/gRPC port [default 4317, env SKILLSIGHT_OTLP_GRPC_PORT].",
            show_default=False,
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port", help="REST API port [default 8000, env SKILLSIGHT_PORT].", show_default=False
        ),
    ] = None,
    skills: Annotated[
        list[Path] | None,
        typer.Option(
            "--skills",
            help="A folder of skills (SKILL.md) to put in the catalogue at start-up, so "
            "activations get their contract (repeatable) [env SKILLSIGHT_SKILLS_DIRS].",
            show_default=False,
        ),
    ] = None,
    role: Annotated[
        str,
        typer.Option(
            "--role",
            help="What this process runs: all, collector (OTLP in), worker (rebuild and "
            "evaluation), api (reads), rebuild or evaluate. Roles other than all need "
            "--clickhouse. Every role serves /healthz, /readyz, /livez and /metrics.",
        ),
    ] = "all",
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            help="This worker's share of the work, INDEX/COUNT "
            "[env SKILLSIGHT_WORKER_INDEX, SKILLSIGHT_WORKERS].",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run the collector and API (embedded store unless --clickhouse is given), or one role
    of a scaled-out set-up (deploy/, docs/operations.md).

    Example: skillsight serve --data ./skillsight-data --skills ./.claude/skills

    Example: skillsight serve --role worker --shard 0/3 --clickhouse clickhouse://ch:8123/db
    """
    from skillsight.api import Endpoints
    from skillsight.api import serve as run
    from skillsight.runtime import parse_shard, role_named, settle_heap

    try:
        share = parse_shard(shard) if shard else (None, None)
        settings = load_settings(
            data=data,
            clickhouse=clickhouse,
            otlp_http_port=otlp_http_port,
            otlp_grpc_port=otlp_grpc_port,
            port=port,
            skills_dirs=os.pathsep.join(str(p) for p in skills) if skills else None,
            worker_index=share[0],
            workers=share[1],
        )
        chosen = role_named(role)
        if chosen.name != "all" and not settings.clickhouse_url:
            raise fail(
                f"--role {chosen.name} shares its store with other processes: give "
                "--clickhouse URL (the embedded store belongs to one process)"
            )
    except SkillsightError as exc:
        raise fail(str(exc)) from exc

    def ready(endpoints: Endpoints) -> None:
        store = settings.clickhouse_url or f"embedded ({settings.data_dir})"
        console.print(
            f"[bold green]skillsight serving[/] role: {chosen.name}, store: {store}",
            highlight=False,
        )
        console.print(
            f"  API + UI    {endpoints.api}  (OpenAPI at {endpoints.api}/docs)", highlight=False
        )
        if endpoints.otlp_http:
            console.print(f"  OTLP/HTTP   {endpoints.otlp_http}", highlight=False)
            console.print(f"  OTLP/gRPC   {endpoints.otlp_grpc}", highlight=False)
        settle_heap(settings.gc_young_threshold)  # started: the model and imports are in
        # one machine-readable line for scripts and tests
        print("SKILLSIGHT_READY " + json.dumps(endpoints.__dict__), flush=True)

    try:
        asyncio.run(run(settings, role=chosen, on_ready=ready))
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    except OSError as exc:
        raise fail(f"cannot listen: {exc}") from exc


def _read_export_file(path: Path) -> list[tuple[str, bytes, str]]:
    """(signal, body, encoding) of each export request stored in ``path``."""
    from skillsight.ingest import otlp

    raw = path.read_bytes()
    if path.suffix == ".gz" or raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    name = path.name.removesuffix(".gz")
    guessed = otlp.LOGS if "log" in name.lower() else otlp.TRACES
    if name.endswith((".json", ".jsonl", ".ndjson")) or raw.lstrip()[:1] in (b"{", b"["):
        bodies: list[bytes] = []
        text = raw.decode("utf-8", errors="replace").strip()
        if text.startswith("["):
            bodies = [json.dumps(item).encode() for item in json.loads(text)]
        else:
            try:
                json.loads(text)
                bodies = [text.encode()]
            except json.JSONDecodeError:  # JSON lines, as the OTel Collector's file exporter
                bodies = [line.encode() for line in text.splitlines() if line.strip()]
        out = []
        for body in bodies:
            signal = (
                otlp.LOGS
                if b'"resourceLogs"' in body or b'"resource_logs"' in body
                else (
                    otlp.TRACES
                    if b'"resourceSpans"' in body or b'"resource_spans"' in body
                    else guessed
                )
            )
            out.append((signal, body, otlp.JSON))
        return out
    return [(guessed, raw, otlp.PROTOBUF)]


@app.command()
def ingest(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="OTLP export files: JSON, JSON lines or protobuf, optionally .gz.",
            exists=True,
            dir_okay=False,
        ),
    ],
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Load OTLP export files into the store. Files whose name contains 'log' are log exports.

    Example: skillsight ingest traces.json logs.pb.gz --data ./skillsight-data
    """
    from skillsight.ingest import otlp
    from skillsight.store import open_store
    from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA

    try:
        settings = load_settings(data=data, clickhouse=clickhouse)
        store = open_store(settings)
    except SkillsightError as exc:
        raise fail(explain_store_error(exc, settings if "settings" in locals() else None)) from exc
    limits = otlp.Limits(settings.max_attribute_bytes, settings.max_attribute_depth)
    totals = {"spans": 0, "log records": 0, "rejected": 0}
    try:
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task("ingesting", total=len(files))
            for path in files:
                for signal, body, encoding in _read_export_file(path):
                    try:
                        decoded = otlp.decode(signal, body, encoding, project, limits)
                    except SkillsightError as exc:
                        err.print(f"[yellow]{path}[/]: {exc}", highlight=False)
                        totals["rejected"] += 1
                        continue
                    if signal == otlp.TRACES:
                        totals["spans"] += store.spans.insert(decoded.columns.to_arrow(SPAN_SCHEMA))
                    else:
                        totals["log records"] += store.events.insert(
                            decoded.columns.to_arrow(EVENT_SCHEMA)
                        )
                    totals["rejected"] += decoded.rejected
                    if decoded.message():
                        err.print(f"[yellow]{path}[/]: {decoded.message()}", highlight=False)
                progress.advance(task)
    except OSError as exc:
        raise fail(str(exc)) from exc
    finally:
        store.close()
    console.print(
        f"ingested {totals['spans']} spans and {totals['log records']} log records "
        f"({totals['rejected']} rejected) into project {project!r}",
        highlight=False,
    )


@app.command()
def spans(
    trace: Annotated[
        str | None, typer.Option("--trace", help="Only this trace id (hex).", show_default=False)
    ] = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Only this session id.", show_default=False)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    limit: Annotated[int, typer.Option("--limit", help="Most spans to show.")] = 200,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Show normalized spans, from a running service (--api) or straight from the store.

    Example: skillsight spans --trace 4bf92f3577b34da6a3ce929d0e0e4736 --api http://127.0.0.1:8000
    """
    params: dict[str, str | int] = {
        "trace_id": trace or "",
        "session_id": session or "",
        "limit": limit,
    }
    if api:
        try:
            rows: list[dict[str, Any]] = ServiceClient(api, key).get("/api/v1/spans", params)
        except SkillsightError as exc:
            raise fail(str(exc)) from exc
    else:
        from skillsight.reports import span_out

        with opened_store(data, clickhouse) as store:
            rows = [
                span_out(r).model_dump()
                for r in store.spans.find(
                    project, trace_id=(trace or "").lower(), session_id=session or "", limit=limit
                )
            ]
    if as_json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    table = Table(box=None, header_style="bold")
    table.add_column("start", no_wrap=True)
    table.add_column("trace", no_wrap=True, max_width=8)
    table.add_column("name", overflow="fold")
    table.add_column("operation", no_wrap=True, min_width=12)
    table.add_column("tool", no_wrap=True)
    table.add_column("skill", overflow="fold")
    table.add_column("convention", no_wrap=True, min_width=11)
    table.add_column("ms", justify="right", no_wrap=True)
    for row in rows:
        table.add_row(
            row["start_time"][11:23],
            row["trace_id"][:8],
            row["name"][:40],
            row["operation"],
            row["tool_name"],
            row["skill_name"],
            row["source_convention"],
            f"{row['duration_ms']:.1f}",
        )
    console.print(table)
    console.print(f"{len(rows)} spans", style="dim")


@app.command()
def rebuild(
    session: Annotated[
        str | None,
        typer.Option(
            "--session", help="Only this session (default: every session).", show_default=False
        ),
    ] = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Rebuild trajectories and skill activations from the stored spans and events now.

    `skillsight serve` does this by itself once a session is complete; this is for stores
    filled by `skillsight ingest`, or after an upgrade of the algorithm.

    Example: skillsight rebuild --data ./skillsight-data
    """
    from skillsight.rebuild.catalogue import store_catalogue
    from skillsight.rebuild.finalizer import default_rebuild, rebuild_sessions

    with opened_store(data, clickhouse) as store:
        try:
            keys = [
                (p, k, through)
                for p, k, through in store.sessions.touched(0)
                if p == project and (session is None or k == session)
            ]
            if session is not None and not keys:
                raise fail(f"no spans or events of session {session!r} in project {project!r}")
            outcomes, _ = rebuild_sessions(
                store, keys, rebuild=default_rebuild(), catalogue=store_catalogue(store)
            )
        except SkillsightError as exc:
            raise fail(str(exc)) from exc
    rebuilt = [o.rebuilt for o in outcomes if o.rebuilt is not None]
    failed = [o for o in outcomes if o.error]
    for outcome in failed:
        err.print(f"[yellow]{outcome.session_key}[/]: {outcome.error}", highlight=False)
    console.print(
        f"rebuilt {len(rebuilt)} sessions, {sum(len(r.activations) for r in rebuilt)} "
        f"activations, in project {project!r}"
        + (f"; {len(failed)} sessions failed" if failed else ""),
        highlight=False,
    )
    if failed:
        raise typer.Exit(1)


@app.command()
def migrate(
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    show: Annotated[
        bool,
        typer.Option(
            "--print",
            help="Print every statement of the schema (as a fresh store gets it) and exit.",
        ),
    ] = False,
) -> None:
    """Bring the store's schema up to date and exit (on a cluster, SKILLSIGHT_CLICKHOUSE_CLUSTER:
    ON CLUSTER, recorded once). Every process also migrates at start; run this first on
    upgrades so the roles roll out onto the new schema (docs/operations.md). --print shows the
    SQL without connecting, for review.

    Example: skillsight migrate --clickhouse clickhouse://user:pass@ch:8123/skillsight
    """
    from skillsight.store import ServerAddress, open_store, schema_sql

    try:
        settings = load_settings(data=data, clickhouse=clickhouse)
        if show:
            url = settings.clickhouse_url
            database = ServerAddress.parse(url).database if url else "default"
            for name, statement in schema_sql(settings.clickhouse_cluster, database):
                print((f"-- {name}\n" if name else "") + statement + ";\n")
            return
        store = open_store(settings, migrate=False)
    except SkillsightError as exc:
        raise fail(explain_store_error(exc, settings if "settings" in locals() else None)) from exc
    try:
        applied = store.migrate()
        store.set_retention(settings.retention_days)
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    finally:
        store.close()
    where = f"cluster {settings.clickhouse_cluster}" if settings.clickhouse_cluster else "store"
    console.print(
        f"schema up to date on the {where}: applied {len(applied)} migrations"
        + (f" ({', '.join(applied)})" if applied else ""),
        highlight=False,
    )


@app.command()
def worker(
    shard: Annotated[
        str, typer.Option("--shard", help="This worker's share of sessions, INDEX/COUNT.")
    ] = "0/1",
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
) -> None:
    """Rebuild completed sessions from the store in a process of its own (scaled-out set-ups:
    collectors with SKILLSIGHT_REBUILD_ENABLED=0, one or more workers). Stops on SIGTERM.

    Example: skillsight worker --clickhouse clickhouse://ch:8123/skillsight --shard 0/2
    """
    from skillsight.runtime import Services, parse_shard, run_services, settle_heap

    def ready(_: Services) -> None:
        settle_heap(settings.gc_young_threshold)
        print("SKILLSIGHT_WORKER_READY", flush=True)

    try:
        settings = load_settings(data=data, clickhouse=clickhouse)
        services = asyncio.run(
            run_services(settings, role="rebuild", shard=parse_shard(shard), on_ready=ready)
        )
    except SkillsightError as exc:
        raise fail(str(exc)) from exc
    finalizer = services.finalizer
    if finalizer is None:
        raise fail("rebuilding is disabled (SKILLSIGHT_REBUILD_ENABLED=0)")
    console.print(
        f"rebuilt {finalizer.stats.sessions_rebuilt} sessions ({finalizer.stats.errors} errors)",
        highlight=False,
    )
