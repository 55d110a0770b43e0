"""What every importer shares (SPEC §7).

A parser turns one file into zero or more :class:`Transcript` values (one per
conversation it holds). :func:`import_transcripts` splits each transcript into work
intervals at pauses longer than the idle gap and writes every interval as a session and
every human prompt as a turn through the same service functions as the MCP tool
(``start_session``, ``record_prompt``, ``end_session``), so redaction, validation, the
vault lock and the index are the same.

Idempotency: session and turn ids are deterministic (``{source}-{transcriptId}-{n}`` and
``prompt-{sessionId}-t{turn}``); a turn whose file exists is left untouched (and indexed
from that file when the index lacks it: an import killed between a rename and its index
update), and a session whose transcript grew has its end moved to the new last activity.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import re
import sqlite3
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterable, Iterator

from ...config import MAX_BODY_BYTES
from ...domain.clock import from_iso, minutes_between, to_iso
from ...domain.errors import CorruptRecordError, InvalidFieldError, MemoError, VaultBusyError
from ...domain.ids import project_slug, session_record_id, slugify, validate_slug
from ...domain.records import RecordKind
from ...domain.wire import counted, valid_text
from ...index import store as index
from ...vault.io import open_regular
from ...vault.ledger import invoiced_in
from ...vault.redact import redact_secrets, warm as warm_redaction
from ..describe import session_description
from ..pricing import plausible_tokens
from ..pricing import PriceCache, stored_turn_cost
from ..prompts import body_refusal, clean_client, fit_body, record_prompt, stored_summary, without_nul
from ..requests import EndSessionRequest, RecordPromptRequest, StartSessionRequest
from ..sessions import end_session, record_whole_session, start_session
from ..store import VaultStore, project_of_folder
from .lines import is_replacement_note

_UTC = timezone.utc
_EPOCH = datetime(1970, 1, 1, tzinfo=_UTC)


@dataclass
class HumanPrompt:
    """One thing the person typed, with when they typed it (aware UTC, or None if unknown).

    ``tokens``: what answering it cost, as the agent logged it — ``input`` (not cached),
    ``output``, ``cacheRead``, ``cacheWrite`` (and ``cacheWrite5m``/``cacheWrite1h`` by tier;
    Codex: ``reasoning``), summed over every model call until the next prompt; ``model``: the
    model that answered. None when the transcript does not say.
    """

    text: str
    at: datetime | None
    tokens: dict[str, int] | None = None
    model: str | None = None
    #: ``at`` is not the line's own (it carried none): the time of the next line that had one (its answer)
    estimated: bool = False
    #: the same counts split by the model that spent them, when more than one model answered
    #: (a main model and a small one for titles or sub-tasks): each part is priced at its own model
    tokens_by_model: dict[str, dict[str, int]] | None = None
    #: the model calls made before it that its ``tokens`` count (``(usage, model)``: a transcript's
    #: answers before its first prompt) — a file cut from the top starts with the answers of a
    #: turn the vault holds, which counts them already
    answered_before: list[tuple[dict[str, int], str | None]] = field(default_factory=list)


#: How each agent's transcript opens: ``(source, what it is called, test of its first JSON record)``.
_FORMATS: tuple[tuple[str, str, Callable[[dict], bool]], ...] = (
    ("codex", "a Codex rollout", lambda first: first.get("type") == "session_meta"),
    ("gemini", "a Gemini CLI chat", lambda first: "projectHash" in first),
    ("copilot", "a Copilot CLI session", lambda first: isinstance(first.get("type"), str) and "." in first["type"]
     and isinstance(first.get("data"), dict)),
    ("claude-code", "a Claude Code transcript", lambda first: bool({"uuid", "message", "leafUuid", "sessionId"}
                                                                   & first.keys())
     or first.get("type") in ("summary", "file-history-snapshot", "queue-operation")),
)


def format_of(first: object, own: str = "") -> tuple[str, str] | None:
    """``(source, what it is called)`` of the agent whose transcript opens with the JSON record
    ``first`` (other than ``own``), or None when it is none memo knows."""
    if not isinstance(first, dict):
        return None
    return next(((source, name) for source, name, matches in _FORMATS if source != own and matches(first)), None)


def other_format(first: object, own: str) -> str | None:
    """Which other agent's transcript a file is, by its first JSON record — ``"a Codex rollout:
    import it with `memo import codex`"`` — or None when it is none memo knows (or ``own``'s)."""
    found = format_of(first, own)
    return None if found is None else f"{found[1]}: import it with `memo import {found[0]}`"


def json_kind(value: object) -> str:
    """What a JSON value is, for a problem that names a field of the wrong type: ``"text"``,
    ``"a number"``, ``"true or false"``, ``"null"``, ``"a list"`` or ``"an object"``."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if value is None:
        return "null"
    return "a list" if isinstance(value, list) else "an object"


def take_working_folder(transcript: "Transcript", path: object) -> None:
    """The first working folder a transcript names gives its project (:func:`project_of_folder`)
    and, where the folder is inside a git repository on this machine, its ``owner``: the
    repository's git identity, as a hook or an agent's ``session_start`` records it — so an
    imported session is its person's too (one person's parallel sessions bill once, two
    people's each in full). Later folders change nothing."""
    if transcript.project_hint is not None:
        return
    transcript.project_hint = project_of_folder(path)
    transcript.folder = path if isinstance(path, str) and path.startswith("/") and "\x00" not in path else None
    if isinstance(path, str) and path.startswith("/") and "\x00" not in path:
        from ..store import git_identity, repository_root

        try:
            root = repository_root(path) if os.path.isdir(path) else None
        except (OSError, ValueError, MemoError):
            root = None
        if root is not None:
            transcript.owner = git_identity(root)  # asked of git once per repository


def add_tokens(prompt: HumanPrompt, usage: dict[str, int], model: str | None = None) -> None:
    """Add one model call's ``usage`` (the keys of :class:`HumanPrompt` ``tokens``) to ``prompt``;
    with ``model``, also to that model's part (``tokens_by_model``)."""
    counts = {k: v for k, v in usage.items() if plausible_tokens(v)}  # a hostile 10**30 counts nothing
    total = dict(prompt.tokens or {})
    for key, value in counts.items():
        total[key] = total.get(key, 0) + value
    prompt.tokens = total or None
    if model and counts:
        parts = prompt.tokens_by_model if prompt.tokens_by_model is not None else {}
        part = parts.setdefault(model, {})
        for key, value in counts.items():
            part[key] = part.get(key, 0) + value
        prompt.tokens_by_model = parts


@dataclass
class Transcript:
    """One conversation read from a transcript file.

    Attributes
    ----------
    transcript_id : str
        The tool's own id of the conversation (a session uuid ...), else derived from the path.
    source : str
        ``claude-code``, ``specstory``, ``codex``, ``gemini``, ``copilot``, ``cursor`` or ``opencode``.
    prompts : list[HumanPrompt]
        The person's prompts in order.
    activity : list[datetime]
        Every timestamp seen in the transcript (human, agent, tool), aware UTC; used to find
        work intervals and their start and end.
    project_hint : str | None
        The working folder or project folder the transcript names.
    owner : str | None
        The git identity of the repository of its working folder, where that is on this
        machine (:func:`take_working_folder`); the sessions' ``owner``.
    ide, model, agent : str | None
        What the transcript says about its host and model.
    path : Path
        The file it came from.
    """

    transcript_id: str
    source: str
    path: Path
    prompts: list[HumanPrompt] = field(default_factory=list)
    activity: list[datetime] = field(default_factory=list)
    project_hint: str | None = None
    owner: str | None = None
    ide: str | None = None
    model: str | None = None
    agent: str | None = None
    title: str | None = None
    #: the git branch and commit the transcript says the work was on (Claude Code's
    #: ``gitBranch``, a Codex rollout's ``session_meta.git``), else None
    branch: str | None = None
    git_sha: str | None = None
    #: the first working folder it names (absolute), as :func:`take_working_folder` took it, else None
    folder: str | None = None
    #: a hash of its project's folder, where the transcript names only that (a Gemini chat's
    #: ``projectHash``: SHA-256 of the folder's path), else None
    project_hash: str | None = None
    #: the problems of lines of its file that were left out (not UTF-8, not JSON …): turns after
    #: such a line may stand at other numbers than an earlier read of the file gave them
    lines_left_out: list[str] = field(default_factory=list)


def take_git(transcript: Transcript, branch: object, sha: object = None) -> None:
    """Note the first git branch (and commit) a transcript names: one line of text that does not
    start with ``-`` (git refuses such a name; printed in a command it reads as an option), a
    commit a hex id; anything else is not taken."""
    if transcript.branch is None and isinstance(branch, str) and branch.strip() and branch.strip().isprintable() \
            and len(branch.strip()) <= 255 and not branch.strip().startswith("-"):
        transcript.branch = branch.strip()
    if transcript.git_sha is None and isinstance(sha, str) and re.fullmatch(r"[0-9a-fA-F]{7,64}", sha.strip()):
        transcript.git_sha = sha.strip().lower()


@dataclass
class ParseResult:
    """What a parser got from one file: transcripts, the number of bad lines skipped and, for
    each, why (``problems``: ``line N: reason``); ``recognised`` False when the file is not
    this importer's format at all (``why`` says what it looks like instead)."""

    transcripts: list[Transcript] = field(default_factory=list)
    skipped_lines: int = 0
    problems: list[str] = field(default_factory=list)
    recognised: bool = True
    why: str | None = None
    #: a last line with no newline that is not JSON yet: half a line an agent is writing now (not a
    #: bad line; the file's next read takes it in once it is finished)
    pending_lines: int = 0


@dataclass
class MarkdownTurn:
    """One turn of a Markdown transcript (SpecStory, Cursor's "Export Chat"): who spoke (``user``
    or ``agent``), when and with which model when the header says, and its lines."""

    role: str
    at: datetime | None = None
    model: str | None = None
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The turn's text without the trailing blank lines and ``---`` separator."""
        lines = list(self.lines)
        while lines and lines[-1].strip() in ("", "---"):
            lines.pop()
        return "\n".join(lines).strip()


@dataclass
class ImportOptions:
    """Options of ``memo import`` (SPEC §7)."""

    project: str | None = None
    client: str | None = None
    billable: bool | None = None
    idle_gap: timedelta = timedelta(minutes=30)
    zone: tzinfo | None = None  # zone of timestamps without an offset (None: UTC)
    #: whether the person asked for ``idle_gap`` (``--idle-gap``): when not (the config's, the
    #: default), a transcript imported before under another gap keeps its own
    idle_gap_given: bool = False

    def __post_init__(self) -> None:
        """A client and a project given are checked before any file is read (a blank client read
        as none, billing the work to ``internal``; a bad one was said per conversation as
        "skipped" — and ``memo watch --once`` then took the files as imported, exit 0).

        Raises
        ------
        InvalidFieldError
            ``client``: empty, a control character, too long; ``project``: not a project id."""
        if self.project is not None:
            validate_slug(self.project, "project")
        if self.client is not None:
            if not self.client.strip():
                raise InvalidFieldError("client", "is empty: give a value, or leave the option out")
            self.client = clean_client(self.client)


