"""Session lifecycle: start, end, turns (SPEC §2.5; hand-offs and sync come later)."""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from ..domain.clock import (
    from_iso,
    local_text,
    minutes_between,
    parse_bounds,
    parse_record_instant,
    resolve_zone,
    to_iso,
    utcnow,
)
from ..domain.errors import (
    InvalidFieldError,
    MemoError,
    RecordNotFoundError,
    SessionCompletedError,
    SessionNotStartedError,
)
from ..domain.shell import shell_word
from ..domain.ids import (
    new_session_id,
    prompt_id,
    session_record_id,
    validate_session_id,
    validate_slug,
)
from ..domain.records import MAX_SESSION_MINUTES, Deliverable, RecordKind, Session
from ..domain.wire import counted, is_one_plain_line
from ..index import store as index
from ..index.query import PromptFilter, clamp_page
from ..vault.io import check_metadata_size
from .handoffs import claim_handoff, write_handoff
from .prompts import (
    MAX_CLOCK_SKEW,
    canonical_client,
    clean_deliverables,
    clean_extra,
    clean_list,
    clean_client,
    clean_line,
    clean_owner,
    refuse_anothers,
    refuse_unreadable_record,
    same_person,
    clean_text,
    envelope,
    noted_clamp,
    optional_slug,
    row_to_record,
    stored_summary,
)
from .requests import EndSessionRequest, RecordPromptRequest, SessionRequest, StartSessionRequest
from .projects import remember_root
from .store import VaultStore, git_head, git_identity, repository_root



#: Fields that ``session_start`` keeps from an existing record (SPEC §2.5).
PRESERVED_ON_RESTART = ("startTime", "created", "taskSlug", "client", "billable", "summary")


def start_session(store: VaultStore, request: StartSessionRequest, now=None, claim: bool = True) -> dict[str, Any]:
    """Open (or re-open) a session (SPEC §2.5).

    ``claim``: take an eligible pending hand-off and return it (the baton). False for a start
    nobody reads the answer of — a hook's, an import's: the baton stays pending for a session
    that shows it (``memo session start``, the tool's ``session_start``), or a hook's start
    took it before the agent's own ``session_start`` and nobody saw its next steps.

    A new session id ``{timestamp}-{6 hex}`` is generated when none is given. Restarting
    an active session keeps its ``startTime, created, taskSlug, client, billable, summary``.
    Without a client the session bills the one the config's ``projectClients`` maps its
    project to (SPEC §9), else — when it claims a hand-off — the client of the session that
    left it (the work goes on), else none (``internal``).
    Turn files of the session that a killed writer left unindexed are indexed first.

    Returns
    -------
    dict
        The session record (camelCase frontmatter) plus ``body``.

    Raises
    ------
    SessionCompletedError
        The session record is already ``completed``.
    InvalidFieldError
        Unsafe ids or a bad ``startTime``; ``sessionId`` of another owner's open session when
        the start names its ``owner``.
    """
    now = now or utcnow()
    project, session_id, start, product_root = _start_context(store, request, now)
    record_id = session_record_id(session_id)
    with store.lock():
        store.index_session_turns(project, session_id)  # turns a killed writer left unindexed
        existing = store.read(project, RecordKind.SESSION, record_id)
        if existing is None:
            _refuse_a_batons_session_id(store, project, session_id)
            refuse_unreadable_record(store, record_id, project, (RecordKind.SESSION,))  # renamed by hand
        old = existing[0] if existing else {}
        # another person's first: "it is completed" read as one's own session's state
        refuse_anothers(old, request.owner, session_id, "start yours under another id (or without one for a new "
                                                        "session)")
        if old.get("status") == "completed":
            store.ensure_indexed(RecordKind.SESSION, project, record_id, meta=old)
            raise SessionCompletedError(session_id)
        meta = _started(store, request, now, project, session_id, start, product_root, old)
        baton = None
        if claim and not old.get("handoffClaimed"):
            baton = claim_handoff(store, project, session_id, meta.get("branch"), meta.get("owner"), now)
            meta["handoffClaimed"] = baton["id"] if baton else None
            if baton is not None and not meta.get("client") and project not in store.settings.project_clients:
                # none named, and the project mapped to none (a project mapped to internal stays internal)
                meta["client"] = client_of_session(store, project, baton.get("fromSessionId"))
        elif not claim:
            meta.setdefault("handoffClaimed", old.get("handoffClaimed"))
        body = existing[1] if existing else ""
        store.upsert(RecordKind.SESSION, meta, body)
    remember_root(store, project, product_root)
    kept = _kept_on_restart(store, request, old, meta, start)
    if kept:  # an agent told nothing believed its new client or start was taken
        return {**meta, "body": body, "handoff": baton,
                "note": f"session {session_id} was active: it keeps its {', '.join(kept)} (a restart changes none of "
                        "them; memo session edit corrects a session's client, billable, summary and times)"}
    return {**meta, "body": body, "handoff": baton}


