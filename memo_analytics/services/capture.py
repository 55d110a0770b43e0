"""Capture from the agents' own hooks (``memo hook AGENT``).

Each agent runs ``memo hook AGENT`` on its lifecycle events with a JSON event on stdin (Codex's
legacy ``notify`` program gets it as the last argument). :func:`parse_event` turns the event of
each agent into one :class:`HookEvent`; :func:`apply_event` records it through the same services
as the MCP tool: a submitted prompt becomes a turn (capture-ignore and secret redaction, turn
allocation under the vault lock), the session is started on its first prompt (or on the
agent's session start) and ended on the agent's session end.

A hook must never get in the agent's way: :func:`capture` never raises. An event that cannot be
applied now (the vault locked, its index damaged or read-only, a file system error) is spooled
to ``<vault>/.memo/spool/hooks/`` — or, when the vault's folder cannot be written either (not
mounted, read-only, another owner's), to ``~/.memo/spool/<vault key>/hooks/`` — and applied by
the next run before its own event, in the order the events arrived, with the instants they
carried; an event that is itself unusable (not JSON, no session, an empty prompt) is dropped.
Either way one line goes to ``hooks.log`` beside the spool.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import stat
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..domain.clock import from_iso, parse_record_instant, to_iso
from ..domain.errors import InvalidFieldError, MemoError, SessionCompletedError, VaultBusyError
from ..domain.ids import project_slug, session_record_id, validate_session_id
from ..domain.records import RecordKind
from ..domain.wire import counted, valid_text
from ..index import store as index
from .agent_ids import AGENTS, hook_session_id
from .sessions import WAITING_FIELDS, waiting_since
from .store import VaultStore, from_another_machine, project_of_folder, repository_root

if TYPE_CHECKING:
    from ..config import Settings

#: The agents that put a ``SessionStart`` hook's ``hookSpecificOutput.additionalContext`` into
#: their model's context: a hand-off claimed by the session their hook starts reaches the agent.
BATON_AGENTS = ("claude-code", "codex", "gemini")
#: The most of a hand-off's text a session-start hook puts into the agent's context (characters).
MAX_HANDOFF_SHOWN = 8_000
#: The most of one line of it (a next step, a failed approach, a question) shown there (characters).
MAX_HANDOFF_LINE = 1_000
#: How long a hook waits for the vault lock before it spools its event instead (seconds).
HOOK_LOCK_TIMEOUT_S = 2.0
#: How long a hook's push (a session end) or pull waits for a hybrid daemon, in seconds: an agent
#: gives its hook 10 s or more; what is not pushed in time waits in the outbox for the next push.
HOOK_SYNC_SECONDS = 4.0
#: The largest event a hook reads (bytes): a prompt is at most 1 MB, the rest is small.
MAX_EVENT_BYTES = 8 * 1024 * 1024
#: The spool's log is cut back to its last half beyond this size (bytes).
MAX_LOG_BYTES = 256 * 1024


@dataclass
class HookEvent:
    """One agent event, in the product's terms.

    ``kind``: ``prompt`` (the person submitted a prompt: ``prompt`` holds its text),
    ``session_start``, ``session_end``, ``waiting`` (the agent waits for the person: a tool's
    permission, a question; ``extra`` holds ``waitingFor`` and the agent's ``message``), ``stop``
    (the agent finished a turn) or ``other``.
    ``session`` is the agent's own session (conversation, thread) id; ``turn_id`` the agent's
    own id of the prompt or turn when it gives one (Claude Code ``prompt_id``, Codex
    ``turn_id``, Cursor ``generation_id``). ``at`` is when it happened (UTC): the event's own
    time stamp when it has one, else when the hook received it.
    """

    agent: str
    kind: str
    session: str | None
    at: datetime
    prompt: str | None = None
    cwd: str | None = None
    transcript_path: str | None = None
    turn_id: str | None = None
    model: str | None = None
    name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _text(payload: dict[str, Any], *names: str) -> str | None:
    """The first of the ``names`` fields that holds text, lone surrogates replaced (U+FFFD): a
    prompt cut inside a character is kept, not dropped."""
    for name in names:
        value = payload.get(name)
        if isinstance(value, str) and value.strip():
            return valid_text(value)
    return None


#: How far an event's own time stamp may lie from when the hook received it; beyond, it is not
#: believed (a clock far off, a bogus value: a session must not start in 1970).
MAX_EVENT_SKEW = timedelta(days=1)


def _when(payload: dict[str, Any], received: datetime, *names: str) -> datetime:
    """The event's own instant (ISO text, or Unix seconds / milliseconds) when it lies within
    :data:`MAX_EVENT_SKEW` of ``received``, else ``received``."""
    found = _stamp_of(payload, names)
    return found if found is not None and abs(found - received) <= MAX_EVENT_SKEW else received


def _stamp_of(payload: dict[str, Any], names: tuple[str, ...]) -> datetime | None:
    for name in names:
        value = payload.get(name)
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) and value > 0:
            seconds = value / 1000 if value > 10**11 else value  # milliseconds since 1970
            try:
                return datetime.fromtimestamp(seconds, timezone.utc)
            except (OverflowError, OSError, ValueError):
                continue
        if isinstance(value, str) and value.strip():
            try:
                return parse_record_instant(value, name, timezone.utc)
            except MemoError:
                continue
    return None


def _start_source(payload: dict[str, Any]) -> dict[str, Any]:
    """``{"source": …}`` of a session start that says why it fired (Claude Code, Codex, Gemini CLI:
    ``startup``, ``resume``, ``clear``, ``compact``), else nothing."""
    source = _text(payload, "source")
    return {"source": source.lower()} if source else {}


def _claude_code(payload: dict[str, Any], received: datetime) -> HookEvent:
    # Cursor also runs the hooks of Claude Code's settings files: such an event is Cursor's,
    # whichever entry ran it (its own hook fires too: the twin is not recorded twice)
    if "conversation_id" in payload or "cursor_version" in payload:
        return _cursor(payload, received)
    return _claude_shape("claude-code", payload, received, "prompt_id")


#: The events of Claude Code's hook shape (Codex's hooks.json uses it too).
_CLAUDE_EVENTS = {"UserPromptSubmit": "prompt", "SessionStart": "session_start", "SessionEnd": "session_end",
                  "Stop": "stop"}


def _claude_shape(agent: str, payload: dict[str, Any], received: datetime, turn_key: str) -> HookEvent:
    """An event of Claude Code's hook shape (snake_case fields, PascalCase event names); the
    agent's own id of the prompt is ``turn_key``."""
    name = _text(payload, "hook_event_name") or ""
    kind, extra = _CLAUDE_EVENTS.get(name, "other"), _start_source(payload)
    if name == "Notification" and (waiting := _waiting_for(payload, _CLAUDE_WAITING)) is not None:
        kind, extra = "waiting", waiting
    return HookEvent(agent, kind, _text(payload, "session_id"), received,
                     prompt=_text(payload, "prompt"), cwd=_text(payload, "cwd"),
                     transcript_path=_text(payload, "transcript_path"), turn_id=_text(payload, turn_key),
                     model=_text(payload, "model"), name=name, extra=extra)


#: What each kind of Claude Code's ``Notification`` waits for: a tool's permission, an MCP server's
#: question (an elicitation). ``idle_prompt`` (the agent answered and waits for the next prompt)
#: and ``auth_success`` wait for nobody.
_CLAUDE_WAITING = {"permission_prompt": "permission", "elicitation_dialog": "an answer"}
#: Gemini CLI's ``Notification`` kinds (``ToolPermission``: a tool waits for the person's approval).
_GEMINI_WAITING = {"ToolPermission": "permission"}
#: The most of an agent's notification kept with its session (characters, one line).
MAX_WAITING_MESSAGE = 200


def _waiting_for(payload: dict[str, Any], kinds: dict[str, str]) -> dict[str, Any] | None:
    """``{"waitingFor": …, "message": …}`` of a notification by which the agent waits for the
    person (SPEC §8's waiting states), or None. A payload naming no kind (Claude Code before
    ``notification_type``) waits for permission when its message asks for it."""
    kind = _text(payload, "notification_type")
    message = " ".join((_text(payload, "message") or "").split())
    if kind is not None:
        waiting = kinds.get(kind)
    else:
        waiting = "permission" if "permission" in message.casefold() else None
    if waiting is None:
        return None
    if len(message) > MAX_WAITING_MESSAGE:
        message = message[:MAX_WAITING_MESSAGE - 1].rstrip() + "…"
    return {"waitingFor": waiting, "message": message}


def _codex(payload: dict[str, Any], received: datetime) -> HookEvent:
    if payload.get("type") == "agent-turn-complete":  # the legacy notify program: one turn, after it ran
        messages = payload.get("input-messages") or payload.get("input_messages") or []
        text = "\n\n".join(m for m in messages if isinstance(m, str) and m.strip()) if isinstance(messages, list) else ""
        return HookEvent("codex", "prompt" if text.strip() else "stop",
                         _text(payload, "thread-id", "thread_id", "session_id"), received, prompt=text or None,
                         cwd=_text(payload, "cwd"), turn_id=_text(payload, "turn-id", "turn_id"),
                         name="agent-turn-complete")
    return _claude_shape("codex", payload, received, "turn_id")


def _gemini(payload: dict[str, Any], received: datetime) -> HookEvent:
    name = _text(payload, "hook_event_name") or ""
    kind = {"BeforeAgent": "prompt", "SessionStart": "session_start", "SessionEnd": "session_end",
            "AfterAgent": "stop"}.get(name, "other")
    extra = _start_source(payload)
    if name == "Notification" and (waiting := _waiting_for(payload, _GEMINI_WAITING)) is not None:
        kind, extra = "waiting", waiting
    return HookEvent("gemini", kind, _text(payload, "session_id"), _when(payload, received, "timestamp"),
                     prompt=_text(payload, "prompt"), cwd=_text(payload, "cwd"),
                     transcript_path=_text(payload, "transcript_path"), model=_text(payload, "model"), name=name,
                     extra=extra)


def _cursor(payload: dict[str, Any], received: datetime) -> HookEvent:
    name = _text(payload, "hook_event_name") or ""
    kind = {"beforeSubmitPrompt": "prompt", "sessionStart": "session_start", "sessionEnd": "session_end",
            "stop": "stop"}.get(name, "other")
    roots = payload.get("workspace_roots")
    cwd = _text(payload, "cwd") or (roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str)
                                    else None)
    return HookEvent("cursor", kind, _text(payload, "conversation_id", "session_id"), received,
                     prompt=_text(payload, "prompt"), cwd=cwd, transcript_path=_text(payload, "transcript_path"),
                     turn_id=_text(payload, "generation_id"), model=_text(payload, "model"), name=name)


