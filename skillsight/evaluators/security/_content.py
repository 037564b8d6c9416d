"""Untrusted text: prompt-injection markers, invisible Unicode, suspicious URLs."""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from skillsight.evaluators._model import Severity
from skillsight.evaluators.security._gate import contains_any

_INJECTION = re.compile(
    r"(?i)\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?"
    r"(?:the\s+|your\s+|my\s+)?(?:previous|prior|above|earlier|preceding|system|original)\s+"
    r"(?:instructions?|prompts?|directions?|rules|guidelines|messages?)"
    r"|\bdo\s+not\s+(?:tell|inform|alert|mention\s+(?:this\s+)?to)\s+the\s+user\b"
    r"|\b(?:new|updated|real)\s+system\s+(?:prompt|instructions?)\s*:"
    r"|<\|im_start\|>|<\|im_end\|>|<\|system\|>|<\|endoftext\|>|\[/?INST\]|<<SYS>>"
    r"|</?system>|\bBEGIN\s+SYSTEM\s+PROMPT\b"
    r"|\byou\s+are\s+now\s+(?:in\s+)?(?:developer|god|jailbreak|DAN)\s*mode\b"
)

# Zero-width and bidi control characters; ZWJ/ZWNJ count only between ASCII characters, where
# no script or emoji sequence needs them.
_ALWAYS_INVISIBLE = {
    "\u200b": "ZERO WIDTH SPACE",
    "\u2060": "WORD JOINER",
    "\u180e": "MONGOLIAN VOWEL SEPARATOR",
    "\u2062": "INVISIBLE TIMES",
    "\u2063": "INVISIBLE SEPARATOR",
    "\u2064": "INVISIBLE PLUS",
}
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}
_JOINERS = {"\u200c", "\u200d"}
_BLACK_FLAG = "\U0001f3f4"  # tag sequences after it spell regional flags (🏴󠁧󠁢󠁳󠁣󠁴󠁿)

_URL = re.compile(r"(?i)\b(?:https?|ftp)://[^\s'\"<>`)\]}]+")
PASTE_SITES = (
    "pastebin.com",
    "paste.ee",
    "hastebin.com",
    "ghostbin.com",
    "ghostbin.co",
    "rentry.co",
    "rentry.org",
    "dpaste.com",
    "dpaste.org",
    "termbin.com",
    "transfer.sh",
    "0x0.st",
    "paste.rs",
    "justpaste.it",
    "controlc.com",
    "privatebin.net",
    "pastes.dev",
    "ix.io",
    "sprunge.us",
)
SHORTENERS = (
    "bit.ly",
    "tinyurl.com",
    "t.co",
    "goo.gl",
    "is.gd",
    "ow.ly",
    "buff.ly",
    "rebrand.ly",
    "cutt.ly",
    "shorturl.at",
    "t.ly",
    "tiny.cc",
    "rb.gy",
    "s.id",
    "v.gd",
    "bl.ink",
)
_METADATA_HOSTS = frozenset({"169.254.169.254", "fd00:ec2::254", "metadata.google.internal"})


@dataclass(frozen=True, slots=True)
class ContentFinding:
    kind: str
    message: str
    severity: Severity
    detail: tuple[tuple[str, str], ...] = ()


def _site(host: str, sites: tuple[str, ...]) -> str | None:
    return next((s for s in sites if host == s or host.endswith("." + s)), None)


def _url_findings(text: str) -> list[ContentFinding]:
    found: list[ContentFinding] = []
    if "://" not in text:
        return found
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(".,;:")
        try:
            parts = urlsplit(url)
            host = (parts.hostname or "").lower()
        except ValueError:
            continue
        if not host:
            continue
        shown = (("url", url[:300]),)
        if host in _METADATA_HOSTS:
            found.append(
                ContentFinding(
                    "cloud_metadata_url", f"cloud metadata endpoint {url[:120]}", "high", shown
                )
            )
            continue
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            address = None
        if address is not None:
            if not address.is_loopback:
                found.append(
                    ContentFinding(
                        "raw_ip_url", f"URL to a raw IP address {url[:120]}", "medium", shown
                    )
                )
        elif paste := _site(host, PASTE_SITES):
            found.append(
                ContentFinding("paste_site_url", f"URL to paste site {paste}", "medium", shown)
            )
        elif short := _site(host, SHORTENERS):
            found.append(
                ContentFinding("shortener_url", f"shortened URL via {short}", "low", shown)
            )
        elif any(label.startswith("xn--") for label in host.split(".")):
            found.append(ContentFinding("punycode_url", f"punycode host {host}", "medium", shown))
        if "@" in parts.netloc and address is None:
            found.append(
                ContentFinding(
                    "url_userinfo",
                    f"credentials or a decoy host before @ in {url[:120]}",
                    "medium",
                    shown,
                )
            )
    return found