def _kept_on_restart(store: VaultStore, request: StartSessionRequest, old: dict[str, Any], meta: dict[str, Any],
                     start: str) -> list[str]:
    """What a restart of an active session was given but did not take (``client Globex``,
    ``startTime …``): the fields it keeps (SPEC §2.5) that the request named otherwise
    (``start``: the request's start, normalized)."""
    if not old:
        return []
    kept = []
    if request.client is not None:
        def billed(name: str | None) -> str | None:  # None, '' and 'internal' (any case) bill no client
            return None if not name or name.strip().lower() == "internal" else canonical_client(store, name)

        if billed(clean_client(request.client)) != billed(meta.get("client")):
            kept.append(f"client {meta.get('client') or 'internal'}")
    if request.billable is not None and meta.get("billable") is not None and request.billable != meta["billable"]:
        kept.append(f"billable {str(meta['billable']).lower()}")
    if request.task_slug is not None and meta.get("taskSlug") and request.task_slug != meta["taskSlug"]:
        kept.append(f"taskSlug {meta['taskSlug']}")
    if request.summary is not None and meta.get("summary") and request.summary.strip() != str(meta["summary"]).strip():
        kept.append("summary")
    if request.start_time is not None and meta.get("startTime") and from_iso(start) != from_iso(meta["startTime"]):
        kept.append(f"startTime {meta['startTime']}")
    return kept


def _refuse_a_batons_session_id(store: VaultStore, project: str, session_id: str) -> None:
    """A new session never takes the id of another session whose pending hand-off waits here (a
    teammate's, pulled from the team daemon): its own hand-off would replace that baton, and the
    start would not claim it (a session never takes its own).

    Raises
    ------
    InvalidFieldError
        ``sessionId``: the id of a pending hand-off's session, which this vault does not hold.
    """
    from .handoffs import handoff_id

    baton = store.read(project, RecordKind.HANDOFF, handoff_id(session_id))
    if baton is not None and baton[0].get("status") == "pending":
        addressed = f" for {baton[0]['owner']}" if baton[0].get("owner") else ""
        raise InvalidFieldError("sessionId", f"{session_id} is the session of the pending hand-off "
                                             f"{handoff_id(session_id)}{addressed}, left by another session of that "
                                             "id: start yours under another id (a start without one claims the baton)")


def client_of_session(store: VaultStore, project: str, session_id: object) -> str | None:
    """The client the session ``session_id`` of ``project`` bills (None: none, or no such
    session): what a session that takes its hand-off bills when nothing else names one."""
    try:
        found = store.read(project, RecordKind.SESSION, session_record_id(validate_session_id(str(session_id))))
    except (MemoError, ValueError):
        return None
    client = found[0].get("client") if found else None
    return client if isinstance(client, str) and client else None


def record_whole_session(store: VaultStore, start: StartSessionRequest, turns: list[RecordPromptRequest],
                         end: EndSessionRequest, now=None) -> dict[str, Any] | None:
    """A session new to the vault written at once with its turns and its end (issue 16: an
    importer's session): the records :func:`start_session`, :func:`record_prompt` of each turn
    and :func:`end_session` would write one after the other, the same bytes, with the session
    record built and written once (not at its start and again at its end) and no file read.

    Every request is checked before anything is written. None, and nothing written, when the
    session is not new (its record or a file of one of its turns, or of the turn after them,
    exists), a turn is not numbered or belongs elsewhere, or any step would refuse (a field
    that does not validate, a time in the future): the caller then takes the one-by-one path,
    which says what it refuses and writes what it takes.

    Returns
    -------
    dict or None
        The session record (camelCase frontmatter) plus ``body``.
    """
    from ..domain.records import normalize_meta
    from .prompts import numbered_turn

    now = now or utcnow()
    try:
        project, session_id, start_iso, product_root = _start_context(store, start, now)
    except (MemoError, ValueError):
        return None
    record_id = session_record_id(session_id)
    numbers = [request.turn for request in turns]
    if None in numbers or len(set(numbers)) != len(numbers) or {start.cwd, end.cwd, *(t.cwd for t in turns)} != {None}:
        return None  # a turn the store numbers, or work in a repository (its HEAD, its owner): one by one
    with store.lock():
        store.index_session_turns(project, session_id)  # turns a killed writer left unindexed
        if store.record_exists(project, RecordKind.SESSION, record_id) or any(
                store.record_exists(project, RecordKind.PROMPT, prompt_id(session_id, number, now))
                for number in [*numbers, max(numbers, default=0) + 1]):
            return None
        try:
            meta = _started(store, start, now, project, session_id, start_iso, product_root, {})
            seen = normalize_meta({**meta, "handoffClaimed": None})  # what a turn reads of its session
            rules = store.ignore_rules(None)
            written = [numbered_turn(store, request, seen, rules, now) for request in turns]
            if {turn_project for turn_project, _, _ in written} - {project} or end.session_id != session_id or \
                    _session_project(store, end.project, record_id) != project:
                return None
            _end(store, meta, end, now)
            for record in (meta, *(turn_meta for _, turn_meta, _ in written)):
                check_metadata_size(record)  # a record too large to write: one by one, which says which
        except (MemoError, ValueError):
            return None
        meta["handoffClaimed"] = None  # an import's session: nobody reads its baton (start_session's claim)
        store.upsert(RecordKind.SESSION, meta, "")
        for _, turn_meta, body in written:
            store.upsert(RecordKind.PROMPT, turn_meta, body)
    store.emit("session_end", session=meta)  # SPEC §2.5: as end_session tells the sync
    return {**meta, "body": ""}


