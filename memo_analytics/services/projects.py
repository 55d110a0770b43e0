"""Project metadata: ``projects/<projectId>/project.toml`` (SPEC §2.1).

Holds the project's ``name`` and ``lastSeenRoot`` — the product repository a turn or session
last came from, which rule promotion needs when the caller gives no ``cwd`` (SPEC §5.3).
Written only when the root changes, so recording a turn stays O(1). This machine keeps its own
copy of the roots in ``.memo/seen-roots.json``, which promotion trusts when vault-git is on.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from ..domain.clock import to_iso, utcnow
from ..vault.io import atomic_write_bytes, read_json_state, write_json_state
from .store import VaultStore

PROJECT_FILE = "project.toml"


def project_file(store: VaultStore, project: str) -> Path:
    return store.layout.project_dir(project) / PROJECT_FILE


def read_project(store: VaultStore, project: str) -> dict[str, Any] | None:
    """The project's metadata ({} when it has none); None when the file is not valid TOML
    (it is then left untouched)."""
    try:
        return tomllib.loads(project_file(store, project).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
        return None


#: This machine's own record of where each project was last seen (``.memo/`` is never synced):
#: with vault-git on, the ``lastSeenRoot`` of ``project.toml`` may have come from another machine
#: — or from a teammate who chose which repository a promoted rule is written into.
SEEN_ROOTS = "seen-roots.json"


def _seen_roots(store: VaultStore) -> dict[str, Any]:
    return read_json_state(store.layout.meta_dir / SEEN_ROOTS) or {}


def last_seen_root(store: VaultStore, project: str) -> Path | None:
    """The product repository the project was last seen in on this machine, if it is known and
    still there: this machine's record of it, else — when vault-git is off, so no other machine
    wrote the file — the ``lastSeenRoot`` of ``project.toml`` (which a person may set by hand)."""
    root = _seen_roots(store).get(project)
    if root is None and not store.settings.vault_git.enabled:
        root = (read_project(store, project) or {}).get("lastSeenRoot")
    return Path(root) if isinstance(root, str) and Path(root).is_dir() else None


def remember_root(store: VaultStore, project: str, root: Path | None) -> None:
    """Record ``root`` as the project's ``lastSeenRoot`` (when it changed): in this machine's
    ``.memo/seen-roots.json``, and — vault-git off — in ``project.toml``. Never fails the
    caller: a hand-broken project file is left as it is."""
    if root is None:
        return
    cache: dict[str, str] = store.__dict__.setdefault("_seen_roots", {})
    value = str(root)
    if cache.get(project) == value:
        return
    with store.lock():
        data = read_project(store, project)
        if data is None:
            return
        # with vault-git on, the shared file does not take this machine's path: each machine's first turn
        # made project.toml conflict, a kept version no list ever named (found by two freelancers)
        if data.get("lastSeenRoot") != value and not store.settings.vault_git.enabled:
            data = {"name": data.get("name", project), **data, "lastSeenRoot": value, "lastSeenAt": to_iso(utcnow())}
            path = project_file(store, project)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, tomli_w.dumps(data).encode("utf-8"), durable=False)
        seen = _seen_roots(store)
        if seen.get(project) != value:
            write_json_state(store.layout.meta_dir / SEEN_ROOTS, {**seen, project: value})
    cache[project] = value


def move_seen_root(store: VaultStore, source: str, target: str) -> None:
    """This machine's record of where ``source`` was seen goes to ``target`` (a project rename or
    merge; ``target``'s own is kept)."""
    seen = _seen_roots(store)
    if source in seen:
        root = seen.pop(source)
        seen.setdefault(target, root)
        write_json_state(store.layout.meta_dir / SEEN_ROOTS, seen)
