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

A completed session's times can be corrected too (``start_time``, ``end_time``, or ``minutes``
from its start): an old SpecStory file that kept no time per message gives a session of 0
minutes; a session left running over lunch bills the lunch. ``durationMinutes`` is worked out
from the new span, as ``session end`` does, and the session is marked ``timesEdited`` (when):
a later import of its transcript keeps the person's times, as it keeps a summary a person wrote.

A session on an issued invoice that no credit note cancels keeps its client, billable flag,
project and times: the invoice that was sent says otherwise (``memo invoice credit`` first); its
summary can still be edited, and an edit that puts it back as the invoice billed it (a vault-git
pull had brought it otherwise) is taken.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from ..domain.clock import from_iso, local_text, minutes_between, parse_record_instant, to_iso, utcnow
from ..domain.errors import AmbiguousIdError, CorruptRecordError, InvalidFieldError
from ..domain.ids import prompt_id, session_record_id, validate_session_id, validate_slug
from ..domain.records import RecordKind
from ..index import store as index
from ..vault import ledger
from .prompts import canonical_client, clean_client, clean_text, is_new_client, refuse_unreadable_record

from .requests import EditSessionRequest
from .sessions import MAX_SESSION_MINUTES
from .store import VaultStore

#: Longest description an edit sets (it is printed on every timesheet and invoice line).
MAX_SUMMARY_CHARS = 2000
#: Longest session an edit sets: a week, in minutes (a typo of a year is refused, not billed),
#: as the longest a person's or an agent's end makes.
MAX_EDITED_MINUTES = MAX_SESSION_MINUTES

#: How an invoice names what it billed a session with (a refused edit says which).
_BILLED_AS = {"client": "client", "billable": "billable flag", "project": "project"}

#: What an edit can change, by its wire names (a request that gives none is refused naming them).
NOTHING_TO_CHANGE = "client, billable, summary, toProject, startTime, endTime, minutes or reviewed"


