"""A record folder inside the vault swapped for a symbolic link is never written through (SPEC §11:
writes never follow a link): found by an attacker, a turn recorded into a project whose
``prompts/`` pointed outside the vault was written there."""

from __future__ import annotations

from tests.inprocess import memo


def test_a_record_folder_that_is_a_link_is_refused_and_nothing_is_written_outside(tmp_path):
    vault, outside = tmp_path / "v", tmp_path / "outside"
    memo("prompt", "record", "--project", "acme", "--session-id", "s1", "--body", "first", vault=vault)
    outside.mkdir()
    (vault / "projects" / "acme" / "prompts").rename(outside / "prompts")
    (vault / "projects" / "acme" / "prompts").symlink_to(outside / "prompts")
    ran = memo("prompt", "record", "--project", "acme", "--session-id", "s1", "--body", "second", vault=vault,
               check=False)
    assert ran.returncode == 1
    assert ran.stderr.strip() == (f"error: {vault / 'projects' / 'acme' / 'prompts'} is a symbolic link: memo reads "
                                  "and writes records only inside the vault (move the folder it points to back in "
                                  "its place)")
    assert sorted(p.name for p in (outside / "prompts").iterdir()) == ["prompt-s1-t1.md"]
    # a whole project folder linked away: the same
    (vault / "projects" / "acme").rename(outside / "acme")
    (vault / "projects" / "acme").symlink_to(outside / "acme")
    ran = memo("session", "start", "s2", "--project", "acme", vault=vault, check=False)
    assert ran.returncode == 1 and "is a symbolic link" in ran.stderr
    assert not (outside / "acme" / "sessions").exists()
    # the vault's own root may be a link (a vault kept on another disk)
    linked = tmp_path / "linked-vault"
    linked.symlink_to(tmp_path / "real-vault", target_is_directory=True)
    (tmp_path / "real-vault").mkdir()
    memo("prompt", "record", "--project", "web", "--body", "fine", vault=linked)
    assert list((tmp_path / "real-vault" / "projects" / "web" / "prompts").glob("*.md"))


def test_a_folder_swapped_for_a_link_while_a_process_runs_is_refused_at_its_next_write(tmp_path):
    """Found by an attacker: the check was made once per folder and process, so a server that had
    written into ``sessions/`` followed it once swapped for a link."""
    import pytest

    from memo_analytics.config import Settings
    from memo_analytics.domain.errors import MemoError
    from memo_analytics.services.requests import StartSessionRequest
    from memo_analytics.services.sessions import start_session
    from memo_analytics.services.store import VaultStore

    vault, outside = tmp_path / "v", tmp_path / "outside"
    outside.mkdir()
    store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
    try:
        start_session(store, StartSessionRequest(session_id="a1", project="sp"))
        sessions = vault / "projects" / "sp" / "sessions"
        sessions.rename(outside / "sessions")
        sessions.symlink_to(outside / "sessions")
        with pytest.raises(MemoError, match="is a symbolic link"):
            start_session(store, StartSessionRequest(session_id="a2", project="sp"))
        assert sorted(p.name for p in (outside / "sessions").iterdir()) == ["session-a1.md"]
    finally:
        store.close()
