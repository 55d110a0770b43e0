"""Vault-git sync with the real git on a local bare repository as the remote (SPEC §2.7,
issue 7): commit per batch, pull before push, newer ``updated`` wins and the other side is
kept beside the record, an unreachable remote keeps the local commit for the next sync."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memo_analytics.config import Settings, VaultGit
from memo_analytics.domain.records import RecordKind
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import EndSessionRequest, RecordPromptRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.runtime import Runtime
from memo_analytics.services.store import VaultStore
from memo_analytics.services.vault_git import commit_message, status, sync
from memo_analytics.vault.conflicts import conflict_files
from tests.inprocess import memo

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def no_git_identity(tmp_path, monkeypatch):
    """No global or system git config: memo's own identity is used, nothing of the machine's."""
    empty = tmp_path / "gitconfig"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def remote(tmp_path) -> Path:
    path = tmp_path / "remote.git"
    git("init", "-q", "--bare", "-b", "main", str(path))
    return path


def clone(remote: Path, path: Path) -> VaultStore:
    git("clone", "-q", str(remote), str(path))
    return vault(path)


def vault(path: Path) -> VaultStore:
    return Runtime(Settings(vault_root=path, timezone="UTC", vault_git=VaultGit(enabled=True))).store()


def record(store: VaultStore, body: str, session: str | None = None, project: str = "shop") -> str:
    return record_prompt(store, RecordPromptRequest(body=body, project=project, session_id=session), now=T0)["id"]


def edit(store: VaultStore, record_id: str, summary: str, updated: str, project: str = "shop") -> None:
    meta, body = store.read(project, RecordKind.PROMPT, record_id)
    store.upsert(RecordKind.PROMPT, {**meta, "summary": summary, "updated": updated}, body + f"\n\n{summary}")


def indexed(store: VaultStore) -> dict[str, str | None]:
    return {row["id"]: row["summary"] for row in store.conn.execute("SELECT id, summary FROM records")}


def record_files(store: VaultStore) -> list[str]:
    return [p.relative_to(store.root).as_posix() for p in store.layout.record_files()]


def test_records_committed_and_pushed_in_one_vault_reach_the_other_on_its_sync(remote, tmp_path):
    a = clone(remote, tmp_path / "a")
    ids = [record(a, "first turn", "s1"), record(a, "second turn", "s1"), record(a, "a lone prompt")]

    result = sync(a, "session_end", now=T0)

    assert result["error"] is None and result["pushed"] is True
    assert result["committed"] == 3 and result["records"] == sorted(f"shop/{i}" for i in ids)
    subject = git("--git-dir", str(remote), "log", "-1", "--format=%s", "main").strip()
    assert subject.startswith("memo sync (session_end): 3 records — ")
    assert all(record_id in subject for record_id in ids)
    tree = git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", "main").split()
    assert sorted(p for p in tree if p.startswith("projects/")) == sorted(record_files(a))
    assert ".gitignore" in tree and not any(p.startswith(".memo/") or p.endswith("PROMPTS.md") for p in tree)

    b = clone(remote, tmp_path / "b")
    assert set(indexed(b)) == set(ids)  # a fresh clone has files and no index: it is built from them on open
    assert "because there was none" in b.repairs[0]
    pulled = sync(b, "manual", now=T0)
    assert pulled["error"] is None and pulled["pushed"] is False
    assert set(indexed(b)) == set(ids)
    assert "first turn" in (b.root / "projects" / "shop" / "PROMPTS.md").read_text(encoding="utf-8")
    assert git("status", "--porcelain", cwd=b.root) == ""  # index, lock and views are ignored

    again = sync(a, "manual", now=T0)
    assert again == {**again, "committed": 0, "pulled": False, "pushed": False, "error": None}


@pytest.mark.parametrize("newer_syncs_first", [True, False])
def test_both_sides_changed_a_record_the_newer_updated_wins_and_the_other_is_kept_beside(
        remote, tmp_path, newer_syncs_first):
    a = clone(remote, tmp_path / "a")
    shared = record(a, "the shared turn", "s1")
    assert sync(a, "manual", now=T0)["error"] is None  # (session_end pushed them already)
    b = clone(remote, tmp_path / "b")
    sync(b, "manual", now=T0)
    edit(a, shared, "from A (older)", "2026-01-05T10:00:00.000Z")
    edit(b, shared, "from B (newer)", "2026-01-05T11:00:00.000Z")
    record(a, "only in A", "s2")
    record(b, "only in B", "s3")

    first, second = (b, a) if newer_syncs_first else (a, b)
    assert sync(first, "manual", now=T0)["pushed"]
    merged = sync(second, "manual", now=T0)
    assert merged["error"] is None and merged["pulled"] and merged["pushed"]
    assert len(merged["conflicts"]) == 1
    assert sync(first, "manual", now=T0)["pulled"]

    for side in (a, b):
        text = (side.root / "projects" / "shop" / "prompts" / f"{shared}.md").read_text(encoding="utf-8")
        assert "from B (newer)" in text and "from A (older)" not in text
        kept = conflict_files(side.layout.projects_dir)
        assert [p.relative_to(side.root).as_posix() for p in kept] == merged["conflicts"]
        assert kept[0].name.startswith(f"{shared}.conflict-20260105T090000Z-")
        assert "from A (older)" in kept[0].read_text(encoding="utf-8")
        assert indexed(side)[shared] == "from B (newer)"
        assert len(indexed(side)) == 3  # the shared turn and each side's own: nothing lost
    assert record_files(a) == record_files(b)
    assert git("rev-parse", "HEAD", cwd=a.root) == git("rev-parse", "HEAD", cwd=b.root)

    # `memo reindex` rebuilds from the files and leaves the conflict version out
    reindex = memo("--json", "reindex", vault=a.root, check=False)
    assert reindex.returncode == 0, reindex.stderr
    assert json.loads(reindex.stdout)["indexed"] == 3 and json.loads(reindex.stdout)["skipped"] == []


def test_an_unreachable_remote_keeps_the_local_commit_and_a_later_sync_pushes_it(remote, tmp_path):
    a = clone(remote, tmp_path / "a")
    git("remote", "set-url", "origin", str(tmp_path / "no-such-remote.git"), cwd=a.root)
    first = record(a, "written while the remote is down", "s1")

    down = sync(a, "session_end", now=T0)

    assert down["pushed"] is False and down["committed"] == 1
    assert down["error"].startswith("Vault-git sync failed (git fetch):") and "no-such-remote" in down["error"]
    assert first in git("log", "-1", "--format=%B", cwd=a.root)
    assert status(a)["unpushedCommits"] == 1 and status(a)["lastError"] == down["error"]
    assert git("--git-dir", str(remote), "branch", "--list") == ""  # nothing reached the remote

    git("remote", "set-url", "origin", str(remote), cwd=a.root)
    up = sync(a, "manual", now=T0)
    assert up["error"] is None and up["pushed"] is True and up["committed"] == 0
    assert first in git("--git-dir", str(remote), "log", "--format=%B", "main")
    state = json.loads((a.layout.meta_dir / "sync" / "git.json").read_text(encoding="utf-8"))
    assert state["lastSuccessAt"] == "2026-01-05T09:00:00.000Z" and state["lastError"] == down["error"]
    assert status(a)["unpushedCommits"] == 0


def test_session_end_with_the_remote_down_completes_and_commits_locally(remote, tmp_path):
    a = clone(remote, tmp_path / "a")
    git("remote", "set-url", "origin", str(tmp_path / "gone.git"), cwd=a.root)
    start_session(a, StartSessionRequest(project="shop", session_id="work-1"), now=T0)
    record(a, "a turn", "work-1")

    ended = end_session(a, EndSessionRequest(session_id="work-1", project="shop", summary="done",
                                             until="2026-01-05T10:00:00Z"))

    assert ended["status"] == "completed" and ended["durationMinutes"] == 60
    assert git("log", "-1", "--format=%s", cwd=a.root).strip() == (
        "memo sync (session_end): 2 records — prompt-work-1-t1, session-work-1 (+2 other files)")
    assert "gone.git" in status(a)["lastError"] and status(a)["unpushedCommits"] == 1


def test_when_the_remote_moves_between_fetch_and_push_the_sync_merges_again_and_pushes(remote, tmp_path):
    a = clone(remote, tmp_path / "a")
    record(a, "seed")
    sync(a, "manual", now=T0)
    c = clone(remote, tmp_path / "c")
    theirs = []
    for n in (1, 2):  # the first is on the remote before we sync, the second arrives while we merge
        theirs.append(record(c, f"pushed by someone else, {n}", "s9"))
        git("add", "-A", cwd=c.root)
        git("-c", "user.name=c", "-c", "user.email=c@localhost", "commit", "-q", "-m", f"from c {n}", cwd=c.root)
        if n == 1:
            git("push", "-q", "origin", "HEAD:refs/heads/main", cwd=c.root)
    marker = tmp_path / "push-once"
    marker.touch()
    # right after our fetch updates origin/main, another machine pushes: our first push is rejected
    hook = a.root / ".git" / "hooks" / "reference-transaction"
    hook.write_text(f"""#!/bin/sh