def edit_session(store: VaultStore, request: EditSessionRequest, now=None) -> dict[str, Any]:
    """Change ``client``, ``billable``, ``summary``, the project, and/or the times of one session
    (``startTime``/``endTime`` and the ``durationMinutes`` between them, UTC; SPEC §9).

    Returns
    -------
    dict
        The session's frontmatter after the edit, with ``changed`` (the wire names that
        changed), ``turnsUpdated`` (int) and ``turnsOutside`` (int: after a time edit, the
        session's turns that now lie outside its start and end — said, not refused),
        ``newClient`` (the client set is known to neither the config nor the vault: said, not refused)
        and, after a move into a project ``projectClients`` files under another client than the
        session's, ``projectBills`` (that client: :func:`project_bills_elsewhere`).

    Raises
    ------
    InvalidFieldError
        Nothing to change (``session``); a bad client, summary or project; a billing change or
        a move of a session on an issued invoice (``client``/``billable``/``project``/
        ``startTime``/``endTime``, naming the invoice) — unless the edit puts it back as the
        invoice billed it; a target project already holding a
        session of this id (``project``); times of an open session, an end before the start, in
        the future or more than a week after it, ``minutes`` with ``endTime``
        (``startTime``/``endTime``/``minutes``); no such session (``session``).
    InvalidDateError
        An unparseable ``startTime`` or ``endTime`` (a time without offset is in ``store.zone``).
    AmbiguousIdError
        The id names sessions of several projects and none is given.
    """
    now = now or utcnow()
    wanted: dict[str, Any] = {}
    new_client = False
    if request.client is not None:  # "" or "internal": no client
        client = clean_client(request.client)
        new_client = bool(client) and is_new_client(store, client)  # asked before it is written
        # "internal" by name is deliberate, as a start's --client internal writes it: an invoice of the
        # project's client is not stopped by it, nor does memo project client re-file it (a breaker);
        # "" is no client
        wanted["client"] = None if not client else "internal" if client.lower() == "internal" else \
            canonical_client(store, client)
    if request.billable is not None:
        wanted["billable"] = bool(request.billable)
    if request.summary is not None:
        wanted["summary"] = clean_text(request.summary, "summary")
        if wanted["summary"] and len(wanted["summary"]) > MAX_SUMMARY_CHARS:
            raise InvalidFieldError("summary", f"is {len(wanted['summary'])} characters; a session's description is at "
                                               f"most {MAX_SUMMARY_CHARS} (it is printed on invoices)")
    if request.to_project is not None:
        wanted["project"] = validate_slug(request.to_project, "project")
    if request.reviewed is not None:  # the digest's pr_awaiting_review ends once it is (SPEC §6)
        wanted["reviewedAt"] = to_iso(now) if request.reviewed else None
    if request.minutes is not None and request.end_time is not None:
        raise InvalidFieldError("minutes", "give the end time or the minutes from the start, not both")
    times = request.start_time is not None or request.end_time is not None or request.minutes is not None
    if not wanted and not times:
        raise InvalidFieldError("session", f"nothing to change: give {NOTHING_TO_CHANGE}")
    session_id = store.session_id_for(validate_session_id(request.session_id or ""))  # or its record's id
    record_id = session_record_id(session_id)
    with store.lock():
        try:
            row = store.locate(record_id, RecordKind.SESSION, project=request.project, cwd=request.cwd)
        except AmbiguousIdError:
            row = _moving(store, record_id, wanted.get("project"))
            if row is None or request.project:
                raise
        if row is None:
            for project in ([validate_slug(request.project, "project")] if request.project else
                            sorted(p.name for p in store.layout.projects_dir.glob("*") if p.is_dir())):
                if store.path_for(project, RecordKind.SESSION, record_id).is_file():
                    store.read(project, RecordKind.SESSION, record_id)  # a file the index left out: why (Cannot parse …)
            refuse_unreadable_record(store, record_id, request.project or None, (RecordKind.SESSION,))  # renamed
            raise InvalidFieldError("session", f"no session {session_id} in the vault (memo session show lists them)")
        project = row["project"]
        meta, body = store.read(project, RecordKind.SESSION, record_id) or ({}, "")
        moving = meta.get("movingTo")
        if moving and wanted.get("project") != moving:  # a move cut short: finish it before anything else
            raise InvalidFieldError("project", f"a move of session {session_id} to project {moving} was cut short; "
                                               f"finish it first: memo session edit {session_id} --project {project} "
                                               f"--to-project {moving}")
        if times:
            edited = _edited_times(store, request, meta, now)
            if edited["startTime"] != meta.get("startTime"):  # an end alone took the start to the minute
                invoiced = ledger.invoiced_items(ledger.documents(store.root)).get((project, session_id))
                kept = _edited_times(store, request, meta, now, start_to_minute=False)
                if invoiced and _back_as_invoiced(invoiced, {**meta, **wanted, **kept}):
                    # the digest's --end that puts an invoiced session back: its start as invoiced, to the
                    # millisecond (found by a billing person: refused as a change of its start)
                    edited = kept
            wanted.update(edited)
        if wanted.get("reviewedAt") and meta.get("reviewedAt"):
            wanted.pop("reviewedAt")  # reviewed already: it keeps when
        changed = {k: v for k, v in wanted.items() if meta.get(k) != v}
        billing = sorted(set(changed) & {"client", "billable", "project"})
        # the session says it already, its turns do not (an edit cut short between them): they follow it
        lagging = {k: wanted[k] for k in ("client", "billable") if k in wanted and k not in changed
                   and index.turn_differs(store.conn, project, session_id, k, wanted[k])}
        sent = [k for k in ("client", "billable", "project", "startTime", "endTime", "durationMinutes") if k in changed]
        if sent:
            docs = ledger.documents(store.root)
            # an issued document lost (its PDF kept, its .md gone): whether it bills this session is not
            # known — the edit waits as an issue does (found by a breaker: edited, then put back, it differed)
            ledger.refuse_lost_documents(store.root, docs)
            invoiced = ledger.invoiced_items(docs).get((project, session_id))
            invoice = invoiced[0] if invoiced and not _back_as_invoiced(invoiced, {**meta, **changed}) else None
            if invoice:
                timed = sent[0] in ("startTime", "endTime", "durationMinutes")
                # named as asked: --minutes changes the end, but the person gave minutes
                asked = "minutes" if timed and request.minutes is not None and sent[0] != "startTime" else sent[0]
                raise InvalidFieldError(asked, f"session {session_id} is on invoice {invoice}, which was issued "
                                               f"with its {'times' if timed else _BILLED_AS[sent[0]]}; credit it first (memo "
                                               f"invoice credit {invoice})")
            team = ledger.team_invoiced(store.root).get((project, session_id)) if not invoiced else None
            if team is not None:  # a hybrid laptop's session the team daemon invoiced (its last pull said so)
                raise InvalidFieldError(sent[0], f"session {session_id} is on the team daemon's invoice {team[0]}; "
                                                 "the daemon keeps what it billed: ask the person who issues the "
                                                 f"team's invoices to credit {team[0]} first")
        if not changed and lagging:
            turns = _turns_follow(store, project, session_id, lagging, now)
            return {**meta, "changed": [], "turnsUpdated": turns, "turnsOutside": 0, "newClient": False}
        if not changed:
            return {**meta, "changed": [], "turnsUpdated": 0, "turnsOutside": 0, "newClient": False}
        target = changed.get("project")
        if target is not None:
            _check_move_target(store, project, target, session_id, record_id, ({**meta, **changed}, body))
        if target is not None and meta.get("movingTo") != target:
            # marked before any turn moves: a run cut short (killed) is finished by running it again
            store.upsert(RecordKind.SESSION, {**meta, "movingTo": target, "updated": to_iso(now)}, body)
        meta.update(changed)
        meta.pop("movingTo", None)
        if set(changed) & {"startTime", "endTime", "durationMinutes"}:
            meta["timesEdited"] = to_iso(now)  # a later import keeps these times
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
        baton_id = meta.get("handoffArchive")
        baton = store.read(project, RecordKind.HANDOFF, baton_id) if target is not None and baton_id else None
        if baton is not None and baton[0].get("status") == "pending":
            # the hand-off it left goes with it (the next session of that project takes it); one a session
            # of this project already claimed stays with that session
            store.upsert(RecordKind.HANDOFF, {**baton[0], "project": target, "updated": to_iso(now)}, baton[1])
            store.remove(RecordKind.HANDOFF, project, baton_id)
        store.upsert(RecordKind.SESSION, meta, body)
        if target is not None:
            store.remove(RecordKind.SESSION, project, record_id)
            store.refresh_views(project)
    outside = index.turns_outside(store.conn, target or project, session_id, meta["startTime"], meta["endTime"]) \
        if times and meta.get("endTime") else 0
    edited = {**meta, "changed": sorted(changed), "turnsUpdated": turns, "turnsOutside": outside,
              "newClient": new_client and "client" in changed}
    elsewhere = project_bills_elsewhere(store.settings, edited, request.client)
    return {**edited, "projectBills": elsewhere} if elsewhere else edited


