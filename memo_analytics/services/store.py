"""The vault as a service context: settings, layout, lock and index connection.

Every mutation goes through :meth:`VaultStore.upsert` under the re-entrant vault lock:
the Markdown file is written atomically first (the source of truth), then the index row
and its ``records_fts`` row are updated in one transaction (SPEC §2.4), together with the
stamp of the record folder (:mod:`memo_analytics.index.folders`).

The index is checked on open (:mod:`memo_analytics.index.freshness`): a missing, empty,
stale or other-schema index is brought in line with the files before anything reads it —
changed folders file by file, otherwise a rebuild — and :attr:`VaultStore.on_repair` is
told in one line. A read-only index is refused (``index is read-only: <path>``) and never
moved or rebuilt.
"""

from __future__ import annotations

import errno
import json
import os
import re
import sqlite3
import threading
import time
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from filelock import Timeout

from ..config import Settings
from ..domain.clock import resolve_zone
from ..domain.errors import (
    AmbiguousIdError,
    CorruptRecordError,
    DiskFullError,
    IndexDamagedError,
    IndexReadOnlyError,
    InvalidFieldError,
    MemoError,
    VaultBusyError,
    disk_full,
)
from ..domain.ids import project_slug, prompt_id, session_record_id, validate_slug
from ..domain.records import RecordKind, normalize_meta, subdir_for_kind
from ..index import freshness
from ..index import store as index
from ..index.folders import folder_key, folder_stamp
from ..index.reindex import parse_for_index, rebuild
from ..vault import views
from ..vault.io import (
    atomic_write_bytes,
    check_metadata_size,
    dump_record,
    dump_records,
    file_identity,
    group_commit,
    read_placed_record,
    remove_quietly,
    write_record,
    write_temporary,
)
from ..domain.shell import shell_word
from ..domain.wire import counted
from ..vault.layout import VaultLayout
from ..vault.lock import vault_lock
from ..vault.redact import IgnoreRules


def repository_root(cwd: str | Path | None) -> Path | None:
    """The git work tree that contains ``cwd`` (the product root), or None.

    Raises
    ------
    InvalidFieldError
        ``cwd`` is given but is not an existing folder (a typo would silently file the
        work elsewhere).
    """
    if not cwd:
        return None
    path = Path(cwd)
    if not path.is_dir():
        raise InvalidFieldError("cwd", f"{cwd} is not an existing folder")
    path = path.resolve()  # ``repo/sub/..`` or a link to the repository: the repository itself
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


#: ``git_identity`` answers of this process, by repository and the environment git reads its
#: global config from (an import starts hundreds of sessions; ``git config`` is run once each).
_IDENTITIES: dict[tuple[str | None, ...], str | None] = {}


#: Set while a daemon serves a call from another machine: whose work it is, the caller says.
_REMOTE_CALLER: ContextVar[bool] = ContextVar("memo_remote_caller", default=False)


@contextmanager
def remote_caller(remote: bool = True) -> Iterator[None]:
    """Inside (when ``remote``): the call came from another machine (the HTTP API's actions and
    hook events and the MCP endpoint, each bound off loopback). :func:`git_identity` answers None
    there — this machine's git identity is the daemon's, not the caller's, and a team vault would
    bill every caller's sessions that sent no ``owner`` as one person's."""
    if not remote:
        yield
        return
    token = _REMOTE_CALLER.set(True)
    try:
        yield
    finally:
        _REMOTE_CALLER.reset(token)


def from_another_machine() -> bool:
    """Whether the call being served came from another machine (inside :func:`remote_caller`)."""
    return _REMOTE_CALLER.get()


def git_identity(root: Path | None) -> str | None:
    """Who works in the repository at ``root``, as git knows them: ``user.email``, else
    ``user.name`` (repository, then global config); outside a repository (``root`` None) the
    person's global git identity; None without one or without git, and None for a call from
    another machine (:func:`remote_caller`). Asked of git once per process for each repository
    and global config."""
    if _REMOTE_CALLER.get():
        return None
    key = (str(root) if root is not None else None, *_config_stamps(root))
    if key not in _IDENTITIES:
        _IDENTITIES[key] = _ask_git_identity(root)
    return _IDENTITIES[key]


def _config_stamps(root: Path | None) -> tuple[str | None, ...]:
    """What git reads an identity from, as it is now: the global config files (and the
    variables naming them) and the repository's own config, with their modification times — a
    changed config is asked again."""
    home = os.environ.get("HOME")
    files = [os.environ.get("GIT_CONFIG_GLOBAL") or (f"{home}/.gitconfig" if home else None),
             f"{os.environ.get('XDG_CONFIG_HOME') or f'{home}/.config'}/git/config"]
    if root is not None:
        try:
            files.append(str(_git_dirs(root)[1] / "config"))
        except OSError:
            pass
    stamps: list[str | None] = []
    for name in files:
        try:
            stamps.append(f"{name}@{os.stat(name).st_mtime_ns}" if name else None)
        except OSError:
            stamps.append(f"{name}@-")
    return tuple(stamps)


