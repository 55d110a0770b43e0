"""SQLite index over the vault (SPEC §2.1, §2.6).

``records`` holds one row per record file (frontmatter columns + body), keyed by
``(project, id)``: the same id may exist in several projects (SPEC §2.1, §2.2 — records
live under ``projects/<projectId>/``); ``records_fts`` is an FTS5 table over prompt/session
text sharing the row ids of ``records``. The index is
a cache: :mod:`memo_analytics.index.reindex` rebuilds it from the files alone.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .query import PromptFilter, build_where, fts_match_expression, fts_text

#: Version of the schema below (``PRAGMA user_version``); an index of another version is
#: rebuilt from the files on open (it is a cache).
SCHEMA_VERSION = 7

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    id TEXT NOT NULL,
    kind TEXT NOT NULL,
    project TEXT NOT NULL,
    path TEXT NOT NULL,
    status TEXT,
    created TEXT NOT NULL,
    updated TEXT,
    source TEXT,
    ide TEXT,
    model TEXT,
    agent TEXT,
    session_id TEXT,
    turn INTEGER,
    task_slug TEXT,
    client TEXT,
    billable INTEGER NOT NULL DEFAULT 1,
    branch TEXT,
    git_sha TEXT,
    start_time TEXT,
    end_time TEXT,
    duration_minutes INTEGER,
    summary TEXT,
    deliverables TEXT NOT NULL DEFAULT '[]',
    tags TEXT NOT NULL DEFAULT '[]',
    meta TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT '',
    UNIQUE (project, id)
);
CREATE TABLE IF NOT EXISTS record_counts (
    project TEXT NOT NULL,
    kind TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (project, kind)
);
CREATE TABLE IF NOT EXISTS folder_stamps (
    folder TEXT PRIMARY KEY,
    mtime_ns INTEGER NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(
    id UNINDEXED, body, summary, tokenize = 'unicode61 remove_diacritics 2'
);
"""

#: Secondary indexes of ``records`` (dropped and rebuilt around a bulk load: faster than
#: maintaining them row by row).
_INDEXES = {
    "records_id": "records(id, kind)",
    "records_kind_project_created": "records(kind, project, created)",
    "records_kind_created": "records(kind, created)",
    "records_session_turn": "records(session_id, turn)",
    "records_kind_client_created": "records(kind, client, created)",
    "records_kind_ide_created": "records(kind, lower(ide), created)",
}
_SCHEMA += "".join(f"CREATE INDEX IF NOT EXISTS {name} ON {on};\n" for name, on in _INDEXES.items())

_COLUMNS = {
    "id": "id", "kind": "kind", "project": "project", "status": "status", "created": "created",
    "updated": "updated", "source": "source", "ide": "ide", "model": "model", "agent": "agent",
    "sessionId": "session_id", "turn": "turn", "taskSlug": "task_slug", "client": "client",
    "billable": "billable", "branch": "branch", "gitSha": "git_sha", "startTime": "start_time",
    "endTime": "end_time", "durationMinutes": "duration_minutes", "summary": "summary",
}


def connect_as_it_is(path: Path) -> sqlite3.Connection | None:
    """A read-only connection to the index at ``path`` as it is on disk, for reads while it cannot
    be written (a full disk, a read-only mount), or None when none opens. A WAL holding pages
    another process wrote is read through its lock files (``mode=ro``); a closed index (no such
    pages) is read as a plain file (``immutable``: no lock file is made)."""
    wal = path.with_name(path.name + "-wal")
    queries = (["mode=ro"] if wal.exists() and wal.stat().st_size else []) + ["immutable=1"]
    for query in queries if path.is_file() else []:
        try:
            conn = sqlite3.connect(f"{path.as_uri()}?{query}", uri=True, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute("SELECT count(*) FROM records").fetchone()
        except sqlite3.DatabaseError:
            continue
        return conn
    return None


def connect(path: Path) -> sqlite3.Connection:
    """Open (and create) the index at ``path``: WAL mode, 30 s busy timeout.

    A new (or empty) database gets the schema; an existing one is left as it is, whatever
    its version: :func:`schema_problem` says whether it is usable, and a rebuild
    (:func:`reset_schema`) makes it so.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout = 30000")
    _while_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"))
    conn.execute("PRAGMA synchronous = NORMAL")
    if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
        with transaction(conn):
            _create_schema(conn)  # IF NOT EXISTS: another process may have made it meanwhile
    return conn


#: How long :func:`_while_locked` tries again (s): the busy timeout of the connection.
LOCKED_FOR_SECONDS = 30.0


def _while_locked(step) -> Any:
    """``step()``, tried again while SQLite answers "database is locked" without waiting: a
    new database switched to WAL by several processes at once (each holds a shared lock and
    wants the exclusive one — SQLite refuses at once rather than deadlock, its busy handler is
    not called), for at most :data:`LOCKED_FOR_SECONDS`."""
    import random
    import time

    deadline = time.monotonic() + LOCKED_FOR_SECONDS
    while True:
        try:
            return step()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.005, 0.05))


#: Columns ``records`` must have (in this order) for this version of the code.
_RECORD_COLUMNS = ("id", "kind", "project", "path", *[c for c in _COLUMNS.values() if c not in ("id", "kind", "project")],
                   "deliverables", "tags", "meta", "body")


def schema_problem(conn: sqlite3.Connection) -> str | None:
    """Why the index's schema is not the one this code reads and writes (another
    ``user_version``, a missing table, other columns), or None. Reads the catalogue only:
    well under a millisecond."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version != SCHEMA_VERSION:
        return f"schema is version {version} (this memo uses {SCHEMA_VERSION})"
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = sorted({"records", "record_counts", "folder_stamps", "records_fts"} - tables)
    if missing:
        return f"table {missing[0]} is missing"
    columns = {r[1] for r in conn.execute("PRAGMA table_info(records)")}
    if not set(_RECORD_COLUMNS) <= columns:
        return f"table records lacks {sorted(set(_RECORD_COLUMNS) - columns)[0]}"
    return None


