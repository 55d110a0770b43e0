"""OpenCode (sst/opencode, now anomalyco/opencode) sessions (SPEC §7).

Three ways OpenCode keeps a session, all read with the same rules (shapes from OpenCode's
own source: ``packages/opencode/src/session/message-v2.ts`` for messages and parts,
``session/session.sql.ts`` and ``packages/core/src/session/sql.ts`` for the tables,
``storage/json-migration.ts`` for how the JSON files map onto them, ``session/prompt.ts``
and ``session/revert.ts`` for what a prompt and a revert are, ``cli/cmd/export.ts``):

* the SQLite database (OpenCode ≥ 1.2): ``~/.local/share/opencode/opencode.db`` (other
  channels: ``opencode-<channel>.db``), tables ``session`` (``id, parent_id, directory,
  title, time_created, time_updated, revert`` …), ``message`` (``id, session_id,
  time_created, data``) and ``part`` (``id, message_id, session_id, time_created, data``);
  ``data`` is the JSON of the message or part without its ids. Read-only and ``immutable``
  (:mod:`memo_analytics.index.foreign`): what a running OpenCode has not checkpointed yet
  comes in with a later import;
* the JSON storage of older versions, ``~/.local/share/opencode/storage/``:
  ``session/<projectID>/<sessionID>.json`` (the session), ``message/<sessionID>/<messageID>.json``
  and ``part/<messageID>/<partID>.json``. A session file is the transcript: its messages
  and parts are read from the sibling folders (which the walker does not enter itself);
* ``opencode export <session>`` output: ``{info: session, messages: [{info, parts}]}``.

A message is ``{role, time: {created, completed?}}`` (Unix ms); a ``user`` message also has
``model: {providerID, modelID}``, an ``assistant`` one ``modelID``, ``path: {cwd, root}`` and
``tokens: {input, output, reasoning, cache: {read, write}}``. A **prompt** is a ``user``
message with text parts (``type: "text"``) that are neither ``synthetic`` (OpenCode's own
additions: file contents it attached, "The following tool was executed by the user", the
continuation after a compaction) nor ``ignored``: their texts, joined by blank lines, at the
message's ``time.created`` — OpenCode's own test of a "real" user message. A message of
only synthetic, compaction or subtask parts is not a prompt. A slash command is stored as
OpenCode stored it: its expanded template (the typed ``/name`` is not kept).

Not read as prompts: sub-agent sessions (a ``parentID``: the task tool's brief to another
agent) and, while a revert is pending (``session.revert.messageID``), the messages from that
one on — OpenCode deletes them at the next prompt (an undone revert brings them back, and
the next import revives their turns). Their times still count as activity.

Activity: the session's ``time.created``, every message's ``time.created``/``completed``, and
the ``time`` of parts and tool calls. Tokens: the ``tokens`` of the assistant messages up to
the next prompt, as ``input`` (OpenCode's input excludes cached tokens), ``output``,
``reasoning``, ``cacheRead``, ``cacheWrite``; a message whose counts are all zero (an
aborted one) adds nothing. Model: the first answering message's ``modelID``, else the
prompt's ``model.modelID``. ``project_hint``: the folder name of the session's
``directory``, else of the first assistant ``path.root``. ``title``: the session's, unless
it is OpenCode's default ``New session - <ISO time>``.

OpenCode's credential files (``auth.json``, ``mcp-auth.json``) are never opened; a part or
message that is not JSON, or a prompt without a readable ``time.created``, is named in
``problems``; any other file is not recognised.
"""

from __future__ import annotations

import glob
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .common import HumanPrompt, ImportOptions, ParseResult, Transcript, add_tokens, project_of_folder

SUFFIXES: tuple[str, ...] = (".json", ".db")
#: OpenCode's folders that hold no session file of their own (read through the session, or not at all)
EXCLUDE_DIRS: tuple[str, ...] = ("message", "part", "project", "todo", "permission", "session_diff", "session_share",
                                 "snapshot", "tool-output", "quarantine", "log", "bin", "node_modules")
SOURCE = "opencode"

_CREDENTIALS = {"auth.json", "mcp-auth.json"}
_DEFAULT_TITLE = re.compile(r"^(New|Child) session - \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")


