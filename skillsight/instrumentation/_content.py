"""What captured content (prompts, tool arguments and results, messages) looks like on a span.

Content capture is on by default, capped in size, can be switched off, and every captured text
goes through the user's redaction hook *before* it is set on a span, so a secret never reaches
the exporter. Values that are not text are serialised as JSON first.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_MAX_CONTENT_CHARS", "ContentPolicy", "Redactor", "to_text"]

DEFAULT_MAX_CONTENT_CHARS = 16_384
Redactor = Callable[[str], str]


def to_text(value: Any) -> str:
    """A value as the text a span attribute holds: strings as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


@dataclass(frozen=True)
class ContentPolicy:
    """How captured content is treated: on or off, size cap, redaction hook."""

    capture: bool = True
    max_chars: int = DEFAULT_MAX_CONTENT_CHARS
    redact: Redactor | None = None

    def __post_init__(self) -> None:
        if self.max_chars < 1:
            raise ValueError(f"max_content_chars must be at least 1, not {self.max_chars}")
        if self.redact is not None and not callable(self.redact):
            raise TypeError("redact must be a callable taking and returning a str")

    def apply(self, value: Any) -> str | None:
        """The text to put on a span for ``value``, or ``None`` when nothing may be captured."""
        if not self.capture or value is None:
            return None
        text = to_text(value)
        if self.redact is not None:
            redacted = self.redact(text)
            if not isinstance(redacted, str):
                raise TypeError(f"the redaction hook returned {type(redacted).__name__}, not str")
            text = redacted
        if len(text) > self.max_chars:
            cut = len(text) - self.max_chars
            text = f"{text[: self.max_chars]}…[truncated {cut} chars]"
        return text