def project_bills_elsewhere(settings: Any, edited: dict[str, Any], asked_client: str | None) -> str | None:
    """The client ``projectClients`` files the project a session was just moved to under, when
    the move kept another client (``asked_client`` None: the edit named none), else None — said
    by every surface beside the edit (``projectBills`` on the wire), with the edit that files it
    there (found by a freelancer: the old client billed on without a word).

    ``edited``: what :func:`edit_session` returned (``changed``, ``project``, ``client``)."""
    if asked_client is not None or "project" not in edited.get("changed", ()):
        return None
    mapped = settings.client_of_project(edited["project"])
    if mapped is None or mapped.casefold() == str(edited.get("client") or "internal").casefold():
        return None
    return mapped


def _turns_follow(store: VaultStore, project: str, session_id: str, values: dict[str, Any], now) -> int:
    """Write ``values`` into the session's turns that hold others (under the vault lock); how many."""
    turns = 0
    for turn in sorted(index.session_turn_numbers(store.conn, project, session_id)):
        found = store.read(project, RecordKind.PROMPT, prompt_id(session_id, turn, now))
        if found is None:
            continue
        update = {k: v for k, v in values.items() if found[0].get(k) != v}
        if update:
            store.upsert(RecordKind.PROMPT, {**found[0], **update, "updated": to_iso(now)}, found[1])
            turns += 1
    return turns


def _moving(store: VaultStore, record_id: str, target: str | None):
    """The index row of the one copy of a session being moved to ``target`` (a move cut short
    after it was written there, before it left its project: the id is in both), or None."""
    if target is None:
        return None
    rows = [row for row in index.rows_with_id(store.conn, record_id, RecordKind.SESSION.value)
            if (store.read(row["project"], RecordKind.SESSION, record_id) or ({}, ""))[0].get("movingTo") == target]
    return rows[0] if len(rows) == 1 else None


