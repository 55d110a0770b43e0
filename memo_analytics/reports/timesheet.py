"""The billing timesheet (SPEC §5.1): pure row building + rendering to HTML/PDF.

One row per billable session with a duration, grouped per client; a subtotal per client
and a grand total. Minutes are the unit of truth: subtotals are sums of row minutes and
the grand total equals ``totalDurationMinutes``/``totalBillableHours`` of the
:class:`~memo_analytics.analytics.activity.ActivityReport` for the same filters. Row hours
are the report's per-session ``billableHours`` (the report's rounding policy), so the hours
of the rows add up to each subtotal and the subtotals to the grand total.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..analytics.activity import ActivityReport
from ..domain.errors import ReportError
from ..domain.rounding import ROUNDING_POLICY_PRINTED
from ..domain.clock import format_minutes, from_iso, hours_2dp, utcnow, zone_name
from ..domain.clock import printed_span as clock_span, span_clock
from .render import check_output_path, render_html, render_pdf_bytes, templates_dir, write_pdf


@dataclass
class TimesheetRow:
    """One billable session as printed (times in the report's zone). ``duration_minutes`` are
    the minutes it bills (they add up to the report's total); ``worked_minutes`` its own
    duration, from ``start`` to ``end``; ``note`` says why they differ (parallel sessions, the
    client's rounding). ``task`` is what the PDF prints first (the task slug, else the summary,
    else the session id); ``task_slug`` and ``session_summary`` are the session's own fields."""

    date: str
    project: str
    task: str
    start: str
    end: str
    duration_minutes: int
    deliverables: list[str]
    hours: float = 0.0
    summary: str = ""
    session_id: str = ""
    worked_minutes: int = 0
    note: str = ""
    task_slug: str = ""
    session_summary: str = ""
    #: whose session it is (its ``owner``; empty: none recorded)
    owner: str = ""
    #: ``start`` and ``end`` as ISO 8601 instants with the zone's offset (``2026-03-05T22:40:00+01:00``)
    start_time: str = ""
    end_time: str = ""

    @property
    def duration(self) -> str:
        return format_minutes(self.duration_minutes)

    @property
    def notes(self) -> list[str]:
        """The lines printed under the task: the summary (when it is not the task itself),
        the billing note, then one line per deliverable."""
        return ([self.summary] if self.summary else []) + ([self.note] if self.note else []) + self.deliverables


@dataclass
class ClientSection:
    """All rows of one client with their subtotal."""

    client: str
    rows: list[TimesheetRow] = field(default_factory=list)

    @property
    def minutes(self) -> int:
        return sum(r.duration_minutes for r in self.rows)

    @property
    def hours(self) -> float:
        """The client's hours: rounded from its minutes, the sum of its rows' hours (SPEC §4
        rounding policy, :mod:`memo_analytics.domain.rounding`)."""
        return round(sum(r.hours for r in self.rows), 2)


#: The most of a summary or task a report prints (a 100,000-character description would take
#: minutes to lay out and says nothing more on an invoice).
MAX_SHOWN_CHARS = 300


def shown(text: str | None, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` as a report prints it: at most ``limit`` characters, cut with an ellipsis."""
    text = text or ""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def printed_span(item: dict[str, Any], zone) -> tuple[datetime, datetime]:
    """The start and end a report prints for a session (issue 15 point 5:
    :func:`~memo_analytics.domain.clock.printed_span`). What it bills (``billedMinutes``:
    parallel sessions, the client's rounding) the row says beside it."""
    return clock_span(item["startTime"], item["durationMinutes"], zone)


def _billed_note(report: ActivityReport, client: str, worked: int, billed: int | None,
                 session: tuple[str, str] | None = None, invoice: str | None = None) -> str:
    """Why a row bills other minutes than the session's span (minutes): an issued invoice that
    billed it so (``invoice``: its number) — the session changed since, or the client's terms —,
    the client's rounding, parallel sessions of the client counted once (after the rounding), or
    both; "" when it bills them as they are."""
    if billed is None or billed == worked:
        return ""
    rounded = report.rounded_minutes(client, worked)
    if session is not None and report.invoiced_minutes.get(session) == billed:
        said = f"invoice {invoice}" if invoice else "its issued invoice"
        if report.invoiced_durations.get(session, worked) != worked:
            return f"billed {billed} minutes as {said} did (the session was changed since: {worked} now)"
        # the terms of then: a rounding changed since had the row explained by the terms of now
        # ("raised to 120 minutes by the client's rounding, then parallel to another session")
        return f"billed {billed} minutes as {said} did" + (" (the client's rounding)" if billed == rounded else "")
    if billed < rounded and rounded > worked:
        return (f"raised to {rounded} minutes by the client's rounding, then parallel to another session of this "
                f"client: {billed} billed")
    if billed < worked:
        return f"parallel to another session of this client: {billed} of {worked} minutes billed"
    return f"billed {billed} minutes (the client's rounding)"


def timesheet_sections(report: ActivityReport) -> list[ClientSection]:
    """Group the report's billable sessions by client (sorted case-insensitively). Pure."""
    zone = report.zone
    names = {name.lower(): name for name in report.by_client}
    sections: dict[str, ClientSection] = {}
    for item in report.sessions:
        if not item["billable"] or item["durationMinutes"] is None:
            continue
        start, end = printed_span(item, zone)
        days = (end.date() - start.date()).days
        began, ended = span_clock(start, end)
        billed = item.get("billedMinutes", item["durationMinutes"])
        note = _billed_note(report, item["client"], item["durationMinutes"], billed,
                            (item["project"], item["sessionId"]), item.get("invoice"))
        key = item["client"].lower()
        section = sections.setdefault(key, ClientSection(names.get(key, item["client"])))
        section.rows.append(
            TimesheetRow(
                date=start.strftime("%Y-%m-%d"),
                project=item["project"],
                task=shown(item["taskSlug"] or item["summary"] or f"Work on {item['project']}"),  # as its invoice line
                start=began,
                end=ended + (f" (+{days}d)" if days else ""),
                duration_minutes=int(billed if billed is not None else item["durationMinutes"]),
                deliverables=[d.get("url") or d.get("sha") or d.get("title") or d["type"] for d in item["deliverables"]],
                summary=shown(item["summary"]) if item["taskSlug"] and item["summary"] else "",
                hours=item["billableHours"],
                session_id=item["sessionId"],
                owner=shown(item.get("owner") or ""),
                worked_minutes=int(item["durationMinutes"]),
                note=note,
                start_time=start.isoformat(timespec="seconds"),
                end_time=end.isoformat(timespec="seconds"),
                task_slug=item["taskSlug"] or "",
                session_summary=shown(item["summary"]),
            )
        )
    return [sections[k] for k in sorted(sections)]


def period_text(bounds, zone, sessions: list[dict[str, Any]] | None = None) -> str:
    """The report's period as a person reads it, in ``zone``: whole days when the bounds
    are local midnights (``2026-03-01 – 2026-03-31``), else instants (the end inclusive).
    An open bound (no ``--since`` / ``--until``) prints the local date of the first session's
    start / the last session's end among ``sessions`` (wire dicts): a period is always dates."""
    def is_midnight(instant: datetime) -> bool:
        local = instant.astimezone(zone)
        return (local.hour, local.minute, local.second, local.microsecond) == (0, 0, 0, 0)

    starts = sorted(from_iso(item["startTime"]) for item in sessions or () if item.get("startTime"))
    ends = sorted(from_iso(item.get("endTime") or item["startTime"]) for item in sessions or () if item.get("startTime"))
    if bounds.since is None:
        since = starts[0].astimezone(zone).strftime("%Y-%m-%d") if starts else "the first session"
    elif is_midnight(bounds.since):
        since = bounds.since.astimezone(zone).strftime("%Y-%m-%d")
    else:
        since = bounds.since.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S")
    end = bounds.until_exclusive
    if end is None:
        until = ends[-1].astimezone(zone).strftime("%Y-%m-%d") if ends else "the last session"
    elif is_midnight(end):
        until = (end.astimezone(zone) - timedelta(days=1)).strftime("%Y-%m-%d")
    else:
        until = (end - timedelta(microseconds=1)).astimezone(zone).strftime("%Y-%m-%d %H:%M:%S") + " (inclusive)"
    return f"{since} – {until}"


def require_whole(report: ActivityReport) -> None:
    """Refuse a document (timesheet, invoice) of ``report`` while a session file that may belong
    to it cannot be read (:attr:`~memo_analytics.analytics.activity.ActivityReport.left_out_in_scope`):
    the document would be short by it without a word — a timesheet PDF said "No billable sessions
    in this period" of a month whose one session file a hand edit broke. Pure.

    Raises
    ------
    ReportError
        Naming the files, why each cannot be read and the mend.
    """
    files = report.left_out_in_scope
    if files:
        more = f"; and {len(files) - 3} more (memo reindex lists them)" if len(files) > 3 else ""
        raise ReportError(f"{len(files)} session file{'s' if len(files) != 1 else ''} of this report cannot be "
                          f"read, so it would be short by {'them' if len(files) != 1 else 'it'}: "
                          f"{'; '.join(files[:3])}{more} — mend {'each' if len(files) != 1 else 'it'} as said "
                          "(then memo reindex; a further vault's file: memo --vault-root VAULT reindex), or leave "
                          "its project out: --project P, in place of --all")


def timesheet_context(report: ActivityReport, title: str = "Timesheet", now: datetime | None = None) -> dict[str, Any]:
    """Everything the template needs; the grand total comes from the report itself.

    Raises
    ------
    ReportError
        A session file that may belong to the report cannot be read (:func:`require_whole`).
    """
    require_whole(report)
    sections = timesheet_sections(report)
    zone = report.zone
    return {
        "title": title,
        "sections": sections,
        "zone": zone_name(zone),
        "period": period_text(report.bounds, zone, report.sessions),
        "projects": ", ".join(report.projects) if report.projects is not None else "all projects",
        "client_filter": report.client,
        "owner_filter": report.owner,
        "issuer": report.issuer,
        "client_names": report.client_names,
        "client_rounding": report.client_rounding,
        # clients a row of which an issued invoice billed: their terms now may not be the ones
        # those rows were billed by (a footer of today's rounding under a month billed by another)
        "client_invoiced": sorted({item["client"] for item in report.sessions
                                   if item["billable"] and item.get("invoice")}),
        "total_minutes": report.total_duration_minutes,
        "total_duration": format_minutes(report.total_duration_minutes),
        "total_hours": f"{report.total_billable_hours:.2f}",
        "rounding_policy": ROUNDING_POLICY_PRINTED,
        "overlap_policy": report.overlap_policy,
        "generated": (now or utcnow()).astimezone(zone).strftime("%Y-%m-%d %H:%M"),
        "format_hours": lambda minutes: f"{hours_2dp(minutes):.2f}",
    }


def timesheet_html(report: ActivityReport, user_templates: Path | None = None, now: datetime | None = None) -> str:
    """The timesheet of ``report`` as HTML (``timesheet.html.j2``, the user's folder first):
    what :func:`render_timesheet_pdf` writes and :func:`timesheet_pdf_bytes` returns.

    Raises
    ------
    ReportError
        A missing or broken template.
    """
    return render_html("timesheet.html.j2", timesheet_context(report, now=now), user_templates)


def timesheet_pdf_bytes(report: ActivityReport, user_templates: Path | None = None,
                        now: datetime | None = None) -> bytes:
    """The timesheet PDF of ``report`` as bytes (a download: nothing is written).

    Raises
    ------
    ReportError
        A missing or broken template, or a resource it names that cannot be loaded.
    """
    return render_pdf_bytes(timesheet_html(report, user_templates, now), user_templates or templates_dir())


def render_timesheet_pdf(report: ActivityReport, output: Path, user_templates: Path | None = None,
                         now: datetime | None = None, vault_root: Path | None = None, overwrite: bool = False) -> Path:
    """Write the timesheet PDF for ``report`` to ``output`` (atomically) and return the path;
    an existing file is replaced only with ``overwrite``.

    Raises
    ------
    ReportError
        A bad output path (inside ``vault_root`` included) or template.
    """
    check_output_path(output, (vault_root,) if vault_root else (), overwrite=overwrite)
    html = timesheet_html(report, user_templates, now)
    return write_pdf(html, output, user_templates or templates_dir(), (vault_root,) if vault_root else (), overwrite)
