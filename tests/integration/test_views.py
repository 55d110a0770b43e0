"""SPEC §2.7 compiled views: regenerated on every mutation, bounded work."""

from __future__ import annotations

import os

from memo_analytics.services.maintenance import reindex
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import EndSessionRequest, RecordPromptRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.vault import views


def project_dir(store, project="p"):
    return store.root / "projects" / project


def test_the_first_mutation_writes_all_five_views(store):
    record_prompt(store, RecordPromptRequest(body="first prompt", session_id="s", project="p"))
    assert sorted(p.name for p in project_dir(store).glob("*.md")) == [
        "DECISIONS.md", "INDEX.md", "PROMPTS.md", "SESSIONS.md", "TRAPS.md"]


def test_every_mutation_regenerates_its_views(store):
    start_session(store, StartSessionRequest(session_id="s", project="p", start_time="2026-03-02T09:00:00Z",
                                             client="Acme"))
    assert "| open |" in (project_dir(store) / "SESSIONS.md").read_text()
    record_prompt(store, RecordPromptRequest(body="Add | pagination\nsecond line", session_id="s", project="p"))
    prompts = (project_dir(store) / "PROMPTS.md").read_text()
    assert "1 in all." in prompts and "Add \\| pagination second line" in prompts
    end_session(store, EndSessionRequest(session_id="s", until="2026-03-02T10:00:00Z", summary="done",
                                         pr="https://github.com/o/r/pull/1"))
    sessions = (project_dir(store) / "SESSIONS.md").read_text()
    assert "| 60 | Acme | yes | completed | done | https://github.com/o/r/pull/1 |" in sessions
    index = (project_dir(store) / "INDEX.md").read_text()
    assert "[Prompts](PROMPTS.md): 1" in index and "[Sessions](SESSIONS.md): 1" in index
    assert "Open sessions" not in index


def test_views_list_only_the_newest_records_with_the_true_total(store, monkeypatch):
    monkeypatch.setattr(views, "VIEW_LIMIT", 5)
    for n in range(12):
        record_prompt(store, RecordPromptRequest(body=f"prompt number {n}", session_id="s", project="p",
                                                 created=f"2026-03-02T09:{n:02d}:00Z"))
    text = (project_dir(store) / "PROMPTS.md").read_text()
    assert "12 in all. The newest 5 are listed" in text
    assert "prompt number 11" in text and "prompt number 6" not in text


def test_reindex_regenerates_views_from_the_files(store):
    record_prompt(store, RecordPromptRequest(body="kept", session_id="s", project="p"))
    for name in views.view_files():
        os.remove(project_dir(store) / name)
    reindex(store)
    assert "[Prompts](PROMPTS.md): 1" in (project_dir(store) / "INDEX.md").read_text()
    assert "kept" in (project_dir(store) / "PROMPTS.md").read_text()


def test_views_are_not_records(store):
    record_prompt(store, RecordPromptRequest(body="x", session_id="s", project="p"))
    assert reindex(store).indexed == 1
