"""Records of a spec-memo vault, or edited by hand, read as they were meant (SPEC §2.3)."""

from __future__ import annotations

import pytest

from memo_analytics.domain.records import normalize_meta

BASE = {"id": "prompt-s-t1", "kind": "prompt", "project": "legacy-app", "created": "2025-03-02T09:00:00.000Z",
        "sessionId": "s", "turn": 1}


@pytest.mark.parametrize("given, read", [
    ({"linkedPaths": None, "tags": None}, ([], [])),
    ({"linkedPaths": "src/app.py", "tags": "billing"}, (["src/app.py"], ["billing"])),
    ({"linkedPaths": ["a", "b"], "tags": ["x"]}, (["a", "b"], ["x"])),
])
def test_a_list_written_as_none_or_as_its_one_item_is_read_as_a_list(given, read):
    """Found by an integrator: ``linkedPaths: null`` (or ``tags: billing``) in a spec-memo vault's
    turn was "Input should be a valid list": the turn was left out of lists, search and reports."""
    meta = normalize_meta({**BASE, **given})
    assert (meta["linkedPaths"], meta["tags"]) == read


@pytest.mark.parametrize("written, read", [
    (None, []), ("", []),
    # its one deliverable as a mapping (found by a breaker: the session skipped, its billable hour in no report)
    ({"type": "pr", "url": "https://github.com/o/r/pull/1"}, [{"type": "pr", "url": "https://github.com/o/r/pull/1"}]),
])
def test_a_sessions_deliverables_written_as_none_or_as_its_one_item(written, read):
    meta = normalize_meta({"id": "session-s", "kind": "session", "project": "legacy-app", "sessionId": "s",
                           "created": "2025-03-02T09:00:00.000Z", "startTime": "2025-03-02T09:00:00.000Z",
                           "endTime": "2025-03-02T10:00:00.000Z", "deliverables": written})
    assert meta.get("deliverables", []) == read and meta["durationMinutes"] == 60


def test_a_list_written_as_an_empty_text_is_empty():
    meta = normalize_meta({**BASE, "linkedPaths": "", "tags": " "})
    assert (meta["linkedPaths"], meta["tags"]) == ([], [])


def test_a_list_of_another_kind_is_still_refused_naming_the_field():
    with pytest.raises(ValueError, match=r"^tags"):
        normalize_meta({**BASE, "tags": {"a": 1}})
