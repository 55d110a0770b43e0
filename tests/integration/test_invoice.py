"""`memo report invoice` (SPEC §5.1, issue 4): the PDF's printed lines are hours × rate to the
cent, subtotals and totals are sums of the printed lines, one total per currency, the hours
equal `memo --json activity`; unpriced clients and broken user templates are refused with one
line and nothing written; a user's template folder overrides ours for both reports."""

from __future__ import annotations

import json
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from pypdf import PdfReader

from memo_analytics.config import Settings
from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.services.store import VaultStore

from .test_cli import memo, pdf_text

CJK_SUMMARY = "修复发票导出的编码问题，日本語の請求書、한국어 송장"
CONFIG = """
templatesDir = "{templates}"

[clients."Acme Corp"]
hourlyRate = "120.00"
currency = "EUR"

[clients.globex]
hourlyRate = "95.55"
currency = "USD"

[clients.Initech]
hourlyRate = "9000"
currency = "JPY"
"""
LINE = re.compile(r"(?:^| )(\d+\.\d{2}) ([\d,]+(?:\.\d+)?) ([\d,]+(?:\.\d+)?)$", re.MULTILINE)
SUBTOTAL = re.compile(r"^Subtotal (.+) \((\d+) sessions?\) (\d+\.\d{2}) ([A-Z]{3}) ([\d,]+(?:\.\d+)?)$", re.MULTILINE)
# "All clients in …" on a draft of several clients (no amount is due by anyone), "Total due in …" on one client's
TOTAL = re.compile(r"^(?:Total due|All clients) in ([A-Z]{3}) (\d+\.\d{2}) h ([A-Z]{3}) ([\d,]+(?:\.\d+)?)$",
                   re.MULTILINE)
MINOR = {"EUR": Decimal("0.01"), "USD": Decimal("0.01"), "JPY": Decimal("1")}


def _session(store, sid, start, minutes, client, project="web", task=None, summary=None, pr=None, billable=True):
    start_session(store, StartSessionRequest(session_id=sid, project=project, client=client, task_slug=task,
                                             billable=billable, start_time=start))
    if minutes is not None:
        end = f"{start[:11]}{int(start[11:13]) + minutes // 60:02d}:{int(start[14:16]) + minutes % 60:02d}:00Z"
        end_session(store, EndSessionRequest(session_id=sid, until=end, summary=summary, pr=pr))


@pytest.fixture
def vault(tmp_path) -> Path:
    """Three clients in three currencies; shares of hours that round (20-minute sessions);
    an open, a non-billable and a CJK-summarised session."""
    root = tmp_path / "vault"
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    _session(store, "a1", "2026-03-02T09:00:00Z", 20, "Acme Corp", task="invoice-export", summary=CJK_SUMMARY)
    _session(store, "a2", "2026-03-02T10:00:00Z", 20, "acme corp", project="api", task="billing",
             pr="https://github.com/o/r/pull/7")
    _session(store, "a3", "2026-03-03T09:00:00Z", 20, "Acme Corp", task="invoice-export")
    _session(store, "a4", "2026-03-04T09:00:00Z", 95, "Acme Corp", project="api", task="rates")
    _session(store, "g1", "2026-03-02T13:00:00Z", 10, "Globex", project="etl", task="orders")
    _session(store, "g2", "2026-03-05T13:00:00Z", 50, "Globex", project="etl", task="sync")
    _session(store, "g3", "2026-03-06T13:00:00Z", 7, "Globex", project="etl", task="hotfix")
    _session(store, "i1", "2026-03-03T14:00:00Z", 25, "Initech", project="mobile", task="login")
    _session(store, "nb", "2026-03-04T14:00:00Z", 300, "Acme Corp", task="training", billable=False)
    _session(store, "op", "2026-03-06T09:00:00Z", None, "Acme Corp", task="open-work")
    store.close()
    return root


@pytest.fixture
def config(tmp_path) -> dict:
    templates = tmp_path / "templates"
    templates.mkdir()
    path = tmp_path / "config.toml"
    path.write_text(CONFIG.format(templates=templates), encoding="utf-8")
    return {"MEMO_CONFIG": str(path)}


