"""SPEC §2.1–§2.5 as built by the walking skeleton, on a real vault folder and SQLite index."""

from __future__ import annotations

import os
import sqlite3
import threading
from datetime import datetime, timezone

import json
import pytest
from pydantic import ValidationError

from memo_analytics.domain.errors import (
    CorruptRecordError,
    InvalidFieldError,
    RecordNotFoundError,
    SessionCompletedError,
    SessionNotStartedError,
)
from memo_analytics.index.reindex import rebuild
from memo_analytics.services.prompts import get_record, list_prompts, record_prompt, search_prompts
from memo_analytics.services.requests import EndSessionRequest, ListRequest, RecordPromptRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.vault import io as vault_io
from memo_analytics.vault.io import read_record

UTC = timezone.utc
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

PROMPT_FIELDS = ["id", "kind", "project", "status", "created", "updated", "source", "ide", "model", "agent",
                 "sessionId", "turn", "taskSlug", "client", "billable", "branch", "gitSha", "linkedPaths", "tags"]
SESSION_EXTRA = ["startTime", "endTime", "durationMinutes", "deliverables", "summary", "handoffArchive"]


def rec(store, body="do the thing", **kw):
    kw.setdefault("project", "p1")
    now = kw.pop("now", None)
    return record_prompt(store, RecordPromptRequest(body=body, **kw), now=now)


def files(store, sub="prompts", project="p1"):
    folder = store.root / "projects" / project / sub
    return sorted(p.name for p in folder.glob("*.md")) if folder.exists() else []


# ---- §2.1 layout and §2.3 frontmatter

def test_prompt_lives_under_projects_id_prompts_with_every_frontmatter_field(store):
    rec(store, session_id="s1")
    path = store.root / "projects" / "p1" / "prompts" / "prompt-s1-t1.md"
    meta, body = read_record(path)
    assert list(meta)[: len(PROMPT_FIELDS)] == PROMPT_FIELDS
    assert body == "do the thing"
    assert meta["ide"] == "generic" and meta["billable"] is True and meta["kind"] == "prompt"
    assert meta["created"].endswith("Z") and len(meta["created"]) == len("2026-01-05T09:00:00.000Z")


def test_session_frontmatter_adds_the_session_fields(store):
    start_session(store, StartSessionRequest(session_id="s1", project="p1", start_time=T0))
    meta, _ = read_record(store.root / "projects" / "p1" / "sessions" / "session-s1.md")
    assert list(meta)[: len(PROMPT_FIELDS) + len(SESSION_EXTRA)] == PROMPT_FIELDS + SESSION_EXTRA
    assert meta["startTime"] == "2026-01-05T09:00:00.000Z" and meta["status"] == "active"


def test_index_file_lives_in_dot_memo(store):
    rec(store)
    assert (store.root / ".memo" / "index.sqlite").is_file()


# ---- §2.2 identity

def test_prompt_without_session_gets_epoch_ms_and_hex_id(store):
    record = rec(store, now=T0)
    assert record["id"].startswith("prompt-1767603600000-") and len(record["id"].rsplit("-", 1)[1]) == 6


def test_session_start_without_id_generates_timestamp_and_hex(store):
    record = start_session(store, StartSessionRequest(project="p1"), now=T0)
    assert record["sessionId"].startswith("20260105T090000Z-") and record["id"] == f"session-{record['sessionId']}"


# ---- §2.4 turn allocation, body, redaction

def test_first_turn_is_1_and_next_is_max_plus_1(store):
    assert rec(store, session_id="s1")["turn"] == 1
    assert rec(store, session_id="s1")["turn"] == 2
    assert rec(store, session_id="s1", turn=7)["turn"] == 7
    assert rec(store, session_id="s1")["turn"] == 8
    assert files(store) == ["prompt-s1-t1.md", "prompt-s1-t2.md", "prompt-s1-t7.md", "prompt-s1-t8.md"]


def test_allocation_never_overwrites_a_file_the_index_missed(store):
    rec(store, session_id="s1")
    with sqlite3.connect(store.layout.index_path) as conn:
        conn.execute("DELETE FROM records")  # the index lags the files (crash between file and index)
    assert rec(store, session_id="s1", body="second")["turn"] == 2
    assert read_record(store.root / "projects/p1/prompts/prompt-s1-t1.md")[1] == "do the thing"


