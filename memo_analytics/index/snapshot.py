"""The index rows the operator digest joins (SPEC §6). Read-only queries."""

from __future__ import annotations

import sqlite3
from typing import Any


def _records(conn: sqlite3.Connection, where: str, params: tuple = ()) -> list[dict[str, Any]]:
    import json

    return [{**json.loads(row[0]), "_path": row[1]}
            for row in conn.execute(f"SELECT meta, path FROM records WHERE {where}", params)]


#: An open session: ``active`` and no ``endTime`` — one written ``active`` with an ``endTime`` (by
#: hand) bills its minutes as ended (the activity's rule), so it is not called open: the digest
#: proposed ``memo session end`` for it, which would have billed it to now.
OPEN_SESSION = "(status = 'active' AND coalesce(end_time, '') = '')"


def open_sessions(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every open session record (:data:`OPEN_SESSION`), each with ``lastTurnAt`` (the newest turn's
    ``created`` in the session's project, or None)."""
    sessions = _records(conn, f"kind = 'session' AND {OPEN_SESSION}")
    for session in sessions:
        row = conn.execute("SELECT max(created) FROM records WHERE kind = 'prompt' AND session_id = ? AND project = ?",
                           (session.get("sessionId"), session.get("project"))).fetchone()
        session["lastTurnAt"] = row[0]
    return sessions


def pending_handoffs(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every hand-off record still ``pending``."""
    return _records(conn, "kind = 'handoff' AND status = 'pending'")


def sessions_with_pull_requests(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Completed sessions whose deliverables include a ``pr`` not marked reviewed (``reviewedAt``)."""
    return _records(conn, "kind = 'session' AND status = 'completed' AND deliverables LIKE '%\"pr\"%' "
                          "AND coalesce(json_extract(meta, '$.reviewedAt'), '') = ''")


def derived_rule_traps(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Traps saved from derived rules that are still ``active`` (not promoted), each with its
    ``_body`` (a trap may keep its rule there alone)."""
    import json

    return [{**json.loads(meta), "_path": path, "_body": body} for meta, path, body in conn.execute(
        "SELECT meta, path, body FROM records WHERE kind = 'trap' AND status = 'active' AND tags LIKE '%derived-rule%'")]


#: A session that names a client (not ``internal``) and counts (not superseded): what makes its
#: project one that bills clients (one rule for the item and for the clients it proposes).
_BILLS_A_CLIENT = ("kind = 'session' AND status <> 'superseded' AND coalesce(trim(client), '') <> '' "
                   "AND lower(trim(client)) <> 'internal'")


def unbilled_sessions(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Billable ended sessions without a client in projects where other sessions name a client
    (an open one is not listed: its minutes are not known yet, and its client can be named when
    it ends; nor one of 0 minutes: a client would bill nothing more), each with ``_projectClients``: the clients its project's sessions name (not ``internal``),
    the most billed first (then by name)."""
    sessions = _records(
        conn,
        "kind = 'session' AND billable = 1 AND coalesce(trim(client), '') = '' AND status <> 'superseded' "
        f"AND NOT {OPEN_SESSION} "
        "AND coalesce(duration_minutes, 0) > 0 AND project IN "
        f"(SELECT DISTINCT project FROM records WHERE {_BILLS_A_CLIENT})")
    if not sessions:
        return sessions
    clients = clients_of_projects(conn)
    for session in sessions:
        session["_projectClients"] = clients.get(session.get("project"), [])
    return sessions


def clients_of_projects(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Project → the clients its sessions name (not ``internal``), the most billed first (then by
    name); a project whose sessions name none is not in it."""
    clients: dict[str, list[str]] = {}
    for project, client in conn.execute(
            f"SELECT project, trim(client) AS name FROM records WHERE {_BILLS_A_CLIENT} "
            "GROUP BY project, name ORDER BY project, count(*) DESC, name"):
        clients.setdefault(project, []).append(client)
    return clients


def unfiled_sessions(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Billable ended sessions of more than 0 minutes without a client in projects where no
    session names a client (a project new to billing: a repository started lately, a checkout in
    a folder of another name) — :func:`unbilled_sessions` has those of projects that bill one."""
    return _records(
        conn,
        "kind = 'session' AND billable = 1 AND coalesce(trim(client), '') = '' AND status <> 'superseded' "
        f"AND NOT {OPEN_SESSION} "
        "AND coalesce(duration_minutes, 0) > 0 AND project NOT IN "
        f"(SELECT DISTINCT project FROM records WHERE {_BILLS_A_CLIENT})")


def bills_a_client(conn: sqlite3.Connection) -> bool:
    """Whether any session of the vault names a client (not ``internal``)."""
    return conn.execute(f"SELECT 1 FROM records WHERE {_BILLS_A_CLIENT} LIMIT 1").fetchone() is not None


def long_sessions(conn: sqlite3.Connection, minutes: int) -> list[dict[str, Any]]:
    """Billable ended sessions of more than ``minutes`` (a session left running bills the night;
    an absurd span pulled from another machine bills years)."""
    return _records(conn, "kind = 'session' AND status <> 'superseded' AND coalesce(end_time, '') <> '' "
                          "AND billable = 1 AND duration_minutes > ?", (minutes,))


def live_imported_conversations(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Hook sessions an import of their agent's transcript superseded while they were open, whose
    agent has not said the conversation ended (``agentEndedAt``): conversations still going on,
    their work recorded by the imported sessions ``supersededBy`` names."""
    return _records(conn, "kind = 'session' AND status = 'superseded' AND source LIKE 'hook:%' AND end_time IS NULL "
                          "AND coalesce(json_extract(meta, '$.agentEndedAt'), '') = '' "
                          "AND json_type(meta, '$.supersededBy') = 'array'")


def sessions_ended_since(conn: sqlite3.Connection, day: str) -> list[dict[str, Any]]:
    """Completed sessions whose ``endTime`` falls on ``day`` (``YYYY-MM-DD``) or later, as text
    (the caller compares the instants: an offset other than ``Z`` moves a time by a day at most)."""
    return _records(conn, "kind = 'session' AND status = 'completed' AND end_time >= ?", (day,))


def handoffs_claimed_since(conn: sqlite3.Connection, day: str) -> list[dict[str, Any]]:
    """Hand-offs claimed on ``day`` (``YYYY-MM-DD``) or later (``claimedAt``, as text)."""
    return _records(conn, "kind = 'handoff' AND status = 'claimed' AND json_extract(meta, '$.claimedAt') >= ?", (day,))


def sessions_keyed(conn: sqlite3.Connection, keys: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The session records of the ``(project, sessionId)`` pairs given (wire dicts; one
    query, whatever their number)."""
    import json

    if not keys:
        return []
    return _records(conn, "kind = 'session' AND project || char(31) || session_id IN (SELECT value FROM json_each(?))",
                    (json.dumps([f"{project}\x1f{session_id}" for project, session_id in keys]),))


def version(conn: sqlite3.Connection) -> str:
    """A cheap fingerprint of the index content: it changes whenever a record is written."""
    row = conn.execute("SELECT count(*), coalesce(max(updated), ''), coalesce(max(rowid), 0), "
                       "coalesce(sum(length(updated)), 0) FROM records").fetchone()
    return f"{row[0]}:{row[1]}:{row[2]}:{row[3]}"


def sessions_filed_internal(conn: sqlite3.Connection) -> set[tuple[str, str]]:
    """``(project, session id)`` of the sessions filed under ``internal`` by name (not of no client)."""
    return {(project, session_id) for project, session_id in conn.execute(
        "SELECT project, session_id FROM records WHERE kind = 'session' AND lower(trim(client)) = 'internal'")}
