"""``memo invoice issue|list|show|credit``: issued invoices and credit notes (SPEC §9)."""

from __future__ import annotations

from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Iterator, Optional

import typer

from ...config import config_path
from ...domain.errors import InvalidDateError, InvalidFieldError
from .common import (_emit, _grouped, _safe, _zone, app, err, left_off_note, out,
                     say_duplicate_invoices, state)
from .reports import _REPORT_FILTERS, _TEMPLATES_HELP, _activity_report, _implicit_scope, _user_templates, said_scope

invoice_app = typer.Typer(help="Issued invoices: numbered, stored in the vault, never billing a session twice; "
                               "credit notes cancel them.", no_args_is_help=True)
app.add_typer(invoice_app, name="invoice")

_OUTPUT = typer.Option(None, "--output", "-o", help="Also write the PDF here (the vault keeps its own copy).")
_FORCE = typer.Option(False, "--force", help="Replace the output file if it exists (never a symbolic link).")


def _date(value: Optional[str], name: str) -> Optional[date]:
    if value is None or not value.strip():
        return None
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise InvalidDateError(name, value) from None


def _said(summary: dict) -> str:
    kind = "credit note" if summary["kind"] == "creditNote" else "invoice"
    named = summary["number"] + (f" (ref {summary['ref']})" if summary.get("ref") else "")
    worked = f" (work until {summary['workedUntil']})" if summary.get("workedUntil") else ""  # the service period's end
    line = (f"{kind} {named} for {summary['client']}: {summary['periodStart']} – {summary['periodEnd']}{worked}, "
            f"{summary['billableHours']} h, net {summary['currency']} {_grouped(summary['net'])}, VAT "
            f"{_grouped(summary['tax'])}, total {_grouped(summary['gross'])}; issued {summary['issued']}")
    changed = "; its file was changed since it was issued" if summary.get("changedOnDisk") else ""
    changed += "; its PDF is missing" if summary.get("pdfMissing") else ""
    twice = "".join(f"\n  warning: {warning}" for warning in summary.get("warnings", []))
    if summary["kind"] == "creditNote":
        return line + f", cancels {summary['credits']}" + changed + twice
    status = f"credited by {summary['creditedBy']}" if summary.get("creditedBy") else "issued"
    replaces = f"; replaces {summary['replaces']}" if summary.get("replaces") else ""
    return line + f", due {summary['due']}; status: {status}" + replaces + changed + twice


def _copy_fields(copy: Path | str | None) -> dict:
    """``output`` (the copy written) or ``copyError`` (why it could not be, after issuing)."""
    if copy is None:
        return {}
    return {"copyError": copy} if isinstance(copy, str) else {"output": str(copy)}


def _warn_copy(summary: dict) -> None:
    if summary.get("copyError"):
        err.print(f"warning: {summary['number']} is issued and stored, but its copy was not written: "
                  f"{summary['copyError']}; copy it with memo invoice show {summary['number']} -o FILE")


_OFFLINE = typer.Option(False, "--offline", help="With vault-git: number it without pulling the other machines' "
                                                 "invoices first (when the remote cannot be reached).")


def _hear_what_the_daemon_invoiced() -> None:
    """Before a ``--here`` invoice of a hybrid laptop: pull, so it leaves off what the team daemon
    invoiced since the last pull (found by a breaker: billed twice).

    Raises
    ------
    InvalidFieldError
        ``here``: the daemon did not answer and no readable record of what it invoiced is kept
        (``.memo/sync/team-invoiced.json`` lost or broken: every session would read as not invoiced).
    """
    from ...services import sync
    from ...vault import ledger
    from ...services.store import shell_cwd

    pulled = sync.pull(state.store, cwd=shell_cwd())
    if pulled["error"] is None and not pulled.get("note"):
        return
    if not ledger.team_invoiced_known(state.store.root):
        raise InvalidFieldError("here", f"what the team daemon invoiced of this laptop's sessions is not known here "
                                        f"({ledger.TEAM_INVOICED_FILE} is missing or cannot be read) and the pull "
                                        f"did not bring it ({pulled['error'] or pulled.get('note')}): issue once "
                                        "memo sync pull goes through")
    err.print(_safe(f"warning: the team daemon did not answer ({pulled['error'] or pulled.get('note')}): this "
                    "invoice leaves off what it invoiced as of the last pull, not since"))


