"""Gemini CLI chats: ``~/.gemini/tmp/<project>/chats/session-*.json|jsonl`` (SPEC §7).

Two formats, read as Gemini CLI's own loader (``chatRecordingService.ts``) reads them:

* legacy: one JSON document ``{sessionId, projectHash, startTime, lastUpdated, summary?,
  kind?, messages: [{id, timestamp, type, content, displayContent?, model?, thoughts?,
  toolCalls?}]}``;
* JSON Lines (Gemini CLI ≥ 0.39): a header ``{sessionId, projectHash, startTime,
  lastUpdated, kind}``, then message records, ``{"$set": {…}}`` metadata patches and
  ``{"$rewindTo": <message id>}`` markers. A message id seen again replaces that message
  where it stands (Gemini rewrites a message as its tool calls and tokens arrive): one
  message, not two. ``$rewindTo`` removes that message and every message after it (the
  person went back to it in ``/rewind``); an id the file does not hold removes nothing
  (Gemini only writes ids it holds, so the file lost lines: dropping every prompt on that
  evidence would lose real turns). A ``$set`` with ``messages`` (Gemini's history checkpoint
  after compression, a cancelled request or output masking) updates the messages it names
  but removes none — it rewrites the model's context, not what the person typed — and a
  message it introduces is one Gemini made up itself (a summary, a sentinel), never a prompt.

Every timestamp is activity: the header's ``startTime`` and ``lastUpdated``, each
``$set.lastUpdated``, each message's ``timestamp`` and those of its ``thoughts`` and
``toolCalls`` — rewound and replaced messages included (the work happened).

A human prompt is a ``type: "user"`` message (``gemini``, ``info``, ``error`` and
``warning`` messages are activity only) that holds the person's words:

* when the message has a ``displayContent`` (what the person typed, kept when it differs
  from what the model was sent), its text is the prompt: a slash command that goes to the
  model (``/init``, a custom command) is stored as typed, ``/init``, and its expansion is not
  (as :mod:`.claude_code` does); an ``@file`` reference is stored without the file's
  pasted content. A ``displayContent`` without text (a tool response shown in its place)
  means Gemini injected the message: not a prompt;
* otherwise the text parts of ``content`` (joined as Gemini joins them); a text starting
  with ``/`` or ``?`` is a local command that older versions recorded (``/stats``,
  ``/resume``): not a prompt — the rule Gemini itself uses to leave such messages out of a
  resumed chat;
* never a prompt: messages without text (tool responses recorded as ``user`` messages),
  Gemini's continuation sentinels ``Please continue.`` and ``System: Please continue.``
  (next-speaker check, invalid-stream retry; a person typing exactly that loses the turn,
  not its time), and injected context starting with ``<session_context>``,
  ``<hook_context>`` or ``<state_snapshot>`` (a compression summary).

One transcript per file, id = the header's ``sessionId`` (a legacy ``.json`` chat and the
``.jsonl`` Gemini migrates it to on resume are one conversation: their prompts are merged,
see :func:`~.common.merge_transcripts`). ``title``: the ``summary`` Gemini saved; ``model``:
the first one a ``gemini`` message names; each prompt's ``model`` and ``tokens`` come from
the ``gemini`` messages that follow it up to the next prompt (the first one's model, their
``tokens`` summed, see :func:`message_tokens`; a rewound answer costs nothing here).
``project_hint``: the folder name of the project root that Gemini CLI ≥ 0.29 keeps in
``.project_root`` beside ``chats/``, else None (a chat itself names only a hash of its
project folder, and older versions' ``<project>`` folder is that hash). A sub-agent's chat
(``kind: "subagent"``, under ``chats/<parent session>/``) holds the parent agent's brief,
not the person's words: it yields nothing, and so do Gemini's own ``logs.json`` and
``/chat save`` checkpoints (lists, not chats). Any other file is not a Gemini chat:
``recognised`` False, with what it looks like instead.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path, PurePosixPath, PureWindowsPath

from ...domain.clock import parse_record_instant
from ...domain.errors import InvalidDateError
from ..pricing import plausible_tokens
from .common import HumanPrompt, ImportOptions, ParseResult, Transcript, add_tokens, json_kind, other_format
from .lines import NOT_JSON, LongInteger as _LongInteger, json_integer as _integer, parse_json_line, read_jsonl_lines, read_transcript

SUFFIXES: tuple[str, ...] = (".json", ".jsonl")
EXCLUDE_DIRS: tuple[str, ...] = ()
#: The parse reads only the file it is given: an unchanged file need not be read again (importers.seen).
SELF_CONTAINED = True
SOURCE = "gemini"

_CONTINUATIONS = {"Please continue.", "System: Please continue."}
_INJECTED = ("<session_context>", "<hook_context>", "<state_snapshot>")
_LOCAL_COMMAND = ("/", "?")
_NOT_JSON = object()


def _loads(text: str) -> object:
    """``text`` as JSON (an integer too long for Python as a :class:`_LongInteger`).

    Raises
    ------
    ValueError, RecursionError
        ``text`` is not JSON, or is nested too deep.
    """
    return json.loads(text, parse_int=_integer)


def parts_text(value: object) -> str:
    """The text of a Gemini ``PartListUnion``: a string, one part or a list of them.

    Parameters
    ----------
    value : object
        ``content`` or ``displayContent`` as the chat holds it.

    Returns
    -------
    str
        The ``text`` of every text part, joined without separator (as Gemini's
        ``partListUnionToString`` joins them); ``""`` when there is none.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        text = value.get("text")
        return text if isinstance(text, str) and not value.get("thought") else ""
    if isinstance(value, list):
        return "".join(parts_text(part) for part in value if isinstance(part, (str, dict)))
    return ""


