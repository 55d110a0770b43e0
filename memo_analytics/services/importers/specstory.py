"""SpecStory Markdown: ``<project>/.specstory/history/*.md`` (SPEC §7).

Three dialects, told apart by the preamble (the lines before the first turn header):

* old Cursor extension: ``# Title (YYYY-MM-DD HH:MM:SS)`` in *local* time (read in
  ``options.zone``) and bare ``_**User**_`` / ``_**Assistant**_`` headers; the turns have
  no time of their own, so the title stamp is the only activity;
* new Cursor extension: ``<!-- cursor Session <uuid> (YYYY-MM-DD HH:MMZ) -->`` and
  ``_**User (YYYY-MM-DD HH:MMZ)**_`` / ``_**Assistant (model)**_``;
* SpecStory CLI v2: ``<!-- Claude Code|Codex CLI|Gemini CLI|Cursor IDE Session <uuid>
  (…) -->`` with ``_**User (ISO-8601 Z)**_`` / ``_**Agent (model ISO-8601 Z)**_``.

A turn runs from its header line to the next one; the ``---`` separator at its end is
dropped, and a ``---`` inside a body (YAML front matter, a horizontal rule) is just text.
A header line is not a turn when it sits inside tool output or a fence the person typed:
SpecStory wraps each tool call in ``<tool-use …>``/``<details>`` … ``</tool-use>``/``</details>``
blocks (each tag at the start of its line; a file read with line numbers shows them after the
number, so it is not taken for blocks), so a transcript the agent printed (``cat`` of an earlier history) cannot add turns; blocks are matched like
brackets and an opening tag that never closes (truncated output) hides nothing. Code fences
are tracked only in the person's turns, where they are balanced: SpecStory wraps tool output
that itself holds triple-backtick lines in a triple-backtick fence, so the agent's fences are
often unbalanced and tracking them would hide real headers (three real User turns of one real
file, dozens of Agent turns of others); a fence that never closes hides nothing either. A
User turn with the same text and stamp as an earlier one is that turn printed again (an
output cut off inside a nested block escapes the bracket matching). Every stamp seen (session comment, title, headers) is
activity. transcript_id is the session uuid of the comment, else the file stem, so the
same session saved under several names imports once. ``ide``/``agent``: ``cursor`` for
the Cursor dialects, else ``claude-code``, ``codex`` or ``gemini`` from the comment;
``model`` from the first agent header that names one (Cursor's ``default`` is not a
model). project_hint: the folder that contains ``.specstory``.

The person's prompts are the User turns, filtered with the Claude Code rules
(:class:`~.claude_code.PromptSieve`: no caveats, local commands or their output, task
notifications, interrupt markers, image-path notes; a slash command is kept as
``/name args``), since SpecStory copies those records verbatim. SpecStory drops Claude
Code's ``isMeta`` flag, so a User turn that follows a kept slash command at the very same
instant is taken as the command's expansion and dropped. Codex IDE wrappers are cut to the
person's request as in :func:`~.codex.human_request`. A file without a User turn (e.g. a
hand-written summary) yields nothing.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from ...domain.clock import parse_record_instant
from ...domain.errors import InvalidDateError
from .claude_code import PromptSieve
from .codex import human_request
from .common import ImportOptions, MarkdownTurn, ParseResult, Transcript
from .lines import read_lines

SUFFIXES: tuple[str, ...] = (".md",)
EXCLUDE_DIRS: tuple[str, ...] = ("ai_rules_backups",)
#: The parse reads only the file it is given: an unchanged file need not be read again (importers.seen).
SELF_CONTAINED = True
SOURCE = "specstory"

_HEADER = re.compile(r"^_\*\*(User|Assistant|Agent)(?:\s*\((?P<arg>[^)]*)\))?\*\*_\s*$")
_STAMP = r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
_STAMP_AT_END = re.compile(rf"(?:^|\s)(?P<stamp>{_STAMP})$")
# (each run bounded: three overlapping runs of white space took the cube of a planted line's
# length — 4,000 spaces after "<!--" held an import 52 s; found by a security tester)
_SESSION_COMMENT = re.compile(r"^<!--\s{0,40}(?P<agent>\S[^\n]{0,200}?)\s{1,40}Session\s{1,40}(?P<id>[A-Za-z0-9._-]{1,200})"
                              r"\s{0,40}(?:\((?P<stamp>[^)]{0,200})\))?\s{0,40}-->")
_TITLE_STAMP = re.compile(rf"\((?P<stamp>{_STAMP})\)$")


def _title_of(line: str) -> tuple[str, str | None] | None:
    """A ``# title (stamp)`` line's ``(title, stamp or None)``, or None for another line. In
    steps, not one pattern: a lazy title, optional spaces and an optional stamp backtracked in
    the cube of the line's length (a crafted 4 KB title took 47 s)."""
    if len(line) < 2 or line[0] != "#" or not line[1].isspace():
        return None
    text = line[1:].strip()
    found = _TITLE_STAMP.search(text)
    if found is None:
        return text, None
    return text[:found.start()].rstrip(), found.group("stamp")