def test_concurrent_threads_never_collide_on_turns(store):
    def worker():
        for _ in range(20):
            rec(store, session_id="busy")

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    turns = sorted(r["turn"] for r in list_prompts(store, ListRequest(project="p1", limit=100)).get("items"))
    total = list_prompts(store, ListRequest(project="p1"))["total"]
    assert total == 120
    assert len(files(store)) == 120
    assert sorted(int(name.rsplit("-t", 1)[1][:-3]) for name in files(store)) == list(range(1, 121))
    assert len(turns) == 100


def _process_writer(vault_root: str, count: int) -> None:
    from memo_analytics.config import Settings
    from memo_analytics.services.store import VaultStore

    store = VaultStore(Settings(vault_root=vault_root))
    for _ in range(count):
        record_prompt(store, RecordPromptRequest(body="parallel", session_id="multi", project="p1"))


def test_concurrent_processes_never_collide_on_turns(store):
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_process_writer, args=(str(store.root), 25)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    names = files(store)
    assert sorted(int(n.rsplit("-t", 1)[1][:-3]) for n in names) == list(range(1, 101))
    count = store.conn.execute("SELECT COUNT(*) FROM records WHERE session_id = 'multi'").fetchone()[0]
    assert count == 100


@pytest.mark.parametrize("body", ["", "   ", "\n\t\n"])
def test_record_requires_a_non_empty_body_and_writes_nothing(store, body):
    with pytest.raises(InvalidFieldError, match="^Invalid body: must not be empty"):
        rec(store, body=body, session_id="s1")
    assert files(store) == []


def test_body_of_invalid_utf8_is_refused(store):
    with pytest.raises(ValidationError, match="body: is not valid UTF-8"):
        rec(store, body="abc \udcff def")
    assert files(store) == []


def test_oversized_body_is_refused_not_truncated(store):
    with pytest.raises(InvalidFieldError, match="^Invalid body: is 2000001 bytes; the limit is 1000000 bytes"):
        rec(store, body="x" * 2_000_001)
    assert files(store) == []


@pytest.mark.parametrize("field, value", [("session_id", "../x"), ("project", "a/b"), ("session_id", "a\x00b"),
                                           ("project", "x" * 2000), ("task_slug", "..")])
def test_unsafe_ids_are_refused_and_nothing_is_written(store, field, value):
    with pytest.raises(InvalidFieldError, match="^Invalid (sessionId|project|taskSlug):"):
        rec(store, **{field: value})
    assert not (store.root / "projects").exists() or not any((store.root / "projects").rglob("*.md"))


SECRETS = [
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
    "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
    "AKIAIOSFODNN7EXAMPLQ",
    "hunter2hunter2",
]


