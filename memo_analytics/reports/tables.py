"""Timesheet rows and invoice lines for the bookkeeper: CSV and XLSX (SPEC §9, issue 15 point 4).

``-o`` picks the format by suffix: ``.pdf`` (the printed report), ``.csv`` or ``.xlsx``; any
other suffix is refused. The rows are the PDF's own (:func:`~.timesheet.timesheet_sections`,
:func:`~.invoice.build_invoice`), so they add up to the PDF's totals: minutes and hours of the
timesheet rows to its grand total, line amounts to each currency's net.

- **CSV**: one header row, one row per timesheet session or invoice line, UTF-8 with a
  byte-order mark (so spreadsheet programs read accents and CJK right), every field quoted
  (a reader that splits on ``;`` keeps ``a;=b`` one cell), numbers as plain decimals
  (``1.33``, ``159.60``), no total rows (sums are the reader's).
- **XLSX** (``openpyxl``): the same rows on a first sheet with numeric cells (two-decimal
  formats) and a filter on its header — nothing else on it, so a spreadsheet's or pandas'
  sum of a column is the total —, and the totals on a second sheet, ``Totals``, under the same
  column names (the grand total; per currency net, VAT and gross for invoices).
- **Text is data, never a formula**: a cell that would start with ``=``, ``+``, ``-``, ``@``,
  a tab or a carriage return (a prompt or summary a hostile transcript wrote) is written with a
  leading apostrophe in CSV and as a string cell in XLSX, so no spreadsheet evaluates it.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, Collection

from ..analytics.activity import ActivityReport
from ..domain.errors import ReportError
from ..domain.wire import printable_text
from ..vault.io import atomic_write_bytes
from .invoice import Invoice, minor_unit
from .render import check_output_path
from .timesheet import require_whole, timesheet_sections

#: The suffixes ``-o`` accepts for timesheets and invoices.
SUFFIXES = (".pdf", ".csv", ".xlsx")
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

TIMESHEET_COLUMNS = ("client", "date", "project", "sessionId", "owner", "description", "task", "summary", "start",
                     "end", "workedMinutes",
                     "billedMinutes", "billableHours", "note", "deliverables", "startTime", "endTime")
INVOICE_COLUMNS = ("client", "currency", "date", "from", "to", "project", "description", "sessions", "durationMinutes",
                   "hours", "rate", "amount")


def output_format(output: Path, forbidden: tuple[Path, ...] = ()) -> str:
    """``pdf``, ``csv`` or ``xlsx`` from ``output``'s suffix (case-insensitive), after the
    place checks of every report output (never inside ``forbidden``, the vault).

    Raises
    ------
    ReportError
        A path inside ``forbidden`` or a repository; any other suffix: ``Invalid output: …
        must end with .pdf, .csv or .xlsx``.
    """
    if forbidden:
        check_output_path(output, forbidden, suffixes=(), overwrite=True)
    suffix = Path(output).suffix.lower()
    if Path(output).name.lower() in SUFFIXES:  # `.csv` is a hidden file of no suffix: it read "must end with .csv"
        raise ReportError(f"Invalid output: {output} has no name before its suffix: give one, e.g. "
                          f"june{Path(output).name.lower()}")
    if suffix not in SUFFIXES:
        raise ReportError(f"Invalid output: {output} must end with .pdf, .csv or .xlsx (the suffix picks the format)")
    return suffix[1:]


def timesheet_rows(report: ActivityReport) -> list[dict[str, Any]]:
    """One row per billable session of the timesheet, keyed by :data:`TIMESHEET_COLUMNS`, times
    in the report's zone: ``workedMinutes`` (int) the session's own duration, from ``start`` to
    ``end``; ``billedMinutes`` (int) what it bills — they add up to the report's
    ``totalDurationMinutes`` — and ``note`` why the two differ (parallel sessions, the client's
    rounding); ``billableHours`` Decimal (two decimals); ``owner`` whose session it is (empty:
    none recorded); ``description`` what the PDF prints for it (the task slug, else the summary,
    else ``Work on <project>``); ``task`` and ``summary`` the session's task slug and summary; ``deliverables`` their URLs (or commits, titles) separated by spaces;
    ``startTime``/``endTime`` the printed ``start``/``end`` as ISO 8601 instants with the zone's
    offset (``start``/``end`` are clock times: ``01:15 (+1d)``), for a spreadsheet or pandas."""
    require_whole(report)  # a spreadsheet short by a session a hand edit broke, as the PDF would be
    return [{"client": section.client, "date": row.date, "project": row.project, "sessionId": row.session_id,
             "owner": row.owner, "description": row.task, "task": row.task_slug, "summary": row.session_summary, "start": row.start, "end": row.end,
             "workedMinutes": row.worked_minutes, "billedMinutes": row.duration_minutes,
             "billableHours": Decimal(f"{row.hours or 0:.2f}"), "note": row.note,
             "deliverables": " ".join(row.deliverables), "startTime": row.start_time, "endTime": row.end_time}
            for section in timesheet_sections(report) for row in section.rows]


def invoice_rows(invoice: Invoice) -> list[dict[str, Any]]:
    """One row per printed invoice line, keyed by :data:`INVOICE_COLUMNS` (hours, rate and
    amount as Decimal; the date column as printed, its line break a space; ``from``/``to`` the
    line's first and last day, ``YYYY-MM-DD``: a day, or a span of days, alike)."""
    return [{"client": section.client, "currency": section.currency, "date": " ".join(line.date.split()),
             "from": (line.period or _one_day(line.date))[0], "to": (line.period or _one_day(line.date))[1],
             "project": line.project, "description": line.description, "sessions": line.sessions,
             "durationMinutes": line.duration_minutes, "hours": line.hours if line.unit == "HUR" else None,
             "rate": line.rate, "amount": line.amount}
            for section in invoice.sections for line in section.lines]


#: A day as the rows print it; a span of days or a day with times stays text.
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _one_day(printed: str) -> tuple[str | None, str | None]:
    """``(day, day)`` of a line printed with one day (the AI usage line), else ``(None, None)``."""
    day = printed.split()[0] if printed.split() else ""
    return (day, day) if _DAY.fullmatch(day) else (None, None)


def _safe_text(value: str) -> str:
    """A text cell as a document prints it (:func:`~memo_analytics.domain.wire.printable_text`),
    with a leading apostrophe where a spreadsheet would evaluate it."""
    value = printable_text(value)
    return "'" + value if value.startswith(_FORMULA_STARTS) else value


def csv_bytes(columns: tuple[str, ...], rows: list[dict[str, Any]]) -> bytes:
    """The rows as CSV (header first), UTF-8 with a byte-order mark; text cells quoted (and those
    a spreadsheet would evaluate given a leading apostrophe), numbers not: a spreadsheet reads
    them as numbers."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n", quoting=csv.QUOTE_NONNUMERIC)  # "a;=b" stays one cell
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_safe_text(v) if isinstance(v, str) else v for v in (row[c] for c in columns)])
    return buffer.getvalue().encode("utf-8-sig")


def xlsx_bytes(title: str, columns: tuple[str, ...], rows: list[dict[str, Any]],
               totals: list[tuple[str, dict[str, Any]]], dates: tuple[str, ...] = ("date",)) -> bytes:
    """The rows as an XLSX workbook: a header and the rows (numbers as numbers) on the first sheet,
    ``title``; each ``(label, {column: value})`` of ``totals`` on the second, ``Totals`` (a total
    among the rows was summed twice by ``pandas.read_excel(...).sum()``). Text cells are
    strings, never formulas."""
    from openpyxl import Workbook
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
    from openpyxl.styles import Font

    book = Workbook()
    sheet = book.active
    sheet.title = title[:31]
    summed = book.create_sheet("Totals")
    for each in (sheet, summed):
        each.append(list(columns))
        for cell in each[1]:
            cell.font = Font(bold=True)

    def put(row_number: int, values: dict[str, Any], bold: bool = False, sheet: Any = sheet) -> None:
        for index, column in enumerate(columns, 1):
            value = values.get(column)
            if value is None:
                continue
            cell = sheet.cell(row=row_number, column=index)
            if column in dates and isinstance(value, str) and _DAY.fullmatch(value):
                cell.value = date.fromisoformat(value)  # a date the bookkeeper can filter and sort by
                cell.number_format = "yyyy-mm-dd"
            elif isinstance(value, str):
                cell.value = ILLEGAL_CHARACTERS_RE.sub("", printable_text(value))  # and what a sheet cannot hold
                cell.data_type = "s"  # never a formula, whatever it starts with
            elif isinstance(value, Decimal):
                cell.value = value
                places = max(-value.as_tuple().exponent, 0)
                if column in ("rate", "amount") and values.get("currency"):  # as the PDF prints it: 40 JPY, 0.247 BHD
                    places = max(places, -minor_unit(values["currency"]).as_tuple().exponent)
                else:
                    places = 2 if places <= 2 else 4
                cell.number_format = "#,##0" + ("." + "0" * places if places else "")
            else:
                cell.value = value
            if bold:
                cell.font = Font(bold=True)

    for number, row in enumerate(rows, 2):
        put(number, row)
    sheet.auto_filter.ref = sheet.dimensions  # the bookkeeper filters by client, project, day
    for number, (label, values) in enumerate(totals, 2):
        put(number, {columns[0]: label, **values}, bold=True, sheet=summed)
    for index, column in enumerate(columns, 1):
        width = max([len(column)] + [len(str(r.get(column) or "")) for r in rows[:500]])
        for each in (sheet, summed):
            each.column_dimensions[each.cell(row=1, column=index).column_letter].width = min(60, width + 2)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def timesheet_table(report: ActivityReport, fmt: str) -> bytes:
    """The timesheet as ``csv`` or ``xlsx`` bytes (the XLSX's ``Totals`` sheet: with more than one
    client, each client's subtotal as the PDF prints it — its name in the ``client`` column —, then
    ``Total``: the grand total of the sessions' worked minutes, the billed minutes and billable hours)."""
    rows = timesheet_rows(report)
    if fmt == "csv":
        return csv_bytes(TIMESHEET_COLUMNS, rows)
    sections = timesheet_sections(report)
    subtotals = [(section.client, {"workedMinutes": sum(row.worked_minutes for row in section.rows),
                                   "billedMinutes": section.minutes,
                                   "billableHours": Decimal(f"{section.hours:.2f}")})
                 for section in sections] if len(sections) > 1 else []
    total = {"workedMinutes": sum(int(row["workedMinutes"] or 0) for row in rows),
             "billedMinutes": report.total_duration_minutes,
             "billableHours": Decimal(f"{report.total_billable_hours:.2f}")}
    return xlsx_bytes("Timesheet", TIMESHEET_COLUMNS, rows, [*subtotals, ("Total", total)])


def invoice_table(invoice: Invoice, fmt: str) -> bytes:
    """The invoice lines as ``csv`` or ``xlsx`` bytes (per currency net, VAT and gross on the
    XLSX's ``Totals`` sheet)."""
    rows = invoice_rows(invoice)
    if fmt == "csv":
        return csv_bytes(INVOICE_COLUMNS, rows)
    totals = []
    for total in invoice.totals:
        totals += [(f"Net {total.currency}", {"currency": total.currency, "hours": total.hours, "amount": total.amount}),
                   (f"VAT {total.currency}", {"currency": total.currency, "amount": total.tax}),
                   (f"Total {total.currency}", {"currency": total.currency, "amount": total.gross})]
    # the printed date stays text in every row (a day, a span of days, a day with times): one type
    # a column; from/to are the dates to filter and sort by
    return xlsx_bytes("Invoice lines", INVOICE_COLUMNS, rows, totals, dates=("from", "to"))


#: The columns of an issued document's lines (:func:`issued_table`): the document, then its lines
#: as :data:`INVOICE_COLUMNS` has them.
ISSUED_COLUMNS = ("number", "kind", "credits", "issued", "due", *INVOICE_COLUMNS, "taxRate", "invoiceNet",
                  "invoiceTax", "invoiceGross", "taxCurrency", "exchangeRate", "invoiceTaxInTaxCurrency")


def issued_rows(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per line of an issued invoice or credit note (its stored ``meta``), keyed by
    :data:`ISSUED_COLUMNS`: the figures it was issued with (hours, rate and amount as Decimal;
    ``issued``/``due`` and ``from``/``to`` ``YYYY-MM-DD``), whatever the vault says since, and on
    each row the document's ``taxRate`` (percent) and totals (``invoiceNet``, ``invoiceTax``,
    ``invoiceGross``: the VAT as issued, computed on the net, not a sum of lines) and, for VAT
    charged in another currency than the issuer's, ``taxCurrency``, ``exchangeRate`` and
    ``invoiceTaxInTaxCurrency`` (empty otherwise). A credit
    note's rows name the invoice it cancels (``credits``) and carry its minutes, hours and amounts
    negative — what it takes back, as a bookkeeper adds exports up (its minutes were positive beside
    negative hours: found by a billing person) (on its PDF and in its Factur-X XML they are
    positive, type 381 saying they cancel: stacked with the invoice's, a credit note's rows read as
    revenue twice)."""
    sign = -1 if meta["kind"] == "creditNote" else 1
    rows = []
    for line in meta["lines"]:
        printed = " ".join(str(line.get("date") or "").split())
        first, last = (line["periodStart"], line["periodEnd"]) if line.get("periodStart") else _one_day(printed)
        rows.append({"number": meta["number"], "kind": meta["kind"], "credits": meta.get("credits"),
                     "issued": meta["issued"], "due": meta.get("due"),
                     "client": meta["client"], "currency": meta["currency"], "date": printed, "from": first, "to": last,
                     "project": line["project"], "description": line["description"], "sessions": line.get("sessions"),
                     "durationMinutes": sign * line["durationMinutes"]
                     if isinstance(line.get("durationMinutes"), int) else line.get("durationMinutes"),
                     "hours": sign * Decimal(line["hours"]) if line.get("unit", "HUR") == "HUR" else None,
                     "rate": Decimal(line["rate"]), "amount": sign * Decimal(line["amount"]),
                     # the document's VAT rate and totals on each row, as its number and dates are: a CSV of
                     # lines alone gave a bookkeeper no VAT to post (found by a UK billing person)
                     "taxRate": Decimal(meta["taxRate"]), "invoiceNet": sign * Decimal(meta["net"]),
                     "invoiceTax": sign * Decimal(meta["tax"]), "invoiceGross": sign * Decimal(meta["gross"]),
                     # its VAT in the issuer's currency, when charged in another (--exchange-rate): what is posted
                     "taxCurrency": meta.get("taxCurrency"),
                     "exchangeRate": Decimal(meta["exchangeRate"]) if meta.get("exchangeRate") else None,
                     "invoiceTaxInTaxCurrency": sign * Decimal(meta["taxInTaxCurrency"])
                     if meta.get("taxInTaxCurrency") else None})
    return rows


def issued_table(meta: dict[str, Any], fmt: str) -> bytes:
    """An issued document's lines as ``csv`` or ``xlsx`` bytes (:func:`issued_rows`; the XLSX's
    ``Totals`` sheet: its net, VAT and gross as issued) — for the bookkeeper, beside its PDF."""
    rows = issued_rows(meta)
    if fmt == "csv":
        return csv_bytes(ISSUED_COLUMNS, rows)
    currency, sign = meta["currency"], -1 if meta["kind"] == "creditNote" else 1
    totals = [(f"Net {currency}", {"currency": currency, "hours": sign * Decimal(meta["billableHours"]),
                                   "amount": sign * Decimal(meta["net"])}),
              (f"VAT {currency}", {"currency": currency, "amount": sign * Decimal(meta["tax"])}),
              (f"Total {currency}", {"currency": currency, "amount": sign * Decimal(meta["gross"])})]
    return xlsx_bytes(f"{meta['number']} lines", ISSUED_COLUMNS, rows, totals, dates=("issued", "due", "from", "to"))


def export_timesheet(report: ActivityReport, output: Path, user_templates: Path | None = None,
                     vault_root: Path | None = None, overwrite: bool = False) -> Path:
    """The timesheet of ``report`` written to ``output`` in the format its suffix names (PDF,
    CSV or XLSX); the path written.

    Raises
    ------
    ReportError
        Another suffix; a bad output path (inside ``vault_root`` included) or template.
    """
    from .timesheet import render_timesheet_pdf

    forbidden = (vault_root,) if vault_root else ()
    fmt = output_format(output, forbidden)
    if fmt == "pdf":
        return render_timesheet_pdf(report, output, user_templates, vault_root=vault_root, overwrite=overwrite)
    return write_table(timesheet_table(report, fmt), output, forbidden, overwrite)


def export_invoice(report: ActivityReport, settings, output: Path, *, lines: str = "project", issued=None,
                   user_templates: Path | None = None, vault_root: Path | None = None,
                   config: str = "the config file", overwrite: bool = False,
                   invoiced: Collection[tuple[str, str]] = (), zero_minutes: bool = False,
                   skip_unpriced: bool = False) -> tuple[Path, Invoice]:
    """The draft invoice of ``report`` written to ``output`` in the format its suffix names
    (the PDF, or its lines as CSV or XLSX); the path written and the invoice. ``invoiced``,
    ``zero_minutes``, ``skip_unpriced``: as :func:`~.invoice.build_invoice`.

    Raises
    ------
    ReportError, UnpricedClientError, InvalidFieldError
        As :func:`~.invoice.render_invoice_pdf`; another suffix.
    """
    from .invoice import build_invoice, render_invoice_pdf

    forbidden = (vault_root,) if vault_root else ()
    fmt = output_format(output, forbidden)
    if fmt == "pdf":
        return render_invoice_pdf(report, settings, output, lines=lines, issued=issued, user_templates=user_templates,
                                  vault_root=vault_root, config=config, overwrite=overwrite, invoiced=invoiced,
                                  zero_minutes=zero_minutes, skip_unpriced=skip_unpriced)
    invoice = build_invoice(report, settings.billing_for, lines, config, invoiced=invoiced, zero_minutes=zero_minutes,
                            skip_unpriced=skip_unpriced)
    return write_table(invoice_table(invoice, fmt), output, forbidden, overwrite), invoice


def write_table(data: bytes, output: Path, forbidden: tuple[Path, ...], overwrite: bool) -> Path:
    """Write an export atomically to ``output`` (the checks of every report output).

    Raises
    ------
    ReportError
        A bad output path; the disk refused.
    """
    target = check_output_path(output, forbidden, suffixes=SUFFIXES, overwrite=overwrite, make_folders=True)
    try:
        atomic_write_bytes(target, data)
    except OSError as exc:
        raise ReportError(f"Invalid output: cannot write {target} ({exc.strerror or exc})") from None
    return target
