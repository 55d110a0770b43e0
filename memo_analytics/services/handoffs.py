"""The session hand-off baton (SPEC §2.5).

``session_end`` with a ``handoff`` writes ``handoffs/handoff-{sessionId}.md`` (status
``pending``) and records its id as the session's ``handoffArchive``. The next eligible
``session_start`` in the same project claims it — exactly once, under the vault lock — and
gets it back as ``handoff``. Eligible: pending; not written by the starting session; and,
unless the baton is ``shared``, its ``branch`` (when set) equals the start's branch and its
``owner`` (when set) is the start's owner (in any case). The oldest eligible baton is claimed first.

A baton written without an address takes the session's branch and owner — the owner, when the
session has none, from the cwd repository's git identity (``user.email``, else ``user.name``);
a start without ``owner`` is that identity too. ``cancel_handoff`` without an id cancels the
caller's pending batons for its owner and branch (none: nothing to do, no error).
"""

from __future__ import annotations

from typing import Any

from ..domain.clock import to_iso
from ..domain.errors import InvalidFieldError, MemoError, RecordNotFoundError
from ..domain.ids import validate_session_id, validate_slug
from ..domain.records import RecordKind
from ..index import store as index
from ..index.query import clamp_page
from .prompts import clean_line, clean_list, clean_owner, clean_text, envelope, noted_clamp, row_to_record, same_person
from .requests import CancelHandoffRequest, HandoffInput, HandoffListRequest
from .store import VaultStore, from_another_machine


def handoff_id(session_id: str) -> str:
    """``handoff-{sessionId}``: one baton per ending session."""
    return f"handoff-{session_id}"


def _named_handoff(store: VaultStore, given: str, project: str | None, cwd: str | None) -> tuple[str, Any]:
    """``(record id, index row or None)`` of the baton ``given`` names: the session that wrote
    it, or the hand-off's own id as listings print it (``handoff-fx`` was read as the session
    ``handoff-fx``: "Record not found: handoff-handoff-fx")."""
    record_id = handoff_id(validate_session_id(given))
    row = store.locate(record_id, RecordKind.HANDOFF, project, cwd)
    if row is None and given.startswith("handoff-"):
        own = store.locate(validate_slug(given, "id"), RecordKind.HANDOFF, project, cwd)
        if own is not None:
            return given, own
    return record_id, row


def _as_list(value: list[str] | str, field: str) -> list[str]:
    return clean_list([value] if isinstance(value, str) else list(value), field)


def _body(meta: dict[str, Any]) -> str:
    parts = [f"# Hand-off from session {meta['fromSessionId']}", "", "## Next steps"]
    parts += [f"- {item}" for item in meta["nextSteps"]]
    for title, key in (("Failed approaches", "failedApproaches"), ("Open questions", "openQuestions")):
        if meta[key]:
            parts += ["", f"## {title}", *[f"- {item}" for item in meta[key]]]
    return "\n".join(parts)


def write_handoff(store: VaultStore, project: str, session_id: str, baton: HandoffInput, now,
                  left=None) -> dict[str, Any]:
    """Write (or replace a still pending) baton for ``session_id``; call under the vault lock.
    ``left``: when it was left — its session's end, when that is earlier than ``now`` (an end
    given with ``until``): its ``created``, which a later session's start is compared with.

    Raises
    ------
    InvalidFieldError
        ``nextSteps`` empty, or the session's earlier baton was already claimed.
    """
    next_steps = _as_list(baton.next_steps, "handoff.nextSteps")
    if not next_steps:
        raise InvalidFieldError("handoff.nextSteps", "must not be empty")
    record_id = handoff_id(session_id)
    existing = store.read(project, RecordKind.HANDOFF, record_id)
    if existing is not None and existing[0].get("status") == "claimed":
        raise InvalidFieldError("handoff", f"{record_id} was already claimed by {existing[0].get('claimedBy')}")
    meta = {
        "id": record_id, "kind": "handoff", "project": project, "status": "pending",
        "created": existing[0]["created"] if existing else to_iso(min(left or now, now)), "updated": to_iso(now),
        "fromSessionId": session_id,
        "branch": clean_text(baton.branch, "handoff.branch"),
        "owner": clean_owner(baton.owner, "handoff.owner"),
        "shared": baton.shared,
        "nextSteps": next_steps,
        "failedApproaches": _as_list(baton.failed_approaches, "handoff.failedApproaches"),
        "openQuestions": _as_list(baton.open_questions, "handoff.openQuestions"),
        "claimedBy": None, "claimedAt": None,
    }
    store.upsert(RecordKind.HANDOFF, meta, _body(meta))
    return meta


