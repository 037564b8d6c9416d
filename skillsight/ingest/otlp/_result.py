"""What decoding one OTLP request yields: rows to store and what had to be turned away."""

from __future__ import annotations

from dataclasses import dataclass, field

from skillsight.store.rows import Columns

_MAX_MESSAGES = 5


@dataclass
class Decoded:
    """Rows of one request, plus the items rejected and why (first few reasons)."""

    signal: str  # "traces" or "logs"
    columns: Columns
    rejected: int = 0
    reasons: list[str] = field(default_factory=list)
    repaired: int = 0
    whole: int = 0  # items accepted as sent, left for ClickHouse to parse (the fast path)

    @property
    def accepted(self) -> int:
        return len(self.columns) + self.whole

    def reject(self, reason: str) -> None:
        self.rejected += 1
        if len(self.reasons) < _MAX_MESSAGES:
            self.reasons.append(reason)

    def note(self, reason: str) -> None:
        """Record a repair made to an item that was kept (cut value, replaced bytes)."""
        self.repaired += 1
        if len(self.reasons) < _MAX_MESSAGES:
            self.reasons.append(reason)

    def message(self) -> str:
        """The ``partial_success.error_message`` for the client ('' when all went through)."""
        if not self.rejected and not self.repaired:
            return ""
        item = "spans" if self.signal == "traces" else "log records"
        head = (
            f"{self.rejected} {item} rejected" if self.rejected else f"{self.accepted} {item} kept"
        )
        if self.repaired:
            head += f", {self.repaired} repaired"
        return head + ": " + "; ".join(self.reasons)
