"""A grown JSON Lines transcript is read on from where the last import stopped (issue 16 point 3).

An importer whose parse is a fold over the lines of one file (Claude Code, Codex, Copilot) gives a
:class:`LineFold`: :func:`read_jsonl` feeds it every line and, once the file is large enough to
be worth it (:data:`RESUME_FROM_BYTES`), keeps a :class:`Checkpoint`: the fold's state after the
last complete line, with the byte offset and line number there and digests of what was consumed
(its first and last :data:`WINDOW` bytes). The next import of that file, when it only grew (same
inode, not shorter than the offset, both digests the same), loads the state and feeds it only the
new lines: the result is the one a whole read gives, since a fold's state after a line depends
only on the lines before it (tested on every real transcript cut at many places).

A line still being written (no newline yet) is read, but the checkpoint stops before it: the next
read takes it whole. Checkpoints live in ``<vault>/.memo/import-cache/`` (machine-local, never
synced). They are a cache: one that is missing, stale, from another version or unreadable costs a
whole read. The state is pickled, and loaded with an unpickler that admits only the classes a
fold is made of (a tampered file is refused, then the file read whole).
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import pickle
import stat
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Protocol

from .lines import decode_line, parse_json_line

#: Files smaller than this are read whole (loading a checkpoint costs about as much as reading them).
RESUME_FROM_BYTES = 256 * 1024
#: Bytes digested at the start of the consumed part and before its end.
WINDOW = 64 * 1024
#: The folder under the vault's ``.memo``.
CACHE_DIR = "import-cache"


class LineFold(Protocol):
    """What :func:`read_jsonl` drives: ``problem`` for a line that is not UTF-8, ``feed`` for every
    other non-blank line (its JSON value, or :data:`~.lines.NOT_JSON`), then ``finish`` once."""

    def problem(self, number: int, text: str) -> None: ...

    def feed(self, number: int, record: object, options) -> None: ...

    def finish(self) -> object:
        """The :class:`~.common.ParseResult` of the lines fed."""


@dataclass(frozen=True)
class Checkpoint:
    """Where a read of a file stopped: ``offset`` bytes (the end of its last complete line),
    ``lines`` lines, digests of the first and last :data:`WINDOW` bytes before ``offset``, the
    importer's fold ``version``, the file's ``inode`` and the pickled ``state``."""

    offset: int
    lines: int
    head: str
    tail: str
    version: str
    inode: int
    state: bytes = b""

    def meta(self) -> dict:
        """The fields the import state keeps (everything but the pickled state)."""
        return {"offset": self.offset, "lines": self.lines, "head": self.head, "tail": self.tail,
                "version": self.version, "inode": self.inode}


@dataclass(frozen=True)
class Start:
    """A checkpoint to read on from: its ``meta`` (from the import state) and the ``cache`` file
    holding the pickled state."""

    meta: dict
    cache: Path


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _windows(handle, offset: int) -> tuple[str, str]:
    handle.seek(0)
    head = handle.read(min(WINDOW, offset))
    handle.seek(max(offset - WINDOW, 0))
    tail = handle.read(min(WINDOW, offset))
    return _digest(head), _digest(tail)


#: The classes a fold's pickled state may name (anything else: the checkpoint is refused).
_ALLOWED: dict[tuple[str, str], type] = {}


def allow(*classes: type) -> None:
    """Admit ``classes`` (an importer's fold and its parts) in checkpoints."""
    for cls in classes:
        _ALLOWED[(cls.__module__, cls.__qualname__)] = cls


allow(datetime, timedelta, timezone, type(Path("/")))


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        cls = _ALLOWED.get((module, name))
        if cls is None:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a checkpoint")
        return cls


#: A checkpoint file larger than this is not read (a cache: the transcript is read whole).
MAX_CHECKPOINT_BYTES = 256 * 1024 * 1024


def _read_cache(path: Path) -> bytes | None:
    """The bytes of a checkpoint file, or None when it is missing, not a regular file (a FIFO,
    a device, a symbolic link) or too large."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CHECKPOINT_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(MAX_CHECKPOINT_BYTES + 1)
    finally:
        os.close(fd)


def _load(start: Start, version: str, handle, size: int, inode: int) -> tuple[object, int, int] | None:
    """``(fold, offset, lines)`` of ``start`` when it still holds for the open file, else None."""
    meta = start.meta
    try:
        offset, lines = int(meta["offset"]), int(meta["lines"])
        if meta.get("version") != version or meta.get("inode") != inode or not 0 < offset <= size:
            return None
        if _windows(handle, offset) != (meta["head"], meta["tail"]):
            return None  # rewritten: read whole
        state = _read_cache(start.cache)
        if state is None:
            return None
        header, _, pickled = state.partition(b"\n")
        if header.decode("ascii") != f"{offset}:{lines}:{meta['head']}:{meta['tail']}:{version}":
            return None  # another read's checkpoint
        fold = _Unpickler(io.BytesIO(pickled)).load()
    except Exception:  # a cache: anything wrong with it costs a whole read
        return None
    return fold, offset, lines


def read_jsonl(path: Path, new_fold: Callable[[], LineFold], version: str, options,
               start: Start | None = None) -> tuple[object, Checkpoint | None, bool]:
    """Fold every line of a JSON Lines file, from ``start`` when it still holds.

    Parameters
    ----------
    path : Path
        The transcript.
    new_fold : callable
        Makes the importer's empty fold.
    version : str
        The fold's format (with a digest of the code that folds): a checkpoint of another is not used.
    options : ImportOptions
        Handed to the fold with each line (not part of its state: the import state keeps their
        digest, and another value reads the file whole).
    start : Start, optional
        The checkpoint the last import left.

    Returns
    -------
    tuple[ParseResult, Checkpoint | None, bool]
        What a whole read gives; the checkpoint to keep (None for a file under
        :data:`RESUME_FROM_BYTES`); whether the read went on from ``start``.

    Raises
    ------
    OSError
        The file cannot be read.
    """
    version = f"{version}/{_code_digest(new_fold)}"
    with open(path, "rb") as handle:
        info = os.fstat(handle.fileno())
        loaded = _load(start, version, handle, info.st_size, info.st_ino) if start is not None else None
        if loaded is not None:
            fold, base, number = loaded
            handle.seek(base)
            data = handle.read()
        else:
            fold, base, number = new_fold(), 0, 0
            handle.seek(0)
            data = handle.read()
            if data.startswith(b"\xef\xbb\xbf"):
                data, base = data[3:], 3
    cut = data.rfind(b"\n") + 1  # the end of the last complete line
    number = _feed(fold, data, 0, cut, number, options)
    checkpoint = None
    if base + cut >= RESUME_FROM_BYTES:
        with open(path, "rb") as handle:
            head, tail = _windows(handle, base + cut)
        checkpoint = Checkpoint(base + cut, number, head, tail, version, info.st_ino,
                                pickle.dumps(fold, protocol=pickle.HIGHEST_PROTOCOL))
    if cut < len(data):  # a last line with no newline (perhaps still being written): read, not kept
        _feed(fold, data, cut, len(data), number, options)
    return fold.finish(), checkpoint, loaded is not None


@functools.cache
def _code_of(filename: str) -> str:
    try:
        return _digest(Path(filename).read_bytes())
    except OSError:
        return "?"


def _code_digest(new_fold: Callable) -> str:
    """A digest of the code that made the fold (the importer's module) and of this one: a
    checkpoint an earlier version of either left is not used."""
    module = getattr(new_fold, "__code__", None)
    return _code_of(module.co_filename if module is not None else "")[:8] + _code_of(__file__)[:8]


def _feed(fold: LineFold, data: bytes, begin: int, end: int, number: int, options) -> int:
    """Feed the lines of ``data[begin:end]`` (numbered on from ``number``); the last number."""
    position = begin
    while position < end:
        newline = data.find(b"\n", position, end)
        stop = end if newline < 0 else newline
        number += 1
        raw = data[position:stop]
        position = stop + 1
        text, problem = decode_line(raw, number)
        if problem is not None:
            fold.problem(number, problem)
        elif text.strip():
            fold.feed(number, parse_json_line(text), options)
    return number


def cache_file(memo_dir: Path, key: str) -> Path:
    """The checkpoint file of the import state's ``key``."""
    return memo_dir / CACHE_DIR / (hashlib.blake2b(key.encode("utf-8"), digest_size=16).hexdigest() + ".fold")


def write_checkpoint(target: Path, checkpoint: Checkpoint) -> None:
    """Keep ``checkpoint`` in ``target`` (atomically; a cache, so not made durable)."""
    from ...vault.io import atomic_write_bytes

    target.parent.mkdir(parents=True, exist_ok=True)
    meta = checkpoint.meta()
    header = f"{meta['offset']}:{meta['lines']}:{meta['head']}:{meta['tail']}:{meta['version']}\n"
    atomic_write_bytes(target, header.encode("ascii") + checkpoint.state, durable=False)
