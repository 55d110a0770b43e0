"""The ``memo`` command line (SPEC §3.2): a thin Typer adapter over the services.

Human output by default (tables), ``--json`` for machines. Every error the product raises
on purpose exits non-zero with one line on stderr: ``error: <message>``.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, List, Optional

import typer
from pydantic import ValidationError
from pydantic.alias_generators import to_camel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..analytics.activity import ActivityReport, ActivityRequest, activity_report
from ..config import MAX_BODY_BYTES, Settings
from ..domain.clock import resolve_zone
from ..domain.errors import MemoError
from ..domain.wire import dumps
from ..services.maintenance import reindex as reindex_vault
from ..reports.timesheet import format_minutes, render_timesheet_pdf
from ..services import prompts as prompt_service
from ..services import sessions as session_service
from ..services.demo import DEMO_ZONE, build_demo_vault
from ..services.importers import IMPORTERS, load_importer
from ..services.importers.common import ImportOptions, run_import, walk_files
from ..services.handoffs import cancel_handoff, handoff_id, list_handoffs
from ..services.requests import CancelHandoffRequest, EndSessionRequest, ListRequest, RecordPromptRequest, SessionRequest, StartSessionRequest
from ..services.store import VaultStore
from ..vault.redact import redact_secrets

# markup and emoji off: stored text ("list[int]", "[/]", ":smile:") is printed as it is
out = Console(highlight=False, markup=False, emoji=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, markup=False, emoji=False, soft_wrap=True)

app = typer.Typer(
    name="memo",
    help="Keep AI coding agents' turns and work sessions in a Markdown vault outside your repositories; "
    "search them, report billable hours, print timesheets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
prompt_app = typer.Typer(help="Record, list, search and get prompt turns.", no_args_is_help=True)
session_app = typer.Typer(help="Open and close work sessions.", no_args_is_help=True)
report_app = typer.Typer(help="Printable reports (PDF).", no_args_is_help=True)
import_app = typer.Typer(help="Import real agent transcripts as sessions and turns.", no_args_is_help=True)
app.add_typer(prompt_app, name="prompt")
app.add_typer(prompt_app, name="prompts", help="Alias of `memo prompt`.")
app.add_typer(session_app, name="session")
app.add_typer(report_app, name="report")
app.add_typer(import_app, name="import")


class State:
    settings: Settings | None = None
    json: bool = False
    _store: VaultStore | None = None

    @property
    def store(self) -> VaultStore:
        if self._store is None:
            assert self.settings is not None
            self._store = VaultStore(self.settings)
        return self._store


state = State()


@app.callback()
def _global(
    vault_root: Optional[str] = typer.Option(
        None, "--vault-root", envvar="MEMO_VAULT", help="Vault folder (default ~/.memo/vault; env MEMO_VAULT)."
    ),
    json_output: bool = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables."),
) -> None:
    """Global options."""
    state.settings = _settings(vault_root=vault_root) if vault_root is not None else _settings()
    state.json = json_output
    state._store = None


def _emit(value: Any, human: Callable[[Any], None]) -> None:
    if state.json:
        sys.stdout.write(dumps(value) + "\n")
    else:
        human(value)


def _scope_line(projects: list[str] | None, explicit: bool) -> str:
    if projects is None:
        return "Projects: all"
    note = "" if explicit else " (the current repository; --all for every project)"
    return f"Projects: {', '.join(projects)}{note}"


def _check_scope(project: Optional[str], all_projects: bool) -> None:
    if project and all_projects:
        raise MemoError("Invalid project: --project and --all exclude each other")


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _safe(text: object) -> str:
    """Stored text for a terminal: control characters (escape sequences that could set the
    window title, clear the screen or write the clipboard) are shown as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", str(text))


