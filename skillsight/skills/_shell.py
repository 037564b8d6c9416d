"""Split a shell command line into the simple commands a permission check must look at.

``a && b``, ``a || b``, ``a; b``, ``a | b``, ``a & b``, newlines and ``( … )`` subshells separate
commands; ``$( … )`` and backtick substitutions are commands too (their text is checked on its
own, and the outer command keeps the substitution text). Quotes (``'…'``, ``"…"``), backslash
escapes, comments and here-documents (``<<EOF`` … ``EOF``, whose lines are data, not commands)
protect what is inside them. ``$(( … ))`` arithmetic holds no command. This is a tokenizer for
permission checks, not a shell: it never expands anything.
"""

from __future__ import annotations

import re

_OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n", "(", ")")
_WORD_START = frozenset(" \t\n;&|()")
_HEREDOC_WORD = re.compile(r"[^\s;&|<>()]+")
# Runs of characters that can neither start nor end anything: copied in one step.
_PLAIN = re.compile(r"[^\\'\"$`#<>&|;()\n]+")
_PLAIN_IN_DOUBLE_QUOTES = re.compile(r"[^\\\"$`]+")
_SPECIAL = re.compile(r"[\\'\"$`#<&|;()\n]")


def split_commands(command: str) -> list[str]:
    """The simple commands of ``command``, stripped, empty ones dropped, in order."""
    if not _SPECIAL.search(command):
        # the common case, one plain command, without the scanner
        stripped = command.strip()
        return [stripped] if stripped else []
    parts, _ = _scan(command, 0, nested=False)
    return [p for p in (part.strip() for part in parts) if p]


def _scan(text: str, i: int, *, nested: bool) -> tuple[list[str], int]:
    """Commands from ``text[i:]``; when ``nested``, stop after the ``)`` closing a ``$(``.

    Returns the commands found and the index where scanning stopped.
    """
    out: list[str] = []
    current: list[str] = []
    quote: str | None = None
    depth = 0
    heredocs: list[tuple[str, bool]] = []
    n = len(text)

    def flush() -> None:
        out.append("".join(current))
        current.clear()

    while i < n:
        plain = (_PLAIN_IN_DOUBLE_QUOTES if quote == '"' else _PLAIN).match(text, i)
        if plain is not None and quote != "'":
            current.append(plain.group(0))
            i = plain.end()
            continue
        ch = text[i]
        if quote == "'":
            close = text.find("'", i)
            end = n if close < 0 else close + 1
            current.append(text[i:end])
            quote = None
            i = end
            continue
        if ch == "\\" and i + 1 < n:
            current.append(text[i : i + 2])
            i += 2
            continue
        if text.startswith("$((", i):
            _, end = _scan(text, i + 3, nested=True)
            end += text[end : end + 1] == ")"
            current.append(text[i:end])
            i = end
            continue
        if text.startswith("$(", i):
            inner, end = _scan(text, i + 2, nested=True)
            out.extend(inner)
            current.append(text[i:end])
            i = end
            continue
        if ch == "`":
            end = _closing_backtick(text, i + 1)
            out.extend(_scan(text[i + 1 : end], 0, nested=False)[0])
            current.append(text[i : end + 1])
            i = end + 1
            continue
        if quote == '"':
            current.append(ch)
            quote = None if ch == '"' else quote
            i += 1
            continue
        if ch in "'\"":
            quote = ch
            current.append(ch)
            i += 1
            continue
        if ch == "#" and (i == 0 or text[i - 1] in _WORD_START):
            newline = text.find("\n", i)
            i = n if newline < 0 else newline
            continue
        heredoc = _heredoc(text, i)
        if heredoc is not None:
            delimiter, strip_tabs, end = heredoc
            heredocs.append((delimiter, strip_tabs))
            current.append(text[i:end])
            i = end
            continue
        if ch == "\n" and heredocs:
            flush()
            i = _skip_heredoc_bodies(text, i + 1, heredocs)
            heredocs = []
            continue
        if ch == ")" and nested and depth == 0:
            flush()
            return out, i + 1
        if ch == "(":
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
        # `2>&1`, `>&2` and `&>` are redirections, not background operators
        if op == "&" and (text[i - 1 : i] in (">", "<") or text[i + 1 : i + 2] == ">"):
            op = None
        if op is not None:
            flush()
            i += len(op)
            continue
        current.append(ch)
        i += 1
    flush()
    return out, n


def _closing_backtick(text: str, i: int) -> int:
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "`":
            return i
        i += 1
    return len(text)


def _heredoc(text: str, i: int) -> tuple[str, bool, int] | None:
    """(delimiter, strip leading tabs, end of the operator) for a ``<<WORD`` at ``i``."""
    if not text.startswith("<<", i) or text.startswith("<<<", i):
        return None
    j = i + 2
    strip_tabs = text[j : j + 1] == "-"
    j += strip_tabs
    while j < len(text) and text[j] in " \t":
        j += 1
    if text[j : j + 1] in ("'", '"'):
        close = text.find(text[j], j + 1)
        if close < 0:
            return None
        return text[j + 1 : close], strip_tabs, close + 1
    match = _HEREDOC_WORD.match(text, j)
    if match is None:
        return None
    word = match.group(0)
    # partly quoted delimiters (E"O"F) name the word without the quotes
    return re.sub(r"[\\'\"]", "", word), strip_tabs, match.end()


def _skip_heredoc_bodies(text: str, i: int, heredocs: list[tuple[str, bool]]) -> int:
    """Index just past the lines of here-document bodies that start at ``i``."""
    for delimiter, strip_tabs in heredocs:
        while i < len(text):
            newline = text.find("\n", i)
            end = len(text) if newline < 0 else newline
            line = text[i:end]
            i = end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
    return min(i, len(text))
