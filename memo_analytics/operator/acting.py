"""Proposed and delegated actions (SPEC §6 phases 2 and 3).

Every digest item that maps to an action class carries a drafted ``proposal`` and the
``fingerprint`` of the state it was drafted on. :func:`apply_item` applies one for a
person; :func:`run_delegated` runs the classes a person delegated for a project. Both
re-read the state under the vault lock just before acting: a changed fingerprint is
refused and re-proposed (never retried blindly), a revoked grant or the ``off`` switch
stops the action, and every attempt writes one audit record.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any, Callable
from pathlib import Path

from ..domain.clock import from_iso, to_iso, utcnow
from ..domain.errors import AmbiguousIdError, InvalidFieldError, MemoError
from ..domain.ids import session_record_id
from ..domain.records import RecordKind
from ..services.handoffs import cancel_handoff
from ..services.projects import last_seen_root
from ..services.requests import CancelHandoffRequest, EditSessionRequest, EndSessionRequest
from ..services.rules import promoted_rules
from ..services.rules.extract import trap_rule
from ..services.rules.formats import rules_body
from ..services.rules.promote import allowed_destination, promote
from ..services.session_edit import edit_session
from ..services.sessions import end_session, summary_from_turns
from ..services.stories import render_story, story_data
from ..services.store import VaultStore
from ..vault.io import atomic_write_bytes, output_target
from ..vault.redact import redact_secrets
from . import audit, policy
from .digest import Item, build_items
from .snapshot import take_snapshot


class ItemGoneError(InvalidFieldError):
    """The item applied is no longer in the digest: handled meanwhile (another tab, the CLI) or
    no longer due — nothing was done, nothing is wrong (a page says so as news, not an error)."""

def _end_stale_session(store: VaultStore, params: dict[str, Any], now: datetime) -> dict[str, Any]:
    found = store.read(params["project"], RecordKind.SESSION, session_record_id(params["sessionId"]))
    summary = None if found is None or found[0].get("summary") else summary_from_turns(
        store, params["project"], params["sessionId"])
    ended = end_session(store, EndSessionRequest(session_id=params["sessionId"], project=params["project"],
                                                 until=params["until"], summary=summary), now=now,
                         by_person=True)  # the person's (or the operator's, on their behalf) end: at most a week
    return {"sessionId": ended["sessionId"], "endTime": ended["endTime"], "durationMinutes": ended["durationMinutes"]}

def _cancel_handoff(store: VaultStore, params: dict[str, Any], now: datetime) -> dict[str, Any]:
    cancelled = cancel_handoff(store, CancelHandoffRequest(id=params["id"], project=params["project"]), now=now)
    return {"id": cancelled["id"], "status": cancelled["status"]}

def _promote_rule(store: VaultStore, params: dict[str, Any], now: datetime) -> dict[str, Any]:
    """Promote the project's ready rules (``trapIds``, the digest item's traps) into its repository,
    beside the rules promoted before; each trap is marked promoted."""
    project = params["project"]
    root = last_seen_root(store, project)
    if root is None:
        raise InvalidFieldError("promote", f"project {project} has no known repository (lastSeenRoot)")
    if params.get("repository") is not None and str(root) != params["repository"]:
        raise InvalidFieldError("promote", f"project {project}'s repository is {root} now, not {params['repository']} "
                                           "as proposed; nothing was written (see the digest's new proposal)")
    found = []
    for trap_id in params["trapIds"]:
        record = store.read(project, RecordKind.TRAP, trap_id)
        if record is None:
            raise InvalidFieldError("trapIds", f"{trap_id} no longer exists")
        found.append(record)
    destination = params.get("destination", "CLAUDE.md")
    target, _ = allowed_destination(root, destination)
    rules = promoted_rules(store, project, target, {meta["id"] for meta, _ in found}) + [
        rule for rule in (trap_rule(meta, body) for meta, body in found) if rule["text"]]
    written = promote(root, destination, rules_body(rules, "claude"), store.root)
    for meta, body in found:
        meta.update(status="promoted", promotedTo=str(written), updated=to_iso(now))
        store.upsert(RecordKind.TRAP, meta, body)
    return {"trapIds": [meta["id"] for meta, _ in found], "path": str(written), "rules": len(rules)}

def _free_name(folder: Path, stem: str, vault: Path) -> Path:
    """``folder/stem.md``, or ``stem-2.md``, ``stem-3.md`` … : an export never replaces a file."""
    for n in range(1, 1000):
        candidate = folder / (f"{stem}.md" if n == 1 else f"{stem}-{n}.md")
        if not candidate.exists() and not candidate.is_symlink():
            return output_target(candidate, (vault,), (".md",))
    raise InvalidFieldError("storiesDir", f"{folder} already holds 999 stories of {stem}")

def _export_story(store: VaultStore, params: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The session's story in the stories folder: a new file (``stem``, ``stem-2`` …), unless one
    there already holds the same story — then that one (``unchanged: true``): applying the
    proposal again wrote one more copy each time."""
    folder = store.settings.operator.stories_dir
    folder.mkdir(parents=True, exist_ok=True)
    markdown = redact_secrets(render_story(story_data(store, params["sessionId"], params.get("project")),
                                           store.zone))[0].encode("utf-8")
    for n in range(1, 1000):
        there = folder / (f"{params['sessionId']}.md" if n == 1 else f"{params['sessionId']}-{n}.md")
        if not there.exists():
            break
        if not there.is_symlink() and there.is_file() and there.read_bytes() == markdown:
            return {"sessionId": params["sessionId"], "path": str(there), "unchanged": True}
    target = _free_name(folder, params["sessionId"], store.root)
    atomic_write_bytes(target, markdown)
    return {"sessionId": params["sessionId"], "path": str(target)}

