"""The invoice (SPEC §5.1, issue 4): hours × the client's hourly rate, in its currency.

Built from the same :class:`~memo_analytics.analytics.activity.ActivityReport` as the
timesheet, so an invoice and its timesheet always agree. Pure line building
(:func:`build_invoice`) and rendering to PDF (:func:`render_invoice_pdf`).

Rules
-----
- **What is billed**: billable sessions with a duration (open sessions bill nothing until
  they end; the invoice says how many were left out). A session of 0 minutes is left off
  (flagged: the invoice counts them) unless asked for; a session already on an issued,
  uncredited invoice is never billed again (:mod:`.ledger`).
- **Quantity**: hours with two decimals, the report's own figures (its rounding policy):
  a session line carries the session's ``billableHours``; a project line the sum of its
  sessions'. So a client's lines add up to the client's hours and all lines to the report's
  ``totalBillableHours`` — the figure of ``memo activity`` for the same filters.
- **Amount** of a line = printed hours × hourly rate, rounded half up (``ROUND_HALF_UP``) to
  the currency's minor unit (cents; none for JPY, KRW …; three decimals for BHD, KWD …),
  computed with :class:`decimal.Decimal`, never with floats.
- **Subtotals and totals** are sums of the printed line amounts, so they equal the sum of
  the lines exactly. Currencies are never added together: there is one total per currency.
- **Rates**: a project's own rate (``projectRates``) else the client's ``hourlyRate``.
- **Tax** per client section (one VAT category per client, :meth:`ClientBilling.tax_category`):
  ``tax = net × rate / 100`` rounded half up to the minor unit, ``gross = net + tax``; the
  totals per currency add the sections' net, tax and gross.
- **Terms**: ``[clients."<name>"] hourlyRate, currency`` in the config file, matched
  case-insensitively (``Settings.billing_for``). A client without terms — ``internal`` (no
  client) included — is refused with :class:`UnpricedClientError`, naming the client and the
  key to set; invoice the others with ``--client``. An invoice with nothing to bill is refused.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, Callable, Collection, Literal

from ..analytics.activity import INTERNAL_CLIENT, ActivityReport
from ..config import ClientBilling, Settings
from ..domain.clock import from_iso, span_clock, utcnow, zone_name
from ..domain.errors import InvalidDateError, InvalidFieldError, ReportError
from ..domain.rounding import ROUNDING_POLICY_PRINTED
from .render import check_output_path, render_html, render_pdf_bytes, templates_dir, write_pdf
from .timesheet import format_minutes, period_text, printed_span, require_whole, shown

LineMode = Literal["project", "session"]
LINE_MODES: tuple[str, ...] = ("project", "session")

#: ISO 4217 currencies whose minor unit is not the cent (all others have two decimals).
_MINOR_UNITS = {
    **dict.fromkeys("BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF".split(), 0),
    **dict.fromkeys("BHD IQD JOD KWD LYD OMR TND".split(), 3),
}


class UnpricedClientError(InvalidFieldError):
    """Clients to invoice have no hourly rate and currency in the config file.

    Attributes
    ----------
    clients : list[str]
        The clients without terms, as the report spells them.
    config : str
        The config file the terms belong in.
    others : bool
        The invoice also bills clients that have terms (the message says ``--client`` can
        leave the others out).
    """

    def __init__(self, clients: list[str], config: str, others: bool = False) -> None:
        self.clients = clients
        self.config = config
        names = ", ".join(repr(c) for c in clients)
        named = [c for c in clients if c.lower() != INTERNAL_CLIENT]  # terms for "no client" make no sense
        sections = ", ".join(f'[clients."{c}"]' for c in named)
        steps = ([f"set hourlyRate and currency under {sections} in {config}"] if named else []) + (
            ["'internal' is work filed under no client: memo session edit SID --client NAME bills it to one"]
            if len(named) < len(clients) else [])
        InvalidFieldError.__init__(
            self, f'clients."{(named or clients)[0]}".hourlyRate',
            f"no billing terms for {'client' if len(clients) == 1 else 'clients'} {names}; " + "; ".join(steps)
            + (", or invoice the other clients alone with --client (a draft leaves these off with "
               "--skip-unpriced)" if others else ""),
        )


def _rate(billing: ClientBilling, project: str) -> Decimal:
    """The project's hourly rate as a line prints it: at least the currency's decimals (``130`` set
    in the config is ``130.00`` EUR, as ``95.00`` beside it), more when the rate has them."""
    rate = billing.rate_for(project)
    unit = minor_unit(billing.currency)
    return rate.quantize(unit) if rate.as_tuple().exponent > unit.as_tuple().exponent else rate


def minor_unit(currency: str) -> Decimal:
    """The smallest amount of ``currency`` (``Decimal('0.01')`` for EUR, ``Decimal('1')`` for JPY)."""
    return Decimal(1).scaleb(-_MINOR_UNITS.get(currency, 2))


def _natural(text: str) -> tuple:
    """Sort key reading the numbers in ``text`` as numbers: ``login-2`` before ``login-10``."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text.casefold()))


