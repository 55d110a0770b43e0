"""Digest notifications (SPEC §6): one POST per settle window, at most one an hour, never an
item already sent, retried after a failure — against a real local HTTP receiver."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memo_analytics.config import OperatorPolicy, Settings
from memo_analytics.operator.notify import offer
from memo_analytics.services.store import VaultStore

T0 = datetime(2026, 3, 10, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def receiver():
    received: list[dict] = []
    status = {"code": 200}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if status["code"] == 200:
                received.append(json.loads(body))
            self.send_response(status["code"])
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", received, status
    server.shutdown()
    server.server_close()


def _store(tmp_path, url):
    policy = OperatorPolicy(webhook_url=url, settle_seconds=60, notify_min_interval_seconds=3600)
    return VaultStore(Settings(vault_root=tmp_path / "vault", timezone="UTC", operator=policy))


def _digest(*subjects: str) -> dict:
    return {"computedAt": "x", "items": [{"kind": "session_stalled", "subject": s, "project": "web", "why": "idle",
                                          "action": f"memo session show {s}"} for s in subjects]}


def test_new_items_are_coalesced_per_settle_window_and_never_repeated(tmp_path, receiver):
    url, received, _ = receiver
    store = _store(tmp_path, url)
    assert offer(store, _digest("a"), T0)["reason"].startswith("settling until")
    assert offer(store, _digest("a", "b"), T0 + timedelta(seconds=30))["sent"] == 0  # still settling
    sent = offer(store, _digest("a", "b"), T0 + timedelta(seconds=61))
    assert sent["sent"] == 2 and len(received) == 1  # one notification carrying both
    assert [i["subject"] for i in received[0]["items"]] == ["a", "b"]
    assert offer(store, _digest("a", "b"), T0 + timedelta(hours=5))["reason"] == "nothing new"
    assert len(received) == 1


def test_at_most_one_notification_an_hour(tmp_path, receiver):
    url, received, _ = receiver
    store = _store(tmp_path, url)
    offer(store, _digest("a"), T0)
    offer(store, _digest("a"), T0 + timedelta(seconds=61))
    assert len(received) == 1
    offer(store, _digest("a", "c"), T0 + timedelta(minutes=10))
    limited = offer(store, _digest("a", "c"), T0 + timedelta(minutes=12))
    assert limited["reason"].startswith("rate limited until 2026-03-10T10:01:01")
    assert len(received) == 1
    later = offer(store, _digest("a", "c"), T0 + timedelta(minutes=61, seconds=2))
    assert later["sent"] == 1 and [i["subject"] for i in received[1]["items"]] == ["c"]


def test_a_failed_post_is_retried_and_only_then_marked_sent(tmp_path, receiver):
    url, received, status = receiver
    store = _store(tmp_path, url)
    status["code"] = 500
    offer(store, _digest("a"), T0)
    failed = offer(store, _digest("a"), T0 + timedelta(seconds=61))
    assert failed["reason"] == "failed: HTTP 500" and received == []
    status["code"] = 200
    assert offer(store, _digest("a"), T0 + timedelta(seconds=90))["sent"] == 1 and len(received) == 1


def test_an_unreachable_receiver_fails_the_pass_not_the_caller(tmp_path):
    store = _store(tmp_path, "http://127.0.0.1:9/hook")  # discard port: connection refused
    offer(store, _digest("a"), T0)
    result = offer(store, _digest("a"), T0 + timedelta(seconds=61))
    assert result["sent"] == 0 and result["reason"].startswith("failed:")


def test_no_webhook_means_no_notification(tmp_path):
    store = VaultStore(Settings(vault_root=tmp_path / "vault", timezone="UTC"))
    assert offer(store, _digest("a"), T0) == {"sent": 0, "items": [], "reason": "no webhook configured"}


@pytest.mark.parametrize("mode", ["redirect", "slow headers"])
def test_a_receiver_that_redirects_or_never_ends_its_headers_is_a_failure_in_time(tmp_path, monkeypatch, mode):
    """A webhook answering 302 to another address was followed as a GET without the digest, and
    its 2xx marked the items sent (nothing delivered); one sending its headers a byte at a time
    held the watch for ever. Both are failures, retried on a later pass, within the timeout."""
    import time

    from memo_analytics.operator import notify

    monkeypatch.setattr(notify, "TIMEOUT_SECONDS", 2)
    elsewhere: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            if mode == "redirect":
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{self.server.server_address[1]}/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                for _ in range(30):
                    time.sleep(0.5)
                    try:
                        self.wfile.write(b"X")
                        self.wfile.flush()
                    except OSError:
                        return

        def do_GET(self):  # noqa: N802
            elsewhere.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        store = _store(tmp_path, f"http://127.0.0.1:{server.server_address[1]}/hook")
        offer(store, _digest("a"), T0)
        started = time.monotonic()
        failed = offer(store, _digest("a"), T0 + timedelta(seconds=61))
        assert time.monotonic() - started < 8
        assert failed["sent"] == 0 and failed["reason"].startswith("failed"), failed
        assert ("a redirect" in failed["reason"]) if mode == "redirect" else ("did not arrive" in failed["reason"])
        assert elsewhere == []
    finally:
        server.shutdown()
        server.server_close()
