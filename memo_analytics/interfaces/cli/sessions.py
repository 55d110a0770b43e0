"""``memo session start|end|handoff|show|export``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, List, Optional

import typer

from ...domain.errors import InvalidFieldError, MemoError
from ...domain.shell import shell_word
from ...domain.wire import counted
from ...services import prompts as prompt_service
from ...services import sessions as session_service
from ...services.stories import export_story
from ...services.handoffs import cancel_handoff, get_handoff, handoff_list
from ...services.requests import (
    CancelHandoffRequest,
    EndSessionRequest,
    ExportStoryRequest,
    HandoffListRequest,
    SessionRequest,
    StartSessionRequest,
)
from ...services.store import shell_cwd
from .common import (
    answer_of,
    print_listing,
    _build,
    _check_scope,
    _emit,
    _local,
    _safe,
    _short,
    _zone,
    _zone_label,
    out,
    err,
    note_new_client,
    on_remote,
    session_app,
    state,
)

# ---------------------------------------------------------------- session


@session_app.command("start")
def session_start(
    session_id: Optional[str] = typer.Argument(None, help="Session id (generated when absent)."),
    project: Optional[str] = typer.Option(None, "--project", help="Project id (default: the repository folder of the cwd)."),
    ide: Optional[str] = typer.Option(None, "--ide", help="IDE or agent host."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name."),
    agent: Optional[str] = typer.Option(None, "--agent", help="Agent name."),
    client: Optional[str] = typer.Option(None, "--client", help="Client billed (default: the one projectClients maps the project to, else internal)."),
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
                     cwd=shell_cwd(), source="cli")
    # asked before it is written: a misspelt client ("Acme Crop") left the real client's invoice without a word
    new_client = bool(client) and on_remote() is None and prompt_service.is_new_client(state.store, client)
    from ...services.sync import start_after_pull

    record = answer_of("session_start", request, lambda: start_after_pull(state.store, request))
    if new_client:
        note_new_client(record.get("client") or client)

    def human(r: dict[str, Any]) -> None:
        out.print(f"started session {r['sessionId']} in project {r['project']} at {_local(r['startTime'])} "
                  f"({_zone_label()})")
        if r.get("note"):
            err.print(_safe(f"note: {r['note']}"))
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
            raise InvalidFieldError("deliverables", f"not JSON ({exc.msg})") from None
        except RecursionError:  # a traceback before
            raise InvalidFieldError("deliverables", "nested too deeply: expected a JSON list of objects") from None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise InvalidFieldError("deliverables", "expected a JSON list of objects")
    for url in pr:
        if not session_service.is_web_url(url):  # named as given (an item of --deliverables names its place)
            raise InvalidFieldError("pr", f"{url[:100]!r} is not an http(s) URL")
    items.extend(session_service.pr_deliverable(url) for url in pr)
    for name, value in (("handoff.branch", handoff_branch), ("handoff.owner", handoff_owner)):
        if value is not None and not value.strip():  # stored as none, silently (every other option refuses it)
            raise InvalidFieldError(name, "is empty: give a value, or leave the option out")
    handoff = None
    if next_step or failed or question or handoff_branch or handoff_owner or shared:
        if not next_step:
            raise MemoError("Invalid handoff.nextSteps: give at least one --next-step")
        handoff = {"next_steps": next_step, "failed_approaches": failed, "open_questions": question,
                   "branch": handoff_branch, "owner": handoff_owner, "shared": shared}
    request = _build(EndSessionRequest, session_id=session_id, summary=summary, deliverables=items,
                     until=until, project=project, handoff=handoff, cwd=shell_cwd())
    was_completed = _is_completed(session_id, project)
    record = answer_of("session_end", request, lambda: session_service.end_session_answer(state.store, request))

    def human(r: dict[str, Any]) -> None:
        from ...domain.clock import printed_span, span_clock

        began, ended = span_clock(*printed_span(r["startTime"], r["durationMinutes"], _zone()),  # as every report prints it
                                  "%Y-%m-%d %H:%M")
        span = f"{began} – {ended} {_zone_label()}"
        if r.get("unchanged"):
            out.print(f"session {r['sessionId']} was already ended ({r['durationMinutes']} minutes, {span}): "
                      "nothing changed (memo session edit corrects its times)")
        elif was_completed:
            out.print(f"session {r['sessionId']} was already ended; its times and duration are kept "
                      f"({r['durationMinutes']} minutes, {span}); summary and deliverables updated"
                      + ("; its hand-off is written anew and pending (memo session handoff --cancel takes it back)"
                         if handoff else ""))
        else:
            out.print(f"ended session {r['sessionId']}: {counted(r['durationMinutes'], 'minute')} ({span})")
        for warning in r.get("warnings", []):
            err.print(_safe(f"warning: {warning}"))

    _emit(record, human)
    if record.get("unchanged"):  # a command that did nothing exits non-zero
        raise typer.Exit(1)


@session_app.command("edit")
def session_edit(
    session_id: str = typer.Argument(..., help="Session id."),
    project: Optional[str] = typer.Option(None, "--project", help="Project id (default: where the session lives)."),
    client: Optional[str] = typer.Option(None, "--client", help="Client billed ('internal': none)."),
    billable: Optional[bool] = typer.Option(None, "--billable/--no-billable", help="Bill it or not."),
    summary: Optional[str] = typer.Option(None, "--summary", help="What it did (its invoice and timesheet text)."),
    to_project: Optional[str] = typer.Option(None, "--to-project", help="Move it (and its turns) to this project."),
    start: Optional[str] = typer.Option(None, "--start", help="Correct when it started (ISO 8601; without an offset, "
                                        "in the config's timezone)."),
    end: Optional[str] = typer.Option(None, "--end", help="Correct when it ended (as --start)."),
    minutes: Optional[int] = typer.Option(None, "--minutes", help="Correct its length: it ends this many minutes "
                                          "after its start."),
    reviewed: Optional[bool] = typer.Option(None, "--reviewed/--not-reviewed", help="Its pull request was reviewed "
                                            "(the digest stops asking for a review)."),
) -> None:
    """Correct a session's client, billable flag, summary, project (its turns follow) or times."""
    from ...services.requests import EditSessionRequest
    from ...services.session_edit import edit_remote_session, edit_session

    if all(value is None for value in (client, billable, summary, to_project, start, end, minutes, reviewed)):
        raise InvalidFieldError("session", "nothing to change: give --client, --billable/--no-billable, --summary, "
                                           "--to-project, --start, --end, --minutes or --reviewed")
    if state.settings.mode == "remote":  # the team daemon's session, edited there (SPEC §2.7)
        record = edit_remote_session(state.settings, session_id, _zone(), project=project, client=client,
                                     billable=billable, summary=summary, to_project=to_project, start_time=start,
                                     end_time=end, minutes=minutes, reviewed=reviewed)
    else:
        request = _build(EditSessionRequest, session_id=session_id, project=project, client=client,
                         billable=billable, summary=summary, to_project=to_project, start_time=start, end_time=end,
                         minutes=minutes, reviewed=reviewed, cwd=shell_cwd())
        record = edit_session(state.store, request)
    if record["newClient"]:
        note_new_client(record["client"])
    elsewhere = record.get("projectBills")  # the edit's own (the daemon's, in remote mode)
    if elsewhere:  # the project bills another client
        err.print(_safe(f"note: it still bills {record.get('client') or 'internal'}; project {record['project']}'s "
                        f"sessions bill {elsewhere} (projectClients): to file it there too, memo session edit "
                        f"{shell_word(record['sessionId'])} --project {record['project']} --client "
                        f"{shell_word(elsewhere)}"))

    def human(r: dict[str, Any]) -> None:
        if not r["changed"] and r["turnsUpdated"]:  # an edit cut short before: its turns follow the session now
            n = r["turnsUpdated"]
            out.print(f"session {r['sessionId']}: already so; {n} of its turns said otherwise and now follow it")
            return
        if not r["changed"]:
            out.print(f"session {r['sessionId']}: already so, nothing changed")
            return
        timed = {"startTime", "endTime", "durationMinutes"} & set(r["changed"])
        span = (f" now {r['durationMinutes']} minutes ({_local(r['startTime'])} – {_local(r['endTime'])} "
                f"{_zone_label()});" if timed else "")
        turns = r["turnsUpdated"]
        follow = (f" its {turns} turn{'s' if turns != 1 else ''} updated too"
                  if {"client", "billable", "project"} & set(r["changed"]) else "")
        now = {"client": lambda: r.get("client") or "internal", "billable": lambda: "yes" if r.get("billable") else "no",
               "project": lambda: r["project"]}  # what it is now, beside what changed
        changed = ", ".join(f"{name} (now {now[name]()})" if name in now else name for name in r["changed"])
        out.print(_safe(f"session {r['sessionId']} ({r['project']}): {changed} changed;{span}{follow}").rstrip(";"))
        if r.get("turnsOutside"):
            n = r["turnsOutside"]
            err.print(f"note: {n} of its turns {'lies' if n == 1 else 'lie'} outside its new times (memo session show "
                      f"{r['sessionId']} lists them); the session bills only from its start to its end")

    _emit(record, human)
    if not record["changed"] and not record["turnsUpdated"]:
        raise typer.Exit(1)