def _start_context(store: VaultStore, request: StartSessionRequest, now) -> tuple[str, str, str, Any]:
    """``(project, session id, startTime as UTC ISO, product root)`` of a session start
    (:func:`start_session`), checked.

    Raises
    ------
    InvalidFieldError
        Unsafe ids, a bad or future ``startTime``.
    """
    given = optional_slug(request.session_id, "sessionId")
    # a restart without a project resumes the session where it lives (SPEC §2.1)
    project = optional_slug(store.session_home(given, request.project, request.cwd) if given else
                            store.resolve_project(request.project, request.cwd), "project")
    product_root = repository_root(request.cwd)
    session_id = given or new_session_id(now)
    start_at = parse_record_instant(request.start_time, "startTime", store.zone, wall_clock=True) if request.start_time else now
    if start_at > now + MAX_CLOCK_SKEW:
        raise InvalidFieldError("startTime", f"{local_text(start_at, store.zone)} is in the future")
    return project, session_id, to_iso(start_at), product_root


def _started(store: VaultStore, request: StartSessionRequest, now, project: str, session_id: str, start: str,
             product_root, old: dict[str, Any]) -> dict[str, Any]:
    """The session record's frontmatter as :func:`start_session` writes it (before a hand-off
    is claimed), ``old`` the record's frontmatter when it is restarted (else empty).

    Raises
    ------
    InvalidFieldError
        A field that does not validate.
    """
    head_branch, head_sha = git_head(product_root)
    session = Session(
        id=session_record_id(session_id),
        project=project,
        status="active",
        created=start,
        updated=start if request.start_time else to_iso(now),
        source=clean_line(request.source, "source") or "mcp",
        ide=clean_line(request.ide, "ide") or old.get("ide") or "generic",
        model=clean_line(request.model, "model") or old.get("model"),
        agent=clean_line(request.agent, "agent") or old.get("agent"),
        session_id=session_id,
        task_slug=optional_slug(request.task_slug, "taskSlug"),
        client=canonical_client(store, clean_client(request.client) or store.settings.client_of_project(project)),
        billable=True if request.billable is None else request.billable,
        branch=clean_line(request.branch, "branch") or old.get("branch") or head_branch,
        git_sha=clean_line(request.git_sha, "gitSha") or old.get("gitSha") or head_sha,
        linked_paths=clean_list(request.linked_paths, "linkedPaths") or old.get("linkedPaths") or [],
        tags=clean_list(request.tags, "tags") or old.get("tags") or [],
        start_time=start,
        summary=stored_summary(store, request.summary, request.cwd),
        owner=clean_owner(request.owner) or old.get("owner") or git_identity(product_root),
        objective=clean_text(request.objective, "objective"),
        handoff_archive=old.get("handoffArchive"),
    )
    meta = {**old, **session.wire(), **clean_extra(request.extra)}
    for key in PRESERVED_ON_RESTART:
        if old.get(key) is not None:
            meta[key] = old[key]
    return meta


#: A session's frontmatter while its agent waits for the person (SPEC §8's waiting states):
#: since when (UTC), for what (``permission``, ``an answer``), and the agent's own words.
WAITING_FIELDS = ("waitingSince", "waitingFor", "waitingMessage")


