"""Polars frames over the index of one or several vaults (SPEC §4).

Frames come straight from the SQLite index, built column by column (no per-row Python
loops) and carry times as ``Datetime(us, UTC)``. Every frame has a ``vault`` column
(the vault's root folder) so that rows read from several vaults stay distinguishable; a
record (its project and id: SPEC §2.1) found in more than one vault is kept once, from the
first vault read (the primary vault, then the further vaults in configuration order).

Further vaults (``Settings.vaults``) are opened read-only: their index is read as it is
(nothing is created, migrated or reindexed there).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..domain.shell import shell_word
from ..domain.errors import IndexDamagedError, InvalidFieldError
from ..index import store as index
from ..services.pricing import MAX_TURN_TOKENS, count_of, turn_parts
from ..services.store import VaultStore
from ..vault.layout import VaultLayout

UTC_DT = pl.Datetime("us", "UTC")

#: Columns and dtypes of :func:`sessions_frame`, in order.
SESSION_SCHEMA: dict[str, pl.DataType] = {
    "vault": pl.String, "id": pl.String, "session_id": pl.String, "project": pl.String, "status": pl.String,
    "client": pl.String, "billable": pl.Boolean, "start_time": UTC_DT, "end_time": UTC_DT,
    "duration_minutes": pl.Int64, "task_slug": pl.String, "summary": pl.String,
    "deliverables": pl.String, "ide": pl.String, "model": pl.String, "agent": pl.String,
    "branch": pl.String, "git_sha": pl.String, "owner": pl.String,
}

#: Columns read from a record's frontmatter (the index keeps it whole in ``meta``), not a column.
_FROM_META = {"owner": "json_extract(meta, '$.owner')"}
#: A turn's token counts as the cost report counts them (``tokens`` frontmatter, kept at import): a
#: positive whole number of at most a billion (``MAX_TURN_TOKENS``: a larger one counts nothing), else null.
_TOKENS = {"input_tokens": "input", "cache_read_tokens": "cacheRead", "cache_write_tokens": "cacheWrite",
           "output_tokens": "output", "reasoning_tokens": "reasoning"}
_FROM_META.update({column: f"CASE WHEN json_type(meta, '$.tokens.{key}') = 'integer' AND "
                           f"json_extract(meta, '$.tokens.{key}') BETWEEN 1 AND {MAX_TURN_TOKENS} "
                           f"THEN json_extract(meta, '$.tokens.{key}') END"
                   for column, key in _TOKENS.items()})

#: Columns and dtypes of :func:`prompts_frame`, in order (``body`` only when asked for).
PROMPT_SCHEMA: dict[str, pl.DataType] = {
    "vault": pl.String, "id": pl.String, "session_id": pl.String, "turn": pl.Int64, "project": pl.String,
    "client": pl.String, "billable": pl.Boolean, "created": UTC_DT, "ide": pl.String,
    "model": pl.String, "agent": pl.String, "task_slug": pl.String, "status": pl.String,
    "branch": pl.String, "git_sha": pl.String, "tags": pl.List(pl.String),
    **dict.fromkeys(_TOKENS, pl.Int64),
}

#: Columns and dtypes of :func:`usage_frame`, in order.
USAGE_SCHEMA: dict[str, pl.DataType] = {
    "vault": pl.String, "id": pl.String, "session_id": pl.String, "project": pl.String, "client": pl.String,
    "created": UTC_DT, "model": pl.String, **dict.fromkeys(_TOKENS, pl.Int64),
}

_DELIVERABLE = pl.Struct({"type": pl.String, "url": pl.String, "sha": pl.String, "title": pl.String})

#: Columns and dtypes of :func:`deliverables_frame`, in order.
DELIVERABLE_SCHEMA: dict[str, pl.DataType] = {
    "vault": pl.String, "session_id": pl.String, "session_record_id": pl.String, "position": pl.Int64,
    "project": pl.String, "client": pl.String, "billable": pl.Boolean, "session_status": pl.String,
    "session_start": UTC_DT, "session_end": UTC_DT, "type": pl.String, "url": pl.String, "sha": pl.String,
    "title": pl.String,
}

_TIMES = ("start_time", "end_time", "created")
_JSON_LISTS = ("tags",)


@dataclass(frozen=True)
class IndexSource:
    """One vault to read: its root folder (the frames' ``vault`` column) and its index."""

    vault: str
    conn: sqlite3.Connection


Sources = VaultStore | Sequence[IndexSource]


def primary_source(store: VaultStore) -> IndexSource:
    """The store's own vault as a source."""
    return IndexSource(str(store.root), store.conn)


@contextmanager
def vault_sources(store: VaultStore, further: bool = False) -> Iterator[list[IndexSource]]:
    """The vaults a read covers: ``store``'s, then (``further``) every vault of
    ``store.settings.vaults`` opened read-only, each once (the primary vault listed again,
    or a vault listed twice, is read once). Connections to further vaults close on exit.

    Raises
    ------
    InvalidFieldError
        ``Invalid vaults: <path> holds no vault index …`` for a further vault without
        ``.memo/index.sqlite`` (a typo must not silently drop a vault from a bill).
    IndexDamagedError
        A further vault's index cannot be read.
    """
    with ExitStack() as stack:
        sources = [primary_source(store)]
        seen = {store.root.resolve()}
        for root in (store.settings.vaults if further else []):
            root = Path(root).expanduser().resolve()
            if root in seen:
                continue
            seen.add(root)
            path = VaultLayout(root).index_path
            if not path.is_file():
                raise InvalidFieldError("vaults", f"{root} holds no vault index ({path}); "
                                                  f"run `memo --vault-root {shell_word(str(root))} reindex` or remove it from the config")
            try:
                conn = index.connect_readonly(path)
                stack.callback(conn.close)
                conn.execute("SELECT id, kind, project FROM records LIMIT 0")
            except sqlite3.DatabaseError as exc:
                raise IndexDamagedError(str(path), str(exc)) from None
            sources.append(IndexSource(str(root), conn))
        yield sources


def _as_sources(source: Sources) -> list[IndexSource]:
    return [primary_source(source)] if isinstance(source, VaultStore) else list(source)


def _read_one(src: IndexSource, kind: str, columns: dict[str, pl.DataType], projects: list[str] | None) -> pl.DataFrame:
    where, params = "kind = ?", [kind]
    if projects is not None:
        where += f" AND project IN ({','.join('?' * len(projects)) or 'NULL'})"
        params.extend(projects)
    raw = {c: (pl.Int64 if d in (pl.Int64, pl.Boolean) else pl.String) for c, d in columns.items() if c != "vault"}
    selected = ", ".join(_FROM_META.get(c, c) for c in raw)
    rows = src.conn.execute(f"SELECT {selected} FROM records WHERE {where}", params).fetchall()
    # column-wise construction: much cheaper than building a frame row by row
    values = list(zip(*rows)) if rows else [()] * len(raw)
    frame = pl.DataFrame([pl.Series(name, list(col), dtype=dtype) for (name, dtype), col in zip(raw.items(), values)])
    return frame.with_columns(pl.lit(src.vault, pl.String).alias("vault"))


def _read(source: Sources, kind: str, schema: dict[str, pl.DataType], projects: list[str] | None) -> pl.DataFrame:
    sources = _as_sources(source)
    frames = [_read_one(src, kind, schema, projects) for src in sources]
    frame = pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]
    if len(frames) > 1:
        frame = frame.unique(subset=["project", "id"], keep="first", maintain_order=True)  # a record is (project, id)
    return frame.with_columns(
        *(pl.col(c).cast(pl.Boolean) for c, d in schema.items() if d == pl.Boolean),
        *(pl.col(c).str.to_datetime("%Y-%m-%dT%H:%M:%S%.3fZ", time_zone="UTC", strict=False).dt.cast_time_unit("us")
          for c in schema if c in _TIMES),
        *(pl.col(c).str.json_decode(pl.List(pl.String)) for c in schema if c in _JSON_LISTS),
    ).select(list(schema)).cast(schema)