def _copilot(payload: dict[str, Any], received: datetime) -> HookEvent:
    name = _text(payload, "hook_event_name", "hookEventName", "event") or ""
    kind = {"userPromptSubmitted": "prompt", "sessionStart": "session_start", "sessionEnd": "session_end",
            "agentStop": "stop", "UserPromptSubmit": "prompt", "SessionStart": "session_start",
            "SessionEnd": "session_end", "Stop": "stop"}.get(name, "other")
    prompt = _text(payload, "prompt")
    if kind == "other" and prompt:
        kind = "prompt"  # the event's name is not in its payload: the prompt says what it is
    return HookEvent("copilot", kind, _text(payload, "session_id", "sessionId"),
                     _when(payload, received, "timestamp"), prompt=prompt,
                     cwd=_text(payload, "cwd", "workingDirectory"), transcript_path=_text(payload, "transcript_path"),
                     model=_text(payload, "model"), name=name)


_PARSERS: dict[str, Callable[[dict[str, Any], datetime], HookEvent]] = {
    "claude-code": _claude_code, "codex": _codex, "gemini": _gemini, "cursor": _cursor, "copilot": _copilot,
}


def parse_event(agent: str, payload: Any, received: datetime, event_name: str | None = None) -> HookEvent:
    """The :class:`HookEvent` an agent's hook payload stands for.

    ``event_name`` names the event when the agent does not put it in the payload (the
    managed entry passes it: ``memo hook copilot --event sessionStart``).

    Raises
    ------
    InvalidFieldError
        ``agent`` is not one of :data:`AGENTS`, or ``payload`` is not a JSON object.
    """
    if agent not in _PARSERS:
        raise InvalidFieldError("agent", f"{agent!r} is not one of {', '.join(AGENTS)}")
    if not isinstance(payload, dict):
        raise InvalidFieldError("event", "is not a JSON object")
    if event_name and not payload.get("hook_event_name"):
        payload = {**payload, "hook_event_name": event_name}
    event = _PARSERS[agent](payload, received)
    prompt = payload.get("prompt")
    if event.kind == "prompt" and "prompt" in payload and not isinstance(prompt, str):
        # said as what it is (it was dropped as "Invalid body: must not be empty")
        kind = {bool: "a boolean", int: "a number", float: "a number", dict: "an object", list: "an array",
                type(None): "null"}.get(type(prompt), type(prompt).__name__)
        raise InvalidFieldError("prompt", f"is {kind}, not text")
    from .prompts import body_problem, fit_body, without_nul

    if event.kind == "prompt" and event.prompt:
        # a pasted log, an image's data: the turn kept cut to a turn's limit, saying so (it was dropped
        # whole, the person's turn lost but for a line of the hook's log); a NUL kept as U+FFFD
        event.prompt = fit_body(without_nul(event.prompt))
    if event.kind == "prompt" and (problem := body_problem(event.prompt)) is not None:
        # refused before anything is written: an empty prompt had opened a session of no turn,
        # which then stalled in the digest
        raise InvalidFieldError("body", problem)
    return event