def _money(text: str) -> Decimal:
    return Decimal(text.replace(",", ""))


def _sections(text: str) -> list[tuple[str, str, str]]:
    """(client, currency, section text) in order, from the ``Client: <name> · <CUR> · ...`` headings."""
    parts = re.split(r"^Client: (.+?) · ([A-Z]{3}) · .*$", text, flags=re.MULTILINE)
    return [(parts[i], parts[i + 1], parts[i + 2]) for i in range(1, len(parts) - 1, 3)]


def check_invoice_arithmetic(text: str) -> dict[str, tuple[Decimal, Decimal]]:
    """Every printed line is hours × rate; every subtotal the sum of its lines; every total the
    sum of its currency's subtotals. Returns ``{currency: (hours, amount)}``."""
    subtotals: dict[str, list[tuple[Decimal, Decimal]]] = {}
    for client, currency, body in _sections(text):
        lines = LINE.findall(body)
        assert lines, client
        for hours, rate, amount in lines:
            expected = (Decimal(hours) * _money(rate)).quantize(MINOR[currency], ROUND_HALF_UP)
            assert _money(amount) == expected, (client, hours, rate, amount)
            if currency == "JPY":
                assert "." not in amount and "." not in rate
        (sub,) = SUBTOTAL.findall(body)
        assert sub[0] == client and sub[3] == currency
        assert Decimal(sub[2]) == sum(Decimal(h) for h, _, _ in lines)
        assert _money(sub[4]) == sum(_money(a) for _, _, a in lines)
        subtotals.setdefault(currency, []).append((Decimal(sub[2]), _money(sub[4])))
    totals = {cur: (Decimal(h), _money(a)) for cur, h, cur2, a in TOTAL.findall(text) if cur == cur2}
    assert set(totals) == set(subtotals)
    for currency, parts in subtotals.items():
        assert totals[currency] == (sum(h for h, _ in parts), sum(a for _, a in parts)), currency
    return totals


@pytest.mark.parametrize("lines", ["project", "session"])
def test_printed_lines_are_hours_times_rate_and_totals_are_their_sums(vault, config, tmp_path, lines):
    pdf = tmp_path / "invoice.pdf"
    result = json.loads(memo("--json", "report", "invoice", "--all", "--since", "2026-03-01", "--until", "2026-03-31",
                             "--tz", "UTC", "--lines", lines, "-o", str(pdf), vault=vault, env=config).stdout)
    activity = json.loads(memo("--json", "activity", "--all", "--since", "2026-03-01", "--until", "2026-03-31",
                               "--tz", "UTC", vault=vault, env=config).stdout)
    text = pdf_text(pdf)
    totals = check_invoice_arithmetic(text)
    # hours: the invoice's equal the activity report's, per client and in all
    assert f"Total billable hours: {activity['totalBillableHours']:.2f}" in text
    assert result["totalBillableHours"] == activity["totalBillableHours"] == 4.12
    by_currency = {"EUR": ["Acme Corp"], "USD": ["Globex"], "JPY": ["Initech"]}
    for currency, clients in by_currency.items():
        assert totals[currency][0] == sum(Decimal(str(activity["byClient"][c]["billableHours"])) for c in clients)
        assert result["totals"][currency]["amount"] == str(totals[currency][1])
        # under --json the printed lines themselves (a script got their count only)
        items = [i for i in result["items"] if i["currency"] == currency]
        assert sum(Decimal(i["amount"]) for i in items) == totals[currency][1]
        assert all(Decimal(i["amount"]) == (Decimal(i["hours"]) * Decimal(i["rate"])).quantize(
            MINOR[currency], ROUND_HALF_UP) for i in items)
    assert len(result["items"]) == result["lines"]
    # Acme: 20+20+20+95 min = 2.58 h; Globex 67 min = 1.12 h; Initech 25 min = 0.42 h × 9000 = 3780 JPY
    assert totals["JPY"] == (Decimal("0.42"), Decimal("3780"))
    assert totals["USD"][0] == Decimal("1.12") and totals["EUR"][0] == Decimal("2.58")
    assert "Draft invoice" in text and "1 open session is not billed" in text
    assert "Issued" not in text  # a draft is not issued (unless --issued dates it)
    assert "Amounts in different currencies are totalled separately and never added together." in text
    assert "training" not in text  # not billable