_NOT_MODELS = {"default", "auto"}
_IDES = (("cursor", "cursor"), ("claude", "claude-code"), ("codex", "codex"), ("gemini", "gemini"))


def _split_arg(arg: str | None, options: ImportOptions) -> tuple[datetime | None, str | None]:
    """A header's ``(stamp, model)``; raises InvalidDateError on a broken stamp."""
    arg = (arg or "").strip()
    match = _STAMP_AT_END.search(arg)
    at = parse_record_instant(match.group("stamp"), "timestamp", options.zone) if match else None
    model = (arg[: match.start()] if match else arg).strip() or None
    return at, (None if model is None or model.lower() in _NOT_MODELS else model)


def _ide(agent: str | None) -> str:
    name = (agent or "cursor").strip().lower()
    for key, ide in _IDES:
        if name.startswith(key):
            return ide
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "cursor"


_FILE_STAMP = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2})_(?P<h>\d{2})-(?P<m>\d{2})(?!\d|Z)")


def _reconciled(path: Path, lines: list[str], options: ImportOptions) -> tuple[ImportOptions, str | None]:
    """Old Cursor-extension files put the author's *local* time in the title
    (``# Title (2025-04-26 16:30:55)``) and the same moment in UTC in the file name
    (``2025-04-26_20-30-…``): the offset between them (to the quarter hour, within ±14 h) is
    the zone the file's stamps without an offset are read in, whatever ``--tz`` says. When
    the two disagree (no quarter-hour offset within ±14 h) the stamps are read in
    ``options.zone`` and the returned note says so. Files with an offset or ``Z`` anywhere in
    their stamps, or without both stamps, are read as they are."""
    from dataclasses import replace
    from datetime import timedelta, timezone

    named = _FILE_STAMP.match(path.name)
    stamp = next((found[1] for line in lines[:40] if (found := _title_of(line)) and found[1]), None)
    if named is None or stamp is None or re.search(r"(Z|[+-]\d{2}:?\d{2})$", stamp):
        return options, None
    try:
        local = datetime.strptime(stamp[:16].replace("T", " "), "%Y-%m-%d %H:%M")
        utc = datetime.strptime(f"{named.group('date')} {named.group('h')}:{named.group('m')}", "%Y-%m-%d %H:%M")
    except ValueError:
        return options, None
    minutes = round((local - utc).total_seconds() / 60 / 15) * 15
    if abs(minutes) > 14 * 60 or abs((local - utc).total_seconds() / 60 - minutes) > 2:
        return options, (f"the title's local time {stamp} and the file name's UTC time "
                         f"{utc:%Y-%m-%d %H:%M} are no zone apart; its times are read in the import's zone")
    sign = "+" if minutes >= 0 else "-"
    zone = timezone(timedelta(minutes=minutes), f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}")
    return replace(options, zone=zone), None


def _project_hint(path: Path) -> str | None:
    """The project of the folder that holds ``.specstory``: its git repository's where it lies in
    one on this machine (a subfolder of a repository is the repository's project, as a hook and the
    other importers name it — its exports were filed under the subfolder's name, found by a
    freelancer), else the folder's name."""
    from ..store import project_of_folder

    for folder in path.parents:
        if folder.name == ".specstory":
            return project_of_folder(str(folder.parent)) or folder.parent.name or None
    return None


