"""A grown JSON Lines transcript is read on from where the last import stopped (issue 16 point 3).

An importer whose parse is a fold over the lines of one file (Claude Code, Codex, Copilot) gives a
:class:`LineFold`: :func:`read_jsonl` feeds it every line and, once the file is large enough to
be worth it (:data:`RESUME_FROM_BYTES`), keeps a :class:`Checkpoint`: the fold's state after the
last complete line, with the byte offset and line number there and a digest of every byte
consumed. The next import of that file, when it only grew (same inode, not shorter than the
offset, the same digest of its first ``offset`` bytes), loads the state and feeds it only the
new lines: the result is the one a whole read gives, since a fold's state after a line depends
only on the lines before it (tested on every real transcript cut at many places). The digest
costs a read of the file's bytes, not a parse of them; it is taken of the very bytes parsed.

A line still being written (no newline yet) is read, but the checkpoint stops before it: the next
read takes it whole. Checkpoints live in ``<vault>/.memo/import-cache/`` (machine-local, never
synced). They are a cache: one that is missing, stale, from other code, of another file, not a
regular file or unreadable costs a whole read, and so does a state that fails to fold. A state
holding a secret (a text that secret redaction would change, SPEC §2.4) is not kept: no secret
rests in the vault's folder, and that file is read whole while its state holds one.

The state is kept in a format of its own (JSON of tagged values: containers, datetimes, paths and
instances of the classes an importer admits with :func:`allow`, shared objects kept shared), never
pickled: loading it builds instances of those classes and sets their attributes, nothing else.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import operator
import os
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Protocol

import orjson

from ...config import MAX_BODY_BYTES
from ...vault.io import open_regular, read_regular_file
from ...vault.redact import redact_secrets
from .lines import (MAX_TRANSCRIPT_BYTES, NOT_JSON, check_transcript_size, decode_line, may_be_unfinished,
                    parse_json_line)

#: Files smaller than this are read whole (loading a checkpoint costs about as much as reading them).
RESUME_FROM_BYTES = 256 * 1024
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
    ``lines`` lines, the ``digest`` of those ``offset`` bytes, the importer's fold ``version``,
    the file's ``inode`` and the fold's encoded ``state``."""

    offset: int
    lines: int
    digest: str
    version: str
    inode: int
    state: bytes = b""

    def meta(self) -> dict:
        """The fields the import state keeps (everything but the state)."""
        return {"offset": self.offset, "lines": self.lines, "digest": self.digest, "version": self.version,
                "inode": self.inode}


@dataclass(frozen=True)
class Start:
    """A checkpoint to read on from: its ``meta`` (from the import state), the ``cache`` file
    holding its state, and the ``identity`` of the file it is of (the import state's key)."""

    meta: dict
    cache: Path
    identity: str = ""


def _digest(data) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


#: The classes whose instances a fold's state may hold, by name (anything else: no checkpoint is
#: kept, and a state naming another is refused).
_CLASSES: dict[str, type] = {}


def allow(*classes: type) -> None:
    """Admit instances of ``classes`` (an importer's fold and its parts) in checkpoints."""
    for cls in classes:
        _CLASSES[f"{cls.__module__}.{cls.__qualname__}"] = cls


class _Unfit(ValueError):
    """A value a checkpoint cannot hold, or an encoded state that is not one."""