def waiting_since(meta: dict[str, Any]) -> datetime | None:
    """Since when the agent of the session ``meta`` waits for the person, or None (not waiting, or
    a hand-edited value that is no instant)."""
    value = meta.get("waitingSince")
    if not isinstance(value, str) or not value:
        return None
    try:
        return from_iso(value)
    except (ValueError, MemoError):
        return None


def end_session(store: VaultStore, request: EndSessionRequest, now=None,
                by_person: bool = False) -> dict[str, Any]:
    """Close a session (SPEC §2.5).

    ``endTime`` is ``until`` or now; ``durationMinutes`` = ``endTime − startTime`` in
    whole minutes; re-ending a completed session keeps its duration (unless an importer
    asks to recompute it from a grown transcript). New deliverables (``pr`` adds
    ``{type: 'pr', url, title}``) merge into existing ones by ``(url, sha, type)``.
    Turn files of the session that a killed writer left unindexed are indexed first. Ending
    a completed session again with nothing new (no summary, deliverable or hand-off that
    changes it) writes nothing and answers the record with ``unchanged: true``.

    Raises
    ------
    SessionNotStartedError
        ``... Call session_start first`` without a session id or record.
    InvalidFieldError
        ``until`` before the session's start, bad deliverables; with ``by_person`` (a
        person's or an agent's end, :func:`end_session_answer`), a session superseded by the
        import of its transcript (``sessionId``: its imported session is named) — an import that
        follows a grown copy still ends its own superseded session —, or an open session the end
        would make last longer than a week (``until``, :data:`MAX_SESSION_MINUTES`).
    """
    now = now or utcnow()
    if not request.session_id:
        raise SessionNotStartedError(None)
    session_id = validate_session_id(request.session_id)
    record_id = session_record_id(session_id)
    with store.lock():
        project = _session_project(store, request.project, record_id, request.cwd)
        existing = store.read(project, RecordKind.SESSION, record_id) if project else None
        if existing is None:
            refuse_unreadable_record(store, record_id, project or request.project or None, (RecordKind.SESSION,))
            raise SessionNotStartedError(session_id)
        store.index_session_turns(project, session_id)  # turns a killed writer left unindexed
        meta, body = existing
        refuse_anothers(meta, request.owner, session_id, "end your own session")
        if by_person and meta.get("status") == "superseded":
            # its work is the imported sessions': ending it made it count again beside them (twice
            # under overlapPolicy sum)
            by = [str(name) for name in meta.get("supersededBy") or [] if "/" in str(name)]
            where, latest = by[-1].split("/", 1) if by else (project, None)
            raise InvalidFieldError(
                "sessionId", f"session {session_id} was superseded by "
                + (f"the import of its transcript ({', '.join(name.split('/', 1)[1] for name in by)}): end it, "
                   f"or leave its hand-off, there: memo session end {shell_word(latest)} --project "
                   f"{shell_word(where)} --next-step …" if latest else "a later record: nothing to end"))
        if by_person and meta.get("status") == "active":
            _refuse_a_longer_end(store, meta, request, now, project)
        before = dict(meta)
        _end(store, meta, request, now)
        if request.handoff is None and before.get("status") == "completed" and \
                {**meta, "updated": None} == {**before, "updated": None}:
            # ended again with nothing new: the file stays as it is (a later `updated` won a sync
            # conflict for a copy that changed nothing)
            return {**before, "body": body, "unchanged": True}
        if request.handoff is not None:
            # a baton left without an address goes to the same branch and person (SPEC §2.5)
            defaults = {"branch": request.handoff.branch or meta.get("branch"),
                        "owner": request.handoff.owner or meta.get("owner")
                        or git_identity(repository_root(request.cwd))}
            ended = from_iso(meta["endTime"]) if meta.get("endTime") else None  # left as the session ended
            baton = write_handoff(store, project, session_id, request.handoff.model_copy(update=defaults), now, ended)
            meta["handoffArchive"] = baton["id"]
        store.upsert(RecordKind.SESSION, meta, body)
    store.emit("session_end", session=meta)  # SPEC §2.5: the sync the runtime wired (never fails this)
    return {**meta, "body": body}


