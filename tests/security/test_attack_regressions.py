"""Attacks found by trying to break the first round of issue 11's defences, replayed with their
final state asserted: a deeply nested frontmatter that crashed libyaml (the daemon and every
command on the vault), a secret hidden in a frontmatter key, pushed records that lie about
their identity, one colliding id that blocked a whole push, a percent-encoded `?token=` key in
the log, a query value that is not UTF-8, bidirectional overrides on the terminal, and a
password inside the daemon URL sent to DNS as part of a host name."""

from __future__ import annotations

import http.client
import json
import time

import pytest
from pathlib import Path

from memo_analytics.config import Settings
from memo_analytics.services import sync
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.remote import without_userinfo
from memo_analytics.services.requests import RecordPromptRequest
from memo_analytics.services.store import VaultStore
from tests.integration.test_cli import memo
from tests.integration.test_http_api import Server
from tests.security.test_sync_ingress import record_text

DEEP = ("---\nid: prompt-deep1\nkind: prompt\nproject: acme\ncreated: '2025-01-07T09:00:00.000Z'\n"
        "updated: '2025-01-07T09:00:00.000Z'\na: " + "[" * 50_000 + "]" * 50_000 + "\n---\nbody\n")


def test_a_deeply_nested_pushed_frontmatter_is_refused_and_the_daemon_keeps_serving(tmp_path):
    server = Server(tmp_path / "team", "--mcp-port", "0")
    try:
        started = time.perf_counter()
        status, _, text = server.request("/api/sync/records", data={"records": [{"id": "prompt-deep1", "text": DEEP}]})
        assert status == 200 and time.perf_counter() - started < 1.0
        [result] = json.loads(text)["results"]
        assert result["outcome"] == "refused" and "nests deeper than 32 levels" in result["reason"]
        assert server.request("/api/sessions")[0] == 200 and server.proc.poll() is None
    finally:
        server.stop()