def test_the_xlsx_shows_each_currencys_amounts_as_the_pdf_prints_them(vault, config, tmp_path):
    """Found by an attacker: the bookkeeper's XLSX showed a JPY amount as 3,780.00 and its rate as
    9,000.00 (the PDF: 3,780 and 9,000). Rates and amounts take their currency's decimals; hours
    keep two."""
    from openpyxl import load_workbook

    wrote = memo("report", "invoice", "--all", "--since", "2026-03-01", "--until", "2026-03-31", "--tz", "UTC",
                 "-o", str(tmp_path / "i.xlsx"), vault=vault, env=config)
    # found by a freelancer: the line said "EUR 831.25" — the net, read as the amount due
    assert re.search(r"EUR net [\d,.]+, total [\d,.]+", wrote.stdout), wrote.stdout
    sheet = load_workbook(tmp_path / "i.xlsx").active
    header = [c.value for c in sheet[1]]
    shown = {(row[header.index("currency")].value, header[n]): cell.number_format
             for row in sheet.iter_rows(min_row=2) if row[header.index("currency")].value
             for n, cell in enumerate(row) if header[n] in ("hours", "rate", "amount") and cell.value is not None}
    assert shown[("JPY", "amount")] == shown[("JPY", "rate")] == "#,##0"
    assert shown[("EUR", "amount")] == shown[("USD", "rate")] == "#,##0.00"
    assert shown[("JPY", "hours")] == shown[("EUR", "hours")] == "#,##0.00"


def test_session_lines_match_the_timesheet_rows_and_print_cjk_in_a_cjk_font(vault, config, tmp_path):
    pdf = tmp_path / "invoice.pdf"
    memo("report", "invoice", "--all", "--force", "--client", "ACME CORP", "--tz", "UTC", "--lines", "session",
         "--issued", "2026-04-01", "-o", str(pdf), vault=vault, env=config)
    text = pdf_text(pdf)
    # the summary wraps inside its cell: compare without line breaks
    assert CJK_SUMMARY in text.replace("\n", "")
    fonts = {str(f["/BaseFont"]) for page in PdfReader(str(pdf)).pages
             for f in page["/Resources"]["/Font"].values()}
    assert any("CJK" in name for name in fonts), fonts
    assert "Draft invoice" in text and "Issued 2026-04-01" in text
    numbered = memo("report", "invoice", "--all", "--number", "2026-0042", "-o", str(tmp_path / "n.pdf"), vault=vault,
                    env=config, check=False)
    assert numbered.returncode == 1 and "a draft has no number; issue a numbered invoice with `memo invoice issue`" \
        in numbered.stderr and not (tmp_path / "n.pdf").exists()
    # sessions of 20, 20, 20 and 95 minutes share Acme's 155 minutes = 2.58 h by largest remainder
    assert LINE.findall(text) == [("0.34", "120.00", "40.80"), ("0.33", "120.00", "39.60"),
                                  ("0.33", "120.00", "39.60"), ("1.58", "120.00", "189.60")]
    totals = check_invoice_arithmetic(text)
    assert totals == {"EUR": (Decimal("2.58"), Decimal("309.60"))}
    assert "https://github.com/o/r/pull/7" in text.replace("\n", "")


