"""Issued invoices and credit notes (SPEC §9, issue 15 points 2–3): numbered, stored
immutably, sessions never billed twice, the PDF a Factur-X (EN 16931) invoice.

``memo report invoice`` stays a draft: unnumbered, stored nowhere. :func:`issue_invoice`
turns the same lines into a document:

- **One client per invoice** (one buyer, one currency, one VAT treatment): the filters must
  leave exactly one client with something to bill.
- **Never twice**: sessions on an issued invoice that no credit note cancels are left off
  (the document says how many); sessions of 0 minutes are left off unless asked for.
- **Numbers**: the next of the sequence of ``[invoice] numberFormat`` (``{year}-{seq:04d}``
  by default: ``2026-0001``; the sequence restarts each year when the format has
  ``{year}``), allocated under the vault lock; invoices and credit notes share it.
- **Dates**: the period is always printed as dates (the report's bounds, else the first and
  last billed session's local dates); the issue date is the day of issuing (EN 16931 BT-2:
  the date the invoice was issued), in the configured zone (the issuer's calendar, whatever
  ``--tz`` the period is read in; credit notes alike) — but never before the last document
  issued: numbers follow issue dates (an earlier ``--issued`` is refused); the due date is the
  payment terms after the issue date, or after the day of issuing when ``--issued`` dates the
  invoice earlier (a backdated invoice is not overdue when it arrives).
- **Sendable**: the issuer's name, postal address, country, VAT id or tax number and IBAN, the
  client's postal address and country are required (the key to set is named); reverse charge
  needs both VAT ids.
- **Money** per :mod:`.invoice`: lines, net, VAT (one category: S with the client's
  ``taxRate``, AE for ``reverseCharge``, E otherwise, with the sentence the law asks for),
  gross = amount due.
- **The document** (:mod:`~memo_analytics.vault.ledger`) holds every figure as text, the
  issuer and client profiles as they were, the lines and the sessions; the PDF is rendered
  from it (PDF/A-3b) with its CII XML (``factur-x`` library, EN 16931 profile, checked
  against the XML schema it ships) embedded.

:func:`credit_invoice` cancels an invoice with a credit note (type 381, the invoice as its
preceding reference, the same lines and amounts): its sessions can be invoiced again.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Iterator

from ..analytics.activity import INTERNAL_CLIENT, ActivityReport
from ..config import Settings
from ..domain.billing import ClientBilling, Issuer, due_date
from ..domain.clock import from_iso, to_iso, utcnow, zone_name
from ..domain.errors import InvalidFieldError, MemoError, ReportError
from ..domain.shell import shell_word
from ..domain.rounding import ROUNDING_POLICY_PRINTED
from ..index import snapshot
from ..services.store import VaultStore
from ..vault import ledger
from ..vault.io import atomic_write_bytes
from ..vault.redact import mask_url, redact_secrets
from .facturx_xml import facturx_pdf
from .invoice import Invoice, build_invoice, format_money, format_rate, minor_unit, number_column_mm
from .render import check_output_path, render_html, render_pdf_bytes, templates_dir

_TITLES = {ledger.INVOICE: "Invoice", ledger.CREDIT_NOTE: "Credit note"}


def billing_period(report: ActivityReport, sessions: list[dict[str, Any]]) -> tuple[date, date]:
    """``(first day, last day)`` of the period, as dates in the report's zone: the report's
    bounds where given, else the first and last billed session's start date."""
    zone = report.zone
    starts = [from_iso(s["startTime"]).astimezone(zone).date() for s in sessions]
    first = report.bounds.since.astimezone(zone).date() if report.bounds.since else min(starts)
    if report.bounds.until_exclusive is not None:
        last = (report.bounds.until_exclusive - timedelta(microseconds=1)).astimezone(zone).date()
    else:
        last = max(from_iso(s["endTime"]).astimezone(zone).date() for s in sessions)
    return first, last


def worked_until(report: ActivityReport, sessions: list[dict[str, Any]], period: tuple[date, date]) -> date | None:
    """The last day (in the report's zone) a session of ``sessions`` ended on, when after the
    period's last day — a session begun on the period's last evening that ran past midnight —
    else None. An invoice bills a session by its start; its service period (§14 UStG: the time
    of supply; Factur-X BT-72/BT-74) ends when the work did (found by a bookkeeper: 1.62 h of
    1 January stated as supplied in December)."""
    # the last instant worked: a session ending at midnight worked none of the next day (a breaker)
    ends = [(from_iso(s["endTime"]) - timedelta(microseconds=1)).astimezone(report.zone).date()
            for s in sessions if s.get("endTime")]
    last = max(ends, default=None)
    return last if last is not None and last > period[1] else None


def _check_sendable(issuer: Issuer, client_name: str, client: ClientBilling) -> None:
    _check_issuer_sendable(issuer)
    _check_client_sendable(issuer, client_name, client)


def _check_issuer_sendable(issuer: Issuer) -> None:
    # every setting of the issuer that is missing, in one message (not one per attempt)
    needed = [(f"invoice.{m}", f"invoice.{m}") for m in issuer.missing_for_sending()]
    if not (issuer.vat_id or issuer.tax_id):
        needed.append(("invoice.vatId", "invoice.vatId or invoice.taxId (its VAT id or tax number)"))
    if not issuer.iban:
        needed.append(("invoice.iban", "invoice.iban, with invoice.bic and invoice.bank (where to pay)"))
    if needed:
        raise InvalidFieldError(needed[0][0], "an issued invoice names its issuer: set "
                                + "; ".join(text for _, text in needed) + " (memo config set KEY VALUE)")


def draft_refusals(settings: Settings, invoice: Any, root: Path | None = None) -> list[str]:
    """What ``memo invoice issue`` would refuse of each client of a draft (its address, its tax
    treatment, the reverse charge's conditions), one line each, for the draft to say beside its
    figures: a draft printed "VAT 0 % — Reverse charge" for a client in the issuer's own country
    without a word, where the issue refused it (found by a billing person); with the vault's
    ``root``, an issued document whose file is lost (the draft may bill its sessions again)."""
    said = []
    if root is not None:
        try:
            ledger.refuse_lost_documents(root, ledger.documents(root))
        except MemoError as exc:
            said.append(f"{exc} (this draft may bill them)")
    priced = [(section.client, settings.billing_for(section.client)) for section in invoice.sections]
    priced = [(name, client) for name, client in priced if client is not None]
    if priced:
        try:  # the issuer's keys too: a newcomer mended the client's address, then met the issuer's, then the tax
            _check_issuer_sendable(settings.invoice)
        except InvalidFieldError as exc:
            said.append(f"memo invoice issue refuses every client's: {exc}")
    for name, client in priced:
        said += [f"{name}: memo invoice issue refuses it: {problem}"
                 for problem in _client_problems(settings.invoice, name, client)]
    national = national_currency(settings.invoice.country, date.today())
    for section in invoice.sections:  # the issue asks for a rate (found by a breaker: said only at the click)
        if national and section.tax != 0 and section.currency.upper() != national:
            said.append(f"{section.client}: memo invoice issue asks for the rate of its tax point: it charges VAT in "
                        f"{section.currency}, stated in {national} too (--exchange-rate N, {national} for 1 "
                        f"{section.currency}: on the command line, the dashboard cannot give it)")
    return said