@contextmanager
def _shared_numbering(offline: bool) -> Iterator[dict]:
    """:func:`~memo_analytics.reports.issuing.vault_git_numbering` of this run, its warnings said."""
    from ...reports.issuing import vault_git_numbering

    with vault_git_numbering(state.store, state.settings, offline) as shared:
        yield shared
    say_duplicate_invoices(shared)
    if shared.get("error"):
        err.print(_safe(f"note: issued and stored, not pushed yet ({shared['error']}); memo sync git pushes it"))


@invoice_app.command("issue")
def invoice_issue(
    since: Optional[str] = _REPORT_FILTERS["since"], until: Optional[str] = _REPORT_FILTERS["until"],
    client: Optional[str] = _REPORT_FILTERS["client"], project: Optional[str] = _REPORT_FILTERS["project"],
    all_projects: bool = _REPORT_FILTERS["all_projects"], tz: Optional[str] = _REPORT_FILTERS["tz"],
    lines: str = typer.Option("project", "--lines", help="One line per project (default) or per session."),
    issued: Optional[str] = typer.Option(None, "--issued", help="Issue date YYYY-MM-DD (default: today; an earlier "
                                                               "date backdates the invoice, its terms still run "
                                                               "from today)."),
    zero_minutes: bool = typer.Option(False, "--zero-minutes", help="Bill sessions of 0 minutes too."),
    output: Optional[Path] = _OUTPUT, force: bool = _FORCE,
    templates: Optional[Path] = typer.Option(None, "--templates", help=_TEMPLATES_HELP),
    offline: bool = _OFFLINE,
    replaces: Optional[str] = typer.Option(None, "--replaces", help="The number of the invoice this one corrects "
                                           "(cancelled by a credit note first): the invoice names it."),
    here: bool = typer.Option(False, "--here", help="On a laptop in hybrid mode: issue it from this laptop's own "
                                                   "work (the team's invoices are issued on the daemon)."),
    exchange_rate: Optional[str] = typer.Option(None, "--exchange-rate", help="For VAT charged in a currency other "
                                                "than your country's: how much of your currency one unit of the "
                                                "invoice's is worth at its tax point (its VAT is stated in yours too)."),
) -> None:
    """Issue the invoice of one client: the next number, stored with its Factur-X PDF in the vault."""
    from ...reports.invoice import LINE_MODES
    from ...analytics.activity import INTERNAL_CLIENT  # the analytics (polars) only when it runs: not for --help
    from ...reports.issuing import billing_the_same, document_summary, issue_invoice, same_period_invoices, stored_now

    if client is None or not client.strip():  # never issued by elimination: a number cannot be taken back
        raise InvalidFieldError("client", "an issued invoice bills one client: give --client NAME "
                                          "(memo report invoice drafts every client's)")
    for name, value in (("since", since), ("until", until)):
        if value is None or not value.strip():
            raise InvalidFieldError(name, "an issued invoice bills a period: give --since and --until "
                                          "(e.g. --since 2026-06-01 --until 2026-06-30)")
    if lines not in LINE_MODES:
        raise InvalidFieldError("lines", f"{lines!r} is not one of {', '.join(LINE_MODES)}")
    if output is not None and output.suffix.lower() in (".csv", ".xlsx"):  # before a number is taken
        raise InvalidFieldError("output", f"{output}: an issue writes the invoice's PDF (-o FILE.pdf); its lines as "
                                          f"issued, for a spreadsheet: memo invoice show NUMBER -o {output.name} "
                                          "once it is issued")
    issued_on = _date(issued, "issued")
    rate = None
    if exchange_rate is not None:
        from decimal import Decimal, InvalidOperation

        written = exchange_rate.strip().replace(",", ".")
        try:
            if "_" in written:  # Decimal reads 1_0 as 10
                raise InvalidOperation
            rate = Decimal(written)
        except InvalidOperation:
            raise InvalidFieldError("exchangeRate", f"{exchange_rate!r} is not a number (e.g. 0.7912)") from None
    held = _implicit_scope(project, all_projects)
    if held is not None:
        _refuse_part_of_the_clients_work(held, since, until, client, tz)
    if here and state.settings.mode == "hybrid":
        _hear_what_the_daemon_invoiced()
    with _shared_numbering(offline) as shared, said_scope(project, all_projects):
        document, copy = issue_invoice(state.store, state.settings,
                                       lambda: _activity_report(project, all_projects, since, until, client, tz),
                                       lines=lines, issued=issued_on,
                                       zero_minutes=zero_minutes, output=output, overwrite=force,
                                       user_templates=_user_templates(templates), config=str(config_path()),
                                       replaces=replaces, here=here, exchange_rate=rate,
                                       unfiled=lambda: _activity_report(project, all_projects, since, until,
                                                                        INTERNAL_CLIENT, tz))
    document = stored_now(state.store.root, document)
    from ...vault import ledger

    overlapping = same_period_invoices(ledger.documents(state.store.root), document)
    summary = {**document_summary(document), **_copy_fields(copy), "leftOff": document.meta["leftOff"],
               **({"samePeriodAs": overlapping} if overlapping else {}),
               **({"vaultGit": shared} if shared else {})}
    _emit(summary, _said_issued)
    if here and state.settings.mode == "hybrid":  # the push carries no invoice: the daemon may bill them again
        err.print(_safe(f"warning: the team daemon does not hear of {document.number}: its sessions still read as "
                        "not invoiced there, and an invoice issued there may bill them again"))
    if not state.json:
        left_off_note(summary["leftOff"])
        twice = billing_the_same(ledger.documents(state.store.root), document, overlapping)
        for ref, count in twice:  # issued on another machine at the same moment (vault-git): said as it is
            err.print(_safe(f"warning: {ref} bills {count} of the same sessions (issued on another machine meanwhile): "
                            f"cancel one with memo invoice credit {ref} (or {document.ref}) before either is sent"))
        late = [ref for ref in overlapping if ref not in dict(twice)]
        if late:  # late work of a billed month: a second invoice the client should expect
            err.print(_safe(f"note: {', '.join(late)} already billed {document.meta.get('client')} for part of "
                            f"this period; {document.number} bills only sessions none of them did"))
    _warn_copy(summary)



