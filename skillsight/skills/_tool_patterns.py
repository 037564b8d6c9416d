"""The grammar of ``allowed-tools`` patterns: split a declaration, parse each pattern.

A declaration is a YAML list of patterns, or one string of patterns separated by whitespace or
commas outside parentheses, e.g. ``Bash(git:*) Read``. One pattern::

    pattern    := tool | tool "(" specifier ")"
    tool       := NAME                        Bash, Read, WebFetch, mcp__github__get_issue, ...
                | "mcp__" SERVER              every tool of one MCP server
                | "mcp__" SERVER "__*"        the same, spelled with a wildcard
    specifier  := any text with balanced parentheses, not empty

A :class:`ToolRule` says which tools it speaks about (:meth:`ToolRule.covers`). As in Claude
Code, a ``Read`` rule covers every built-in tool that reads files (Read, Glob, Grep, LS,
NotebookRead), an ``Edit`` rule every tool that edits files (Edit, Write, MultiEdit,
NotebookEdit), ``Task`` and ``Agent`` are aliases, and ``mcp__server`` / ``mcp__server__*`` cover
every tool of the server. A bare ``tool`` (or ``Tool(*)``) allows every use of the tool; what a
specifier allows is in :mod:`._bash_specifiers` (Bash) and :mod:`._tool_specifiers` (the rest).

Invalid patterns (empty, unbalanced parentheses, text after the closing parenthesis, an empty
specifier, a wildcard in a non-MCP tool name, ``WebFetch`` without ``domain:``, a specifier on an
MCP tool) parse to a :class:`PatternProblem`, which never allows anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_MCP_NAME = re.compile(r"mcp__[A-Za-z0-9_.\-]+(?:__[A-Za-z0-9_.\-*]*)?")
READ_FAMILY = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead"})
EDIT_FAMILY = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
AGENT_ALIASES = frozenset({"Task", "Agent"})


@dataclass(frozen=True)
class PatternProblem:
    """A declared pattern that cannot be parsed; it allows nothing."""

    pattern: str
    message: str


@dataclass(frozen=True)
class ToolRule:
    """One parsed pattern: ``tool`` and, when given, its ``specifier``."""

    pattern: str
    tool: str
    specifier: str | None

    def covers(self, tool_name: str) -> bool:
        """Whether this rule speaks about ``tool_name`` at all (before looking at arguments)."""
        if self.tool.startswith("mcp__"):
            if "*" in self.tool:
                return fnmatchcase(tool_name, self.tool)
            if self.tool.count("__") == 1:
                return tool_name == self.tool or tool_name.startswith(self.tool + "__")
            return tool_name == self.tool
        if self.tool == "Read":
            return tool_name in READ_FAMILY
        if self.tool == "Edit":
            return tool_name in EDIT_FAMILY
        if self.tool in AGENT_ALIASES:
            return tool_name in AGENT_ALIASES
        return tool_name == self.tool

    @property
    def unrestricted(self) -> bool:
        return self.specifier is None or self.specifier == "*"


def split_patterns(text: str) -> list[str]:
    """Split a one-string declaration at whitespace and commas outside parentheses.

    Empty pieces between two commas are kept (as ``""``) so that validation can report them.
    """
    pieces: list[str] = []
    current: list[str] = []
    depth = 0
    comma_before = False
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if depth <= 0 and (ch == "," or ch.isspace()):
            if current:
                pieces.append("".join(current))
                current = []
            elif ch == "," and comma_before:
                pieces.append("")
            if ch == ",":
                comma_before = True
            continue
        comma_before = False
        current.append(ch)
    if current:
        pieces.append("".join(current))
    return pieces


def parse_pattern(pattern: str) -> ToolRule | PatternProblem:
    """Parse one pattern, or say what is wrong with it."""
    text = pattern.strip()
    if not text:
        return PatternProblem(pattern, "empty pattern")
    open_at = text.find("(")
    if open_at < 0:
        if ")" in text:
            return PatternProblem(pattern, "')' without a matching '('")
        return _rule(pattern, text, None)
    depth = 0
    close_at = -1
    for i, ch in enumerate(text[open_at:], start=open_at):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                close_at = i
                break
            if depth < 0:
                break
    if close_at < 0:
        return PatternProblem(pattern, "unbalanced parentheses: '(' is never closed")
    if close_at != len(text) - 1:
        return PatternProblem(
            pattern, f"unexpected text after the closing parenthesis: {text[close_at + 1 :]!r}"
        )
    specifier = text[open_at + 1 : close_at]
    if not specifier.strip():
        return PatternProblem(pattern, "empty specifier '()': write the bare tool name instead")
    return _rule(pattern, text[:open_at], specifier)


def _rule(pattern: str, tool: str, specifier: str | None) -> ToolRule | PatternProblem:
    if tool.startswith("mcp__"):
        if not _MCP_NAME.fullmatch(tool):
            return PatternProblem(pattern, f"malformed MCP tool name {tool!r}")
        if specifier is not None:
            return PatternProblem(pattern, "MCP tools take no specifier in parentheses")
        return ToolRule(pattern, tool, None)
    if not _NAME.fullmatch(tool):
        return PatternProblem(
            pattern,
            f"malformed tool name {tool!r}" + (" (wildcards only in mcp__ names)" * ("*" in tool)),
        )
    domain = (specifier or "").removeprefix("domain:").strip()
    if tool == "WebFetch" and specifier not in (None, "*") and (domain == specifier or not domain):
        return PatternProblem(pattern, "WebFetch takes 'domain:HOST', e.g. WebFetch(domain:x.org)")
    return ToolRule(pattern, tool, specifier)
