"""The vault as a service context: settings, layout, lock and index connection.

Every mutation goes through :meth:`VaultStore.upsert` under the re-entrant vault lock:
the Markdown file is written atomically first (the source of truth), then the index row
and its ``records_fts`` row are updated in one transaction (SPEC §2.4).
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from filelock import Timeout

from ..config import Settings
from ..domain.clock import resolve_zone
from ..domain.errors import (
    IndexDamagedError,
    InvalidFieldError,
    VaultBusyError,
)
from ..domain.ids import slugify, validate_slug
from ..domain.records import RecordKind, normalize_meta
from ..index import store as index
from ..vault import views
from ..vault.io import atomic_write_bytes, read_record, write_record
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
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def git_head(root: Path | None) -> tuple[str | None, str | None]:
    """``(branch, commit sha)`` of the repository at ``root``, read from its ``.git`` files
    (no git process); ``(None, sha)`` on a detached HEAD, ``(None, None)`` when unknown."""
    if root is None:
        return None, None
    git = root / ".git"
    try:
        if git.is_file():  # a worktree: "gitdir: <path>"
            git = (root / git.read_text(encoding="utf-8").strip().removeprefix("gitdir:").strip()).resolve()
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None, None
    if not head.startswith("ref:"):
        return None, head if re.fullmatch(r"[0-9a-f]{40,64}", head) else None
    ref = head.removeprefix("ref:").strip()
    branch = ref.removeprefix("refs/heads/")
    sha = None
    try:
        sha = (git / ref).read_text(encoding="utf-8").strip()
    except OSError:
        packed = git / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                if line.endswith(" " + ref):
                    sha = line.split(" ", 1)[0]
    if sha is not None and not re.fullmatch(r"[0-9a-f]{40,64}", sha):
        sha = None
    return branch, sha


def project_from_cwd(cwd: str | Path | None) -> str | None:
    """The slug of the git repository folder that contains ``cwd``, or None."""
    root = repository_root(cwd)
    return slugify(root.name) if root is not None else None


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
        self._conn_guard = threading.Lock()
        self._may_create = False
        self._deferred: set[tuple[str, str]] | None = None
        self.zone = resolve_zone(settings.timezone)

    @property
    def root(self) -> Path:
        return self.layout.root

    @property
    def conn(self) -> sqlite3.Connection:
        """The index connection (opened, and the schema created, on first use).

        A read (outside the vault lock) on a folder that holds no vault yet gets an empty
        in-memory index: nothing is created there.

        Raises
        ------
        IndexDamagedError
            The index file is not a SQLite database.
        """
        with self._conn_guard:
            if self._conn is None:
                path = self.layout.index_path
                if not path.exists() and not self._may_create and not self.exists:
                    # a read on a vault that does not exist yet: answer from an empty index
                    # and create nothing (a mistyped path must not sprout folders)
                    return index.connect_empty()
                try:
                    self._conn = index.connect(path)
                except sqlite3.DatabaseError as exc:
                    raise IndexDamagedError(str(path), str(exc)) from None
            return self._conn

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
        """
        self._may_create = True
        lock = vault_lock(self.layout.lock_path)
        try:
            lock.acquire()
        except Timeout:
            raise VaultBusyError(str(self.root), lock.timeout) from None
        try:
            yield
        finally:
            lock.release()

    def resolve_project(self, project: str | None, cwd: str | Path | None = None) -> str:
        """The project id a record is filed under: explicit ``project``, else the repository
        folder name of ``cwd``, else ``settings.default_project``; validated as a safe slug.
        """
        if project not in (None, ""):
            return validate_slug(project, "project")
        return project_from_cwd(cwd) or validate_slug(self.settings.default_project, "project")

    def scope(self, project: str | None, cross_project: bool, cwd: str | Path | None = None) -> list[str] | None:
        """Projects a read covers (None = every project).

        ``cross_project`` → every project; an explicit ``project`` → that one; else the
        repository of ``cwd`` or a configured ``MEMO_PROJECT``; else every project (a reader
        outside any repository sees the whole vault).
        """
        if cross_project:
            return None
        if project not in (None, ""):
            return [validate_slug(project, "project")]
        from_cwd = project_from_cwd(cwd)
        if from_cwd:
            return [from_cwd]
        if "default_project" in self.settings.model_fields_set:
            return [validate_slug(self.settings.default_project, "project")]
        return None

    def ignore_rules(self, cwd: str | Path | None) -> IgnoreRules:
        """Capture-ignore rules for a caller in ``cwd``: its product root's ``.memoignore``
        plus ``settings.capture_ignore`` (SPEC §2.4)."""
        return IgnoreRules.for_root(repository_root(cwd), self.settings.capture_ignore)

    def path_for(self, project: str, kind: RecordKind, record_id: str) -> Path:
        return self.layout.record_path(project, kind, record_id)

    def read(self, project: str, kind: RecordKind, record_id: str) -> tuple[dict[str, Any], str] | None:
        """Read a record file, or None when it does not exist."""
        path = self.path_for(project, kind, record_id)
        if not path.exists():
            return None
        return read_record(path)

    def upsert(self, kind: RecordKind, meta: dict[str, Any], body: str) -> Path:
        """Write one record file atomically and update its index rows, under the vault lock.

        ``meta`` is validated and stored in canonical form (``normalize_meta``), the form a
        reindex reads back, so the index after a write equals the index after a rebuild.
        """
        try:
            meta = normalize_meta(meta)
        except ValueError as exc:
            raise InvalidFieldError("record", str(exc)) from None
        path = self.path_for(meta["project"], kind, meta["id"])
        with self.lock():
            row = index.get_row(self.conn, meta["id"])
            if row is not None and row["project"] != meta["project"]:
                raise InvalidFieldError("id", f"{meta['id']} already belongs to project {row['project']}")
            write_record(path, meta, body)
            with index.transaction(self.conn):
                index.upsert_record(self.conn, meta, body, str(path.relative_to(self.root)))
            if self._deferred is not None:
                self._deferred.add((meta["project"], RecordKind(kind).value))
            else:
                self.refresh_views(meta["project"], {RecordKind(kind).value})
            if self.settings.mode == "hybrid" and self.settings.hybrid.remote_url:
                from .sync import note_write  # the outbox of the hybrid push (SPEC §2.7)

                note_write(self, meta, path)
        return path

    @contextmanager
    def deferred_views(self) -> Iterator[None]:
        """Within this block, compiled views are regenerated once at the end (bulk imports)."""
        if self._deferred is not None:
            yield
            return
        self._deferred = set()
        try:
            yield
        finally:
            pending, self._deferred = self._deferred, None
            by_project: dict[str, set[str]] = {}
            for project, kind in pending:
                by_project.setdefault(project, set()).add(kind)
            for project, kinds in sorted(by_project.items()):
                self.refresh_views(project, kinds)

    def refresh_views(self, project: str, kinds: set[str] | None = None) -> None:
        """Regenerate the compiled views of ``project`` for ``kinds`` (all when None) and
        ``INDEX.md`` (SPEC §2.7). Bounded work: the newest records only, counts kept by the
        index, so the cost does not grow with the vault."""
        folder = self.layout.project_dir(project)
        kinds = set(views.VIEW_FILES) if kinds is None else kinds | {
            kind for kind, name in views.VIEW_FILES.items() if not (folder / name).exists()}
        counts = index.record_counts(self.conn, project)

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