[ "$1" = committed ] || exit 0
grep -q refs/remotes/origin/main || exit 0
[ -f '{marker}' ] || exit 0
rm '{marker}'
unset GIT_DIR GIT_INDEX_FILE GIT_WORK_TREE GIT_PREFIX
git -C '{c.root}' push -q origin HEAD:refs/heads/main
""")
    hook.chmod(0o755)
    mine = record(a, "written here", "s1")

    result = sync(a, "manual", now=T0)

    assert not marker.exists()  # the other push did happen in between
    assert result["error"] is None and result["pulled"] and result["pushed"]
    published = git("--git-dir", str(remote), "log", "--format=%B", "main")
    assert mine in published and "from c 1" in published and "from c 2" in published
    assert set(indexed(a)) >= {mine, *theirs}
    merges = git("log", "--merges", "--format=%s", cwd=a.root).splitlines()
    assert merges == ["memo sync (manual): merge origin/main"] * 2  # merged, refused, merged again, pushed


def test_a_plain_vault_becomes_a_repository_that_keeps_index_lock_and_views_out(remote, tmp_path):
    a = vault(tmp_path / "plain")
    turn = record(a, "before git")

    no_remote = sync(a, "manual", now=T0)

    assert "has no remote 'origin'" in no_remote["error"] and no_remote["committed"] == 1
    ignore = (a.root / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "/.memo/" in ignore and "/projects/*/INDEX.md" in ignore
    assert git("status", "--porcelain", "--ignored", cwd=a.root).count(".memo/") == 1  # ignored, not committed
    assert git("branch", "--show-current", cwd=a.root).strip() == "main"
    assert git("log", "-1", "--format=%an <%ae>", cwd=a.root).strip() == "memo <memo@localhost>"
    git("remote", "add", "origin", str(remote), cwd=a.root)
    assert sync(a, "manual", now=T0)["error"] is None  # (session_end pushed them already) is True
    assert turn in git("--git-dir", str(remote), "log", "--format=%s", "main")


def test_a_vault_started_on_its_own_joins_a_remote_that_already_has_history(remote, tmp_path):
    a = clone(remote, tmp_path / "a")
    from_a = record(a, "written on the laptop", "s1")
    sync(a, "manual", now=T0)
    c = vault(tmp_path / "desktop")
    from_c = record(c, "written on the desktop", "s2")
    sync(c, "manual", now=T0)  # no remote yet: a local repository with one commit
    git("remote", "add", "origin", str(remote), cwd=c.root)

    joined = sync(c, "manual", now=T0)

    assert joined["error"] is None and joined["pulled"] and joined["pushed"] and joined["conflicts"] == []
    assert set(indexed(c)) == {from_a, from_c}
    assert sync(a, "manual", now=T0)["pulled"] and set(indexed(a)) == {from_a, from_c}


def test_a_conflict_in_another_file_keeps_ours_and_keeps_theirs_beside_it(remote, tmp_path):
    a = clone(remote, tmp_path / "a")
    record(a, "seed")
    sync(a, "manual", now=T0)
    b = clone(remote, tmp_path / "b")
    (a.root / "README.md").write_text("vault of A\n", encoding="utf-8")
    (b.root / "README.md").write_text("vault of B\n", encoding="utf-8")
    sync(a, "manual", now=T0)

    merged = sync(b, "manual", now=T0)

    assert merged["error"] is None and merged["pushed"]
    assert (b.root / "README.md").read_text(encoding="utf-8") == "vault of B\n"
    [kept] = merged["conflicts"]
    assert kept.startswith("README.conflict-") and (b.root / kept).read_text(encoding="utf-8") == "vault of A\n"


def test_a_record_deleted_on_one_side_and_changed_on_the_other_stays(remote, tmp_path):
    a = clone(remote, tmp_path / "a")
    turn = record(a, "keep me", "s1")
    sync(a, "manual", now=T0)
    b = clone(remote, tmp_path / "b")
    sync(b, "manual", now=T0)
    (a.root / "projects" / "shop" / "prompts" / f"{turn}.md").unlink()
    edit(b, turn, "changed in B", "2026-01-05T12:00:00.000Z")
    sync(a, "manual", now=T0)

    merged = sync(b, "manual", now=T0)
    sync(a, "manual", now=T0)

    assert merged["error"] is None
    for side in (a, b):
        assert "changed in B" in (side.root / "projects" / "shop" / "prompts" / f"{turn}.md").read_text("utf-8")
        assert indexed(side)[turn] == "changed in B"


def test_the_commit_message_names_the_records_and_lists_every_path():
    paths = [f"projects/shop/prompts/prompt-s-t{n}.md" for n in range(1, 8)] + [
        "projects/shop/sessions/session-s.md", ".gitignore"]

    message = commit_message("session_end", paths)

    subject, _, body = message.partition("\n\n")
    assert subject == ("memo sync (session_end): 8 records — prompt-s-t1, prompt-s-t2, prompt-s-t3, prompt-s-t4, "
                       "prompt-s-t5, … (+1 other file)")
    assert body.splitlines() == sorted(paths)


def test_memo_sync_git_runs_a_sync_and_refuses_when_vault_git_is_off(remote, tmp_path):
    a = clone(remote, tmp_path / "a")
    record(a, "from the command line")
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}

    off = memo("sync", "git", vault=a.root, env=env, check=False)
    assert off.returncode == 1
    assert off.stderr.strip().splitlines() == [
        "error: Invalid vaultGit.enabled: vault-git is off; turn it on with `memo config set vaultGit.enabled true`"]

    config.write_text("[vaultGit]\nenabled = true\n", encoding="utf-8")
    on = memo("sync", "git", vault=a.root, env=env, check=False)
    assert on.returncode == 0, on.stderr
    assert on.stdout.startswith("committed 1 record (") and "pushed to origin/main" in on.stdout
    assert ") and 2 other files;" in on.stdout  # memo's .gitignore and .gitattributes
    assert "from the command line" in git("--git-dir", str(remote), "show", "main", "--", "projects")


def test_one_number_issued_on_two_machines_stays_two_issued_invoices_and_no_session_is_billed_again(remote, tmp_path):
    """Two machines of one vault issued 2026-0001 before they synced: the merge kept one as a
    `.conflict-….md` (its PDF as `.md` too) and the ledger state as another, `memo invoice list`
    then stopped on it, and the displaced invoice's session looked uninvoiced — billed again."""
    from tests.integration.test_issued_invoices import ACME, ISSUER

    config = tmp_path / "config.toml"
    config.write_text(ISSUER + ACME + "\n[vaultGit]\nenabled = true\n", encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    a = clone(remote, tmp_path / "a")
    start_session(a, StartSessionRequest(session_id="s1", project="web", client="Acme Corp", start_time=T0))
    end_session(a, EndSessionRequest(session_id="s1", project="web", until=T0.replace(hour=10)))
    start_session(a, StartSessionRequest(session_id="s2", project="web", client="Acme Corp",
                                         start_time=T0.replace(day=6)))
    end_session(a, EndSessionRequest(session_id="s2", project="web", until=T0.replace(day=6, hour=11)))
    assert sync(a, "manual", now=T0)["error"] is None  # (session_end pushed them already)
    b = clone(remote, tmp_path / "b")
    a.close(), b.close()

    def issue(where: str, day: str) -> dict:
        ran = memo("--json", "invoice", "issue", "--all", "--client", "Acme Corp", "--since", day, "--until", day,
                   "--offline", vault=tmp_path / where, env=env)
        return json.loads(ran.stdout)

    # both offline (or within the same seconds): neither saw the other's before numbering
    first, second = issue("a", "2026-01-05"), issue("b", "2026-01-06")
    assert first["number"] == second["number"] == "2026-0001"
    later = second["vaultGit"]["duplicateInvoices"]  # b's push pulled a's invoice onto its own, and says so
    assert len(later) == 1 and later[0].startswith("2026-0001.duplicate-")
    # b's answer names b's own document where it is now (it named a's file, "changed since it was issued")
    assert second["ref"] == later[0] and second["pdf"].endswith(f"{later[0]}.pdf")
    assert not second.get("changedOnDisk") and second["periodStart"] == "2026-01-06"
    synced = [json.loads(memo("--json", "sync", "git", vault=tmp_path / w, env=env).stdout) for w in "ab"]
    assert [(s["error"], s["conflicts"]) for s in synced] == [(None, []), (None, [])]

    for where in "ab":  # both machines hold the same two issued documents, no conflict file
        folder = tmp_path / where / "invoices"
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            [".ledger.json", "2026-0001.md", "2026-0001.pdf", f"{later[0]}.md", f"{later[0]}.pdf"])
        assert (folder / f"{later[0]}.pdf").read_bytes().startswith(b"%PDF")
        listed = json.loads(memo("--json", "invoice", "list", vault=tmp_path / where, env=env).stdout)["items"]
        assert [(i["number"], i.get("ref"), i["periodStart"]) for i in listed] == [
            ("2026-0001", None, "2026-01-05"), ("2026-0001", later[0], "2026-01-06")]  # created first keeps the name
        assert all(i["warnings"][0].startswith("number 2026-0001 was issued twice") for i in listed)
        assert not any(i.get("changedOnDisk") for i in listed)  # each as it was issued, on both machines
        copy = json.loads(memo("--json", "invoice", "show", later[0], "-o", str(tmp_path / f"{where}.pdf"),
                               vault=tmp_path / where, env=env).stdout)  # the PDF checked against its ledger entry
        assert copy["ref"] == later[0] and (tmp_path / f"{where}.pdf").read_bytes().startswith(b"%PDF")
    digest = json.loads(memo("--json", "digest", vault=tmp_path / "a", env=env).stdout)
    [twice] = [i for i in digest["items"] if i["kind"] == "invoice_number_twice"]
    assert (twice["id"], twice["lane"], twice["action"]) == (
        "invoice_number_twice:2026-0001", "waiting on you", f"memo invoice credit {later[0]}  # then bill its "
        "sessions again")
    # neither session is billed again, and the next number continues after both
    ran = memo("--json", "invoice", "issue", "--all", "--client", "Acme Corp", "--since", "2026-01-01", "--until",
               "2026-01-31", vault=tmp_path / "a", env=env, check=False)
    assert ran.returncode == 1 and "Nothing to invoice" in ran.stderr
    credit = json.loads(memo("--json", "invoice", "credit", later[0], "--offline", vault=tmp_path / "a",
                             env=env).stdout)
    assert credit["number"] == "2026-0002" and credit["credits"] == later[0]
    listed = json.loads(memo("--json", "invoice", "list", vault=tmp_path / "a", env=env).stdout)["items"]
    assert [i.get("status") for i in listed] == ["issued", "credited", None]
    assert not any(i.get("warnings") for i in listed)  # settled: one invoice of that number stands
    digest = json.loads(memo("--json", "digest", vault=tmp_path / "a", env=env).stdout)
    assert not [i for i in digest["items"] if i["kind"] == "invoice_number_twice"]
    again = json.loads(memo("--json", "invoice", "issue", "--all", "--client", "Acme Corp", "--since", "2026-01-06",
                            "--until", "2026-01-06", "--offline", vault=tmp_path / "a", env=env).stdout)
    assert again["number"] == "2026-0003" and again["sessions"] == 1