#: Widths of an invoice's rate and amount columns (mm) that its usual figures fit (report.css).
RATE_MM, AMOUNT_MM = 22.0, 27.0
#: Width of one printed character of a figure (mm): a DejaVu Sans digit at 9 pt, bold, and a margin.
_FIGURE_MM, _CELL_MM = 2.0, 3.0


def number_column_mm(rates: list[str], amounts: list[str], currency: str) -> dict[str, float]:
    """``{"rate", "amount"}``: column widths (mm) the printed ``rates`` and ``amounts`` fit — the
    defaults, or wider for a huge rate or amount (a subtotal prints ``EUR `` before its amount),
    so a figure never runs over the next column."""
    rate = max((len(text) for text in rates), default=0) * _FIGURE_MM + _CELL_MM
    amount = max((len(text) for text in amounts), default=0) + len(currency) + 1
    return {"rate": round(max(RATE_MM, rate), 1), "amount": round(max(AMOUNT_MM, amount * _FIGURE_MM + _CELL_MM), 1)}


def line_amount(hours: Decimal, rate: Decimal, currency: str) -> Decimal:
    """``hours × rate`` rounded half up to the minor unit of ``currency``. Pure, exact."""
    return (hours * rate).quantize(minor_unit(currency), rounding=ROUND_HALF_UP)


def format_money(amount: Decimal, currency: str) -> str:
    """``Decimal('1234.5')`` → ``1,234.50`` (the currency's decimals, thousands separated)."""
    places = _MINOR_UNITS.get(currency, 2)
    return f"{amount:,.{places}f}"


def format_rate(rate: Decimal, currency: str) -> str:
    """A rate as configured, never rounded (``19.99`` JPY stays ``19.99``: the printed rate is
    the one the amounts are computed with), with at least the currency's decimals."""
    places = max(_MINOR_UNITS.get(currency, 2), -rate.normalize().as_tuple().exponent
                 if rate.normalize().as_tuple().exponent < 0 else 0)
    return f"{rate:,.{places}f}"


@dataclass(frozen=True)
class InvoiceLine:
    """One printed line: ``hours × rate = amount`` (``unit`` ``HUR``); the AI usage line is one
    unit (``C62``) at its amount."""

    #: one line of text: the local day of a project line's sessions (``YYYY-MM-DD``, or the first and
    #: the last: ``YYYY-MM-DD – YYYY-MM-DD``); a session line's day and span (``YYYY-MM-DD HH:MM–HH:MM``,
    #: `` (+1d)`` when it ends on a later day); the PDF breaks it at its spaces
    date: str
    project: str
    description: str
    notes: tuple[str, ...]
    sessions: int
    duration_minutes: int
    hours: Decimal
    rate: Decimal
    amount: Decimal
    unit: str = "HUR"
    #: the first day its sessions began and the last day one ended, in the report's zone
    #: (``YYYY-MM-DD``; the Factur-X line period, BT-134/135); None: read from ``date``
    period: tuple[str, str] | None = None

    @property
    def duration(self) -> str:
        return format_minutes(self.duration_minutes)

    def wire(self) -> dict[str, Any]:
        """The line as stored on an issued invoice and answered for a draft (camelCase; figures
        as decimal text)."""
        return {"date": self.date, "project": self.project, "description": self.description,
                "notes": list(self.notes), "sessions": self.sessions, "durationMinutes": self.duration_minutes,
                "hours": str(self.hours), "rate": str(self.rate), "amount": str(self.amount), "unit": self.unit,
                **({"periodStart": self.period[0], "periodEnd": self.period[1]} if self.period else {})}