def _statements(script: str) -> list[str]:
    return [part.strip() for part in script.split(";\n") if part.strip()]


def _create_schema(conn: sqlite3.Connection) -> None:
    # one statement at a time: executescript would commit the caller's transaction
    for statement in _statements(_SCHEMA):
        conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def reset_schema(conn: sqlite3.Connection) -> None:
    """Drop every table of the index and create the current schema, empty (inside the
    rebuild's :func:`transaction`, so readers see the old index until the new one is
    committed)."""
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                        "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'records_fts_%'")]
    for name in names:
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')
    _create_schema(conn)


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Open an existing index for reading only (another vault's: nothing is created or
    migrated there; ``sqlite3.OperationalError`` when it does not exist or cannot be read)."""
    conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=30.0, isolation_level=None,
                           check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA query_only = 1")
    return conn


def connect_empty() -> sqlite3.Connection:
    """An empty in-memory index with the schema (reads on a vault that does not exist yet)."""
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.executescript(_SCHEMA)
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """The one transaction helper: ``BEGIN IMMEDIATE`` … ``COMMIT`` (rollback on error); inside
    a transaction already open (a batch of writes, :meth:`VaultStore.batch`) a savepoint, so
    the step is all or nothing and the whole commits with its batch."""
    if conn.in_transaction:
        conn.execute("SAVEPOINT memo_step")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:  # SQLite ends it by itself on some errors (a full disk)
                conn.execute("ROLLBACK TO memo_step")
                conn.execute("RELEASE memo_step")
            raise
        conn.execute("RELEASE memo_step")
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        # SQLite ends the transaction by itself on some errors (SQLITE_FULL: a full disk); a
        # ROLLBACK then failed with "no transaction is active", hiding the error that happened
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def begin(conn: sqlite3.Connection) -> None:
    """Open a transaction that stays open across many steps (a batch of writes); each
    :func:`transaction` inside it is a savepoint. :func:`commit` or :func:`rollback` ends it."""
    conn.execute("BEGIN IMMEDIATE")


def commit(conn: sqlite3.Connection) -> None:
    conn.execute("COMMIT")


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if any."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def _row_values(meta: dict[str, Any], body: str, path: str) -> dict[str, Any]:
    values = {column: meta.get(key) for key, column in _COLUMNS.items()}
    values["billable"] = 0 if meta.get("billable") is False else 1
    turn = meta.get("turn")
    values["turn"] = turn if isinstance(turn, int) and not isinstance(turn, bool) else None
    duration = meta.get("durationMinutes")
    values["duration_minutes"] = duration if isinstance(duration, int) and not isinstance(duration, bool) else None
    values["deliverables"] = json.dumps(meta.get("deliverables") or [], ensure_ascii=False)
    values["tags"] = json.dumps(meta.get("tags") or [], ensure_ascii=False)
    values["meta"] = json.dumps(meta, ensure_ascii=False, default=str)
    values["body"] = body
    values["path"] = path
    for key in ("created", "updated", "startTime", "endTime"):
        column = _COLUMNS[key]
        if values[column] is not None:
            values[column] = str(values[column])
    values["created"] = values["created"] or ""
    return values


def upsert_record(conn: sqlite3.Connection, meta: dict[str, Any], body: str, path: str) -> None:
    """Insert or replace one record (keyed by ``(project, id)``) and its FTS row (call
    inside :func:`transaction`)."""
    values = _row_values(meta, body, path)
    columns = list(values)
    key = (values["project"], values["id"])
    before = conn.execute("SELECT rowid, kind FROM records WHERE project = ? AND id = ?", key).fetchone()
    if before is None or before[1] != values["kind"]:
        _count(conn, values["project"], values["kind"], +1)
        if before is not None:
            _count(conn, values["project"], before[1], -1)
    conn.execute(
        f"INSERT INTO records ({','.join(columns)}) VALUES ({','.join('?' * len(columns))}) "
        f"ON CONFLICT(project, id) DO UPDATE SET "
        f"{','.join(f'{c}=excluded.{c}' for c in columns if c not in ('id', 'project'))}",
        [values[c] for c in columns],
    )
    rowid = before[0] if before is not None else conn.execute(
        "SELECT rowid FROM records WHERE project = ? AND id = ?", key).fetchone()[0]
    conn.execute("DELETE FROM records_fts WHERE rowid = ?", (rowid,))
    if values["kind"] in ("prompt", "session"):
        conn.execute(
            "INSERT INTO records_fts (rowid, id, body, summary) VALUES (?, ?, ?, ?)",
            (rowid, values["id"], fts_text(body), fts_text(values["summary"] or "")),
        )


#: Column order of the rows :func:`index_row` builds and :func:`insert_fresh` inserts.
ROW_COLUMNS = (*_COLUMNS.values(), "deliverables", "tags", "meta", "body", "path")


def index_row(meta: dict[str, Any], body: str, path: str) -> tuple[tuple, str, str] | None:
    """One record as the index stores it: ``(row, fts_body, fts_summary)`` with ``row`` in
    :data:`ROW_COLUMNS` order; the FTS texts are None for kinds that are not searched.
    Pure, so a rebuild can compute it in worker processes."""
    values = _row_values(meta, body, path)
    row = tuple(values[c] for c in ROW_COLUMNS)
    if values["kind"] in ("prompt", "session"):
        return row, fts_text(body), fts_text(values["summary"] or "")
    return row, None, None


def insert_fresh(conn: sqlite3.Connection, rows: list[tuple[int, tuple, str | None, str | None]]) -> None:
    """Bulk insert rows made by :func:`index_row` into a just-cleared index (reindex), each
    as ``(rowid, row, fts_body, fts_summary)`` with rowids the caller assigns (unique).

    Same rows as :func:`upsert_record`, without its per-row lookups; call
    :func:`recount` once at the end (and :func:`drop_secondary_indexes` /
    :func:`create_secondary_indexes` around a large load).
    """
    if not rows:
        return
    conn.executemany(
        f"INSERT INTO records (rowid, {','.join(ROW_COLUMNS)}) VALUES (?, {','.join('?' * len(ROW_COLUMNS))})",
        [(rowid, *row) for rowid, row, _, _ in rows],
    )
    conn.executemany(
        "INSERT INTO records_fts (rowid, id, body, summary) VALUES (?, ?, ?, ?)",
        [(rowid, row[0], body, summary) for rowid, row, body, summary in rows if body is not None],
    )


def drop_secondary_indexes(conn: sqlite3.Connection) -> None:
    """Drop the secondary indexes of ``records`` (inside the rebuild's transaction)."""
    for name in _INDEXES:
        conn.execute(f"DROP INDEX IF EXISTS {name}")


def create_secondary_indexes(conn: sqlite3.Connection) -> None:
    """(Re)create the secondary indexes of ``records``."""
    for name, on in _INDEXES.items():
        conn.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {on}")


def recount(conn: sqlite3.Connection) -> None:
    """Derive ``record_counts`` from ``records`` (after a bulk insert)."""
    conn.execute("DELETE FROM record_counts")
    conn.execute("INSERT INTO record_counts SELECT project, kind, COUNT(*) FROM records GROUP BY project, kind")


def _count(conn: sqlite3.Connection, project: str, kind: str, delta: int) -> None:
    conn.execute(
        "INSERT INTO record_counts (project, kind, n) VALUES (?, ?, ?) "
        "ON CONFLICT(project, kind) DO UPDATE SET n = n + excluded.n",
        (project, kind, delta),
    )


def answers(conn: sqlite3.Connection) -> None:
    """Read one row of the index (a health probe): raises ``sqlite3.Error`` when it cannot."""
    conn.execute("SELECT n FROM record_counts LIMIT 1").fetchall()


def record_counts(conn: sqlite3.Connection, project: str) -> dict[str, int]:
    """How many records of each kind ``project`` holds (kept up to date on every write: O(1))."""
    return {kind: n for kind, n in conn.execute("SELECT kind, n FROM record_counts WHERE project = ?", (project,))}


def latest_rows(conn: sqlite3.Connection, project: str, kind: str, limit: int) -> list[sqlite3.Row]:
    """The newest ``limit`` records of one kind in one project (by ``created``): ``id, meta``
    and the first 400 characters of ``body``."""
    return conn.execute(
        "SELECT id, meta, substr(body, 1, 400) AS body FROM records WHERE kind = ? AND project = ? "
        "ORDER BY created DESC, id DESC LIMIT ?",
        (kind, project, limit),
    ).fetchall()


def rows_of_kind(conn: sqlite3.Connection, kind: str, project: str | None = None,
                 status: str | None = None) -> list[sqlite3.Row]:
    """Every record of ``kind`` (of ``project`` and with ``status`` when given), oldest first
    (``created``, then ``id``): whole rows."""
    sql, params = "SELECT * FROM records WHERE kind = ?", [kind]
    if project is not None:
        sql += " AND project = ?"
        params.append(project)
    if status is not None:
        sql += " AND status = ?"
        params.append(status)
    return conn.execute(sql + " ORDER BY created, id", params).fetchall()


def recent_session_ids(conn: sqlite3.Connection, project: str, limit: int = 500) -> list[str]:
    """The session ids of ``project``, the ``limit`` most recently started first (a bounded
    read, whatever the vault's size)."""
    return [r[0] for r in conn.execute(
        "SELECT session_id FROM records WHERE kind = 'session' AND project = ? AND session_id IS NOT NULL "
        "ORDER BY created DESC LIMIT ?", (project, limit))]


def session_owners(conn: sqlite3.Connection, limit: int = 500) -> list[str]:
    """The ``owner`` of the ``limit`` most recently started sessions (frontmatter, any
    project), each once, most recent first; sessions of no owner left out."""
    rows = conn.execute("SELECT json_extract(meta, '$.owner') FROM records WHERE kind = 'session' "
                        "ORDER BY created DESC LIMIT ?", (limit,))
    return list(dict.fromkeys(r[0] for r in rows if isinstance(r[0], str) and r[0].strip()))


def ownerless_sessions(conn: sqlite3.Connection, among: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    """``(project, record id)`` of every session that names no ``owner`` (none, or blank), by
    project and id — or of those ``among`` the ``(project, record id)`` given (looked up one by one)."""
    ownerless = "kind = 'session' AND trim(coalesce(json_extract(meta, '$.owner'), '')) = ''"
    if among is None:
        rows = conn.execute(f"SELECT project, id FROM records WHERE {ownerless} ORDER BY project, id")
        return [(r[0], r[1]) for r in rows]
    return sorted(key for key in set(among) if conn.execute(
        f"SELECT 1 FROM records WHERE project = ? AND id = ? AND {ownerless}", key).fetchone())


def record_places(conn: sqlite3.Connection, left_out_kinds: tuple[str, ...] = ()) -> list[tuple[str, str, str, str | None]]:
    """``(id, project, path, updated)`` of every record (``path`` relative to the vault root) but
    those of ``left_out_kinds``, sessions first, then by project and id."""
    marks = ", ".join("?" for _ in left_out_kinds)
    rows = conn.execute("SELECT id, project, path, updated FROM records "
                        + (f"WHERE kind NOT IN ({marks}) " if left_out_kinds else "")
                        + "ORDER BY kind != 'session', project, id", left_out_kinds)
    return [(r[0], r[1], r[2], r[3]) for r in rows]


def project_of_hash(conn: sqlite3.Connection, digest: str) -> str | None:
    """The project of the latest session imported from a chat that named the folder hash
    ``digest`` (its ``projectHash``: a Gemini chat's), or None."""
    row = conn.execute("SELECT project FROM records WHERE kind = 'session' AND json_extract(meta, '$.projectHash') = ? "
                       "AND coalesce(status, '') <> 'superseded' ORDER BY created DESC LIMIT 1", (digest,)).fetchone()
    return row[0] if row else None


def project_names(conn: sqlite3.Connection) -> list[str]:
    """The projects that hold at least one record, sorted."""
    return [r[0] for r in conn.execute("SELECT DISTINCT project FROM records ORDER BY project")]


def analyze(conn: sqlite3.Connection) -> None:
    """Fresh statistics for the query planner, sampled (bounded time on any vault)."""
    conn.execute("PRAGMA analysis_limit = 1000")
    conn.execute("ANALYZE")


#: The key of :func:`probe`'s counts that counts the superseded records of every kind.
SUPERSEDED_COUNT = "(superseded)"


def probe(path: Path) -> tuple[str | None, dict[str, int]]:
    """Look at the index file ``path`` without changing anything (no ``-wal``/``-shm`` file
    appears): ``(schema problem or None, records per kind)`` — counts only when the schema
    is this product's; :data:`SUPERSEDED_COUNT` of them superseded.

    Raises
    ------
    sqlite3.Error
        The file is not a SQLite database, or cannot be read.
    """
    # beside a writer's WAL (a `memo serve` keeps one open: its pages may hold most records, not
    # checkpointed yet), read through it, read-only; without one, immutable — so no -shm/-wal file
    # is ever made by a health check
    wal, shm = (path.with_name(path.name + suffix) for suffix in ("-wal", "-shm"))
    live = wal.is_file() and wal.stat().st_size > 0 and shm.is_file()
    conn = sqlite3.connect(f"{path.as_uri()}?{'mode=ro' if live else 'immutable=1'}", uri=True)
    try:
        problem = schema_problem(conn)
        counts = {} if problem is not None else dict(
            conn.execute("SELECT kind, sum(n) FROM record_counts GROUP BY kind").fetchall())
        if problem is None:  # of them, those every list and report leaves out (a doctor's count beside theirs)
            counts[SUPERSEDED_COUNT] = conn.execute(
                "SELECT count(*) FROM records WHERE status = 'superseded'").fetchone()[0]
    finally:
        conn.close()
    return problem, counts


def client_names(conn: sqlite3.Connection) -> list[str]:
    """Distinct client names of the vault's sessions (``internal`` for none), sorted."""
    rows = conn.execute(
        "SELECT DISTINCT coalesce(nullif(trim(client), ''), 'internal') FROM records WHERE kind = 'session'"
    ).fetchall()
    return sorted(r[0] for r in rows)


def client_spelling(conn: sqlite3.Connection, name: str) -> str | None:
    """How the vault's sessions spell the client ``name`` (matched in any case, spaces around
    trimmed): the spelling most sessions use (then the first in order), or None when none has it."""
    row = conn.execute(
        "SELECT trim(client) AS spelled FROM records WHERE kind = 'session' AND lower(trim(client)) = lower(trim(?)) "
        "GROUP BY spelled ORDER BY count(*) DESC, spelled LIMIT 1", (name,)).fetchone()
    return row[0] if row is not None else None


def get_row(conn: sqlite3.Connection, project: str, record_id: str, kind: str | None = None) -> sqlite3.Row | None:
    """The ``records`` row of ``record_id`` in ``project`` (optionally of one kind), or None."""
    if kind:
        return conn.execute("SELECT * FROM records WHERE project = ? AND id = ? AND kind = ?",
                            (project, record_id, kind)).fetchone()
    return conn.execute("SELECT * FROM records WHERE project = ? AND id = ?", (project, record_id)).fetchone()


def rows_with_id(conn: sqlite3.Connection, record_id: str, kind: str | None = None) -> list[sqlite3.Row]:
    """Every ``records`` row of ``record_id`` (optionally of one kind), one per project that
    holds it, by project: an id alone may name records of several projects (SPEC §2.1)."""
    if kind:
        # "+kind": look the id up (records_id), never scan a kind's rows in project order
        return conn.execute("SELECT * FROM records WHERE id = ? AND +kind = ? ORDER BY project",
                            (record_id, kind)).fetchall()
    return conn.execute("SELECT * FROM records WHERE id = ? ORDER BY project", (record_id,)).fetchall()


def where_is(conn: sqlite3.Connection, record_id: str, kind: str) -> list[sqlite3.Row]:
    """``project``, ``id``, ``kind`` and ``session_id`` of every row of ``record_id`` of ``kind``,
    by project: :func:`rows_with_id` without the record's text (a lookup the import makes for
    every interval)."""
    return conn.execute("SELECT project, id, kind, session_id FROM records WHERE id = ? AND +kind = ? ORDER BY project",
                        (record_id, kind)).fetchall()


def indexed_ids(conn: sqlite3.Connection, record_ids: list[str], kind: str) -> set[str]:
    """Those of ``record_ids`` that the index holds as records of ``kind`` (in any project): a
    few statements for many ids."""
    found: set[str] = set()
    for start in range(0, len(record_ids), 500):
        chunk = record_ids[start:start + 500]
        found.update(row[0] for row in conn.execute(
            f"SELECT id FROM records WHERE id IN ({','.join('?' * len(chunk))}) AND +kind = ?", (*chunk, kind)))
    return found


def kind_of(conn: sqlite3.Connection, project: str, record_id: str) -> str | None:
    """The kind of record ``record_id`` of ``project`` in the index, or None."""
    row = conn.execute("SELECT kind FROM records WHERE project = ? AND id = ?", (project, record_id)).fetchone()
    return None if row is None else row[0]


def last_turn_created(conn: sqlite3.Connection, project: str, session_id: str) -> str | None:
    """The ``created`` (ISO UTC) of the newest turn of ``session_id`` in ``project`` that is not
    superseded, or None when it has none."""
    # by the session's own rows (a hook's write path: the project's whole history must not be read)
    row = conn.execute("SELECT max(created) FROM records INDEXED BY records_session_turn WHERE session_id = ? "
                       "AND kind = 'prompt' AND project = ? AND coalesce(status, '') <> 'superseded'",
                       (session_id, project)).fetchone()
    return row[0] if row else None


def max_turn(conn: sqlite3.Connection, project: str, session_id: str) -> int:
    """Highest turn recorded for ``session_id`` in ``project`` (0 when none) (SPEC §2.4)."""
    row = conn.execute(
        "SELECT MAX(turn) FROM records WHERE kind = 'prompt' AND session_id = ? AND project = ?", (session_id, project)
    ).fetchone()
    return int(row[0] or 0)


def every_record(conn: sqlite3.Connection) -> Iterator[tuple[dict[str, Any], str]]:
    """``(frontmatter, path relative to the vault)`` of every record the index holds, by project and id."""
    for meta, path in conn.execute("SELECT meta, path FROM records ORDER BY project, id"):
        yield json.loads(meta), path


def last_current_turn(conn: sqlite3.Connection, project: str, session_id: str) -> int:
    """Highest turn of ``session_id`` in ``project`` that is not superseded (0 when none): the
    turns the session holds now, where :func:`max_turn` counts the superseded ones too."""
    row = conn.execute(
        "SELECT MAX(turn) FROM records WHERE kind = 'prompt' AND session_id = ? AND project = ? "
        "AND COALESCE(status, '') != 'superseded'", (session_id, project)
    ).fetchone()
    return int(row[0] or 0)


def last_turn_before(conn: sqlite3.Connection, project: str, session_id: str, before: str, turn_id: str) -> str | None:
    """``created`` (UTC ISO text) of the latest turn of ``session_id`` in ``project`` before the
    instant ``before`` (ISO text, compared as text: both written by memo in UTC), other than
    ``turn_id`` and not superseded; None when none."""
    row = conn.execute(
        "SELECT MAX(created) FROM records WHERE kind = 'prompt' AND session_id = ? AND project = ? AND id != ? "
        "AND created < ? AND COALESCE(status, '') != 'superseded'", (session_id, project, turn_id, before)
    ).fetchone()
    return row[0] if row and row[0] else None


def count_and_page(
    conn: sqlite3.Connection, kind: str, flt: PromptFilter, limit: int, offset: int, sort: str = "date-desc"
) -> tuple[int, list[sqlite3.Row]]:
    """Total count and one page of ``kind`` rows matching ``flt``, newest first by default."""
    where, params = build_where(kind, flt)
    order = {
        "date-asc": "r.created ASC, r.id ASC",
        "turn-asc": "r.turn ASC, r.created ASC, r.id ASC",
    }.get(sort, "r.created DESC, r.id DESC")
    total = conn.execute(f"SELECT COUNT(*) FROM records r WHERE {where}", params).fetchone()[0]
    rows = conn.execute(
        f"SELECT r.* FROM records r WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?",
        [*params, limit, offset],
    ).fetchall()
    return total, rows


def search_page(
    conn: sqlite3.Connection, query: str, flt: PromptFilter, limit: int, offset: int, sort: str | None = None
) -> tuple[int, list[sqlite3.Row]]:
    """FTS5 search over prompt records ranked by bm25 (SPEC §2.6); no substring fallback.
    With ``sort`` (``date-desc``/``date-asc``) the matches come by ``created`` instead."""
    match = fts_match_expression(query)
    if match is None:
        return 0, []
    where, params = build_where("prompt", flt)
    # CROSS JOIN keeps the FTS match as the outer loop (SQLite would otherwise probe the FTS
    # table once per record of the kind)
    base = f"FROM records_fts f CROSS JOIN records r ON r.rowid = f.rowid WHERE records_fts MATCH ? AND {where}"
    order = {"date-asc": "r.created ASC, r.id ASC", "date-desc": "r.created DESC, r.id DESC"}.get(
        sort or "", "score ASC, r.created DESC")
    total = conn.execute(f"SELECT COUNT(*) {base}", [match, *params]).fetchone()[0]
    rows = conn.execute(
        f"SELECT r.*, bm25(records_fts) AS score {base} ORDER BY {order} LIMIT ? OFFSET ?",
        [match, *params, limit, offset],
    ).fetchall()
    return total, rows


def clear(conn: sqlite3.Connection) -> None:
    """Delete every row (used by reindex inside its transaction)."""
    conn.execute("DELETE FROM records")
    conn.execute("DELETE FROM records_fts")
    conn.execute("DELETE FROM record_counts")
    conn.execute("DELETE FROM folder_stamps")


def delete_record(conn: sqlite3.Connection, project: str, record_id: str) -> bool:
    """Remove the rows of ``record_id`` in ``project`` (its file is gone); True when there was
    one. Call inside :func:`transaction`."""
    row = conn.execute("SELECT rowid, project, kind FROM records WHERE project = ? AND id = ?",
                       (project, record_id)).fetchone()
    if row is None:
        return False
    conn.execute("DELETE FROM records_fts WHERE rowid = ?", (row[0],))
    conn.execute("DELETE FROM records WHERE rowid = ?", (row[0],))
    _count(conn, row[1], row[2], -1)
    return True


def folder_rows(conn: sqlite3.Connection, project: str, kind: str) -> dict[str, str]:
    """``{id: path}`` of every indexed record of one kind in one project."""
    return {r[0]: r[1] for r in conn.execute("SELECT id, path FROM records WHERE kind = ? AND project = ?",
                                             (kind, project))}


def has_rows(conn: sqlite3.Connection) -> bool:
    """Whether the index holds any record."""
    return conn.execute("SELECT 1 FROM records LIMIT 1").fetchone() is not None


# ---------------------------------------------------------------- folder stamps
# The modification time (ns) of each record folder (``<project>/<subdir>``) as it was when
# the index last took in every change of that folder. A folder whose time differs on disk
# was changed by something that did not update the index (a writer killed between its
# rename and its index update, a hand edit that adds or removes files, a git pull).


def folder_stamps(conn: sqlite3.Connection) -> dict[str, int]:
    """``{"<project>/<subdir>": mtime_ns}`` of every folder the index is up to date with."""
    return {r[0]: r[1] for r in conn.execute("SELECT folder, mtime_ns FROM folder_stamps")}


def folder_stamp(conn: sqlite3.Connection, folder: str) -> int | None:
    """The stamp of one folder (``<project>/<subdir>``), or None when it has none."""
    row = conn.execute("SELECT mtime_ns FROM folder_stamps WHERE folder = ?", (folder,)).fetchone()
    return row[0] if row is not None else None


def set_folder_stamps(conn: sqlite3.Connection, stamps: dict[str, int | None]) -> None:
    """Record folder stamps (None removes a folder's stamp); inside :func:`transaction`."""
    for folder, mtime_ns in stamps.items():
        if mtime_ns is None:
            conn.execute("DELETE FROM folder_stamps WHERE folder = ?", (folder,))
        else:
            conn.execute("INSERT INTO folder_stamps (folder, mtime_ns) VALUES (?, ?) "
                         "ON CONFLICT(folder) DO UPDATE SET mtime_ns = excluded.mtime_ns", (folder, mtime_ns))


def session_turn_span(conn: sqlite3.Connection, project: str, session_id: str) -> tuple[int, int]:
    """``(number of distinct turns, highest turn)`` indexed for ``session_id`` in ``project``
    ((0, 0) when none): equal when the turns are 1…n without a gap. One probe of the session
    index."""
    row = conn.execute("SELECT count(DISTINCT turn), coalesce(max(turn), 0) FROM records "
                       "WHERE kind = 'prompt' AND session_id = ? AND project = ? AND turn IS NOT NULL",
                       (session_id, project)).fetchone()
    return int(row[0]), int(row[1])


def session_turn_projects(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """The projects that hold turns of ``session_id``, sorted."""
    return [r[0] for r in conn.execute("SELECT DISTINCT project FROM records WHERE kind = 'prompt' AND session_id = ? "
                                       "ORDER BY project", (session_id,))]


def session_turn_numbers(conn: sqlite3.Connection, project: str, session_id: str) -> set[int]:
    """The turn numbers indexed for ``session_id`` in ``project`` (SPEC §2.4)."""
    return {r[0] for r in conn.execute(
        "SELECT turn FROM records WHERE kind = 'prompt' AND session_id = ? AND project = ? AND turn IS NOT NULL",
        (session_id, project))}


def turn_differs(conn: sqlite3.Connection, project: str, session_id: str, key: str, value: Any) -> bool:
    """Whether a current (not superseded) turn of the session holds another ``key`` (``client``
    or ``billable``) than ``value``."""
    column = {"client": "COALESCE(client, '')", "billable": "billable"}[key]
    said = (value or "") if key == "client" else int(bool(value))
    return conn.execute(f"SELECT 1 FROM records WHERE kind = 'prompt' AND project = ? AND session_id = ? "
                        f"AND COALESCE(status, '') != 'superseded' AND {column} != ? LIMIT 1",
                        (project, session_id, said)).fetchone() is not None


def turns_at_odds(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Sessions whose turns bill another client (or billable) than the session does — an edit of
    its client cut short between its turns and its session (killed, a folder it could not write):
    ``{project, sessionId, client, billable, turns}``, the session's values and how many of its
    (current) turns differ, by project and session."""
    rows = conn.execute(
        "SELECT s.project, s.session_id, s.client, s.billable, count(*) FROM records s "
        "JOIN records p ON p.kind = 'prompt' AND p.project = s.project AND p.session_id = s.session_id "
        "AND COALESCE(p.status, '') != 'superseded' "
        "WHERE s.kind = 'session' AND (COALESCE(p.client, '') != COALESCE(s.client, '') OR p.billable != s.billable) "
        "GROUP BY s.project, s.session_id ORDER BY s.project, s.session_id").fetchall()
    return [{"project": r[0], "sessionId": r[1], "client": r[2], "billable": bool(r[3]), "turns": int(r[4])}
            for r in rows]


def stray_turns(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Turns left in a project that holds no session of their id while exactly one other project
    holds that session (another machine renamed the project while this one recorded into it):
    ``{project, sessionId, sessionProject, turns, projectSessions}`` — ``projectSessions`` the
    sessions the turns' project still holds — by project and session."""
    rows = conn.execute(
        "SELECT p.project, p.session_id, min(s.project), count(DISTINCT p.id), count(DISTINCT s.project) "
        "FROM records p JOIN records s ON s.kind = 'session' AND s.session_id = p.session_id "
        "AND s.project != p.project "
        "WHERE p.kind = 'prompt' AND p.session_id IS NOT NULL AND COALESCE(p.status, '') != 'superseded' "
        "AND NOT EXISTS (SELECT 1 FROM records h WHERE h.kind = 'session' AND h.project = p.project "
        "AND h.session_id = p.session_id) "
        "GROUP BY p.project, p.session_id ORDER BY p.project, p.session_id").fetchall()
    out = []
    for project, session_id, home, turns, homes in rows:
        if homes != 1:
            continue
        held = conn.execute("SELECT count(*) FROM records WHERE kind = 'session' AND project = ?",
                            (project,)).fetchone()
        out.append({"project": project, "sessionId": session_id, "sessionProject": home, "turns": int(turns),
                    "projectSessions": int(held[0])})
    return out


def turn_counts(conn: sqlite3.Connection, sessions: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """How many turns each ``(project, sessionId)`` of ``sessions`` holds, superseded ones left
    out (a transcript import replaced them); a session without turns is absent."""
    counts: dict[tuple[str, str], int] = {}
    for start in range(0, len(sessions), 200):  # within SQLite's bound-parameter limit
        chunk = sessions[start:start + 200]
        pairs = " OR ".join("(project = ? AND session_id = ?)" for _ in chunk)
        for project, session_id, count in conn.execute(
                f"SELECT project, session_id, count(*) FROM records WHERE kind = 'prompt' "
                f"AND coalesce(status, '') <> 'superseded' AND ({pairs}) GROUP BY project, session_id",
                [value for pair in chunk for value in pair]):
            counts[(project, session_id)] = count
    return counts


def turns_outside(conn: sqlite3.Connection, project: str, session_id: str, start: str, end: str) -> int:
    """How many turns of ``session_id`` in ``project`` were created before ``start`` or after
    ``end`` (ISO UTC), superseded ones left out."""
    return conn.execute(
        "SELECT count(*) FROM records WHERE kind = 'prompt' AND session_id = ? AND project = ? "
        "AND coalesce(status, '') <> 'superseded' AND (created < ? OR created > ?)",
        (session_id, project, start, end)).fetchone()[0]


def hook_turn_with_body(conn: sqlite3.Connection, project: str, body: str, since: str, until: str,
                        origin: str = "hook", session_prefix: str | None = None) -> sqlite3.Row | None:
    """A turn ``origin`` recorded (``source`` ``hook:…``; ``import`` for ``import:…``; ``mcp``
    for an agent's own record over MCP) in ``project`` with exactly ``body``, created in
    ``[since, until]`` (ISO UTC), not superseded — of a session whose id begins with
    ``session_prefix`` when given (one conversation's); the newest, or None."""
    prefix = "" if session_prefix is None else " AND session_id LIKE ? ESCAPE '\\'"
    like = [] if session_prefix is None else [
        session_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"]
    return conn.execute(
        "SELECT * FROM records WHERE kind = 'prompt' AND project = ? AND body = ? AND source LIKE ? "
        f"AND created BETWEEN ? AND ? AND coalesce(status, '') <> 'superseded'{prefix} ORDER BY created DESC LIMIT 1",
        (project, body, origin if origin == "mcp" else f"{origin}:%", since, until, *like)).fetchone()


def texts_containing(conn: sqlite3.Connection, kind: str, flt: PromptFilter, words: list[str]) -> list[sqlite3.Row]:
    """``id, project, session_id, turn, created, body`` of every ``kind`` row matching
    ``flt`` whose body holds one of ``words`` (ASCII case-insensitive ``LIKE``), oldest
    first: a cheap prefilter for rule derivation over a whole vault."""
    where, params = build_where(kind, flt)
    if words:
        where += " AND (" + " OR ".join("r.body LIKE ? ESCAPE '\\'" for _ in words) + ")"
        params = [*params, *(f"%{w.replace(chr(92), chr(92) * 2).replace('%', chr(92) + '%').replace('_', chr(92) + '_')}%"
                             for w in words)]
    return conn.execute(
        f"SELECT r.id, r.project, r.session_id, r.turn, r.created, r.body FROM records r WHERE {where} "
        "ORDER BY r.created ASC, r.id ASC", params).fetchall()


def agent_turns_between(conn: sqlite3.Connection, project: str, since: str, until: str) -> list[str]:
    """Ids of the live turns of ``project`` created from ``since`` to ``until`` (UTC ISO text,
    inclusive) that an agent recorded over MCP (``source: mcp``) or that are in a session an agent
    opened over MCP (a hook's prompt goes there while it is open), oldest first."""
    return [record_id for (record_id,) in conn.execute(
        "SELECT p.id FROM records p WHERE p.kind = 'prompt' AND p.project = ? "
        "AND coalesce(p.status, '') != 'superseded' AND p.created BETWEEN ? AND ? AND (p.source = 'mcp' OR EXISTS "
        "(SELECT 1 FROM records s WHERE s.kind = 'session' AND s.project = p.project AND s.session_id = p.session_id "
        "AND s.source = 'mcp')) ORDER BY p.created", (project, since, until))]


def holds_agent_sessions(conn: sqlite3.Connection) -> bool:
    """Whether the index holds a session an agent opened over MCP (``source: mcp``)."""
    return conn.execute("SELECT 1 FROM records WHERE kind = 'session' AND source = 'mcp' LIMIT 1").fetchone() is not None
