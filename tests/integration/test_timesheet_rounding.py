"""The timesheet PDF prints the report's rounding policy: its rows of hours add up to each
subtotal and the subtotals to the grand total (SPEC §4, §5.1), checked on the PDF text."""

from __future__ import annotations

import re

from pypdf import PdfReader

from memo_analytics.analytics.activity import ActivityRequest, activity_report
from memo_analytics.domain.rounding import ROUNDING_POLICY
from memo_analytics.reports.timesheet import render_timesheet_pdf, timesheet_sections

from .test_activity import session


def pdf_text(path) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(str(path)).pages)


def test_rows_of_twenty_minutes_add_up_to_the_subtotal_and_the_total(store, tmp_path):
    for n in range(3):
        session(store, f"a{n}", f"2026-02-02T{9 + n:02d}:00:00Z", f"2026-02-02T{9 + n:02d}:20:00Z", client="Acme")
    session(store, "g", "2026-02-03T09:00:00Z", "2026-02-03T09:20:00Z", client="Globex")
    session(store, "i", "2026-02-03T10:00:00Z", "2026-02-03T10:20:00Z")
    report = activity_report(store, ActivityRequest(tz="UTC"))
    text = pdf_text(render_timesheet_pdf(report, tmp_path / "t.pdf"))
    hours = re.findall(r"\bp1 Work on p1 0:20 (\d\.\d\d)$", text, re.M)  # task (none: its project's work), duration, hours
    assert hours == ["0.34", "0.33", "0.33", "0.33", "0.33"]  # naive rounding: 0.33 each, 0.99 for Acme
    assert "Subtotal Acme (3 sessions) 1:00 1.00" in text
    assert "Subtotal Globex (1 session) 0:20 0.33" in text
    assert "Subtotal internal (1 session) 0:20 0.33" in text
    assert "Grand total 1:40 · Total billable hours: 1.66" in text
    # found by a bookkeeper and a freelancer: "Duration" beside a span of 72 minutes read 1:15 (billed)
    assert "Project Task / summary / deliverables Billed Hours" in text and "Duration" not in text
    assert report.total_billable_hours == 1.66 and report.total_duration_minutes == 100
    assert "Rounding: Each session counts its whole minutes (end − start)." in text  # as a client reads it
    sections = timesheet_sections(report)
    assert sum(round(s.hours * 100) for s in sections) == 166
    assert [s.hours for s in sections] == [report.by_client[s.client]["billableHours"] for s in sections]
    assert ROUNDING_POLICY == report.wire()["roundingPolicy"]