def sessions_frame(source: Sources, projects: list[str] | None = None) -> pl.DataFrame:
    """One row per session record.

    Parameters
    ----------
    source : VaultStore or sequence of IndexSource
        A store (its own vault) or the vaults of :func:`vault_sources`.
    projects : list[str] | None
        Project ids to include (in every vault read); None for every project.

    Returns
    -------
    polars.DataFrame
        Columns and dtypes of :data:`SESSION_SCHEMA`: ``vault`` the vault root,
        ``client`` as recorded (null when none: reports call it ``internal``),
        ``start_time``/``end_time`` ``Datetime(us, UTC)`` (``end_time`` null while the
        session is open), ``duration_minutes`` whole minutes (null while open),
        ``deliverables`` the JSON list (see :func:`deliverables_frame`), ``owner`` who worked
        it (the git identity of its repository, or as given; null when unknown).
    """
    return _read(source, "session", SESSION_SCHEMA, projects)


def prompts_frame(source: Sources, projects: list[str] | None = None, body: bool = False) -> pl.DataFrame:
    """One row per prompt record (turn).

    Returns
    -------
    polars.DataFrame
        Columns and dtypes of :data:`PROMPT_SCHEMA` (``created`` ``Datetime(us, UTC)``,
        ``turn`` null for a prompt outside a session, ``tags`` ``List(String)``;
        ``input_tokens``, ``cache_read_tokens``, ``cache_write_tokens``, ``output_tokens``,
        ``reasoning_tokens`` ``Int64``: the turn's tokens as the AI cost counts them, null when the
        transcript gave none), plus
        ``body`` (``String``, the redacted text as stored) when ``body`` is true.
    """
    schema = {**PROMPT_SCHEMA, "body": pl.String} if body else PROMPT_SCHEMA
    return _read(source, "prompt", schema, projects)