@dataclass
class InvoiceSection:
    """The lines of one client, billed in one currency; ``rate`` is the client's hourly rate
    (a line of a project with its own rate carries that one); ``tax_category`` and
    ``tax_rate`` (percent) its VAT treatment."""

    client: str
    currency: str
    rate: Decimal
    lines: list[InvoiceLine] = field(default_factory=list)
    tax_category: str = "E"
    tax_rate: Decimal = Decimal(0)
    tax_note: str | None = None
    sessions: list[dict[str, Any]] = field(default_factory=list)
    #: how the client's terms bill a session's minutes (rounding, minimum), printed at the foot
    rounding_note: str | None = None

    @property
    def minutes(self) -> int:
        return sum(line.duration_minutes for line in self.lines)

    @property
    def hours(self) -> Decimal:
        """The billed hours: the hour lines' (not the AI usage line's quantity)."""
        return sum((line.hours for line in self.lines if line.unit == "HUR"), Decimal("0.00"))

    @property
    def amount(self) -> Decimal:
        """The subtotal (net): the sum of the printed line amounts."""
        return sum((line.amount for line in self.lines), Decimal(0)).quantize(minor_unit(self.currency))

    @property
    def tax(self) -> Decimal:
        """The VAT of the section: net × rate / 100, rounded half up to the minor unit."""
        return (self.amount * self.tax_rate / 100).quantize(minor_unit(self.currency), rounding=ROUND_HALF_UP)

    @property
    def gross(self) -> Decimal:
        return self.amount + self.tax

    @property
    def rates(self) -> list[Decimal]:
        """The distinct hourly rates of the lines, in order."""
        return list(dict.fromkeys(line.rate for line in self.lines))

    @property
    def column_mm(self) -> dict[str, float]:
        """Widths of the rate and amount columns (mm, :func:`number_column_mm`) for its figures."""
        money = [format_money(x, self.currency) for x in (*(line.amount for line in self.lines), self.amount, self.tax)]
        return number_column_mm([format_rate(line.rate, self.currency) for line in self.lines],
                                money, self.currency)

    @property
    def other_rates(self) -> dict[str, Decimal]:
        """Projects whose lines bill another hourly rate than the client's (``projectRates``)."""
        return {line.project: line.rate for line in self.lines if line.unit == "HUR" and line.rate != self.rate}


@dataclass(frozen=True)
class CurrencyTotal:
    """The total of one currency over the sections billed in it: ``amount`` is the net,
    ``tax`` the VAT, ``gross`` what is due."""

    currency: str
    clients: tuple[str, ...]
    hours: Decimal
    amount: Decimal
    tax: Decimal = Decimal(0)
    gross: Decimal = Decimal(0)


@dataclass
class Invoice:
    """Sections per client (sorted case-insensitively) and one total per currency;
    ``unpriced_clients``: clients of the period left off for want of terms (only with
    ``build_invoice(skip_unpriced=True)``)."""

    sections: list[InvoiceSection]
    open_sessions: int
    zero_minute_sessions: int = 0
    already_invoiced: int = 0
    unpriced_clients: tuple[str, ...] = ()
    #: turns of billed sessions whose model has no price, for clients billed their AI cost: not in it
    unpriced_ai_turns: int = 0
    #: what the draft prints that ``memo invoice issue`` would refuse (one line each)
    warnings: list[str] = field(default_factory=list)

    @property
    def totals(self) -> list[CurrencyTotal]:
        currencies = sorted({s.currency for s in self.sections})
        out = []
        for currency in currencies:
            mine = [s for s in self.sections if s.currency == currency]
            out.append(CurrencyTotal(
                currency=currency,
                clients=tuple(s.client for s in mine),
                hours=sum((s.hours for s in mine), Decimal("0.00")),
                amount=sum((s.amount for s in mine), Decimal(0)).quantize(minor_unit(currency)),
                tax=sum((s.tax for s in mine), Decimal(0)).quantize(minor_unit(currency)),
                gross=sum((s.gross for s in mine), Decimal(0)).quantize(minor_unit(currency)),
            ))
        return out

    @property
    def hours(self) -> Decimal:
        """All billed hours (hours add up across currencies; money does not)."""
        return sum((s.hours for s in self.sections), Decimal("0.00"))

    @property
    def minutes(self) -> int:
        return sum(s.minutes for s in self.sections)