@session_app.command("handoff")
def session_handoff(
    session_id: Optional[str] = typer.Argument(None, help="The session whose end wrote the hand-off (or the "
                                               "hand-off's own id, handoff-…); without it, list."),
    project: Optional[str] = typer.Option(None, "--project", help="Project id (listing)."),
    all_projects: bool = typer.Option(False, "--all", "--cross-project", help="Every project (listing)."),
    cancel: bool = typer.Option(False, "--cancel", help="Cancel this pending hand-off (without a session id: "
                                "your pending ones of the project, for your git identity and branch)."),
    limit: int = typer.Option(100, "--limit", help="Page size of the listing, 1–100."),
    offset: int = typer.Option(0, "--offset", help="Hand-offs to skip (listing)."),
) -> None:
    """Show pending hand-offs (oldest first, a page at a time), show one, or cancel one (--cancel)."""
    _check_scope(project, all_projects)
    store = state.store
    if cancel:
        if not session_id:  # yours: the pending batons of this project for your owner and branch
            mine = cancel_handoff(store, _build(CancelHandoffRequest, project=project, cwd=shell_cwd()))
            _emit(mine, lambda r: out.print(_safe(
                f"cancelled {', '.join(r['cancelled'])}" if r["cancelled"] else
                f"no pending hand-off of yours in {r['project']} (owner {r['owner'] or '-'}, branch "
                f"{r['branch'] or '-'}): nothing to cancel")))
            if not mine["cancelled"]:  # a command that did nothing says so and exits non-zero
                raise typer.Exit(1)
            return
        result: Any = cancel_handoff(store, _build(CancelHandoffRequest, session_id=session_id, project=project))
        _emit(result, lambda r: out.print(f"cancelled {r['id']}"))
        return
    if session_id:
        result = get_handoff(store, session_id, project, shell_cwd())
        _emit(result, lambda r: out.print(_safe(f"{r['id']} · {r['status']}\n\n{r['body']}")))
        return
    result = handoff_list(store, _build(HandoffListRequest, project=project, cross_project=all_projects,
                                        cwd=shell_cwd(), limit=limit, offset=offset))
    _emit(result, lambda r: out.print(
        ("\n\n".join(_safe(f"{h['id']} ({h['project']}, from {h.get('fromSessionId') or h.get('sessionId') or 'a session'}"
                              f"{', branch ' + h['branch'] if h.get('branch') else ''}"
                              f"{', owner ' + h['owner'] if h.get('owner') else ''}):\n{h['body']}")
                       for h in r["items"]) or (f"No pending hand-offs at --offset {r['offset']} (of {r['total']})"
                                                if r["total"] else "No pending hand-offs."))
        + (f"\n\n({len(r['items'])} of {r['total']}: --offset {r['offset'] + len(r['items'])} for the next)"
           if r.get("hasMore") else "")))


