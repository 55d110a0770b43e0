"""Intent-story export (SPEC §5.2): every turn of a session merged into one Markdown document.

The story holds the session's metadata, its deliverables, the hand-off it received and the
one it left, and the chronological turn log. It is built from the index, whose text has
passed secret redaction, so nothing redacted reappears in an export.
"""

from __future__ import annotations

import re

from datetime import datetime
from pathlib import Path
from typing import Any

from ..domain.clock import from_iso, printed_span
from ..domain.wire import printable_text
from ..domain.errors import InvalidFieldError, RecordNotFoundError
from ..domain.ids import session_record_id, validate_session_id
from ..domain.records import RecordKind
from ..index import store as index
from ..index.query import PromptFilter
from ..vault.io import atomic_write_bytes, output_target
from ..vault.redact import redact_secrets
from .prompts import row_to_record
from .requests import ExportStoryRequest
from .sessions import is_web_url
from .store import VaultStore, repository_root

#: Most turns one story holds (a session is a work interval, far below this).
MAX_STORY_TURNS = 100_000


def story_data(store: VaultStore, session_id: str, project: str | None = None,
               cwd: str | Path | None = None) -> dict[str, Any]:
    """The parts of a story: ``{session, turns, handoffLeft, handoffReceived}``.

    ``session`` is the session record (None when only turns exist), ``turns`` every turn in
    turn order (wire dicts with ``body``), the hand-offs their records (or None).

    Raises
    ------
    InvalidFieldError
        ``session_id`` is not a safe id.
    RecordNotFoundError
        Neither a session record nor any turn has this id (in ``project``, when given).
    CorruptRecordError
        The session's file is there but cannot be parsed (its turns are: the story would be wrong).
    AmbiguousIdError
        Without ``project``, several projects hold the session and ``cwd`` chooses none.
    """
    session_id = store.session_id_for(validate_session_id(session_id))
    row, project = store.locate_session(session_id, project, cwd)
    total, rows = index.count_and_page(store.conn, "prompt", PromptFilter(
        session_id=session_id, projects=[project] if project else None, superseded=True), MAX_STORY_TURNS, 0,
        "turn-asc")
    if row is None and total == 0:
        raise RecordNotFoundError(session_id, project)
    if row is None:  # turns without an indexed session: a session file that cannot be parsed is said, not
        # passed over (the story printed "no session record" and the client as internal)
        for holder in {project} if project else {r["project"] for r in rows}:
            store.read(holder, RecordKind.SESSION, session_record_id(session_id))
    session = row_to_record(row) if row is not None else None

    def handoff(record_id: str | None) -> dict[str, Any] | None:
        found = index.get_row(store.conn, project, record_id, "handoff") if record_id and project else None
        return row_to_record(found) if found is not None else None

    return {
        "session": session,
        "turns": [row_to_record(r) for r in rows],
        "handoffLeft": handoff((session or {}).get("handoffArchive")),
        "handoffReceived": handoff((session or {}).get("handoffClaimed")),
    }


def _when(value: str | None, zone) -> str:
    if not value:
        return "—"
    return from_iso(value).astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")


def _span(session: dict[str, Any], zone) -> list[tuple[str, str]]:
    """The story's Start and End rows: of an ended session as every report prints it — from its
    start to the minute for its own minutes (:func:`~memo_analytics.domain.clock.printed_span`;
    found by a new user: the story said 09:10 where the timesheet said 09:09 of the same 9
    minutes); of an open one its start, and no end."""
    start, end = session.get("startTime"), session.get("endTime")
    if not start or not end or session.get("durationMinutes") is None:
        return [("Start", _when(start, zone)), ("End", _when(end, zone))]
    try:
        began, ended = printed_span(start, session["durationMinutes"], zone)
    except (ValueError, TypeError):
        return [("Start", _when(start, zone)), ("End", _when(end, zone))]
    return [("Start", began.strftime("%Y-%m-%d %H:%M %Z")), ("End", ended.strftime("%Y-%m-%d %H:%M %Z"))]


