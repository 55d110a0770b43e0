"""``memo prompt record|list|search|get`` (alias ``memo prompts``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, List, Optional

import typer

from ...config import MAX_BODY_BYTES
from ...domain.errors import InvalidFieldError, MemoError
from ...services import prompts as prompt_service
from ...index.query import MAX_OFFSET
from ...services.requests import ListRequest, RecordPromptRequest
from ...services.store import shell_cwd
from .common import (
    answer_of,
    read_scope,
    print_listing,
    _build,
    _check_scope,
    _emit,
    _local,
    _refuse_missing_vault,
    _safe,
    _scope_line,
    _short,
    _zone_label,
    err,
    out,
    prompt_app,
    state,
)

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
                     tags=tag, cwd=shell_cwd(), source="cli", created=created)
    record = answer_of("record", request, lambda: prompt_service.record_prompt_answer(state.store, request))
    _emit(record, lambda r: out.print(f"recorded {r['id']} in project {r['project']}"))
    if not state.json:
        for warning in record.get("warnings", []):
            err.print(_safe(f"note: {warning}"))


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
    # a person's page: out of range is refused here (the tool brings it into 1–100, SPEC §2.6:
    # --limit 0 showed one prompt, --offset -1 the first page, without a word)
    if isinstance(kwargs.get("limit"), int) and kwargs["limit"] < 1:
        raise InvalidFieldError("limit", f"{kwargs['limit']} is below 1: a page holds 1–100 prompts")
    if isinstance(kwargs.get("offset"), int) and kwargs["offset"] < 0:
        raise InvalidFieldError("offset", f"{kwargs['offset']} is below 0: the prompts to skip")
    if isinstance(kwargs.get("offset"), int) and kwargs["offset"] > MAX_OFFSET:  # it would be answered as another
        raise InvalidFieldError("offset", f"{str(kwargs['offset'])[:40]} is above {MAX_OFFSET}: the prompts to skip")
    _check_scope(kwargs.get("project"), kwargs.get("all_projects", False))
    kwargs["cross_project"] = kwargs.pop("all_projects")
    kwargs["tags"] = kwargs.pop("tag")
    kwargs["cwd"] = shell_cwd()
    request = _build(ListRequest, **kwargs)
    state.shown_zone = request.tz  # the days it names are the days its times are shown in
    return request


def _print_page(page: dict[str, Any], request: ListRequest) -> None:
    _refuse_missing_vault()
    if page.get("leftOut"):  # turns the listing could not read: said, as memo activity says them
        err.print(_safe(f"note: {prompt_service.left_out_said(page['leftOut'])}"))
    scope = _scope_line(read_scope(request.project, request.cross_project, request.cwd), bool(request.project))
    if not page["items"] and page["total"]:  # they match; the page begins after the last of them
        out.print(f"No prompts on this page: {page['total']} match, and --offset {request.offset} skips past the "
                  f"last of them. {scope}")
        return
    if not page["items"]:
        out.print(f"No prompts match. {scope}")
        if page.get("note") and not page.get("leftOut"):  # why (every word must match, a joined phrase): as --json says
            err.print(_safe(f"note: {page['note']}"))
        return
    print_listing(f"{page['total']} prompt{'' if page['total'] == 1 else 's'} (showing {page['offset'] + 1}–{page['offset'] + len(page['items'])})"
                  f" · {scope}", (f"created ({_zone_label()})", "project", "id", "ide", "prompt"), "id",
                  [(_local(item["created"]), item["project"], item["id"], item.get("ide") or "",
                    _short(item.get("body"), 60)) for item in page["items"]])
    if page["hasMore"]:
        out.print(f"more: --offset {page['offset'] + page['limit']}")
    if request.limit is not None and request.limit > page["limit"]:
        err.print(f"note: a page holds at most {page['limit']} prompts (--limit {request.limit} asked); --offset "
                  "pages on, --json with the same --offset too")


_FILTERS = dict(
    project=typer.Option(None, "--project", help="Project id (default: the repository folder of the cwd)."),
    all_projects=typer.Option(False, "--all", "--cross-project", help="Every project of the vault."),
    ide=typer.Option(None, "--ide", help="IDE, exact (case-insensitive)."),
    model=typer.Option(None, "--model", help="Model, substring (case-insensitive)."),
    agent=typer.Option(None, "--agent", help="Agent, substring (case-insensitive)."),
    session_id=typer.Option(None, "--session-id", help="Session id, exact."),
    task_slug=typer.Option(None, "--task-slug", "--slug", help="Task slug, exact."),
    client=typer.Option(None, "--client", help="Client, the exact name in any case."),
    billable=typer.Option(None, "--billable/--no-billable", help="Billable or not."),
    tag=typer.Option([], "--tag", help="Tag that must be present (repeatable)."),
    since=typer.Option(None, "--since", help="Created at or after (ISO date or time)."),
    until=typer.Option(None, "--until", help="Created at or before (a date covers the whole day)."),
    tz=typer.Option(None, "--tz", help="IANA time zone of the days --since/--until name and of the times shown "
                                       "(default: the config's timezone, else the machine's)."),
    limit=typer.Option(20, "--limit", help="Page size, 1–100."),
    offset=typer.Option(0, "--offset", help="Items to skip."),
    sort=typer.Option(None, "--sort", metavar="ORDER",
                      help="By creation date, newest (date-desc) or oldest (date-asc) first; default: list newest "
                           "first, search by rank."),
)


@prompt_app.command("list")
def prompt_list(
    project: Optional[str] = _FILTERS["project"], all_projects: bool = _FILTERS["all_projects"],
    ide: Optional[str] = _FILTERS["ide"], model: Optional[str] = _FILTERS["model"],
    agent: Optional[str] = _FILTERS["agent"], session_id: Optional[str] = _FILTERS["session_id"],
    task_slug: Optional[str] = _FILTERS["task_slug"], client: Optional[str] = _FILTERS["client"],
    billable: Optional[bool] = _FILTERS["billable"], tag: List[str] = _FILTERS["tag"],
    since: Optional[str] = _FILTERS["since"], until: Optional[str] = _FILTERS["until"],
    tz: Optional[str] = _FILTERS["tz"], limit: int = _FILTERS["limit"], offset: int = _FILTERS["offset"], sort: Optional[str] = _FILTERS["sort"],
) -> None:
    """List prompt turns, newest first (--sort date-asc: oldest first), as {total, limit, offset, hasMore, items}."""
    request = _list_request(**{k: v for k, v in locals().items()})
    page = answer_of("list", request, lambda: prompt_service.list_prompts(state.store, request))
    _emit(page, lambda page: _print_page(page, request))


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
    tz: Optional[str] = _FILTERS["tz"], limit: int = _FILTERS["limit"], offset: int = _FILTERS["offset"], sort: Optional[str] = _FILTERS["sort"],
) -> None:
    """Full-text search (FTS5, bm25 ranking; --sort orders the matches by date) over prompt turns."""
    args = {k: v for k, v in locals().items() if k != "text"}
    args["query"] = query if query is not None else text
    if not prompt_service.searchable(args["query"]):  # the tool answers an empty page (SPEC §2.6)
        raise InvalidFieldError("query", "give words to search for (letters or digits; every word must match, "
                                         "a trailing * asks for a prefix); memo prompt list lists without one")
    request = _list_request(**args)
    page = answer_of("search", request, lambda: prompt_service.search_prompts(state.store, request))
    _emit(page, lambda page: _print_page(page, request))


@prompt_app.command("get")
def prompt_get(record_id: str = typer.Argument(..., metavar="ID", help="Prompt id, session record id or session id."),
               project: Optional[str] = typer.Option(None, "--project", help="Project id (needed when several projects hold the id; default: the one that does, or this repository's).")) -> None:
    """Show one record: a prompt, else a session."""
    from ...services.requests import GetRequest

    request = _build(GetRequest, id=record_id, project=project, cwd=shell_cwd())
    record = answer_of("get", request, lambda: prompt_service.get_record(state.store, record_id, project, request.cwd))

    def human(r: dict[str, Any]) -> None:
        body = r.pop("body", "")
        for key, value in r.items():
            if value not in (None, [], ""):
                out.print(_safe(f"{key}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"))
        if body:
            out.print()
            out.print(_safe(body))

    _emit(record, human)




@prompt_app.command("feedback")
def prompt_feedback(
    record_id: str = typer.Argument(..., metavar="ID", help="The prompt, session, trap or decision that was used."),
    helpful: Optional[bool] = typer.Option(None, "--helpful/--not-helpful",
                                           help="Whether it helped (leave out to count the use only)."),
    verdict: Optional[str] = typer.Option(None, "--feedback", metavar="helpful|stale|wrong",
                                          help="What it was worth: helpful, stale (outdated) or wrong; stale and "
                                               "wrong also count as not helpful."),
    comment: Optional[str] = typer.Option(None, "--comment", help="Why, in a sentence (secrets are redacted)."),
    project: Optional[str] = typer.Option(None, "--project", help="Project id (needed when several projects hold the id; default: the one that does, or this repository's)."),
) -> None:
    """Count a use of a record and what it was worth (the `feedback` action)."""
    from ...services.feedback import record_feedback
    from ...services.requests import FeedbackRequest

    result = record_feedback(state.store, _build(FeedbackRequest, id=record_id, helpful=helpful, feedback=verdict,
                                                 comment=comment, project=project, cwd=shell_cwd()))

    def human(r):
        f = r["feedback"]
        out.print(_safe(f"feedback on {r['kind']} {r['id']}: used {f['hits']} times, helpful {f['helpful']}, "
                        f"not helpful {f['notHelpful']} (stale {f['stale']}, wrong {f['wrong']})"))

    _emit(result, human)


@prompt_app.command("show")
def prompt_show(record_id: str = typer.Argument(..., metavar="ID", help="Prompt id, session record id or session id."),
                project: Optional[str] = typer.Option(None, "--project", help="Project id (needed when several projects hold the id; default: the one that does, or this repository's).")) -> None:
    """One record with its body as sanitized HTML (renderedHtml) and how many secrets it hides
    (the `prompt_detail` action: what the dashboard's drawer and GET /api/prompts/ID show)."""
    from ...reports.story import prompt_detail
    from ...services.requests import GetRequest

    request = _build(GetRequest, id=record_id, project=project, cwd=shell_cwd())
    record = answer_of("prompt_detail", request, lambda: prompt_detail(state.store, request))

    def human(r: dict[str, Any]) -> None:
        out.print(_safe(f"{r['id']} · {r['kind']} · {r['project']} · {r['created']}"
                        + (f" · {r['secretsRedacted']} secrets hidden" if r["secretsRedacted"] else "")))
        out.print()
        out.print(_safe(r.get("body") or ""))

    _emit(record, human)
