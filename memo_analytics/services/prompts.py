"""Prompt turns: record, list, search, get (SPEC §2.2–§2.4, §2.6)."""

from __future__ import annotations

import json
import os
import re
import unicodedata
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..config import MAX_BODY_BYTES
from ..domain.billing import client_name_problem
from ..domain.clock import from_iso, minutes_between, parse_bounds, parse_record_instant, resolve_zone, to_iso, utcnow
from ..domain.errors import CorruptRecordError, InvalidFieldError, MemoError, RecordNotFoundError
from ..domain.ids import (
    MAX_TURN,
    prompt_id,
    session_record_id,
    validate_session_id,
    validate_slug,
)
from ..domain.records import Prompt, RecordKind, Session, subdir_for_kind
from ..domain.wire import DIRECTION_CONTROLS
from ..index import store as index
from ..index.query import PromptFilter, clamp_note, clamp_page, fts_match_expression
from ..vault.redact import (
    IGNORED_PATH,
    looks_like_secret,
    redact_ignored_paths,
    redact_secrets,
    redact_value,
)
from ..index.folders import folder_files
from ..vault.io import open_regular, read_placed_record
from .requests import ListRequest, RecordPromptRequest
from .projects import remember_root
from .store import VaultStore, from_another_machine, git_head, repository_root

#: How far in the future a recorded instant may lie (clock skew between machines).
MAX_CLOCK_SKEW = timedelta(days=1)

#: How far apart a hook's capture and an agent's MCP record of the same prompt may lie.
HOOK_TWIN_WINDOW = timedelta(minutes=10)

#: Characters that print nothing: a body made only of these (and whitespace) is empty.
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"


def clean_client(value: str | None) -> str | None:
    """A client name as recorded: text without control characters, at most
    :data:`~memo_analytics.domain.billing.MAX_CLIENT_CHARS` characters (it is printed on invoices, in spreadsheets and the
    e-invoice XML); None when empty.

    Raises
    ------
    InvalidFieldError
        ``client``: a control character, or too long.
    """
    text = clean_text(value, "client")
    if not text:
        return None
    text = unicodedata.normalize("NFC", text)  # one spelling: "Café" typed on a Mac (e + U+0301) is one client
    if text == "NAME":  # a digest's command pasted as printed filed real hours under a client called NAME
        raise InvalidFieldError("client", "NAME stands for the client's name in the command: give the name")
    problem = client_name_problem(text)  # a name is matched: nothing invisible either
    if problem is not None:
        raise InvalidFieldError("client", problem)
    return text


#: The longest owner (a git identity: an e-mail address or a name).
MAX_OWNER_CHARS = 200



def canonical_client(store: VaultStore, client: str | None) -> str | None:
    """The spelling a client is recorded in: the config's ``[clients]`` name when one matches in
    any case, else the spelling the vault's sessions already use, else ``client`` as given (a new
    client). "Müller GmbH" typed as "müller gmbh" stays one client in every group-by (Parquet,
    DuckDB, the analyst's frames), not only in the reports that match names in any case.
    None stays None."""
    if not client:
        return client
    client = unicodedata.normalize("NFC", client)
    if client in store.settings.clients:
        return client
    wanted = client.strip().lower()
    configured = next((name for name in store.settings.clients if name.strip().lower() == wanted), None)
    if configured:
        return configured
    if wanted not in store.client_spellings:  # one index lookup per client and store, not one per write
        spelled = index.client_spelling(store.conn, client)
        if spelled is None:
            return client  # a new client: written as given, and found so next time
        store.client_spellings[wanted] = spelled
    return store.client_spellings[wanted]


def is_new_client(store: VaultStore, client: str) -> bool:
    """Whether neither the config's ``[clients]`` nor any session of the vault has ``client`` (any
    case): a misspelt name, or a client without billing terms yet (``internal`` is never new)."""
    client = unicodedata.normalize("NFC", client)
    wanted = client.strip().lower()
    return bool(wanted) and wanted != "internal" and all(name.strip().lower() != wanted for name in store.settings.clients) \
        and index.client_spelling(store.conn, client) is None


def ended_before(store: VaultStore, project: str, session_id: str | None, at: datetime) -> bool:
    """Whether the session ``session_id`` had ended before ``at``: its conversation was over, so a
    prompt of the same text recorded then is another conversation's turn ("run the tests" said
    again), not the hook's capture of this one."""
    found = store.read(project, RecordKind.SESSION, f"session-{session_id}") if session_id else None
    end = found[0].get("endTime") if found else None
    return isinstance(end, str) and from_iso(end) < at


#: Vendors an agent's name may begin with ("anthropic/claude-code", "openai-codex", "google-gemini-cli").
_VENDORS = ("anthropic", "openai", "google", "github")
#: Of each hooked agent, the short names an agent gives itself ("claude": the command Claude Code runs as).
_SHORT_NAMES = {"claudecode": ("claude", "anthropic"), "codex": ("openai",), "gemini": ("google",),
                "copilot": ("github",)}
#: The models each hooked agent answers with (``claude-opus-4-1``, ``gpt-5-codex``, ``gemini-2.5-pro``,
#: ``o3``), their punctuation gone: an agent naming its model names the agent of that model — Cursor and
#: Copilot answer with any (another vendor's model is another agent's: a Codex agent's "gpt-5-codex"
#: turn was taken for a Claude Code hook's, found by a breaker).
_ANY_MODEL = r"(?:claude(?:opus|sonnet|haiku|instant|\d)|gpt\d|gpt4o|o\d|gemini\d|codexmini|chatgpt)[0-9a-z]*"
_MODEL_NAME = {"claudecode": re.compile(r"claude(?:opus|sonnet|haiku|instant|\d)[0-9a-z]*"),
               "codex": re.compile(r"(?:gpt\d|gpt4o|o\d|codexmini|chatgpt)[0-9a-z]*"),
               "gemini": re.compile(r"gemini\d[0-9a-z]*"),
               "cursor": re.compile(_ANY_MODEL), "copilot": re.compile(_ANY_MODEL)}