@session_app.command("show")
def session_show(
    session_id: Optional[str] = typer.Argument(None, help="Session id; without it, sessions are listed."),
    project: Optional[str] = typer.Option(None, "--project", help="Project id (listing; with a session id, the "
                                          "session must belong to it)."),
    all_projects: bool = typer.Option(False, "--all", "--cross-project", help="Every project (listing)."),
    client: Optional[str] = typer.Option(None, "--client", help="Client, the exact name in any case (listing)."),
    since: Optional[str] = typer.Option(None, "--since", help="Sessions starting at or after (listing)."),
    until: Optional[str] = typer.Option(None, "--until", help="Sessions starting at or before (listing)."),
    tz: Optional[str] = typer.Option(None, "--tz", help="IANA time zone of the days --since/--until name and of "
                                                        "the times shown (default: the config's timezone, else the "
                                                        "machine's)."),
    limit: int = typer.Option(20, "--limit", help="Page size, 1–100."),
    offset: int = typer.Option(0, "--offset", help="Items to skip."),
) -> None:
    """Show one session with its turns in order, or list sessions newest first."""
    _check_scope(project, all_projects)
    request = _build(SessionRequest, session_id=session_id, project=project, cross_project=all_projects,
                     client=client, since=since, until=until, tz=tz, limit=limit, offset=offset, cwd=shell_cwd())
    state.shown_zone = request.tz  # its times are shown in the zone of the days it names
    result = answer_of("session", request, lambda: session_service.session_view(state.store, request))

    def human(r: dict[str, Any]) -> None:
        if "session" in r:
            session = r["session"] or {}
            if session:
                out.print(_safe(f"session {session['sessionId']} · {session['project']} · {session['status']} · "
                                f"{_local(session['startTime'])} – {_local(session.get('endTime'))} {_zone_label()} · "
                                f"{session.get('durationMinutes') if session.get('durationMinutes') is not None else '-'} min"
                                + (f" · {session['summary']}" if session.get("summary") else "")))
            for turn in r["items"]:
                out.print(_safe(f"\n[turn {turn.get('turn')}] {_local(turn['created'], seconds=True)} {_zone_label()}"))
                out.print(_safe(turn.get("body", "")))
            if r["hasMore"]:
                out.print(f"more: --offset {r['offset'] + r['limit']}")
            return
        if not r["items"]:
            out.print(f"No sessions from offset {r['offset']} ({r['total']} in all)." if r["total"] else "No sessions match.")
            return
        shown = f" (showing {r['offset'] + 1}–{r['offset'] + len(r['items'])})" if r["total"] > len(r["items"]) else ""
        print_listing(f"{r['total']} session{'' if r['total'] == 1 else 's'}{shown}",
                      (f"start ({_zone_label()})", "project", "session", "client", "status", "minutes", "turns",
                       "summary"),
                      "session",
                      [(_local(item["startTime"]), item["project"], item["sessionId"],
                        _short(item.get("client") or "internal", 20), item["status"],
                        "" if item.get("durationMinutes") is None else str(item["durationMinutes"]),
                        str(item.get("turns", "")), _short(item.get("summary"), 40)) for item in r["items"]])
        if r["hasMore"]:
            out.print(f"more: --offset {r['offset'] + r['limit']}")

    _emit(result, human)


