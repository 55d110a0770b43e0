"""Activity & Invoicing (SPEC §3.4, §5.1): the billing timesheet by client and period, hours
per day, and PDF downloads of the timesheet and the draft invoice. Figures come from
``activity_report`` over every project of every configured vault, so the PDF totals equal
``GET /api/activity?crossProject=true`` for the same client and period."""

from __future__ import annotations

import asyncio
import io
from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime, timedelta
from typing import Any, Callable

import pandas as pd
import panel as pn
from bokeh.models import HoverTool, NumeralTickFormatter, Range1d
from bokeh.plotting import figure
from panel.io.model import JSCode

from memo_analytics.analytics.activity import ActivityReport
from memo_analytics.dashboard_data import DashboardData, FiguresChangedError, period_bounds
from memo_analytics.dashboards.style import ACCENT, cards, esc, grid, html_pane, note
from memo_analytics.domain.errors import MemoError
from memo_analytics.reports.timesheet import format_minutes, period_text, require_whole, timesheet_sections

PERIODS = {"This month": "this-month", "Last month": "last-month", "Last 30 days": "last-30-days",
           "This year": "this-year", "All time": "all", "Custom dates": "custom"}
ALL_CLIENTS = "All clients"
#: A button that cannot be used looks it (Bokeh keeps its colour: an orange "Issue invoice" read as ready)
DISABLED_LOOK = ".bk-btn:disabled, .bk-btn[disabled] { opacity: .45; filter: grayscale(100%); cursor: not-allowed; }"
#: Renders the PDF downloads off the event loop, one at a time (WeasyPrint is not meant to lay
#: out several documents at once in one process; a thread is started on the first download).
PDF_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memo-pdf")
SHEET_COLUMNS = ["Client", "Date", "Project", "Task", "Start", "End", "Billed", "Hours"]
#: The timesheet's group header. The group value is "NAME · n sessions · h:mm" — the client's
#: figures for the whole period, not the rows of the page on screen (the table pages on the
#: server). Tabulator's own header inserts the value as HTML; this one puts it in a text node,
#: so it is shown, never run.
GROUP_HEADER = JSCode("""function(value, count) {
  const header = document.createDocumentFragment();
  header.append(document.createTextNode(value == null ? "" : String(value)));
  return header;
}""")


def hours_chart(by_day: dict[str, dict[str, Any]], first: date | None = None, last: date | None = None) -> Any:
    """A bar chart of billable hours per local day (``byDay`` of the report); its axis spans the
    period from ``first`` to ``last`` (local days) when both are given, else the days shown."""
    # each bar centred on its day's noon: at midnight it spanned 14:00 of the day before to 10:00
    days = [datetime.fromisoformat(day) + timedelta(hours=12) for day in by_day]
    hours = [bucket["billableHours"] for bucket in by_day.values()]
    plot = figure(height=240, sizing_mode="stretch_width", x_axis_type="datetime", toolbar_location=None,
                  title="Billable hours per day", tools="")
    plot.vbar(x=days, top=hours, width=timedelta(hours=20), color=ACCENT, alpha=0.85)
    plot.add_tools(HoverTool(tooltips=[("day", "@x{%F}"), ("hours", "@top{0.00}")], formatters={"@x": "datetime"}))
    # hours to two places where a day holds minutes (every tick read 0.0 under 0.05 h)
    plot.yaxis.formatter = NumeralTickFormatter(format="0.0" if max(hours, default=0) >= 2 else "0.00")
    plot.y_range.start = 0
    plot.xgrid.grid_line_color = None
    plot.outline_line_color = None
    if first is not None and last is not None:
        start = datetime.combine(min(first, *(d.date() for d in days)), datetime.min.time())
        end = datetime.combine(max(last, *(d.date() for d in days)), datetime.min.time())
        plot.x_range = Range1d(start, end + timedelta(days=1))
    return plot