def _refuse_a_longer_end(store: VaultStore, meta: dict[str, Any], request: EndSessionRequest, now,
                         project: str) -> None:
    """Refuse an end that makes the open session ``meta`` last longer than
    :data:`MAX_SESSION_MINUTES` (a start of 1970 billed 499,032 h), naming its last turn.

    Raises
    ------
    InvalidFieldError
        ``until``: the length it would have, and what to give instead.
    """
    end = parse_record_instant(request.until, "until", store.zone, wall_clock=True) if request.until else now
    start = from_iso(str(meta["startTime"]))
    if (end - start).total_seconds() <= MAX_SESSION_MINUTES * 60 or end > now + MAX_CLOCK_SKEW:
        return  # an end in the future is refused as that (_end)
    last = index.last_turn_created(store.conn, project, str(meta["sessionId"]))
    raise InvalidFieldError(
        "until", f"session {meta['sessionId']} would last {counted(int((end - start).total_seconds() // 3600), 'hour')} "
                 f"(from {local_text(start, store.zone)}): a session lasts at most a week; end it at its last work"
                 + (f" (its last turn: {shell_word(last)})" if last else "")
                 + " with until, or correct its start (memo session edit --start)")


def summary_from_turns(store: VaultStore, project: str, session_id: str, cwd: str | None = None) -> str | None:
    """A summary for a session that has none, as an import describes a session: the first
    meaningful line of its first turns (None without one). What ends a session on a person's
    behalf — a hook's end, the digest's "end it at its last activity" — gives it one, or
    invoices and timesheets would say only "Work on <project>"."""
    from ..index.query import PromptFilter
    from .describe import session_description

    _, rows = index.count_and_page(store.conn, "prompt", PromptFilter(session_id=session_id, projects=[project]), 20, 0,
                                   "turn-asc")
    return stored_summary(store, session_description(None, [row["body"] for row in rows]), cwd)


def end_session_answer(store: VaultStore, request: EndSessionRequest) -> dict[str, Any]:
    """:func:`end_session` as every interface answers it (the CLI, the MCP tool's and
    ``/api/actions``' ``session_end``): the session's wire dict, with ``warnings`` (one-line
    texts) when the end asked for was not taken — the session had been ended before and keeps
    its times (SPEC §2.5) —, when some of its turns lie outside its times (their time bills
    nothing), or when its hand-off is addressed to a person no session of the vault names (a
    typo, or ``ana`` for ``ana@team.example``). Raises as :func:`end_session`."""
    record = end_session(store, request, by_person=True)
    warnings = []
    if request.until and not request.recompute_duration:
        asked = parse_record_instant(request.until, "until", store.zone, wall_clock=True)
        if record.get("endTime") and record["endTime"] != to_iso(asked):
            warnings.append(f"session {record['sessionId']} was already ended at {record['endTime']}; it keeps its "
                            f"times and {record['durationMinutes']} minutes, not the end asked ({to_iso(asked)}): "
                            f"memo session edit {record['sessionId']} --project {record['project']} --end TIME "
                            "corrects them")
    if record.get("endTime"):
        outside = index.turns_outside(store.conn, record["project"], record["sessionId"], str(record["startTime"]),
                                      str(record["endTime"]))
        if outside:
            warnings.append(f"{outside} of its turns {'lies' if outside == 1 else 'lie'} outside its times (before its "
                            "start or after its end): their time bills nothing")
    addressed = (request.handoff.owner or "").strip() if request.handoff is not None else ""
    if addressed and not (store.settings.mode == "hybrid" and store.settings.hybrid.remote_url):
        # (a hybrid laptop holds its own person's sessions only: a teammate is no one it knows, and the
        # team daemon hands the baton on — the warning fired on every hand-off to a teammate)
        known = sorted(index.session_owners(store.conn, 2000), key=str.casefold)
        if known and not any(same_person(addressed, owner) for owner in known):  # "ana" for ana@team.example
            warnings.append(f"no session of the vault is {addressed[:100]}'s (owners: "
                            f"{', '.join(o[:100] for o in known[:10])}{', …' if len(known) > 10 else ''}): the hand-off "
                            f"waits for a start by exactly {addressed[:100]} — a person is named by their git identity "
                            "(user.email)")
    return {**record, "warnings": warnings} if warnings else record