def _client_problems(issuer: Issuer, client_name: str, client: ClientBilling) -> list[str]:
    """Every refusal of :func:`_check_client_sendable` at once (its currency, name and address,
    its tax treatment), for a draft to say them in one pass, not one per attempt."""
    problems = []
    for check in (_check_client_party, _check_client_tax):
        try:
            check(issuer, client_name, client)
        except InvalidFieldError as exc:
            problems.append(str(exc))
    return problems


def _check_client_sendable(issuer: Issuer, client_name: str, client: ClientBilling) -> None:
    """The client's part of :func:`_check_sendable`."""
    _check_client_party(issuer, client_name, client)
    _check_client_tax(issuer, client_name, client)


def _check_client_party(issuer: Issuer, client_name: str, client: ClientBilling) -> None:
    """The client's currency, name and postal address (:func:`_check_client_sendable`)."""
    key = f'clients."{client_name}"'
    if minor_unit(client.currency) < Decimal("0.01"):  # BHD, KWD, OMR …: three decimals
        raise InvalidFieldError(f"{key}.currency", f"an issued invoice carries EN 16931 (Factur-X) amounts, which have "
                                                   f"at most 2 decimals; {client.currency} has 3, so it cannot be "
                                                   "issued in it (memo report invoice drafts it)")
    if not client.name and not client_name:
        raise InvalidFieldError(f"{key}.name", "the client needs a name")
    missing = [name for name, value in (("address", client.address), ("city", client.city),
                                        ("country", client.country)) if not value]
    if missing:
        raise InvalidFieldError(f"{key}.{missing[0]}", "an issued invoice names the client's postal address: set "
                                + ", ".join(f"{key}.{m}" for m in missing))


def _compact_vat_id(vat_id: str | None) -> str:
    return "".join(ch for ch in (vat_id or "") if ch.isalnum()).upper()


def _check_client_tax(issuer: Issuer, client_name: str, client: ClientBilling) -> None:
    """The client's VAT treatment (:func:`_check_client_sendable`)."""
    key = f'clients."{client_name}"'
    compact = _compact_vat_id
    if client.vat_id and compact(client.vat_id) == compact(issuer.vat_id):  # a copy-paste: an invoice to oneself
        raise InvalidFieldError(f"{key}.vatId", f"{client.vat_id} is the issuer's own VAT id (invoice.vatId); set "
                                                "the client's own VAT id there")
    category, _ = client.tax_category()
    if category == "AE":
        _check_reverse_charge(key, issuer, client, compact)
    if category == "E" and not client.tax_exemption_reason:
        # EN 16931 BR-E-10: no VAT needs its reason; a forgotten taxRate was issued as 0 % without a word
        if client.tax_rate is not None:
            raise InvalidFieldError(f"{key}.taxExemptionReason", "a taxRate of 0 charges no VAT: say why no VAT is due "
                                                                 "(e.g. a small business, or a service outside the "
                                                                 "scope of EU VAT)")
        raise InvalidFieldError(f"{key}.taxRate", "not set, nor reverseCharge or taxExemptionReason: the invoice "
                                                  "would charge no VAT without saying why; set taxRate (e.g. 19), "
                                                  "reverseCharge = true (a business in another EU country, with its "
                                                  "VAT id), or taxExemptionReason (why no VAT is due: e.g. a small "
                                                  "business, or a service outside the scope of EU VAT)")
    if category == "S" and not (issuer.vat_id or issuer.tax_id):  # EN 16931 BR-S-02: VAT id or tax number
        raise InvalidFieldError("invoice.vatId", "charging VAT needs the issuer's VAT id or tax number "
                                                 "(invoice.vatId or invoice.taxId)")


def _eu_states() -> set[str]:
    """EU member states by ISO 3166-1 code: the intra-EU reverse charge (Art. 196 of Directive
    2006/112/EC) applies between two of them (python-stdnum's list, less Northern Ireland's ``XI``,
    in the EU's VAT area for goods only)."""
    from stdnum.eu import vat

    return {code.upper() for code in vat.MEMBER_STATES} - {"XI"}


def _check_reverse_charge(key: str, issuer: Issuer, client: ClientBilling, compact: Callable[[str | None], str]) -> None:
    """``reverseCharge`` is the intra-EU B2B reverse charge: issuer and client in two EU member
    states, the client's VAT id of its own country. A German issuer's invoice to a German client
    (or to one in the USA with any VAT id) was issued at 0 % VAT citing Art. 196 — VAT the issuer
    still owed, on an invoice that passes every EN 16931 check."""
    states = _eu_states()
    if issuer.country not in states:
        raise InvalidFieldError(f"{key}.reverseCharge", f"the EU reverse charge is for an issuer in the EU, and "
                                                        f"invoice.country is {issuer.country}")
    if client.country not in states:
        raise InvalidFieldError(f"{key}.reverseCharge", f"the EU reverse charge is for a business client in another EU "
                                                        f"country, and the client's country is {client.country}: set "
                                                        f"taxExemptionReason instead (why no VAT is due, e.g. a "
                                                        f"service whose place of supply is outside the EU)")
    if client.country == issuer.country:
        raise InvalidFieldError(f"{key}.reverseCharge", f"the EU reverse charge is for a client in another EU country, "
                                                        f"and the client is in {client.country} as the issuer is: "
                                                        f"set taxRate (the VAT you charge)")
    if not (client.vat_id and issuer.vat_id):  # after the countries: a US client has no VAT id to give
        raise InvalidFieldError(f"{key}.vatId" if not client.vat_id else "invoice.vatId",
                                "reverse charge needs the VAT ids of both the issuer and the client")
    prefix = {"EL": "GR"}.get(compact(client.vat_id)[:2], compact(client.vat_id)[:2])
    if prefix != client.country:
        raise InvalidFieldError(f"{key}.vatId", f"{client.vat_id} is a VAT id of {prefix}, and the client's country "
                                                f"is {client.country}: the reverse charge needs its VAT id there")