def _priced_ai_use(items: list[dict[str, Any]], terms: Callable[[str], ClientBilling | None]) -> bool:
    """Whether a session of ``items`` bills AI usage (its client's ``aiCostMargin``, a cost): an
    invoice line of its own, whatever its minutes."""
    for item in items:
        billing = terms(item["client"])
        if billing is not None and billing.ai_cost_margin is not None and Decimal(str(item.get("costUsd") or 0)) > 0:
            return True
    return False


def _billed(item: dict[str, Any]) -> int:
    """The minutes a session bills (its ``billedMinutes`` under the overlap policy)."""
    billed = item.get("billedMinutes")
    return int(item["durationMinutes"] if billed is None else billed)


def _hours(value: float | None) -> Decimal:
    return Decimal(f"{value or 0:.2f}")


def build_invoice(report: ActivityReport, terms: Callable[[str], ClientBilling | None], lines: str = "project",
                  config: str = "the config file", invoiced: Collection[tuple[str, str]] = (),
                  zero_minutes: bool = False, skip_unpriced: bool = False) -> Invoice:
    """Group the report's billed sessions into priced lines. Pure.

    Parameters
    ----------
    report : ActivityReport
        The activity of the invoiced period and filters.
    terms : callable
        Client name → its :class:`~memo_analytics.config.ClientBilling` or None
        (``Settings.billing_for``).
    lines : {"project", "session"}
        One line per client and project (sessions, first and last date), or one per session
        (date, time, task, summary, deliverables).
    config : str
        Where the terms live, for the error message.
    invoiced : collection of (project, sessionId)
        Sessions on an issued, uncredited invoice: left off (counted in ``already_invoiced``).
    zero_minutes : bool
        Bill sessions of 0 minutes too (default: left off, counted in ``zero_minute_sessions``).
    skip_unpriced : bool
        Leave off the clients without terms (named in ``unpriced_clients``) rather than refuse
        — an analyst's look at what the priced clients come to; an issued invoice never does.

    Raises
    ------
    InvalidFieldError
        ``lines`` is not one of :data:`LINE_MODES`.
    UnpricedClientError
        A billed client has no terms (without ``skip_unpriced``).
    ReportError
        Nothing to bill; a session file that may belong to the report cannot be read
        (:func:`~memo_analytics.reports.timesheet.require_whole`).
    """
    if lines not in LINE_MODES:
        raise InvalidFieldError("lines", f"{lines!r} is not one of {', '.join(LINE_MODES)}")
    require_whole(report)
    names = {name.lower(): name for name in report.by_client}
    invoiced = set(invoiced)
    ended = [s for s in report.sessions if s["billable"] and s["durationMinutes"] is not None]
    fresh = [s for s in ended if (s["project"], s["sessionId"]) not in invoiced]
    billed = [s for s in fresh if zero_minutes or s["durationMinutes"] > 0]
    # sessions wholly within the client's sessions billed already (one person's time counts once):
    # alone they made an invoice of 0.00 that took a number (found by a billing person)
    beside = [s for s in billed if s["durationMinutes"] > 0 and _billed(s) == 0]
    if billed and all(_billed(s) == 0 for s in billed) and not _priced_ai_use(billed, terms):
        billed = []  # with --zero-minutes too: sessions of 0 minutes bill nothing either (found by a breaker)
    if not billed:
        why = (f"; {len(ended) - len(fresh)} already invoiced (memo invoice list)" if len(fresh) < len(ended) else "")
        zero = [s for s in fresh if s not in beside]
        # named, with the way to bill one (found by a new user: "1 of 0 minutes" said neither)
        why += (f"; {len(zero)} of 0 minutes ({', '.join(s['sessionId'] for s in zero[:3])}"
                f"{' …' if len(zero) > 3 else ''}: memo session edit ID --minutes N gives one its time)" if zero else "")
        why += (f"; {len(beside)} within time the client's other sessions bill already (each hour bills once: "
                f"{', '.join(s['sessionId'] for s in beside[:3])}{' …' if len(beside) > 3 else ''})" if beside else "")
        # a month still running: its sessions not ended yet bill nothing (a freelancer was told of none)
        still_open = [s for s in report.sessions if s["billable"] and s["durationMinutes"] is None]
        why += (f"; {len(still_open)} still open ({', '.join(s['sessionId'] for s in still_open[:3])}"
                f"{' …' if len(still_open) > 3 else ''}): they bill once they end (memo session end ID)"
                if still_open else "")
        raise ReportError(f"Nothing to invoice: no billable session with a duration for these filters{why}")
    by_client: dict[str, list[dict[str, Any]]] = {}
    for item in billed:
        by_client.setdefault(item["client"].lower(), []).append(item)
    unpriced = [names.get(key, items[0]["client"]) for key, items in sorted(by_client.items())
                if terms(names.get(key, items[0]["client"])) is None]
    if unpriced and skip_unpriced and len(unpriced) == len(by_client):
        # every priced client's work is invoiced already (or there was none): nothing is left to draft
        done = f"; {len(ended) - len(fresh)} already invoiced (memo invoice list)" if len(fresh) < len(ended) else ""
        named = [n for n in unpriced if n.lower() != INTERNAL_CLIENT]  # terms for "no client" make no sense
        steps = f": set hourlyRate and currency under {', '.join(f'[clients.{chr(34)}{n}{chr(34)}]' for n in named)} " \
                f"in {config}" if named else ""
        raise ReportError(f"Nothing to invoice: no client with billing terms has billable work left for these "
                          f"filters{done}; {', '.join(repr(n) for n in unpriced)} "
                          f"{'has' if len(unpriced) == 1 else 'have'} no billing terms (skipped){steps}")
    if unpriced and not skip_unpriced:
        raise UnpricedClientError(unpriced, config, others=len(unpriced) < len(by_client))
    for name in unpriced:
        by_client.pop(name.lower(), None)
    sections = []
    unpriced_turns = 0
    warnings: list[str] = []
    for key in sorted(by_client):
        client = names.get(key, by_client[key][0]["client"])
        billing = terms(client)
        assert billing is not None
        category, tax_rate = billing.tax_category()
        section = InvoiceSection(client=client, currency=billing.currency, rate=billing.hourly_rate,
                                 tax_category=category, tax_rate=tax_rate, tax_note=billing.tax_note(),
                                 sessions=by_client[key],
                                 rounding_note=billing.rounding_note(union=report.bills_parallel_once))
        build = _session_lines if lines == "session" else _project_lines
        section.lines = build(by_client[key], report, billing) + _ai_cost_line(by_client[key], report, billing)
        sections.append(section)
        if billing.ai_cost_margin is not None:
            unpriced_turns += sum(int(i.get("unpricedTurns") or 0) for i in by_client[key])
    def counted(items: list[dict[str, Any]]) -> int:  # a client skipped for want of terms: not counted as left off
        return sum(1 for item in items
                   if not (skip_unpriced and terms(names.get(item["client"].lower(), item["client"])) is None))

    zero = [s for s in fresh if not (zero_minutes or s["durationMinutes"] > 0)]
    done = [s for s in ended if (s["project"], s["sessionId"]) in invoiced]
    still_open = [s for s in report.sessions if s["billable"] and s["durationMinutes"] is None]
    return Invoice(sections=sections, open_sessions=counted(still_open), zero_minute_sessions=counted(zero),
                   already_invoiced=counted(done), unpriced_clients=tuple(unpriced),
                   unpriced_ai_turns=unpriced_turns, warnings=warnings)


