"""Is the index the truth of the files? A cheap check on every open, and the repair of what
it finds (SPEC §2.1: the files are the truth, the index can always be rebuilt from them).

:func:`check` compares the schema and the record folders' modification times with what the
index recorded (one ``stat`` per project and kind): a missing or empty index, another schema
and folders changed behind the index's back are found without reading a record.
:func:`reconcile` brings changed folders up to date file by file; a rebuild
(:func:`memo_analytics.index.reindex.rebuild`) does the rest.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from dataclasses import dataclass, field

from ..domain.errors import CorruptRecordError
from ..vault.layout import VaultLayout
from .folders import KIND_OF_SUBDIR, any_record_file, disk_stamps, folder_files, folder_stamp
from .reindex import PARALLEL_FROM, parse_for_index
from .store import (ROW_COLUMNS, delete_record, folder_rows, folder_stamps, get_row, has_rows, index_row,
                    schema_problem, set_folder_stamps, transaction, upsert_record)


@dataclass
class Staleness:
    """What :func:`check` found.

    Attributes
    ----------
    reason : str
        One clause for a person (``it is empty``, ``its schema version 5, …``,
        ``2 record folders changed outside memo``).
    full : bool
        Only a rebuild helps (no folder stamps, another schema, an empty index).
    folders : list[str]
        The changed folders (``<project>/<subdir>``) when not ``full``.
    """

    reason: str
    full: bool
    folders: list[str] = field(default_factory=list)


def check(conn: sqlite3.Connection, layout: VaultLayout) -> Staleness | None:
    """Whether the index at ``conn`` reflects the record files of ``layout``; None when it does.

    Cost: the schema catalogue, the ``folder_stamps`` rows and one ``stat`` per record
    folder (about a millisecond on fifty projects, whatever the number of records). Edits
    made in place without a rename are not seen (``memo reindex`` covers them).

    Raises
    ------
    sqlite3.DatabaseError
        The file is not a usable SQLite database.
    """
    problem = schema_problem(conn)
    if problem is not None:
        return Staleness(f"its {problem}", full=True)
    stored = folder_stamps(conn)
    disk = disk_stamps(layout)
    if not stored or not has_rows(conn):
        if any_record_file(layout, sorted(disk)):
            return Staleness("it is empty" if not has_rows(conn) else "it has no record of the vault's folders",
                             full=True)
        if not stored:
            return None
    changed = sorted(key for key in stored.keys() | disk.keys() if stored.get(key) != disk.get(key))
    if not changed:
        return None
    what = f"{len(changed)} record folder{'s' if len(changed) != 1 else ''} changed outside memo"
    return Staleness(f"{what} ({', '.join(changed[:3])}{', …' if len(changed) > 3 else ''})", full=False,
                     folders=changed)


def edited_in_place(conn: sqlite3.Connection, layout: VaultLayout, subdirs: tuple[str, ...]) -> dict[str, int]:
    """``{folder: newest file mtime_ns}`` of the record folders (of ``subdirs``) holding a file
    modified after the folder's stamp: an edit made in place, which leaves the folder's own
    time as it was. One ``stat`` per file of those folders (a few milliseconds per thousand)."""
    found = {}
    for key, since in folder_stamps(conn).items():
        if key.split("/", 1)[1] not in subdirs:
            continue
        newest = max((mtime_ns for _, mtime_ns in folder_files(layout, key).values()), default=0)
        if newest > since:
            found[key] = newest
    return found


def not_indexed(conn: sqlite3.Connection, layout: VaultLayout, subdir: str) -> list[CorruptRecordError]:
    """The record files of the vault's ``subdir`` folders (``sessions`` …) that the index holds
    no row of, each as the :class:`CorruptRecordError` reading it gives (``path``, ``reason``):
    files a catch-up skipped, left untouched and out of every report since. One ``scandir``
    per folder and one query; a file is read only when it has no row."""
    found: list[CorruptRecordError] = []
    kind = KIND_OF_SUBDIR[subdir]
    try:  # the folders on disk, not only those the index knows: a further vault's new project is read here only
        projects = sorted(entry.name for entry in os.scandir(layout.projects_dir) if entry.is_dir())
    except OSError:
        projects = []
    for project in projects:
        key = f"{project}/{subdir}"
        rows = folder_rows(conn, project, kind)
        try:
            files = folder_files(layout, key)
        except OSError as exc:  # a folder that cannot be listed: every record of it is left out
            found.append(CorruptRecordError(str(layout.projects_dir / key), f"the folder cannot be read "
                                            f"({exc.strerror or type(exc).__name__}): its records are left out"))
            continue
        for record_id, (path, _) in sorted(files.items()):
            if record_id not in rows:
                parsed = parse_for_index(path, redact=False)
                found.append(parsed if isinstance(parsed, CorruptRecordError) else
                             CorruptRecordError(path, "not in the index yet (memo reindex takes it in)"))
    return found


def edited_since_indexed(conn: sqlite3.Connection, layout: VaultLayout, subdir: str) -> list[Path]:
    """The record files of the vault's ``subdir`` folders written after their folder's stamp —
    edited in place since the index read them, which its rows do not hold yet (a vault read,
    never written, from another: its index is not caught up from there). Read-only: one
    ``scandir`` per folder the index knows."""
    found = []
    for key, since in sorted(folder_stamps(conn).items()):
        if key.split("/", 1)[1] == subdir:
            found += [path for _, (path, mtime_ns) in sorted(folder_files(layout, key).items()) if mtime_ns > since]
    return found


def missing() -> Staleness:
    """The staleness of an index file that did not exist (it is created empty)."""
    return Staleness("there was none", full=True)


@dataclass
class ReconcileResult:
    """What :func:`reconcile` did: records ``added``, ``updated`` and ``removed`` in the
    index, the files it could not use (``skipped``), the projects touched, and the records
    it indexed (``written``: ``(meta, path relative to the vault)``, added or updated)."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    skipped: list[CorruptRecordError] = field(default_factory=list)
    projects: set[str] = field(default_factory=set)
    written: list[tuple[dict, str]] = field(default_factory=list)

    def line(self) -> str:
        text = f"{self.added} added, {self.updated} updated, {self.removed} removed"
        if not self.skipped:
            return text
        named = "; ".join(f"{error.path}: {error.reason}" for error in self.skipped[:3])
        more = f"; and {len(self.skipped) - 3} more (memo reindex lists them all)" if len(self.skipped) > 3 else ""
        return text + f", {len(self.skipped)} file{'s' if len(self.skipped) != 1 else ''} skipped ({named}{more})"


