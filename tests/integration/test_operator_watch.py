"""``memo operator watch`` (SPEC §6 phases 1 and 3, §8): each pass records the hook events
waiting in the spool, recomputes the digest, runs the delegated actions and notifies the
webhook — against a real local HTTP receiver. Found by an operator: the watch never ran a
delegated action (only ``memo digest`` did), sent items of a stale digest, left spooled hook
events waiting for the agent's next event, and ``--once`` exited 0 when the POST failed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from memo_analytics.services import capture
from tests.integration.test_http_api import refused_port
from tests.inprocess import memo


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


NOW = datetime.now(timezone.utc)


@pytest.fixture
def receiver():
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    server.shutdown()
    server.server_close()


def _config(tmp_path: Path, url: str | None, **more: str) -> dict[str, str]:
    config = tmp_path / "config.toml"
    lines = ["[operator]", "settleSeconds = 0", *(f"{k} = {v}" for k, v in more.items())]
    if url:
        lines.append(f'webhookUrl = "{url}"')
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"MEMO_CONFIG": str(config)}


def _stalled(vault: Path, env: dict, *sessions: str, project: str = "web") -> None:
    for sid in sessions:
        memo("session", "start", sid, "--project", project, "--client", "Acme", "--start-time",
             _iso(NOW - timedelta(hours=3)), vault=vault, env=env)
        memo("prompt", "record", "--project", project, "--session-id", sid, "--body", "tidy the login form",
             "--created", _iso(NOW - timedelta(hours=2)), vault=vault, env=env)


def test_a_watch_pass_runs_the_delegated_actions_and_notifies_what_is_left(tmp_path, receiver):
    url, received = receiver
    vault, env = tmp_path / "v", _config(tmp_path, receiver[0])
    _stalled(vault, env, "w1", "w2")
    _stalled(vault, env, "s1", project="shop")
    memo("operator", "allow", "end_stale_session", "--project", "web", vault=vault, env=env)
    ran = json.loads(memo("--json", "operator", "watch", "--once", vault=vault, env=env).stdout)
    assert sorted((r["subject"], r["outcome"]) for r in ran["acted"]) == [("w1", "applied"), ("w2", "applied")]
    for sid in ("w1", "w2"):  # ended at their last activity, as the proposal said
        shown = json.loads(memo("--json", "session", "show", sid, "--project", "web", vault=vault,
                                env=env).stdout)["session"]
        assert (shown["status"], shown["endTime"]) == ("completed", _iso(NOW - timedelta(hours=2))[:-1] + ".000Z")
    assert (ran["sent"], ran["reason"], ran["reported"]) == (1, "sent", 2)  # left: shop's session, not delegated
    assert [i["id"] for i in received[0]["items"]] == ["session_stalled:s1"]
    # and what the operator did itself (SPEC §6 phase 3, act and report): nobody else learnt of it
    assert [(r["actor"], r["actionClass"], r["subject"], r["outcome"]) for r in received[0]["acted"]] == [
        ("operator", "end_stale_session", "w1", "applied"), ("operator", "end_stale_session", "w2", "applied")]
    assert "operator: end_stale_session on w1 (web) — applied at " in received[0]["text"]
    human = memo("operator", "watch", "--once", vault=vault, env=env).stdout
    assert human.endswith("notification: nothing new\n") and len(received) == 1  # reported once


def test_the_operators_own_actions_are_reported_when_no_item_is_left(tmp_path, receiver):
    """A delegation that resolved everything left no item to send: the webhook heard nothing of
    the sessions the operator ended. Its actions go out on their own (settled and rate limited as
    items are), once; actions from before the webhook's first pass are not sent."""
    url, received = receiver
    vault, env = tmp_path / "v", _config(tmp_path, url)
    _stalled(vault, env, "old")
    memo("operator", "allow", "end_stale_session", "--project", "web", vault=vault, env=env)
    memo("digest", vault=vault, env=env)  # the operator acted before any watch: history, not news
    _stalled(vault, env, "w1")
    first = json.loads(memo("--json", "operator", "watch", "--once", vault=vault, env=env).stdout)
    assert (first["sent"], first["reported"], first["reason"]) == (0, 1, "sent")
    [posted] = received
    assert posted["items"] == [] and [r["subject"] for r in posted["acted"]] == ["w1"]
    _stalled(vault, env, "w2")  # acted on within the hour: waits for the rate limit, not lost
    second = json.loads(memo("--json", "operator", "watch", "--once", vault=vault, env=env).stdout)
    assert second["reason"].startswith("rate limited until") and len(received) == 1
    ok = memo("--json", "operator", "watch", "--once", vault=vault, env={**_config(
        tmp_path, url, notifyMinIntervalSeconds="0")}).stdout
    assert json.loads(ok)["reported"] == 1 and [r["subject"] for r in received[1]["acted"]] == ["w2"]


