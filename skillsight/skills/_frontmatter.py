"""Split a SKILL.md into its YAML frontmatter and markdown body, keeping line numbers.

The frontmatter is the block between a first line ``---`` and the next line ``---``. Line numbers
(1-based, in the SKILL.md file) of each top-level key are kept so that validation can point at the
line to fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

# The pure-Python loader on purpose: frontmatter is small, and its error messages (which
# validation reports) are then the same on machines with and without libyaml.
_SafeLoader = yaml.SafeLoader


class FrontmatterProblem(Exception):
    """The SKILL.md text has no usable frontmatter; carries a validation rule id and a line."""

    def __init__(self, rule: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message
        self.line = line


@dataclass(frozen=True)
class Frontmatter:
    data: dict[str, Any]
    body: str
    key_lines: dict[str, int] = field(default_factory=dict)
    body_line: int = 1
    """Line of SKILL.md on which the body starts."""


def split_frontmatter(text: str) -> Frontmatter:
    """Parse ``text`` (a SKILL.md) or raise :class:`FrontmatterProblem`."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise FrontmatterProblem(
            "frontmatter-missing",
            "SKILL.md must start with a '---' line opening YAML frontmatter",
            1,
        )
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r\n") == "---"), None)
    if end is None:
        raise FrontmatterProblem(
            "frontmatter-unclosed", "the frontmatter opened on line 1 is never closed by '---'", 1
        )
    yaml_text = "".join(lines[1:end])
    try:
        node = yaml.compose(yaml_text, Loader=_SafeLoader)
        data = yaml.load(yaml_text, Loader=_SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 2
        problem = getattr(exc, "problem", None) or str(exc)
        raise FrontmatterProblem(
            "frontmatter-yaml", f"frontmatter is not valid YAML: {problem}", line
        ) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontmatterProblem(
            "frontmatter-yaml",
            f"frontmatter must be a YAML mapping of keys to values, not a {type(data).__name__}",
            2,
        )
    key_lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                # +2: one for 1-based lines, one for the opening '---'
                key_lines[str(key_node.value)] = key_node.start_mark.line + 2
    body = "".join(lines[end + 1 :])
    return Frontmatter(
        data={str(k): v for k, v in data.items()},
        body=body,
        key_lines=key_lines,
        body_line=end + 2,
    )
