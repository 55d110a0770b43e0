"""Read-only access to other tools' SQLite files, for the importers (SPEC §7): Cursor's
``state.vscdb`` and OpenCode's ``opencode.db``.

The only SQL memo runs on a database it does not own lives here (STYLE: SQL only in
``index/`` and ``analytics/``). Every file is opened with a ``file:…?mode=ro&immutable=1``
URI and ``PRAGMA query_only``: nothing is created, locked or changed, no ``-wal``/``-shm``
file appears and a running tool's write-ahead log is not touched (the rows it has not
checkpointed yet are read on a later import). Each reader selects only the rows it names —
never ``SELECT *`` over a whole table — and yields them one at a time, so a database of
several gigabytes is never held in memory.

Raises ``sqlite3.DatabaseError`` (from opening or the first read) when the file is not a
SQLite database; the importers turn that into "not recognised".
"""

from __future__ import annotations

import sqlite3
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Iterator

#: The two key prefixes of Cursor's ``cursorDiskKV`` that hold conversations. Nothing else of
#: that database is ever read: the same file keeps sign-in tokens and other secrets
#: (``cursorAuth/…`` in ``ItemTable``, and whatever extensions put in either table).
CURSOR_PREFIXES = ("composerData:", "bubbleId:")


class NotADatabaseError(ValueError):
    """The file is not a SQLite database (its message says so)."""


@contextmanager
def open_readonly(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to ``path`` that can only read, closed on leaving the block.

    Raises
    ------
    NotADatabaseError
        ``path`` is not a SQLite database.
    OSError
        It cannot be opened, or it breaks off while the block reads it.
    """
    uri = f"{Path(path).absolute().as_uri()}?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise OSError(f"cannot open the database ({exc})") from None
    with closing(conn):
        try:
            conn.execute("PRAGMA query_only = 1")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # not a database: raises here
        except sqlite3.OperationalError as exc:
            raise OSError(f"cannot open the database ({exc})") from None
        except sqlite3.DatabaseError as exc:
            raise NotADatabaseError(f"not a SQLite database ({exc})") from None
        try:
            yield conn
        except sqlite3.DatabaseError as exc:
            raise OSError(f"the database cannot be read to its end ({exc})") from None


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The names of the database's tables (from its schema; no row of any table is read)."""
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def table_columns(conn: sqlite3.Connection, names: set[str]) -> dict[str, set[str]]:
    """``{table: its column names}`` for those of ``names`` the database has (schema only)."""
    return {name: {row[0] for row in conn.execute("SELECT name FROM pragma_table_info(?)", (name,))}
            for name in sorted(names & table_names(conn))}


def cursor_chat_rows(conn: sqlite3.Connection) -> Iterator[tuple[str, bytes | str | None]]:
    """``(key, value)`` of the ``cursorDiskKV`` rows whose key starts with ``composerData:`` or
    ``bubbleId:`` (case-sensitively: ``LIKE`` narrows, ``GLOB`` makes it exact), one at a time.

    Only these rows are selected; no other key of ``cursorDiskKV`` and no row of ``ItemTable``
    is read. The caller checks first that the table exists (:func:`table_names`).
    """
    query = ("SELECT key, value FROM cursorDiskKV "
             "WHERE (key LIKE 'composerData:%' OR key LIKE 'bubbleId:%') "
             "AND (key GLOB 'composerData:*' OR key GLOB 'bubbleId:*')")
    for key, value in conn.execute(query):
        if isinstance(key, str) and key.startswith(CURSOR_PREFIXES):
            yield key, value


def _select(conn: sqlite3.Connection, table: str, wanted: tuple[str, ...], present: set[str]) -> Iterator[dict]:
    columns = [name for name in wanted if name in present]
    names = ", ".join(f'"{name}"' for name in columns)
    for row in conn.execute(f'SELECT {names} FROM "{table}"'):
        yield dict(zip(columns, row))


#: OpenCode's tables and the columns the importer reads (``session.sql.ts``; a column a
#: version lacks is left out of the row).
OPENCODE_COLUMNS = {
    "session": ("id", "parent_id", "directory", "title", "time_created", "time_updated", "revert"),
    "message": ("id", "session_id", "time_created", "time_updated", "data"),
    "part": ("id", "message_id", "session_id", "time_created", "time_updated", "data"),
}


def opencode_rows(conn: sqlite3.Connection, table: str, present: set[str]) -> Iterator[dict]:
    """The rows of OpenCode's ``session``, ``message`` or ``part`` table as ``{column: value}``
    with the columns of :data:`OPENCODE_COLUMNS` that ``present`` (the table's columns) has,
    one at a time."""
    return _select(conn, table, OPENCODE_COLUMNS[table], present)
