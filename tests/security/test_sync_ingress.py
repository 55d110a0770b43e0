"""One ingress path (issue 11 point 4) and sync that converges (points 6 and 8), against a real
`memo serve` daemon on loopback: a pushed record passes the validation, size limits, capture-
ignore and secret redaction of local writes; a YAML alias bomb is refused in well under a
second; request bodies have size and nesting limits; one slow request does not hold up the
others; a push whose answer was lost converges; sync errors are one line, kept and cleared."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from memo_analytics.config import HybridSync, Settings
from memo_analytics.domain.clock import to_iso, utcnow
from memo_analytics.domain.records import RecordKind
from memo_analytics.services import sync
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import RecordPromptRequest
from memo_analytics.runtime import Runtime
from memo_analytics.services.store import VaultStore
from memo_analytics.vault.conflicts import conflict_files
from memo_analytics.vault.lock import vault_lock
from tests.inprocess import memo
from tests.integration.test_http_api import Server

AWS = "AKIAIOSFODNN7EXAMPLQ"
GHP = "ghp_" + "R8nq2LwP4kXz7TmV1sYc9HdJ3eFb6GaU0iOp"
PASSWORD = "Tr0ub4dor&3x!"

RECORD = """---
id: {id}
kind: prompt
project: web
status: recorded
created: '2026-11-30T10:00:00.000Z'
updated: '{updated}'
source: mcp
ide: generic
sessionId: s9
turn: 1
summary: deploy with {aws}
linkedPaths: []
tags: []
---
{body}
"""


def record_text(record_id="prompt-s9-t1", updated="2026-11-30T10:00:00.000Z", body=None):
    body = body or f"Use {AWS} and {GHP}, then run psql with password={PASSWORD} against ./secrets/prod.env"
    return RECORD.format(id=record_id, updated=updated, aws=AWS, body=body)


@pytest.fixture
def daemon(tmp_path):
    server = Server(tmp_path / "team", "--mcp-port", "0")
    yield tmp_path / "team", server
    server.stop()


def _post(server, path, payload: bytes, content_type="application/json", timeout=30):
    request = urllib.request.Request(server.base + path, data=payload, method="POST",
                                     headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_a_pushed_record_is_redacted_like_a_local_write_everywhere(tmp_path, daemon, monkeypatch):
    team, server = daemon
    status, _, text = server.request("/api/sync/records", data={"records": [
        {"id": "prompt-s9-t1", "text": record_text(), "base": None}]})
    assert status == 200 and json.loads(text)["results"] == [{"id": "prompt-s9-t1", "project": "web", "outcome": "applied"}]
    stored = (team / "projects/web/prompts/prompt-s9-t1.md").read_text()
    assert "[REDACTED:aws-access-key]" in stored and "[REDACTED:github-token]" in stored
    assert "summary: deploy with [REDACTED:aws-access-key]" in stored
    # nowhere in the vault (record, views, index, its WAL), nor what the API answers
    everything = _all_bytes(team)
    for secret in (AWS, GHP, PASSWORD):
        assert secret.encode() not in everything
        assert secret not in server.request("/api/prompts?crossProject=true")[2]
    # nor in a Parquet export of the daemon's vault
    from memo_analytics.analytics.parquet import export_parquet

    out = tmp_path / "parquet"
    export_parquet(VaultStore(Settings(vault_root=team)), out)
    parquet = _all_bytes(out)
    assert parquet and AWS.encode() not in parquet and GHP.encode() not in parquet


def test_capture_ignore_globs_apply_to_pushed_records(tmp_path):
    store = VaultStore(Settings(vault_root=tmp_path / "team", capture_ignore=["secrets/**"]))
    [result] = sync.apply_incoming(store, [{"id": "prompt-s9-t1", "text": record_text(), "base": None}])
    assert result["outcome"] == "applied"
    stored = (store.root / "projects/web/prompts/prompt-s9-t1.md").read_text()
    assert "./secrets/prod.env" not in stored and "[IGNORED PATH]" in stored


@pytest.mark.parametrize("text, reason", [
    (record_text(body="x" * 1_400_000), "the limit is"),
    (record_text(body="a\x00b"), "NUL"),
    (record_text().replace("kind: prompt", "kind: exploit"), "kind"),
    (record_text().replace("project: web", "project: ../../etc"), "project"),
    (record_text(record_id="prompt-other"), "does not match"),
    ("not a record", "no YAML frontmatter"),
])
def test_an_invalid_pushed_record_is_refused_with_one_line_and_nothing_written(tmp_path, text, reason):
    store = VaultStore(Settings(vault_root=tmp_path / "team"))
    [result] = sync.apply_incoming(store, [{"id": "prompt-s9-t1", "text": text, "base": None}])
    assert result["outcome"] == "refused" and reason in result["reason"] and "\n" not in result["reason"]
    assert not (store.root / "projects").exists() or not list((store.root / "projects").rglob("*.md"))


BOMB = """---
id: prompt-s9-t1
kind: prompt
project: web
created: '2026-11-30T10:00:00.000Z'
updated: '2026-11-30T10:00:00.000Z'
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: [*f,*f,*f,*f,*f,*f,*f,*f,*f]
---
boom
"""


def test_a_yaml_alias_bomb_is_refused_in_under_a_second_and_writes_nothing(daemon):
    team, server = daemon
    assert len(BOMB.encode()) < 600
    started = time.perf_counter()
    status, _, text = server.request("/api/sync/records", data={"records": [{"id": "prompt-s9-t1", "text": BOMB}]})
    elapsed = time.perf_counter() - started
    assert status == 200 and elapsed < 1.0
    [result] = json.loads(text)["results"]
    assert result["outcome"] == "refused" and "YAML anchors or aliases" in result["reason"]
    assert not (team / "projects/web/prompts/prompt-s9-t1.md").exists()


def test_a_hand_edited_record_with_aliases_is_reported_and_left_untouched(tmp_path):
    from memo_analytics.services.maintenance import reindex

    store = VaultStore(Settings(vault_root=tmp_path / "v"))
    record_prompt(store, RecordPromptRequest(project="web", session_id="s1", body="a normal turn"))
    path = store.root / "projects/web/prompts/prompt-s9-t1.md"
    path.write_text(BOMB)
    before = path.read_bytes()
    started = time.perf_counter()
    result = reindex(store)
    assert time.perf_counter() - started < 5
    assert path.read_bytes() == before
    skipped = json.dumps(result.__dict__ if hasattr(result, "__dict__") else result, default=str)
    assert "prompt-s9-t1" in skipped and "anchors or aliases" in skipped


def test_request_bodies_have_a_nesting_and_a_size_limit(daemon):
    _, server = daemon
    deep = b"[" * 100_000 + b"]" * 100_000
    status, text = _post(server, "/api/actions/record", deep)
    assert status == 400 and "nested deeper than 32 levels" in json.loads(text)["error"]
    deep_object = b'{"records": ' + b"[" * 40 + b"]" * 40 + b"}"
    status, text = _post(server, "/api/sync/records", deep_object)
    assert status == 400 and "nested deeper" in json.loads(text)["error"]
    big = json.dumps({"body": "x" * 5_000_000, "projectId": "web"}).encode()
    status, text = _post(server, "/api/actions/record", big)
    assert status == 413 and "at most" in json.loads(text)["error"]
    assert server.get_json("/api/prompts?crossProject=true")[1]["total"] == 0


def test_one_slow_request_does_not_hold_up_the_others(daemon):
    """A write waits on the vault lock (held here, in another process); reads answer meanwhile."""
    team, server = daemon
    server.request("/api/actions/record", data={"body": "first", "projectId": "web"})
    lock_path = VaultStore(Settings(vault_root=team)).layout.lock_path
    lock = vault_lock(lock_path)
    lock.acquire()
    answers: dict = {}
    try:
        writer = threading.Thread(target=lambda: answers.setdefault(
            "write", server.request("/api/actions/record", data={"body": "second", "projectId": "web"})))
        writer.start()
        time.sleep(0.5)
        started = time.perf_counter()
        status, body = server.get_json("/api/prompts?crossProject=true")
        read_seconds = time.perf_counter() - started
        assert status == 200 and body["total"] == 1 and read_seconds < 2.0
        assert writer.is_alive()  # still waiting on the lock
    finally:
        lock.release()
    writer.join(30)
    assert answers["write"][0] == 200
    assert server.get_json("/api/prompts?crossProject=true")[1]["total"] == 2


# ---------------------------------------------------------------- convergence and errors


class _LosingProxy:
    """Forwards a push to the daemon, then drops the connection without the answer: the
    daemon applied the batch, the pusher never hears of it (a daemon killed mid-answer)."""

    def __init__(self, target: str):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                data = self.rfile.read(int(self.headers["Content-Length"]))
                request = urllib.request.Request(target + self.path, data=data, method="POST",
                                                 headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=30) as response:
                    answer = response.read()
                if not json.loads(data)["records"]:  # the pusher asks which daemon this is: answered
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                    return
                proxy.forwarded += 1
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True

            def log_message(self, *args):
                pass

        self.forwarded = 0
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self):
        self.http.shutdown()
        self.http.server_close()


def _pusher(tmp_path, url) -> VaultStore:
    return Runtime(Settings(vault_root=tmp_path / "laptop", timezone="UTC", mode="hybrid",
                            hybrid=HybridSync(remote_url=url, debounce_ms=0))).store()


def _turn(store, body, turn=None):
    return record_prompt(store, RecordPromptRequest(project="web", session_id="s1", body=body, turn=turn))


def _rewrite(store, record_id, body):
    """A new version of a turn, as a hand edit or a later write makes it (``updated`` now)."""
    meta, _ = store.read("web", RecordKind.PROMPT, record_id)
    meta["updated"] = to_iso(utcnow())
    store.upsert(RecordKind.PROMPT, meta, body)


def test_a_push_whose_answer_was_lost_converges_without_a_conflict(tmp_path, daemon):
    team, server = daemon
    laptop = _pusher(tmp_path, server.base)
    _turn(laptop, "version one")
    assert sync.push(laptop)["error"] is None
    _rewrite(laptop, "prompt-s1-t1", "version two")
    proxy = _LosingProxy(server.base)
    try:
        laptop.settings.hybrid.remote_url = proxy.url
        lost = sync.push(laptop, force=True)
    finally:
        proxy.close()
    assert proxy.forwarded == 1 and lost["error"] and lost["pending"] == 1
    assert "version two" in (team / "projects/web/prompts/prompt-s1-t1.md").read_text()
    time.sleep(0.01)
    _rewrite(laptop, "prompt-s1-t1", "version three")
    laptop.settings.hybrid.remote_url = server.base
    again = sync.push(laptop, force=True)
    assert again["error"] is None and [r["outcome"] for r in again["results"]] == ["applied"]
    live = (team / "projects/web/prompts/prompt-s1-t1.md").read_text()
    assert live == (laptop.root / "projects/web/prompts/prompt-s1-t1.md").read_text() and "version three" in live
    assert conflict_files(team / "projects") == []
    assert sync.status(laptop)["pending"] == 0


def test_when_both_sides_changed_the_newer_wins_and_the_other_is_kept(tmp_path, daemon):
    team, server = daemon
    laptop = _pusher(tmp_path, server.base)
    _turn(laptop, "version one")
    sync.push(laptop)
    daemon_store = VaultStore(Settings(vault_root=team))
    _rewrite(daemon_store, "prompt-s1-t1", "edited on the daemon")
    time.sleep(0.01)
    _rewrite(laptop, "prompt-s1-t1", "edited on the laptop")
    result = sync.push(laptop, force=True)
    assert [r["outcome"] for r in result["results"]] == ["applied, older kept as conflict"]
    assert "edited on the laptop" in (team / "projects/web/prompts/prompt-s1-t1.md").read_text()
    [kept] = conflict_files(team / "projects")
    assert "edited on the daemon" in kept.read_text()


def test_a_file_the_daemon_holds_but_never_indexed_is_indexed_by_the_next_push(tmp_path, daemon):
    team, server = daemon
    laptop = _pusher(tmp_path, server.base)
    _turn(laptop, "indexed late")
    text = (laptop.root / "projects/web/prompts/prompt-s1-t1.md").read_text()
    # the daemon renamed the file into place and died before indexing it
    target = team / "projects/web/prompts/prompt-s1-t1.md"
    server.request("/api/actions/record", data={"body": "make the vault", "projectId": "web"})
    target.parent.mkdir(parents=True, exist_ok=True)
    folder_time = target.parent.stat().st_mtime_ns
    target.write_text(text)
    # within one clock tick of the daemon's last write the folder's time does not move, so
    # nothing on open can tell: only the push itself can take the file in
    os.utime(target.parent, ns=(target.parent.stat().st_atime_ns, folder_time))
    assert all(i["id"] != "prompt-s1-t1" for i in server.get_json("/api/prompts?crossProject=true")[1]["items"])
    result = sync.push(laptop, force=True)
    assert [r["outcome"] for r in result["results"]] == ["unchanged"]
    ids = [i["id"] for i in server.get_json("/api/prompts?crossProject=true")[1]["items"]]
    assert "prompt-s1-t1" in ids


class _NotHttp:
    """A server that answers every connection with bytes that are not HTTP."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\nnot an http answer\r\n")
            conn.close()

    def close(self):
        self.sock.close()


