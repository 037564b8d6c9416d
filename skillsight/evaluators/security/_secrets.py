"""Secret-shaped strings: provider key formats, private key blocks, and high-entropy values
assigned to secret-sounding names.

Precision over recall: every pattern is anchored on a prefix or a keyword that real secrets
carry, and a free-form token counts only when it is assigned to a name like ``api_key`` and
looks random (mixed character classes, Shannon entropy above 4 bits per character, which no
hex digest or English word reaches).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from skillsight.evaluators.security._gate import contains_any

# (kind, pattern); the whole match is the secret. One alternation of named groups scans a text
# once for every shape.
_SHAPES: tuple[tuple[str, str], ...] = (
    ("anthropic_api_key", r"(?<![\w-])sk-ant-[a-z]+\d*-[A-Za-z0-9_-]{32,}"),
    ("sk_secret_key", r"(?<![\w-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    ("aws_access_key_id", r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])"),
    ("github_token", r"(?<![\w])(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}(?![\w])"),
    ("github_pat", r"(?<![\w])github_pat_[A-Za-z0-9_]{60,}"),
    ("slack_token", r"(?<![\w-])xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("google_api_key", r"(?<![\w-])AIza[0-9A-Za-z_-]{35}(?![\w-])"),
    ("stripe_secret_key", r"(?<![\w])(?:sk|rk)_live_[0-9A-Za-z]{24,}"),
    ("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
)
_SHAPE = re.compile("|".join(f"(?P<{kind}>{pattern})" for kind, pattern in _SHAPES))
# The same alternatives, in the same order, each written to start with a literal character
# (the look-behind moved after it, widened by that character; the prefix alternations split):
# ``re`` then jumps between the characters a match can start with ({s, r, A, g, x, -}) instead
# of trying nine alternatives at every position, and finds where _SHAPE's next match starts.
_SHAPE_STARTS = re.compile(
    "|".join(
        (
            r"s(?<![\w-]s)k-ant-[a-z]+\d*-[A-Za-z0-9_-]{32,}",
            r"s(?<![\w-]s)k-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
            r"A(?<![A-Za-z0-9]A)(?:KIA|SIA)[0-9A-Z]{16}(?![A-Za-z0-9])",
            r"g(?<![\w]g)h[pousr]_[A-Za-z0-9]{36}(?![\w])",
            r"g(?<![\w]g)ithub_pat_[A-Za-z0-9_]{60,}",
            r"x(?<![\w-]x)ox[abposr]-[A-Za-z0-9-]{10,}",
            r"A(?<![\w-]A)Iza[0-9A-Za-z_-]{35}(?![\w-])",
            r"s(?<![\w]s)k_live_[0-9A-Za-z]{24,}",
            r"r(?<![\w]r)k_live_[0-9A-Za-z]{24,}",
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
        )
    )
)


def _shapes(text: str) -> Iterator[re.Match[str]]:
    """``_SHAPE.finditer(text)``: each match found by _SHAPE_STARTS, then named by _SHAPE
    matched at its start (the same alternative wins there, so the same match)."""
    pos = 0
    while (start := _SHAPE_STARTS.search(text, pos)) is not None:
        match = _SHAPE.match(text, start.start())
        assert match is not None  # the two patterns are one language
        yield match
        pos = match.end()


# Literal prefixes of the shapes: a text containing none of them (most) is not scanned, since
# ``in`` runs in C at memory speed while the alternation is tried at every position.
_ANCHORS = (
    "sk-",
    "_live_",
    "AKIA",
    "ASIA",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "xox",
    "AIza",
    "PRIVATE KEY",
)
_NAMES = ("key", "secret", "token", "passw")
_KIND = {"github_pat": "github_token"}

# A secret-sounding name, then ``=`` or ``:``, then the value (group 1).
_ASSIGNED = re.compile(
    r"(?i)(?:api[_-]?key|secret|token|passw(?:or)?d|access[_-]?key|auth[_-]?key|"
    r"private[_-]?key)[\w.-]*[\"']?[ \t]*[:=][ \t]*[\"']?([A-Za-z0-9+/_.=-]{20,})"
)
MIN_ENTROPY = 4.0


@dataclass(frozen=True, slots=True)
class SecretMatch:
    kind: str
    redacted: str
    start: int


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_random(token: str) -> bool:
    classes = sum(
        (
            any(c.islower() for c in token),
            any(c.isupper() for c in token),
            any(c.isdigit() for c in token),
        )
    )
    return classes >= 2 and entropy(token) > MIN_ENTROPY


def redact(secret: str) -> str:
    """Enough to recognise the secret in its source, never enough to use it."""
    return f"{secret[:6]}…({len(secret)} chars)"


def may_hold_secrets(text: str, lowered: str) -> bool:
    """False when :func:`find_secrets` finds nothing in ``text`` (``lowered`` its lower case)
    for certain: it holds no shape's prefix and no secret-sounding name."""
    return contains_any(text, _ANCHORS) or contains_any(lowered, _NAMES)


def find_secrets(text: str, lowered: str | None = None) -> list[SecretMatch]:
    """Secrets in ``text``, in order; ``lowered`` is ``text.lower()`` when the caller has it."""
    if not text:
        return []
    shapes = contains_any(text, _ANCHORS)
    names = contains_any(text.lower() if lowered is None else lowered, _NAMES)
    if not shapes and not names:
        return []
    found: list[SecretMatch] = []
    taken: list[tuple[int, int]] = []
    for match in _shapes(text) if shapes else ():
        kind = match.lastgroup or ""
        token = match.group(0)
        if kind == "sk_secret_key" and not _looks_keylike(token[3:]):
            continue
        taken.append((match.start(), match.end()))
        found.append(SecretMatch(_KIND.get(kind, kind), redact(token), match.start()))
    for match in _ASSIGNED.finditer(text) if names else ():
        token = match.group(1)
        if any(a <= match.start(1) < b for a, b in taken) or not _looks_random(token):
            continue
        taken.append((match.start(1), match.end(1)))
        found.append(SecretMatch("high_entropy_secret", redact(token), match.start(1)))
    return sorted(found, key=lambda m: m.start)


def _looks_keylike(body: str) -> bool:
    """``sk-`` bodies of real keys mix letters and digits; ``sk-learn-estimator`` does not."""
    return any(c.isdigit() for c in body) and any(c.isalpha() for c in body)
