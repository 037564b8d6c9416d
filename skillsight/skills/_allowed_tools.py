"""A skill's ``allowed-tools``, parsed and checked the way Claude Code reads permission rules.

Grammar (one pattern; a declaration is a YAML list of patterns, or one string of patterns
separated by whitespace or commas outside parentheses, e.g. ``Bash(git:*) Read``)::

    pattern    := tool | tool "(" specifier ")"
    tool       := NAME                        Bash, Read, WebFetch, mcp__github__get_issue, ...
                | "mcp__" SERVER              every tool of one MCP server
                | "mcp__" SERVER "__*"        the same, spelled with a wildcard
    specifier  := any text with balanced parentheses, not empty

A bare ``tool`` (or ``Tool(*)``) allows every use of the tool. Specifiers, by tool:

- ``Bash(cmd)``: the command must equal ``cmd``. ``Bash(prefix:*)`` (legacy) allows ``prefix``
  alone or followed by whitespace and anything: a word boundary, so ``Bash(git:*)`` allows
  ``git status`` and not ``gitk``. ``*`` anywhere else matches any text (``Bash(git * main)``);
  a single trailing `` *`` is optional, so ``Bash(ls *)`` allows ``ls`` and ``ls -la`` but not
  ``lsof``, while ``Bash(ls*)`` allows ``lsof``. ``\\*`` is a literal star. A compound command
  (``&&``, ``||``, ``;``, ``|``, ``&``, newlines, subshells, ``$(…)`` and backticks) is allowed
  only when every simple command in it is allowed, each by some rule. Environment assignments
  before a command are not stripped (``FOO=1 git`` is not ``git``): the check errs on the side
  of reporting.
- ``Read(glob)``, ``Edit(glob)``, ``Write(glob)``, ``Glob(glob)``, ``Grep(glob)``: gitignore-style
  path globs over the tool's path argument (see :mod:`._pathglob`: ``//abs``, ``~/home``,
  ``/project-root``, ``./relative``, unanchored names, ``*``, ``**``). As in Claude Code, a
  ``Read`` rule covers every built-in tool that reads files (Read, Glob, Grep, LS, NotebookRead)
  and an ``Edit`` rule every tool that edits files (Edit, Write, MultiEdit, NotebookEdit). Glob
  and Grep calls without a ``path`` search the working directory.
- ``WebFetch(domain:HOST)``: the URL's host equals ``HOST`` (case-insensitive); ``*`` globs, so
  ``domain:*.example.com`` allows the subdomains.
- ``Task(AGENT)`` / ``Agent(AGENT)``: the subagent type (the two names are aliases).
- MCP tools (``mcp__server__tool``) take no specifier; ``mcp__server`` and ``mcp__server__*``
  allow every tool of the server.
- Any other ``Tool(spec)``: ``spec`` is a glob over the call's string argument, or over any
  top-level string value of its arguments.

The ``Skill`` tool (loading a skill) is always allowed. A skill that declares no allowed-tools is
unconstrained. Invalid patterns (empty, unbalanced parentheses, text after the closing
parenthesis, an empty specifier, a wildcard in a non-MCP tool name, ``WebFetch`` without
``domain:``, a specifier on an MCP tool) are kept in :attr:`AllowedTools.problems` and never
allow anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from skillsight.skills._pathglob import PathGlob
from skillsight.skills._shell import split_commands

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_MCP_NAME = re.compile(r"mcp__[A-Za-z0-9_.\-]+(?:__[A-Za-z0-9_.\-*]*)?")
_READ_FAMILY = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead"})
_EDIT_FAMILY = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
_PATH_TOOLS = _READ_FAMILY | _EDIT_FAMILY
_PATH_KEYS = ("file_path", "notebook_path", "path")
_AGENT_ALIASES = frozenset({"Task", "Agent"})


@dataclass(frozen=True)
class Verdict:
    """Whether one tool call is inside the declared allowed-tools, and why."""

    allowed: bool
    rule: str | None
    reason: str


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
            return tool_name in _READ_FAMILY
        if self.tool == "Edit":
            return tool_name in _EDIT_FAMILY
        if self.tool in _AGENT_ALIASES:
            return tool_name in _AGENT_ALIASES
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


# (rules covering a tool, the first unrestricted one, their compiled Bash specifiers)
_Covering = tuple[tuple[ToolRule, ...], ToolRule | None, tuple[Callable[[str], object], ...]]


class AllowedTools:
    """The parsed allowed-tools of a skill; :meth:`check` judges one tool call."""

    __slots__ = ("_by_tool", "declared", "problems", "rules")

    def __init__(
        self,
        rules: Sequence[ToolRule],
        problems: Sequence[PatternProblem] = (),
        *,
        declared: bool = True,
    ) -> None:
        self.rules = tuple(rules)
        self.problems = tuple(problems)
        self.declared = declared
        # Per tool name: the rules that cover it, the first unrestricted one among them, and
        # for Bash their compiled specifiers. Evaluators check many calls of few tools against
        # one parsed declaration.
        self._by_tool: dict[str, _Covering] = {}

    @classmethod
    def parse(cls, patterns: Sequence[str] | str | None) -> AllowedTools:
        """Parse a declaration: a list of patterns, one string of them, or ``None`` (undeclared)."""
        if patterns is None:
            return cls((), (), declared=False)
        items = split_patterns(patterns) if isinstance(patterns, str) else list(patterns)
        rules: list[ToolRule] = []
        problems: list[PatternProblem] = []
        for item in items:
            if not isinstance(item, str):
                problems.append(PatternProblem(repr(item), "a pattern must be a string"))
                continue
            pieces = split_patterns(item) if item.strip() else [item]
            for piece in pieces:
                parsed = parse_pattern(piece)
                if isinstance(parsed, ToolRule):
                    rules.append(parsed)
                else:
                    problems.append(parsed)
        return cls(rules, problems)

    @property
    def patterns(self) -> list[str]:
        return [rule.pattern for rule in self.rules]

    def __repr__(self) -> str:
        if not self.declared:
            return "AllowedTools(undeclared)"
        return f"AllowedTools({self.patterns!r}, problems={list(self.problems)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AllowedTools):
            return NotImplemented
        return (self.rules, self.problems, self.declared) == (
            other.rules,
            other.problems,
            other.declared,
        )

    def __hash__(self) -> int:
        return hash((self.rules, self.problems, self.declared))

    def check(
        self,
        tool_name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        cwd: str | None = None,
    ) -> Verdict:
        """Judge one call of ``tool_name`` with ``arguments`` (a mapping, a JSON string or text).

        ``cwd`` is the agent's working directory (the project root): relative paths and
        ``./`` / ``/`` path patterns are resolved against it.
        """
        if tool_name == "Skill":
            return Verdict(True, None, "loading a skill (the Skill tool) is always allowed")
        if not self.declared:
            return Verdict(True, None, "the skill declares no allowed-tools: unconstrained")
        args = _arguments(arguments)
        candidates, unrestricted, _ = self._covering(tool_name)
        if not candidates:
            return Verdict(False, None, f"no allowed-tools rule names the tool {tool_name}")
        if unrestricted is not None:
            rule = unrestricted
            return Verdict(True, rule.pattern, f"{rule.pattern} allows every {tool_name} call")
        if tool_name == "Bash":
            return _check_bash(candidates, args)
        for rule in candidates:
            explanation = _specifier_matches(rule, tool_name, args, cwd)
            if explanation is not None:
                return Verdict(True, rule.pattern, explanation)
        shown = ", ".join(rule.pattern for rule in candidates)
        return Verdict(
            False, None, f"{tool_name} call {_describe(tool_name, args)} matches none of {shown}"
        )

    def allows(
        self,
        tool_name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        cwd: str | None = None,
    ) -> bool:
        """``check(tool_name, arguments, cwd=cwd).allowed`` without explaining the verdict:
        building the reason costs more than the check for the calls that are allowed."""
        if tool_name == "Skill" or not self.declared:
            return True
        candidates, unrestricted, matchers = self._covering(tool_name)
        if unrestricted is not None:
            return True
        if not candidates:
            return False
        args = _arguments(arguments)
        if tool_name == "Bash":
            return _bash_allows(matchers, args)
        return any(_specifier_matches(r, tool_name, args, cwd) is not None for r in candidates)

    def _covering(self, tool_name: str) -> _Covering:
        found = self._by_tool.get(tool_name)
        if found is None:
            candidates = tuple(rule for rule in self.rules if rule.covers(tool_name))
            unrestricted = next((rule for rule in candidates if rule.unrestricted), None)
            matchers = tuple(
                _bash_pattern(rule.specifier).fullmatch
                for rule in candidates
                if rule.specifier is not None and tool_name == "Bash"
            )
            found = (candidates, unrestricted, matchers)
            if len(self._by_tool) < 1024:  # tool names come from traffic: bound the memo
                self._by_tool[tool_name] = found
        return found


def _arguments(arguments: Mapping[str, Any] | str | None) -> Mapping[str, Any] | str | None:
    if isinstance(arguments, str):
        stripped = arguments.strip()
        if stripped.startswith("{"):
            try:
                decoded = json.loads(stripped)
            except ValueError:
                return arguments
            if isinstance(decoded, dict):
                return decoded
    return arguments


def _argument(args: Mapping[str, Any] | str | None, *keys: str) -> str | None:
    if isinstance(args, str):
        return args
    if args is None:
        return None
    for key in keys:
        value = args.get(key)
        if isinstance(value, str):
            return value
    return None


def _describe(tool_name: str, args: Mapping[str, Any] | str | None) -> str:
    if tool_name in _PATH_TOOLS:
        value = _argument(args, *_PATH_KEYS)
        return repr(value) if value is not None else "(no path: the working directory)"
    if tool_name == "WebFetch":
        return repr(_argument(args, "url"))
    if isinstance(args, str):
        return repr(args)
    return json.dumps(args, sort_keys=True, default=str)[:200] if args is not None else "()"


def _check_bash(rules: Sequence[ToolRule], args: Mapping[str, Any] | str | None) -> Verdict:
    command = _argument(args, "command") or ""
    parts = split_commands(command)
    if not parts:
        return Verdict(False, None, "empty Bash command: only a bare Bash rule allows it")
    used: list[str] = []
    for part in parts:
        rule = next(
            (r for r in rules if r.specifier is not None and bash_matches(r.specifier, part)),
            None,
        )
        if rule is None:
            whole = "" if len(parts) == 1 else f" (in {command!r})"
            shown = ", ".join(r.pattern for r in rules)
            return Verdict(False, None, f"Bash command {part!r}{whole} matches none of {shown}")
        if rule.pattern not in used:
            used.append(rule.pattern)
    what = "every command of" if len(parts) > 1 else "command"
    return Verdict(True, " ".join(used), f"Bash {what} {command!r} allowed by {' '.join(used)}")


def _bash_allows(
    matchers: tuple[Callable[[str], object], ...], args: Mapping[str, Any] | str | None
) -> bool:
    """``_check_bash(rules, args).allowed``, given the rules' compiled specifiers."""
    parts = split_commands(_argument(args, "command") or "")
    if not parts:
        return False
    for part in parts:
        part = part.strip()
        for fullmatch in matchers:
            if fullmatch(part) is not None:
                break
        else:
            return False
    return True