@dataclass
class ImportResult:
    """The one-line summary: files, sessions, turns (new), skipped, and ``reindexed``:
    sessions and turns whose files were already there but missing from the index."""

    files: int = 0
    sessions: int = 0
    turns: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    reindexed: int = 0
    #: files of the importer's format, and files that are not (named in ``errors``)
    recognised: int = 0
    unrecognised: int = 0
    #: records a hook captured live that this import superseded (the transcript is the truth), and
    #: turns a rewound transcript no longer holds
    superseded: int = 0
    #: turns whose text the transcript changed (rewound, then something else typed there)
    revised: int = 0
    #: turns marked rewound that the transcript holds again as they were (a file cut short, put back)
    restored: int = 0
    #: files not read: unchanged since the last import took them in whole (counted in ``files``)
    unchanged: int = 0
    #: files that grew since the last import, read on from where it stopped (counted in ``files``)
    resumed: int = 0
    #: of ``superseded``, the imported turns the transcript no longer holds (rewound, or cut short)
    rewound: int = 0
    #: of ``superseded``, records of a SpecStory export whose agent's own transcript is imported
    #: too (one conversation: the agent's transcript counts, :func:`supersede_copies`)
    copies: int = 0
    #: of ``superseded``, imported turns (and sessions) the agent recorded itself over MCP in a
    #: session of its own (:func:`give_way_to_the_agents_session`)
    agents: int = 0
    #: whether the vault held a session an agent opened over MCP when this import began (None: not
    #: looked yet): an import looks for their records only then (a first import paid a second per
    #: thousand sessions looking)
    agent_sessions: bool | None = None
    #: files whose last line is not finished yet (no newline, not JSON yet: an agent writing it
    #: now); not counted in ``skipped``: the next import reads it once it is finished
    pending: int = 0
    #: files of 0 bytes (an agent that just started a conversation leaves one): nothing to read
    #: yet, no error; the next import reads what is written by then
    empty: int = 0
    #: ``(source, transcriptId)`` of transcripts with a session left as an issued invoice billed it
    #: although the transcript differs: their files are read again by the next import
    held_back: set[tuple[str, str]] = field(default_factory=set)
    #: of ``held_back``, each transcript's sessions held: ``{"project", "sessionId", "invoice",
    #: "turns", "minutes"}`` (turns the transcript holds beyond the invoiced ones; minutes its work
    #: now ends later), kept for the digest (:mod:`.held`)
    held_sessions: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict, repr=False,
                                                                        compare=False)
    #: conversations refused whole (named in ``errors``; counted in ``skipped``)
    refused: int = 0
    #: new sessions of 0 minutes because their transcript keeps one instant for them (no time per
    #: turn, as old SpecStory files: one stamp in the header; or every turn stamped alike);
    #: ``memo session edit ID --minutes N`` gives one its time
    untimed: int = 0
    #: conversations read that hold at least one turn (recorded now or before)
    prompted: int = 0
    #: turns longer than a turn's limit (a pasted log, an image's data), kept cut to it
    cut: int = 0
    #: projects named after a hash of a folder not found here (a Gemini chat's ``gemini-<hash>``)
    unknown_folders: set[str] = field(default_factory=set)
    #: session files of the vault it cannot read, by record id: ``(path, why)`` (None: not looked yet)
    unreadable_sessions: dict[str, tuple[str, str]] | None = field(default=None, repr=False, compare=False)

    def took_nothing_in(self) -> bool:
        """Whether conversations were refused or lines left out, and nothing else was taken in
        nor was there before (a command that did nothing but refuse exits non-zero: a file whose
        one line was stamped in the year 1 said "skipped 1" and exited 0)."""
        return (bool(self.refused) or (bool(self.skipped) and not self.prompted)) and not (
            self.sessions or self.turns or self.revised or self.restored or self.superseded or self.unchanged
            or self.reindexed)

    def nothing_taken(self) -> str:
        """What :meth:`took_nothing_in` refused, for its message: ``1 conversation refused``,
        ``2 lines left out``."""
        parts = [f"{self.refused} conversation{'s' if self.refused != 1 else ''} refused"] if self.refused else []
        left = self.skipped - self.refused
        parts += [f"{left} line{'s' if left != 1 else ''} left out"] if left > 0 else []
        return ", ".join(parts)

    def line(self) -> str:
        told = [f"{self.unchanged} unchanged"] if self.unchanged else []
        told += [f"{self.resumed} read on from where the last import stopped"] if self.resumed else []
        unchanged = f" ({', '.join(told)})" if told else ""
        line = f"files {self.files}{unchanged}, sessions {self.sessions}, turns {self.turns}, skipped {self.skipped}"
        if self.unrecognised:
            line += f", {self.unrecognised} file{'s' if self.unrecognised != 1 else ''} of another format"
        line += f", indexed {self.reindexed} already in the vault" if self.reindexed else ""
        line += (f", {self.pending} file{'s' if self.pending != 1 else ''} with a last line still being written "
                 f"(no newline yet: taken in when it is finished)") if self.pending else ""
        line += (f", {self.empty} empty file{'s' if self.empty != 1 else ''} (nothing written in "
                 f"{'them' if self.empty != 1 else 'it'} yet)") if self.empty else ""
        held = len(self.held_back)
        line += (f", {held} conversation{'s' if held != 1 else ''} left as an issued invoice billed "
                 f"{'them' if held != 1 else 'it'}") if held else ""
        line += (f", {self.revised} turn{'s' if self.revised != 1 else ''} whose text the transcript changed, "
                 f"rewritten") if self.revised else ""
        line += (f", {self.restored} turn{'s' if self.restored != 1 else ''} back in the transcript, counted again"
                 if self.restored else "")
        hook = self.superseded - self.rewound - self.copies - self.agents
        line += (f", {hook} hook-captured record{'s' if hook != 1 else ''} superseded by the transcript"
                 if hook else "")
        line += (f", {self.agents} record{'s' if self.agents != 1 else ''} the agent recorded itself over MCP in its "
                 "own session kept there (the transcript's superseded)") if self.agents else ""
        line += (f", {self.copies} records of a SpecStory export superseded by the agent's own transcript of the "
                 f"same session") if self.copies else ""
        line += (f", {self.cut} turn{'s' if self.cut != 1 else ''} longer than {MAX_BODY_BYTES:,} bytes kept cut "
                 f"to that (the rest left out)") if self.cut else ""
        if self.unknown_folders:
            names = sorted(self.unknown_folders)
            line += (f", filed under {', '.join(names[:3])}{' …' if len(names) > 3 else ''} (a Gemini chat names only a "
                     f"hash of its folder, not found here: memo project rename {names[0]} NAME)")
        return line + (f", {self.rewound} turn{'s' if self.rewound != 1 else ''} the transcript no longer holds "
                       f"marked superseded" if self.rewound else "")

    def news(self, told: set[str] | frozenset[str] = frozenset()) -> bool:
        """Whether the import has something to tell a person: sessions or turns taken in, lines
        skipped (a reason in ``errors`` not ``told`` already), records superseded or revised, files
        of another format, conversations held back or records indexed again — not a pass that only
        stretched a session with the agent's own lines, found half a line still being written, or
        met again a bad line it told of before (``memo watch`` prints these only with ``--json``)."""
        return bool(self.sessions or self.turns or self.superseded or self.revised or self.restored or self.unrecognised
                    or self.held_back or self.reindexed or (self.skipped and not self.errors)
                    or any(error not in told for error in self.errors))

    def wire(self) -> dict:
        return {"files": self.files, "sessions": self.sessions, "turns": self.turns,
                "skipped": self.skipped, "errors": self.errors, "reindexed": self.reindexed,
                "superseded": self.superseded, "revised": self.revised, "restored": self.restored,
                "recognised": self.recognised,
                "unrecognised": self.unrecognised, "unchanged": self.unchanged,
                "resumed": self.resumed, "rewound": self.rewound, "copies": self.copies, "agents": self.agents,
                "heldBack": len(self.held_back),
                "pending": self.pending, "empty": self.empty, "refused": self.refused, "untimed": self.untimed,
                "cut": self.cut}


def walk_files(paths: Iterable[Path], suffixes: tuple[str, ...], exclude_dirs: tuple[str, ...] = (),
               left_out: list[str] | None = None) -> Iterator[Path]:
    """Every file under ``paths`` ending with one of ``suffixes``, hidden folders included, sorted.
    What is left out under a folder — an entry of such a name that is not a regular file (a FIFO
    or a device would block the read forever; a link to nothing), a folder that cannot be read —
    is named in ``left_out`` when given (``PATH: why``)."""
    for root in paths:
        root = Path(root)
        if root.is_file():
            yield root
            continue
        if not root.exists():
            raise InvalidFieldError("path", f"{root} does not exist")
        if not root.is_dir():
            raise InvalidFieldError("path", f"{root} is not a regular file or a folder")
        found: list[str] = []
        folders = [str(root)]
        while folders:
            folder = folders.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError as exc:  # unreadable, or gone meanwhile: as os.walk, left out
                if left_out is not None and os.path.lexists(folder):
                    left_out.append(f"{folder}: folder not read ({exc.strerror or type(exc).__name__})")
                continue
            for entry in entries:
                try:
                    # regular files only: a FIFO or a device named *.jsonl would block the read forever
                    if entry.name.endswith(suffixes) and entry.is_file() and _leaves_its_history(entry.path):
                        if left_out is not None:
                            left_out.append(f"{entry.path}: a link out of its .specstory folder (the file's, or a "
                                            "folder's on the way to it): not read")
                    elif entry.name.endswith(suffixes) and entry.is_file():
                        found.append(entry.path)
                    elif entry.is_dir(follow_symlinks=False) and entry.name not in exclude_dirs:
                        folders.append(entry.path)
                    elif entry.name.endswith(suffixes) and left_out is not None and not entry.is_dir():
                        left_out.append(f"{entry.path}: not a regular file (a pipe, a device or a link to "
                                        "nothing): not read")
                except OSError as exc:  # a link in a loop: said, as a link to nothing is
                    if entry.name.endswith(suffixes) and left_out is not None:
                        left_out.append(f"{entry.path}: not read ({exc.strerror or type(exc).__name__})")
        yield from (Path(path) for path in sorted(found, key=lambda path: Path(path).parts))


def _leaves_its_history(path: str) -> bool:
    """Whether ``path``, a file under a ``.specstory`` folder (a repository's own, cloned from
    anyone), lies out of that folder once links are followed — the file a link, or the
    ``.specstory`` folder or one below it a link: a planted link to a file or a folder of the
    person's (another repository's private history) would be taken into the vault (and pushed
    to a team daemon) as this repository's conversation (found by security testers)."""
    parts = Path(path).parts
    if ".specstory" not in parts:
        return False
    at = len(parts) - 1 - parts[::-1].index(".specstory")
    # the repository's own .specstory folder, its own links followed no further than its parent
    own = Path(os.path.realpath(Path(*parts[:at]) if at else Path(parts[0]))) / ".specstory"
    try:
        return not Path(os.path.realpath(path)).is_relative_to(own)
    except (OSError, ValueError):
        return True


@dataclass
class Interval:
    start: datetime
    end: datetime
    prompts: list[HumanPrompt]


def work_intervals(transcript: Transcript, idle_gap: timedelta) -> list[Interval]:
    """Split a transcript into work intervals at pauses longer than ``idle_gap`` (SPEC §7).

    Every interval holds at least one human prompt; each prompt goes to the interval its time
    lies in, and prompts without a timestamp with the prompt before them (the first interval
    when none). Pure; prefix-stable: a transcript that grows only extends its last interval or
    adds new ones.
    """
    stamps = sorted({*transcript.activity, *(p.at for p in transcript.prompts if p.at)})
    if not transcript.prompts:
        return []
    if not stamps:
        return []
    spans: list[list[datetime]] = [[stamps[0], stamps[0]]]
    for stamp in stamps[1:]:
        if stamp - spans[-1][1] > idle_gap:
            spans.append([stamp, stamp])
        else:
            spans[-1][1] = stamp
    buckets: list[list[HumanPrompt]] = [[] for _ in spans]
    starts = [start for start, _ in spans]
    current = 0
    for prompt in transcript.prompts:
        if prompt.at is not None:  # the interval its own time lies in: a line of another time (a clock
            # set to 2099) took every later prompt along when intervals were only walked forward
            current = bisect.bisect_right(starts, prompt.at) - 1
        buckets[current].append(prompt)
    intervals = [Interval(s, e, b) for (s, e), b in zip(spans, buckets) if b]
    return intervals




def transcript_session_base(transcript: Transcript, apart: bool = False) -> str:
    """Deterministic, safe base of session ids for a transcript: ``{source}-{id}`` (lower case),
    with a hash of the exact id when the id is not already a slug. ``apart``: with the hash in
    any case — for the second of two conversations whose ids differ only in case
    (:func:`import_transcript`)."""
    from ..agent_ids import secret_free_id

    hidden = secret_free_id(transcript.transcript_id)  # as the hook's: no secret in ids (SPEC §2.4)
    if hidden is not None:
        return f"{transcript.source}-{hidden}"
    base = slugify(transcript.transcript_id, 120)
    if apart or base != transcript.transcript_id.lower():
        digest = hashlib.sha1(transcript.transcript_id.encode("utf-8")).hexdigest()[:8]
        base = f"{base[:100]}-{digest}"
    return f"{transcript.source}-{base}"


@dataclass
class Written:
    """What :func:`import_transcript` wrote of one conversation: ``base`` of its session ids
    (``{base}-{n}``: :func:`transcript_session_base`, with the hash of its id when another
    conversation, whose id differs only in case, holds the plain one), its ``sessions`` as
    ``(project, session id, number of turns)``, and whether the vault held none of them before
    (``fresh``: all of them are this write's)."""

    base: str
    sessions: list[tuple[str, str, int]]
    fresh: bool