def test_secrets_are_redacted_before_the_file_and_the_index(store):
    body = (f"use {SECRETS[0]} and key {SECRETS[1]}\naws {SECRETS[2]}\npassword = \"{SECRETS[3]}\"\n"
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----")
    record = rec(store, body=body, session_id="s1")
    text = (store.root / "projects/p1/prompts/prompt-s1-t1.md").read_text()
    db = store.layout.index_path.read_bytes()
    for secret in [*SECRETS, "b3BlbnNzaC1rZXktdjEAAAA"]:
        assert secret not in text and secret not in record["body"]
        assert secret.encode() not in db
    assert "[REDACTED:github-token]" in text and "[REDACTED:private-key]" in text


def test_atomic_write_leaves_the_old_file_when_the_rename_fails(store, monkeypatch):
    start_session(store, StartSessionRequest(session_id="s1", project="p1", start_time=T0))
    path = store.root / "projects/p1/sessions/session-s1.md"
    before = path.read_bytes()

    def boom(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(vault_io.os, "replace", boom)
    with pytest.raises(OSError):
        end_session(store, EndSessionRequest(session_id="s1", until="2026-01-05T10:00:00Z", summary="done"))
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == ["session-s1.md"]  # no temp file left behind


# ---- §2.5 lifecycle

def test_session_start_refuses_to_restart_a_completed_session(store):
    start_session(store, StartSessionRequest(session_id="s1", project="p1", start_time=T0))
    end_session(store, EndSessionRequest(session_id="s1", until="2026-01-05T10:00:00Z"))
    with pytest.raises(SessionCompletedError, match="cannot be restarted"):
        start_session(store, StartSessionRequest(session_id="s1", project="p1"))


def test_session_restart_preserves_start_created_slug_client_billable_summary(store):
    start_session(store, StartSessionRequest(session_id="s1", project="p1", start_time=T0, task_slug="t-1",
                                             client="Acme", billable=False, summary="first"))
    again = start_session(store, StartSessionRequest(session_id="s1", project="p1", task_slug="other",
                                                     client="Other", billable=True, summary="second", model="m2"),
                          now=datetime(2026, 1, 5, 12, 0, tzinfo=UTC))
    assert (again["startTime"], again["created"], again["taskSlug"], again["client"], again["billable"], again["summary"]) == (
        "2026-01-05T09:00:00.000Z", "2026-01-05T09:00:00.000Z", "t-1", "Acme", False, "first")
    assert again["model"] == "m2"


@pytest.mark.parametrize("session_id", [None, "never-started"])
def test_session_end_without_a_started_session_says_call_session_start_first(store, session_id):
    with pytest.raises(SessionNotStartedError, match="Call session_start first$"):
        end_session(store, EndSessionRequest(session_id=session_id))


def test_session_end_defaults_to_now_and_rounds_duration_to_whole_minutes(store):
    start_session(store, StartSessionRequest(session_id="s1", project="p1", start_time=T0))
    ended = end_session(store, EndSessionRequest(session_id="s1"), now=datetime(2026, 1, 5, 10, 42, 31, tzinfo=UTC))
    assert ended["endTime"] == "2026-01-05T10:42:31.000Z"
    assert ended["durationMinutes"] == 103 and ended["status"] == "completed"


def test_reending_a_completed_session_keeps_its_duration_and_merges_deliverables(store):
    start_session(store, StartSessionRequest(session_id="s1", project="p1", start_time=T0))
    end_session(store, EndSessionRequest(session_id="s1", until="2026-01-05T09:45:00Z", pr="https://x/pull/1",
                                         deliverables=[{"type": "commit", "sha": "abc"}]))
    again = end_session(store, EndSessionRequest(
        session_id="s1", until="2026-01-05T18:00:00Z", pr="https://x/pull/1",
        deliverables=[{"type": "commit", "sha": "abc"}, {"type": "commit", "sha": "def"}]))
    assert again["durationMinutes"] == 45 and again["endTime"] == "2026-01-05T09:45:00.000Z"
    assert [(d["type"], d.get("url"), d.get("sha")) for d in again["deliverables"]] == [
        ("commit", None, "abc"), ("pr", "https://x/pull/1", None), ("commit", None, "def")]
    assert again["deliverables"][1]["title"] == "Pull request 1"


def test_a_pr_given_twice_keeps_its_title(store):
    """Found by a team moving from spec-memo: ``pr`` and the same pull request in ``deliverables``
    (no title) merged by ``(url, sha, type)`` into the untitled one — the title ``--pr`` adds
    (SPEC §2.3) was lost. One item, with every field either gave."""
    start_session(store, StartSessionRequest(session_id="s2", project="p1", start_time=T0))
    ended = end_session(store, EndSessionRequest(session_id="s2", until="2026-01-05T09:45:00Z",
                                                 pr="https://x/pull/43",
                                                 deliverables=[{"type": "pr", "url": "https://x/pull/43"}]))
    assert ended["deliverables"] == [{"type": "pr", "url": "https://x/pull/43", "title": "Pull request 43"}]


def test_session_end_before_start_is_refused(store):
    start_session(store, StartSessionRequest(session_id="s1", project="p1", start_time=T0))
    with pytest.raises(InvalidFieldError, match="^Invalid until:"):
        end_session(store, EndSessionRequest(session_id="s1", until="2026-01-05T08:00:00Z"))


def test_prompt_inherits_client_billable_and_slug_from_its_session(store):
    start_session(store, StartSessionRequest(session_id="s1", project="p1", client="Acme", billable=False, task_slug="t"))
    record = rec(store, session_id="s1")
    assert (record["client"], record["billable"], record["taskSlug"]) == ("Acme", False, "t")


# ---- index, search, get, reindex

def test_every_mutation_updates_records_fts(store):
    start_session(store, StartSessionRequest(session_id="s1", project="p1", start_time=T0, summary="warp drive"))
    rec(store, body="the flux capacitor leaks", session_id="s1")
    page = search_prompts(store, ListRequest(project="p1", query="capacitor"))
    assert [i["id"] for i in page["items"]] == ["prompt-s1-t1"]

    def fts_ids(word):
        return sorted(r[0] for r in store.conn.execute("SELECT id FROM records_fts WHERE records_fts MATCH ?", (word,)))

    assert fts_ids("warp") == ["session-s1"]
    end_session(store, EndSessionRequest(session_id="s1", until="2026-01-05T10:00:00Z", summary="hyperdrive fixed"))
    assert fts_ids("warp") == [] and fts_ids("hyperdrive") == ["session-s1"]
    assert store.conn.execute("SELECT COUNT(*) FROM records_fts").fetchone()[0] == 2


def test_an_explicit_turn_never_replaces_a_recorded_one(store):
    rec(store, session_id="s1", body="original")
    with pytest.raises(InvalidFieldError, match="^Invalid turn: turn 1 of session s1 is already recorded"):
        rec(store, session_id="s1", turn=1, body="replacement")
    assert read_record(store.root / "projects/p1/prompts/prompt-s1-t1.md")[1] == "original"
    # found by a team moving from spec-memo: an agent's retry of the same turn (its answer lost) was
    # refused; writes of a deterministic id are re-entrant (SPEC §2.4): the turn is answered again
    path = store.root / "projects/p1/prompts/prompt-s1-t1.md"
    before = path.read_bytes()
    again = rec(store, session_id="s1", turn=1, body="original")
    assert (again["id"], again["body"]) == ("prompt-s1-t1", "original") and "not written again" in again["note"]
    assert path.read_bytes() == before
    # … and without a turn number, stamped as it was (an agent over MCP: a second identical turn was written)
    from memo_analytics.services.prompts import record_prompt_answer

    def answer(created: str) -> dict:  # as the MCP tool, the API and the CLI answer an agent's call
        return record_prompt_answer(store, RecordPromptRequest(project="p1", session_id="s2", body="Retry me",
                                                               created=created))

    first, retry = answer("2026-03-05T09:30:00+01:00"), answer("2026-03-05T09:30:00+01:00")
    assert retry["id"] == first["id"] == "prompt-s2-t1" and "not written again" in retry["note"]
    assert answer("2026-03-05T09:31:00+01:00")["id"] == "prompt-s2-t2"  # said again later: a turn of its own


def test_list_returns_the_envelope_newest_first(store):
    for minute in range(5):
        rec(store, session_id="s1", created=f"2026-01-05T09:0{minute}:00Z")
    page = list_prompts(store, ListRequest(project="p1", limit=2, offset=1))
    assert (page["total"], page["limit"], page["offset"], page["hasMore"]) == (5, 2, 1, True)
    assert [i["turn"] for i in page["items"]] == [4, 3]


def test_get_resolves_a_prompt_then_a_session_else_fails(store):
    start_session(store, StartSessionRequest(session_id="s1", project="p1", start_time=T0))
    rec(store, session_id="s1")
    assert get_record(store, "prompt-s1-t1")["kind"] == "prompt"
    assert get_record(store, "session-s1")["kind"] == "session"
    assert get_record(store, "s1")["kind"] == "session"
    with pytest.raises(RecordNotFoundError, match="^Record not found: nope"):
        get_record(store, "nope")


def _index_rows(store):
    return sorted(tuple(r) for r in store.conn.execute("SELECT * FROM records").fetchall())


def test_reindex_rebuilds_the_same_index_from_the_files_alone(store):
    start_session(store, StartSessionRequest(session_id="s1", project="p1", start_time=T0, client="Acme"))
    for _ in range(3):
        rec(store, body="alpha beta", session_id="s1")
    end_session(store, EndSessionRequest(session_id="s1", until="2026-01-05T10:00:00Z", pr="https://x/pull/9"))
    before = _index_rows(store)
    fts_before = store.conn.execute("SELECT rowid, id, body FROM records_fts ORDER BY id").fetchall()
    store.close()
    os.remove(store.layout.index_path)
    result = rebuild(store.conn, store.layout)
    assert result.indexed == 4 and result.skipped == []
    assert _index_rows(store) == before
    assert len(store.conn.execute("SELECT rowid, id, body FROM records_fts ORDER BY id").fetchall()) == len(fts_before)
    assert search_prompts(store, ListRequest(project="p1", query="beta"))["total"] == 3


def test_reindex_reports_a_broken_file_and_leaves_it_byte_for_byte(store):
    rec(store, session_id="s1")
    broken = store.root / "projects/p1/prompts/prompt-bad-t1.md"
    content = b"---\nid: [unclosed\nkind: prompt\n---\nbody\n"
    broken.write_bytes(content)
    result = rebuild(store.conn, store.layout)
    assert result.indexed == 1
    assert [isinstance(e, CorruptRecordError) and e.path.endswith("prompt-bad-t1.md") for e in result.skipped] == [True]
    assert broken.read_bytes() == content


@pytest.mark.parametrize(
    "body, query",
    [
        ("请帮我查看飞书文档的权限设置", "飞书"),
        ("请帮我查看飞书文档的权限设置", "飞书文档"),
        ("我爱北京天安门", "门"),
        ("我爱北京天安门", "北"),
        ("飞书", "飞 书"),
        ("ログを確認してください", "確認"),
        ("한국어 검색을 테스트합니다", "검색"),
        ("Vérifier le café crème", "cafe creme"),
        ("Refactor the decorator module", "decorat*"),
    ],
)
def test_search_finds_words_inside_cjk_sentences_accents_and_prefixes(store, body, query):
    rec(store, body=body, session_id="s1")
    rec(store, body="something unrelated", session_id="s1")
    page = search_prompts(store, ListRequest(project="p1", query=query))
    assert [i["body"] for i in page["items"]] == [body]


def test_an_old_index_is_migrated_to_cjk_bigrams(store):
    rec(store, body="请查看飞书文档", session_id="s1")
    conn = store.conn
    conn.execute("UPDATE records_fts SET body = '请查看飞书文档'")  # schema 1 kept raw text
    conn.execute("PRAGMA user_version = 1")
    store.close()
    assert search_prompts(store, ListRequest(project="p1", query="飞书"))["total"] == 1


def test_paths_in_memoignore_and_configured_globs_never_reach_the_vault(tmp_path):
    from memo_analytics.config import Settings
    from memo_analytics.services.store import VaultStore

    repo = tmp_path / "product"
    (repo / ".git").mkdir(parents=True)
    (repo / ".memoignore").write_text("# private\n.env\nsecrets/\n*.pem\n")
    store = VaultStore(Settings(vault_root=tmp_path / "vault", capture_ignore=["config/prod.yaml"]))
    record = record_prompt(store, RecordPromptRequest(
        body=f"read .env, secrets/db.txt, {repo}/config/prod.yaml and keys/server.pem but keep src/main.py",
        cwd=str(repo), linked_paths=["secrets/db.txt", "src/main.py"], session_id="s"))
    assert record["project"] == "product"
    assert record["body"] == ("read [IGNORED PATH], [IGNORED PATH], [IGNORED PATH] and [IGNORED PATH] "
                              "but keep src/main.py")
    assert record["linkedPaths"] == ["[IGNORED PATH]", "src/main.py"]
    text = (store.root / "projects/product/prompts/prompt-s-t1.md").read_text()
    assert "secrets/db.txt" not in text and "prod.yaml" not in text


def test_a_parallel_rebuild_gives_the_same_index_as_a_sequential_one(store, monkeypatch):
    from memo_analytics.index import reindex as reindex_module

    for n in range(30):
        rec(store, body=f"turn {n} with password = \"Hunter2x{n}\"", session_id=f"s{n % 3}")
    (store.root / "projects/p1/prompts/prompt-broken-t1.md").write_text("---\nid: [x\n---\n")
    monkeypatch.setattr(reindex_module, "PARALLEL_FROM", 10_000)
    sequential = rebuild(store.conn, store.layout)
    rows_sequential = _index_rows(store)
    monkeypatch.setattr(reindex_module, "PARALLEL_FROM", 1)
    monkeypatch.setattr(reindex_module, "_CHUNK", 7)
    parallel = rebuild(store.conn, store.layout)
    assert (parallel.indexed, len(parallel.skipped)) == (sequential.indexed, len(sequential.skipped)) == (30, 1)
    assert _index_rows(store) == rows_sequential


def test_feedback_counts_hits_and_helpfulness_on_the_record(store):
    from memo_analytics.services.feedback import record_feedback
    from memo_analytics.services.requests import FeedbackRequest

    rec(store, session_id="s1")
    record_feedback(store, FeedbackRequest(id="prompt-s1-t1"))
    record_feedback(store, FeedbackRequest(id="prompt-s1-t1", helpful=True))
    last = record_feedback(store, FeedbackRequest(id="prompt-s1-t1", helpful=False))
    assert {k: last["feedback"][k] for k in ("hits", "helpful", "notHelpful")} == {"hits": 3, "helpful": 1, "notHelpful": 1}
    meta, body = read_record(store.root / "projects/p1/prompts/prompt-s1-t1.md")
    assert meta["feedback"]["hits"] == 3 and body == "do the thing"
    with pytest.raises(RecordNotFoundError):
        record_feedback(store, FeedbackRequest(id="prompt-nope"))


def test_a_20_mb_body_is_refused_with_the_documented_limit(store):
    with pytest.raises(InvalidFieldError, match="^Invalid body: is 20000000 bytes; the limit is 1000000 bytes"):
        rec(store, body="x" * 20_000_000, session_id="big")
    assert files(store) == []


def test_branch_and_commit_default_to_the_cwd_repository_head(tmp_path):
    from memo_analytics.config import Settings
    from memo_analytics.services.store import VaultStore

    repo = tmp_path / "product"
    (repo / ".git" / "refs" / "heads" / "feature").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/feature/login\n")
    sha = "0123456789abcdef0123456789abcdef01234567"
    (repo / ".git" / "refs" / "heads" / "feature" / "login").write_text(sha + "\n")
    store = VaultStore(Settings(vault_root=tmp_path / "vault"))
    started = start_session(store, StartSessionRequest(session_id="g", cwd=str(repo)))
    record = record_prompt(store, RecordPromptRequest(body="x", cwd=str(repo), session_id="g"))
    assert (started["branch"], started["gitSha"]) == ("feature/login", sha)
    assert (record["branch"], record["gitSha"]) == ("feature/login", sha)
    explicit = record_prompt(store, RecordPromptRequest(body="y", cwd=str(repo), branch="main", git_sha="abc"))
    assert (explicit["branch"], explicit["gitSha"]) == ("main", "abc")


@pytest.mark.parametrize("edit, said", [
    (("durationMinutes: 20", "durationMinutes: 99999"), "durationMinutes: 99999 is more than endTime − startTime (20 minutes)"),
    # found by a later attacker: a copy under another id billed one session twice; a completed session
    # without an end billed its minutes on an invoice; one without minutes billed 0 and was called open
    (("id: session-d1", "id: session-d9"), "id: session-d9 is not the id of session d1 (session-d1)"),
    (("endTime: '2026-03-06T08:20:00.000Z'", "endTime: null"), "endTime: missing on a completed session"),
    # found by a later attacker: an unquoted time without a zone was read as UTC (two hours off in Berlin)
    (("startTime: '2026-03-06T08:00:00.000Z'", "startTime: 2026-03-06 08:00"), "startTime: 2026-03-06 08:00 has "
                                                                             "no zone: write it with Z (UTC)"),
    (("endTime: '2026-03-06T08:20:00.000Z'", "endTime: '2026-03-06T07:20:00.000Z'"),
     "endTime: 2026-03-06T07:20:00.000Z is before startTime 2026-03-06T08:00:00.000Z"),
])
def test_a_session_whose_length_is_not_its_times_is_refused_and_left_as_it_is(tmp_path, edit, said):
    """Found by an attacker: a hand edit of ``durationMinutes`` alone (99999 on a 20-minute
    session) was indexed, billed and issued as EUR 199,998; an end before the start billed
    too. Such a file is skipped with its reason, by the catch-up and by reindex, and kept as it is."""
    from tests.inprocess import memo

    vault = tmp_path / "v"
    memo("session", "start", "d1", "--project", "web", "--client", "Acme", "--start-time", "2026-03-06T08:00:00Z",
         vault=vault)
    memo("session", "end", "d1", "--until", "2026-03-06T08:20:00Z", vault=vault)
    record = vault / "projects" / "web" / "sessions" / "session-d1.md"
    text = record.read_text()
    assert edit[0] in text
    record.write_text(text.replace(edit[0], edit[1]))
    edited = record.read_bytes()
    shown = memo("--json", "activity", "--all", vault=vault)
    assert json.loads(shown.stdout)["totalDurationMinutes"] == 0
    assert f"1 file skipped ({record}: {said}" in json.loads(shown.stderr)["note"]
    assert "then memo reindex" in json.loads(shown.stderr)["note"]  # the mend: memo cannot edit what it cannot read
    rebuilt = memo("reindex", vault=vault)
    assert "skipped 1 files" in rebuilt.stdout + rebuilt.stderr
    assert json.loads(memo("--json", "activity", "--all", vault=vault).stdout)["totalDurationMinutes"] == 0
    assert record.read_bytes() == edited


def test_a_record_file_that_names_a_key_twice_is_refused_naming_the_key_and_its_lines(tmp_path):
    """Found by an attacker: ``client: null`` followed by ``client: Evil Corp`` (or ``billable``
    true then false) was read as its last line says, silently: the session billed another client,
    or nothing. Such a file is left out and named, as broken YAML is; a text whose continued
    line merely starts like a key is no second key."""
    from tests.inprocess import memo

    vault = tmp_path / "v"
    for sid in ("s1", "s2", "s3"):
        memo("session", "start", sid, "--project", "web", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
        memo("session", "end", sid, "--project", "web", "--until", "2026-03-02T10:00:00Z", vault=vault)
    folder = vault / "projects" / "web" / "sessions"
    one, two, three = (folder / f"session-{sid}.md" for sid in ("s1", "s2", "s3"))
    one.write_text(one.read_text().replace("client: null\n", "client: null\nclient: Evil Corp\n"))
    two.write_text(two.read_text().replace("billable: true\n", "billable: true\nbillable: false\n"))
    # a quoted summary continued on a line of its own that starts "client: …": one key
    three.write_text(three.read_text().replace("summary: null\n", 'summary: "first part\nclient: second part"\n'))
    assert read_record(three)[0]["summary"] == "first part client: second part"
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    lines = {n: one.read_text().splitlines().index(f"client: {v}") + 1 for n, v in ((1, "null"), (2, "Evil Corp"))}
    assert report["unreadableSessionFiles"] == [
        f"projects/web/sessions/session-s1.md: frontmatter names 'client' twice (lines {lines[1]} and {lines[2]}): "
        "keep the one that is right, then memo reindex",
        "projects/web/sessions/session-s2.md: frontmatter names 'billable' twice (lines "
        f"{two.read_text().splitlines().index('billable: true') + 1} and "
        f"{two.read_text().splitlines().index('billable: false') + 1}): keep the one that is right, then memo reindex"]
    assert "Evil Corp" not in report["byClient"]
    assert [s["sessionId"] for s in report["sessions"]] == ["s3"]


def _spec_memo_files(tmp_path, sid: str, turn_rest: str, session_rest: str):
    """A vault of project web written as spec-memo writes it, by hand: turn 1 of session ``sid``
    (its frontmatter after ``turn: 1``, then its body) and the session (its frontmatter after
    ``sessionId``). ``(vault, turn file, session file)``."""
    vault = tmp_path / "v"
    (vault / "projects" / "web" / "prompts").mkdir(parents=True)
    (vault / "projects" / "web" / "sessions").mkdir(parents=True)
    turn = vault / "projects" / "web" / "prompts" / f"prompt-{sid}-t1.md"
    turn.write_text(f"---\nid: prompt-{sid}-t1\nkind: prompt\nproject: web\nsessionId: {sid}\nturn: 1\n{turn_rest}",
                    encoding="utf-8")
    session = vault / "projects" / "web" / "sessions" / f"session-{sid}.md"
    session.write_text(f"---\nid: session-{sid}\nkind: session\nproject: web\nstatus: completed\nsessionId: {sid}\n"
                       f"{session_rest}", encoding="utf-8")
    return vault, turn, session


def test_a_spec_memo_record_without_updated_or_duration_minutes_is_read_as_the_spec_says(tmp_path):
    """Found by a team moving from spec-memo: a turn written without ``updated`` was skipped whole
    ("updated: Field required": left out of search, counts and derived rules), and an ended
    session without ``durationMinutes`` billed nothing (SPEC §2.5: it is computed from endTime −
    startTime). The turn reads as updated when created, the session bills its 90 minutes; the
    files are left as they are."""
    from tests.inprocess import memo

    vault, turn, session = _spec_memo_files(
        tmp_path, "s-w", "status: active\ncreated: 2026-03-04T13:20:00.000Z\nclient: Initech\n---\n"
                         "Always run the pricing integration tests before pushing\n",
        "created: 2026-03-04T13:00:00.000Z\nupdated: 2026-03-04T14:30:00.000Z\nstartTime: 2026-03-04T13:00:00.000Z\n"
        "endTime: 2026-03-04T14:30:00.000Z\nclient: Initech\n---\n")
    before = (turn.read_bytes(), session.read_bytes())
    found = json.loads(memo("--json", "prompt", "search", "pricing integration", "--all", vault=vault).stdout)
    assert [item["id"] for item in found["items"]] == ["prompt-s-w-t1"]
    assert found["items"][0]["updated"] == "2026-03-04T13:20:00.000Z"
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert (report["totalDurationMinutes"], report["totalPrompts"]) == (90, 1)
    rules = json.loads(memo("--json", "report", "rules", "--all", vault=vault).stdout)
    assert [item["text"] for item in rules["items"]] == ["Always run the pricing integration tests before pushing"]
    assert (turn.read_bytes(), session.read_bytes()) == before


def test_a_spec_memo_session_ended_again_and_a_sha_of_digits_are_read(tmp_path):
    """Found by a team moving from spec-memo (round two): a session ended a second time keeps its
    duration while its ``endTime`` moves (SPEC §2.5), and a turn whose short ``gitSha`` is digits
    alone (``gitSha: 1234567``, a number to YAML) — each was refused whole ("is not endTime −
    startTime", "gitSha: Input should be a valid string"): out of reports, search, and every MCP
    call on the session. The session bills its stated 90 minutes; the sha is text; the files are
    left as they are. More minutes than the times span are still refused."""
    from tests.inprocess import memo

    vault, turn, session = _spec_memo_files(
        tmp_path, "re", "status: recorded\ncreated: '2026-03-02T09:05:00.000Z'\nupdated: '2026-03-02T09:05:00.000Z'\n"
                        "gitSha: 1234567\n---\nA turn whose commit sha is all digits\n",
        "created: 2026-03-02T09:00:00.000Z\nupdated: 2026-03-02T12:00:00.000Z\nstartTime: 2026-03-02T09:00:00.000Z\n"
        "endTime: 2026-03-02T12:00:00.000Z\ndurationMinutes: 90\n---\n")
    before = (turn.read_bytes(), session.read_bytes())
    found = json.loads(memo("--json", "prompt", "search", "digits", "--all", vault=vault).stdout)
    assert [(item["id"], item["gitSha"]) for item in found["items"]] == [("prompt-re-t1", "1234567")]
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert (report["totalDurationMinutes"], report["totalPrompts"]) == (90, 1)
    assert (turn.read_bytes(), session.read_bytes()) == before
    session.write_text(session.read_text(encoding="utf-8").replace("durationMinutes: 90", "durationMinutes: 181"),
                       encoding="utf-8")
    memo("reindex", vault=vault)
    assert json.loads(memo("--json", "activity", "--all", vault=vault).stdout)["totalDurationMinutes"] == 0