def _end(store: VaultStore, meta: dict[str, Any], request: EndSessionRequest, now) -> None:
    """Close the session frontmatter ``meta`` in place as :func:`end_session` does (``endTime``,
    ``durationMinutes``, ``status``, ``updated``, summary, deliverables; the objective cleared),
    all but the hand-off.

    Raises
    ------
    InvalidFieldError
        ``until`` in the future or before the session's start, bad deliverables.
    """
    end = parse_record_instant(request.until, "until", store.zone, wall_clock=True) if request.until else now
    if end > now + MAX_CLOCK_SKEW:
        raise InvalidFieldError("until", f"{local_text(end, store.zone)} is in the future")
    start = from_iso(str(meta["startTime"]))
    if end < start:
        raise InvalidFieldError("until", f"{local_text(end, store.zone)} is before the session's start "
                                         f"{local_text(from_iso(meta['startTime']), store.zone)}")
    already = meta.get("status") == "completed" and meta.get("durationMinutes") is not None
    if not already or request.recompute_duration:
        meta["endTime"] = to_iso(end)
        meta["durationMinutes"] = minutes_between(start, end)
    if request.recompute_duration:  # the end memo worked out of the agent's activity: an endTime
        meta["computedEnd"] = meta["endTime"]  # that differs from it later was written by a person
    meta["status"] = "completed"
    meta["updated"] = to_iso(end) if request.recompute_duration else to_iso(now)
    for key in WAITING_FIELDS:  # an ended session's agent waits for nobody
        meta.pop(key, None)
    if request.summary is not None:
        meta["summary"] = stored_summary(store, request.summary, request.cwd)
    meta["deliverables"] = merge_deliverables(meta.get("deliverables") or [], _new_deliverables(request))
    meta["objective"] = None  # SPEC §2.5: the objective is cleared on end


def pr_deliverable(url: str) -> dict[str, Any]:
    """The deliverable of a pull request given by its URL (``pr`` of ``session_end``, each
    ``--pr`` of ``memo session end``): ``{type: "pr", url, title: "Pull request N"}``."""
    return {"type": "pr", "url": url, "title": f"Pull request {url.rstrip('/').rsplit('/', 1)[-1]}"}


def _new_deliverables(request: EndSessionRequest) -> list[dict[str, Any]]:
    items = list(request.deliverables)
    if request.pr:
        items.append(pr_deliverable(request.pr))
    cleaned = []
    for number, item in enumerate(items):
        unknown = sorted(set(item) - {"type", "url", "sha", "title"}) if isinstance(item, dict) else []
        if unknown:  # {type, url?, sha?, title?} (SPEC §2.3): another key was written into the session as given
            raise InvalidFieldError(f"deliverables[{number}]", f"has {', '.join(map(repr, unknown))}: a deliverable "
                                                               "is {type, url?, sha?, title?}")
        if isinstance(item, dict) and item.get("type") == "pr" and not is_web_url(item.get("url")):
            if item.get("url") is None:  # no --pr gives none: an item of deliverables, named by its place
                raise InvalidFieldError(f"deliverables[{number}].url", "a pull request needs its url, an http(s) URL")
            given = "pr" if request.pr and number == len(items) - 1 else f"deliverables[{number}].url"
            raise InvalidFieldError(given, f"{str(item.get('url'))[:100]!r} is not an http(s) URL")
        if isinstance(item, dict) and item.get("url") is not None and not is_web_url(item.get("url")):
            # a commit's or a file's link too: a javascript: or file: URL went into the story and its Markdown
            raise InvalidFieldError(f"deliverables[{number}].url", f"{str(item.get('url'))[:100]!r} is not an "
                                                                   "http(s) URL")
        if isinstance(item, dict) and isinstance(item.get("title"), str):  # a commit's message: one line of it
            item = {**item, "title": " ".join(re.split(r"[\t\n\r]+", item["title"])).strip()}
        for key in ("type", "url", "sha", "title"):
            # a PR's link went raw into a story printed on a terminal and the webhook's text (an
            # escape clearing the screen, a U+202E reversing what follows)
            if isinstance(item, dict) and isinstance(item.get(key), str) and not is_one_plain_line(item[key]):
                raise InvalidFieldError(f"deliverables[{number}].{key}", "holds a control or direction character "
                                                                          "(one plain line, as typed)")
        try:
            deliverable = Deliverable.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "item"
            raise InvalidFieldError(f"deliverables[{number}].{where}", first["msg"].lower()) from None
        _refuse_a_deliverable_of_no_shape(deliverable, number)
        cleaned.append({k: v for k, v in deliverable.wire().items() if v is not None})
    return clean_deliverables(cleaned)


#: The longest ``type`` and ``title`` of a deliverable (characters): a kind's word, a PR's or a
#: commit's one-line title — printed in stories, the digest and on invoices.
MAX_DELIVERABLE_TYPE_CHARS, MAX_DELIVERABLE_TITLE_CHARS = 40, 500

_COMMIT_SHA = re.compile(r"\S{1,100}")