def _check_move_target(store: VaultStore, project: str, target: str, session_id: str, record_id: str,
                       moving: tuple[dict[str, Any], str]) -> None:
    """Refuse a move into ``target`` when it holds another session of this id (not ``moving``, the
    session as it will be written there), or a turn of this id that differs from the one in
    ``project``. What it holds that is the same, or turns ``project`` no longer has, are those of a
    move cut short (killed): running it again finishes it.

    Raises
    ------
    InvalidFieldError
        ``project``, naming what ``target`` already holds.
    """
    ignored = {"project", "updated", "movingTo"}
    there = store.read(target, RecordKind.SESSION, record_id)
    if there is not None and (there[1] != moving[1] or {k: v for k, v in there[0].items() if k not in ignored} != {
            k: v for k, v in moving[0].items() if k not in ignored}):
        raise InvalidFieldError("project", f"project {target} already holds a session {session_id}; nothing was moved")
    for turn in index.session_turn_numbers(store.conn, target, session_id):
        turn_id = prompt_id(session_id, turn, None)
        there, here = store.read(target, RecordKind.PROMPT, turn_id), store.read(project, RecordKind.PROMPT, turn_id)
        if here is None and moving[0].get("movingTo") == target:
            continue  # moved by the run cut short; it marked the session before moving any turn
        if there is None:
            continue
        if here is None:
            raise InvalidFieldError("project", f"project {target} already holds a turn {turn} of a session "
                                               f"{session_id} ({turn_id}); nothing was moved")
        if there[1] != here[1] or {k: v for k, v in there[0].items() if k not in ignored | {"client", "billable"}} != {
                k: v for k, v in here[0].items() if k not in ignored | {"client", "billable"}}:
            raise InvalidFieldError("project", f"project {target} already holds another turn {turn} of a session "
                                               f"{session_id} ({turn_id}); nothing was moved")

def _edited_times(store: VaultStore, request: EditSessionRequest, meta: dict[str, Any], now,
                  start_to_minute: bool = True) -> dict[str, Any]:
    """``startTime``, ``endTime`` and ``durationMinutes`` a time edit gives an ended session (one with
    an ``endTime``: one written ``active`` with it by hand bills as ended, and the digest asks to
    correct its times — an edit then makes it ``completed``). An end given alone runs from the start
    to the minute (``start_to_minute``), as the reports print it."""
    field = "minutes" if request.minutes is not None else "endTime" if request.end_time is not None else "startTime"
    if meta.get("status") not in ("completed", "active") or not meta.get("endTime"):  # named as given: minutes too
        raise InvalidFieldError(field, f"session {meta.get('sessionId')} is still open; end it first "
                                       f"(memo session end {meta.get('sessionId')} --until TIME)")
    start = parse_record_instant(request.start_time, "startTime", store.zone, wall_clock=True) if request.start_time is not None \
        else from_iso(str(meta["startTime"]))
    if request.start_time is None and request.end_time is not None and start_to_minute:
        # an end set to the minute: the start the reports print (to the minute) is where it runs from
        # (a start at 21:56:41 and --end 22:30 billed 33 minutes, printed 21:56 – 22:29)
        start = start.replace(second=0, microsecond=0)
    if request.minutes is not None:
        end = start + timedelta(minutes=request.minutes)
    elif request.end_time is not None:
        end = parse_record_instant(request.end_time, "endTime", store.zone, wall_clock=True)
    else:
        end = from_iso(str(meta["endTime"]))

    def local(moment) -> str:  # as the person gave it: in the configured zone
        return local_text(moment, store.zone)

    if end < start:
        raise InvalidFieldError(field, f"the session would end ({local(end)}) before it starts ({local(start)})")
    if end > now:
        raise InvalidFieldError(field, f"the session would end in the future ({local(end)})")
    if end - start > timedelta(minutes=MAX_EDITED_MINUTES):
        raise InvalidFieldError(field, f"the session would last {minutes_between(start, end)} minutes; a session "
                                       f"lasts at most a week ({MAX_EDITED_MINUTES} minutes)")
    return {"startTime": to_iso(start), "endTime": to_iso(end), "durationMinutes": minutes_between(start, end),
            "status": "completed"}