def specific_text(body: str | None) -> bool:
    """Whether a prompt says enough to be told apart: four words or more, or 30 characters — "yes",
    "continue", "run the tests" are said in every conversation, a twin of one of them proves nothing."""
    text = str(body or "").strip()
    return len(text.split()) >= 4 or len(text) >= 30


def same_agent(named: str | None, hooked: str, ide: str | None = None, body: str | None = None) -> bool:
    """Whether an agent named over MCP (``agent``) is the agent whose hook is ``hooked``
    (``claude-code``, ``gemini``, ``copilot`` …): none named, ``generic``, or the same name in any
    spelling — "Claude Code", "gemini-cli", "Copilot CLI" were another agent, and the turn was
    counted twice; another product whose name begins alike ("Claude", "Copilot Chat") is not,
    unless the ``ide`` it runs in is the hooked agent ("claude" or "claude-code-agent" in
    ``claude-code``: the turn was counted twice, found by an integrator).

    ``body``, the prompt both recorded: a prompt of substance (:func:`specific_text`) is the same
    agent's when the name is the hooked agent's with its vendor ("anthropic/claude-code",
    "openai-codex"), its short name ("claude"), or a model it answers with ("claude-opus-4-1" of
    ``claude-code``, "gpt-5-codex" of ``codex``) — each counted every turn twice (found by an
    integrator); another vendor's model is another agent's. (A short prompt of the agent's own
    open session never takes the hook's conversation over: :func:`record_prompt`.)"""
    def plain(text: str | None) -> str:
        return re.sub(r"[^0-9a-z]+", "", str(text or "").casefold())

    mine, theirs, where = plain(named), plain(hooked), plain(ide)
    specific = body is not None and specific_text(body)
    if mine in ("", "generic"):
        # (a short prompt's agent may not take the hook's conversation over: record_prompt keeps it apart)
        return True
    # the same name, or it with "cli" (Gemini CLI is gemini's hook; "Claude" or "Copilot Chat" are other products)
    if bool(theirs) and mine in (theirs, theirs + "cli") or theirs == mine + "cli":
        return True
    if specific and theirs:
        bare = next((mine[len(v):] for v in _VENDORS if mine.startswith(v) and len(mine) > len(v)), mine)
        model = _MODEL_NAME.get(theirs)
        if bare in (theirs, theirs + "cli") or theirs == bare + "cli" or mine in _SHORT_NAMES.get(theirs, ()) \
                or bare in _SHORT_NAMES.get(theirs, ()) or model is not None and model.fullmatch(bare):
            return True
    return bool(theirs) and where in (theirs, theirs + "cli") and (theirs.startswith(mine) or mine.startswith(theirs))


def _open_session(store: VaultStore, project: str, session_id: str) -> bool:
    """Whether ``session_id`` of ``project`` is an open session of the agent's own (not a hook's)."""
    found = store.read(project, RecordKind.SESSION, f"session-{session_id}")
    return found is not None and found[0].get("status") == "active" and not found[0].get("endTime") \
        and not str(found[0].get("source") or "").startswith("hook:")


def refuse_anothers(session: dict[str, Any], owner: str | None, session_id: str | None, instead: str) -> None:
    """A call that names its person (``owner``: a team daemon's caller, a hook) never acts on
    another person's session of the same id — it would bill their time as the caller's, or
    the caller's turn and end would land in theirs (found by a team lead: in remote mode Bob's
    turn and end went into Ana's ``deploy``). Owners compare in any case. A call from another
    machine (a daemon bound off loopback) that names no owner is no one's: it is refused on a
    session that names one.

    Raises
    ------
    InvalidFieldError
        ``sessionId``: the session names another owner; ``instead`` says what to do.
    """
    named = clean_owner(owner)
    theirs = session.get("owner") if session else None
    if not (isinstance(theirs, str) and theirs.strip()):
        return
    if named and not same_person(theirs, named):
        raise InvalidFieldError("sessionId", f"session {session_id} is {theirs}'s, not {named}'s; {instead}")
    if not named and from_another_machine():  # leaving the owner out must not be a way into it
        raise InvalidFieldError("sessionId", f"session {session_id} is {theirs}'s and this call names no owner; "
                                             f"name yours (owner), or {instead}")


def same_person(one: str | None, other: str | None) -> bool:
    """Whether two ``owner`` values name one person (any case; none and blank alike)."""
    return (one or "").strip().casefold() == (other or "").strip().casefold()


def clean_owner(value: str | None, field: str = "owner") -> str | None:
    """A person as a session's or hand-off's ``owner`` names them (their git identity: an
    e-mail address or a name): one line without control or invisible characters, at most
    :data:`MAX_OWNER_CHARS` characters — billing tells people apart by it, and a frontmatter
    too large to read again would lose the session; None when empty.

    Raises
    ------
    InvalidFieldError
        ``owner``: a control or invisible character, or too long.
    """
    text = clean_text(value, field)
    if not text:
        return None
    if len(text) > MAX_OWNER_CHARS:
        raise InvalidFieldError(field, f"is {len(text)} characters; at most {MAX_OWNER_CHARS} (a git identity)")
    bad = _control_in(text, "\u200b\u200c\u200d\u200e\u200f\u2060\ufeff\u2028\u2029")
    if bad is not None:
        raise InvalidFieldError(field, f"holds the control character U+{ord(bad):04X}; an owner is one line of text")
    return text


def _control_in(text: str, also: str = "") -> str | None:
    """The first control character of ``text`` (C0, DEL, C1, a direction control, or one of
    ``also``), or None."""
    return next((c for c in text if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in DIRECTION_CONTROLS or c in also),
                None)


