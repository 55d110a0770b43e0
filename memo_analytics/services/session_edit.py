"""``memo session edit``: correct a session's billing data in place (SPEC §9, issue 15 point 5).

A session's ``client``, ``billable`` flag and ``summary`` can be changed after the fact — an
import that billed to ``internal``, a one-word description, work that should not be billed.
The session record and each of its turns get the new ``client`` and ``billable`` (reports read
the session; prompt counts per client read the turns; both then agree), ``updated`` moves, and
the write goes through the store like every write (validation, redaction of the summary, the
index in the same step, the sync listeners).

A session can also move to another project (``to_project``: work imported under a temporary
folder's name that belongs to a real project): the session record and its turns are written into
the target project and removed from the source, as ``memo project merge`` does for a whole
project; a target that already holds a session of the same id is refused before anything moves.

A session on an issued invoice that no credit note cancels keeps its client, billable flag and
project: the invoice that was sent says otherwise (``memo invoice credit`` first); its summary
can still be edited.
"""

from __future__ import annotations

from typing import Any

from ..domain.clock import to_iso, utcnow
from ..domain.errors import InvalidFieldError, SessionNotStartedError
from ..domain.ids import prompt_id, session_record_id, validate_session_id, validate_slug
from ..domain.records import RecordKind
from ..index import store as index
from ..vault import ledger
from .prompts import clean_client, clean_text
from .requests import EditSessionRequest
from .store import VaultStore


#: Longest description an edit sets (it is printed on every timesheet and invoice line).
MAX_SUMMARY_CHARS = 2000


def edit_session(store: VaultStore, request: EditSessionRequest, now=None) -> dict[str, Any]:
    """Change ``client``, ``billable``, ``summary`` and/or the project of one session and its turns.

    Returns
    -------
    dict
        The session's frontmatter after the edit, with ``changed`` (the wire names that
        changed) and ``turnsUpdated`` (int).

    Raises
    ------
    InvalidFieldError
        Nothing to change (``session``); a bad client, summary or project; a billing change or
        a move of a session on an issued invoice (``client``/``billable``/``project``, naming
        the invoice); a target project already holding a session of this id (``project``).
    SessionNotStartedError
        No such session.
    AmbiguousIdError
        The id names sessions of several projects and none is given.
    """
    now = now or utcnow()
    wanted: dict[str, Any] = {}
    if request.client is not None:  # "" or "internal": no client
        client = clean_client(request.client)
        wanted["client"] = None if not client or client.lower() == "internal" else client
    if request.billable is not None:
        wanted["billable"] = bool(request.billable)
    if request.summary is not None:
        wanted["summary"] = clean_text(request.summary, "summary")
        if wanted["summary"] and len(wanted["summary"]) > MAX_SUMMARY_CHARS:
            raise InvalidFieldError("summary", f"is {len(wanted['summary'])} characters; a session's description is at "
                                               f"most {MAX_SUMMARY_CHARS} (it is printed on invoices)")
    if request.to_project is not None:
        wanted["project"] = validate_slug(request.to_project, "project")
    if not wanted:
        raise InvalidFieldError("session", "nothing to change: give --client, --billable/--no-billable, --summary "
                                           "or --to-project")
    session_id = store.session_id_for(validate_session_id(request.session_id or ""))  # or its record's id
    record_id = session_record_id(session_id)
    with store.lock():
        row = store.locate(record_id, RecordKind.SESSION, project=request.project, cwd=request.cwd)
        if row is None:
            raise SessionNotStartedError(session_id)
        project = row["project"]
        meta, body = store.read(project, RecordKind.SESSION, record_id) or ({}, "")
        changed = {k: v for k, v in wanted.items() if meta.get(k) != v}
        billing = sorted(set(changed) & {"client", "billable", "project"})
        if billing:
            invoice = ledger.invoiced_in(store.root).get((project, session_id))
            if invoice:
                raise InvalidFieldError(billing[0], f"session {session_id} is on invoice {invoice}, which was issued "
                                                    f"with its {billing[0]}; credit it first (memo invoice credit "
                                                    f"{invoice})")
        if not changed:
            return {**meta, "changed": [], "turnsUpdated": 0}
        target = changed.get("project")
        if target is not None and (store.read(target, RecordKind.SESSION, record_id) is not None
                                   or index.session_turn_numbers(store.conn, target, session_id)):
            raise InvalidFieldError("project", f"project {target} already holds a session {session_id} (or turns "
                                               "of one); nothing was moved")
        meta.update(changed)
        meta["updated"] = to_iso(now)
        turns = 0
        # turns first, the session last: a move cut short leaves the session where it was
        for turn in sorted(index.session_turn_numbers(store.conn, project, session_id)) if billing else ():
            turn_id = prompt_id(session_id, turn, now)
            found = store.read(project, RecordKind.PROMPT, turn_id)
            if found is None:
                continue
            turn_meta, turn_body = found
            update = {k: changed[k] for k in billing if turn_meta.get(k) != changed[k]}
            if update:
                store.upsert(RecordKind.PROMPT, {**turn_meta, **update, "updated": to_iso(now)}, turn_body)
                turns += 1
            if target is not None:
                store.remove(RecordKind.PROMPT, project, turn_id)
        store.upsert(RecordKind.SESSION, meta, body)
        if target is not None:
            store.remove(RecordKind.SESSION, project, record_id)
            store.refresh_views(project)
    return {**meta, "changed": sorted(changed), "turnsUpdated": turns}
