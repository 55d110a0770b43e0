"""SPEC §2.6: every filter with its exact semantics, AND-combined, on the real index."""

from __future__ import annotations

import pytest

from memo_analytics.services.prompts import list_prompts, record_prompt, search_prompts
from memo_analytics.services.requests import ListRequest, RecordPromptRequest


@pytest.fixture
def filled(store):
    rows = [
        dict(body="alpha one", session_id="s1", ide="Cursor", model="claude-sonnet-4-5", agent="Cursor-Agent",
             client="Acme", task_slug="t-1", billable=True, tags=["ui", "bug"], created="2026-03-01T10:00:00Z"),
        dict(body="alpha two", session_id="s2", ide="cursor-nightly", model="gpt-5-codex", agent="codex",
             client="acme", task_slug="t-2", billable=False, tags=["ui"], created="2026-03-02T23:30:00Z"),
        dict(body="beta three", session_id="s1", ide="claude-code", model="claude-opus-4-1", agent="claude-code",
             client="Globex", task_slug="t-1", billable=True, tags=["bug"], created="2026-03-03T08:00:00Z"),
    ]
    for row in rows:
        record_prompt(store, RecordPromptRequest(project="p", **row))
    return store


def ids(page):
    return sorted(item["body"] for item in page["items"])


@pytest.mark.parametrize(
    "filters, expected",
    [
        (dict(ide="CURSOR"), ["alpha one"]),                          # ide: exact, case-insensitive
        (dict(model="CLAUDE"), ["alpha one", "beta three"]),          # model: substring, case-insensitive
        (dict(agent="agent"), ["alpha one"]),                         # agent: substring, case-insensitive
        (dict(session_id="s1"), ["alpha one", "beta three"]),         # sessionId: exact
        (dict(task_slug="t-1"), ["alpha one", "beta three"]),         # taskSlug: exact
        (dict(task_slug="t"), []),
        (dict(client="Acme"), ["alpha one"]),                         # client: exact
        (dict(billable=False), ["alpha two"]),                        # billable: exact boolean
        (dict(tags=["ui", "bug"]), ["alpha one"]),                    # tags: all must match
        (dict(tags=["ui"]), ["alpha one", "alpha two"]),
        (dict(since="2026-03-02"), ["alpha two", "beta three"]),      # since: created ≥
        (dict(until="2026-03-02"), ["alpha one", "alpha two"]),       # a date-only until covers that day
        (dict(until="2026-03-02T12:00:00Z"), ["alpha one"]),
        (dict(model="claude", billable=True, tags=["bug"], since="2026-03-02"), ["beta three"]),  # AND-combined
    ],
)
def test_each_filter_has_its_exact_semantics(filled, filters, expected):
    assert ids(list_prompts(filled, ListRequest(project="p", **filters))) == expected


def test_search_applies_the_same_filters(filled):
    assert ids(search_prompts(filled, ListRequest(project="p", query="alpha", billable=True))) == ["alpha one"]


def test_search_ranks_by_bm25(store):
    record_prompt(store, RecordPromptRequest(project="p", body="invoice " + "filler words here " * 30))
    record_prompt(store, RecordPromptRequest(project="p", body="invoice invoice invoice totals"))
    page = search_prompts(store, ListRequest(project="p", query="invoice"))
    assert [i["body"] for i in page["items"]][0] == "invoice invoice invoice totals"


def test_empty_query_is_an_empty_page_and_there_is_no_substring_fallback(filled):
    assert search_prompts(filled, ListRequest(project="p", query="  "))["items"] == []
    assert search_prompts(filled, ListRequest(project="p", query="lph"))["total"] == 0


def test_default_sort_is_newest_first(filled):
    assert [i["body"] for i in list_prompts(filled, ListRequest(project="p"))["items"]] == [
        "beta three", "alpha two", "alpha one"]