def test_a_client_without_terms_is_refused_with_one_line_and_nothing_is_written(vault, config, tmp_path):
    store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
    _session(store, "x1", "2026-03-09T09:00:00Z", 30, None)       # internal
    _session(store, "u1", "2026-03-09T11:00:00Z", 30, "Umbrella")
    _session(store, "u0", "2026-03-09T12:00:00Z", 0, "Umbrella")  # of 0 minutes: never billed
    _session(store, "u2", "2026-03-09T13:00:00Z", None, "Umbrella")  # still open
    store.close()
    pdf = tmp_path / "invoice.pdf"
    pdf.write_bytes(b"previous invoice")
    proc = memo("report", "invoice", "--all", "--force", "-o", str(pdf), vault=vault, env=config, check=False)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.strip() == (
        f"error: Invalid clients.\"Umbrella\".hourlyRate: no billing terms for clients 'internal', 'Umbrella'; set "
        f"hourlyRate and currency under [clients.\"Umbrella\"] in {config['MEMO_CONFIG']}; 'internal' is work filed "
        "under no client: memo session edit SID --client NAME bills it to one, or invoice the other clients alone "
        "with --client (a draft leaves these off with --skip-unpriced)")
    only = memo("report", "invoice", "--all", "--client", "Umbrella", "-o", str(tmp_path / "u.pdf"), vault=vault,
                env=config, check=False)
    assert only.stderr.strip() == (  # --client given, no other client: no advice to give it
        f"error: Invalid clients.\"Umbrella\".hourlyRate: no billing terms for client 'Umbrella'; set hourlyRate and "
        f"currency under [clients.\"Umbrella\"] in {config['MEMO_CONFIG']}")
    assert pdf.read_bytes() == b"previous invoice"
    # the priced clients alone are invoiced
    memo("report", "invoice", "--all", "--force", "--client", "globex", "-o", str(pdf), vault=vault, env=config)
    assert check_invoice_arithmetic(pdf_text(pdf)) == {"USD": (Decimal("1.12"), Decimal("107.02"))}
    # … or every priced client at once, the others named (the API's skip_unpriced on the command line)
    skipped = memo("report", "invoice", "--all", "--force", "--skip-unpriced", "-o", str(pdf), vault=vault, env=config)
    assert "note: left off for want of billing terms: internal, Umbrella" in skipped.stderr
    assert check_invoice_arithmetic(pdf_text(pdf)) == {"EUR": (Decimal("2.58"), Decimal("309.60")),
                                                       "JPY": (Decimal("0.42"), Decimal("3780")),
                                                       "USD": (Decimal("1.12"), Decimal("107.02"))}
    # found by a billing person: a draft of several clients said "Total due in EUR", adding two clients' amounts
    several = " ".join(pdf_text(pdf).split())
    assert "Total due" not in several and "This draft holds 3 clients: each is invoiced on its own" in several
    as_json = json.loads(memo("--json", "report", "invoice", "--all", "--force", "--skip-unpriced", "-o",
                              str(tmp_path / "lines.csv"), vault=vault, env=config).stdout)
    assert as_json["unpricedClients"] == ["internal", "Umbrella"] and sorted(as_json["totals"]) == ["EUR", "JPY", "USD"]

    # an analyst's look (the invoicing notebook): the unpriced clients left off and named
    from memo_analytics.analytics.activity import report_for
    from memo_analytics.domain.errors import ReportError
    from memo_analytics.reports.invoice import UnpricedClientError, build_invoice
    from memo_analytics.services.requests import ActivityReportRequest

    from memo_analytics.config import load_config_toml

    terms = Settings(vault_root=vault, timezone="UTC", clients=load_config_toml(Path(config["MEMO_CONFIG"]))["clients"])
    store = VaultStore(terms)
    try:
        report = report_for(store, ActivityReportRequest(cross_project=True, tz="UTC"))
        billed = build_invoice(report, terms.billing_for, skip_unpriced=True)
        assert billed.unpriced_clients == ("internal", "Umbrella")
        assert [s.client for s in billed.sections] == ["Acme Corp", "Globex", "Initech"]  # as the sessions spell it
        # found by a new user: the sessions of a client skipped for want of terms were counted as left off
        # ("21 sessions of 0 minutes", 7 of them the invoiced client's)
        assert (billed.zero_minute_sessions, billed.open_sessions) == (0, 1)  # Acme's open one, not Umbrella's
        # no client priced: nothing to draft, said as such (found by a billing person: it said "no billing terms"
        # when every priced client's work was already invoiced)
        with pytest.raises(ReportError, match=r"^Nothing to invoice: no client with billing terms has billable work "
                                              r"left for these filters; .*'Umbrella' have no billing terms \(skipped\): set "
                                              r"hourlyRate and currency under \[clients\.\"Acme Corp\"\], .*"
                                              r"\[clients\.\"Umbrella\"\] in the config file$"):
            # what to set is said (a notebook stopped on it with no more than "skipped")
            build_invoice(report, lambda name: None, skip_unpriced=True)
        with pytest.raises(UnpricedClientError):  # without --skip-unpriced: the terms are what is missing
            build_invoice(report, lambda name: None)
    finally:
        store.close()