def test_invoice_issue_pulls_the_other_machines_invoices_before_numbering_and_pushes_after(remote, tmp_path):
    """The way the duplicate above is avoided: `memo invoice issue` numbers after a pull and
    pushes at once; with the remote down it issues nothing unless told --offline."""
    from tests.integration.test_issued_invoices import ACME, ISSUER

    config = tmp_path / "config.toml"
    config.write_text(ISSUER + ACME + "\n[vaultGit]\nenabled = true\n", encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    a = clone(remote, tmp_path / "a")
    for day in (5, 6, 7):
        start_session(a, StartSessionRequest(session_id=f"s{day}", project="web", client="Acme Corp",
                                             start_time=T0.replace(day=day)))
        end_session(a, EndSessionRequest(session_id=f"s{day}", project="web", until=T0.replace(day=day, hour=10)))
    b = clone(remote, tmp_path / "b")
    a.close(), b.close()

    def issue(where: str, day: int, *extra: str):
        return memo("--json", "invoice", "issue", "--all", "--client", "Acme Corp", "--since", f"2026-01-0{day}",
                    "--until", f"2026-01-0{day}", *extra, vault=tmp_path / where, env=env, check=False)

    first = json.loads(issue("a", 5).stdout)
    assert first["number"] == "2026-0001" and first["vaultGit"] == {"pulled": False, "pushed": True, "error": None}
    second = json.loads(issue("b", 6).stdout)  # b has not synced since a issued: the issue pulls it first
    assert second["number"] == "2026-0002" and second["vaultGit"]["pulled"] is True
    assert json.loads(memo("--json", "invoice", "show", "2026-0001", vault=tmp_path / "b", env=env).stdout)[
        "periodStart"] == "2026-01-05"
    memo("sync", "git", vault=tmp_path / "a", env=env)
    git("remote", "set-url", "origin", str(tmp_path / "gone.git"), cwd=tmp_path / "a")
    refused = issue("a", 7)
    assert refused.returncode == 1 and "nothing was issued" in refused.stderr and "--offline" in refused.stderr
    assert sorted(p.name for p in (tmp_path / "a" / "invoices").glob("*.md")) == ["2026-0001.md", "2026-0002.md"]
    offline = issue("a", 7, "--offline")
    answer = json.loads(offline.stdout)
    assert answer["number"] == "2026-0003" and answer["vaultGit"]["pushed"] is False and answer["vaultGit"]["error"]
    assert "not pushed yet" in offline.stderr


def _push_as_teammate(remote: Path, tmp_path: Path, change) -> None:
    """A teammate's plain clone of the vault repository: ``change(work tree)``, commit, push."""
    bob = tmp_path / "bob"
    git("clone", "-q", str(remote), str(bob))
    only = change(bob)  # the paths it changed, or None: all
    git("add", "-A", "-f", "--", *(only or ["."]), cwd=bob)
    git("-c", "user.email=bob@example.com", "-c", "user.name=Bob", "commit", "-q", "-m", "bob", cwd=bob)
    git("push", "-q", "origin", "HEAD:main", cwd=bob)


def _delegation(bob: Path) -> None:
    (bob / ".memo").mkdir()
    (bob / ".memo" / "delegations.json").write_text('{"off": false, "grants": {"shop": {"promote_rule": {}}}}')


def _link(bob: Path) -> None:
    import shutil

    shutil.rmtree(bob / "projects" / "shop" / "prompts")
    (bob / "projects" / "shop" / "prompts").symlink_to(bob.parent / "outside", target_is_directory=True)


def _attributes(bob: Path) -> list[str]:
    with (bob / ".gitattributes").open("a") as handle:
        handle.write("/projects/**/*.md working-tree-encoding=UTF-16\n")
    return [".gitattributes"]


def _huge(bob: Path) -> None:
    text = (bob / "projects" / "shop" / "prompts").glob("*.md").__next__().read_text()
    (bob / "projects" / "shop" / "prompts" / "prompt-big.md").write_text(
        text.replace("id: prompt-", "id: prompt-big-") + "x" * 3_000_000)


def _ignore_sessions(bob: Path) -> list[str]:
    with (bob / ".gitignore").open("a") as handle:
        handle.write("projects/*/sessions/\n")
    return [".gitignore"]


def _ignore_one_project(bob: Path) -> list[str]:  # found by an attacker: no sample path of a project 'p' matched it
    with (bob / ".gitignore").open("a") as handle:
        handle.write("/projects/shop/\n")
    return [".gitignore"]


_FORGED = ("---\nkind: creditNote\nnumber: 2026-0998\nsequence: 998\nsequenceKey: '2026'\ncredits: 2026-0001\n"
           "issued: '2026-11-01'\nsessions: []\npdfSha256: {sha}\n---\n")


def _bare_document(bob: Path) -> list[str]:  # found by an attacker: a credit note without a PDF cancelled an invoice
    (bob / "invoices").mkdir(exist_ok=True)
    (bob / "invoices" / "2026-0998.md").write_text(_FORGED.format(sha="0" * 64), encoding="utf-8")
    return ["invoices/2026-0998.md"]


def _document_with_another_pdf(bob: Path) -> list[str]:
    _bare_document(bob)
    (bob / "invoices" / "2026-0998.pdf").write_bytes(b"%PDF-1.7 not the one issued")
    return ["invoices/2026-0998.md", "invoices/2026-0998.pdf"]


def _document_without_its_sha(bob: Path) -> list[str]:  # found by an attacker: the sha left out, any PDF passed
    (bob / "invoices").mkdir(exist_ok=True)
    (bob / "invoices" / "2026-0998.md").write_text(_FORGED.replace("pdfSha256: {sha}\n", ""), encoding="utf-8")
    (bob / "invoices" / "2026-0998.pdf").write_bytes(b"%PDF-1.4 fake")
    return ["invoices/2026-0998.md", "invoices/2026-0998.pdf"]


def _unreadable_record(bob: Path) -> list[str]:  # found by an attacker: merged, then sat in the vault unindexed
    turn = next((bob / "projects" / "shop" / "prompts").glob("*.md"))
    broken = turn.with_name("prompt-broken.md")
    broken.write_text(turn.read_text().replace("id: prompt-", "id: [prompt-", 1), encoding="utf-8")
    return [str(broken.relative_to(bob))]


@pytest.mark.parametrize("change, path, why", [
    (_bare_document, "invoices/2026-0998.md", "an issued document without its PDF"),
    (_unreadable_record, "projects/shop/prompts/prompt-broken.md", "which is no record memo can read"),
    (_document_without_its_sha, "invoices/2026-0998.md", "no pdfSha256, or its SHA-256 differs"),
    (_document_with_another_pdf, "invoices/2026-0998.md", "whose PDF is not the one it was issued with"),
    (_delegation, ".memo/delegations.json", "a hidden file or folder"),
    (_ignore_sessions, ".gitignore", "which is not memo's: it may keep records or invoices out of every later commit"),
    (_ignore_one_project, ".gitignore", "with the line '/projects/shop/', which is not memo's"),
    (_link, "projects/shop/prompts", "a symbolic link or submodule"),
    (_attributes, ".gitattributes", "which is not memo's"),
    (_huge, "projects/shop/prompts/prompt-big.md", "of 3,000,"),
])
def test_a_pull_never_brings_in_what_a_vault_never_holds(remote, tmp_path, change, path, why):
    """A teammate who can push to the remote pushed `.memo/delegations.json` (it turned on
    automatic rule promotion on the victim's machine), a link that made memo write outside the
    vault, a `.gitattributes` line that stopped every later sync, a 3 MB record."""
    a = clone(remote, tmp_path / "a")
    record(a, "seed", "s1")
    assert sync(a, "manual", now=T0)["pushed"]
    before = git("rev-parse", "HEAD", cwd=a.root)
    _push_as_teammate(remote, tmp_path, change)
    refused = sync(a, "manual", now=T0)
    assert refused["error"].startswith(f"Vault-git sync failed (git merge): origin/main holds {path!r}, ")
    assert why in refused["error"] and "nothing was merged" in refused["error"]
    assert git("rev-parse", "HEAD", cwd=a.root) == before  # nothing of it came in
    assert not (a.root / ".memo" / "delegations.json").exists() and not (a.root / "projects/shop/prompts").is_symlink()
    assert status(a)["lastError"] == refused["error"]


def test_a_clone_of_a_repository_holding_a_machines_own_files_is_not_synced(remote, tmp_path):
    a = clone(remote, tmp_path / "a")
    record(a, "seed", "s1")
    sync(a, "manual", now=T0)
    _push_as_teammate(remote, tmp_path, _delegation)
    c = clone(remote, tmp_path / "c")
    refused = sync(c, "manual", now=T0)
    assert refused["error"].startswith("Vault-git sync failed (git sync): the vault repository tracks "
                                       "'.memo/delegations.json', a hidden file or folder")
    assert "rm -r --cached" in refused["error"]


def test_a_repository_that_tracks_compiled_views_is_told_every_one_and_one_command(remote, tmp_path):
    """Found by a team moving from spec-memo (whose vault repository held its compiled views): each
    sync named one view — five runs a project, one ``git rm --cached`` each. Every path is named
    (the first three, and how many more) with one command that untracks them all."""
    a = clone(remote, tmp_path / "a")
    record(a, "seed", "s1")
    sync(a, "manual", now=T0)

    def views(bob: Path) -> list[str]:
        names = ["PROMPTS.md", "SESSIONS.md", "INDEX.md", "TRAPS.md", "DECISIONS.md"]
        for name in names:
            (bob / "projects" / "shop" / name).write_text(f"# {name}\n")
        return [f"projects/shop/{name}" for name in names]

    _push_as_teammate(remote, tmp_path, views)
    c = clone(remote, tmp_path / "c")
    refused = sync(c, "manual", now=T0)["error"]
    assert refused.startswith("Vault-git sync failed (git sync): the vault repository tracks 'projects/shop/DECISIONS.md'"
                              ", a compiled view (each machine compiles its own); 'projects/shop/INDEX.md', ")
    assert "; and 2 more; nothing was synced: " in refused and refused.endswith(", after checking the 5 files")
    command = refused.split("nothing was synced: ", 1)[1].rsplit(", after checking", 1)[0]
    subprocess.run(command, shell=True, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "c", "GIT_AUTHOR_EMAIL": "c@example.com",
                        "GIT_COMMITTER_NAME": "c", "GIT_COMMITTER_EMAIL": "c@example.com"})
    assert sync(c, "manual", now=T0)["error"] is None


def test_a_hidden_file_in_the_vault_is_never_committed_and_a_name_of_any_bytes_syncs(remote, tmp_path):
    """Found by an attacker (round five): the sync's ``git add -A`` committed a ``.DS_Store`` and
    pushed it; every later sync, on every machine, refused the repository that tracked it (the
    printed untrack command did not hold: the next sync committed it again). And a file name of a
    byte that is not UTF-8 stopped every sync with a traceback (its commit message)."""
    a = clone(remote, tmp_path / "a")
    record(a, "seed", "s1")
    assert sync(a, "manual", now=T0)["error"] is None
    (a.root / "projects/shop/.DS_Store").write_bytes(b"junk")
    (a.root / os.fsdecode(b"projects/shop/notes-\xff.txt")).write_bytes(b"n")
    record(a, "second", "s1")
    for _ in range(2):
        assert sync(a, "manual", now=T0)["error"] is None
    tracked = git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", "main")
    assert "projects/shop/.DS_Store" not in tracked and "notes-" in tracked
    assert sync(clone(remote, tmp_path / "b"), "manual", now=T0)["error"] is None


def test_the_untrack_command_takes_each_name_as_that_file_never_a_pattern(remote, tmp_path):
    """Found by an attacker (round five): a tracked ``:!x/.y`` (a teammate's push) made the printed
    ``git rm -r --cached -- ':!x/.y'`` untrack every file of the vault (a pathspec)."""
    c = clone(remote, tmp_path / "c")
    record(c, "seed", "s1")
    sync(c, "manual", now=T0)
    (c.root / ":!x").mkdir()
    (c.root / ":!x/.y").write_text("n")  # committed by hand (git add -f)
    git("--literal-pathspecs", "add", "-f", "--", ":!x/.y", cwd=c.root)
    git("-c", "user.email=c@example.com", "-c", "user.name=c", "commit", "-q", "-m", "odd", cwd=c.root)
    refused = sync(c, "manual", now=T0)["error"]
    command = refused.split("nothing was synced: ", 1)[1].rsplit(", after checking", 1)[0]
    assert "--literal-pathspecs rm -r --cached -- ':!x/.y'" in command
    subprocess.run(command, shell=True, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "c", "GIT_AUTHOR_EMAIL": "c@example.com",
                        "GIT_COMMITTER_NAME": "c", "GIT_COMMITTER_EMAIL": "c@example.com"})
    assert git("ls-files", cwd=c.root).split() == [".gitattributes", ".gitignore"] + sorted(
        record_files(c))  # only that file went
    assert sync(c, "manual", now=T0)["error"] is None


def test_a_pulled_last_seen_root_never_chooses_where_a_rule_is_promoted(remote, tmp_path):
    """`project.toml` is synced; its `lastSeenRoot` is a path of whichever machine wrote it last."""
    from memo_analytics.services.projects import last_seen_root

    own, other = tmp_path / "shop", tmp_path / "other-repo"
    for folder in (own, other):
        git("init", "-q", str(folder))
    a = clone(remote, tmp_path / "a")
    record_prompt(a, RecordPromptRequest(body="seed", project="shop", cwd=str(own)), now=T0)
    sync(a, "manual", now=T0)
    assert last_seen_root(a, "shop") == own
    _push_as_teammate(remote, tmp_path, lambda bob: [(bob / "projects/shop/project.toml").write_text(
        f'name = "shop"\nlastSeenRoot = "{other}"\n'), "projects/shop/project.toml"][1:])
    assert sync(a, "manual", now=T0)["error"] is None
    assert str(other) in (a.root / "projects/shop/project.toml").read_text()  # the file came in …
    assert last_seen_root(a, "shop") == own  # … this machine's own record decides


def test_two_machines_first_turns_in_a_project_make_no_conflict_of_its_project_file(remote, tmp_path):
    """Found by two freelancers: each machine's first turn of a project wrote its own checkout's
    path into the shared ``project.toml`` (``lastSeenRoot``): the merge kept a conflict version —
    named ``.md``, listed by no digest nor status — for good. With vault-git on, where a project
    was seen is each machine's own record only."""
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    for store, name in ((a, "laptop"), (b, "desktop")):
        checkout = tmp_path / name / "shop"
        checkout.mkdir(parents=True)
        git("init", "-q", str(checkout))
        record_prompt(store, RecordPromptRequest(body=f"from the {name}", project="shop", cwd=str(checkout)), now=T0)
    for store in (a, b, a):
        assert sync(store, "manual", now=T0)["conflicts"] == []
    assert not list((a.root / "projects/shop").glob("*.conflict-*"))
    assert "lastSeenRoot" not in (a.root / "projects/shop/project.toml").read_text() \
        if (a.root / "projects/shop/project.toml").exists() else True


