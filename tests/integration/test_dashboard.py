"""The Panel dashboard (SPEC §3.4) in a real browser (Playwright driving Debian's Chromium)
against a real `memo serve` on the sample vault: IDE chips, search, page size and paging
one page at a time from the index, the details drawer, PDF downloads whose totals equal
/api/activity, one-click digest proposals (and stale ones), derived rules, and stored
record text that never runs; and the same app under `panel serve dashboards/app.py`. A
screenshot of each tab is saved under tests/artifacts/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import memo_analytics
from tests.integration.test_cli import grand_total, memo, pdf_text
from tests.integration.test_http_api import Server, free_port

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
XSS_BODY = ('Ship it <img src=x onerror="window.__xss=1"> <script>window.__xss=2</script> '
            '[docs](javascript:window.__xss=3) <a href="javascript:window.__xss=4">x</a> <svg onload="window.__xss=5">')
WAIT_MS = 20_000

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def serve_with_config(vault: Path, config: Path) -> Server:
    """A real `memo serve` on ``vault`` reading the config file ``config``."""
    previous = os.environ["MEMO_CONFIG"]  # tests/conftest.py points it at no file
    os.environ["MEMO_CONFIG"] = str(config)
    try:
        return Server(vault)
    finally:
        os.environ["MEMO_CONFIG"] = previous


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("dashboard")
    vault = memo_analytics.sample_vault(base / "vault")
    now = datetime.now(timezone.utc)
    outside = base / "outside"  # a folder in no repository: no project learns a repository from these calls
    outside.mkdir()
    memo("prompt", "record", "--project", "web", "--session-id", "xss-1", "--ide", "cursor", "--body", XSS_BODY,
         vault=vault, cwd=outside)
    for sid in ("stale-1", "stale-2", "stale-3", "stale-4"):  # open, no turn for hours: stalled, with a proposal
        memo("session", "start", sid, "--project", "acme-web", "--client", "Acme Corp",
             "--start-time", _iso(now - timedelta(hours=3)), vault=vault, cwd=outside)
    product = base / "product"  # a repository the "product" project was seen in: promotion can write there
    product.mkdir()
    subprocess.run(["git", "init", "-q", str(product)], check=True)
    for n in range(2):
        memo("prompt", "record", "--project", "product", "--session-id", f"p-{n}", "--ide", "codex",
             "--body", "Never push to the release branch without a second review.", vault=vault, cwd=product)
    further = base / "team-vault"  # a further vault of the config: listed by the vault selector, read-only
    for n in range(3):
        memo("prompt", "record", "--project", "team", "--session-id", "team-1", "--ide", "zed",
             "--body", f"Team turn {n}: review the export", vault=further, cwd=outside)
    config = base / "config.toml"
    config.write_text(f'timezone = "UTC"\nvaults = ["{further}"]\n' + "".join(
        f'[clients."{name}"]\nhourlyRate = "100.00"\ncurrency = "EUR"\naddress = ["1 Main St"]\ncity = "Paris"\n'
        f'country = "FR"\ntaxRate = "20"\n' for name in ("Acme Corp", "Globex", "Initech"))
        + '[invoice]\nname = "Ana Dev GmbH"\naddress = ["Hauptstr. 1"]\ncity = "Berlin"\ncountry = "DE"\n'
          'vatId = "DE136695976"\niban = "DE89370400440532013000"\n', encoding="utf-8")
    server = serve_with_config(vault, config)
    yield server, vault, product, further
    server.stop()


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(served, browser):
    server = served[0]
    context = browser.new_context(viewport={"width": 1500, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.dialogs = dialogs
    page.goto(server.base + "/")
    page.wait_for_selector(".memo-prompts-table .tabulator-row", timeout=60_000)
    yield page
    context.close()


def api(served, path: str) -> dict:
    status, answer = served[0].get_json(path)
    assert status == 200, answer
    return answer


def rows(page) -> list[dict[str, str]]:
    """The master table's rows as {column: text}."""
    return page.evaluate("""() => {
        const out = [];
        const walk = (root) => {
            root.querySelectorAll('*').forEach(el => { if (el.shadowRoot) walk(el.shadowRoot); });
            root.querySelectorAll('.tabulator-row').forEach(row => {
                const cells = {};
                row.querySelectorAll('.tabulator-cell').forEach(c => cells[c.getAttribute('tabulator-field')] = c.innerText);
                out.push(cells);
            });
        };
        walk(document);
        return out;
    }""")


