"""Cursor's "Export Chat" Markdown, read for :mod:`.cursor` (SPEC §7).

The shape, as Cursor writes it (read from exports people keep in public repositories,
Cursor 1.0 – 3.13; e.g. "_Exported on 8/21/2025 at 18:13:28 GMT+2 from Cursor (1.4.5)_"):

.. code-block:: text

    # <the chat's title>
    _Exported on <date> at <time> <zone> from Cursor (<version>)_

    ---

    **User**

    <what the person typed>

    ---

    **Cursor**

    <the answer>

A turn runs from its header line (``**User**`` or ``**Cursor**`` alone on a line) to the
next one; the ``---`` separator before the next header is dropped, a ``---`` inside a body
(a horizontal rule) is text. Code fences are not tracked (as in :mod:`.specstory`): an
answer that quotes a ``**User**`` line alone would start a turn there. Only ``**User**`` turns are prompts. A file in that shape
written by another tool for Cursor's chats ("… from Cursor via WayLog_") is read the same
way. SpecStory's files (``_**User**_`` markers) and any other Markdown are not recognised.

Time: an export holds one instant, when it was **exported** — not when the prompts were
typed. It is the only activity: the session is that moment and every turn gets it. The
date and time are in the exporting machine's locale:

* ``M/D/YYYY`` or ``D/M/YYYY``: the number over 12 is the day; when both are 12 or less,
  a zero-padded number (``01/04/2026``, as en-GB and fr pad and en-US never does) means
  day first, else month first (en-US) — a guess the file cannot settle;
* ``D.M.YYYY`` (de, ru …), ``D-M-YYYY`` (nl), ``YYYY. M. D.`` (ko), ``YYYY/M/D`` (ja, zh)
  and ``YYYY-MM-DD``;
* ``H:MM:SS`` with an optional ``AM``/``PM``, or ``H시 M분 S초``;
* the zone ``GMT±H[:MM]``/``UTC±H[:MM]``, or an abbreviation of :data:`_ZONES` (``CST``
  is US Central). Without a zone the stamp is read in the import's zone (``--tz``); with a
  zone name the table lacks, too, and ``problems`` says so (without an import zone the
  file yields nothing).

Transcript id: ``export-`` and a hash of the title and the first prompt — the same
conversation exported twice (later, with more turns) is one transcript: imported together,
the two files are merged; the later export imported alone is refused, because its session
would start at another instant. An export shares nothing with the ``state.vscdb`` rows of
the same chat (it names no composer id): import one or the other. No model, tokens or
project folder: the file holds none.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path

from ...domain.clock import parse_instant
from ...domain.errors import InvalidDateError
from .common import HumanPrompt, ImportOptions, MarkdownTurn, ParseResult, Transcript
from .lines import read_lines

# (the title's trailing white space not a lazy run before ``\s*$``: that took the square of a
# planted title line's length — found by a security tester)
_TITLE = re.compile(r"^#\s+(?P<title>(?:.*\S)?)\s*$")
_EXPORTED = re.compile(r"^_Exported on (?P<stamp>.+?) from Cursor(?: \((?P<version>[^)]*)\)| via (?P<via>[^_]+))?_\s*$")
_HEADER = re.compile(r"^\*\*(?P<role>User|Cursor)\*\*\s*$")
_SPECSTORY = re.compile(r"^_\*\*(User|Assistant|Agent)\b")

_DATE_AT = re.compile(r"^(?P<date>.+?)\s+at\s+(?P<time>.+)$")
_SLASHED = re.compile(r"^(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<y>\d{4})$")
_DAY_FIRST = re.compile(r"^(?P<d>\d{1,2})[.-](?P<m>\d{1,2})[.-](?P<y>\d{4})\.?$")
_YEAR_FIRST = re.compile(r"^(?P<y>\d{4})[./-]\s?(?P<m>\d{1,2})[./-]\s?(?P<d>\d{1,2})\.?$")
_CLOCK = re.compile(r"^(?:(?P<pre>오전|오후|上午|下午)\s*)?(?P<h>\d{1,2}):(?P<mi>\d{2}):(?P<s>\d{2})"
                    r"(?:\s*(?P<ampm>[AaPp]\.?[Mm]\.?))?(?:\s+(?P<zone>.+))?$")
_KOREAN_CLOCK = re.compile(r"^(?:(?P<pre>오전|오후)\s*)?(?P<h>\d{1,2})시\s*(?P<mi>\d{1,2})분\s*(?P<s>\d{1,2})초"
                           r"(?:\s+(?P<zone>.+))?$")
_OFFSET = re.compile(r"^(?:GMT|UTC)(?:(?P<sign>[+−-])(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?)?$")

#: Zone abbreviations that browsers print and that name one offset (hours east of UTC);
#: ambiguous ones (IST: India, Ireland or Israel) are left out.
_ZONES: dict[str, float] = {
    "Z": 0, "WET": 0, "WEST": 1, "BST": 1, "CET": 1, "CEST": 2, "MEZ": 1, "MESZ": 2, "EET": 2, "EEST": 3,
    "MSK": 3, "HKT": 8, "SGT": 8, "AWST": 8, "JST": 9, "KST": 9, "ACST": 9.5, "ACDT": 10.5, "AEST": 10,
    "AEDT": 11, "NZST": 12, "NZDT": 13, "HST": -10, "AKST": -9, "AKDT": -8, "PST": -8, "PDT": -7, "MST": -7,
    "MDT": -6, "CST": -6, "CDT": -5, "EST": -5, "EDT": -4, "AST": -4, "ADT": -3, "NST": -3.5, "NDT": -2.5,
    "VET": -4, "ART": -3, "BRT": -3, "CLT": -4, "CLST": -3, "COT": -5, "PET": -5,
}


class UnknownZoneError(ValueError):
    """An export stamp names a zone :data:`_ZONES` lacks (and no ``--tz`` was given)."""


def _date(text: str) -> tuple[int, int, int] | None:
    """``(year, month, day)`` of a locale date (the module docstring's forms), or None."""
    text = text.strip()
    if match := _SLASHED.match(text):
        a, b, year = int(match["a"]), int(match["b"]), int(match["y"])
        padded = match["a"].startswith("0") or match["b"].startswith("0")
        day_first = a > 12 or (b <= 12 and padded)
        return (year, b, a) if day_first else (year, a, b)
    if match := _DAY_FIRST.match(text):
        return int(match["y"]), int(match["m"]), int(match["d"])
    if match := _YEAR_FIRST.match(text):
        return int(match["y"]), int(match["m"]), int(match["d"])
    return None


def _zone(name: str | None, fallback: tzinfo | None, unknown: tzinfo | None) -> tzinfo:
    """The zone a stamp names (none: ``fallback``, else UTC; a name :data:`_ZONES` lacks:
    ``unknown``, else UnknownZoneError)."""
    if not name:
        return fallback or timezone.utc
    name = name.strip()
    if match := _OFFSET.match(name):
        if not match["sign"]:
            return timezone.utc
        minutes = int(match["h"]) * 60 + int(match["m"] or 0)
        return timezone(timedelta(minutes=-minutes if match["sign"] in "-−" else minutes))
    if name.upper() in _ZONES:
        return timezone(timedelta(hours=_ZONES[name.upper()]))
    if unknown is not None:
        return unknown
    raise UnknownZoneError(name)


def export_instant(stamp: str, zone: tzinfo | None, unknown_zone: tzinfo | None = None) -> datetime:
    """The instant of an ``_Exported on <stamp> from Cursor …_`` line, aware UTC.

    Parameters
    ----------
    stamp : str
        ``<date> at <time>[ <zone>]`` as the export wrote it (``8/21/2025 at 18:13:28 GMT+2``).
    zone : tzinfo | None
        The zone of a stamp without one (None: UTC).
    unknown_zone : tzinfo | None
        The zone of a stamp whose zone name :data:`_ZONES` lacks (None: UnknownZoneError).

    Raises
    ------
    InvalidDateError
        The date or time is in none of the module docstring's forms, or no such day.
    UnknownZoneError
        The zone is a name :data:`_ZONES` lacks and ``unknown_zone`` is None.
    """
    parts = _DATE_AT.match(stamp.strip())
    ymd = _date(parts["date"]) if parts else None
    clock = (_CLOCK.match(parts["time"].strip()) or _KOREAN_CLOCK.match(parts["time"].strip())) if parts else None
    if ymd is None or clock is None:
        raise InvalidDateError("exported", stamp)
    hour = int(clock["h"])
    afternoon = clock["pre"] in ("오후", "下午") or (clock.groupdict().get("ampm") or "").lower().startswith("p")
    morning = clock["pre"] in ("오전", "上午") or (clock.groupdict().get("ampm") or "").lower().startswith("a")
    if (afternoon or morning) and not 1 <= hour <= 12:
        raise InvalidDateError("exported", stamp)
    hour = hour % 12 + (12 if afternoon else 0) if (afternoon or morning) else hour
    try:
        local = datetime(ymd[0], ymd[1], ymd[2], hour, int(clock["mi"]), int(clock["s"]))
    except ValueError:
        raise InvalidDateError("exported", stamp) from None
    return parse_instant(local.replace(tzinfo=_zone(clock["zone"], zone, unknown_zone)), "exported")


def _header(lines: list[tuple[int, str]]) -> tuple[str | None, int | None, re.Match | None, int]:
    """``(title, line number of the export stamp, its match, index of the first line after
    it)`` when the file opens as a Cursor export does (a ``# title`` then, after blank lines,
    the stamp line); the match None otherwise."""
    index = 0
    while index < len(lines) and not lines[index][1].strip():
        index += 1
    title = _TITLE.match(lines[index][1]) if index < len(lines) else None
    if title is None:
        return None, None, None, index
    index += 1
    while index < len(lines) and not lines[index][1].strip():
        index += 1
    if index >= len(lines):
        return title["title"], None, None, index
    return title["title"], lines[index][0], _EXPORTED.match(lines[index][1].strip()), index + 1


def _looks_like(lines: list[tuple[int, str]]) -> str:
    if not any(text.strip() for _, text in lines):
        return "the file is empty"
    if any(_SPECSTORY.match(text) for _, text in lines):
        return "a SpecStory history file: import it with `memo import specstory`"
    return "no Cursor export header (`# title`, then `_Exported on … from Cursor (…)_`)"


def transcript_id(title: str, first_prompt: str) -> str:
    """``export-<16 hex>``: the same for every export of one conversation (title and first prompt)."""
    digest = hashlib.sha1(f"{title}\n{first_prompt}".encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"export-{digest}"


def parse_export(path: Path, options: ImportOptions, source: str) -> ParseResult:
    """Read one Cursor "Export Chat" Markdown file (the module docstring says how).

    Parameters
    ----------
    path : Path
        The exported ``.md`` file.
    options : ImportOptions
        ``options.zone`` reads a stamp without a zone or with an unknown zone name.
    source : str
        The transcripts' source (``cursor``).

    Returns
    -------
    ParseResult
        At most one transcript (none without a ``**User**`` turn); ``recognised`` False, with
        ``why``, for a file that does not open as an export; an unreadable stamp or a byte
        that is not UTF-8 is named in ``problems``.

    Raises
    ------
    OSError
        The file cannot be read.
    """
    lines, problems = read_lines(path)
    title, stamp_line, exported, start = _header(lines)
    if exported is None:
        return ParseResult(recognised=False, why=_looks_like(lines), problems=problems, skipped_lines=len(problems))
    activity: list[datetime] = []
    try:
        try:
            activity.append(export_instant(exported["stamp"], options.zone))
        except UnknownZoneError as exc:
            if options.zone is None:
                problems.append(f"line {stamp_line}: the export stamp's zone {str(exc)!r} is not one memo knows; "
                                "import it again with --tz (the zone it was exported in)")
            else:
                activity.append(export_instant(exported["stamp"], options.zone, options.zone))
                problems.append(f"line {stamp_line}: the export stamp's zone {str(exc)!r} is not one memo knows; "
                                "it is read in the import's zone (--tz)")
    except InvalidDateError:
        problems.append(f"line {stamp_line}: unreadable export stamp {exported['stamp'][:60]!r}")
    turns: list[MarkdownTurn] = []
    for _, text in lines[start:]:
        header = _HEADER.match(text)
        if header:
            turns.append(MarkdownTurn(header["role"]))
        elif turns:
            turns[-1].lines.append(text)
    prompts = [HumanPrompt(turn.text, None) for turn in turns if turn.role == "User" and turn.text]
    if not prompts:
        return ParseResult(problems=problems, skipped_lines=len(problems))
    transcript = Transcript(transcript_id=transcript_id(title or "", prompts[0].text), source=source, path=path,
                            prompts=prompts, activity=activity, ide="cursor", agent="cursor", title=title or None)
    return ParseResult(transcripts=[transcript], problems=problems, skipped_lines=len(problems))