def clean_line(value: str | None, field: str) -> str | None:
    """:func:`clean_text` for a one-line name (``ide``, ``model``, ``agent``, ``branch``,
    ``gitSha``, ``source``): it is printed in table cells and report headings, so a line break,
    another control character or a direction override is refused.

    Raises
    ------
    InvalidFieldError
        As :func:`clean_text`; or a control character (named by its code point).
    """
    text = clean_text(value, field)
    bad = _control_in(text or "")
    if bad is not None:
        raise InvalidFieldError(field, f"holds the control character U+{ord(bad):04X}; a {field} is one line of text")
    return text


def clean_text(value: str | None, field: str, required: bool = False) -> str | None:
    """Validate free text and redact secrets in it (SPEC §2.4).

    Line endings become ``\n`` and surrounding whitespace is trimmed (the form a re-read of
    the Markdown file gives back).

    Raises
    ------
    InvalidFieldError
        Empty (whitespace or invisible characters only) when ``required``; not valid
        UTF-8; larger than ``MAX_BODY_BYTES``; contains NUL.
    """
    if value is None:
        if required:
            raise InvalidFieldError(field, "must not be empty")
        return None
    try:
        refused = body_refusal(value)
    except UnicodeEncodeError:
        raise InvalidFieldError(field, "is not valid UTF-8") from None
    if refused:
        raise InvalidFieldError(field, refused)
    text = value.replace("\r\n", "\n").replace("\r", "\n").strip()
    if required and not text.strip(_INVISIBLE + " \t\n\v\f"):
        raise InvalidFieldError(field, "must not be empty")
    return redact_secrets(text)[0]


def body_refusal(value: str) -> str | None:
    """Why a text cannot be a record's body — ``is N bytes; the limit is …`` (over
    ``MAX_BODY_BYTES``), ``contains a NUL character`` — else None; cheap, before any redaction
    (:func:`clean_text` refuses with it; an import skips a session none of whose turns passes).

    Raises
    ------
    UnicodeEncodeError
        ``value`` holds a lone surrogate (not valid UTF-8)."""
    size = len(value.encode("utf-8"))
    if size > MAX_BODY_BYTES:
        return f"is {size} bytes; the limit is {MAX_BODY_BYTES} bytes"
    if "\x00" in value:
        return "contains a NUL character"
    return None


def without_nul(text: str) -> str:
    """``text`` with each NUL character (which no record file holds) as U+FFFD: a hook's prompt
    or a transcript's turn that holds one is kept, not dropped (a prompt asking about a file's
    NUL bytes was lost whole, the hook exiting 0 — found by an agent's tester)."""
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def fit_body(text: str) -> str:
    """``text`` as a turn's body can hold it: one over :data:`MAX_BODY_BYTES` (a pasted log, an
    image's base64 in a SpecStory file, a hook's prompt) is cut to the limit — whole characters — and says so at its
    end; else ``text`` itself. A session whose every turn was over the limit was not recorded at
    all: its minutes lost, and a second import said nothing of it."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= MAX_BODY_BYTES:
        return text
    said = f"\n\n[… cut by memo: the turn held {len(data):,} bytes; a turn keeps at most {MAX_BODY_BYTES:,}]"
    room = MAX_BODY_BYTES - len(said.encode("utf-8"))
    return data[:room].decode("utf-8", "ignore") + said


def body_problem(value: str | None) -> str | None:
    """Why ``value`` cannot be a turn's body — ``must not be empty`` (nothing but whitespace or
    invisible characters), or :func:`body_refusal`'s reason — else None; cheap, no redaction (a
    hook refuses its event with it before anything is written)."""
    if value is None or not value.strip(_INVISIBLE + " \t\n\r\v\f"):
        return "must not be empty"
    try:
        return body_refusal(value)
    except UnicodeEncodeError:
        return "is not valid UTF-8"


def clean_list(values: list[str], field: str) -> list[str]:
    """:func:`clean_text` on every item; empty items are dropped."""
    cleaned = [clean_text(v, field) for v in values]
    return [v for v in cleaned if v]


def optional_slug(value: str | None, field: str) -> str | None:
    """A safe slug, or None; a value shaped like a secret is refused (it would become a
    file name, where redaction cannot reach)."""
    if value in (None, ""):
        return None
    slug = validate_session_id(value) if field == "sessionId" else validate_slug(value, field)
    if looks_like_secret(slug):
        raise InvalidFieldError(field, "looks like a secret (token or key); choose another id")
    return slug


def clean_deliverables(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Redact every string of every deliverable (nested values included)."""
    return [redact_value(item) for item in items]  # type: ignore[misc]


