"""The recorded OTLP captures (tests/fixtures/captures) stored as a deployed service takes them."""

from __future__ import annotations

from pathlib import Path

from skillsight.ingest import otlp
from skillsight.store import Store
from skillsight.store.rows import EVENT_SCHEMA, SPAN_SCHEMA

SCENARIOS = Path(__file__).parent.parent / "fixtures" / "captures" / "scenarios"


def store_capture(store: Store, project: str, folder: Path) -> None:
    """Every ``traces*`` and ``logs*`` export in ``folder`` through the real OTLP decoder into
    ``project``'s tables."""
    for path in sorted(folder.iterdir()):
        if not path.name.startswith(("traces", "logs")):
            continue
        signal = otlp.TRACES if path.name.startswith("traces") else otlp.LOGS
        encoding = otlp.JSON if path.suffix == ".json" else otlp.PROTOBUF
        decoded = otlp.decode(signal, path.read_bytes(), encoding, project, otlp.Limits())
        assert decoded.rejected == 0, decoded.message()
        if signal == otlp.TRACES:
            store.spans.insert(decoded.columns.to_arrow(SPAN_SCHEMA))
        else:
            store.events.insert(decoded.columns.to_arrow(EVENT_SCHEMA))