def bash_matches(specifier: str, command: str) -> bool:
    """Whether one simple ``command`` matches a Bash rule's ``specifier``."""
    return _bash_pattern(specifier).fullmatch(command.strip()) is not None


@lru_cache(maxsize=4096)
def _bash_pattern(specifier: str) -> re.Pattern[str]:
    """A Bash specifier compiled to the regular expression a stripped command must match in
    full: the specifier is analysed once, not for every command it is checked against."""
    spec = specifier.strip()
    if spec == "*":
        return _ANYTHING
    word_tail = spec.endswith(":*") and not spec.endswith("\\:*")
    if word_tail:
        spec = spec[:-2].rstrip()
    stars = _unescaped_stars(spec)
    optional_tail = not word_tail and stars == 1 and spec.endswith(" *") and spec[-3:-2] != "\\"
    if optional_tail:
        spec, word_tail = spec[:-2].rstrip(), True
    return re.compile(_bash_regex(spec) + (r"(?:\s.*)?" if word_tail else ""), re.DOTALL)


_ANYTHING = re.compile(".*", re.DOTALL)


def _unescaped_stars(spec: str) -> int:
    count, i = 0, 0
    while i < len(spec):
        if spec[i] == "\\":
            i += 2
            continue
        count += spec[i] == "*"
        i += 1
    return count


