"""Which project a request belongs to, and what its API key may do there.

Keys come from ``SKILLSIGHT_API_KEYS`` (:class:`skillsight.config.ApiKeys`): ``key:project`` may
send telemetry and read it back; ``key:project:ingest`` only send (the key an agent's exporter
carries, which must not read what every agent sent); ``key:project:read`` only read (a
dashboard's, or the CLI's); ``+admin`` adds the service's own state. Without configured keys
the service is single-tenant (loopback only): every caller is project ``default`` with every
scope.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from skillsight.config import DEFAULT_PROJECT, FULL_ACCESS, SCOPES
from skillsight.errors import SkillsightError

KEY_HEADER = "x-skillsight-key"
INGEST, READ, ADMIN = SCOPES


class Unauthenticated(SkillsightError):
    """The request carries no API key, or one this service does not know."""


class Forbidden(SkillsightError):
    """The request's API key is known but lacks the scope the request needs."""


class Caller(NamedTuple):
    project: str
    scopes: frozenset[str]


_EVERYTHING = Caller(DEFAULT_PROJECT, frozenset(SCOPES))


def _key(headers: Mapping[str, str]) -> str:
    key = headers.get(KEY_HEADER, "")
    if not key:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            key = auth[7:].strip()
    return key


def identify(api_keys: Mapping[str, str], headers: Mapping[str, str]) -> Caller | None:
    """The caller, or None when its key is missing or unknown (no error: for ``/healthz``)."""
    if not api_keys:
        return _EVERYTHING
    key = _key(headers)
    project = api_keys.get(key) if key else None
    if project is None:
        return None
    scopes: Mapping[str, frozenset[str]] = getattr(api_keys, "scopes", {})
    return Caller(project, scopes.get(key, FULL_ACCESS))


def project_for(
    api_keys: Mapping[str, str], headers: Mapping[str, str], scope: str | None = None
) -> str:
    """The project of the caller, which must hold ``scope`` (``ingest``, ``read``) if given.

    The key is read from ``x-skillsight-key`` or ``Authorization: Bearer``; OTel exporters send
    either through ``OTEL_EXPORTER_OTLP_HEADERS``.
    """
    caller = identify(api_keys, headers)
    if caller is None:
        raise Unauthenticated(
            "missing or unknown API key: send it as the x-skillsight-key header "
            "(OTEL_EXPORTER_OTLP_HEADERS=x-skillsight-key=<key>)"
        )
    if scope is not None and scope not in caller.scopes:
        granted = "+".join(sorted(caller.scopes))
        raise Forbidden(f"this API key may {granted} only; {scope} needs a key with that scope")
    return caller.project