def encode_state(value: Any, checked: frozenset[str] | set[str] = frozenset()) -> bytes:
    """The fold ``value`` as bytes (JSON of tagged values; see the module docstring). The texts
    of ``checked`` are known to hold no secret (they are in the checkpoint the read went on
    from, which kept none); every other text is checked (:func:`_secret_free`).

    Raises
    ------
    ValueError
        It holds a value of a type a checkpoint cannot hold, a text holding a secret (what
        redaction would replace: :func:`_secret_free`) or one longer than any record may hold
        (``MAX_BODY_BYTES``: a turn that size is refused, and its text is not kept either).
    """
    ids: dict[int, int] = {}
    keep: list[Any] = []  # alive while encoding, so no id is reused

    def free(text: str) -> str:
        if len(text) > MAX_BODY_BYTES:  # characters: at least as many bytes
            raise _Unfit("a text longer than any record holds (such a turn is refused)")
        return text if text in checked else _secret_free(text)

    def enc(item: Any) -> Any:
        if item is None or isinstance(item, bool):
            return item
        if isinstance(item, str):
            return free(item)
        if isinstance(item, int):
            if not -(2 ** 63) <= item < 2 ** 63:
                raise _Unfit("an integer beyond 64 bits")
            return item
        if isinstance(item, float):
            return ["f", repr(item)]
        if isinstance(item, tuple):
            return ["t", *[enc(x) for x in item]]
        if isinstance(item, datetime):
            if item.tzinfo not in (None, timezone.utc):
                raise _Unfit("a datetime in a zone other than UTC")
            return ["dt", item.isoformat()]
        if isinstance(item, Path):
            return ["p", str(item)]
        if id(item) in ids:
            return ["r", ids[id(item)]]
        number = ids[id(item)] = len(ids)
        keep.append(item)
        if isinstance(item, list):
            if item and _all_utc(item):
                return ["L", number, *map(datetime.isoformat, item)]  # a transcript's activity: UTC instants
            return ["l", number, *[enc(x) for x in item]]
        if isinstance(item, set):
            if set(map(type, item)) <= {tuple} and set(map(len, item)) == {2}:  # (session, uuid) pairs
                flat = [text for pair in item for text in pair]
                if set(map(type, flat)) <= {str}:
                    return ["S2", number, *map(free, flat)]
            if not all(_text_key(x) for x in item):
                raise _Unfit("a set member that is not text (or a tuple of texts)")
            return ["s", number, *[free(x) if isinstance(x, str) else list(map(free, x)) for x in item]]
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                raise _Unfit("a mapping key that is not text")
            return ["d", number, *[part for key, val in item.items() for part in (free(key), enc(val))]]
        name = f"{type(item).__module__}.{type(item).__qualname__}"
        if _CLASSES.get(name) is not type(item):
            raise _Unfit(f"an instance of {name}")
        return ["o", number, name, *[part for key, val in vars(item).items() for part in (key, enc(val))]]

    try:
        return orjson.dumps(enc(value))
    except (RecursionError, TypeError) as exc:
        raise _Unfit(str(exc)) from None


def _secret_free(text: str) -> str:
    """``text``, when secret redaction would leave it as it is (SPEC §2.4: a checkpoint is kept in
    the vault's folder, where no secret may rest).

    Raises
    ------
    ValueError
        It holds a secret: the file's state is not kept (the next import reads it whole).
    """
    if redact_secrets(text)[1]:
        raise _Unfit("a secret (the vault keeps none: SPEC §2.4)")
    return text


def _all_utc(items: list) -> bool:
    """Whether every item is a datetime in UTC (``timezone.utc``: what a transcript's instants are,
    and what ``fromisoformat`` gives for ``+00:00``)."""
    return set(map(type, items)) == {datetime} and set(map(operator.attrgetter("tzinfo"), items)) == {timezone.utc}


def _text_key(value: Any) -> bool:
    """Text, or a tuple of texts: what sets and mappings of a fold's state hold (their hashes are
    keyed per process, so a crafted state cannot make them collide)."""
    return isinstance(value, str) or (isinstance(value, tuple) and all(isinstance(x, str) for x in value))


