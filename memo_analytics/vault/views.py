"""Compiled views of a project (SPEC §2.1, §2.7): ``PROMPTS.md``, ``SESSIONS.md``,
``INDEX.md``, ``TRAPS.md``, ``DECISIONS.md``.

Pure rendering from records (dicts in wire form). Views are derived files: they show the
newest :data:`VIEW_LIMIT` records of a kind with the project's totals, so writing them costs
the same in a vault of a thousand prompts as in one of a million; the full history is one
``memo prompt list`` away.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from ..domain.wire import printable_text
from ..domain.records import subdir_for_kind

VIEW_LIMIT = 200
VIEW_FILES = {
    "prompt": "PROMPTS.md",
    "session": "SESSIONS.md",
    "trap": "TRAPS.md",
    "decision": "DECISIONS.md",
}


def _cell(text: object, width: int = 100) -> str:
    # a view is read with cat: no escape or direction character of a record's text (a hook's prompt)
    line = printable_text(" ".join(str(text if text is not None else "").split()))
    line = line if len(line) <= width else line[: width - 1] + "…"
    return line.replace("|", "\\|")


def _link(kind: str, record_id: object, text: object = None) -> str:
    """A relative Markdown link from a project's view to the record's file
    (``prompts/<id>.md``, ``sessions/<id>.md``) whose text is ``text`` (the id by default).
    Ids are safe slugs (SPEC §2.1), so neither the text nor the target needs escaping."""
    if not record_id:
        return _cell(text)
    return f"[{_cell(text or record_id, 200)}]({subdir_for_kind(kind)}/{quote(str(record_id))}.md)"


def _header(title: str, project: str, total: int, shown: int, command: str) -> list[str]:
    more = f" The newest {shown} are listed; `{command}` shows them all." if total > shown else ""
    return [f"# {title} — {project}", "", f"{total} in all.{more}", ""]


def render_prompts(project: str, total: int, rows: list[dict[str, Any]]) -> str:
    lines = _header("Prompts", project, total, len(rows), f"memo prompt list --project {project}")
    lines += ["| created (UTC) | prompt file | session | turn | ide | prompt |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['created'][:16].replace('T', ' ')} | {_link('prompt', r.get('id'))} | {_cell(r.get('sessionId'), 40)} "
              f"| {r.get('turn') or ''} | {_cell(r.get('ide'), 20)} | {_cell(r.get('body'))} |" for r in rows]
    return "\n".join(lines) + "\n"


def render_sessions(project: str, total: int, rows: list[dict[str, Any]]) -> str:
    lines = _header("Sessions", project, total, len(rows), f"memo session show --project {project}")
    lines += ["| session | start (UTC) | end (UTC) | minutes | client | billable | status | summary | deliverables |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        end = (r.get("endTime") or "")[:16].replace("T", " ") or "open"
        minutes = "" if r.get("durationMinutes") is None else r["durationMinutes"]
        deliverables = ", ".join(d.get("url") or d.get("sha") or d.get("type", "") for d in r.get("deliverables") or [])
        lines.append(f"| {_link('session', r.get('id'), r.get('sessionId'))} | {r['startTime'][:16].replace('T', ' ')} "
                     f"| {end} | {minutes} | {_cell(r.get('client') or 'internal', 30)} "
                     f"| {'yes' if r.get('billable', True) else 'no'} | {r.get('status')} | {_cell(r.get('summary'), 60)} "
                     f"| {_cell(deliverables, 80)} |")
    return "\n".join(lines) + "\n"


def render_listing(title: str, project: str, total: int, rows: list[dict[str, Any]]) -> str:
    lines = _header(title, project, total, len(rows), "memo prompt get <id>")
    if not rows:
        lines.append(f"No {title.lower()} yet.")
    for r in rows:
        lines.append(f"- **{_cell(r.get('id'), 80)}** ({r['created'][:10]}): {_cell(r.get('body'), 160)}")
    return "\n".join(lines) + "\n"


def render_index(project: str, counts: dict[str, int], sessions: list[dict[str, Any]],
                 handoffs: list[dict[str, Any]]) -> str:
    lines = [f"# {project}", "",
             f"- [Prompts](PROMPTS.md): {counts.get('prompt', 0)}",
             f"- [Sessions](SESSIONS.md): {counts.get('session', 0)}",
             f"- [Traps](TRAPS.md): {counts.get('trap', 0)}",
             f"- [Decisions](DECISIONS.md): {counts.get('decision', 0)}",
             f"- Hand-offs: {counts.get('handoff', 0)}", ""]
    open_sessions = [s for s in sessions if s.get("status") != "completed"]
    if open_sessions:
        lines += ["## Open sessions (newest first)", ""]
        lines += [f"- {_cell(s.get('sessionId'), 60)} since {s['startTime'][:16].replace('T', ' ')} UTC" for s in open_sessions]
        lines.append("")
    pending = [h for h in handoffs if h.get("status") == "pending"]
    if pending:
        lines += ["## Pending hand-offs", ""]
        lines += [f"- {h['id']}: {_cell('; '.join(h.get('nextSteps') or []), 120)}" for h in pending]
        lines.append("")
    return "\n".join(lines)


def view_files() -> list[str]:
    """Every compiled view's file name."""
    return [*VIEW_FILES.values(), "INDEX.md"]