def _refuse_part_of_the_clients_work(held: str, since: Optional[str], until: Optional[str], client: str,
                                     tz: Optional[str]) -> None:
    """An issue held to the current folder's repository (no ``--project``, no ``--all``) while the
    client has work of the period to bill in other projects is refused before a number is taken:
    it billed the repository's project alone, "December" without a word of the rest (found by a
    billing person issuing from a client's repository).

    Raises
    ------
    InvalidFieldError
        ``Invalid project``: names the other projects and both ways on (``--all``, ``--project``).
    """
    everything = _activity_report(None, True, since, until, client, tz)
    to_bill = [item for item in everything.sessions if item.get("billableHours") is not None and not item.get("invoice")]
    others = sorted({item["project"] for item in to_bill if item["project"] != held})
    if others and any(item["project"] == held for item in to_bill):
        raise InvalidFieldError("project", f"only project {held} was read (the repository of the current folder), "
                                           f"and {everything.client or client} has work of the period to bill in "
                                           f"{', '.join(others)} too: --all issues the invoice of all of it, "
                                           f"--project {held} of this project alone")


@invoice_app.command("credit")
def invoice_credit(
    number: str = typer.Argument(..., help="The invoice to cancel: its number (or the ref memo invoice list "
                                           "shows for a second document of one number)."),
    reason: Optional[str] = typer.Option(None, "--reason", help="Why (printed on the credit note)."),
    issued: Optional[str] = typer.Option(None, "--issued", help="Issue date YYYY-MM-DD (default: today)."),
    output: Optional[Path] = _OUTPUT, force: bool = _FORCE,
    templates: Optional[Path] = typer.Option(None, "--templates", help=_TEMPLATES_HELP),
    offline: bool = _OFFLINE,
) -> None:
    """Cancel an issued invoice with a credit note; its sessions can be invoiced again."""
    from ...reports.issuing import credit_invoice, document_summary, stored_now

    issued_on = _date(issued, "issued")
    with _shared_numbering(offline) as shared:
        document, copy = credit_invoice(state.store, state.settings, number, issued=issued_on,
                                        reason=reason, output=output, overwrite=force,
                                        user_templates=_user_templates(templates))
    document = stored_now(state.store.root, document)
    summary = {**document_summary(document), **_copy_fields(copy), **({"vaultGit": shared} if shared else {})}
    _emit(summary, _said_issued)
    _warn_copy(summary)
    if not reason:  # it cannot be undone: the person learns what it says
        err.print(f"note: no --reason given: credit note {summary.get('number')} says only that it cancels invoice "
                  f"{number}")


def _said_issued(summary: dict) -> None:
    """An issued invoice or credit note: its line, where it is stored, and its copy (``-o``)."""
    out.print(f"issued {_said(summary)}\n  {summary['pdf']} (PDF/A-3 e-invoice: its Factur-X EN 16931 XML "
              "inside, for the client's accounting software)" + (f"\n  copy: {summary['output']}"
                                                                if summary.get("output") else ""))


