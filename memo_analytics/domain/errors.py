"""The one error tree of memo_analytics.

Every error the product raises on purpose is a :class:`MemoError`. Interfaces translate
them at the edge only: the CLI exits non-zero with ``str(error)`` on one line, the MCP tool
raises a tool error with the same message, the HTTP API answers with a JSON body.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


class MemoError(Exception):
    """Base of every error memo_analytics raises on purpose.

    ``str(error)`` is a one-line message fit for a person or an agent.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message.replace("\n", " "))

    @property
    def message(self) -> str:
        return str(self)


class InvalidFieldError(MemoError):
    """An input field was refused (bad id, bad path, empty body, ...).

    Attributes
    ----------
    field : str
        The wire name of the field (``sessionId``, ``body``, ``project`` ...).
    reason : str
        Why the value was refused.
    """

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"Invalid {field}: {reason}")


#: What a date or time may be given as: said with every refusal of one.
DATE_FORMS = "give a date as YYYY-MM-DD or a time as YYYY-MM-DDTHH:MM, ISO 8601"


class InvalidDateError(InvalidFieldError):
    """A date or timestamp could not be parsed (SPEC §2.6: ``Invalid since date``)."""

    def __init__(self, field: str, value: object, reason: str | None = None) -> None:
        self.field = field
        self.value = value
        self.reason = reason or f"cannot parse {value!r}"
        # a value that is no text shown as it is (2026 as '2026' read as a refusal of a valid year: found by an analyst)
        shown = repr(_short(value)) if isinstance(value, str) else f"{_short(value)} (a {type(value).__name__}, not text)"
        MemoError.__init__(self, f"Invalid {field} date: {shown} ({reason or DATE_FORMS})")


class RecordNotFoundError(MemoError):
    """No prompt or session record has this id (SPEC §2.6 ``get``)."""

    def __init__(self, record_id: str, project: str | None = None) -> None:
        self.record_id = record_id
        self.project = project
        super().__init__(f"Record not found: {_short(record_id)}" + (f" in project {_short(project)}" if project else ""))


class InvoiceNotFoundError(RecordNotFoundError):
    """No issued invoice or credit note has this number (SPEC §9)."""

    def __init__(self, number: str) -> None:
        self.record_id = number
        self.project = None
        MemoError.__init__(self, f"Invoice not found: {_short(number)} (memo invoice list shows the issued ones)")


class AmbiguousIdError(InvalidFieldError):
    """An id given without a project names records of several projects (SPEC §2.1: a record's
    key is ``(project, id)``); the message lists them, and a project chooses one.

    Attributes
    ----------
    record_id : str
        The id as given.
    projects : list[str]
        The projects that hold a record of this id, sorted.
    """

    def __init__(self, record_id: str, projects: list[str]) -> None:
        self.field = "project"
        self.record_id = record_id
        self.projects = sorted(projects)
        self.reason = f"{_short(record_id)} exists in projects {', '.join(self.projects)}; give the project"
        MemoError.__init__(self, f"Ambiguous id {_short(record_id)}: it exists in projects "
                                 f"{', '.join(self.projects)}; give the project (project / projectId / --project)")


class SessionCompletedError(MemoError):
    """``session_start`` on a session whose record is completed (SPEC §2.5)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(
            f"Session {session_id} is completed and cannot be restarted; start a new session"
        )


class SessionNotStartedError(MemoError):
    """``session_end`` without a session id or an existing record (SPEC §2.5)."""

    def __init__(self, session_id: str | None) -> None:
        self.session_id = session_id
        what = f"No session record for {session_id}" if session_id else "sessionId is required"
        super().__init__(f"{what}. Call session_start first")


class CorruptRecordError(MemoError):
    """A vault file could not be parsed; it is reported and left untouched."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"Cannot parse {path}: {reason}")


