"""Page breaks of the printed reports (issue 15): the grand total and its footnote never stand
alone on a last page, and the footnote is never cut in two — they move with the last rows."""

from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone

import pytest
from pypdf import PdfReader

from memo_analytics.analytics.activity import ActivityRequest, activity_report
from memo_analytics.config import Settings
from memo_analytics.reports.timesheet import timesheet_pdf_bytes
from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.services.store import VaultStore

START = datetime(2026, 6, 1, 9, tzinfo=timezone.utc)


def _vault_of(folder, summaries: list[str]) -> VaultStore:
    """A vault with one 50-minute session of client Acme every three hours, one per summary."""
    store = VaultStore(Settings(vault_root=folder / "v", timezone="UTC"))
    for i, summary in enumerate(summaries):
        at = START + timedelta(hours=3 * i)
        start_session(store, StartSessionRequest(session_id=f"s{i}", project="web", client="Acme",
                                                 start_time=at.isoformat()))
        end_session(store, EndSessionRequest(session_id=f"s{i}", project="web", summary=summary,
                                             until=(at + timedelta(minutes=50)).isoformat()))
    return store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = _vault_of(tmp_path_factory.mktemp("pages"), [f"work item {i}" for i in range(24)])
    yield store
    store.close()


@pytest.mark.slow
def test_the_total_and_its_footnote_never_stand_alone_on_the_last_page(store):
    """With this layout 20, 21 and 22 sessions ended a page exactly on the subtotal: the total
    (or the footnote alone, or half of it) went over. Every count from 18 to 23 is checked."""
    seen_pages = set()
    for count in range(18, 24):
        until = (START + timedelta(hours=3 * (count - 1), minutes=1)).isoformat()
        report = activity_report(store, ActivityRequest(tz="UTC", until=until))
        assert len(report.sessions) == count
        pages = [page.extract_text() for page in PdfReader(io.BytesIO(timesheet_pdf_bytes(report))).pages]
        seen_pages.add(len(pages))
        last = pages[-1]
        assert "Grand total" in last and "Rounding:" in last and "Parallel sessions of one person" in last, count
        assert "Rounding:" not in "".join(pages[:-1]), count  # the footnote is whole, on the last page
        if len(pages) > 1:
            assert "2026-06-" in last, f"{count} sessions: the last page holds no row"
    assert len(seen_pages) > 1  # the counts cross a page break


def test_memo_activity_shows_the_last_fifty_sessions_and_says_how_many_it_left_out(store):
    from tests.inprocess import memo

    ran = memo("activity", "--all", "--tz", "UTC", vault=store.root)
    assert "Sessions (times in UTC)" in ran.stdout and "the last 50 of" not in ran.stdout  # 24: all shown
    assert "earlier sessions are not shown" not in ran.stdout and "work item 0" in ran.stdout
    for i in range(24, 60):
        at = START + timedelta(hours=3 * i)
        start_session(store, StartSessionRequest(session_id=f"s{i}", project="web", client="Acme",
                                                 start_time=at.isoformat()))
        end_session(store, EndSessionRequest(session_id=f"s{i}", project="web", summary=f"work item {i}",
                                             until=(at + timedelta(minutes=50)).isoformat()))
    ran = memo("activity", "--all", "--tz", "UTC", vault=store.root)
    assert "Sessions (times in UTC): the last 50 of 60" in ran.stdout
    assert "10 earlier sessions are not shown (the totals count them)" in ran.stdout
    assert "work item 59" in ran.stdout
    assert "Total billable: 50:00 (50.00 h)" in ran.stdout  # 60 × 50 minutes, all counted


@pytest.fixture(scope="module")
def uneven(tmp_path_factory):
    """Sessions whose summaries take one line, every fifth three: rows of uneven heights (with
    this layout some page ends with room for one line of a two-line row)."""
    long = " ".join(f"step{j}" for j in range(20))
    store = _vault_of(tmp_path_factory.mktemp("uneven"),
                      [f"item {i} {long if i % 5 == 0 else 'short'}" for i in range(40)])
    yield store
    store.close()


@pytest.mark.slow
def test_a_timesheet_row_is_never_cut_across_two_pages(uneven):
    """A row's date and time range (two lines of one cell) stay on the page of the rest of the
    row — its hours — whatever the first row (so wherever the page break falls): on every page as
    many time ranges as rows' hours. Before, a page with room for one line printed a row's
    project, task and hours there and its date and time on the next page."""
    import re

    for first in range(0, 9):
        since = (START + timedelta(hours=3 * first)).isoformat()
        report = activity_report(uneven, ActivityRequest(tz="UTC", since=since))
        pages = [page.extract_text() for page in PdfReader(io.BytesIO(timesheet_pdf_bytes(report))).pages]
        assert len(pages) > 1
        for number, text in enumerate(pages, 1):
            spans = re.findall(r"\d\d:\d\d–\d\d:\d\d", text)
            hours = re.findall(r"\b0:50 0\.8\d\b", text)  # a row's duration and hours
            assert len(spans) == len(hours), f"from row {first}, page {number}: {len(spans)} times, {len(hours)} rows"
