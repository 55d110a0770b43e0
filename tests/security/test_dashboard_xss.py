"""Every surface of the Panel dashboard shows stored text as text (issue 11, point 2).

A hostile payload is stored in each field a record or the config can carry — client,
project, summary, task slug, model, agent, IDE, tags, linked paths, session and record ids
(slugs: only the characters ids allow), deliverable titles and URLs, hand-off next steps,
failed approaches, open questions, branch and owner, a prompt body, a prompt that becomes a
derived rule and a trap, the vault's folder name and a configured client — through the
product's own services. A real `memo serve` is then toured in Debian's Chromium: the digest
on top (hovering the apply button's tooltip), Prompts & Intent Stories with the drawer of
the hostile prompt, Activity & Invoicing with the timesheet grouped by client (hovering the
chart and a group header), a hostile client's timesheet download, and Derived Rules with a
hostile rule's evidence. After each step: nothing ran (``window.__xss`` unset, no dialog),
the live DOM — shadow roots included — holds no element made from stored text (no ``on*``
attribute, no ``javascript:`` URL, no form, iframe or payload script), and at the end every
payload was on screen as text. A screenshot per step is saved under tests/artifacts/."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from memo_analytics.config import Settings
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import (
    DeriveRulesRequest,
    EndSessionRequest,
    HandoffInput,
    RecordPromptRequest,
    StartSessionRequest,
)
from memo_analytics.services.rules import derive_rules
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.services.store import VaultStore
from tests.integration.test_dashboard import serve_with_config

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
WAIT_MS = 20_000

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")


def run(tag: str) -> str:
    """Script that leaves ``tag`` in ``window.__xss`` if it ever runs (no whitespace: it
    also fits in a URL)."""
    return f"window.__xss=(window.__xss||[]).concat('{tag}')"


#: One distinct payload per stored field.
PAYLOADS = {
    "client": f'<img src=x onerror="{run("client")}">Acme',
    "config client": f"Globex <script>{run('config-client')}</script>",
    "summary": f'<svg onload="{run("summary")}">Release the login fix',
    "model": f'"><b onmouseover="{run("model")}">gpt-x</b>',
    "agent": f'<form action="javascript:{run("agent")}"><input name=agent value=1></form>',
    "ide": f'<a href="javascript:{run("ide")}">ide-x</a>',
    "tag": "<img src=x onerror=alert('tag')>",
    "linked path": f"src/<svg onload={run('path')}>.py",
    "branch": f'<iframe src="javascript:{run("branch")}"></iframe>',
    "deliverable title": f"<script>{run('title')}</script>",
    "deliverable url": f"https://example.test/pull/7\"><img/src=x/onerror={run('pr-url')}>",
    "link deliverable url": f"javascript:{run('doc-url')}",
    "next step": f'<img src=x onerror="{run("next")}"> then deploy',
    "failed approach": f"<svg><script>{run('failed')}</script></svg>",
    "open question": f'"><b onmouseover={run("question")}>why?</b>',
    "hand-off branch": f"<img src=x onerror={run('handoff-branch')}>",
    "hand-off owner": f"<a href=javascript:{run('owner')}>ana</a>",
    "prompt": (f'Ship it <img src=x onerror="{run("body")}"> [docs](javascript:{run("link")}) '
               "<form action=https://evil.test/><input name=q></form>"),
    "rule": f"Always escape <svg onload={run('rule')}> before rendering.",
    "vault folder": f"vault-<svg onload={run('root')}>",
}
#: Ids must be safe slugs: the most an id can carry is a marker to find on screen.
SLUGS = {"project": "xss-project.1", "other project": "xss-other_1", "session id": "xss-session.1",
         "task slug": "xss_task-1", "stalled session id": "_xss-stalled.1_"}
#: A session of the configured client without a summary: the timesheet says "Work on <project>" for it
#: (its id is shown nowhere since; the project's is, above)
CONFIG_SESSION = "xss-config.1"
BODY_TURN = f"prompt-{SLUGS['session id']}-t1"


def _seed(vault: Path, now: datetime) -> None:
    """The hostile records, written through the services (as ``memo`` and the MCP tool do)."""
    store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
    try:
        project, sid = SLUGS["project"], SLUGS["session id"]
        start = now - timedelta(hours=8)
        start_session(store, StartSessionRequest(
            session_id=sid, project=project, client=PAYLOADS["client"], task_slug=SLUGS["task slug"],
            ide=PAYLOADS["ide"], model=PAYLOADS["model"], agent=PAYLOADS["agent"], branch=PAYLOADS["branch"],
            summary=PAYLOADS["summary"], start_time=start), now=start)
        record_prompt(store, RecordPromptRequest(
            session_id=sid, project=project, body=PAYLOADS["prompt"], tags=[PAYLOADS["tag"]],
            linked_paths=[PAYLOADS["linked path"]], created=start + timedelta(minutes=5)),
            now=start + timedelta(minutes=5))
        for n in (1, 2):  # said twice: a confident candidate, saved as a trap below
            moment = start + timedelta(minutes=10 * (n + 1))
            record_prompt(store, RecordPromptRequest(session_id=sid, project=project, body=PAYLOADS["rule"],
                                                     created=moment), now=moment)
        ended = now - timedelta(hours=6)  # the hand-off it leaves has waited six hours: listed in the digest
        end_session(store, EndSessionRequest(
            session_id=sid, project=project, until=ended,
            deliverables=[{"type": "pr", "url": PAYLOADS["deliverable url"], "title": PAYLOADS["deliverable title"]}],
            handoff=HandoffInput(next_steps=[PAYLOADS["next step"]], failed_approaches=[PAYLOADS["failed approach"]],
                                 open_questions=[PAYLOADS["open question"]], branch=PAYLOADS["hand-off branch"],
                                 owner=PAYLOADS["hand-off owner"])), now=ended)
        # a javascript: link no call takes (an http(s) URL only): written into the file by hand, or pulled
        from memo_analytics.domain.records import RecordKind

        meta, body = store.read(project, RecordKind.SESSION, f"session-{sid}")
        meta["deliverables"] = [*meta["deliverables"], {"type": "doc", "url": PAYLOADS["link deliverable url"]}]
        store.upsert(RecordKind.SESSION, meta, body)
        other = SLUGS["other project"]  # another project: its sessions never claim that hand-off
        config_start = now - timedelta(hours=5)
        start_session(store, StartSessionRequest(session_id=CONFIG_SESSION, project=other,
                                                 client=PAYLOADS["config client"], start_time=config_start),
                      now=config_start)
        config_end = config_start + timedelta(hours=1)
        end_session(store, EndSessionRequest(session_id=CONFIG_SESSION, project=other, until=config_end),
                    now=config_end)
        stalled = now - timedelta(hours=3)  # open, no turn: stalled, with a proposal (and its tooltip)
        start_session(store, StartSessionRequest(session_id=SLUGS["stalled session id"], project=other,
                                                 start_time=stalled), now=stalled)
        saved = derive_rules(store, DeriveRulesRequest(cross_project=True, save_traps=True))["savedTraps"]
        assert len(saved) == 1, saved
    finally:
        store.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("xss")
    vault = base / PAYLOADS["vault folder"]
    _seed(vault, datetime.now(timezone.utc))
    config = base / "config.toml"
    config.write_text(tomli_w.dumps({"timezone": "UTC", "clients": {
        PAYLOADS["config client"]: {"hourlyRate": "100.00", "currency": "EUR"}}}), encoding="utf-8")
    server = serve_with_config(vault, config)
    yield server, vault
    server.stop()


#: The whole live DOM, shadow roots included: what stored text would have become had it
#: been inserted as markup, and the text shown (text nodes of rendered elements).
PROBE = """() => {
    const injected = [], texts = [];
    const inert = new Set(['value', 'title', 'aria-label', 'placeholder', 'label', 'data-value', 'download']);
    const shown = (el) => {
        if (!el) return false;
        if (el.tagName === 'OPTION') el = el.closest('select') || el;
        return el.checkVisibility ? el.checkVisibility() : true;
    };
    const visit = (root) => {
        const parts = [];
        const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            const parent = node.parentElement;
            if (parent && !['SCRIPT', 'STYLE', 'TEMPLATE'].includes(parent.tagName) && shown(parent)) {
                parts.push(node.nodeValue);
            }
        }
        texts.push(parts.join(''));
        root.querySelectorAll('*').forEach(el => {
            const tag = el.tagName.toLowerCase();
            for (const a of el.attributes) {
                const name = a.name.toLowerCase();
                if (name.startsWith('on')) injected.push(`<${tag} ${name}>`);
                if (/^[\\s\\u0000-\\u001f]*javascript:/i.test(a.value)) {
                    injected.push(`<${tag} ${name}=javascript:…>`);
                }
                if (a.value.includes('__xss') && !inert.has(name)) injected.push(`<${tag} ${name}> holds a payload`);
            }
            if (['form', 'iframe', 'object', 'embed', 'frame'].includes(tag)) injected.push(`<${tag}>`);
            if (tag === 'input' && ['agent', 'q'].includes(el.getAttribute('name'))) {
                injected.push('<input> of a payload');
            }
            if (tag === 'img' && /(^|\\/)x$/.test(el.getAttribute('src') || '')) injected.push('<img src=x>');
            if (tag === 'script' && el.textContent.includes('__xss')) injected.push('<script> of a payload');
            if (el.shadowRoot) visit(el.shadowRoot);
        });
    };
    visit(document);
    return {injected, texts, xss: typeof window.__xss === 'undefined' ? null : window.__xss};
}"""


class Tour:
    """What the browser saw at each step."""

    def __init__(self) -> None:
        self.steps: dict[str, dict[str, Any]] = {}
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.download_name = ""
        self.group_headers: list[str] = []
        self.tooltip = ""

    def record(self, page, step: str) -> None:
        page.wait_for_timeout(400)  # let any handler that was inserted fire
        self.steps[step] = page.evaluate(PROBE)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"xss-{step}.png"), full_page=True)

    def texts(self) -> list[str]:
        return [text for seen in self.steps.values() for text in seen["texts"]]


def _hover_across(page, locator) -> None:
    box = locator.bounding_box()
    if box is None:
        return
    for i in range(1, 20):
        page.mouse.move(box["x"] + box["width"] * i / 20, box["y"] + box["height"] * 0.8)
        page.wait_for_timeout(30)


@pytest.fixture(scope="module")
def tour(served):
    server, _ = served
    seen = Tour()
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1500, "height": 1000}, accept_downloads=True)
        page = context.new_page()
        page.on("dialog", lambda dialog: (seen.dialogs.append(dialog.message), dialog.dismiss()))
        page.on("pageerror", lambda exc: seen.errors.append(str(exc)))
        page.goto(server.base + "/")
        page.wait_for_selector(".memo-prompts-table .tabulator-row", timeout=60_000)
        stalled = page.locator(".memo-digest-item", has_text="session stalled").filter(
            has_text=SLUGS["stalled session id"])
        expect(stalled).to_be_visible(timeout=WAIT_MS)
        seen.record(page, "prompts")

        # the digest on top: hover the proposal's apply button for its tooltip
        stalled.locator(".memo-digest-apply button").hover()
        tooltip = page.locator(".bk-tooltip-content, [class*='tooltip-content']").first
        try:
            tooltip.wait_for(state="visible", timeout=5_000)
            seen.tooltip = tooltip.inner_text()
        except playwright_api.TimeoutError:
            seen.tooltip = ""
        seen.record(page, "digest")

        # Prompts & Intent Stories: the hostile prompt's drawer
        for field in ("Model", "IDE", "Client", "Prompt"):
            page.locator(f".memo-prompts-table .tabulator-cell[tabulator-field='{field}']").first.hover()
        page.locator(".memo-prompts-table .tabulator-cell[tabulator-field='Prompt']", has_text="Ship it").first.click()
        drawer = page.locator(".memo-drawer")
        expect(drawer.locator(".memo-drawer-title")).to_contain_text(BODY_TURN, timeout=WAIT_MS)
        expect(drawer.locator(".memo-drawer-story")).to_contain_text("Hand-off left", timeout=WAIT_MS)
        drawer.locator(".memo-drawer-story .rendered").hover()
        seen.record(page, "prompt-drawer")
        page.locator(".memo-drawer-close button").click()

        # Activity & Invoicing: the timesheet grouped by client, the chart hovered
        page.locator(".bk-tab", has_text="Activity & Invoicing").click()
        groups = page.locator(".memo-timesheet .tabulator-group")
        expect(groups.first).to_be_visible(timeout=WAIT_MS)
        expect(page.locator(".memo-hours-chart")).to_be_visible(timeout=WAIT_MS)
        seen.group_headers = groups.all_inner_texts()
        groups.first.hover()
        _hover_across(page, page.locator(".memo-hours-chart canvas").first)
        seen.record(page, "activity")

        # one hostile client: its summary line, its invoice note, its timesheet's file name
        page.locator(".memo-act-client select").select_option(value=PAYLOADS["client"])
        expect(page.locator(".memo-activity-summary")).to_contain_text("client <img", timeout=WAIT_MS)
        with page.expect_download(timeout=60_000) as download:
            page.locator(".memo-timesheet-pdf button").click()
        seen.download_name = download.value.suggested_filename
        seen.record(page, "activity-client")

        # Derived Rules: the hostile rule and its evidence
        page.locator(".bk-tab", has_text="Derived Rules").click()
        expect(page.locator(".memo-rules-count")).to_be_visible(timeout=WAIT_MS)
        rule = page.locator(".memo-rules-table .tabulator-cell[tabulator-field='Rule']", has_text="Always escape")
        rule.first.click()
        expect(page.locator(".memo-rules-evidence")).to_contain_text("said 2×", timeout=WAIT_MS)
        page.locator(".memo-rules-evidence").hover()
        seen.record(page, "rules")
        context.close()
        browser.close()
    return seen


def test_no_stored_text_runs_in_any_tab(tour):
    assert {step: seen["xss"] for step, seen in tour.steps.items() if seen["xss"] is not None} == {}
    assert tour.dialogs == []
    assert tour.errors == []


@pytest.mark.parametrize("step", ["prompts", "digest", "prompt-drawer", "activity", "activity-client", "rules"])
def test_no_stored_text_becomes_markup(tour, step):
    assert tour.steps[step]["injected"] == []


@pytest.mark.parametrize("field", [*PAYLOADS, *SLUGS])
def test_every_stored_value_is_shown_as_text(tour, field):
    value = PAYLOADS.get(field) or SLUGS[field]
    assert any(value in text for text in tour.texts()), f"{field} is not shown: {value}"


def test_timesheet_group_headers_show_client_names_as_text(tour):
    headers = sorted(re.sub(r"\s+", " ", h).strip() for h in tour.group_headers)
    # the client's figures of the period (its sessions, its time), never the page's row count
    assert [h.split(" · ")[:2] for h in headers] == sorted([[f"Client: {PAYLOADS['client']}", "1 session"],
                                                            [f"Client: {PAYLOADS['config client']}", "1 session"]])


def test_the_proposal_tooltip_is_text(tour):
    assert tour.tooltip.startswith(f"end {SLUGS['stalled session id']} at its last activity")


def test_a_hostile_client_name_never_reaches_the_download_file_name(tour):
    assert re.fullmatch(r"timesheet-all-time_[A-Za-z0-9_-]+\.pdf", tour.download_name), tour.download_name