def _refuse_the_daemons_number(store: VaultStore, number: str, number_format: str) -> None:
    """A hybrid laptop's own invoice (``--here``) under a number its team daemon issued is refused
    before it is taken: two invoices of one number (found by a breaker: the laptop's 2026-0001 beside
    the daemon's, its activity naming the daemon's for both).

    Raises
    ------
    InvalidFieldError
        ``invoice.numberFormat``: the number is one the last pull named as the daemon's.
    """
    named = {invoice for invoice, _ in ledger.team_invoiced(store.root).values()}
    if number in named:
        raise InvalidFieldError("invoice.numberFormat", f"the next number here, {number}, is one the team daemon "
                                                        "issued: this laptop's own invoices need a sequence of their "
                                                        f"own — set invoice.numberFormat to one the daemon does not use "
                                                        f"(e.g. \"ANA-{{year}}-{{seq:04d}}\"; it is {number_format!r})")


def _check_in_order(issued: date, latest: date | None, today: date) -> None:
    if issued > today:
        raise InvalidFieldError("issued", f"{issued} is after today ({today}); a document is dated the day it is "
                                          "issued or earlier, never later (numbers follow issue dates)")
    if latest is not None and issued < latest:
        raise InvalidFieldError("issued", f"{issued} is before the last issued document ({latest}); numbers follow "
                                          "issue dates, so a new one is dated that day or later")


def _party(profile: ClientBilling | Issuer, fallback_name: str) -> dict[str, Any]:
    stored = profile.model_dump(mode="json", by_alias=True)  # every key, unset ones null: templates read them all
    for key in ("hourlyRate", "projectRates", "numberFormat", "taxRate", "reverseCharge", "taxExemptionReason",
                "paymentTermsDays", "footer"):
        stored.pop(key, None)
    stored["name"] = profile.name or fallback_name
    stored["postalLines"] = profile.postal_lines()
    return stored


def _document_meta(kind: str, number: str, key: str, sequence: int, number_format: str, issued: date, due: date,
                   period: tuple[date, date], report_zone: str, invoice: Invoice, issuer: Issuer, client_name: str,
                   client: ClientBilling, now: datetime) -> dict[str, Any]:
    [section] = invoice.sections
    return {
        "kind": kind, "number": number, "numberFormat": number_format, "sequenceKey": key, "sequence": sequence,
        "issued": issued.isoformat(), "due": due.isoformat(),
        "periodStart": period[0].isoformat(), "periodEnd": period[1].isoformat(), "timezone": report_zone,
        "client": client_name, "currency": section.currency,
        "taxCategory": section.tax_category, "taxRate": str(section.tax_rate), "taxNote": section.tax_note,
        **({"roundingNote": section.rounding_note} if section.rounding_note else {}),
        "net": str(section.amount), "tax": str(section.tax), "gross": str(section.gross),
        "billableHours": str(section.hours), "durationMinutes": section.minutes,
        "lines": [line.wire() for line in section.lines],
        "sessions": [{"project": s["project"], "sessionId": s["sessionId"], "startTime": s["startTime"],
                      "endTime": s["endTime"], "durationMinutes": int(s["durationMinutes"]),
                      "billedMinutes": int(s.get("billedMinutes", s["durationMinutes"]) or 0),
                      "billableHours": f"{s['billableHours'] or 0:.2f}"} for s in section.sessions],
        "leftOff": {"alreadyInvoiced": invoice.already_invoiced, "zeroMinutes": invoice.zero_minute_sessions,
                    "open": invoice.open_sessions, "unpricedTurns": invoice.unpriced_ai_turns},
        "issuer": _party(issuer, issuer.name or ""), "buyer": _party(client, client_name),
        "footer": issuer.footer, "createdAt": to_iso(now),
    }


def national_currency(country: str | None, on: date) -> str | None:
    """The currency of ``country`` (ISO 3166 alpha-2) on the day ``on``, as the CLDR knows it
    (Babel): ``GBP`` for ``GB``, ``EUR`` for ``DE`` (and for ``BG`` from 2026); None when unknown."""
    if not country:
        return None
    from babel.numbers import get_territory_currencies

    try:
        found = get_territory_currencies(country.upper(), start_date=on, end_date=on, tender=True)
    except Exception:  # noqa: BLE001 - an unknown territory
        return None
    return found[0] if found else None


#: The largest exchange rate an invoice states (national units for one of its currency), not reached.
MAX_EXCHANGE_RATE = Decimal(1_000_000_000)


def tax_currency_fields(country: str | None, currency: str, tax: Decimal, issued: date,
                        exchange_rate: Decimal | None) -> dict[str, str]:
    """``{taxCurrency, exchangeRate, taxInTaxCurrency}`` of an invoice that charges VAT in a
    currency other than the issuer's national one: EU VAT law (Directive 2006/112/EC Art. 230,
    §16 (6) UStG) and HMRC (VAT Notice 700 §16.3) want the VAT stated in the national currency too
    (found by a UK billing person: USD 30.42 of VAT, no GBP figure). Empty when none is charged,
    or in the national currency.

    Raises
    ------
    InvalidFieldError
        ``exchangeRate``: needed and not given (or not above 0), or given and not needed.
    """
    national = national_currency(country, issued)
    needed = national is not None and tax != 0 and currency.upper() != national
    if exchange_rate is None:
        if needed:
            raise InvalidFieldError("exchangeRate", f"the invoice charges VAT in {currency}, and an invoice of an "
                                                    f"issuer in {country} states its VAT in {national} too: give the "
                                                    f"rate of its tax point, --exchange-rate N ({national} for 1 "
                                                    f"{currency}); nothing was issued")
        return {}
    if not needed:
        own = national or "the issuer's"
        charged = f"its VAT in {currency}" if tax != 0 else "no VAT"
        raise InvalidFieldError("exchangeRate", f"is for VAT charged in a currency other than {own}; this invoice "
                                                f"charges {charged}: leave it out; nothing was issued")
    # below a billion national units for one (a typo such as 1e26 ended in a traceback: found by a breaker)
    if not exchange_rate.is_finite() or exchange_rate <= 0 or exchange_rate.normalize().as_tuple().exponent < -6 \
            or exchange_rate >= MAX_EXCHANGE_RATE:
        raise InvalidFieldError("exchangeRate", f"{exchange_rate} is not a rate: give a number above 0 and below "
                                                f"{MAX_EXCHANGE_RATE:,} with at most 6 decimals; nothing was issued")
    from decimal import ROUND_HALF_UP

    # as written, its zeros cut (0.79120000 → 0.7912; 400 stays 400, never 4E+2: found by a breaker)
    text = format(exchange_rate.normalize(), "f")
    return {"taxCurrency": national, "exchangeRate": text,
            "taxInTaxCurrency": str((tax * exchange_rate).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))}


