"""The one module that owns time: parsing, zones, ISO formatting and rounding.

Storage rule (SPEC §2.3): every timestamp is stored as ISO 8601 in UTC with ``Z`` and a
fixed millisecond precision (``2026-01-05T09:30:00.000Z``) so that stored strings sort in
time order. Display converts to a zone chosen by the caller (default: the machine's).
"""

from __future__ import annotations

import math
import os
import zoneinfo
import re
from dataclasses import dataclass
from functools import lru_cache
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from dateutil import parser as _dateutil_parser

from .errors import DATE_FORMS, InvalidDateError, InvalidFieldError

UTC = timezone.utc
_DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")

#: The ISO 8601 forms of a whole period, by what an ``until`` of that form covers: a year, a month,
#: a week, a day (calendar, compact, week or ordinal date) — ``--until 2026-03`` was the instant
#: 2026-03-01T00:00, the month empty (found by an analyst asking for March).
_PERIODS = (("year", re.compile(r"^\d{4}$")), ("month", re.compile(r"^\d{4}-\d{2}$")),
            ("week", re.compile(r"^\d{4}-?W\d{2}$")),
            ("day", re.compile(r"^(\d{4}-\d{2}-\d{2}|\d{8}|\d{4}-?W\d{2}-?\d|\d{4}-?\d{3})$")))


def period_of(text: str) -> str | None:
    """``year``, ``month``, ``week`` or ``day`` when ``text`` names a whole one in ISO 8601
    (``2026``, ``2026-03``, ``2026-W05``, ``2026-03-01``/``20260301``/``2026-W05-1``/``2026-060``),
    else None (an instant)."""
    stripped = text.strip()
    return next((name for name, form in _PERIODS if form.match(stripped)), None)


def _period_end(start: datetime, period: str, tz: tzinfo) -> datetime:
    """The first instant after the ``period`` (``year``/``month``/``week``/``day``, local to ``tz``)
    that begins at ``start``."""
    local = start.astimezone(tz).date()
    if period == "year":
        after = local.replace(year=local.year + 1, month=1, day=1)
    elif period == "month":
        after = (local.replace(day=1) + timedelta(days=32)).replace(day=1)
    else:
        after = local + timedelta(days=7 if period == "week" else 1)
    return datetime.combine(after, time(), tzinfo=tz).astimezone(UTC)


def utcnow() -> datetime:
    """The current instant as an aware UTC datetime."""
    return datetime.now(UTC)


#: Names of the tz database that are placeholders or files, not places: the analytics layer
#: (polars, whose zone table is chrono-tz's) refuses them, so every entry point does too.
_NOT_PLACES = frozenset({"Factory", "localtime", "posixrules"})
#: Folders of alternative copies of the database: ``right/`` counts leap seconds in its
#: clock, ``posix/`` duplicates the plain names. Polars knows neither.
_VARIANT_FOLDERS = ("right/", "posix/")
_EXAMPLE = "use an IANA name such as Europe/Berlin or UTC"


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


@lru_cache(maxsize=256)
def _listed_on_tzpath(name: str) -> bool:
    """Whether ``name`` is a TZif file of the tz path, every part spelled exactly as in its
    folder: the same answer :func:`zoneinfo.available_timezones` gives for such a name (its
    walk opens every file of the database, ~10 ms a process), from a few directory listings."""
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return False
    for root in zoneinfo.TZPATH:
        folder = root
        for part in parts:
            try:
                if part not in os.listdir(folder):
                    break
            except OSError:
                break
            folder = os.path.join(folder, part)
        else:
            try:
                with open(folder, "rb") as handle:
                    return handle.read(4) == b"TZif"
            except OSError:
                continue
    return False


