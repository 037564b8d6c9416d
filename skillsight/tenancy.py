"""Which project a request belongs to, from its API key."""

from __future__ import annotations

from collections.abc import Mapping

from skillsight.config import DEFAULT_PROJECT
from skillsight.errors import SkillsightError

KEY_HEADER = "x-skillsight-key"


class Unauthenticated(SkillsightError):
    """The request carries no API key, or one this service does not know."""


def project_for(api_keys: Mapping[str, str], headers: Mapping[str, str]) -> str:
    """The project of the caller. Without configured keys every caller is ``default``.

    The key is read from ``x-skillsight-key`` or ``Authorization: Bearer``; OTel exporters send
    either through ``OTEL_EXPORTER_OTLP_HEADERS``.
    """
    if not api_keys:
        return DEFAULT_PROJECT
    key = headers.get(KEY_HEADER, "")
    if not key:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            key = auth[7:].strip()
    project = api_keys.get(key)
    if project is None:
        raise Unauthenticated(
            "missing or unknown API key: send it as the x-skillsight-key header "
            "(OTEL_EXPORTER_OTLP_HEADERS=x-skillsight-key=<key>)"
        )
    return project