def status_text(page) -> str:
    return page.locator(".memo-page-status .memo-status").inner_text()


def wait_status(page, text: str) -> None:
    expect(page.locator(".memo-page-status")).to_contain_text(text, timeout=WAIT_MS)


def open_tab(page, name: str) -> None:
    page.locator(".bk-tab", has_text=name).click()


def shot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"dashboard-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    return path


def test_first_page_holds_one_page_of_the_newest_prompts(served, page):
    expected = api(served, "/api/prompts?crossProject=true&limit=20")
    wait_status(page, f"Page 1 of {-(-expected['total'] // 20)}")
    assert f"1–20 of {expected['total']} prompts" in status_text(page)
    shown = rows(page)
    assert len(shown) == 20
    assert [(r["Session"], r["Turn"]) for r in shown] == [
        (i.get("sessionId") or "", str(i["turn"]) if i.get("turn") is not None else "") for i in expected["items"]]
    shot(page, "prompts")


def test_an_ide_chip_keeps_only_that_ides_prompts(served, page):
    expected = api(served, "/api/prompts?crossProject=true&ide=codex&limit=20")
    page.locator(".memo-ide-chips").get_by_role("button", name="codex", exact=True).click()
    wait_status(page, f"of {expected['total']} prompts")
    shown = rows(page)
    assert len(shown) == min(20, expected["total"]) and {r["IDE"] for r in shown} == {"codex"}


def test_search_ranks_by_full_text_with_the_same_answer_as_the_api(served, page):
    expected = api(served, "/api/prompts?crossProject=true&query=linter&limit=20")
    assert expected["total"] > 0
    page.locator(".memo-search input").fill("linter")
    page.locator(".memo-search input").press("Enter")
    wait_status(page, f"of {expected['total']} prompts · ranked by relevance")
    shown = rows(page)
    assert [(r["Session"], r["Turn"]) for r in shown] == [(i["sessionId"], str(i["turn"])) for i in expected["items"]]
    assert all("linter" in r["Prompt"].lower() for r in shown)


