"""Delegations (SPEC §6 phase 3): which action classes the operator may run by itself, per
project, granted explicitly by the person. Stored in ``.memo/delegations.json``; every
change and every check of a grant before an automatic action happens under the vault lock,
so once ``revoke`` or ``off`` returns, no action under that grant can land."""

from __future__ import annotations

from typing import Any

from ..domain.clock import from_iso, to_iso, utcnow
from ..domain.errors import InvalidFieldError
from ..domain.ids import validate_slug
from ..services.store import VaultStore
from ..vault.io import read_json_state, write_json_state

DELEGATIONS_FILE = "delegations.json"
ACTION_CLASSES = ("end_stale_session", "cancel_handoff", "promote_rule", "export_story", "set_client")


def _path(store: VaultStore):
    return store.layout.meta_dir / DELEGATIONS_FILE


def delegations_stamp(store: VaultStore) -> int:
    """The delegations file's mtime (ns; 0 when there is none): part of the digest's version."""
    try:
        return _path(store).stat().st_mtime_ns
    except OSError:
        return 0


def load(store: VaultStore) -> dict[str, Any]:
    """``{off, grants: {project: {class: {grantedAt}}}}`` (nothing granted when missing).

    Raises
    ------
    InvalidFieldError
        ``delegations``: the file (edited by hand) is not of that shape — naming the file and
        the key; nothing is delegated until it is mended (``memo operator off`` always works).
    """
    data = read_json_state(_path(store), "grants") or {"off": False, "grants": {}}
    problem = _shape_problem(data)
    if problem is not None:
        raise InvalidFieldError("delegations", f"{_path(store)}: {problem}; mend it or delete it (nothing is delegated "
                                               "until then)")
    return data


def _shape_problem(data: object) -> str | None:
    """What keeps ``data`` from being a delegations file, or None."""
    if not isinstance(data, dict):
        return "not a JSON object"
    if not isinstance(data.get("off", False), bool):
        return f"off is {data.get('off')!r}, not true or false"
    grants = data.get("grants")
    if not isinstance(grants, dict):
        return "grants is not an object of projects"
    for project, classes in grants.items():
        if not isinstance(classes, dict):
            return f"grants.{project} is not an object of action classes"
        for action_class, grant in classes.items():
            if action_class not in ACTION_CLASSES:
                return f"grants.{project}.{action_class} is no action class ({', '.join(ACTION_CLASSES)})"
            if not isinstance(grant, dict) or not isinstance(grant.get("grantedAt"), str):
                return f"grants.{project}.{action_class} is not {{\"grantedAt\": TIME}}"
            try:
                from_iso(grant["grantedAt"])
            except InvalidFieldError:
                return f"grants.{project}.{action_class}.grantedAt is {grant['grantedAt'][:40]!r}, not a time"
    return None


def _save(store: VaultStore, data: dict[str, Any]) -> None:
    write_json_state(_path(store), data)


def _check(action_class: str, project: str) -> str:
    if action_class not in ACTION_CLASSES:
        raise InvalidFieldError("actionClass", f"{action_class!r} is not one of {', '.join(ACTION_CLASSES)}")
    return validate_slug(project, "project")


def allow(store: VaultStore, action_class: str, project: str, now=None) -> dict[str, Any]:
    """Delegate ``action_class`` for ``project`` (the person's explicit grant).

    Raises
    ------
    InvalidFieldError
        ``actionClass`` not one of :data:`ACTION_CLASSES`; ``project`` not a project of the
        vault (a mistyped name granted nothing, and said it did).
    """
    project = _check(action_class, project)
    from ..index.store import project_names

    known = project_names(store.conn) if store.exists else []
    if project not in known:
        raise InvalidFieldError("project", f"the vault holds no project {project}"
                                + (f" (projects: {', '.join(known[:12])}{', …' if len(known) > 12 else ''})"
                                   if known else " (it holds no records yet)"))
    with store.lock():
        data = load(store)
        data["grants"].setdefault(project, {})[action_class] = {"grantedAt": to_iso(now or utcnow())}
        _save(store, data)
    return data


def revoke(store: VaultStore, action_class: str, project: str) -> dict[str, Any]:
    """Withdraw a delegation; takes effect at once (under the vault lock).

    Raises
    ------
    InvalidFieldError
        ``actionClass``: it is not delegated for ``project`` (``memo operator status`` lists
        the delegations).
    """
    project = _check(action_class, project)
    with store.lock():
        data = load(store)
        if action_class not in data["grants"].get(project, {}):
            raise InvalidFieldError("actionClass", f"{action_class} is not delegated for {project}: nothing to revoke "
                                                   "(memo operator status lists the delegations)")
        data["grants"][project].pop(action_class)
        if not data["grants"][project]:
            data["grants"].pop(project)
        _save(store, data)
    return data


def set_off(store: VaultStore, off: bool) -> dict[str, Any]:
    """The one switch: ``off`` stops every automatic action at once; ``on`` restores the grants.
    ``off`` works on a delegations file that does not read (it then holds no grant)."""
    with store.lock():
        try:
            data = load(store)
        except InvalidFieldError:
            if not off:
                raise
            data = {"off": True, "grants": {}}
        data["off"] = off
        _save(store, data)
    return data


def grant_for(store: VaultStore, action_class: str, project: str) -> str | None:
    """The policy rule that allows ``action_class`` in ``project`` right now, or None. Read
    fresh from disk: call it under the vault lock, just before acting."""
    data = load(store)
    if data.get("off"):
        return None
    grant = data["grants"].get(project, {}).get(action_class)
    return f"delegated {action_class} for {project} at {grant['grantedAt']}" if grant else None
