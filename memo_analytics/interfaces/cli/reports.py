"""``memo activity`` and ``memo report timesheet``."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import typer
from rich.table import Table

from typing import TYPE_CHECKING

from ...config import config_path
from ...domain.clock import from_iso, printed_span, span_clock
from ...domain.errors import MemoError
from ...domain.wire import counted
from ...services.requests import ActivityReportRequest
from ...services.store import shell_cwd
from .common import (
    answer_of,
    _build,
    _check_scope,
    _emit,
    _grouped,
    _refuse_missing_vault,
    _safe,
    _scope_line,
    _short,
    app,
    err,
    left_off_note,
    out,
    report_app,
    state,
)

if TYPE_CHECKING:  # the analytics (polars, DuckDB) and PDF rendering load when a report runs
    from ...analytics.activity import ActivityReport

# ---------------------------------------------------------------- activity & reports


def _activity_report(project: Optional[str], all_projects: bool, since: Optional[str], until: Optional[str],
                     client: Optional[str], tz: Optional[str], owner: Optional[str] = None) -> ActivityReport:
    """The report of the ``activity_report`` action for these options (one request model
    for every interface)."""
    from ...analytics.activity import report_for

    return report_for(state.store, _activity_request(project, all_projects, since, until, client, tz, owner))


def _activity_request(project: Optional[str], all_projects: bool, since: Optional[str], until: Optional[str],
                      client: Optional[str], tz: Optional[str], owner: Optional[str] = None) -> ActivityReportRequest:
    _check_scope(project, all_projects)
    return _build(ActivityReportRequest, project=project, cross_project=all_projects, cwd=shell_cwd(),
                  since=since, until=until, client=client, tz=tz, owner=owner)


def _implicit_scope(project: Optional[str], all_projects: bool) -> str | None:
    """The one project a report was held to without ``--project`` or ``--all`` (the repository of
    the current folder), else None."""
    if project or all_projects:
        return None
    scope = state.store.scope(None, False, shell_cwd())
    return scope[0] if scope and len(scope) == 1 else None


@contextmanager
def said_scope(project: Optional[str], all_projects: bool, client: Optional[str] = None,
               unfiled: Optional[Callable[[], Any]] = None) -> Iterator[None]:
    """"Nothing to invoice" of a report held to the current folder's repository says so, with
    ``--all``: month-end invoicing from a terminal in another client's repository found nothing
    and said nothing of where it looked (found by a new user); with ``client`` and ``unfiled``
    (the period's report of internal work) a draft says the client's work filed under internal,
    as the issue does."""
    from ...domain.errors import ReportError
    from ...reports.issuing import with_unfiled_work

    try:
        yield
    except ReportError as exc:
        if not str(exc).startswith("Nothing to invoice"):
            raise
        said = with_unfiled_work(exc, client, unfiled) if client and unfiled is not None else exc
        held = _implicit_scope(project, all_projects)
        if held is None:
            raise said from None
        raise ReportError(f"{said}; only project {held} was read (the repository of the current folder): --all "
                          "reads every project") from None


_REPORT_FILTERS = dict(
    since=typer.Option(None, "--since", help="Sessions starting at or after (ISO date or time)."),
    until=typer.Option(None, "--until", help="Sessions starting at or before (a date covers the whole day)."),
    client=typer.Option(None, "--client", help="Client (case-insensitive; 'internal' for none)."),
    project=typer.Option(None, "--project", help="One project (default: the cwd's repository, else all)."),
    all_projects=typer.Option(False, "--all", "--cross-project",
                              help="Every project of the vault and of every further vault of the config."),
    tz=typer.Option(None, "--tz", help="IANA time zone for dates and display (default: the config's timezone, else the machine's)."),
    owner=typer.Option(None, "--owner", help="One person's sessions: their owner (git identity), case-insensitive; "
                                             "'unknown' for none recorded."),
)


_OUTPUT_HELP = "File to write: .pdf, .csv or .xlsx (the suffix picks the format)."
_TEMPLATES_HELP = ("Your own template folder, tried before ours (default: templatesDir of the config file): "
                   "timesheet.html.j2, invoice.html.j2 (drafts), issued.html.j2 (issued invoices and credit "
                   "notes), report.css.")


def _user_templates(given: Optional[Path]) -> Optional[Path]:
    """``--templates``, else the config file's ``templatesDir``, else None (ours only)."""
    return given if given is not None else state.settings.templates_dir


#: Sessions the human table of ``memo activity`` shows (the latest); --json has every one.
_SESSION_ROWS = 50


def _print_activity(data: dict, explicit_project: bool = True) -> None:
    """The human tables of an activity report (its wire form: this machine's or a team daemon's)."""
    from ...domain.clock import format_minutes, resolve_zone

    zone = resolve_zone(data["timezone"], "timezone")
    out.print(_scope_line(None if data["projects"] == "all" else data["projects"], explicit_project)
              + (f" · client: {data['client']}" if data["client"] else "")
              + (_safe(f" · person: {data['owner']}") if data.get("owner") else "")
              + _period_part(data, zone)
              + f" · times in {data['timezone']}")
    if data["client"] and not data["sessions"]:
        err.print(_safe(f"note: the client {data['client']!r} has no session in this period and scope"))
    elif not data["sessions"]:  # empty tables alone read as a failure
        err.print("note: no session in this period and scope" + (
            "" if data["projects"] == "all" else " (--all: every project)"))
    people = [("person", data["byOwner"])] if len(data["byOwner"]) > 1 else []  # a team's vault
    for title, groups in (("client", data["byClient"]), ("project", data["byProject"]), *people):
        table = Table(title=f"Billable time by {title}")
        table.add_column(title)
        table.add_column("sessions", justify="right")
        table.add_column("billed", justify="right")  # h:mm as billed (rounding, parallel sessions)
        table.add_column("hours", justify="right")
        for name, bucket in groups.items():
            table.add_row(_short(name, 40), str(bucket["sessions"]), format_minutes(bucket["durationMinutes"]),
                          f"{bucket['billableHours']:.2f}")
        out.print(table)
    if 0 < len(data["byDay"]) <= 62:
        title = f"Billable time by day ({data['timezone']})"
        crossing = sum(1 for s in data["sessions"] if s["endTime"] and s["durationMinutes"] and
                       from_iso(s["startTime"]).astimezone(zone).date() != from_iso(s["endTime"]).astimezone(zone).date())
        days = Table(title=title, min_width=len(title) + 2)
        for column, justify in (("day", "left"), ("billed", "right"), ("hours", "right")):
            days.add_column(column, justify=justify)
        for day, bucket in data["byDay"].items():
            days.add_row(day, format_minutes(bucket["durationMinutes"]), f"{bucket['billableHours']:.2f}")
        out.print(days)
        if crossing:  # said as what it is: a bare "sessions split at midnight" under the table read as a heading
            out.print(f"{counted(crossing, 'session')} past midnight: split between "
                      f"{'its' if crossing == 1 else 'their'} days", soft_wrap=True, highlight=False)
    shown = data["sessions"][-_SESSION_ROWS:]
    left_out = len(data["sessions"]) - len(shown)
    sessions = Table(title=f"Sessions (times in {data['timezone']})" + (
        f": the last {len(shown)} of {len(data['sessions'])}" if left_out else ""))
    # which invoice billed it, once any did: "what is left to invoice" had no answer here
    invoiced = any(s.get("invoice") for s in data["sessions"])
    for column in ("start", "end", "project", "client", "billable", "minutes", "billed",
                   *(("invoice",) if invoiced else ()), "task / summary"):
        sessions.add_column(column)
    for s in shown:
        # the span the timesheet prints: the start to the minute, the end that start plus the minutes
        start, end = span_clock(*printed_span(s["startTime"], s["durationMinutes"], zone), "%Y-%m-%d %H:%M")
        end = end if s["endTime"] and s["durationMinutes"] is not None else (
            from_iso(s["endTime"]).astimezone(zone).strftime("%Y-%m-%d %H:%M") if s["endTime"] else "open")
        sessions.add_row(start, end, s["project"], _short(s["client"], 30), "yes" if s["billable"] else "no",
                         "" if s["durationMinutes"] is None else str(s["durationMinutes"]),
                         "" if s["billedMinutes"] is None else str(s["billedMinutes"]),
                         *((_safe(s.get("invoice") or ""),) if invoiced else ()),
                         _short(s["taskSlug"] or s["summary"] or f"Work on {s['project']}", 40))  # as the timesheet says
    out.print(sessions)
    if left_out:
        out.print(f"{left_out} earlier sessions are not shown (the totals count them): memo --json activity lists "
                  "every session; --since/--until narrow the period")
    still_open = sum(1 for s in data["sessions"] if s["durationMinutes"] is None)  # listed above, counted nowhere
    on_invoices = sum(1 for s in data["sessions"] if s.get("invoice"))
    out.print(f"Total billable: {format_minutes(data['totalDurationMinutes'])} "
              f"({data['totalBillableHours']:.2f} h) · prompts: {data['totalPrompts']}"
              + (f" · {still_open} open session{'s' if still_open != 1 else ''} not counted until "
                 f"{'they end' if still_open != 1 else 'it ends'}" if still_open else "")
              + (f" · {on_invoices} of the sessions on issued invoices" if on_invoices else "")
              + _internal_part(data))
    if data["costByModel"]:
        models = Table(title="AI cost by model (API-equivalent, USD, priced at each turn's date)")
        for column, justify in (("model", "left"), ("turns", "right"), ("input", "right"), ("cache read", "right"),
                                ("cache write", "right"), ("output", "right"), ("cost USD", "right")):
            models.add_column(column, justify=justify)
        for model, totals in data["costByModel"].items():
            tokens = totals["tokens"]
            models.add_row(_short(model, 40), str(totals["turns"]), f"{tokens['input']:,}", f"{tokens['cacheRead']:,}",
                           f"{tokens['cacheWrite']:,}", f"{tokens['output']:,}",
                           "no price" if totals["unpricedTurns"] == totals["turns"] else totals["costUsd"])
        out.print(models)
        out.print(f"AI cost: USD {data['totalCostUsd']}"
                  + (f" (no price for {', '.join(data['unpricedModels'])})" if data["unpricedModels"] else ""))


def _period_part(data: dict, zone) -> str:
    """`` · 2026-03-01 – 2026-03-31`` (local days; a bound with a time as that time): the period a
    report covers — a week or a month asked for was named nowhere (found by a developer's first hour)."""
    from datetime import datetime, time, timedelta

    from ...domain.clock import from_iso

    since, until = data.get("since"), data.get("untilExclusive")
    if not since and not until:
        return ""

    def shown(moment: str, end: bool) -> str:
        instant = from_iso(moment)
        local = instant.astimezone(zone)
        # a day's bound — its first instant, 01:00 where the clocks skip midnight (America/Santiago) — is
        # the day itself (the last one, for an end)
        if instant == datetime.combine(local.date(), time(), tzinfo=zone).astimezone(instant.tzinfo):
            return str(local.date() - timedelta(days=1) if end else local.date())
        if end:  # an end given with a time is kept to the millisecond after it
            local -= timedelta(milliseconds=1)
        return local.strftime("%Y-%m-%d %H:%M" + (":%S" if local.second else ""))

    return f" · {shown(since, False) if since else '…'} – {shown(until, True) if until else '…'}"


def _internal_part(data: dict) -> str:
    """`` · H h of it internal (no client)`` when the total holds billable work of no client: SPEC
    §4 counts it (a session is billable unless marked not), which read as hours to bill someone
    (found by a developer's first hour); ``memo session edit ID --no-billable`` leaves one out."""
    internal = next((row for name, row in data["byClient"].items() if name.lower() == "internal"), None)
    if not internal or not internal.get("durationMinutes") or len(data["byClient"]) == 1:
        return ""
    return f" · {internal['billableHours']:.2f} h of it internal (no client)"


@app.command("activity")
def activity(
    since: Optional[str] = _REPORT_FILTERS["since"], until: Optional[str] = _REPORT_FILTERS["until"],
    client: Optional[str] = _REPORT_FILTERS["client"], project: Optional[str] = _REPORT_FILTERS["project"],
    all_projects: bool = _REPORT_FILTERS["all_projects"], tz: Optional[str] = _REPORT_FILTERS["tz"],
    owner: Optional[str] = _REPORT_FILTERS["owner"],
    lake: bool = typer.Option(False, "--lake", help="Every vault exported into the team's Iceberg tables "
                              "(memo export iceberg; lake.catalog and lake.warehouse), not this vault."),
) -> None:
    """Billable activity: totals by client and project, sessions, prompts."""
    from ...analytics.activity import report_for

    if lake:
        _lake_activity(project, all_projects, since, until, client, tz, owner)
        return
    request = _activity_request(project, all_projects, since, until, client, tz, owner)
    data = answer_of("activity_report", request, lambda: report_for(state.store, request).wire())
    _refuse_missing_vault()  # after the request's own checks: a bad date is named first
    _emit(data, lambda data: _print_activity(data, explicit_project=bool(project) or all_projects))


def _lake_activity(project: Optional[str], all_projects: bool, since: Optional[str], until: Optional[str],
                   client: Optional[str], tz: Optional[str], owner: Optional[str]) -> None:
    """``memo activity --lake``: the report of every vault of the lake (SPEC §10); every project
    unless ``--project`` names one (the current folder's repository means nothing to a team's lake)."""
    from ...analytics.activity import ActivityRequest
    from ...analytics.lake import lake_activity, lake_target
    from ...domain.ids import validate_slug

    request = ActivityRequest(projects=[validate_slug(project, "project")] if project else None, since=since,
                              until=until, client=client, tz=tz, owner=owner)
    target = lake_target(state.settings)
    report = lake_activity(target, request, state.settings)
    # the lake keeps a session's cost, not its models': costByModel is empty, totalCostUsd adds the sessions'
    data = {**report.wire(), "lake": target.shown(), "vaults": report.vaults}

    def human(data: dict) -> None:
        _print_activity(data, explicit_project=True)
        unpriced = f" (no price for {', '.join(data['unpricedModels'])})" if data["unpricedModels"] else ""
        out.print(_safe(f"AI cost: USD {data['totalCostUsd']}{unpriced} · read from {data['lake']['catalog']}: "
                        f"{counted(len(data['vaults']), 'vault')} ({', '.join(data['vaults'])})"), soft_wrap=True)
        if data["vaults"]:  # (an analyst looked for the table of a vault's report)
            out.print("AI cost by model: the lake keeps each session's cost, not its models' (memo activity on a "
                      "vault gives it by model)", soft_wrap=True)
        if not data["vaults"]:
            err.print("note: no vault was exported into this lake yet: memo export iceberg writes this one's")

    _emit(data, human)


@report_app.command("timesheet")
def report_timesheet(
    output: Path = typer.Option(..., "--output", "-o", help=_OUTPUT_HELP),
    since: Optional[str] = _REPORT_FILTERS["since"], until: Optional[str] = _REPORT_FILTERS["until"],
    client: Optional[str] = _REPORT_FILTERS["client"], project: Optional[str] = _REPORT_FILTERS["project"],
    all_projects: bool = _REPORT_FILTERS["all_projects"], tz: Optional[str] = _REPORT_FILTERS["tz"],
    owner: Optional[str] = _REPORT_FILTERS["owner"],
    templates: Optional[Path] = typer.Option(None, "--templates", help=_TEMPLATES_HELP),
    force: bool = typer.Option(False, "--force", help="Replace the output file if it exists (never a symbolic link)."),
) -> None:
    """Timesheet (PDF, CSV or XLSX by the suffix of -o): one row per billable session, subtotals per client, the total;
    --owner: one person's."""
    from ...reports.tables import export_timesheet, output_format

    output_format(output, (state.store.root,))  # a bad suffix or place is refused before the report runs
    report = _activity_report(project, all_projects, since, until, client, tz, owner)
    _refuse_missing_vault()
    path = export_timesheet(report, output, _user_templates(templates), vault_root=state.store.root, overwrite=force)
    result = {"output": str(path), "totalDurationMinutes": report.total_duration_minutes,
              "totalBillableHours": report.total_billable_hours, "timezone": report.wire()["timezone"]}
    _emit(result, lambda r: out.print(f"wrote {r['output']}: total billable {r['totalBillableHours']:.2f} h "
                                      f"(times in {r['timezone']})"))
    if not any(item.get("billableHours") is not None for item in report.sessions):  # written, and said: empty
        held = _implicit_scope(project, all_projects)
        err.print("note: no billable session in this period and scope: the timesheet lists none"
                  + (f" (only project {held} was read, the repository of the current folder: --all reads every "
                     "project)" if held else ""))
    still_open = sum(1 for item in report.sessions if item.get("durationMinutes") is None and item.get("billable"))
    if still_open:  # as the invoice says it: nothing of the period is left off without a word
        err.print(f"note: {still_open} open session{'s are' if still_open != 1 else ' is'} not on it "
                  f"(a session is listed once it ends)")




def _invoice_preview(report: ActivityReport, lines: str, zero_minutes: bool, skip_unpriced: bool,
                     unfiled: Callable[[Any], list[str]]) -> None:
    """``memo report invoice`` without ``-o``: the draft's lines and totals printed, nothing written
    (a billing person looked before writing a file: the command had required one)."""
    from ...config import config_path
    from ...reports.invoice import build_invoice, invoice_summary
    from ...reports.issuing import draft_refusals
    from ...vault.ledger import invoiced_in

    invoice = build_invoice(report, state.settings.billing_for, lines, str(config_path()),
                            invoiced=invoiced_in(state.store.root), zero_minutes=zero_minutes,
                            skip_unpriced=skip_unpriced)
    result = invoice_summary(invoice, report)
    # printed or --json, as written; what an issue would refuse of a client said beside the figures
    result["warnings"] = warnings = [*invoice.warnings, *draft_refusals(state.settings, invoice, state.store.root), *unfiled(invoice)]

    def human(r: dict[str, Any]) -> None:
        for item in r["items"]:
            quantity = f"{item['hours']} h" if item.get("unit", "HUR") == "HUR" else item["hours"]  # C62: one item
            out.print(_safe(f"{item['client']} · {item['description']}: {quantity} × {item['rate']} = "
                            f"{item['currency']} {_grouped(item['amount'])}"))
        for currency, total in r["totals"].items():
            out.print(_safe(f"{currency}: {total['billableHours']:.2f} h, net {_grouped(total['amount'])}, tax "
                            f"{_grouped(total['tax'])}, total {_grouped(total['gross'])}"))
        err.print("note: a draft, nothing written: -o FILE.pdf (.csv, .xlsx) writes it; memo invoice issue issues a "
                  "numbered one")

    _emit(result, human)
    _say_draft_notes(result, warnings)


def _say_draft_notes(result: dict[str, Any], warnings: list[str]) -> None:
    """What a draft invoice (printed or written) says on stderr: the sessions it left off, the
    clients without billing terms, and what an issued invoice would refuse."""
    if not state.json:
        left_off_note(result["leftOff"])
        if result["unpricedClients"]:
            err.print(_safe(f"note: left off for want of billing terms: {', '.join(result['unpricedClients'])}"))
    for warning in warnings:  # what the draft prints that an issued invoice would refuse
        err.print(_safe(f"warning: {warning}"))


@report_app.command("invoice")
def report_invoice(
    output: Optional[Path] = typer.Option(None, "--output", "-o", help=_OUTPUT_HELP + " Without it the draft's lines are printed here and nothing is written."),
    since: Optional[str] = _REPORT_FILTERS["since"], until: Optional[str] = _REPORT_FILTERS["until"],
    client: Optional[str] = _REPORT_FILTERS["client"], project: Optional[str] = _REPORT_FILTERS["project"],
    all_projects: bool = _REPORT_FILTERS["all_projects"], tz: Optional[str] = _REPORT_FILTERS["tz"],
    lines: str = typer.Option("project", "--lines",
                              help="One line per client and project (default) or per session: project|session."),
    number: Optional[str] = typer.Option(None, "--number", hidden=True,
                                         help="Refused: numbered invoices are issued (memo invoice issue)."),
    issued: Optional[str] = typer.Option(None, "--issued", help="Date the draft as issued on YYYY-MM-DD (default: undated)."),
    zero_minutes: bool = typer.Option(False, "--zero-minutes", help="Bill sessions of 0 minutes too."),
    skip_unpriced: bool = typer.Option(False, "--skip-unpriced",
                                       help="Leave off the clients without billing terms (named on stderr) rather "
                                            "than refuse."),
    templates: Optional[Path] = typer.Option(None, "--templates", help=_TEMPLATES_HELP),
    force: bool = typer.Option(False, "--force", help="Replace the output file if it exists (never a symbolic link)."),
) -> None:
    """Draft PDF invoice: hours × each client's hourly rate (the config's clients."NAME".hourlyRate), one total per currency.
    A draft is never numbered: `memo invoice issue` issues one."""
    from ...reports.invoice import LINE_MODES, invoice_summary, parse_issued
    from ...reports.issuing import draft_refusals
    from ...reports.tables import export_invoice, output_format
    from ...vault.ledger import invoiced_in

    if number is not None:
        raise MemoError("Invalid number: a draft has no number; issue a numbered invoice with `memo invoice issue` "
                        "(the next of its sequence, stored in the vault, its sessions marked invoiced)")
    if lines not in LINE_MODES:
        raise MemoError(f"Invalid lines: {lines!r} is not one of {', '.join(LINE_MODES)}")
    def unfiled(invoice: Any) -> list[str]:
        return _unfiled_warnings(invoice, project, all_projects, since, until, tz)

    def internal() -> ActivityReport:
        from ...analytics.activity import INTERNAL_CLIENT

        return _activity_report(project, all_projects, since, until, INTERNAL_CLIENT, tz)

    if output is None:  # a look at the draft before a file is written
        with said_scope(project, all_projects, client, internal):
            _invoice_preview(_activity_report(project, all_projects, since, until, client, tz), lines, zero_minutes,
                             skip_unpriced, unfiled)
        return
    output_format(output, (state.store.root,))  # a bad suffix or place is refused before the report runs
    report = _activity_report(project, all_projects, since, until, client, tz)
    dated = parse_issued(issued, report) if issued else None  # a draft is not issued: no date unless given
    with said_scope(project, all_projects, client, internal):
        path, invoice = export_invoice(report, state.settings, output, lines=lines, issued=dated,
                                       user_templates=_user_templates(templates), vault_root=state.store.root,
                                       config=str(config_path()), overwrite=force,
                                       invoiced=invoiced_in(state.store.root), zero_minutes=zero_minutes,
                                       skip_unpriced=skip_unpriced)
    result = invoice_summary(invoice, report, path)
    result["warnings"] = warnings = [*invoice.warnings, *draft_refusals(state.settings, invoice, state.store.root), *unfiled(invoice)]
    _emit(result, lambda r: out.print(
        f"wrote {r['output']}: {r['totalBillableHours']:.2f} h; "
        + "; ".join(f"{c} net {_grouped(v['amount'])}, total {_grouped(v['gross'])}" for c, v in r["totals"].items())
        + f" (times in {r['timezone']})"))
    _say_draft_notes(result, warnings)


def _unfiled_warnings(invoice: Any, project: Optional[str], all_projects: bool, since: Optional[str],
                      until: Optional[str], tz: Optional[str]) -> list[str]:
    """What the draft's clients' mapped projects billed internal in the period (an issue refuses
    it): :func:`~memo_analytics.reports.issuing.unfiled_notes`."""
    from ...analytics.activity import INTERNAL_CLIENT
    from ...reports.issuing import unfiled_notes

    clients = [s.client for s in invoice.sections if s.client.strip().lower() != INTERNAL_CLIENT]
    return [note + "; memo invoice issue refuses it until then" for note in unfiled_notes(
        state.settings, clients, lambda: _activity_report(project, all_projects, since, until, INTERNAL_CLIENT, tz),
        state.store)]
