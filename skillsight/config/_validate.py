"""Checks that a resolved set of settings can work; each error names the setting to fix."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from skillsight.errors import ConfigError

if TYPE_CHECKING:
    from skillsight.config._settings import Settings


def validate(self: Settings) -> None:
    for name in ("port", "otlp_http_port", "otlp_grpc_port"):
        port = getattr(self, name)
        if not 0 <= port <= 65535:
            raise ConfigError(f"{name}={port} is not a TCP port (0-65535)")
    for name in (
        "max_request_bytes",
        "max_decompressed_bytes",
        "queue_max_rows",
        "batch_max_rows",
        "max_attribute_bytes",
        "max_attribute_depth",
        "rebuild_poll_s",
        "rebuild_batch_max",
        "spool_max_bytes",
        "ack_timeout_s",
        "max_header_bytes",
        "max_headers",
        "read_timeout_s",
        "request_read_timeout_s",
        "max_connections",
    ):
        if getattr(self, name) <= 0:
            raise ConfigError(f"{name} must be positive (SKILLSIGHT_{name.upper()})")
    for name in ("eval_concurrency", "eval_queue_max", "eval_retries", "eval_workers"):
        if getattr(self, name) <= 0:
            raise ConfigError(f"{name} must be positive (SKILLSIGHT_{name.upper()})")
    if self.workers <= 0 or not 0 <= self.worker_index < self.workers:
        raise ConfigError(
            f"worker_index={self.worker_index} must be in 0..{self.workers - 1} "
            "(SKILLSIGHT_WORKER_INDEX, SKILLSIGHT_WORKERS)"
        )
    if self.clickhouse_cluster and not self.clickhouse_url:
        raise ConfigError(
            "clickhouse_cluster needs a ClickHouse server: set SKILLSIGHT_CLICKHOUSE_URL too"
        )
    if not 0 <= self.eval_worker_index < self.eval_workers:
        raise ConfigError(
            f"eval_worker_index={self.eval_worker_index} must be in 0..{self.eval_workers - 1}"
            " (SKILLSIGHT_EVAL_WORKER_INDEX, SKILLSIGHT_EVAL_WORKERS)"
        )
    for name in (
        "rebuild_quiet_s",
        "rebuild_max_wait_s",
        "rebuild_settle_s",
        "rebuild_catchup_s",
        "rebuild_cache_mb",
        "gc_young_threshold",
    ):
        if getattr(self, name) < 0:
            raise ConfigError(f"{name} must not be negative (SKILLSIGHT_{name.upper()})")
    _validate_ingest(self)
    if self.clickhouse_url and not self.clickhouse_url.startswith(
        ("clickhouse://", "clickhouses://", "http://", "https://")
    ):
        raise ConfigError(
            f"clickhouse_url {self.clickhouse_url!r} must look like "
            "clickhouse://user:password@host:8123/database"
        )
    if not 0.0 <= self.judge_sample_rate <= 1.0:
        raise ConfigError("judge_sample_rate must be in [0, 1] (SKILLSIGHT_JUDGE_SAMPLE_RATE)")
    if self.judge_concurrency <= 0 or self.judge_daily_spend_usd < 0:
        raise ConfigError(
            "judge_concurrency must be positive and judge_daily_spend_usd not negative "
            "(SKILLSIGHT_JUDGE_CONCURRENCY, SKILLSIGHT_JUDGE_DAILY_SPEND_USD)"
        )
    if self.judge_structured_output not in ("auto", "json_schema", "tool"):
        raise ConfigError(
            f"judge_structured_output={self.judge_structured_output!r}: expected auto, "
            "json_schema or tool (SKILLSIGHT_JUDGE_STRUCTURED_OUTPUT)"
        )


def _validate_ingest(self: Settings) -> None:
    if self.ack not in ("auto", "spool", "commit", "memory"):
        raise ConfigError(f"ack={self.ack!r}: expected auto, spool, commit or memory")
    tls = (self.tls_certfile, self.tls_keyfile, self.tls_client_ca)
    if bool(tls[0]) != bool(tls[1]) or (tls[2] and not tls[0]):
        raise ConfigError("TLS needs SKILLSIGHT_TLS_CERTFILE and SKILLSIGHT_TLS_KEYFILE")
    for path in filter(None, tls):
        if not Path(path).is_file():
            raise ConfigError(f"TLS file {path!r} is not a readable file")
    if self.ingest_future_s < 0 or self.project_burst_s <= 0:
        raise ConfigError("ingest_future_s must be >= 0 and project_burst_s > 0")