class IndexDamagedError(MemoError):
    """The SQLite index file is not readable; ``memo reindex`` rebuilds it from the files."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        super().__init__(f"The index {path} is damaged ({reason}); run `memo reindex` to rebuild it")


class IndexReadOnlyError(MemoError):
    """The index file, its WAL files or the ``.memo`` folder cannot be written (a read-only
    file, folder or file system). The index is never moved or rebuilt then: the person
    decides (make it writable, or copy the vault elsewhere)."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"index is read-only: {path}")


class DiskFullError(MemoError):
    """The disk that holds ``path`` (the vault, its index) has no space left: what was being
    written is not in the vault (every write is atomic); nothing is damaged — the person frees
    space and runs the command again (:func:`disk_full`)."""

    def __init__(self, path: str, limit: int | None = None) -> None:
        self.path = path
        if limit is not None:  # a file-size limit of the process (ulimit -f), not the disk (found by a tester)
            super().__init__(f"A file of {path} could not grow past this process's file-size limit ({limit:,} bytes, "
                             "ulimit -f): nothing is damaged (what could not be written is not in the vault); raise "
                             "the limit and run the command again")
            return
        super().__init__(f"No space left on the disk of {path}: nothing is damaged (what could not be written is "
                         "not in the vault); free some space and run the command again")


def file_size_limit() -> int | None:
    """This process's soft file-size limit in bytes (``ulimit -f``), or None when there is none."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    except (ImportError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY or soft < 0 else int(soft)


def disk_full(exc: BaseException, path: str | os.PathLike) -> bool:
    """Whether ``exc`` (an ``OSError`` or a ``sqlite3`` error) comes of a full disk: ``ENOSPC``
    or ``EDQUOT``, SQLite's ``SQLITE_FULL``, or a SQLite I/O error while the disk of ``path``
    has (almost) no space left."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(code, int):
        return False
    if code & 0xFF == 13:  # SQLITE_FULL
        return True
    if code & 0xFF != 10:  # SQLITE_IOERR: writing the WAL or its shared memory failed — for want of space?
        return False
    folder = Path(path)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        found = os.statvfs(folder)
    except (OSError, AttributeError):
        return False
    return found.f_bavail * found.f_frsize < 256 * 1024


def full_disk_error(exc: BaseException, vault_root: str | os.PathLike | None) -> DiskFullError | None:
    """The :class:`DiskFullError` ``exc`` stands for (:func:`disk_full` on the disk of
    ``vault_root``), or None: what every interface answers for an error no layer below turned
    into a product error."""
    where = vault_root if vault_root is not None else (getattr(exc, "filename", None) or ".")
    named = str(vault_root) if vault_root is not None else "the vault"
    if not disk_full(exc, where):
        limit = file_size_limit()
        code = getattr(exc, "sqlite_errorcode", None)
        too_large = (isinstance(exc, OSError) and exc.errno == errno.EFBIG) or (
            isinstance(code, int) and code & 0xFF == 10)  # SQLITE_IOERR
        return DiskFullError(named, limit) if limit is not None and too_large else None
    return DiskFullError(named)


class VaultBusyError(MemoError):
    """Another process held the vault lock for longer than the timeout."""

    def __init__(self, path: str, timeout_s: float) -> None:
        super().__init__(f"The vault {path} is busy: another memo process held its lock for {timeout_s:.0f} s")


class VaultMovedError(MemoError):
    """The vault a long-running process opened was moved or removed under it (its folder is
    gone, or another one is at its path)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"The vault {path} was moved or removed while memo ran: nothing more is imported there; "
                         "start memo again (with the vault's new place in vaultRoot or MEMO_VAULT)")


class ReportError(MemoError):
    """A report could not be rendered (template missing, output not writable ...)."""


def _short(value: object, limit: int = 80) -> str:
    text = str(value)
    text = text.replace("\n", "\\n").replace("\x00", "\\0")
    return text if len(text) <= limit else text[:limit] + "…"
