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


def test_views_a_killed_bulk_write_left_undone_are_made_by_the_next_one(tmp_path):
    """A bulk write (an import) regenerates the views once, at its end: killed before that, its
    projects had records and no views, and a re-run that found every file unchanged left them so
    (found by a helper: 20 kill -9 of an import, 6 projects without INDEX.md). A mark kept while
    they are due makes the next bulk write regenerate them."""
    import subprocess
    import sys

    from memo_analytics.config import Settings
    from memo_analytics.services.store import VaultStore

    root = tmp_path / "vault"
    killed = subprocess.run([sys.executable, "-c", f"""
import os
from memo_analytics.config import Settings
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import RecordPromptRequest
from memo_analytics.services.store import VaultStore
store = VaultStore(Settings(vault_root={str(root)!r}))
with store.deferred_views():
    record_prompt(store, RecordPromptRequest(body="first", session_id="s1", project="alpha"))
    record_prompt(store, RecordPromptRequest(body="second", session_id="s2", project="beta"))
    os._exit(9)  # as a kill: no clean-up runs
"""], capture_output=True, text=True, timeout=120)
    assert killed.returncode == 9, killed.stderr
    assert not (root / "projects" / "alpha" / "INDEX.md").exists() and (root / ".memo" / "views-due").exists()
    store = VaultStore(Settings(vault_root=root))
    with store.deferred_views():
        pass  # a bulk write that finds nothing to do (an import of unchanged files)
    for project in ("alpha", "beta"):
        assert sorted(p.name for p in (root / "projects" / project).glob("*.md")) == [
            "DECISIONS.md", "INDEX.md", "PROMPTS.md", "SESSIONS.md", "TRAPS.md"]
    assert "1 in all." in (root / "projects" / "alpha" / "PROMPTS.md").read_text()
    assert not (root / ".memo" / "views-due").exists()
    store.close()
