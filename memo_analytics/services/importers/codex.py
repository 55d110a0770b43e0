"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`` (SPEC §7).

Each line is ``{timestamp, type, payload}``: ``session_meta`` (``id``, ``cwd``,
``originator``, ``cli_version``), ``turn_context`` (``model``, ``cwd``), ``response_item``
(messages, reasoning, tool calls and outputs) and ``event_msg`` (UI events). Every
timestamp (the envelope's and ``session_meta.payload.timestamp``) is activity.

What counts as a human prompt:

* the ``event_msg`` records with ``payload.type == "user_message"`` and a plain ``kind``
  (or none); ``response_item`` user messages are never used when such events exist, as
  they repeat the prompt and add ``<environment_context>``, ``<user_instructions>`` and
  ``# AGENTS.md instructions`` wrappers that are not the person's words;
* an IDE wrapper (``# Context from my IDE setup:`` with ``## Active file``, ``## Open
  tabs`` … sections, written by the VS Code extension) is cut down to the text under
  ``## My request for Codex:``; a wrapper without that section carries no request and is
  not a prompt.

Older rollouts (no envelope: a first line ``{id, timestamp, instructions}``, then bare
``{"type": "message", "role": "user", …}`` items and ``{"record_type": "state"}``
lines) have no ``user_message`` events: there the user ``message`` items are read, with
the same wrappers removed.

One transcript per file, id = ``session_meta.id`` (else the file stem). A file with no
Codex-shaped line at all is not a rollout: it yields nothing and counts no bad lines.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from ...domain.clock import parse_record_instant
from ...domain.errors import InvalidDateError
from .common import HumanPrompt, ImportOptions, ParseResult, Transcript, other_format, take_git, take_working_folder
from .lines import NOT_JSON
from .resume import FoldReader, allow

SUFFIXES: tuple[str, ...] = (".jsonl",)
EXCLUDE_DIRS: tuple[str, ...] = ()
#: The parse reads only the file it is given: an unchanged file need not be read again (importers.seen).
SELF_CONTAINED = True
SOURCE = "codex"

_IDE_HEADER = "# Context from my IDE setup"
_IDE_REQUEST = re.compile(r"^## My request for Codex:?[ \t]*\n?", re.M)
_WRAPPER = re.compile(r"^(?:<(?:environment_context|user_instructions|user_shell_command|INSTRUCTIONS)\b|# AGENTS\.md instructions)")
#: The most tokens a conversation's running total counts (a count beyond it is no count).
_MAX_RUNNING_TOKENS = 10 ** 12
_ENVELOPE_TYPES = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
_BARE_ITEM_TYPES = {"message", "reasoning", "function_call", "function_call_output", "local_shell_call",
                    "custom_tool_call", "custom_tool_call_output", "web_search_call"}


def human_request(text: str) -> str | None:
    """The person's words in a Codex user message, or None when it holds none.

    Parameters
    ----------
    text : str
        The message text as the rollout holds it.

    Returns
    -------
    str | None
        The text itself; for an IDE wrapper the text under ``## My request for Codex:``;
        None for environment/instruction wrappers, an IDE wrapper without a request, or
        blank text.
    """
    text = text.replace("\x00", "").strip()
    if not text or _WRAPPER.match(text):
        return None
    if text.startswith(_IDE_HEADER):
        match = _IDE_REQUEST.search(text)
        if match is None:
            return None
        text = text[match.end():].strip()
    return text or None


def _message_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n\n".join(
        block["text"] for block in content
        if isinstance(block, dict) and isinstance(block.get("text"), str)
        and block.get("type") in (None, "input_text", "text")
    )



def _normalise(record: object) -> tuple[str, dict] | None:
    """``(type, payload)`` of a Codex line in either shape, or None when it is not one."""
    if not isinstance(record, dict):
        return None
    if "payload" in record:
        kind, payload = record.get("type"), record.get("payload")
        if isinstance(kind, str) and kind in _ENVELOPE_TYPES and isinstance(payload, dict):
            return kind, payload
        return None
    kind = record.get("type")
    if kind is None and "record_type" in record:
        return "state", record
    if kind is None and isinstance(record.get("id"), str) and "timestamp" in record:
        return "session_meta", record
    if isinstance(kind, str) and kind in _BARE_ITEM_TYPES:
        return "response_item", record
    return None


