"""Where the dashboard lives and how the layers see it (STYLE: layout, imports point one way):
dashboards/ at the top of the repository is ``memo_analytics.dashboards`` once installed, and
the import contract (``lint-imports``) reads it as the top-level package ``dashboards`` (grimp
scans the source folders, not the installed mapping). Its PDF downloads render off the server's
event loop."""

from __future__ import annotations

import ast
import asyncio
import inspect
import threading
import tomllib
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import grimp
import pytest

from memo_analytics.dashboard_data import DashboardData

REPO = Path(__file__).resolve().parents[3]
LINTER = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def test_the_import_contract_reads_every_dashboard_module_and_its_imports(monkeypatch):
    assert "dashboards" in LINTER["root_packages"]
    (layers,) = [[{name.strip() for name in layer.split("|")} for layer in c["layers"]]
                 for c in LINTER["contracts"] if c["name"] == "layers point one way"]
    level = {name: n for n, layer in enumerate(layers) for name in layer}
    assert level["memo_analytics.interfaces"] < level["dashboards"] < level["memo_analytics.dashboard_data"] \
        < level["memo_analytics.actions"]
    monkeypatch.syspath_prepend(str(REPO))  # lint-imports runs in the repository, which is on its path
    graph = grimp.build_graph(*LINTER["root_packages"], cache_dir=None)
    modules = {p.relative_to(REPO).with_suffix("").as_posix().replace("/", ".")
               for p in (REPO / "dashboards").glob("*.py") if p.name != "__init__.py"}
    assert modules <= graph.modules
    assert {"memo_analytics.dashboard_data", "memo_analytics.services.store"} <= \
        graph.find_modules_directly_imported_by("dashboards.app")