def human_text(message: dict) -> str | None:
    """The person's words in a ``user`` message, or None when it holds none.

    Parameters
    ----------
    message : dict
        A message record (``content``, optional ``displayContent``).

    Returns
    -------
    str | None
        The prompt text, stripped; None for the messages the module docstring lists.
    """
    display = message.get("displayContent")
    typed = display not in (None, "", [])
    text = parts_text(display if typed else message.get("content")).replace("\x00", "").strip()
    if not text or text in _CONTINUATIONS or text.startswith(_INJECTED):
        return None
    if not typed and text.startswith(_LOCAL_COMMAND):
        return None
    return text


def malformed(message: dict) -> str | None:
    """What makes a ``user`` message that holds no prompt malformed rather than empty, or None.

    Parameters
    ----------
    message : dict
        A ``user`` message record for which :func:`human_text` gave None.

    Returns
    -------
    str | None
        Its ``displayContent`` (when it has one, else its ``content``), a part of it or a part's
        ``text`` of a type a ``PartListUnion`` never holds — ``content is a number, not text or
        parts`` —; None for a message that is simply not a prompt (no text, a tool response,
        injected context: see the module docstring).
    """
    display = message.get("displayContent")
    name = "displayContent" if display not in (None, "", []) else "content"
    value = message.get(name)
    if value is None:
        return None
    parts = [(f"{name}[{number}]", part) for number, part in enumerate(value)] if isinstance(value, list) else [
        (name, value)]
    for label, part in parts:
        if isinstance(part, dict) and "text" in part and not isinstance(part["text"], str):
            return f"{label}.text is {json_kind(part['text'])}, not text"
        if not isinstance(part, (str, dict)):
            return f"{label} is {json_kind(part)}, not text or " + ("a part" if label != name else "parts")
    return None


def message_tokens(tokens: dict) -> dict[str, int]:
    """One ``gemini`` message's ``tokens`` in the keys of :class:`~.common.HumanPrompt`.

    Parameters
    ----------
    tokens : dict
        ``{input, output, cached, thoughts, tool, total}`` as Gemini records them from the
        API's usage metadata (``input`` is the prompt count, cached tokens included).

    Returns
    -------
    dict[str, int]
        ``input`` (not cached, tool-use prompts included), ``cacheRead``, ``output`` and
        ``reasoning`` (thinking tokens); a count Gemini did not give is left out.
    """
    def count(key: str) -> int | None:
        value = tokens.get(key)
        return value if plausible_tokens(value) else None

    prompt, cached, tool = count("input"), count("cached"), count("tool")
    usage = {"cacheRead": cached, "output": count("output"), "reasoning": count("thoughts")}
    if prompt is not None:
        usage["input"] = max(prompt - (cached or 0), 0) + (tool or 0)
    return {key: value for key, value in usage.items() if value is not None}