def apply_event(store: VaultStore, event: HookEvent, capture_id: str, project: str | None = None,
                replayed: bool = True, owner: str | None = None,
                head: tuple[str | None, str | None] | None = None,
                batons: list[dict[str, Any]] | None = None) -> str:
    """Record ``event`` in ``store``; a one-line outcome.

    ``prompt``: the turn (``source: hook:<agent>``, ``created`` = ``event.at``) in the session
    ``{agent}-{session}`` of the project of ``event.cwd`` (its repository's, else the folder's name as an
    import of the transcript files it, else a configured default project), started
    first when it has no record — a conversation the agent resumed after its end goes on in
    ``{agent}-{session}.2`` (``.3`` …), a new work interval (a prompt made before that end, which
    waited in the spool, is recorded in the ended session); ``agentTurnId``/``captureId`` go into its frontmatter, and a
    turn already recorded with the same ``captureId`` (a replayed spool entry) is not recorded
    twice. ``session_start``: the session opened (an open or completed one is left as it is).
    ``session_end``: an open session ended at ``event.at``. ``stop`` and ``other``: nothing.
    ``owner``: the person whose session it is (a remote caller's; else the git identity of the
    repository of ``event.cwd``). A remote caller's conversation whose id is another person's
    session here goes to a session of its own, ``{id}--{owner slug}-{6 hex}`` (as a hybrid push is
    kept apart): never into theirs. ``batons``: the agent shows the hook's answer to its model
    (:data:`BATON_AGENTS`): a ``session_start`` of a new conversation claims an eligible
    pending hand-off (SPEC §2.5) and appends it here; None (a replayed event, Cursor, Copilot):
    the baton stays pending for a start that shows it.

    Raises
    ------
    InvalidFieldError
        The event cannot be recorded (no session id, an empty or oversized prompt).
    MemoError, OSError, sqlite3.Error
        The vault cannot take it now (the caller spools it).
    """
    from .prompts import join_agent_session, record_prompt
    from .requests import EndSessionRequest, RecordPromptRequest, StartSessionRequest
    from .sessions import end_session, start_session, summary_from_turns

    if event.kind == "other" or (event.kind in ("waiting", "stop") and not event.session):
        return f"{event.name or event.kind}: nothing to record"
    if not event.session:
        if not event.cwd:
            raise InvalidFieldError("session_id", f"the {event.agent} event {event.name or event.kind} names no "
                                                  "session and no folder")
        # an agent version whose payload names no session (Copilot CLI's first hooks: timestamp, cwd,
        # prompt): the agent's session of the repository, split at idle gaps like any other — of the
        # repository, not of the folder (Copilot moved to ``src`` mid-way was two sessions, one left open)
        event = replace(event, session=folder_session(event.cwd))
    base_id = session_id = hook_session_id(event.agent, event.session)
    cwd = event.cwd if event.cwd and Path(event.cwd).is_dir() else None
    named = project  # a remote caller's: the project of its own cwd
    if project is None and cwd is not None and repository_root(cwd) is None \
            and "default_project" not in store.settings.model_fields_set:
        # a folder of no repository: its name, as the import of the agent's transcript files the
        # same conversation (a hook filed it under ``default``, its import under the folder: work of
        # a checkout not yet ``git init``-ed billed internal, out of reach of projectClients)
        # its name as the agent gave it, as the import reads it from the transcript (a link's own name)
        name = project_of_folder(os.path.normpath(cwd))
        project = project_slug(name) if name else None  # the root folder has none: the default project
    project = store.resolve_project(project, cwd)
    # a folder of a repository (a remote caller's project counts as one): a turn from there is work of that project
    in_a_repository = (cwd is not None and repository_root(cwd) is not None) or \
        (named is not None and named != store.settings.default_project)
    extra = {"agentSessionId": event.session, **({"transcriptPath": event.transcript_path}
                                                  if event.transcript_path else {})}
    context = dict(project=project, cwd=cwd, ide=event.agent, agent=event.agent, model=event.model,
                   source=f"hook:{event.agent}")
    if head is not None:  # a remote caller's repository HEAD (its cwd means nothing here)
        context.update(branch=head[0], git_sha=head[1])
    with store.lock():
        mine = owner is not None or from_another_machine()  # a team daemon: only this person's conversation counts
        held = _conversation_project(store, session_id, project, owner if mine else _ANYONE)
        if held != project and event.kind == "prompt" and in_a_repository:
            # the agent went on in another repository: its work there is that project's; the interval in
            # the project it left ends here (one conversation is never open in two projects at once)
            _leave_project(store, held, base_id, event, owner)
        elif held != project:  # another folder of no repository (a `cd`, none, one since removed): it stays
            project = context["project"] = held
        # in the order they began (a late prompt's interval can be numbered after a later one)
        chain = sorted(hook_sessions(store, project, session_id), key=lambda one: str(one[1][0].get("startTime")))
        if owner is not None or from_another_machine():
            holders = {str(one[1][0].get("owner") or "").strip().casefold() for one in chain} - {""}
            if holders and holders != {(owner or "").strip().casefold()}:
                # another person's conversation of the same id on the team daemon: this caller's
                # events go to a session of its own, never into theirs (as a hybrid push is kept apart)
                from .sync import apart_session_id

                base_id = session_id = apart_session_id(session_id, owner)
                chain = sorted(hook_sessions(store, project, session_id), key=lambda one: str(one[1][0].get("startTime")))
        session_id, existing = chain[-1] if chain else (session_id, None)
        joined = _joined_open(store, existing[0]) if existing is not None else None
        if event.kind in ("waiting", "stop"):
            if joined is not None:  # the agent's own session holds the conversation: it waits there
                found = store.read(joined[0], RecordKind.SESSION, session_record_id(joined[1]))
                return _waiting_state(store, joined[1], found, event)
            return _waiting_state(store, session_id, existing, event)
        if joined is not None and event.kind == "session_end":
            return f"session {session_id}: its conversation went on in the agent's own session {joined[1]} (the agent ends it)"
        if joined is not None and event.kind == "prompt":
            # the agent records this conversation in its own session: its prompts go there, one turn however
            # they arrive (the agent's record of the same text answers with this one)
            project, session_id = joined
            body = _event_body(store, event)
            if body is not None and _recorded_over_mcp(store, project, event, body) is not None:
                return f"turn of {session_id}: the agent recorded it over MCP already"
            if replayed and _captured(store, project, session_id, capture_id):
                return f"turn of {session_id}: already recorded"
            turn = record_prompt(store, RecordPromptRequest(
                body=event.prompt or "", session_id=session_id, created=event.at, owner=owner,
                extra={**extra, "captureId": capture_id, **({"agentTurnId": event.turn_id} if event.turn_id else {})},
                **{**context, "project": project}))
            return f"turn {turn['turn']} of {session_id} recorded (the agent's own session)"
        if event.kind in ("prompt", "session_end") and existing is not None:
            since = waiting_since(existing[0])
            if since is not None and event.at >= since:  # the person answered: the agent waits no more
                existing = _no_longer_waiting(store, existing)
        earlier = _covering(chain, event) if event.kind == "prompt" else None
        late_end = None  # the end of a work interval made for a late prompt alone
        if earlier is not None:  # it waited (spooled) while later work went on: the interval of its time
            (session_id, existing), following = earlier
            gap = timedelta(minutes=store.settings.idle_gap_minutes)
            ended = from_iso(str(existing[0].get("endTime") or existing[0]["startTime"]))
            answered = min(event.at + gap, following)  # its answer is unseen: at most an idle gap of it
            if existing[0].get("status") == "completed" and event.at - ended > gap:
                # made long after that interval's end: work of its own, between two intervals
                session_id, existing = numbered(base_id, len(chain) + 1), None
                late_end = answered
            elif existing[0].get("status") == "completed" and event.at > ended:
                # made after that interval's end, within the idle gap: the interval went on until then
                end_session(store, EndSessionRequest(session_id=session_id, project=project, owner=owner,
                                                     until=max(ended, answered), recompute_duration=True))
                existing = store.read(project, RecordKind.SESSION, session_record_id(session_id))
        elif event.kind != "session_end" and existing is not None and existing[0].get("status") == "completed":
            ended = from_iso(str(existing[0].get("endTime") or existing[0]["startTime"]))
            if event.at < ended:  # it waited in the spool while the session ended: it belongs there
                if event.kind == "session_start":
                    return f"session {session_id} already recorded"
            else:  # the agent resumed a conversation it had ended (the same session id): a new work interval
                session_id, existing = numbered(base_id, len(chain) + 1), None
        elif event.kind == "prompt" and existing is not None and existing[0].get("status") == "superseded" and (
                not existing[0].get("agentEndedAt") or event.at > from_iso(str(existing[0]["agentEndedAt"]))):
            # its conversation was imported from the transcript while it went on: the imported sessions
            # end where the transcript did, and this interval bills nothing any more — the work after the
            # import is an interval of its own until the next import takes it in (found by an
            # integrator: after a one-off import the rest of a live conversation billed 0 minutes); not a
            # prompt made before the agent ended it, sent late
            joined_to = existing[0].get("joinedTo")
            if isinstance(joined_to, str) and "/" in joined_to and existing[0].get("supersededBy") == [joined_to]:
                # the conversation went on after the agent ended the session it recorded it in: it keeps the
                # client (and billing) the agent named there — it billed "internal" (found by an integrator)
                agents = store.read(joined_to.split("/", 1)[0], RecordKind.SESSION,
                                    session_record_id(joined_to.split("/", 1)[1]))
                if agents is not None and agents[0].get("client"):
                    context.update(client=agents[0]["client"], billable=agents[0].get("billable", True))
            session_id, existing = numbered(base_id, len(chain) + 1), None
        if event.kind in ("prompt", "session_end") and existing is not None and existing[0].get("status") == "active":
            gap = timedelta(minutes=store.settings.idle_gap_minutes)
            last, seen = _last_activity(store, project, session_id, existing[0], event)
            asked = index.last_turn_created(store.conn, project, session_id) is not None
            turnless = not seen and not asked
            if turnless and event.kind == "prompt" and event.at - last > gap:
                # opened long ago and nothing asked since (the agent left open): the work starts now
                meta, body = existing
                meta = {**meta, "startTime": to_iso(event.at), "updated": to_iso(datetime.now(timezone.utc))}
                store.upsert(RecordKind.SESSION, meta, body)
                existing = (meta, body)
            elif not asked and event.kind == "session_end":
                # opened and closed with nothing asked: nothing to bill — whatever its transcript's file
                # says (the agent writes it at its start); a baton it took goes back, unread by any work
                end_session(store, EndSessionRequest(session_id=session_id, project=project, owner=owner,
                                                     until=existing[0]["startTime"]))
                returned = _give_back_baton(store, project, session_id, existing[0].get("handoffClaimed"))
                return f"session {session_id} ended with no turn: 0 minutes" + (
                    f"; the hand-off {returned} it took is pending again" if returned else "")
            elif event.at - last > gap:
                # the agent stood idle longer than the idle gap (a night): the work interval ended at its
                # last sign of work, as an import splits a transcript; a prompt after it opens the next one.
                # Without the agent's transcript its answer to the last prompt is unseen: at most an idle
                # gap of it is counted
                last = last if seen else last + gap
                end_session(store, EndSessionRequest(session_id=session_id, project=project, owner=owner, until=last,
                                                     summary=None if existing[0].get("summary") else
                                                     summary_from_turns(store, project, session_id, cwd)))
                if event.kind == "session_end":
                    return (f"session {session_id} ended at its last work {to_iso(last)}, "
                            f"{counted(int((event.at - last).total_seconds() // 60), 'minute')} idle before the agent's end")
                session_id, existing = numbered(base_id, len(chain) + 1), None
        if event.kind == "session_end":
            if existing is not None and existing[0].get("status") == "superseded" and not existing[0].get("endTime"):
                # its conversation was imported from the agent's transcript while it went on: the
                # agent's end says it is over (the digest no longer watches it for a stall)
                if not existing[0].get("agentEndedAt"):
                    store.upsert(RecordKind.SESSION, {**existing[0], "agentEndedAt": to_iso(event.at),
                                                      "updated": to_iso(datetime.now(timezone.utc))}, existing[1])
                joined = existing[0].get("joinedTo")
                where = (f"its turns are the agent's own session's, {joined}" if isinstance(joined, str) and joined
                         and existing[0].get("supersededBy") == [joined]
                         else "its turns are imported from the transcript")
                return f"session {session_id}: its conversation ended ({where})"
            if existing is None or existing[0].get("status") != "active":  # completed, or superseded by an import
                return f"session {session_id}: not open, nothing to end"
            newest = index.last_turn_created(store.conn, project, session_id)
            # never before its last turn: an end stamped earlier (the agent's clock went back, or
            # the event waited in a spool) left that turn outside the session, its time billed for nothing
            until = max(event.at, from_iso(str(existing[0]["startTime"])), *([from_iso(newest)] if newest else []))
            end_session(store, EndSessionRequest(session_id=session_id, project=project, owner=owner, until=until,
                                                 summary=None if existing[0].get("summary") else
                                                 summary_from_turns(store, project, session_id, cwd)))
            return f"session {session_id} ended" + (
                f" at its last turn {to_iso(until)} (the end event was stamped {to_iso(event.at)}, before it)"
                if until > event.at and newest and until == from_iso(newest) else "")
        if existing is not None and existing[0].get("agentEndedAt") and event.kind in ("prompt", "session_start") \
                and event.at > from_iso(str(existing[0]["agentEndedAt"])):
            # the agent resumed a conversation it had ended (the same session id): live again — not
            # an event made before the end and sent late (a spool, a remote machine)
            store.upsert(RecordKind.SESSION, {k: v for k, v in existing[0].items() if k != "agentEndedAt"},
                         existing[1])
        body = _event_body(store, event) if event.kind == "prompt" else None  # redacted once for both looks
        if body is not None and _imported_already(store, project, event, body, base_id):
            return f"turn of {session_id}: already imported from the agent's transcript"
        twin = _recorded_over_mcp(store, project, event, body) if body is not None else None
        if twin is not None:
            mcp_session = index.get_row(store.conn, project, twin, RecordKind.PROMPT.value)
            if existing is not None and mcp_session is not None and mcp_session["session_id"] \
                    and mcp_session["session_id"] != session_id:
                # the agent records the conversation in its own session: the hook's gives way to it
                join_agent_session(store, project, session_id, str(mcp_session["session_id"]))
            return f"turn of {session_id}: the agent recorded it over MCP already ({twin})"
        if existing is None:
            # a new conversation: not one memo has a session of, nor one the agent says it resumed or
            # compacted (its hook was installed later, its transcript alone was imported)
            shown = batons is not None and event.kind == "session_start" and not chain and \
                event.extra.get("source") not in ("resume", "compact")
            started = start_session(store, StartSessionRequest(session_id=session_id, start_time=event.at,
                                                               extra=extra, owner=owner, **context), claim=shown)
            if started.get("handoff"):
                batons.append({**started["handoff"], "project": project, "sessionId": session_id})
        if event.kind == "session_start":
            took = f"; it takes the hand-off {batons[-1]['id']}" if batons else ""
            return f"session {session_id} {'started' if existing is None else 'already recorded'}{took}"
        # only an event that waited (spooled, or sent again by a remote machine) can have been
        # recorded already; a fresh one is not looked for among the session's turns
        if replayed and _captured(store, project, session_id, capture_id):
            return f"turn of {session_id}: already recorded"
        if _just_recorded(store, project, session_id, event):
            return f"turn of {session_id}: the same prompt a moment ago (a second hook of the agent): recorded once"
        size = _transcript_size(event.transcript_path)
        turn = record_prompt(store, RecordPromptRequest(
            body=event.prompt or "", session_id=session_id, created=event.at, owner=owner,
            extra={**extra, "captureId": capture_id, **({"agentTurnId": event.turn_id} if event.turn_id else {}),
                   **({"transcriptBytes": size} if size is not None else {})},
            **context))
        if late_end is not None:
            end_session(store, EndSessionRequest(session_id=session_id, project=project, owner=owner, until=late_end,
                                                 summary=summary_from_turns(store, project, session_id, cwd)))
    return f"turn {turn['turn']} of {session_id} recorded"


