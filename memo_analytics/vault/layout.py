"""Where each record lives in the vault (SPEC §2.1)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..domain.errors import MemoError
from ..domain.ids import validate_slug
from ..domain.records import RecordKind, subdir_for_kind

META_DIR = ".memo"
INDEX_FILE = "index.sqlite"
LOCK_FILE = "vault.lock"
#: The name :func:`~memo_analytics.vault.io.write_temporary` gives a record's temporary file
#: (``.<name>.`` + 8 hex digits + ``.tmp``; before, ``tempfile.mkstemp``'s 8 characters).
_OWN_TEMPORARY = re.compile(r"\..+\.md\.[a-z0-9_]{8}\.tmp")
#: The temporary file of a project's compiled view (``PROMPTS.md`` …) an interrupted write left.
_VIEW_TEMPORARY = re.compile(r"\.(?:PROMPTS|SESSIONS|TRAPS|DECISIONS|INDEX)\.md\.[a-z0-9_]{8}\.tmp")


def _temporaries(folder: Path, named: re.Pattern[str]) -> list[Path]:
    """The regular files of ``folder`` whose name ``named`` matches (none when it cannot be read)."""
    try:
        with os.scandir(folder) as entries:
            return [Path(entry.path) for entry in entries
                    if named.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)]
    except OSError:
        return []


class VaultLayout:
    """Paths of one vault rooted at ``root`` (an absolute folder)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        #: the last record paths asked for (an import asks for each several times)
        self._paths: dict[tuple[str, str, str], Path] = {}
        #: record folders found not to be reached through a symbolic link
        self._checked: set[Path] = set()

    @property
    def meta_dir(self) -> Path:
        return self.root / META_DIR

    @property
    def index_path(self) -> Path:
        return self.meta_dir / INDEX_FILE

    @property
    def lock_path(self) -> Path:
        return self.meta_dir / LOCK_FILE

    @property
    def projects_dir(self) -> Path:
        return self.root / "projects"

    def project_dir(self, project: str) -> Path:
        """Folder of one project; ``project`` must be a safe slug."""
        return self.projects_dir / validate_slug(project, "project")

    def record_path(self, project: str, kind: RecordKind | str, record_id: str) -> Path:
        """``projects/<project>/<subdir>/<id>.md``; both ids are validated as safe slugs."""
        key = (project, str(getattr(kind, "value", kind)), record_id)
        path = self._paths.get(key)
        if path is None:
            path = self.project_dir(project) / subdir_for_kind(kind) / f"{validate_slug(record_id, 'id')}.md"
            self.refuse_linked(path.parent)
            if len(self._paths) >= 4096:
                self._paths.clear()
            self._paths[key] = path
        return path

    def refuse_linked(self, folder: Path, fresh: bool = False) -> None:
        """Refuse a record folder reached through a symbolic link inside the vault (``projects/``,
        a project's folder, its ``prompts/``…): a record read or written there would be a file
        outside the vault (SPEC §11: writes never follow a link). The vault's own root may be a
        link (a vault kept on another disk). A path is checked when it is first asked for; a
        write checks again (``fresh``: a folder swapped for a link while a server runs).

        Raises
        ------
        MemoError
            The folder, or one between it and the vault's root, is a symbolic link.
        """
        if folder in self._checked and not fresh:
            return
        for part in (self.projects_dir, folder.parent, folder):
            if part.is_symlink():
                raise MemoError(f"{part} is a symbolic link: memo reads and writes records only inside the vault "
                                "(move the folder it points to back in its place)")
        self._checked.add(folder)

    def record_files(self):
        """Every record file under ``projects/`` (prompts, sessions, traps, ...), sorted; sync
        conflict versions (``<id>.conflict-….md``) are not records and are left out."""
        if not self.projects_dir.is_dir():
            return []
        files = []
        for kind in RecordKind:
            files.extend(p for p in self.projects_dir.glob(f"*/{subdir_for_kind(kind)}/*.md")
                         if ".conflict-" not in p.name)  # kept sync conflict versions are not records
        return sorted(files)

    def unreadable_folders(self) -> list[tuple[Path, str]]:
        """``(folder, reason)`` of each project folder and record folder under ``projects/`` that
        cannot be listed (its permissions): :meth:`record_files` cannot see its records, and a
        rebuilt index without them billed and counted less without a word."""
        found: list[tuple[Path, str]] = []
        subdirs = [subdir_for_kind(kind) for kind in RecordKind]
        try:
            projects = sorted(entry.path for entry in os.scandir(self.projects_dir) if entry.is_dir())
        except OSError:
            return found
        for project in projects:
            for folder in [Path(project), *(Path(project) / subdir for subdir in subdirs)]:
                try:
                    with os.scandir(folder):
                        pass
                except (FileNotFoundError, NotADirectoryError):
                    continue
                except OSError as exc:
                    found.append((folder, exc.strerror or type(exc).__name__))
                    if folder == Path(project):
                        break  # its record folders cannot be reached either
        return found

    def temp_files(self, folders: list[str] | None = None):
        """Temporary files an interrupted atomic write of memo left in record folders: every
        record folder's (and each project's compiled views'), or those of ``folders``
        (``<project>/<subdir>`` keys) alone.

        Only memo's own temporary files (``.<record>.md.<8 random characters>.tmp``, as
        :func:`~memo_analytics.vault.io.write_temporary` names them) of real record folders under
        ``projects/``: no other dotfile (an editor's, a sync tool's), no folder reached through
        a symbolic link, no key that leads elsewhere (``..``)."""
        subdirs = {subdir_for_kind(kind) for kind in RecordKind}
        found = []
        if folders is None:
            if not self.projects_dir.is_dir() or self.projects_dir.is_symlink():
                return []
            projects = [project for project in self.projects_dir.iterdir()
                        if project.is_dir() and not project.is_symlink()]
            folders = [f"{project.name}/{subdir}" for project in projects for subdir in subdirs]
            for project in projects:  # and a compiled view's (found by a reliability tester: never removed)
                found += _temporaries(project, _VIEW_TEMPORARY)
        for key in folders:
            project, _, subdir = key.partition("/")
            if subdir not in subdirs or project in ("", ".", "..") or "/" in project or "\\" in project:
                continue
            folder = self.projects_dir / project / subdir
            if folder.parent.is_symlink() or folder.is_symlink() or not folder.is_dir():
                continue
            found += _temporaries(folder, _OWN_TEMPORARY)
        return sorted(found)