def test_sync_errors_are_one_line_kept_in_status_and_cleared_by_success(tmp_path, daemon):
    team, server = daemon
    bogus = _NotHttp()
    config = tmp_path / "config.toml"
    config.write_text(f'mode = "hybrid"\n[hybrid]\nremoteUrl = "{bogus.url}"\ndebounceMs = 0\n')
    env = {"MEMO_CONFIG": str(config)}
    vault = tmp_path / "laptop"
    try:
        memo("prompt", "record", "--project", "web", "--body", "x", vault=vault, env=env)
        pushed = memo("sync", "push", vault=vault, env=env, check=False)
        assert pushed.returncode == 1 and pushed.exception is None
        output = pushed.stdout + pushed.stderr
        assert "Traceback" not in output and "error:" in output
        state = json.loads(memo("--json", "sync", "status", vault=vault, env=env).stdout)
        assert state["lastError"] and "\n" not in state["lastError"] and state["pending"] == 1
    finally:
        bogus.close()
    config.write_text(f'mode = "hybrid"\n[hybrid]\nremoteUrl = "{server.base}"\ndebounceMs = 0\n')
    pushed = memo("sync", "push", vault=vault, env=env, check=False)
    assert pushed.returncode == 0, pushed.stderr
    state = json.loads(memo("--json", "sync", "status", vault=vault, env=env).stdout)
    assert state["lastError"] is None and state["lastErrorAt"] is None and state["pending"] == 0


