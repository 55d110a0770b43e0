"""Polars frames over the index (SPEC §4).

Frames come straight from the SQLite index through ``polars.read_database`` (no per-row
Python loops) and carry times as ``Datetime(us, UTC)``.
"""

from __future__ import annotations

import polars as pl

from ..services.store import VaultStore

UTC_DT = pl.Datetime("us", "UTC")

#: Columns and dtypes of :func:`sessions_frame`.
SESSION_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String, "session_id": pl.String, "project": pl.String, "status": pl.String,
    "client": pl.String, "billable": pl.Boolean, "start_time": UTC_DT, "end_time": UTC_DT,
    "duration_minutes": pl.Int64, "task_slug": pl.String, "summary": pl.String,
    "deliverables": pl.String, "ide": pl.String, "model": pl.String, "agent": pl.String,
}

#: Columns and dtypes of :func:`prompts_frame`.
PROMPT_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String, "session_id": pl.String, "turn": pl.Int64, "project": pl.String,
    "client": pl.String, "billable": pl.Boolean, "created": UTC_DT, "ide": pl.String,
    "model": pl.String, "agent": pl.String, "task_slug": pl.String,
}


def _select(kind: str, columns: list[str], projects: list[str] | None) -> tuple[str, list]:
    where = "kind = ?"
    params: list = [kind]
    if projects is not None:
        where += f" AND project IN ({','.join('?' * len(projects)) or 'NULL'})"
        params.extend(projects)
    return f"SELECT {', '.join(columns)} FROM records WHERE {where}", params


def _read(store: VaultStore, kind: str, schema: dict, projects: list[str] | None) -> pl.DataFrame:
    sql, params = _select(kind, list(schema), projects)
    raw_schema = {c: (pl.Int64 if dtype in (pl.Int64, pl.Boolean) else pl.String) for c, dtype in schema.items()}
    frame = pl.read_database(
        sql, connection=store.conn, execute_options={"parameters": params}, schema_overrides=raw_schema
    )
    return frame.with_columns(pl.col(c).cast(pl.Boolean) for c, d in schema.items() if d == pl.Boolean)


def _to_utc(frame: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    return frame.with_columns(
        pl.col(c).cast(pl.String).str.to_datetime("%Y-%m-%dT%H:%M:%S%.3fZ", time_zone="UTC", strict=False)
        .dt.cast_time_unit("us")
        for c in columns
    )


def sessions_frame(store: VaultStore, projects: list[str] | None = None) -> pl.DataFrame:
    """One row per session record.

    Parameters
    ----------
    store : VaultStore
    projects : list[str] | None
        Project ids to include; None for every project.

    Returns
    -------
    polars.DataFrame
        Columns and dtypes of :data:`SESSION_SCHEMA`: ``start_time``/``end_time`` are
        ``Datetime(us, UTC)`` (``end_time`` null while the session is open),
        ``duration_minutes`` whole minutes (null while open), ``deliverables`` a JSON list.
    """
    frame = _read(store, "session", SESSION_SCHEMA, projects)
    return _to_utc(frame, ["start_time", "end_time"]).select(list(SESSION_SCHEMA)).cast(SESSION_SCHEMA)


def prompts_frame(store: VaultStore, projects: list[str] | None = None) -> pl.DataFrame:
    """One row per prompt record (columns and dtypes of :data:`PROMPT_SCHEMA`; ``created`` UTC)."""
    frame = _read(store, "prompt", PROMPT_SCHEMA, projects)
    return _to_utc(frame, ["created"]).select(list(PROMPT_SCHEMA)).cast(PROMPT_SCHEMA)