def _ms(value: object) -> datetime | None:
    """Unix milliseconds as aware UTC; None for anything else."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        return None
    try:
        return datetime.fromtimestamp(value / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def _times(value: object) -> list[datetime]:
    """Every instant of a ``time`` object (``created``, ``completed``, ``start``, ``end`` …)."""
    if not isinstance(value, dict):
        return []
    return [stamp for v in value.values() if (stamp := _ms(v)) is not None]


def _text(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


@dataclass
class _Message:
    """What the importer keeps of one message and its parts."""

    id: str
    role: str | None
    at: datetime | None
    stamps: list[datetime]
    model: str | None = None
    tokens: dict[str, int] = field(default_factory=dict)
    folder: str | None = None
    texts: list[tuple[str, str]] = field(default_factory=list)  # (part id, text) of the person's text parts

    def take_part(self, part_id: str, part: dict) -> None:
        self.stamps.extend(_times(part.get("time")))
        state = part.get("state")
        if isinstance(state, dict):
            self.stamps.extend(_times(state.get("time")))
        if (self.role == "user" and part.get("type") == "text" and not part.get("synthetic") and not part.get("ignored")
                and isinstance(part.get("text"), str) and part["text"].strip()):
            self.texts.append((part_id, part["text"].replace("\x00", "").strip()))


def _message(message_id: str, info: dict, created: object = None) -> _Message:
    """The message ``info`` (``created``: the row's ``time_created`` when ``info`` lacks one)."""
    time = info.get("time") if isinstance(info.get("time"), dict) else {}
    at = _ms(time.get("created")) or _ms(created)
    message = _Message(message_id, info.get("role") if isinstance(info.get("role"), str) else None, at,
                       _times(time) + ([at] if at else []))
    if message.role == "user":
        model = info.get("model")
        message.model = _text(model.get("modelID")) if isinstance(model, dict) else None
    elif message.role == "assistant":
        message.model = _text(info.get("modelID"))
        tokens = info.get("tokens") if isinstance(info.get("tokens"), dict) else {}
        cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
        counts = {"input": tokens.get("input"), "output": tokens.get("output"), "reasoning": tokens.get("reasoning"),
                  "cacheRead": cache.get("read"), "cacheWrite": cache.get("write")}
        message.tokens = {k: v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 0}
        if not any(message.tokens.values()):
            message.tokens = {}
        path = info.get("path") if isinstance(info.get("path"), dict) else {}
        message.folder = project_of_folder(path.get("root")) or project_of_folder(path.get("cwd"))
    return message


def session_transcript(session: dict, messages: list[_Message], path: Path, problems: list[str]) -> Transcript | None:
    """One session as a transcript (None for a sub-agent's session or one without a prompt).

    Parameters
    ----------
    session : dict
        The session as OpenCode's JSON has it (``id``, ``parentID``, ``directory``, ``title``,
        ``time``, ``revert``).
    messages : list[_Message]
        Its messages, parts taken in.
    path : Path
        The file it came from.
    problems : list[str]
        Where a prompt left out is named.
    """
    if _text(session.get("parentID")):
        return None
    time = session.get("time") if isinstance(session.get("time"), dict) else {}
    created = _ms(time.get("created"))
    transcript = Transcript(transcript_id=session["id"], source=SOURCE, path=path, ide="opencode", agent="opencode",
                            activity=[created] if created else [])
    revert = session.get("revert") if isinstance(session.get("revert"), dict) else {}
    cut = revert.get("messageID") if isinstance(revert.get("messageID"), str) else None
    reverted = False
    answering: HumanPrompt | None = None
    answered = False
    chosen: dict[int, str | None] = {}
    for message in sorted(messages, key=lambda m: (m.at or datetime.max.replace(tzinfo=timezone.utc), m.id)):
        transcript.activity.extend(message.stamps)
        reverted = reverted or message.id == cut
        if message.role == "user" and message.texts and reverted:
            answering = None  # what answered a reverted prompt is not the earlier prompt's cost
        elif message.role == "user" and message.texts:
            if message.at is None:
                problems.append(f"message {message.id}: no readable time.created; the prompt is left out")
                continue
            answering, answered = HumanPrompt("\n\n".join(text for _, text in sorted(message.texts)), message.at), False
            chosen[id(answering)] = message.model
            transcript.prompts.append(answering)
        elif message.role == "assistant":
            transcript.project_hint = transcript.project_hint or message.folder
            if answering is not None:
                if not answered:
                    answering.model, answered = message.model, True
                if message.tokens:
                    add_tokens(answering, message.tokens)
    for prompt in transcript.prompts:
        prompt.model = prompt.model or chosen.get(id(prompt))
    transcript.project_hint = project_of_folder(session.get("directory")) or transcript.project_hint
    title = _text(session.get("title"))
    transcript.title = title if title and not _DEFAULT_TITLE.match(title) else None
    transcript.model = next((p.model for p in transcript.prompts if p.model), None)
    return transcript if transcript.prompts else None


# ---------------------------------------------------------------- the SQLite database


def _loads(value: object) -> object:
    try:
        return json.loads(value) if isinstance(value, (str, bytes)) else None
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None


def parse_database(path: Path, options: ImportOptions) -> ParseResult:
    """Read an ``opencode.db``: every session of its ``session``, ``message`` and ``part`` tables.

    Raises
    ------
    OSError
        The file cannot be opened, or it breaks off while being read.
    """
    from ...index import foreign

    problems: list[str] = []
    try:
        with foreign.open_readonly(path) as conn:
            tables = foreign.table_columns(conn, {"session", "message", "part"})
            needed = {"session": {"id"}, "message": {"id", "session_id", "data"}, "part": {"id", "message_id", "data"}}
            if any(not columns <= tables.get(name, set()) for name, columns in needed.items()):
                return ParseResult(recognised=False, why="a Cursor state database: import it with `memo import cursor`"
                                   if "cursorDiskKV" in foreign.table_names(conn) else
                                   "a SQLite database without OpenCode's session, message and part tables")
            sessions = []
            for row in foreign.opencode_rows(conn, "session", tables["session"]):
                revert = _loads(row.get("revert"))
                sessions.append({"id": row["id"], "parentID": row.get("parent_id"), "title": row.get("title"),
                                 "directory": row.get("directory"), "time": {"created": row.get("time_created")},
                                 "revert": revert if isinstance(revert, dict) else None})
            messages: dict[str, _Message] = {}
            owner: dict[str, str] = {}
            for row in foreign.opencode_rows(conn, "message", tables["message"]):
                info = _loads(row["data"])
                if not isinstance(info, dict):
                    problems.append(f"message {row['id']}: its data is not a JSON object")
                    continue
                messages[row["id"]] = _message(row["id"], info, row.get("time_created"))
                owner[row["id"]] = row["session_id"]
            for row in foreign.opencode_rows(conn, "part", tables["part"]):
                message = messages.get(row["message_id"])
                if message is None:
                    continue
                part = _loads(row["data"])
                if not isinstance(part, dict):
                    problems.append(f"part {row['id']}: its data is not a JSON object")
                    continue
                message.take_part(row["id"], part)
    except foreign.NotADatabaseError as exc:
        return ParseResult(recognised=False, why=str(exc))
    by_session: dict[str, list[_Message]] = {}
    for message_id, message in messages.items():
        by_session.setdefault(owner[message_id], []).append(message)
    transcripts = [t for session in sessions if isinstance(session["id"], str)
                   if (t := session_transcript(session, by_session.get(session["id"], []), path, problems))]
    return ParseResult(transcripts=transcripts, problems=problems, skipped_lines=len(problems))


# ---------------------------------------------------------------- JSON: storage files and `opencode export`


def _read_json(path: Path) -> object:
    """A JSON document; raises ValueError (not JSON, too deep) or UnicodeDecodeError."""
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except RecursionError:
        raise ValueError("nested too deep to parse") from None


def _is_session(value: object) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("id"), str) and value["id"].startswith("ses_")
            and isinstance(value.get("time"), dict))