def _set_client(store: VaultStore, params: dict[str, Any], now: datetime) -> dict[str, Any]:
    """File a session (and its turns) under ``client``: a ``session edit`` (SPEC §9)."""
    edited = edit_session(store, EditSessionRequest(session_id=params["sessionId"], project=params["project"],
                                                    client=params["client"]), now=now)
    return {"sessionId": edited["sessionId"], "client": edited.get("client"), "turnsUpdated": edited["turnsUpdated"]}

APPLY: dict[str, Callable[[VaultStore, dict[str, Any], datetime], dict[str, Any]]] = {
    "end_stale_session": _end_stale_session,
    "cancel_handoff": _cancel_handoff,
    "promote_rule": _promote_rule,
    "export_story": _export_story,
    "set_client": _set_client,
}

def _current_items(store: VaultStore, now: datetime) -> dict[str, list[Item]]:
    """The digest's items by id (``kind:subject``); an id may stand for items of several
    projects (the same session id in two projects, SPEC §2.1)."""
    found: dict[str, list[Item]] = {}
    for item in build_items(take_snapshot(store), now, store.settings.operator, store.zone):
        found.setdefault(item.id, []).append(item)
    return found

def _pick(items: list[Item], item_id: str, project: str | None, fingerprint: str | None) -> Item | None:
    """The one item of ``items`` (of the same id) the caller means: of ``project`` when given,
    else the one whose proposal carried ``fingerprint`` when several projects have the id.

    Raises
    ------
    AmbiguousIdError
        Several projects have an item of this id and neither chooses one.
    """
    if project:
        items = [i for i in items if i.project == project]
    if len(items) > 1:
        items = [i for i in items if i.fingerprint == fingerprint] or items
    if len(items) > 1:  # a further vault's item (read, never written) has no proposal: this vault's is meant
        items = [i for i in items if i.proposal is not None] or items
    if len(items) > 1:
        raise AmbiguousIdError(item_id, [i.project for i in items])
    return items[0] if items else None