def test_a_deeply_nested_hand_edited_file_is_reported_and_every_command_still_runs(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--project", "acme", "--body", "a normal turn", vault=vault)
    bad = vault / "projects/acme/prompts/prompt-deep1.md"
    bad.write_text(DEEP)
    listed = memo("--json", "prompt", "list", "--all", vault=vault)
    assert [item["body"] for item in json.loads(listed.stdout)["items"]] == ["a normal turn"]
    rebuilt = memo("--json", "reindex", vault=vault, check=False)
    assert rebuilt.returncode in (0, 1) and "nests deeper than 32 levels" in rebuilt.stdout + rebuilt.stderr
    assert bad.read_text() == DEEP


def _pushed_with_frontmatter(tmp_path, extra: str) -> str:
    """The stored text of a pushed turn whose frontmatter holds ``extra`` lines (applied)."""
    store = VaultStore(Settings(vault_root=tmp_path / "team"))
    text = record_text().replace("tags: []\n", "tags: []\n" + extra)
    [result] = sync.apply_incoming(store, [{"id": "prompt-s9-t1", "text": text}])
    assert result["outcome"] == "applied"
    return (store.root / "projects/web/prompts/prompt-s9-t1.md").read_text()


def test_a_secret_in_a_frontmatter_key_is_redacted(tmp_path):
    stored = _pushed_with_frontmatter(tmp_path, "AKIAIOSFODNN7EXAMPLE: x\nextra: {'password=hunter2hunter2': 2}\n")
    assert "AKIAIOSFODNN7EXAMPLE" not in stored and "hunter2hunter2" not in stored and "[REDACTED:" in stored


@pytest.mark.parametrize("old, new, reason", [
    ("id: {id}", "id: session-evil3", "is not the id of session"),
    ("turn: 1", "turn: 2", "is not the id of turn 2 of s9"),
])
def test_a_pushed_record_must_carry_the_id_its_session_and_turn_give(tmp_path, old, new, reason):
    store = VaultStore(Settings(vault_root=tmp_path / "team"))
    text = record_text()
    if "session" in new:
        text = text.replace("id: prompt-s9-t1", "id: session-evil3").replace("kind: prompt", "kind: session") \
            .replace("sessionId: s9", "sessionId: s9\nstartTime: '2026-11-30T10:00:00.000Z'")
        record_id = "session-evil3"
    else:
        text, record_id = text.replace(old, new), "prompt-s9-t1"
    [result] = sync.apply_incoming(store, [{"id": record_id, "text": text}])
    assert result["outcome"] == "refused" and reason in result["reason"]


def test_a_pushed_body_over_the_local_limit_is_refused(tmp_path):
    store = VaultStore(Settings(vault_root=tmp_path / "team"))
    [result] = sync.apply_incoming(store, [{"id": "prompt-s9-t1", "text": record_text(body="x" * 1_200_000)}])
    assert result["outcome"] == "refused" and "body" in result["reason"] and "1000000 bytes" in result["reason"]


def test_an_id_of_another_project_is_another_record_and_a_refused_one_stops_nothing(tmp_path):
    store = VaultStore(Settings(vault_root=tmp_path / "team"))
    record_prompt(store, RecordPromptRequest(session_id="s9", project="acme", body="the daemon's own turn"))
    same_id = record_text()  # prompt-s9-t1 of project web: acme's turn of the same id is another record
    broken = record_text(record_id="prompt-s7-t1").replace("sessionId: s9", "sessionId: s8")  # id of another turn
    other = record_text(record_id="prompt-s8-t1").replace("sessionId: s9", "sessionId: s8")
    results = sync.apply_incoming(store, [{"id": "prompt-s9-t1", "project": "web", "text": same_id},
                                          {"id": "prompt-s7-t1", "project": "../web", "text": broken},
                                          {"id": "prompt-s8-t1", "text": other}])
    assert [(r["project"] if "project" in r else None, r["outcome"]) for r in results] == [
        ("web", "applied"), (None, "refused"), ("web", "applied")]  # an unsafe project name is not echoed
    assert "is not the id of turn 1 of s8" in results[1]["reason"]
    assert (store.root / "projects/web/prompts/prompt-s8-t1.md").exists()
    assert "the daemon's own turn" in (store.root / "projects/acme/prompts/prompt-s9-t1.md").read_text()
    assert (store.root / "projects/web/prompts/prompt-s9-t1.md").exists()


def test_a_percent_encoded_token_key_and_a_non_utf8_query_stay_out_of_the_log(tmp_path):
    token = "encoded-k3y-t0ken-5511"
    server = Server(tmp_path / "vault", "--host", "0.0.0.0", "--token", token, "--mcp-port", "0")
    try:
        assert server.request(f"/api/prompts?tok%65n={token}&bogus=1")[0] == 400
        assert server.request(f"/api/nothing?%74oken={token}")[0] == 404
        status, _, text = server.request(f"/api/prompts?query=%ed%a0%80&token={token}")
        assert status == 400 and json.loads(text)["error"].startswith("Invalid request")
    finally:
        server.proc.terminate()
        server.proc.wait(10)
    log = server.proc.stderr.read()
    server.proc.stderr.close()
    assert "/api/nothing?%74oken=" in log and token not in log


def test_bidirectional_overrides_never_reach_the_terminal():
    from memo_analytics.interfaces.cli.common import terminal_text

    assert terminal_text("invoice\u202egnp.exe \u2066x\u2069 ok") == "invoicegnp.exe x ok"


def test_a_password_in_the_daemon_url_is_sent_as_basic_auth_never_as_a_host_name(tmp_path):
    url, header = without_userinfo("http://ana:hunter2pw@127.0.0.1:18124/team")
    assert url == "http://127.0.0.1:18124/team" and header == "Basic YW5hOmh1bnRlcjJwdw=="
    received: dict = {}
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    import threading

    class Daemon(BaseHTTPRequestHandler):
        def do_POST(self):
            received["host"], received["auth"] = self.headers["Host"], self.headers["Authorization"]
            self.rfile.read(int(self.headers["Content-Length"]))
            body = b'{"results": []}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Daemon)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        port = httpd.server_address[1]
        answer = sync._post(f"http://ana:hunter2pw@127.0.0.1:{port}/api/sync/records", {"records": []}, None, 5)
        assert answer == {"results": []}
        assert received == {"host": f"127.0.0.1:{port}", "auth": "Basic YW5hOmh1bnRlcjJwdw=="}
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_raw_http_status_of_a_refused_host_is_421_even_for_http_1_0(tmp_path):
    server = Server(tmp_path / "vault", "--mcp-port", "0")
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.putrequest("GET", "/api/prompts?crossProject=true", skip_host=True)
        conn.putheader("Host", "evil.example")
        conn.endheaders()
        assert conn.getresponse().status == 421
    finally:
        server.stop()


def test_a_session_file_edited_in_place_bills_as_edited(tmp_path):
    """An editor that rewrites a file in place leaves its folder's time unchanged; billing
    reads still see the edit (and take it in once)."""
    from memo_analytics.analytics.activity import ActivityRequest, activity_report

    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
    from memo_analytics.services.sessions import end_session, start_session

    start_session(store, StartSessionRequest(session_id="a1", project="web", client="Acme",
                                             start_time="2026-11-30T09:00:00Z"))
    end_session(store, EndSessionRequest(session_id="a1", until="2026-11-30T09:45:00Z"))
    assert activity_report(store, ActivityRequest(projects=None)).total_duration_minutes == 45
    path = store.root / "projects/web/sessions/session-a1.md"
    folder_time = path.parent.stat().st_mtime_ns
    time.sleep(0.01)
    with open(path, "r+", encoding="utf-8") as handle:  # in place: same inode, folder time unchanged
        # its end and length together (a length alone that is not its times is refused)
        text = handle.read().replace("durationMinutes: 45", "durationMinutes: 50").replace(
            "endTime: '2026-11-30T09:45:00.000Z'", "endTime: '2026-11-30T09:50:00.000Z'")
        handle.seek(0)
        handle.write(text)
        handle.truncate()
    assert path.parent.stat().st_mtime_ns == folder_time
    fresh = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    assert activity_report(fresh, ActivityRequest(projects=None)).total_duration_minutes == 50
    assert fresh.catch_up_edits("session") == 0  # taken in once


# ---------------------------------------------------------------- the second round


EXPLICIT_KEYS = "---\nid: prompt-evil-t1\nkind: prompt\nproject: p1\n" + "? " * 100_000 + "x\n---\nbody\n"


def test_deep_explicit_key_nesting_is_refused_over_sync_and_in_a_hand_edited_file(tmp_path):
    store = VaultStore(Settings(vault_root=tmp_path / "team"))
    [result] = sync.apply_incoming(store, [{"id": "prompt-evil-t1", "text": EXPLICIT_KEYS}])
    assert result["outcome"] == "refused" and ("nests deeper" in result["reason"] or "limit" in result["reason"])
    vault = tmp_path / "v"
    memo("prompt", "record", "--project", "p1", "--body", "a normal turn", vault=vault)
    bad = vault / "projects/p1/prompts/prompt-evil-t1.md"
    bad.write_text(EXPLICIT_KEYS)
    rebuilt = memo("reindex", vault=vault, check=False)
    assert rebuilt.returncode in (0, 1) and "Segmentation" not in rebuilt.stderr and bad.read_text() == EXPLICIT_KEYS
    assert "a normal turn" in memo("prompt", "list", "--all", vault=vault).stdout


@pytest.mark.parametrize("record_id, edit, reason", [
    ("session-s1", lambda t: t.replace("id: prompt-s9-t1", "id: session-s1").replace("turn: 1", "turn: null"),
     "both sessionId and turn"),
    ("prompt-s1-t7", lambda t: t.replace("id: prompt-s9-t1", "id: prompt-s1-t7").replace("turn: 1", "turn: null"),
     "both sessionId and turn"),
    ("prompt-zz-t3", lambda t: t.replace("id: prompt-s9-t1", "id: prompt-zz-t3").replace("sessionId: s9\nturn: 1\n",
                                                                                         ""),
     "not the id of a prompt without a session"),
    ("decision-x", lambda t: t.replace("id: prompt-s9-t1", "id: decision-x").replace("sessionId: s9\nturn: 1\n", ""),
     "not the id of a prompt"),
])
def test_a_pushed_prompt_cannot_take_another_records_id(tmp_path, record_id, edit, reason):
    store = VaultStore(Settings(vault_root=tmp_path / "team"))
    [result] = sync.apply_incoming(store, [{"id": record_id, "text": edit(record_text())}])
    assert result["outcome"] == "refused" and reason in result["reason"], result


def test_the_value_of_a_secret_named_frontmatter_key_is_hidden(tmp_path):
    stored = _pushed_with_frontmatter(tmp_path, "password: hunter2hunter2\nextra: {api_key: plainvalue1}\n")
    assert "hunter2hunter2" not in stored and "plainvalue1" not in stored
    assert "password: '[REDACTED:secret-assignment]'" in stored


@pytest.mark.parametrize("status, end", [("open", "'2026-11-30T09:30:00.000Z'"), ("abandoned", "'2026-11-30T09:30:00.000Z'"),
                                         ("completed", "null")])
def test_a_pushed_session_is_completed_exactly_when_it_has_ended(tmp_path, status, end):
    from tests.security.test_sync_ingress import SESSION

    store = VaultStore(Settings(vault_root=tmp_path / "team"))
    text = SESSION.format(start="2026-11-30T09:00:00.000Z", end="X", minutes=30) \
        .replace("status: completed", f"status: {status}").replace("endTime: 'X'", f"endTime: {end}")
    if end == "null":
        text = text.replace("durationMinutes: 30\n", "")
    [result] = sync.apply_incoming(store, [{"id": "session-s9", "text": text}])
    # an open or abandoned one with an end (the push's rule); a completed one without (the record's own)
    said = "endTime: missing on a completed session" if end == "null" else "completed exactly when it has ended"
    assert result["outcome"] == "refused" and said in result["reason"]


def test_parquet_export_never_writes_through_a_symlink_nor_deletes_what_it_did_not_write(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--project", "p1", "--body", "a turn", vault=vault)
    important = tmp_path / "important"
    important.mkdir()
    (important / "a.txt").write_text("keep")
    (important / "_memo_export.json").write_text("{}")
    link = tmp_path / "out"
    link.symlink_to(important)
    refused = memo("export", "parquet", str(link), vault=vault, check=False)
    assert refused.returncode == 1 and "is a symbolic link" in refused.stderr
    refused = memo("export", "parquet", str(important), vault=vault, check=False)
    assert refused.returncode == 1 and "holds 'a.txt', which no export wrote" in refused.stderr
    assert (important / "a.txt").read_text() == "keep"
    lake = tmp_path / "lake"
    memo("export", "parquet", str(lake), vault=vault)
    memo("export", "parquet", str(lake), vault=vault)  # a previous export is replaced
    assert sorted(p.name for p in lake.iterdir()) == ["_memo_export.json", "deliverables", "prompts", "sessions"]


def test_memo_demo_never_writes_through_a_symlinked_marker(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    out = tmp_path / "demo"
    out.mkdir()
    (out / ".memo-demo").symlink_to(notes)
    refused = memo("demo", "--out", str(out), check=False)
    assert refused.returncode == 1 and "symbolic link" in refused.stderr and notes.read_text() == "my notes"


def test_a_percent_or_quote_laden_token_stays_out_of_log_lines():
    from memo_analytics.interfaces.http import redact_log_text

    for line in ('400 GET /api/p?token[]=SECRET123456&x=1', '400 GET /api/p?token=SECRET"TOKEN123456 (1.1.1.1)'):
        assert "SECRET" not in redact_log_text(line) and "TOKEN123456" not in redact_log_text(line)


def _decision(record_id: str, extra: str = "") -> str:
    return (f"---\nid: {record_id}\nkind: decision\nproject: web\ncreated: '2026-06-01T09:00:00.000Z'\n"
            f"updated: '2026-06-01T09:00:00.000Z'\n{extra}---\nwe keep the queue\n")


def test_one_pushed_record_the_index_cannot_store_is_refused_alone_and_the_rest_applied(tmp_path):
    """A pushed decision whose ``model`` is a table (or whose ``turn`` no SQLite integer holds)
    is refused with the key named; the records beside it in the same push are applied — a
    push is one batch, and one record must not give it up."""
    store = VaultStore(Settings(vault_root=tmp_path / "team"))
    results = sync.apply_incoming(store, [{"id": "decision-a", "text": _decision("decision-a")},
                                          {"id": "decision-b", "text": _decision("decision-b", "model:\n  a: 1\n")},
                                          {"id": "decision-c", "text": _decision("decision-c", f"turn: {10 ** 22}\n")},
                                          {"id": "decision-d", "text": _decision("decision-d")}])
    assert [(r["id"], r["outcome"]) for r in results] == [("decision-a", "applied"), ("decision-b", "refused"),
                                                         ("decision-c", "refused"), ("decision-d", "applied")]
    assert "model: must be one value, not a table" in results[1]["reason"]
    assert "turn:" in results[2]["reason"] and "out of range" in results[2]["reason"]
    assert sorted(r[0] for r in store.conn.execute("SELECT id FROM records")) == ["decision-a", "decision-d"]
    store.close()


def test_a_hand_written_record_the_index_cannot_store_is_skipped_and_every_command_still_runs(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--project", "web", "--body", "a normal turn", vault=vault)
    bad = vault / "projects/web/decisions/decision-odd.md"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text(_decision("decision-odd", "model:\n  a: 1\n"))
    listed = memo("--json", "prompt", "list", "--all", vault=vault)
    assert [item["body"] for item in json.loads(listed.stdout)["items"]] == ["a normal turn"]
    rebuilt = memo("--json", "reindex", vault=vault, check=False)
    assert "model: must be one value, not a table" in rebuilt.stdout + rebuilt.stderr
    assert bad.read_text() == _decision("decision-odd", "model:\n  a: 1\n")


def test_a_fifo_named_like_a_record_is_no_record_and_no_command_waits_on_it(tmp_path):
    """A FIFO ``prompt-x.md`` in a record folder (a hostile or broken sync) would block whoever
    reads it: the catch-up and the rebuild report it as a file they cannot use, and every command
    answers."""
    import os
    import subprocess
    import sys

    vault = tmp_path / "v"
    memo("prompt", "record", "--project", "acme", "--body", "a normal turn", vault=vault)
    os.mkfifo(vault / "projects/acme/prompts/prompt-fifo-t1.md")
    env = {**os.environ, "MEMO_VAULT": str(vault), "HOME": str(tmp_path), "MEMO_CONFIG": str(tmp_path / "none.toml")}
    for args in (["--json", "prompt", "list", "--all"], ["--json", "reindex"]):
        ran = subprocess.run([sys.executable, "-m", "memo_analytics", *args], capture_output=True, text=True, env=env,
                             timeout=120)
        assert ran.returncode == 0, ran.stderr
    skipped = json.loads(ran.stdout)["skipped"]
    assert [(Path(s["path"]).name, s["reason"]) for s in skipped] == [("prompt-fifo-t1.md", "not a regular file (a FIFO)")]
    listed = subprocess.run([sys.executable, "-m", "memo_analytics", "--json", "prompt", "list", "--all"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert [item["body"] for item in json.loads(listed.stdout)["items"]] == ["a normal turn"]


def test_a_file_whose_id_was_edited_to_another_records_never_overwrites_that_record(tmp_path):
    """``session-b.md`` edited to say ``id: session-c``: ending b wrote over session c's file (its
    summary lost, exit 0). The file is now named as naming another record and left as it is;
    session c keeps every byte."""
    vault = tmp_path / "v"
    for name in ("b", "c"):
        memo("session", "start", name, "--project", "shop", "--client", "Acme", "--start-time",
             "2026-03-02T09:00:00Z", vault=vault)
        memo("session", "end", name, "--until", "2026-03-02T10:00:00Z", "--summary", f"summary of {name}", vault=vault)
    sessions = vault / "projects" / "shop" / "sessions"
    edited = (sessions / "session-b.md").read_bytes().replace(b"id: session-b\n", b"id: session-c\n")
    (sessions / "session-b.md").write_bytes(edited)
    c_before = (sessions / "session-c.md").read_bytes()
    ran = memo("session", "end", "b", "--project", "shop", vault=vault, check=False)
    assert ran.returncode == 1
    assert ran.stderr.strip().endswith(
        f"error: Cannot parse {sessions / 'session-b.md'}: id: session-c is not the id of session b (session-b); "
        "give the file its session's id and name, then memo reindex")
    assert (sessions / "session-c.md").read_bytes() == c_before
    assert (sessions / "session-b.md").read_bytes() == edited


@pytest.mark.parametrize("session_id", ["fix.conflict-in-merge", "x.conflict-20260101T000000Z-deadbeef",
                                        "A.CONFLICT-b"])
def test_an_id_holding_the_conflict_mark_is_refused_before_anything_is_written(tmp_path, session_id):
    """A record ``fix.conflict-in-merge`` was written, billed, then dropped by every reindex (its
    file name read as a kept sync conflict version); the digest even told to delete it."""
    vault = tmp_path / "v"
    ran = memo("session", "start", session_id, "--project", "shop", vault=vault, check=False)
    assert (ran.returncode, ran.stderr.strip()) == (
        1, "error: Invalid sessionId: must not contain '.conflict-': memo names the versions a sync conflict keeps "
           "so, and they are never read as records")
    assert not (vault / "projects").exists()
    from memo_analytics.domain.ids import slugify

    assert slugify("notes.conflict-draft") == "notes-conflict-draft"  # an importer's ids never hold it either


def test_the_index_catch_up_names_the_files_it_skipped_and_why():
    """'2 files skipped' named none of them (found by a helper)."""
    from memo_analytics.domain.errors import CorruptRecordError
    from memo_analytics.index.freshness import ReconcileResult

    one = ReconcileResult(removed=1, skipped=[CorruptRecordError("/v/p/sessions/session-b.md", "id 'session-c' does "
                                                                                              "not match the file name")])
    assert one.line() == ("0 added, 0 updated, 1 removed, 1 file skipped (/v/p/sessions/session-b.md: id 'session-c' "
                          "does not match the file name)")
    many = ReconcileResult(skipped=[CorruptRecordError(f"/v/{n}.md", "broken") for n in range(5)])
    assert many.line().endswith("5 files skipped (/v/0.md: broken; /v/1.md: broken; /v/2.md: broken; and 2 more "
                                "(memo reindex lists them all))")


def test_a_link_planted_in_a_repositorys_specstory_folder_is_not_read(tmp_path):
    """Found by a security tester: a cloned repository's ``.specstory/history/`` held a link to a
    file of the person's (``~/private-notes.md``, in SpecStory's shape): its text was imported into
    the vault (and a hybrid laptop pushes it). A link out of its ``.specstory`` folder is not read,
    and said; a link within it is."""
    import subprocess

    repo = tmp_path / "evilrepo"
    history = repo / ".specstory" / "history"
    history.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    text = ("<!-- Generated by SpecStory -->\n\n# notes (2025-05-01 10:00:00)\n\n_**User**_\n\n{}\n\n---\n")
    private = tmp_path / "private-notes.md"
    private.write_text(text.format("PRIVATE NOTE OUTSIDE THE REPO"), encoding="utf-8")
    (history / "2025-05-01_10-00-link.md").symlink_to(private)
    (history / "2025-05-02_10-00-own.md").write_text(text.format("the repository's own chat").replace(
        "2025-05-01", "2025-05-02"), encoding="utf-8")
    (history / "2025-05-03_10-00-inside.md").symlink_to(history / "2025-05-02_10-00-own.md")
    ran = memo("import", "specstory", str(repo / ".specstory"), vault=tmp_path / "v", check=False)
    assert "2025-05-01_10-00-link.md: a link out of its .specstory folder" in ran.stderr, ran.stderr
    held = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "v").rglob("prompt-*.md"))
    assert "PRIVATE NOTE" not in held and "the repository's own chat" in held


@pytest.mark.parametrize("linked", [".specstory", ".specstory/history"])
def test_a_repositorys_specstory_folder_linked_elsewhere_is_not_read(tmp_path, linked):
    """Found by a security tester: a link of the file was refused, but a cloned repository's
    ``.specstory`` (or its ``history``) linked to another repository's private history was
    followed by ``memo import auto``, and that history filed under the hostile repository."""
    import subprocess

    private = tmp_path / "private" / ".specstory" / "history"
    private.mkdir(parents=True)
    (private / "2025-04-29_13-36-private.md").write_text(
        "<!-- Generated by SpecStory -->\n\n# secret (2025-04-29 13:36:00)\n\n_**User**_\n\nPRIVATE PLAN\n\n---\n",
        encoding="utf-8")
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    subprocess.run(["git", "init", "-q", str(hostile)], check=True)
    if linked == ".specstory":
        (hostile / ".specstory").symlink_to(private.parent)
    else:
        (hostile / ".specstory").mkdir()
        (hostile / ".specstory" / "history").symlink_to(private)
    home = tmp_path / "home"
    home.mkdir()
    ran = memo("import", "auto", vault=tmp_path / "v", env={"HOME": str(home)}, cwd=hostile, check=False)
    assert "2025-04-29_13-36-private.md: a link out of its .specstory folder" in ran.stderr, ran.stderr
    held = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "v").rglob("*.md"))
    assert "PRIVATE PLAN" not in held
    # the private repository's own import reads it, as ever
    memo("import", "specstory", str(private.parent), vault=tmp_path / "v2")
    assert "PRIVATE PLAN" in "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "v2").rglob("prompt-*.md"))