def record_prompt(store: VaultStore, request: RecordPromptRequest, now=None, retries: bool = False) -> dict[str, Any]:
    """Record one turn (SPEC §2.2–§2.4).

    ``retries`` (an agent's call, :func:`record_prompt_answer`): a turn without a number whose text
    and ``created`` are the session's last turn's is that turn, answered again (a retry after a
    lost answer), not a second one.

    With ``session_id`` and no ``turn`` the turn is ``max(existing) + 1``, allocated and
    written under the vault lock; turn files above the highest indexed turn (a writer
    killed before its index update) are indexed and stepped over, never overwritten, and an
    existing turn file is always indexed before it is returned (``skip_existing``) or
    refused. (Missing rows below the highest turn are taken in by ``session_start`` and
    ``session_end``.) Client, billable and task slug default to the session's.
    A prompt recorded over MCP that a hook of the same agent already captured (the same text
    in the same project, within :data:`HOOK_TWIN_WINDOW`; an ``agent`` given must name the
    hook's agent — an ``ide`` names where an agent runs, not which; the hook's session not ended
    before it) is not recorded twice: the
    answer is the hook's turn with ``duplicateOf`` and a ``note`` (issue 14: one turn, however
    it arrived).
    Without ``session_id`` the prompt gets the random id ``prompt-{epoch ms}-{6 hex}`` even
    when a ``turn`` is given (SPEC §2.2): a turn numbers a session's prompts, so with no session
    it is not recorded. Branch and commit default to the ``cwd`` repository's HEAD. Before anything is written
    the body passes capture-ignore path redaction (the product
    root of ``cwd``: its ``.memoignore`` plus configured globs), then secret redaction.

    Returns
    -------
    dict
        The prompt's frontmatter (camelCase) plus ``body``.

    Raises
    ------
    InvalidFieldError
        Empty/oversized/non-UTF-8 body, unsafe ids, bad ``created``.
    """
    rules = store.ignore_rules(request.cwd)
    product_root = repository_root(request.cwd)
    head_branch, head_sha = git_head(product_root)
    now = now or utcnow()
    body, session_id, project, task_slug, created_at = _turn_fields(store, request, rules, now)
    created = to_iso(created_at)
    joined = None  # the hook's capture of this turn, which gives way to the agent's own session
    if (request.source or "mcp") == "mcp" and not request.skip_existing:
        # an agent whose hooks already captured this prompt, recording it over MCP too: one turn (issue 14)
        twin = index.hook_turn_with_body(store.conn, project, body, to_iso(created_at - HOOK_TWIN_WINDOW),
                                         to_iso(created_at + HOOK_TWIN_WINDOW))
        # … of the same agent: a turn naming another agent is another conversation's (an ide names
        # where an agent runs — Claude Code in Cursor says cursor —, not which agent it is)
        hooked = str(twin["source"] or "").split(":", 1)[-1] if twin is not None else ""
        if twin is not None and same_agent(request.agent, hooked, request.ide, body) and \
                not ended_before(store, project, twin["session_id"], created_at):
            named = bool(request.agent) and str(request.agent).strip().casefold() != "generic" and \
                same_agent(request.agent, hooked)  # the hook's agent named as such
            if session_id and twin["session_id"] and twin["session_id"] != session_id and \
                    _open_session(store, project, session_id) and not specific_text(body) and not named:
                pass  # a "yes" of the agent's own session: its own turn, never the hook's conversation taken over
            elif session_id and twin["session_id"] and twin["session_id"] != session_id and \
                    _open_session(store, project, session_id):
                # the agent records the conversation in its own open session (spec-memo's agents): the turn is
                # its session's, and the hook's capture of it gives way — its session too, billed no more
                # (found by an integrator: both billed, 86 minutes for one hour, the agent's session 0 turns)
                joined = twin
            else:
                return {**row_to_record(twin), "duplicateOf": twin["id"],
                        "note": f"not recorded again: the {hooked or 'agent'} hook captured the same text as turn "
                                f"{twin['turn']} of session {twin['session_id']} (one turn, however it arrived); "
                                "another agent's turn names its agent"}
    with store.lock():
        session_meta = _session_meta(store, project, session_id)
        refuse_anothers(session_meta, request.owner, session_id, "record into a session of your own (start one)")
        turn = request.turn
        if session_id and turn is None:
            turn = index.max_turn(store.conn, project, session_id) + 1
            while True:
                candidate = prompt_id(session_id, turn, now)
                if store.record_exists(project, RecordKind.PROMPT, candidate):
                    try:  # the index lags the files (a writer killed before indexing): index it, never overwrite it
                        store.ensure_indexed(RecordKind.PROMPT, project, candidate)
                    except CorruptRecordError:
                        pass  # a file that cannot be used is stepped over, untouched
                elif index.get_row(store.conn, project, candidate) is None:
                    break
                # else a record of another kind holds the id (a hand-made file): stepped over too
                turn += 1
            if turn > MAX_TURN:
                raise InvalidFieldError("sessionId", f"session {session_id} holds turn {MAX_TURN:,}, the last a session "
                                                     "can have; record this turn in a new session")
        if retries and session_id and request.turn is None and request.created is not None and turn > 1:
            # an agent's retry after a lost answer, stamped as it was (its `created`): the turn answered
            # again — a second, identical turn was written (a prompt said again has another instant)
            last = store.read(project, RecordKind.PROMPT, prompt_id(session_id, turn - 1, now))
            if last is not None and last[1] == body and last[0].get("created") == created:
                return {**last[0], "body": last[1], "note": f"turn {turn - 1} of session {session_id} holds this text "
                                                            "at this time already: not written again"}
        record_id = validate_slug(prompt_id(session_id, turn, now), "id")
        existing = store.read(project, RecordKind.PROMPT, record_id)
        if existing is not None:
            store.ensure_indexed(RecordKind.PROMPT, project, record_id)  # the file is there: so is its row
            meta, old_body = existing
            if request.skip_existing:
                return {**meta, "body": old_body}
            if request.turn is not None and old_body == body:
                # an agent's retry (its answer lost): the same turn, answered again — spec-memo's writes of a
                # deterministic id are re-entrant (SPEC §2.4); another text is refused, never overwritten
                return {**meta, "body": old_body, "note": f"turn {turn} of session {session_id} was recorded "
                                                          "already with this text: not written again"}
            raise InvalidFieldError("turn", f"turn {turn} of session {session_id} is already recorded; leave the turn out to append one")
        meta = turn_meta(_known_client(store, request, session_meta), record_id, project, session_id, turn, created, now,
                         session_meta, rules, (head_branch, head_sha), task_slug)
        store.upsert(RecordKind.PROMPT, meta, body)
    remember_root(store, project, product_root)
    if joined is not None:
        join_agent_session(store, project, str(joined["session_id"]), session_id, str(joined["id"]))
    if session_id and not session_meta:
        # a turn of a session never started: it counts, its time does not (nothing said it; an agent
        # then found session_end refused with "Call session_start first")
        return {**meta, "body": body, "note": f"session {session_id} has no record: its turns count, its time bills "
                                              f"once it is started (session_start) and ended"}
    return {**meta, "body": body}