def import_transcript(store: VaultStore, transcript: Transcript, options: ImportOptions, result: ImportResult,
                      invoiced: dict[tuple[str, str], str] | None = None) -> Written:
    """Write one transcript as sessions and turns through the service functions (what was
    written: :class:`Written`).

    A session on an issued invoice that no credit note cancels (``invoiced``: ``{(project,
    sessionId): invoice number}``, read from the vault when not given) is left as it is: no
    turn added or superseded, its end not moved — the invoice that was sent billed it so. What
    the transcript has more is named in ``errors`` (``memo invoice credit`` first to take it in).
    """
    if invoiced is None:
        invoiced = invoiced_in(store.root)
    for prompt in transcript.prompts:
        prompt.text = without_nul(prompt.text)  # kept, as a hook keeps it
        fitted = fit_body(prompt.text)
        if fitted is not prompt.text:
            prompt.text = fitted
            result.cut += 1
    base = transcript_session_base(transcript)
    named = options.project or (project_slug(transcript.project_hint) if transcript.project_hint else None)
    if named is None:  # a transcript that names no folder (a Gemini chat: a hash of it): where its hook filed it
        hooked = _hook_sessions(store, transcript)
        named = hooked[-1]["project"] if hooked else None
    unknown_folder = None
    if named is None and transcript.project_hash:
        # the project another chat of this folder went to (renamed since: followed, found by a breaker); the
        # repository of the folder whose path the hash is of, among those this machine and the vault know; else a
        # project of the hash's own (every Gemini project went to one "default", billed to one client: a newcomer)
        named = index.project_of_hash(store.conn, transcript.project_hash) if store.exists else None
        folder = _folder_of_hash(store, transcript.project_hash) if named is None else None
        if named is None and folder is not None:
            named = project_of_folder(str(folder))
        if named is None:
            named = unknown_folder = f"gemini-{transcript.project_hash[:8].lower()}"
    default = store.resolve_project(named)

    def home(session_id: str) -> str:
        """Where the interval's session lives now: moved since it was imported (memo session edit
        --to-project, a project rename), it is followed there, never imported anew beside it."""
        if options.project:
            return default
        homes = _session_homes(store, session_record_id(session_id))
        return homes.pop() if len(homes) == 1 else default

    project = home(f"{base}-1")
    if unknown_folder is not None and project == default:  # (a session of it elsewhere: followed there, not said)
        result.unknown_folders.add(default)
    gap_minutes = int(options.idle_gap.total_seconds() // 60)
    first = store.read(project, RecordKind.SESSION, session_record_id(f"{base}-1"))
    if first is not None and first[0].get("transcriptId", transcript.transcript_id) != transcript.transcript_id:
        # the ids belong to another conversation, whose id differs from this one's only in case
        base = transcript_session_base(transcript, apart=True)
        project = home(f"{base}-1")
        first = store.read(project, RecordKind.SESSION, session_record_id(f"{base}-1"))
    if first is not None and first[0].get("idleGapMinutes", gap_minutes) != gap_minutes:
        # another gap would cut other intervals under the same ids: overlapping sessions, double billing
        kept_gap = first[0]["idleGapMinutes"]
        if options.idle_gap_given or not isinstance(kept_gap, int) or isinstance(kept_gap, bool) \
                or not 1 <= kept_gap <= 525_600:
            raise MemoError(
                f"transcript {transcript.transcript_id} was imported with --idle-gap {kept_gap}; import it with "
                f"--idle-gap {kept_gap} (a transcript keeps the gap of its first import)"
            )
        # the config's gap changed since (idleGapMinutes): new transcripts take it, this one keeps its
        # own — it was refused for good, its new turns never imported (found by an integrator)
        options = replace(options, idle_gap=timedelta(minutes=kept_gap))
        gap_minutes = kept_gap
    earlier = _split_earlier_parts(transcript, _held_intervals(store, base, home, first[0]), options.idle_gap) \
        if first is not None and not first[0].get("timesEdited") else []
    for part in earlier:
        written = import_transcript(store, part, options, result, invoiced)
        if not transcript.prompts and part is earlier[-1]:  # all of it earlier: a file of earlier parts
            return written
    extra = {"transcriptId": transcript.transcript_id, "transcriptSource": transcript.source}
    kept: set[int] = set()  # the prompts (by id()) the file lost and the vault holds: left as they are
    # no agent takes back a conversation's first turns (a rewind, a restore, takes back its last): a
    # file that no longer holds them was rotated or cut from the top, whatever its agent — the turns
    # recorded before its first prompt are kept (a Gemini chat, a Copilot events file cut from the top
    # had their turns rewritten with the later prompts, the first one's text lost — found by a tester)
    if first is not None and first[0].get("transcriptId") == transcript.transcript_id:
        transcript, kept = _with_lost_beginning(store, transcript, base, home, options.idle_gap)
    intervals = work_intervals(transcript, options.idle_gap)
    if first is not None and intervals:
        _refuse_joining_a_held_session(store, transcript, base, intervals, invoiced, result)
    homes = {number: home(f"{base}-{number}") if number > 1 else project for number in range(1, len(intervals) + 1)}
    _refuse_a_session_file_it_cannot_read(store, base, homes, result)
    if transcript.lines_left_out and first is not None:
        _refuse_shifted_turns(store, transcript, base, intervals, homes)
    fresh = True
    begins_earlier: set[int] = set()
    reborn: set[int] = set()  # sessions marked rewound whose number other work holds now
    # the first interval where the vault holds it: a later one whose work the file no longer holds was
    # cut (another --tz moves every interval, the first too)
    steady = first is not None and bool(intervals) and (first[0].get("startTime") == to_iso(intervals[0].start)
                                                        or bool(first[0].get("timesEdited")))
    for number, interval in enumerate(intervals, 1):
        session_id = f"{base}-{number}"
        existing = store.read(homes[number], RecordKind.SESSION, session_record_id(session_id))
        fresh = fresh and existing is None
        if existing is not None and existing[0].get("timesEdited"):
            continue  # a person set its times (memo session edit): the import does not compare them
        if existing is not None and existing[0].get("startTime") != to_iso(interval.start):
            if existing[0].get("gaveWayTo") and _within(existing[0].get("startTime"), interval):
                continue  # begins at its first turn of its own: what came before is the agent's session's
            lost = (existing[0].get("status") == "superseded" and existing[0].get("supersededBy") == [REWOUND]) or (
                # cut and gone on, both seen by this import (a cron job's, one without a watcher): the earlier
                # intervals as imported, this one's work in none of the file's intervals now (another --tz
                # moves every interval, the first too — refused below) (found by a breaker)
                steady and number > 1 and existing[0].get("status") != "superseded"
                and str(existing[0].get("source") or "").startswith("import:")
                and not any(_within(existing[0].get("startTime"), iv) for iv in intervals))
            if lost and (homes[number], session_id) not in invoiced:
                # the file lost this interval (rewound, cut) and the agent went on: other work at its
                # place, which the session becomes (its turns marked rewound take the new prompts'
                # text, as a turn rewound and typed again does) — refused, no later turn came in
                # (found by a breaker)
                reborn.add(number)
                begins_earlier.add(number)
                continue
            if _within(existing[0].get("startTime"), interval):
                # a line stamped before the interval's first (a clock set back, a line written
                # late): the same work, begun earlier — the session starts at it, as a whole read
                # of the file gives; its turns keep their numbers (file order)
                begins_earlier.add(number)
                continue
            # the same ids would now mean other work (another --tz, another file of the same
            # conversation imported alone): refuse rather than stretch or overlap sessions
            joined = next((n for n, earlier in enumerate(intervals[:number - 1], 1)
                           if _within(existing[0].get("startTime"), earlier)), None)
            if joined is not None:  # lines written between two intervals made one of them (found by a breaker)
                raise MemoError(
                    f"transcript {transcript.transcript_id}: lines stamped between its work intervals now join the "
                    f"work imported as session {session_id} ({existing[0].get('startTime')}) into interval {joined}: "
                    f"the sessions imported of it cannot be renumbered, so nothing of it was imported (they stay as "
                    f"they were); the turns of those lines are not in the vault")
            raise MemoError(
                f"transcript {transcript.transcript_id}: work interval {number} starts at {to_iso(interval.start)} "
                f"but was imported starting {existing[0].get('startTime')}; re-import with the same --tz and all "
                f"files of the conversation together"
            )
    inherited: tuple[str | None] | None = None  # the client of new sessions, worked out once when one is new
    for number, interval in enumerate(intervals, 1):
        session_id = f"{base}-{number}"
        project = homes[number]
        existing = store.read(project, RecordKind.SESSION, session_record_id(session_id))
        if existing is not None and store.ensure_indexed(RecordKind.SESSION, project, session_record_id(session_id),
                                                         meta=existing[0]):
            result.reindexed += 1
        if existing is not None and existing[0].get("status") == "superseded" and \
                existing[0].get("supersededBy") == [REWOUND]:
            # the file lost this interval, and holds it again (put back): the session comes back
            back = {key: value for key, value in existing[0].items() if key != "supersededBy"}
            back.update(status="completed" if back.get("endTime") else "active", updated=to_iso(datetime.now(tz=_UTC)))
            store.upsert(RecordKind.SESSION, back, existing[1])
            existing = store.read(project, RecordKind.SESSION, session_record_id(session_id))
            result.sessions += number in reborn  # new work under the number: a session again, not one put back
        if existing is not None and (project, session_id) in invoiced:
            moved = not existing[0].get("timesEdited") and (existing[0].get("endTime") != to_iso(interval.end)
                                                              or number in begins_earlier)
            last_turn = index.last_current_turn(store.conn, project, session_id)
            if moved or last_turn != len(interval.prompts):
                billed_end = from_iso(str(existing[0].get("endTime"))) if existing[0].get("endTime") else None
                result.held_sessions.setdefault((transcript.source, transcript.transcript_id), []).append(
                    {"project": project, "sessionId": session_id, "invoice": invoiced[(project, session_id)],
                     "turns": max(0, len(interval.prompts) - (last_turn or 0)),
                     "minutes": max(0, minutes_between(billed_end, interval.end)) if billed_end else 0})
                result.errors.append(f"{redact_secrets(str(transcript.path))[0]}: session {session_id} is on invoice "
                                     f"{invoiced[(project, session_id)]}, issued: left as it is (the transcript now "
                                     f"differs; credit the invoice first to take that in: memo invoice credit)")
                result.held_back.add((transcript.source, transcript.transcript_id))
            continue
        if existing is None and interval.prompts and all(_refused_body(p.text) for p in interval.prompts):
            # no turn of it can be recorded (each over the size limit, or holding NUL): no session of
            # 0 turns written for it — said, as the turn-by-turn path says each turn it refuses
            for turn, prompt in enumerate(interval.prompts, 1):
                result.skipped += 1
                result.errors.append(f"{redact_secrets(str(transcript.path))[0]}: turn {turn} of {session_id}: "
                                     f"{_refused_body(prompt.text)}; the session is not recorded (no turn of it can be)")
            continue
        described = stored_summary(store, session_description(valid_text(transcript.title or ""),
                                                              [valid_text(p.text) for p in interval.prompts[:20]]))
        if existing is None:
            if inherited is None:
                inherited = (options.client,) if options.client is not None else (_hook_client(store, transcript),)
            client = inherited[0]
            if (project, session_id) in invoiced:
                # its record deleted by hand, the invoice standing: back as the invoice billed it (it came
                # back internal, the client's hours short of the invoice — found by a billing person)
                client = _invoiced_client(store, project, session_id) or client
            start = StartSessionRequest(
                session_id=session_id, project=project, ide=transcript.ide, model=transcript.model,
                agent=transcript.agent, client=client, billable=options.billable, owner=transcript.owner,
                branch=transcript.branch, git_sha=transcript.git_sha,
                start_time=interval.start, source=f"import:{transcript.source}", summary=described,
                extra={**extra, "interval": number, "idleGapMinutes": gap_minutes,
                       "summaryDigest": summary_digest(described),
                       # the folder's hash a Gemini chat names: the next chat of it goes where this session is
                       **({"projectHash": transcript.project_hash} if transcript.project_hash else {})},
            )
            end = EndSessionRequest(session_id=session_id, project=project, until=interval.end,
                                    recompute_duration=True)
            try:
                turns = [_turn_request(transcript, session_id, project, turn, prompt, interval, options, extra)
                         for turn, prompt in enumerate(interval.prompts, 1)]
            except (MemoError, ValueError):
                turns = None  # a turn the one-by-one path refuses (and says why)
            # a session new to the vault: written at once (issue 16), else one record after the other
            # one instant for the whole interval: no time per turn, or every turn stamped alike (a
            # SpecStory file of coarse stamps: it was not counted)
            untimed = interval.start == interval.end
            if turns is not None and record_whole_session(store, start, turns, end) is not None:
                result.sessions += 1
                result.untimed += untimed
                result.turns += len(turns)
                continue
            start_session(store, start, claim=False)  # an import's session: nobody reads a baton
            result.sessions += 1
            result.untimed += untimed
        for turn, prompt in enumerate(interval.prompts, 1):
            if id(prompt) in kept:
                continue  # recorded from the file before it lost its beginning: as it was recorded
            if store.record_exists(project, RecordKind.PROMPT, f"prompt-{session_id}-t{turn}"):
                try:
                    result.reindexed += store.ensure_indexed(RecordKind.PROMPT, project, f"prompt-{session_id}-t{turn}")
                    followed = _follow_transcript(store, project, f"prompt-{session_id}-t{turn}", prompt,
                                                  prompt.at or interval.start, prompt.model or transcript.model,
                                                  answered=prompt is not transcript.prompts[-1])
                    if number in reborn:  # the new work's turns, at the places of the ones taken back
                        result.turns += followed is not None
                    else:
                        result.revised += followed == "rewritten"
                        result.restored += followed == "restored"
                except CorruptRecordError as exc:
                    result.skipped += 1
                    result.errors.append(f"{transcript.path}: turn {turn} of {session_id}: {_one_line(exc)}")
                continue
            try:
                record_prompt(store, _turn_request(transcript, session_id, project, turn, prompt, interval, options,
                                                   extra))
            except (MemoError, ValueError) as exc:  # one bad prompt (e.g. over the size limit)
                result.skipped += 1
                result.errors.append(f"{transcript.path}: turn {turn} of {session_id}: {_one_line(exc)}")
                continue
            result.turns += 1
        rewound = _rewound(store, project, session_id, len(interval.prompts) + 1)
        result.superseded += rewound
        result.rewound += rewound
        old_end = existing[0].get("endTime") if existing else None
        if existing is not None and (existing[0].get("timesEdited") or times_written_by_hand(existing[0])):
            old_end = to_iso(interval.end)  # a person corrected its times (memo session edit): they are kept
            begins_earlier.discard(number)
        changes: dict[str, Any] = {}
        if number in begins_earlier:
            changes["startTime"] = to_iso(interval.start)
            old_end = None  # its duration is worked out again from the new start
        if existing is not None and described != existing[0].get("summary") and \
                existing[0].get("summaryDigest") == summary_digest(existing[0].get("summary")):
            # the summary this import made, not one a person or an agent wrote since: the
            # transcript now describes the session better (its title came, more prompts)
            changes.update(summary=described, summaryDigest=summary_digest(described))
        if existing is not None and transcript.model and not existing[0].get("model"):
            changes["model"] = transcript.model  # its answer came after the import took the prompt
        if changes:
            meta, body = store.read(project, RecordKind.SESSION, session_record_id(session_id)) or existing
            if "startTime" in changes and meta.get("endTime"):  # the length from the new start, in the same write
                changes["durationMinutes"] = minutes_between(interval.start, max(interval.start,
                                                                                 from_iso(str(meta["endTime"]))))
                changes["endTime"] = to_iso(max(interval.start, from_iso(str(meta["endTime"]))))
                if meta.get("computedEnd"):
                    changes["computedEnd"] = changes["endTime"]
            store.upsert(RecordKind.SESSION, {**meta, **changes}, body)
        if old_end != to_iso(interval.end):
            end_session(store, EndSessionRequest(
                session_id=session_id, project=project, until=interval.end, recompute_duration=True,
            ))
    if intervals:
        past = _past_the_last_interval(store, base, len(intervals), invoiced,
                                       [f"{homes[n]}/{base}-{n}" for n in homes], result, transcript)
        result.superseded += past
        result.rewound += past
        result.superseded += supersede_hook_session(store, transcript, [(homes[n], f"{base}-{n}") for n in homes])
        if result.agent_sessions is None:
            result.agent_sessions = index.holds_agent_sessions(store.conn)
        if result.agent_sessions:
            agents = give_way_to_the_agents_session(store, transcript, [(homes[n], f"{base}-{n}") for n in homes])
            result.superseded += agents
            result.agents += agents
        copies = supersede_copies(store, transcript, [(homes[n], f"{base}-{n}") for n in homes])
        result.superseded += copies
        result.copies += copies
    return Written(base, [(homes[n], f"{base}-{n}", len(interval.prompts)) for n, interval in enumerate(intervals, 1)],
                   fresh)


def _refuse_a_session_file_it_cannot_read(store: VaultStore, base: str, homes: dict[int, str],
                                          result: ImportResult) -> None:
    """Refuse a conversation one of whose sessions the vault holds in a file it cannot read (moved
    by hand into another project's folder, its YAML torn): written anew, the session would stand
    twice once the file is mended (found by a tester of bad files: one id billed in two projects).

    Raises
    ------
    MemoError
        Naming the file and why it cannot be read; nothing of the conversation is written.
    """
    missing = [(number, project) for number, project in homes.items()
               if not store.record_exists(project, RecordKind.SESSION, session_record_id(f"{base}-{number}"))]
    if not missing:  # every session of it where the index says: nothing to look for (a grown file's path)
        return
    if result.unreadable_sessions is None:  # one look per import, at its first conversation with a new session
        from ...index.freshness import not_indexed

        result.unreadable_sessions = {Path(str(error.path)).stem: (os.path.relpath(str(error.path), store.root),
                                                                   error.reason)
                                      for error in not_indexed(store.conn, store.layout, "sessions")}
    if not result.unreadable_sessions:
        return
    for number, _ in missing:
        record_id = session_record_id(f"{base}-{number}")
        if record_id in result.unreadable_sessions:
            path, reason = result.unreadable_sessions[record_id]
            raise MemoError(f"its session {base}-{number} is in the vault as {path}, which cannot be read ({reason}): "
                            "mend it (memo reindex says why), then import again; nothing of it was imported")


def _invoiced_client(store: VaultStore, project: str, session_id: str) -> str | None:
    """The client the standing invoice of session ``session_id`` billed it to, or None."""
    from ...vault import ledger

    found = ledger.invoiced_items(ledger.documents(store.root)).get((project, session_id))
    return found[1] if found and found[1] else None


def _with_lost_beginning(store: VaultStore, transcript: Transcript, base: str, home: Callable[[str], str],
                         idle_gap: timedelta) -> tuple[Transcript, set[int]]:
    """``transcript`` with the turns its file lost from the top put back, as the vault holds them.

    The imported turns of the conversation (sessions ``{base}-1``, ``{base}-2`` …) made before the
    file's first prompt are put before its prompts — their text as recorded,
    their time, tokens — and the work intervals they were in are kept as activity (their start,
    end, and a point each ``idle_gap`` between: an interval the vault holds comes out the same),
    so the file's prompts number on after them instead of taking their numbers (which rewrote
    every turn and superseded the last ones), and a file whose first work interval begins later
    is not refused. Returns the transcript (the same object when the file lost nothing) and the
    ``id()`` of each prompt put back. A file cut short at the end is not this: a rewind."""
    from ...domain.clock import TimeBounds
    from ...index.query import PromptFilter

    timed = [prompt.at for prompt in transcript.prompts if prompt.at is not None]
    if not timed:
        return transcript, set()
    begins = to_iso(min(timed))
    lost: list[HumanPrompt] = []
    activity: list[datetime] = []
    number = 1
    while True:
        session_id = f"{base}-{number}"
        project = home(session_id)
        row = index.get_row(store.conn, project, session_record_id(session_id), RecordKind.SESSION.value)
        meta = json.loads(row["meta"]) if row is not None and row["meta"] else None
        if meta is None or meta.get("transcriptId") != transcript.transcript_id or str(meta.get("startTime")) >= begins:
            break
        # only the turns made before the file's first prompt (a file that lost nothing: none, whatever
        # the size of the session)
        before = PromptFilter(session_id=session_id, projects=[project],
                              bounds=TimeBounds(until_exclusive=from_iso(begins)))
        _, rows = index.count_and_page(store.conn, RecordKind.PROMPT.value, before, 1_000_000, 0, "turn-asc")
        for turn in rows:
            known = json.loads(turn["meta"]) if turn["meta"] else {}
            if not str(known.get("source", "")).startswith("import:"):
                continue  # not this import's
            tokens = known.get("tokens")
            lost.append(HumanPrompt(turn["body"] or "", from_iso(turn["created"]),
                                    tokens if isinstance(tokens, dict) else None, known.get("model")))
            activity.append(from_iso(turn["created"]))
        if not meta.get("timesEdited") and meta.get("endTime"):
            start, end = from_iso(str(meta["startTime"])), from_iso(str(meta["endTime"]))
            while start < end:  # the interval as recorded: never split by what the file lost
                activity.append(start)
                start += idle_gap
            activity.append(end)
        number += 1
    if not lost:
        return transcript, set()
    prompts = list(transcript.prompts)
    if prompts and prompts[0].answered_before:  # the answers of the last turn put back: counted there
        prompts[0] = _without_calls(prompts[0], prompts[0].answered_before)
    return replace(transcript, prompts=[*lost, *prompts],
                   activity=sorted({*transcript.activity, *activity})), {id(prompt) for prompt in lost}


def _without_calls(prompt: HumanPrompt, calls: list[tuple[dict[str, int], str | None]]) -> HumanPrompt:
    """``prompt`` with the tokens of ``calls`` (as :func:`add_tokens` added them) taken out."""
    tokens = dict(prompt.tokens or {})
    parts = {model: dict(part) for model, part in (prompt.tokens_by_model or {}).items()}
    for usage, model in calls:
        counts = {k: v for k, v in usage.items() if plausible_tokens(v)}
        for key, value in counts.items():
            tokens[key] = tokens.get(key, 0) - value
            if model and model in parts:
                parts[model][key] = parts[model].get(key, 0) - value
    tokens = {k: v for k, v in tokens.items() if v}
    parts = {m: {k: v for k, v in part.items() if v} for m, part in parts.items()}
    return replace(prompt, tokens=tokens or None, tokens_by_model={m: p for m, p in parts.items() if p} or None,
                   answered_before=[])


def times_written_by_hand(meta: dict[str, Any]) -> bool:
    """Whether a person wrote an imported session's end into its file since memo worked it out
    (its ``endTime`` is not the ``computedEnd`` memo wrote beside it): the next import keeps
    it, as it keeps an end ``memo session edit`` corrected (``timesEdited``) — it had put
    back the end of the transcript, silently, and the session billed the other minutes."""
    computed = meta.get("computedEnd")
    return isinstance(computed, str) and bool(meta.get("endTime")) and str(meta["endTime"]) != computed


def summary_digest(summary: str | None) -> str:
    """A short digest of the summary an import gave a session (kept as ``summaryDigest``): while
    the session's summary still has it, nobody wrote another, and the import may describe the
    session anew as its transcript grows."""
    return hashlib.blake2b((summary or "").encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _held_intervals(store: VaultStore, base: str, home: Callable[[str], str],
                    first: dict[str, Any]) -> list[tuple[datetime, datetime]]:
    """The work intervals the vault holds of a conversation, in order: ``(start, end)`` of its
    sessions ``{base}-1``, ``{base}-2`` … (``first``: the first one's frontmatter; an open one
    ends at its start); they end at the first number the vault does not hold or cannot read."""
    held: list[tuple[datetime, datetime]] = []
    meta: dict[str, Any] | None = first
    number = 1
    while meta is not None and number <= MAX_HELD_INTERVALS:
        if meta.get("status") == "superseded" and meta.get("supersededBy") == [REWOUND]:
            break  # the file lost it (cut, rewound): new work there takes its place, it is no earlier part
        try:
            start = from_iso(str(meta.get("startTime")))
            end = from_iso(str(meta["endTime"])) if meta.get("endTime") else start
        except (ValueError, TypeError):
            break
        held.append((start, max(start, end)))
        number += 1
        try:
            found = store.read(home(f"{base}-{number}"), RecordKind.SESSION, session_record_id(f"{base}-{number}"))
        except MemoError:
            break
        meta = found[0] if found is not None else None
    return held


#: The most work intervals of one conversation :func:`_held_intervals` reads.
MAX_HELD_INTERVALS = 10_000


def _split_earlier_parts(transcript: Transcript, held: list[tuple[datetime, datetime]],
                         idle_gap: timedelta) -> list[Transcript]:
    """Take out of ``transcript`` (a conversation the vault holds the work intervals ``held`` of)
    the prompts stamped more than an idle gap before a held interval and more than an idle gap
    after the one before it, with the activity among them, as conversations of their own, one per
    gap, in order; [] when there are none. Such prompts would open work intervals among the held
    ones and renumber them: an earlier part of the conversation in another file imported after the
    later one (its turns were left out for good — found by a breaker, also when both files were
    read together), the middle part of a conversation in three files imported last (refused for
    good, the whole conversation read together too — found by a breaker), or a line written with a
    clock set back (the whole conversation was refused). A part's id is the conversation's and the
    instant the held interval after it begins, the same on every import: its sessions are
    ``{source}-{id}-before-{instant}-{n}``; the rest of ``transcript`` is imported as before."""
    parts: list[Transcript] = []
    gaps: list[tuple[datetime | None, datetime]] = []  # (after, before) of each gap a part was taken from
    after: datetime | None = None  # the end of the held intervals so far, plus an idle gap

    def within(at: datetime | None, gap: tuple[datetime | None, datetime]) -> bool:
        return at is not None and at < gap[1] and (gap[0] is None or at > gap[0])

    stamps = sorted({*transcript.activity, *(p.at for p in transcript.prompts if p.at is not None)}, reverse=True)
    for start, end in held:
        # the work that leads into a held interval, a line within an idle gap of the next, joins it as a
        # clean import joins it (a prompt an hour before, 30 minutes before one 30 minutes before the
        # interval, was a 0-minute part of its own: found by a breaker)
        reach = start
        for at in stamps:
            if at < reach and at >= reach - idle_gap and (after is None or at > after):
                reach = at
        gap = (after, reach - idle_gap)
        early = [p for p in transcript.prompts if within(p.at, gap)]
        if early:
            gaps.append(gap)
            parts.append(replace(transcript, transcript_id=f"{transcript.transcript_id}-before-{start:%Y%m%dT%H%M%SZ}",
                                 prompts=early, activity=[at for at in transcript.activity if within(at, gap)]))
        after = end + idle_gap if after is None or end + idle_gap > after else after
    if parts:
        transcript.prompts = [p for p in transcript.prompts if not any(within(p.at, gap) for gap in gaps)]
        transcript.activity = [at for at in transcript.activity if not any(within(at, gap) for gap in gaps)]
    return parts


def _within(start: object, interval: Interval) -> bool:
    """Whether a session's recorded ``start`` (ISO text) lies inside ``interval`` after its
    start: the interval is that session's work, begun earlier than it was first imported."""
    try:
        recorded = from_iso(str(start))
    except (ValueError, TypeError):
        return False
    return interval.start < recorded <= interval.end


def take_back(store: VaultStore, written: Written) -> None:
    """Remove the sessions and turns of a conversation that one write put in the vault, which held
    none of them before (``written.fresh``): the streamed first import writes that conversation
    again, whole, once it finds a part it did not expect (:func:`_write_as_read`)."""
    for project, session_id, turns in written.sessions:
        for turn in range(1, turns + 1):
            store.remove(RecordKind.PROMPT, project, f"prompt-{session_id}-t{turn}")
        store.remove(RecordKind.SESSION, project, session_record_id(session_id))


def _turn_request(transcript: Transcript, session_id: str, project: str, turn: int, prompt: HumanPrompt,
                  interval: Interval, options: ImportOptions, extra: dict) -> RecordPromptRequest:
    """The request that records ``prompt`` as turn ``turn`` of an imported session.

    Raises
    ------
    ValueError
        A field the request refuses (pydantic's ``ValidationError``).
    """
    usage = {**_usage(prompt), "promptHash": prompt_hash(prompt.text)}
    return RecordPromptRequest(
        body=valid_text(prompt.text), session_id=session_id, turn=turn, project=project,
        created=prompt.at or interval.start, source=f"import:{transcript.source}",
        ide=transcript.ide, model=prompt.model or transcript.model, agent=transcript.agent,
        branch=transcript.branch, git_sha=transcript.git_sha,
        client=options.client, billable=options.billable, extra={**extra, **usage}, skip_existing=True,
    )


def _usage(prompt: HumanPrompt) -> dict:
    """The token counts a turn's record keeps of ``prompt``: ``tokens``, and ``tokensByModel``
    when more than one model answered."""
    usage: dict = {"tokens": prompt.tokens} if prompt.tokens else {}
    if prompt.tokens_by_model and len(prompt.tokens_by_model) > 1:
        usage["tokensByModel"] = prompt.tokens_by_model
    return usage


def _price_turns(parsed: "ParseResult", cache: PriceCache) -> None:
    """Price each turn of ``parsed`` as ``memo activity`` will price its record (the same
    tokens, model, UTC day and source as :func:`_turn_request` gives it) into ``cache``: what a
    parse worker adds to the import, so that the first report after it finds every price in the
    vault's cost cache (issue 16). A turn whose record ends up otherwise (another model the
    session names) is priced by the report, as before."""
    for transcript in parsed.transcripts:
        for prompt in transcript.prompts:
            if prompt.tokens and prompt.at is not None:
                stored_turn_cost(_usage(prompt), prompt.model or transcript.model, prompt.at.astimezone(_UTC),
                                 f"import:{transcript.source}", cache)


def prompt_hash(text: str) -> str:
    """A short hash of a prompt as the transcript holds it (before redaction): what a re-import
    compares to see that the turn at this place is still the same prompt."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _follow_transcript(store: VaultStore, project: str, record_id: str, prompt: HumanPrompt,
                       at: datetime, model: str | None = None, answered: bool = False) -> str | None:
    """An imported turn follows its transcript: the token counts (``tokens``, ``tokensByModel``)
    and the ``model`` of an answer that was still being written (a live transcript: Claude Code
    writes the prompt's line before the answer that names the model — a turn imported between
    them had no model, and no price), and — after the agent rewound the conversation and the
    person typed something else at this place (Gemini ``$rewindTo``, a Copilot rewind) — the
    text and time of the prompt that is there now (``rewrittenAt`` says when). ``"rewritten"``
    when its text changed, ``"restored"`` when a turn marked rewound is in the transcript again
    as it was (a file cut short put back), else None. ``answered``: a prompt follows this one in
    the transcript, so its answer is whole — of no tokens, a turn keeps none (a line left out gave
    it the next prompt's answer; mended, it kept those tokens: found by a tester); the last
    prompt's answer may be still being written, and keeps what it had."""
    from ..prompts import stored_body

    row = index.get_row(store.conn, project, record_id, RecordKind.PROMPT.value)
    known = json.loads(row["meta"]) if row is not None else {}
    usage = _usage(prompt)
    whole = bool(prompt.tokens) or answered  # what the file says of its answer is all it will say
    if known.get("promptHash") == prompt_hash(prompt.text) and known.get("supersededBy") != ["rewound"] \
            and (not whole or known.get("tokens") == (prompt.tokens or None)) \
            and (not whole or known.get("tokensByModel") == usage.get("tokensByModel")) \
            and _same_instant(known.get("created"), at) \
            and (model is None or known.get("model") == model):
        return None  # the same prompt as imported, the same counts: one index lookup, no file read, no redaction
    with store.lock():
        found = store.read(project, RecordKind.PROMPT, record_id)
        if found is None or not str(found[0].get("source", "")).startswith("import:"):
            return None
        meta, body = found
        try:
            text = stored_body(store, valid_text(prompt.text))
        except InvalidFieldError:
            return None
        changed = {}
        if prompt.tokens and meta.get("tokens") != prompt.tokens:
            changed["tokens"] = prompt.tokens
        if "tokensByModel" in usage and meta.get("tokensByModel") != usage["tokensByModel"]:
            changed["tokensByModel"] = usage["tokensByModel"]
        if whole and not prompt.tokens and ("tokens" in meta or "tokensByModel" in meta):
            meta = {k: v for k, v in meta.items() if k not in ("tokens", "tokensByModel")}  # it has none
            changed["updated"] = meta.get("updated")
        elif prompt.tokens and "tokensByModel" not in usage and "tokensByModel" in meta:
            # one model answers it now: the split of an answer the file no longer gives it goes (a line of
            # the next prompt left out gave this turn that prompt's answer; mended, its cost was counted
            # twice — found by a tester: 0.2739 where a clean import has 0.2455)
            meta = {k: v for k, v in meta.items() if k != "tokensByModel"}
            changed["tokens"] = prompt.tokens
        if model is not None and meta.get("model") != model:
            changed["model"] = model
        if not _same_instant(meta.get("created"), at) and meta.get("status") != "superseded":
            # the same words at this place, said at another time: another prompt of that text (a line left out
            # before moved a later "/publish-session" here; mended, the turn kept that one's time and answer,
            # the cost counted twice — found by a tester). Its time and its answer's tokens are the file's.
            meta = {k: v for k, v in meta.items() if k not in ("tokens", "tokensByModel")}
            changed.update(created=to_iso(at), **usage)
        revived = meta.get("status") == "superseded" and meta.get("supersededBy") == ["rewound"]
        rewritten = revived or (text != body and meta.get("status") != "superseded")
        outcome = ("rewritten" if text != body else "restored") if rewritten else None
        if rewritten:
            now = to_iso(datetime.now(tz=_UTC))
            changed.update(created=to_iso(at), updated=now, rewrittenAt=now, status="recorded",
                           promptHash=prompt_hash(prompt.text), **usage)
            # the tokens of the answer to the prompt there now, none when it has none yet: the earlier
            # prompt's answer is gone from the file (its tokens were kept, its cost counted — found by
            # a tester: the cost differed from a clean import of the same file)
            meta = {k: v for k, v in meta.items() if k not in ("supersededBy", "tokens", "tokensByModel")}
        if changed:
            store.upsert(RecordKind.PROMPT, {**meta, **changed}, text if rewritten else body)
    return outcome


def _same_instant(recorded: Any, at: datetime) -> bool:
    """Whether a record's ``created`` (ISO text) is the instant ``at`` (to the millisecond)."""
    try:
        return isinstance(recorded, str) and abs(from_iso(recorded) - at) < timedelta(milliseconds=1)
    except ValueError:
        return False


def _refuse_shifted_turns(store: VaultStore, transcript: Transcript, base: str, intervals: list,
                          homes: dict[int, str]) -> None:
    """Refuse a transcript read with lines left out (:attr:`Transcript.lines_left_out`) when it
    would change the text of a turn the vault holds from an earlier read, or take turns back: a
    line of a prompt that cannot be read now moves every later prompt one turn up — t6 took t7's
    text, and so on, and the last turn was marked rewound. Left as the vault holds it.

    Raises
    ------
    MemoError
        The first line left out, and what to do.
    """
    for number, interval in enumerate(intervals, 1):
        project, session_id = homes[number], f"{base}-{number}"
        held = index.last_current_turn(store.conn, project, session_id)
        shifted = held > len(interval.prompts)
        for turn, prompt in enumerate(interval.prompts[:held], 1):
            if shifted:
                break
            row = index.get_row(store.conn, project, f"prompt-{session_id}-t{turn}", RecordKind.PROMPT.value)
            known = json.loads(row["meta"]) if row is not None else {}
            shifted = row is not None and row["status"] != "superseded" and "promptHash" in known \
                and known["promptHash"] != prompt_hash(prompt.text)
        if shifted:
            raise MemoError(f"{transcript.lines_left_out[0]} — and the turns after it would stand at other numbers "
                            f"than the vault holds them (session {session_id}): left as the vault holds it; repair "
                            "the line (or put the file back as it was), then import again")


#: ``supersededBy`` of an imported record its transcript no longer holds (rewound, cut short):
#: the import of a file that holds it again brings it back.
REWOUND = "rewound"


def _rewound(store: VaultStore, project: str, session_id: str, first: int) -> int:
    """Turns of an imported session from number ``first`` on that its transcript no longer
    holds (the agent rewound the conversation): ``status: superseded``, kept in the vault,
    out of lists and reports. The number superseded now."""
    changed, turn = 0, first
    with store.lock():
        while (found := store.read(project, RecordKind.PROMPT, f"prompt-{session_id}-t{turn}")) is not None:
            meta, body = found
            if meta.get("status") != "superseded" and str(meta.get("source", "")).startswith("import:"):
                store.upsert(RecordKind.PROMPT, {**meta, "status": "superseded", "supersededBy": ["rewound"],
                                                 "updated": to_iso(datetime.now(tz=_UTC))}, body)
                changed += 1
            turn += 1
    return changed


def _refuse_joining_a_held_session(store: VaultStore, transcript: Transcript, base: str, intervals: list,
                                   invoiced: dict[tuple[str, str], str], result: ImportResult | None = None) -> None:
    """Refuse the conversation whole when a session of it on an issued invoice or timed by a
    person no longer is the work interval of its number — the file has fewer intervals now (lines
    stamped between two joined them), or its intervals moved along (a part joined, then the file
    grew): that session stays as it is, and the turns of it taken into another, or another part's
    written into it, were counted twice or billed nothing (found by two breakers).

    Raises
    ------
    MemoError
        Naming the session, why it stays, and how to take the file in.
    """
    n = 1
    while rows := index.where_is(store.conn, session_record_id(f"{base}-{n}"), RecordKind.SESSION.value):
        for row in rows:
            number = invoiced.get((row["project"], row["session_id"]))
            if not number and not _timed_by_hand(index.get_row(store.conn, row["project"], row["id"],
                                                               RecordKind.SESSION.value)):
                continue
            found = store.read(row["project"], RecordKind.SESSION, row["id"])
            if found is None or found[0].get("status") == "superseded":
                continue
            first = index.get_row(store.conn, row["project"], f"prompt-{row['session_id']}-t1", RecordKind.PROMPT.value)
            if n <= len(intervals) and (first is None or not intervals[n - 1].prompts or intervals[n - 1].prompts[0].at
                                        is None or first["created"] == to_iso(intervals[n - 1].prompts[0].at)):
                continue  # still the interval of its number (its first turn where it was)
            why = (f"is on invoice {number}, issued (credit it first: memo invoice credit {number})" if number
                   else "has times a person set (memo session edit): they are kept")
            if number and result is not None:  # the digest says it (import_held_back): it was silent (a breaker)
                result.held_sessions.setdefault((transcript.source, transcript.transcript_id), []).append(
                    {"project": row["project"], "sessionId": row["session_id"], "invoice": number, "turns": 0,
                     "minutes": 0})
            raise MemoError(f"transcript {transcript.transcript_id}: its work intervals no longer fall as they did "
                            f"(the file was cut there, or lines stamped between two intervals joined them: the part "
                            f"imported as session {row['session_id']} is not the interval of its number now), which "
                            f"{why}; the file is not taken in, lest its turns count twice")
        n += 1


def _timed_by_hand(row: Any) -> bool:
    """Whether the session of the index's ``row`` (its record's ``meta``) carries times a person
    set (``timesEdited``)."""
    try:
        return bool(json.loads(row["meta"]).get("timesEdited")) if row is not None and row["meta"] else False
    except (ValueError, TypeError, IndexError, KeyError):
        return False


def _past_the_last_interval(store: VaultStore, base: str, count: int, invoiced: dict[tuple[str, str], str],
                            by: list[str], result: ImportResult, transcript: Transcript) -> int:
    """Supersede the imported sessions of the conversation numbered past its ``count`` work
    intervals (``{base}-{n}``, n > count) and their imported turns: lines appended at the end but
    stamped between two intervals joined them (the first took every turn, the second kept its own:
    counted twice — found by a tester of bad files), or the file lost its whole last interval (it
    billed on). A session a person timed by hand, or one on an issued invoice (said, as a changed
    one is), is left as it is. The number of records superseded."""
    rows, n = [], count + 1
    while found := index.where_is(store.conn, session_record_id(f"{base}-{n}"), RecordKind.SESSION.value):
        rows += found
        n += 1
    kept = []
    for row in rows:
        found = store.read(row["project"], RecordKind.SESSION, row["id"])
        if found is None or found[0].get("status") == "superseded" or found[0].get("timesEdited") \
                or not str(found[0].get("source") or "").startswith("import:"):
            continue
        if (row["project"], row["session_id"]) in invoiced:
            result.errors.append(f"{redact_secrets(str(transcript.path))[0]}: session {row['session_id']} is on "
                                 f"invoice {invoiced[(row['project'], row['session_id'])]}, issued: left as it is "
                                 "(the transcript no longer holds it apart; credit the invoice first to take that "
                                 "in: memo invoice credit)")
            result.held_back.add((transcript.source, transcript.transcript_id))
            result.held_sessions.setdefault((transcript.source, transcript.transcript_id), []).append(
                {"project": row["project"], "sessionId": row["session_id"],
                 "invoice": invoiced[(row["project"], row["session_id"])], "turns": 0, "minutes": 0})
            continue
        kept.append(row)
    # marked as a rewound turn is: the file put back (cut by mistake), its import brings them back
    # (found by a breaker: "put it back and import again — they come back", and they did not)
    return _supersede(store, kept, [REWOUND], turns_only=True) if kept else 0


def _hook_sessions(store: VaultStore, transcript: Transcript) -> list:
    """Index rows of every work interval of the session a hook recorded live for this
    conversation (``{agent}-{its id}``, ``.2`` …, in any project), in order; none for a source
    no hook captures."""
    from ..agent_ids import AGENTS, hook_session_id
    from ..capture import numbered

    if transcript.source not in AGENTS:
        return []
    try:
        hook_id = hook_session_id(transcript.source, transcript.transcript_id)
    except InvalidFieldError:
        return []
    return _intervals(store, hook_id, numbered)


def _hook_client(store: VaultStore, transcript: Transcript) -> str | None:
    """The client of the session a hook recorded live for this conversation (its latest work
    interval's), when it names one: the imported sessions that supersede it bill that client
    (a client given to it — by hand, or taken with a hand-off — had been lost to ``internal``)."""
    for row in reversed(_hook_sessions(store, transcript)):
        found = store.read(row["project"], RecordKind.SESSION, row["id"])
        client = found[0].get("client") if found else None
        if isinstance(client, str) and client:
            return client
    return None


def supersede_hook_session(store: VaultStore, transcript: Transcript, sessions: list[tuple[str, str]]) -> int:
    """One turn, however it arrived (issue 14): the session a hook captured live for the same
    conversation of the same agent (``{agent}-{its id}``, in any project) and its turns become
    ``status: superseded`` with ``supersededBy`` naming the imported sessions — the transcript is
    the truth, with its own start, end and idle-gap intervals. Superseded records stay in the
    vault (a file is never deleted) but lists, search, reports and the digest leave them out;
    turns the hook records later stay visible until the next import takes them in. The number
    of records superseded now."""
    rows = _hook_sessions(store, transcript)
    if not rows:
        return _supersede_folder_hook_turns(store, transcript, sessions)
    by = [f"{project}/{sid}" for project, sid in sessions]  # the imported sessions, (project, id) each
    # an agent waiting for its person: the session stays open (the digest's agent_waiting, the hook's
    # next Notification and Stop are its), its turns give way — the import after the wait supersedes it
    # (found by a breaker: memo watch made the wait vanish)
    waiting = [row for row in rows if _waits(store, row)]
    changed = sum(_supersede(store, [row], by, only={turn for turn, _, _ in _session_turns(store, row)})
                  for row in waiting)
    return changed + _supersede(store, [row for row in rows if row not in waiting], by)


#: Agents whose hook events may name no session: their hooks record the repository's session
#: (:func:`~..capture.folder_session`), which holds every conversation of it
FOLDER_HOOK_AGENTS = ("copilot",)


def _supersede_folder_hook_turns(store: VaultStore, transcript: Transcript, sessions: list[tuple[str, str]]) -> int:
    """The turns a hook recorded of this conversation in its repository's session — an agent
    whose hook events name no session (Copilot CLI: timestamp, cwd, prompt; found by a tester of
    other agents: every turn counted twice, the hook's minutes beside the transcript's) — are
    superseded by the imported sessions: each of the repository session's turns whose text this
    import holds, within the conversation's time; a repository session all of whose turns it
    holds is superseded whole. Turns of other conversations of the repository stay. The number
    of records superseded now."""
    from ..agent_ids import hook_session_id
    from ..capture import folder_session, numbered

    if transcript.source not in FOLDER_HOOK_AGENTS or not transcript.folder or not transcript.prompts:
        return 0
    try:
        base = hook_session_id(transcript.source, folder_session(transcript.folder))
    except (InvalidFieldError, OSError, ValueError):
        return 0
    repository = _intervals(store, base, numbered)
    if not repository:
        return 0
    stamps = [p.at for p in transcript.prompts if p.at is not None] + list(transcript.activity)
    if not stamps:
        return 0
    reach = timedelta(minutes=AGENT_RECORD_MINUTES)
    first, last = min(stamps) - reach, max(stamps) + reach
    mine = [row for project, sid in sessions
            for row in index.where_is(store.conn, session_record_id(sid), RecordKind.SESSION.value)
            if row["project"] == project]
    ours = [(_said(body), _instant(meta.get("created"))) for row in mine for _, meta, body in _session_turns(store, row)]
    by = [f"{row['project']}/{row['session_id']}" for row in mine]
    turns_of = {row["id"]: _session_turns(store, row, superseded=True) for row in repository}
    # each imported turn takes one hook turn of its text, the nearest in time: "run the tests" typed in two
    # windows of one repository is two turns, one of each conversation (found by a breaker)
    pairs = sorted((abs((created - at).total_seconds()), n, turn_id)
                   for n, (said, at) in enumerate(ours) if at is not None
                   for turns in turns_of.values() for turn_id, meta, body in turns
                   # (one this import's sessions took before still claims its match: a grown file read again)
                   if _said(body) == said and (meta.get("status") != "superseded"
                                               or set(meta.get("supersededBy") or []) & set(by))
                   and (created := _instant(meta.get("created"))) is not None and first <= created <= last
                   and abs((created - at).total_seconds()) <= reach.total_seconds())
    taken: set[str] = set()
    matched: set[int] = set()
    for _, n, turn_id in pairs:
        if n not in matched and turn_id not in taken:
            matched.add(n)
            taken.add(turn_id)
    changed = 0
    for row in repository:
        turns = turns_of[row["id"]]
        held = {turn_id for turn_id, _, _ in turns if turn_id in taken}
        if held:
            whole = len(held) == len(turns) and not _waits(store, row)
            changed += _supersede(store, [row], by, only=None if whole else held)
    return changed


def _instant(value: object) -> datetime | None:
    try:
        return from_iso(str(value))
    except (ValueError, InvalidFieldError):
        return None


def _waits(store: VaultStore, row: Any) -> bool:
    """Whether the hook session of index ``row`` is open and its agent waits for the person."""
    from ..sessions import waiting_since

    found = store.read(row["project"], RecordKind.SESSION, row["id"])
    return found is not None and found[0].get("status") == "active" and not found[0].get("endTime") \
        and waiting_since(found[0]) is not None


#: How far apart a transcript's prompt and the agent's own record of it over MCP may lie (minutes).
AGENT_RECORD_MINUTES = 15


def give_way_to_the_agents_session(store: VaultStore, transcript: Transcript, sessions: list[tuple[str, str]]) -> int:
    """One turn, however it arrived (SPEC §8): the imported turns of ``sessions`` (``(project,
    id)``) that the agent recorded itself over MCP in a session of its own (spec-memo's agents:
    ``session_start``, ``record``) — the same text, within :data:`AGENT_RECORD_MINUTES` of it, in
    the same project, by this transcript's agent (:func:`~..prompts.same_agent`, the turn's and its
    session's names) and its person (no other owner) — are superseded by that session, their token counts and model carried to
    the agent's turn (its AI cost bills under the agent's session's client); an imported session
    left with no turn of its own is superseded too: the agent's session holds the conversation and
    bills its time (found by an integrator and a breaker: turns twice, the cost and 49 minutes
    under ``internal`` beside the agent's hour). The number of records superseded now."""
    changed = 0
    now = to_iso(datetime.now(tz=_UTC))
    reach = timedelta(minutes=AGENT_RECORD_MINUTES)
    for project, session_id in sessions:
        row = {"project": project, "session_id": session_id, "id": session_record_id(session_id)}
        held = index.get_row(store.conn, project, row["id"], RecordKind.SESSION.value)
        try:  # one index lookup when no agent recorded over MCP then and there (every import passes here)
            since, until = from_iso(str(held["start_time"])) - reach, from_iso(str(held["end_time"] or
                                                                                 held["start_time"])) + reach
        except (TypeError, ValueError, MemoError):
            continue
        if held is None or not index.agent_turns_between(store.conn, project, to_iso(since), to_iso(until)):
            continue
        turns = _session_turns(store, row)
        if not turns:
            continue
        agents: set[str] = set()
        taken: set[str] = set()
        with store.lock():
            for turn_id, meta, body in turns:
                twin = _agents_record(store, transcript, project, meta, body, taken)
                if twin is None:
                    continue
                taken.add(twin[0]["id"])
                agents.add(f"{project}/{twin[0]['sessionId']}")
                carried = {key: meta[key] for key in ("tokens", "tokensByModel", "model") if meta.get(key)}
                if carried and any(twin[0].get(key) != value for key, value in carried.items()):
                    store.upsert(RecordKind.PROMPT, {**twin[0], **carried, "updated": now}, twin[1])
                    changed += 1
                by = [f"{project}/{twin[0]['sessionId']}"]
                if meta.get("status") != "superseded":
                    store.upsert(RecordKind.PROMPT, {**meta, "status": "superseded", "supersededBy": by,
                                                     "updated": now}, body)
                    changed += 1
            found = store.read(project, RecordKind.SESSION, session_record_id(session_id))
            if found is None or found[0].get("status") == "superseded":
                continue
            # superseded by the agent's session before, and back with a turn of its own (the transcript grew)
            before = found[0].get("supersededBy") or found[0].get("gaveWayTo")
            if not (agents or _names_agent_sessions(store, before)):
                continue
            live = _live_turns(store, row)
            if not live:
                store.upsert(RecordKind.SESSION, {**found[0], "status": "superseded",
                                                  "supersededBy": sorted(agents) or before, "updated": now}, found[1])
                changed += 1
            else:
                changed += _begin_at_its_own_turns(store, project, session_id, found, live, now)
    return changed


def _names_agent_sessions(store: VaultStore, named: Any) -> bool:
    """Whether ``named`` (a ``supersededBy``) lists sessions an agent opened itself over MCP
    (``project/sessionId``, not an import's): what an imported session gave way to."""
    if not isinstance(named, list) or not named:
        return False
    for by in named:
        project, _, session_id = str(by).partition("/")
        try:
            found = store.read(project, RecordKind.SESSION, session_record_id(session_id)) if session_id else None
        except (MemoError, ValueError):
            return False
        if found is None or str(found[0].get("source") or "").startswith("import:"):
            return False
    return True


def _live_turns(store: VaultStore, row: dict[str, Any]) -> list[dict[str, Any]]:
    return [meta for _, meta, _ in _session_turns(store, row) if meta.get("status") != "superseded"]


def _begin_at_its_own_turns(store: VaultStore, project: str, session_id: str, found: tuple[dict[str, Any], str],
                            live: list[dict[str, Any]], now: str) -> int:
    """An imported session some of whose turns gave way to the agent's own session bills from its
    first turn of its own: the time before it is the agent's session's (found by a breaker: a
    prompt appended after the agent's session brought the imported session back from the
    conversation's start, billing the agent's 55 minutes again — made non-billable by the person).
    Its ``supersededBy`` of before becomes ``gaveWayTo``. Times set by hand, or on an issued
    invoice, stay. The number of records changed (0 or 1)."""
    meta, body = found
    changes: dict[str, Any] = {}
    if "supersededBy" in meta:  # back: it holds turns of its own (completed and superseded read as both); whom
        # it gave way to is kept (``gaveWayTo``): the next import keeps its start (it billed from the
        # conversation's start again at the next growth — found by a breaker)
        changes.update(supersededBy=None, gaveWayTo=meta["supersededBy"])
    try:
        first = min(from_iso(str(turn["created"])) for turn in live)
        start = from_iso(str(meta["startTime"]))
    except (KeyError, TypeError, ValueError):
        first = start = None
    if first is not None and start is not None and first > start and not (
            meta.get("timesEdited") or times_written_by_hand(meta) or (project, session_id) in invoiced_in(store.root)):
        changes["startTime"] = to_iso(first)
        if meta.get("endTime"):
            end = max(first, from_iso(str(meta["endTime"])))
            changes.update(endTime=to_iso(end), durationMinutes=minutes_between(first, end))
    if not changes:
        return 0
    updated = {key: value for key, value in {**meta, **changes, "updated": now}.items()
               if not (key == "supersededBy" and value is None)}
    store.upsert(RecordKind.SESSION, updated, body)
    return 1


def _agents_record(store: VaultStore, transcript: Transcript, project: str, meta: dict[str, Any], body: str,
                   taken: set[str]) -> tuple[dict[str, Any], str] | None:
    """The agent's own record over MCP of the imported turn ``meta`` (see
    :func:`give_way_to_the_agents_session`), or None: another agent's turn of the same words
    ("continue", "yes" — a Codex agent's, another person's) is not this conversation's (found by
    a breaker: a whole imported session gave way to one)."""
    from ..agent_ids import AGENTS
    from ..prompts import same_agent, same_person

    hooked = transcript.source if transcript.source in AGENTS else None
    if hooked is None:
        return None  # a transcript of no agent memo hooks: no agent of it records over MCP
    try:
        at = from_iso(str(meta.get("created")))
    except (ValueError, MemoError):
        return None
    reach = timedelta(minutes=AGENT_RECORD_MINUTES)
    said = _said(body)
    for record_id in index.agent_turns_between(store.conn, project, to_iso(at - reach), to_iso(at + reach)):
        if record_id in taken:
            continue
        found = store.read(project, RecordKind.PROMPT, record_id)
        if found is None or _said(found[1]) != said or not found[0].get("sessionId"):
            continue
        session = store.read(project, RecordKind.SESSION, f"session-{found[0]['sessionId']}")
        named = [(one.get("agent"), one.get("ide")) for one in (found[0], session[0] if session else {})]
        if not all(same_agent(agent if agent else None, hooked, ide, found[1]) or (not agent and not ide)
                   for agent, ide in named):
            continue  # another agent's own words
        owners = [one.get("owner") for one in (session[0] if session else {},) if one.get("owner")]
        if owners and transcript.owner and not same_person(owners[0], transcript.owner):
            continue  # another person's
        return found
    return None


def _intervals(store: VaultStore, base: str, numbered: Callable[[str, int], str]) -> list:
    """Index rows (project, id, session_id) of every session ``numbered(base, n)``, n = 1, 2 …
    while one exists (in any project)."""
    rows, n = [], 1
    while found := index.where_is(store.conn, session_record_id(numbered(base, n)), RecordKind.SESSION.value):
        rows += found
        n += 1
    return rows


def _session_turns(store: VaultStore, row: Any, superseded: bool = False) -> list[tuple[str, dict[str, Any], str]]:
    """``(id, frontmatter, body)`` of every turn of the session of index ``row``, in order (with
    ``superseded``, its superseded turns too)."""
    from ...index.query import PromptFilter

    _, turns = index.count_and_page(store.conn, "prompt", PromptFilter(session_id=row["session_id"],
                                                                       projects=[row["project"]],
                                                                       superseded=superseded),
                                    1_000_000, 0, "turn-asc")
    found = [(turn["id"], store.read(row["project"], RecordKind.PROMPT, turn["id"])) for turn in turns]
    return [(turn_id, record[0], record[1]) for turn_id, record in found if record is not None]


def _supersede(store: VaultStore, rows: list, by: list[str], only: set[str] | None = None,
               turns_only: bool = False) -> int:
    """Mark the sessions of ``rows`` (index rows) and their turns ``status: superseded`` with
    ``supersededBy`` = ``by`` (``project/sessionId`` each); with ``only``, just those turns (by
    id), the sessions left as they are. The number of records changed (``turns_only``: of turns,
    as a line that says "N turns … superseded" counts them)."""
    changed = 0
    now = to_iso(datetime.now(tz=_UTC))
    with store.lock():
        for row in rows:
            found = store.read(row["project"], RecordKind.SESSION, row["id"])
            if found is None:
                continue
            meta, body = found
            if only is None and (meta.get("status") != "superseded" or meta.get("supersededBy") != by):
                store.upsert(RecordKind.SESSION, {**meta, "status": "superseded", "supersededBy": by, "updated": now},
                             body)
                changed += not turns_only
            for turn_id, turn_meta, turn_body in _session_turns(store, row):
                if only is not None and turn_id not in only:
                    continue
                if turn_meta.get("status") != "superseded" or turn_meta.get("supersededBy") != by:
                    store.upsert(RecordKind.PROMPT, {**turn_meta, "status": "superseded", "supersededBy": by,
                                                     "updated": now}, turn_body)
                    changed += 1
    return changed


def _said(body: str) -> str:
    """A turn's text as two formats of one conversation both hold it (spacing aside)."""
    return " ".join(body.split())


def _supersede_copied(store: VaultStore, exports: list, originals: list) -> int:
    """Supersede what the export sessions of ``exports`` copy of the agent transcript's sessions
    ``originals`` (index rows both): an export turn whose text the agent's transcript holds too;
    an export session whose every turn it holds. A turn of the export the transcript lacks (a
    transcript the agent pruned, an export that grew since, or an export that only names the
    session id) stays counted, and so does its session."""
    said = {_said(body) for row in originals for _, _, body in _session_turns(store, row)}
    by = [f"{row['project']}/{row['session_id']}" for row in originals]
    changed = 0
    for row in exports:
        turns = _session_turns(store, row)
        copied = {turn_id for turn_id, _, body in turns if _said(body) in said}
        if not copied:
            continue
        changed += _supersede(store, [row], by, only=None if len(copied) == len(turns) else copied)
    return changed


#: The agent a SpecStory export names in its session comment → the importer of that agent's own
#: transcript of the same session (its id is the export's ``transcript_id``).
NATIVE_SOURCES = {"claude-code": "claude-code", "codex": "codex", "gemini": "gemini", "cursor": "cursor"}
#: Importers of exports that copy another agent's transcript.
EXPORT_SOURCES = ("specstory",)


def supersede_copies(store: VaultStore, transcript: Transcript, sessions: list[tuple[str, str]]) -> int:
    """One conversation, however many formats hold it: a SpecStory export of an agent session
    whose own transcript is imported too (Claude Code's JSONL, a Codex rollout, a Gemini chat,
    Cursor's database — the same session id) counted every turn twice. The agent's own
    transcript is the truth (its flags and times are the agent's): the export's turns it holds
    too, and the export's sessions all of whose turns it holds, become ``status: superseded``
    with ``supersededBy`` naming the agent transcript's sessions, whichever was imported first
    (:func:`_supersede_copied`: what the transcript lacks stays counted). ``sessions``: this
    import's ``(project, session id)``. The number of records superseded now."""
    from dataclasses import replace

    def numbered(base: str, n: int) -> str:
        return f"{base}-{n}"

    def mine() -> list:  # this import's sessions, as index rows (asked only when there is a copy)
        return [row for project, sid in sessions
                for row in index.where_is(store.conn, session_record_id(sid), RecordKind.SESSION.value)
                if row["project"] == project]

    if transcript.source in EXPORT_SOURCES:
        native = NATIVE_SOURCES.get(transcript.agent or "")
        if native is None:
            return 0
        originals = _intervals(store, transcript_session_base(replace(transcript, source=native)), numbered)
        return _supersede_copied(store, mine(), originals) if originals else 0
    if transcript.source not in NATIVE_SOURCES.values():
        return 0
    changed = 0
    for export in EXPORT_SOURCES:
        copies = _intervals(store, transcript_session_base(replace(transcript, source=export)), numbered)
        changed += _supersede_copied(store, copies, mine()) if copies else 0
    return changed


ParseFn = Callable[[Path, ImportOptions], ParseResult]


def _spent(prompt: HumanPrompt) -> int:
    return sum(prompt.tokens.values()) if prompt.tokens else 0


def merge_transcripts(transcripts: list[Transcript]) -> list[Transcript]:
    """Join the transcripts that share ``(source, transcript_id)`` (one conversation saved in
    several files, or a copy of one) into one, so that a re-saved or split conversation is
    neither lost nor billed twice. Pure.

    Prompts are united by ``(time, text)``, keeping for each the largest number of times one
    file holds it (an identical copy adds nothing; a prompt typed twice stays twice) and, of its
    copies, the one with the most tokens spent on it; then ordered by time (prompts without a
    time keep their order). Activity is the union. The conversation's metadata (project, model)
    comes from the file whose work began first: the result never depends on file names or order.
    """
    groups: dict[tuple[str, str], list[Transcript]] = {}
    for transcript in transcripts:
        groups.setdefault((transcript.source, transcript.transcript_id), []).append(transcript)
    merged = []
    for group in groups.values():
        if len(group) == 1:
            merged.append(group[0])
            continue
        # the conversation's own file first: the one whose work began first (then the fuller one),
        # never the order of names or arguments, so a renamed file changes nothing
        group.sort(key=lambda t: (not t.activity, min(t.activity, default=_EPOCH), -len(t.activity),
                                  -len(t.prompts), str(t.path)))
        first = group[0]
        counts: dict[tuple, int] = {}
        order: list[HumanPrompt] = []
        kept: dict[tuple, int] = {}  # (key, occurrence) → its place in order
        for transcript in group:
            seen: dict[tuple, int] = {}
            for prompt in transcript.prompts:
                key = (prompt.at, prompt.text)
                seen[key] = seen.get(key, 0) + 1
                if seen[key] > counts.get(key, 0):
                    counts[key] = seen[key]
                    kept[(key, seen[key])] = len(order)
                    order.append(prompt)
                elif _spent(prompt) > _spent(order[kept[(key, seen[key])]]):
                    order[kept[(key, seen[key])]] = prompt  # the copy that holds more of what answering it cost
        order = _without_estimated_twins(order)
        timed = sorted((p for p in order if p.at is not None), key=lambda p: p.at)
        untimed = [p for p in order if p.at is None]
        activity = sorted({stamp for t in group for stamp in t.activity})
        merged.append(Transcript(
            transcript_id=first.transcript_id, source=first.source, path=first.path, prompts=timed + untimed,
            activity=activity, project_hint=first.project_hint, owner=first.owner, ide=first.ide, model=first.model,
            agent=first.agent, title=next((t.title for t in group if t.title), None),
            project_hash=next((t.project_hash for t in group if t.project_hash), None),
        ))
    return merged


#: How long before the time it was given (its answer's) a prompt whose line carried no time may
#: have been typed: the same text stamped by its own line within this is the same prompt.
ESTIMATED_WINDOW = timedelta(minutes=30)


def _without_estimated_twins(order: list[HumanPrompt]) -> list[HumanPrompt]:
    """``order`` without each prompt whose time was estimated (:attr:`HumanPrompt.estimated`) that
    another file of the conversation holds with its own time (the same text, at most
    :data:`ESTIMATED_WINDOW` before): one prompt, its copy with the most spent on it giving the
    tokens (a file with null times and its timed original counted every turn twice: found by a breaker)."""
    own = {}
    for prompt in order:
        if not prompt.estimated and prompt.at is not None:
            own.setdefault(prompt.text, []).append(prompt)
    kept = []
    for prompt in order:
        if prompt.estimated and prompt.at is not None:
            twin = next((other for other in own.get(prompt.text, [])
                         if timedelta(0) <= prompt.at - other.at <= ESTIMATED_WINDOW), None)
            if twin is not None:
                if _spent(prompt) > _spent(twin):
                    twin.tokens, twin.model = prompt.tokens, prompt.model or twin.model
                own[prompt.text].remove(twin)  # one twin each
                continue
        kept.append(prompt)
    return kept


def _folder_of_hash(store: VaultStore, digest: str) -> Path | None:
    """The folder whose path's SHA-256 is ``digest`` (how Gemini CLI names a project), among the
    folder memo runs in and those above it, and the repositories the vault's projects were last
    seen in; None when none is. Hashed once per folder memo runs in and set of the vault's
    projects (a running watcher hashes again when a project is new)."""
    from ..projects import last_seen_root

    try:
        here = Path.cwd()
    except OSError:
        here = None
    try:
        projects = tuple(index.project_names(store.conn)) if store.exists else ()
    except (MemoError, sqlite3.Error):
        projects = ()
    key = (str(store.root), str(here), projects)
    known = _FOLDER_HASHES.get(key)
    if known is None:
        folders: set[Path] = set()
        if here is not None:
            folders.update(folder for folder in (here, *here.parents) if folder.name)  # never "/" (no name)
        for project in projects:
            try:
                root = last_seen_root(store, project)
            except (MemoError, sqlite3.Error):
                root = None
            if root is not None:
                folders.add(Path(root))
        known = {hashlib.sha256(str(folder).encode("utf-8", "surrogateescape")).hexdigest(): folder
                 for folder in folders}
        _FOLDER_HASHES.clear()  # one vault's, of now: the last asked
        _FOLDER_HASHES[key] = known
    return known.get(digest.strip().lower())


#: :func:`_folder_of_hash`'s hashes, of the last vault, folder and projects asked.
_FOLDER_HASHES: dict[tuple, dict[str, Path]] = {}


def _article(source: str) -> str:
    name = source or "a known"
    return ("an " if name[:1] in "aeio" else "a ") + name


def _refused_body(text: str) -> str | None:
    """Why :func:`~memo_analytics.services.prompts.record_prompt` refuses ``text`` as a turn's
    body on its size or a NUL (:func:`~memo_analytics.services.prompts.body_refusal`), else None."""
    try:
        refused = body_refusal(text)
    except UnicodeEncodeError:
        return None  # valid_text mends it on the way in: not refused for it
    return f"Invalid body: {refused}" if refused else None


def _one_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return redact_secrets(text)[0]


#: From this many files on, transcripts are parsed in worker processes (one per core, at most
#: :data:`MAX_PARSE_WORKERS`) while this process writes (issue 16 point 4); below, starting them
#: costs more than it saves.
PARALLEL_FROM = 24
MAX_PARSE_WORKERS = 4


def _parse_or_reason(parse: ParseFn, path: Path, options: ImportOptions, parse_from=None,
                     start=None) -> "tuple[ParseResult | str, object, bool]":
    """``parse(path, options)`` (or, for an importer that reads on from a checkpoint,
    ``parse_from(path, options, start)``: :mod:`.resume`), or the one-line reason the file could
    not be read or parsed; with the checkpoint to keep and whether the read went on from ``start``."""
    try:
        if parse_from is not None:
            return parse_from(path, options, start)
        return parse(path, options), None, False
    except (OSError, ValueError, UnicodeDecodeError, RecursionError, MemoError) as exc:
        return _one_line(exc), None, False


@contextmanager
def worker_pool(count: int) -> Iterator[object | None]:
    """Worker processes for an import of ``count`` files — one per core, at most
    :data:`MAX_PARSE_WORKERS`, forked now, dying with this process and deaf to Ctrl-C
    (:func:`memo_analytics.index.workers.worker_processes`) — or None when the import
    is too small for them to pay, there is one core, or this process runs other threads (a
    watcher, a server: a lock another thread holds at the fork would stay held in the worker).
    They parse the files (:func:`parsed_files`), then render the records the batch writes
    (:meth:`VaultStore.batch`). Fork it before the vault lock is taken."""
    cores = os.cpu_count() or 1
    if count < PARALLEL_FROM or cores < 2 or threading.active_count() > 1:
        yield None
        return
    from ...index.workers import worker_processes

    with worker_processes(min(cores, MAX_PARSE_WORKERS), _start_worker) as pool:
        yield pool


#: How much lower the workers' scheduling priority is than the writer's (``nice``): the writer is
#: the import's critical path; the workers, reading ahead of it, take what it leaves of the cores.
WORKER_NICENESS = 5


def _start_worker() -> None:
    """A parse worker's start: it yields the cores to the writer."""
    try:
        os.nice(WORKER_NICENESS)
    except (OSError, AttributeError):
        pass


#: Files a worker parses per task (:func:`parsed_files`).
PARSE_CHUNK = 4
#: How long a writer waits for the next parse before it leaves the vault lock free until the
#: parse is there (:func:`parsed_files` ``idle``): a long parse keeps no other writer waiting.
IDLE_AFTER_SECONDS = 0.2


#: A worker's prices of the turns it parsed (:func:`_parse_chunk`), kept over its tasks.
_worker_prices: PriceCache | None = None


def _parse_chunk(parse: ParseFn, paths: list[Path], options: ImportOptions, parse_from,
                 starts: list, price: bool = False) -> tuple[list[tuple], dict[str, str | None]]:
    """:func:`_parse_or_reason` of each of ``paths`` (one worker's task), and with ``price`` the
    prices of their turns this worker had not worked out before (:func:`_price_turns`,
    ``{key: price}`` as :attr:`PriceCache.entries` keeps them)."""
    global _worker_prices
    outcomes = [_parse_or_reason(parse, path, options, parse_from, start) for path, start in zip(paths, starts)]
    if not price:
        return outcomes, {}
    if _worker_prices is None:
        _worker_prices = PriceCache()
    known = len(_worker_prices.entries)
    try:
        for parsed, _, _ in outcomes:
            if not isinstance(parsed, str):
                _price_turns(parsed, _worker_prices)
    except Exception:  # noqa: BLE001 — a cache: a turn it cannot price here is priced by the report
        pass
    keys = list(_worker_prices.entries)[known:]
    return outcomes, {key: _worker_prices.entries[key] for key in keys}


def parsed_files(paths: list[Path], parse: ParseFn, options: ImportOptions, parse_from=None,
                 starts: dict | None = None, pool=None,
                 idle: Callable[[], ContextManager] | None = None, prices: dict | None = None
                 ) -> Iterator[tuple[Path, "ParseResult | str", object, bool]]:
    """``(path, its ParseResult or the reason it failed, the checkpoint to keep, whether it was
    read on from its checkpoint in ``starts``)`` for each of ``paths``, in order; parsed by the
    workers of ``pool`` (:func:`worker_pool`) when there is one, else in this process. With a
    pool, a wait for the next parse longer than :data:`IDLE_AFTER_SECONDS` goes on inside
    ``idle()`` (e.g. :meth:`VaultStore.batch_released`). With a pool and ``prices``, the workers
    also price the turns they read, into ``prices`` (:func:`_parse_chunk`)."""
    starts = starts or {}
    if pool is None:
        for path in paths:
            yield path, *_parse_or_reason(parse, path, options, parse_from, starts.get(path))
        return
    from ...index.workers import in_order

    chunks = [paths[at:at + PARSE_CHUNK] for at in range(0, len(paths), PARSE_CHUNK)]
    tasks = [(parse, chunk, options, parse_from, [starts.get(p) for p in chunk], prices is not None)
             for chunk in chunks]
    for chunk, (outcomes, priced) in zip(chunks, in_order(pool, _parse_chunk, tasks, idle, IDLE_AFTER_SECONDS)):
        if prices is not None:
            prices.update(priced)
        for path, outcome in zip(chunk, outcomes):
            yield path, *outcome


def _count_parse(result: ImportResult, path: Path, parsed: ParseResult, source: str, held: dict,
                 where: dict) -> None:
    """Count one file's parse into ``result``: recognised or not, its bad lines; note the
    transcripts it holds (``held``: path → ids; ``where``: a conversation's first file)."""
    name = redact_secrets(str(path))[0]
    if not parsed.recognised and not parsed.problems and (not _size(path) or _blank(path)):
        # a conversation just started (its agent made the file): nothing to read yet; blank lines alone
        # are nothing written either (found by a tester: called "a binary or UTF-16 file?")
        result.empty += 1
        return
    notes = [problem for problem in parsed.problems if is_replacement_note(problem)]  # lines read, a byte replaced
    if not parsed.recognised:
        result.unrecognised += 1
        why = parsed.why
        if parsed.pending_lines and not parsed.problems:
            why = "its only line is still being written: no newline, not JSON yet"
        elif (not why or why == "the file is empty" or "not JSON" in why) and _not_utf8(path):
            # (an importer that knows the binary file for what it is, a database, says so itself)
            why = "its bytes are not UTF-8 text: a binary or UTF-16 file?"
        result.errors.append(f"{name}: not {_article(source)} transcript" + (f" ({why})" if why else ""))
    else:
        result.recognised += 1
        held[path] = [t.transcript_id for t in parsed.transcripts]
    left_out = [problem for problem in parsed.problems if not is_replacement_note(problem)]
    result.skipped += max(parsed.skipped_lines - len(notes), len(left_out), 0)
    result.pending += 1 if parsed.pending_lines else 0
    result.errors.extend(f"{name}: {redact_secrets(problem)[0]}" for problem in parsed.problems)
    for transcript in parsed.transcripts:
        transcript.lines_left_out = left_out
        transcript.path = path  # as given now (a checkpoint keeps the spelling of its first read)
        where.setdefault((transcript.source, transcript.transcript_id), path)


def _blank(path: Path, limit: int = 1 << 20) -> bool:
    """Whether ``path`` holds white space alone (blank lines), read up to ``limit`` bytes."""
    try:
        with open_regular(path) as handle:
            data = handle.read(limit + 1)
    except OSError:
        return False
    return len(data) <= limit and not data.strip()


def _not_utf8(path: Path, limit: int = 1 << 16) -> bool:
    """Whether the first ``limit`` bytes of ``path`` are not UTF-8 text (a character cut at the
    limit aside): a file no importer recognised, named for what it likely is."""
    try:
        with open_regular(path) as handle:
            data = handle.read(limit)
    except OSError:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(data) - 3 or len(data) < limit
    return False


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _transcript_ids(scan: Callable[[Path], frozenset], path: Path) -> frozenset:
    """``scan(path)`` (an importer's ``transcript_ids``), or nothing for a file that cannot be
    read (its parse fails too, holding no transcript)."""
    try:
        return scan(path)
    except (OSError, ValueError, MemoError):
        return frozenset()


#: Files a worker scans for transcript ids per task (:func:`_scans`).
SCAN_CHUNK = 16


def _scan_chunk(scan: Callable[[Path], frozenset], paths: list[Path]) -> list[frozenset]:
    return [_transcript_ids(scan, path) for path in paths]


def _scans(pool, scan: Callable[[Path], frozenset], files: list[Path]) -> Callable[[], list[frozenset]]:
    """Queue the scan of ``files`` for their transcript ids on ``pool``; the function returned
    gives each file's ids, in order (scanned here what a killed worker did not give)."""
    from ...index.workers import in_order

    chunks = [files[at:at + SCAN_CHUNK] for at in range(0, len(files), SCAN_CHUNK)]
    found = in_order(pool, _scan_chunk, [(scan, chunk) for chunk in chunks])
    return lambda: [ids for chunk in found for ids in chunk]


def _write_as_read(parsed: Iterator, scans: Callable[[], list[frozenset]], take: Callable[..., list[Transcript]],
                   write: Callable[[Transcript], None], again: Callable[[Transcript], None]) -> None:
    """Write each conversation once every file that may hold a part of it has been read:
    ``parsed`` gives the files' parses in order (:func:`parsed_files`), ``scans()`` each file's
    transcript ids (a superset: the importer's ``transcript_ids``, :func:`_scans`); ``take`` counts a parse
    and gives its transcripts, ``write`` imports one (merged) conversation. Conversations are
    written in the order of their first file, as :func:`merge_transcripts` orders them, each
    merged from all its files: what a parse of every file first would write. A part found in a
    file the scan did not name (the file changed between its scan and its parse) is merged with
    the rest, and once every file is read the conversation is written again (``again`` first takes
    back what was written of it, when this import put all of it in the vault: it is then written
    as a parse of every file first would write it; else a re-import of it, which may refuse an
    earlier start as any re-import does)."""
    last: dict[str, int] | None = None
    waiting: dict[tuple[str, str], list[Transcript]] = {}  # insertion order: the first file's order
    parts: dict[tuple[str, str], list[Transcript]] = {}
    late: dict[tuple[str, str], None] = {}
    for number, item in enumerate(parsed):
        if last is None:  # the scans were queued before the parses: done by the first parse
            last = {}
            found = scans()
            for place, ids in enumerate(found):
                for transcript_id in ids:
                    last[transcript_id] = place
        for transcript in take(*item):
            key = (transcript.source, transcript.transcript_id)
            written = key in parts and key not in waiting
            parts.setdefault(key, []).append(transcript)
            if written:
                late[key] = None  # written already: again, with this part
            else:
                waiting.setdefault(key, []).append(transcript)
        while waiting:
            key = next(iter(waiting))
            if last.get(key[1], -1) > number:
                break  # a later file may hold more of it (and what follows waits: the order stays)
            write(merge_transcripts(waiting.pop(key))[0])
    for group in waiting.values():
        write(merge_transcripts(group)[0])
    for key in late:
        merged = merge_transcripts(parts[key])[0]
        again(merged)
        write(merged)


def run_import(
    store: VaultStore,
    files: Iterable[Path],
    parse: ParseFn,
    options: ImportOptions,
    progress: Callable[[Path], None] | None = None,
    source: str = "",
    incremental: bool = False,
    batched: bool = True,
) -> ImportResult:
    """Parse every file, then import what they hold (SPEC §7).

    A file that cannot be read or parsed is counted in ``skipped`` with its reason and
    never stops the run; so is a transcript the vault refuses; so is each bad line (its
    reason in ``errors``). A file that is not ``source``'s format is counted in
    ``unrecognised`` and named in ``errors``. Transcripts that several
    files share are merged first (:func:`merge_transcripts`). Reasons are redacted.
    Records are written in groups (:meth:`VaultStore.batch`; ``batched=False``: one by one,
    the same records). With ``incremental``, when ``source``'s parse reads only the file it is
    given (``SELF_CONTAINED`` in its module), a file the last import took in whole and that has
    not changed since is not read again (:mod:`.seen`; ``unchanged`` counts them), and a JSON
    Lines file that only grew is read on from where the last import stopped (an importer with
    ``parse_from``: :mod:`.resume`; ``resumed`` counts them). Without it every file is read whole
    and its state renewed.
    """
    from ...vault.io import remove_quietly
    from . import load_importer
    from .resume import Start, cache_file, write_checkpoint
    from .seen import ImportState, Stamp, options_key, transcript_digest

    result = ImportResult()
    transcripts: list[Transcript] = []
    where: dict[tuple[str, str], Path] = {}
    files = list(files)
    position = {path: number for number, path in enumerate(files)}  # transcripts merge in file order
    # kept also without ``incremental`` (memo import --rescan): a rescan renews every file's state
    # and checkpoint, so whatever a stale or damaged one held is gone after it
    state = ImportState.load(store.layout.meta_dir) if _reads_one_file(source) else None
    fingerprint = options_key(options, source)
    # what an importer reads beside a file (a Claude Code transcript's sub-agents) is part of its stamp
    companions = getattr(load_importer(source), "companions", None) if state is not None else None
    stamps = {path: Stamp.of(path, companions) for path in files} if state is not None else {}
    kept: list[Path] = []
    if state is not None and incremental:
        kept = [path for path in files if state.unchanged(path, source, fingerprint, stamps.get(path))]
        kept = _still_in_the_vault(store, state, kept, source)
        skipped = set(kept)
        files = [path for path in files if path not in skipped]
    parse_from = getattr(load_importer(source), "parse_from", None) if state is not None else None
    starts: dict[Path, Start] = {}
    checkpoints: dict[Path, object] = {}
    if parse_from is not None and incremental:
        for path in files + kept:  # kept: read again with a changed file of the same conversation
            meta = state.resume(path, source, fingerprint)
            if meta is not None:
                key = state.key(path, source)
                starts[path] = Start(meta, cache_file(store.layout.meta_dir, key), key)
    failed: set[tuple[str, str]] = set()
    held: dict[Path, list[str]] = {}
    invoiced: dict[tuple[str, str], str] | None = None
    bases: dict[tuple[str, str], str] = {}  # the base of each written conversation's session ids
    # the conversations this import put in the vault, none of their sessions there before (with the
    # sessions and turns they added to the counts)
    fresh: dict[tuple[str, str], tuple[Written, int, int]] = {}

    refused: dict[tuple[str, str], str] = {}  # why the vault refused a conversation, as in errors

    def again(transcript: Transcript) -> None:
        """Before ``transcript``'s conversation is written again whole: take back what this
        import wrote of it when the vault held none of it before, or what it said of a refusal of
        the part it wrote first (a part alone may start later than the vault's sessions)."""
        key = (transcript.source, transcript.transcript_id)
        taken = fresh.pop(key, None)
        if taken is not None:
            take_back(store, taken[0])
            result.sessions -= taken[1]
            result.turns -= taken[2]
        if key in refused:
            result.errors.remove(refused.pop(key))
            result.skipped -= 1
            result.refused -= 1
            failed.discard(key)

    troubled: set[Path] = set()  # files whose lines gave nothing but problems
    said: dict[Path, list[str]] = {}  # what each file read left out, as said (its path cut off)

    def take(path: Path, parsed: "ParseResult | str", checkpoint: object, resumed: bool) -> list[Transcript]:
        """Count one file's parse into ``result``; the transcripts it holds."""
        said_before = len(result.errors)
        try:
            return _take(path, parsed, checkpoint, resumed)
        finally:  # what it left out, kept with the file's state: said again while the file is unchanged
            shown = redact_secrets(str(path))[0] + ": "
            said[path] = [e[len(shown):] if e.startswith(shown) else e for e in result.errors[said_before:]][:10]

    def _take(path: Path, parsed: "ParseResult | str", checkpoint: object, resumed: bool) -> list[Transcript]:
        result.files += 1
        result.resumed += resumed
        checkpoints[path] = checkpoint
        if isinstance(parsed, str):
            found = []
            result.skipped += 1
            result.errors.append(redact_secrets(str(path))[0] + f": {parsed}")
        else:
            found = parsed.transcripts
            _count_parse(result, path, parsed, source, held, where)
            # a conversation no line of which carries a time has no work interval: its turns vanished
            # without a word (exit 0), or, beside a copy that had times, came in a second time at its
            # start (found by a tester of bad files): said, left out
            timeless = [t for t in found if t.prompts and not t.activity and not any(p.at for p in t.prompts)]
            for transcript in timeless:
                result.skipped += len(transcript.prompts)
                result.errors.append(redact_secrets(str(path))[0] + f": transcript {transcript.transcript_id}: no "
                                     f"line of it carries a time, so no work session holds its "
                                     f"{counted(len(transcript.prompts), 'turn')}: not imported")
            found = [t for t in found if t not in timeless]
            ahead = _left_out_ahead(found, result, redact_secrets(str(path))[0])
            ahead += _left_out_unreadable_ids(found, result, redact_secrets(str(path))[0])
            gone = {id(t) for t in ahead}
            found = [t for t in found if id(t) not in gone]
            if (parsed.problems or timeless or ahead or parsed.pending_lines) and not found:
                troubled.add(path)  # (a chat cut short in a rewrite: read again whole, said again)
        transcripts.extend(found)
        if progress:
            progress(path)
        return found

    def write(transcript: Transcript) -> None:
        nonlocal invoiced
        if invoiced is None:
            invoiced = invoiced_in(store.root)
        key, counted = (transcript.source, transcript.transcript_id), (result.sessions, result.turns)
        result.prompted += bool(transcript.prompts)
        try:
            written = import_transcript(store, transcript, options, result, invoiced)
            bases[key] = written.base
            if written.fresh:
                fresh[key] = (written, result.sessions - counted[0], result.turns - counted[1])
        except VaultBusyError:
            raise  # the vault, not this conversation: the import ends (its batch holds no lock any more)
        except (MemoError, ValueError) as exc:
            result.skipped += 1
            result.refused += 1
            failed.add(key)
            refused[key] = redact_secrets(str(where[key]))[0] + f": {_one_line(exc)}"
            result.errors.append(refused[key])

    scan = getattr(load_importer(source), "transcript_ids", None) if _reads_one_file(source) else None
    prices: dict[str, str | None] = {}  # the workers' prices of the turns they read
    # workers (two cores and more) parse the files, then render the records the batch writes
    with worker_pool(len(files)) as pool:
        if pool is not None and scan is not None and not kept:
            # a first import (or a rescan) on both cores: each conversation is written as soon as
            # the files that may hold it are read, while the workers read on (issue 16 point 4)
            scans = _scans(pool, scan, files)  # queued first
            warm_redaction()  # the writer's own start-up while the workers scan
            batch = store.batch(renderer=pool) if batched else nullcontext()
            with store.deferred_views(), batch:
                _write_as_read(parsed_files(files, parse, options, parse_from, starts, pool,
                                            idle=store.batch_released if batched else None, prices=prices),
                               scans, take, write, again)
        else:
            queue = list(files)
            while queue:
                for item in parsed_files(queue, parse, options, parse_from, starts, pool, prices=prices):
                    take(*item)
                queue = []
                if kept:
                    # an unchanged file holding a conversation a changed file holds too is read again:
                    # a conversation is merged from all its files
                    read_ids = {transcript_digest(transcript_id) for ids in held.values() for transcript_id in ids}
                    queue = [p for p in kept if read_ids & set(state.transcripts(p, source))]
                    again = set(queue)
                    kept = [p for p in kept if p not in again]
            for path in kept:
                result.files += 1
                result.recognised += 1
                result.unchanged += 1
                # a half-read file is said at every import while it stays so, not once (found by a tester: a
                # cron job's first run said the line left out, every later one "1 unchanged", exit 0)
                result.errors += [redact_secrets(str(path))[0] + f": {line} (as its import said: the file is "
                                  "unchanged)" for line in state.left_out(path, source)]
                if progress:
                    progress(path)
            # in the order of the files (not of reading: unchanged files of a conversation are read after
            # the changed ones), so conversations are written in the order a clean import writes them
            transcripts.sort(key=lambda transcript: position.get(transcript.path, len(position)))
            batch = store.batch(renderer=pool) if batched else nullcontext()
            with store.deferred_views(), batch:  # views after the last commit
                for transcript in merge_transcripts(transcripts):
                    write(transcript)
        _note_held(store, source, transcripts, result)
        if prices:  # the first report after the import finds them (issue 16)
            cache = PriceCache(store.layout.meta_dir / "cost-cache.json")
            cache.add(prices)
            cache.save()
        if state is not None:  # after the last commit: a file is noted only once all it held is in the vault
            by_id = {t.transcript_id: t for t in transcripts}
            not_noted = failed | result.held_back
            firsts = {path: [session_record_id(f"{bases.get((by_id[i].source, i)) or transcript_session_base(by_id[i])}-1")
                             for i in ids if i in by_id] for path, ids in held.items()}
            indexed = index.indexed_ids(store.conn, sorted({rid for rids in firsts.values() for rid in rids}),
                                        RecordKind.SESSION.value)
            for path, ids in held.items():
                stamp = stamps.get(path)
                cache = cache_file(store.layout.meta_dir, state.key(path, source))
                checkpoint = checkpoints.get(path)
                if path in starts and checkpoint is None:
                    remove_quietly(cache)  # its checkpoint no longer holds
                if stamp is None or path in troubled or any((by_id[i].source if i in by_id else source, i) in not_noted
                                                              for i in ids):
                    # (a file that gave nothing but its problems is read again, and they are said again: the
                    # next import said "1 unchanged" and exited 0 after a first that refused it)
                    state.forget(path, source)
                    continue
                if checkpoint is not None:
                    try:
                        write_checkpoint(cache, checkpoint, state.key(path, source))
                    except OSError:
                        checkpoint = None  # a cache: the next import reads the file whole
                state.record(path, source, fingerprint, stamp, ids, [rid for rid in firsts[path] if rid in indexed],
                             checkpoint.meta() if checkpoint is not None else None, said.get(path))
            try:
                with store.lock():  # two imports at once each add their files
                    state.save()
            except (OSError, MemoError):
                pass  # a cache: the next import reads the files again
    return result


def _left_out_ahead(transcripts: list[Transcript], result: ImportResult, name: str) -> list[Transcript]:
    """Leave out of ``transcripts`` the prompts (and instants) stamped more than a day ahead of
    now — a clock set ahead on the machine that wrote them — each said once per transcript and
    counted skipped; the rest is imported (one such line refused the whole conversation, "Invalid
    startTime: … is in the future", naming neither the line nor its field: found by a tester).
    The transcripts left with no prompt, to be left out whole (each counted refused)."""
    from ..prompts import MAX_CLOCK_SKEW

    limit = datetime.now(tz=_UTC) + MAX_CLOCK_SKEW
    emptied = []
    for transcript in transcripts:
        ahead = [p for p in transcript.prompts if p.at is not None and p.at > limit]
        transcript.activity = [at for at in transcript.activity if at <= limit]
        if not ahead:
            continue
        late = {id(p) for p in ahead}
        transcript.prompts = [p for p in transcript.prompts if id(p) not in late]
        result.skipped += len(ahead)
        result.errors.append(f"{name}: transcript {transcript.transcript_id}: {counted(len(ahead), 'prompt')} "
                             f"stamped in the future ({to_iso(min(p.at for p in ahead))}: the clock of the machine "
                             "that wrote it ahead?) left out; the rest imported")
        if not transcript.prompts:
            emptied.append(transcript)
            result.refused += 1  # none of it imported: the command exits 1 (found by a breaker)
    return emptied


def _left_out_unreadable_ids(transcripts: list[Transcript], result: ImportResult, name: str) -> list[Transcript]:
    """The transcripts whose id, or working folder (its project), holds a byte that was not UTF-8
    (U+FFFD since, :func:`~.lines.decode_line`): said and left out until the file is mended — imported under that id, their turns stood beside
    the conversation's own, and counted twice once the byte was mended (found by a breaker)."""
    broken = [t for t in transcripts if "\ufffd" in t.transcript_id
              or "\ufffd" in (t.project_hint or "") or "\ufffd" in (t.folder or "")]
    for transcript in broken:
        result.skipped += len(transcript.prompts)
        result.refused += 1
        if "\ufffd" in transcript.transcript_id:
            why = "its id holds a byte that is not UTF-8, so its {turns} cannot be told to be of its conversation"
        else:  # filed under a garbled project for good, and twice once mended (found by a breaker)
            why = ("its working folder holds a byte that is not UTF-8, so the project of its {turns} cannot be "
                   "told")
        result.errors.append(f"{name}: transcript {transcript.transcript_id!r}: "
                             + why.format(turns=counted(len(transcript.prompts), 'turn'))
                             + ": not imported until the file is mended")
    return broken


def _note_held(store: VaultStore, source: str, transcripts: list[Transcript], result: ImportResult) -> None:
    """Keep which files of this import held work back for an issued invoice, and drop the files
    it took in whole (:mod:`.held`): the digest says the work no report counts."""
    from .held import HELD_FILE, note_held

    files: dict[str, list[dict[str, Any]]] = {}
    for transcript in transcripts:
        held = result.held_sessions.get((transcript.source, transcript.transcript_id), [])
        files.setdefault(str(Path(transcript.path).absolute()), []).extend(held)
    if not result.held_sessions and not (store.layout.meta_dir / HELD_FILE).exists():
        return  # nothing held now nor before: no file to write (the common case)
    try:
        with store.lock():
            note_held(store.layout.meta_dir, source, files)
    except (OSError, MemoError):
        pass  # the digest's note only; the import said it


def with_imported_siblings(store: VaultStore, files: list[Path], source: str) -> list[Path]:
    """``files`` and the files beside each that an import already took in (the import's state
    knows them), in the order a clean import reads them. One conversation can span several files
    of a folder (an agent's resumed session): the import reads an unchanged sibling again when it
    holds a conversation one of ``files`` holds, so a changed file alone never stands for the
    whole conversation — as the only file read it made the turns only the sibling holds look cut,
    and marked them superseded (found by a helper). A sibling never imported is left alone."""
    from . import load_importer
    from .seen import ImportState

    if not _reads_one_file(source):
        return list(files)
    module = load_importer(source)
    state = ImportState.load(store.layout.meta_dir)
    found = set(files)
    for folder in dict.fromkeys(path.parent for path in files):
        try:
            found.update(p for p in walk_files([folder], module.SUFFIXES, module.EXCLUDE_DIRS)
                         if p not in found and state.transcripts(p, source))
        except OSError:
            continue
    return sorted(found) if len(found) > len(files) else list(files)


def _reads_one_file(source: str) -> bool:
    """Whether the importer of ``source`` parses only the file it is given (``SELF_CONTAINED``)."""
    from . import IMPORTERS, load_importer

    return source in IMPORTERS and bool(getattr(load_importer(source), "SELF_CONTAINED", False))


def _session_homes(store: VaultStore, record_id: str) -> set[str]:
    """The projects whose index holds the session record ``record_id``."""
    return {row["project"] for row in index.where_is(store.conn, record_id, RecordKind.SESSION.value)}


def _still_in_the_vault(store: VaultStore, state, paths: list[Path], source: str) -> list[Path]:
    """Those of the unchanged ``paths`` whose sessions the index still holds: a file whose
    records were deleted since (a project removed, then ``memo reindex``) is read again."""
    wanted = {rid for path in paths for rid in state.sessions(path, source)}
    held = index.indexed_ids(store.conn, sorted(wanted), RecordKind.SESSION.value)
    return [path for path in paths if all(rid in held for rid in state.sessions(path, source))]
