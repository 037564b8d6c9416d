"""Reading tool calls the way several evaluators need: their shell command, their file paths,
and where the workspace and the skill folder are."""

from __future__ import annotations

import json
import posixpath
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

from skillsight._json_text import loads
from skillsight.store.records import ToolCall

# Argument keys that hold a shell command line, across agents (Claude Code Bash, Codex shell).
_COMMAND_KEYS = ("command", "cmd")
# Argument keys that hold a file path of a file tool (Read, Write, Edit, NotebookEdit, Glob...).
PATH_KEYS = ("file_path", "notebook_path", "path")
FILE_TOOLS = frozenset(
    {"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "NotebookRead", "Glob", "Grep", "LS"}
)


class CallView(NamedTuple):
    """What evaluators read of a call's arguments."""

    arguments: dict[str, Any] | str | None
    """As a dict when they are JSON, else as given."""
    command: str | None
    """The shell command line the call runs; None when it is not a shell call."""
    text: str
    """The arguments as one text to scan: string values joined by newlines (nested values as
    JSON), cheaper than serializing the whole object."""


def parse_call(args: Any, name: str) -> CallView:
    """The view of a call with these arguments and this tool name (uncached)."""
    if type(args) is dict:  # the common case first, as the general path below treats it
        return CallView(args, _command_in(args), _text_of(args))
    parsed: dict[str, Any] | str | None
    if isinstance(args, str):
        parsed = args
        stripped = args.strip()
        if stripped.startswith("{"):
            try:
                decoded = loads(stripped)
            except ValueError:
                decoded = None
            if isinstance(decoded, dict):
                parsed = decoded
    elif isinstance(args, dict):
        parsed = args
    else:
        parsed = None if args is None else str(args)
    command: str | None = None
    if isinstance(parsed, dict):
        command = _command_in(parsed)
    elif isinstance(parsed, str) and name == "Bash":
        command = parsed
    if args is None:
        text = ""
    elif isinstance(args, str):
        text = args
    elif isinstance(args, dict):
        text = _text_of(args)
    else:
        text = json.dumps(args, ensure_ascii=False, default=str)
    return CallView(parsed, command, text)


def _command_in(parsed: dict[str, Any]) -> str | None:
    for key in _COMMAND_KEYS:
        value = parsed.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            # Codex-style argv, e.g. ["bash", "-lc", "python x.py"]: the script is last
            return " ".join(value)
    return None


def _text_of(args: dict[str, Any]) -> str:
    # String values joined by newlines (nested values as JSON): cheaper than serializing the
    # whole object, and what the scanners need.
    return "\n".join(
        [
            v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
            for v in args.values()
        ]
    )


# Every evaluator reads the same calls' commands and argument texts, and the scheduler runs
# them evaluator by evaluator over a batch: the views are derived once per call and kept here
# while the call lives (a weak reference's callback drops the entry when the call is collected,
# before its id can be reused), checked against the call and its arguments object (a
# reassigned ``arguments`` is derived anew). The size bound is only a safety net.
_VIEWS: dict[int, tuple[weakref.ref[ToolCall], Any, CallView]] = {}
_VIEWS_MAX = 65_536


def _forget(key: int) -> Callable[[weakref.ref[ToolCall]], None]:
    def forget(_: weakref.ref[ToolCall]) -> None:
        _VIEWS.pop(key, None)

    return forget


def call_view(call: ToolCall) -> CallView:
    """The call's arguments, command and argument text, derived once per call."""
    key = id(call)
    entry = _VIEWS.get(key)
    args = call.arguments
    if entry is not None and entry[0]() is call and entry[1] is args:
        return entry[2]
    view = parse_call(args, call.name)
    if len(_VIEWS) >= _VIEWS_MAX:
        _VIEWS.clear()
    _VIEWS[key] = (weakref.ref(call, _forget(key)), args, view)
    return view


def arguments(call: ToolCall) -> dict[str, Any] | str | None:
    """The call's arguments as a dict when they are JSON, else as given."""
    return call_view(call).arguments


def command_of(call: ToolCall) -> str | None:
    """The shell command line a call runs, or None when it is not a shell call."""
    return call_view(call).command


def paths_of(call: ToolCall) -> list[str]:
    """File paths a file tool call names."""
    if call.name not in FILE_TOOLS:
        return []
    args = call_view(call).arguments
    if not isinstance(args, dict):
        return []
    return paths_in(args)


def paths_in(arguments: dict[str, Any]) -> list[str]:
    """The file paths in a file tool call's parsed arguments."""
    return [v for k in PATH_KEYS if isinstance(v := arguments.get(k), str) and v]


def argument_text(call: ToolCall) -> str:
    """The call's arguments as one text to scan: string values joined by newlines (nested
    values as JSON), cheaper than serializing the whole object."""
    return call_view(call).text


def within(path: str, root: str) -> bool:
    """Whether normalized absolute ``path`` is ``root`` or below it."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def absolute(path: str, cwd: str | None) -> str | None:
    """``path`` made absolute against ``cwd`` and normalized; None when that is impossible."""
    if path.startswith("~"):
        return None
    if not path.startswith("/"):
        if cwd is None:
            return None
        path = posixpath.join(cwd, path)
    elif "//" not in path and "/." not in path and not path.endswith("/"):
        # no empty, '.' or '..' segment and no trailing slash: normpath would return it as is
        return path
    return posixpath.normpath(path)
