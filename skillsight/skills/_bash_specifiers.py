"""Bash specifiers of ``allowed-tools`` rules, matched against one simple command.

- ``Bash(cmd)``: the command must equal ``cmd``.
- ``Bash(prefix:*)`` (legacy) allows ``prefix`` alone or followed by whitespace and anything: a
  word boundary, so ``Bash(git:*)`` allows ``git status`` and not ``gitk``.
- ``*`` anywhere else matches any text (``Bash(git * main)``); a single trailing `` *`` is
  optional, so ``Bash(ls *)`` allows ``ls`` and ``ls -la`` but not ``lsof``, while ``Bash(ls*)``
  allows ``lsof``. ``\\*`` is a literal star.
- Environment assignments before a command are not stripped (``FOO=1 git`` is not ``git``): the
  check errs on the side of reporting.

Compound commands are split into simple ones (:func:`._shell.split_commands`) before they get
here. Each specifier is compiled once to a regular expression (:func:`bash_pattern`, cached).
"""

from __future__ import annotations

import re
from functools import lru_cache

_ANYTHING = re.compile(".*", re.DOTALL)


def bash_matches(specifier: str, command: str) -> bool:
    """Whether one simple ``command`` matches a Bash rule's ``specifier``."""
    return bash_pattern(specifier).fullmatch(command.strip()) is not None


@lru_cache(maxsize=4096)
def bash_pattern(specifier: str) -> re.Pattern[str]:
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
