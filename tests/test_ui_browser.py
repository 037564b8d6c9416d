"""The web UI in a real browser (Debian's chromium through Playwright) against a real
``skillsight serve`` fed with recorded Claude Code scenarios (tests/support/ui_feed.py).

One server and one browser for the module. The service runs with API keys, so the browser logs
in once (the key is kept in a cookie) and a context without the cookie must see nothing of the
project. Each page's screenshot is saved under ``.skillsight/artifacts/ui/`` and checked for
content.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from tests.support.browser import VIEWPORT, chromium, screenshot
from tests.support.serve import RunningServer
from tests.support.ui_feed import INGEST_KEY, KEY, OTHER_KEY, fed_server

# The module's server is fed and scored in the first test's setup: a minute on a quiet machine,
# several on a busy one, so the first test gets a generous deadline.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with fed_server(tmp_path_factory.mktemp("ui")) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def page(browser: Browser, server: RunningServer) -> Iterator[Page]:
    """A tab that entered the API key once, on the login page."""
    context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    tab = context.new_page()
    tab.goto(server.api + "/skills?window=all")
    assert "/login" in tab.url
    tab.fill("#key", KEY)
    tab.press("#key", "Enter")
    tab.wait_for_url("**/skills?window=all")
    yield tab
    context.close()


@pytest.fixture(scope="module")
def probe(browser: Browser) -> Iterator[Page]:
    """A blank tab that measures screenshots."""
    context = browser.new_context()
    yield context.new_page()
    context.close()


def _activations(server: RunningServer) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = server.get("/api/v1/activations", limit=100)
    return found


def _failing(server: RunningServer, evaluator: str) -> dict[str, Any]:
    return next(
        a
        for a in _activations(server)
        if any(e["evaluator"] == evaluator and e["passed"] is False for e in a["evaluations"])
    )


def test_without_the_key_a_page_shows_nothing_of_the_project(
    browser: Browser, server: RunningServer, probe: Page
) -> None:
    activation = _activations(server)[0]
    context = browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    tab = context.new_page()
    for path in ("/", "/skills?window=all", f"/activations/{activation['activation_id']}"):
        tab.goto(server.api + path)
        assert "/login" in tab.url
        text = tab.inner_text("body")
        for secret in (activation["skill_name"], activation["activation_id"][:8], "ui"):
            assert secret not in text.split(), (path, text)
        assert activation["skill_name"] not in tab.content()
    # a wrong key, or one that may only send telemetry, is refused and still shows nothing
    for key in ("not-a-key", INGEST_KEY):
        tab.goto(server.api + "/skills?window=all")
        tab.fill("#key", key)
        tab.press("#key", "Enter")
        tab.wait_for_selector("[role=alert]")
        assert activation["skill_name"] not in tab.content()
    screenshot(tab, "login", probe)
    # another project's key opens that project, where none of this one's clusters are
    labels = [c["label"] for c in server.get("/api/v1/clusters")]
    assert labels
    tab.goto(server.api + "/")
    tab.fill("#key", OTHER_KEY)
    tab.press("#key", "Enter")
    tab.wait_for_url(server.api + "/")
    for label in labels:
        assert label not in tab.content()
    assert tab.locator("table.clusters").count() == 0
    context.close()


def test_the_skills_page_lists_every_skill_that_ran(
    page: Page, server: RunningServer, probe: Page
) -> None:
    ran = {a["skill_name"] for a in _activations(server)}
    page.goto(server.api + "/skills?window=all")
    listed = page.locator("table.list tbody th a").all_inner_texts()
    assert ran <= set(listed), (ran, listed)
    failing = {
        a["skill_name"]
        for a in _activations(server)
        if any(e["passed"] is False for e in a["evaluations"])
    }
    for name in failing:
        row = page.locator("tbody tr", has=page.locator(f"th a:text-is('{name}')"))
        assert row.locator(".bad").count() >= 1, name
    screenshot(page, "skills", probe)


def test_the_skill_page_draws_one_line_per_version(
    page: Page, server: RunningServer, probe: Page
) -> None:
    card = server.get("/api/v1/skills/csv-summary/scorecard", window="all")
    versions = [v["version"] for v in card["versions"]]
    assert len(versions) == 2  # the fixture recorded the skill twice
    page.goto(server.api + "/skills/csv-summary?window=all")
    chart = page.locator("figure[data-evaluator='allowed_tools'] svg.chart")
    assert sorted(
        chart.locator("g.series").evaluate_all("gs => gs.map(g => g.dataset.series)")
    ) == sorted(versions)
    assert chart.locator("line.threshold").count() == 1  # the gate's minimum
    # every evaluator with scores has its chart, each line a version
    charts = page.locator("figure[data-evaluator]")
    assert charts.count() == len(card["evaluators"])
    # activity and cost per version arrive after the page: a line per version there too
    usage = page.locator("[data-fragment] [data-loaded]")
    usage.wait_for()
    cost = usage.locator("figure", has_text="cost per activation").locator("g.series")
    assert cost.count() == len(versions)
    screenshot(page, "skill", probe, full_page=True)


def test_an_activation_shows_its_failing_step_with_the_reason(
    page: Page, server: RunningServer, probe: Page
) -> None:
    activation = _failing(server, "allowed_tools")
    verdict = next(e for e in activation["evaluations"] if e["evaluator"] == "allowed_tools")
    (finding,) = verdict["findings"]
    page.goto(f"{server.api}/activations/{activation['activation_id']}")
    failing = page.locator(".tl-item.is-failing")
    assert failing.count() == 1
    item = failing.first
    assert item.get_attribute("id") == f"call-{finding['tool_call_id']}"
    assert "Bash" in item.locator(".tl-title").inner_text()
    assert finding["message"] in item.locator(".reason").inner_text()
    # a not-applicable evaluation reads as n/a, never as a pass or a failure
    na = [e["evaluator"] for e in activation["evaluations"] if e["passed"] is None]
    for name in na:
        row = page.locator("tr", has=page.locator(f"th:has-text('{name}')"))
        assert row.locator(".verdict").inner_text() == "n/a"
    # the cited step links to the timeline, the session to its ATIF steps
    page.click(f"a[href='#call-{finding['tool_call_id']}']")
    assert page.url.endswith(f"#call-{finding['tool_call_id']}")
    screenshot(page, "activation", probe, full_page=True)
    page.click("text=ATIF")
    assert page.url.endswith("/atif.json")
    assert '"schema_version": "ATIF-v1.7"' in page.inner_text("body").replace('":"', '": "')


def test_the_session_page_pages_its_steps_and_opens_a_cited_one(
    page: Page, server: RunningServer, probe: Page
) -> None:
    activation = _failing(server, "allowed_tools")
    step = activation["tool_calls"][-1]["step_id"]
    page.goto(f"{server.api}/sessions/{activation['session_id']}?step={step}#step-{step}")
    opened = page.locator(f"#step-{step} details")
    assert opened.get_attribute("open") is not None
    atif = server.get(f"/api/v1/trajectories/{activation['session_id']}")
    assert page.locator("ol.steps > li").count() == len(atif["steps"])
    screenshot(page, "session", probe)


def test_keyboard_moves_opens_searches_and_helps(page: Page, server: RunningServer) -> None:
    page.goto(server.api + "/activations?window=all")
    rows = page.locator("[data-nav-list] [data-nav]")
    assert rows.count() >= 3
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    assert rows.nth(1).get_attribute("class") == "is-selected"
    target = rows.nth(1).locator("a").first.get_attribute("href")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{target}")
    page.go_back()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "f-skill"
    page.keyboard.press("Escape")
    page.keyboard.press("?")
    assert page.locator("dialog#help").is_visible()
    page.keyboard.press("Escape")
    assert not page.locator("dialog#help").is_visible()
    # the "go to" box takes an id
    activation = _activations(server)[0]["activation_id"]
    page.fill("#go-box", activation)
    page.press("#go-box", "Enter")
    page.wait_for_url(f"**/activations/{activation}")


def test_the_clusters_page_lists_the_clusters_the_api_lists(
    page: Page, server: RunningServer, probe: Page
) -> None:
    listed = server.get("/api/v1/clusters", limit=100)
    assert len(listed) >= 2  # the fixture replays two failure patterns as fresh sessions
    page.goto(server.api + "/?status=all&window=all")
    rows = page.locator("table.clusters tbody tr")
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.cluster)") == [
        c["cluster_id"] for c in listed
    ]
    first = rows.first
    assert first.locator("th a").inner_text() == listed[0]["label"]
    assert first.locator("[data-status-of]").inner_text() == listed[0]["status"]
    assert first.locator("svg.spark").count() == 1
    screenshot(page, "clusters", probe)


def test_a_cluster_shows_an_exemplar_timeline_with_the_failing_step_and_its_reason(
    page: Page, server: RunningServer, probe: Page
) -> None:
    page.goto(server.api + "/?status=all&window=all")
    page.locator("table.clusters tbody tr th a").first.click()
    page.wait_for_url("**/clusters/*")
    cluster_id = page.url.rsplit("/", 1)[1]
    detail = server.get(f"/api/v1/clusters/{cluster_id}")
    exemplar = server.get(f"/api/v1/activations/{detail['exemplar_activation_ids'][0]}")
    failing = [e for e in exemplar["evaluations"] if e["passed"] is False]
    messages = {f["message"] for e in failing for f in e["findings"]} | {
        e["reason"] for e in failing
    }
    first = page.locator("article.exemplar").first
    marked = first.locator(".tl-item.is-failing")
    assert marked.count() >= 1
    reason = marked.first.locator(".reason").first.inner_text()
    assert any(message in reason for message in messages), (reason, messages)
    assert page.locator("text=first bad version").count() == 1
    members = page.locator("#mem-h + table tbody tr")
    assert members.count() == min(detail["size"], 25)
    screenshot(page, "cluster", probe, full_page=True)


def test_acknowledging_a_cluster_changes_its_status_in_the_api(
    page: Page, server: RunningServer
) -> None:
    cluster = server.get("/api/v1/clusters", limit=100)[-1]
    page.goto(server.api + "/?status=all&window=all")
    row = page.locator(f"table.clusters tbody tr[data-cluster='{cluster['cluster_id']}']")
    row.locator("input[name=assignee]").fill("on-call")
    row.locator("button[value=acknowledged]").click()
    badge = row.locator("[data-status-of]")
    badge.filter(has_text="acknowledged").wait_for()
    after = server.get(f"/api/v1/clusters/{cluster['cluster_id']}")
    assert (after["status"], after["assignee"]) == ("acknowledged", "on-call")
    # the page itself, reloaded, says so too; and resolving works without script (a form post)
    page.reload()
    assert row.locator("[data-status-of]").inner_text() == "acknowledged"
    page.goto(f"{server.api}/clusters/{cluster['cluster_id']}")
    page.evaluate(  # as a browser without script would: the form posts
        "document.querySelectorAll('form[data-inline]')"
        ".forEach(f => f.removeAttribute('data-inline'))"
    )
    with page.expect_navigation():
        page.click("button[value=resolved]")
    assert page.locator("[data-status-of]").inner_text() == "resolved"
    assert server.get(f"/api/v1/clusters/{cluster['cluster_id']}")["status"] == "resolved"


def test_promoting_a_cluster_drafts_a_golden_set_shown_on_its_page(
    page: Page, server: RunningServer, probe: Page
) -> None:
    cluster = server.get("/api/v1/clusters", limit=100)[0]
    page.goto(f"{server.api}/clusters/{cluster['cluster_id']}")
    with page.expect_navigation():
        page.click("text=Promote to golden set")
    page.click("[role=status] a")
    page.wait_for_url("**/goldens/*")
    set_id = page.url.rsplit("/", 1)[1]
    stored = server.get(f"/api/v1/golden-sets/{set_id}")
    cases = stored["cases"]
    assert cases and all(c["provenance"]["cluster_id"] == cluster["cluster_id"] for c in cases)
    assert page.locator("tbody tr").count() == len(cases)
    screenshot(page, "golden-set", probe)
    page.goto(server.api + "/goldens")
    assert page.locator(f"a[href='/goldens/{set_id}']").count() == 1