def _cell(value: Any) -> str:
    """A record field in the story's table or title: one line, its ``|`` kept inside the cell,
    and no markup, HTML, link or code of its own (a client named ``<script>…`` stays text in
    any viewer that renders HTML within Markdown)."""
    if value in (None, "", []):
        return "—"
    return re.sub(r"([\\`\[\]<>])", r"\\\1", _line(value)).replace("|", "\\|")


def _handoff_lines(title: str, record: dict[str, Any] | None) -> list[str]:
    if record is None:
        return []
    lines = [f"## {title}", "", f"- Hand-off: `{record['id']}` ({record.get('status', 'pending')})"]
    for key, label in (("nextSteps", "Next steps"), ("failedApproaches", "Failed approaches"),
                       ("openQuestions", "Open questions")):
        items = record.get(key) or []
        if items:
            lines.append(f"- {label}:")
            lines.extend(f"  - {_inline(item)}" for item in items)
    for key, label in (("branch", "Branch"), ("owner", "Owner")):
        if record.get(key):
            lines.append(f"- {label}: {_inline(record[key])}")
    return [*lines, ""]


#: A line that may open a link reference definition (``[label]: url``), behind any container
#: markers: its ``[`` is escaped, since a definition anywhere turns every ``[label]`` of the story
#: into a link to its URL.
_DEFINITION = re.compile(r"^((?:\s|>|[-+*]\s|\d{1,9}[.)]\s)*)\[")
#: What opens a block at the start of a line (a heading, a quote, a list item, a fence, a table).
_BLOCK_START = re.compile(r"^(?:#|>|[-+*=_]|`{3}|~{3}|\|)")


def _quoted(text: str) -> list[str]:
    """Record text (a summary, a turn) as the lines of a Markdown block quote: whatever it holds —
    a heading like the story's own ("### Turn 3 · …"), an unclosed code fence, an HTML comment —
    ends with the quote, and cannot forge or hide the sections after it; a link reference
    definition in it is escaped (it would act on the whole story)."""
    if "]:" in text:
        text = "\n".join(_DEFINITION.sub(r"\1\\[", line) for line in text.splitlines())
    return [f"> {line}" if line.strip() else ">" for line in text.splitlines()] or [">"]


def _line(value: Any) -> str:
    """A value on one line (a line break in it would end the item it is printed in)."""
    return " ".join(str(value).split())


def _inline(value: Any) -> str:
    """Record text printed inside the story's own lines (a deliverable, a hand-off item): on one
    line, nothing opening a block at its start, and no link, code or markup of its own."""
    text = re.sub(r"([\\`\[\]<>*_])", r"\\\1", _line(value))
    if re.match(r"\d{1,9}[.)]", text):  # "1. " would open a list: its delimiter is escaped
        return re.sub(r"^(\d{1,9})([.)])", r"\1\\\2", text)
    return "\\" + text if _BLOCK_START.match(text) else text


def _clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + f"\n\n… ({len(text) - limit:,} more characters: see `memo session export`)"