def _synced_session(remote: Path, tmp_path: Path) -> VaultStore:
    """A clone holding session s1 of shop (09:00–10:00), synced: what a teammate's push then changes."""
    a = clone(remote, tmp_path / "a")
    start_session(a, StartSessionRequest(session_id="s1", project="shop", start_time=T0))
    end_session(a, EndSessionRequest(session_id="s1", project="shop", until=T0.replace(hour=10)))
    sync(a, "manual", now=T0)
    return a


def test_a_pulled_session_whose_minutes_are_not_its_times_is_refused(remote, tmp_path):
    """`durationMinutes: 5` with an `endTime` in 2099: reports billed 5 minutes, `session show`
    said it ends in 2099 — a hybrid push of it is refused, and so is its pull now."""
    a = _synced_session(remote, tmp_path)

    def forge(bob: Path) -> list[str]:
        path = bob / "projects/shop/sessions/session-s1.md"
        text = path.read_text()
        path.write_text(re.sub(r"endTime: .*", "endTime: '2026-01-05T09:30:00.000Z'", text))
        return ["projects/shop/sessions/session-s1.md"]

    _push_as_teammate(remote, tmp_path, forge)
    refused = sync(a, "manual", now=T0.replace(day=6))
    # refused where any record is read now (a hand edit too): a record memo cannot read
    assert "origin/main holds 'projects/shop/sessions/session-s1.md', which is no record memo can read " \
        "(Cannot parse projects/shop/sessions/session-s1.md: durationMinutes: 60 is more than endTime − startTime (30 " \
        "minutes); " in refused["error"]
    assert a.read("shop", RecordKind.SESSION, "session-s1")[0]["endTime"] == "2026-01-05T10:00:00.000Z"


def test_an_invoice_a_pull_brings_in_is_named_and_one_without_its_pdf_is_refused(remote, tmp_path):
    """A teammate pushed a bare `invoices/2026-0500.md` naming Alice's sessions: her report then
    billed them as invoiced, without a word from the sync. It was then pulled and flagged (PDF
    missing); an attacker's bare credit note so cancelled a real invoice, its sessions billed
    again: a document without the PDF it was issued as is refused before the merge."""
    a = clone(remote, tmp_path / "a")
    start_session(a, StartSessionRequest(session_id="work1", project="shop", client="Acme", start_time=T0))
    end_session(a, EndSessionRequest(session_id="work1", project="shop", until=T0.replace(hour=11)))
    sync(a, "manual", now=T0)

    def forge(bob: Path) -> None:
        (bob / "invoices").mkdir()
        (bob / "invoices" / "2026-0500.md").write_text(
            "---\nkind: invoice\nnumber: 2026-0500\nsequence: 500\nissued: '2026-01-06'\nclient: Acme\n"
            "sessions:\n- {project: shop, sessionId: work1, billedMinutes: 1}\n---\nforged\n")

    _push_as_teammate(remote, tmp_path, forge)
    refused = sync(a, "manual", now=T0)
    assert "holds 'invoices/2026-0500.md', an issued document without its PDF" in refused["error"]
    assert json.loads(memo("--json", "invoice", "list", vault=a.root).stdout)["items"] == []
    # with its PDF, as another machine issues it: pulled and named
    (tmp_path / "bob").rename(tmp_path / "bob-1")

    def issued_on_b(bob: Path) -> None:
        forge(bob)
        document = bob / "invoices" / "2026-0500.md"
        document.write_text(document.read_text().replace("---\nforged", f"pdfSha256: {_PDF_SHA}\n---\nforged"))
        (bob / "invoices" / "2026-0500.pdf").write_bytes(_PDF)

    git("-C", str(remote), "update-ref", "refs/heads/main",
        git("rev-parse", "HEAD", cwd=a.root).strip())  # the remote back to before the refused commit
    _push_as_teammate(remote, tmp_path, issued_on_b)
    pulled = sync(a, "manual", now=T0)
    assert pulled["error"] is None and pulled["invoicesPulled"] == ["2026-0500"]


def test_two_machines_recording_the_next_turn_of_one_session_keep_both_turns(remote, tmp_path):
    """Both numbered their turn t2: one became a `.conflict-` file, gone from search and from
    the session ("a sync kept the losing version", the digest said). They are two turns."""
    a = clone(remote, tmp_path / "a")
    start_session(a, StartSessionRequest(session_id="shared-s", project="shop", start_time=T0))
    record(a, "first turn", "shared-s")
    sync(a, "manual", now=T0)
    b = clone(remote, tmp_path / "b")
    record_prompt(b, RecordPromptRequest(body="turn from B", project="shop", session_id="shared-s"),
                  now=T0.replace(minute=5))
    record_prompt(a, RecordPromptRequest(body="turn from A", project="shop", session_id="shared-s"),
                  now=T0.replace(minute=7))
    assert sync(b, "manual", now=T0)["pushed"]
    merged = sync(a, "manual", now=T0)
    assert merged["error"] is None and merged["conflicts"] == []
    assert merged["renumberedTurns"] == ["projects/shop/prompts/prompt-shared-s-t3.md"]
    sync(b, "manual", now=T0)
    for store in (a, b):  # the turn made first keeps t2, the later one is t3, on both machines
        turns = {row["id"]: row["body"] for row in store.conn.execute(
            "SELECT id, body FROM records WHERE kind = 'prompt' AND session_id = 'shared-s'")}
        assert turns == {"prompt-shared-s-t1": "first turn", "prompt-shared-s-t2": "turn from B",
                         "prompt-shared-s-t3": "turn from A"}
        assert conflict_files(store.root / "projects") == []


def test_after_a_pull_the_next_command_does_not_say_the_index_caught_up_with_changes_outside_memo(remote, tmp_path):
    a = clone(remote, tmp_path / "a")
    record(a, "first", "s1")
    sync(a, "manual", now=T0)
    b = clone(remote, tmp_path / "b")
    assert sync(b, "manual", now=T0)["error"] is None
    b.close()
    record(a, "second", "s1")
    record(a, "in a new project", "s9", project="docs")
    sync(a, "manual", now=T0)
    env = {"MEMO_CONFIG": str(tmp_path / "config.toml")}
    (tmp_path / "config.toml").write_text("[vaultGit]\nenabled = true\n", encoding="utf-8")
    memo("prompt", "record", "--session-id", "s2", "--project", "shop", "--body", "b's own", vault=tmp_path / "b",
         env=env)  # a change of b's own: the pull is a merge
    ran = memo("--json", "sync", "git", vault=tmp_path / "b", env=env)
    pulled = json.loads(ran.stdout)
    assert pulled["pulled"] and pulled["reindexed"] >= 2 and ran.stderr == ""
    after = memo("--json", "activity", "--all", vault=tmp_path / "b", env=env)
    assert after.stderr == ""  # it said "the index caught up with 2 record folders changed outside memo"
    assert json.loads(after.stdout)["totalPrompts"] == 4


def test_sync_status_says_hybrid_is_off_and_what_vault_git_waits_for_and_forgets_a_settled_error(remote, tmp_path):
    a = clone(remote, tmp_path / "a")
    record(a, "first", "s1")
    env = {"MEMO_CONFIG": str(tmp_path / "config.toml")}
    (tmp_path / "config.toml").write_text("[vaultGit]\nenabled = true\n", encoding="utf-8")
    git("remote", "set-url", "origin", str(tmp_path / "gone.git"), cwd=a.root)
    assert sync(a, "manual", now=T0)["error"]
    shown = memo("sync", "status", vault=a.root, env=env).stdout
    assert shown.splitlines()[0] == "hybrid push: off (mode local, no daemon)"
    assert "vault-git: origin/main" in shown and "1 commit not pushed · 0 files not committed" in shown
    assert "last error: Vault-git sync failed (git fetch)" in shown
    git("remote", "set-url", "origin", str(remote), cwd=a.root)
    assert sync(a, "manual", now=T0.replace(hour=10))["error"] is None
    settled = json.loads(memo("--json", "sync", "status", vault=a.root, env=env).stdout)["vaultGit"]
    assert (settled["lastError"], settled["unpushedCommits"]) == (None, 0)
    assert "last error" not in memo("sync", "status", vault=a.root, env=env).stdout


def _billing_machine(remote: Path, tmp_path: Path) -> tuple[VaultStore, dict[str, str]]:
    """Machine A of a vault-git vault with issuer and Acme Corp terms, and two sessions for Acme
    (5 and 6 January, 9–10): its store and the environment naming the config."""
    from tests.integration.test_issued_invoices import ACME, ISSUER

    config = tmp_path / "config.toml"
    config.write_text(ISSUER + ACME + "\n[vaultGit]\nenabled = true\n", encoding="utf-8")
    a = clone(remote, tmp_path / "a")
    for day in (5, 6):
        start_session(a, StartSessionRequest(session_id=f"s{day}", project="web", client="Acme Corp",
                                             start_time=T0.replace(day=day)))
        end_session(a, EndSessionRequest(session_id=f"s{day}", project="web", until=T0.replace(day=day, hour=10)))
    return a, {"MEMO_CONFIG": str(config)}


def test_a_machine_whose_invoice_lost_its_number_is_told_so_and_the_other_hears_of_the_duplicate(remote, tmp_path):
    """Found by a billing person: B issued 2026-0001 while its remote was down, A had issued its own
    first. B's sync said "pulled 2026-0001.duplicate-…, issued on another machine" — B's own invoice —
    while invoices/2026-0001.pdf, the file B's issue had printed, now held A's invoice to another
    period. A, pulling the settled merge, heard of no duplicate at all."""
    a, env = _billing_machine(remote, tmp_path)
    b = clone(remote, tmp_path / "b")
    a.close(), b.close()
    bill = ["invoice", "issue", "--all", "--client", "Acme Corp", "--offline"]
    memo(*bill, "--since", "2026-01-05", "--until", "2026-01-05", vault=tmp_path / "a", env=env)
    git("remote", "set-url", "origin", str(tmp_path / "gone.git"), cwd=tmp_path / "b")
    mine = json.loads(memo("--json", *bill, "--since", "2026-01-06", "--until", "2026-01-06", vault=tmp_path / "b",
                           env=env).stdout)
    assert mine["pdf"] == str(tmp_path / "b" / "invoices" / "2026-0001.pdf")
    git("remote", "set-url", "origin", str(remote), cwd=tmp_path / "b")

    on_b = memo("sync", "git", vault=tmp_path / "b", env=env)
    listed = json.loads(memo("--json", "invoice", "list", vault=tmp_path / "b", env=env).stdout)["items"]
    [ref] = [i["ref"] for i in listed if i.get("ref")]
    assert ref.startswith("2026-0001.duplicate-")
    # A's invoice, now under that file, was pulled; B's own is not "pulled"
    assert "pulled 2026-0001, issued on another machine" in on_b.stdout and ref not in on_b.stdout
    assert " ".join(on_b.stderr.split()) == (
        f"warning: number 2026-0001 was also given on another machine, before this one: its document keeps the file "
        f"invoices/2026-0001.pdf; the invoice issued here is now {ref} (invoices/{ref}.pdf) and stays issued: if "
        f"it went out as 2026-0001, cancel it with memo invoice credit {ref} and bill its sessions again")
    shown = json.loads(memo("--json", "invoice", "show", ref, vault=tmp_path / "b", env=env).stdout)
    assert shown["periodStart"] == "2026-01-06"  # B's own, under its new name

    on_a = memo("--json", "sync", "git", vault=tmp_path / "a", env=env)
    pulled = json.loads(on_a.stdout)
    assert (pulled["invoicesPulled"], pulled["duplicateInvoices"], pulled["renamedHere"]) == ([ref], [ref], [])


