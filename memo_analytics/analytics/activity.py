"""``activity_report`` computed with DuckDB over polars frames (SPEC §4).

Rules: a session belongs to the report when its ``startTime`` lies in ``[since, until)``
(a date-only ``until`` covers that whole day in the report's zone). Only billable
sessions with a duration count toward ``totalDurationMinutes``, ``totalBillableHours``,
``byClient`` and ``byProject``; open sessions are listed with a null duration and count
nothing until they end. A missing client is ``internal``; client matching is
case-insensitive; hours are minutes / 60 rounded half up to two decimals, computed from
the summed minutes of each row (never by adding rounded hours). A client spelled several ways is listed under its most frequent
spelling. ``totalPrompts`` counts
prompt records whose ``created`` lies in the bounds, filtered by client.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any

import duckdb

from ..domain.clock import (
    TimeBounds,
    hours_2dp,
    parse_bounds,
    resolve_zone,
    to_iso,
    zone_name,
)
from ..services.store import VaultStore
from .frames import prompts_frame, sessions_frame

INTERNAL_CLIENT = "internal"
ROUNDING_POLICY = (
    "Durations are whole minutes (end − start, half up). Hours = minutes / 60, rounded half up "
    "to 2 decimals from the summed minutes of each line and of each total."
)


@dataclass
class ActivityRequest:
    """Filters of ``memo activity`` / ``activity_report`` (SPEC §4).

    ``projects`` None means every project of the vault (``crossProject``/``--all``).
    ``tz`` is an IANA zone name (None: the configured zone, else the machine's).
    """

    projects: list[str] | None = None
    since: str | None = None
    until: str | None = None
    client: str | None = None
    tz: str | None = None


@dataclass
class ActivityReport:
    """The report; :meth:`wire` gives the camelCase JSON of every interface."""

    total_duration_minutes: int
    total_billable_hours: float
    by_client: dict[str, dict[str, Any]]
    by_project: dict[str, dict[str, Any]]
    total_prompts: int
    sessions: list[dict[str, Any]]
    zone: tzinfo
    bounds: TimeBounds
    projects: list[str] | None
    client: str | None = None

    def wire(self) -> dict[str, Any]:
        return {
            "totalDurationMinutes": self.total_duration_minutes,
            "totalBillableHours": self.total_billable_hours,
            "byClient": self.by_client,
            "byProject": self.by_project,
            "totalPrompts": self.total_prompts,
            "sessions": self.sessions,
            "timezone": zone_name(self.zone),
            "since": self.bounds.since_iso,
            "untilExclusive": self.bounds.until_iso,
            "projects": self.projects if self.projects is not None else "all",
            "client": self.client,
            "roundingPolicy": ROUNDING_POLICY,
        }


_REPORT_SQL = """
SELECT *, coalesce(nullif(trim(client), ''), 'internal') AS client_name
FROM sessions
WHERE ($since IS NULL OR start_time >= $since)
  AND ($until IS NULL OR start_time < $until)
  AND ($client IS NULL OR lower(coalesce(nullif(trim(client), ''), 'internal')) = lower($client))
"""


def activity_report(store: VaultStore, request: ActivityRequest) -> ActivityReport:
    """Aggregate sessions and prompts (SPEC §4).

    Returns
    -------
    ActivityReport
        Totals in minutes (int) and hours (2 decimals); ``sessions`` sorted by start,
        each ``{id, sessionId, project, client, billable, status, startTime, endTime,
        durationMinutes, taskSlug, summary, deliverables}`` with times in UTC ISO.

    Raises
    ------
    InvalidDateError
        ``Invalid since date`` / ``Invalid until date``.
    InvalidFieldError
        Unknown time zone.
    """
    zone = resolve_zone(request.tz or store.settings.timezone)
    bounds = parse_bounds(request.since, request.until, zone)
    client = request.client.strip() if request.client and request.client.strip() else None
    sessions = sessions_frame(store, request.projects)
    prompts = prompts_frame(store, request.projects)
    params = {"since": bounds.since, "until": bounds.until_exclusive, "client": client}
    db = duckdb.connect()
    try:
        db.execute("SET TimeZone = 'UTC'")
        db.register("sessions", sessions)
        db.register("prompts", prompts)
        db.register("selected", db.sql(_REPORT_SQL, params=params).pl())
        rows = db.sql(
            """SELECT id, session_id, project, client_name, billable, status, start_time, end_time,
                      duration_minutes, task_slug, summary, deliverables
               FROM selected ORDER BY start_time, id"""
        ).pl()
        total = db.execute(
            "SELECT coalesce(sum(duration_minutes), 0) FROM selected WHERE billable AND duration_minutes IS NOT NULL"
        ).fetchone()[0]
        by_client = db.execute(
            """SELECT mode(client_name ORDER BY start_time) AS name, sum(duration_minutes) AS minutes, count(*) AS n
               FROM selected WHERE billable AND duration_minutes IS NOT NULL
               GROUP BY lower(client_name) ORDER BY lower(client_name)"""
        ).fetchall()
        by_project = db.execute(
            """SELECT project, sum(duration_minutes) AS minutes, count(*) AS n
               FROM selected WHERE billable AND duration_minutes IS NOT NULL
               GROUP BY project ORDER BY project"""
        ).fetchall()
        total_prompts = db.execute(
            """SELECT count(*) FROM prompts
               WHERE ($since IS NULL OR created >= $since) AND ($until IS NULL OR created < $until)
                 AND ($client IS NULL OR lower(coalesce(nullif(trim(client), ''), 'internal')) = lower($client))""",
            params,
        ).fetchone()[0]
    finally:
        db.close()
    return ActivityReport(
        total_duration_minutes=int(total),
        total_billable_hours=hours_2dp(int(total)),
        by_client={name: _bucket(minutes, n) for name, minutes, n in by_client},
        by_project={name: _bucket(minutes, n) for name, minutes, n in by_project},
        total_prompts=int(total_prompts),
        sessions=[_session_item(r) for r in rows.iter_rows(named=True)],
        zone=zone,
        bounds=bounds,
        projects=request.projects,
        client=client,
    )


def _bucket(minutes: int, sessions: int) -> dict[str, Any]:
    return {"durationMinutes": int(minutes), "billableHours": hours_2dp(int(minutes)), "sessions": int(sessions)}


def _session_item(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "sessionId": row["session_id"],
        "project": row["project"],
        "client": row["client_name"],
        "billable": bool(row["billable"]),
        "status": row["status"],
        "startTime": to_iso(row["start_time"]) if row["start_time"] else None,
        "endTime": to_iso(row["end_time"]) if row["end_time"] else None,
        "durationMinutes": row["duration_minutes"],
        "taskSlug": row["task_slug"],
        "summary": row["summary"],
        "deliverables": json.loads(row["deliverables"] or "[]"),
    }