def _ask_git_identity(root: Path | None) -> str | None:
    import subprocess

    where = ["-C", str(root)] if root is not None else []
    for key in ("user.email", "user.name"):
        try:
            proc = subprocess.run(["git", *where, "config", *([] if where else ["--global"]), "--get", key],
                                  capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return None
        value = proc.stdout.strip()
        if proc.returncode == 0 and value:
            return value
    return None


def _git_dirs(root: Path) -> tuple[Path, Path]:
    """``(git dir, common dir)`` of the work tree at ``root``: both ``root/.git`` for a plain
    checkout; for a linked worktree (``git worktree add``, whose ``.git`` is a file naming its
    git dir) that git dir and the repository's own, which holds the branches and the config.

    Raises
    ------
    OSError
        The ``.git`` file cannot be read.
    """
    git = root / ".git"
    if not git.is_file():
        return git, git
    named = git.read_text(encoding="utf-8", errors="replace")[:4096].strip().removeprefix("gitdir:").strip()
    own = (root / named).resolve()  # an absolute path stays as it is
    try:
        common = (own / (own / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except OSError:  # a submodule: its git dir is the whole of it
        common = own
    return own, common


def git_head(root: Path | None) -> tuple[str | None, str | None]:
    """``(branch, commit sha)`` of the repository at ``root``, read from its ``.git`` files
    (no git process; a linked worktree's branch is read where git keeps it, in the repository's
    own git dir); ``(None, sha)`` on a detached HEAD, ``(None, None)`` when unknown."""
    if root is None:
        return None, None
    try:
        git, common = _git_dirs(root)
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None, None
    if not head.startswith("ref:"):
        return None, head if re.fullmatch(r"[0-9a-f]{40,64}", head) else None
    ref = head.removeprefix("ref:").strip()
    branch = ref.removeprefix("refs/heads/")
    sha = None
    for folder in dict.fromkeys((git, common)):
        try:
            sha = (folder / ref).read_text(encoding="utf-8").strip()
            break
        except OSError:
            packed = folder / "packed-refs"
            if packed.is_file():
                for line in packed.read_text(encoding="utf-8").splitlines():
                    if line.endswith(" " + ref):
                        sha = line.split(" ", 1)[0]
                if sha is not None:
                    break
    if sha is not None and not re.fullmatch(r"[0-9a-f]{40,64}", sha):
        sha = None
    return branch, sha


def projects_read(project: str | None, cross_project: bool, cwd: str | Path | None,
                  default: str | None = None) -> list[str] | None:
    """The projects a read covers (None = every project): an explicit ``project`` → that one
    (with ``cross_project``, in every vault read: ``?crossProject=true&project=web`` answered every
    project's total without a word, found by an analyst); else ``cross_project`` → every project;
    else the repository of ``cwd``; else ``default`` (a configured ``MEMO_PROJECT``); else every
    project (a reader outside any repository sees the whole vault).

    Raises
    ------
    InvalidFieldError
        ``project`` or ``default`` is not a safe slug.
    """
    if project not in (None, ""):
        return [validate_slug(project, "project")]
    if cross_project:
        return None
    from_cwd = project_from_cwd(cwd)
    if from_cwd:
        return [from_cwd]
    return [validate_slug(default, "project")] if default else None


def project_from_cwd(cwd: str | Path | None) -> str | None:
    """The project of ``cwd``: the slug of the folder of the git repository that contains it
    (its real path: a link to a repository is that repository), or None outside any. A linked
    worktree (``git worktree add``, an agent's parallel checkout) is its repository's project:
    the name of the folder that holds the repository's ``.git`` (a bare ``app.git``: ``app``)."""
    root = repository_root(cwd)
    if root is None:
        return None
    try:
        own, common = _git_dirs(root)
    except OSError:
        return project_slug(root.name)
    if own == common or common.parent.name == "modules":  # a checkout, a submodule, a separate git dir
        return project_slug(root.name)
    if common.name == ".git":
        return project_slug(common.parent.name)
    return project_slug(common.name.removesuffix(".git") or root.name)  # a worktree of a bare repository


def _as_the_shell_names_it(folder: str) -> str:
    """``folder`` as the shell that ran memo names it (``$PWD``, when it is that very folder): the
    process's own working folder has its links resolved, and a folder reached through a link was
    filed under the link target's name by memo and under the link's by the agent's hook (found by a
    breaker: two projects of one folder)."""
    shown = os.environ.get("PWD")
    if not shown or not os.path.isabs(shown) or os.path.normpath(shown) == os.path.normpath(folder):
        return folder
    try:
        return shown if os.path.samefile(shown, folder) else folder
    except OSError:
        return folder


def shell_cwd() -> str:
    """The process's working folder as the shell that ran it names it (``$PWD``, when it is that
    very folder): the ``cwd`` of what memo and the MCP tool over stdio record where no caller gave
    one. A ``cwd`` a caller gives is taken as given (an MCP call's own ``cwd`` was swapped for the
    server's ``$PWD`` and filed apart from the hook's turn of the same folder — found by a breaker)."""
    return _as_the_shell_names_it(os.getcwd())


def project_of_folder(path: object) -> str | None:
    """The project a working folder the transcript names stands for, or None: where the folder
    is on this machine inside a git repository, that repository's project as a hook names it
    (:func:`project_from_cwd` — a subfolder, a link to the
    repository or a linked worktree of it is the repository), else the folder's last name
    (POSIX or Windows paths), as it was where the agent ran."""
    from pathlib import PurePosixPath, PureWindowsPath

    if not isinstance(path, str) or not path.strip():
        return None
    pure = PureWindowsPath(path) if "\\" in path and "/" not in path else PurePosixPath(path)
    if isinstance(pure, PurePosixPath) and pure.is_absolute() and "\x00" not in path:
        try:
            found = project_from_cwd(path) if os.path.isdir(path) else None
        except (OSError, ValueError, MemoError):
            found = None
        if found:
            return found
    return pure.name or None


def _turn_id(session_id: str, turn: int) -> str:
    return prompt_id(session_id, turn, None)  # type: ignore[arg-type]  # no clock needed with a turn


#: A batch with worker processes sends them its records to render this many at a time.
RENDER_CHUNK = 48

#: A batch commits its group after this long holding the vault lock (or at its record limit),
#: then leaves the lock free for :data:`GROUP_PAUSE_SECONDS`: a hook, a search or another
#: writer waiting for the lock gets in within a few seconds of a long import, never times out.
GROUP_SECONDS = 2.0
GROUP_PAUSE_SECONDS = 0.03
#: How often a writer waiting for the vault lock tries again (filelock polls ``flock``): three
#: tries fall within a batch's pause.
LOCK_POLL_SECONDS = 0.01


def _copy_meta(value: Any) -> Any:
    """A copy of a record's frontmatter (dicts, lists and scalars) a caller may change freely."""
    if isinstance(value, dict):
        return {key: _copy_meta(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_meta(item) for item in value]
    return value


@dataclass
class _Batch:
    """The writes of one :meth:`VaultStore.batch` not yet committed."""

    thread: int
    limit: int
    locks: ExitStack
    #: target path → (meta, body): indexed, its file written at the group's commit
    pending: dict[Path, tuple[dict[str, Any], str]] = field(default_factory=dict)
    #: record files read in this batch (None: no such file), parsed once
    cache: dict[Path, tuple[dict[str, Any], str] | None] = field(default_factory=dict)
    #: record folders written (their stamps are set at the commit) and folders caught up
    keys: set[str] = field(default_factory=set)
    checked: set[str] = field(default_factory=set)
    #: "write" events, told after the commit
    events: list[tuple[dict[str, Any], Path]] = field(default_factory=list)
    #: when the vault lock was taken for this group (monotonic seconds)
    since: float = field(default_factory=time.monotonic)
    #: what failed while a record's index rows were being written: the batch can only be
    #: given up (its rows are not undone one by one), so every later write and the commit raise it
    broken: BaseException | None = None
    #: the last ``"session_end"`` a write of the batch emitted: told once, after the last commit
    session_end: dict[str, Any] | None = None
    #: worker processes that render the records' text while the batch goes on (None: rendered
    #: at the commit, here); the records not yet sent, and each sent one's ``(future, place)``
    renderer: Any = None
    unsent: list[Path] = field(default_factory=list)
    rendering: dict[Path, tuple[Any, int]] = field(default_factory=dict)


#: How often a long-running process checks its open index against the files (s; :meth:`VaultStore.recheck`).
RECHECK_SECONDS = 2.0


class VaultStore:
    """One open vault.

    Parameters
    ----------
    settings : Settings
        ``settings.vault_root`` is created on first write if missing.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.layout = VaultLayout(settings.vault_root)
        if self.layout.root.exists() and not self.layout.root.is_dir():
            raise InvalidFieldError("vaultRoot", f"{self.layout.root} is not a folder")
        self._conn: sqlite3.Connection | None = None
        self._conn_guard = threading.RLock()  # re-entrant: a check inside it may drop the connection
        #: when (``time.monotonic``) the open index was last checked against the files, and the
        #: identity (device, inode) of its file then (:meth:`recheck`)
        self._checked = 0.0
        self._identity: tuple[int, int] | None = None
        self._may_create = False
        self._deferred: set[tuple[str, str]] | None = None
        self._skips_said: set[str] = set()  # files a note of this store said skipped (said once per run)
        self._batch: _Batch | None = None
        self.zone = resolve_zone(settings.timezone)
        #: ``{client name lowercased: the spelling the vault's sessions use}`` as
        #: :func:`~.prompts.canonical_client` found it (so a long import asks the index once per client)
        self.client_spellings: dict[str, str] = {}
        #: the error every write raises while the index is read as it is (:meth:`_as_it_is`), else None
        self.writes_refused: Exception | None = None
        #: Called with one line whenever the index was brought in line with the files on
        #: open (the CLI prints it as a note on stderr); the lines are kept in ``repairs``.
        self.on_repair: Callable[[str], None] | None = None
        self.repairs: list[str] = []
        #: Who hears of what this store does (``memo_analytics.runtime`` wires them from the
        #: settings): ``"write"`` after a record is written and indexed (``meta=``, ``path=``,
        #: still under the vault lock; ``caught_up=True`` when the index took in a file written
        #: behind its back, see :meth:`hear_rebuilt`), ``"session_end"`` after a session ended (``session=``).
        #: Each is called as ``listener(store, **payload)``.
        self.listeners: dict[str, list[Callable[..., None]]] = {"write": [], "session_end": []}
        #: How long :meth:`lock` waits for another process (seconds; None: the lock's default,
        #: 60 s). A hook sets a short one and spools its event rather than make the agent wait.
        self.lock_timeout: float | None = None
        #: How long a hybrid push or pull of this store waits for the daemon (seconds; None: the
        #: sync's own, 30 s). A hook sets a short one: the agent's hook has a time limit of its own.
        self.sync_timeout: float | None = None

    def subscribe(self, event: str, listener: Callable[..., None]) -> None:
        """Call ``listener(store, **payload)`` on every ``event`` (``"write"``, ``"session_end"``).

        Raises
        ------
        ValueError
            An event this store does not emit.
        """
        if event not in self.listeners:
            raise ValueError(f"no such store event: {event!r}")
        self.listeners[event].append(listener)

    def set_listeners(self, listeners: dict[str, list[Callable[..., None]]]) -> None:
        """Replace the listeners of every event at once (events not named get none): a write
        racing the change is heard by the old listeners or the new, never by neither."""
        for event, current in self.listeners.items():
            current[:] = list(listeners.get(event, ()))

    def emit(self, event: str, **payload: object) -> None:
        """Tell the listeners of ``event`` (see :attr:`listeners`). A ``"session_end"`` inside a
        :meth:`batch` is told once, after the batch's last commit, with the last session ended: the
        sync it triggers (a push, a vault-git commit) then sees every file of the batch in place,
        and runs once rather than once per imported session."""
        batch = self._own_batch()
        if event == "session_end" and batch is not None:
            batch.session_end = dict(payload)
            return
        for listener in list(self.listeners[event]):
            listener(self, **payload)

    def sibling(self) -> "VaultStore":
        """A new store on the same vault, settings and listeners (SQLite connections and
        the re-entrant vault lock are per thread: each thread opens its own)."""
        twin = VaultStore(self.settings)
        twin.listeners = self.listeners
        return twin

    def reconfigure(self, settings: Settings) -> None:
        """Take changed settings of the same vault (a long-running process re-read its
        config file): the zone follows; listeners are the runtime's to rewire.

        Raises
        ------
        ValueError
            ``settings`` name another vault.
        """
        if settings.vault_root != self.settings.vault_root:
            raise ValueError("reconfigure keeps the vault; open a new store for another")
        self.zone = resolve_zone(settings.timezone)
        self.settings = settings

    @property
    def root(self) -> Path:
        return self.layout.root

    @property
    def conn(self) -> sqlite3.Connection:
        """The index connection, opened on first use and checked against the files.

        A read (outside the vault lock) on a folder that holds no vault yet gets an empty
        in-memory index: nothing is created there. Otherwise the index is opened (created
        when missing) and :func:`memo_analytics.index.freshness.check` compares it with the
        record folders (one ``stat`` per project and kind); a missing, empty, stale or
        other-schema index is repaired under the vault lock before it is returned —
        changed folders file by file, else a full rebuild — and :attr:`on_repair` is told.

        Raises
        ------
        IndexDamagedError
            The index file is not a SQLite database (``memo reindex`` sets it aside).
        IndexReadOnlyError
            The index, its WAL files or the ``.memo`` folder cannot be written.
        VaultBusyError
            A repair was needed and another process held the vault lock too long.
        """
        conn = self._conn
        if conn is not None:
            return conn
        with self._conn_guard:
            if self._conn is not None:
                return self._conn
            path = self.layout.index_path
            if not path.exists() and not self._may_create and not self.exists:
                # a read on a vault that does not exist yet: answer from an empty index
                # and create nothing (a mistyped path must not sprout folders)
                return index.connect_empty()
            existed = path.exists()
            try:
                raw = self._open_index()
                stale = self._check(raw)
            except (DiskFullError, IndexReadOnlyError) as exc:  # reads go on from the index as it is
                self._conn = self._as_it_is(exc)
                return self._conn
            self._checked, self._identity = time.monotonic(), file_identity(path)
            if stale is not None and not existed:
                stale = freshness.missing()
            if stale is None:
                self._conn = raw
                return raw
        # the vault lock is always taken before the connection guard, never inside it
        # (an index behind its files that cannot be caught up is refused: read as it is, it billed a
        # session deleted since, and listed none of those added)
        with self.lock():
            with self._conn_guard:
                if self._conn is not None:  # another thread repaired it meanwhile
                    raw.close()
                    return self._conn
            again = self._check(raw)
            stale = again if again is None or not stale.full else stale  # keep "there was none"
            told = self._repair_and_tell(raw, stale) if stale is not None else None
            with self._conn_guard:
                self._conn = raw
            if told is not None:
                told()
        return raw

    def _as_it_is(self, refused: Exception) -> sqlite3.Connection:
        """A read-only connection to the index as it is on disk, for reads while it cannot be
        written (a full disk, a read-only mount): every read had failed with the write's error —
        the digest and the dashboard too, when the operator most needed them — when it holds what
        the files hold (one behind them is refused: it billed a session deleted since). Kept in
        ``repairs``; ``writes_refused`` holds the error writes raise meanwhile. ``refused`` itself
        when the index cannot be read either (none yet, damaged) or is behind its files.

        Raises
        ------
        DiskFullError, IndexReadOnlyError
            ``refused``, when no read-only connection opens."""
        conn = index.connect_as_it_is(self.layout.index_path)
        if conn is not None and self._check(conn) is None:  # only an index that holds what the files hold
            self.writes_refused = refused
            why = "the disk is full" if isinstance(refused, DiskFullError) else "the index cannot be written"
            # kept (``repairs``), not said on each read: a refused write says the error alone (one line)
            self.repairs.append(f"{why}: reads answer from the index, which holds what the files hold; writes are "
                                "refused until it can be written again")
            return conn
        if conn is not None:
            conn.close()
        raise refused

    def _repair_and_tell(self, conn: sqlite3.Connection, stale: freshness.Staleness) -> Callable[[], None]:
        """:meth:`_repair` ``conn`` (under the vault lock); what tells of it — the listeners of
        what was taken in (or of a rebuild) and the views of the projects touched — to be called
        once ``conn`` is this store's connection."""
        projects, done = self._repair(conn, stale)

        def tell() -> None:
            if done is not None:
                self._taken_in(done, stale.folders)
            else:
                self.hear_rebuilt()
            for project in sorted(projects):
                self._views_changed(project, None)

        return tell

    def recheck(self, every: float = RECHECK_SECONDS) -> None:
        """For a long-running process (a server answers each request with its store): the open
        index is checked against the files again when it was last checked ``every`` seconds ago
        or more, as on open — record folders changed behind its back (another machine's sync, a
        project folder removed by hand, a vault-git pull) are taken in, under the vault lock — and
        an index file removed or replaced meanwhile is opened again (rebuilt from the files when
        gone). Nothing happens inside a transaction or a batch of this store.

        Raises
        ------
        IndexDamagedError, IndexReadOnlyError, VaultBusyError, DiskFullError
            As :attr:`conn`.
        """
        conn = self._conn
        now = time.monotonic()
        if conn is not None and self.writes_refused is not None and not conn.in_transaction:
            # read as it was while it could not be written: each request tries the index again (space freed)
            with self._conn_guard:
                self._conn, self.writes_refused = None, None
            conn.close()
            return
        if conn is None or now - self._checked < every or self._own_batch() is not None or conn.in_transaction:
            return
        self._checked = now
        if file_identity(self.layout.index_path) != self._identity:  # removed, or replaced by another file
            self.close()  # the next use opens the file there now, checked (or rebuilt from the files)
            return
        if self._check(conn) is None:
            return
        with self.lock():
            stale = self._check(conn)
            if stale is not None:
                self._repair_and_tell(conn, stale)()

    def open_for_rebuild(self) -> sqlite3.Connection:
        """The index connection without the check against the files (``memo reindex``
        rebuilds it anyway); it becomes :attr:`conn`.

        Raises
        ------
        IndexDamagedError, IndexReadOnlyError
            As :attr:`conn`.
        """
        with self._conn_guard:
            if self._conn is None:
                self._conn = self._open_index()
            return self._conn

    def index_read_only(self) -> bool:
        """Whether the index cannot be written: the index file, its ``-wal``/``-shm``
        files or the ``.memo`` folder (or, before it exists, the vault folder) is not
        writable by this process (a read-only file, folder or file system)."""
        path = self.layout.index_path

        def writable(target: Path, mode: int = os.W_OK) -> bool:
            if os.access in os.supports_effective_ids:
                return os.access(target, mode, effective_ids=True)
            return os.access(target, mode)

        folder = path.parent
        if not folder.exists():
            parent = next((p for p in folder.parents if p.exists()), None)
            return parent is not None and not writable(parent, os.W_OK | os.X_OK)
        if not writable(folder, os.W_OK | os.X_OK):
            return True
        return any(p.exists() and not writable(p, os.R_OK | os.W_OK)
                   for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")))

    def _open_index(self) -> sqlite3.Connection:
        path = self.layout.index_path
        if self.index_read_only():
            raise IndexReadOnlyError(str(path))
        try:
            return index.connect(path)
        except sqlite3.DatabaseError as exc:
            raise self.index_error(exc) from None

    def index_error(self, exc: sqlite3.DatabaseError) -> Exception:
        """The product error a SQLite error of the index stands for: :class:`DiskFullError`,
        :class:`IndexReadOnlyError`, :class:`IndexDamagedError` (not a database, malformed), else
        ``exc`` itself."""
        path = self.layout.index_path
        text = str(exc).lower()
        if disk_full(exc, path.parent):
            return DiskFullError(str(self.root))
        if "readonly" in text or "read-only" in text or self.index_read_only():
            return IndexReadOnlyError(str(path))
        if not isinstance(exc, sqlite3.OperationalError) or "malformed" in text or "not a database" in text:
            return IndexDamagedError(str(path), str(exc))
        return exc

    def _check(self, conn: sqlite3.Connection) -> freshness.Staleness | None:
        try:
            return freshness.check(conn, self.layout)
        except sqlite3.DatabaseError as exc:
            self._drop(conn)
            raise self.index_error(exc) from None

    def _drop(self, conn: sqlite3.Connection) -> None:
        """Close ``conn`` after an error of the database, and forget it when it is this store's
        connection: the next use opens the index again (a server kept the closed one — "Cannot
        operate on a closed database" on every request, until restarted, after a full disk; found
        by an attacker on loopback)."""
        with self._conn_guard:
            if self._conn is conn:
                self._conn, self.writes_refused = None, None
        conn.close()

    def _repair(self, conn: sqlite3.Connection,
                stale: freshness.Staleness) -> tuple[set[str], freshness.ReconcileResult | None]:
        """Bring the index in line with the files (under the vault lock): the projects touched,
        and what the folders' :func:`~memo_analytics.index.freshness.reconcile` did (None after
        a full rebuild)."""
        path = self.layout.index_path
        try:
            done = None if stale.full else freshness.reconcile(conn, self.layout, stale.folders)
            if done is not None:
                self._skip_said_ones(done)
                if done.projects or done.skipped:  # a folder that only gained a conflict copy or a temp file: quiet
                    self._note(f"the index caught up with {stale.reason}: {done.line()}")
                return done.projects, done
            files = len(self.layout.record_files())
            self._note(f"rebuilding the index {path} from the {counted(files, 'record file')}, because {stale.reason}")
            result = rebuild(conn, self.layout, redact=True)
        except sqlite3.DatabaseError as exc:
            self._drop(conn)
            raise self.index_error(exc) from None
        if result.skipped:  # named, as a catch-up names them (and not said again by this run)
            named = "; ".join(f"{error.path}: {error.reason}" for error in result.skipped[:3])
            more = f"; and {len(result.skipped) - 3} more" if len(result.skipped) > 3 else ""
            self._note(f"{counted(len(result.skipped), 'record file')} could not be indexed ({named}{more}); "
                       "`memo reindex` lists them")
            self._skips_said.update(str(error.path) for error in result.skipped)
        for temporary in self.layout.temp_files():  # a writer killed before the index had a row: its leftovers
            remove_quietly(temporary)
        return set(index.project_names(conn)), None

    def _note(self, line: str) -> None:
        self.repairs.append(line)
        if self.on_repair is not None:
            self.on_repair(line)

    @property
    def exists(self) -> bool:
        """Whether the vault folder already holds a vault (records or an index)."""
        return self.layout.projects_dir.is_dir() or self.layout.meta_dir.is_dir()

    def close(self) -> None:
        with self._conn_guard:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the re-entrant vault lock (every write does; SPEC §2.4).

        Raises
        ------
        VaultBusyError
            Another process held the lock for longer than the timeout.
        IndexReadOnlyError
            The lock file cannot be created because ``.memo`` is read-only.
        """
        if self._own_batch() is not None:
            yield  # a batch of this thread holds it from one group commit to the next
            return
        with self._vault_lock():
            yield

    def _make_root(self) -> None:
        """Create a missing vault folder for this user alone (``0700``, as ``~/.ssh``): what
        people asked their agents, and what the agents answered, is nobody else's to read on a
        shared machine, whatever the umask gives the files inside (the folders above it are made
        as usual)."""
        root = self.layout.root
        if root.is_dir():
            return
        root.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(root, 0o700)
        except FileExistsError:
            pass  # made meanwhile by another process; a file there is refused where it is used

    @contextmanager
    def _vault_lock(self) -> Iterator[None]:
        if self.writes_refused is not None:  # the index is read as it is: no write (said as the open said it)
            raise self.writes_refused
        self._may_create = True
        self._make_root()
        try:
            lock = vault_lock(self.layout.lock_path)
            lock.acquire(timeout=self.lock_timeout, poll_interval=LOCK_POLL_SECONDS)
        except Timeout:
            raise VaultBusyError(str(self.root), self.lock_timeout or lock.timeout) from None
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and self.index_read_only():
                raise IndexReadOnlyError(str(self.layout.index_path)) from None
            raise
        try:
            yield
        finally:
            lock.release()

    def resolve_project(self, project: str | None, cwd: str | Path | None = None) -> str:
        """The project id a record is filed under: explicit ``project``, else the repository
        folder name of ``cwd``, else — a folder of no repository, when the config sets no
        ``defaultProject`` — that folder's name, as a hook and an import file the agent's work
        there (the CLI and the MCP tool filed it under ``default``: one prompt became two turns, a
        hand-off left there never reached the folder's next session — found by an integrator),
        else ``settings.default_project``; validated as a safe slug.
        """
        if project not in (None, ""):
            return validate_slug(project, "project")
        found = project_from_cwd(cwd)
        if found:
            return found
        if cwd is not None and "default_project" not in self.settings.model_fields_set and os.path.isdir(cwd):
            name = project_of_folder(os.path.normpath(str(cwd)))
            if name:
                return project_slug(name)
        return validate_slug(self.settings.default_project, "project")

    def scope(self, project: str | None, cross_project: bool, cwd: str | Path | None = None) -> list[str] | None:
        """Projects a read covers (None = every project).

        ``cross_project`` → every project; an explicit ``project`` → that one; else the
        repository of ``cwd`` or a configured ``MEMO_PROJECT``; else every project (a reader
        outside any repository sees the whole vault).
        """
        default = self.settings.default_project if "default_project" in self.settings.model_fields_set else None
        return projects_read(project, cross_project, cwd, default)

    def locate(self, record_id: str, kind: RecordKind | str | None = None, project: str | None = None,
               cwd: str | Path | None = None) -> sqlite3.Row | None:
        """The index row of ``record_id`` (of ``kind`` when given), or None (SPEC §2.1: a
        record's key is ``(project, id)``).

        With ``project``, that project's record only. Without, the one project that holds the
        id; when several do, the project of ``cwd`` (or a configured ``MEMO_PROJECT``) if it
        is one of them.

        Raises
        ------
        AmbiguousIdError
            Several projects hold the id and neither ``project`` nor ``cwd`` chooses one; the
            message lists them.
        InvalidFieldError
            ``project`` is not a safe slug.
        """
        kind = RecordKind(kind).value if kind else None
        if project not in (None, ""):
            return index.get_row(self.conn, validate_slug(project, "project"), record_id, kind)
        rows = index.rows_with_id(self.conn, record_id, kind)
        projects = sorted({r["project"] for r in rows})
        if len(projects) <= 1:
            return rows[0] if rows else None
        preferred = self.scope(None, False, cwd) or []
        chosen = [r for r in rows if r["project"] in preferred]
        if len({r["project"] for r in chosen}) == 1:
            return chosen[0]
        raise AmbiguousIdError(record_id, projects)

    def locate_session(self, session_id: str, project: str | None = None,
                       cwd: str | Path | None = None) -> tuple[sqlite3.Row | None, str | None]:
        """Where session ``session_id`` lives: ``(its session record's row or None, its
        project or None)``. The record decides (:meth:`locate`); a session known only by its
        turns lives in the one project that holds them (the project of ``cwd`` when several
        do); ``(None, project)`` for an explicit ``project`` without the record.

        Raises
        ------
        AmbiguousIdError
            Several projects hold the session (or its turns) and neither ``project`` nor
            ``cwd`` chooses one.
        """
        try:
            row = self.locate(session_record_id(session_id), RecordKind.SESSION, project, cwd)
        except AmbiguousIdError as exc:
            raise AmbiguousIdError(session_id, exc.projects) from None  # named as the caller named it
        if row is not None:
            return row, row["project"]
        if project not in (None, ""):
            return None, validate_slug(project, "project")
        holders = index.session_turn_projects(self.conn, session_id)
        if len(holders) <= 1:
            return None, holders[0] if holders else None
        chosen = [p for p in holders if p in (self.scope(None, False, cwd) or [])]
        if len(chosen) == 1:
            return None, chosen[0]
        raise AmbiguousIdError(session_id, holders)

    def session_id_for(self, given: str) -> str:
        """The session id ``given`` names: itself, or — given a session record's id
        (``session-<id>``) where no session ``session-<id>`` exists — the id inside it."""
        if given.startswith("session-") and not index.rows_with_id(self.conn, session_record_id(given), "session"):
            inner = given.removeprefix("session-")
            if inner and index.rows_with_id(self.conn, given, "session"):
                return inner
        return given

    def session_home(self, session_id: str, project: str | None = None, cwd: str | Path | None = None) -> str:
        """The project a turn or a (re)start of session ``session_id`` belongs to (SPEC §2.1,
        §2.2): the explicit ``project``; else the project of ``cwd`` (or the configured
        default) when it holds the session — its record or its turns — or no project does;
        else the one project that holds it (a session id is unique within its project, and its
        turns belong beside it).

        Raises
        ------
        AmbiguousIdError
            Several other projects hold the session (the message lists them).
        """
        resolved = self.resolve_project(project, cwd)
        if project not in (None, ""):
            return resolved
        if index.get_row(self.conn, resolved, session_record_id(session_id), RecordKind.SESSION.value) is not None \
                or resolved in index.session_turn_projects(self.conn, session_id):
            return resolved
        _, holder = self.locate_session(session_id)
        return holder or resolved

    def ignore_rules(self, cwd: str | Path | None) -> IgnoreRules:
        """Capture-ignore rules for a caller in ``cwd``: its product root's ``.memoignore``
        plus ``settings.capture_ignore`` (SPEC §2.4)."""
        return IgnoreRules.for_root(repository_root(cwd), self.settings.capture_ignore)

    def path_for(self, project: str, kind: RecordKind, record_id: str) -> Path:
        return self.layout.record_path(project, kind, record_id)

    def read(self, project: str, kind: RecordKind, record_id: str) -> tuple[dict[str, Any], str] | None:
        """Read a record file, or None when it does not exist. Within a :meth:`batch` a record
        the batch wrote reads as written (before its commit), and a file is parsed once."""
        path = self.path_for(project, kind, record_id)
        batch = self._own_batch()
        if batch is None:
            return read_placed_record(path) if path.exists() else None
        if path in batch.pending:
            meta, body = batch.pending[path]
            return _copy_meta(meta), body
        if path not in batch.cache:
            batch.cache[path] = read_placed_record(path) if path.exists() else None
        found = batch.cache[path]
        return None if found is None else (_copy_meta(found[0]), found[1])

    def read_text(self, project: str, kind: RecordKind, record_id: str) -> str | None:
        """The record file's text (what a :meth:`batch` wrote, before its commit, as it will
        be written), or None when there is none.

        Raises
        ------
        OSError, UnicodeDecodeError
            The file cannot be read as UTF-8 text.
        """
        path = self.path_for(project, kind, record_id)
        batch = self._own_batch()
        if batch is not None and path in batch.pending:
            return dump_record(*batch.pending[path])
        return path.read_text(encoding="utf-8") if path.exists() else None

    def record_exists(self, project: str, kind: RecordKind, record_id: str) -> bool:
        """Whether the record's file exists (or a :meth:`batch` wrote it and will commit it)."""
        path = self.path_for(project, kind, record_id)
        batch = self._own_batch()
        return (batch is not None and path in batch.pending) or path.exists()

    def upsert(self, kind: RecordKind, meta: dict[str, Any], body: str) -> Path:
        """Write one record file atomically and update its index rows, under the vault lock.

        ``meta`` is validated and stored in canonical form (``normalize_meta``), the form a
        reindex reads back, so the index after a write equals the index after a rebuild.
        A record folder changed behind the index's back since its last write (a writer
        killed between rename and index update) is caught up first; the folder's new stamp
        is stored with the row, in the same transaction.

        Raises
        ------
        InvalidFieldError
            Invalid frontmatter, or the id is a record of another kind in the same project
            (the key is ``(project, id)``: the same id in another project is another record).
        IndexReadOnlyError
            The index cannot be written (the file may have been written: the next open
            that can write the index takes it in).
        """
        try:
            meta = normalize_meta(meta)
        except ValueError as exc:
            raise InvalidFieldError("record", str(exc)) from None
        path = self.path_for(meta["project"], kind, meta["id"])
        key = folder_key(meta["project"], kind)
        batch = self._own_batch()
        with self.lock():
            conn = self.conn
            if batch is None or key not in batch.checked:  # in a batch: once per folder and group
                self.layout.refuse_linked(path.parent, fresh=True)  # swapped for a link since first asked for
                self.catch_up_folder(meta["project"], kind)
            held = index.kind_of(conn, meta["project"], meta["id"])
            if held is not None and held != RecordKind(kind).value:
                raise InvalidFieldError("id", f"{meta['id']} is already a {held} record of project {meta['project']}")
            if batch is not None:
                return self._upsert_in_batch(batch, kind, meta, body, path, key)
            write_record(path, meta, body)
            stamp = folder_stamp(self.layout, key)
            try:
                with index.transaction(conn):
                    index.upsert_record(conn, meta, body, str(path.relative_to(self.root)))
                    index.set_folder_stamps(conn, {key: stamp})
            except sqlite3.DatabaseError as exc:
                raise self.index_error(exc) from None
            self._views_changed(meta["project"], RecordKind(kind).value)
            self.emit("write", meta=meta, path=path)  # e.g. the hybrid push's outbox (SPEC §2.7)
        return path

    def remove(self, kind: RecordKind, project: str, record_id: str) -> bool:
        """Delete one record: its file (the folder flushed) and its index rows, under the vault
        lock; True when there was one. Used when a record moves (``memo project rename|merge``).

        Raises
        ------
        IndexReadOnlyError
            The index cannot be written.
        """
        path = self.path_for(project, kind, record_id)
        key = folder_key(project, kind)
        if self._own_batch() is not None:
            self._commit_batch()  # what the batch wrote is in place before anything is removed
        with self.lock():
            conn = self.conn
            self.catch_up_folder(project, kind)
            existed = path.exists()
            if existed:
                os.unlink(path)
                dir_fd = os.open(path.parent, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
            try:
                with index.transaction(conn):
                    existed = index.delete_record(conn, project, record_id) or existed
                    index.set_folder_stamps(conn, {key: folder_stamp(self.layout, key)})
            except sqlite3.DatabaseError as exc:
                raise self.index_error(exc) from None
            self._views_changed(project, RecordKind(kind).value)
        return existed

    @contextmanager
    def batch(self, max_records: int = 2000, renderer: Any = None) -> Iterator[None]:
        """Write many records as one group (issue 16): importers, sync apply.

        ``renderer``: a :class:`concurrent.futures.Executor` of worker processes (forked before
        the vault lock was taken) that renders the records' Markdown text
        (:func:`~memo_analytics.vault.io.dump_records`) while this thread goes on; the text is
        the same, and what a worker fails to render is rendered here at the commit. A batch that
        joins an outer one renders as the outer one does.

        Within the block every :meth:`upsert` of this thread validates, redacts and indexes
        as one alone does, but the record goes to a temporary file and its index row into one
        open transaction; every ``max_records`` records and at the end the group is committed
        at once (:func:`~memo_analytics.vault.io.group_commit`: the temporary files made
        durable, renamed into place, the folders made durable; then the folders' stamps and
        the index transaction committed). The vault lock is held from one commit to the next,
        not taken per record; a group ends at ``max_records`` or after :data:`GROUP_SECONDS`, and
        the lock is left free for a moment between groups so other writers get their turn.
        :meth:`read` sees what the batch wrote and parses a file once. A crash leaves every
        record file old or new: renamed files the index has not committed are taken in by the
        folder stamps on the next open or write, as after a single write cut short. An error
        escaping the block discards the group not yet committed (its temporary files are
        removed and the transaction rolled back). Re-entrant: an inner ``batch`` joins the
        outer one. Compiled views are regenerated once, after the last commit.

        Raises
        ------
        VaultBusyError, IndexReadOnlyError
            As :meth:`lock` and :attr:`conn`.
        """
        if self._own_batch() is not None:
            yield
            return
        with self.deferred_views():  # the views once the files are in place
            locks = ExitStack()
            locks.enter_context(self._vault_lock())
            batch = _Batch(thread=threading.get_ident(), limit=max(1, max_records), locks=locks, renderer=renderer)
            try:
                self._begin()
                self._batch = batch
                yield
                self._commit_batch(final=True)
            except BaseException:
                self._abort_batch(batch)
                raise
            finally:
                self._batch = None
                batch.locks.close()
        if batch.session_end is not None:  # every group committed, the lock free: the sync sees it all
            self.emit("session_end", **batch.session_end)

    def _own_batch(self) -> _Batch | None:
        batch = self._batch
        return batch if batch is not None and batch.thread == threading.get_ident() else None

    def _begin(self) -> None:
        try:
            index.begin(self.conn)
        except sqlite3.DatabaseError as exc:
            raise self.index_error(exc) from None

    def _upsert_in_batch(self, batch: _Batch, kind: RecordKind, meta: dict[str, Any], body: str, path: Path,
                         key: str) -> Path:
        """:meth:`upsert`'s write within a batch (checked by it): the index row now, the file
        pending until the group's commit."""
        if batch.broken is not None:
            raise batch.broken
        check_metadata_size(meta)  # refused now, as a write alone refuses it (the render comes at the commit)
        batch.checked.add(key)
        # Straight into the batch's transaction, not in a savepoint of its own: FTS5 writes its
        # pending terms out as a new segment at every savepoint (one segment per record, then
        # merges: twice the time of the whole index update). A failure part-way can then not be
        # undone for this record alone: the batch is given up.
        try:
            index.upsert_record(self.conn, meta, body, str(path.relative_to(self.root)))
        except BaseException as exc:
            batch.broken = self.index_error(exc) if isinstance(exc, sqlite3.DatabaseError) else exc
            if batch.broken is exc:
                raise
            raise batch.broken from None
        batch.pending.pop(path, None)  # written again in this group (a session's start, then its end): once
        # a prompt's or session's canonical frontmatter is built afresh for this write (nothing else
        # holds it); another kind's shares its lists with the caller's dict: kept as a copy
        fresh = RecordKind(kind) in (RecordKind.PROMPT, RecordKind.SESSION)
        batch.pending[path] = (meta if fresh else _copy_meta(meta), body)
        if batch.renderer is not None:
            batch.rendering.pop(path, None)  # an earlier version sent to render is not this one
            batch.unsent.append(path)
            if len(batch.unsent) >= RENDER_CHUNK:
                self._send_to_render(batch)
        batch.cache.pop(path, None)
        batch.keys.add(key)
        batch.events.append((meta, path))
        self._views_changed(meta["project"], RecordKind(kind).value)
        if len(batch.pending) >= batch.limit or time.monotonic() - batch.since >= GROUP_SECONDS:
            self._commit_batch()
        return path

    def _send_to_render(self, batch: _Batch) -> None:
        """Hand the records written since the last chunk to the batch's worker processes."""
        paths = [path for path in dict.fromkeys(batch.unsent) if path in batch.pending and path not in batch.rendering]
        batch.unsent.clear()
        if not paths:
            return
        try:
            future = batch.renderer.submit(dump_records, [batch.pending[path] for path in paths])
        except Exception:  # the pool is gone (a worker died): the commit renders here
            batch.renderer = None
            return
        for place, path in enumerate(paths):
            batch.rendering[path] = (future, place)

    def _rendered(self, batch: _Batch, path: Path, meta: dict[str, Any], body: str) -> bytes:
        """The text of one pending record: a worker's rendering when it is done, else rendered
        here (the workers are still busy — reading the files ahead of the writer — or one died,
        or failed on it: the error, if any, is raised here as a render alone raises it)."""
        sent = batch.rendering.get(path)
        if sent is not None and sent[0].done():
            future, place = sent
            try:
                return future.result()[place]
            except Exception:
                pass
        return dump_record(meta, body).encode("utf-8")

    def _commit_batch(self, final: bool = False) -> None:
        """Commit the batch's group (see :meth:`batch`); unless ``final``, release the lock for
        a moment and open the next group."""
        batch = self._own_batch()
        if batch is None:
            return
        if batch.broken is not None:
            raise batch.broken
        renames: list[tuple[Path, Path]] = []
        if batch.renderer is not None:
            self._send_to_render(batch)
        try:
            for path, (meta, body) in batch.pending.items():
                renames.append((write_temporary(path, self._rendered(batch, path, meta, body)), path))
            group_commit(renames, self.root)
        except BaseException:
            for temporary, _ in renames:
                remove_quietly(temporary)
            raise
        batch.pending.clear()
        batch.rendering.clear()
        conn = self.conn
        try:
            index.set_folder_stamps(conn, {key: folder_stamp(self.layout, key) for key in sorted(batch.keys)})
            index.commit(conn)
        except sqlite3.DatabaseError as exc:
            raise self.index_error(exc) from None
        events, batch.events = batch.events, []
        batch.keys.clear()
        batch.cache.clear()
        batch.checked.clear()
        for meta, path in events:
            self.emit("write", meta=meta, path=path)  # e.g. the hybrid push's outbox (SPEC §2.7)
        if final:
            return
        batch.locks.close()  # other writers (and readers catching up the index) go between two groups:
        time.sleep(GROUP_PAUSE_SECONDS)  # a waiting process retries every LOCK_POLL_SECONDS
        self._next_group(batch)

    def _next_group(self, batch: _Batch) -> None:
        """Take the vault lock again for ``batch`` and open its next group."""
        batch.locks = ExitStack()
        batch.locks.enter_context(self._vault_lock())
        batch.since = time.monotonic()
        self._begin()

    @contextmanager
    def batch_released(self) -> Iterator[None]:
        """Within a :meth:`batch`: commit the group written so far and leave the vault lock
        free while the block runs — a writer waiting for its next records (an import waiting
        for a worker's parse) keeps no other writer waiting — then take the lock again and open
        the next group. Outside a batch: nothing.

        Raises
        ------
        VaultBusyError, IndexReadOnlyError
            As :meth:`lock` and :attr:`conn`, at the commit or when the lock is taken again.
        """
        batch = self._own_batch()
        if batch is None:
            yield
            return
        self._commit_batch(final=True)
        batch.locks.close()
        try:
            yield
        finally:
            self._next_group(batch)

    def _abort_batch(self, batch: _Batch) -> None:
        batch.pending.clear()
        batch.unsent.clear()
        batch.rendering.clear()
        if self._conn is not None:
            index.rollback(self._conn)

    def _views_changed(self, project: str, kind: str | None) -> None:
        if self._deferred is not None:
            if not self._deferred:  # the first change of a bulk write: its views are due until it ends
                self._views_due().parent.mkdir(parents=True, exist_ok=True)
                atomic_write_bytes(self._views_due(), b"")
            self._deferred.update((project, k) for k in ([kind] if kind else views.VIEW_FILES))
        else:
            self.refresh_views(project, {kind} if kind else None)

    def _views_due(self) -> Path:
        """A mark kept while a bulk write's views are not yet regenerated: a write ended by a kill
        leaves it, and the next bulk write regenerates every project's views."""
        return self.layout.meta_dir / "views-due"

    def catch_up_folder(self, project: str, kind: RecordKind | str) -> int:
        """Take in what changed in one record folder since the index last did (files
        renamed into place but not indexed, files removed), when its stamp says so; the
        number of records added, updated or removed. One ``stat`` and one lookup when
        nothing changed. Call it under the vault lock (:meth:`upsert` does)."""
        key = folder_key(project, kind)
        if folder_stamp(self.layout, key) == index.folder_stamp(self.conn, key):
            return 0
        return self._reconcile([key], kind, f"a record folder changed outside memo ({key})")

    def _reconcile(self, keys: list[str], kind: RecordKind | str, what: str) -> int:
        """:func:`freshness.reconcile` of ``keys`` (under the vault lock), a note when it took
        anything in, the views of the projects touched refreshed; the records changed."""
        try:
            done = freshness.reconcile(self.conn, self.layout, keys, max_files=10**9)
        except sqlite3.DatabaseError as exc:
            raise self.index_error(exc) from None
        touched = done.added + done.updated + done.removed
        self._skip_said_ones(done)
        if touched or done.skipped:
            self._note(f"the index caught up with {what}: {done.line()}")
        self._taken_in(done, keys)
        for project in sorted(done.projects):
            self._views_changed(project, RecordKind(kind).value)
        return touched

    def _skip_said_ones(self, done: freshness.ReconcileResult) -> None:
        """Leave out of ``done.skipped`` the files a note of this store said already: a file is
        said skipped once per run (a copied file was said twice, as a folder changed outside
        memo and then as a folder edited in place)."""
        done.skipped = [error for error in done.skipped if str(error.path) not in self._skips_said]
        self._skips_said.update(str(error.path) for error in done.skipped)

    def hear_rebuilt(self) -> None:
        """After a full rebuild of the index (under the vault lock): every record is heard as a
        ``"write"`` with ``caught_up=True`` — records a killed writer put in place before the
        index had any row reach the listeners; a listener skips what it already has (the hybrid
        push: what it pushed). Nothing is read when no one listens."""
        if not self.listeners["write"]:
            return
        self._tell_caught_up([(meta, self.root / relative) for meta, relative in index.every_record(self.conn)])

    def _tell_caught_up(self, written: list[tuple[dict[str, Any], Path]]) -> None:
        """Tell the write listeners of records the index took in behind a writer's back; a
        listener that fails (an outbox that cannot be written) is a note, not a failed read:
        the index has taken them in either way."""
        for meta, path in written:
            try:
                self.emit("write", meta=meta, path=path, caught_up=True)
            except Exception as exc:  # noqa: BLE001 - a read must not fail on the sync's account
                self._note(f"the sync was not told of {len(written)} record(s) the index took in "
                           f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}); "
                           f"`memo sync status` shows what is queued")
                return

    def _taken_in(self, done: freshness.ReconcileResult, folders: list[str]) -> None:
        """After a reconcile of ``folders`` (under the vault lock): each record it indexed is
        heard as a ``"write"`` — a file renamed into place by a writer killed before it told
        its listeners (the hybrid push's outbox) reaches them now — and the temporary files
        such a writer left there are removed (record folders get temporary files only under
        the vault lock, which this process holds: none of them is being written)."""
        self._tell_caught_up([(meta, self.root / relative) for meta, relative in done.written])
        for temporary in self.layout.temp_files(folders):
            remove_quietly(temporary)

    def left_out(self, kind: RecordKind | str, say: bool = True,
                 further: Sequence[tuple[str, sqlite3.Connection]] = ()) -> list[tuple[str, str, Path]]:
        """``(path as said, reason, the vault's root)`` of each record file of ``kind`` in the
        folders of this vault — and of each ``further`` vault (``(root, its index)``: a report
        across vaults bills their sessions too) — that the index holds no row of: it cannot be
        read (a hand edit a record rule refuses, torn YAML), and every report leaves it out. The
        path is the vault's (``projects/…``) for this vault, absolute for a further one. With
        ``say``, a note names them, once per store (a run of the command line; a file this run's
        catch-up named already is not said again): it was said once, when first skipped, and
        billing reports then left it out without a word."""
        subdir = subdir_for_kind(kind)
        errors = [(self.root, error) for error in freshness.not_indexed(self.conn, self.layout, subdir)]
        for root, conn in further:
            layout = VaultLayout(Path(root))
            errors += [(Path(root), error) for error in freshness.not_indexed(conn, layout, subdir)]
            # a file of it edited since its index read it: its rows (what the report bills) are not what it holds
            errors += [(Path(root), CorruptRecordError(str(path), "edited since its vault's index read it: memo "
                                                                  f"--vault-root {shell_word(str(root))} reindex takes it in"))
                       for path in freshness.edited_since_indexed(conn, layout, subdir)]
        found = [(os.path.relpath(str(error.path), self.root) if root == self.root else str(error.path),
                  error.reason, root) for root, error in errors]
        if not say:
            return found
        unsaid = [f"{path}: {reason}" for (_, error), (path, reason, _) in zip(errors, found)
                  if str(error.path) not in self._skips_said]
        self._skips_said.update(str(error.path) for _, error in errors)
        if unsaid:
            plural = "s" if len(unsaid) != 1 else ""
            more = f"; and {len(unsaid) - 3} more (memo reindex lists them)" if len(unsaid) > 3 else ""
            self._note(f"{len(unsaid)} {RecordKind(kind).value} file{plural} cannot be read and "
                       f"{'are' if plural else 'is'} left out: {'; '.join(unsaid[:3])}{more}")
        return found

    def catch_up_edits(self, kind: RecordKind | str) -> int:
        """Take in record files of ``kind`` edited in place since the index read them (an
        editor that rewrites a file without a rename leaves its folder's time as it was, so
        the check on open cannot see it). Billing reads call it for sessions: every session
        file is stat-ed (milliseconds per thousand). The folder's time is moved up to its
        newest file, so the edit is taken in once. The number of records updated.

        Raises
        ------
        IndexReadOnlyError
            The index cannot be written.
        """
        edited = freshness.edited_in_place(self.conn, self.layout, (subdir_for_kind(kind),))
        if not edited:
            return 0
        with self.lock():
            for key, newest in edited.items():
                folder = self.layout.projects_dir / key
                try:
                    info = os.stat(folder)
                    os.utime(folder, ns=(info.st_atime_ns, max(info.st_mtime_ns, newest)))
                except OSError:
                    continue
            plural = "s" if len(edited) != 1 else ""
            return self._reconcile(sorted(edited), kind, f"{len(edited)} record folder{plural} edited in place")

    def ensure_indexed(self, kind: RecordKind | str, project: str, record_id: str,
                       meta: dict[str, Any] | None = None) -> bool:
        """Index a record file that exists but that the index lacks — or, when ``meta``
        (the file's frontmatter, already read) is given, holds in another version
        (``updated``/``status`` differ): a write killed between its rename and its index
        update. The file is read, validated and redacted as a rebuild does; never
        rewritten. True when the index changed. Takes the vault lock.

        Raises
        ------
        CorruptRecordError
            The file exists but cannot be used (it is left untouched).
        """
        path = self.path_for(project, kind, record_id)
        with self.lock():
            conn = self.conn
            row = index.get_row(conn, project, record_id)
            if row is not None and (meta is None or (row["updated"], row["status"]) == (
                    None if meta.get("updated") is None else str(meta.get("updated")), meta.get("status"))):
                return False
            if not path.is_file():
                return False
            parsed = parse_for_index(path, redact=True)
            if isinstance(parsed, CorruptRecordError):
                raise parsed
            relative = str(path.relative_to(self.root))
            if row is not None and row["path"] != relative:
                raise CorruptRecordError(str(path), f"id {record_id!r} also used by {self.root / row['path']}")
            with index.transaction(conn):
                index.upsert_record(conn, parsed[0], parsed[1], relative)
            self._views_changed(project, RecordKind(kind).value)
        return True

    def index_session_turns(self, project: str, session_id: str) -> int:
        """Index the turn files of ``session_id`` in ``project`` that the index lacks (a
        turn renamed into place by a process killed before its index update): missing
        numbers below the highest indexed turn and every file above it. One probe of the
        index and one ``stat`` when nothing is missing; a ``stat`` per missing number
        otherwise. Files that cannot be used are left as they are (turn allocation steps
        over them). The number of turns indexed. Call it under the vault lock (SPEC §2.4).
        """
        count, top = index.session_turn_span(self.conn, project, session_id)
        present = index.session_turn_numbers(self.conn, project, session_id) if count < top else set()
        indexed = 0
        turn = 1 if count < top else top + 1
        while turn <= top or self.path_for(project, RecordKind.PROMPT, _turn_id(session_id, turn)).exists():
            if turn not in present:
                try:
                    indexed += self.ensure_indexed(RecordKind.PROMPT, project, _turn_id(session_id, turn))
                except CorruptRecordError:
                    pass
            turn += 1
        return indexed

    @contextmanager
    def deferred_views(self) -> Iterator[None]:
        """Within this block, compiled views are regenerated once at the end (bulk imports)."""
        if self._deferred is not None:
            yield
            return
        self._deferred = set()
        if self.exists and self._views_due().exists():  # a bulk write before was ended before its views
            self._deferred.update((project, kind) for project in index.project_names(self.conn)
                                  for kind in views.VIEW_FILES)
        try:
            yield
        finally:
            pending, self._deferred = self._deferred, None
            by_project: dict[str, set[str]] = {}
            for project, kind in pending:
                by_project.setdefault(project, set()).add(kind)
            for project, kinds in sorted(by_project.items()):
                if self.layout.project_dir(project).is_dir():  # a project moved away has no views to keep
                    self.refresh_views(project, kinds)
            if pending:
                remove_quietly(self._views_due())

    def refresh_views(self, project: str, kinds: set[str] | None = None) -> None:
        """Regenerate the compiled views of ``project`` for ``kinds`` (all when None) and
        ``INDEX.md`` (SPEC §2.7). Bounded work: the newest records only, counts kept by the
        index, so the cost does not grow with the vault. A project with no record left has no
        views: they are removed, and its folders when that leaves them empty."""
        folder = self.layout.project_dir(project)
        kinds = set(views.VIEW_FILES) if kinds is None else kinds | {
            kind for kind, name in views.VIEW_FILES.items() if not (folder / name).exists()}
        counts = index.record_counts(self.conn, project)
        if not any(counts.values()):  # no record left (the folder removed by hand): no views of nothing
            for name in (*views.VIEW_FILES.values(), "INDEX.md"):
                remove_quietly(folder / name)
            for empty in (*(folder / subdir_for_kind(kind) for kind in RecordKind), folder):
                try:
                    empty.rmdir()  # only what is empty: a file someone keeps there stays, and its folder
                except OSError:
                    pass
            return

        def latest(kind: str, limit: int = views.VIEW_LIMIT) -> list[dict[str, Any]]:
            return [{**json.loads(r["meta"]), "body": r["body"]} for r in index.latest_rows(self.conn, project, kind, limit)]

        renderers = {
            "prompt": lambda: views.render_prompts(project, counts.get("prompt", 0), latest("prompt")),
            "session": lambda: views.render_sessions(project, counts.get("session", 0), latest("session")),
            "trap": lambda: views.render_listing("Traps", project, counts.get("trap", 0), latest("trap")),
            "decision": lambda: views.render_listing("Decisions", project, counts.get("decision", 0), latest("decision")),
        }
        for kind in sorted(kinds & set(renderers)):
            atomic_write_bytes(folder / views.VIEW_FILES[kind], renderers[kind]().encode("utf-8"), durable=False)
        text = views.render_index(project, counts, latest("session", 50), latest("handoff", 50))
        atomic_write_bytes(folder / "INDEX.md", text.encode("utf-8"), durable=False)