def test_once_exits_non_zero_when_the_notification_failed(tmp_path):
    with refused_port() as port:  # bound, not listening: refused
        vault, env = tmp_path / "v", _config(tmp_path, f"http://127.0.0.1:{port}/services/T000/B000/secretpath")
        _stalled(vault, env, "w1")
        failed = memo("operator", "watch", "--once", vault=vault, env=env, check=False)
        assert failed.returncode == 1, failed.stdout + failed.stderr
        assert "notification: failed: URLError" in failed.stdout and f"(webhook http://127.0.0.1:{port}; try 1" \
            in failed.stdout and "secretpath" not in failed.stdout  # the host named, never the path
        again = memo("operator", "watch", "--once", vault=vault, env=env, check=False)  # within the back-off
        assert again.returncode == 1 and "backing off until" in again.stdout
        # found by an operator: failures showed in the watch's log alone; status says them
        status = " ".join(memo("operator", "status", vault=vault, env=env).stdout.split())
        assert f"webhook http://127.0.0.1:{port}: nothing sent yet; FAILING: 1 try in a row, the next after " \
            in status and "URLError" in status and "secretpath" not in status
        as_json = json.loads(memo("--json", "operator", "status", vault=vault, env=env).stdout)["notifications"]
        assert (as_json["failures"], as_json["webhook"]) == (1, f"http://127.0.0.1:{port}")  # backing off: no new try


def test_a_stale_cached_digest_is_recomputed_not_sent(tmp_path, receiver):
    """The digest was cached, then the session got a turn (within the debounce window): the
    item is resolved, and a watch pass must not send it."""
    url, received = receiver
    vault, env = tmp_path / "v", _config(tmp_path, url, debounceSeconds="3600")
    _stalled(vault, env, "w1")
    assert [i["id"] for i in json.loads(memo("--json", "digest", vault=vault, env=env).stdout)["items"]] == \
        ["session_stalled:w1"]
    memo("prompt", "record", "--project", "web", "--session-id", "w1", "--body", "back at it", vault=vault, env=env)
    ran = json.loads(memo("--json", "operator", "watch", "--once", vault=vault, env=env).stdout)
    assert (ran["sent"], ran["reason"], ran["digestItems"]) == (0, "nothing new", 0) and received == []


def test_a_watch_pass_records_the_spooled_hook_events(tmp_path, repo):
    """A hook event spooled while the vault was locked waited for the agent's next event: a
    quiet agent left it out of the vault (and of the digest) for good. The watch applies it."""
    vault, env = tmp_path / "v", _config(tmp_path, None)
    payload = {"session_id": "8c35adc1-5b7e-4f0a-9d55-0a1b2c3d4e5f", "cwd": str(repo), "prompt": "wire the form",
               "hook_event_name": "UserPromptSubmit", "transcript_path": "/tmp/t.jsonl"}
    capture._spool(vault, {"agent": "claude-code", "event": None, "receivedAt": _iso(NOW - timedelta(minutes=5)),
                           "payload": payload, "captureId": "0123456789abcdef"})
    ran = json.loads(memo("--json", "operator", "watch", "--once", vault=vault, env=env).stdout)
    assert capture.spooled(vault) == [] and len(ran["spool"]) == 1 and "replayed" in ran["spool"][0]
    [turn] = json.loads(memo("--json", "prompt", "list", "--project", "product", vault=vault, env=env).stdout)["items"]
    assert (turn["body"], turn["created"]) == ("wire the form", _iso(NOW - timedelta(minutes=5))[:-1] + ".000Z")
    assert ran["reason"] == "no webhook configured"