def _eligible(meta: dict[str, Any], session_id: str, branch: str | None, owner: str | None) -> bool:
    """A pending baton of another session goes to a start on its branch, by its owner (each
    when set), unless it is ``shared``: then any start of the project claims it."""
    if meta.get("status") != "pending" or meta.get("fromSessionId") == session_id:
        return False
    if meta.get("shared"):
        return True
    if meta.get("branch") and meta["branch"] != branch:
        return False
    return not meta.get("owner") or same_person(meta["owner"], owner)  # Bob@team.test is bob@team.test


def claim_handoff(store: VaultStore, project: str, session_id: str, branch: str | None, owner: str | None,
                  now, started: str | None = None) -> dict[str, Any] | None:
    """Claim the oldest eligible pending baton of ``project`` for ``session_id`` (under the lock);
    with ``started`` (ISO), only a baton left before that start (a session pushed later, of
    work done before the baton, takes none)."""
    rows = index.rows_of_kind(store.conn, RecordKind.HANDOFF.value, project, "pending")
    for row in rows:
        found = store.read(project, RecordKind.HANDOFF, row["id"])
        if found is None:
            continue
        meta, body = found
        if started is not None and str(meta.get("created") or "") > started:
            continue
        if _eligible(meta, session_id, branch, owner):
            meta.update(status="claimed", claimedBy=session_id, claimedAt=to_iso(now), updated=to_iso(now))
            store.upsert(RecordKind.HANDOFF, meta, body)
            return {**meta, "body": body, **_left_by(store, project, meta.get("fromSessionId"))}
    return None


def _left_by(store: VaultStore, project: str, session_id: Any) -> dict[str, Any]:
    """``{leftBy}``: whose session left a baton (its owner; None when it names none), or
    ``{leftBy: None, leftElsewhere: True}`` when this vault does not hold that session (a baton a
    team daemon gave): what the agent reading its steps is told of where they come from."""
    try:
        found = store.read(project, RecordKind.SESSION, f"session-{session_id}") if session_id else None
    except MemoError:
        found = None
    if found is None:
        return {"leftBy": None, "leftElsewhere": True}
    owner = found[0].get("owner")
    return {"leftBy": owner if isinstance(owner, str) and owner.strip() else None}


def cancel_handoff(store: VaultStore, request: CancelHandoffRequest, now=None) -> dict[str, Any]:
    """Cancel a pending baton (by id, or by the session that wrote it); with neither, the
    caller's pending batons of the project for its owner and branch (``{cancelled: [ids],
    total}``; none is no error: nothing to do).

    Raises
    ------
    RecordNotFoundError
        No such hand-off.
    InvalidFieldError
        Neither id nor sessionId given, or the baton is no longer pending.
    """
    from ..domain.clock import utcnow

    now = now or utcnow()
    if not request.id and not request.session_id:
        return _cancel_mine(store, request, now)
    with store.lock():
        if request.id:
            record_id = validate_slug(request.id, "id")
            row = store.locate(record_id, RecordKind.HANDOFF, request.project, request.cwd)
        else:
            record_id, row = _named_handoff(store, request.session_id, request.project, request.cwd)
        if row is None:
            raise RecordNotFoundError(record_id, request.project or None)
        meta, body = store.read(row["project"], RecordKind.HANDOFF, record_id) or ({}, "")
        if meta.get("status") != "pending":
            raise InvalidFieldError("handoff", f"{record_id} is {meta.get('status')}, not pending")
        _refuse_a_strangers_cancel(store, row["project"], meta, request.owner)
        meta.update(status="cancelled", cancelledAt=to_iso(now), updated=to_iso(now))
        store.upsert(RecordKind.HANDOFF, meta, body)
    return {**meta, "body": body}