def test_an_invoiced_session_edited_beside_another_in_one_pulled_commit_is_named(remote, tmp_path):
    """Found by a billing person: B invoiced s5; A, not knowing, corrected s5 and s6 and pushed them in
    one commit. B's sync named nothing (the changed paths were read as one name of two lines) and
    only its digest knew; one edited session alone was named."""
    a, env = _billing_machine(remote, tmp_path)
    b = clone(remote, tmp_path / "b")
    a.close(), b.close()
    memo("invoice", "issue", "--all", "--client", "Acme Corp", "--since", "2026-01-05", "--until", "2026-01-05",
         vault=tmp_path / "b", env=env)
    git("remote", "set-url", "origin", str(tmp_path / "gone.git"), cwd=tmp_path / "a")
    for sid, minutes in (("s5", "90"), ("s6", "75")):
        memo("session", "edit", sid, "--project", "web", "--minutes", minutes, vault=tmp_path / "a", env=env)
    git("remote", "set-url", "origin", str(remote), cwd=tmp_path / "a")
    memo("sync", "git", vault=tmp_path / "a", env=env)  # pulls B's invoice, pushes both edits
    pulled = json.loads(memo("--json", "sync", "git", vault=tmp_path / "b", env=env).stdout)
    assert pulled["invoicesPulled"] == []  # B's own invoice
    assert [(i["sessionId"], i["invoice"], i["fields"]) for i in pulled["invoicedSessionsChanged"]] == [
        ("s5", "2026-0001", ["endTime", "durationMinutes"])]


def test_a_pulled_invoice_billed_on_other_terms_than_this_machines_config_is_said(remote, tmp_path):
    """Found by a billing person: billing terms are each machine's config; a second laptop set up
    from the README reported other amounts for Acme than the invoice A had sent, without a word.
    A pulled invoice whose client this machine bills otherwise is named, with each difference."""
    from tests.integration.test_issued_invoices import ACME, ISSUER

    a, env = _billing_machine(remote, tmp_path)
    b = clone(remote, tmp_path / "b")
    a.close(), b.close()
    other = tmp_path / "b-config.toml"  # B: another rate, a rounding, web without its own rate
    other.write_text(ISSUER + ACME.replace('hourlyRate = "120.00"', 'hourlyRate = "95.00"\nroundingMinutes = 15')
                     + "\n[vaultGit]\nenabled = true\n", encoding="utf-8")
    b_env = {"MEMO_CONFIG": str(other)}
    memo("invoice", "issue", "--all", "--client", "Acme Corp", "--since", "2026-01-05", "--until", "2026-01-06",
         vault=tmp_path / "a", env=env)
    pulled = json.loads(memo("--json", "sync", "git", vault=tmp_path / "b", env=b_env).stdout)
    assert pulled["termsDiffer"] == [{"invoice": "2026-0001", "client": "Acme Corp", "differences": [
        "hourlyRate web 95.00 (the invoice: 120.00)",
        "rounding: each session is billed in steps of 15 minutes; then a session beside an earlier one of the client "
        "bills only the minutes that one did not cover (the invoice: none)"]}]
    # `memo sync status` keeps saying it (a sync at a session's end tells no one) until the terms agree
    status = json.loads(memo("--json", "sync", "status", vault=tmp_path / "b", env=b_env).stdout)["vaultGit"]
    assert [(i["invoice"], len(i["differences"])) for i in status["termsDiffer"]] == [("2026-0001", 2)]
    shown = " ".join(memo("sync", "status", vault=tmp_path / "b", env=b_env).stdout.split())
    assert ("invoice 2026-0001, pulled from another machine, billed Acme Corp on other terms than this machine's "
            "config: hourlyRate web 95.00 (the invoice: 120.00)") in shown
    # and the operator digest lists it, one item per client, until the terms agree (it said nothing)
    digest = json.loads(memo("--json", "digest", vault=tmp_path / "b", env=b_env).stdout)
    [terms] = [i for i in digest["items"] if i["kind"] == "billing_terms_differ"]
    assert (terms["id"], terms["lane"], terms["project"]) == ("billing_terms_differ:Acme Corp", "waiting on you", "web")
    assert terms["why"].startswith("invoice 2026-0001, issued on another machine, billed Acme Corp on other terms than "
                                   "this machine's config: hourlyRate web 95.00 (the invoice: 120.00); rounding: ")
    assert terms["action"] == ("memo invoice show 2026-0001  # 'its terms; then memo config set "
                               "clients.\"Acme Corp\".… as on the machine that issued it'")
    agreed = json.loads(memo("--json", "sync", "status", vault=tmp_path / "b", env=env).stdout)["vaultGit"]
    assert agreed["termsDiffer"] == []
    digest = json.loads(memo("--json", "digest", vault=tmp_path / "b", env=env).stdout)  # the terms set right
    assert not [i for i in digest["items"] if i["kind"] == "billing_terms_differ"]
    # the same terms say nothing; a machine without Acme's terms says so
    git("reset", "-q", "--hard", "HEAD~1", cwd=tmp_path / "b")
    same = json.loads(memo("--json", "sync", "git", vault=tmp_path / "b", env=env).stdout)
    assert same["invoicesPulled"] == ["2026-0001"] and same["termsDiffer"] == []
    git("reset", "-q", "--hard", "HEAD~1", cwd=tmp_path / "b")
    other.write_text(ISSUER + "\n[vaultGit]\nenabled = true\n", encoding="utf-8")
    said = " ".join(memo("sync", "git", vault=tmp_path / "b", env=b_env).stderr.split())
    assert said == ("warning: invoice 2026-0001, issued on another machine, billed Acme Corp on other terms than this "
                    "machine's config: no billing terms here; reports and invoices here come to other amounts until "
                    "[clients.\"Acme Corp\"] is the same as that machine's (billing terms are each machine's config: "
                    "memo config show there, memo config set 'clients.\"Acme Corp\"' … here)")


def test_a_credit_note_issued_before_the_merge_still_cancels_its_own_invoice(remote, tmp_path):
    """B, offline, issued 2026-0001 and cancelled it at once; A had issued its own 2026-0001 first.
    After the merge B's invoice is the duplicate — and B's credit note, which named "2026-0001",
    must cancel B's, not A's."""
    a, env = _billing_machine(remote, tmp_path)
    b = clone(remote, tmp_path / "b")
    a.close(), b.close()
    bill = ["invoice", "issue", "--all", "--client", "Acme Corp", "--offline"]
    mine = json.loads(memo("--json", *bill, "--since", "2026-01-05", "--until", "2026-01-05", vault=tmp_path / "a",
                           env=env).stdout)
    git("remote", "set-url", "origin", str(tmp_path / "gone.git"), cwd=tmp_path / "b")
    theirs = json.loads(memo("--json", *bill, "--since", "2026-01-06", "--until", "2026-01-06",
                             vault=tmp_path / "b", env=env).stdout)
    memo("invoice", "credit", "2026-0001", "--offline", vault=tmp_path / "b", env=env)
    assert mine["number"] == theirs["number"] == "2026-0001"
    git("remote", "set-url", "origin", str(remote), cwd=tmp_path / "b")
    synced = json.loads(memo("--json", "sync", "git", vault=tmp_path / "b", env=env).stdout)
    [duplicate] = synced["duplicateInvoices"]
    listed = {i.get("ref", i["number"]): i for i in json.loads(
        memo("--json", "invoice", "list", vault=tmp_path / "b", env=env).stdout)["items"]}
    assert listed["2026-0001"]["status"] == "issued" and listed["2026-0001"]["periodStart"] == "2026-01-05"
    assert listed[duplicate]["status"] == "credited" and listed[duplicate]["periodStart"] == "2026-01-06"
    assert not any(i.get("warnings") for i in listed.values())  # one 2026-0001 stands: settled


def test_a_credit_note_numbered_like_another_machines_invoice_is_said_as_such_not_to_be_cancelled(remote, tmp_path):
    """A credited 2026-0001 offline (its credit note took 2026-0002) while B issued its own
    2026-0002. The sync told A to cancel the duplicate with `memo invoice credit`, which refuses
    a credit note. A credit note standing twice under one number is said as such: both stand.
    (B's clone of a vault that already holds invoices was refused as "a git repository with other
    content".)"""
    a, env = _billing_machine(remote, tmp_path)
    a.close()
    bill = ["invoice", "issue", "--all", "--client", "Acme Corp"]
    memo("--json", *bill, "--since", "2026-01-05", "--until", "2026-01-05", vault=tmp_path / "a", env=env)
    b = clone(remote, tmp_path / "b")
    b.close()
    theirs = json.loads(memo("--json", *bill, "--since", "2026-01-06", "--until", "2026-01-06", vault=tmp_path / "b",
                             env=env).stdout)
    assert theirs["number"] == "2026-0002"
    git("remote", "set-url", "origin", str(tmp_path / "gone.git"), cwd=tmp_path / "a")
    credit = json.loads(memo("--json", "invoice", "credit", "2026-0001", "--offline", vault=tmp_path / "a",
                             env=env).stdout)
    assert credit["number"] == "2026-0002"
    git("remote", "set-url", "origin", str(remote), cwd=tmp_path / "a")
    said = " ".join(memo("sync", "git", vault=tmp_path / "a", env=env).stderr.split())
    listed = {i.get("ref", i["number"]): i for i in json.loads(
        memo("--json", "invoice", "list", vault=tmp_path / "a", env=env).stdout)["items"]}
    [duplicate] = [ref for ref in listed if ".duplicate-" in ref]
    assert duplicate.startswith("2026-0002.duplicate-")
    # A's credit note was numbered after B's invoice: A is told its own document lost the number's file
    assert (f"warning: number 2026-0002 was also given on another machine, before this one: its document keeps the "
            f"file invoices/2026-0002.pdf; the credit note issued here is now {duplicate} (invoices/{duplicate}.pdf) "
            f"and stays issued: tell its recipient that number 2026-0002 was given twice") in said
    assert "memo invoice credit" not in said  # it would be refused: a credit note is never cancelled
    assert listed["2026-0001"]["status"] == "credited" and listed[duplicate]["kind"] == "creditNote"
    assert listed["2026-0002"]["status"] == "issued"  # B's invoice stands; nothing of it was cancelled


def test_a_pull_that_deletes_or_changes_an_issued_document_is_refused(remote, tmp_path):
    """A teammate deleted `invoices/2026-0001.md` (or dropped a session from it): the pull took it
    silently and the next invoice billed those sessions again."""
    a = clone(remote, tmp_path / "a")
    (a.root / "invoices").mkdir()
    (a.root / "invoices" / "2026-0001.md").write_text(
        "---\nkind: invoice\nnumber: 2026-0001\nsequence: 1\nissued: '2026-01-06'\nclient: Acme\n"
        "sessions:\n- {project: shop, sessionId: work1}\n- {project: shop, sessionId: work2}\n---\nissued\n")
    assert sync(a, "manual", now=T0)["error"] is None
    before = git("rev-parse", "HEAD", cwd=a.root)
    _push_as_teammate(remote, tmp_path, lambda bob: (bob / "invoices" / "2026-0001.md").unlink())
    refused = sync(a, "manual", now=T0)
    # (found by two freelancers: it said "remove it from origin/main" of a file the remote no longer held)
    assert "origin/main deletes the issued document 'invoices/2026-0001.md' (its sessions would be billed again); " \
        "nothing was merged (put it back on origin/main — git revert the commit that deleted it" in refused["error"]
    assert git("rev-parse", "HEAD", cwd=a.root) == before and (a.root / "invoices" / "2026-0001.md").is_file()