def document_html(meta: dict[str, Any], user_templates: Path | None = None) -> str:
    """The HTML of an issued document (``issued.html.j2``), rendered from its stored meta only."""
    currency, iban = meta["currency"], meta["issuer"].get("iban") or ""

    def money(text: str) -> str:
        return format_money(Decimal(text), currency)

    context = {
        "title": f"{_TITLES[meta['kind']]} {meta['number']}", "doc": meta, "money": money,
        "money_in": lambda text, unit: format_money(Decimal(text), unit),
        "rate": lambda text: format_rate(Decimal(text), currency), "rounding_policy": ROUNDING_POLICY_PRINTED,
        "iban": " ".join(iban[i:i + 4] for i in range(0, len(iban), 4)),
        "widths": number_column_mm([format_rate(Decimal(line["rate"]), currency) for line in meta["lines"]],
                                   [money(line["amount"]) for line in meta["lines"]], ""),
    }
    return render_html("issued.html.j2", context, user_templates)


def check_issued_template(user_templates: Path | None) -> None:
    """Refuse, before anything is issued, a template folder that shapes drafts
    (``invoice.html.j2``) but not issued documents (``issued.html.j2``): an issued invoice or
    credit note is stored for good, and it would be printed with our layout without a word.

    Raises
    ------
    InvalidFieldError
        ``templates``, naming the folder and the template to add.
    """
    if user_templates is not None and (user_templates / "invoice.html.j2").is_file() \
            and not (user_templates / "issued.html.j2").is_file():
        raise InvalidFieldError("templates", f"{user_templates} has invoice.html.j2 (drafts) but no issued.html.j2, "
                                             "the template of issued invoices and credit notes, which are stored for "
                                             f"good: copy ours ({templates_dir() / 'issued.html.j2'}) there and adapt "
                                             "it; nothing was issued")


def _render(meta: dict[str, Any], user_templates: Path | None) -> bytes:
    html = document_html(meta, user_templates)
    pdf = render_pdf_bytes(html, user_templates or templates_dir(), variant="pdf/a-3b")
    return facturx_pdf(pdf, meta)


def _copy_after_issue(pdf: bytes, output: Path | None, forbidden: tuple[Path, ...], overwrite: bool) -> Path | str | None:
    """The copy of a document just stored, or why it could not be written (the document stands)."""
    try:
        return _export(pdf, output, forbidden, overwrite)
    except ReportError as exc:
        return str(exc)


def _export(pdf: bytes, output: Path | None, forbidden: tuple[Path, ...], overwrite: bool) -> Path | None:
    if output is None:
        return None
    target = check_output_path(output, forbidden, overwrite=overwrite, make_folders=True)
    try:
        atomic_write_bytes(target, pdf)
    except OSError as exc:
        raise ReportError(f"Invalid output: cannot write {target} ({exc.strerror or exc})") from None
    return target


def export_copy(document: ledger.Document, output: Path, forbidden: tuple[Path, ...], overwrite: bool = False) -> Path:
    """Write a copy of a stored document's PDF to ``output`` (checked against its recorded
    SHA-256 first: a PDF changed on disk is refused, not passed on).

    Raises
    ------
    ReportError
        The stored PDF is missing or not the one issued; a bad ``output``.
    """
    render = f"memo invoice show {document.ref} -o FILE.pdf --render renders it anew from the stored document"
    try:
        pdf = document.pdf.read_bytes()
    except FileNotFoundError:
        raise ReportError(f"the PDF of {document.number} is missing from the vault; not copied ({render})") from None
    except OSError as exc:
        raise ReportError(f"the PDF of {document.number} cannot be read ({exc.strerror or exc})") from None
    recorded = (ledger.read_state(document.path.parent.parent).get("documents") or {}).get(document.ref, {})
    if hashlib.sha256(pdf).hexdigest() != (recorded.get("pdf") or document.meta.get("pdfSha256")):
        raise ReportError(f"the PDF of {document.number} is not the one issued (its SHA-256 differs); not copied "
                          f"({render})")
    target = _export(pdf, output, forbidden, overwrite)
    assert target is not None
    return target


def render_copy(document: ledger.Document, output: Path, forbidden: tuple[Path, ...], overwrite: bool = False,
                user_templates: Path | None = None) -> Path:
    """Render a stored document's PDF anew (Factur-X, PDF/A-3b) from what the vault stored of it —
    its number, dates, issuer and client as they were, lines, sessions and every figure — and write
    it to ``output``: the copy of an invoice whose PDF was lost (found by a billing person: a
    deleted PDF could not be sent again). The figures are the ones issued; the bytes are not the
    sent file's (a new render; today's templates). The vault's own files are left as they are.

    Raises
    ------
    ReportError
        The stored document was changed since it was issued (its figures are not the ones
        issued); a bad ``output``.
    """
    if document.changed(ledger.read_state(document.path.parent.parent)):
        raise ReportError(f"{document.path.name} was changed since {document.number} was issued: its figures are "
                          "not the ones issued; not rendered")
    check_issued_template(user_templates)
    target = _export(_render(document.meta, user_templates), output, forbidden, overwrite)
    assert target is not None
    return target


def with_unfiled_work(exc: ReportError, client: str, unfiled: Callable[[], ActivityReport] | None) -> ReportError:
    """A "nothing to invoice" refusal with the period's billable work filed under ``internal``
    said beside it, and how to file it (found by a billing person: the refusal named none of it)."""
    if unfiled is None or not str(exc).startswith("Nothing to invoice") or client.strip().lower() == INTERNAL_CLIENT:
        return exc
    try:
        sessions = [s for s in unfiled().sessions if s["billable"] and s["durationMinutes"]]
    except MemoError:
        return exc
    if not sessions:
        return exc
    projects, name = sorted({s["project"] for s in sessions}), client.strip()
    return ReportError(f"{exc}; {len(sessions)} billable session{'' if len(sessions) == 1 else 's'} of this period "
                       f"bill{'s' if len(sessions) == 1 else ''} internal (no client), in {', '.join(projects[:5])}"
                       f"{', …' if len(projects) > 5 else ''}: if {name}'s, file them (memo project client "
                       f"{projects[0]} {shell_word(name)}, or memo session edit ID --client {shell_word(name)})")