@pytest.mark.parametrize("args, starts", [
    (["--client", "nobody"], "error: Invalid client: no session and no [clients] entry of the config has the client "
                             "'nobody' (exact name, any case); clients known: Acme Corp, globex, Initech"),
    (["--client", "Acme Corp", "--since", "2027-01-01"],
     "error: Nothing to invoice: no billable session with a duration for these filters"),
    (["--lines", "day"], "error: Invalid lines: 'day' is not one of project, session"),
    (["--issued", "April 1st"], "error: Invalid issued date: 'April 1st' (give a date as YYYY-MM-DD or a time as YYYY-MM-DDTHH:MM, ISO 8601)"),
])
def test_refused_requests_write_nothing(vault, config, tmp_path, args, starts):
    pdf = tmp_path / "invoice.pdf"
    proc = memo("report", "invoice", "--all", "--force", "-o", str(pdf), *args, vault=vault, env=config, check=False)
    assert proc.returncode == 1 and proc.stderr.strip() == starts and not pdf.exists()


def test_the_config_templates_folder_overrides_both_reports_and_the_stylesheet(vault, config, tmp_path):
    folder = tmp_path / "templates"
    ours = Path(__file__).resolve().parents[2] / "report_templates"
    (folder / "invoice.html.j2").write_text(
        (ours / "invoice.html.j2").read_text(encoding="utf-8").replace("<h1>{{ title }}</h1>",
                                                                      "<h1>{{ title }}</h1><p>MARKER Hooli LLC</p>"),
        encoding="utf-8")
    (folder / "timesheet.html.j2").write_text(
        "<html><head><style>{{ stylesheet('report.css') }}</style></head><body><h1>MARKER timesheet</h1>"
        "<p>Total billable hours: {{ total_hours }}</p></body></html>", encoding="utf-8")
    (folder / "report.css").write_text('h1::after { content: " CSS-MARKER"; }', encoding="utf-8")
    invoice, timesheet = tmp_path / "i.pdf", tmp_path / "t.pdf"
    memo("report", "invoice", "--all", "--force", "--client", "globex", "-o", str(invoice), vault=vault, env=config)
    memo("report", "timesheet", "--all", "-o", str(timesheet), vault=vault, env=config)
    text = pdf_text(invoice)
    assert "MARKER Hooli LLC" in text and "Draft invoice CSS-MARKER" in text
    check_invoice_arithmetic(text)
    assert pdf_text(timesheet).splitlines()[:2] == ["MARKER timesheet CSS-MARKER", "Total billable hours: 4.12"]
    # --templates names another folder for one run; our templates fill in what it lacks
    other = tmp_path / "other"
    other.mkdir()
    memo("report", "invoice", "--all", "--force", "--client", "globex", "-o", str(invoice), "--templates", str(other),
         vault=vault, env=config)
    assert "MARKER" not in pdf_text(invoice) and "Client: Globex" in pdf_text(invoice)


@pytest.mark.parametrize("template, starts", [
    ("{% for x in %}", "error: Report template invoice.html.j2 line 1: "),
    ("{{ no_such_value }}", "error: Report template invoice.html.j2: 'no_such_value' is undefined"),
    ("{{ 1 / 0 }}", "error: Report template invoice.html.j2: ZeroDivisionError: division by zero"),
    ('<img src="logo.png">{{ title }}', "error: Report resource: Failed to load image at"),
    ("<style>{{ stylesheet('house.css') }}</style>", "error: Report template not found: house.css"),
])
def test_a_broken_user_template_is_one_line_and_writes_nothing(vault, config, tmp_path, template, starts):
    (tmp_path / "templates" / "invoice.html.j2").write_text(template, encoding="utf-8")
    pdf = tmp_path / "invoice.pdf"
    pdf.write_bytes(b"previous invoice")
    proc = memo("report", "invoice", "--all", "--force", "--client", "globex", "-o", str(pdf), vault=vault, env=config,
                check=False)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(starts), proc.stderr
    assert pdf.read_bytes() == b"previous invoice"


