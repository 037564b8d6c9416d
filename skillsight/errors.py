"""The one exception hierarchy of skillsight.

    SkillsightError
    ├── ConfigError          a setting is missing or malformed (fails at start-up)
    ├── StoreError           ClickHouse refused or failed a statement
    │   └── MigrationError   a schema migration could not be applied
    ├── IngestError          an OTLP request cannot be taken as sent
    │   ├── DecodeError      the body is not OTLP (HTTP 400 / gRPC INVALID_ARGUMENT)
    │   ├── PayloadTooLarge  the body, or its decompressed size, is past the limit (413)
    │   └── Overloaded       the write queue is full; retry later (429/503, RESOURCE_EXHAUSTED)
    ├── SkillError           a skill folder or its SKILL.md cannot be read as a skill
    ├── EvaluatorError       an evaluator cannot run (unknown name, its model is not installed)
    ├── GoldenSetError       a golden set, a case or a file of cases is malformed or missing
    └── RerunError           a paired rerun cannot run (its agent, workspace or skill)

Errors of dependencies (chdb, clickhouse-connect, protobuf, grpc) are translated into these at the
boundary with ``raise ... from exc`` so callers never see a third-party exception type.
"""

from __future__ import annotations


class SkillsightError(Exception):
    """Base of every error skillsight raises on purpose."""


class ConfigError(SkillsightError):
    """A setting is missing or malformed; the message says how to fix it."""


class StoreError(SkillsightError):
    """ClickHouse refused or failed a statement."""


class MigrationError(StoreError):
    """A numbered schema migration could not be applied."""


class IngestError(SkillsightError):
    """An OTLP request cannot be taken as sent."""


class DecodeError(IngestError):
    """The request body is not decodable OTLP."""


class PayloadTooLarge(IngestError):
    """The request body, or its decompressed size, is past the configured limit."""


class Overloaded(IngestError):
    """The write queue cannot take the request now; the client should retry."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class SkillError(SkillsightError):
    """A skill folder or its SKILL.md cannot be read as a skill (missing, bad frontmatter)."""


class EvaluatorError(SkillsightError):
    """An evaluator cannot run: an unknown name, or a model it needs is not installed."""


class GoldenSetError(SkillsightError):
    """A golden set, one of its cases, or a file of cases is malformed or missing."""


class RerunError(SkillsightError):
    """A paired rerun cannot run: its agent command, a workspace, or the skill is unusable."""