def _bash_regex(spec: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(spec):
        ch = spec[i]
        if ch == "\\" and i + 1 < len(spec) and spec[i + 1] in "*\\":
            out.append(re.escape(spec[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "*" else re.escape(ch))
        i += 1
    return "".join(out)


def _specifier_matches(
    rule: ToolRule, tool_name: str, args: Mapping[str, Any] | str | None, cwd: str | None
) -> str | None:
    """Why ``rule``'s specifier allows this call, or None when it does not."""
    spec = rule.specifier
    assert spec is not None
    if tool_name in _PATH_TOOLS and rule.tool in _PATH_TOOLS:
        path = _argument(args, *_PATH_KEYS) or cwd or "."
        if PathGlob(spec).matches(path, cwd=cwd):
            return f"path {path!r} is under {rule.pattern}"
        return None
    if tool_name == "WebFetch":
        url = _argument(args, "url") or ""
        host = (urlsplit(url).hostname or "").lower()
        domain = spec[len("domain:") :].strip().lower()
        if host and fnmatchcase(host, domain):
            return f"host {host!r} is allowed by {rule.pattern}"
        return None
    if tool_name in _AGENT_ALIASES:
        agent = _argument(args, "subagent_type") or ""
        return f"subagent {agent!r} matches {rule.pattern}" if fnmatchcase(agent, spec) else None
    if isinstance(args, str):
        return f"argument matches {rule.pattern}" if fnmatchcase(args, spec) else None
    if isinstance(args, Mapping):
        for key, value in args.items():
            if isinstance(value, str) and fnmatchcase(value, spec):
                return f"argument {key!r} matches {rule.pattern}"
    return None