def apply_item(store: VaultStore, item_id: str, fingerprint: str | None, now: datetime | None = None,
               as_of: datetime | None = None, project: str | None = None) -> dict[str, Any]:
    """Apply the proposal of digest item ``item_id`` for a person (SPEC §6 phase 2).

    ``fingerprint`` is the one the proposal carried when the person saw it; ``as_of`` the
    moment of the digest it was shown in (``memo digest --as-of``; default now). Under the vault
    lock the item is re-derived from the records; if its fingerprint changed the action is
    refused and the new proposal returned (``applied: false``). One audit record either way.

    Raises
    ------
    InvalidFieldError
        The item is not in the digest any more, has no proposal, or the action failed.
    AmbiguousIdError
        Items of several projects have this id, and neither ``project`` nor ``fingerprint``
        chooses one.
    """
    now = now or utcnow()
    with store.lock():
        item = _pick(_current_items(store, as_of or now).get(item_id, []), item_id, project, fingerprint)
        if item is None:
            raise ItemGoneError("item", f"{item_id} is not in the digest now (already handled, or not due)")
        if item.proposal is None:
            raise InvalidFieldError("item", f"{item_id} has no action to apply; by hand: {item.action}")
        cls, params = item.proposal["actionClass"], item.proposal["params"]
        common = dict(actor="person", action_class=cls, subject=item.subject, project=item.project,
                      policy_rule="proposal applied by the person", fingerprint=item.fingerprint, now=now)
        if fingerprint is None or fingerprint != item.fingerprint:
            audit.append(store, **common, outcome="refused: the state changed since the proposal",
                         detail={"proposedOn": fingerprint})
            return {"applied": False, "reason": "the state changed since the proposal; review the new one",
                    "item": item.wire()}
        try:
            result = APPLY[cls](store, params, now)
        except MemoError as exc:
            audit.append(store, **common, outcome=f"failed: {exc}")
            raise InvalidFieldError("item", f"{item_id}: {exc}") from None
        audit.append(store, **common, outcome="applied", detail=result)
    return {"applied": True, "item": item.wire(), "result": result}

def run_delegated(store: VaultStore, now: datetime | None = None) -> dict[str, Any]:
    """One pass of delegated actions (SPEC §6 phase 3): every digest item whose action class
    the person delegated for its project is applied, unless the grant was revoked or the
    operator switched off (checked under the vault lock just before acting), its state
    changed, or the session already had ``maxAutoActionsPerHour`` automatic actions in
    the last hour (then it stays a proposal and ``fallbacks`` says so).

    Returns
    -------
    dict
        ``{acted: [audit records], fallbacks: [{id, reason}]}``.
    """
    now = now or utcnow()
    limit = store.settings.operator.max_auto_actions_per_hour
    since = now - timedelta(hours=1)
    recent = Counter((r.get("project"), r["subject"]) for r in audit.read(store) if r.get("actor") == "operator"
                     and r.get("outcome") == "applied" and from_iso(r["at"]) >= since)
    acted, fallbacks = [], []
    for item in [i for same in _current_items(store, now).values() for i in same]:
        if item.proposal is None or policy.grant_for(store, item.proposal["actionClass"], item.project) is None:
            continue
        cls = item.proposal["actionClass"]
        if recent[item.project, item.subject] >= limit:
            fallbacks.append({"id": item.id, "project": item.project,
                              "reason": f"{recent[item.project, item.subject]} automatic actions on {item.subject} "
                                        "in the last hour: proposing instead"})
            continue
        with store.lock():
            rule = policy.grant_for(store, cls, item.project)  # re-checked under the lock: revocation wins
            common = dict(actor="operator", action_class=cls, subject=item.subject, project=item.project,
                          policy_rule=rule or "none", fingerprint=item.fingerprint, now=now)
            if rule is None:
                acted.append(audit.append(store, **common, outcome="refused: delegation revoked or operator off"))
                continue
            fresh = next((i for i in _current_items(store, now).get(item.id, []) if i.project == item.project), None)
            if fresh is None or fresh.fingerprint != item.fingerprint:
                acted.append(audit.append(store, **common, outcome="refused: the state changed; re-proposed"))
                continue
            try:
                result = APPLY[cls](store, item.proposal["params"], now)
            except MemoError as exc:
                acted.append(audit.append(store, **common, outcome=f"failed: {exc}"))
                continue
            acted.append(audit.append(store, **common, outcome="applied", detail=result))
            recent[item.project, item.subject] += 1
    return {"acted": acted, "fallbacks": fallbacks}