def test_a_daemon_killed_mid_push_converges_after_its_restart(tmp_path):
    """SIGKILL of the daemon while it applies a batch: the group's files were being written, the
    pusher heard nothing. After more local edits and a restart, every live record is the pusher's newest
    version and no conflict file exists (nothing changed on the daemon's side)."""
    import os
    import signal

    team = tmp_path / "team"
    server = Server(team, "--mcp-port", "0")
    laptop = Runtime(Settings(vault_root=tmp_path / "laptop", timezone="UTC", mode="hybrid",
                              hybrid=HybridSync(remote_url=server.base, debounce_ms=0, batch_size=500))).store()
    padding = "lorem ipsum dolor sit amet " * 2000  # ~54 kB a record: the batch takes a while to apply
    with laptop.deferred_views():
        for turn in range(1, 161):
            _turn(laptop, f"turn {turn} {padding}", turn=turn)
    outcome: dict = {}
    pusher = threading.Thread(target=lambda: outcome.setdefault("push", sync.push(laptop, force=True)))
    pusher.start()
    prompts = team / "projects/web/prompts"
    deadline = time.time() + 60
    # the daemon applies a push as one group (issue 16): killed while it writes the group's files
    while time.time() < deadline and not (prompts.is_dir() and any(prompts.glob(".*.tmp"))):
        time.sleep(0.002)
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait(10)
    server.proc.stderr.close()
    pusher.join(60)
    landed = len(list(prompts.glob("*.md")))
    assert outcome["push"]["error"] and landed < 160  # killed part way: the group never committed
    for turn in (1, 2, 80):  # edited again while the daemon was down
        time.sleep(0.002)
        _rewrite(laptop, f"prompt-s1-t{turn}", f"turn {turn}, second version")
    server = Server(team, "--mcp-port", "0", port=server.port)
    try:
        again = sync.push(laptop, force=True)
        assert again["error"] is None and again["pending"] == 0
        assert {r["outcome"] for r in again["results"]} <= {"applied", "unchanged"}
        for local in sorted((laptop.root / "projects/web/prompts").glob("*.md")):
            assert (prompts / local.name).read_text() == local.read_text(), local.name
        assert conflict_files(team / "projects") == []
        assert server.get_json("/api/prompts?project=web&limit=1")[1]["total"] == 160
    finally:
        server.stop()