def _back_as_invoiced(invoiced: tuple[str, str, dict[str, Any]], edited: dict[str, Any]) -> bool:
    """Whether an edit of a session puts it back as the invoice billed it (a vault-git pull had
    brought it otherwise): in its project, with the invoice's times, minutes and client, billable.
    An invoice that kept no times of it (written before they were) allows nothing."""
    _, client, item = invoiced
    return (edited.get("project") == item.get("project") and {"startTime", "endTime", "durationMinutes"} <= set(item)
            and not ledger.differs_from_invoice(edited, client, item))


def sessions_to_file(store: VaultStore, project: str, client: str) -> tuple[int, bool]:
    """How many sessions of ``project`` :func:`set_project_client` would file under ``client``
    with ``every`` — those billing another client or none, not those an issued invoice bills — and
    whether ``every`` is needed for some (they bill another client, not ``internal``)."""
    def bills(row: Any) -> str:  # "" for no client; "internal" by name is a client of its own here
        return (row["client"] or "").strip().lower()

    wanted = client.strip().lower()
    invoiced = ledger.invoiced_in(store.root)
    others = [row for row in index.rows_of_kind(store.conn, RecordKind.SESSION.value, project)
              if bills(row) != wanted and (project, row["session_id"]) not in invoiced
              and not (wanted == "internal" and not bills(row))]
    return len(others), any(bills(row) for row in others)


def set_project_client(store: VaultStore, project: str, client: str, every: bool = False, now=None) -> dict[str, Any]:
    """``memo project client``: file a project's sessions already recorded under ``client`` — those
    billed to ``internal`` (no client), or with ``every`` all of them — as :func:`edit_session`
    does one by one (their turns follow; the client in the config's or the vault's spelling).
    ``projectClients`` files the sessions recorded from now on; this files those before it.

    Returns
    -------
    dict
        ``{project, client, sessions (changed), turnsUpdated, kept (sessions with another
        client, left without every), onInvoice [session ids left: on an issued invoice], newClient
        (as :func:`edit_session`), unreadable ["<path>: <reason>" of each session file of the
        project that cannot be read: not filed]}``.

    Raises
    ------
    InvalidFieldError
        A bad project or client; a project without sessions (``project``).
    """
    now = now or utcnow()
    project = validate_slug(project, "project")
    if not isinstance(client, str) or not client.strip():  # it filed every session under internal, unasked
        raise InvalidFieldError("client", "is empty: give the client's name ('internal' for none)")
    wanted = clean_client(client)
    new_client = bool(wanted) and is_new_client(store, wanted)  # asked before it is written
    wanted = None if not wanted or wanted.lower() == "internal" else canonical_client(store, wanted)
    rows = index.rows_of_kind(store.conn, RecordKind.SESSION.value, project)
    if not rows:
        raise InvalidFieldError("project", f"no session in project {project} (memo session show --all lists them)")
    invoiced = ledger.invoiced_in(store.root)
    changed = turns = kept = 0
    on_invoice: list[str] = []
    unreadable: list[str] = []
    for row in rows:
        has = (row["client"] or "").strip()
        # a session filed internal by name was filed so on purpose: --every files it too
        if has.casefold() == (wanted or "internal").casefold() or (wanted is None and not has) \
                or (not every and has):
            kept += bool(has) and has.casefold() != (wanted or "internal").casefold()
            continue
        session_id = row["session_id"]
        if (project, session_id) in invoiced:
            on_invoice.append(session_id)
            continue
        try:
            result = edit_session(store, EditSessionRequest(session_id=session_id, project=project,
                                                            client=wanted or "internal"), now=now)
        except CorruptRecordError as exc:  # edited by hand since it was indexed: named below with the others
            unreadable.append(f"{os.path.relpath(str(exc.path), store.root)}: {exc.reason}")
            continue
        changed += bool(result["changed"])
        turns += result["turnsUpdated"]
    # the project's session files that cannot be read: not filed, and said (they billed internal after)
    unreadable += [f"{path}: {reason}" for path, reason, _ in store.left_out(RecordKind.SESSION, say=False)
                   if path.replace("\\", "/").split("/")[1:2] == [project]
                   and not any(line.startswith(f"{path}: ") for line in unreadable)]
    return {"project": project, "client": wanted or "internal", "sessions": changed, "turnsUpdated": turns,
            "kept": kept, "onInvoice": on_invoice, "newClient": new_client and changed > 0, "unreadable": unreadable}