def _known_client(store: VaultStore, request: RecordPromptRequest, session_meta: dict[str, Any]) -> RecordPromptRequest:
    """``request`` with its client in the spelling the config or the vault knows (as a session's is):
    its session's when that is the same client (no lookup on the turn's write path)."""
    client = clean_client(request.client) if request.client else None
    if not client:
        return request
    own = session_meta.get("client")
    spelled = own if isinstance(own, str) and own.strip().lower() == client.strip().lower() \
        else canonical_client(store, client)
    return request.model_copy(update={"client": spelled})


def _turn_fields(store: VaultStore, request: RecordPromptRequest, rules, now) -> tuple:
    """``(body as stored, session id, project, task slug, created instant)`` of a turn to
    record (:func:`record_prompt`), checked.

    Raises
    ------
    InvalidFieldError
        Empty/oversized/non-UTF-8 body, unsafe ids, a bad or future ``created``.
    """
    body = stored_body(store, request.body, request.cwd, rules)
    session_id = optional_slug(request.session_id, "sessionId")
    project = _turn_project(store, request, session_id)
    task_slug = optional_slug(request.task_slug, "taskSlug")
    created_at = parse_record_instant(request.created, "created", store.zone, wall_clock=True) if request.created else now
    if created_at > now + MAX_CLOCK_SKEW:
        raise InvalidFieldError("created", f"{to_iso(created_at)} is in the future")
    return body, session_id, project, task_slug, created_at


def numbered_turn(store: VaultStore, request: RecordPromptRequest, session_meta: dict[str, Any], rules,
                  now) -> tuple[str, dict[str, Any], str]:
    """``(project, frontmatter, body)`` of turn ``request.turn`` of a session, as
    :func:`record_prompt` writes it when the turn is new: for a whole session written at once
    (:func:`~memo_analytics.services.sessions.record_whole_session`). ``session_meta`` is the
    session record's frontmatter, ``rules`` the capture-ignore rules of ``request.cwd``.

    Raises
    ------
    InvalidFieldError
        As :func:`record_prompt`; no session id or turn number.
    """
    if not request.session_id or request.turn is None:
        raise InvalidFieldError("turn", "a turn of a session written at once needs its session id and number")
    body, session_id, project, task_slug, created_at = _turn_fields(store, request, rules, now)
    record_id = validate_slug(prompt_id(session_id, request.turn, now), "id")
    meta = turn_meta(_known_client(store, request, session_meta), record_id, project, session_id, request.turn,
                     to_iso(created_at), now, session_meta, rules, git_head(repository_root(request.cwd)), task_slug)
    return project, meta, body


def turn_meta(request: RecordPromptRequest, record_id: str, project: str, session_id: str | None, turn: int | None,
              created: str, now, session_meta: dict[str, Any], rules, head: tuple[str | None, str | None],
              task_slug: str | None) -> dict[str, Any]:
    """A new turn's frontmatter as :func:`record_prompt` writes it: the request's fields, else
    the session's (``session_meta``), else the repository's HEAD (``head``: branch, sha);
    ``created`` the turn's instant (UTC ISO), ``rules`` the capture-ignore rules for its
    linked paths.

    Raises
    ------
    InvalidFieldError
        A field that does not validate.
    """
    prompt = Prompt(
        id=record_id,
        project=project,
        created=created,
        updated=created if request.created else to_iso(now),
        source=clean_line(request.source, "source") or "mcp",
        ide=clean_line(request.ide, "ide") or session_meta.get("ide") or "generic",
        model=clean_line(request.model, "model") or session_meta.get("model"),
        agent=clean_line(request.agent, "agent") or session_meta.get("agent"),
        session_id=session_id,
        turn=turn if session_id else None,
        task_slug=task_slug or session_meta.get("taskSlug"),
        client=clean_client(request.client) or session_meta.get("client"),
        billable=_first_bool(request.billable, session_meta.get("billable"), True),
        branch=clean_line(request.branch, "branch") or session_meta.get("branch") or head[0],
        git_sha=clean_line(request.git_sha, "gitSha") or head[1],
        linked_paths=clean_list([IGNORED_PATH if rules.matches(p) else p for p in request.linked_paths],
                                "linkedPaths"),
        tags=clean_list(request.tags, "tags"),
    )
    return {**prompt.wire(), **clean_extra(request.extra)}


def _turn_project(store: VaultStore, request: RecordPromptRequest, session_id: str | None) -> str:
    """The project a turn is filed under (SPEC §2.1, §2.2): :meth:`VaultStore.session_home` for a
    turn of a session, else the explicit ``project``, the project of ``cwd`` or the default.

    Raises
    ------
    AmbiguousIdError
        Several other projects hold a session of this id (the message lists them).
    """
    if not session_id:
        return optional_slug(store.resolve_project(request.project, request.cwd), "project")
    return optional_slug(store.session_home(session_id, request.project, request.cwd), "project")


def stored_body(store: VaultStore, text: str | None, cwd: str | None = None, rules=None) -> str:
    """A turn's text as it is stored: capture-ignore path redaction (the product root of
    ``cwd`` and the configured globs), then :func:`clean_text` (required: not empty).

    Raises
    ------
    InvalidFieldError
        As :func:`clean_text`.
    """
    rules = rules if rules is not None else store.ignore_rules(cwd)
    return clean_text(redact_ignored_paths(text, rules)[0] if text else text, "body", required=True)  # type: ignore[return-value]