def _imported(path: Path) -> set[str]:
    """The absolute names of the modules ``path`` (a module of memo_analytics/) imports."""
    package = path.relative_to(REPO).with_suffix("").parts[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = list(package[:len(package) - node.level + 1]) if node.level else []
            names.add(".".join([*base, *([node.module] if node.module else [])]))
    return names


def test_inside_the_package_only_memo_serve_imports_the_dashboard():
    # grimp cannot see an import of memo_analytics.dashboards from inside the package (in the source
    # tree that name is dashboards/): this keeps the layers true in that direction
    importers = sorted(path.relative_to(REPO).as_posix() for path in (REPO / "memo_analytics").rglob("*.py")
                       if any(name == "memo_analytics.dashboards" or name.startswith("memo_analytics.dashboards.")
                              for name in _imported(path)))
    assert importers == ["memo_analytics/interfaces/server.py"]


def test_pdf_downloads_render_off_the_event_loop(store):
    from memo_analytics.dashboards.activity_view import ActivityView

    threads: list[str] = []

    def render(report) -> bytes:
        threads.append(threading.current_thread().name)
        return b"%PDF-" + str(report.total_billable_hours).encode()

    data = DashboardData(store)
    view = SimpleNamespace(report=data.activity(None, None, None), data=SimpleNamespace(timesheet_pdf=render,
                                                                                        invoice_pdf=render),
                           _changed=lambda _event: None, invoice=SimpleNamespace(disabled=False))
    view._pdf = partial(ActivityView._pdf, view)
    for callback in (ActivityView._timesheet_pdf, ActivityView._invoice_pdf):  # the download buttons' callbacks
        assert inspect.iscoroutinefunction(callback)  # Panel awaits them on the event loop
        assert asyncio.run(callback(view)).read() == b"%PDF-0.0"
    assert len(threads) == 2 and all(name.startswith("memo-pdf") for name in threads)


# Panel 1.9's notices for 2.0 (button_type …) and pandas 3's about Panel's own calls: the libraries' business
@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_a_refused_period_leaves_nothing_of_the_last_one_to_read_or_download(store):
    """Typed `04/12/2026` as Since: the error showed above the all-time chart and table, and the
    Timesheet PDF button still downloaded the all-time report."""
    from memo_analytics.dashboards.activity_view import ActivityView
    from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
    from memo_analytics.services.sessions import end_session, start_session

    start_session(store, StartSessionRequest(session_id="s1", project="web", client="Acme",
                                             start_time="2026-03-02T09:00:00Z"))
    end_session(store, EndSessionRequest(session_id="s1", project="web", until="2026-03-02T10:00:00Z"))
    view = ActivityView(DashboardData(store))
    assert view.report is not None and view.chart.visible and not view.timesheet.disabled and len(view.sheet.value) == 1
    # the minutes a row bills are headed as the PDF heads them (a freelancer read "Duration 1:15"
    # beside a 67-minute span)
    assert list(view.sheet.value.columns)[-2:] == ["Billed", "Hours"] and ">Billed<" in view.by_client.object
    view.period.value = "custom"
    view.since.value = "2026-12-04T13:00"  # the field takes a day: the message offered a time (an operator)
    assert "Invalid since date: &#x27;2026-12-04T13:00&#x27; (give a day as YYYY-MM-DD)" in view.summary.object, \
        view.summary.object
    view.since.value = "04/12/2026"
    assert "Invalid since date" in view.summary.object and view.report is None
    assert (view.chart.visible, view.by_client.object, len(view.sheet.value)) == (False, "", 0)
    assert view.timesheet.disabled and view.invoice.disabled and view.issue.disabled
    view.since.value, view.until.value = "2026-03-01", "2026-03-31"  # a period again: all of it is back
    assert view.report is not None and view.chart.visible and not view.timesheet.disabled
    assert view.timesheet.filename == "timesheet-2026-03-01_2026-03-31.pdf"
    # the chart spans the period chosen, not only the days with billed time
    x_range = view.chart.object.x_range
    assert (x_range.start.date().isoformat(), x_range.end.date().isoformat()) == ("2026-03-01", "2026-04-01")  # the whole days
    view.period.value = "all"
    assert view.timesheet.filename == "timesheet-all-time.pdf"
    # found by a newcomer: the greyed fields kept the custom days of before beside an Issue of this month
    assert (view.since.value, view.until.value, view.since.disabled) == ("", "", True)
    view.period.value = "this-month"
    first, last = view.bounds()
    assert (view.since.value, view.until.value) == (first.isoformat(), last.isoformat())
    view.period.value = "custom"  # the days of the period before, to change
    assert (view.since.value, view.until.value, view.since.disabled) == (first.isoformat(), last.isoformat(), False)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_the_prompts_table_says_whose_clock_and_internal_for_no_client(store):
    """The "When" column had no zone (a daemon in UTC and a laptop in Berlin showed one turn an
    hour apart), and a turn without a client had a blank cell where the drawer said internal."""
    from memo_analytics.dashboards.prompts_view import PromptsView
    from memo_analytics.services.prompts import record_prompt
    from memo_analytics.services.requests import RecordPromptRequest

    record_prompt(store, RecordPromptRequest(body="tidy the cart", project="web", created="2026-03-02T09:00:00Z"))
    view = PromptsView(DashboardData(store))
    assert view.table.titles["When"] == f"When ({store.settings.timezone})"
    assert view.table.value["Client"].tolist() == ["internal"]


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_the_open_drawer_and_the_clock_of_the_prompts_table_follow_the_vault(store):
    """Found by an operator: after `memo session edit` the open drawer kept the session's old client
    through the periodic refresh and ↻ (the row behind it had the new one), and after the config's
    time zone changed the "When" column still named the old zone over times in the new."""
    from memo_analytics.dashboards.prompts_view import PromptsView
    from memo_analytics.services.prompts import record_prompt
    from memo_analytics.services.requests import EditSessionRequest, RecordPromptRequest, StartSessionRequest
    from memo_analytics.services.session_edit import edit_session
    from memo_analytics.services.sessions import start_session

    start_session(store, StartSessionRequest(session_id="s1", project="web", client="Acme",
                                             start_time="2026-03-02T08:55:00Z"))
    record_prompt(store, RecordPromptRequest(body="tidy the cart", project="web", session_id="s1",
                                             created="2026-03-02T09:00:00Z"))
    view = PromptsView(DashboardData(store))
    view.open("prompt-s1-t1", "web")
    assert "Acme" in view.drawer_title.object
    edit_session(store, EditSessionRequest(session_id="s1", project="web", client="Globex"))
    store.reconfigure(store.settings.model_copy(update={"timezone": "America/New_York"}))
    view.follow()
    assert "Globex" in view.drawer_title.object and view.drawer.visible
    assert view.table.titles["When"] == "When (America/New_York)"
    assert view.table.value["When"].tolist() == ["2026-03-02 04:00"]


def test_a_days_bar_stands_on_that_day_and_small_hours_keep_two_places():
    """Found by a new user: the bar of 5 December spanned 14:00 of the 4th to 10:00 of the 5th (it
    was centred on midnight), and every y tick of a day of 0.02 h read "0.0"."""
    from datetime import datetime, timedelta

    from memo_analytics.dashboards.activity_view import hours_chart

    plot = hours_chart({"2026-12-05": {"billableHours": 0.02}})
    [bars] = plot.renderers
    [x] = bars.data_source.data["x"]
    assert x == datetime(2026, 12, 5, 12) and bars.glyph.width == timedelta(hours=20).total_seconds() * 1000  # 02–22 h
    assert plot.yaxis[0].formatter.format == "0.00"
    assert hours_chart({"2026-12-05": {"billableHours": 7.5}}).yaxis[0].formatter.format == "0.0"


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_a_download_reads_the_vault_at_the_click_and_says_why_there_is_none(store):
    """Found by an operator: a page left open downloaded the timesheet and draft of when its
    filter last changed (1.83 h where the issue a moment later billed 2.58 h), and a draft whose
    sessions were invoiced since gave no file and no word. The click reads the vault again (the
    figures on screen with it); no draft to give is said on the page."""
    from pypdf import PdfReader

    from memo_analytics.dashboards.activity_view import ActivityView
    from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
    from memo_analytics.services.sessions import end_session, start_session

    start_session(store, StartSessionRequest(session_id="s1", project="web", client="Acme",
                                             start_time="2026-03-02T09:00:00Z"))
    end_session(store, EndSessionRequest(session_id="s1", project="web", until="2026-03-02T10:00:00Z"))
    view = ActivityView(DashboardData(store))
    assert view.report.total_billable_hours == 1.0
    start_session(store, StartSessionRequest(session_id="s2", project="web", client="Acme",
                                             start_time="2026-03-03T09:00:00Z"))
    end_session(store, EndSessionRequest(session_id="s2", project="web", until="2026-03-03T10:00:00Z"))
    pdf = asyncio.run(ActivityView._timesheet_pdf(view))
    text = " ".join(page.extract_text() for page in PdfReader(pdf).pages)
    assert "Total billable hours: 2.00" in " ".join(text.split())
    assert view.report.total_billable_hours == 2.0 and "2.00" in view.summary.object
    # a client filed since the page opened is in the client list at the next read (no reload)
    start_session(store, StartSessionRequest(session_id="s3", project="api", client="Initech",
                                             start_time="2026-03-04T09:00:00Z"))
    end_session(store, EndSessionRequest(session_id="s3", project="api", until="2026-03-04T10:00:00Z"))
    assert "Initech" not in view.client.options
    asyncio.run(ActivityView._timesheet_pdf(view))
    assert "Initech" in view.client.options and view.client.value == "All clients"
    # Acme has no rate here: no draft to give, and the page says why
    assert asyncio.run(ActivityView._invoice_pdf(view)) is None
    assert view.invoice_note.visible and "a draft needs billing terms for Acme" in view.invoice_note.object


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_the_prompts_tab_follows_new_turns_at_the_digests_refresh(store):
    """Found by an operator keeping the dashboard open: the Prompts table never showed the turns
    of a running session recorded since the page opened (its ↻ refreshed the digest only), nor a
    project first seen since in its Project list. ↻ (and the periodic refresh) show them."""
    import panel as pn

    from memo_analytics.dashboards.app import create_app
    from memo_analytics.services.prompts import record_prompt
    from memo_analytics.services.requests import RecordPromptRequest

    record_prompt(store, RecordPromptRequest(body="tidy the cart", project="web", created="2026-03-02T09:00:00Z"))
    app = create_app(store)
    [table] = [t for t in app.select(pn.widgets.Tabulator) if "memo-prompts-table" in t.css_classes]
    [refresh] = [b for b in app.select(pn.widgets.Button) if "memo-digest-refresh" in b.css_classes]
    [project] = [s for s in app.select(pn.widgets.Select) if "memo-project" in s.css_classes]
    assert table.value["Prompt"].tolist() == ["tidy the cart"]
    record_prompt(store, RecordPromptRequest(body="price the basket", project="shop", created="2026-03-02T10:00:00Z"))
    unchanged = table.value
    assert table.value["Prompt"].tolist() == ["tidy the cart"]
    refresh.clicks += 1
    assert table.value["Prompt"].tolist() == ["price the basket", "tidy the cart"]
    assert "shop" in project.options
    refresh.clicks += 1  # nothing new: the rows are the same object, left as they are
    assert table.value is not unchanged and table.value["Prompt"].tolist() == ["price the basket", "tidy the cart"]
    same = table.value
    refresh.clicks += 1
    assert table.value is same


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_an_issued_invoice_is_said_above_the_note_its_period_has_nothing_left(store):
    """Found by a new user: after "Issue it" the amber "Nothing to invoice … already invoiced" of
    the re-read period stood above the green "Issued invoice …": it read as if the issue failed."""
    from memo_analytics.dashboards.activity_view import ActivityView

    view = ActivityView(DashboardData(store))
    shown = list(view.layout.objects)
    assert shown.index(view.issued) < shown.index(view.invoice_note)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_the_activity_tab_follows_new_work_and_its_question_says_what_the_issue_bills(tmp_path):
    """Found by a new user: the Activity tab kept "0 open sessions" while the digest above it
    listed one; its "Issue a numbered invoice …?" named no figure — a period partly invoiced was
    issued for 0.50 h where the page showed 1.25 — nor the open session it left off; and "Issued
    invoice … for Acme" stayed on screen over another client's figures."""
    import panel as pn

    from memo_analytics.config import Settings
    from memo_analytics.dashboards.activity_view import ActivityView
    from memo_analytics.dashboards.app import create_app
    from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
    from memo_analytics.services.sessions import end_session, start_session
    from memo_analytics.services.store import VaultStore

    billed = VaultStore(Settings(vault_root=tmp_path / "billed", timezone="UTC",
                                 clients={"Acme": {"hourlyRate": "100", "currency": "EUR"}}))
    try:
        start_session(billed, StartSessionRequest(session_id="s1", project="web", client="Acme",
                                                  start_time="2026-03-02T09:00:00Z"))
        end_session(billed, EndSessionRequest(session_id="s1", project="web", until="2026-03-02T10:30:00Z"))
        app = create_app(billed)
        [tabs] = app.select(pn.Tabs)
        tabs.active = 1  # the Activity tab is built when opened: its figures follow the digest's ↻ from then on
        [refresh] = [b for b in app.select(pn.widgets.Button) if "memo-digest-refresh" in b.css_classes]
        [cards] = [p for p in tabs.select(pn.pane.HTML) if "Open sessions" in str(p.object)]
        shown = str(cards.object)
        start_session(billed, StartSessionRequest(session_id="s2", project="web", client="Acme",
                                                  start_time="2026-03-03T09:00:00Z"))
        assert str(cards.object) == shown
        refresh.clicks += 1
        assert str(cards.object) != shown  # the open session, counted at the refresh

        view = ActivityView(DashboardData(billed))
        view.client.value, view.period.value = "Acme", "custom"
        view.since.value, view.until.value = "2026-03-01", "2026-03-31"
        view.issue.clicks += 1
        assert "for 2026-03-01 – 2026-03-31: 1.50 h, EUR 150.00 due (left off: 1 still open)?" in str(view.asking.object)
        view.issued.visible = True  # an issue said, then another client chosen: said no more
        view.client.value = "All clients"
        assert not view.issued.visible
    finally:
        billed.close()


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_a_refused_issue_is_not_said_past_the_next_refresh(store):
    """Found by an operator: "Not issued: …" stayed on the Activity tab after its cause was fixed
    (the work filed under the client) and the figures had changed."""
    from memo_analytics.dashboards.activity_view import ActivityView
    from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
    from memo_analytics.services.sessions import end_session, start_session

    start_session(store, StartSessionRequest(session_id="s1", project="web", client="Acme",
                                             start_time="2026-03-02T09:00:00Z"))
    end_session(store, EndSessionRequest(session_id="s1", project="web", until="2026-03-02T10:00:00Z"))
    view = ActivityView(DashboardData(store))
    view.period.value = "custom"
    view.since.value, view.until.value = "2026-03-01", "2026-03-31"
    view.client.value = "Acme"
    view._asked = ("Acme", *view.bounds(), "")
    view._issue(None)  # Acme has no terms: refused
    assert view.issued.visible and "Not issued" in view.issued.object
    view.follow()
    assert not view.issued.visible


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning",
                            "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_issue_it_issues_only_the_figures_the_question_showed(tmp_path):
    """Found by an operator: asked "1.33 h, EUR 158.27 due?", the session edited meanwhile on the
    CLI, "Issue it" issued EUR 396.27 — a numbered invoice only a credit note takes back. Figures
    that changed are asked about again, nothing issued; the figures asked about are issued."""
    from memo_analytics.config import Settings
    from memo_analytics.dashboards.activity_view import ActivityView
    from memo_analytics.services.requests import EditSessionRequest, EndSessionRequest, StartSessionRequest
    from memo_analytics.services.session_edit import edit_session
    from memo_analytics.services.sessions import end_session, start_session
    from memo_analytics.services.store import VaultStore

    issuer = {"name": "Ana Dev", "address": ["Hauptstraße 1"], "postcode": "10115", "city": "Berlin",
              "country": "DE", "vatId": "DE136695976", "iban": "DE89 3704 0044 0532 0130 00"}
    billed = VaultStore(Settings(vault_root=tmp_path / "billed", timezone="UTC", invoice=issuer,
                                 clients={"Globex": {"hourlyRate": "100", "currency": "EUR", "taxRate": "19",
                                                     "address": ["1 Main St"], "city": "Köln", "postcode": "50667",
                                                     "country": "DE"}}))
    try:
        start_session(billed, StartSessionRequest(session_id="glx", project="shop", client="Globex",
                                                  start_time="2026-12-01T08:00:00Z"))
        end_session(billed, EndSessionRequest(session_id="glx", project="shop", until="2026-12-01T09:20:00Z"))
        view = ActivityView(DashboardData(billed))
        view.period.value = "custom"
        view.since.value, view.until.value = "2026-12-01", "2026-12-07"
        view.client.value = "Globex"
        view.issue.clicks += 1
        assert "1.33 h, EUR 158.27 due?" in str(view.asking.object)
        edit_session(billed, EditSessionRequest(session_id="glx", project="shop", minutes=200))
        view.confirm.clicks += 1
        assert not (tmp_path / "billed" / "invoices").exists() or not list((tmp_path / "billed" / "invoices").glob("*.md"))
        assert view.question.visible
        assert str(view.asking.object).count("The figures changed since you were asked. Issue a numbered invoice to "
                                             "Globex for 2026-12-01 – 2026-12-07: 3.33 h, EUR 396.27 due?") == 1
        view.confirm.clicks += 1  # the figures asked about now
        assert "Issued invoice 2026-0001 for Globex: EUR 396.27" in str(view.issued.object)
    finally:
        billed.close()