def _session_lines(items: list[dict[str, Any]], report: ActivityReport, billing: ClientBilling) -> list[InvoiceLine]:
    out = []
    for item in items:
        if _billed(item) == 0 and item["durationMinutes"] > 0:
            continue  # wholly beside earlier sessions of the client: it bills nothing, and gets no 0.00 line
        start, end = printed_span(item, report.zone)
        days = (end.date() - start.date()).days
        began, ended = span_clock(start, end)
        hours = _hours(item["billableHours"])
        task = shown(item["taskSlug"] or item["summary"] or f"Work on {item['project']}")
        notes = ([shown(item["summary"])] if item["taskSlug"] and item["summary"] else []) + [
            d.get("url") or d.get("sha") or d.get("title") or d["type"] for d in item["deliverables"]]
        out.append(InvoiceLine(
            date=f"{start:%Y-%m-%d} {began}–{ended}" + (f" (+{days}d)" if days else ""),
            project=item["project"], description=task, notes=tuple(notes), sessions=1,
            duration_minutes=_billed(item), hours=hours, rate=_rate(billing, item["project"]),
            amount=line_amount(hours, billing.rate_for(item["project"]), billing.currency),
            period=_within(report, start.date(), end.date())))
    return out


def _within(report: ActivityReport, first, last) -> tuple[str, str]:
    """A line's ``(first day, last day)`` (``YYYY-MM-DD``) within the report's period: a session
    of the last evening that runs past midnight ended the line on a day after the period (the
    CSV's ``to`` said 2026-12-01 of a November invoice; its Factur-X line said 2026-11-30)."""
    if report.bounds.until_exclusive is not None:
        end = (report.bounds.until_exclusive - timedelta(microseconds=1)).astimezone(report.zone).date()
        last = max(first, min(last, end))
    return f"{first}", f"{last}"


