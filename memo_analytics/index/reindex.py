"""Rebuild the index from the vault's files alone (``memo reindex``, STYLE §7)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Callable

from ..domain.errors import CorruptRecordError
from ..vault.io import read_record
from ..vault.layout import VaultLayout
from .store import clear, transaction, upsert_record


@dataclass
class ReindexResult:
    """What a rebuild did: ``indexed`` records and the files it could not parse."""

    indexed: int = 0
    skipped: list[CorruptRecordError] = field(default_factory=list)

    def wire(self) -> dict:
        return {
            "indexed": self.indexed,
            "skipped": [{"path": e.path, "reason": e.reason} for e in self.skipped],
        }


def rebuild(
    conn: sqlite3.Connection, layout: VaultLayout, progress: Callable[[int, int], None] | None = None
) -> ReindexResult:
    """Replace the index content with what the record files say.

    A file that cannot be parsed is reported in ``skipped`` and left byte-for-byte
    untouched; the rebuild is one transaction, so readers never see a half-built index.
    """
    files = layout.record_files()
    result = ReindexResult()
    with transaction(conn):
        clear(conn)
        for number, path in enumerate(files, 1):
            try:
                meta, body = read_record(path)
            except CorruptRecordError as error:
                result.skipped.append(error)
            else:
                upsert_record(conn, meta, body, str(path.relative_to(layout.root)))
                result.indexed += 1
            if progress:
                progress(number, len(files))
    return result