def test_page_size_and_paging_fetch_the_page_the_api_gives(served, page):
    total = api(served, "/api/prompts?crossProject=true&limit=1")["total"]
    page.locator(".memo-page-size select").select_option("10")
    wait_status(page, f"Page 1 of {-(-total // 10)}")
    assert len(rows(page)) == 10
    page.locator(".memo-next button").click()
    wait_status(page, f"Page 2 of {-(-total // 10)}")
    expected = api(served, "/api/prompts?crossProject=true&limit=10&offset=10")
    assert [(r["Session"], r["Turn"]) for r in rows(page)] == [
        (i.get("sessionId") or "", str(i.get("turn") or "")) for i in expected["items"]]
    assert "11–20" in status_text(page)
    page.locator(".memo-last button").click()
    last = -(-total // 10)
    wait_status(page, f"Page {last} of {last}")
    assert len(rows(page)) == total - 10 * (last - 1)
    expect(page.locator(".memo-next button")).to_be_disabled()
    page.locator(".memo-page-size select").select_option("50")
    wait_status(page, f"Page 1 of {-(-total // 50)}")
    assert len(rows(page)) == min(50, total)


def test_the_drawer_shows_the_prompt_and_story_and_stored_markup_never_runs(served, page):
    page.locator(".memo-search input").fill("onerror")
    page.locator(".memo-search input").press("Enter")
    wait_status(page, "of 1 prompts")
    table_cell = page.locator(".memo-prompts-table .tabulator-cell[tabulator-field='Prompt']").first
    assert 'onerror="window.__xss=1"' in table_cell.inner_text()  # shown as text, not markup
    table_cell.click()
    drawer = page.locator(".memo-drawer")
    expect(drawer.locator(".memo-drawer-title")).to_contain_text("prompt-xss-1-t1", timeout=WAIT_MS)
    prompt = drawer.locator(".memo-drawer-prompt .rendered")
    expect(prompt).to_contain_text("Ship it", timeout=WAIT_MS)
    assert "<script>window.__xss=2</script>" in prompt.inner_text()  # escaped: visible as text
    expect(drawer.locator(".memo-drawer-story")).to_contain_text("Intent story: xss-1")
    expect(drawer.locator(".memo-drawer-story")).to_contain_text("Turn log")
    page.wait_for_timeout(500)
    handlers = page.evaluate("""() => {
        const found = [];
        const walk = (root) => root.querySelectorAll('*').forEach(el => {
            if (el.shadowRoot) walk(el.shadowRoot);
            for (const a of el.attributes) {
                if (a.name.startsWith('on') || /javascript:/i.test(a.value)) found.push(el.tagName + ' ' + a.name);
            }
        });
        walk(document);
        return found;
    }""")
    markup = [f"{where} {tag}" for where in (".memo-drawer-prompt", ".memo-drawer-story", ".memo-prompts-table")
              for tag in ("script", "img", "svg", "iframe") if page.locator(f"{where} {tag}").count()]
    assert page.evaluate("window.__xss") is None
    assert page.dialogs == []
    assert handlers == [] and markup == []
    shot(page, "prompt-drawer")
    page.locator(".memo-drawer-close button").click()
    expect(drawer).to_be_hidden(timeout=WAIT_MS)


def test_the_timesheet_and_invoice_pdfs_total_what_the_api_reports(served, page):
    activity = api(served, "/api/activity?crossProject=true")
    open_tab(page, "Activity & Invoicing")
    summary = page.locator(".memo-activity-summary")
    expect(summary).to_contain_text(f"{activity['totalBillableHours']:.2f}", timeout=WAIT_MS)
    expect(summary).to_contain_text(f"{activity['totalCostUsd']}AI cost (API-equivalent, USD)")
    expect(page.locator(".memo-hours-chart")).to_be_visible()
    shot(page, "activity")
    with page.expect_download(timeout=60_000) as download:
        page.locator(".memo-timesheet-pdf button").click()
    path = download.value.path()
    assert download.value.suggested_filename.startswith("timesheet-")
    assert grand_total(pdf_text(Path(path))) == f"{activity['totalBillableHours']:.2f}"
    with page.expect_download(timeout=60_000) as download:
        page.locator(".memo-invoice-pdf button").click()
    text = pdf_text(Path(download.value.path()))
    # a draft of every client: added up, due by none (each is invoiced on its own)
    assert grand_total(text) == f"{activity['totalBillableHours']:.2f}" and "All clients in EUR" in text


def test_the_activity_of_one_client_and_month_matches_the_api(served, page):
    activity = api(served, "/api/activity?crossProject=true&client=Globex&since=2026-03-01&until=2026-03-31")
    open_tab(page, "Activity & Invoicing")
    page.locator(".memo-period select").select_option(label="Custom dates")
    page.locator(".memo-act-client select").select_option("Globex")
    expect(page.locator(".memo-activity-summary")).to_contain_text("client Globex", timeout=WAIT_MS)
    for cls, value in ((".memo-act-since", "2026-03-01"), (".memo-act-until", "2026-03-31")):
        field = page.locator(f"{cls} input").first  # typed, as a person types a billing month
        field.fill(value)
        field.press("Enter")
    expect(page.locator(".memo-activity-summary")).to_contain_text("2026-03-01 – 2026-03-31", timeout=WAIT_MS)
    expect(page.locator(".memo-activity-summary")).to_contain_text(f"{activity['totalBillableHours']:.2f}")
    with page.expect_download(timeout=60_000) as download:
        page.locator(".memo-timesheet-pdf button").click()
    assert download.value.suggested_filename == "timesheet-2026-03-01_2026-03-31_Globex.pdf"
    assert grand_total(pdf_text(Path(download.value.path()))) == f"{activity['totalBillableHours']:.2f}"


def test_the_vault_selector_lists_a_further_vault_read_only(served, page):
    further = served[3]
    page.locator(".memo-vault select").select_option(str(further.resolve()))
    wait_status(page, "of 3 prompts")
    assert {r["IDE"] for r in rows(page)} == {"zed"}
    expect(page.locator(".memo-ide-chips")).to_contain_text("zed")
    page.locator(".memo-prompts-table .tabulator-cell[tabulator-field='Prompt']").first.click()
    expect(page.locator(".memo-drawer-story .rendered")).to_contain_text("Intent story: team-1", timeout=WAIT_MS)
    assert (further / ".memo" / "index.sqlite").stat().st_size > 0
    main = next(label for label in page.locator(".memo-vault option").all_inner_texts() if label.endswith("(main)"))
    page.locator(".memo-vault select").select_option(label=main)
    expected = api(served, "/api/prompts?crossProject=true&limit=1")["total"]
    wait_status(page, f"of {expected} prompts")


def _digest_item(page, subject: str):
    return page.locator(".memo-digest-item", has_text=subject)


def test_applying_a_proposal_ends_the_session_and_it_leaves_the_digest(served, page):
    item = _digest_item(page, "stale-1")
    expect(item).to_contain_text("session stalled", timeout=WAIT_MS)
    shot(page, "digest")
    item.locator(".memo-digest-apply button").click()
    expect(page.locator(".memo-digest")).to_contain_text("Applied: end stale-1", timeout=WAIT_MS)
    expect(_digest_item(page, "stale-1")).to_have_count(0, timeout=WAIT_MS)
    digest = api(served, "/api/digest?refresh=true")
    assert "stale-1" not in {i["subject"] for i in digest["items"]}
    session = api(served, "/api/prompts/sessions/stale-1?project=acme-web")["session"]
    assert session["status"] == "completed" and session["durationMinutes"] == 0


def test_a_keyboard_apply_leaves_no_focus_on_the_next_items_button(served, page):
    """Found by an operator: after Enter on an item's button the list was rebuilt with the focus on
    the next item's button, and a second Enter ended a session nobody chose. The button pressed
    says it is under way and gives the focus up; the result is a live region."""
    item = _digest_item(page, "stale-3")
    expect(item).to_contain_text("session stalled", timeout=WAIT_MS)
    expect(_digest_item(page, "stale-4")).to_contain_text("session stalled")
    item.locator(".memo-digest-apply button").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".memo-digest")).to_contain_text("Applied: end stale-3", timeout=WAIT_MS)
    expect(_digest_item(page, "stale-3")).to_have_count(0, timeout=WAIT_MS)
    focused = page.evaluate("""() => { let a = document.activeElement;
        while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
        return a ? a.tagName + ' ' + (a.textContent || '') : ''; }""")
    assert "End it" not in focused and "apply" not in focused, focused  # the digest's ↻, or nothing
    expect(page.get_by_role("status")).to_contain_text("Applied: end stale-3")  # said to a screen reader
    page.keyboard.press("Enter")
    page.wait_for_timeout(1500)
    assert "stale-4" in {i["subject"] for i in api(served, "/api/digest?refresh=true")["items"]}