def _ai_cost_line(items: list[dict[str, Any]], report: ActivityReport, billing: ClientBilling) -> list[InvoiceLine]:
    """The AI usage line (``aiCostMargin`` set): the sessions' API-equivalent cost passed through
    with the margin, one unit; none without the term or without a cost."""
    if billing.ai_cost_margin is None:
        return []
    cost = sum((Decimal(str(i.get("costUsd") or "0")) for i in items), Decimal(0))
    if cost <= 0:
        return []
    amount = billing.ai_cost_amount(cost, minor_unit(billing.currency))
    last = max(from_iso(i["startTime"]).astimezone(report.zone).date() for i in items)
    conversion = "" if billing.currency == "USD" else f", × {billing.ai_cost_exchange_rate} {billing.currency}/USD"
    unpriced = sum(int(i.get("unpricedTurns") or 0) for i in items)
    left = (f"; {unpriced} turn{'s' if unpriced != 1 else ''} of models without a price "
            f"({', '.join(report.unpriced_models) or 'unknown'}) not in it" if unpriced else "")
    return [InvoiceLine(date=f"{last}", project="AI usage",
                        description=f"AI usage at API prices: USD {cost:.4f} + {billing.ai_cost_margin} %",
                        notes=(f"API-equivalent cost of the agents' turns in these sessions{conversion}{left}",),
                        sessions=0, duration_minutes=0, hours=Decimal(1), rate=amount, amount=amount, unit="C62")]


def _project_lines(items: list[dict[str, Any]], report: ActivityReport, billing: ClientBilling) -> list[InvoiceLine]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        groups.setdefault(item["project"], []).append(item)
    out = []
    for project in sorted(groups):
        mine = groups[project]
        first = from_iso(mine[0]["startTime"]).astimezone(report.zone).date()
        last = from_iso(mine[-1]["startTime"]).astimezone(report.zone).date()
        ended = max(from_iso(i.get("endTime") or i["startTime"]).astimezone(report.zone).date() for i in mine)
        hours = sum((_hours(i["billableHours"]) for i in mine), Decimal("0.00"))
        tasks = sorted({i["taskSlug"] for i in mine if i["taskSlug"]}, key=_natural)  # invoices-6 before -11
        listed = ", ".join(tasks[:6]) + (f" and {len(tasks) - 6} more" if len(tasks) > 6 else "")
        # each summary without its closing stop: they are joined with "; " ("fixed it.; OK" read badly)
        work = list(dict.fromkeys(shown(i["summary"], 120).rstrip(" .;,") for i in mine
                                  if i["summary"] and not i["taskSlug"] and shown(i["summary"], 120).rstrip(" .;,")))
        worked = "; ".join(work[:3]) + (f"; and {len(work) - 3} more" if len(work) > 3 else "")
        n = len(mine)
        # the days printed are the line's period (its from/to in the CSV and the XML): a session past
        # midnight ended the line a day later there than on the page (found by two billing people)
        period = _within(report, first, max(last, ended))
        out.append(InvoiceLine(
            date=period[0] if period[0] == period[1] else f"{period[0]} – {period[1]}",  # broken before the dash
            project=project, description=f"Work on {project}: {n} {'session' if n == 1 else 'sessions'}",
            notes=((f"Tasks: {listed}",) if tasks else ()) + ((worked,) if work else ()), sessions=n,
            duration_minutes=sum(_billed(i) for i in mine), hours=hours,
            rate=_rate(billing, project), amount=line_amount(hours, billing.rate_for(project), billing.currency),
            period=period))
    return out


