"""The rules of local writes a record file can break (SPEC §2.2–§2.5), checked where a record
arrives from elsewhere: a hybrid push (:mod:`.sync`) and a vault-git pull (:mod:`.vault_git`)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from ..config import MAX_BODY_BYTES
from ..domain.billing import client_name_problem
from ..domain.clock import from_iso, minutes_between
from ..domain.errors import InvalidFieldError
from ..domain.ids import LONE_PROMPT_ID, prompt_id, validate_slug
from ..domain.records import MAX_SESSION_MINUTES, RecordKind, normalize_meta
from ..domain.wire import is_one_plain_line
from .prompts import MAX_CLOCK_SKEW, clean_owner
from .sessions import is_web_url


def check_record(meta: dict[str, Any], body: str, now: datetime) -> None:
    """The rules of local writes a record file can break (SPEC §2.2–§2.5): the body limit;
    the id a turn or session of that ``sessionId`` (and ``turn``) has; no instant beyond the
    clock skew allowed; a session ends after it starts and its ``durationMinutes`` is
    ``endTime − startTime`` (billed minutes are derived, never taken from the sender); a
    deliverable links to a web page (http(s)), if anywhere; a move cut short (``movingTo``) names another project by
    a valid id; a client's name is one line of plain text (as every write takes it)."""
    try:  # the rules every record holds, wherever it comes from (a merge of two versions too)
        normalize_meta(meta)
    except ValueError as exc:
        field, _, said = str(exc).partition(": ")
        raise InvalidFieldError(field, said) if said and " " not in field else InvalidFieldError("record", str(exc))
    size = len(body.encode("utf-8", "surrogatepass"))
    if size > MAX_BODY_BYTES:
        raise InvalidFieldError("body", f"is {size} bytes; the limit is {MAX_BODY_BYTES} bytes")
    session_id, kind = meta.get("sessionId"), meta.get("kind")
    if kind == RecordKind.SESSION.value:
        # its id is its sessionId's (session-<sessionId>): the record model holds that rule; a record
        # without a sessionId it cannot check
        if not session_id:
            raise InvalidFieldError("sessionId", f"missing: {meta['id']} names no session (session-<sessionId>)")
        moving = meta.get("movingTo")
        if moving is not None:  # a move cut short names the project it goes to: a project id
            if not isinstance(moving, str) or moving == meta.get("project"):
                raise InvalidFieldError("movingTo", f"{str(moving)[:80]!r} is not another project of the vault")
            validate_slug(moving, "movingTo")
    elif kind == RecordKind.PROMPT.value:
        if session_id or meta.get("turn") is not None:
            if not session_id or meta.get("turn") is None:
                raise InvalidFieldError("turn", "a turn of a session has both sessionId and turn")
            expected = prompt_id(session_id, meta["turn"], now)
            if meta["id"] != expected:
                raise InvalidFieldError("id", f"{meta['id']} is not the id of turn {meta['turn']} of {session_id} "
                                              f"({expected})")
        elif not LONE_PROMPT_ID.fullmatch(meta["id"]):
            raise InvalidFieldError("id", f"{meta['id']} is not the id of a prompt without a session "
                                          "(prompt-<epoch ms>-<6 hex>)")
    elif not meta["id"].startswith(f"{kind}-"):
        raise InvalidFieldError("id", f"{meta['id']} is not the id of a {kind} record ({kind}-…)")
    for field in ("created", "updated", "startTime", "endTime"):
        if meta.get(field) and from_iso(meta[field]) > now + MAX_CLOCK_SKEW:
            raise InvalidFieldError(field, f"{meta[field]} is in the future")
    client = meta.get("client")
    if client is not None:  # printed on invoices and in the digest's commands: one plain line
        problem = client_name_problem(client) if isinstance(client, str) else "is not text"
        if problem is not None:
            raise InvalidFieldError("client", f"{str(client)[:60]!r} {problem}")
    if meta.get("kind") != RecordKind.SESSION.value:
        return
    for number, item in enumerate(meta.get("deliverables") or [], 1):
        if isinstance(item, dict) and item.get("type") == "pr" and not is_web_url(item.get("url")):
            raise InvalidFieldError(f"deliverables[{number}].url", "a pull request's url must be an http(s) URL")
        if isinstance(item, dict) and item.get("url") is not None and not is_web_url(item.get("url")):
            # a commit's or a document's link too (a javascript: or file: URL went into the story)
            raise InvalidFieldError(f"deliverables[{number}].url", "a deliverable's url must be an http(s) URL")
        for key in ("type", "url", "sha", "title"):
            value = item.get(key) if isinstance(item, dict) else None
            # tabs and line ends a record written before may hold are taken; an escape or a U+202E is not
            if isinstance(value, str) and not is_one_plain_line(re.sub(r"[\t\n\r]", " ", value)):
                raise InvalidFieldError(f"deliverables[{number}].{key}", "holds a control or direction character")
    if meta.get("owner") is not None:  # billing tells people apart by it
        if not isinstance(meta["owner"], str) or clean_owner(meta["owner"]) != meta["owner"]:
            raise InvalidFieldError("owner", f"{str(meta['owner'])[:60]!r} is no person's name (one line of text, "
                                             "at most 200 characters)")
    end, minutes = meta.get("endTime"), meta.get("durationMinutes")
    # a superseded session (its transcript, or the agent's own, is the truth) keeps the end it had
    if meta.get("status") != "superseded" and (end is not None) != (meta.get("status") == "completed"):
        raise InvalidFieldError("status", f"{meta.get('status')!r} with{'' if end else 'out'} an endTime: a session "
                                          "is completed exactly when it has ended (or superseded, with or without one)")
    # an end before the start, or minutes that are not the times, a record cannot hold at all
    # (:class:`~memo_analytics.domain.records.Session`: refused wherever a record is read)
    if end is None and minutes is not None:
        raise InvalidFieldError("durationMinutes", "given for a session without an endTime")
    span = minutes_between(from_iso(meta["startTime"]), from_iso(end)) if end is not None and meta.get("startTime") \
        else None
    if span is not None and span > MAX_SESSION_MINUTES:
        # as a local end or edit refuses it: a session pushed from 2020 to now billed 52,632 h, and was
        # issued on an invoice; with fewer minutes stated, it billed them years back, past every period
        raise InvalidFieldError("durationMinutes" if minutes is None or minutes == span else "endTime",
                                f"{span} minutes from startTime to endTime: a session lasts at most a week "
                                f"({MAX_SESSION_MINUTES} minutes)")