def test_a_new_delegation_acts_on_the_next_pass(tmp_path):
    """Found by a new operator: `memo operator allow` did nothing until something else wrote to
    the vault (the cached digest was served, and delegated actions run only on a recompute)."""
    vault, env = tmp_path / "v", _config(tmp_path, None)
    _stalled(vault, env, "w1")
    assert json.loads(memo("--json", "operator", "watch", "--once", vault=vault, env=env).stdout)["acted"] == []
    memo("operator", "allow", "end_stale_session", "--project", "web", vault=vault, env=env)
    ran = json.loads(memo("--json", "operator", "watch", "--once", vault=vault, env=env).stdout)
    assert [(r["subject"], r["outcome"]) for r in ran["acted"]] == [("w1", "applied")]


def test_an_incomplete_audit_line_and_a_broken_digest_cache_never_stop_the_watch(tmp_path, receiver):
    """Found by an attacker: an audit line without ``outcome`` (appended by hand; the file is
    never rewritten) crashed every pass with a KeyError, and ``memo operator audit`` too; a
    digest cache with a ``validUntil`` that is no instant, no ``computedAt`` or ``items`` that
    are no list failed every pass until ``memo digest --refresh``. The line is skipped; the
    cache is computed again, with a warning naming the file."""
    url, received = receiver
    vault, env = tmp_path / "v", _config(tmp_path, url, debounceSeconds="0", notifyMinIntervalSeconds="0")
    _stalled(vault, env, "w1")
    memo("operator", "watch", "--once", vault=vault, env=env)
    assert len(received) == 1
    audit = vault / ".memo" / "audit.jsonl"
    with audit.open("a", encoding="utf-8") as trail:
        trail.write(json.dumps({"at": _iso(datetime.now(timezone.utc)), "actor": "operator", "subject": "x",
                                "actionClass": "end_stale_session"}) + "\n")
    cache = vault / ".memo" / "digest.json"
    for broken in ({"validUntil": "garbage"}, {"digest": {"items": []}}, {"digest": {"computedAt": _iso(NOW),
                                                                                    "items": "no list"}}):
        cache.write_text(json.dumps({**json.loads(cache.read_text()), **broken}), encoding="utf-8")
        ran = memo("--json", "operator", "watch", "--once", vault=vault, env=env)
        assert json.loads(ran.stdout)["digestItems"] == 1 and "cannot be served as it is" in ran.stderr, ran.stderr
        assert "digest.json" in ran.stderr
    _stalled(vault, env, "w2")
    assert json.loads(memo("--json", "operator", "watch", "--once", vault=vault, env=env).stdout)["sent"] == 1
    trail = json.loads(memo("--json", "operator", "audit", vault=vault).stdout)
    assert trail == []  # the line without an outcome is no record of the audit (it crashed the command)


def test_a_watch_stopped_by_sigterm_mid_post_says_so_and_the_next_run_sends_the_same_delivery(tmp_path, receiver):
    """Found by an operator: ``memo operator watch`` under a service manager, stopped (SIGTERM)
    while its POST waited on a slow receiver, exited 143 without a word. It says it stopped and
    that the notification goes again; the next run sends it under the same deliveryId."""
    url, received = receiver
    held: list[dict] = []
    arrived, release = threading.Event(), threading.Event()

    class Slow(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            held.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            arrived.set()
            release.wait(30)

        def log_message(self, *args):
            pass

    slow = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=slow.serve_forever, daemon=True).start()
    vault = tmp_path / "v"
    env = _config(tmp_path, f"http://127.0.0.1:{slow.server_address[1]}/hook", webhookTimeoutSeconds="30")
    _stalled(vault, env, "w1")
    try:
        watch = subprocess.Popen([sys.executable, "-m", "memo_analytics", "--vault-root", str(vault), "operator",
                                  "watch", "--interval", "1"], env={**os.environ, **env},
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert arrived.wait(60), watch.stderr.read() if watch.poll() is not None else "no POST"
        watch.send_signal(signal.SIGTERM)
        stdout, stderr = watch.communicate(timeout=30)
    finally:
        release.set()
        slow.shutdown()
        slow.server_close()
    assert watch.returncode == 0, stderr
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d stopped \(SIGTERM\); a notification being sent is sent again by "
                     r"the next run, under the same deliveryId", stderr), stderr
    again = json.loads(memo("--json", "operator", "watch", "--once", vault=vault, env=_config(tmp_path, url)).stdout)
    assert again["sent"] == 1 and received[0]["deliveryId"] == held[0]["deliveryId"]