class ActivityView:
    """The tab; :attr:`layout` is what the app shows."""

    def __init__(self, data: DashboardData) -> None:
        self.data = data
        self.report: ActivityReport | None = None
        self.period = pn.widgets.Select(label="Period", options=PERIODS, value="all", width=160,
                                        css_classes=["memo-period"])
        # typed dates (YYYY-MM-DD): a calendar that cannot be typed into is slow for a billing month
        self.since = pn.widgets.TextInput(label="Since", placeholder="YYYY-MM-DD", width=120, disabled=True,
                                          css_classes=["memo-act-since"])
        self.until = pn.widgets.TextInput(label="Until", placeholder="YYYY-MM-DD", width=120, disabled=True,
                                          css_classes=["memo-act-until"])
        self.client = pn.widgets.Select(label="Client", options=[ALL_CLIENTS, *data.clients()], value=ALL_CLIENTS,
                                        width=200, css_classes=["memo-act-client"])
        self.timesheet = pn.widgets.FileDownload(callback=self._timesheet_pdf, filename="timesheet.pdf",
                                                 label="⬇ Timesheet PDF", button_type="primary", width=170,
                                                 margin=(24, 10, 10, 10), css_classes=["memo-timesheet-pdf"],
                                                 stylesheets=[DISABLED_LOOK])
        self.invoice = pn.widgets.FileDownload(callback=self._invoice_pdf, filename="invoice-draft.pdf",
                                               label="⬇ Invoice PDF", button_type="success", width=150,
                                               margin=(24, 10, 10, 10), css_classes=["memo-invoice-pdf"],
                                               stylesheets=[DISABLED_LOOK])
        self.issue = pn.widgets.Button(label="Issue invoice", button_type="warning", width=130, margin=(24, 10, 10, 10),
                                       disabled=True, css_classes=["memo-issue-invoice"], stylesheets=[DISABLED_LOOK])
        self.issue.on_click(self._ask_to_issue)
        # a numbered invoice cannot be taken back (only cancelled by a credit note): one click asks,
        # the second issues what was asked about
        self.confirm = pn.widgets.Button(label="Issue it", button_type="danger", width=110,
                                         css_classes=["memo-issue-confirm"])
        self.confirm.on_click(self._issue)
        self.cancel = pn.widgets.Button(label="Cancel", button_type="light", width=90,
                                        css_classes=["memo-issue-cancel"])
        self.cancel.on_click(lambda _event: self._forget_asked())
        self.asking = html_pane(sizing_mode="stretch_width", css_classes=["memo-issue-question"])
        self.question = pn.Row(self.asking, self.confirm, self.cancel, visible=False, sizing_mode="stretch_width")
        self._asked: tuple[str | None, date | None, date | None, str] | None = None
        self._refused = False  # the issue was refused: its "Not issued" goes at the next refresh
        self._issued_ref: str | None = None  # the invoice the "Issued …" note names: said when credited since
        self.issued = html_pane(sizing_mode="stretch_width", visible=False, css_classes=["memo-issued"])
        self.summary = html_pane(sizing_mode="stretch_width", css_classes=["memo-activity-summary"])
        self.invoice_note = html_pane(sizing_mode="stretch_width", visible=False)
        self.chart = pn.pane.Bokeh(sizing_mode="stretch_width", css_classes=["memo-hours-chart"])
        self.by_client = html_pane(sizing_mode="stretch_width", css_classes=["memo-by-client"])
        self.sheet = pn.widgets.Tabulator(
            pd.DataFrame(columns=SHEET_COLUMNS), show_index=False, disabled=True, selectable=False,
            pagination="remote", page_size=25, groupby=["Client"], layout="fit_columns",
            sizing_mode="stretch_width", css_classes=["memo-timesheet"], header_align="left", hidden_columns=["Client"],
            text_align={"Billed": "right", "Hours": "right"},
            # no keybindings: Tabulator's took Tab (a keyboard user was held in the table for good: an operator)
            configuration={"groupHeader": GROUP_HEADER, "keybindings": False},
            widths={"Date": 104, "Project": 140, "Start": 74, "End": 104, "Billed": 96, "Hours": 80},
            formatters={"Task": {"type": "textarea"}},
        )
        for widget in (self.period, self.since, self.until, self.client):
            widget.param.watch(self._changed, "value")
        # the table by client above the timesheet, which takes the whole width: every column of it
        # shows at 1366 px (the task text wraps in its column)
        self.layout = pn.Column(
            pn.FlexBox(self.period, self.since, self.until, self.client, self.timesheet, self.invoice, self.issue,
                       flex_wrap="wrap", align_items="end", sizing_mode="stretch_width"),  # wraps on a phone
            self.question, self.issued, self.invoice_note, self.summary, self.chart,
            html_pane('<h3 class="section">Billable time by client</h3>'), self.by_client,
            html_pane('<h3 class="section">Timesheet</h3>'), self.sheet,
            sizing_mode="stretch_width", css_classes=["memo-activity"],
        )
        self._changed(None)

    def bounds(self) -> tuple[date | None, date | None]:
        """The period's first and last day; custom dates as typed (``InvalidDateError`` naming
        the field when one is not ``YYYY-MM-DD``)."""
        if self.period.value == "custom":
            return self._typed(self.since.value, "since"), self._typed(self.until.value, "until")
        return period_bounds(self.period.value, self.data.today())

    @staticmethod
    def _typed(text: str | None, name: str) -> date | None:
        from memo_analytics.domain.errors import InvalidDateError

        if not text or not text.strip():
            return None
        try:
            return date.fromisoformat(text.strip())
        except ValueError:  # the field takes a day: a time offered by the message was refused (an operator)
            raise InvalidDateError(name, text, "give a day as YYYY-MM-DD") from None

    def follow(self) -> None:
        """Read the vault again for the client and period on screen (the digest's ↻ and periodic
        refresh): the open sessions, prompts and hours of work recorded since the page opened
        (found by a new user: the tab showed 0 open sessions while the digest listed one). Not
        while the page asks whether to issue: the question is about the figures it showed."""
        if self._asked is None:
            if self._refused:  # "Not issued: …" of a cause fixed since stayed on screen (found by an operator)
                self.issued.visible = self._refused = False
            if self._issued_ref is not None and self.issued.visible:
                credit = self.data.credit_of(self._issued_ref)
                if credit is not None:  # "Issued invoice …" stayed beside an enabled Issue (found by an operator)
                    self.issued.object = note("info", f"Invoice {self._issued_ref}, issued here, is cancelled since "
                                                      f"by credit note {credit}")
                    self._issued_ref = None
            self._changed(None)

    def _changed(self, _event: Any) -> None:
        if _event is not None:  # another client or period: the question asked was about the last one
            self._forget_asked()
            self.issued.visible = False  # "Issued invoice … for Acme" stayed above Globex's figures
        custom = self.period.value == "custom"
        self.since.disabled = self.until.disabled = not custom
        client = None if self.client.value == ALL_CLIENTS else self.client.value
        try:
            since, until = self.bounds()
            if not custom:  # the greyed fields show the period's days, not the custom ones of before beside
                # an Issue of this period (found by a newcomer); they are the custom dates' start
                import param

                with param.parameterized.discard_events(self.since), param.parameterized.discard_events(self.until):
                    self.since.value = since.isoformat() if since else ""
                    self.until.value = until.isoformat() if until else ""
            report = self.data.activity(client, since, until)
        except MemoError as exc:
            # nothing of the last period stays on screen, nor can be downloaded as this one
            self.report = None
            with pn.io.hold():
                self.summary.object = note("error", str(exc))
                self.chart.visible = self.invoice_note.visible = False
                self.by_client.object = ""
                self.sheet.value = pd.DataFrame(columns=SHEET_COLUMNS)
                self.timesheet.disabled = self.invoice.disabled = self.issue.disabled = True
            return
        self.report = report
        with pn.io.hold():
            # the clients the vault knows now (found by an operator: a client filed since the page opened
            # could not be drafted or issued without a reload)
            options = [ALL_CLIENTS, *self.data.clients()]
            if self.client.value not in options:
                options.append(self.client.value)
            if options != list(self.client.options):
                self.client.options = options
            self._show(report)

    def _show(self, report: ActivityReport) -> None:
        billable = [s for s in report.sessions if s["billable"] and s["durationMinutes"] is not None]
        open_count = sum(1 for s in report.sessions if s["durationMinutes"] is None)
        period = period_text(report.bounds, report.zone)
        self.summary.object = (
            f'<div class="muted small" style="margin-bottom:6px">{esc(period)} · times in '
            f'{esc(report.wire()["timezone"])} · every project of every configured vault'
            + (f" · client {esc(report.client)}" if report.client else "") + "</div>"
            + cards([("Billable hours", f"{report.total_billable_hours:.2f}"),
                     ("Billable time", format_minutes(report.total_duration_minutes)),
                     ("Billed sessions", f"{len(billable):,}"),
                     ("Open sessions", f"{open_count:,}"),
                     ("Prompts", f"{report.total_prompts:,}"),
                     ("AI cost (API-equivalent, USD)", report.wire()["totalCostUsd"])]))
        if report.by_day:
            self.chart.object = hours_chart(report.by_day, *self.bounds())
        self.chart.visible = bool(report.by_day)
        rows = [[name, bucket["sessions"], format_minutes(bucket["durationMinutes"]), f"{bucket['billableHours']:.2f}"]
                for name, bucket in report.by_client.items()]
        self.by_client.object = grid(["Client", "Sessions", "Billed", "Hours"], rows, numeric={1, 2, 3},
                                     total=["Total", len(billable), format_minutes(report.total_duration_minutes),
                                            f"{report.total_billable_hours:.2f}"]) if rows else \
            '<span class="muted">No billable session in this period.</span>'
        sheet = [[f"{section.client} · {len(section.rows)} {'session' if len(section.rows) == 1 else 'sessions'} · "
                  f"{format_minutes(section.minutes)}", row.date, row.project, row.task, row.start, row.end, row.duration,
                  f"{row.hours:.2f}"]
                 for section in timesheet_sections(report) for row in section.rows]
        self.sheet.value = pd.DataFrame(sheet, columns=SHEET_COLUMNS)
        problem = self.data.invoice_problem(report) if billable else ("info", "nothing to invoice in this period")
        label = "Invoice"
        try:  # a session file of the view that cannot be read: no document would hold it (the table neither)
            require_whole(report)
        except MemoError as exc:
            problem, label = ("warn", str(exc)), "Timesheet and invoice"
        self.timesheet.disabled = bool(report.left_out_in_scope)
        self.invoice.disabled = problem is not None
        refusals = [] if problem else self.data.issue_refusals(report)  # the draft is given; the issue would refuse
        if refusals:
            problem = ("warn", "; ".join(refusals))
        self.invoice_note.object = note(problem[0], f"{label}: {problem[1]}") if problem else ""
        self.invoice_note.visible = problem is not None
        since, until = self.bounds()
        self.issue.disabled = problem is not None or self.client.value == ALL_CLIENTS or since is None or until is None
        self.issue.description = ("Issue the invoice of this client and period: the next number, stored in the "
                                  "vault" if not self.issue.disabled else
                                  "Choose one client and a period with both dates to issue an invoice")
        stamp = self._stamp()
        self.timesheet.filename = f"timesheet-{stamp}.pdf"
        self.invoice.filename = f"invoice-draft-{stamp}.pdf"

    def _ask_to_issue(self, _event: Any) -> None:
        """Ask before issuing the invoice of the client and period on screen."""
        try:
            since, until = self.bounds()
        except MemoError as exc:
            self.issued.object = note("error", f"Not issued: {exc}")
            self.issued.visible = True
            return
        client = None if self.client.value == ALL_CLIENTS else self.client.value
        self._ask(client, since, until, self.data.issue_preview(client, since, until))

    def _ask(self, client: str | None, since: date | None, until: date | None, billed: str,
             changed: bool = False) -> None:
        """Put the question of issuing, about the figures ``billed`` (what the issue must still bill)."""
        self._asked = (client, since, until, billed)
        self.asking.object = note("warn", ("The figures changed since you were asked. " if changed else "")
                                  + f"Issue a numbered invoice to {client or 'every client'} for {since} – "
                                  f"{until}{': ' + billed if billed else ''}? It cannot be taken back: only "
                                  "a credit note cancels it.")
        self.question.visible = True
        self.issued.visible = False

    def _forget_asked(self) -> None:
        self._asked = None
        self.question.visible = False

    def _issue(self, _event: Any) -> None:
        """Issue the invoice asked about (:meth:`_ask_to_issue`: its client and period, even when
        the filters changed since; ``memo invoice issue``) — only while it bills the figures the
        question showed: other figures now (a session edited, a rate changed meanwhile) are asked
        about again, nothing issued."""
        if self._asked is None:
            return
        client, since, until, billed = self._asked
        self._forget_asked()
        try:
            document = self.data.issue_invoice(client, since, until, expected=billed)
        except FiguresChangedError as exc:
            self._changed(None)  # the view shows the vault as it is now, the question beside it
            self._ask(client, since, until, exc.preview, changed=True)
            return
        except MemoError as exc:
            self.issued.object = note("error", f"Not issued: {exc}")
            self.issued.visible = self._refused = True
            self._changed(None)  # open work the refusal names as invoiced elsewhere no longer shown (an operator)
            return
        meta = document.meta
        self.issued.object = note("ok", f"Issued invoice {meta['number']} for {meta['client']}: {meta['currency']} "
                                        f"{meta['gross']} (net {meta['net']}, VAT {meta['tax']}), due {meta['due']}; "
                                        f"stored as {document.pdf}")
        self.issued.visible = True
        self._issued_ref = document.ref
        self._changed(None)

    def _stamp(self) -> str:
        since, until = self.bounds()
        parts = ([since.isoformat() if since else "until", until.isoformat() if until else "now"]
                 if since or until else ["all-time"])
        if self.client.value != ALL_CLIENTS:
            parts.append("".join(c if c.isalnum() or c in "-_" else "_" for c in self.client.value)[:40])
        return "_".join(parts)

    async def _timesheet_pdf(self) -> io.BytesIO | None:
        return await self._pdf(self.data.timesheet_pdf)

    async def _invoice_pdf(self) -> io.BytesIO | None:
        return await self._pdf(self.data.invoice_pdf, invoice=True)

    async def _pdf(self, render: Callable[[ActivityReport], bytes], invoice: bool = False) -> io.BytesIO | None:
        """The PDF of the view's client and period as the vault holds them now — read again at the
        click, the figures on screen with it (found by an operator: a page left open drafted the
        figures of when its filter last changed, and a draft whose sessions were invoiced since failed
        without a word) — rendered in :data:`PDF_WORKER` (WeasyPrint takes seconds on a long period;
        the server's event loop keeps serving every session). None when there is none to give: why is
        said on the page."""
        self._changed(None)
        report = self.report
        if report is None or (invoice and self.invoice.disabled):
            return None  # the period refused, or nothing to invoice now: the page says why
        try:
            return io.BytesIO(await asyncio.get_running_loop().run_in_executor(PDF_WORKER, render, report))
        except MemoError as exc:
            self.invoice_note.object = note("warn", f"Not downloaded: {exc}")
            self.invoice_note.visible = True
            return None