def unfiled_of_client(settings: Settings, client: str, unfiled: ActivityReport,
                      named: dict[str, list[str]] | None = None,
                      filed_internal: set[tuple[str, str]] = frozenset()) -> tuple[int, list[str], bool, list[str]]:
    """``(minutes, projects, mapped, session ids)`` of the billable work of ``unfiled`` (the same period's report
    for ``internal``) in projects that bill ``client``: the config's ``projectClients`` files them
    under it, or, of a project it does not map, every session naming a client names this one
    (``named``: :func:`~memo_analytics.index.snapshot.clients_of_projects`; the digest's
    ``client_missing``) — work recorded before it was filed, left internal: an invoice of the
    period without it bills too little. ``mapped``: every such project is ``projectClients``'.
    ``filed_internal``: ``(project, session id)`` of sessions filed under ``internal`` by name (a
    person's choice, not work recorded before the project was filed: the digest lists none of them,
    and an invoice was refused for them — found by an operator)."""
    wanted = client.strip().casefold()

    def bills(project: str) -> bool:
        mapped = settings.client_of_project(project)
        if mapped:
            return mapped.strip().casefold() == wanted
        return {name.casefold() for name in (named or {}).get(project, [])} == {wanted}

    sessions = [s for s in unfiled.sessions if s["billable"] and s["durationMinutes"] and bills(s["project"])
                and (s["project"], s["sessionId"]) not in filed_internal]
    projects = sorted({s["project"] for s in sessions})
    return (sum(int(s.get("billedMinutes", s["durationMinutes"]) or 0) for s in sessions), projects,
            all(settings.client_of_project(p) for p in projects), [s["sessionId"] for s in sessions])


def unfiled_notes(settings: Settings, clients: list[str], unfiled: Callable[[], ActivityReport],
                  store: VaultStore | None = None) -> list[str]:
    """:func:`unfiled_note` of each of ``clients`` whose projects (``projectClients``' or, with
    ``store``, those whose sessions bill the client alone) hold work of the period billed internal
    (``unfiled``: builds the period's report for ``internal``, once); ``[]`` when none does or no
    session bills internal at all. What a draft warns of and an issue refuses."""
    if not clients:
        return []
    named = snapshot.clients_of_projects(store.conn) if store is not None else None
    if not (settings.project_clients or named):
        return []
    try:
        report = unfiled()
    except InvalidFieldError:  # no session bills internal at all ("no session has the client")
        return []
    filed = snapshot.sessions_filed_internal(store.conn) if store is not None else set()
    found = [(client, *unfiled_of_client(settings, client, report, named, filed)) for client in clients]
    return [unfiled_note(client, minutes, projects, mapped, sessions)
            for client, minutes, projects, mapped, sessions in found if minutes]


def unfiled_note(client: str, minutes: int, projects: list[str], mapped: bool = True,
                 sessions: list[str] = ()) -> str:
    """What :func:`unfiled_of_client` found, and the command that files it (of a project whose
    sessions bill the client, the sessions named: found by a breaker, "ID" named none)."""
    them = "it" if len(projects) == 1 else "them"
    why = (f"the config's projectClients files {them} under {client}" if mapped else
           f"{'its' if len(projects) == 1 else 'their'} other sessions bill {client}")
    named = "" if mapped or not sessions else (
        f" ({'session' if len(sessions) == 1 else 'sessions'} {', '.join(sessions[:3])}"
        f"{' …' if len(sessions) > 3 else ''}; not to bill: memo session edit {shell_word(sessions[0])} "
        f"--project {shell_word(projects[0])} --no-billable)")
    return (f"{minutes / 60:.2f} h of the period's billable work in {', '.join(projects)} bill internal, while "
            f"{why}: file it first (memo project client {projects[0]} {shell_word(client)}), or it is never billed"
            + named)


