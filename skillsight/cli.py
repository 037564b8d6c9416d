"""The ``skillsight`` command.

Every command has help text with an example; options shared by several commands are defined
once below. User mistakes end in one clear line and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

try:
    import typer
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table
except ImportError:  # the base install is instrumentation only
    sys.stderr.write("the skillsight command needs the service: pip install 'skillsight[server]'\n")
    raise SystemExit(2) from None

from skillsight._activation_cli import (
    ApiSource,
    Source,
    StoreSource,
    print_activation,
    print_activations,
    print_evaluations,
)
from skillsight._judges_cli import bench_judges, judges_app
from skillsight.config import DEFAULT_PROJECT, Settings
from skillsight.errors import SkillsightError

app = typer.Typer(
    help="skillsight: OpenTelemetry ingest and evaluation of agent skills.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
bench_app = typer.Typer(
    help="Benchmarks that measure the targets in DESIGN.md.", no_args_is_help=True
)
app.add_typer(bench_app, name="bench")
skills_app = typer.Typer(
    help="The skill catalogue: check SKILL.md folders, record and list them.",
    no_args_is_help=True,
)
app.add_typer(skills_app, name="skills")
activations_app = typer.Typer(
    help="Skill activations rebuilt from completed sessions.", no_args_is_help=True
)
app.add_typer(activations_app, name="activations")
trajectories_app = typer.Typer(
    help="Session trajectories in ATIF-v1.7 (Harbor's Agent Trajectory Interchange Format).",
    no_args_is_help=True,
)
app.add_typer(trajectories_app, name="trajectories")
app.add_typer(judges_app, name="judges")
bench_app.command("judges")(bench_judges)
console = Console()
err = Console(stderr=True)

# -- shared options -----------------------------------------------------------------------------
DataOpt = Annotated[
    Path | None,
    typer.Option(
        "--data", help="Folder of the embedded store [env SKILLSIGHT_DATA_DIR].", show_default=False
    ),
]
ClickhouseOpt = Annotated[
    str | None,
    typer.Option(
        "--clickhouse",
        help="ClickHouse server URL, clickhouse://user:pass@host:8123/db "
        "[env SKILLSIGHT_CLICKHOUSE_URL].",
        show_default=False,
    ),
]
ApiOpt = Annotated[
    str | None,
    typer.Option(
        "--api",
        envvar="SKILLSIGHT_API_URL",
        help="Use a running service at this URL instead of opening the store.",
        show_default=False,
    ),
]
ProjectOpt = Annotated[
    str, typer.Option("--project", help="Project to read or write (direct store access).")
]
KeyOpt = Annotated[
    str | None,
    typer.Option(
        "--key", envvar="SKILLSIGHT_API_KEY", help="API key sent to --api.", show_default=False
    ),
]


def _settings(**overrides: Any) -> Settings:
    data = overrides.pop("data", None)
    clickhouse = overrides.pop("clickhouse", None)
    return Settings.load({"data_dir": data, "clickhouse_url": clickhouse, **overrides})


def _fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


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
) -> None:
    """Run the collector and API (embedded store unless --clickhouse is given).

    Example: skillsight serve --data ./skillsight-data --skills ./.claude/skills
    """
    from skillsight.api.server import Endpoints
    from skillsight.api.server import serve as run

    try:
        settings = _settings(
            data=data,
            clickhouse=clickhouse,
            otlp_http_port=otlp_http_port,
            otlp_grpc_port=otlp_grpc_port,
            port=port,
            skills_dirs=os.pathsep.join(str(p) for p in skills) if skills else None,
        )
    except SkillsightError as exc:
        raise _fail(str(exc)) from exc

    def ready(endpoints: Endpoints) -> None:
        store = settings.clickhouse_url or f"embedded ({settings.data_dir})"
        console.print(f"[bold green]skillsight serving[/] store: {store}", highlight=False)
        console.print(
            f"  API + UI    {endpoints.api}  (OpenAPI at {endpoints.api}/docs)", highlight=False
        )
        console.print(f"  OTLP/HTTP   {endpoints.otlp_http}", highlight=False)
        console.print(f"  OTLP/gRPC   {endpoints.otlp_grpc}", highlight=False)
        # one machine-readable line for scripts and tests
        print("SKILLSIGHT_READY " + json.dumps(endpoints.__dict__), flush=True)

    try:
        asyncio.run(run(settings, on_ready=ready))
    except SkillsightError as exc:
        raise _fail(str(exc)) from exc
    except OSError as exc:
        raise _fail(f"cannot listen: {exc}") from exc


def _read_export_file(path: Path) -> list[tuple[str, bytes, str]]:
    """(signal, body, encoding) of each export request stored in ``path``."""
    from skillsight.collector import otlp

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
    from skillsight.collector import otlp
    from skillsight.collector.rows import EVENT_SCHEMA, SPAN_SCHEMA
    from skillsight.collector.store import open_store

    try:
        settings = _settings(data=data, clickhouse=clickhouse)
        store = open_store(settings)
    except SkillsightError as exc:
        raise _fail(
            _explain_store_error(exc, settings if "settings" in locals() else None)
        ) from exc
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
                        totals["spans"] += store.insert_spans(decoded.columns.to_arrow(SPAN_SCHEMA))
                    else:
                        totals["log records"] += store.insert_events(
                            decoded.columns.to_arrow(EVENT_SCHEMA)
                        )
                    totals["rejected"] += decoded.rejected
                    if decoded.message():
                        err.print(f"[yellow]{path}[/]: {decoded.message()}", highlight=False)
                progress.advance(task)
    except OSError as exc:
        raise _fail(str(exc)) from exc
    finally:
        store.close()
    console.print(
        f"ingested {totals['spans']} spans and {totals['log records']} log records "
        f"({totals['rejected']} rejected) into project {project!r}",
        highlight=False,
    )


def _explain_store_error(exc: SkillsightError, settings: Settings | None) -> str:
    text = str(exc)
    if "EmbeddedServer" in text or "in use" in text:
        where = settings.data_dir if settings else "the data folder"
        return (
            f"the embedded store in {where} is in use by another process (a running "
            "`skillsight serve`?); stop it, or read through it with --api URL"
        )
    return text


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
        import httpx

        headers = {"x-skillsight-key": key} if key else {}
        try:
            response = httpx.get(
                f"{api.rstrip('/')}/api/v1/spans", params=params, headers=headers, timeout=30
            )
        except httpx.HTTPError as exc:
            raise _fail(f"cannot reach {api}: {exc}") from exc
        if response.status_code != 200:
            raise _fail(f"{api} answered {response.status_code}: {response.text[:300]}")
        rows: list[dict[str, Any]] = response.json()
    else:
        from skillsight.api.models import span_out
        from skillsight.collector.store import open_store

        settings = None
        try:
            settings = _settings(data=data, clickhouse=clickhouse)
            store = open_store(settings)
        except SkillsightError as exc:
            raise _fail(_explain_store_error(exc, settings)) from exc
        try:
            rows = [
                span_out(r).model_dump()
                for r in store.list_spans(
                    project, trace_id=(trace or "").lower(), session_id=session or "", limit=limit
                )
            ]
        finally:
            store.close()
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


@bench_app.command("ingest")
def bench_ingest(
    spans_total: Annotated[int, typer.Option("--spans", help="Spans to send.")] = 300_000,
    senders: Annotated[int, typer.Option("--senders", help="Concurrent exporters.")] = 4,
    batch: Annotated[int, typer.Option("--batch", help="Spans per export request.")] = 512,
    compare: Annotated[
        bool,
        typer.Option(
            "--compare/--no-compare",
            help="Also run with the fast path off and print the ratio of the two.",
        ),
    ] = True,
) -> None:
    """Measure OTLP/HTTP protobuf ingest into a fresh embedded server: committed spans/s.

    Example: skillsight bench ingest --spans 300000
    """
    from skillsight.bench.ingest import run_ingest_bench

    try:
        reports = [
            run_ingest_bench(
                spans_total=spans_total,
                senders=senders,
                batch=batch,
                console=console,
                fast_path=fast,
            )
            for fast in ((True, False) if compare else (True,))
        ]
    except SkillsightError as exc:
        raise _fail(str(exc)) from exc
    if compare:
        fast_rate, python_rate = (r["committed_spans_per_cpu_s"] or 0 for r in reports)
        ratio = fast_rate / python_rate if python_rate else float("inf")
        console.print(f"[bold]fast path / Python decoder: {ratio:.2f}x[/] spans per server CPU-s")
    if any(r["spans_lost"] for r in reports):
        raise typer.Exit(1)


@bench_app.command("overhead")
def bench_overhead(
    sessions: Annotated[
        int, typer.Option("--sessions", help="Real Claude Code sessions each way (0: skip).")
    ] = 3,
    replays: Annotated[
        int, typer.Option("--replays", help="Sessions replayed through the instrumentor alone.")
    ] = 2000,
    tool_calls: Annotated[
        int, typer.Option("--tool-calls", help="Tool calls per replayed session.")
    ] = 20,
) -> None:
    """Measure what the Claude Agent SDK instrumentor adds: latency per session and call, memory.

    Example: skillsight bench overhead --sessions 5
    """
    from skillsight.bench.overhead import run_overhead_bench

    run_overhead_bench(sessions=sessions, replays=replays, tool_calls=tool_calls, console=console)


# -- skills ---------------------------------------------------------------------------------------


@skills_app.command("scan")
def skills_scan(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Folders to search for SKILL.md (or skill folders, or SKILL.md files)."
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    store_them: Annotated[
        bool, typer.Option("--store", help="Record the skills without violations in the store.")
    ] = False,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Check every SKILL.md below PATHS against the Agent Skills rules; exit 1 on a violation.

    Each violation prints as `file:line: rule: message`.

    Example: skillsight skills scan .claude/skills --store --data ./skillsight-data
    """
    from skillsight.skills import scan

    try:
        report = scan(paths)
    except SkillsightError as exc:
        raise _fail(str(exc), 2) from exc
    stored = 0
    if store_them and report.valid_skills:
        from skillsight.collector.store import open_store

        settings = None
        try:
            settings = _settings(data=data, clickhouse=clickhouse)
            store = open_store(settings)
        except SkillsightError as exc:
            raise _fail(_explain_store_error(exc, settings), 2) from exc
        try:
            stored = store.insert_skills(project, report.valid_skills)
        except SkillsightError as exc:
            raise _fail(str(exc), 2) from exc
        finally:
            store.close()
    if as_json:
        print(json.dumps({**report.to_json(), "stored": stored}, indent=2, ensure_ascii=False))
    else:
        for violation in report.violations:
            print(violation)
        summary = (
            f"{len(report.files)} skills scanned, {len(report.valid_skills)} valid, "
            f"{len(report.violations)} violations"
        )
        if store_them:
            summary += f"; {stored} recorded in project {project!r}"
        print(summary)
    if report.violations:
        raise typer.Exit(1)