def test_a_proposal_made_on_changed_state_is_refused_and_the_new_one_shown(served, page):
    item = _digest_item(page, "stale-2")
    expect(item).to_contain_text("session stalled", timeout=WAIT_MS)
    vault = served[1]
    memo("session", "start", "stale-2", "--project", "acme-web", "--summary", "Release checklist", vault=vault,
         cwd=vault.parent / "outside")
    item.locator(".memo-digest-apply button").click()
    expect(page.locator(".memo-digest")).to_contain_text("Not applied: the state changed since the proposal",
                                                         timeout=WAIT_MS)
    expect(page.locator(".memo-digest")).to_contain_text("New proposal: end stale-2")
    session = api(served, "/api/prompts/sessions/stale-2?project=acme-web")["session"]
    assert session["status"] != "completed"
    _digest_item(page, "stale-2").locator(".memo-digest-apply button").click()
    expect(page.locator(".memo-digest")).to_contain_text("Applied: end stale-2", timeout=WAIT_MS)


def test_derived_rules_show_evidence_save_traps_and_promote_only_into_a_known_repository(served, page):
    server, _, product, _ = served
    status, derived = server.get_json("/api/prompts/derive-rules", data={"crossProject": True, "limit": 100})
    assert status == 200
    open_tab(page, "Derived Rules")
    expect(page.locator(".memo-rules-count")).to_have_text(f"{derived['total']} candidates", timeout=WAIT_MS)
    top = derived["items"][0]
    page.locator(".memo-rules-table .tabulator-cell[tabulator-field='Rule']", has_text=top["text"]).first.click()
    evidence = page.locator(".memo-rules-evidence")
    expect(evidence).to_contain_text(f"said {top['occurrences']}×", timeout=WAIT_MS)
    assert evidence.locator("tbody tr").count() == min(top["occurrences"], 50)
    shot(page, "rules")
    page.locator(".memo-rules-project select").select_option("acme-web")
    expect(page.locator(".memo-rules-summary")).to_contain_text("has no known repository", timeout=WAIT_MS)
    expect(page.locator(".memo-rules-promote button")).to_be_disabled()
    page.locator(".memo-rules-save button").click()
    expect(page.locator(".memo-rules-message")).to_contain_text("Saved", timeout=WAIT_MS)
    expect(page.locator(".memo-digest")).to_contain_text("rule ready", timeout=WAIT_MS)
    page.locator(".memo-rules-project select").select_option("product")
    expect(page.locator(".memo-rules-summary")).to_contain_text(f"promotion writes into {product}", timeout=WAIT_MS)
    page.locator(".memo-rules-promote button").click()
    expect(page.locator(".memo-rules-message")).to_contain_text("Promoted 1 rules into", timeout=WAIT_MS)
    assert "Never push to the release branch without a second review." in (product / "CLAUDE.md").read_text()


