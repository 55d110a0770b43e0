"""What an import already took from each transcript file (issue 16 point 3): unchanged means a
``stat``.

Per source file (its absolute path, per importer) the import keeps the file's size and
modification time as it read them, the bytes it consumed, the options it imported with and the
transcript ids the file held, in ``<vault>/.memo/import-state.json``. The next import of a file
whose size and modification time are the same, under the same options, costs a ``stat``: it is
not read again. A file that changed in any way (grown, rewritten, truncated) is read whole and
imported as before (ids are deterministic: what is already in the vault is left as it is).
A conversation split over several files is imported from all of them: when a changed file holds
a transcript id an unchanged file also held, that file is read again too.

Only importers whose parse reads the one file (``SELF_CONTAINED`` in their module) use it:
OpenCode's storage and Cursor's databases spread one conversation over several files. The state
is a cache: deleting it costs one full read; a state that cannot be read is ignored.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import orjson

from ...vault.io import atomic_write_bytes

#: The file, under the vault's ``.memo`` folder.
STATE_FILE = "import-state.json"
_VERSION = 1


def options_key(options, source: str) -> str:
    """A short digest of what decides how a file is imported (the importer and the
    :class:`~.common.ImportOptions`: project, client, billable, idle gap, zone): another value
    means the file is read again."""
    text = "|".join(str(v) for v in (source, options.project, options.client, options.billable,
                                     int(options.idle_gap.total_seconds()), options.zone))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Stamp:
    """A file's size (bytes) and modification time (ns) as one ``stat`` gives them."""

    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> "Stamp | None":
        try:
            stat = os.stat(path)
        except OSError:
            return None
        return cls(stat.st_size, stat.st_mtime_ns)


class ImportState:
    """The per-file state of one vault's imports (see the module docstring)."""

    def __init__(self, path: Path, entries: dict[str, dict]) -> None:
        self.path = path
        self.entries = entries
        self.changed = False

    @classmethod
    def load(cls, memo_dir: Path) -> "ImportState":
        path = memo_dir / STATE_FILE
        try:
            data = orjson.loads(path.read_bytes())
            entries = data["files"] if data.get("version") == _VERSION and isinstance(data.get("files"), dict) else {}
        except (OSError, ValueError, AttributeError, TypeError):
            entries = {}
        return cls(path, entries)

    @staticmethod
    def key(path: Path, source: str) -> str:
        return f"{source}:{os.path.abspath(path)}"

    def unchanged(self, path: Path, source: str, options: str, stamp: Stamp | None) -> bool:
        """Whether ``path`` is as the last import of it under ``options`` left it."""
        entry = self.entries.get(self.key(path, source))
        return (stamp is not None and isinstance(entry, dict) and entry.get("options") == options
                and entry.get("size") == stamp.size and entry.get("mtimeNs") == stamp.mtime_ns)

    def transcripts(self, path: Path, source: str) -> list[str]:
        entry = self.entries.get(self.key(path, source))
        found = entry.get("transcripts") if isinstance(entry, dict) else None
        return [t for t in found if isinstance(t, str)] if isinstance(found, list) else []

    def record(self, path: Path, source: str, options: str, stamp: Stamp, transcripts: list[str]) -> None:
        """Note that ``path`` (as ``stamp`` saw it before it was read) is imported whole."""
        self.entries[self.key(path, source)] = {"size": stamp.size, "mtimeNs": stamp.mtime_ns,
                                                "consumed": stamp.size, "options": options,
                                                "transcripts": sorted(set(transcripts))}
        self.changed = True

    def forget(self, path: Path, source: str) -> None:
        if self.entries.pop(self.key(path, source), None) is not None:
            self.changed = True

    def save(self) -> None:
        """Write the state (atomically; a cache, so not synced) when it changed."""
        if not self.changed:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.path, orjson.dumps({"version": _VERSION, "files": self.entries}), durable=False)
        self.changed = False
