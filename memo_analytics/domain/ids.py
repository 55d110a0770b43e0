"""Record identity and safe slugs (SPEC §2.1, §2.2).

Every id that becomes part of a path (project id, session id, record id, task slug) must be
a *safe slug*: letters, digits, ``.``, ``_`` and ``-``; not starting with a dot or dash;
no ``..``, no ``.conflict-`` (the mark of a kept sync conflict version); at most 200 characters.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime

from .errors import InvalidFieldError

MAX_SLUG_LENGTH = 200
#: A session id leaves room for ``prompt-{sessionId}-t{turn}`` within MAX_SLUG_LENGTH.
MAX_SESSION_ID_LENGTH = 160
#: Highest turn number accepted (SPEC §2.4).
MAX_TURN = 1_000_000
_SLUG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
#: What the file name of a kept sync conflict version holds (``<id>.conflict-<stamp>-<hash>.md``,
#: ``vault.conflicts``): no id may hold it, or its record would be taken for one and never indexed.
RESERVED_MARK = ".conflict-"


def validate_slug(value: object, field: str, max_length: int = MAX_SLUG_LENGTH) -> str:
    """Return ``value`` if it is a safe slug, else raise.

    Parameters
    ----------
    value : object
        The candidate id.
    field : str
        Wire name of the field, used in the error message.

    Raises
    ------
    InvalidFieldError
        ``Invalid <field>: ...`` when the value is empty, too long, contains a path
        separator, ``..``, NUL or any character outside ``[A-Za-z0-9._-]``.
    """
    if not isinstance(value, str) or not value:
        raise InvalidFieldError(field, "must be a non-empty string")
    if len(value) > max_length:
        raise InvalidFieldError(field, f"longer than {max_length} characters")
    if ".." in value or not _SLUG.fullmatch(value):
        raise InvalidFieldError(
            field, "must start with a letter, digit or '_' and hold only letters, digits, '.', '_' and '-' "
            "(no '..', no path separators)"
        )
    if RESERVED_MARK in value.lower():
        raise InvalidFieldError(field, f"must not contain {RESERVED_MARK!r}: memo names the versions a sync "
                                       "conflict keeps so, and they are never read as records")
    return value


def validate_session_id(value: object) -> str:
    """A session id: a safe slug of at most :data:`MAX_SESSION_ID_LENGTH` characters."""
    return validate_slug(value, "sessionId", MAX_SESSION_ID_LENGTH)


def slugify(text: str, max_length: int = 64) -> str:
    """Turn free text into a safe slug (lowercase, ``-`` separated); never empty."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text.strip().lower()).strip("-._")
    slug = re.sub(r"-{2,}", "-", slug).replace("..", ".").replace(RESERVED_MARK, "-conflict-")
    return slug[:max_length].strip("-._") or "untitled"


def project_slug(name: str) -> str:
    """The project id of a folder (a repository's, a transcript's working folder): :func:`slugify`
    of its name written in ASCII (``anyascii``: ``café`` → ``cafe``, ``飞书项目`` →
    ``feishuxiangmu``, ``проект`` → ``proekt``) — letters outside ASCII were dropped, and every
    Chinese or Japanese folder was the one project ``untitled`` (their clients' work merged); a
    name of nothing that reads as letters: ``project-<8 hex of its SHA-256>``, one per name."""
    if not name.isascii():
        from anyascii import anyascii

        name = anyascii(name)
    slug = slugify(name)
    if slug == "untitled" and name.strip() and name.strip().lower() != "untitled":
        import hashlib

        slug = "project-" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return slug


def prompt_id(session_id: str | None, turn: int | None, now: datetime) -> str:
    """Prompt record id (SPEC §2.2).

    ``prompt-{sessionId}-t{turn}`` when both are known, else
    ``prompt-{epoch ms}-{6 lowercase hex}``.
    """
    if session_id and turn is not None:
        return f"prompt-{session_id}-t{turn}"
    return f"prompt-{int(now.timestamp() * 1000)}-{secrets.token_hex(3)}"


#: The id :func:`prompt_id` gives a prompt recorded without a session.
LONE_PROMPT_ID = re.compile(r"prompt-\d{1,16}-[0-9a-f]{6}")


def session_record_id(session_id: str) -> str:
    """Session record id: ``session-{sessionId}`` (SPEC §2.2)."""
    return f"session-{session_id}"


def new_session_id(now: datetime) -> str:
    """A fresh session id ``{timestamp}-{6 hex}`` (SPEC §2.2); the timestamp is UTC."""
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"