# Any character _invisible may report: texts without one (nearly all) skip the per-character walk.
_SUSPECT = re.compile(
    "[\u200b\u200c\u200d\u2060\u180e\u2062-\u2064\ufeff\u202a-\u202e\u2066-\u2069"
    "\U000e0000-\U000e007f]"
)


def _invisible(text: str) -> list[ContentFinding]:
    # Every suspect character is outside ASCII, and isascii() is a flag read.
    if text.isascii() or _SUSPECT.search(text) is None:
        return []
    return _invisible_walk(text)


def _invisible_walk(text: str) -> list[ContentFinding]:
    counts: dict[str, int] = {}
    hidden: list[str] = []
    in_flag = False  # inside a tag sequence that follows a black flag: a regional flag emoji
    n = len(text)
    for i, ch in enumerate(text):
        code = ord(ch)
        name: str | None = None
        if 0xE0000 <= code <= 0xE007F:
            if not in_flag:
                name = "TAG CHARACTER"
                if 0xE0020 <= code <= 0xE007E:
                    hidden.append(chr(code - 0xE0000))
            continue_flag = in_flag
        else:
            continue_flag = ch == _BLACK_FLAG
            if ch in _ALWAYS_INVISIBLE:
                name = _ALWAYS_INVISIBLE[ch]
            elif ch == "\ufeff" and i > 0:
                name = "ZERO WIDTH NO-BREAK SPACE"
            elif ch in _BIDI:
                name = unicodedata.name(ch, f"U+{code:04X}")
            elif ch in _JOINERS:
                before = text[i - 1] if i else ""
                after = text[i + 1] if i + 1 < n else ""
                if before.isascii() and after.isascii():
                    name = unicodedata.name(ch)
        in_flag = continue_flag
        if name is not None:
            counts[name] = counts.get(name, 0) + 1
    if not counts:
        return []
    names = ", ".join(f"{k} x{v}" for k, v in sorted(counts.items()))
    if hidden:
        spelled = "".join(hidden)
        return [
            ContentFinding(
                "invisible_unicode",
                f"invisible characters: {names}; tag characters spell {spelled[:80]!r}",
                "high",
                (("characters", names), ("hidden_text", spelled[:300])),
            )
        ]
    return [
        ContentFinding(
            "invisible_unicode",
            f"invisible characters: {names}",
            "medium",
            (("characters", names),),
        )
    ]


# Lower-case words one of which every injection marker contains.
_INJECTION_ANCHORS = (
    "ignore",
    "disregard",
    "forget",
    "override",
    "do not",
    "system",
    "<|",
    "inst]",
    "<<sys>>",
    "you are now",
)


def _injection(text: str, lowered: str) -> list[ContentFinding]:
    if not contains_any(lowered, _INJECTION_ANCHORS):
        return []
    return _injection_markers(text)


def _injection_markers(text: str) -> list[ContentFinding]:
    matches = list(dict.fromkeys(m.group(0) for m in _INJECTION.finditer(text)))
    if not matches:
        return []
    shown = "; ".join(repr(m[:80]) for m in matches[:5])
    return [
        ContentFinding(
            "prompt_injection_marker",
            f"prompt-injection markers: {shown}",
            "high",
            (("markers", shown),),
        )
    ]


def may_be_untrusted(text: str, lowered: str) -> bool:
    """False when :func:`scan_untrusted` finds nothing in ``text`` (``lowered`` its lower case)
    for certain: no injection anchor, no character outside ASCII, no URL."""
    return "://" in text or not text.isascii() or contains_any(lowered, _INJECTION_ANCHORS)


def scan_untrusted(text: str, lowered: str | None = None) -> list[ContentFinding]:
    """Injection markers, invisible characters and suspicious URLs in one text; ``lowered`` is
    ``text.lower()`` when the caller has it."""
    if not text:
        return []
    return (
        _injection(text, text.lower() if lowered is None else lowered)
        + _invisible(text)
        + _url_findings(text)
    )


@lru_cache(maxsize=4096)
def scan_skill_content(text: str) -> tuple[ContentFinding, ...]:
    """:func:`scan_untrusted` for skill content, which repeats across a skill's activations."""
    return tuple(scan_untrusted(text))


def scan_urls(text: str) -> list[ContentFinding]:
    return _url_findings(text) if text else []
