"""The lines of a transcript file: each decoded as UTF-8 on its own, each parsed as JSON on its own
(``orjson``, with ``json`` for what it refuses) — one bad line costs that line, never the file."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Iterator

import orjson

from ...vault.io import open_regular

#: What :func:`json_records` gives for a line that is not JSON.
NOT_JSON = object()


class LongInteger(float):
    """An integer of more digits than Python reads (``sys.get_int_max_str_digits``, 4,300): kept
    as an infinity (never a count, nor an instant) that knows its length, so that it costs only
    itself and is said — not the line or the chat."""

    digits: int

    def __new__(cls, text: str) -> "LongInteger":
        value = super().__new__(cls, "-inf" if text.startswith("-") else "inf")
        value.digits = len(text.lstrip("-"))
        return value

    def __str__(self) -> str:
        return f"an integer of {self.digits} digits"

    __repr__ = __str__


def json_integer(text: str) -> int | LongInteger:
    """A JSON integer as Python reads it; one too long to read is a :class:`LongInteger`."""
    try:
        return int(text)
    except ValueError:
        return LongInteger(text)


def parse_json_line(line: str) -> object:
    """The JSON value of one line, or :data:`NOT_JSON` when it is not JSON (or nested too deep)."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        pass  # lone surrogates (strings cut by the agent), NaN, integers beyond 64 bits, deep nesting
    try:
        return json.loads(line, parse_int=json_integer)
    except (ValueError, RecursionError):
        return NOT_JSON


def json_records(lines: list[tuple[int, str]]) -> Iterator[tuple[int, object]]:
    """``(line number, parsed JSON value)`` of every non-blank line of a JSON Lines file;
    :data:`NOT_JSON` for a line that is not JSON (or nested too deep to parse)."""
    for number, line in lines:
        if line.strip():
            yield number, parse_json_line(line)


#: How the note of a line read with a byte that is not UTF-8 ends (:func:`decode_line`): said, not
#: a line left out (:func:`is_replacement_note`).
REPLACED = "(replaced by U+FFFD; the line is read)"


def is_replacement_note(problem: str) -> bool:
    """Whether a parse's problem is the note of a byte replaced in a line read whole (not a line
    left out: it counts in no ``skipped``)."""
    return problem.endswith(REPLACED)


def decode_line(raw: bytes, number: int) -> tuple[str, str | None]:
    """Line ``number`` (bytes without its newline) as text (``\\r`` cut), and a note when a byte
    is not UTF-8: each such byte is replaced by U+FFFD and the line read — one bad byte cost a
    person's whole prompt (and with it, at times, its session: found by a tester of other agents'
    files), as a Gemini chat of JSON keeps it."""
    try:
        return raw.decode("utf-8").removesuffix("\r"), None
    except UnicodeDecodeError as exc:
        return raw.decode("utf-8", "replace").removesuffix("\r"), (
            f"line {number}: byte 0x{raw[exc.start]:02x} at column {exc.start + 1} is not UTF-8 {REPLACED}")


def may_be_unfinished(tail: bytes) -> bool:
    """Whether ``tail``, a last line with no newline, may be half a JSON line an agent is writing
    now: it starts a JSON object or array (after blanks and a UTF-8 byte order mark). Random
    bytes or a UTF-16 file do not: they are bad lines, said so, not "still being written"."""
    return tail.lstrip(b" \t\r\xef\xbb\xbf").startswith((b"{", b"["))


def read_lines(path: Path) -> tuple[list[tuple[int, str]], list[str]]:
    """The lines of a text file as ``(line number, text)``, each decoded as UTF-8 on its own:
    a byte that is not UTF-8 is replaced by U+FFFD, its line read and named in the second list
    (``line N: …``, :func:`decode_line`).

    Raises
    ------
    OSError
        The file cannot be read.
    """
    return _split(read_transcript(path))


#: The largest transcript read (bytes): one is read whole, and parsing holds about three times
#: its size; a larger file (or one growing without end in a watched folder) is named, not read.
MAX_TRANSCRIPT_BYTES = 1 << 30


def read_transcript(path: Path) -> bytes:
    """The bytes of a transcript, read whole (:func:`open_regular`).

    Raises
    ------
    OSError
        The file cannot be read, is not a regular file, or is larger than
        :data:`MAX_TRANSCRIPT_BYTES` (``EFBIG``).
    """
    with open_regular(path) as handle:
        check_transcript_size(os.fstat(handle.fileno()).st_size)
        return handle.read(MAX_TRANSCRIPT_BYTES + 1)


def check_transcript_size(size: int) -> None:
    """Refuse a transcript over :data:`MAX_TRANSCRIPT_BYTES` (``OSError`` ``EFBIG``, named)."""
    if size > MAX_TRANSCRIPT_BYTES:
        raise OSError(errno.EFBIG, f"the file is {size:,} bytes; memo reads transcripts of up to "
                                   f"{MAX_TRANSCRIPT_BYTES:,} bytes (1 GB)")


def _split(data: bytes) -> tuple[list[tuple[int, str]], list[str]]:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines, problems = [], []
    for number, raw in enumerate(data.split(b"\n"), 1):
        text, problem = decode_line(raw, number)
        lines.append((number, text))
        if problem is not None:
            problems.append(problem)
    if lines and lines[-1][1] == "" and data.endswith(b"\n"):
        lines.pop()
    return lines, problems


def read_jsonl_lines(path: Path) -> tuple[list[tuple[int, str]], list[str], bool]:
    """:func:`read_lines` of a JSON Lines file an agent may be writing now, and whether its last
    line is unfinished: with no newline and not JSON yet (or cut inside a character) it is half a
    line still being written — left out, and not named as a problem: the file's next read takes it
    in once it is finished (:attr:`.common.ParseResult.pending_lines`).

    Raises
    ------
    OSError
        The file cannot be read.
    """
    data = read_transcript(path)
    lines, problems = _split(data)
    if not data.rstrip(b" \t\r") or data.endswith(b"\n"):
        return lines, problems, False
    last = data.count(b"\n") + 1  # the number of the line with no newline
    if not may_be_unfinished(data[data.rfind(b"\n") + 1:]):
        return lines, problems, False  # a bad line (random bytes, UTF-16), not one being written
    if lines and lines[-1][0] == last:
        if not lines[-1][1].strip() or parse_json_line(lines[-1][1]) is not NOT_JSON:
            return lines, problems, False  # whole (a writer that has not put the newline yet)
        # not JSON yet (cut inside a character too): being written, said by no note
        return lines[:-1], [p for p in problems if not p.startswith(f"line {last}: ")], True
    return lines, problems, True
