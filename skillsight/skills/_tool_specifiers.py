"""Specifiers of the ``allowed-tools`` rules of tools other than Bash, matched against one call.

- ``Read(glob)``, ``Edit(glob)``, ``Write(glob)``, ``Glob(glob)``, ``Grep(glob)``: gitignore-style
  path globs over the tool's path argument (see :mod:`._pathglob`: ``//abs``, ``~/home``,
  ``/project-root``, ``./relative``, unanchored names, ``*``, ``**``), for every tool of the
  rule's family (see :meth:`._tool_patterns.ToolRule.covers`). Glob and Grep calls without a
  ``path`` search the working directory.
- ``WebFetch(domain:HOST)``: the URL's host equals ``HOST`` (case-insensitive); ``*`` globs, so
  ``domain:*.example.com`` allows the subdomains.
- ``Task(AGENT)`` / ``Agent(AGENT)``: the subagent type (the two names are aliases).
- Any other ``Tool(spec)``: ``spec`` is a glob over the call's string argument, or over any
  top-level string value of its arguments.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import urlsplit

from skillsight.skills._pathglob import PathGlob
from skillsight.skills._tool_patterns import AGENT_ALIASES, EDIT_FAMILY, READ_FAMILY, ToolRule

_PATH_TOOLS = READ_FAMILY | EDIT_FAMILY
_PATH_KEYS = ("file_path", "notebook_path", "path")


def argument(args: Mapping[str, Any] | str | None, *keys: str) -> str | None:
    """The call's string argument, or the first of ``keys`` whose value is a string."""
    if isinstance(args, str):
        return args
    if args is None:
        return None
    for key in keys:
        value = args.get(key)
        if isinstance(value, str):
            return value
    return None


def describe_call(tool_name: str, args: Mapping[str, Any] | str | None) -> str:
    """The argument the specifiers of ``tool_name`` look at, for a verdict's reason."""
    if tool_name in _PATH_TOOLS:
        value = argument(args, *_PATH_KEYS)
        return repr(value) if value is not None else "(no path: the working directory)"
    if tool_name == "WebFetch":
        return repr(argument(args, "url"))
    if isinstance(args, str):
        return repr(args)
    return json.dumps(args, sort_keys=True, default=str)[:200] if args is not None else "()"


def specifier_allows(
    rule: ToolRule, tool_name: str, args: Mapping[str, Any] | str | None, cwd: str | None
) -> str | None:
    """Why ``rule``'s specifier allows this call, or None when it does not."""
    spec = rule.specifier
    assert spec is not None
    if tool_name in _PATH_TOOLS and rule.tool in _PATH_TOOLS:
        path = argument(args, *_PATH_KEYS) or cwd or "."
        if PathGlob(spec).matches(path, cwd=cwd):
            return f"path {path!r} is under {rule.pattern}"
        return None
    if tool_name == "WebFetch":
        url = argument(args, "url") or ""
        host = (urlsplit(url).hostname or "").lower()
        domain = spec[len("domain:") :].strip().lower()
        if host and fnmatchcase(host, domain):
            return f"host {host!r} is allowed by {rule.pattern}"
        return None
    if tool_name in AGENT_ALIASES:
        agent = argument(args, "subagent_type") or ""
        return f"subagent {agent!r} matches {rule.pattern}" if fnmatchcase(agent, spec) else None
    if isinstance(args, str):
        return f"argument matches {rule.pattern}" if fnmatchcase(args, spec) else None
    if isinstance(args, Mapping):
        for key, value in args.items():
            if isinstance(value, str) and fnmatchcase(value, spec):
                return f"argument {key!r} matches {rule.pattern}"
    return None