def decode_state(data: bytes, root: Any = None, texts: set[str] | None = None) -> Any:
    """What :func:`encode_state` encoded: instances only of the admitted classes, each with only
    the attributes such an instance has (a dataclass's fields; for the class of ``root``, a fresh
    fold, the attributes it has), sets and mapping keys only of text; shared objects shared again.
    Every text the encoded state holds is added to ``texts`` when given.

    Raises
    ------
    ValueError
        ``data`` is not such a state.
    """
    made: dict[int, Any] = {}
    root_names = set(vars(root)) if root is not None else set()

    def names_of(cls: type) -> set[str]:
        if dataclasses.is_dataclass(cls):
            return {f.name for f in dataclasses.fields(cls)}
        return root_names if root is not None and cls is type(root) else set()

    def dec(node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, str)):
            return node
        if not isinstance(node, list) or not node or not isinstance(node[0], str):
            raise _Unfit("not an encoded value")
        tag, rest = node[0], node[1:]
        if tag == "f":
            return float(rest[0])
        if tag == "t":
            return tuple(dec(x) for x in rest)
        if tag == "dt":
            parsed = datetime.fromisoformat(rest[0])
            if parsed.tzinfo is not None and parsed.utcoffset() != timedelta(0):
                raise _Unfit("a datetime in a zone other than UTC")
            return parsed if parsed.tzinfo is None else parsed.replace(tzinfo=timezone.utc)
        if tag == "p":
            return Path(rest[0])
        if tag == "r":
            return made[rest[0]]
        number = rest[0]
        if not isinstance(number, int) or number in made:
            raise _Unfit("a bad reference")
        if tag == "l":
            made[number] = out = []
            out.extend(dec(x) for x in rest[1:])
            return out
        if tag == "L":
            made[number] = out = list(map(datetime.fromisoformat, rest[1:]))
            if not _all_utc(out):
                raise _Unfit("an instant that is not UTC")
            return out
        if tag == "S2":
            flat = rest[1:]
            if len(flat) % 2 or not set(map(type, flat)) <= {str}:
                raise _Unfit("a set of pairs that are not texts")
            pairs = iter(flat)
            made[number] = out = set(zip(pairs, pairs))
            return out
        if tag == "s":
            made[number] = out = set()
            for member in rest[1:]:
                member = member if isinstance(member, str) else tuple(member)
                if not _text_key(member):
                    raise _Unfit("a set member that is not text")
                out.add(member)
            return out
        if tag == "d":
            made[number] = out = {}
            for key, val in zip(rest[1::2], rest[2::2]):
                if not isinstance(key, str):
                    raise _Unfit("a mapping key that is not text")
                out[key] = dec(val)
            return out
        if tag == "o":
            cls = _CLASSES.get(rest[1]) if isinstance(rest[1], str) else None
            if cls is None:
                raise _Unfit(f"an instance of {rest[1]!r}")
            names = names_of(cls)
            made[number] = obj = cls.__new__(cls)
            for key, val in zip(rest[2::2], rest[3::2]):
                if key not in names:
                    raise _Unfit(f"an attribute {key!r} a {cls.__name__} does not have")
                obj.__dict__[key] = dec(val)
            if set(obj.__dict__) != names:
                raise _Unfit(f"a {cls.__name__} without all its attributes")
            return obj
        raise _Unfit(f"the tag {tag!r}")

    try:
        tree = orjson.loads(data)
        value = dec(tree)
    except (KeyError, IndexError, TypeError, AttributeError, RecursionError, orjson.JSONDecodeError) as exc:
        raise _Unfit(str(exc)) from None
    if texts is not None:
        nodes = [tree]
        while nodes:
            node = nodes.pop()
            if isinstance(node, str):
                texts.add(node)
            elif isinstance(node, list):
                nodes.extend(node)
    return value


#: A checkpoint file larger than this is not read (a cache: the transcript is read whole).
MAX_CHECKPOINT_BYTES = 256 * 1024 * 1024


def _header(identity: str, meta: dict) -> bytes:
    return f"{identity}:{meta['offset']}:{meta['lines']}:{meta['digest']}:{meta['version']}\n".encode("ascii")


