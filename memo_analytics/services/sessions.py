"""Session lifecycle: start, end, turns (SPEC §2.5; hand-offs and sync come later)."""

from __future__ import annotations

from typing import Any

from ..domain.clock import minutes_between, parse_instant, to_iso, utcnow, from_iso
from ..domain.errors import InvalidFieldError, SessionCompletedError, SessionNotStartedError
from ..domain.ids import new_session_id, session_record_id, validate_slug
from ..domain.records import Deliverable, RecordKind, Session
from ..index.query import PromptFilter
from ..index import store as index
from .prompts import _clean_extra, clean_text, optional_slug, row_to_record
from .requests import EndSessionRequest, StartSessionRequest
from .store import VaultStore

#: Fields that ``session_start`` keeps from an existing record (SPEC §2.5).
PRESERVED_ON_RESTART = ("startTime", "created", "taskSlug", "client", "billable", "summary")


def start_session(store: VaultStore, request: StartSessionRequest, now=None) -> dict[str, Any]:
    """Open (or re-open) a session (SPEC §2.5).

    A new session id ``{timestamp}-{6 hex}`` is generated when none is given. Restarting
    an active session keeps its ``startTime, created, taskSlug, client, billable, summary``.

    Returns
    -------
    dict
        The session record (camelCase frontmatter) plus ``body``.

    Raises
    ------
    SessionCompletedError
        The session record is already ``completed``.
    InvalidFieldError
        Unsafe ids or a bad ``startTime``.
    """
    now = now or utcnow()
    project = store.resolve_project(request.project, request.cwd)
    session_id = validate_slug(request.session_id, "sessionId") if request.session_id else new_session_id(now)
    start = to_iso(parse_instant(request.start_time, "startTime", store.zone)) if request.start_time else to_iso(now)
    record_id = session_record_id(session_id)
    with store.lock():
        existing = store.read(project, RecordKind.SESSION, record_id)
        old = existing[0] if existing else {}
        if old.get("status") == "completed":
            raise SessionCompletedError(session_id)
        session = Session(
            id=record_id,
            project=project,
            status="active",
            created=start,
            updated=start if request.start_time else to_iso(now),
            source=request.source or "mcp",
            ide=request.ide or old.get("ide") or "generic",
            model=request.model or old.get("model"),
            agent=request.agent or old.get("agent"),
            session_id=session_id,
            task_slug=optional_slug(request.task_slug, "taskSlug"),
            client=clean_text(request.client, "client"),
            billable=True if request.billable is None else request.billable,
            branch=request.branch or old.get("branch"),
            git_sha=request.git_sha or old.get("gitSha"),
            linked_paths=request.linked_paths or old.get("linkedPaths") or [],
            tags=request.tags or old.get("tags") or [],
            start_time=start,
            summary=clean_text(request.summary, "summary"),
        )
        meta = {**old, **session.wire(), **_clean_extra(request.extra)}
        for key in PRESERVED_ON_RESTART:
            if old.get(key) is not None:
                meta[key] = old[key]
        body = existing[1] if existing else ""
        store.upsert(RecordKind.SESSION, meta, body)
    return {**meta, "body": body}


def end_session(store: VaultStore, request: EndSessionRequest, now=None) -> dict[str, Any]:
    """Close a session (SPEC §2.5).

    ``endTime`` is ``until`` or now; ``durationMinutes`` = ``endTime − startTime`` in
    whole minutes; re-ending a completed session keeps its duration (unless an importer
    asks to recompute it from a grown transcript). New deliverables (``pr`` adds
    ``{type: 'pr', url, title}``) merge into existing ones by ``(url, sha, type)``.

    Raises
    ------
    SessionNotStartedError
        ``... Call session_start first`` without a session id or record.
    InvalidFieldError
        ``until`` before the session's start, bad deliverables.
    """
    now = now or utcnow()
    if not request.session_id:
        raise SessionNotStartedError(None)
    session_id = validate_slug(request.session_id, "sessionId")
    record_id = session_record_id(session_id)
    with store.lock():
        project = _session_project(store, request.project, record_id)
        existing = store.read(project, RecordKind.SESSION, record_id) if project else None
        if existing is None:
            raise SessionNotStartedError(session_id)
        meta, body = existing
        end = parse_instant(request.until, "until", store.zone) if request.until else now
        start = from_iso(str(meta["startTime"]))
        if end < start:
            raise InvalidFieldError("until", f"{to_iso(end)} is before the session's startTime {meta['startTime']}")
        already = meta.get("status") == "completed" and meta.get("durationMinutes") is not None
        if not already or request.recompute_duration:
            meta["endTime"] = to_iso(end)
            meta["durationMinutes"] = minutes_between(start, end)
        meta["status"] = "completed"
        meta["updated"] = to_iso(end) if request.recompute_duration else to_iso(now)
        if request.summary is not None:
            meta["summary"] = clean_text(request.summary, "summary")
        meta["deliverables"] = merge_deliverables(meta.get("deliverables") or [], _new_deliverables(request))
        store.upsert(RecordKind.SESSION, meta, body)
    return {**meta, "body": body}


def _new_deliverables(request: EndSessionRequest) -> list[dict[str, Any]]:
    items = list(request.deliverables)
    if request.pr:
        items.append({"type": "pr", "url": request.pr, "title": f"Pull request {request.pr.rstrip('/').rsplit('/', 1)[-1]}"})
    cleaned = []
    for item in items:
        try:
            deliverable = Deliverable.model_validate(item)
        except Exception as exc:
            raise InvalidFieldError("deliverables", str(exc).splitlines()[0]) from None
        data = {k: v for k, v in deliverable.wire().items() if v is not None}
        for key in ("url", "title"):
            if key in data:
                data[key] = clean_text(data[key], f"deliverables.{key}")
        cleaned.append(data)
    return cleaned


def merge_deliverables(existing: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge ``new`` into ``existing``, de-duplicated by ``(url, sha, type)`` (SPEC §2.5)."""
    merged: list[dict[str, Any]] = []
    seen: set[tuple] = set()
    for item in [*existing, *new]:
        key = (item.get("url"), item.get("sha"), item.get("type"))
        if key in seen:
            continue
        seen.add(key)
        merged.append(item)
    return merged


def _session_project(store: VaultStore, project: str | None, record_id: str) -> str | None:
    if project:
        return validate_slug(project, "project")
    row = index.get_row(store.conn, record_id, "session")
    return row["project"] if row is not None else None


def session_turns(store: VaultStore, session_id: str) -> list[dict[str, Any]]:
    """Every prompt of a session in turn order."""
    validate_slug(session_id, "sessionId")
    flt = PromptFilter(session_id=session_id)
    _, rows = index.count_and_page(store.conn, "prompt", flt, 1_000_000, 0, "date-asc")
    records = [row_to_record(r) for r in rows]
    return sorted(records, key=lambda r: (r.get("turn") or 0, r["created"]))