def outside_its_session(store: VaultStore, turn: dict[str, Any]) -> str | None:
    """A one-line warning when a recorded ``turn`` (its wire dict) lies outside the times of its
    session — before its start, or after the end of a completed one: the session keeps its
    times, so the turn's time bills nothing (SPEC §2.5) —, or names a session the project does not
    hold (a mistyped id: said with the closest ids it holds); None otherwise (no session id, a
    turn within it, or after the start of an open one)."""
    if not turn.get("sessionId"):
        return None
    found = store.read(turn["project"], RecordKind.SESSION, session_record_id(turn["sessionId"]))
    if found is None:
        return _no_such_session(store, turn)
    meta, created = found[0], from_iso(turn["created"])
    start, end = meta.get("startTime"), meta.get("endTime") if meta.get("status") == "completed" else None
    if end and created > from_iso(str(end)):
        return (f"session {turn['sessionId']} ended at {end}; this turn comes after its end, so its time bills "
                f"nothing (the session keeps its times); for more work start a new session")
    if start and created < from_iso(str(start)):
        return (f"session {turn['sessionId']} started at {start}; this turn comes before its start, so its time "
                f"bills nothing (the session keeps its times: memo session edit --start moves it)")
    if start and not end:
        return _after_a_long_pause(store, turn, meta, created)
    return None


