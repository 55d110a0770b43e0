"""Rebuild the index from the vault's files alone (``memo reindex``, STYLE §7)."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ..domain.errors import CorruptRecordError
from ..vault.io import read_placed_record
from ..vault.layout import VaultLayout
from ..vault.redact import redact_secrets
from .folders import disk_stamps
from .store import (create_secondary_indexes, drop_secondary_indexes, index_row, insert_fresh, recount, reset_schema,
                    set_folder_stamps, transaction)
from .workers import in_order, worker_processes

#: Below this many files the rebuild parses in-process; above, on every core.
PARALLEL_FROM = 2_000
_CHUNK = 500


@dataclass
class ReindexResult:
    """What a rebuild did: ``indexed`` records and the files it could not parse."""

    indexed: int = 0
    skipped: list[CorruptRecordError] = field(default_factory=list)
    removed_temp_files: int = 0

    def wire(self) -> dict:
        return {
            "indexed": self.indexed,
            "skipped": [{"path": e.path, "reason": e.reason} for e in self.skipped],
            "removedTempFiles": self.removed_temp_files,
        }


#: Frontmatter keys whose values are identity, time or numbers (validated, never free text).
_STRUCTURAL = {"id", "kind", "project", "status", "created", "updated", "startTime", "endTime", "sessionId",
               "turn", "durationMinutes", "billable"}


def _redact(text: str) -> str:
    return redact_secrets(text)[0]


def _redact_meta(meta: dict, redact: Callable[[str], str]) -> dict:
    def walk(value):
        if isinstance(value, str):
            return redact(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    return {key: value if key in _STRUCTURAL else walk(value) for key, value in meta.items()}


def parse_for_index(path: Path, redact: bool = True) -> tuple[dict[str, Any], str] | CorruptRecordError:
    """Read, validate and (when ``redact``) redact one record file for the index; a file that
    cannot be used comes back as the error that says why. Pure apart from reading the file."""
    try:
        meta, body = read_placed_record(path)
    except CorruptRecordError as error:
        return error
    if redact:
        return _redact_meta(meta, _redact), _redact(body)
    return meta, body


def _row_for(path: Path, root: Path, redact: bool) -> tuple:
    # results travel between processes as plain tuples (an exception with its own
    # constructor arguments does not unpickle); the worker does all per-file work, the
    # parent only inserts
    parsed = parse_for_index(path, redact)
    if isinstance(parsed, CorruptRecordError):
        return ("error", parsed.path, parsed.reason)
    return ("ok", *index_row(parsed[0], parsed[1], str(path.relative_to(root))))


def _rows_chunk(paths: list[Path], root: Path, redact: bool) -> list[tuple]:
    return [_row_for(path, root, redact) for path in paths]


def _rows(files: list[Path], root: Path, redact: bool) -> Iterator[tuple[Path, tuple]]:
    if len(files) < PARALLEL_FROM or (os.cpu_count() or 1) < 2:
        for path in files:
            yield path, _row_for(path, root, redact)
        return
    chunks = [files[i : i + _CHUNK] for i in range(0, len(files), _CHUNK)]
    with worker_processes(os.cpu_count() or 2) as pool:  # a killed worker's chunks are read here
        for chunk, rows in zip(chunks, in_order(pool, _rows_chunk, [(chunk, root, redact) for chunk in chunks])):
            yield from zip(chunk, rows)


def rebuild(
    conn: sqlite3.Connection,
    layout: VaultLayout,
    progress: Callable[[int, int], None] | None = None,
    redact: bool = True,
) -> ReindexResult:
    """Replace the index content with what the record files say.

    A file that cannot be parsed or validated (or whose id, kind or project disagrees with
    where it lies, or whose id another file of the same project already uses: the key is
    ``(project, id)``) is reported in ``skipped`` and
    left byte-for-byte untouched. With ``redact`` every body and every free-text
    frontmatter value passes secret redaction before it enters the index, so a secret
    pasted into a file by hand never reaches the index or a report. Files are parsed on
    every core for large vaults (the workers die with this process); the rebuild is one
    transaction, so readers never see a half-built index. The schema is created anew
    (whatever version the file had) and every record folder's modification time is
    recorded as the state the index now reflects (:mod:`memo_analytics.index.folders`).
    """
    stamps = disk_stamps(layout)  # before listing: a file arriving meanwhile leaves a newer time
    files = layout.record_files()
    result = ReindexResult()
    seen: dict[tuple[str, str], Path] = {}  # (project, id): the key of a record (SPEC §2.1)
    batch: list[tuple[int, tuple, str | None, str | None]] = []
    with transaction(conn):
        reset_schema(conn)
        drop_secondary_indexes(conn)
        for number, (path, item) in enumerate(_rows(files, layout.root, redact), 1):
            if item[0] == "error":
                result.skipped.append(CorruptRecordError(item[1], item[2]))
            elif seen.setdefault((item[1][2], item[1][0]), path) != path:
                result.skipped.append(
                    CorruptRecordError(str(path), f"id {item[1][0]!r} also used by {seen[(item[1][2], item[1][0])]}"))
            else:
                result.indexed += 1
                batch.append((result.indexed, *item[1:]))
                if len(batch) >= _CHUNK:
                    insert_fresh(conn, batch)
                    batch = []
            if progress:
                progress(number, len(files))
        insert_fresh(conn, batch)
        result.skipped += [CorruptRecordError(str(folder), f"the folder cannot be read ({reason}): its records are "
                                                           "left out of the index and every report")
                           for folder, reason in layout.unreadable_folders()]
        create_secondary_indexes(conn)
        recount(conn)
        set_folder_stamps(conn, dict(stamps))
    return result
