"""Where each record lives in the vault (SPEC §2.1)."""

from __future__ import annotations

from pathlib import Path

from ..domain.ids import validate_slug
from ..domain.records import RecordKind, subdir_for_kind

META_DIR = ".memo"
INDEX_FILE = "index.sqlite"
LOCK_FILE = "vault.lock"


class VaultLayout:
    """Paths of one vault rooted at ``root`` (an absolute folder)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        #: the last record paths asked for (an import asks for each several times)
        self._paths: dict[tuple[str, str, str], Path] = {}

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
            if len(self._paths) >= 4096:
                self._paths.clear()
            self._paths[key] = path
        return path

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

    def temp_files(self, folders: list[str] | None = None):
        """Temporary files an interrupted atomic write left in record folders: every record
        folder's, or those of ``folders`` (``<project>/<subdir>`` keys) alone."""
        if folders is not None:
            return sorted(p for key in folders for p in (self.projects_dir / key).glob(".*.tmp"))
        if not self.projects_dir.is_dir():
            return []
        return sorted(
            p for kind in RecordKind for p in self.projects_dir.glob(f"*/{subdir_for_kind(kind)}/.*.tmp")
        )