def issue_invoice(store: VaultStore, settings: Settings, report: Callable[[], ActivityReport] | ActivityReport, *,
                  lines: str = "project",
                  issued: date | None = None, zero_minutes: bool = False, output: Path | None = None,
                  overwrite: bool = False, user_templates: Path | None = None, config: str = "the config file",
                  replaces: str | None = None, now: datetime | None = None,
                  unfiled: Callable[[], ActivityReport] | None = None,
                  here: bool = False, exchange_rate: Decimal | None = None) -> tuple[ledger.Document, Path | None]:
    """Issue the invoice of ``report`` (one client): number it, store it, and copy its PDF to
    ``output`` when given. ``exchange_rate``: units of the issuer's national currency per unit of
    the invoice's, for an invoice that charges VAT in another currency — its VAT is stated in the
    national currency too (printed; Factur-X BT-6/BT-111: :func:`tax_currency_fields`). ``replaces``: the number of the invoice this one corrects, which a
    credit note cancelled; the invoice names it (printed, and as its preceding invoice, BG-3).
    ``report`` is best a callable that builds the activity report: it is then built under the
    vault lock, so a session edited meanwhile is billed as it is. ``unfiled``: the report of the
    same scope and period for ``internal`` (no client): a "nothing to invoice" refusal then says
    how much billable work of the period is filed there (often the client's own, of a project no
    ``projectClients`` maps), and an issue is refused while work of the period in a project
    ``projectClients`` files under the client bills ``internal`` (:func:`unfiled_of_client`).
    A copy that cannot be written after the invoice was stored does not undo it: the second
    value is then the error (the stored PDF can be copied with ``memo invoice show -o``).
    A laptop in hybrid mode issues only with ``here`` (its vault holds its own work; the team's is
    on the daemon, where the team's invoices are issued).

    Returns
    -------
    tuple[Document, Path | str | None]
        The stored document (``meta``: camelCase, amounts as decimal text) and the copy written
        (or why it could not be).

    Raises
    ------
    ReportError
        Nothing to bill (all already invoiced, 0 minutes, open); a bad ``output`` (checked
        before anything is issued).
    InvalidFieldError
        A report of no one client (``client``) or without both dates (``since``/``until``); several
        clients to bill (``client``); the issuer or client profile lacks what an issued
        invoice must name (the key); an issue date before the period's start, before the last
        document or after today (``issued``); a period that ends after the issue date (``until``); a
        template folder without ``issued.html.j2`` beside its ``invoice.html.j2`` (``templates``,
        :func:`check_issued_template`); ``replaces`` that is no invoice of this client cancelled by
        a credit note, or one another invoice replaces already (``replaces``); VAT charged in a
        currency not the issuer's national one without ``exchange_rate``, or a rate given for an
        invoice that needs none (``exchangeRate``).
    InvoiceNotFoundError
        No document has the number ``replaces``.
    UnpricedClientError
        The client has no rate.
    VaultBusyError
        The vault lock could not be taken.
    """
    check_issued_template(user_templates)
    if settings.mode == "hybrid" and not here:
        # a lead's laptop billed its own sessions alone, the daemon never heard of the invoice and billed
        # them again under the same number (found by a team lead)
        raise InvalidFieldError("mode", f"this laptop is in hybrid mode: its vault holds its own work, the team's is "
                                        f"on the daemon ({mask_url(settings.hybrid.remote_url or '')}), where the "
                                        "team's invoices are issued (memo invoice issue there); --here issues this "
                                        "one from this laptop's work alone")
    forbidden = (store.root,)
    if output is not None:
        check_output_path(output, forbidden, overwrite=overwrite)
    with store.lock():
        now = now or utcnow()  # taken under the lock: documents are created in the order of their numbers
        report = report() if callable(report) else report
        # one client and a period with both dates, whatever the interface (never "everything so far",
        # never to the one client a filter happened to leave)
        if not report.client:
            raise InvalidFieldError("client", "an issued invoice bills one client: its report names none")
        if report.bounds.since is None or report.bounds.until_exclusive is None:
            raise InvalidFieldError("since" if report.bounds.since is None else "until",
                                    "an issued invoice bills a period with both dates")
        docs = ledger.documents(store.root)
        ledger.refuse_lost_documents(store.root, docs)  # their sessions would be billed again
        replaced = _replaced(store, docs, replaces) if replaces is not None else None  # before "nothing to invoice"
        try:
            invoice = build_invoice(report, settings.billing_for, lines, config,
                                    invoiced=ledger.invoiced_in(store.root, docs), zero_minutes=zero_minutes)
        except ReportError as exc:
            raise with_unfiled_work(exc, report.client, unfiled) from None
        if len(invoice.sections) != 1:
            names = ", ".join(s.client for s in invoice.sections)
            raise InvalidFieldError("client", f"an issued invoice bills one client; these filters bill {names}: "
                                              "give --client")
        [section] = invoice.sections
        client = settings.billing_for(section.client)
        assert client is not None
        _check_sendable(settings.invoice, section.client, client)
        short = unfiled_notes(settings, [section.client], unfiled, store) if unfiled is not None else []
        if short:  # before a number is taken: a period short of its work
            raise InvalidFieldError("client", short[0] + "; nothing was issued")
        if replaced is not None:
            _check_correction(replaced, replaces, section)
        period = billing_period(report, section.sessions)
        worked = worked_until(report, section.sessions, period)
        latest = ledger.last_issued(docs)
        # today is the issuer's (the configured zone), whatever zone the report reads the period in:
        # one calendar for every document of the sequence, as a credit note has it
        today = now.astimezone(store.zone).date()
        issued = issued or max(today, latest or date.min)
        if issued < period[0]:
            raise InvalidFieldError("issued", f"{issued} is before the period it bills ({period[0]} – {period[1]})")
        if period[1] > issued:  # the Factur-X delivery date and period end were months ahead of the issue date
            raise InvalidFieldError("until", f"the period it bills ends {period[1]}, after the invoice's date "
                                             f"{issued}: an invoice bills work done; end the period on {issued} at the "
                                             f"latest (--until {issued}), or issue it once the period has ended")
        if worked is not None and worked > issued:
            raise InvalidFieldError("issued", f"{issued} is before the end of the work it bills (a session ended "
                                              f"{worked}): an invoice bills work done; date it {worked} or later")
        _check_in_order(issued, latest, today)
        number, key, sequence = ledger.next_number(docs, settings.invoice.number_format, issued.year,
                                                   ledger.read_state(store.root))
        if settings.mode == "hybrid":
            _refuse_the_daemons_number(store, number, settings.invoice.number_format)
        # a backdated invoice (--issued before today) is not overdue when it arrives: its terms run from today
        meta = _document_meta(ledger.INVOICE, number, key, sequence, settings.invoice.number_format, issued,
                              due_date(max(issued, today), settings.invoice, client), period, zone_name(report.zone), invoice,
                              settings.invoice, section.client, client, now)
        if worked is not None:
            meta["workedUntil"] = worked.isoformat()
        meta.update(tax_currency_fields(settings.invoice.country, meta["currency"], Decimal(meta["tax"]), issued,
                                        exchange_rate))
        if replaced is not None:
            meta.update(replaced.fields)
        pdf = _render(meta, user_templates)
        meta["pdfSha256"] = hashlib.sha256(pdf).hexdigest()
        document = ledger.write_document(store.root, meta, _summary(meta), pdf)
    return document, _copy_after_issue(pdf, output, forbidden, overwrite)


@dataclass
class _Replaced:
    """The invoice a new one corrects: ``fields`` its invoice records (``replaces``,
    ``replacesIssued``, ``replacesCancelledBy``, ``replacesRef``), and what the new one is checked
    against: the client it billed, its sessions and its period (as printed)."""

    fields: dict[str, str]
    client: str
    sessions: list[tuple[str, str]]
    period: str


def _check_correction(replaced: _Replaced, number: str, section: Any) -> None:
    """A correction bills the replaced invoice's client, and some of its work again (a mistyped
    number became a stored link).

    Raises
    ------
    InvalidFieldError
        ``replaces``: another client's invoice, or one that billed none of these sessions."""
    if replaced.client.casefold() != section.client.casefold():
        raise InvalidFieldError("replaces", f"invoice {number} billed {replaced.client}, not {section.client}")
    ours = {(s["project"], s["sessionId"]) for s in section.sessions}
    if not set(replaced.sessions) & ours:
        raise InvalidFieldError("replaces", f"invoice {number} billed none of these sessions (its period: "
                                            f"{replaced.period}); a correction bills its work again")


