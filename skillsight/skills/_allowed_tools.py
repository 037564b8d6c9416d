"""A skill's ``allowed-tools`` checked against tool calls, as Claude Code reads permission rules.

:class:`AllowedTools` parses a declaration (the grammar is in :mod:`._tool_patterns`) and judges
one tool call at a time, with a :class:`Verdict` saying why:

- the ``Skill`` tool (loading a skill) is always allowed;
- a skill that declares no allowed-tools is unconstrained;
- otherwise a call is allowed when a rule covering its tool is unrestricted (a bare ``tool`` or
  ``Tool(*)``) or has a specifier that allows it: for Bash see :mod:`._bash_specifiers`, for
  the other tools :mod:`._tool_specifiers`;
- a compound Bash command (``&&``, ``||``, ``;``, ``|``, ``&``, newlines, subshells, ``$(…)``
  and backticks, split by :mod:`._shell`) is allowed only when every simple command in it is
  allowed, each by some rule;
- invalid patterns are kept in :attr:`AllowedTools.problems` and never allow anything.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillsight.skills._bash_specifiers import bash_matches
from skillsight.skills._bash_specifiers import bash_pattern as _bash_pattern  # tests: its cache
from skillsight.skills._shell import split_commands
from skillsight.skills._tool_patterns import PatternProblem, ToolRule, parse_pattern, split_patterns
from skillsight.skills._tool_specifiers import argument, describe_call, specifier_allows

# The grammar's names stay importable from here, where the catalogue has always found them.
__all__ = ["AllowedTools", "PatternProblem", "ToolRule", "Verdict", "split_patterns"]


@dataclass(frozen=True)
class Verdict:
    """Whether one tool call is inside the declared allowed-tools, and why."""

    allowed: bool
    rule: str | None
    reason: str


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
            explanation = specifier_allows(rule, tool_name, args, cwd)
            if explanation is not None:
                return Verdict(True, rule.pattern, explanation)
        shown = ", ".join(rule.pattern for rule in candidates)
        described = describe_call(tool_name, args)
        return Verdict(False, None, f"{tool_name} call {described} matches none of {shown}")

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
        return any(specifier_allows(r, tool_name, args, cwd) is not None for r in candidates)

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


def _check_bash(rules: Sequence[ToolRule], args: Mapping[str, Any] | str | None) -> Verdict:
    command = argument(args, "command") or ""
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
    parts = split_commands(argument(args, "command") or "")
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