def test_a_missing_templates_folder_in_the_config_is_refused(vault, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(CONFIG.format(templates=tmp_path / "gone"), encoding="utf-8")
    for command in ("invoice", "timesheet"):
        proc = memo("report", command, "--all", "--force", "--client", "globex", "-o", str(tmp_path / "x.pdf"), vault=vault,
                    env={"MEMO_CONFIG": str(path)}, check=False)
        assert proc.returncode == 1 and proc.stderr.strip().startswith("error: Invalid templatesDir (")
        assert proc.stderr.strip().endswith(f"{tmp_path / 'gone'} is not a folder") and proc.stderr.count("\n") == 1
        assert not (tmp_path / "x.pdf").exists()


def test_the_draft_line_groups_thousands_as_the_pdf_does(vault, config, tmp_path):
    """Initech bills 0.42 h × 9000 = 3780 JPY: the PDF prints 3,780, the command line printed 3780."""
    said = memo("report", "invoice", "--all", "--since", "2026-03-01", "--until", "2026-03-31", "--tz", "UTC",
                "-o", str(tmp_path / "i.pdf"), vault=vault, env=config).stdout
    assert "JPY net 3,780, total 3,780" in said and "3,780" in pdf_text(tmp_path / "i.pdf")


def test_a_client_name_in_decomposed_unicode_is_the_configured_client(tmp_path):
    """Found by a billing person: "Café Müller" typed on a Mac (e + U+0301, NFD) was a new client
    beside the configured one that prints identically: the draft refused it for want of terms
    that were set. Every spelling of a name in Unicode is one client (NFC), in the config too."""
    import unicodedata

    composed, decomposed = "Café Müller SARL", unicodedata.normalize("NFD", "Café Müller SARL")
    assert composed != decomposed
    path = tmp_path / "config.toml"
    path.write_text(f'[clients."{decomposed}"]\nhourlyRate = "95.50"\ncurrency = "EUR"\n', encoding="utf-8")
    env = {"MEMO_CONFIG": str(path)}
    vault = tmp_path / "v"
    started = memo("session", "start", "s1", "--project", "p", "--client", decomposed, "--start-time",
                   "2026-02-03T09:00:00Z", vault=vault, env=env)
    assert "new client" not in started.stderr
    memo("session", "end", "s1", "--until", "2026-02-03T10:00:00Z", vault=vault, env=env)
    memo("session", "start", "s2", "--project", "p", "--client", composed, "--start-time",
         "2026-02-04T09:00:00Z", vault=vault, env=env)
    memo("session", "end", "s2", "--until", "2026-02-04T10:00:00Z", vault=vault, env=env)
    assert "client: Café Müller SARL\n" in (vault / "projects/p/sessions/session-s1.md").read_text(encoding="utf-8")
    report = json.loads(memo("--json", "activity", "--all", "--client", decomposed, vault=vault, env=env).stdout)
    assert report["totalSessions"] == 2 and list(report["byClient"]) == [composed]
    draft = memo("report", "invoice", "--all", "--since", "2026-02-01", "--until", "2026-02-28", vault=vault, env=env)
    assert "2.00 h × 95.50 = EUR 191.00" in draft.stdout


def test_config_show_names_the_file_as_the_source_of_a_client_spelled_in_nfd(tmp_path):
    """Found by a bookkeeper: every value of a client whose key the file spells in NFD was shown
    as ``[default]`` (the settings hold the name in NFC)."""
    import unicodedata

    path = tmp_path / "config.toml"
    path.write_text(f'[clients."{unicodedata.normalize("NFD", "Café Müller")}"]\nhourlyRate = "95.50"\n'
                    'currency = "EUR"\n', encoding="utf-8")
    shown = memo("config", "show", vault=tmp_path / "v", env={"MEMO_CONFIG": str(path)}).stdout
    [line] = [line for line in shown.splitlines() if "hourlyRate" in line and "Caf" in line]
    assert line.rstrip().endswith("[config file]"), line