def usage_frame(source: Sources, projects: list[str] | None = None) -> pl.DataFrame:
    """One row per turn and model that spent tokens on it: a turn answered by several models (a
    main model and a small one for titles or sub-tasks, ``tokensByModel``) has a row for each, so
    the tokens of a model add up to ``activity``'s ``costByModel`` — :func:`prompts_frame` puts
    all of a turn's tokens under its one ``model``.

    Returns
    -------
    polars.DataFrame
        Columns and dtypes of :data:`USAGE_SCHEMA`: ``vault, id`` (the turn), ``session_id,
        project, client``, ``created`` ``Datetime(us, UTC)``, ``model`` (null when the transcript
        named none), ``input_tokens, cache_read_tokens, cache_write_tokens, output_tokens,
        reasoning_tokens`` ``Int64`` (null where that count is not given). Superseded turns and
        turns without counts are left out; a record of several vaults counts once.
    """
    sql = ("SELECT project, id, session_id, client, created, model, meta FROM records WHERE kind = 'prompt' "
           "AND coalesce(status, '') <> 'superseded' AND meta LIKE '%\"tokens\"%'")
    params: list[Any] = []
    if projects is not None:
        sql += f" AND project IN ({','.join('?' * len(projects)) or 'NULL'})"
        params.extend(projects)
    rows, seen = [], set()
    for src in _as_sources(source):
        for project, record_id, session_id, client, created, model, meta in src.conn.execute(sql, params):
            if (project, record_id) in seen:
                continue
            seen.add((project, record_id))
            for part_model, tokens in turn_parts(json.loads(meta) if meta else {}, model).items():
                if not tokens:
                    continue
                rows.append((src.vault, record_id, session_id, project, client, created, part_model,
                             *(count_of(tokens, key) or None for key in _TOKENS.values())))
    frame = pl.DataFrame(rows, schema={c: (pl.String if d == UTC_DT else d) for c, d in USAGE_SCHEMA.items()},
                         orient="row")
    return frame.with_columns(pl.col("created").str.to_datetime("%Y-%m-%dT%H:%M:%S%.3fZ", time_zone="UTC",
                                                               strict=False).dt.cast_time_unit("us"))


def deliverables_frame(sessions: pl.DataFrame) -> pl.DataFrame:
    """One row per deliverable of the sessions in ``sessions`` (a :func:`sessions_frame`).

    Returns
    -------
    polars.DataFrame
        Columns and dtypes of :data:`DELIVERABLE_SCHEMA`: the session's ``vault``,
        ``session_id``, ``session_record_id`` (``session-…``), ``position`` (0-based order
        in the session's list), ``project``, ``client`` (null when none), ``billable``,
        ``session_status``, ``session_start``/``session_end`` (``Datetime(us, UTC)``), and
        the deliverable's ``type`` (``pr``, ``commit``, …), ``url``, ``sha``, ``title``
        (null when absent). Sessions without deliverables have no row.
    """
    exploded = (
        sessions.lazy()
        .select(
            "vault", "session_id", pl.col("id").alias("session_record_id"), "project", "client", "billable",
            pl.col("status").alias("session_status"), pl.col("start_time").alias("session_start"),
            pl.col("end_time").alias("session_end"),
            pl.col("deliverables").str.json_decode(pl.List(_DELIVERABLE)).alias("item"),
        )
        .filter(pl.col("item").list.len() > 0)
        .with_columns(pl.int_ranges(0, pl.col("item").list.len()).alias("position"))
        .explode("item", "position")
        .unnest("item")
        .collect()
    )
    return exploded.select(list(DELIVERABLE_SCHEMA)).cast(DELIVERABLE_SCHEMA)


class ArrowStream:
    """A polars frame as DuckDB reads it: through the Arrow C stream interface
    (``__arrow_c_stream__``), a new stream for each scan, so neither side loads pyarrow
    (DuckDB's own polars reader converts through pyarrow, about 0.1 s of imports that a
    command such as ``memo activity`` would pay on every run). ``Datetime(us, UTC)`` columns
    arrive as ``TIMESTAMPTZ``."""

    __slots__ = ("frame",)

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self.frame.__arrow_c_stream__(requested_schema)


def from_duckdb(relation) -> pl.DataFrame:
    """The rows of a DuckDB relation as a polars frame, taken through the Arrow C stream
    interface (the same frame as ``relation.pl()``, without loading pyarrow)."""
    return pl.DataFrame(relation)


def duckdb_tables(frames: dict[str, pl.DataFrame]):
    """A new in-memory DuckDB connection holding each frame as a table of its name, copied in
    through Arrow (:class:`ArrowStream`; ``Datetime(us, UTC)`` columns become ``TIMESTAMPTZ``;
    the connection's time zone is UTC). The caller closes it.

    Returns
    -------
    duckdb.DuckDBPyConnection
    """
    import duckdb

    db = duckdb.connect()
    db.execute("SET TimeZone = 'UTC'")
    for name, frame in frames.items():
        db.register(f"_{name}_arrow", ArrowStream(frame))
        db.execute(f'CREATE TABLE "{name}" AS SELECT * FROM "_{name}_arrow"')
        db.unregister(f"_{name}_arrow")
    return db
