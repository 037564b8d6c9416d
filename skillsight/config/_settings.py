"""Every setting of the service, declared once with its env var, default and type.

Precedence, highest first: explicit argument (CLI flag) > ``SKILLSIGHT_*`` environment variable >
config file (TOML, path in ``SKILLSIGHT_CONFIG``) > default. A malformed value fails at start-up
with a :class:`~skillsight.errors.ConfigError` that names the variable and what it expects.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from skillsight.config._validate import validate
from skillsight.config._values import parse, read_config_file, shown
from skillsight.config._values import setting as _setting


@dataclass(frozen=True)
class Settings:
    """The service's settings. Build with :meth:`Settings.load`."""

    data_dir: Path = _setting(Path(".skillsight/data"), "path", "folder of the embedded store")
    clickhouse_url: str = _setting(
        "", "str", "ClickHouse server, clickhouse://user:pass@host:8123/db; empty = embedded chdb"
    )
    clickhouse_cluster: str = _setting(
        "",
        "str",
        "ClickHouse cluster (a remote_servers name): replicated, sharded tables, DDL ON CLUSTER; "
        "empty = one server",
    )
    host: str = _setting(
        "",
        "str",
        "interface to bind; empty = 127.0.0.1, or 0.0.0.0 when API keys and TLS are both set",
    )
    port: int = _setting(8000, "int", "REST API and web UI port")
    otlp_http_port: int = _setting(4318, "int", "OTLP/HTTP receiver port")
    otlp_grpc_port: int = _setting(4317, "int", "OTLP/gRPC receiver port")
    api_keys: dict[str, str] = _setting(
        None,
        "api_keys",
        "key:project[:scopes],... (scopes ingest, read, admin joined by +; none = ingest+read); "
        "unset = everything is project 'default', loopback only",
    )
    tls_certfile: str = _setting("", "str", "PEM certificate: every listener speaks TLS")
    tls_keyfile: str = _setting("", "str", "PEM private key of tls_certfile")
    tls_client_ca: str = _setting("", "str", "PEM CA that must sign clients' certificates")
    max_header_bytes: int = _setting(
        64 * 1024, "int", "largest request line and headers on HTTP listeners (431 past it)"
    )
    max_headers: int = _setting(100, "int", "most header fields in one HTTP request (431 past it)")
    read_timeout_s: float = _setting(
        15.0,
        "float",
        "an HTTP request whose header or body stalls this long gets 408 and is closed",
    )
    request_read_timeout_s: float = _setting(
        60.0, "float", "longest the header and body of one HTTP request may take to arrive (408)"
    )
    max_connections: int = _setting(1000, "int", "connections per listener; 503 past it")
    max_request_bytes: int = _setting(
        16 * 1024 * 1024, "int", "largest OTLP request body accepted, as sent (413 past it)"
    )
    max_decompressed_bytes: int = _setting(
        64 * 1024 * 1024, "int", "largest OTLP body after gzip decompression (413 past it)"
    )
    max_attribute_bytes: int = _setting(
        256 * 1024, "int", "attribute values longer than this are cut and marked"
    )
    max_attribute_depth: int = _setting(
        8, "int", "array/map attribute values nested deeper than this are cut and marked"
    )
    queue_max_rows: int = _setting(
        500_000, "int", "rows (spans + log records) held for writing before clients get 429/503"
    )
    batch_max_rows: int = _setting(50_000, "int", "rows written to ClickHouse in one insert")
    flush_interval_s: float = _setting(0.5, "float", "longest a row waits in the queue")
    retention_days: int = _setting(0, "int", "TTL of spans and events in days; 0 = keep forever")
    ack: str = _setting(
        "auto",
        "str",
        "when an export gets 200: spool (fsync'd to the spool folder), commit (rows committed), "
        "memory (queued: lost on a crash); auto = spool embedded, commit on a ClickHouse server",
    )
    spool_dir: str = _setting("", "str", "the spool's folder; empty = spool/ in the data folder")
    spool_max_bytes: int = _setting(
        1 << 30, "int", "bytes of requests the spool holds uncommitted before clients get 429"
    )
    ack_timeout_s: float = _setting(
        5.0, "float", "longest an export waits to be made durable before it is answered 503"
    )
    ingest_future_s: float = _setting(
        86_400.0, "float", "spans and log records timed further ahead than this are rejected"
    )
    project_rate_limit: str = _setting(
        "", "str", "rows/s per project: N for all, project=N for some (429 past it); empty = none"
    )
    project_burst_s: float = _setting(10.0, "float", "seconds of its rate a project may burst")
    project_daily_quota: str = _setting(
        "", "str", "rows per UTC day per project: N, project=N (429 past it); empty = none"
    )
    skills_dirs: str = _setting(
        "",
        "str",
        "folders of skills (SKILL.md) put in the catalogue at start-up, separated by ':'",
    )
    rebuild_enabled: bool = _setting(
        True, "bool", "rebuild trajectories and skill activations of completed sessions"
    )
    # 0.5 s keeps trace-complete-to-scores under DESIGN's 2 s at p95 (skillsight bench
    # eval-latency); a session also waits for its root span, so a pause mid-run rarely splits it.
    rebuild_quiet_s: float = _setting(
        0.5, "float", "a session is complete after this long without a new span or event"
    )
    rebuild_max_wait_s: float = _setting(
        30.0,
        "float",
        "rebuild a session whose parent spans or log events have not all arrived after this "
        "long (shown, not yet scored)",
    )
    # Spans keep arriving while an agent works (each model call and tool call ends and is
    # exported), so this long a silence with the root still missing means it will not come.
    rebuild_settle_s: float = _setting(
        300.0,
        "float",
        "score a session that stays incomplete (rebuilt after rebuild_max_wait_s) once this "
        "long has passed without a new row",
    )
    rebuild_poll_s: float = _setting(
        0.2, "float", "how often the finalizer looks for newly written sessions"
    )
    rebuild_batch_max: int = _setting(64, "int", "sessions rebuilt and written together")
    rebuild_cache_mb: int = _setting(
        256,
        "int",
        "MB of memory for the rows of recently rebuilt sessions, so that rebuilding one again "
        "(the next prompt of a long session) reads only its new rows (0 = read every session "
        "whole)",
    )
    rebuild_catchup_s: float = _setting(
        3600.0, "float", "at start, rebuild sessions written this far back and not yet rebuilt"
    )
    judge_model: str = _setting(
        "", "str", "LLM judge, a litellm model string (openai/gpt-4o-mini…); empty = no judging"
    )
    judge_api_base: str = _setting(
        "", "str", "judge endpoint for OpenAI-compatible gateways and local servers"
    )
    judge_sample_rate: float = _setting(
        0.1, "float", "share of activations the LLM judges score (0-1, by activation id hash)"
    )
    judge_daily_spend_usd: float = _setting(
        5.0, "float", "judging stops for the UTC day once this much was spent (inf = no cap)"
    )
    judge_concurrency: int = _setting(4, "int", "judge calls in flight at once, per rubric")
    judge_structured_output: str = _setting(
        "auto", "str", "auto, json_schema or tool (function-call style, for providers without it)"
    )
    judge_input_usd_per_mtok: float = _setting(
        0.0, "float", "judge prompt price per million tokens when litellm knows none"
    )
    judge_output_usd_per_mtok: float = _setting(
        0.0, "float", "judge completion price per million tokens when litellm knows none"
    )
    fast_path: bool = _setting(
        True,
        "bool",
        "let ClickHouse parse OTLP/protobuf trace requests itself (embedded store only)",
    )
    eval_enabled: bool = _setting(
        True, "bool", "score every rebuilt activation with the deterministic evaluators"
    )
    eval_evaluators: str = _setting(
        "", "str", "evaluators the scheduler runs, comma-separated; empty = all seven"
    )
    eval_sample: str = _setting(
        "", "str", "per-evaluator sampling rates, name=rate,... (0-1); unnamed ones run on all"
    )
    eval_skills: str = _setting("", "str", "score only these skills, comma-separated; empty = all")
    eval_agents: str = _setting("", "str", "score only these agents, comma-separated; empty = all")
    eval_projects: str = _setting(
        "", "str", "score only these projects, comma-separated; empty = all"
    )
    eval_concurrency: int = _setting(2, "int", "sessions scored at once (each in a worker thread)")
    eval_queue_max: int = _setting(
        1000, "int", "rebuilt sessions waiting to be scored before the finalizer is held back"
    )
    eval_retries: int = _setting(5, "int", "attempts to write a session's scores on store errors")
    eval_retry_backoff_s: float = _setting(
        0.2, "float", "wait before the first retry; doubles per attempt (capped at 10 s)"
    )
    eval_worker_index: int = _setting(
        0, "int", "this scheduler's share of activations, 0..eval_workers-1 (by id hash)"
    )
    eval_workers: int = _setting(1, "int", "schedulers splitting the activations between them")
    worker_index: int = _setting(
        0, "int", "this worker's share: sessions it rebuilds (activations, evaluate-only), 0..N-1"
    )
    workers: int = _setting(
        1, "int", "worker processes splitting the work by hash (every worker must agree on it)"
    )
    eval_warm_up: bool = _setting(
        True,
        "bool",
        "skillsight serve loads the embedding model at start, before it listens, not at the first "
        "score",
    )
    gc_young_threshold: int = _setting(
        50_000,
        "int",
        "a started service process freezes what start-up made and collects cyclic garbage every "
        "this many allocations instead of 700 (docs/performance.md); 0 = Python's collector "
        "as it is",
    )
    scorecard_refresh_s: float = _setting(
        5.0,
        "float",
        "how often evaluating processes refresh the scorecard aggregates of days scored since "
        "(reads stay exact meanwhile); 0 = never",
    )
    scorecard_refresh_hold_s: float = _setting(
        60.0,
        "float",
        "a day refreshed less than this long ago whose new scores are all in a few hours (live "
        "traffic's) waits: its marked hours are read from the rows meanwhile (reads stay exact)",
    )
    # Failure clusters (docs/clusters.md); checked at start-up by skillsight.clustering.
    cluster_enabled: bool = _setting(
        True, "bool", "cluster failing activations: runs on a schedule, new failures joined at once"
    )
    cluster_window_days: int = _setting(14, "int", "a run clusters failures of this many days")
    cluster_interval_s: float = _setting(
        900.0, "float", "re-cluster a project once its latest run is this old (0 = on demand only)"
    )
    cluster_min_size: int = _setting(5, "int", "fewest failures HDBSCAN makes a cluster of")
    cluster_reduce_to: int = _setting(
        32, "int", "PCA dimensions for a skill with more than 2,000 failures (0 = never)"
    )
    cluster_merge_similarity: float = _setting(
        0.85, "float", "clusters whose centroids' cosine reaches this are merged (0 = never)"
    )
    cluster_cause_weight: float = _setting(
        0.5, "float", "weight of the failing evaluators and finding kinds beside the text vector"
    )
    cluster_assign_max_distance: float = _setting(
        0.15, "float", "a new failure joins the nearest cluster within this cosine distance"
    )
    cluster_assign_poll_s: float = _setting(
        0.25, "float", "how often new failing evaluations are looked for and assigned"
    )
    cluster_fail_below: str = _setting(
        "",
        "str",
        "fail an evaluation below a score instead of by its verdict: evaluator=0.5,"
        "skill:evaluator=0.8",
    )

    def __post_init__(self) -> None:
        if self.api_keys is None:
            object.__setattr__(self, "api_keys", {})

    @property
    def tls(self) -> bool:
        return bool(self.tls_certfile)

    @property
    def bind_host(self) -> str:
        """Loopback unless API keys make remote callers identifiable and TLS keeps their keys
        secret on the wire (behind a TLS-terminating proxy, set ``host`` explicitly)."""
        if self.host:
            return self.host
        return "0.0.0.0" if self.api_keys and self.tls else "127.0.0.1"

    @classmethod
    def load(
        cls, overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
    ) -> Settings:
        """Resolve every setting by precedence; ``overrides`` holds explicit arguments."""
        environ = os.environ if env is None else env
        values: dict[str, Any] = {}
        config_path = environ.get("SKILLSIGHT_CONFIG")
        file_values = read_config_file(Path(config_path)) if config_path else {}
        for spec in fields(cls):
            kind = spec.metadata["kind"]
            env_name = f"SKILLSIGHT_{spec.name.upper()}"
            if overrides and overrides.get(spec.name) is not None:
                values[spec.name] = overrides[spec.name]
            elif env_name in environ:
                values[spec.name] = parse(env_name, environ[env_name], kind)
            elif spec.name in file_values:
                values[spec.name] = parse(
                    f"{config_path}: {spec.name}", str(file_values[spec.name]), kind
                )
        settings = replace(cls(), **values)
        settings.validate()
        return settings

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the setting when a value cannot work."""
        validate(self)

    @staticmethod
    def describe() -> list[tuple[str, str, str]]:
        """(env var, default, help) of every setting, for docs and ``--help``."""
        return [
            (f"SKILLSIGHT_{s.name.upper()}", shown(s.default), s.metadata["help"])
            for s in fields(Settings)
        ]