def _no_longer_waiting(store: VaultStore, existing: tuple[dict[str, Any], str]) -> tuple[dict[str, Any], str]:
    """The session ``existing`` written without its waiting state."""
    meta = {k: v for k, v in existing[0].items() if k not in WAITING_FIELDS}
    meta["updated"] = to_iso(datetime.now(timezone.utc))
    store.upsert(RecordKind.SESSION, meta, existing[1])
    return meta, existing[1]


def _waiting_state(store: VaultStore, session_id: str, existing: tuple[dict[str, Any], str] | None,
                   event: HookEvent) -> str:
    """A ``waiting`` event: the open session ``existing`` waits for the person since ``event.at``
    (``waitingSince``, ``waitingFor``, ``waitingMessage`` redacted as a turn is); a ``stop`` (the
    agent finished its turn: it was let go on) ends that. A session not open records nothing."""
    what = event.name or event.kind
    if existing is None or existing[0].get("status") != "active" or existing[0].get("endTime"):
        return f"{what}: session {session_id} is not open, nothing to record"
    since = waiting_since(existing[0])
    if event.kind == "stop":
        if since is not None and event.at < since:  # an earlier turn's end, sent late: it still waits
            return f"{what}: session {session_id}: its agent still waits (since {to_iso(since)}, after this event)"
        if since is None:
            return f"{what}: nothing to record"
        _no_longer_waiting(store, existing)
        return f"session {session_id}: its agent no longer waits"
    waiting = str(event.extra.get("waitingFor") or "permission")
    if since is not None and existing[0].get("waitingFor") == waiting and since <= event.at:
        return f"session {session_id}: its agent still waits for {waiting} since {to_iso(since)}"
    try:
        message = _event_body(store, replace(event, prompt=str(event.extra.get("message") or ""))) or ""
    except InvalidFieldError:
        message = ""
    store.upsert(RecordKind.SESSION, {**existing[0], "waitingSince": to_iso(event.at), "waitingFor": waiting,
                                      "waitingMessage": message, "updated": to_iso(datetime.now(timezone.utc))},
                 existing[1])
    return f"session {session_id}: its agent waits for {waiting}"


def _last_activity(store: VaultStore, project: str, session_id: str, meta: dict[str, Any],
                   event: HookEvent) -> tuple[datetime, bool]:
    """When an open hook session last saw work, as far as this machine can tell, and whether the
    agent's transcript said so: its newest turn (else its start), or the last write of the
    agent's transcript when the agent names one (Claude Code, Codex, Gemini: the answers go on
    after a prompt) — never after ``event``."""
    start = from_iso(str(meta["startTime"]))
    newest = index.last_turn_created(store.conn, project, session_id)
    last = max(start, from_iso(newest)) if newest else start
    written = transcript_written(event.transcript_path or meta.get("transcriptPath"), event.at)
    return (max(last, written), True) if written is not None else (last, False)


def transcript_written(transcript: object, until: datetime) -> datetime | None:
    """When the agent's transcript file ``transcript`` (a hook session's ``transcriptPath``:
    Claude Code, Codex, Gemini keep writing answers after a prompt) was last written, when it is
    a regular ``.jsonl``/``.json`` file of this machine written no later than ``until``; else None."""
    if not (isinstance(transcript, str) and transcript.endswith((".jsonl", ".json"))):
        return None
    try:
        status = Path(transcript).stat()
        if not stat.S_ISREG(status.st_mode):  # a device, a folder, a pipe: its time is no transcript's
            return None
        written = datetime.fromtimestamp(status.st_mtime, timezone.utc)
    except (OSError, ValueError, OverflowError):  # not on this machine (a remote caller's), or gone
        return None
    return written if written <= until else None


def _covering(chain: list[tuple[str, tuple[dict[str, Any], str]]],
              event: HookEvent) -> tuple[tuple[str, tuple[dict[str, Any], str]], datetime] | None:
    """When ``event`` is older than the start of the newest work interval of ``chain`` (a prompt
    that waited in the spool, or at a remote machine, while later work was recorded): the interval
    it happened in or after — the last to start at or before it (else the first) — and when the
    next interval starts; else None."""
    starts = [from_iso(str(record[0]["startTime"])) for _, record in chain]
    if len(chain) < 2 or event.at >= starts[-1]:
        return None
    n = max([k for k, start in enumerate(starts) if start <= event.at], default=0)
    return chain[n], starts[n + 1]