def _refuse_a_strangers_cancel(store: VaultStore, project: str, meta: dict[str, Any], owner: str | None) -> None:
    """A call from another machine (a team daemon bound off loopback) cancels a baton only as the
    person it is addressed to or the one who left it (its session's owner): a call naming no
    one, or a third person, had cancelled another person's baton.

    Raises
    ------
    InvalidFieldError
        ``owner``: who may cancel it.
    """
    if not from_another_machine():
        return
    found = store.read(project, RecordKind.SESSION, f"session-{meta.get('fromSessionId')}")
    people = [name for name in (meta.get("owner"), found[0].get("owner") if found else None)
              if isinstance(name, str) and name.strip()]
    if people and not any(same_person(owner, name) for name in people):
        raise InvalidFieldError("owner", f"{meta['id']} is {' and '.join(dict.fromkeys(people))}'s to cancel "
                                         f"(its addressee, the one who left it); this call names "
                                         f"{clean_owner(owner) or 'no owner'}")


def get_handoff(store: VaultStore, session_id: str, project: str | None = None, cwd: str | None = None) -> dict[str, Any]:
    """The hand-off session ``session_id`` wrote (``handoff-<sessionId>``) — or the hand-off of
    that id (``handoff-…``) —, in ``project`` when given, else where it is (:meth:`VaultStore.locate`).

    Raises
    ------
    RecordNotFoundError
        No such hand-off.
    AmbiguousIdError, InvalidFieldError
        As :meth:`VaultStore.locate`; an unsafe session id.
    """
    record_id, row = _named_handoff(store, session_id, project, cwd)
    if row is None:
        raise RecordNotFoundError(record_id, project or None)
    return row_to_record(row)


def list_handoffs(store: VaultStore, project: str | None, status: str | None = "pending") -> list[dict[str, Any]]:
    """Hand-offs of a project (every project when None), oldest first, filtered by status."""
    rows = index.rows_of_kind(store.conn, RecordKind.HANDOFF.value, validate_slug(project, "project") if project else None,
                              status or None)
    return [row_to_record(r) for r in rows]


def handoff_list(store: VaultStore, request: HandoffListRequest) -> dict[str, Any]:
    """``handoffs``: ``{total, limit, offset, hasMore, items}`` (SPEC §2.6's envelope: ``limit``
    1–100, 100 by default) — the hand-offs of the request's scope (a project,
    the cwd's repository, or every project), oldest first, with ``status`` (pending by
    default). Each item is the hand-off record (``fromSessionId``, ``branch``, ``owner``,
    ``shared``, ``status``, ``body``, …).

    Raises
    ------
    InvalidFieldError
        An invalid project id.
    """
    scope = store.scope(request.project, request.cross_project, request.cwd)
    items = [h for project in (scope or [None]) for h in list_handoffs(store, project, request.status)]
    # paged as list and search page (found by integrators: limit was ignored, no hasMore; without one it
    # answered "limit": 0 of an empty page, the number of items of another) — by default the largest page:
    # an agent that asks once gets every baton of a project, the newest too (found by a breaker)
    from ..index.query import MAX_LIMIT

    limit, offset = clamp_page(MAX_LIMIT if request.limit is None else request.limit, request.offset)
    return noted_clamp(envelope(len(items), limit, offset, items[offset:offset + limit]), request)


def _cancel_mine(store: VaultStore, request: CancelHandoffRequest, now) -> dict[str, Any]:
    """The pending batons of the caller's project addressed to its owner and branch (each
    defaulting to the cwd repository's git identity and branch), cancelled."""
    from .store import git_head, git_identity, repository_root

    root = repository_root(request.cwd)
    owner = clean_owner(request.owner) or git_identity(root)
    branch = clean_line(request.branch, "branch") or git_head(root)[0]
    project = store.resolve_project(request.project, request.cwd)
    cancelled = []
    with store.lock():
        for row in index.rows_of_kind(store.conn, RecordKind.HANDOFF.value, project, "pending"):
            found = store.read(project, RecordKind.HANDOFF, row["id"])
            if found is None:
                continue
            meta, body = found
            if (meta.get("owner") or None) == owner and (meta.get("branch") or None) == branch:
                meta.update(status="cancelled", cancelledAt=to_iso(now), updated=to_iso(now))
                store.upsert(RecordKind.HANDOFF, meta, body)
                cancelled.append(meta["id"])
    return {"cancelled": cancelled, "total": len(cancelled), "project": project, "owner": owner, "branch": branch}