def _replaced(store: VaultStore, docs: list[ledger.Document], number: str) -> _Replaced:
    """The invoice ``number`` a new invoice corrects: an invoice that a credit note cancelled,
    and that no other uncancelled invoice replaces already."""
    if not number.strip():  # "--replaces $N" with N unset issued a plain invoice
        raise InvalidFieldError("replaces", "is empty: give the number of the cancelled invoice, or leave it out")
    try:
        original = ledger.document(store.root, number)
    except InvalidFieldError as exc:  # named as this option (it said "Invalid number")
        raise InvalidFieldError("replaces", exc.reason) from None
    except MemoError as exc:  # no such document
        raise InvalidFieldError("replaces", str(exc)) from None
    if original.kind != ledger.INVOICE:
        raise InvalidFieldError("replaces", f"{number} is a credit note; a corrected invoice replaces an invoice")
    cancelled = ledger.credited(docs)
    by = cancelled.get(original.ref)
    if not by:
        raise InvalidFieldError("replaces", f"invoice {number} is not cancelled: cancel it first (memo invoice credit "
                                            f"{number} --reason …), then issue its correction")
    # by its ref: two machines may have issued one number (each cancelled document is corrected once)
    twice = [d.number for d in docs if d.kind == ledger.INVOICE and d.ref not in cancelled
             and (d.meta.get("replacesRef") or d.meta.get("replaces")) == original.ref]
    if twice:
        raise InvalidFieldError("replaces", f"invoice {number} is replaced already, by {twice[0]}")
    return _Replaced({"replaces": original.number, "replacesIssued": original.meta["issued"],
                      "replacesCancelledBy": by, **({"replacesRef": original.ref} if original.ref != original.number
                                                    else {})},
                     str(original.meta.get("client", "")), list(original.sessions),
                     f"{original.meta.get('periodStart')} – {original.meta.get('periodEnd')}")


def credit_invoice(store: VaultStore, settings: Settings, number: str, *, issued: date | None = None,
                   reason: str | None = None, output: Path | None = None, overwrite: bool = False,
                   user_templates: Path | None = None, now: datetime | None = None) -> tuple[ledger.Document, Path | None]:
    """Cancel invoice ``number`` with a credit note of the same lines and amounts (type 381,
    preceding reference ``number``); its sessions can be invoiced again. ``reason`` is stored
    with its secrets redacted (SPEC §2.4).

    Raises
    ------
    InvoiceNotFoundError
        No document has this number.
    InvalidFieldError
        ``number`` is a credit note, or already credited (``number``); ``issued`` before the
        invoice's issue date; ``templates`` as for :func:`issue_invoice`.
    """
    check_issued_template(user_templates)
    forbidden = (store.root,)
    if output is not None:
        check_output_path(output, forbidden, overwrite=overwrite)
    if reason is not None:  # an issued document is kept for good (and pushed by vault-git): no secret in it
        reason = redact_secrets(reason)[0]
    with store.lock():
        now = now or utcnow()
        docs = ledger.documents(store.root)
        ledger.refuse_lost_documents(store.root, docs)  # a lost credit note: its invoice would be credited twice
        original = ledger.document(store.root, number)
        if original.kind != ledger.INVOICE:
            raise InvalidFieldError("number", f"{number} is a credit note; only an invoice can be credited")
        already = ledger.credited(docs).get(original.ref)
        if already:
            raise InvalidFieldError("number", f"invoice {number} is already cancelled by credit note {already}")
        latest, today = ledger.last_issued(docs), now.astimezone(store.zone).date()
        issued = issued or max(today, latest or date.min)
        _check_in_order(issued, latest, today)
        if issued < date.fromisoformat(original.meta["issued"]):
            raise InvalidFieldError("issued", f"{issued} is before invoice {number} was issued "
                                              f"({original.meta['issued']})")
        fmt = settings.invoice.number_format
        credit_number, key, sequence = ledger.next_number(docs, fmt, issued.year, ledger.read_state(store.root))
        meta = {**original.meta, "kind": ledger.CREDIT_NOTE, "number": credit_number, "numberFormat": fmt,
                "sequenceKey": key, "sequence": sequence, "issued": issued.isoformat(), "due": issued.isoformat(),
                "credits": original.number, "creditsIssued": original.meta["issued"],
                "creditsDigest": original.digest,  # the invoice cancelled, whatever a merge later names it
                **({"creditsRef": original.ref} if original.ref != original.number else {}),
                "reason": reason or f"Cancels invoice {original.number}", "createdAt": to_iso(now)}
        meta.pop("pdfSha256", None)
        pdf = _render(meta, user_templates)
        meta["pdfSha256"] = hashlib.sha256(pdf).hexdigest()
        document = ledger.write_document(store.root, meta, _summary(meta), pdf)
    return document, _copy_after_issue(pdf, output, forbidden, overwrite)


def same_period_invoices(docs: list[ledger.Document], document: ledger.Document) -> list[str]:
    """The refs of the other uncredited invoices of ``document``'s client whose service period
    overlaps its own (a second invoice of one month: work that arrived late), oldest first."""
    meta, cancelled = document.meta, ledger.credited(docs)
    return [other.ref for other in docs
            if other.ref != document.ref and other.kind != ledger.CREDIT_NOTE and other.ref not in cancelled
            and str(other.meta.get("client") or "").casefold() == str(meta.get("client") or "").casefold()
            and str(other.meta.get("periodStart")) <= str(meta.get("periodEnd"))
            and str(meta.get("periodStart")) <= str(other.meta.get("periodEnd"))]


def billing_the_same(docs: list[ledger.Document], document: ledger.Document,
                     refs: list[str]) -> list[tuple[str, int]]:
    """Of the invoices ``refs`` (:func:`same_period_invoices`), those that bill sessions ``document``
    bills too, with how many: two machines issuing at once (found by two freelancers: the note said
    the new invoice "bills only sessions none of them did" of an invoice billing the very same
    sessions)."""
    def keys(doc: ledger.Document) -> set[tuple[str, str]]:
        return {(str(i.get("project")), str(i.get("sessionId"))) for i in doc.meta.get("sessions") or []
                if isinstance(i, dict)}

    mine = keys(document)
    return [(other.ref, len(mine & keys(other))) for other in docs if other.ref in refs and mine & keys(other)]