def folder_session(cwd: str) -> str:
    """The session an agent's hook events that name no session belong to (Copilot CLI's first
    hooks: timestamp, cwd, prompt): ``repo-<12 hex>`` of the repository holding ``cwd`` (else of
    the folder) — the agent's session of the repository, split at idle gaps like any other."""
    folder = os.path.realpath(cwd)
    try:
        folder = str(repository_root(folder) or folder) if os.path.isdir(folder) else folder
    except MemoError:
        pass
    return "repo-" + hashlib.sha256(folder.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def numbered(base: str, n: int) -> str:
    """The id of the ``n``-th work interval of a hook session: ``base``, ``base.2``, ``base.3`` …"""
    return base if n == 1 else validate_session_id(f"{base}.{n}")


#: :func:`_conversation_project` of anyone's conversation (a machine's own vault).
_ANYONE = object()


def _conversation_project(store: VaultStore, base: str, project: str, owner: Any = _ANYONE) -> str:
    """The project an agent's conversation ``base`` goes on in: the project of its open work
    interval, else of its last written one (it may have moved between repositories), ``project`` (the
    event's folder's) when it has none yet — a turn sent from a folder of no repository (the
    agent's shell went elsewhere, a folder since removed, none named) had opened a second
    session of the conversation in that folder's project, which no end ever closed. ``owner``
    (a team daemon's caller): only that person's conversation of the id counts — another
    person's of the same id, in another project, is not theirs to end."""
    from .prompts import same_person

    projects = {row["project"] for row in index.rows_with_id(store.conn, session_record_id(base),
                                                             RecordKind.SESSION.value)
                if owner is _ANYONE or same_person(json.loads(row["meta"]).get("owner"), owner)}
    if not projects or projects == {project}:
        return project

    def latest(where: str) -> tuple[bool, str]:  # an open interval first, then the last written
        chain = [record[0] for _, record in hook_sessions(store, where, base)]
        return (any(meta.get("status") == "active" for meta in chain),
                max((str(meta.get("updated") or "") for meta in chain), default=""))

    return max(sorted(projects), key=latest)


def _give_back_baton(store: VaultStore, project: str, session_id: str, baton_id: Any) -> str | None:
    """The baton ``baton_id`` a session claimed, pending again: the session ended with no turn
    (a conversation opened and closed at once), so no work took it up. Its id, or None when
    there was none to give back (another session's claim, or no longer claimed)."""
    if not isinstance(baton_id, str) or not baton_id:
        return None
    found = store.read(project, RecordKind.HANDOFF, baton_id)
    if found is None or found[0].get("status") != "claimed" or found[0].get("claimedBy") != session_id:
        return None
    now = to_iso(datetime.now(timezone.utc))
    store.upsert(RecordKind.HANDOFF, {**found[0], "status": "pending", "claimedBy": None, "claimedAt": None,
                                      "updated": now}, found[1])
    session = store.read(project, RecordKind.SESSION, session_record_id(session_id))
    if session is not None:
        store.upsert(RecordKind.SESSION, {**session[0], "handoffClaimed": None, "updated": now}, session[1])
    from .sync import push_a_claim

    push_a_claim(store)  # a hybrid laptop tells the team daemon at once: its claim there is no longer so
    return baton_id


def _leave_project(store: VaultStore, project: str, base: str, event: HookEvent, owner: str | None) -> None:
    """The conversation ``base`` went on in another repository at ``event``: its open interval in
    ``project`` ends there — at the event, or at its last work when it stood idle longer than
    the idle gap before (as an idle agent's interval ends)."""
    from .requests import EndSessionRequest
    from .sessions import end_session, summary_from_turns

    chain = sorted(hook_sessions(store, project, base), key=lambda one: str(one[1][0].get("startTime")))
    if not chain or chain[-1][1][0].get("status") != "active":
        return
    session_id, (meta, _) = chain[-1]
    last, seen = _last_activity(store, project, session_id, meta, event)
    gap = timedelta(minutes=store.settings.idle_gap_minutes)
    until = event.at if event.at - last <= gap else (last if seen else last + gap)
    end_session(store, EndSessionRequest(session_id=session_id, project=project, owner=owner,
                                         until=max(until, from_iso(str(meta["startTime"]))),
                                         summary=None if meta.get("summary") else
                                         summary_from_turns(store, project, session_id, None)))


def hook_sessions(store: VaultStore, project: str, base: str) -> list[tuple[str, tuple[dict[str, Any], str]]]:
    """The work intervals a hook recorded for one agent session in ``project``, in order:
    ``[(session id, (frontmatter, body))]`` — a conversation the agent resumed after it ended
    gets the next number."""
    found, n = [], 1
    while (record := store.read(project, RecordKind.SESSION, session_record_id(numbered(base, n)))) is not None:
        found.append((numbered(base, n), record))
        n += 1
    return found


#: Two hooks of one agent firing for one prompt (its own, and Claude Code's that it also runs)
#: arrive this close together (each stamped when it happened, a spooled one too); the same
#: prompt said again later ("continue" after an answer) is another turn. It was a minute: an
#: agent without turn ids (Cursor, Copilot) lost a second "continue" 43 s on.
TWIN_WINDOW = timedelta(seconds=10)


def _just_recorded(store: VaultStore, project: str, session_id: str, event: HookEvent) -> bool:
    """Whether the session's last turn is this same prompt, recorded within :data:`TWIN_WINDOW`
    (and, where the agent numbers its turns, under the same number), with no answer of the agent
    written into its transcript since (:func:`_answered_since`)."""
    from ..domain.ids import prompt_id
    from ..index import store as index
    from .prompts import stored_body

    top = index.max_turn(store.conn, project, session_id)
    row = index.get_row(store.conn, project, prompt_id(session_id, top, None), "prompt") if top else None
    if row is None:
        return False
    same_number = False
    if event.turn_id:  # the agent numbers its turns: another number is another turn ("continue" twice)
        recorded = (json.loads(row["meta"]) if row["meta"] else {}).get("agentTurnId")
        if recorded and recorded != event.turn_id:
            return False
        same_number = recorded == event.turn_id
    try:
        body = stored_body(store, event.prompt, event.cwd if event.cwd and Path(event.cwd).is_dir() else None)
    except MemoError:
        return False
    if row["body"] != body:
        return False
    if same_number:
        # the agent's own number of that turn, however late: Codex's legacy ``notify`` (at the turn's
        # end) beside its prompt hook had recorded every prompt twice (found by an agent's tester)
        return True
    if abs(from_iso(row["created"]) - event.at) > TWIN_WINDOW:
        return False
    if event.extra.get("answeredSince") is True:  # a remote caller read its agent's answer since (remote mode)
        return False
    recorded = (json.loads(row["meta"]) if row["meta"] else {}).get("transcriptBytes")
    return not _answered_since(event.transcript_path, recorded)


#: What a line of an agent's answer holds in its transcript (Claude Code, Codex, Gemini CLI, Copilot CLI).
_ANSWER_MARKS = (b'"type":"assistant"', b'"type": "assistant"', b'"agent_message"', b'"type":"gemini"',
                 b'"type": "gemini"', b'"assistant.message"', b'"role":"assistant"', b'"role": "assistant"')


def _transcript_size(transcript: object) -> int | None:
    """The size (bytes) of the agent's transcript file when it is a regular file of this machine
    (not a remote caller's), else None: kept with a hook's turn (``transcriptBytes``)."""
    if from_another_machine() or not isinstance(transcript, str) or not transcript.endswith((".jsonl", ".json")):
        return None
    try:
        status = Path(transcript).stat()
    except (OSError, ValueError):
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


def _answered_since(transcript: object, recorded: object) -> bool:
    """Whether the agent wrote an answer into its transcript since a turn was recorded at its
    size ``recorded`` (``transcriptBytes``): the same short prompt again ("yes", "continue") is
    then the person's next turn, not a second hook of the same one — it was recorded once (found
    by an agent's tester: "yes" → "Push?" → "yes" within 10 s)."""
    size = _transcript_size(transcript)
    if not isinstance(recorded, int) or isinstance(recorded, bool) or size is None or size <= recorded:
        return False
    try:
        with open(str(transcript), "rb") as handle:
            handle.seek(recorded)
            grown = handle.read(min(size - recorded, 4 * 1024 * 1024))
    except OSError:
        return False
    return any(mark in grown for mark in _ANSWER_MARKS)


#: How far apart an agent's transcript and its hook stamp one prompt (both when it was sent).
IMPORTED_WINDOW = timedelta(seconds=30)


def _event_body(store: VaultStore, event: HookEvent) -> str | None:
    """The prompt's text as a turn stores it (path and secret redaction), or None when it cannot be one."""
    from .prompts import stored_body

    try:
        return stored_body(store, event.prompt, event.cwd if event.cwd and Path(event.cwd).is_dir() else None)
    except MemoError:
        return None


def _imported_already(store: VaultStore, project: str, event: HookEvent, body: str, base: str) -> bool:
    """Whether the watcher already imported this prompt from the agent's transcript (the hook
    fired after the import): a turn of an import of this conversation (its sessions are
    ``{base}-{n}``) with the same text stamped within :data:`IMPORTED_WINDOW`. The transcript is
    the truth; a second copy was kept until the transcript next changed. Another conversation's or
    agent's turn of the same text is not this one (found by an integrator: a Cursor prompt was
    dropped, its session with it, for a Claude Code conversation's imported 18 s before).
    ``body``: :func:`_event_body`."""
    return index.hook_turn_with_body(store.conn, project, body, to_iso(event.at - IMPORTED_WINDOW),
                                     to_iso(event.at + IMPORTED_WINDOW), origin="import",
                                     session_prefix=f"{base}-") is not None


def _recorded_over_mcp(store: VaultStore, project: str, event: HookEvent, body: str) -> str | None:
    """The id of the turn the agent itself recorded over MCP with this prompt's text (in the
    project, within :data:`~.prompts.HOOK_TWIN_WINDOW`, the agent named as the hook's), or None:
    the MCP record came first (the hook's event spooled while the vault was busy, or the agent
    records before its hook fires) — one turn, however it arrived, as the MCP side keeps it.
    ``body``: :func:`_event_body`."""
    from .prompts import HOOK_TWIN_WINDOW, ended_before, same_agent

    row = index.hook_turn_with_body(store.conn, project, body, to_iso(event.at - HOOK_TWIN_WINDOW),
                                    to_iso(event.at + HOOK_TWIN_WINDOW), origin="mcp")
    # … of a conversation still going: a session that ended before this prompt was another one
    # ("deploy to staging" said again in a new conversation lost its turn and its session)
    ide = row["ide"] if row is not None and "ide" in row.keys() else None
    return row["id"] if row is not None and same_agent(row["agent"], event.agent, ide, body) and \
        not ended_before(store, project, row["session_id"], event.at) else None


def _joined_open(store: VaultStore, meta: dict[str, Any]) -> tuple[str, str] | None:
    """``(project, session id)`` of the agent's own session a hook session was joined to
    (:func:`join_agent_session`), while it is open; else None."""
    joined = meta.get("joinedTo")
    if not isinstance(joined, str) or "/" not in joined:
        return None
    project, session_id = joined.split("/", 1)
    found = store.read(project, RecordKind.SESSION, session_record_id(session_id))
    if found is None or found[0].get("status") != "active" or found[0].get("endTime"):
        return None
    return project, session_id


def _captured(store: VaultStore, project: str, session_id: str, capture_id: str) -> bool:
    """Whether a turn of the session already carries ``capture_id`` (a spooled event applied
    before its spool file was removed)."""
    from ..index import store as index
    from ..index.query import PromptFilter

    _, rows = index.count_and_page(store.conn, "prompt", PromptFilter(session_id=session_id, projects=[project],
                                                                      superseded=True), 1_000_000, 0, "date-asc")
    return any(json.loads(row["meta"]).get("captureId") == capture_id for row in rows)


# ---------------------------------------------------------------- where an event goes


def fallback_vault(given: str) -> Path | None:
    """Where to spool when the settings cannot be read: the vault folder they would name, if it
    is an absolute path outside every git repository (a spool file must never land in a
    product repository, nor in whatever folder the agent runs in)."""
    path = Path(given).expanduser()
    if not given.strip() or not path.is_absolute():
        return None
    return path if _outside_repositories(path) else None


def _outside_repositories(path: Path) -> bool:
    """Whether files made at ``path`` land outside every git repository: its nearest existing
    folder is in none where it really is (:func:`repository_root` resolves links: a link into
    a repository is that repository)."""
    from .store import repository_root

    existing = next((p for p in (path, *path.parents) if p.is_dir()), None)
    return existing is not None and repository_root(existing) is None


def remote_sender(settings: "Settings") -> Callable[[HookEvent, dict[str, Any]], str]:
    """Remote mode: each event goes to the daemon's ``POST /api/hooks/{agent}`` with the project
    of the caller's repository, its person (``owner``, their git identity) and its HEAD
    (``branch``, ``gitSha``); a refusal of the event is a ``ValueError`` (the event is dropped); a
    daemon unreachable, busy or refusing this machine's token a ``MemoError`` (the event is
    spooled and sent by a later run)."""
    from . import remote
    from .store import git_head, git_identity, project_from_cwd, repository_root

    def send(event, entry, batons: list[dict[str, Any]] | None = None) -> str:
        here = event.cwd if event.cwd and Path(event.cwd).is_dir() else None
        try:
            project, root = (project_from_cwd(here), repository_root(here)) if here else (None, None)
        except MemoError:
            project, root = None, None
        owner = git_identity(root)  # this machine's person, not the daemon's
        branch, sha = git_head(root) if root is not None else (None, None)
        answered = _answered_since_last_prompt(settings.vault_root, event) if event.kind == "prompt" else False
        try:
            answer = remote.post(settings, f"/api/hooks/{event.agent}", {
                "payload": entry["payload"], "event": entry.get("event"), "receivedAt": entry["receivedAt"],
                "captureId": entry["captureId"], "project": project, "owner": owner, "branch": branch,
                "gitSha": sha, **({"showsHandoff": True} if batons is not None else {}),
                **({"answeredSince": True} if answered else {})})
        except remote.DaemonRefusal as exc:  # the event itself: dropped, not kept to be sent again
            raise ValueError(f"the daemon refused it: {exc.said}") from None
        baton = answer.get("handoff")
        fields = ("id", "sessionId", "project", "fromSessionId", "body")
        if batons is not None and isinstance(baton, dict) and all(isinstance(baton.get(k), str) for k in fields):
            batons.append({k: baton[k] for k in fields}  # read as text only, as any answer of the daemon
                          | ({"leftBy": baton["leftBy"][:200]} if isinstance(baton.get("leftBy"), str) else {}))
        return f"sent to the daemon: {answer.get('outcome')}"

    return send


#: Where a machine in remote mode keeps the size of each agent conversation's transcript at its last
#: prompt (``<vault>/.memo/spool/remote-prompts.json``: ``"agent session"`` → bytes, the newest 200).
REMOTE_PROMPTS = "remote-prompts.json"


def _answered_since_last_prompt(vault_root: Path, event: HookEvent) -> bool:
    """Remote mode: whether the agent answered in its transcript since this machine sent the
    conversation's previous prompt — the daemon cannot read a transcript of this machine, and took
    "yes" → "Push?" → "yes" for one turn (found by an attacker). The size now is kept for the next."""
    from ..vault.io import atomic_write_bytes

    size = _transcript_size(event.transcript_path)
    if size is None or not event.session:
        return False
    path = spool_dir(vault_root).parent / REMOTE_PROMPTS
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
        known = known if isinstance(known, dict) else {}
    except (OSError, ValueError):
        known = {}
    key = f"{event.agent} {event.session}"[:300]
    answered = _answered_since(event.transcript_path, known.pop(key, None))
    known[key] = size
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, json.dumps(dict(list(known.items())[-200:])).encode("utf-8"), durable=False)
    except OSError:
        pass  # a folder this machine cannot write: the daemon decides alone, as before
    return answered


