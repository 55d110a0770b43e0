"""``memo watch`` and ``memo import auto``: the agents' transcripts imported as they are
written (issue 14 point 4).

:data:`KNOWN_LOCATIONS` are where the agents memo can import keep their transcripts on this
machine. The watcher follows them (and folders given on the command line) through the file
system's own events (``watchfiles``: inotify, FSEvents, ReadDirectoryChangesW — no polling, no
CPU while nothing changes). A file that changed since the watcher last took it in (its size or
modification time; kept in ``<vault>/.memo/watch.json``) is imported again through the same
importers as ``memo import`` — idempotent, so a grown transcript adds its new turns and
stretches its last session, a truncated or rewritten one is read whole, a rotated one is a new
file; OpenCode's JSON storage, where a session's messages and parts are files of their own, is
taken in through the session file they belong to. Stopping (SIGINT, SIGTERM, or ``stop`` set) ends the loop between two imports.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from ..domain.errors import InvalidFieldError, MemoError, VaultMovedError, full_disk_error
from ..vault.io import file_identity, open_regular, read_json_state, write_json_state
from ..vault.redact import redact_secrets
from .importers import IMPORTERS, claude_code, load_importer, opencode
from .importers.common import ImportOptions, ImportResult, format_of, run_import, walk_files, with_imported_siblings
from .store import VaultStore

#: (source, folder under the home folder) of every transcript store memo can import.
KNOWN_LOCATIONS: tuple[tuple[str, str], ...] = (
    ("claude-code", ".claude/projects"),
    ("codex", ".codex/sessions"),
    ("gemini", ".gemini/tmp"),
    ("copilot", ".copilot/session-state"),
    ("cursor", ".config/Cursor/User/globalStorage"),
    ("opencode", ".local/share/opencode"),
)


#: Transcript stores that are SQLite databases (their ``-wal`` file changes first).
_DATABASES = (".vscdb", ".db")


def _watched_suffixes() -> tuple[str, ...]:
    """Every suffix an importer reads, and the write-ahead logs of the databases."""
    suffixes = {s for source in IMPORTERS for s in load_importer(source).SUFFIXES}
    return tuple(sorted(suffixes | {f"{s}-wal" for s in _DATABASES}))


#: The watcher wakes this often without an event (ms) — only to notice a stop request and, the
#: first time, to take in what changed while it subscribed; it reads nothing then.
WAKE_MS = 1000
#: Rounds of looking at the files (one each :data:`WAKE_MS`) before the events are tried again,
#: while a folder that cannot be read keeps them from being followed.
POLL_ROUNDS = 30


@dataclass(frozen=True)
class WatchedRoot:
    """A folder (or file) the watcher follows, and the importer of the files in it (None: told
    by each file's place and first line, :func:`source_of`)."""

    path: Path
    source: str | None = None
    #: A known folder of an agent not used on this machine yet: followed once it appears.
    awaited: bool = False


def known_roots(home: Path | None = None, awaited: bool = False) -> list[WatchedRoot]:
    """The :data:`KNOWN_LOCATIONS` that exist on this machine; with ``awaited``, the others too
    (``awaited=True``: a watcher left running follows an agent used for the first time later)."""
    home = home or Path.home()
    return [WatchedRoot(home / folder, source, awaited=not (home / folder).is_dir())
            for source, folder in KNOWN_LOCATIONS if awaited or (home / folder).is_dir()]


def _cannot_read(path: Path) -> str | None:
    """Why ``path`` cannot be opened for reading (``Permission denied``), or None when it can (or is
    no regular file: a pipe, a folder — told apart elsewhere)."""
    try:
        with open_regular(path):
            return None
    except PermissionError as exc:
        return exc.strerror or "Permission denied"
    except OSError:
        return None


def source_of(path: Path) -> str | None:
    """Which importer reads ``path``: by where it lies (``.claude/``, ``.codex/``,
    ``.specstory/``, ``.gemini/``, ``.copilot/``) and, for JSON Lines elsewhere, by its first
    record; None when none does."""
    parts = set(path.parts)
    if path.suffix == ".vscdb":
        return "cursor"
    if path.suffix == ".db":
        return "opencode" if path.name.startswith("opencode") else None
    if path.suffix == ".json" and "opencode" in parts and "session" in parts:
        return "opencode"
    if path.suffix == ".md":
        return "specstory" if ".specstory" in parts else None
    if path.suffix not in (".jsonl", ".json"):
        return None
    if ".gemini" in parts:
        return "gemini"
    if path.suffix == ".json":
        return _json_document_source(path)
    if ".claude" in parts:
        return None if "subagents" in parts else "claude-code"
    if ".codex" in parts or path.name.startswith("rollout-"):
        return "codex"
    if ".copilot" in parts:
        return "copilot"
    try:
        with open_regular(path) as handle:
            first = json.loads(handle.readline(1 << 20) or b"null")
    except (OSError, ValueError):
        return None
    found = format_of(first)
    if found is None:
        return None
    # a sub-agent's file beside its session (<session>/subagents/) is read with the session
    return None if found[0] == "claude-code" and "subagents" in parts else found[0]


#: The largest JSON document :func:`source_of` reads whole to tell whose it is (a Gemini CLI chat
#: saved outside ``~/.gemini``: ``session-*.json`` copied into a project, an example folder).
MAX_TOLD_JSON_BYTES = 64 << 20


def _json_document_source(path: Path) -> str | None:
    """``gemini`` for a JSON document that is a Gemini CLI chat (its header has ``projectHash``),
    else None: the other agents keep JSON Lines, or JSON in their own folders."""
    try:
        if path.stat().st_size > MAX_TOLD_JSON_BYTES:
            return None
        document = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    found = format_of(document)
    return "gemini" if found is not None and found[0] == "gemini" else None


class FileStates:
    """What the watcher last took in of each file: ``{digest of its path: [size, mtime_ns]}`` in
    ``<vault>/.memo/watch.json`` (a cache: a lost file means a full re-import, which is idempotent;
    never a path — a folder's name can hold a secret, and no secret rests in the vault's folder)."""

    VERSION = 2  # 2: keyed by digests of paths

    def __init__(self, vault_root: Path) -> None:
        self.path = Path(vault_root) / ".memo" / "watch.json"
        kept = read_json_state(self.path) or {}
        self.files: dict[str, list[int]] = kept.get("files", {}) if kept.get("version") == self.VERSION else {}
        #: files whose last import failed (a full disk, a vault busy too long): ``{path: (source,
        #: when)}`` (``time.monotonic``), tried again after :data:`RETRY_AFTER_SECONDS` (:meth:`due`)
        self.failed: dict[str, tuple[str, float]] = {}
        #: the vault folder's identity (device, inode) when the watch began (None: not made yet)
        self.root = Path(vault_root)
        self.vault = file_identity(self.root)

    def same_vault(self) -> None:
        """Refuse to go on when the vault folder is no longer the one the watch began with (moved
        with ``mv`` or removed): an import made a second, empty vault at the old path, and the index
        still open in the moved one was brought in line with that empty folder — its sessions
        billed ``internal`` until a reindex.

        Raises
        ------
        VaultMovedError
            The vault's folder is gone or another one.
        """
        if self.vault is not None and file_identity(self.root) != self.vault:
            raise VaultMovedError(str(self.root))

    @staticmethod
    def stamp(path: Path) -> list[int] | None:
        """``[size, mtime_ns]`` — for a SQLite database (Cursor, OpenCode) with its write-ahead
        log's too, where the newest writes wait until a checkpoint; for a session file of
        OpenCode's JSON storage with the count, total size and newest change of its message and
        part files, which change while the session file does not."""
        try:
            info = path.stat()
        except OSError:
            return None
        stamp = [info.st_size, info.st_mtime_ns]
        if path.suffix == ".json":
            related = [i for p in opencode.storage_files(path) if (i := _stat(p)) is not None]
            if related:
                stamp += [len(related), sum(i.st_size for i in related), max(i.st_mtime_ns for i in related)]
        if path.suffix in _DATABASES:
            try:
                wal = Path(f"{path}-wal").stat()
                stamp += [wal.st_size, wal.st_mtime_ns]
            except OSError:
                pass
        return stamp

    @staticmethod
    def key(path: Path) -> str:
        return hashlib.blake2b(os.fsencode(os.path.abspath(path)), digest_size=16).hexdigest()

    def changed(self, path: Path) -> bool:
        stamp = self.stamp(path)
        return stamp is not None and self.files.get(self.key(path)) != stamp

    def took(self, path: Path, stamp: list[int] | None) -> None:
        if stamp is not None:
            self.files[self.key(path)] = stamp

    def save(self) -> None:
        """Keep :attr:`files` (a cache: a disk too full to write it costs a re-import later)."""
        try:
            write_json_state(self.path, {"version": self.VERSION, "files": self.files})
        except OSError:
            pass

    def due(self, now: float | None = None) -> list[tuple[Path, str]]:
        """The files whose import failed at least :data:`RETRY_AFTER_SECONDS` ago."""
        now = time.monotonic() if now is None else now
        return [(Path(path), source) for path, (source, when) in self.failed.items()
                if now - when >= RETRY_AFTER_SECONDS]


#: How long after a failed import (a full disk, a vault held by another import) the watcher tries
#: that file again when nothing changes it meanwhile (s).
RETRY_AFTER_SECONDS = 30.0


@dataclass
class Imported:
    """One import the watcher ran: the file, its importer and what it did."""

    path: Path
    source: str
    result: ImportResult
    #: why the import failed (one line, redacted): nothing of the file was taken in; it is tried
    #: again at its next change, or after :data:`RETRY_AFTER_SECONDS`
    error: str | None = None

    def wire(self) -> dict:
        return {"path": str(self.path), "source": self.source, **self.result.wire(),
                **({"error": self.error} if self.error else {})}


def _candidates(roots: Iterable[WatchedRoot]) -> list[tuple[Path, str]]:
    found = []
    for root in roots:
        if root.source is not None:
            module = load_importer(root.source)
            found += [(p, root.source) for p in walk_files([root.path], module.SUFFIXES, module.EXCLUDE_DIRS)]
        else:
            found += [(p, s) for p in walk_files([root.path], (".jsonl", ".json", ".md")) if (s := source_of(p))]
    return found


def import_changed(store: VaultStore, files: Iterable[tuple[Path, str]], options: ImportOptions,
                   states: FileStates) -> list[Imported]:
    """Import each file that changed since ``states`` took it in; what each import did. An import
    that fails (a full disk, the vault busy for too long, a damaged index) stops neither the others
    nor the watcher: it is an :class:`Imported` with ``error``, tried again later (:meth:`FileStates.due`)."""
    done = []
    for path, source in files:
        states.same_vault()
        if not states.changed(path):
            states.failed.pop(str(path), None)
            continue
        stamp = FileStates.stamp(path)  # before reading: a line written meanwhile is taken next time
        try:
            result = run_import(store, with_imported_siblings(store, [path], source), load_importer(source).parse,
                                options, source=source, incremental=True)
        except (MemoError, OSError, sqlite3.Error, MemoryError) as exc:  # one file's failure never ends the watch
            states.failed[str(path)] = (source, time.monotonic())
            done.append(Imported(path, source, ImportResult(), error=_reason(store, exc)
                                 if not isinstance(exc, MemoryError) else "not enough memory to read it"))
            continue
        if result.refused or not os.access(path, os.R_OK):
            # refused (a session file of the vault broken, a held session) or unreadable: not taken in —
            # tried again at its next change or later, once mended (found by a tester: the watcher called
            # it unchanged after the mend, a turn missing until an import; --once exited 0)
            states.failed[str(path)] = (source, time.monotonic())
            reason = result.errors[0] if result.errors else "it cannot be read"
            done.append(Imported(path, source, result, error=reason.split(": ", 1)[-1] if reason.startswith(
                str(path)) else reason))
            continue
        done.append(Imported(path, source, result))
        states.failed.pop(str(path), None)
        states.took(path, stamp)
    if done:
        states.save()
    if states.vault is None:  # the first import made the vault: the one this watch follows on
        states.vault = file_identity(states.root)
    return done


def _reason(store: VaultStore, exc: BaseException) -> str:
    """Why an import failed, on one line, secrets redacted."""
    full = full_disk_error(exc, store.root)
    if full is not None:
        text = str(full)
    elif isinstance(exc, sqlite3.DatabaseError):
        text = str(store.index_error(exc))
    elif isinstance(exc, OSError):
        text = f"cannot use {exc.filename or 'a file'}: {exc.strerror or type(exc).__name__}"
    else:
        text = str(exc)
    return redact_secrets(" ".join(text.split()))[0]


def watch(store: VaultStore, roots: list[WatchedRoot], options: ImportOptions, on_import: Callable[[Imported], None],
          stop: threading.Event, once: bool = False, debounce_ms: int = 500,
          on_warning: Callable[[str], None] | None = None) -> None:
    """Import what changed under ``roots`` since the last run, then (unless ``once``) every
    file that changes, until ``stop`` is set. A folder inside a root that this user cannot
    read stops the system's events for the whole root: ``on_warning`` is told (once per
    reason) and the readable files are looked at every :data:`WAKE_MS` instead (a ``stat``
    each), until the events can be subscribed to again.

    Raises
    ------
    InvalidFieldError
        A root does not exist or is a file no importer reads (``path``; with ``once``, also a file of such a
        name that no importer tells as its transcript), or a root's source is not an importer's.
    """
    for root in roots:
        if root.awaited:
            continue
        if not root.path.exists():
            raise InvalidFieldError("path", f"{root.path} does not exist")
        if root.path.is_file() and not root.path.name.endswith(_watched_suffixes()):
            raise InvalidFieldError("path", f"{root.path} is not a transcript file (memo follows "
                                            f"{', '.join('*' + s for s in _watched_suffixes() if not s.endswith('-wal'))} files, or "
                                            "folders)")
        if root.source is not None and root.source not in IMPORTERS:
            raise InvalidFieldError("source", f"{root.source!r} is not one of {', '.join(IMPORTERS)}")
        if root.path.is_file() and root.source is None and source_of(root.path) is None:
            # a file named that no importer tells was passed over: "nothing changed since the last run"
            why = (f"{root.path}: no importer tells it as a transcript (not a whole JSON document of an agent, or no "
                   "agent's line first); memo import SOURCE FILE reads it as that agent's and says what is wrong")
            if once:
                raise InvalidFieldError("path", why)
            if on_warning is not None:
                on_warning(f"{why}; followed: imported once it reads as one")
    if all(root.awaited for root in roots) and (once or not roots):
        # running, it waits for a known folder to be made (an agent run for the first time), as the README
        # says — it exited at once on a machine where no agent had run yet (found by an operator)
        raise InvalidFieldError("path", "nothing to watch: no known transcript folder on this machine "
                                        f"({', '.join('~/' + f for _, f in KNOWN_LOCATIONS)}); give folders")
    states = FileStates(store.root)
    told = None  # the last reason the events could not be followed, said once
    for item in import_changed(store, _candidates([r for r in roots if r.path.exists()]), options, states):
        on_import(item)
    if once and on_warning is not None:
        # a corrupt transcript of a folder went by without a word: "nothing changed since the last run"
        # on a first run (found by a tester of bad files)
        passed = [path for root in roots if root.source is None and root.path.is_dir()
                  for path in walk_files([root.path], (".jsonl", ".json")) if source_of(path) is None]
        if passed:
            on_warning(f"{len(passed)} file{'s' if len(passed) != 1 else ''} no importer tells as a transcript "
                       f"passed over ({', '.join(str(p) for p in passed[:3])}{', …' if len(passed) > 3 else ''}): "
                       "memo import SOURCE FILE reads one as that agent's and says what is wrong")
    if once or stop.is_set():
        return
    passed_over: set[Path] = set()  # the files no importer tells, said once each
    while not stop.is_set():
        present = [r for r in roots if r.path.exists()]
        if not present:  # every followed folder is gone: wait for one to come back
            stop.wait(WAKE_MS / 1000)
            continue
        try:
            _follow(store, present, roots, options, on_import, stop, states, debounce_ms, on_warning, passed_over)
            told = None
        except (PermissionError, RuntimeError) as exc:
            # a folder inside that this user cannot read: no events for the root at all (it followed
            # nothing more, and said nothing); a file whose name is not UTF-8 (the event library
            # cannot decode it: the watcher died with a traceback at each change of it). What can be
            # read is looked at instead, for a while
            if isinstance(exc, PermissionError):
                reason = f"{exc.filename or exc}: {exc.strerror or 'permission denied'}"
            elif "decode path" in str(exc):
                reason = f"a file name that is not UTF-8 ({str(exc).removeprefix('Unable to decode path ')})"
            else:
                raise
            if on_warning is not None and reason != told:
                on_warning(f"cannot follow changes under {', '.join(str(r.path) for r in present)} ({reason}): "
                           f"looking at the readable files every {WAKE_MS / 1000:g} s instead")
            told = reason
            for _ in range(POLL_ROUNDS):
                for item in import_changed(store, _candidates(present), options, states):
                    on_import(item)
                if stop.wait(WAKE_MS / 1000):
                    break
        except (OSError, InvalidFieldError):  # a followed folder vanished under the subscription
            stop.wait(WAKE_MS / 1000)


def _stat(path: Path):
    try:
        return path.stat()
    except OSError:
        return None


def _follow(store: VaultStore, present: list[WatchedRoot], roots: list[WatchedRoot], options: ImportOptions,
            on_import: Callable[[Imported], None], stop: threading.Event, states: FileStates,
            debounce_ms: int, on_warning: Callable[[str], None] | None = None,
            passed_over: set[Path] | None = None) -> None:
    """One subscription to the file-system events of ``present``; it ends (for the caller to
    subscribe again) when a followed folder or file is no longer the one subscribed to —
    deleted and made again, replaced by a rename — or when one that was missing is back. A
    transcript-named file no importer tells (UTF-16, another format) is said once through
    ``on_warning`` (it went by without a word: found by a tester of bad files)."""
    import watchfiles

    by_root = {root.path.resolve(): root for root in present}
    followed = {root.path for root in present}
    # one missing when ``present`` was taken counts as missing: made since, it is subscribed to at once
    identities = {root.path: file_identity(root.path) if root.path in followed else None for root in roots}
    first = True
    for changes in watchfiles.watch(*[r.path for r in present], stop_event=stop, debounce=debounce_ms,
                                    raise_interrupt=False, yield_on_timeout=True, rust_timeout=WAKE_MS,
                                    watch_filter=lambda change, p, suffixes=_watched_suffixes(): p.endswith(suffixes)
                                    or (change == watchfiles.Change.added and os.path.isdir(p))):
        if first:  # now subscribed: what changed between the last pass and the subscription
            first = False
            for item in import_changed(store, _candidates(present), options, states):
                on_import(item)
        touched = []
        for change, raw in sorted(changes, key=lambda c: c[1]):
            path = Path(raw.removesuffix("-wal"))  # a database's log changed: the database did
            path = opencode.session_of(path) or path  # an OpenCode message or part: its session
            path = claude_code.session_of(path) or path  # a Claude Code sub-agent's file: its session's transcript
            if change == watchfiles.Change.deleted or not (path.is_file() or path.is_dir()):
                continue
            root = next((r for base, r in by_root.items() if path.resolve().is_relative_to(base)), None)
            if path.is_dir():  # a folder moved in whole (mv): one event for it, none for its files (a tester)
                touched += _candidates([WatchedRoot(path, root.source if root is not None else None)])
                continue
            source = root.source if root is not None and root.source else source_of(path)
            if source is not None and source in IMPORTERS:
                module = load_importer(source)
                if path.suffix in module.SUFFIXES and not set(module.EXCLUDE_DIRS) & set(path.parts):
                    touched.append((path, source))
            elif source is None and on_warning is not None and passed_over is not None \
                    and path.suffix in (".jsonl", ".json") and path not in passed_over and path.stat().st_size:
                passed_over.add(path)
                on_warning(f"{path}: no importer tells it as a transcript: passed over (memo import SOURCE FILE "
                           "reads it as that agent's and says what is wrong)")
        named = {path for path, _ in touched}
        touched += [due for due in states.due() if due[0] not in named]  # failed before: tried again
        for item in import_changed(store, touched, options, states):
            on_import(item)
        if stop.is_set() or any(file_identity(root.path) != identities[root.path] for root in roots):
            return  # stopped, or a followed path is another one now: subscribe again


def _terminal_copy(path: Path) -> bool:
    """Whether ``path`` reads as a Claude Code session copied from the terminal (``⏺`` tool
    lines beside ``> `` prompts, in its first 64 KB): a page without times, which no importer reads."""
    if path.suffix.lower() not in (".md", ".txt"):
        return False
    try:
        with open_regular(path) as handle:
            head = handle.read(65536).decode("utf-8", "replace")
    except OSError:
        return False
    return "\u23fa" in head and any(line.startswith("> ") for line in head.splitlines())


def specstory_roots(store: VaultStore, cwd: Path | None = None) -> list[WatchedRoot]:
    """The SpecStory histories (``.specstory/history``: SpecStory keeps them in each repository,
    not in the home) of the repository ``cwd`` lies in, of ``cwd`` and each folder between it and
    that repository's root (``cwd`` alone outside a repository), and of each repository a project of the
    vault was last seen in on this machine (:func:`~.projects.last_seen_root`) — found by a
    newcomer: ``memo import auto`` in a repository holding one left its 275 turns out without a word."""
    from ..index import store as index
    from .projects import last_seen_root
    from .store import repository_root

    repositories: set[Path] = set()
    start = Path(cwd or Path.cwd()).absolute()
    try:
        here = repository_root(start)
    except (OSError, MemoError):
        here = None
    if here is not None:
        repositories.add(Path(here))
    # SpecStory writes its history in the folder opened as the workspace: the folder memo runs in, or
    # one between it and its repository's root, in no repository too (found by a breaker: a subfolder's
    # 149 turns left out without a word)
    for folder in (start, *start.parents):
        repositories.add(folder)
        if here is None or folder == Path(here) or not folder.is_relative_to(Path(here)):
            break
    if store.exists:
        try:
            projects = index.project_names(store.conn)
        except (sqlite3.Error, MemoError):
            projects = []
        for project in projects:
            root = last_seen_root(store, project)
            if root is not None:
                repositories.add(root)
        # the repositories whose history an import auto took in before (found by a breaker: run elsewhere,
        # it read them no more — imports record no repository of a project)
        known = read_json_state(store.layout.meta_dir / SPECSTORY_ROOTS, "roots") or {"roots": {}}
        repositories.update(Path(path) for path in known["roots"] if isinstance(path, str) and path.startswith("/"))
    return [WatchedRoot(repository / ".specstory" / "history", "specstory")
            for repository in sorted(repositories) if (repository / ".specstory" / "history").is_dir()]


#: The repositories whose SpecStory history ``memo import auto`` took in (under the vault's ``.memo``).
SPECSTORY_ROOTS = "specstory-roots.json"


def _remember_specstory_roots(store: VaultStore, roots: list[WatchedRoot]) -> None:
    """Keep the repositories of the SpecStory histories just imported, for the next import auto."""
    found = [str(root.path.parent.parent) for root in roots if root.source == "specstory"]
    if not found:
        return
    path = store.layout.meta_dir / SPECSTORY_ROOTS
    known = read_json_state(path, "roots") or {"roots": {}}
    if all(repository in known["roots"] for repository in found):
        return
    try:
        with store.lock():
            write_json_state(path, {"roots": {**known["roots"], **dict.fromkeys(found, True)}})
    except (OSError, MemoError):
        pass  # a list of places to look: the next import in that repository finds it again


def import_auto(store: VaultStore, options: ImportOptions, home: Path | None = None,
                paths: list[Path] | None = None, cwd: Path | None = None) -> list[dict]:
    """``memo import auto``: every :data:`KNOWN_LOCATIONS` folder on this machine and every
    SpecStory history of this repository and of the repositories memo knows
    (:func:`specstory_roots`) imported by its importer — or, given ``paths`` (folders or files), each file by the importer that reads it
    (:func:`source_of`, as ``memo watch`` tells them) — each folder and importer with its own
    counts: ``[{source, path, files, sessions, turns, skipped, …, summary}]`` (``summary``: the line
    ``memo import SOURCE`` prints of them, its notes included); the first item of a given folder
    also counts its files no importer tells (``untold``, the first five in ``untoldFiles``), and its
    Claude Code item the sub-agent files it reads with their session, for their calls' tokens only
    (``subAgentFiles``: ``<session>/subagents/``, a sub-agent's brief and tool traffic, no turn).

    Raises
    ------
    InvalidFieldError
        None of the known folders exists; a given path does not exist, or holds no transcript
        any importer reads (``path``: told of every path before any is imported).
    """
    if paths:
        # every path told first: one that holds no transcript is refused before any is imported (the
        # others were imported, their counts never said — found by an analyst and a tester)
        told = []
        for given in paths:
            if not given.exists():
                raise InvalidFieldError("path", f"{given} does not exist")
            by_source: dict[str, list[Path]] = {}
            untold: list[Path] = []
            unreadable: list[str] = []  # "path: reason" of a file that cannot be opened (no importer could tell it)
            sub_agents = 0
            left_out: list[str] = []  # a FIFO, a link to nothing or in a loop: named as `memo import SOURCE` names them
            for file in ([given] if given.is_file() else walk_files([given], (".jsonl", ".json", ".md", ".vscdb", ".db"),
                                                                    left_out=left_out)):
                if (source := source_of(file)) is not None and source in IMPORTERS:
                    by_source.setdefault(source, []).append(file)
                elif file.suffix == ".jsonl" and file.parent.name == "subagents":
                    sub_agents += 1  # a Claude Code sub-agent's brief and tool traffic: no turn of the person's
                elif (reason := _cannot_read(file)) is not None:
                    # named with why (found by a tester: "no importer tells" of a file of no read permission)
                    unreadable.append(f"{file}: {reason}")
                else:
                    untold.append(file)
            unreadable.extend(left_out)
            if not by_source and unreadable:
                more = f" and {len(unreadable) - 1} more" if len(unreadable) > 1 else ""
                raise InvalidFieldError("path", f"{given}: {unreadable[0]}{more}; nothing imported")
            if not by_source:
                copy = next((f for f in untold[:200] if _terminal_copy(f)), None)
                if copy is not None:  # the importer hint would send the person to a refusal
                    raise InvalidFieldError("path", f"{given} holds no transcript memo can tell: {copy} is a Claude "
                                                    "Code session copied from the terminal, which holds no times "
                                                    "(no importer reads it): import the session's own .jsonl "
                                                    "(~/.claude/projects), or memo prompt record --body-file FILE; "
                                                    "nothing imported")
                raise InvalidFieldError("path", f"{given} holds no transcript memo can tell (give its importer: "
                                                f"memo import SOURCE {given}, SOURCE one of {', '.join(IMPORTERS)}); "
                                                "nothing imported")
            told.append((given, by_source, untold, sub_agents, unreadable))
        found = []
        for given, by_source, untold, sub_agents, unreadable in told:
            for number, (source, files) in enumerate(sorted(by_source.items())):
                result = run_import(store, files, load_importer(source).parse, options, source=source,
                                    incremental=True)
                # files of the folder no importer tells are said once, with the folder's first importer
                said = {"untold": len(untold), "untoldFiles": [str(f) for f in untold[:5]]} if untold and not number \
                    else {}
                if sub_agents and source == "claude-code":
                    said["subAgentFiles"] = sub_agents
                item = {"source": source, "path": str(given), **result.wire(), "summary": result.line(), **said}
                # said once, with the folder's first importer, as skipped files
                found.append(_with_left_out(item, unreadable if not number else []))
        return found
    roots = known_roots(home) + specstory_roots(store, cwd)
    if not roots:
        raise InvalidFieldError("path", "no known transcript folder on this machine (looked in "
                                        f"{', '.join('~/' + f for _, f in KNOWN_LOCATIONS)}, and for .specstory/history "
                                        "in this repository and those memo knows)")
    found = []
    for root in roots:
        module = load_importer(root.source or "")
        left_out = []
        files = list(walk_files([root.path], module.SUFFIXES, module.EXCLUDE_DIRS, left_out))
        result = run_import(store, files, module.parse, options, source=root.source or "", incremental=True)
        found.append(_with_left_out({"source": root.source, "path": str(root.path), **result.wire(),
                                     "summary": result.line()}, left_out))
    _remember_specstory_roots(store, roots)
    return found


def _with_left_out(item: dict[str, Any], left_out: list[str]) -> dict[str, Any]:
    """An ``import auto`` item with the files of its folder left out unread (``path: why``) named
    first among its errors and counted skipped."""
    if left_out:
        item.update(errors=[*left_out, *item["errors"]], skipped=item["skipped"] + len(left_out))
    return item
