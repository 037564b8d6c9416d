"""Normalization that makes two instances of one failure pattern read alike.

What differs between instances of one cause — ids, hashes, numbers, timestamps, file names and
the folders they sit in, secret values — is replaced by a placeholder (``<id>``, ``<n>``,
``<path>.csv`` …); what names the cause — tool names, finding kinds, the skill's own scripts
(``scripts/report.py``, ``skills/csv-summary/SKILL.md``), a URL's host — is kept.
"""

from __future__ import annotations

import re

# Folders inside a skill whose files are part of the skill's contract, not of one instance.
_SKILL_PARTS = ("scripts/", "references/", "assets/", "SKILL.md")

_UUID = re.compile(r"\b[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\b")
_URL = re.compile(r"\b([a-z][a-z0-9+.-]*)://([^/\s'\"<>]+)[^\s'\"<>]*", re.IGNORECASE)
_TIME = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
)
# Ids with a prefix (toolu_01…, call_…, msg_…) and long opaque tokens (secrets, hashes, keys):
# letters and digits mixed, at least 16 characters, or hex of 7 and more with a digit.
_PREFIXED_ID = re.compile(
    r"\b(?:toolu|call|msg|req|run|sess|session|trace|span|evt|item|resp)[_-][A-Za-z0-9_-]{6,}\b"
)
_TOKEN = re.compile(r"\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{16,}\b")
_HEX = re.compile(r"\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{7,}\b")
# A path has a slash between name characters; a file name has a dot and a short extension.
_PATH = re.compile(r"(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*")
_FILE = re.compile(r"\b[\w@+-]+(?:\.[\w-]+)*\.([A-Za-z][A-Za-z0-9]{0,5})\b")
_NUMBER = re.compile(r"(?<![\w<])[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?![\w>])")
# Counts written against a word: "x3", and the same with a multiplication sign.
_TIMES = re.compile(r"\b([x\u00d7])\d+\b")
_SPACE = re.compile(r"\s+")

# File name extensions worth keeping on a normalized path (what kind of file it was).
_TYPES = "csv tsv json jsonl yaml yml toml txt md py sh js ts sql xml html log ini cfg env pdf"
_FILE_TYPES = frozenset((_TYPES + " xlsx png jpg parquet lock").split())


def _extension(name: str) -> str:
    stem, dot, ext = name.rpartition(".")
    return f".{ext.lower()}" if dot and stem and ext.lower() in _FILE_TYPES else ""


_KEPT = re.compile("\x01([a-z]+)\x02")


class _Kept:
    """Text already in its final form (a URL's host, a skill's own path), set aside while the
    later rules run and put back at the end, so no later rule rewrites part of it."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def __call__(self, text: str) -> str:
        # a marker of letters only: no later rule matches it (numbers need a digit)
        self.items.append(text)
        return f"\x01{_letters(len(self.items) - 1)}\x02"

    def restore(self, text: str) -> str:
        return _KEPT.sub(lambda m: self.items[_index(m.group(1))], text)


def _letters(index: int) -> str:
    out = ""
    while True:
        index, digit = divmod(index, 26)
        out = chr(97 + digit) + out
        if not index:
            return out


def _index(letters: str) -> int:
    value = 0
    for char in letters:
        value = value * 26 + ord(char) - 97
    return value


def _path(match: re.Match[str], keep: _Kept) -> str:
    path = match.group(0)
    if "/" not in path.strip("/") and not path.startswith(("/", "~", ".")):
        return path
    marker = path.find("skills/")
    if marker >= 0:
        return keep(path[marker:])
    bare = path.lstrip("./")
    if bare.startswith(_SKILL_PARTS):
        return keep(bare)
    name = path.rstrip("/").rpartition("/")[2]
    return "<path>" + _extension(name)


def _file(match: re.Match[str]) -> str:
    name = match.group(0)
    if name == "SKILL.md":
        return name
    ext = _extension(name)
    return f"<file>{ext}" if ext else name


def normalize(text: str) -> str:
    """``text`` with instance-specific values replaced by placeholders, whitespace collapsed."""
    if not text:
        return ""
    keep = _Kept()
    out = _UUID.sub("<uuid>", text)
    out = _URL.sub(lambda m: keep(f"{m.group(1).lower()}://{m.group(2).lower()}/…"), out)
    out = _TIME.sub("<time>", out)
    out = _PREFIXED_ID.sub("<id>", out)
    out = _PATH.sub(lambda m: _path(m, keep), out)
    out = _TOKEN.sub("<token>", out)
    out = _HEX.sub("<hex>", out)
    out = _FILE.sub(_file, out)
    out = _TIMES.sub(r"\1<n>", out)
    out = _NUMBER.sub("<n>", out)
    return keep.restore(_SPACE.sub(" ", out).strip())


__all__ = ["normalize"]