# ---------------------------------------------------------------- the spool


def spool_dir(vault_root: Path) -> Path:
    """Where events wait that could not be applied: ``<vault>/.memo/spool/hooks``."""
    return Path(vault_root) / ".memo" / "spool" / "hooks"


def user_spool_dir(vault_root: Path) -> Path | None:
    """Where events of the vault ``vault_root`` wait when its own folder cannot be written (a
    vault on a disk not mounted, read-only, or made by another user): the person's
    ``~/.memo/spool/<key>/hooks``, the key a hash of the vault's absolute path (events are
    replayed only into the vault they were meant for). None when ``~/.memo`` lies in a git
    repository (a spool file must never land in one) or no home folder is known."""
    try:
        home = Path.home() / ".memo"
        if not _outside_repositories(home):
            return None
    except (OSError, RuntimeError):
        return None
    key = hashlib.sha256(str(Path(vault_root).expanduser().absolute()).encode("utf-8", "surrogateescape"))
    return home / "spool" / key.hexdigest()[:16] / "hooks"


def _spool_dirs(vault_root: Path) -> list[Path]:
    """The vault's spool, then the person's for that vault (when there is one)."""
    return [spool_dir(vault_root), *filter(None, [user_spool_dir(vault_root)])]


def hook_log(vault_root: Path) -> Path:
    """The hook log to read: the vault's ``.memo/spool/hooks.log``, or the person's one for
    that vault when only that one was written to last."""
    logs = [folder.parent / "hooks.log" for folder in _spool_dirs(vault_root)]
    present = [(path.stat().st_mtime_ns, -i, path) for i, path in enumerate(logs) if path.is_file()]
    return max(present)[2] if present else logs[0]