def test_a_forged_duplicate_and_a_hostile_ledger_state_are_not_believed(tmp_path):
    """A `.duplicate-00000000` credit note cancelled a real invoice (the hash in its name was never
    checked); `"documents": {"2026-0001": "x"}` crashed `invoice list`, a sequence of 1e400
    crashed issuing."""
    from memo_analytics.domain.errors import CorruptRecordError
    from memo_analytics.vault import ledger

    folder = tmp_path / "invoices"
    folder.mkdir()
    (folder / "2026-0001.duplicate-00000000.md").write_text(
        "---\nkind: creditNote\nnumber: 2026-0001\nsequence: 1\nissued: '2026-01-06'\ncredits: 2026-0001\n"
        "sessions: []\n---\nforged\n")
    with pytest.raises(CorruptRecordError, match="not that of the duplicate a merge keeps"):
        ledger.documents(tmp_path)
    (folder / "2026-0001.duplicate-00000000.md").unlink()
    (folder / ".ledger.json").write_text('{"sequences": {"2026": 1e400, "2025": 7}, "documents": {"2026-0001": "x"}}')
    assert ledger.read_state(tmp_path) == {"sequences": {"2025": 7}, "documents": {}}
    assert ledger.next_number([], "{year}-{seq:04d}", 2026, ledger.read_state(tmp_path))[0] == "2026-0001"


def test_a_session_on_two_standing_invoices_and_an_invoice_credited_twice_are_said(tmp_path):
    """Offline, machine a invoiced s05 as 0001 while b invoiced s06 as 0001 and s05 as 0002: only
    "0001 issued twice" was said, s05 stayed billed twice; two machines each cancelled 0001 and
    the client was credited twice, without a word."""
    from memo_analytics.reports.issuing import document_summary
    from memo_analytics.vault import ledger

    folder = tmp_path / "invoices"
    folder.mkdir()

    def doc(name: str, kind: str, number: str, sessions: list[str], credits: str | None = None) -> None:
        listed = "".join(f"\n- {{project: web, sessionId: {s}}}" for s in sessions) or " []"
        (folder / f"{name}.md").write_text(
            f"---\nkind: {kind}\nnumber: {number}\nsequence: 1\nissued: '2026-01-06'\nclient: Acme\n"
            f"sessions:{listed}\n" + (f"credits: {credits}\n" if credits else "") + "---\nissued\n")

    doc("2026-0001", "invoice", "2026-0001", ["s05"])
    doc("2026-0002", "invoice", "2026-0002", ["s06", "s05"])
    doc("2026-0003", "creditNote", "2026-0003", [], credits="2026-0002")
    doc("2026-0004", "creditNote", "2026-0004", [], credits="2026-0002")
    docs = ledger.documents(tmp_path)
    assert ledger.credited_twice(docs) == {"2026-0002": ["2026-0003", "2026-0004"]}
    assert ledger.billed_twice(docs) == {}  # 0002 is cancelled: s05 stands on 0001 alone
    said = {d.ref: document_summary(d, docs).get("warnings", []) for d in docs}
    assert said["2026-0003"] == said["2026-0004"] == [
        "invoice 2026-0002 is cancelled by 2 credit notes (2026-0003, 2026-0004): the client was credited more "
        "than once"]
    # found by two freelancers sharing a vault: the digest said nothing of it (no item, "[]")
    from tests.inprocess import memo

    memo("session", "start", "s07", "--project", "web", vault=tmp_path)  # a vault: it records work
    digest = json.loads(memo("--json", "digest", vault=tmp_path).stdout)
    [item] = [i for i in digest["items"] if i["kind"] == "invoice_credited_twice"]
    assert (item["subject"], item["lane"], item["action"]) == (
        "2026-0002", "waiting on you", "memo invoice show 2026-0004  # not to be sent: if it was, the client owes its "
                                       "amount back")
    assert item["why"].startswith("invoice 2026-0002 is cancelled by 2 credit notes (2026-0003, 2026-0004")
    for name in ("2026-0003", "2026-0004"):
        (folder / f"{name}.md").unlink()
    docs = ledger.documents(tmp_path)
    assert ledger.billed_twice(docs) == {("web", "s05"): ["2026-0001", "2026-0002"]}
    assert document_summary(docs[0], docs)["warnings"] == [
        "session s05 (web) is billed on 2026-0002 as well: cancel one of them with memo invoice credit REF"]


@pytest.mark.parametrize("end_is_newer", [False, True])
def test_a_session_moved_to_another_project_on_one_machine_and_ended_on_the_other_is_billed_there(
        remote, tmp_path, end_is_newer):
    """A moved `s1` to project `app` while B ended it in `web`. Git followed the move, so the
    ended version landed in `projects/app/` still naming project `web`: the index skipped it and
    the session billed nothing (or, the move being newer, the end was lost to a conflict file).
    Each side changed other fields: the merge takes both, and the record names its folder's project."""
    a = clone(remote, tmp_path / "a")
    start_session(a, StartSessionRequest(session_id="s1", project="web", client="Acme", start_time=T0))
    record_prompt(a, RecordPromptRequest(body="first turn", project="web", session_id="s1"), now=T0)
    assert sync(a, "manual", now=T0)["error"] is None
    b = clone(remote, tmp_path / "b")
    a.close()
    memo("session", "edit", "s1", "--project", "web", "--to-project", "app", vault=tmp_path / "a")
    end_session(b, EndSessionRequest(session_id="s1", project="web", until=T0.replace(hour=11)),
                now=None if end_is_newer else T0.replace(hour=11, minute=5))
    a = vault(tmp_path / "a")
    assert sync(a, "manual", now=T0.replace(hour=10))["error"] is None
    assert sync(b, "manual", now=T0.replace(hour=12))["error"] is None
    b.close(), a.close()
    shown = json.loads(memo("--json", "activity", "--all", "--tz", "UTC", vault=tmp_path / "b").stdout)
    assert [(s["sessionId"], s["project"], s["billedMinutes"]) for s in shown["sessions"]] == [("s1", "app", 120)]
    session_files = sorted(p.relative_to(tmp_path / "b").as_posix()
                           for p in (tmp_path / "b" / "projects").glob("*/sessions/*.md"))
    assert session_files == ["projects/app/sessions/session-s1.md"]
    assert conflict_files(tmp_path / "b" / "projects") == []


def test_a_document_without_its_pdf_never_gets_the_other_machines_pdf_of_the_same_number(remote, tmp_path):
    """A's 2026-0001 had lost its PDF when B's 2026-0001 (with its PDF) was merged: the merge gave
    A's document B's PDF — another client's invoice under A's record. Each keeps its own."""
    import hashlib
    import os

    a, env = _billing_machine(remote, tmp_path)
    assert sync(a, "manual", now=T0)["error"] is None
    b = clone(remote, tmp_path / "b")
    a.close(), b.close()
    bill = ["invoice", "issue", "--all", "--client", "Acme Corp", "--offline"]
    git("remote", "set-url", "origin", str(tmp_path / "gone.git"), cwd=tmp_path / "a")
    memo("--json", *bill, "--since", "2026-01-05", "--until", "2026-01-05", vault=tmp_path / "a", env=env)
    memo("--json", *bill, "--since", "2026-01-06", "--until", "2026-01-06", vault=tmp_path / "b", env=env)
    theirs = (tmp_path / "b" / "invoices" / "2026-0001.pdf").read_bytes()
    os.chmod(tmp_path / "a" / "invoices", 0o755)
    (tmp_path / "a" / "invoices" / "2026-0001.pdf").unlink()
    git("add", "-A", cwd=tmp_path / "a")
    git("-c", "user.email=a@example.com", "-c", "user.name=A", "commit", "-qm", "lost its PDF", cwd=tmp_path / "a")
    git("remote", "set-url", "origin", str(remote), cwd=tmp_path / "a")
    memo("sync", "git", vault=tmp_path / "a", env=env)
    folder = tmp_path / "a" / "invoices"
    pdfs = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.pdf")}
    mds = sorted(p.name for p in folder.glob("2026-0001*.md"))
    assert len(mds) == 2 and len(pdfs) == 1, (mds, pdfs)  # B's document and its PDF; A's without one
    [(name, digest)] = pdfs.items()
    assert digest == hashlib.sha256(theirs).hexdigest()
    assert (folder / name.replace(".pdf", ".md")).read_text().count("2026-01-06") >= 1  # B's period, B's PDF


