"""Rebuild the index from the vault's files alone (``memo reindex``, STYLE §7)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Callable

from pathlib import Path

from ..domain.errors import CorruptRecordError
from ..domain.records import subdir_for_kind
from ..vault.io import read_record
from ..vault.layout import VaultLayout
from .store import clear, transaction, upsert_record


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


def rebuild(
    conn: sqlite3.Connection,
    layout: VaultLayout,
    progress: Callable[[int, int], None] | None = None,
    redact: Callable[[str], str] = lambda text: text,
) -> ReindexResult:
    """Replace the index content with what the record files say.

    A file that cannot be parsed or validated (or whose id, kind or project disagrees with
    where it lies) is reported in ``skipped`` and left byte-for-byte untouched. ``redact``
    is applied to every body and every free-text frontmatter value before it enters the
    index, so a secret pasted into a file by hand never reaches the index or a report. The rebuild is one transaction: readers never see a
    half-built index.
    """
    files = layout.record_files()
    result = ReindexResult()
    seen: dict[str, Path] = {}
    with transaction(conn):
        clear(conn)
        for number, path in enumerate(files, 1):
            try:
                meta, body = read_record(path)
                if meta["id"] != path.stem:
                    raise CorruptRecordError(str(path), f"id {meta['id']!r} does not match the file name")
                if subdir_for_kind(meta["kind"]) != path.parent.name:
                    raise CorruptRecordError(str(path), f"a {meta['kind']} record in {path.parent.name}/")
                if meta["project"] != path.parent.parent.name:
                    raise CorruptRecordError(str(path), f"project {meta['project']!r} does not match its folder")
                if not seen.setdefault(meta["id"], path) == path:
                    raise CorruptRecordError(str(path), f"id {meta['id']!r} also used by {seen[meta['id']]}")
            except CorruptRecordError as error:
                result.skipped.append(error)
            else:
                upsert_record(conn, _redact_meta(meta, redact), redact(body), str(path.relative_to(layout.root)))
                result.indexed += 1
            if progress:
                progress(number, len(files))
    return result