def _stored_messages(root: Path, session_id: str, problems: list[str]) -> list[_Message]:
    """The messages of ``session_id`` under a storage folder, with their parts."""
    messages = []
    folder = root / "message" / session_id
    for file in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        info = _json_object(file)
        if info is None:
            problems.append(f"message/{session_id}/{file.name}: not a JSON object")
            continue
        message = _message(file.stem, info)
        parts = root / "part" / file.stem
        for part_file in sorted(parts.glob("*.json")) if parts.is_dir() else ():
            part = _json_object(part_file)
            if part is None:
                problems.append(f"part/{file.stem}/{part_file.name}: not a JSON object")
                continue
            message.take_part(part_file.stem, part)
        messages.append(message)
    return messages


def storage_files(path: Path) -> list[Path]:
    """The files a storage session file (``storage/session/<project>/ses_….json``) is read with:
    its message files and their part files, for a watcher's notion of "changed"; empty for
    any other file."""
    if path.suffix != ".json" or path.parent.parent.name != "session" or not path.stem.startswith("ses_"):
        return []
    root = path.parent.parent.parent
    messages = sorted((root / "message" / path.stem).glob("*.json"))
    return messages + [part for message in messages for part in sorted((root / "part" / message.stem).glob("*.json"))]


def session_of(path: Path) -> Path | None:
    """The storage session file a message file (``message/<session>/<message>.json``) or part
    file (``part/<message>/<part>.json``) belongs to, or None (not such a file, or no session
    file for it yet)."""
    if path.suffix != ".json" or path.parent.parent.name not in ("message", "part"):
        return None
    root, session_id = path.parent.parent.parent, path.parent.name
    if path.parent.parent.name == "part":
        owner = next((root / "message").glob(f"*/{glob.escape(path.parent.name)}.json"), None)
        if owner is None:
            return None
        session_id = owner.parent.name
    return next((root / "session").glob(f"*/{glob.escape(session_id)}.json"), None)