@dataclass
class _Message:
    record: dict
    at: datetime | None
    synthetic: bool = False
    #: where the chat holds it (``line N``, ``message N``), for a problem found once all is read
    where: str = ""


@dataclass
class _Chat:
    """What the records of one chat add up to, applied in file order; ``problems`` names
    each record left out (``line N: reason``, ``message N: reason`` in a legacy document);
    ``headless``: a chat header without a sessionId was read (the chat cannot be imported)."""

    zone: tzinfo | None
    session_id: str | None = None
    headless: bool = False
    meta: dict = field(default_factory=dict)
    messages: dict[str, _Message] = field(default_factory=dict)
    activity: list[datetime] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def stamp(self, value: object) -> datetime | None:
        """``value`` read as an instant (None when absent); raises InvalidDateError."""
        return None if value is None else parse_record_instant(value, "timestamp", self.zone)

    def note(self, *values: object) -> None:
        """Activity from stamps whose loss costs nothing but a moment (header, thoughts, tool calls)."""
        for value in values:
            try:
                at = self.stamp(value)
            except InvalidDateError:
                continue
            if at is not None:
                self.activity.append(at)

    def take(self, record: object, where: str) -> None:
        """Apply one record (``where``: ``line N`` or ``document``) as Gemini's loader does."""
        if record is None:
            self.problems.append(f"{where}: not JSON")
        elif not isinstance(record, dict):
            self.problems.append(f"{where}: not a Gemini chat record (not a JSON object)")
        elif isinstance(record.get("$rewindTo"), str):
            self.rewind(record["$rewindTo"])
        elif isinstance(record.get("id"), str):
            self.message(record, where)
        elif isinstance(record.get("$set"), dict):
            patch = record["$set"]
            if isinstance(patch.get("messages"), list):
                for message in patch["messages"]:
                    if isinstance(message, dict) and isinstance(message.get("id"), str):
                        self.message(message, where, checkpoint=True)
            self.meta.update({k: v for k, v in patch.items() if k != "messages"})
            self.note(patch.get("lastUpdated"))
        elif isinstance(record.get("projectHash"), str):
            session_id = record.get("sessionId")
            if self.session_id is None:
                if not isinstance(session_id, str) or not session_id.strip():
                    kind = ("none" if "sessionId" not in record else
                            "blank" if isinstance(session_id, str) else json_kind(session_id))
                    self.problems.append(f"{where}: the chat has no sessionId ({kind}); the chat is left out")
                    self.headless = True
                    return
                self.session_id = session_id.strip()
            self.meta.update({k: v for k, v in record.items() if k != "messages"})
            self.note(record.get("startTime"), record.get("lastUpdated"))
            messages = record.get("messages")
            if messages is not None and not isinstance(messages, list):
                self.problems.append(f"{where}: messages is {json_kind(messages)}, not a list")
            for number, message in enumerate(messages if isinstance(messages, list) else (), 1):
                inner = f"message {number}" if where == "document" else where
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    self.message(message, inner)
                else:
                    self.problems.append(f"{inner}: not a Gemini message (no id)")
        else:
            self.problems.append(f"{where}: not a Gemini chat record (no id, $set, $rewindTo or sessionId)")

    def message(self, record: dict, where: str, checkpoint: bool = False) -> None:
        try:
            at = self.stamp(record.get("timestamp"))
        except InvalidDateError:
            self.problems.append(f"{where}: unreadable or out-of-range timestamp {str(record.get('timestamp'))[:40]!r} (a record's instant lies in 1970–9000)")
            return
        if at is not None:
            self.activity.append(at)
        for key in ("thoughts", "toolCalls"):
            if isinstance(record.get(key), list):
                self.note(*(item.get("timestamp") for item in record[key] if isinstance(item, dict)))
        known = self.messages.get(record["id"])
        synthetic = known.synthetic if known is not None else checkpoint
        self.messages[record["id"]] = _Message(record, at, synthetic, where)  # a known id keeps its place

    def rewind(self, message_id: str) -> None:
        ids = list(self.messages)
        if message_id in self.messages:
            for dropped in ids[ids.index(message_id):]:
                del self.messages[dropped]


