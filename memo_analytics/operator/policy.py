"""Delegations (SPEC §6 phase 3): which action classes the operator may run by itself, per
project, granted explicitly by the person. Stored in ``.memo/delegations.json``; every
change and every check of a grant before an automatic action happens under the vault lock,
so once ``revoke`` or ``off`` returns, no action under that grant can land."""

from __future__ import annotations

from typing import Any

from ..domain.clock import to_iso, utcnow
from ..domain.errors import InvalidFieldError
from ..domain.ids import validate_slug
from ..services.store import VaultStore
from ..vault.io import read_json_state, write_json_state

DELEGATIONS_FILE = "delegations.json"
ACTION_CLASSES = ("end_stale_session", "cancel_handoff", "promote_rule", "export_story")


def _path(store: VaultStore):
    return store.layout.meta_dir / DELEGATIONS_FILE


def load(store: VaultStore) -> dict[str, Any]:
    """``{off, grants: {project: {class: {grantedAt}}}}`` (nothing granted when missing)."""
    return read_json_state(_path(store), "grants") or {"off": False, "grants": {}}


def _save(store: VaultStore, data: dict[str, Any]) -> None:
    write_json_state(_path(store), data)


def _check(action_class: str, project: str) -> str:
    if action_class not in ACTION_CLASSES:
        raise InvalidFieldError("actionClass", f"{action_class!r} is not one of {', '.join(ACTION_CLASSES)}")
    return validate_slug(project, "project")


def allow(store: VaultStore, action_class: str, project: str, now=None) -> dict[str, Any]:
    """Delegate ``action_class`` for ``project`` (the person's explicit grant)."""
    project = _check(action_class, project)
    with store.lock():
        data = load(store)
        data["grants"].setdefault(project, {})[action_class] = {"grantedAt": to_iso(now or utcnow())}
        _save(store, data)
    return data


def revoke(store: VaultStore, action_class: str, project: str) -> dict[str, Any]:
    """Withdraw a delegation; takes effect at once (under the vault lock)."""
    project = _check(action_class, project)
    with store.lock():
        data = load(store)
        data["grants"].get(project, {}).pop(action_class, None)
        if not data["grants"].get(project):
            data["grants"].pop(project, None)
        _save(store, data)
    return data


def set_off(store: VaultStore, off: bool) -> dict[str, Any]:
    """The one switch: ``off`` stops every automatic action at once; ``on`` restores the grants."""
    with store.lock():
        data = load(store)
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
