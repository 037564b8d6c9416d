"""Debian's chromium driven by Playwright for Python (never ``playwright install``), and
screenshots saved as test artifacts and checked for content."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1366, "height": 768}
ARTIFACTS = Path(__file__).resolve().parents[2] / ".skillsight" / "artifacts" / "ui"


@contextmanager
def chromium() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        raise RuntimeError(f"{CHROMIUM} is missing: `make install` installs Debian's chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


# Counts the distinct colours of an image and the share of pixels unlike its corner pixel,
# inside the browser (no imaging library needed in the test environment).
_MEASURE = """async (uri) => {
  const image = new Image();
  image.src = uri;
  await image.decode();
  const canvas = document.createElement("canvas");
  canvas.width = image.width; canvas.height = image.height;
  const context = canvas.getContext("2d");
  context.drawImage(image, 0, 0);
  const data = context.getImageData(0, 0, image.width, image.height).data;
  const colours = new Set();
  let differing = 0;
  const [r0, g0, b0] = [data[0], data[1], data[2]];
  for (let i = 0; i < data.length; i += 4) {
    colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
    if (Math.abs(data[i] - r0) + Math.abs(data[i + 1] - g0) + Math.abs(data[i + 2] - b0) > 30)
      differing++;
  }
  return {colours: colours.size, differing: differing / (data.length / 4),
          width: image.width, height: image.height};
}"""


def screenshot(page: Page, name: str, probe: Page, *, full_page: bool = False) -> dict[str, Any]:
    """Save a screenshot of ``page`` as ``.skillsight/artifacts/ui/<name>.png`` and measure it
    in ``probe`` (another tab); a blank or single-colour page fails."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{re.sub(r'[^a-z0-9_-]+', '-', name.lower())}.png"
    png = page.screenshot(path=str(path), full_page=full_page)
    measured: dict[str, Any] = probe.evaluate(
        _MEASURE, "data:image/png;base64," + base64.b64encode(png).decode()
    )
    assert measured["colours"] >= 16, (path, measured)
    assert measured["differing"] >= 0.01, (path, measured)
    measured["path"] = path
    return measured