def parse_issued(value: str | None, report: ActivityReport, now: datetime | None = None) -> date:
    """The issue date: ``value`` (ISO ``YYYY-MM-DD``) or today in the report's zone.

    Raises
    ------
    InvalidDateError
        ``Invalid issued date: ...``.
    """
    if value is None or not value.strip():
        return (now or utcnow()).astimezone(report.zone).date()
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise InvalidDateError("issued", value) from None


def invoice_context(report: ActivityReport, invoice: Invoice, *, number: str | None = None,
                    issued: date | None = None, lines: str = "project", now: datetime | None = None) -> dict[str, Any]:
    """Everything ``invoice.html.j2`` needs (amounts as formatted strings and as Decimals)."""
    zone = report.zone
    now = now or utcnow()
    return {
        "title": f"Invoice {number}" if number else "Draft invoice",
        "number": number,
        "issued": (issued or now.astimezone(zone).date()).isoformat(),
        "dated": number is not None or issued is not None,  # a draft without --issued is not issued yet
        "invoice": invoice,
        "sections": invoice.sections,
        "totals": invoice.totals,
        "lines": lines,
        "zone": zone_name(zone),
        # an open bound: the dates of the sessions it bills (not of 0-minute or invoiced ones it leaves off)
        "period": period_text(report.bounds, zone, [s for section in invoice.sections for s in section.sessions]
                              or report.sessions),
        "projects": ", ".join(report.projects) if report.projects is not None else "all projects",
        "client_filter": report.client,
        "client_names": report.client_names,  # the legal names, as the timesheet and the issued invoice print them
        "total_hours": f"{invoice.hours:.2f}",
        "total_duration": format_minutes(invoice.minutes),
        "rounding_policy": ROUNDING_POLICY_PRINTED,
        "overlap_policy": report.overlap_policy,
        "generated": now.astimezone(zone).strftime("%Y-%m-%d %H:%M"),
        "money": format_money,
        "rate": format_rate,
    }


def render_invoice_pdf(report: ActivityReport, settings: Settings, output: Path, *, lines: str = "project",
                       number: str | None = None, issued: date | None = None, user_templates: Path | None = None,
                       now: datetime | None = None, vault_root: Path | None = None,
                       config: str = "the config file", overwrite: bool = False,
                       invoiced: Collection[tuple[str, str]] = (), zero_minutes: bool = False,
                       skip_unpriced: bool = False) -> tuple[Path, Invoice]:
    """Write the invoice PDF for ``report`` with the terms of ``settings`` (atomically); an
    existing file is replaced only with ``overwrite``. ``invoiced``, ``zero_minutes``,
    ``skip_unpriced``: as :func:`build_invoice`.

    Returns
    -------
    tuple[Path, Invoice]
        The file written and the invoice it shows.

    Raises
    ------
    UnpricedClientError, ReportError, InvalidFieldError
        A client without terms; nothing to bill; a bad output path (inside ``vault_root``
        included) or template. Nothing is written then.
    """
    forbidden = (vault_root,) if vault_root else ()
    check_output_path(output, forbidden, overwrite=overwrite)
    html, invoice = invoice_html(report, settings, lines=lines, number=number, issued=issued,
                                 user_templates=user_templates, now=now, config=config, invoiced=invoiced,
                                 zero_minutes=zero_minutes, skip_unpriced=skip_unpriced)
    return write_pdf(html, output, user_templates or templates_dir(), forbidden, overwrite), invoice