def test_a_superseded_session_pulled_from_another_machine_is_taken_in(remote, tmp_path, realdata):
    """A imported a SpecStory export, then the session's own Claude Code transcript, which
    superseded the export's session (it keeps its endTime). B's sync refused the pull ("'superseded'
    with an endTime … nothing was merged") and every later one: the team's sync stopped."""
    from tests.integration.test_honest_importers import _specstory_copy

    source = realdata / "claude-code-jsonl/DRMacIver-claude-reliability/snapshot-tests/tests/python-to-rust-port"
    (tmp_path / "cc").mkdir()
    (tmp_path / "cc" / "transcript.jsonl").write_bytes((source / "transcript.jsonl").read_bytes())
    _specstory_copy(source / "transcript.jsonl", tmp_path / "proj")
    config = tmp_path / "config.toml"
    config.write_text("[vaultGit]\nenabled = true\n", encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    a = clone(remote, tmp_path / "a")
    a.close()
    memo("import", "specstory", str(tmp_path / "proj" / ".specstory"), vault=tmp_path / "a", env=env)
    memo("sync", "git", vault=tmp_path / "a", env=env)
    b = clone(remote, tmp_path / "b")
    b.close()
    memo("sync", "git", vault=tmp_path / "b", env=env)
    memo("import", "claude-code", str(tmp_path / "cc"), vault=tmp_path / "a", env=env)
    memo("sync", "git", vault=tmp_path / "a", env=env)
    synced = json.loads(memo("--json", "sync", "git", vault=tmp_path / "b", env=env).stdout)
    assert synced["error"] is None and synced["pulled"], synced
    both = json.loads(memo("--json", "activity", "--all", vault=tmp_path / "b", env=env).stdout)
    assert (both["totalSessions"], both["totalPrompts"]) == (1, 1)


def test_a_session_recorded_in_a_project_another_machine_moved_a_session_out_of_stays_in_its_project(
        remote, tmp_path):
    """A moved the only session of `web` to `app` while B recorded a new session `s2` in `web`:
    git's detection of renamed folders put B's session and turn into `projects/app/`, still naming
    `web` — the index skipped them and the 120 minutes left billing without a word."""
    a = clone(remote, tmp_path / "a")
    start_session(a, StartSessionRequest(session_id="s1", project="web", client="Acme", start_time=T0))
    end_session(a, EndSessionRequest(session_id="s1", project="web", until=T0.replace(hour=10)))
    assert sync(a, "manual", now=T0)["error"] is None
    b = clone(remote, tmp_path / "b")
    a.close()
    memo("session", "edit", "s1", "--project", "web", "--to-project", "app", vault=tmp_path / "a")
    start_session(b, StartSessionRequest(session_id="s2", project="web", client="Acme", start_time=T0.replace(hour=12)))
    record_prompt(b, RecordPromptRequest(body="Add the export", project="web", session_id="s2"), now=T0.replace(hour=12))
    end_session(b, EndSessionRequest(session_id="s2", project="web", until=T0.replace(hour=14)))
    a = vault(tmp_path / "a")
    assert sync(a, "manual", now=T0.replace(hour=15))["error"] is None
    assert sync(b, "manual", now=T0.replace(hour=15))["error"] is None
    assert sync(a, "manual", now=T0.replace(hour=16))["error"] is None
    a.close(), b.close()
    for machine in ("a", "b"):
        shown = json.loads(memo("--json", "activity", "--all", "--tz", "UTC", vault=tmp_path / machine).stdout)
        assert sorted((s["sessionId"], s["project"], s["billedMinutes"]) for s in shown["sessions"]) == [
            ("s1", "app", 60), ("s2", "web", 120)], machine
        assert shown["totalPrompts"] == 1
    assert (tmp_path / "b" / "projects" / "web" / "sessions" / "session-s2.md").is_file()


_PDF = b"%PDF-1.7 issued on B"
_PDF_SHA = hashlib.sha256(_PDF).hexdigest()


def _invoice_of_work1(bob: Path) -> None:
    (bob / "invoices").mkdir(exist_ok=True)
    (bob / "invoices" / "2026-0501.md").write_text(
        "---\nkind: invoice\nnumber: 2026-0501\nsequence: 501\nissued: '2026-01-06'\nclient: Acme\n"
        "sessions:\n- {project: shop, sessionId: work1, startTime: '2026-01-05T09:00:00Z', "
        f"endTime: '2026-01-05T11:00:00Z', durationMinutes: 120, billedMinutes: 120}}\npdfSha256: {_PDF_SHA}\n---\n"
        "issued on B\n")
    (bob / "invoices" / "2026-0501.pdf").write_bytes(_PDF)  # issued with its PDF, as memo does


def test_a_pull_that_leaves_an_invoiced_session_differing_from_its_invoice_is_named(remote, tmp_path):
    """Editing an invoiced session is refused on the machine that knows the invoice; through git,
    another machine's edit of it, or its invoice arriving after this machine edited it, changed
    what reports bill for an invoice already sent — silently. The sync names each one, with the
    fields that differ, and ``memo sync git`` warns."""
    from memo_analytics.services.requests import EditSessionRequest
    from memo_analytics.services.session_edit import edit_session

    a = clone(remote, tmp_path / "a")
    start_session(a, StartSessionRequest(session_id="work1", project="shop", client="Acme", start_time=T0))
    end_session(a, EndSessionRequest(session_id="work1", project="shop", until=T0.replace(hour=11)))
    sync(a, "manual", now=T0)
    # B invoiced 09:00–11:00 while A, not knowing yet, corrected the end to 12:00
    edit_session(a, EditSessionRequest(session_id="work1", project="shop", end_time="2026-01-05T12:00:00Z"),
                 now=T0.replace(hour=13))
    _push_as_teammate(remote, tmp_path, _invoice_of_work1)
    pulled = sync(a, "manual", now=T0.replace(hour=14))
    assert pulled["error"] is None and pulled["invoicesPulled"] == ["2026-0501"]
    assert pulled["invoicedSessionsChanged"] == [{"project": "shop", "sessionId": "work1", "invoice": "2026-0501",
                                                  "fields": ["endTime", "durationMinutes"], "asInvoiced": {
        "startTime": "2026-01-05T09:00:00Z", "endTime": "2026-01-05T11:00:00Z", "durationMinutes": 120,
        "client": "Acme"}}]
    # put back as invoiced: a sync that brings nothing about it names nothing
    (tmp_path / "bob").rename(tmp_path / "bob-1")
    meta, body = a.read("shop", RecordKind.SESSION, "session-work1")
    a.upsert(RecordKind.SESSION, {**meta, "endTime": "2026-01-05T11:00:00.000Z", "durationMinutes": 120,
                                  "updated": "2026-01-05T15:00:00.000Z"}, body)
    again = sync(a, "manual", now=T0.replace(hour=15))
    assert again["error"] is None and again["invoicedSessionsChanged"] == []

    def lengthen(bob: Path) -> list[str]:  # B edits the invoiced session's end by hand
        path = bob / "projects/shop/sessions/session-work1.md"
        text = re.sub(r"endTime: .*", "endTime: '2026-01-05T11:30:00.000Z'", path.read_text())
        text = re.sub(r"durationMinutes: .*", "durationMinutes: 150", text)
        path.write_text(re.sub(r"updated: .*", "updated: '2026-01-05T16:00:00.000Z'", text))
        return ["projects/shop/sessions/session-work1.md"]

    _push_as_teammate(remote, tmp_path, lengthen)
    config = tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n[vaultGit]\nenabled = true\n', encoding="utf-8")
    said = memo("sync", "git", vault=a.root, env={"MEMO_CONFIG": str(config)})
    assert said.returncode == 0, said.stderr
    assert said.stderr.strip() == (
        "warning: the pull changed session work1 (shop), billed on invoice 2026-0501: its endTime, durationMinutes "
        "now differ from the invoice's, and reports show the record's (they still bill the invoice's minutes); put it "
        "back (memo session edit work1 --project shop --end 2026-01-05T11:00:00Z) or cancel the invoice (memo invoice "
        "credit 2026-0501) and bill it again")
    # the digest lists it until it agrees with its invoice again
    env = {"MEMO_CONFIG": str(config)}
    [item] = [i for i in json.loads(memo("--json", "digest", "--as-of", "2026-01-06T09:00", vault=a.root, env=env).stdout)["items"]
              if i["kind"] == "invoice_session_changed"]
    assert (item["id"], item["lane"], item["minutesAtStake"], item["why"], item["action"]) == (
        "invoice_session_changed:work1", "waiting on you", 30, "on invoice 2026-0501, its endTime, durationMinutes now "
        "differ from the invoice's: reports show the record and bill the invoice's minutes, as the client was billed",
        'memo session edit work1 --project shop --end 2026-01-05T11:00:00Z  # or memo invoice credit 2026-0501 and '
        "bill it again")
    # an edit is refused while it leaves the session otherwise than invoiced, taken when it puts it back
    other = memo("session", "edit", "work1", "--end", "2026-01-05T11:15:00Z", vault=a.root, env=env, check=False)
    assert other.returncode == 1 and "session work1 is on invoice 2026-0501" in other.stderr
    back = memo("--json", "session", "edit", "work1", "--end", "2026-01-05T11:00:00Z", vault=a.root, env=env)
    assert json.loads(back.stdout)["changed"] == ["durationMinutes", "endTime"]
    assert a.read("shop", RecordKind.SESSION, "session-work1")[0]["durationMinutes"] == 120
    from memo_analytics.operator.snapshot import take_snapshot

    assert take_snapshot(vault(a.root)).invoiced_changed == []


def test_a_pulled_move_cut_short_to_no_project_is_refused(remote, tmp_path):
    """A teammate's `movingTo: "RED [bold]…"` came in unchecked, and then every edit of the
    session was refused with a command that could never run (the target is no project id)."""
    a = _synced_session(remote, tmp_path)

    def forge(bob: Path) -> list[str]:
        path = bob / "projects/shop/sessions/session-s1.md"
        path.write_text(path.read_text().replace("\nstatus:", "\nmovingTo: RED [bold]rich[/bold] x\nstatus:", 1))
        return ["projects/shop/sessions/session-s1.md"]

    _push_as_teammate(remote, tmp_path, forge)
    refused = sync(a, "manual", now=T0.replace(day=6))
    assert "holds 'projects/shop/sessions/session-s1.md', which breaks a rule of the vault's records " \
           "(Invalid movingTo" in refused["error"], refused["error"]
    assert "movingTo" not in a.read("shop", RecordKind.SESSION, "session-s1")[0]


def test_an_invoice_changed_by_hand_is_not_committed_and_the_other_machine_keeps_syncing(remote, tmp_path):
    """Found by a billing person: an issued invoice edited on one laptop (its gross raised) was
    committed and pushed without a word, and the other laptop's every sync — and so every
    invoice it issued — then failed ("origin/main holds … which deletes or changes an issued
    document"), until the first was repaired with git by hand. The change is not committed, and
    the sync says how to put it back."""
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    _push_as_teammate(remote, tmp_path, _invoice_of_work1)
    assert sync(a, "manual", now=T0)["error"] is None and sync(b, "manual", now=T0)["error"] is None
    invoice = a.root / "invoices" / "2026-0501.md"
    invoice.chmod(0o644)
    invoice.write_text(invoice.read_text().replace("issued on B", "changed by hand"))
    record(a, "other work goes on")
    synced = sync(a, "manual", now=T0.replace(hour=12))
    assert synced["error"] is None and synced["issuedChangedHere"] == ["invoices/2026-0501.md"]
    assert synced["committed"] >= 1 and synced["pushed"]  # the rest was committed and pushed
    pulled = sync(b, "manual", now=T0.replace(hour=13))
    assert pulled["error"] is None  # B goes on syncing
    assert "issued on B" in (b.root / "invoices" / "2026-0501.md").read_text()
    config = tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n[vaultGit]\nenabled = true\n', encoding="utf-8")
    said = memo("sync", "git", vault=a.root, env={"MEMO_CONFIG": str(config)})
    assert "warning: invoices/2026-0501.md was changed or deleted since it was issued; it is not committed" in said.stderr
    assert f"git -C {a.root} checkout HEAD -- invoices/2026-0501.md" in said.stderr


def test_a_refused_pull_is_said_once_and_not_as_nothing_to_pull(remote, tmp_path):
    """Found by an attacker: ``memo sync git`` on a refused pull printed "nothing to pull" (it was
    refused) and the error twice on stderr, one of them not JSON under ``--json``."""
    a = clone(remote, tmp_path / "a")
    record(a, "seed", "s1")
    sync(a, "manual", now=T0)
    a.close()
    _push_as_teammate(remote, tmp_path, _bare_document)
    config = tmp_path / "config.toml"
    config.write_text("[vaultGit]\nenabled = true\n", encoding="utf-8")
    ran = memo("sync", "git", vault=a.root, env={"MEMO_CONFIG": str(config)}, check=False)
    assert ran.returncode == 1 and "nothing to pull" not in ran.stdout
    assert ran.stdout.strip().endswith("nothing pulled or pushed: the sync stopped (the error below)")
    assert ran.stderr.count("an issued document without its PDF") == 1, ran.stderr
    as_json = memo("--json", "sync", "git", vault=a.root, env={"MEMO_CONFIG": str(config)}, check=False)
    assert all(json.loads(line) for line in as_json.stderr.splitlines())  # every line JSON


def test_a_field_merge_whose_times_break_the_session_rule_keeps_the_newer_version_whole():
    """Found by an attacker: machine B moved a session's start, machine A its length; the field
    merge took B's start, A's end and A's minutes — a record whose minutes are not its times,
    pushed to the team and refused by every reader. Such a merge keeps the newer version whole."""
    from datetime import datetime, timezone

    from memo_analytics.services.vault_git import _merged_record
    from memo_analytics.vault.io import dump_record

    base = {"id": "session-m1", "kind": "session", "project": "p1", "status": "completed",
            "created": "2026-11-01T10:00:00.000Z", "updated": "2026-11-01T12:00:00.000Z", "sessionId": "m1",
            "startTime": "2026-11-01T10:00:00.000Z", "endTime": "2026-11-01T11:00:00.000Z", "durationMinutes": 60}
    theirs = {**base, "updated": "2026-11-02T09:00:00.000Z", "startTime": "2026-11-01T09:00:00.000Z",
              "durationMinutes": 120}
    ours = {**base, "updated": "2026-11-02T10:00:00.000Z", "endTime": "2026-11-01T11:30:00.000Z",
            "durationMinutes": 90}
    texts = [dump_record(meta, "").encode() for meta in (base, ours, theirs)]
    assert _merged_record("projects/p1/sessions/session-m1.md", *texts,
                          datetime(2026, 11, 3, tzinfo=timezone.utc)) is None
    # a merge of fields that keeps the rule is still made
    ours_summary = {**base, "updated": "2026-11-02T10:00:00.000Z", "summary": "Release"}
    merged = _merged_record("projects/p1/sessions/session-m1.md", texts[0], dump_record(ours_summary, "").encode(),
                            texts[2], datetime(2026, 11, 3, tzinfo=timezone.utc))
    assert merged is not None and b"summary: Release" in merged[0] and b"durationMinutes: 120" in merged[0]


def test_a_session_billed_by_a_credited_duplicate_bills_what_the_standing_invoice_billed(tmp_path):
    """Found by two freelancers sharing a vault: offline, A set s1 to 120 minutes and invoiced it
    as 2026-0001; B invoiced it at 150 as 2026-0001 too (its duplicate after the sync). Once the
    duplicate was credited, reports still billed s1 150 minutes "as invoice 2026-0001" (which billed
    120), and the digest proposed putting the record back to 150: the two invoices of one number
    matched each other's sessions by the number. The standing invoice's minutes count."""
    from memo_analytics.vault import ledger

    folder = tmp_path / "invoices"
    folder.mkdir()

    def doc(name: str | None, kind: str, number: str, created: str, minutes: int | None = None, **extra: str) -> str:
        sessions = (f"\n- {{project: web, sessionId: s1, durationMinutes: {minutes}, billedMinutes: {minutes}}}"
                    if minutes else " []")
        more = "".join(f"{key}: {value}\n" for key, value in extra.items())
        text = (f"---\nkind: {kind}\nnumber: {number}\nsequence: 1\nissued: '2026-12-01'\nclient: Acme\n"
                f"createdAt: '{created}'\nsessions:{sessions}\n{more}---\nissued\n")
        name = name or ledger.duplicate_ref(number, text.encode("utf-8"))  # as a merge names it
        (folder / f"{name}.md").write_text(text)
        return name

    doc("2026-0001", "invoice", "2026-0001", "2026-12-01T10:00:00.000Z", 120)
    duplicate = doc(None, "invoice", "2026-0001", "2026-12-01T10:00:05.000Z", 150)
    doc("2026-0002", "creditNote", "2026-0002", "2026-12-02T09:00:00.000Z", credits="2026-0001",
        creditsRef=duplicate)
    docs = ledger.documents(tmp_path)
    assert ledger.credited(docs) == {duplicate: "2026-0002"}
    assert ledger.invoiced_minutes(docs) == {("web", "s1"): 120}
    number, client, item = ledger.invoiced_items(docs)[("web", "s1")]
    assert (number, client, item["billedMinutes"]) == ("2026-0001", "Acme", 120)


def test_a_sync_killed_mid_merge_is_taken_over_by_the_next_and_a_hand_merge_is_left_to_its_person(remote, tmp_path):
    """Found by two freelancers: ``kill -9`` of a sync during its ``git merge`` left
    ``.git/index.lock`` (and the merge unfinished), and every later sync failed with git's "Unable
    to create …/index.lock: File exists" — at each session's end too — until the file was deleted
    by hand. The next sync clears what the killed one left and goes on; a merge or a lock memo did
    not leave is refused with the commands that finish it."""
    a = clone(remote, tmp_path / "a")
    record(a, "from a", "s1")
    assert sync(a, "manual", now=T0)["error"] is None
    b = clone(remote, tmp_path / "b")
    record(a, "again from a", "s1")
    assert sync(a, "manual", now=T0)["error"] is None
    record(b, "from b", "s2")
    git("add", "-A", cwd=b.root)
    git("-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "b's turn", cwd=b.root)
    git("fetch", "-q", "origin", cwd=b.root)

    # by hand: a merge not concluded, then a lock of a git the person killed
    git("-c", "user.name=b", "-c", "user.email=b@x", "merge", "--no-commit", "--no-ff", "origin/main", cwd=b.root)
    refused = sync(b, "manual", now=T0)["error"]
    assert "a merge started by hand in the vault is not finished: finish it (git -C" in refused
    assert (b.root / ".git" / "MERGE_HEAD").exists()  # the person's merge is theirs
    git("merge", "--abort", cwd=b.root)
    (b.root / ".git" / "index.lock").write_text("")
    assert "index.lock exists: a git command is running in the vault, or one was killed; if none runs, remove " \
        "it (rm " in sync(b, "manual", now=T0)["error"]

    # a sync killed mid-merge: its mark, the merge and git's lock left as they were
    (b.root / ".git" / "index.lock").unlink()
    git("-c", "user.name=b", "-c", "user.email=b@x", "merge", "--no-commit", "--no-ff", "origin/main", cwd=b.root)
    (b.root / ".git" / "index.lock").write_text("")
    (b.root / ".memo" / "sync" / "git-running").write_text("12345\n")
    taken = sync(b, "manual", now=T0)
    assert taken["error"] is None and taken["pulled"] is True and taken["pushed"] is True, taken
    assert taken["recovered"].startswith("the sync before this one was stopped mid-run")
    assert not (b.root / ".git" / "index.lock").exists() and not (b.root / ".memo" / "sync" / "git-running").exists()
    assert sync(a, "manual", now=T0)["error"] is None
    assert {r["body"].strip() for r in a.conn.execute("SELECT body FROM records WHERE kind = 'prompt'")} == {
        "from a", "again from a", "from b"}


def test_the_sync_after_a_kill_waits_for_the_git_the_killed_one_left_running(remote, tmp_path):
    """Found by a reliability tester: ``kill -9`` of ``memo sync git`` during its ``git add`` left
    that git running; the next sync took its ``index.lock`` away at once and failed ("Unable to
    write new index file"). Each git a sync runs is named in its mark; the next waits for it."""
    import subprocess
    import sys

    a = clone(remote, tmp_path / "a")
    record(a, "from a", "s1")
    lock = a.root / ".git" / "index.lock"
    lock.write_text("")
    # the git left running: it holds the lock a while, then puts its index in place (removes its lock)
    left = subprocess.Popen([sys.executable, "-c", "import os, sys, time; time.sleep(1); os.remove(sys.argv[1])",
                             str(lock)])
    (a.root / ".memo" / "sync" / "git-running").parent.mkdir(parents=True, exist_ok=True)
    (a.root / ".memo" / "sync" / "git-running").write_text(f"12345\n{left.pid}\n")
    taken = sync(a, "manual", now=T0)
    assert left.wait(30) == 0  # its lock was still there when it ended: the sync waited for it
    assert taken["error"] is None and taken["recovered"].startswith("the sync before this one was stopped"), taken
    assert not (a.root / ".memo" / "sync" / "git-running").exists()


def test_an_invoice_billing_the_same_sessions_as_another_machines_is_not_called_late_work(remote, tmp_path):
    """Found by two freelancers issuing at the same moment: the second machine's issue pulled the
    first's invoice of the same sessions and noted "2026-0003 already billed Acme Corp for part of
    this period; 2026-0003 bills only sessions none of them did" — false: both billed the very same
    sessions. Such an invoice is told apart from late work (a warning naming the credit to make)."""
    from memo_analytics.reports.issuing import billing_the_same, same_period_invoices
    from memo_analytics.vault import ledger

    a, env = _billing_machine(remote, tmp_path)
    assert sync(a, "manual", now=T0)["error"] is None
    b = clone(remote, tmp_path / "b")
    a.close(), b.close()
    bill = ["--json", "invoice", "issue", "--all", "--client", "Acme Corp", "--offline", "--since", "2026-01-05",
            "--until", "2026-01-06"]
    memo(*bill, vault=tmp_path / "a", env=env)
    memo("sync", "git", vault=tmp_path / "a", env=env)
    memo(*bill, vault=tmp_path / "b", env=env)
    memo("sync", "git", vault=tmp_path / "b", env=env)
    first, second = ledger.documents(tmp_path / "b")  # one number, both issued: the second as a duplicate
    assert (first.ref, second.number) == ("2026-0001", "2026-0001") and second.ref.startswith("2026-0001.duplicate-")
    others = same_period_invoices([first, second], second)
    assert others == [first.ref] and billing_the_same([first, second], second, others) == [(first.ref, 2)]


def test_an_invoiced_session_deleted_by_hand_is_not_committed_and_the_sync_says_how_to_put_it_back(remote, tmp_path):
    """Found by two freelancers: the record of a session on an issued invoice, deleted by hand, was
    committed ("1 record") and pulled by the other machine — the billed minutes gone from every
    report there too, without a word at the sync. The deletion stays out of the commit, said with
    the command that puts the file back; a session moved to another project is no deletion."""
    a, env = _billing_machine(remote, tmp_path)
    a.close()
    memo("invoice", "issue", "--all", "--client", "Acme Corp", "--since", "2026-01-05", "--until", "2026-01-05",
         vault=tmp_path / "a", env=env)
    memo("sync", "git", vault=tmp_path / "a", env=env)
    gone = tmp_path / "a" / "projects/web/sessions/session-s5.md"
    gone.unlink()
    said = memo("sync", "git", vault=tmp_path / "a", env=env)
    assert ("warning: projects/web/sessions/session-s5.md was deleted, and invoice 2026-0001 bills that session; the "
            "deletion is not committed") in " ".join(said.stderr.split()), said.stderr
    assert "checkout HEAD -- projects/web/sessions/session-s5.md" in " ".join(said.stderr.split())
    assert git("ls-tree", "--name-only", "-r", "origin/main", cwd=tmp_path / "a").count("session-s5.md") == 1
    git("checkout", "HEAD", "--", "projects/web/sessions/session-s5.md", cwd=tmp_path / "a")
    assert "warning" not in memo("sync", "git", vault=tmp_path / "a", env=env).stderr


def test_a_turn_recorded_into_a_project_the_other_machine_renamed_is_named_with_the_command_that_joins_it(
        remote, tmp_path):
    """Found by two freelancers: the laptop renamed shop to webshop while the desktop recorded turn 2
    of a session into shop; after both synced, the session and its first turn were in webshop,
    turn 2 alone in shop — counted apart, the digest and the sync silent. The sync names it with
    the command that joins it."""
    from memo_analytics.services.project_move import move_project

    a = _synced_session(remote, tmp_path)
    record_prompt(a, RecordPromptRequest(body="first", project="shop", session_id="s1"), now=T0.replace(minute=10))
    sync(a, "manual", now=T0)
    b = clone(remote, tmp_path / "b")
    move_project(a, "shop", "webshop")
    sync(a, "manual", now=T0)
    record_prompt(b, RecordPromptRequest(body="late follow-up", project="shop", session_id="s1"),
                  now=T0.replace(minute=50))
    b.close()
    config = tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n[vaultGit]\nenabled = true\n', encoding="utf-8")
    said = memo("sync", "git", vault=tmp_path / "b", env={"MEMO_CONFIG": str(config)})
    assert ("warning: 1 turn of session s1 stayed in project shop, while the session is in webshop now (renamed on "
            "another machine meanwhile): they count apart from it; memo project merge shop webshop") \
        in " ".join(said.stderr.split()), said.stderr
    memo("project", "merge", "shop", "webshop", vault=tmp_path / "b", env={"MEMO_CONFIG": str(config)})
    shown = json.loads(memo("--json", "session", "show", "s1", vault=tmp_path / "b",
                            env={"MEMO_CONFIG": str(config)}).stdout)
    assert [t["body"] for t in shown["items"]] == ["first", "late follow-up"]