def _json_object(file: Path) -> dict | None:
    """The JSON object a storage file holds, or None (unreadable, not JSON, not an object)."""
    try:
        value = _read_json(file)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _exported_messages(document: dict, problems: list[str]) -> list[_Message]:
    messages = []
    for number, entry in enumerate(document.get("messages") or (), 1):
        info = entry.get("info") if isinstance(entry, dict) else None
        if not isinstance(info, dict) or not isinstance(info.get("id"), str):
            problems.append(f"message {number}: not an OpenCode message (no info.id)")
            continue
        message = _message(info["id"], info)
        for part in entry.get("parts") or ():
            if isinstance(part, dict):
                message.take_part(part["id"] if isinstance(part.get("id"), str) else "", part)
        messages.append(message)
    return messages


def _looks_like(value: object) -> str:
    if isinstance(value, dict):
        if "sessionId" in value and "projectHash" in value:
            return "a Gemini CLI chat: import it with `memo import gemini`"
        if isinstance(value.get("role"), str) and isinstance(value.get("time"), dict):
            return "an OpenCode message file: it is read with its session (storage/session/…)"
    return "neither an OpenCode session (storage/session/<project>/ses_….json) nor an `opencode export` document"


def parse_json(path: Path, options: ImportOptions) -> ParseResult:
    """Read a JSON session file of OpenCode's storage, or an ``opencode export`` document.

    Raises
    ------
    OSError
        The file cannot be read.
    ValueError
        A session file of the storage is not a complete JSON document (cut off while written).
    """
    if path.name in _CREDENTIALS:
        return ParseResult()  # OpenCode's own, holding API keys: never opened
    try:
        document = _read_json(path)
    except (ValueError, UnicodeDecodeError) as exc:
        if path.stem.startswith("ses_") and path.parent.parent.name == "session":  # OpenCode's, cut off while written
            raise ValueError(f"not a complete JSON document ({str(exc)[:80]})") from None
        return ParseResult(recognised=False, why=f"not a JSON document ({str(exc)[:80]})")
    problems: list[str] = []
    if isinstance(document, dict) and _is_session(document.get("info")) and isinstance(document.get("messages"), list):
        session, messages = document["info"], _exported_messages(document, problems)
    elif _is_session(document):
        session = document
        if path.parent.parent.name != "session":
            return ParseResult(problems=[f"an OpenCode session file outside its storage folder: its messages "
                                         f"(storage/message/{document['id']}/) are not beside it"], skipped_lines=1)
        messages = _stored_messages(path.parent.parent.parent, session["id"], problems)
    else:
        return ParseResult(recognised=False, why=_looks_like(document))
    transcript = session_transcript(session, messages, path, problems)
    return ParseResult(transcripts=[transcript] if transcript else [], problems=problems, skipped_lines=len(problems))


def parse(path: Path, options: ImportOptions) -> ParseResult:
    """Read one OpenCode file: ``opencode.db``, a storage session ``.json`` or an export.

    Parameters
    ----------
    path : Path
        The file.
    options : ImportOptions
        Unused: OpenCode's times are Unix milliseconds.

    Returns
    -------
    ParseResult
        One transcript per session with a prompt (the module docstring says which); each
        message or part left out is named in ``problems``; ``recognised`` False, with
        ``why``, for a file that is not OpenCode's.

    Raises
    ------
    OSError
        The file cannot be read.
    """
    if path.suffix.lower() == ".db":
        return parse_database(path, options)
    return parse_json(path, options)
