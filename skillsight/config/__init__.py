"""The one settings object: every setting declared once with its env var, default and type."""

from __future__ import annotations

from skillsight.config._settings import Settings
from skillsight.config._values import FULL_ACCESS, SCOPES, ApiKeys

DEFAULT_PROJECT = "default"

__all__ = ["DEFAULT_PROJECT", "FULL_ACCESS", "SCOPES", "ApiKeys", "Settings"]