def project_root_name(path: Path) -> str | None:
    """The folder name of the project a ``chats/`` file belongs to, from the
    ``.project_root`` marker Gemini keeps in the project's temp folder; None without one."""
    if path.parent.name != "chats":
        return None
    try:
        root = (path.parent.parent / ".project_root").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not root or "\n" in root:
        return None
    pure = PureWindowsPath(root) if "\\" in root and "/" not in root else PurePosixPath(root)
    return pure.name or None


def _from_lines(lines: list[tuple[int, str]], problems: list[str], options: ImportOptions) -> _Chat:
    chat = _Chat(zone=options.zone, problems=problems)
    for number, line in lines:
        if not line.strip():
            continue
        record = parse_json_line(line)
        if record is NOT_JSON:  # or an integer too long for Python, which costs only itself
            try:
                record = _loads(line)
            except (ValueError, RecursionError):
                record = None
        chat.take(record, f"line {number}")
    return chat


def _first_value(lines: list[tuple[int, str]]) -> object:
    first = next((line for _, line in lines if line.strip()), None)
    if first is None:
        return None
    try:
        return json.loads(first)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _read(path: Path, options: ImportOptions) -> tuple[_Chat | None, object, bool]:
    """The chat a file holds (None when it holds none) and, without one, its first JSON value
    (to say what the file is instead). ``.jsonl`` is read line by line, a bad byte costing its
    line; any other file as one JSON document (a legacy chat) and, as Gemini's loader does,
    as JSON Lines when that document is no chat. Third: whether the last line is half a line
    still being written (:func:`.lines.read_jsonl_lines`).

    Raises
    ------
    ValueError
        A non-``.jsonl`` file is neither a JSON document nor JSON Lines with a chat header.
    UnicodeDecodeError
        Such a file holds a byte that is not UTF-8.
    """
    document: object = None
    broken: str | None = None
    if path.suffix != ".jsonl":
        notes: list[str] = []
        try:
            data = read_transcript(path)
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                # one bad byte (a crash while writing, a disk error) is one unreadable character,
                # not a lost chat: replaced, and said
                text = data.decode("utf-8-sig", errors="replace")
                notes.append(f"byte 0x{data[exc.start]:02x} at offset {exc.start} is not UTF-8 "
                             "(replaced by U+FFFD; the rest of the chat is read)")
            document = _loads(text)
        except RecursionError:  # whole, not cut short: never "still being written" (found by a tester)
            document, broken = _NOT_JSON, "nested too deep to parse (a chat Gemini writes is not)"
        except ValueError as exc:
            document, broken = _NOT_JSON, f"not a complete JSON document ({exc})"
        else:
            chat = _Chat(zone=options.zone, problems=notes)
            chat.take(document, "document")
            if chat.session_id is not None or chat.headless:
                return chat, None, False
    lines, problems, pending = read_jsonl_lines(path)
    chat = _from_lines(lines, problems, options)
    if chat.session_id is not None or chat.headless:  # Gemini's loader needs sessionId and projectHash too
        return chat, None, pending
    if path.suffix == ".jsonl":
        return None, _first_value(lines), pending
    if broken is not None and not broken.startswith("nested too deep") and _a_chat_cut_short(text):
        # Gemini rewrites its chat whole: read in the middle of a rewrite, it is a chat still being
        # written, taken in once whole — it was "not a gemini transcript" (found by a tester)
        return None, None, True
    if broken is not None:
        raise ValueError(broken)
    return None, document, False


def _a_chat_cut_short(text: str) -> bool:
    """Whether ``text``, no complete JSON document, is the beginning of a Gemini chat (its header's
    ``sessionId`` among its first bytes)."""
    head = text.lstrip()[:4096]
    return head.startswith("{") and '"sessionId"' in head


def _gemini_side_file(value: object) -> bool:
    """Gemini's own JSON that holds no chat: ``logs.json`` (a list of ``{sessionId,
    messageId, …}``) or a ``/chat save`` checkpoint (a list of ``{role, parts}``)."""
    return isinstance(value, list) and all(
        isinstance(item, dict) and ("messageId" in item or ("role" in item and "parts" in item)) for item in value)


def _looks_like(value: object) -> str:
    """What a file that holds no Gemini chat looks like, for the message."""
    if value is _NOT_JSON:
        return "its first line is not JSON"
    if other_format(value, SOURCE):
        return other_format(value, SOURCE)
    if value is None:
        return "the file is empty"
    return "no chat header (sessionId and projectHash)"