def document_summary(document: ledger.Document, docs: list[ledger.Document] | None = None) -> dict[str, Any]:
    """One document as ``memo invoice list|show --json`` answers it (camelCase): number, kind,
    issued, due, period, client, currency, taxRate (percent), net, tax, gross (decimal text), billableHours,
    ``taxCurrency``/``exchangeRate``/``taxInTaxCurrency`` when its VAT is stated in the issuer's currency too,
    sessions (count), status (``issued``, ``credited`` with ``creditedBy``, or for a credit
    note ``credits``), ``replaces`` (the cancelled invoice a corrected one replaces), pdf (its
    path in the vault); ``ref`` for the second document of a number
    two machines issued, and on each uncredited invoice of such a number ``sameNumberAs`` (the
    other refs) and ``warnings``; ``pdfMissing`` when its PDF is not in the vault (a document
    pulled without one was never issued by memo)."""
    meta = document.meta
    summary = {key: meta.get(key) for key in ("number", "kind", "issued", "due", "periodStart", "periodEnd", "client",
                                              "currency", "taxRate", "net", "tax", "gross", "billableHours")}
    if meta.get("taxCurrency"):  # its VAT in the issuer's currency too (--exchange-rate)
        summary.update({key: meta[key] for key in ("taxCurrency", "exchangeRate", "taxInTaxCurrency")})
    if meta.get("workedUntil"):  # its service period ends later than the period it bills (a session past midnight)
        summary["workedUntil"] = meta["workedUntil"]
    if document.ref != document.number:
        summary["ref"] = document.ref  # the second document of its number: memo invoice show|credit take the ref
    summary["sessions"] = len(meta.get("sessions") or [])
    warnings: list[str] = []
    if document.kind == ledger.CREDIT_NOTE:
        summary["credits"] = meta.get("creditsRef") or meta.get("credits")
        for invoice, notes in ledger.credited_twice(docs or []).items():
            if document.ref in notes:
                warnings.append(f"invoice {invoice} is cancelled by {len(notes)} credit notes ({', '.join(notes)}): "
                                f"the client was credited more than once")
    else:
        credited_by = ledger.credited(docs or []).get(document.ref)
        summary["status"] = "credited" if credited_by else "issued"
        if meta.get("replaces"):
            summary["replaces"] = meta["replaces"]
        if credited_by:
            summary["creditedBy"] = credited_by
        twins = [ref for ref in ledger.duplicate_numbers(docs or []).get(document.number, []) if ref != document.ref]
        if twins:
            summary["sameNumberAs"] = twins
            warnings.append(f"number {document.number} was issued twice (on two machines of this vault before "
                            f"they synced; also {', '.join(twins)}): cancel one with memo invoice credit REF "
                            f"and bill its sessions again")
        if not credited_by:
            for (project, session_id), refs in ledger.billed_twice(docs or []).items():
                if document.ref in refs:
                    others = ", ".join(ref for ref in refs if ref != document.ref)
                    warnings.append(f"session {session_id} ({project}) is billed on {others} as well: cancel one "
                                    f"of them with memo invoice credit REF")
    if warnings:
        summary["warnings"] = warnings
    summary["pdf"] = str(document.pdf)
    if not document.pdf.is_file():
        summary["pdfMissing"] = True  # no PDF was sent with it, or it is lost: was this document ever issued?
    if document.changed(ledger.read_state(document.path.parent.parent)):
        summary["changedOnDisk"] = True  # the .md is not the one written: its figures are not the ones issued
    return summary


def _summary(meta: dict[str, Any]) -> str:
    """The readable body of a stored document."""
    title = f"{_TITLES[meta['kind']]} {meta['number']}"
    lines = [f"# {title}", "", f"{meta['client']}: {meta['periodStart']} – {meta['periodEnd']}, issued "
             f"{meta['issued']}" + (f", due {meta['due']}" if meta["kind"] == ledger.INVOICE else
                                   f", cancels invoice {meta['credits']}"), "",
             f"Net {meta['currency']} {meta['net']} · VAT {meta['tax']} · Total {meta['gross']} "
             f"({meta['billableHours']} h, {len(meta['sessions'])} sessions)", ""]
    lines += [f"- {line['project']}: {line['description']} — {line['hours']} h × {line['rate']} = {line['amount']}"
              for line in meta["lines"]]
    return "\n".join(lines) + "\n"


@contextmanager
def vault_git_numbering(store: VaultStore, settings: Settings, offline: bool = False) -> Iterator[dict[str, Any]]:
    """Issue one document inside: with vault-git on, it is numbered after the other machines'
    documents are pulled and pushed as soon as it is stored, so two machines issue one number only
    within the same seconds (then the sync keeps both and says so, :mod:`~memo_analytics.vault.ledger`).
    ``offline`` numbers without the pull. Yields an interface's ``vaultGit`` answer —
    ``{pulled, pushed, error}``, and ``duplicateInvoices`` / ``duplicateCreditNotes`` when a sync
    found a number issued elsewhere as well (``renamedHere``: those that were this machine's),
    ``invoicedSessionsChanged`` when a pull left invoiced sessions differing from their invoice,
    ``termsDiffer`` when it pulled invoices this machine's config bills otherwise; empty without
    vault-git — filled in on the way out.

    Raises
    ------
    MemoError
        The pull failed (nothing was issued): the remote is down or refuses.
    """
    from ..services.vault_git import sync as vault_git_sync

    answer: dict[str, Any] = {}
    if not settings.vault_git.enabled or settings.mode == "remote":
        yield answer
        return
    duplicates: dict[str, list[Any]] = {"duplicateInvoices": [], "duplicateCreditNotes": [], "renamedHere": [],
                                        "invoicedSessionsChanged": [], "termsDiffer": []}

    def found(result: dict[str, Any]) -> None:
        for name, refs in duplicates.items():
            refs += result.get(name, [])

    if not offline:
        before = vault_git_sync(store, "invoice")
        found(before)
        if before["error"]:
            raise MemoError(f"{before['error']}; nothing was issued: a number is given after the other machines' "
                            f"invoices are pulled. Issue it when the remote answers, or with --offline (should "
                            f"another machine issue the same number meanwhile, memo sync git keeps both and says so)")
        answer["pulled"] = before["pulled"]
    yield answer
    after = vault_git_sync(store, "invoice")
    found(after)
    answer.update(pushed=after["pushed"], error=after["error"], **{name: refs for name, refs in duplicates.items() if refs})


def stored_now(root: Path, document: ledger.Document) -> ledger.Document:
    """``document`` where it is stored now: the push after issuing may have found its number
    issued on another machine first, and kept it as ``<number>.duplicate-<hash>`` (its PDF
    too) — an answer names that file, not the other machine's."""
    try:
        if hashlib.sha256(document.path.read_bytes()).hexdigest() == document.digest:
            return document
    except OSError:
        pass
    return next((doc for doc in ledger.documents(root) if doc.digest == document.digest), document)