@invoice_app.command("list")
def invoice_list() -> None:
    """Every issued invoice and credit note, in the order issued."""
    from ...reports.issuing import document_summary
    from ...vault import ledger

    docs = ledger.documents(state.store.root)
    items = [document_summary(d, docs) for d in docs]
    for number in ledger.lost_documents(state.store.root, docs):
        err.print(f"warning: {number} was issued here but its file invoices/{number}.md is gone: put it back (from a "
                  "backup); until then no invoice or credit note is issued (its sessions would be billed again, or "
                  "its invoice credited twice)")

    def human(found: dict) -> None:
        if not found["items"]:
            out.print("no invoice issued yet (memo invoice issue)")
        for item in found["items"]:
            out.print(_said(item))

    _emit({"items": items}, human)


@invoice_app.command("show")
def invoice_show(
    number: str = typer.Argument(..., help="Invoice or credit note number (or ref)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write a copy of its PDF here (FILE.pdf), or "
                                          "its lines as issued (FILE.csv or FILE.xlsx)."),
    force: bool = _FORCE,
    render: bool = typer.Option(False, "--render", help="With -o FILE.pdf: render the PDF anew from the stored "
                                "document (its PDF lost): the figures issued, not the sent file byte for byte."),
    templates: Optional[Path] = typer.Option(None, "--templates", help=_TEMPLATES_HELP),
) -> None:
    """One issued document: its figures, lines and sessions (-o FILE.pdf: a copy of its PDF, --render: made anew
    from the stored document; -o FILE.csv or FILE.xlsx: its lines as issued, for the bookkeeper)."""
    from ...reports.issuing import document_summary, export_copy, render_copy
    from ...vault import ledger

    document = ledger.document(state.store.root, number)
    summary = {**document_summary(document, ledger.documents(state.store.root)),
               "lines": document.meta["lines"], "sessionIds": document.meta["sessions"]}
    if render and (output is None or not output.name.lower().endswith(".pdf")):
        raise InvalidFieldError("render", "--render writes a PDF: give -o FILE.pdf")
    if output is not None and output.name.lower().endswith((".csv", ".xlsx")):  # `.csv` alone has no suffix
        from ...reports.tables import issued_table, output_format, write_table

        fmt = output_format(output, (state.store.root,))
        summary["output"] = str(write_table(issued_table(document.meta, fmt), output, (state.store.root,), force))
    elif output is not None:
        if not output.name.lower().endswith(".pdf"):  # it said "must end with .pdf" of the table formats too
            raise InvalidFieldError("output", f"{output} must end with .pdf (a copy of its PDF), .csv or .xlsx (its "
                                              "lines as issued)")
        if render:
            summary["output"] = str(render_copy(document, output, (state.store.root,), force,
                                                _user_templates(templates)))
            summary["rendered"] = True
        else:
            summary["output"] = str(export_copy(document, output, (state.store.root,), force))

    def human(s: dict) -> None:
        out.print(_said(s))
        for line in s["lines"]:
            figures = (f"{line['hours']} h × {_grouped(line['rate'])} = {_grouped(line['amount'])}"
                       if line.get("unit", "HUR") == "HUR" else _grouped(line["amount"]))  # a lump sum (the AI cost): no hours, no rate
            out.print(f"  {line['project']}: {line['description']} — {figures}")
        from ...domain.clock import printed_span, resolve_zone, span_clock, zone_name

        # in the zone the document was issued in (its lines' dates), not this machine's today
        zone = resolve_zone(document.meta["timezone"]) if document.meta.get("timezone") else _zone()
        for item in s["sessionIds"]:
            minutes = item.get("billedMinutes", item["durationMinutes"])
            began, ended = span_clock(*printed_span(item["startTime"], item["durationMinutes"], zone),
                                      "%Y-%m-%d %H:%M")  # as every report prints it
            out.print(f"    session {item['sessionId']} ({item['project']}): {minutes} minute{'' if minutes == 1 else 's'}"
                      f" billed, {began} – {ended} {zone_name(zone)}")
        if s.get("rendered"):
            out.print(f"  copy: {s['output']} (rendered anew from the stored document: the figures issued, "
                      "not the file sent byte for byte)")
        elif s.get("output"):
            out.print(f"  copy: {s['output']}")

    _emit(summary, human)