def test_every_tab_renders_without_browser_errors(served, browser):
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("requestfailed", lambda request: errors.append(f"failed: {request.url}"))
    page.goto(served[0].base + "/")
    page.wait_for_selector(".memo-prompts-table .tabulator-row", timeout=60_000)
    for name, ready in (("Activity & Invoicing", ".memo-activity-summary .card"),
                        ("Derived Rules", ".memo-rules-count"), ("Prompts & Intent Stories", ".memo-prompts-table")):
        open_tab(page, name)
        page.wait_for_selector(ready, timeout=WAIT_MS)
    context.close()
    assert errors == []


# ---------------------------------------------------------------- panel serve dashboards/app.py

PANEL_BODY = "Panel-served turn: one dashboard app for memo serve and panel serve"


@pytest.fixture(scope="module")
def panel_served(tmp_path_factory):
    """`panel serve dashboards/app.py` from the repository, as a person starts it: a real
    process on a free loopback port, the vault named by MEMO_VAULT, the zone by the config
    file of MEMO_CONFIG."""
    base = tmp_path_factory.mktemp("panel-serve")
    vault = memo_analytics.sample_vault(base / "vault")
    outside = base / "outside"
    outside.mkdir()
    memo("prompt", "record", "--project", "panel", "--session-id", "panel-1", "--ide", "zed", "--body", PANEL_BODY,
         vault=vault, cwd=outside)
    config = base / "config.toml"
    # the digest shown again every 2 s (default 30 s)
    config.write_text('timezone = "UTC"\n[operator]\ndashboardRefreshSeconds = 2\n', encoding="utf-8")
    port = free_port()
    log = (base / "panel.log").open("w")
    env = {**os.environ, "MEMO_VAULT": str(vault), "MEMO_CONFIG": str(config)}
    proc = subprocess.Popen([sys.executable, "-m", "panel", "serve", "dashboards/app.py", "--address", "127.0.0.1",
                             "--port", str(port), "--allow-websocket-origin", f"127.0.0.1:{port}"],
                            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/app"
    deadline = time.time() + 90
    while True:
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                assert answer.status == 200
                break
        except (urllib.error.URLError, ConnectionError, TimeoutError):  # a loaded machine renders slowly
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                raise AssertionError("panel serve did not start: " + (base / "panel.log").read_text())
            time.sleep(0.3)
    yield url, vault, config
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()


def test_panel_serve_of_dashboards_app_shows_the_vault_of_the_settings(panel_served, browser):
    url, vault, config = panel_served
    env = {"MEMO_CONFIG": str(config)}
    listed = json.loads(memo("--json", "prompt", "list", "--all", "--limit", "1", vault=vault, env=env).stdout)
    activity = json.loads(memo("--json", "activity", "--all", vault=vault, env=env).stdout)
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url)
    page.wait_for_selector(".memo-prompts-table .tabulator-row", timeout=60_000)
    expect(page.locator(".memo-app .root").first).to_have_text(str(vault))
    wait_status(page, f"of {listed['total']} prompts")
    newest = rows(page)[0]
    assert (newest["Project"], newest["Session"], newest["IDE"]) == ("panel", "panel-1", "zed")
    assert newest["Prompt"] == PANEL_BODY
    open_tab(page, "Activity & Invoicing")
    expect(page.locator(".memo-activity-summary")).to_contain_text(f"{activity['totalBillableHours']:.2f}",
                                                                   timeout=WAIT_MS)
    expect(page.locator(".memo-activity-summary")).to_contain_text(f"{activity['totalPrompts']:,}")
    shot(page, "panel-serve")
    context.close()
    assert errors == []