SESSION = """---
id: session-s9
kind: session
project: web
status: completed
created: '2026-11-30T09:00:00.000Z'
updated: '2026-11-30T09:30:00.000Z'
source: mcp
ide: generic
sessionId: s9
client: Acme
billable: true
startTime: '{start}'
endTime: '{end}'
durationMinutes: {minutes}
---
"""


@pytest.mark.parametrize("start, end, minutes, reason", [
    ("2026-11-30T09:00:00.000Z", "2026-11-30T09:30:00.000Z", 1380, "durationMinutes: 1380 is more than endTime − startTime"),
    ("2026-11-30T09:30:00.000Z", "2026-11-30T09:00:00.000Z", 0, "endTime: 2026-11-30T09:00:00.000Z is before"),
    ("2099-01-01T09:00:00.000Z", "2099-01-01T09:30:00.000Z", 30, "startTime: 2099-01-01T09:00:00.000Z is in the future"),
    # a span of years, its minutes its times: 52,632 h pushed and issued on an invoice (a local end
    # or edit refuses more than a week)
    ("2020-03-01T00:00:00.000Z", "2026-03-03T00:00:00.000Z", 3157920, "a session lasts at most a week"),
    ("2026-11-01T00:00:00.000Z", "2026-11-09T00:00:00.000Z", None, "11520 minutes from startTime to endTime: a session lasts at most a week"),
    # fewer minutes stated over years (found by an attacker: taken, and billed in 2020, past every period)
    ("2020-01-01T00:00:00.000Z", "2026-03-02T09:00:00.000Z", 10080, "is fewer than endTime − startTime"),
])
def test_a_pushed_session_cannot_claim_billable_minutes_it_did_not_work(tmp_path, start, end, minutes, reason):
    store = VaultStore(Settings(vault_root=tmp_path / "team"))
    text = SESSION.format(start=start, end=end, minutes=minutes)
    if minutes is None:  # read as its times say (SPEC §2.5)
        text = text.replace("durationMinutes: None\n", "")
    [result] = sync.apply_incoming(store, [{"id": "session-s9", "text": text, "base": None}])
    assert result["outcome"] == "refused" and reason in result["reason"]
    assert not (store.root / "projects/web/sessions/session-s9.md").exists()
    good = SESSION.format(start="2026-11-30T09:00:00.000Z", end="2026-11-30T09:30:00.000Z", minutes=30)
    assert sync.apply_incoming(store, [{"id": "session-s9", "text": good, "base": None}])[0]["outcome"] == "applied"


