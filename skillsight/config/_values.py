"""How setting values are written: the parsers of each kind, API keys, the config file."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any

from skillsight.errors import ConfigError

SCOPES = ("ingest", "read", "admin")
FULL_ACCESS = frozenset({"ingest", "read"})


class ApiKeys(dict[str, str]):
    """API key -> project, and each key's ``scopes`` (absent: ingest+read; see tenancy)."""

    def __init__(self, keys: dict[str, str], scopes: dict[str, frozenset[str]]) -> None:
        super().__init__(keys)
        self.scopes = scopes


def _parse_api_keys(raw: str) -> dict[str, str]:
    keys: dict[str, str] = {}
    scopes: dict[str, frozenset[str]] = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        key, sep, rest = item.partition(":")
        project, _, granted = rest.partition(":")
        if not sep or not key or not project:
            raise ValueError(f"{item!r} is not of the form key:project or key:project:scopes")
        named = frozenset(s.strip() for s in granted.split("+"))
        if granted and not named <= set(SCOPES):
            raise ValueError(f"{item!r}: scopes are {', '.join(SCOPES)}, joined with '+'")
        if granted:
            scopes[key] = named
        keys[key] = project
    return ApiKeys(keys, scopes)


def _parse_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ValueError("expected true or false")


_PARSERS: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": _parse_bool,
    "path": Path,
    "api_keys": _parse_api_keys,
}


def setting(default: Any, kind: str, help: str) -> Any:
    return field(default=default, metadata={"kind": kind, "help": help})


def shown(default: Any) -> str:
    if default is None or default == "":
        return "(unset)"
    return str(default)


def parse(source: str, raw: str, kind: str) -> Any:
    try:
        return _PARSERS[kind](raw)
    except ValueError as exc:
        raise ConfigError(f"{source}={raw!r}: {exc} (expected {kind})") from exc


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"SKILLSIGHT_CONFIG={path}: {exc}") from exc
    section = data.get("skillsight", data)
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: expected a [skillsight] table")
    return section