def render_story(data: dict[str, Any], zone, max_turn_chars: int | None = None) -> str:
    """The story as Markdown (pure). Times are shown in ``zone``; sections: metadata,
    deliverables, hand-offs, turn log (SPEC §5.2). ``max_turn_chars`` clips each turn
    (printed stories); the export keeps every character a document prints
    (:func:`~memo_analytics.domain.wire.printable_text`: no control or direction character)."""
    session = data["session"] or {}
    turns = data["turns"]
    session_id = session.get("sessionId") or (turns[0]["sessionId"] if turns else "")
    summary_line = next((line.strip() for line in (session.get("summary") or "").splitlines() if line.strip()), "")
    title = summary_line or session.get("taskSlug") or session_id  # the summary's first line: it is all there below
    meta = [
        ("Session", session_id), ("Project", session.get("project") or (turns[0]["project"] if turns else None)),
        ("Status", session.get("status", "no session record")), ("Client", session.get("client") or "internal"),
        ("Billable", "yes" if session.get("billable", True) else "no"), ("Task", session.get("taskSlug")),
        *_span(session, zone),
        ("Duration (minutes)", session.get("durationMinutes")), ("IDE", session.get("ide")),
        ("Model", session.get("model")), ("Agent", session.get("agent")), ("Branch", session.get("branch")),
        ("Commit", session.get("gitSha")), ("Owner", session.get("owner")), ("Turns", len(turns)),
    ]
    lines = [f"# Intent story: {_cell(title)}", "", "| Field | Value |", "|---|---|"]
    lines += [f"| {name} | {_cell(value)} |" for name, value in meta]
    # the summary's angle brackets (and backslashes, which would escape the escape) as text, as
    # the title's: a viewer that renders HTML within Markdown ran a pushed "<img onerror=…>" (turns
    # are kept as typed: their code is the story)
    summary = re.sub(r"([\\<>])", r"\\\1", session["summary"]) if session.get("summary") else None
    lines += ["", "## Summary", "", *(_quoted(summary) if summary else ["—"]), "",
              "## Deliverables", ""]
    deliverables = session.get("deliverables") or []
    for item in deliverables:
        parts = [f"**{_inline(item.get('type') or 'other')}**"]
        if item.get("title"):
            parts.append(_inline(item["title"]))
        if item.get("url"):  # a link only to a web page: "javascript:…" or "file:…" stays text
            url = _line(item["url"])
            parts.append(f"<{url.replace('>', '%3E')}>" if is_web_url(url) else _inline(url))
        if item.get("sha"):  # a commit id in code; anything else as text
            sha = str(item["sha"])
            parts.append(f"`{sha}`" if re.fullmatch(r"[0-9a-fA-F]{4,64}", sha) else _inline(sha))
        lines.append("- " + " — ".join(parts))
    if not deliverables:
        lines.append("—")
    lines.append("")
    lines += _handoff_lines("Hand-off received", data["handoffReceived"])
    lines += _handoff_lines("Hand-off left", data["handoffLeft"])
    lines += ["## Turn log", ""]
    for turn in turns:
        who = ", ".join(v for v in (turn.get("ide"), turn.get("model")) if v)
        lines += [f"### Turn {turn.get('turn') or '—'} · {_when(turn.get('created'), zone)}"
                  + (f" · {who}" if who else ""), "", *_quoted(_clip(turn.get("body", "").rstrip(), max_turn_chars)), ""]
    if not turns:
        lines += ["No turns recorded.", ""]
    # a document: no escape or other control character of a stored turn (piped to a terminal,
    # `memo session export ID | cat` set its title), nor a direction control
    return printable_text("\n".join(lines))


def story_destination(store: VaultStore | None, output: str, cwd: str | Path | None,
                      suffixes: tuple[str, ...] = (".md",), overwrite: bool = False,
                      from_repository: bool = True) -> Path:
    """Where a story may be written (SPEC §5.2).

    The caller's ``cwd`` must be a product repository — not the vault nor inside it — and
    the destination must lie outside that repository and outside the vault, end with one of
    ``suffixes``, not be a symbolic link, and not exist unless ``overwrite``. A destination
    folder that does not exist yet is created (once every check passed). ``store`` is
    None in remote mode: no local vault, the story came from the daemon. Without
    ``from_repository`` (a person's ``memo report story``: an imported session often has no
    repository on this machine) ``cwd`` need not be in a repository; the destination is still
    outside the vault and outside every git work tree.

    Raises
    ------
    InvalidFieldError
        ``Invalid cwd: ...`` or ``Invalid output: ...``.
    """
    if cwd is None or not str(cwd).strip():
        raise InvalidFieldError("cwd", "required with output: the product repository you export from")
    try:
        here = Path(cwd).expanduser().resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise InvalidFieldError("cwd", str(exc)) from None
    vault = store.root.resolve() if store is not None else None
    if vault is not None and (here == vault or here.is_relative_to(vault)):
        raise InvalidFieldError("cwd", f"{here} is the vault or inside it; export from a product repository")
    if from_repository and repository_root(here) is None:
        raise InvalidFieldError("cwd", f"{here} is not inside a product repository (no .git found); run it from "
                                       "the repository the session worked on, or print the story and redirect it "
                                       "(memo session export ID > FILE)")
    destination = Path(output).expanduser()
    destination = destination if destination.is_absolute() else here / destination
    # refuses the vault and any git work tree, the product root among them (SPEC §2.1, §5.2)
    return output_target(destination, (vault,) if vault is not None else (), suffixes, overwrite, make_folders=True)