@skills_app.command("list")
def skills_list(
    name: Annotated[
        str, typer.Option("--name", help="Only this skill (every version of it).")
    ] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """List the recorded skill catalogue: every scanned version, newest first per skill.

    Example: skillsight skills list --data ./skillsight-data
    """
    rows: list[dict[str, Any]]
    if api:
        import httpx

        headers = {"x-skillsight-key": key} if key else {}
        try:
            response = httpx.get(
                f"{api.rstrip('/')}/api/v1/skills",
                params={"name": name},
                headers=headers,
                timeout=30,
            )
        except httpx.HTTPError as exc:
            raise _fail(f"cannot reach {api}: {exc}") from exc
        if response.status_code != 200:
            raise _fail(f"{api} answered {response.status_code}: {response.text[:300]}")
        rows = response.json()
    else:
        from skillsight.collector.store import open_store

        settings = None
        try:
            settings = _settings(data=data, clickhouse=clickhouse)
            store = open_store(settings)
        except SkillsightError as exc:
            raise _fail(_explain_store_error(exc, settings)) from exc
        try:
            rows = store.list_skills(project, name)
        finally:
            store.close()
    if as_json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    table = Table(box=None, header_style="bold")
    table.add_column("skill", overflow="fold")
    table.add_column("version", no_wrap=True)
    table.add_column("allowed-tools", overflow="fold")
    table.add_column("scanned", no_wrap=True)
    table.add_column("description", overflow="fold", max_width=60)
    for row in rows:
        tools = row["allowed_tools"]
        table.add_row(
            row["name"],
            row["version"][:12],
            "(any)" if tools is None else " ".join(tools) or "(none)",
            row["scanned_at"][:19],
            row["description"],
        )
    console.print(table)
    console.print(f"{len(rows)} skill versions", style="dim")


@bench_app.command("rebuild")
def bench_rebuild(
    steps: Annotated[int, typer.Option("--steps", help="Steps of the long session.")] = 1000,
    sessions: Annotated[
        int, typer.Option("--sessions", help="Short sessions for the throughput run.")
    ] = 200,
    repeat: Annotated[int, typer.Option("--repeat", help="Timed runs (median).")] = 5,
    as_json: Annotated[
        bool, typer.Option("--json", help="Also print the numbers as JSON.")
    ] = False,
) -> None:
    """Measure rebuild time of a long session (algorithm alone, and store read + algorithm +
    write) and activations rebuilt per CPU-second, on a fresh embedded store.

    Example: skillsight bench rebuild --steps 1000
    """
    from skillsight.bench.rebuild import run_rebuild_bench

    try:
        report = run_rebuild_bench(steps=steps, sessions=sessions, repeat=repeat, console=console)
    except SkillsightError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        print(json.dumps(report, indent=2))


@bench_app.command("eval")
def bench_eval(
    activations: Annotated[
        int, typer.Option("--activations", help="Synthetic activations per workload.")
    ] = 5000,
    selection: Annotated[
        int,
        typer.Option("--selection", help="Activations for skill_selection (0 skips the model)."),
    ] = 300,
    as_json: Annotated[
        bool, typer.Option("--json", help="Also print the numbers as JSON.")
    ] = False,
) -> None:
    """Measure deterministic evaluations per CPU-second (per core); skill_selection apart.

    Example: skillsight bench eval --activations 5000 --selection 300
    """
    from skillsight.bench.eval import run_eval_bench

    try:
        report = run_eval_bench(activations=activations, selection=selection, console=console)
    except SkillsightError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        print(json.dumps(report, indent=2))


# -- activations and trajectories ---------------------------------------------------------------


@contextlib.contextmanager
def _read_source(
    api: str | None, key: str | None, data: Path | None, clickhouse: str | None, project: str
) -> Iterator[Source]:
    """A running service (--api) or the store itself, for the read commands."""
    if api:
        yield ApiSource(api, key)
        return
    from skillsight.collector.store import open_store

    settings = None
    try:
        settings = _settings(data=data, clickhouse=clickhouse)
        store = open_store(settings)
    except SkillsightError as exc:
        raise _fail(_explain_store_error(exc, settings)) from exc
    try:
        yield StoreSource(store, project)
    finally:
        store.close()


@activations_app.command("list")
def activations_list(
    skill: Annotated[str, typer.Option("--skill", help="Only this skill.")] = "",
    session: Annotated[str, typer.Option("--session", help="Only this session id.")] = "",
    since: Annotated[
        datetime | None,
        typer.Option("--since", help="Started at or after (ISO 8601, UTC).", show_default=False),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="Most activations to show.")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """List skill activations, newest first.

    Example: skillsight activations list --skill csv-summary --api http://127.0.0.1:8000
    """
    try:
        with _read_source(api, key, data, clickhouse, project) as source:
            found = source.activations(skill=skill, session_id=session, since=since, limit=limit)
    except SkillsightError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        print(json.dumps([a.model_dump(mode="json") for a in found], indent=2, ensure_ascii=False))
    else:
        print_activations(console, found)


@activations_app.command("show")
def activations_show(
    activation_id: Annotated[str, typer.Argument(help="Activation id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the record as JSON.")] = False,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Show one activation as a timeline: trigger, request, each internal tool call with its
    arguments and result, the integration message, tokens, cost and duration.

    Example: skillsight activations show 9f1c2e0a7b3d4c5e8f6a1b2c3d4e5f60 --api http://127.0.0.1:8000
    """
    try:
        with _read_source(api, key, data, clickhouse, project) as source:
            found = source.activation(activation_id)
            scores = source.evaluations(activation_id)
    except SkillsightError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        print(found.model_dump_json(indent=2))
    else:
        print_activation(console, found)
        console.print()
        print_evaluations(console, scores)


@trajectories_app.command("export")
def trajectories_export(
    session_id: Annotated[
        str, typer.Argument(help="Session id (or trace id of a sessionless trace).")
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "-o", "--output", help="Write to this file instead of stdout.", show_default=False
        ),
    ] = None,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Export a session's trajectory as an ATIF-v1.7 JSON document.

    Example: skillsight trajectories export 093ac2ae-a7ab-4b25-b958-3919a7e38a98 -o session.json
    """
    try:
        with _read_source(api, key, data, clickhouse, project) as source:
            document = source.trajectory(session_id)
    except SkillsightError as exc:
        raise _fail(str(exc)) from exc
    text = json.dumps(json.loads(document), indent=2, ensure_ascii=False) + "\n"
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise _fail(f"cannot write {output}: {exc}") from exc
    err.print(f"wrote {output}", highlight=False)


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
    from skillsight.collector.finalizer import default_rebuild, rebuild_sessions, store_catalogue
    from skillsight.collector.store import open_store

    settings = None
    try:
        settings = _settings(data=data, clickhouse=clickhouse)
        store = open_store(settings)
    except SkillsightError as exc:
        raise _fail(_explain_store_error(exc, settings)) from exc
    try:
        keys = [
            (p, k, through)
            for p, k, through in store.touched_sessions(0)
            if p == project and (session is None or k == session)
        ]
        if session is not None and not keys:
            raise _fail(f"no spans or events of session {session!r} in project {project!r}")
        outcomes, _ = rebuild_sessions(
            store, keys, rebuild=default_rebuild(), catalogue=store_catalogue(store)
        )
    except SkillsightError as exc:
        raise _fail(str(exc)) from exc
    finally:
        store.close()
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
    from skillsight.collector.worker import parse_shard, run_worker

    def ready() -> None:
        print("SKILLSIGHT_WORKER_READY", flush=True)

    try:
        settings = _settings(data=data, clickhouse=clickhouse)
        finalizer = asyncio.run(run_worker(settings, shard=parse_shard(shard), on_ready=ready))
    except SkillsightError as exc:
        raise _fail(str(exc)) from exc
    console.print(
        f"rebuilt {finalizer.stats.sessions_rebuilt} sessions ({finalizer.stats.errors} errors)",
        highlight=False,
    )


# -- evaluation: backfill, scorecards, the CI gate ------------------------------------------------

eval_app = typer.Typer(help="Score stored activations with the evaluators.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")

WindowOpt = Annotated[
    str,
    typer.Option("--window", help="Activations started within this span: 24h, 7d, 4w or all."),
]


@contextlib.contextmanager
def _evaluation_source(
    api: str | None, key: str | None, data: Path | None, clickhouse: str | None, project: str
) -> Iterator[Any]:
    """A running service (--api) or the store itself, for scorecards and the gate."""
    from skillsight._evaluation_sources import ApiEvaluations, StoreEvaluations

    if api:
        yield ApiEvaluations(api, key)
        return
    from skillsight.collector.store import open_store

    settings = None
    try:
        settings = _settings(data=data, clickhouse=clickhouse)
        store = open_store(settings)
    except SkillsightError as exc:
        raise _fail(_explain_store_error(exc, settings), 2) from exc
    try:
        yield StoreEvaluations(store, project)
    finally:
        store.close()


@eval_app.command("run")
def eval_run(
    since: Annotated[
        datetime | None,
        typer.Option(
            "--since", help="Activations started at or after (ISO 8601, UTC).", show_default=False
        ),
    ] = None,
    evaluator: Annotated[
        list[str] | None,
        typer.Option(
            "--evaluator",
            help="Only this evaluator, on every activation (repeatable; default: the seven "
            "deterministic ones, plus the LLM judges on their sampled share when "
            "SKILLSIGHT_JUDGE_MODEL is set).",
            show_default=False,
        ),
    ] = None,
    skill: Annotated[str, typer.Option("--skill", help="Only this skill.")] = "",
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Score stored activations now (backfill); rows replace earlier ones of the same
    evaluator version. `skillsight serve` scores new activations by itself.

    Example: skillsight eval run --since 2026-11-01 --evaluator security --data ./skillsight-data
    """
    from skillsight.collector.store import open_store
    from skillsight.evaluators._sched_backfill import backfill
    from skillsight.evaluators._service import service_evaluators

    settings = None
    try:
        settings = _settings(data=data, clickhouse=clickhouse)
        service = service_evaluators(settings)
        store = open_store(settings)
    except SkillsightError as exc:
        raise _fail(_explain_store_error(exc, settings), 2) from exc
    err.print(service.judges, highlight=False)
    try:
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task("scoring activations", total=None)
            report = backfill(
                store,
                project,
                since=since,
                skill=skill,
                evaluators=evaluator or None,
                registry=service.registry,
                rates=None if evaluator else service.rates,
                trajectories=service.needs_trajectories,
                on_total=lambda n: progress.update(task, total=n),
                on_progress=lambda n: progress.advance(task, n),
            )
    except SkillsightError as exc:
        raise _fail(str(exc), 2) from exc
    finally:
        store.close()
    console.print(
        f"scored {report.activations} activations: {report.evaluations} evaluations "
        f"({report.scored} scored, {report.failed} failed, {report.errors} evaluator errors) "
        f"in {report.seconds:.1f} s, project {project!r}",
        highlight=False,
    )


@eval_app.command("worker")
def eval_worker(
    worker: Annotated[
        str | None,
        typer.Option(
            "--worker",
            help="This worker's share of activations, INDEX/COUNT "
            "[env SKILLSIGHT_EVAL_WORKER_INDEX, SKILLSIGHT_EVAL_WORKERS].",
            show_default=False,
        ),
    ] = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
) -> None:
    """Score rebuilt sessions from the store in a process of its own (scaled-out set-ups:
    collectors and `skillsight worker` rebuilders apart, with SKILLSIGHT_EVAL_ENABLED=0 on the
    collectors). Stops on SIGTERM after scoring what it found.

    Example: skillsight eval worker --clickhouse clickhouse://ch:8123/skillsight --worker 0/2
    """
    from skillsight.collector.worker import parse_shard
    from skillsight.evaluators._sched_poller import run_eval_worker

    def ready() -> None:
        print("SKILLSIGHT_EVAL_WORKER_READY", flush=True)

    try:
        share = parse_shard(worker) if worker else (None, None)
        settings = _settings(
            data=data,
            clickhouse=clickhouse,
            eval_worker_index=share[0],
            eval_workers=share[1],
        )
        scheduler = asyncio.run(run_eval_worker(settings, on_ready=ready))
    except SkillsightError as exc:
        raise _fail(str(exc), 2) from exc
    stats = scheduler.stats
    console.print(
        f"scored {stats.sessions_scored} sessions, {stats.evaluations_written} evaluations "
        f"({stats.store_failures} sessions failed)",
        highlight=False,
    )


@skills_app.command("scorecard")
def skills_scorecard(
    name: Annotated[str, typer.Argument(help="Skill name.")],
    window: WindowOpt = "30d",
    version: Annotated[str, typer.Option("--version", help="Only this skill version.")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """A skill's scorecard: activations, pass rate and mean score per evaluator, overall and
    per skill version, with a per-day trend.

    Example: skillsight skills scorecard csv-summary --window 7d --api http://127.0.0.1:8000
    """
    from skillsight._evaluation_print import print_scorecard

    try:
        with _evaluation_source(api, key, data, clickhouse, project) as source:
            card = source.scorecard(name, window=window, since=None, version=version)
    except SkillsightError as exc:
        raise _fail(str(exc), 2) from exc
    if as_json:
        print(card.model_dump_json(indent=2))
    else:
        print_scorecard(console, card)


@app.command()
def gate(
    skill: Annotated[
        str, typer.Option("--skill", help="Skill to gate (default: [gate] skill of the config).")
    ] = "",
    minimum: Annotated[
        list[str] | None,
        typer.Option(
            "--min",
            help="evaluator=threshold: fail when the mean score is below "
            "(repeatable; over skillsight.toml).",
            show_default=False,
        ),
    ] = None,
    version: Annotated[str, typer.Option("--version", help="Only this skill version.")] = "",
    since: Annotated[
        datetime | None,
        typer.Option(
            "--since",
            help="Activations started at or after (ISO 8601, UTC); overrides --window.",
            show_default=False,
        ),
    ] = None,
    window: Annotated[
        str | None,
        typer.Option(
            "--window",
            help="Activations started within this span (default 30d).",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Thresholds file (default: skillsight.toml here or in a parent folder).",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    api: ApiOpt = None,
    key: KeyOpt = None,
    data: DataOpt = None,
    clickhouse: ClickhouseOpt = None,
    project: ProjectOpt = DEFAULT_PROJECT,
) -> None:
    """Exit 1 when a skill's evaluation scores are below their thresholds, printing the
    failing activations with their cited steps; exit 2 when there is nothing to gate.

    Example: skillsight gate --skill csv-summary --min allowed_tools=1.0 --min security=1.0
    """
    from skillsight._evaluation_print import print_gate
    from skillsight._gate import GateConfig, GateResult, find_config, judge, parse_min, read_config
    from skillsight.evaluators import DETERMINISTIC

    try:
        path = config or find_config(Path.cwd())
        if config is not None and not config.is_file():
            raise _fail(f"no config file {config}", 2)
        file = read_config(path, skill, DETERMINISTIC) if path else GateConfig(skill)
        thresholds = {**file.thresholds, **parse_min(minimum or [], DETERMINISTIC)}
    except SkillsightError as exc:
        raise _fail(str(exc), 2) from exc
    skill = skill or file.skill
    if not skill:
        raise _fail("no skill to gate: pass --skill NAME or set [gate] skill in skillsight.toml", 2)
    if not thresholds:
        raise _fail(
            "no thresholds: pass --min evaluator=value or add [gate.min] to skillsight.toml", 2
        )
    span = window or file.window or "30d"
    try:
        with _evaluation_source(api, key, data, clickhouse, project) as source:
            card = source.scorecard(skill, window=span, since=since, version=version)
            verdicts = judge(card, thresholds)
            failing = [
                item
                for v in verdicts
                if not v.ok
                for item in source.below(
                    skill,
                    v.evaluator,
                    v.threshold,
                    window=span,
                    since=since,
                    version=version,
                    limit=20,
                )
            ]
    except SkillsightError as exc:
        raise _fail(str(exc), 2) from exc
    result = GateResult(skill, version, card.activations, verdicts, tuple(failing))
    if as_json:
        print(
            json.dumps(
                {
                    "skill": skill,
                    "version": version,
                    "ok": result.ok,
                    "activations": result.activations,
                    "verdicts": [
                        {
                            "evaluator": v.evaluator,
                            "min": v.threshold,
                            "mean": v.mean_score,
                            "pass_rate": v.pass_rate,
                            "scored": v.scored,
                            "ok": v.ok,
                        }
                        for v in verdicts
                    ],
                    "failing": [f.model_dump(mode="json") for f in failing],
                },
                indent=2,
            )
        )
    else:
        print_gate(console, result)
    if not card.activations:
        raise _fail(f"no evaluated activations of {skill!r} in the window: nothing to gate", 2)
    if not result.ok:
        raise typer.Exit(1)


@bench_app.command("eval-latency")
def bench_eval_latency(
    sessions: Annotated[int, typer.Option("--sessions", help="Sessions timed.")] = 20,
    quiet: Annotated[
        float, typer.Option("--quiet", help="The service's rebuild quiet period (s).")
    ] = 0.5,
    as_json: Annotated[
        bool, typer.Option("--json", help="Also print the numbers as JSON.")
    ] = False,
) -> None:
    """Latency from trace completion (the session's last span acknowledged) to its scores
    stored, through a real `skillsight serve`, p50/p95 over SESSIONS sessions (target <= 2 s).

    Example: skillsight bench eval-latency --sessions 20
    """
    from skillsight.bench.eval_latency import run_eval_latency_bench

    try:
        report = run_eval_latency_bench(sessions=sessions, quiet_s=quiet, console=console)
    except SkillsightError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        print(json.dumps(report, indent=2))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