def _log(vault_root: Path, line: str) -> None:
    stamped = f"{to_iso(datetime.now(timezone.utc))} {line}\n"
    for folder in _spool_dirs(vault_root):  # the vault's log; the person's when the vault cannot be written
        path = folder.parent / "hooks.log"
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
                kept = path.read_bytes()[-MAX_LOG_BYTES // 2:]
                path.write_bytes(kept[kept.find(b"\n") + 1:])
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(stamped)
            return
        except OSError:
            continue


def _spool(vault_root: Path, entry: dict[str, Any]) -> Path:
    """Write a spool entry: secrets redacted already (the text may wait a while), readable by
    its owner only, and ASCII JSON (a lone surrogate in the payload stays an escape). In the
    vault's spool, else the person's (:func:`user_spool_dir`).

    Raises
    ------
    OSError
        Neither spool can be written.
    """
    from ..vault.io import atomic_write_bytes
    from ..vault.redact import redact_value

    try:
        payload = redact_value(entry["payload"])
    except Exception:  # noqa: BLE001 — text the detectors cannot read (a lone surrogate): kept as it came
        payload = entry["payload"]
    data = json.dumps({**entry, "payload": payload}).encode("ascii")
    name = f"{time.time_ns():020d}-{os.getpid()}-{entry['captureId'][:8]}{UNCONFIGURED if entry.get('unconfigured') else ''}.json"
    failure: OSError | None = None
    for folder in _spool_dirs(vault_root):
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            atomic_write_bytes(folder / name, data, mode=0o600)
            return folder / name
        except OSError as exc:
            failure = failure or exc
    raise failure or OSError("no spool folder")


def _quarantine(path: Path) -> None:
    """Set a spool entry that cannot be read aside (``.bad``), so it stops nothing."""
    try:
        path.rename(path.with_suffix(".bad"))
    except OSError:
        try:
            path.unlink()
        except OSError:
            pass


#: Runs in which a spooled event fails while the event of the run is recorded, before it is set
#: aside (``.bad``): an event that cannot be recorded (an unreadable ``.memoignore`` in its
#: repository) stopped every later one, of every repository, for good.
SPOOL_ATTEMPTS = 3


def _count_failure(vault_root: Path, agent: str, path: Path, entry: dict[str, Any], exc: Exception,
                   note: Callable[[str], None]) -> None:
    counted = entry.get("attempts")
    attempts = (counted if isinstance(counted, int) and counted > 0 else 0) + 1
    reason = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
    if attempts >= SPOOL_ATTEMPTS:
        _quarantine(path)
        note(f"{agent}: spooled {path.name} set aside (.bad) after failing {attempts} times while other events "
             f"were recorded: {reason}")
        return
    try:
        from ..vault.io import atomic_write_bytes

        atomic_write_bytes(path, json.dumps({**entry, "attempts": attempts}).encode("utf-8"))
    except OSError:
        pass
    note(f"{agent}: spooled {path.name} failed again ({attempts} of {SPOOL_ATTEMPTS}; other events go on): {reason}")


#: The end of a spool file's name of an event that came while the config file could not be read:
#: it waits beside the vault the environment names (the config's own ``vaultRoot`` unknown then),
#: and the vault the config names takes it in once it reads again (it waited there for good).
UNCONFIGURED = "-nocfg"


def spooled(vault_root: Path) -> list[Path]:
    """The spooled events of the vault (its own spool and the person's for it) — and those that
    came while the config file, which names the vault, could not be read (:data:`UNCONFIGURED`,
    spooled beside the default vault; an event whose vault ``--vault-root`` or ``MEMO_VAULT``
    named is not one of them: it is that vault's) —, oldest first."""
    from ..config import default_vault_root

    found: list[Path] = []
    folders = [(folder, "*.json") for folder in _spool_dirs(vault_root)]
    fallback = fallback_vault(str(default_vault_root()))
    if fallback is not None and fallback.absolute() != Path(vault_root).expanduser().absolute():
        folders += [(folder, f"*{UNCONFIGURED}.json") for folder in _spool_dirs(fallback)]
    for folder, pattern in folders:
        try:
            found += folder.glob(pattern) if folder.is_dir() else []
        except OSError:
            continue
    return sorted(found, key=lambda path: path.name)  # the name starts with the instant it was spooled


def _entry_event(entry: dict[str, Any]) -> HookEvent:
    received = from_iso(str(entry["receivedAt"]))
    return parse_event(entry["agent"], entry["payload"], received, entry.get("event"))


def _replay(waiting: list[Path], apply: Callable[[HookEvent, dict[str, Any]], str], agent: str,
            note: Callable[[str], None]) -> tuple[Path, dict[str, Any], Exception] | None:
    """Apply the spooled events ``waiting`` in order, each file removed once applied (or dropped
    as unusable); returns ``(path, entry, error)`` of the one that failed (the rest wait for the
    next run), else None."""
    for path in waiting:
        try:  # an entry that cannot be read is set aside: one bad file must not stop the capture
            old = json.loads(path.read_text(encoding="utf-8"))
            replayed = _entry_event(old)
            old["captureId"] = str(old["captureId"])
        except FileNotFoundError:
            continue  # applied meanwhile by another run (a hook beside the watch)
        except (OSError, ValueError, KeyError, TypeError, RecursionError, MemoError) as exc:
            _quarantine(path)
            note(f"{agent}: spooled {path.name} set aside (.bad): {type(exc).__name__}")
            continue
        try:
            line = apply(replayed, old)
        except (InvalidFieldError, SessionCompletedError, ValueError) as exc:  # ValueError: a refused request
            line = f"spooled event dropped: {str(exc).splitlines()[0][:300]}"
        except Exception as exc:  # noqa: BLE001 — the vault's trouble, or this event's: the caller tells
            return path, old, exc
        path.unlink(missing_ok=True)
        note(f"{agent}: replayed {path.name}: {line}")
    return None


def drain_spool(vault_root: Path, store: VaultStore | None, who: str = "operator watch",
                send: Callable[[HookEvent, dict[str, Any]], str] | None = None) -> list[str]:
    """Apply the hook events waiting in the spool of the vault ``vault_root`` to ``store``, oldest first, as the next
    hook run would (SPEC §8: a locked or broken vault spools them): a long-running watch records
    them without waiting for the agent's next event. With ``send`` (remote mode,
    :func:`remote_sender`) each goes to the daemon instead. Returns the outcome lines (also
    appended to the spool's log; none when nothing waits). Never raises: an event that still
    cannot be applied stays in the spool, in order, and its line says why."""
    waiting = spooled(vault_root)
    outcomes: list[str] = []
    if not waiting:
        return outcomes

    def note(line: str) -> None:
        outcomes.append(line)
        _log(vault_root, line)

    def apply(one: HookEvent, entry: dict[str, Any]) -> str:
        if send is not None:
            return send(one, entry)
        assert store is not None
        return apply_event(store, one, str(entry["captureId"]), replayed=True)

    try:
        stuck = _replay(waiting, apply, who, note)
    except Exception as exc:  # noqa: BLE001 — a watch must keep watching
        stuck = (waiting[0], {}, exc)
    if stuck is not None:
        path, _, exc = stuck
        note(f"{who}: {path.name} and later spooled events wait: {type(exc).__name__}: "
             f"{str(exc).splitlines()[0][:300] if str(exc) else ''}")
    return outcomes


def hook_answer(batons: list[dict[str, Any]]) -> str | None:
    """What ``memo hook`` prints for the agent (one JSON line; None: nothing): the hand-off its
    session start claimed, as ``hookSpecificOutput.additionalContext`` of ``SessionStart``
    (Claude Code, Codex and Gemini CLI read this shape)."""
    if not batons:
        return None
    baton = batons[-1]
    body = baton.get("body") or ""
    # each line cut on its own first: one long next step had taken the whole allowance — the agent got
    # "- short step\n…", the failed approaches and questions after it never (found by an agent's tester)
    lines = [line if len(line) <= MAX_HANDOFF_LINE else line[:MAX_HANDOFF_LINE].rstrip() + " …"
             for line in body.split("\n")]
    cut = lines != body.split("\n")
    body = "\n".join(lines)
    if len(body) > MAX_HANDOFF_SHOWN:  # an agent's context is no place for a book: the rest is a command away
        body = body[:MAX_HANDOFF_SHOWN].rsplit("\n", 1)[0] + "\n…"
        cut = True
    # whose words they are: a teammate's session, or one this vault does not hold (a team daemon's baton)
    whose = (f" ({baton['leftBy']}'s)" if baton.get("leftBy") else
             " (not in this vault: the baton came from the team daemon)" if baton.get("leftElsewhere") else "")
    context = (f"memo: this session ({baton['sessionId']}) takes over the hand-off {baton['id']} that session "
               f"{baton.get('fromSessionId')}{whose} left in project {baton['project']}. Carry on from it:\n\n"
               f"{body}\n\n(`memo session handoff {baton.get('fromSessionId')} --project "
               f"{baton['project']}` shows it {'whole' if cut else 'again'}.)")
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}},
                      ensure_ascii=False)


