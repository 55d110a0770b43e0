"""Cursor chats: the global ``state.vscdb`` and "Export Chat" Markdown (SPEC §7).

``state.vscdb`` (``~/.config/Cursor/User/globalStorage/`` on Linux,
``~/Library/Application Support/Cursor/User/globalStorage/`` on macOS,
``%APPDATA%\\Cursor\\User\\globalStorage\\`` on Windows) is a SQLite database of two
key/value tables, ``ItemTable`` and ``cursorDiskKV`` (``key TEXT UNIQUE, value BLOB``).
Cursor itself documents none of it; the shapes below are those the public readers of it
agree on — michaeldhood/chatrxiv ``docs/cursor/storage-reference.md`` (composerData
``_v`` 10, bubbles ``_v`` 3, Dec 2025), DavidBerdik/cursor-view
(``sources/composer_data.py``, ``sources/bubbles.py``, ``timestamps.py``,
``projects/workspace_identifier.py``), Dicklesworthstone/coding_agent_session_search
(``src/connectors/cursor.rs``) and pppp606/cursor-efficiency ``docs/vscdbRelation.md``:

* ``composerData:<composerId>``: one conversation — ``composerId``, ``name`` (its title),
  ``createdAt``/``lastUpdatedAt`` (Unix ms), ``modelConfig.modelName``,
  ``workspaceIdentifier`` (``{id, uri: {fsPath, path, …}}``) and
  ``fullConversationHeadersOnly: [{bubbleId, type}]`` in turn order (``type`` 1 = the
  person, 2 = the assistant); older versions keep the messages inline in ``conversation``;
* ``bubbleId:<composerId>:<bubbleId>``: one message — ``type``, ``text`` (``richText``: the
  editor's Lexical JSON of it), ``createdAt`` (an ISO string; older bubbles: Unix ms or
  none), ``timingInfo`` (``clientRpcSendTime``, ``clientSettleTime``, ``clientEndTime``:
  Unix ms; ``clientStartTime`` is a performance-clock reading, not a date),
  ``tokenCount: {inputTokens, outputTokens}``, ``modelInfo.modelName``, ``workspaceUris``.

**Only those two key prefixes are read** (:func:`~memo_analytics.index.foreign.cursor_chat_rows`:
``WHERE key LIKE 'composerData:%' OR key LIKE 'bubbleId:%'``, exact-case): the same file
keeps Cursor's sign-in tokens (``cursorAuth/…``) and other extensions' data, which memo
never selects. The file is opened read-only and ``immutable`` (a running Cursor's WAL is left
alone: what it has not checkpointed yet comes in with a later import).

One transcript per composer with at least one prompt, id = the ``composerId`` (the
``conversation_id`` of Cursor's hooks: an import supersedes the session a hook captured).
The bubbles are read in the order of ``fullConversationHeadersOnly`` (a bubble row it does
not list is an abandoned draft or an edited-away message: not read), else of the inline
``conversation``. A prompt is a ``type`` 1 bubble with text (``text``, else the text of its
``richText``); ``type`` 2 bubbles are the assistant's. Not read at all: sub-agent composers
(``task-…`` ids, a ``subagentInfo``) and best-of-N copies (``isBestOfNSubcomposer``) — they
hold an agent's brief or a copy of the parent's prompt, not a second one.

Time: a prompt's time is its bubble's ``createdAt`` (None without: it goes with the work
before it). Activity: the composer's ``createdAt``, every bubble's ``createdAt`` and
``timingInfo`` instants; ``lastUpdatedAt`` only when no bubble has a time (Cursor bumps it
when a chat is merely opened). Tokens: the ``tokenCount`` of the prompt's bubble and of the
assistant bubbles up to the next prompt, summed as ``input``/``output`` (Cursor does not
split cached input out; counts that are all zero — most bubbles — are not kept). Model: the
first ``modelInfo.modelName`` among those bubbles (``default``/``auto`` are not models);
the transcript's is ``modelConfig.modelName``, else the first prompt's. ``project_hint``:
the folder name of the first bubble's ``workspaceUris`` entry, else of the composer's
``workspaceIdentifier.uri``, else None. ``title``: ``name``.

Each row that is not JSON (or not an object), a bubble with an unreadable or out-of-range
``createdAt`` (left out), a user bubble the headers name but the database lacks, a user
bubble without text whose ``text`` or ``richText`` is not text (or whose ``richText`` is text but not
the editor's JSON state), a
``fullConversationHeadersOnly`` or ``conversation`` that is not a list and an entry of
either that is not a bubble are named in ``problems``. A SQLite file without ``cursorDiskKV`` is not Cursor's; a workspace
``state.vscdb`` (whose ``cursorDiskKV`` is empty) yields nothing.

``.md`` files are read as Cursor's "Export Chat" Markdown by :mod:`.cursor_export`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ...domain.clock import EARLIEST_RECORD, LATEST_RECORD, parse_record_instant
from ...domain.errors import InvalidDateError
from .common import HumanPrompt, ImportOptions, ParseResult, Transcript, add_tokens, json_kind, project_of_folder
from .cursor_export import parse_export

SUFFIXES: tuple[str, ...] = (".vscdb", ".md")
EXCLUDE_DIRS: tuple[str, ...] = ()
SOURCE = "cursor"

_NOT_MODELS = {"default", "auto", ""}
_TIMING_KEYS = ("clientRpcSendTime", "clientSettleTime", "clientEndTime")
_USER = 1
#: What is kept of a composer row (the rest — file snapshots, code-block state, the draft in the
#: input box — is dropped as soon as the row is read).
_COMPOSER_KEYS = ("name", "createdAt", "lastUpdatedAt", "modelConfig", "workspaceIdentifier",
                  "fullConversationHeadersOnly", "conversation", "subagentInfo", "isBestOfNSubcomposer")


def instant(value: object, zone: tzinfo | None) -> datetime | None:
    """A Cursor time as aware UTC: Unix ms (or s, below 1e11) as a number, else an ISO string;
    None when absent.

    Raises
    ------
    InvalidDateError
        A string that is not ISO 8601, or an instant outside 1970 … 9000 (as every record's).
    """
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            at = datetime.fromtimestamp(value / 1000 if abs(value) > 1e11 else value, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise InvalidDateError("createdAt", value) from None
        if not EARLIEST_RECORD <= at < LATEST_RECORD:
            raise InvalidDateError("createdAt", value)
        return at
    return parse_record_instant(value, "createdAt", zone)


def rich_text(value: object) -> str:
    """The plain text of a ``richText`` (the Lexical editor's JSON state, as a string):
    the ``text`` of its leaves, one line per top-level block; ``""`` when it holds none."""
    try:
        state = json.loads(value) if isinstance(value, str) else None
    except (ValueError, RecursionError):
        return ""
    root = state.get("root") if isinstance(state, dict) else None

    def leaves(node: object) -> str:
        if not isinstance(node, dict):
            return ""
        own = node.get("text") if isinstance(node.get("text"), str) else ""
        children = node.get("children")
        return own + "".join(leaves(child) for child in children) if isinstance(children, list) else own

    blocks = root.get("children") if isinstance(root, dict) else None
    return "\n".join(leaves(block) for block in blocks).strip() if isinstance(blocks, list) else ""


def _unreadable_rich_text(value: object) -> str | None:
    """Why a ``richText`` that is text gave none: it is not the editor's JSON state; None when
    it is (then it simply holds no text) or when it is no text at all."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        json.loads(value)
    except (ValueError, RecursionError):
        return "richText is not the editor's JSON state"
    return None


def _model(value: object) -> str | None:
    name = value.get("modelName") if isinstance(value, dict) else None
    return name.strip() if isinstance(name, str) and name.strip().lower() not in _NOT_MODELS else None


def _uri_folder(value: object) -> str | None:
    """The folder name of a workspace URI (``file:///home/ana/shop-api``, a ``vscode-remote://``
    URI, or a ``{fsPath, path, external}`` object)."""
    if isinstance(value, dict):
        value = next((value[k] for k in ("fsPath", "path", "external", "_formatted")
                      if isinstance(value.get(k), str) and value[k]), None)
    if not isinstance(value, str) or not value.strip():
        return None
    if "://" in value:
        value = unquote(urlsplit(value).path)
    return project_of_folder(value.rstrip("/\\"))


@dataclass
class _Bubble:
    """What the importer keeps of one bubble (the rest of its JSON is dropped at once)."""

    kind: int | None
    text: str
    at: datetime | None
    stamps: list[datetime]
    tokens: dict[str, int]
    model: str | None
    folder: str | None
    #: why a bubble that may be the person's has no text although it has a ``text`` or
    #: ``richText`` (of the wrong type); None when it is simply empty
    malformed: str | None = None


def _bubble(record: dict, zone: tzinfo | None) -> _Bubble:
    """Keep what a bubble says; raises InvalidDateError on an unreadable ``createdAt``."""
    at = instant(record.get("createdAt"), zone)
    stamps = [at] if at else []
    timing = record.get("timingInfo")
    for key in _TIMING_KEYS:
        value = timing.get(key) if isinstance(timing, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 1e11:
            try:
                stamps.append(instant(value, zone))
            except InvalidDateError:
                pass
    kind = record.get("type") if isinstance(record.get("type"), int) else None
    text, malformed = "", None
    if kind in (_USER, None):  # a bubble without a type is the person's when its header says so
        text = record.get("text") if isinstance(record.get("text"), str) else ""
        text = (text.strip() or rich_text(record.get("richText"))).replace("\x00", "").strip()
        malformed = None if text else next((f"{key} is {json_kind(record[key])}, not text" for key in ("text", "richText")
                                            if record.get(key) is not None and not isinstance(record[key], str)),
                                           _unreadable_rich_text(record.get("richText")))
    counts = record.get("tokenCount")
    tokens = {}
    if isinstance(counts, dict):
        for key, name in (("inputTokens", "input"), ("outputTokens", "output")):
            value = counts.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                tokens[name] = value
    uris = record.get("workspaceUris")
    folder = next((f for f in map(_uri_folder, uris) if f), None) if isinstance(uris, list) else None
    return _Bubble(kind, text, at, stamps, tokens if any(tokens.values()) else {}, _model(record.get("modelInfo")),
                   folder, malformed)


@dataclass
class _Database:
    """The composers and bubbles of one ``state.vscdb``, and each row left out."""

    zone: tzinfo | None
    composers: dict[str, dict] = field(default_factory=dict)
    bubbles: dict[tuple[str, str], _Bubble] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    #: the bubbles whose row is left out, already named in ``problems`` (not "missing" again)
    left_out: set[tuple[str, str]] = field(default_factory=set)

    def take(self, key: str, value: object) -> None:
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                self.row_problem(key, "not UTF-8 text")
                return
        try:
            record = json.loads(value) if isinstance(value, str) else None
            problem = "not JSON" if record is None else "not a JSON object"
        except (ValueError, RecursionError):
            record, problem = None, "not JSON"
        if not isinstance(record, dict):
            self.row_problem(key, problem)
            return
        if key.startswith("composerData:"):
            self.composers[key.removeprefix("composerData:")] = {k: record[k] for k in _COMPOSER_KEYS if k in record}
            return
        composer, _, bubble = key.removeprefix("bubbleId:").partition(":")
        try:
            self.bubbles[(composer, bubble)] = _bubble(record, self.zone)
        except InvalidDateError:
            self.row_problem(key, f"unreadable or out-of-range createdAt {str(record.get('createdAt'))[:40]!r} "
                                  "(a record's instant lies in 1970–9000); the bubble is left out")

    def row_problem(self, key: str, problem: str) -> None:
        self.problems.append(f"row {key[:120]}: {problem}")
        if key.startswith("bubbleId:"):
            composer, _, bubble = key.removeprefix("bubbleId:").partition(":")
            self.left_out.add((composer, bubble))


def _is_copy(composer_id: str, composer: dict) -> bool:
    """A sub-agent's composer or a best-of-N copy: not the person's conversation."""
    return (composer_id.startswith("task-") or bool(composer.get("subagentInfo"))
            or composer.get("isBestOfNSubcomposer") is True)


def _conversation(composer_id: str, composer: dict, db: _Database) -> list[tuple[str, int | None, _Bubble | None]]:
    """``(bubble id, header type, bubble)`` in turn order (bubble None: its row is missing)."""
    where = f"row composerData:{composer_id}"
    headers = composer.get("fullConversationHeadersOnly")
    if isinstance(headers, list) and headers:
        found = []
        for number, header in enumerate(headers, 1):
            if isinstance(header, dict) and isinstance(header.get("bubbleId"), str):
                found.append((header["bubbleId"], header.get("type") if isinstance(header.get("type"), int) else None,
                              db.bubbles.get((composer_id, header["bubbleId"]))))
            else:
                db.problems.append(f"{where}: fullConversationHeadersOnly entry {number} is not a header with a "
                                   "bubbleId; its bubble is left out")
        return found
    inline = composer.get("conversation")
    for key, value in (("fullConversationHeadersOnly", headers), ("conversation", inline)):
        if value is not None and not isinstance(value, list):
            db.problems.append(f"{where}: {key} is {json_kind(value)}, not a list; the conversation is left out")
            return []
    found = []
    for number, record in enumerate(inline or (), 1):
        if not isinstance(record, dict):
            db.problems.append(f"{where}: conversation entry {number} is {json_kind(record)}, not a bubble; "
                               "it is left out")
            continue
        try:
            found.append((str(record.get("bubbleId") or number), None, _bubble(record, db.zone)))
        except InvalidDateError:
            db.problems.append(f"row composerData:{composer_id}: conversation entry {number}: unreadable createdAt")
    return found


def _transcript(composer_id: str, composer: dict, db: _Database, path: Path) -> Transcript | None:
    if _is_copy(composer_id, composer):
        return None
    transcript = Transcript(transcript_id=composer_id, source=SOURCE, path=path, ide="cursor", agent="cursor")
    answering: HumanPrompt | None = None
    timed = False
    for bubble_id, header_type, bubble in _conversation(composer_id, composer, db):
        if bubble is None:
            if header_type == _USER and (composer_id, bubble_id) not in db.left_out:
                db.problems.append(f"composer {composer_id}: user bubble {bubble_id} has no bubbleId row; "
                                   "its prompt is left out")
            continue
        transcript.activity.extend(bubble.stamps)
        timed = timed or bool(bubble.stamps)
        transcript.project_hint = transcript.project_hint or bubble.folder
        kind = bubble.kind if bubble.kind is not None else header_type
        if kind == _USER and not bubble.text and bubble.malformed:
            db.problems.append(f"composer {composer_id}: user bubble {bubble_id}: {bubble.malformed}; "
                               "its prompt is left out")
        if kind == _USER and bubble.text:
            answering = HumanPrompt(bubble.text, bubble.at, model=bubble.model)
            transcript.prompts.append(answering)
        elif answering is not None:
            answering.model = answering.model or bubble.model
        else:
            continue
        if bubble.tokens:
            add_tokens(answering, bubble.tokens)
    for key in ("createdAt",) + (() if timed else ("lastUpdatedAt",)):
        try:
            stamp = instant(composer.get(key), db.zone)
        except InvalidDateError:
            db.problems.append(f"row composerData:{composer_id}: unreadable {key} {str(composer.get(key))[:40]!r}")
            continue
        if stamp is not None:
            transcript.activity.append(stamp)
    identifier = composer.get("workspaceIdentifier")
    transcript.project_hint = transcript.project_hint or (
        _uri_folder(identifier.get("uri")) if isinstance(identifier, dict) else None)
    name = composer.get("name")
    transcript.title = name.strip() if isinstance(name, str) and name.strip() else None
    transcript.model = _model(composer.get("modelConfig")) or next((p.model for p in transcript.prompts if p.model),
                                                                    None)
    return transcript if transcript.prompts else None


def _other_database(tables: set[str]) -> str:
    if {"session", "message", "part"} <= tables:
        return "an OpenCode database: import it with `memo import opencode`"
    if "ItemTable" in tables:
        return "a VS Code state database without Cursor's cursorDiskKV table"
    return "a SQLite database without Cursor's cursorDiskKV table"


def parse_database(path: Path, options: ImportOptions) -> ParseResult:
    """Read Cursor's ``state.vscdb`` (only its ``composerData:`` and ``bubbleId:`` rows).

    Parameters
    ----------
    path : Path
        A ``state.vscdb`` (the global one holds the chats).
    options : ImportOptions
        ``options.zone`` reads an ISO ``createdAt`` without an offset (None: UTC).

    Returns
    -------
    ParseResult
        One transcript per composer with a prompt (the module docstring says which);
        ``recognised`` False for a file that is not SQLite or has no ``cursorDiskKV`` table.

    Raises
    ------
    OSError
        The file cannot be opened, or it breaks off while being read.
    """
    from ...index import foreign

    db = _Database(zone=options.zone)
    try:
        with foreign.open_readonly(path) as conn:
            tables = foreign.table_names(conn)
            if "cursorDiskKV" not in tables:
                return ParseResult(recognised=False, why=_other_database(tables))
            for key, value in foreign.cursor_chat_rows(conn):
                db.take(key, value)
    except foreign.NotADatabaseError as exc:
        return ParseResult(recognised=False, why=str(exc))
    transcripts = [t for cid, composer in db.composers.items() if (t := _transcript(cid, composer, db, path))]
    return ParseResult(transcripts=transcripts, skipped_lines=len(db.problems), problems=db.problems)


def parse(path: Path, options: ImportOptions) -> ParseResult:
    """Read one Cursor file: a ``state.vscdb`` (:func:`parse_database`) or an exported chat
    (``.md``, :func:`~.cursor_export.parse_export`).

    Parameters
    ----------
    path : Path
        The file.
    options : ImportOptions
        ``options.zone`` reads times without an offset (None: UTC).

    Returns
    -------
    ParseResult
        See :func:`parse_database` and :func:`~.cursor_export.parse_export`.

    Raises
    ------
    OSError
        The file cannot be read.
    """
    if path.suffix.lower() == ".md":
        return parse_export(path, options, SOURCE)
    return parse_database(path, options)