def test_an_open_dashboard_shows_a_session_that_stalls_without_a_click(panel_served, browser):
    """Found by an operator: the digest only changed on ↻, so a dashboard left open never showed
    a session that stalled meanwhile. It is shown again every ``operator.dashboardRefreshSeconds``,
    with the time it was computed."""
    url, vault, config = panel_served
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector(".memo-prompts-table .tabulator-row", timeout=60_000)
    expect(page.locator(".memo-digest")).to_contain_text("computed ", timeout=WAIT_MS)
    assert page.locator(".memo-digest-item", has_text="left-open").count() == 0
    memo("session", "start", "left-open", "--project", "panel", "--start-time",
         _iso(datetime.now(timezone.utc) - timedelta(hours=2)), vault=vault, env={"MEMO_CONFIG": str(config)},
         cwd=vault.parent)
    expect(page.locator(".memo-digest-item", has_text="left-open")).to_contain_text("session stalled",
                                                                                  timeout=WAIT_MS)
    context.close()


def test_the_timesheet_fits_1366_pixels_and_its_group_header_counts_the_clients_sessions(served, browser):
    """Issue 15 point 8: at 1366 px every timesheet column is on screen (Duration and Hours
    were beyond it), and a client's header counts its sessions of the period, not the page's rows."""
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    try:
        page.goto(served[0].base + "/")
        page.wait_for_selector(".memo-prompts-table .tabulator-row", timeout=60_000)
        open_tab(page, "Activity & Invoicing")
        hours = page.locator(".memo-timesheet .tabulator-col[tabulator-field='Hours']")
        expect(hours).to_be_visible(timeout=WAIT_MS)
        box = hours.bounding_box()
        assert box is not None and box["x"] + box["width"] <= 1366, box
        activity = api(served, "/api/activity?crossProject=true")
        acme = activity["byClient"]["Acme Corp"]["sessions"]
        header = page.locator(".memo-timesheet .tabulator-group", has_text="Acme Corp").first
        expect(header).to_contain_text(f"Acme Corp · {acme} sessions", timeout=WAIT_MS)
        shot(page, "activity-1366")
    finally:
        context.close()


def test_an_invoice_is_issued_from_the_activity_tab(served, page):
    """Last in this module: an issued invoice leaves its sessions off later drafts."""
    open_tab(page, "Activity & Invoicing")
    page.locator(".memo-period select").select_option(label="Custom dates")
    page.locator(".memo-act-client select").select_option("Globex")
    issue = page.locator(".memo-issue-invoice button")
    for cls, value in ((".memo-act-since", "2026-03-01"), (".memo-act-until", "2026-03-31")):
        field = page.locator(f"{cls} input").first
        field.fill(value)
        field.press("Enter")
    expect(page.locator(".memo-activity-summary")).to_contain_text("2026-03-01 – 2026-03-31", timeout=WAIT_MS)
    expect(issue).to_be_enabled(timeout=WAIT_MS)
    # found by a billing person: one click issued a numbered invoice (only a credit note takes it
    # back); it asks first, and a cancel issues nothing
    issue.click()
    expect(page.locator(".memo-issue-question")).to_contain_text(
        "Issue a numbered invoice to Globex for 2026-03-01 – 2026-03-31: 7.42 h, EUR 890.40 due? It cannot be taken back", timeout=WAIT_MS)
    page.locator(".memo-issue-cancel button").click()
    expect(page.locator(".memo-issue-question")).to_be_hidden(timeout=WAIT_MS)
    assert not (served[1] / "invoices").exists() or not list((served[1] / "invoices").glob("*.md"))
    issue.click()
    page.locator(".memo-issue-confirm button").click()
    expect(page.locator(".memo-issued")).to_contain_text("Issued invoice 2026-0001 for Globex", timeout=60_000)
    assert (served[1] / "invoices" / "2026-0001.md").is_file()
    page.locator(".memo-act-since input").first.fill("2026-13-01")
    page.locator(".memo-act-since input").first.press("Enter")
    expect(page.locator(".memo-activity-summary")).to_contain_text("Invalid since date", timeout=WAIT_MS)


