"""GitHub Copilot CLI session state: ``~/.copilot/session-state/<sessionId>/events.jsonl`` (SPEC §7).

One event a line: ``{type, data, id, timestamp, parentId, agentId?}`` (the shapes of the
Copilot SDK's generated ``session-events`` types). Every envelope ``timestamp`` is activity,
and so are ``session.start``'s ``data.startTime`` and ``session.resume``'s
``data.resumeTime``.

A human prompt is a ``user.message`` event whose ``data.content`` (the text as the person
typed it and the timeline shows it; ``transformedContent`` is the model's copy with
``<current_datetime>`` and ``<reminder>`` wrappers) is not blank. These are **not** prompts:

* autopilot's continuation nudges (``data.isAutopilotContinuation: true``, or in older
  versions an empty ``content`` beside a ``transformedContent`` "You have not yet marked the
  task as complete …");
* messages with a ``data.source`` other than ``user`` (``skill-…`` hidden skill injections,
  ``agent-…`` prompts one agent sends another, ``autopilot``);
* events of a sub-agent (an ``agentId`` on the envelope);
* ``system.message`` events (the system prompt, re-sent before each request).

``session.snapshot_rewind`` (``data.upToEventId``) removes the prompts from that event on,
as Copilot removes "this event and all after it"; an id the file does not hold removes
nothing. An event ``id`` seen again is the same event written twice: read once.

One transcript per file, id = ``session.start``'s ``data.sessionId`` (else the folder of
``events.jsonl``, else the file stem). ``project_hint``: the folder name of
``context.gitRoot`` (the repository, as a hook's ``cwd`` resolves) or else
``context.cwd`` of the first ``session.start``, ``session.resume`` or
``session.context_changed`` that names one. ``model``: the one in effect at the first prompt
(``session.start``'s ``selectedModel``, then each ``session.model_change``'s ``newModel``),
else the first one named; each prompt's ``model``: the one the first ``assistant.message``
answering it names, else the one in effect. No per-prompt ``tokens``: Copilot writes each
call's usage only in ephemeral ``assistant.usage`` events, never to the file
(``session.shutdown`` holds per-model totals for the whole session). ``title``: the last
``session.title_changed``. A file without a single Copilot event is not a session log:
``recognised`` False, with what it looks like.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from ...domain.clock import parse_record_instant
from ...domain.errors import InvalidDateError
from ...domain.wire import counted
from .common import HumanPrompt, ImportOptions, ParseResult, Transcript, json_kind, other_format, project_of_folder
from .lines import NOT_JSON
from .resume import FoldReader, allow

SUFFIXES: tuple[str, ...] = (".jsonl",)
EXCLUDE_DIRS: tuple[str, ...] = ()
#: The parse reads only the file it is given: an unchanged file need not be read again (importers.seen).
SELF_CONTAINED = True
SOURCE = "copilot"

_CONTEXT_EVENTS = ("session.start", "session.resume", "session.context_changed")
_NONE = object()


def human_text(event: dict) -> str | None:
    """The person's words in a ``user.message`` event, or None when it holds none.

    Parameters
    ----------
    event : dict
        The whole event (envelope and ``data``).

    Returns
    -------
    str | None
        ``data.content`` stripped; None for the events the module docstring lists.
    """
    data = event["data"]
    if event.get("agentId") or data.get("isAutopilotContinuation") is True:
        return None
    if data.get("source") not in (None, "", "user"):
        return None
    content = data.get("content")
    text = content.replace("\x00", "").strip() if isinstance(content, str) else ""
    return text or None


def malformed(event: dict) -> str | None:
    """What makes a ``user.message`` event that holds no prompt malformed rather than empty, or None.

    Parameters
    ----------
    event : dict
        A ``user.message`` event for which :func:`human_text` gave None.

    Returns
    -------
    str | None
        Its ``data.source`` or ``data.content`` of a type other than text — ``data.content is a
        number, not text`` —; None for an event that is simply not a prompt (blank, or one the
        module docstring lists).
    """
    data = event["data"]
    if event.get("agentId") or data.get("isAutopilotContinuation") is True:
        return None
    for key in ("source", "content"):
        if data.get(key) is not None and not isinstance(data[key], str):
            return f"data.{key} is {json_kind(data[key])}, not text"
    return None


def _is_event(record: object) -> bool:
    """A Copilot event: a dotted ``type`` (``session.start``, ``user.message`` …) and a ``data`` object."""
    return (isinstance(record, dict) and isinstance(record.get("type"), str) and "." in record["type"]
            and isinstance(record.get("data"), dict))



def _text(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _stamp(value: object, options: ImportOptions) -> datetime | None:
    return None if value is None else parse_record_instant(value, "timestamp", options.zone)


def parse(path: Path, options: ImportOptions) -> ParseResult:
    """Read one Copilot CLI ``events.jsonl``.

    Parameters
    ----------
    path : Path
        The session's ``events.jsonl`` (older versions: ``session-state/<sessionId>.jsonl``).
    options : ImportOptions
        ``options.zone`` reads timestamps without an offset (None: UTC).

    Returns
    -------
    ParseResult
        At most one transcript (none without a human prompt; see the module docstring for
        what counts); ``activity`` holds every timestamp as aware UTC; each line left out
        (not JSON, not of the event shape — a dotted ``type`` and a ``data`` object —, an
        unreadable timestamp, a byte that is not UTF-8, a ``user.message`` whose
        ``data.content`` or ``data.source`` is not text) is named in ``problems`` and counted
        in ``skipped_lines``; ``recognised`` is False (with ``why``) when no line is a
        Copilot event.

    Raises
    ------
    OSError
        The file cannot be read.
    """
    return parse_from(path, options)[0]


#: The format of :class:`_Fold`'s state (another value: a checkpoint is not used).
FOLD_VERSION = "copilot/3"  # 2: a transcript keeps its working folder; 3: answers before any prompt counted


class _Fold:
    """A Copilot session's parse after some of its lines (:class:`.resume.LineFold`)."""

    def __init__(self, path: Path) -> None:
        fallback_id = path.parent.name if path.name == "events.jsonl" and path.parent.name else path.stem
        self.transcript = Transcript(transcript_id=fallback_id, source=SOURCE, path=path, ide="copilot", agent="copilot")
        self.prompts: list[tuple[int, HumanPrompt]] = []  # (event position, prompt)
        self.positions: dict[str, int] = {}
        self.problems: list[str] = []
        self.recognised = 0
        self.have_id = False
        self.model: str | None = None
        self.first_model: str | None = None
        self.answered = False
        #: the agent's answers before any prompt of the person's (a file that lost its beginning)
        self.unasked = 0
        #: what the first line looks like, told when no line is a Copilot event
        self.looks: str | None = None

    def problem(self, number: int, text: str) -> None:
        self.problems.append(text)

    def feed(self, number: int, event: object, options: ImportOptions) -> None:
        if self.looks is None:
            self.looks = _looks_like(event)
        if not _is_event(event):
            self.problems.append(f"line {number}: " + ("not JSON" if event is NOT_JSON else
                                                       "not a Copilot event (a dotted type and a data object)"))
            return
        kind, data = event["type"], event["data"]
        self.recognised += 1  # a Copilot event, whatever its instant: one every line of which is unreadable is said so
        inner_key = "startTime" if kind == "session.start" else "resumeTime" if kind == "session.resume" else None
        stamps: list[datetime | None] = []
        for name, value in (("timestamp", event.get("timestamp")), (f"data.{inner_key}", data.get(inner_key))):
            try:
                stamps.append(_stamp(value, options))
            except InvalidDateError:  # the value and the field it is in: the envelope's, or data's
                if name == "timestamp":
                    self.problems.append(f"line {number}: unreadable or out-of-range {name} {str(value)[:40]!r} "
                                         f"(a record's instant lies in 1970–9000)")
                    return
                # the session's id, model and project still count: only that instant is left out
                self.problems.append(f"line {number}: unreadable or out-of-range {name} {str(value)[:40]!r} (a "
                                     f"record's instant lies in 1970–9000); the rest of the event is read")
                stamps.append(None)
        at, inner = stamps
        transcript, prompts = self.transcript, self.prompts
        event_id = event.get("id") if isinstance(event.get("id"), str) else None
        if event_id is not None:
            if event_id in self.positions:
                return  # the same event written again: read once
            self.positions[event_id] = self.recognised
        transcript.activity.extend(stamp for stamp in (at, inner) if stamp is not None)
        if kind == "session.start" and not self.have_id and _text(data.get("sessionId")):
            transcript.transcript_id, self.have_id = _text(data.get("sessionId")), True
        if kind in _CONTEXT_EVENTS and transcript.project_hint is None:
            context = data.get("context") if kind != "session.context_changed" else data
            if isinstance(context, dict):
                transcript.project_hint = (project_of_folder(context.get("gitRoot"))
                                           or project_of_folder(context.get("cwd")))
                folder = context.get("cwd") or context.get("gitRoot")  # the hook's session of it (no id)
                transcript.folder = folder if isinstance(folder, str) and folder.startswith("/") \
                    and "\x00" not in folder else None
        named = (_text(data.get("selectedModel")) if kind in ("session.start", "session.resume") else
                 _text(data.get("newModel")) if kind == "session.model_change" else None)
        if named:
            self.model, self.first_model = named, self.first_model or named
        if kind == "session.title_changed" and _text(data.get("title")):
            transcript.title = _text(data.get("title"))
        elif kind == "session.snapshot_rewind" and isinstance(data.get("upToEventId"), str) \
                and data["upToEventId"] in self.positions:
            cut = self.positions[data["upToEventId"]]
            self.prompts = [(position, prompt) for position, prompt in prompts if position < cut]
        elif kind == "user.message":
            text = human_text(event)
            if text:
                if not prompts and transcript.model is None:
                    transcript.model = self.model
                prompts.append((self.recognised, HumanPrompt(text, at, model=self.model)))
                self.answered = False
            elif (problem := malformed(event)) is not None:
                self.problems.append(f"line {number}: {problem}")
        elif kind == "assistant.message" and not prompts:
            self.unasked += 1
        elif kind == "assistant.message" and prompts and not self.answered and not event.get("agentId"):
            self.answered = True  # the model that wrote the first answer, when the event names it
            prompts[-1][1].model = _text(data.get("model")) or prompts[-1][1].model

    def finish(self) -> ParseResult:
        if not self.recognised:
            return ParseResult(recognised=False, why=self.looks or _looks_like(_NONE))
        transcript = self.transcript
        transcript.prompts = [prompt for _, prompt in self.prompts]
        transcript.model = transcript.model or self.first_model
        problems = list(self.problems)
        if not transcript.prompts and getattr(self, "unasked", 0):
            # answered work of no prompt: the file lost its beginning (found by a tester: "sessions 0", exit 0)
            problems.append(f"{counted(self.unasked, 'answer')} of the agent and no prompt of the person's: nothing to "
                            "import (the file lost its beginning, where the prompts were?)")
        return ParseResult(transcripts=[transcript] if transcript.prompts else [], skipped_lines=len(problems),
                           problems=problems)


def _looks_like(first: object) -> str:
    """What a file without a single Copilot event looks like, for the message."""
    if first is _NONE:
        return "the file is empty"
    if first is NOT_JSON:
        return "its lines are not JSON"
    return other_format(first, SOURCE) or "no line is a Copilot event (session.start, user.message, …)"


allow(Transcript, HumanPrompt, _Fold)

#: :func:`parse`, read on from ``start`` (the checkpoint the last import of the file left) when the
#: file only grew since; also the checkpoint to keep (:class:`.resume.FoldReader`).
parse_from = FoldReader(_Fold, FOLD_VERSION)