def _refuse_a_deliverable_of_no_shape(deliverable: Deliverable, number: int) -> None:
    """A deliverable's ``type`` a word of at most :data:`MAX_DELIVERABLE_TYPE_CHARS` characters, its
    ``sha`` one word of at most 100 characters (a commit's id, a tag), its ``title`` at most
    :data:`MAX_DELIVERABLE_TITLE_CHARS` characters (SPEC §2.3) — a title of 100,000 characters went into the session
    (found by a tester).

    Raises
    ------
    InvalidFieldError
        ``deliverables[N].type`` / ``.sha`` / ``.title``."""
    kind = deliverable.type.strip()
    if not kind or len(kind) > MAX_DELIVERABLE_TYPE_CHARS:
        said = "empty" if not kind else f"{len(kind)} characters"
        raise InvalidFieldError(f"deliverables[{number}].type",
                                f"is {said}: a word such as pr, commit, doc (at most {MAX_DELIVERABLE_TYPE_CHARS})")
    if deliverable.sha is not None and not _COMMIT_SHA.fullmatch(deliverable.sha.strip()):
        raise InvalidFieldError(f"deliverables[{number}].sha",
                                f"{deliverable.sha[:80]!r} is no commit id (one word of at most 100 characters)")
    if deliverable.title is not None and len(deliverable.title) > MAX_DELIVERABLE_TITLE_CHARS:
        raise InvalidFieldError(f"deliverables[{number}].title", f"is {len(deliverable.title)} characters; at most "
                                                                 f"{MAX_DELIVERABLE_TITLE_CHARS} (one line)")