def _load(start: Start, version: str, raw: bytes, inode: int,
          fresh: Any) -> tuple[object, int, int, Any, set[str]] | None:
    """``(fold, offset, lines, digest so far, texts)`` of ``start`` when it still holds for the
    file's bytes ``raw`` (its state a fold of the kind of ``fresh``), else None. ``texts`` are
    those of the state: checked for secrets when it was kept (by the same redaction: its code is
    part of ``version``), they are not checked again when the state is kept anew."""
    meta = start.meta
    try:
        offset, lines = int(meta["offset"]), int(meta["lines"])
        if meta.get("version") != version or meta.get("inode") != inode or not 0 < offset <= len(raw):
            return None
        hasher = hashlib.blake2b(memoryview(raw)[:offset], digest_size=16)
        if hasher.hexdigest() != meta["digest"]:
            return None  # rewritten (or replaced, or cut and grown again): read whole
        cached = read_regular_file(start.cache, MAX_CHECKPOINT_BYTES)
        header = _header(start.identity, meta)
        if cached is None or not cached.startswith(header):
            return None  # missing, or another read's (or another file's) checkpoint
        texts: set[str] = set()
        fold = decode_state(memoryview(cached)[len(header):], fresh, texts)
    except Exception:  # a cache: anything wrong with it costs a whole read
        return None
    return (fold, offset, lines, hasher, texts) if type(fold) is type(fresh) else None


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
        :data:`RESUME_FROM_BYTES`, or whose state a checkpoint cannot hold); whether the read
        went on from ``start``.

    Raises
    ------
    OSError
        The file cannot be read.
    """
    with open_regular(path) as handle:
        info = os.fstat(handle.fileno())
        check_transcript_size(info.st_size)
        inode = info.st_ino
        raw = handle.read(MAX_TRANSCRIPT_BYTES + 1)  # once: what is parsed is what is digested
    fresh = new_fold()
    version = f"{version}/{_code_digest(type(fresh))}"
    loaded = _load(start, version, raw, inode, fresh) if start is not None else None
    if loaded is not None:
        fold, base, number, hasher, checked = loaded
        try:
            result, checkpoint = _fold(fold, raw, base, number, version, inode, options, hasher, base, checked)
            if sound(result):
                return result, checkpoint, True
        except Exception:  # a state that does not fold (tampered with): read whole
            pass
        fresh = new_fold()
    base = 3 if raw.startswith(b"\xef\xbb\xbf") else 0
    return (*_fold(fresh, raw, base, 0, version, inode, options, hashlib.blake2b(digest_size=16), 0), False)


def _fold(fold, raw: bytes, base: int, number: int, version: str, inode: int, options, hasher,
          digested: int, checked: set[str] | frozenset[str] = frozenset()) -> tuple[object, Checkpoint | None]:
    """Feed ``fold`` the lines of ``raw`` from byte ``base`` (line ``number`` + 1 on; ``hasher``
    has digested the first ``digested`` bytes); its result and the checkpoint after the last
    complete line (files of :data:`RESUME_FROM_BYTES` on; texts of ``checked`` are known to hold
    no secret: :func:`encode_state`)."""
    newline = raw.rfind(b"\n", base)
    complete = newline + 1 if newline >= 0 else base  # the end of the last complete line
    number = _feed(fold, raw, base, complete, number, options)
    checkpoint = None
    if complete >= RESUME_FROM_BYTES:
        try:
            state = encode_state(fold, checked)
        except ValueError:
            state = None  # a value a checkpoint cannot hold: the next read is whole
        if state is not None:
            hasher.update(memoryview(raw)[digested:complete])
            checkpoint = Checkpoint(complete, number, hasher.hexdigest(), version, inode, state)
    pending = complete < len(raw) and not _feed_last(fold, raw[complete:], number + 1, options)
    result = fold.finish()
    if pending and hasattr(result, "pending_lines"):  # a ParseResult
        result.pending_lines = 1
    return result, checkpoint


def _feed_last(fold, tail: bytes, number: int, options) -> bool:
    """Feed ``fold`` a last line with no newline (line ``number``) when it is a whole JSON value
    (an agent that has not written the newline yet, or a file that ends without one); False when
    it is not (yet): half a line an agent is writing now, read again once the file grows, not a
    bad line (:attr:`.common.ParseResult.pending_lines`)."""
    text, problem = decode_line(tail, number)
    unfinished = may_be_unfinished(tail)
    if not text.strip():
        return True
    record = parse_json_line(text)
    if record is NOT_JSON and unfinished:
        return False  # being written (cut inside a character too)
    if problem is not None:  # a byte that is not UTF-8, replaced: said, the line read
        fold.problem(number, problem)
    fold.feed(number, record, options)
    return True


def sound(result: Any) -> bool:
    """Whether a parse's result has the shapes a :class:`~.common.ParseResult` has (a resumed
    read checks it: a tampered state that folds must not hand the import values of other types)."""
    def text(value: Any) -> bool:
        return value is None or isinstance(value, str)

    def counts(value: Any) -> bool:
        return value is None or (isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in value.items()))

    def instant(value: Any) -> bool:
        return value is None or (type(value) is datetime and value.utcoffset() == timedelta(0))

    try:
        if not (isinstance(result.transcripts, list) and isinstance(result.skipped_lines, int)
                and isinstance(result.problems, list) and all(isinstance(p, str) for p in result.problems)
                and isinstance(result.recognised, bool) and text(result.why)):
            return False
        for transcript in result.transcripts:
            if not (isinstance(transcript.transcript_id, str) and isinstance(transcript.source, str)
                    and isinstance(transcript.path, Path) and isinstance(transcript.activity, list)
                    and (not transcript.activity or _all_utc(transcript.activity))
                    and all(text(getattr(transcript, name)) for name in ("project_hint", "ide", "model", "agent", "title"))
                    and isinstance(transcript.prompts, list)):
                return False
            for prompt in transcript.prompts:
                if not (isinstance(prompt.text, str) and instant(prompt.at) and counts(prompt.tokens)
                        and text(prompt.model) and (prompt.tokens_by_model is None or (
                            isinstance(prompt.tokens_by_model, dict)
                            and all(isinstance(k, str) and counts(v) for k, v in prompt.tokens_by_model.items())))):
                    return False
    except AttributeError:
        return False
    return True


@functools.cache
def _code_of(filename: str) -> str:
    try:
        return _digest(Path(filename).read_bytes())
    except OSError:
        return "?"


@functools.cache
def _code_digest(fold: type) -> str:
    """A digest of the code that makes ``fold`` (the importer's module) and of the code it rests
    on (this module, the line reader, the shared importer types, the clock) and of secret
    redaction (ours and the detector's version: a state's texts were checked with them): a
    checkpoint an earlier version of any of them left is not used."""
    here = Path(__file__).resolve()
    module = getattr(sys.modules.get(fold.__module__), "__file__", None) or ""
    detector = importlib.util.find_spec("detect_secrets")  # found, not loaded
    files = (module, str(here), str(here.with_name("lines.py")), str(here.with_name("common.py")),
             str(here.parents[2] / "domain" / "clock.py"), str(here.parents[2] / "vault" / "redact.py"),
             str(Path(detector.origin).with_name("__version__.py")) if detector and detector.origin else "")
    return _digest("".join(_code_of(name) for name in files).encode("ascii"))[:16]


class FoldReader:
    """An importer's ``parse_from(path, options, start=None)``: :func:`read_jsonl` with its fold
    (a class made with the file's path) and the fold's format ``version``. An object rather than
    a closure, so that a parse worker process can be handed it."""

    def __init__(self, fold: type, version: str) -> None:
        self.fold, self.version = fold, version

    def __call__(self, path: Path, options, start: Start | None = None) -> tuple[object, Checkpoint | None, bool]:
        """The file's parse (read on from ``start`` when the file only grew since), the
        checkpoint to keep, and whether it was read on."""
        return read_jsonl(path, functools.partial(self.fold, path), self.version, options, start)


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
        if problem is not None:  # a byte that is not UTF-8, replaced: said, the line read
            fold.problem(number, problem)
        if text.strip():
            fold.feed(number, parse_json_line(text), options)
    return number


def cache_file(memo_dir: Path, key: str) -> Path:
    """The checkpoint file of the import state's ``key``."""
    return memo_dir / CACHE_DIR / (hashlib.blake2b(key.encode("utf-8"), digest_size=16).hexdigest() + ".fold")


def write_checkpoint(target: Path, checkpoint: Checkpoint, identity: str = "") -> None:
    """Keep ``checkpoint`` of the file ``identity`` (the import state's key) in ``target``
    (atomically; a cache, so not made durable)."""
    from ...vault.io import atomic_write_bytes

    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, _header(identity, checkpoint.meta()) + checkpoint.state, durable=False)
