"""What a session is about, in one line (issue 15 point 5): the summary an imported or hook-captured
session gets from its transcript's title or its first meaningful turn. Pure."""

from __future__ import annotations

import re

from ..vault.redact import REDACTED_MARKER


def first_line(text: str, limit: int = 120) -> str:
    """The first non-empty line of ``text``, cut to ``limit`` characters."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


#: Lines that say nothing about the work: image and paste placeholders the agents insert.
_PLACEHOLDER = re.compile(r"^\[(?:Image(?: #\d+|: [^\]]*)|Pasted text #\d+[^\]]*|Request interrupted[^\]]*)\]$")
#: Replies that move the agent on without saying what the work is (compared lowercased, without punctuation).
_ACKNOWLEDGEMENTS = frozenset("""ok okay k kk yes y yep yup yeah sure no nope done k done ok done proceed go go ahead
continue cont next thanks thank you thx ty great good nice perfect cool lgtm please do it do that again retry try again
fine right correct agreed approve approved ship it sounds good looks good go on keep going""".replace("\n", " ").split(" "))


def _meaningful(line: str) -> bool:
    """Whether ``line`` describes work: not a placeholder, not a bare slash command, not an
    acknowledgement (a known one, or an ASCII line of at most two short words)."""
    if not line or _PLACEHOLDER.match(line) or re.fullmatch(r"/[\w:.-]+", line):
        return False
    if REDACTED_MARKER.search(line) or "[REDACTED]" in line:  # it held a secret: no line for a client's invoice
        return False
    plain = re.sub(r"[^\w\s]", " ", line.lower()).split()
    if not plain:
        return False
    if " ".join(plain) in _ACKNOWLEDGEMENTS or (line.isascii() and len(plain) <= 2 and len(line) <= 12):
        return False
    return True


def session_description(title: str | None, texts: list[str], limit: int = 120) -> str | None:
    """A session's summary as an invoice line or a timesheet row shows it (issue 15 point 5):
    the transcript's title, else the first meaningful line of the session's prompts in order
    (never an image placeholder, a bare slash command, a one-word acknowledgement such as
    ``proceed`` or ``k, done``, nor a line that held a secret — its redaction marker would go on
    the client's invoice), else a bare slash command (``/code-review``); cut to ``limit``
    characters; None when there is nothing better (the reports then say ``Work on <project>``).
    Pure."""
    if title and title.strip():
        return first_line(title, limit)
    lines = [ln.strip().lstrip("#> ").strip() for text in texts for ln in text.splitlines() if ln.strip()]
    chosen = next((ln for ln in lines if _meaningful(ln)), None) or next(
        (ln for ln in lines if re.fullmatch(r"/[\w:.-]+", ln)), None)  # a bare command is better than nothing
    return first_line(chosen, limit) if chosen else None