def zone_name_problem(name: object) -> str | None:
    """Why ``name`` is not a zone the product can use, or None when it is one.

    The rule (the one rule of every entry point: ``--tz``, the ``tz`` field of every API,
    ``timezone`` of the config file and ``MEMO_TIMEZONE``): a zone is a name of
    :func:`zoneinfo.available_timezones`, spelled exactly so (``utc`` and
    ``europe/berlin`` are refused even where the file system ignores case), that
    :class:`zoneinfo.ZoneInfo` loads, and that is not ``Factory``, ``localtime``,
    ``posixrules`` or under ``right/`` or ``posix/``. Of the available zones, these are
    exactly the ones the analytics layer (polars) converts to;
    ``tests/unit/domain/test_zone_names.py`` checks the rule against polars for every one.

    Parameters
    ----------
    name : object
        The zone name as given (surrounding white space is ignored).

    Returns
    -------
    str | None
        A one-line reason (``unknown time zone 'Mars/Olympus'; use …``), or None.
    """
    if not isinstance(name, str) or not name.strip():
        return f"must be a time zone name; {_EXAMPLE}"
    text = name.strip()
    if text.startswith(_VARIANT_FOLDERS):
        folder, plain = text.split("/", 1)
        if zone_name_problem(plain) is not None:
            return f"unknown time zone {text!r}; {_EXAMPLE}"
        return f"{text!r} is the {folder}/ copy of a zone, which reports cannot use; use {plain!r}"
    if text in _NOT_PLACES:
        return f"{text!r} is a placeholder of the tz database, not a place's time zone; {_EXAMPLE}"
    if not _listed_on_tzpath(text) and text not in _zone_names():
        return f"unknown time zone {text!r}; {_EXAMPLE}"
    try:
        ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return f"unknown time zone {text!r}; {_EXAMPLE}"
    return None


def check_zone_name(name: object, field: str = "tz") -> str:
    """``name`` without surrounding white space, when it is a usable zone (see
    :func:`zone_name_problem` for the rule).

    Parameters
    ----------
    name : object
        The zone name as given.
    field : str
        The wire name of the field it came from, named in the error (``tz``, ``timezone``).

    Raises
    ------
    InvalidFieldError
        ``Invalid <field>: <reason>`` (``Invalid tz: 'Factory' is a placeholder of the tz database …``).
    """
    problem = zone_name_problem(name)
    if problem is not None:
        raise InvalidFieldError(field, problem)
    return str(name).strip()


def resolve_zone(name: str | None, field: str = "tz") -> ZoneInfo:
    """Return the zone ``name``, or the machine's zone when ``name`` is empty.

    The machine's zone is used when it follows the rule of :func:`zone_name_problem`; a
    ``right/`` or ``posix/`` copy stands for its plain name; anything else is UTC.

    Raises
    ------
    InvalidFieldError
        ``Invalid <field>: ...`` for a name :func:`check_zone_name` refuses.
    """
    if not name:
        try:
            from tzlocal import get_localzone_name

            local = get_localzone_name() or "UTC"
        except Exception:  # pragma: no cover - depends on the machine
            local = "UTC"
        for candidate in (local, local.split("/", 1)[-1] if local.startswith(_VARIANT_FOLDERS) else None):
            if candidate and zone_name_problem(candidate) is None:
                return ZoneInfo(candidate)
        return ZoneInfo("UTC")  # pragma: no cover - depends on the machine
    return ZoneInfo(check_zone_name(name, field))