def _short(text: str | None, width: int = 70) -> str:
    text = " ".join(_safe(text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


# ---------------------------------------------------------------- prompt


@prompt_app.command("record")
def prompt_record(
    body: Optional[str] = typer.Option(None, "--body", help="The turn's text (must not be empty)."),
    body_file: Optional[Path] = typer.Option(
        None, "--body-file", help="Read the turn's text from this UTF-8 file ('-' for stdin); for long prompts."
    ),
    session_id: Optional[str] = typer.Option(None, "--session-id", help="Session id; the next turn is allocated when --turn is absent."),
    turn: Optional[int] = typer.Option(None, "--turn", help="Explicit turn number (≥ 1)."),
    project: Optional[str] = typer.Option(None, "--project", help="Project id (default: the repository folder of the cwd)."),
    ide: Optional[str] = typer.Option(None, "--ide", help="IDE or agent host (default generic)."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name."),
    agent: Optional[str] = typer.Option(None, "--agent", help="Agent name."),
    client: Optional[str] = typer.Option(None, "--client", help="Client billed (default: the session's, else internal)."),
    billable: Optional[bool] = typer.Option(None, "--billable/--no-billable", help="Billable work (default yes)."),
    task_slug: Optional[str] = typer.Option(None, "--task-slug", "--slug", help="Task slug."),
    tag: List[str] = typer.Option([], "--tag", help="Tag (repeatable)."),
    created: Optional[str] = typer.Option(None, "--created", help="When the turn happened (ISO; default now)."),
) -> None:
    """Record one conversational turn."""
    body = _read_body(body, body_file)
    request = _build(RecordPromptRequest, body=body, session_id=session_id, turn=turn, project=project, ide=ide,
                     model=model, agent=agent, client=client, billable=billable, task_slug=task_slug,
                     tags=tag, cwd=str(Path.cwd()), source="cli", created=created)
    record = prompt_service.record_prompt(state.store, request)
    _emit(record, lambda r: out.print(f"recorded {r['id']} in project {r['project']}"))


def _read_body(body: Optional[str], body_file: Optional[Path]) -> str:
    if (body is None) == (body_file is None):
        raise MemoError("Invalid body: give exactly one of --body and --body-file")
    if body_file is None:
        return body  # type: ignore[return-value]
    raw = sys.stdin.buffer.read(MAX_BODY_BYTES + 1) if str(body_file) == "-" else _read_file(body_file)
    if len(raw) > MAX_BODY_BYTES:
        raise MemoError(f"Invalid body: larger than the limit of {MAX_BODY_BYTES} bytes")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise MemoError(f"Invalid body: {body_file} is not valid UTF-8") from None


def _read_file(path: Path) -> bytes:
    if not path.is_file():
        raise MemoError(f"Invalid body-file: {path} is not a readable file")
    with path.open("rb") as handle:
        return handle.read(MAX_BODY_BYTES + 1)


def _list_request(**kwargs: Any) -> ListRequest:
    _check_scope(kwargs.get("project"), kwargs.get("all_projects", False))
    kwargs["cross_project"] = kwargs.pop("all_projects")
    kwargs["tags"] = kwargs.pop("tag")
    kwargs["cwd"] = str(Path.cwd())
    return _build(ListRequest, **kwargs)


def _print_page(page: dict[str, Any], request: ListRequest) -> None:
    scope = _scope_line(state.store.scope(request.project, request.cross_project, request.cwd), bool(request.project))
    if not page["items"]:
        out.print(f"No prompts match. {scope}")
        return
    table = Table(title=f"{page['total']} prompts (showing {page['offset'] + 1}–{page['offset'] + len(page['items'])})"
                        f" · {scope}")
    for column in ("created (UTC)", "project", "id", "ide", "prompt"):
        table.add_column(column, overflow="fold")
    for item in page["items"]:
        table.add_row(item["created"][:16].replace("T", " "), item["project"], item["id"], item.get("ide") or "",
                      _short(item.get("body"), 60))
    out.print(table)
    if page["hasMore"]:
        out.print(f"more: --offset {page['offset'] + page['limit']}")


_FILTERS = dict(
    project=typer.Option(None, "--project", help="Project id (default: the repository folder of the cwd)."),
    all_projects=typer.Option(False, "--all", "--cross-project", help="Every project of the vault."),
    ide=typer.Option(None, "--ide", help="IDE, exact (case-insensitive)."),
    model=typer.Option(None, "--model", help="Model, substring (case-insensitive)."),
    agent=typer.Option(None, "--agent", help="Agent, substring (case-insensitive)."),
    session_id=typer.Option(None, "--session-id", help="Session id, exact."),
    task_slug=typer.Option(None, "--task-slug", "--slug", help="Task slug, exact."),
    client=typer.Option(None, "--client", help="Client, exact."),
    billable=typer.Option(None, "--billable/--no-billable", help="Billable or not."),
    tag=typer.Option([], "--tag", help="Tag that must be present (repeatable)."),
    since=typer.Option(None, "--since", help="Created at or after (ISO date or time)."),
    until=typer.Option(None, "--until", help="Created at or before (a date covers the whole day)."),
    limit=typer.Option(20, "--limit", help="Page size, 1–100."),
    offset=typer.Option(0, "--offset", help="Items to skip."),
)


@prompt_app.command("list")
def prompt_list(
    project: Optional[str] = _FILTERS["project"], all_projects: bool = _FILTERS["all_projects"],
    ide: Optional[str] = _FILTERS["ide"], model: Optional[str] = _FILTERS["model"],
    agent: Optional[str] = _FILTERS["agent"], session_id: Optional[str] = _FILTERS["session_id"],
    task_slug: Optional[str] = _FILTERS["task_slug"], client: Optional[str] = _FILTERS["client"],
    billable: Optional[bool] = _FILTERS["billable"], tag: List[str] = _FILTERS["tag"],
    since: Optional[str] = _FILTERS["since"], until: Optional[str] = _FILTERS["until"],
    limit: int = _FILTERS["limit"], offset: int = _FILTERS["offset"],
) -> None:
    """List prompt turns, newest first, as {total, limit, offset, hasMore, items}."""
    request = _list_request(**{k: v for k, v in locals().items()})
    _emit(prompt_service.list_prompts(state.store, request), lambda page: _print_page(page, request))


@prompt_app.command("search")
def prompt_search(
    text: Optional[str] = typer.Argument(None, help="Words to find (any text is a valid query)."),
    query: Optional[str] = typer.Option(None, "--query", help="Same as the argument."),
    project: Optional[str] = _FILTERS["project"], all_projects: bool = _FILTERS["all_projects"],
    ide: Optional[str] = _FILTERS["ide"], model: Optional[str] = _FILTERS["model"],
    agent: Optional[str] = _FILTERS["agent"], session_id: Optional[str] = _FILTERS["session_id"],
    task_slug: Optional[str] = _FILTERS["task_slug"], client: Optional[str] = _FILTERS["client"],
    billable: Optional[bool] = _FILTERS["billable"], tag: List[str] = _FILTERS["tag"],
    since: Optional[str] = _FILTERS["since"], until: Optional[str] = _FILTERS["until"],
    limit: int = _FILTERS["limit"], offset: int = _FILTERS["offset"],
) -> None:
    """Full-text search (FTS5, bm25 ranking) over prompt turns."""
    args = {k: v for k, v in locals().items() if k != "text"}
    args["query"] = query if query is not None else text
    request = _list_request(**args)
    _emit(prompt_service.search_prompts(state.store, request), lambda page: _print_page(page, request))


@prompt_app.command("get")
def prompt_get(record_id: str = typer.Argument(..., metavar="ID", help="Prompt id, session record id or session id.")) -> None:
    """Show one record: a prompt, else a session."""
    record = prompt_service.get_record(state.store, record_id)

    def human(r: dict[str, Any]) -> None:
        body = r.pop("body", "")
        for key, value in r.items():
            if value not in (None, [], ""):
                out.print(_safe(f"{key}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"))
        if body:
            out.print()
            out.print(_safe(body))

    _emit(record, human)


# ---------------------------------------------------------------- session


@session_app.command("start")
def session_start(
    session_id: Optional[str] = typer.Argument(None, help="Session id (generated when absent)."),
    project: Optional[str] = typer.Option(None, "--project", help="Project id (default: the repository folder of the cwd)."),
    ide: Optional[str] = typer.Option(None, "--ide", help="IDE or agent host."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name."),
    agent: Optional[str] = typer.Option(None, "--agent", help="Agent name."),
    client: Optional[str] = typer.Option(None, "--client", help="Client billed (default internal)."),
    billable: Optional[bool] = typer.Option(None, "--billable/--no-billable", help="Billable work (default yes)."),
    task_slug: Optional[str] = typer.Option(None, "--task-slug", "--slug", help="Task slug."),
    summary: Optional[str] = typer.Option(None, "--summary", help="What the session is about."),
    branch: Optional[str] = typer.Option(None, "--branch", help="Git branch."),
    start_time: Optional[str] = typer.Option(None, "--start-time", help="When it started (ISO; default now)."),
    owner: Optional[str] = typer.Option(None, "--owner", help="Who works it (claims hand-offs addressed to them)."),
    objective: Optional[str] = typer.Option(None, "--objective", help="The session objective (cleared on end)."),
) -> None:
    """Open a work session (a completed session cannot be restarted); claims the next hand-off."""
    request = _build(StartSessionRequest, session_id=session_id, project=project, ide=ide, model=model,
                     agent=agent, client=client, billable=billable, task_slug=task_slug, summary=summary,
                     branch=branch, start_time=start_time, owner=owner, objective=objective,
                     cwd=str(Path.cwd()), source="cli")
    record = session_service.start_session(state.store, request)

    def human(r: dict[str, Any]) -> None:
        out.print(f"started session {r['sessionId']} in project {r['project']} at {r['startTime']}")
        if r.get("handoff"):
            out.print(_safe(f"\nhand-off claimed ({r['handoff']['id']}):\n{r['handoff']['body']}"))

    _emit(record, human)


@session_app.command("end")
def session_end(
    session_id: Optional[str] = typer.Argument(None, help="Session id."),
    summary: Optional[str] = typer.Option(None, "--summary", help="What was done."),
    pr: List[str] = typer.Option([], "--pr", help="Pull-request URL delivered (repeatable)."),
    deliverables: Optional[str] = typer.Option(None, "--deliverables", help='JSON list of {type, url?, sha?, title?}.'),
    until: Optional[str] = typer.Option(None, "--until", help="When it ended (ISO; default now)."),
    project: Optional[str] = typer.Option(None, "--project", help="Project id (default: where the session lives)."),
    next_step: List[str] = typer.Option([], "--next-step", help="Hand-off: what the next session does first (repeatable)."),
    failed: List[str] = typer.Option([], "--failed", help="Hand-off: an approach that did not work (repeatable)."),
    question: List[str] = typer.Option([], "--question", help="Hand-off: an open question (repeatable)."),
    handoff_branch: Optional[str] = typer.Option(None, "--handoff-branch", help="Hand-off: only for this branch."),
    handoff_owner: Optional[str] = typer.Option(None, "--handoff-owner", help="Hand-off: only for this owner."),
    shared: bool = typer.Option(False, "--shared", help="Hand-off: any owner may claim it."),
) -> None:
    """Close a work session: end time, duration in minutes, deliverables, optional hand-off."""
    items: list[dict[str, Any]] = []
    if deliverables:
        try:
            items = json.loads(deliverables)
        except json.JSONDecodeError as exc:
            raise MemoError(f"Invalid deliverables: not JSON ({exc.msg})") from None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise MemoError("Invalid deliverables: expected a JSON list of objects")
    for url in pr:
        items.append({"type": "pr", "url": url, "title": f"Pull request {url.rstrip('/').rsplit('/', 1)[-1]}"})
    handoff = None
    if next_step or failed or question or handoff_branch or handoff_owner or shared:
        if not next_step:
            raise MemoError("Invalid handoff.nextSteps: give at least one --next-step")
        handoff = {"next_steps": next_step, "failed_approaches": failed, "open_questions": question,
                   "branch": handoff_branch, "owner": handoff_owner, "shared": shared}
    request = _build(EndSessionRequest, session_id=session_id, summary=summary, deliverables=items,
                     until=until, project=project, handoff=handoff)
    was_completed = _is_completed(session_id, project)
    record = session_service.end_session(state.store, request)

    def human(r: dict[str, Any]) -> None:
        if was_completed:
            out.print(f"session {r['sessionId']} was already ended; its times and duration are kept "
                      f"({r['durationMinutes']} minutes, {r['startTime']} – {r['endTime']}); summary and deliverables updated")
        else:
            out.print(f"ended session {r['sessionId']}: {r['durationMinutes']} minutes ({r['startTime']} – {r['endTime']})")

    _emit(record, human)


@session_app.command("handoff")
def session_handoff(
    session_id: Optional[str] = typer.Argument(None, help="The session whose end wrote the hand-off; without it, list."),
    project: Optional[str] = typer.Option(None, "--project", help="Project id (listing)."),
    all_projects: bool = typer.Option(False, "--all", "--cross-project", help="Every project (listing)."),
    cancel: bool = typer.Option(False, "--cancel", help="Cancel this pending hand-off."),
) -> None:
    """Show pending hand-offs, show one, or cancel one (--cancel)."""
    _check_scope(project, all_projects)
    store = state.store
    if cancel:
        if not session_id:
            raise MemoError("Invalid sessionId: --cancel needs the session that wrote the hand-off")
        result: Any = cancel_handoff(store, _build(CancelHandoffRequest, session_id=session_id, project=project))
        _emit(result, lambda r: out.print(f"cancelled {r['id']}"))
        return
    if session_id:
        result = prompt_service.get_record(store, handoff_id(_build(CancelHandoffRequest, session_id=session_id).session_id))
        _emit(result, lambda r: out.print(_safe(f"{r['id']} · {r['status']}\n\n{r['body']}")))
        return
    scope = store.scope(project, all_projects, Path.cwd())
    batons = [h for p in (scope or [None]) for h in list_handoffs(store, p)]
    _emit({"items": batons, "total": len(batons)}, lambda r: out.print(
        "\n\n".join(_safe(f"{h['id']} ({h['project']}, from {h['fromSessionId']}"
                             f"{', branch ' + h['branch'] if h.get('branch') else ''}"
                             f"{', owner ' + h['owner'] if h.get('owner') else ''}):\n{h['body']}")
                      for h in r["items"]) or "No pending hand-offs."))


@session_app.command("show")
def session_show(
    session_id: Optional[str] = typer.Argument(None, help="Session id; without it, sessions are listed."),
    project: Optional[str] = typer.Option(None, "--project", help="Project id (listing)."),
    all_projects: bool = typer.Option(False, "--all", "--cross-project", help="Every project (listing)."),
    client: Optional[str] = typer.Option(None, "--client", help="Client, exact (listing)."),
    since: Optional[str] = typer.Option(None, "--since", help="Sessions starting at or after (listing)."),
    until: Optional[str] = typer.Option(None, "--until", help="Sessions starting at or before (listing)."),
    limit: int = typer.Option(20, "--limit", help="Page size, 1–100."),
    offset: int = typer.Option(0, "--offset", help="Items to skip."),
) -> None:
    """Show one session with its turns in order, or list sessions newest first."""
    _check_scope(project, all_projects)
    request = _build(SessionRequest, session_id=session_id, project=project, cross_project=all_projects,
                     client=client, since=since, until=until, limit=limit, offset=offset, cwd=str(Path.cwd()))
    result = session_service.session_view(state.store, request)

    def human(r: dict[str, Any]) -> None:
        if "session" in r:
            session = r["session"] or {}
            if session:
                out.print(_safe(f"session {session['sessionId']} · {session['project']} · {session['status']} · "
                                f"{session['startTime']} – {session.get('endTime') or 'open'} · "
                                f"{session.get('durationMinutes') if session.get('durationMinutes') is not None else '-'} min"
                                + (f" · {session['summary']}" if session.get("summary") else "")))
            for turn in r["items"]:
                out.print(_safe(f"\n[turn {turn.get('turn')}] {turn['created']}"))
                out.print(_safe(turn.get("body", "")))
            if r["hasMore"]:
                out.print(f"more: --offset {r['offset'] + r['limit']}")
            return
        table = Table(title=f"{r['total']} sessions")
        for column in ("start (UTC)", "project", "session", "client", "status", "minutes", "summary"):
            table.add_column(column, overflow="fold")
        for item in r["items"]:
            table.add_row(item["startTime"][:16].replace("T", " "), item["project"], item["sessionId"],
                          _short(item.get("client") or "internal", 20), item["status"],
                          "" if item.get("durationMinutes") is None else str(item["durationMinutes"]),
                          _short(item.get("summary"), 40))
        out.print(table)

    _emit(result, human)


def _is_completed(session_id: Optional[str], project: Optional[str]) -> bool:
    if not session_id:
        return False
    try:
        record = prompt_service.get_record(state.store, session_id)
    except MemoError:
        return False
    return record.get("kind") == "session" and record.get("status") == "completed" and (
        not project or record.get("project") == project)


# ---------------------------------------------------------------- activity & reports


def _activity_request(project: Optional[str], all_projects: bool, since: Optional[str], until: Optional[str],
                      client: Optional[str], tz: Optional[str]) -> ActivityRequest:
    _check_scope(project, all_projects)
    projects = state.store.scope(project, all_projects, Path.cwd())
    return ActivityRequest(projects=projects, since=since, until=until, client=client, tz=tz)


_REPORT_FILTERS = dict(
    since=typer.Option(None, "--since", help="Sessions starting at or after (ISO date or time)."),
    until=typer.Option(None, "--until", help="Sessions starting at or before (a date covers the whole day)."),
    client=typer.Option(None, "--client", help="Client (case-insensitive; 'internal' for none)."),
    project=typer.Option(None, "--project", help="One project (default: the cwd's repository, else all)."),
    all_projects=typer.Option(False, "--all", "--cross-project", help="Every project of the vault."),
    tz=typer.Option(None, "--tz", help="IANA time zone for dates and display (default: machine's)."),
)


def _print_activity(report: ActivityReport, explicit_project: bool = True) -> None:
    data = report.wire()
    out.print(_scope_line(report.projects, explicit_project)
              + (f" · client: {report.client}" if report.client else "")
              + f" · times in {data['timezone']}")
    if report.client and not data["sessions"]:
        known = sorted({c for c in _known_clients()})
        hint = f"; clients in the vault: {', '.join(known)}" if known else ""
        err.print(f"note: no session has the client {report.client!r} (exact name, any case){hint}")
    for title, groups in (("client", data["byClient"]), ("project", data["byProject"])):
        table = Table(title=f"Billable time by {title}")
        table.add_column(title)
        table.add_column("sessions", justify="right")
        table.add_column("duration", justify="right")
        table.add_column("hours", justify="right")
        for name, bucket in groups.items():
            table.add_row(_short(name, 40), str(bucket["sessions"]), format_minutes(bucket["durationMinutes"]),
                          f"{bucket['billableHours']:.2f}")
        out.print(table)
    sessions = Table(title=f"Sessions (times in {data['timezone']})")
    for column in ("start", "end", "project", "client", "billable", "minutes", "task / summary"):
        sessions.add_column(column)
    zone = report.zone
    from ..domain.clock import from_iso

    for s in data["sessions"]:
        start = from_iso(s["startTime"]).astimezone(zone).strftime("%Y-%m-%d %H:%M")
        end = from_iso(s["endTime"]).astimezone(zone).strftime("%Y-%m-%d %H:%M") if s["endTime"] else "open"
        sessions.add_row(start, end, s["project"], _short(s["client"], 30), "yes" if s["billable"] else "no",
                         "" if s["durationMinutes"] is None else str(s["durationMinutes"]),
                         _short(s["taskSlug"] or s["summary"] or s["sessionId"], 40))
    out.print(sessions)
    out.print(f"Total billable: {format_minutes(data['totalDurationMinutes'])} "
              f"({data['totalBillableHours']:.2f} h) · prompts: {data['totalPrompts']}")


@app.command("activity")
def activity(
    since: Optional[str] = _REPORT_FILTERS["since"], until: Optional[str] = _REPORT_FILTERS["until"],
    client: Optional[str] = _REPORT_FILTERS["client"], project: Optional[str] = _REPORT_FILTERS["project"],
    all_projects: bool = _REPORT_FILTERS["all_projects"], tz: Optional[str] = _REPORT_FILTERS["tz"],
) -> None:
    """Billable activity: totals by client and project, sessions, prompts."""
    report = activity_report(state.store, _activity_request(project, all_projects, since, until, client, tz))
    if state.json:
        _emit(report.wire(), lambda _: None)
    else:
        _print_activity(report, explicit_project=bool(project) or all_projects)


def _known_clients() -> list[str]:
    everything = activity_report(state.store, ActivityRequest(projects=None))
    return [s["client"] for s in everything.sessions]


@report_app.command("timesheet")
def report_timesheet(
    output: Path = typer.Option(..., "--output", "-o", help="PDF file to write."),
    since: Optional[str] = _REPORT_FILTERS["since"], until: Optional[str] = _REPORT_FILTERS["until"],
    client: Optional[str] = _REPORT_FILTERS["client"], project: Optional[str] = _REPORT_FILTERS["project"],
    all_projects: bool = _REPORT_FILTERS["all_projects"], tz: Optional[str] = _REPORT_FILTERS["tz"],
    templates: Optional[Path] = typer.Option(None, "--templates", help="Your own template folder (tried first)."),
) -> None:
    """PDF timesheet: one row per billable session, subtotals per client, the grand total."""
    report = activity_report(state.store, _activity_request(project, all_projects, since, until, client, tz))
    path = render_timesheet_pdf(report, output, templates, vault_root=state.store.root)
    result = {"output": str(path), "totalDurationMinutes": report.total_duration_minutes,
              "totalBillableHours": report.total_billable_hours, "timezone": report.wire()["timezone"]}
    _emit(result, lambda r: out.print(f"wrote {r['output']}: total billable {r['totalBillableHours']:.2f} h "
                                      f"(times in {r['timezone']})"))


# ---------------------------------------------------------------- import & reindex


def _import_command(source: str) -> Callable[..., None]:
    def command(
        paths: List[str] = typer.Argument(..., help="Transcript files or folders (hidden folders are walked)."),
        project: Optional[str] = typer.Option(None, "--project", help="File everything under this project."),
        client: Optional[str] = typer.Option(None, "--client", help="Client of the imported sessions."),
        billable: Optional[bool] = typer.Option(None, "--billable/--no-billable", help="Billable or not (default yes)."),
        idle_gap: Optional[int] = typer.Option(
            None, "--idle-gap", min=1, max=525_600,
            help="Minutes of pause that start a new session (1–525600; default 30 or MEMO_IDLE_GAP_MINUTES)."),
        tz: Optional[str] = typer.Option(None, "--tz", help="Zone of timestamps without an offset (default: machine's)."),
    ) -> None:
        module = load_importer(source)
        if any(not p.strip() for p in paths):
            raise MemoError("Invalid path: must not be empty")
        gap = idle_gap if idle_gap is not None else state.settings.idle_gap_minutes
        options = ImportOptions(project=project, client=client, billable=billable,
                                idle_gap=timedelta(minutes=gap), zone=resolve_zone(tz or state.settings.timezone))
        files = list(walk_files([Path(p) for p in paths], module.SUFFIXES, module.EXCLUDE_DIRS))
        with _progress(f"import {source}", len(files)) as advance:
            result = run_import(state.store, files, module.parse, options, progress=lambda _p: advance())
        for line in result.errors[:20]:
            err.print(f"skipped: {line}")
        if client is None and billable is not False and result.sessions and not state.json:
            err.print("note: the new sessions have no client, so they bill to 'internal'; "
                      "import with --client NAME or --no-billable to file them otherwise")
        _emit(result.wire(), lambda r: out.print(result.line()))

    command.__doc__ = f"Import {source} transcripts: one session per work interval, one turn per human prompt."
    return command


for _source in IMPORTERS:
    import_app.command(_source)(_import_command(_source))


class _progress:
    def __init__(self, label: str, total: int) -> None:
        self.progress = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=err, transient=True, disable=not err.is_terminal)
        self.total = total

    def __enter__(self) -> Callable[[], None]:
        self.progress.start()
        task = self.progress.add_task("", total=self.total)
        return lambda: self.progress.advance(task)

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


@app.command("reindex")
def reindex() -> None:
    """Rebuild the SQLite index (records, records_fts) from the vault's files alone."""
    store = state.store
    if not store.root.is_dir():
        raise MemoError(f"No vault at {store.root}")
    total = len(store.layout.record_files())
    with _progress("reindex", total) as advance:
        result = reindex_vault(store, progress=lambda n, t: advance())
    for error in result.skipped:
        err.print(f"skipped: {error}")
    _emit(result.wire(), lambda r: out.print(
        f"indexed {r['indexed']} records, skipped {len(r['skipped'])} files"
        + (f", removed {r['removedTempFiles']} stale temporary files" if r["removedTempFiles"] else "")))


# ---------------------------------------------------------------- mcp


@app.command("mcp")
def mcp_server(
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio."),
    port: int = typer.Option(3125, "--port", min=1, max=65535, help="HTTP port (with --http)."),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP address (loopback only)."),
) -> None:
    """Run the MCP server with the one tool `prompt` (stdio by default)."""
    from .mcp import serve  # the launcher starts the MCP adapter; it shares nothing else with it

    serve(state.settings, http=http, host=host, port=port)


# ---------------------------------------------------------------- demo


@app.command("demo")
def demo(
    out_dir: Path = typer.Option(Path.home() / ".memo" / "demo", "--out", help="Folder for the sample vault and PDF."),
    tz: str = typer.Option(DEMO_ZONE, "--tz", help="Zone of the sample's working hours and of the report."),
) -> None:
    """Build a sample vault, print its activity and write its PDF timesheet."""
    out_dir = out_dir.expanduser().resolve()
    vault = out_dir / "vault"
    marker = out_dir / DEMO_MARKER
    resolve_zone(tz)
    if out_dir.exists() and not out_dir.is_dir():
        raise MemoError(f"Invalid out: {out_dir} is not a folder")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not marker.exists():
        raise MemoError(f"Invalid out: {out_dir} is not empty and was not made by memo demo; choose another --out")
    settings = _settings(vault_root=vault, timezone=tz)
    if vault.exists():
        shutil.rmtree(vault)
    out_dir.mkdir(parents=True, exist_ok=True)
    marker.write_text("This folder was made by `memo demo`; the next run replaces it.\n", encoding="utf-8")
    state.settings = settings
    state._store = None
    counts = build_demo_vault(state.store)
    report = activity_report(state.store, ActivityRequest(projects=None, tz=tz))
    pdf = render_timesheet_pdf(report, out_dir / "timesheet.pdf")
    if state.json:
        _emit({"vault": str(vault), "timesheet": str(pdf), **counts, "activity": report.wire()}, lambda _: None)
        return
    _print_activity(report)
    out.print()
    out.print(f"sample vault : {vault}  ({counts['sessions']} sessions, {counts['turns']} turns)")
    out.print(f"timesheet PDF: {pdf}")
    out.print(f"try          : memo --vault-root {vault} prompt search invoices --all")


# ---------------------------------------------------------------- entry point


DEMO_MARKER = ".memo-demo"


def _validation_message(exc: ValidationError) -> str:
    first = exc.errors()[0]
    message = first["msg"].removeprefix("Value error, ")
    field = ".".join(to_camel(str(p)) for p in first["loc"])
    if not field and ": " in message:
        field, message = message.split(": ", 1)
        field = to_camel(field)
    return f"Invalid {field or 'input'}: {message}"


def _build(request_model: type, /, **fields: Any):
    try:
        return request_model(**fields)
    except ValidationError as exc:
        raise MemoError(_validation_message(exc)) from None


def _settings(**fields: Any) -> Settings:
    try:
        return Settings(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else "setting"
        env = {"vault_root": "vaultRoot (MEMO_VAULT)"}.get(name, f"{to_camel(name)} (MEMO_{name.upper()})")
        raise MemoError(f"Invalid {env}: {first['msg'].removeprefix('Value error, ')}") from None


def _fail(message: str, code: int = 1) -> None:
    err.print(f"error: {redact_secrets(message)[0]}")
    sys.exit(code)


def main() -> None:
    """Console-script entry point.

    Every expected failure ends as one line ``error: <message>`` on stderr (secrets in the
    message redacted) and a non-zero exit: 1 for a refused request, 2 for a usage error.
    """
    try:
        app(standalone_mode=False, prog_name="memo")
    except MemoError as exc:
        _fail(str(exc))
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _fail("aborted", 130)
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        _fail(f"Cannot use{where}: {exc.strerror or type(exc).__name__}")
    except sqlite3.DatabaseError as exc:
        path = state.settings.vault_root / ".memo" / "index.sqlite" if state.settings else "the index"
        _fail(f"The index {path} is damaged ({exc}); run `memo reindex` to rebuild it")
    except Exception as exc:
        # usage errors of the click that typer ships (duck-typed: typer may vendor click)
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.exit(0)
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            context = getattr(exc, "ctx", None)
            where = f" ({context.command_path})" if context is not None else ""
            hint = "; put --json before the command: memo --json <command>" if "--json" in exc.format_message() else ""
            _fail(f"{exc.format_message()}{where}; see --help{hint}", exc.exit_code)
        raise