def is_web_url(value: object) -> bool:
    """Whether ``value`` is an http(s) URL with a host (what a deliverable may link to)."""
    from urllib.parse import urlsplit

    if not isinstance(value, str) or any(c.isspace() for c in value):
        return False
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def merge_deliverables(existing: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge ``new`` into ``existing``, de-duplicated by ``(url, sha, type)`` (SPEC §2.5); of two
    items of one key, the first keeps its place and takes the fields only the other has (a
    ``--pr`` beside the same pull request in ``deliverables`` lost its title)."""
    merged: dict[tuple, dict[str, Any]] = {}
    for item in [*existing, *new]:
        key = (item.get("url"), item.get("sha"), item.get("type"))
        if key in merged:
            merged[key] = {**{k: v for k, v in item.items() if v is not None}, **{
                k: v for k, v in merged[key].items() if v is not None}}
            continue
        merged[key] = item
    return list(merged.values())


def _session_project(store: VaultStore, project: str | None, record_id: str, cwd: str | None = None) -> str | None:
    """The project of session record ``record_id``: ``project`` when given, else where the
    record lives (:meth:`VaultStore.locate`; ``AmbiguousIdError`` when several projects hold
    it and ``cwd`` chooses none); None when none does (``CorruptRecordError`` when a file of it
    is there but cannot be read)."""
    if project:
        return validate_slug(project, "project")
    row = store.locate(record_id, RecordKind.SESSION, cwd=cwd)
    if row is None:  # none the index holds: a file it left out as unreadable says why (not "start it first")
        for path in sorted(store.root.glob(f"projects/*/sessions/{record_id}.md")):
            store.read(path.parent.parent.name, RecordKind.SESSION, record_id)  # raises CorruptRecordError
    return row["project"] if row is not None else None


def session_view(store: VaultStore, request: SessionRequest) -> dict[str, Any]:
    """``session`` (SPEC §2.6).

    With ``session_id``: ``{session, total, limit, offset, hasMore, items}`` — the session
    record as its file holds it now (or None when only turns exist) and a page of its turns in turn order; with
    ``project`` too, only that project's: the session record must belong to it, and only its
    turns are shown (every interface answers a session of another project alike: not found). Without ``session_id``: the list envelope
    of session records, newest first, each with ``turns`` (how many turns it holds, superseded
    ones left out). ``limit`` clamps to 1–100.

    Raises
    ------
    RecordNotFoundError
        Neither a session record nor any turn has this session id (in ``project``, when given).
    CorruptRecordError
        The session's record file is there but cannot be read (its path, line and problem).
    AmbiguousIdError
        Without ``project``, several projects hold a session (or turns) of this id and ``cwd``
        chooses none.
    """
    limit, offset = clamp_page(request.limit, request.offset)
    if request.session_id:
        session_id = store.session_id_for(validate_session_id(request.session_id))
        project = validate_slug(request.project, "project") if request.project else None
        if store.exists:
            store.catch_up_edits(RecordKind.SESSION)  # the record as its file holds it now (a hand edit in place)
        row, project = store.locate_session(session_id, project, request.cwd)
        # one session's turns, all of them (a hook session's too, once a transcript import superseded it)
        flt = PromptFilter(session_id=session_id, projects=[project] if project else None, superseded=True)
        total, rows = index.count_and_page(store.conn, "prompt", flt, limit, offset, "turn-asc")
        if row is None:
            _refuse_unreadable(store, session_id, project)
        if row is None and total == 0:
            _refuse_with_the_hook_session(store, session_id, request.project or None)
            raise RecordNotFoundError(session_id, request.project or None)
        page = noted_clamp(envelope(total, limit, offset, [row_to_record(r) for r in rows]), request)
        return {"session": row_to_record(row) if row is not None else None, **page}
    flt = PromptFilter(
        projects=store.scope(request.project, request.cross_project, request.cwd),
        client=canonical_client(store, request.client) if request.client else None,  # in any case, as reports
        bounds=parse_bounds(request.since, request.until, resolve_zone(request.tz) if request.tz else store.zone),
    )
    total, rows = index.count_and_page(store.conn, "session", flt, limit, offset, "date-desc")
    items = [row_to_record(r) for r in rows]
    counts = index.turn_counts(store.conn, [(item["project"], item["sessionId"]) for item in items])
    return noted_clamp(envelope(total, limit, offset, [{**item, "turns": counts.get((item["project"], item["sessionId"]), 0)}
                                                      for item in items]), request)


def _refuse_with_the_hook_session(store: VaultStore, session_id: str, project: str | None) -> None:
    """Raise :class:`RecordNotFoundError` naming the session a hook recorded for the agent's own
    conversation id ``session_id`` (``claude-code-<id>``: a person reads the agent's id in the
    agent, not memo's), when there is one; else return."""
    from .agent_ids import AGENTS, hook_session_id

    for agent in AGENTS:
        try:
            hook_id = hook_session_id(agent, session_id)
        except InvalidFieldError:
            continue
        found = [row for row in index.where_is(store.conn, session_record_id(hook_id), RecordKind.SESSION.value)
                 if project is None or row["project"] == project]
        if found:
            error = RecordNotFoundError(session_id, project)
            error.args = (f"{error}; the session {agent}'s hook recorded for that conversation is {hook_id}: memo "
                          f"session show {shell_word(hook_id)} --project {shell_word(found[0]['project'])}",)
            raise error


def _refuse_unreadable(store: VaultStore, session_id: str, project: str | None) -> None:
    """Raise :class:`CorruptRecordError` naming the session's record file when it is there but
    cannot be read (torn YAML, a hand edit a record rule refuses): not "not found", nor its
    turns under a blank header."""
    refuse_unreadable_record(store, session_record_id(session_id), project, (RecordKind.SESSION,))


def known_clients(store: VaultStore) -> list[str]:
    """Every client name the vault's sessions use (``internal`` for none), sorted."""
    return index.client_names(store.conn)


def check_projects(store: VaultStore, projects: list[str], known: list[str] | None = None) -> None:
    """Refuse a project filter naming a project the vault holds nothing of: a misspelt project
    read as 0 minutes without a word, where a misspelt client is refused (found by an analyst).
    ``known``: the projects of every vault a read covers (further vaults), when not this vault's.

    Raises
    ------
    InvalidFieldError
        ``Invalid project: …`` with the projects the vault holds (the first 20)."""
    everywhere = known is not None
    if known is None:
        known = index.project_names(store.conn) if store.exists else []
    unknown = [project for project in projects if project not in known]
    if unknown:
        names = ", ".join(known[:20]) + (", …" if len(known) > 20 else "") if known else "none yet"
        holder = "no vault read holds anything" if everywhere else "the vault holds nothing"
        raise InvalidFieldError("project", f"{holder} of project {unknown[0]!r} (projects: {names})")


def check_client(store: VaultStore, client: str, known_elsewhere: list[str] | None = None) -> None:
    """Refuse a client filter that no session of the vault and no ``[clients]`` entry of the
    config has (any case): a misspelt name would otherwise give an empty report (a 0.00 h
    timesheet) that looks like a client with no work. A known client with nothing in the period
    is no error. Every interface's report checks it (:func:`~memo_analytics.analytics.activity.report_for`).
    ``known_elsewhere``: the clients of the further vaults a read covers too.

    Raises
    ------
    InvalidFieldError
        ``Invalid client: …`` with the names the vault and the config know (the config's
        spelling where both have a name).
    """
    known = {name.strip().lower(): name for name in [*(known_elsewhere or []), *known_clients(store)]}
    known.update((name.strip().lower(), name) for name in store.settings.clients)  # the config's spelling first
    asked = unicodedata.normalize("NFC", client).strip().lower()
    if asked in known or asked == "internal":  # the built-in client of no client: never a typo (an empty vault refused it)
        return
    names = ", ".join(sorted(known.values(), key=str.lower)) or "none yet"
    raise InvalidFieldError("client", f"no session and no [clients] entry of the config has the client {client!r} "
                                      f"(exact name, any case); clients known: {names}")