def parse_instant(value: object, field: str, tz: tzinfo | None = None, wall_clock: bool = False) -> datetime:
    """Parse an ISO 8601 timestamp or date into an aware UTC datetime.

    A value without an offset is read in ``tz`` (UTC when ``tz`` is None). A date alone
    means midnight at the start of that day in ``tz``. Only ISO 8601 forms are accepted
    (``2026-01-05``, ``2026-01-05T09:30``, ``2026-01-05 09:30:00+02:00``, ``...Z``);
    free text is refused rather than guessed. With ``wall_clock`` (a time a person or agent
    typed), a time without offset that did not exist in ``tz`` — in the hour a daylight-saving
    change skipped — is refused rather than moved by an hour, and one that happened twice (the
    hour a change put the clocks back over) is refused rather than read as the first.

    Raises
    ------
    InvalidDateError
        ``Invalid <field> date: '...'`` for anything else (``2026-13-45`` included).
    InvalidFieldError
        ``wall_clock`` and a time that did not exist in ``tz``, or happened twice there.
    """
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime.combine(value, time())
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            parsed = datetime.fromisoformat(text.replace("z", "Z"))
        except ValueError:
            if re.match(r"^\d{4}-?W", text):  # a week the year has not (2025-W53): refused, not next year's week 1
                raise InvalidDateError(field, value) from None
            try:
                parsed = _dateutil_parser.isoparse(text)
            except (ValueError, OverflowError):
                raise InvalidDateError(field, value) from None
    else:
        raise InvalidDateError(field, value)
    if parsed.tzinfo is None:
        naive = parsed
        parsed = parsed.replace(tzinfo=tz or UTC)
        timed = not (isinstance(value, date) and not isinstance(value, datetime)) and not (
            isinstance(value, str) and len(value.strip()) <= 10)
        if wall_clock and timed and tz is not None and _skipped(naive, tz):
            raise InvalidFieldError(field, f"{value} did not exist in {zone_name(tz)} (the clocks were put forward "
                                           "over it); give the time the clock showed, or its UTC offset")
        twice = _twice(naive, tz) if wall_clock and timed and tz is not None else None
        if twice is not None:
            raise InvalidFieldError(field, f"{value} happened twice in {zone_name(tz)} (the clocks were put back "
                                           f"over it): give its UTC offset, {twice[0]} for the first or {twice[1]} "
                                           "for the second")
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidDateError(field, value) from None