def parse(path: Path, options: ImportOptions) -> ParseResult:
    """Read one Gemini CLI chat file.

    Parameters
    ----------
    path : Path
        A ``session-*.json`` (legacy) or ``*.jsonl`` chat.
    options : ImportOptions
        ``options.zone`` reads timestamps without an offset (None: UTC).

    Returns
    -------
    ParseResult
        At most one transcript (none without a human prompt, for a sub-agent's chat or
        Gemini's own ``logs.json`` and checkpoints; see the module docstring for what counts);
        ``activity`` holds every timestamp as aware UTC; each record left out (not JSON, not
        a Gemini record, an unreadable ``timestamp``, a byte that is not UTF-8, a message whose
        ``type`` is no name (a number, a list …), a ``user`` message whose ``content`` or ``displayContent`` is of a type no part list has, see
        :func:`malformed`), a ``messages`` that is not a list, a chat header without a
        ``sessionId`` (then nothing is imported) and a token count too long for Python to read
        (only that count is left out) are named in ``problems`` and counted in
        ``skipped_lines``; ``recognised`` is False (with ``why``) for a file that is not
        Gemini's at all.

    Raises
    ------
    OSError
        The file cannot be read.
    ValueError, UnicodeDecodeError
        A ``.json`` file is not a complete JSON document (cut off while written) nor JSON
        Lines with a chat header, or holds a byte that is not UTF-8 (in a ``.jsonl`` file a
        bad byte costs only its line).
    """
    chat, first, pending = _read(path, options)
    if chat is None and first is None and pending and path.suffix != ".jsonl":
        return ParseResult(pending_lines=1)  # a chat cut short while Gemini rewrites it: read once whole
    if chat is None:
        return ParseResult() if _gemini_side_file(first) else ParseResult(recognised=False, why=_looks_like(first),
                                                                          pending_lines=int(pending))
    if chat.meta.get("kind") == "subagent":
        return ParseResult()
    if chat.session_id is None:  # a header without a sessionId: said in problems
        return ParseResult(skipped_lines=len(chat.problems), problems=chat.problems, pending_lines=int(pending))
    transcript = Transcript(transcript_id=chat.session_id, source=SOURCE, path=path, ide="gemini", agent="gemini",
                            activity=chat.activity, project_hint=project_root_name(path))
    digest = chat.meta.get("projectHash")
    if transcript.project_hint is None and isinstance(digest, str) and re.fullmatch(r"[0-9a-fA-F]{16,128}", digest):
        # its folder found by the import, where this machine has it — unless Gemini keeps the chat under another
        # hash's folder: that one (a planted chat's hash filed it under any repository it named: a security tester)
        folder = path.parent.parent.name.lower() if path.parent.name == "chats" else ""
        kept_under = re.fullmatch(r"[0-9a-f]{8,128}", folder) is not None
        transcript.project_hash = digest.lower() if not kept_under or digest.lower().startswith(folder) else folder
    answering: HumanPrompt | None = None
    for message in chat.messages.values():
        record = message.record
        if record.get("type") == "user" and not message.synthetic:
            text = human_text(record)
            if text:
                answering = HumanPrompt(text, message.at)
                transcript.prompts.append(answering)
            elif (problem := malformed(record)) is not None:
                chat.problems.append(f"{message.where}: {problem}")
        elif not isinstance(record.get("type"), str):  # Gemini's types are names: another is a broken record
            chat.problems.append(f"{message.where}: type is {json_kind(record.get('type'))}, not a message type "
                                 "(user, gemini, info …)")
        elif record.get("type") == "gemini":
            model = record.get("model").strip() if isinstance(record.get("model"), str) else None
            transcript.model = transcript.model or model or None
            tokens = record.get("tokens") if isinstance(record.get("tokens"), dict) else {}
            chat.problems.extend(f"{message.where}: tokens.{key} is {value}; the count is left out"
                                 for key, value in tokens.items() if isinstance(value, _LongInteger))
            if answering is not None:
                answering.model = answering.model or model or None
                if tokens:
                    add_tokens(answering, message_tokens(tokens))
    summary = chat.meta.get("summary")
    transcript.title = summary.strip() if isinstance(summary, str) and summary.strip() else None
    return ParseResult(transcripts=[transcript] if transcript.prompts else [], skipped_lines=len(chat.problems),
                       problems=chat.problems, pending_lines=int(pending))