_BLOCK_OPEN = re.compile(r"^<(?:tool-use|details)[\s>]")
_BLOCK_CLOSE = re.compile(r"^(?:</details>)?</(?:tool-use|details)>\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def _tool_output(lines: list[str]) -> list[bool]:
    """For each line, whether it lies in a matched ``<tool-use>``/``<details>`` block."""
    inside = [False] * len(lines)
    opened: list[int] = []
    for number, line in enumerate(lines):
        if _BLOCK_OPEN.match(line):
            opened.append(number)
        if _BLOCK_CLOSE.match(line) and opened:
            start = opened.pop()
            if not opened:
                inside[start:number + 1] = [True] * (number + 1 - start)
    return inside


def _fence_end(lines: list[str], start: int) -> int | None:
    """The line that closes the fence opened at ``start`` (CommonMark: the same character, at
    least as many, nothing after), or None when it never closes."""
    marker = _FENCE.match(lines[start]).group(1)
    for number in range(start + 1, len(lines)):
        close = _FENCE.match(lines[number])
        if close and close.group(1)[0] == marker[0] and len(close.group(1)) >= len(marker) and not close.group(2).strip():
            return number
    return None


def _scan(lines: list[str], options: ImportOptions) -> tuple[list[str], list[MarkdownTurn], int]:
    """Split into (preamble lines, turns, headers with an unreadable stamp); headers inside
    tool output or a fence of the person's are text (see the module docstring)."""
    preamble: list[str] = []
    turns: list[MarkdownTurn] = []
    bad = 0
    tool_output = _tool_output(lines)
    fenced_until = -1
    never_closed: dict[str, int] = {}
    for number, line in enumerate(lines):
        header = None if number <= fenced_until or tool_output[number] else _HEADER.match(line)
        if header:
            try:
                at, model = _split_arg(header.group("arg"), options)
            except InvalidDateError:
                at, model, bad = None, None, bad + 1
            turns.append(MarkdownTurn("user" if header.group(1) == "User" else "agent", at, model))
            continue
        fence = None if number <= fenced_until or tool_output[number] or not turns or turns[-1].role != "user" \
            else _FENCE.match(line)
        if fence and len(fence.group(1)) < never_closed.get(fence.group(1)[0], 1 << 30):
            end = _fence_end(lines, number)
            if end is None:  # nor will a later fence of this character at least this long
                never_closed[fence.group(1)[0]] = len(fence.group(1))
            fenced_until = -1 if end is None else end
        (turns[-1].lines if turns else preamble).append(line)
    return preamble, turns, bad


def parse(path: Path, options: ImportOptions) -> ParseResult:
    """Read one SpecStory Markdown file.

    Parameters
    ----------
    path : Path
        A ``.specstory/history/*.md`` file.
    options : ImportOptions
        ``options.zone`` reads stamps without an offset (the old Cursor title's local
        time); None means UTC.

    Returns
    -------
    ParseResult
        At most one transcript (none without a human prompt; see the module docstring);
        ``activity`` holds every stamp as aware UTC; ``skipped_lines`` counts header or
        preamble stamps that could not be read.

    Raises
    ------
    OSError, UnicodeDecodeError
        The file cannot be read as UTF-8 text.
    """
    lines, problems = read_lines(path)
    # a Markdown file's lines end in CR alone too (an old Mac editor's): every prompt was one line, none
    # found, and the file imported nothing without a word (found by a tester)
    texts = [part for _, text in lines for part in (text.split("\r") if "\r" in text.rstrip("\r") else [text])]
    options, note = _reconciled(path, texts, options)
    if note:
        problems.append(note)
    preamble, turns, skipped = _scan(texts, options)
    if not any(text.strip() for text in texts):  # said as every importer says it (it was "files 1", exit 0)
        return ParseResult(recognised=False, why="the file is empty", problems=problems, skipped_lines=len(problems))
    if not turns and ".specstory" not in path.parts and not any(_SESSION_COMMENT.match(t.strip()) for t in preamble):
        return ParseResult(recognised=False, why="no SpecStory turn marker (_**User**_, _**Assistant**_ or _**Agent**_)",
                           problems=problems, skipped_lines=len(problems))
    transcript = Transcript(transcript_id=path.stem, source=SOURCE, path=path, project_hint=_project_hint(path))
    agent_name, titled = None, False
    for line in preamble:
        comment = _SESSION_COMMENT.match(line.strip())
        title = None if titled else _title_of(line)
        try:
            if comment:
                agent_name, transcript.transcript_id = comment.group("agent"), comment.group("id")
                stamp = comment.group("stamp")
                if stamp and _STAMP_AT_END.search(stamp.strip()):
                    transcript.activity.append(parse_record_instant(stamp.strip(), "timestamp", options.zone))
            elif title:
                titled, (text, stamp) = True, title
                if stamp is None and re.fullmatch(_STAMP, text):
                    text, stamp = "", text  # CLI v2: the title is only the start stamp
                transcript.title = text or None
                if stamp:
                    transcript.activity.append(parse_record_instant(stamp, "timestamp", options.zone))
        except InvalidDateError:
            skipped += 1
    transcript.ide = transcript.agent = _ide(agent_name)
    sieve = PromptSieve(same_stamp_expansion=True)
    seen: set[tuple[str, datetime]] = set()
    for turn in turns:
        if turn.at is not None:
            transcript.activity.append(turn.at)
        if turn.role == "agent":
            transcript.model = transcript.model or turn.model
            sieve.other()
            continue
        text = turn.text
        if turn.at is not None and (text, turn.at) in seen:
            continue  # the same stamped prompt again: a copy of this history the agent printed
        seen.add((text, turn.at))
        if text.startswith("# Context from my IDE setup"):
            text = human_request(text) or ""
        sieve.feed(text, turn.at)
    transcript.prompts = sieve.prompts
    return ParseResult(transcripts=[transcript] if transcript.prompts else [], skipped_lines=skipped + len(problems),
                       problems=problems + ([f"{skipped} turn or title stamps could not be read"] if skipped else []))
