"""Sync conflicts (SPEC §2.7): when both sides changed a record, the newer ``updated`` wins
and the other version is kept beside it as ``<id>.conflict-<stamp>-<hash8>.md``. Nothing is
ever lost; reindex skips conflict files; the digest lists them."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from ..domain.ids import RESERVED_MARK
from .io import atomic_write_bytes

CONFLICT_MARK = RESERVED_MARK  # so no record id may hold it (domain.ids.validate_slug)
_CONFLICT = re.compile(r"^(?P<id>.+)\.conflict-(?P<stamp>\d{8}T\d{6}Z)-(?P<hash>[0-9a-f]{8})\.md$")


def is_conflict_file(path: Path) -> bool:
    """Whether ``path`` is a kept conflict version (not a record)."""
    return _CONFLICT.match(path.name) is not None


def conflict_record_id(path: Path) -> str | None:
    """The record id a conflict file belongs to."""
    match = _CONFLICT.match(path.name)
    return match.group("id") if match else None


def keep_conflict(record_path: Path, losing_text: bytes, stamp: str) -> Path:
    """Write the losing version beside ``record_path`` (idempotent: the same text keeps
    one file). ``stamp`` is a compact UTC time ``YYYYmmddTHHMMSSZ``."""
    digest = hashlib.sha256(losing_text).hexdigest()[:8]
    for existing in record_path.parent.glob(f"{record_path.stem}{CONFLICT_MARK}*-{digest}.md"):
        return existing
    target = record_path.with_name(f"{record_path.stem}{CONFLICT_MARK}{stamp}-{digest}.md")
    atomic_write_bytes(target, losing_text)
    return target


def conflict_files(projects_dir: Path) -> list[Path]:
    """Every conflict file of the vault, sorted."""
    if not projects_dir.is_dir():
        return []
    return sorted(p for p in projects_dir.glob(f"*/*/*{CONFLICT_MARK}*.md") if is_conflict_file(p))