def _twice(naive: datetime, tz: tzinfo) -> tuple[str, str] | None:
    """The two UTC offsets (``+02:00``, ``+01:00``) of a wall-clock time ``naive`` that happened
    twice in ``tz`` (a daylight-saving change put the clocks back over it), else None."""
    try:
        first, second = (naive.replace(tzinfo=tz, fold=fold).utcoffset() for fold in (0, 1))
    except (OverflowError, ValueError):
        return None
    if first is None or second is None or first == second or _skipped(naive, tz):
        return None

    def text(offset) -> str:
        minutes = int(offset.total_seconds() // 60)
        return f"{'+' if minutes >= 0 else '-'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"

    return text(first), text(second)


def _skipped(naive: datetime, tz: tzinfo) -> bool:
    """Whether the wall-clock time ``naive`` fell in a gap of ``tz`` (a daylight-saving change
    put the clocks forward over it): read in the zone and back, it is another time."""
    try:
        back = naive.replace(tzinfo=tz).astimezone(UTC).astimezone(tz).replace(tzinfo=None)
    except (OverflowError, ValueError):
        return False
    return back != naive


@dataclass(frozen=True)
class TimeBounds:
    """A half-open window ``[since, until_exclusive)`` in UTC; either end may be open."""

    since: datetime | None = None
    until_exclusive: datetime | None = None

    def contains(self, instant: datetime) -> bool:
        if self.since is not None and instant < self.since:
            return False
        return not (self.until_exclusive is not None and instant >= self.until_exclusive)

    @property
    def since_iso(self) -> str | None:
        return to_iso(self.since) if self.since else None

    @property
    def until_iso(self) -> str | None:
        return to_iso(self.until_exclusive) if self.until_exclusive else None


def parse_bounds(since: object = None, until: object = None, tz: tzinfo | None = None) -> TimeBounds:
    """Parse ``since``/``until`` filters (SPEC §2.6).

    ``since`` is inclusive. A date-only ``until`` covers that whole day (in ``tz``) — a year
    (``2026``), a month (``2026-03``) or a week (``2026-W05``) the whole of it (:func:`period_of`),
    and ``since`` of one of them begins with it; an ``until`` with a time is inclusive of that instant.

    Raises
    ------
    InvalidDateError
        ``Invalid since date`` / ``Invalid until date``.
    InvalidFieldError
        ``until`` is before ``since`` (``Invalid until: … is before since …``); a time without
        offset that did not exist in ``tz``, or happened twice there (:func:`parse_instant`).
    """
    # a time a person typed: one a daylight-saving change skipped, or made happen twice, is refused
    # (a report "since 02:30" of the day the clocks went forward began at 03:30 without a word)
    start = _bound(since, "since", tz) if since not in (None, "") else None
    end = None
    if until not in (None, ""):
        end = _bound(until, "until", tz)
        try:
            period = period_of(until) if isinstance(until, str) else None
            if isinstance(until, date) and not isinstance(until, datetime):
                end = _next_local_midnight(end, tz or UTC)
            elif period is not None:  # a year, a month, a week, a day: the whole of it
                end = _period_end(end, period, tz or UTC)
            else:
                # records are stored to the millisecond: "at or before" is "before the next millisecond"
                # (1 µs later read "untilExclusive": "…T08:00:00.000Z", the instant itself)
                end = end.replace(microsecond=end.microsecond // 1000 * 1000) + timedelta(milliseconds=1)
        except (OverflowError, ValueError):
            end = None  # past the last representable instant: no upper bound
    if start is not None and end is not None and end <= start:
        raise InvalidFieldError("until", f"{str(until).strip()} is before since {str(since).strip()}: the period "
                                         "would be empty (swap them?)")
    return TimeBounds(start, end)


#: What a period's bound may be given as: said with its refusal (the general one named dates and times
#: alone, where a month, a year and a week are taken too: found by an analyst and a billing person).
BOUND_FORMS = ("give a date as YYYY-MM-DD, a time as YYYY-MM-DDTHH:MM, a month YYYY-MM, a year YYYY or an "
               "ISO week YYYY-Www, ISO 8601")


def _bound(value: object, field: str, tz: tzinfo | None) -> datetime:
    """``since``/``until`` as :func:`parse_instant` reads it, refused naming the forms a bound takes."""
    try:
        return parse_instant(value, field, tz, wall_clock=True)
    except InvalidDateError as exc:
        if DATE_FORMS in str(exc):
            raise InvalidDateError(field, value, BOUND_FORMS) from None
        raise


def _next_local_midnight(instant: datetime, tz: tzinfo) -> datetime:
    local_day = instant.astimezone(tz).date() + timedelta(days=1)
    return datetime.combine(local_day, time(), tzinfo=tz).astimezone(UTC)


def to_iso(instant: datetime) -> str:
    """Format an aware datetime as stored: UTC, millisecond precision, ``Z`` suffix."""
    if instant.tzinfo is None:
        raise ValueError("naive datetime cannot be stored; attach a zone first")
    utc = instant.astimezone(UTC)
    return (f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:"
            f"{utc.second:02d}.{utc.microsecond // 1000:03d}Z")


#: Instants a record may carry: anything else is a typo, not work (SPEC §2.3).
EARLIEST_RECORD = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_RECORD = datetime(9000, 1, 1, tzinfo=UTC)


def parse_record_instant(value: object, field: str, tz: tzinfo | None = None, wall_clock: bool = False) -> datetime:
    """:func:`parse_instant` for a timestamp that will be stored on a record.

    Raises
    ------
    InvalidDateError
        Unparseable, or outside 1970-01-01 … 9000-01-01 (UTC).
    """
    instant = parse_instant(value, field, tz, wall_clock)
    if not EARLIEST_RECORD <= instant < LATEST_RECORD:  # a date of the right form: said so, not its form again
        raise InvalidDateError(field, value, "a record's time lies between 1970 and 9000")
    return instant


def from_iso(text: str) -> datetime:
    """Parse a stored timestamp (as written by :func:`to_iso`) back to aware UTC."""
    return parse_instant(text, "timestamp")


def minutes_between(start: datetime, end: datetime) -> int:
    """Whole minutes from ``start`` to ``end``, half up, never negative (SPEC §2.5)."""
    seconds = max((end - start).total_seconds(), 0.0)
    return int(math.floor(seconds / 60.0 + 0.5))


def hours_2dp(minutes: int | float) -> float:
    """Minutes to hours, rounded half up to two decimals (SPEC §4)."""
    from decimal import ROUND_HALF_UP, Decimal

    return float((Decimal(str(minutes)) / Decimal(60)).quantize(Decimal("0.01"), ROUND_HALF_UP))


def format_minutes(minutes: int) -> str:
    """``125`` → ``2:05`` (hours:minutes), as every report and table prints a duration."""
    return f"{minutes // 60}:{minutes % 60:02d}"


def zone_name(tz: tzinfo) -> str:
    """The display name of a zone (its IANA key when it has one)."""
    return getattr(tz, "key", None) or str(tz)


def local_day_spans(start: datetime, end: datetime, tz: tzinfo) -> list[tuple[date, timedelta]]:
    """The time from ``start`` to ``end`` cut at the local midnights of ``tz``.

    Returns ``(local date, time on that day)`` in date order; the spans add up to
    ``end − start`` (empty when ``end`` is not after ``start``). Days are as long as the
    zone makes them (23 or 25 hours across a daylight-saving change).
    """
    spans: list[tuple[date, timedelta]] = []
    cursor = start
    while cursor < end:
        day = cursor.astimezone(tz).date()
        midnight = datetime.combine(day + timedelta(days=1), time(), tzinfo=tz).astimezone(UTC)
        stop = min(midnight, end)
        spans.append((day, stop - cursor))
        cursor = stop
    return spans


def printed_span(start_time: str, duration_minutes: int | None, zone: tzinfo) -> tuple[datetime, datetime]:
    """The start and end a report prints for a session (its stored ``startTime`` and
    ``durationMinutes``), in ``zone``: the start to the minute (seconds dropped), the end that
    start plus the minutes — one rounding of times, so a printed span always equals the session's
    minutes; the printed end is within a minute of the recorded one. The minutes are added in
    absolute time: a session over a daylight-saving change ends at the wall-clock time it ended
    (01:30 CET + 60 minutes is 03:30 CEST on the spring night, not 02:30, which did not exist)."""
    start = from_iso(start_time).astimezone(zone).replace(second=0, microsecond=0)
    return start, (start.astimezone(timezone.utc) + timedelta(minutes=int(duration_minutes or 0))).astimezone(zone)


def local_text(moment: datetime, zone: tzinfo) -> str:
    """``moment`` as a person reads it in ``zone``: ``2026-06-02 10:00 CEST``. Pure."""
    shown = moment.astimezone(zone)
    return f"{shown:%Y-%m-%d %H:%M} {shown.tzname() or zone_name(zone)}"


_UTC_INSTANT = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\b")


def local_instants(text: str, zone: tzinfo) -> str:
    """``text`` (a proposal's summary) with each UTC instant it holds
    (``2026-12-05T11:10:00.000Z``) in ``zone``, as every other time is shown
    (``2026-12-05 12:10 Europe/Berlin``). Pure."""
    return _UTC_INSTANT.sub(lambda m: f"{from_iso(m.group(0)).astimezone(zone):%Y-%m-%d %H:%M} {zone_name(zone)}",
                            text)


def span_clock(start: datetime, end: datetime, fmt: str = "%H:%M") -> tuple[str, str]:
    """``start`` and ``end`` (aware, in one zone) as a report prints them, ``fmt`` each; each
    followed by its zone's abbreviation (``02:30 CEST``, ``02:30 CET``) when the span crosses a
    daylight-saving change, so that its wall-clock times read right. Pure."""
    if start.utcoffset() == end.utcoffset():
        return start.strftime(fmt), end.strftime(fmt)
    return start.strftime(fmt + " %Z"), end.strftime(fmt + " %Z")