def parse(path: Path, options: ImportOptions) -> ParseResult:
    """Read one Codex rollout.

    Parameters
    ----------
    path : Path
        The ``rollout-*.jsonl`` file.
    options : ImportOptions
        ``options.zone`` reads timestamps without an offset (None: UTC).

    Returns
    -------
    ParseResult
        At most one transcript (none when it has no human prompt; see the module docstring
        for what counts); ``activity`` holds every timestamp as aware UTC;
        ``skipped_lines`` counts lines that are not JSON objects of a known Codex shape
        or have an unreadable timestamp.

    Raises
    ------
    OSError, UnicodeDecodeError
        The file cannot be read as UTF-8 text.
    """
    return parse_from(path, options)[0]


#: A rollout's file name: ``rollout-2025-11-27T11-39-23-<the conversation's id>``.
_ROLLOUT_NAME = re.compile(r"^rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                           r"[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$")

#: The format of :class:`_Fold`'s state (another value: a checkpoint is not used).
FOLD_VERSION = "codex/3"  # 3: a turn takes the model of the context written after its message


class _Fold:
    """A rollout's parse after some of its lines (:class:`.resume.LineFold`)."""

    def __init__(self, path: Path) -> None:
        # the conversation's id before its session_meta line says it: the one Codex writes into the
        # file name (rollout-<time>-<id>.jsonl) — a file cut above that line is still its conversation
        named = _ROLLOUT_NAME.match(path.stem)
        self.transcript = Transcript(transcript_id=named.group(1) if named else path.stem, source=SOURCE, path=path,
                                     ide="codex", agent="codex")
        self.events: list[HumanPrompt] = []
        self.items: list[HumanPrompt] = []
        self.recognised = 0
        self.have_id = False
        self.model: str | None = None
        self.total: dict[str, int] = {}
        self.at_prompt: dict[str, int] = {}
        #: whether the agent answered (reasoned, called a tool, wrote) since the last prompt read
        self.answered = False
        self.problems: list[str] = []
        #: the user messages read (instant and text): one written again (a rollout's lines written
        #: twice, ``cat a a``) is the same message — its turn and its cost were counted twice
        self.said: set[str] = set()
        #: the first line's value, told when no line is a Codex record (its other format, if any)
        self.first_seen = False
        self.looks: str | None = None

    def problem(self, number: int, text: str) -> None:
        self.problems.append(text)

    def feed(self, number: int, record: object, options: ImportOptions) -> None:
        if not self.first_seen:
            self.first_seen, self.looks = True, other_format(record, SOURCE)
        shaped = None if record is NOT_JSON else _normalise(record)
        if shaped is None:
            self.problems.append(f"line {number}: " + ("not JSON" if record is NOT_JSON else "not a Codex record"))
            return
        kind, payload = shaped
        self.recognised += 1  # a Codex record, whatever its instant: one every line of which is unreadable is said so
        try:
            at = _stamp(record.get("timestamp"), options)
            inner_at = _stamp(payload.get("timestamp"), options) if kind == "session_meta" and payload is not record else None
        except InvalidDateError:
            shown = str(record.get("timestamp"))[:40]
            self.problems.append(f"line {number}: unreadable or out-of-range timestamp {shown!r} (a record's instant "
                                 "lies in 1970–9000, ISO 8601)")
            return
        transcript = self.transcript
        transcript.activity.extend(stamp for stamp in (at, inner_at) if stamp is not None)
        if (kind == "response_item" and payload.get("type") != "ghost_snapshot" and payload.get("role") != "user") \
                or (kind == "event_msg" and str(payload.get("type") or "").startswith("agent_")):
            self.answered = True
        if kind == "session_meta":
            if not self.have_id and isinstance(payload.get("id"), str) and payload["id"].strip():
                transcript.transcript_id, self.have_id = payload["id"].strip(), True
            take_working_folder(transcript, payload.get("cwd"))
            transcript.model = transcript.model or _text(payload.get("model"))
            git = payload.get("git")
            if isinstance(git, dict):  # {branch, commit_hash, repository_url}: the url may hold a token, never read
                take_git(transcript, git.get("branch"), git.get("commit_hash"))
        elif kind == "turn_context":
            transcript.model = transcript.model or _text(payload.get("model"))
            self.model = _text(payload.get("model")) or self.model
            if self.events and not self.answered and self.model:
                # Codex writes a turn's context after its user message: the turn just asked runs on
                # this model (after a /model switch its tokens were priced at the model before —
                # found by a tester of other agents' files)
                self.events[-1].model = self.model
            take_working_folder(transcript, payload.get("cwd"))
        elif kind == "event_msg" and payload.get("type") == "user_message":
            if payload.get("kind") in (None, "plain") and not isinstance(payload.get("message"), (str, type(None))):
                self.problems.append(f"line {number}: user_message's message is {type(payload['message']).__name__}, "
                                     "not text; left out")
            if payload.get("kind") in (None, "plain") and isinstance(payload.get("message"), str):
                request = human_request(payload["message"])
                if request and self._new("event", at, request):
                    self.events.append(HumanPrompt(request, at, model=self.model))
                    self.at_prompt = dict(self.total)  # the running total when this turn began
                    self.answered = False
        elif kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info") if isinstance(payload.get("info"), dict) else {}
            running = info.get("total_token_usage")
            if isinstance(running, dict):
                bad = next(((k, v) for k, v in running.items() if not (isinstance(v, int) and not isinstance(v, bool)
                                                                      and 0 <= v <= _MAX_RUNNING_TOKENS)), None)
                if bad is not None:  # a count of text, below 0 or beyond reason: said, never priced (16× too low)
                    self.problems.append(f"line {number}: total_token_usage.{str(bad[0])[:40]} is {str(bad[1])[:40]!r}, "
                                         "not a token count; the line's counts are left out")
                    return
                counts = dict(running)
                if sum(counts.values()) < sum(self.total.values()):
                    return  # a running total below the last one: a line written again, not a new count
                last = info.get("last_token_usage")
                if not self.total and self.events and not self.at_prompt:
                    # the file's first count, after its first prompt: a conversation continued from another
                    # file, its running total the whole conversation's (its first half was priced twice: found
                    # by a tester of bad files). Before any answer it restates the total the turn began at;
                    # after one, the turn began where it stood before this request (``last_token_usage``)
                    self.at_prompt = dict(counts) if not self.answered or not isinstance(last, dict) else {
                        k: max(v - last.get(k, 0), 0) if isinstance(last.get(k, 0), int) else v
                        for k, v in counts.items()}
                self.total = counts
                if self.events:  # this turn's figures: the running total now minus where the turn began
                    self.events[-1].tokens = _turn_tokens(self.total, self.at_prompt)
        elif kind == "response_item" and payload.get("type") == "message" and payload.get("role") == "user":
            request = human_request(_message_text(payload.get("content")))
            if request and self._new("item", at, request):
                self.items.append(HumanPrompt(request, at))

    def _new(self, kind: str, at: datetime | None, text: str) -> bool:
        """Whether this user message (its kind, instant and text) was not read before."""
        key = f"{kind}\x00{at.isoformat() if at else ''}\x00{text}"
        if key in self.said:
            return False
        self.said.add(key)
        return True

    def finish(self) -> ParseResult:
        if not self.recognised:
            return ParseResult(recognised=False, why=self.looks or "no line is a Codex record "
                               "(session_meta, turn_context, response_item, event_msg)")
        transcript = self.transcript
        transcript.prompts = self.events or self.items
        return ParseResult(transcripts=[transcript] if transcript.prompts else [], skipped_lines=len(self.problems),
                           problems=self.problems)


def _turn_tokens(total: dict[str, int], start: dict[str, int]) -> dict[str, int] | None:
    """A turn's token counts from Codex's running totals (``input_tokens`` includes the cached
    ones): ``input`` (not cached), ``cacheRead``, ``output``, ``reasoning``."""
    delta = {k: max(total.get(k, 0) - start.get(k, 0), 0) for k in total}
    tokens = {"input": delta.get("input_tokens", 0) - delta.get("cached_input_tokens", 0),
              "cacheRead": delta.get("cached_input_tokens", 0), "output": delta.get("output_tokens", 0),
              "reasoning": delta.get("reasoning_output_tokens", 0)}
    tokens["input"] = max(tokens["input"], 0)
    return tokens if any(tokens.values()) else None


def _text(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _stamp(value: object, options: ImportOptions) -> datetime | None:
    return None if value is None else parse_record_instant(value, "timestamp", options.zone)


allow(Transcript, HumanPrompt, _Fold)

#: :func:`parse`, read on from ``start`` (the checkpoint the last import of the file left) when the
#: file only grew since; also the checkpoint to keep (:class:`.resume.FoldReader`).
parse_from = FoldReader(_Fold, FOLD_VERSION)