def _after_a_long_pause(store: VaultStore, turn: dict[str, Any], meta: dict[str, Any], created) -> str | None:
    """A warning when a turn of an open session comes more than the idle gap after the session's
    last activity (its previous turn, else its start): its minutes are end − start (SPEC §2.5),
    so the pause will be billed — an agent's session resumed the next morning billed the night
    (found by an integrator: 990 minutes, nothing said)."""
    before = index.last_turn_before(store.conn, turn["project"], turn["sessionId"], to_iso(created),
                                    str(turn.get("id") or ""))
    last = max(from_iso(str(meta["startTime"])), from_iso(before)) if before else from_iso(str(meta["startTime"]))
    gap = store.settings.idle_gap_minutes
    paused = int((created - last).total_seconds() // 60)
    if paused <= gap:
        return None
    return (f"session {turn['sessionId']} was idle {paused // 60} h {paused % 60:02d} min before this turn (its last "
            f"activity {to_iso(last)}); a session bills from its start to its end, the pause too: for work after such a "
            f"pause start a new session (this turn is recorded in this one, and with it the pause: --minutes N, "
            f"which ends a session N minutes after its start, would leave out the work after it, not the pause)")


def record_prompt_answer(store: VaultStore, request: RecordPromptRequest) -> dict[str, Any]:
    """:func:`record_prompt` as every interface answers it (the CLI, the MCP tool's and
    ``/api/actions``' ``record``): the turn's wire dict, with ``warnings`` (one-line texts) when its
    time lies outside its session's times (:func:`outside_its_session`). Raises as
    :func:`record_prompt`."""
    record = record_prompt(store, request, retries=True)
    warning = None if "duplicateOf" in record else outside_its_session(store, record)
    return {**record, "warnings": [warning]} if warning else record


def _no_such_session(store: VaultStore, turn: dict[str, Any]) -> str:
    import difflib

    project, session_id = turn["project"], turn["sessionId"]
    known = index.recent_session_ids(store.conn, project)  # on a turn's write path: a bounded read
    close = difflib.get_close_matches(session_id, known, n=3, cutoff=0.6)
    return (f"project {project} holds no session {session_id}: this turn bills nothing until one is recorded "
            f"(the session_start action, or memo session start {session_id} --project {project})"
            + (f"; did you mean {' or '.join(close)}?" if close else ""))


def stored_summary(store: VaultStore, text: str | None, cwd: str | None = None) -> str | None:
    """A session's summary as it is stored: capture-ignore path redaction, as a turn's text has
    (SPEC §2.4: the summary is printed on timesheets and searched), then :func:`clean_text`.

    Raises
    ------
    InvalidFieldError
        As :func:`clean_text`.
    """
    if text:
        text = redact_ignored_paths(text, store.ignore_rules(cwd))[0]
    return clean_text(text, "summary")


def _first_bool(*values: object) -> bool:
    for value in values:
        if isinstance(value, bool):
            return value
    return True


def clean_extra(extra: dict[str, Any]) -> dict[str, Any]:
    """Extra frontmatter keys (importers' ``transcriptId`` ...): the record's own fields are
    dropped (they cannot be overridden this way) and every value is redacted."""
    reserved = set(Session.model_fields) | {f.alias for f in Session.model_fields.values() if f.alias}
    return {k: redact_value(v) for k, v in extra.items() if k not in reserved}


def _session_meta(store: VaultStore, project: str, session_id: str | None) -> dict[str, Any]:
    if not session_id:
        return {}
    found = store.read(project, RecordKind.SESSION, session_record_id(session_id))
    return found[0] if found else {}


def row_to_record(row) -> dict[str, Any]:
    """An index row back to the record's wire dict (frontmatter + ``body``)."""
    return {**json.loads(row["meta"]), "body": row["body"]}


def filter_from_request(store: VaultStore, request: ListRequest) -> PromptFilter:
    """Validate a list/search request into a :class:`PromptFilter` (SPEC §2.6): ``client`` is the
    exact name in any case (the config's or the vault's spelling of it).

    Raises
    ------
    InvalidDateError
        ``Invalid since date`` / ``Invalid until date``.
    """
    projects = store.scope(request.project, request.cross_project, request.cwd)
    return PromptFilter(
        projects=projects,
        ide=request.ide or None,
        model=request.model or None,
        agent=request.agent or None,
        session_id=request.session_id or None,
        task_slug=request.task_slug or None,
        # the exact name, in any case, as reports match it: "acme gmbh" listed 0 of 165 turns (found by four helpers)
        client=canonical_client(store, request.client) if request.client else None,
        billable=request.billable,
        tags=[t for t in request.tags if t],
        bounds=parse_bounds(request.since, request.until, resolve_zone(request.tz) if request.tz else store.zone),
    )


def envelope(total: int, limit: int, offset: int, items: list[dict[str, Any]]) -> dict[str, Any]:
    """The list envelope ``{total, limit, offset, hasMore, items}`` (SPEC §2.6)."""
    return {"total": total, "limit": limit, "offset": offset, "hasMore": offset + len(items) < total, "items": items}


def noted_clamp(page: dict[str, Any], request: Any) -> dict[str, Any]:
    """``page`` with a ``note`` when the request's ``limit`` or ``offset`` was brought into range
    (SPEC §2.6 clamps them; the caller is told what was used)."""
    said = clamp_note(request.limit, request.offset)
    if said:
        page["note"] = f"{page['note']}; {said}" if page.get("note") else said
    return page


def _with_left_out(store: VaultStore, page: dict[str, Any], projects: list[str] | None) -> dict[str, Any]:
    """``page`` with a ``note`` naming the prompt files of ``projects`` (None: all) that cannot be
    read, left out of it (and ``leftOut``: their paths in the vault): a turn hand-edited with a wrong type vanished from list, search, the API
    and the dashboard without a word, where ``memo activity`` said it (found by a tester of bad files)."""
    if not store.exists:
        return page
    left = [path for path, _, root in store.left_out(RecordKind.PROMPT, say=False)
            if root == store.root and (projects is None or Path(path).parts[1:2] and Path(path).parts[1] in projects)]
    if left:
        said = left_out_said(left)
        page["note"] = f"{page['note']}; {said}" if page.get("note") else said
        page["leftOut"] = left
    return page


def left_out_said(paths: list[str]) -> str:
    """What a listing says of the prompt files it left out (``paths``: as the vault names them)."""
    return (f"{len(paths)} prompt file{'s' if len(paths) != 1 else ''} cannot be read and "
            f"{'are' if len(paths) != 1 else 'is'} left out ({', '.join(paths[:3])}{', …' if len(paths) > 3 else ''}; "
            "memo reindex says why)")


def list_prompts(store: VaultStore, request: ListRequest) -> dict[str, Any]:
    """Prompt records matching the filters, newest first (SPEC §2.6); with a ``query``, those
    that hold its words (:func:`search_prompts`), as ``GET /api/prompts?query=`` filters — the
    MCP action listed every turn and dropped the query without a word."""
    if (request.query or "").strip():
        return search_prompts(store, request)
    flt = filter_from_request(store, request)
    limit, offset = clamp_page(request.limit, request.offset)
    total, rows = index.count_and_page(store.conn, "prompt", flt, limit, offset, request.sort)
    page = envelope(total, limit, offset, [row_to_record(r) for r in rows])
    return noted_clamp(_with_left_out(store, page, flt.projects), request)


def searchable(query: str | None) -> bool:
    """Whether ``query`` holds words to search for (letters or digits; see
    :func:`~memo_analytics.index.query.fts_match_expression`)."""
    return fts_match_expression(query or "") is not None


def search_prompts(store: VaultStore, request: ListRequest) -> dict[str, Any]:
    """FTS5 search ranked by bm25 (by date with ``sort``); a query without words to search for
    gives an empty page (SPEC §2.6), with a ``note`` saying so (an agent read it as no match);
    a search that matched nothing has a ``note`` saying that every word must match."""
    flt = filter_from_request(store, request)
    limit, offset = clamp_page(request.limit, request.offset)
    if not searchable(request.query):
        return noted_clamp({**envelope(0, limit, offset, []),
                            "note": "the query holds no words to search for (letters or digits; every word must "
                                    "match, a trailing * asks for a prefix): nothing was searched; a list without "
                                    "a query lists every turn"}, request)
    total, rows = index.search_page(store.conn, request.query or "", flt, limit, offset, request.sort)
    page = envelope(total, limit, offset, [row_to_record(r) for r in rows])
    if total == 0:  # an agent could not tell "never asked" from "asked in other words"
        # the words searched for: "workspace (" is one (punctuation is no word: an analyst read "all 2 words")
        words = len([word for word in (request.query or "").split() if any(ch.isalnum() for ch in word)])
        page["note"] = ((f"no turn holds all {words} words" if words > 1 else "no turn holds this word")
                        + " in this scope: every word must match (OR and AND are searched as words); fewer or other "
                          "words, or word* for a prefix, find more"
                        # (a search of every project already, outside a repository: the hint said nothing new)
                        + ("" if request.cross_project or not flt.projects else
                           "; crossProject: true (memo: --all) searches every project"))
        joined = _JOINED_WORDS.search(request.query or "")
        if joined:  # "project:web" read as a column filter, "lexer:now" as two words (found by an analyst)
            page["note"] += (f"; {joined.group(0)} is searched as one phrase, its words in that order (a "
                             "mark between words joins them; no column filter: the project and client filters "
                             "choose those)")
    return noted_clamp(_with_left_out(store, page, flt.projects), request)


#: Two words joined by a mark (``project:web``, ``lexer-now``): FTS5 reads them as one phrase.
_JOINED_WORDS = re.compile(r"[^\W_]+(?:[^\w\s*\"]+[^\W_]+)+")


def get_record(store: VaultStore, record_id: str, project: str | None = None,
               cwd: str | None = None) -> dict[str, Any]:
    """Resolve ``record_id`` as a prompt, then as a session (also ``session-<id>``) (SPEC §2.6),
    then — an id of theirs — as a hand-off, trap or decision,
    in ``project`` when given; without one, in the one project that holds it (the project of
    ``cwd`` when several do: :meth:`VaultStore.locate`).

    Raises
    ------
    RecordNotFoundError
        When neither exists (in ``project``).
    CorruptRecordError
        Its file is there but cannot be read (torn YAML, a hand edit a record rule refuses).
    AmbiguousIdError
        Several projects hold the id and none is chosen; the message lists them.
    """
    validate_slug(record_id, "id")
    for candidate, kind in (
        (record_id, "prompt"),
        (record_id, "session"),
        (session_record_id(record_id), "session"),
        # the other records an answer names by id (a session's handoffArchive, a saved trap)
        *((record_id, other) for other in ("handoff", "trap", "decision") if record_id.startswith(f"{other}-")),
    ):
        row = store.locate(candidate, kind, project, cwd)
        if row is not None:
            return row_to_record(row)
    refuse_unreadable_record(store, record_id, project)
    raise RecordNotFoundError(record_id, project or None)


def refuse_unreadable_record(store: VaultStore, record_id: str, project: str | None,
                             kinds: tuple[RecordKind, ...] = (RecordKind.PROMPT, RecordKind.SESSION,
                                                              RecordKind.HANDOFF)) -> None:
    """Before "not found" (and before a new record of the id): raise :class:`CorruptRecordError`
    naming the file of ``record_id`` (a record of ``kinds`` — a turn, a session, also as
    ``session-<id>``, or a hand-off — in ``project`` when given) when it is there but cannot be
    read (torn YAML, bytes that are not UTF-8) — or when a file of another name holds it (renamed
    by hand, as a note in an editor is: a new record of the id would be a second one, and the
    renamed file's work left out of every report). A listing of the kind's folder of each project
    and the first bytes of its files the index does not hold: no other record is parsed (a session
    start read every left-out file of the vault: seconds with thousands of them)."""
    if not store.exists:
        return
    ids = {record_id, session_record_id(record_id)}
    try:
        projects = [validate_slug(project, "project")] if project else sorted(
            entry.name for entry in os.scandir(store.layout.projects_dir) if entry.is_dir())
    except OSError:
        return
    for kind in kinds:
        subdir = subdir_for_kind(kind)
        for where in projects:
            try:
                files = folder_files(store.layout, f"{where}/{subdir}")
            except OSError:
                continue  # a folder that cannot be listed is named by the reports' check of left-out files
            rows = index.folder_rows(store.conn, where, kind.value)
            for held_id, (path, _) in sorted(files.items()):
                if held_id in rows:
                    continue
                said = os.path.relpath(path, store.root)
                if held_id in ids:
                    try:
                        read_placed_record(path)
                    except CorruptRecordError as exc:
                        raise CorruptRecordError(said, f"{exc.reason}; fix the file (`memo reindex` lists every "
                                                       "file it cannot read)") from None
                    continue
                held = _id_held(path)
                if held in ids:
                    raise CorruptRecordError(said, f"it holds {held} under another name; rename it to {held}.md (a "
                                                   f"second {held} would leave its work out of every report)")


#: The ``id:`` line of a record file's frontmatter, as memo writes it (and a hand keeps it).
_ID_LINE = re.compile(rb"^id:[ \t]*['\"]?([A-Za-z0-9._-]+)['\"]?[ \t]*\r?$", re.MULTILINE)


def _id_held(path: Path) -> str | None:
    """The ``id`` the frontmatter of a record file names (from its first 4 kB: no YAML parse),
    or None."""
    try:
        with open_regular(path) as handle:  # a named pipe among the records held a session start for good
            head = handle.read(4096)
    except OSError:
        return None
    found = _ID_LINE.search(head)
    return found.group(1).decode("ascii") if found else None


def join_agent_session(store: VaultStore, project: str, hook_session: str, agent_session: str,
                       hook_turn: str | None = None) -> None:
    """The conversation a hook captures as ``hook_session`` is one the agent records over MCP in
    its own open session ``agent_session`` (spec-memo's agents): the hook's capture of a turn the
    agent recorded (``hook_turn``) is superseded by it, the hook's session is joined to the agent's
    (``joinedTo``: the hook's later prompts go there while it is open) and — with no turn of its own
    left — superseded, billing nothing, else ended where the agent's session begins: the agent's
    session holds the turns and bills the time (both billed it: found by an integrator)."""
    by = [f"{project}/{agent_session}"]
    now = to_iso(utcnow())
    with store.lock():
        if hook_turn:
            found = store.read(project, RecordKind.PROMPT, hook_turn)
            if found is not None and found[0].get("status") != "superseded":
                store.upsert(RecordKind.PROMPT, {**found[0], "status": "superseded", "supersededBy": by,
                                                 "updated": now}, found[1])
        found = store.read(project, RecordKind.SESSION, session_record_id(hook_session))
        if found is None or not str(found[0].get("source") or "").startswith("hook:"):
            return
        meta = {**found[0], "joinedTo": by[0], "updated": now}
        if meta.get("status") == "active" and not meta.get("endTime"):
            if not _live_turns(store, project, hook_session):
                meta.update(status="superseded", supersededBy=by)
                _begins_with_the_conversation(store, project, agent_session, meta.get("startTime"), now)
            else:  # turns of its own before the agent's session began: it ends where that one begins
                agent = store.read(project, RecordKind.SESSION, session_record_id(agent_session))
                start = from_iso(str(meta["startTime"]))
                until = max(start, min(from_iso(str(agent[0]["startTime"])) if agent else utcnow(), utcnow()))
                meta.update(status="completed", endTime=to_iso(until), durationMinutes=minutes_between(start, until))
        store.upsert(RecordKind.SESSION, meta, found[1])


def _begins_with_the_conversation(store: VaultStore, project: str, agent_session: str, began: Any, now: str) -> None:
    """The agent's open session, which takes over the hook's whole capture of the conversation,
    begins when the conversation did (the hook's session's start), when that is earlier: the work
    before the agent's ``session_start`` was billed by neither (found by a newcomer: 0 minutes)."""
    found = store.read(project, RecordKind.SESSION, session_record_id(agent_session))
    if found is None or found[0].get("status") != "active" or found[0].get("endTime") or not isinstance(began, str):
        return
    try:
        if from_iso(began) >= from_iso(str(found[0].get("startTime"))):
            return
    except (ValueError, MemoError):
        return
    store.upsert(RecordKind.SESSION, {**found[0], "startTime": began, "updated": now}, found[1])


def _live_turns(store: VaultStore, project: str, session_id: str) -> int:
    """How many turns of the session are not superseded."""
    from ..index.query import PromptFilter

    total, _ = index.count_and_page(store.conn, "prompt", PromptFilter(session_id=session_id, projects=[project]),
                                    1, 0, "date-asc")
    return int(total)