def invoice_html(report: ActivityReport, settings: Settings, *, lines: str = "project", number: str | None = None,
                 issued: date | None = None, user_templates: Path | None = None, now: datetime | None = None,
                 config: str = "the config file", invoiced: Collection[tuple[str, str]] = (),
                 zero_minutes: bool = False, skip_unpriced: bool = False) -> tuple[str, Invoice]:
    """The invoice of ``report`` with the terms of ``settings`` as HTML (``invoice.html.j2``,
    the user's folder first), and the invoice it shows: what :func:`render_invoice_pdf`
    writes and :func:`invoice_pdf_bytes` returns. Without ``number`` it is a draft.
    ``invoiced``: sessions on issued invoices (``ledger.invoiced_sessions``), left off;
    ``zero_minutes``: sessions of 0 minutes billed too (:func:`build_invoice`).

    Raises
    ------
    UnpricedClientError, ReportError
        A client without terms; nothing to bill; a missing or broken template.
    """
    invoice = build_invoice(report, settings.billing_for, lines, config, invoiced=invoiced, zero_minutes=zero_minutes,
                            skip_unpriced=skip_unpriced)
    context = invoice_context(report, invoice, number=number, issued=issued, lines=lines, now=now)
    return render_html("invoice.html.j2", context, user_templates), invoice


def invoice_pdf_bytes(report: ActivityReport, settings: Settings, *, lines: str = "project",
                      number: str | None = None, issued: date | None = None, user_templates: Path | None = None,
                      now: datetime | None = None, config: str = "the config file",
                      invoiced: Collection[tuple[str, str]] = ()) -> tuple[bytes, Invoice]:
    """The invoice PDF of ``report`` as bytes (a download: nothing is written), and the
    invoice it shows; parameters as :func:`invoice_html`.

    Raises
    ------
    UnpricedClientError, ReportError
        As :func:`invoice_html`; a resource the template names that cannot be loaded.
    """
    html, invoice = invoice_html(report, settings, lines=lines, number=number, issued=issued,
                                 user_templates=user_templates, now=now, config=config, invoiced=invoiced)
    return render_pdf_bytes(html, user_templates or templates_dir()), invoice


def invoice_summary(invoice: Invoice, report: ActivityReport, output: Path | None = None) -> dict[str, Any]:
    """The invoice as every interface answers it (camelCase): ``{output?, totalBillableHours
    (float), totalDurationMinutes (int), totals: {CURRENCY: {amount (decimal string, the
    currency's minor unit: the net), tax, gross, billableHours, clients}}, lines (int: printed lines),
    items (the printed lines: client, currency and :meth:`InvoiceLine.wire`),
    openSessions (int: not billed, still open), leftOff: {alreadyInvoiced, zeroMinutes, open} (int:
    billable sessions of the period not billed, as an issued invoice stores them) and unpricedTurns
    (int: turns left out of the AI cost), warnings (list of str: what ``invoice issue`` would
    refuse), unpricedClients (list of str: left off for want of terms, with ``skip_unpriced``), timezone}``."""
    summary: dict[str, Any] = {} if output is None else {"output": str(output)}
    summary.update({
        "totalBillableHours": float(invoice.hours),
        "totalDurationMinutes": invoice.minutes,
        "totals": {t.currency: {"amount": str(t.amount), "tax": str(t.tax), "gross": str(t.gross),
                                "billableHours": float(t.hours), "clients": list(t.clients)} for t in invoice.totals},
        "lines": sum(len(s.lines) for s in invoice.sections),
        "items": [{"client": section.client, "currency": section.currency, **line.wire()}
                  for section in invoice.sections for line in section.lines],
        "openSessions": invoice.open_sessions,
        "leftOff": {"alreadyInvoiced": invoice.already_invoiced, "zeroMinutes": invoice.zero_minute_sessions,
                    "open": invoice.open_sessions, "unpricedTurns": invoice.unpriced_ai_turns},
        "warnings": invoice.warnings,
        "unpricedClients": list(invoice.unpriced_clients),
        "timezone": report.wire()["timezone"],
    })
    return summary