def reconcile(conn: sqlite3.Connection, layout: VaultLayout, folders: list[str],
              max_files: int = PARALLEL_FROM) -> ReconcileResult | None:
    """Bring the index rows of ``folders`` (``<project>/<subdir>``) in line with their files.

    A file the index lacks is indexed, a file written since the folder's stamp is read
    again, the rows of files that are gone are removed, and each folder's stamp is set to
    the time it had before it was listed. Files pass the same validation and secret
    redaction as a rebuild; a file that cannot be used is reported in ``skipped``, left
    untouched and left out of the index. One transaction; call it under the vault lock.

    Returns None, changing nothing, when more than ``max_files`` files would have to be
    read: a (parallel) rebuild is then faster.
    """
    stored = folder_stamps(conn)
    plan = []
    for key in folders:
        project, subdir = key.split("/", 1)
        kind = KIND_OF_SUBDIR.get(subdir)
        if kind is None:
            continue
        now = folder_stamp(layout, key)  # before listing: a file arriving meanwhile leaves a newer time
        files = folder_files(layout, key) if now is not None else {}
        rows = folder_rows(conn, project, kind)
        since = stored.get(key)
        to_read = [(record_id, path) for record_id, (path, mtime_ns) in sorted(files.items())
                   if record_id not in rows or since is None or mtime_ns >= since]
        gone = sorted(record_id for record_id in rows if record_id not in files)
        plan.append((key, project, now, to_read, gone))
    if sum(len(item[3]) for item in plan) > max_files:
        return None
    result = ReconcileResult()
    with transaction(conn):
        for key, project, now, to_read, gone in plan:
            for record_id in gone:
                if delete_record(conn, project, record_id):
                    result.removed += 1
                    result.projects.add(project)
                    # a file of another kind with this id, skipped while this one held the id, now can be indexed
                    for subdir in KIND_OF_SUBDIR:
                        other = layout.projects_dir / project / subdir / f"{record_id}.md"
                        if subdir != key.split("/", 1)[1] and other.is_file():
                            _take_in(conn, layout, record_id, other, project, result)
            for record_id, path in to_read:
                _take_in(conn, layout, record_id, path, project, result)
            set_folder_stamps(conn, {key: now})
    return result


def _take_in(conn: sqlite3.Connection, layout: VaultLayout, record_id: str, path, project: str,
             result: ReconcileResult) -> None:
    relative = str(path.relative_to(layout.root))
    row = get_row(conn, project, record_id)
    parsed = parse_for_index(path, redact=True)
    if isinstance(parsed, CorruptRecordError):
        result.skipped.append(parsed)
        if row is not None and row["path"] == relative and delete_record(conn, project, record_id):
            result.removed += 1  # it no longer parses: out of the index, as after a rebuild
            result.projects.add(project)
        return
    meta, body = parsed
    if row is not None and row["path"] != relative:
        result.skipped.append(CorruptRecordError(str(path), f"id {record_id!r} also used by {layout.root / row['path']}"))
        return
    if row is not None and tuple(row[c] for c in ROW_COLUMNS) == index_row(meta, body, relative)[0]:
        return  # read again, unchanged
    upsert_record(conn, meta, body, relative)
    if row is None:
        result.added += 1
    else:
        result.updated += 1
    result.projects.add(project)
    result.written.append((meta, relative))