def _waiting_marker(vault_root: Path, agent: str, session: str | None) -> Path | None:
    """The file that says a conversation's agent was last heard waiting for the person (a Stop of
    any other conversation — after every turn — never opens the vault), or None (no session id)."""
    if not session:
        return None
    key = hashlib.sha256(f"{agent}\0{session}".encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return Path(vault_root) / ".memo" / "hooks" / "waiting" / key


def _mark(marker: Path, at: datetime | None) -> None:
    """Mark the conversation waiting since ``at`` (its latest wait), or not waiting (None)."""
    try:
        if at is not None:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(to_iso(at), encoding="utf-8")
        else:
            marker.unlink(missing_ok=True)
    except OSError:  # a vault folder that cannot be written: the event is spooled all the same
        pass


def _ends_the_wait(marker: Path, at: datetime) -> bool:
    """Whether an event at ``at`` (a stop, a prompt, an end) comes after the wait ``marker``
    says: one older than the wait (sent late) leaves it waiting — the wait's own stop clears it
    (found by breakers: an older Stop, then an older prompt, dropped the mark, and the wait's
    own AfterAgent was never heard). A mark of no readable time: any does."""
    try:
        return at >= from_iso(marker.read_text(encoding="utf-8").strip())
    except (OSError, ValueError, MemoError):
        return True


def capture(open_store: Callable[[], VaultStore], vault_root: Path, agent: str, raw: bytes | str,
            event_name: str | None = None, received: datetime | None = None,
            send: Callable[[HookEvent, dict[str, Any]], str] | None = None,
            batons: list[dict[str, Any]] | None = None, unconfigured: bool = False) -> list[str]:
    """Apply the hook event ``raw`` of ``agent`` (and first every spooled one); never raises.

    Returns the outcome lines (also appended to the spool's log). The vault is opened with
    ``open_store`` only when there is something to record. With ``send`` (remote mode: this
    machine keeps no vault) each event goes to the daemon instead: ``send(event, entry)``
    answers the outcome, raises ``ValueError`` when the daemon refused it (dropped) and
    :class:`MemoError` when it cannot be reached (spooled under ``vault_root``).
    ``batons``: the caller shows the agent what a session start claims (:func:`apply_event`);
    only the new event of an agent of :data:`BATON_AGENTS` claims — in remote mode on the
    daemon, which answers the hand-off (``send(event, entry, batons)``). ``unconfigured``: the
    config file cannot be read (``vault_root`` is the vault the environment names): a spooled
    event waits there for the vault the config names (:data:`UNCONFIGURED`).
    """
    received = received or datetime.now(timezone.utc)
    outcomes: list[str] = []

    def note(line: str) -> None:
        outcomes.append(line)
        _log(vault_root, line)

    try:
        if len(raw) > MAX_EVENT_BYTES:
            raise ValueError(f"the event is larger than {MAX_EVENT_BYTES} bytes")
        try:
            payload = json.loads(raw) if raw and raw.strip() else None
        except json.JSONDecodeError as exc:  # named as what it is, not only where the parser stopped
            raise ValueError(f"the event is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
        event = parse_event(agent, payload, received, event_name)
    except RecursionError:
        note(f"{agent}: event dropped: nested too deep to parse")
        return outcomes
    except (ValueError, MemoError) as exc:
        note(f"{agent}: event dropped: {str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__}")
        return outcomes
    entry = {"agent": agent, "event": event_name, "receivedAt": to_iso(received), "payload": payload,
             "captureId": secrets.token_hex(8), **({"unconfigured": True} if unconfigured else {})}
    waiting = spooled(vault_root)
    marker = _waiting_marker(vault_root, agent, event.session)
    if event.kind == "waiting" and marker is not None:
        _mark(marker, event.at)  # a Stop of this conversation opens the vault, to say it waits no more
    if event.kind in ("stop", "other") and not waiting and not (event.kind == "stop" and marker is not None
                                                                and marker.exists()):
        # nothing to record, nothing to replay: the vault is not even opened. A Stop (after every turn) is
        # said to MEMO_HOOK_DEBUG alone — unless its agent was waiting for the person; an event memo does
        # not know — another agent's name for it, none — is logged too (found by a new user: a test prompt
        # sent with Claude Code's event name to the Gemini hook left no line in hooks.log)
        said = (f"{agent}: {event.name or 'an event naming no event'}: not an event memo records (it records the "
                "prompt, the session start and end, and when the agent waits for you)") if event.kind == "other" else \
            (f"{agent}: {event.name or 'Stop'}: nothing to record (it ends a wait for you, and none was open; the "
             "session's end is its own event)")
        if event.kind == "other":
            note(said)
        else:
            outcomes.append(said)
        return outcomes
    store = None
    try:
        if send is None:
            store = open_store()
            store.lock_timeout = HOOK_LOCK_TIMEOUT_S
            store.sync_timeout = HOOK_SYNC_SECONDS

        def apply(one: HookEvent, spooled_entry: dict[str, Any], replayed: bool = True) -> str:
            shown = batons if not replayed and one.agent in BATON_AGENTS else None
            if send is not None:  # the daemon claims it, for the agent here to read
                return send(one, spooled_entry, shown)
            if shown is not None and one.kind == "session_start":  # a hybrid laptop: the team's batons first
                from .sync import pull_before_start

                pulled = pull_before_start(store, one.cwd)
                if pulled:
                    outcomes.append(f"{agent}: {pulled}")
            return apply_event(store, one, str(spooled_entry["captureId"]), replayed=replayed, batons=shown)

        stuck = _replay(waiting, apply, agent, note)
        if stuck is not None and isinstance(stuck[2], VaultBusyError):
            # the vault is busy, no fault of the spooled event: this one waits behind it, in order (recorded
            # first, a later prompt took turn 1 and the session's start; and the spooled one, counted as
            # failing, was set aside after three such runs: found by an agent integrator)
            raise stuck[2]
        said = apply(event, entry, replayed=False)
        note(f"{agent}: {said}")
        if event.kind in ("stop", "prompt", "session_end") and marker is not None and _ends_the_wait(marker, event.at):
            _mark(marker, None)
        if batons and store is not None:  # the start claimed a baton: the daemon hears of it before another laptop pulls
            from .sync import push_a_claim

            push_a_claim(store)
        if stuck is not None:  # the new event was recorded: the vault works, the spooled one is what fails
            _count_failure(vault_root, agent, *stuck, note)
    except (InvalidFieldError, SessionCompletedError, ValueError) as exc:  # the event itself is unusable
        note(f"{agent}: event dropped: {str(exc).splitlines()[0][:300]}")
    except Exception as exc:  # noqa: BLE001 — the agent must never see a failure: keep the event for later
        try:
            path = _spool(vault_root, entry)
            note(f"{agent}: {event.name or event.kind} spooled as {path.name}: {type(exc).__name__}: "
                 f"{str(exc).splitlines()[0][:300] if str(exc) else ''}")
        except (OSError, ValueError) as spool_error:
            outcomes.append(f"{agent}: event lost: {exc}; the spool cannot be written: {spool_error}")
    finally:
        if store is not None:
            try:
                store.close()
            except Exception:  # noqa: BLE001
                pass
    return outcomes
