"""Vault maintenance: ``memo reindex`` (STYLE §7)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Callable

from ..domain.clock import utcnow
from ..domain.errors import IndexDamagedError, IndexReadOnlyError
from ..index import store as index
from ..index.reindex import ReindexResult, rebuild
from .store import VaultStore


def reindex(store: VaultStore, progress: Callable[[int, int], None] | None = None) -> ReindexResult:
    """Rebuild the index from the files alone, under the vault lock.

    Temporary files left by an interrupted write are removed (under the lock no write is
    in flight) and counted in ``removedTempFiles``. A damaged index file (not a SQLite
    database, or malformed inside) is set aside as ``index.sqlite.damaged-<UTC stamp>``
    and built anew; an index of another schema version is rebuilt in place. Bodies are
    passed through secret redaction on their way into the index. Every project's compiled
    views are regenerated afterwards.

    Raises
    ------
    IndexReadOnlyError
        The index (or its folder) cannot be written: nothing is moved or rebuilt.
    """
    if store.index_read_only():
        raise IndexReadOnlyError(str(store.layout.index_path))
    with store.lock():
        removed = 0
        for temp in store.layout.temp_files():
            temp.unlink(missing_ok=True)
            removed += 1
        try:
            conn = store.open_for_rebuild()
            result = rebuild(conn, store.layout, progress, redact=True)
        except (sqlite3.DatabaseError, IndexDamagedError) as exc:
            if isinstance(exc, sqlite3.DatabaseError):
                error = store.index_error(exc)
                if not isinstance(error, IndexDamagedError):
                    raise error from None
            store.close()
            _set_aside(store)
            conn = store.open_for_rebuild()
            result = rebuild(conn, store.layout, progress, redact=True)
        index.analyze(conn)
        result.removed_temp_files = removed
        store.hear_rebuilt()  # records a killed writer left unheard reach the hybrid outbox
        for project in index.project_names(conn):
            store.refresh_views(project)
        return result


def _set_aside(store: VaultStore) -> None:
    """Move a damaged index (and its WAL files) aside as ``index.sqlite.damaged-<stamp>``."""
    stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
    index = store.layout.index_path
    for suffix in ("", "-wal", "-shm"):
        damaged = index.with_name(index.name + suffix)
        if damaged.exists():
            os.replace(damaged, damaged.with_name(f"{index.name}.damaged-{stamp}{suffix}"))


#: Free bytes below which a vault's disk is said to be full (a write of a session, its index pages).
MIN_FREE_BYTES = 5 * 1024 * 1024


def write_problems(root: Path) -> list[str]:
    """Why writes into the vault at ``root`` fail now, one line each (empty: none seen): a file
    system mounted read-only, a folder this process cannot write, a disk (almost) full. Read-only
    checks (``statvfs``, ``access``): nothing is written. A team daemon answered its health probe
    "ok" while every push was refused (found by a team lead)."""
    import shutil

    problems = []
    for folder in (root, root / ".memo"):
        try:
            if not folder.is_dir():
                continue
            if os.statvfs(folder).f_flag & os.ST_RDONLY:
                problems.append(f"{folder} is on a file system mounted read-only: writes fail")
                break
            if not os.access(folder, os.W_OK | os.X_OK):
                problems.append(f"{folder} is not writable by this process: writes fail")
                break
        except OSError as exc:
            problems.append(f"{folder} cannot be looked at ({exc.strerror or exc})")
            break
    try:
        free = shutil.disk_usage(root).free if root.is_dir() else None
    except OSError:
        free = None
    if free is not None and free < MIN_FREE_BYTES:
        problems.append(f"the disk of {root} has {free // 1024} KB free: writes fail")
    return problems