def write_story_file(story: dict[str, Any], output: str, cwd: str | Path | None, overwrite: bool = False,
                     store: VaultStore | None = None) -> dict[str, Any]:
    """Write an exported story (``{sessionId, project, turns, markdown}``) to ``output`` under
    the rules of :func:`story_destination`; the story without its text, plus ``path`` and
    ``bytes``. Used by ``export_story`` and, in remote mode, on the caller's machine.

    Raises
    ------
    InvalidFieldError
        A refused ``cwd`` or ``output``, or the file cannot be written (nothing is written).
    """
    target = story_destination(store, output, cwd, overwrite=overwrite)
    payload = str(story.get("markdown", "")).encode("utf-8")
    try:
        atomic_write_bytes(target, payload)
    except OSError as exc:
        raise InvalidFieldError("output", f"cannot write {target} ({exc.strerror or type(exc).__name__})") from None
    return {**{k: v for k, v in story.items() if k != "markdown"}, "path": str(target), "bytes": len(payload)}


def export_remote_story(settings: Any, arguments: dict[str, Any], output: str | None = None,
                        overwrite: bool = False) -> dict[str, Any]:
    """``export_story`` in remote mode (SPEC §2.7), for the MCP tool and ``memo session export``:
    the story the daemon answers to ``arguments`` (the tool's camelCase fields, ``cwd`` of this
    machine included), written here under :func:`write_story_file`'s rules when ``output`` is
    given. The answer must be the story of the session asked for with its text (an answer without
    ``markdown`` wrote an empty file; a table, its repr).

    Raises
    ------
    MemoError
        The daemon refused or could not be reached, or answered something that is not that story.
    InvalidFieldError
        A refused ``cwd`` or ``output``.
    """
    from . import remote

    story = remote.call(settings, {**arguments, "action": "export_story"})
    if not isinstance(story.get("markdown"), str) or story.get("sessionId") != arguments.get("sessionId"):
        raise remote.unusable_answer(settings, f"its export_story answer is not the story of "
                                               f"{arguments.get('sessionId')} with its Markdown")
    story = {**story, "markdown": printable_text(story["markdown"])}  # a document, as this machine renders one
    return write_story_file(story, output, arguments.get("cwd"), overwrite) if output else story


def export_story(store: VaultStore, request: ExportStoryRequest, now: datetime | None = None) -> dict[str, Any]:
    """``export_story`` (SPEC §5.2).

    Returns
    -------
    dict
        ``{sessionId, project, turns, markdown}``; with ``output`` the file is written
        atomically and ``{sessionId, project, turns, path, bytes}`` comes back instead.

    Raises
    ------
    RecordNotFoundError, InvalidFieldError
        Unknown session; a refused ``cwd`` or ``output`` (nothing is written).
    """
    data = story_data(store, request.session_id, request.project, request.cwd)
    markdown = redact_secrets(render_story(data, store.zone))[0]
    session = data["session"] or data["turns"][0]
    result = {"sessionId": session["sessionId"], "project": session["project"], "turns": len(data["turns"])}
    if request.output is None:
        return {**result, "markdown": markdown}
    return write_story_file({**result, "markdown": markdown}, request.output, request.cwd, request.overwrite, store)
