"""What an import already took from each transcript file (issue 16 point 3): unchanged means a
``stat``.

Per source file (a digest of its absolute path, per importer) the import keeps the file's size, times and
inode as it read them, the options it imported with, the transcript ids the file held and, for a
JSON Lines file read by a fold, the checkpoint to read it on from when it grows (the byte offset
and digests of what it consumed: :mod:`.resume`), in ``<vault>/.memo/import-state.json``. The next import of a file
whose size and times are the same, under the same options, costs a ``stat``: it is not read
again. A grown JSON Lines file is read on from its checkpoint; any other change (rewritten,
truncated) reads the file whole, imported as before (ids are deterministic: what is already in the vault is left as it is).
A conversation split over several files is imported from all of them: when a changed file holds
a transcript id an unchanged file also held, that file is read again too.

Only importers whose parse reads the one file (``SELF_CONTAINED`` in their module) use it:
OpenCode's storage and Cursor's databases spread one conversation over several files. The state
is a cache: deleting it costs one full read; a state that cannot be read is ignored.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import orjson

from ...vault.io import atomic_write_bytes, read_regular_file

#: The file, under the vault's ``.memo`` folder.
STATE_FILE = "import-state.json"
_VERSION = 3  # 2: entries keyed by a digest of the path; 3: transcript ids kept as digests


def options_key(options, source: str) -> str:
    """A short digest of what decides how a file is imported (the importer and the
    :class:`~.common.ImportOptions`: project, client, billable, idle gap, zone): another value
    means the file is read again."""
    text = "|".join(str(v) for v in (source, options.project, options.client, options.billable,
                                     int(options.idle_gap.total_seconds()), options.zone))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Stamp:
    """A file's size (bytes), modification and change times (ns) and inode, as one ``stat``
    gives them: a file rewritten to the same size with its time set back still has a new change
    time (no program can set it), one replaced by another a new inode."""

    size: int
    mtime_ns: int
    ctime_ns: int = 0
    inode: int = 0
    #: what the importer reads beside the file (a Claude Code transcript's ``subagents/`` files),
    #: as its ``companions(path)`` sums them up; None: nothing
    companions: tuple[int, ...] | None = None

    @classmethod
    def of(cls, path: Path, companions: Callable[[Path], tuple[int, ...] | None] | None = None) -> "Stamp | None":
        try:
            stat = os.stat(path)
        except OSError:
            return None
        return cls(stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino,
                   companions(path) if companions is not None else None)


class ImportState:
    """The per-file state of one vault's imports (see the module docstring)."""

    def __init__(self, path: Path, entries: dict[str, dict]) -> None:
        self.path = path
        self.entries = entries
        #: this import's changes (None: forgotten), merged into the file by :meth:`save`
        self._updates: dict[str, dict | None] = {}
        self.changed = False

    @classmethod
    def load(cls, memo_dir: Path) -> "ImportState":
        path = memo_dir / STATE_FILE
        return cls(path, _read_entries(path))

    @staticmethod
    def key(path: Path, source: str) -> str:
        """The entry of ``path``: a digest of its absolute path, never the path (a file name may
        hold a secret, and the state is not redacted)."""
        text = str(path)
        return _key(text, source) if os.path.isabs(text) else _key(os.path.abspath(text), source)

    def unchanged(self, path: Path, source: str, options: str, stamp: Stamp | None) -> bool:
        """Whether ``path`` is as the last import of it under ``options`` left it."""
        entry = self.entries.get(self.key(path, source))
        return (stamp is not None and isinstance(entry, dict) and entry.get("options") == options
                and entry.get("size") == stamp.size and entry.get("mtimeNs") == stamp.mtime_ns
                and entry.get("ctimeNs") == stamp.ctime_ns and entry.get("inode") == stamp.inode
                and entry.get("companions") == (list(stamp.companions) if stamp.companions else None))

    def sessions(self, path: Path, source: str) -> list[str]:
        """The record ids of the first sessions the file's transcripts gave (checked to be in
        the index before the file is skipped: records deleted since are imported again)."""
        entry = self.entries.get(self.key(path, source))
        found = entry.get("sessions") if isinstance(entry, dict) else None
        return [s for s in found if isinstance(s, str)] if isinstance(found, list) else []

    def transcripts(self, path: Path, source: str) -> list[str]:
        """Digests (:func:`transcript_digest`) of the transcript ids the file held when imported."""
        entry = self.entries.get(self.key(path, source))
        found = entry.get("transcripts") if isinstance(entry, dict) else None
        return [t for t in found if isinstance(t, str)] if isinstance(found, list) else []

    def resume(self, path: Path, source: str, options: str) -> dict | None:
        """The checkpoint the last import of ``path`` under ``options`` left (its
        :meth:`.resume.Checkpoint.meta`), or None."""
        entry = self.entries.get(self.key(path, source))
        if not isinstance(entry, dict) or entry.get("options") != options:
            return None
        found = entry.get("resume")
        return found if isinstance(found, dict) else None

    def left_out(self, path: Path, source: str) -> list[str]:
        """What the import of ``path`` left out of it (its lines that could not be read …), as it
        said it without the path: said again while the file is unchanged."""
        entry = self.entries.get(self.key(path, source))
        found = entry.get("leftOut") if isinstance(entry, dict) else None
        return [t for t in found if isinstance(t, str)][:10] if isinstance(found, list) else []

    def record(self, path: Path, source: str, options: str, stamp: Stamp, transcripts: list[str],
               sessions: list[str], resume: dict | None = None, left_out: list[str] | None = None) -> None:
        """Note that ``path`` (as ``stamp`` saw it before it was read) is imported whole, and where
        to read it on from (``resume``: a checkpoint's meta) when it grows; ``left_out``: what its
        import said it left out (without the path: a file's name may hold a secret)."""
        key = self.key(path, source)
        entry = {"size": stamp.size, "mtimeNs": stamp.mtime_ns, "ctimeNs": stamp.ctime_ns, "inode": stamp.inode,
                 "options": options, "transcripts": sorted({transcript_digest(t) for t in transcripts}),
                 "sessions": sorted(set(sessions))}
        if resume is not None:
            entry["resume"] = resume
        if left_out:
            entry["leftOut"] = [line[:300] for line in left_out[:10]]
        if stamp.companions:
            entry["companions"] = list(stamp.companions)
        self.entries[key] = self._updates[key] = entry
        self.changed = True

    def forget(self, path: Path, source: str) -> None:
        key = self.key(path, source)
        self.entries.pop(key, None)
        self._updates[key] = None
        self.changed = True

    def save(self) -> None:
        """Write this import's changes into the state (atomically; a cache, so not synced), over
        what another import saved meanwhile: call it under the vault lock."""
        if not self.changed:
            return
        entries = _read_entries(self.path)
        for key, entry in self._updates.items():
            if entry is None:
                entries.pop(key, None)
            else:
                entries[key] = entry
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.path, orjson.dumps({"version": _VERSION, "files": entries}), durable=False)
        self.entries, self._updates, self.changed = entries, {}, False


def transcript_digest(transcript_id: str) -> str:
    """What the state keeps of a transcript id: a digest (an agent's conversation id can hold a
    secret; the state is not redacted, and no secret rests in the vault's folder)."""
    return hashlib.blake2b(transcript_id.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


@functools.lru_cache(maxsize=65536)
def _key(path: str, source: str) -> str:
    """The key of the absolute ``path`` (remembered: a file's key is asked for several times)."""
    digest = hashlib.blake2b(os.fsencode(os.path.normpath(path)), digest_size=16).hexdigest()
    return f"{source}:{digest}"


#: A state file larger than this is not read (a cache: ignored, then rewritten).
MAX_STATE_BYTES = 64 * 1024 * 1024


def _read_entries(path: Path) -> dict[str, dict]:
    """The entries of the state file, or none when it is missing, not a regular file (a FIFO,
    a device), too large or not a state this version wrote."""
    raw = read_regular_file(path, MAX_STATE_BYTES)
    if raw is None:
        return {}
    try:
        data = orjson.loads(raw)
    except ValueError:
        return {}
    files = data.get("files") if isinstance(data, dict) and data.get("version") == _VERSION else None
    return {k: v for k, v in files.items() if isinstance(v, dict)} if isinstance(files, dict) else {}