#: What a daemon's answer to an edit must hold, by type (it is printed and a new client is noted).
_ANSWER_FIELDS = {"sessionId": str, "project": str, "changed": list, "turnsUpdated": int, "turnsOutside": int,
                  "newClient": bool, "billable": bool, "startTime": str}
#: The wire names an edit can change (the daemon's ``changed``).
_CHANGEABLE = {"client", "billable", "summary", "project", "reviewedAt", "startTime", "endTime", "durationMinutes"}


def edit_remote_session(settings: Any, session_id: str, zone: Any, **fields: Any) -> dict[str, Any]:
    """``memo session edit`` in remote mode (SPEC §2.7): ``POST /api/sessions/{id}/edit`` to the
    team daemon with ``fields`` (snake_case names of :class:`EditSessionRequest`, ``None``: not
    given). ``start_time``/``end_time`` without an offset are read in ``zone`` (this machine's,
    as typed here) and sent in UTC; the project, when not given, is where the daemon holds it.

    Returns
    -------
    dict
        The daemon's answer, as :func:`edit_session` returns it, checked: the session asked
        for, ``changed`` a list of the wire names an edit changes, counts as integers,
        ``startTime``/``endTime`` instants and ``durationMinutes`` an integer when the times changed.

    Raises
    ------
    InvalidFieldError
        A bad session id, nothing to change, or an unparseable time (nothing is sent).
    MemoError
        The daemon refused or could not be reached, or answered something else (``Remote daemon …``).
    """
    from urllib.parse import quote

    from pydantic.alias_generators import to_camel

    from ..domain.clock import parse_record_instant, to_iso
    from . import remote

    validate_session_id(session_id)
    if all(value is None for key, value in fields.items() if key != "project"):
        raise InvalidFieldError("session", f"nothing to change: give {NOTHING_TO_CHANGE}")
    for key, field in (("start_time", "startTime"), ("end_time", "endTime")):
        if fields.get(key) is not None:
            fields[key] = to_iso(parse_record_instant(fields[key], field, zone, wall_clock=True))
    body = {to_camel(key): value for key, value in fields.items() if value is not None}
    answer = remote.post(settings, f"/api/sessions/{quote(session_id, safe='')}/edit", body)
    problem = _answer_problem(answer, session_id, fields)
    if problem:
        raise remote.unusable_answer(settings, f"its answer to the edit of {session_id} {problem}; nothing is "
                                               f"known to have changed (memo session show {session_id} asks it)")
    return answer


def _answer_problem(answer: dict[str, Any], session_id: str, asked: dict[str, Any]) -> str | None:
    """What is wrong with a daemon's answer to an edit of ``session_id`` with the fields
    ``asked`` (``None``: nothing). Its text is printed here: ids must be ids, the client one
    plain line and the one asked for (a line end printed invented changes below the real one)."""
    from ..domain.billing import client_name_problem
    from ..domain.clock import from_iso
    from ..domain.errors import MemoError

    if answer.get("sessionId") != session_id:
        return "is not about that session"
    try:
        validate_slug(answer.get("project"), "project")
        if asked.get("to_project") is not None and answer["project"] != asked["to_project"]:
            return "names another project than the one it was moved to"
    except (InvalidFieldError, TypeError):
        return "has no project id"
    client = answer.get("client")
    if client is not None and (not isinstance(client, str) or client_name_problem(client) is not None):
        return "has a client that is not one plain line"
    wanted = asked.get("client")
    if wanted is not None and (client or "internal").casefold() != (wanted.strip() or "internal").casefold():
        return f"names another client than {wanted!r}"
    for name, kind in _ANSWER_FIELDS.items():
        value = answer.get(name)
        if not isinstance(value, kind) or (kind is int and (isinstance(value, bool) or value < 0)):
            return f"has no {name} as {kind.__name__}"
    if not all(isinstance(name, str) and name in _CHANGEABLE for name in answer["changed"]):
        return "names in changed what an edit does not change"
    timed = {"startTime", "endTime", "durationMinutes"} & set(answer["changed"])
    if timed:
        try:
            from_iso(answer["startTime"]), from_iso(str(answer.get("endTime")))
        except (MemoError, TypeError, ValueError):
            return "has times that are not instants"
        minutes = answer.get("durationMinutes")
        if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes < 0:
            return "has no durationMinutes as int"
    return None