def _is_completed(session_id: Optional[str], project: Optional[str]) -> bool:
    if not session_id:
        return False
    from ...services.requests import GetRequest

    request = GetRequest(id=session_id, project=project, cwd=shell_cwd())
    try:  # in remote mode, as the team daemon holds it
        record = answer_of("get", request, lambda: prompt_service.get_record(state.store, session_id, project,
                                                                             request.cwd))
    except MemoError:
        return False
    return record.get("kind") == "session" and record.get("status") == "completed" and (
        not project or record.get("project") == project)




@session_app.command("export")
def session_export(
    session_id: str = typer.Argument(..., help="Session id."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Write the Markdown here (outside the product repository and the "
                                               "vault; run from the product repository). Default: stdout."),
    force: bool = typer.Option(False, "--force", help="Replace the output file if it exists (never a symbolic link)."),
    project: Optional[str] = typer.Option(None, "--project", help="Project id (needed when several projects hold the id; default: the one that does, or this repository's)."),
) -> None:
    """Export a session as a Markdown intent story: metadata, deliverables, hand-offs, turn log."""
    if on_remote() is not None:  # the team daemon's session: its story, written here (SPEC §2.7)
        from ...domain.ids import validate_session_id
        from ...services.stories import export_remote_story

        validate_session_id(session_id)
        arguments = {"sessionId": session_id, "cwd": shell_cwd(), **({"projectId": project} if project else {})}
        result = export_remote_story(state.settings, arguments, str(output) if output else None, force)
    else:
        request = _build(ExportStoryRequest, session_id=session_id, project=project,
                         output=str(output) if output else None, cwd=shell_cwd(), overwrite=force)
        result = export_story(state.store, request)

    def human(r: dict[str, Any]) -> None:
        if "markdown" in r:
            text = r["markdown"] if r["markdown"].endswith("\n") else r["markdown"] + "\n"
            # on a terminal, control characters in turn text could set the title or write the clipboard
            sys.stdout.write(_safe(text) if sys.stdout.isatty() else text)
        else:
            out.print(_safe(f"wrote {r['path']} ({r['turns']} turns, {r['bytes']} bytes)"))

    _emit(result, human)