def test_a_pushed_record_without_created_is_refused_and_the_next_push_goes_through(tmp_path):
    """Found by a token holder: a pushed ``decision`` without ``created`` was stored, and every
    later push of anyone answered 500 (the project's listing read its ``created``), the lead's own
    commands failed, and ``memo reindex`` too, until the file was deleted by hand. A record of any
    kind names when it was made."""
    store = VaultStore(Settings(vault_root=tmp_path / "team"))
    [refused] = sync.apply_incoming(store, [{"id": "decision-x", "text": "---\nid: decision-x\nkind: decision\n"
                                             "project: shop\n---\nhi\n", "base": None}])
    assert refused["outcome"] == "refused" and "created: missing" in refused["reason"]
    text = SESSION.format(start="2026-11-30T09:00:00.000Z", end="2026-11-30T09:30:00.000Z", minutes=30)
    [applied] = sync.apply_incoming(store, [{"id": "session-s9", "text": text, "base": None}])
    assert applied["outcome"] == "applied"
    assert not (tmp_path / "team" / "projects" / "shop" / "decisions").exists()
    store.close()


@pytest.mark.parametrize("hidden", ["\u200d", "\u2060", "\u00ad", "\u061c", "\u3164", "\u034f", "\ufe0f",
                                    "\u17b4", "\u2800", "\U000e0041"])
def test_a_pushed_client_name_that_reads_as_another_is_refused(tmp_path, hidden):
    """Found by a token holder: "Acme Corp" with a zero-width joiner (a word joiner, a soft hyphen,
    an Arabic letter mark, a Hangul filler …) was applied, and billed as a client of its own: four
    rows that read "Acme Corp", the invoice of "Acme Corp" leaving three off. Only U+200B was
    refused. Every character that shows as nothing is."""
    store = VaultStore(Settings(vault_root=tmp_path / "team"))
    text = SESSION.format(start="2026-11-30T09:00:00.000Z", end="2026-11-30T09:30:00.000Z", minutes=30).replace(
        "client: Acme\n", f"client: Acme{hidden} Corp\n")
    assert f"Acme{hidden} Corp" in text
    [result] = sync.apply_incoming(store, [{"id": "session-s9", "text": text, "base": None}])
    assert result["outcome"] == "refused" and f"holds the invisible character U+{ord(hidden):04X}" in result["reason"]
    store.close()