def test_a_page_whose_server_restarted_says_so_and_loads_again(tmp_path, browser):
    """Found by an operator: after `memo serve` restarted, an open page kept the figures of before,
    its ↻ did nothing, and nothing said so. It says the server is lost at its top, then loads itself
    again once the server answers (the new turn shows)."""
    vault = memo_analytics.sample_vault(tmp_path / "vault")
    server = Server(vault)
    port = server.port
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    try:
        page = context.new_page()
        page.goto(server.base + "/")
        page.wait_for_selector(".memo-prompts-table .tabulator-row", timeout=60_000)
        server.stop()
        expect(page.locator("#memo-connection-lost")).to_contain_text(
            "The dashboard lost its server (memo serve stopped or restarted)", timeout=WAIT_MS)
        memo("prompt", "record", "--project", "web", "--body", "Recorded while the server was down", vault=vault,
             cwd=tmp_path)
        server = Server(vault, port=port)
        expect(page.locator(".memo-prompts-table")).to_contain_text("Recorded while the server was down",
                                                                     timeout=60_000)
        expect(page.locator("#memo-connection-lost")).to_have_count(0)
    finally:
        context.close()
        server.stop()


def test_the_page_is_laid_out_for_a_phones_width(served, browser):
    """Found by an operator: the dashboard named no viewport, so a phone laid it out 980 px wide,
    zoomed out, its text tiny, the digest's lines cut at the screen's edge. The page is laid out
    for the device's width (a table wider than it scrolls sideways)."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        page.goto(served[0].base + "/")
        page.wait_for_selector(".memo-app", timeout=60_000)
        assert page.evaluate("() => document.querySelector('meta[name=viewport]').content") == \
            "width=device-width, initial-scale=1"
        title = page.get_by_text("Operator dashboard").bounding_box()
        assert title["x"] + title["width"] <= 390 and title["height"] >= 18, title  # at the phone's scale
        # found by two operators: the page scrolled sideways (849 px, 1190 on Activity) — the hidden drawer's
        # fixed 500 px held it wide, and rows of controls did not wrap: Refresh, Next ›, Issue invoice off-screen
        page.wait_for_selector(".memo-prompts-table .tabulator-row", timeout=60_000)
        assert page.evaluate("document.documentElement.scrollWidth") <= 430
        nxt = page.locator(".memo-next").bounding_box()
        assert nxt["x"] + nxt["width"] <= 390, nxt
        page.locator(".bk-tab", has_text="Activity & Invoicing").click()
        page.wait_for_selector(".memo-activity-summary .card", timeout=WAIT_MS)
        assert page.evaluate("document.documentElement.scrollWidth") <= 430
        issue = page.get_by_role("button", name="Issue invoice").bounding_box()
        assert issue["x"] + issue["width"] <= 390, issue
    finally:
        context.close()


#: The element that has the focus, inside every shadow root: its tag and text (``BODY`` when none has it).
DEEPEST = ("() => { let el = document.activeElement; while (el && el.shadowRoot && el.shadowRoot.activeElement) "
           "el = el.shadowRoot.activeElement; return el ? el.tagName + ':' + (el.textContent || '').slice(0, 30) + "
           "':' + (el.className || '') : null }")


def test_the_tabs_and_the_tables_are_within_a_keyboards_reach(page):
    """Found by an operator using the keyboard alone: a tab's header took focus but neither Enter
    nor Space opened it (the Activity & Invoicing and Rules tabs were out of reach), and Tab into
    a table held the focus there for good (it went to the page's body). Enter, Space and the
    arrows open the tabs; Tab goes on past a table; Escape closes the drawer."""
    activity = page.locator(".bk-tab", has_text="Activity & Invoicing")
    activity.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(".memo-activity-summary .card", timeout=WAIT_MS)
    # said as tabs to a screen reader, the open one selected (found by an operator: no role at all)
    expect(page.get_by_role("tab", name="Activity & Invoicing")).to_have_attribute("aria-selected", "true",
                                                                                   timeout=WAIT_MS)
    expect(page.get_by_role("tab", name="Prompts & Intent Stories")).to_have_attribute("aria-selected", "false")
    page.keyboard.press("ArrowLeft")  # back to the first tab, and it opens
    page.wait_for_selector(".memo-prompts-table .tabulator-row", state="visible", timeout=WAIT_MS)
    page.locator(".bk-tab", has_text="Prompts").focus()
    page.keyboard.press(" ")
    page.locator(".memo-prompts-table .tabulator-tableholder").focus()
    stops = []
    for _ in range(4):
        page.keyboard.press("Tab")
        stops.append(page.evaluate(DEEPEST))
    assert not any(stop.startswith("BODY") for stop in stops), stops
    # a row by keyboard: the arrows mark it, Enter opens its drawer, Escape closes it (a click alone opened it)
    page.locator(".memo-prompts-table .tabulator-tableholder").focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_selector(".memo-drawer", state="visible", timeout=WAIT_MS)
    second = page.locator(".memo-prompts-table .tabulator-row").nth(1).inner_text().split("\n")[-1][:20]
    expect(page.locator(".memo-drawer")).to_contain_text(second, timeout=WAIT_MS)
    page.keyboard.press("Escape")
    page.wait_for_selector(".memo-drawer", state="hidden", timeout=WAIT_MS)
    # found by an operator: the focus fell to the page's body after every action — a row clicked open, Escape
    # gives it back to the table; Enter on a control that the page builds anew leaves it on that control
    page.locator(".memo-prompts-table .tabulator-row").nth(0).locator(".tabulator-cell:not(.tabulator-frozen)").first.click()
    page.wait_for_selector(".memo-drawer", state="visible", timeout=WAIT_MS)
    page.keyboard.press("Escape")
    page.wait_for_selector(".memo-drawer", state="hidden", timeout=WAIT_MS)
    page.wait_for_function("() => document.activeElement && document.activeElement !== document.body",
                           timeout=WAIT_MS)
    assert "tabulator-tableholder" in page.evaluate(DEEPEST), page.evaluate(DEEPEST)
    refresh = page.get_by_role("button", name="↻ Refresh")
    refresh.focus()
    page.keyboard.press("Enter")
    page.wait_for_timeout(1500)  # the digest built anew
    assert "Refresh" in page.evaluate(DEEPEST), page.evaluate(DEEPEST)
    # found by a breaker: on the Activity tab Tab stayed in the timesheet's table, Shift+Tab went to the body
    page.locator(".bk-tab", has_text="Activity & Invoicing").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(".memo-timesheet .tabulator-tableholder", state="visible", timeout=WAIT_MS)
    page.locator(".memo-timesheet .tabulator-tableholder").focus()
    for key in ("Tab", "Shift+Tab"):
        seen = []
        for _ in range(6):
            page.keyboard.press(key)
            seen.append(page.evaluate(DEEPEST))
        assert not any(stop.startswith("BODY") for stop in seen) and len(set(seen)) > 3, (key, seen)


def test_six_ide_chips_wrap_on_a_phone_and_say_which_is_chosen(tmp_path, browser):
    """Found by an operator: with the six IDEs real imports give, the chips ran past a 390 px
    phone's edge (gemini cut, generic off-screen) and the page scrolled sideways; the chosen chip
    was told by its colour alone, and the date fields had no name for a screen reader."""
    vault = tmp_path / "vault"
    for n, ide in enumerate(("claude-code", "codex", "cursor", "gemini", "copilot", "generic")):
        memo("prompt", "record", "--project", "web", "--session-id", f"s{n}", "--ide", ide, "--body", f"turn of {ide}",
             vault=vault, cwd=tmp_path)
    config = tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n', encoding="utf-8")
    server = serve_with_config(vault, config)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        page.goto(server.base + "/")
        page.wait_for_selector(".memo-prompts-table .tabulator-row", timeout=60_000)
        chips = page.locator(".memo-ide-chips").get_by_role("button")
        expect(chips).to_have_count(7, timeout=WAIT_MS)  # All IDEs and the six
        edges = [box["x"] + box["width"] for box in (chips.nth(k).bounding_box() for k in range(7))]
        assert max(edges) <= 390, edges
        assert page.evaluate("document.documentElement.scrollWidth") <= 430
        chips.filter(has_text="gemini").click()
        expect(page.locator(".memo-ide-chips").get_by_role("button", name="gemini", pressed=True)).to_have_count(
            1, timeout=WAIT_MS)
        expect(page.get_by_role("textbox", name="Since")).to_have_count(1, timeout=WAIT_MS)
    finally:
        context.close()
        server.stop()
