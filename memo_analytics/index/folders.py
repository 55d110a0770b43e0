"""The record folders as the freshness check sees them: stamps and listings (SPEC §2.1).

A record folder is ``projects/<project>/<subdir>`` for a record kind's subdir; its key is
``"<project>/<subdir>"``. Its modification time changes whenever a file is created,
renamed into it or removed from it — every atomic write of a record does all three — so
comparing these times with the ones the index recorded tells, with one ``stat`` per
folder, whether files arrived or left behind the index's back. (An edit made in place,
without a rename, does not change the folder's time: ``memo reindex`` catches those.)
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..domain.records import RecordKind, subdir_for_kind
from ..vault.conflicts import CONFLICT_MARK
from ..vault.layout import VaultLayout

#: ``{subdir: kind}`` of every record kind.
KIND_OF_SUBDIR = {subdir_for_kind(kind): kind.value for kind in RecordKind}


def folder_key(project: str, kind: RecordKind | str) -> str:
    """``"<project>/<subdir>"`` of a record folder."""
    return f"{project}/{subdir_for_kind(kind)}"


def disk_stamps(layout: VaultLayout) -> dict[str, int]:
    """``{"<project>/<subdir>": mtime_ns}`` of every record folder on disk.

    One ``scandir`` of ``projects/`` and one ``stat`` per project and kind (hidden folders
    are skipped, as :meth:`VaultLayout.record_files` skips them): about a millisecond for
    fifty projects, whatever the number of records.
    """
    stamps: dict[str, int] = {}
    try:
        entries = list(os.scandir(layout.projects_dir))
    except (FileNotFoundError, NotADirectoryError):
        return stamps
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        for subdir in KIND_OF_SUBDIR:
            try:
                info = os.stat(os.path.join(entry.path, subdir))
            except (FileNotFoundError, NotADirectoryError):
                continue
            if stat.S_ISDIR(info.st_mode):
                stamps[f"{entry.name}/{subdir}"] = info.st_mtime_ns
    return stamps


def folder_stamp(layout: VaultLayout, key: str) -> int | None:
    """The modification time (ns) of one record folder, or None when it does not exist."""
    try:
        info = os.stat(layout.projects_dir / key)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return info.st_mtime_ns if stat.S_ISDIR(info.st_mode) else None


def is_record_name(name: str) -> bool:
    """Whether a file name in a record folder names a record (``<id>.md``; not a hidden
    temporary file, not a kept sync conflict version)."""
    return name.endswith(".md") and not name.startswith(".") and CONFLICT_MARK not in name


def folder_files(layout: VaultLayout, key: str) -> dict[str, tuple[Path, int]]:
    """``{id: (path, mtime_ns)}`` of the record files of one folder (empty when it is gone)."""
    folder = layout.projects_dir / key
    files: dict[str, tuple[Path, int]] = {}
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return files
    for entry in entries:
        if is_record_name(entry.name):
            try:
                mtime_ns = entry.stat().st_mtime_ns
            except OSError:
                mtime_ns = 0
            files[entry.name[:-3]] = (folder / entry.name, mtime_ns)
    return files


def any_record_file(layout: VaultLayout, keys: list[str]) -> bool:
    """Whether one of the folders ``keys`` holds a record file (stops at the first)."""
    for key in keys:
        try:
            with os.scandir(layout.projects_dir / key) as entries:
                if any(is_record_name(entry.name) for entry in entries):
                    return True
        except (FileNotFoundError, NotADirectoryError):
            continue
    return False
