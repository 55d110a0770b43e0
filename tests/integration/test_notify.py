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


def _store(tmp_path, url, **policy_fields):
    policy = OperatorPolicy(webhook_url=url, **{"settle_seconds": 60, "notify_min_interval_seconds": 3600,
                                                **policy_fields})
    return VaultStore(Settings(vault_root=tmp_path / "vault", timezone="UTC", operator=policy))


def _digest(*subjects: str, project: str = "web") -> dict:
    return {"computedAt": "x", "items": [{"kind": "session_stalled", "subject": s, "project": project, "why": "idle",
                                          "id": f"session_stalled:{s}", "action": f"memo session show {s}"}
                                         for s in subjects]}


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
    assert failed["reason"].startswith("failed: HTTP 500 (webhook http://127.0.0.1:") and received == []
    assert failed["failed"] is True and "the next after 2026-03-10T09:01:31.000Z" in failed["reason"]
    status["code"] = 200
    assert offer(store, _digest("a"), T0 + timedelta(seconds=92))["sent"] == 1 and len(received) == 1


def test_an_unreachable_receiver_fails_the_pass_not_the_caller(tmp_path):
    store = _store(tmp_path, "http://127.0.0.1:9/hook")  # discard port: connection refused
    offer(store, _digest("a"), T0)
    result = offer(store, _digest("a"), T0 + timedelta(seconds=61))
    assert result["sent"] == 0 and result["reason"].startswith("failed:")


def test_no_webhook_means_no_notification(tmp_path):
    store = VaultStore(Settings(vault_root=tmp_path / "vault", timezone="UTC"))
    assert offer(store, _digest("a"), T0) == {"sent": 0, "items": [], "reason": "no webhook configured"}


@pytest.mark.parametrize("mode", ["redirect", "slow headers"])
def test_a_receiver_that_redirects_or_never_ends_its_headers_is_a_failure_in_time(tmp_path, mode):
    """A webhook answering 302 to another address was followed as a GET without the digest, and
    its 2xx marked the items sent (nothing delivered); one sending its headers a byte at a time
    held the watch for ever. Both are failures, retried on a later pass, within the timeout."""
    import time

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
        store = _store(tmp_path, f"http://127.0.0.1:{server.server_address[1]}/hook", webhook_timeout_seconds=2)
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


def test_a_resolved_item_that_comes_back_is_sent_again(tmp_path, receiver):
    """Found by an operator: a stalled session that got a turn and stalled again was never
    notified again (notify.json kept its first sending for ever). An item that left the digest
    is forgotten; one still listed is not repeated."""
    url, received, _ = receiver
    store = _store(tmp_path, url)
    offer(store, _digest("a"), T0)
    assert offer(store, _digest("a"), T0 + timedelta(seconds=61))["sent"] == 1
    assert offer(store, _digest(), T0 + timedelta(minutes=30))["reason"] == "nothing new"  # a turn: resolved
    offer(store, _digest("a"), T0 + timedelta(hours=2))  # stalled again
    again = offer(store, _digest("a"), T0 + timedelta(hours=2, seconds=61))
    assert again["sent"] == 1 and [i["subject"] for i in received[1]["items"]] == ["a"]
    assert offer(store, _digest("a"), T0 + timedelta(hours=5))["reason"] == "nothing new"


def test_the_same_session_id_in_two_projects_is_two_items(tmp_path, receiver):
    url, received, _ = receiver
    store = _store(tmp_path, url)
    offer(store, _digest("a"), T0)
    offer(store, _digest("a"), T0 + timedelta(seconds=61))
    both = {"computedAt": "x", "items": _digest("a")["items"] + _digest("a", project="shop")["items"]}
    offer(store, both, T0 + timedelta(hours=2))
    assert offer(store, both, T0 + timedelta(hours=2, seconds=61))["sent"] == 1
    assert [i["project"] for i in received[1]["items"]] == ["shop"]


def test_a_notify_file_written_before_keeps_its_items_sent(tmp_path, receiver):
    """``notify.json`` kept ``kind:subject``: after an update those items are not sent again."""
    url, received, _ = receiver
    store = _store(tmp_path, url)
    store.layout.meta_dir.mkdir(parents=True)
    (store.layout.meta_dir / "notify.json").write_text(json.dumps(
        {"sent": {"session_stalled:a": "2026-03-10T08:00:00Z"}, "lastSentAt": "2026-03-10T08:00:00Z",
         "pendingSince": None}))
    assert offer(store, _digest("a"), T0 + timedelta(hours=2))["reason"] == "nothing new" and received == []


@pytest.mark.parametrize("flag", ["stale", "error"])
def test_a_stale_digest_is_not_offered(tmp_path, receiver, flag):
    """Found by an operator: the watch sent items of a cached digest marked stale (the vault had
    changed; the item was resolved already)."""
    url, received, _ = receiver
    store = _store(tmp_path, url, settle_seconds=0)
    digest = {**_digest("a"), flag: True if flag == "stale" else "recompute failed: OSError"}
    result = offer(store, digest, T0)
    assert result["sent"] == 0 and result["reason"].startswith("waiting for") and received == []
    assert not (store.layout.meta_dir / "notify.json").exists()


def test_failed_tries_back_off_and_carry_one_delivery_id(tmp_path, receiver):
    """Found by an operator: a failing receiver was tried on every pass (every 30 s) without
    end, and a retry had nothing to tell it from a new batch."""
    url, received, status = receiver
    store = _store(tmp_path, url, settle_seconds=0)
    status["code"] = 503
    tries = [offer(store, _digest("a"), T0 + timedelta(seconds=s)) for s in (0, 10, 31, 60, 92, 150, 212)]
    assert [t["reason"].split(" ")[0] for t in tries] == \
        ["failed:", "backing", "failed:", "backing", "failed:", "backing", "failed:"]
    assert "try 4, the next after 2026-03-10T09:07:32.000Z" in tries[-1]["reason"]  # 30, 60, 120, 240 s
    status["code"] = 200
    sent = offer(store, _digest("a"), T0 + timedelta(seconds=453))
    assert sent["sent"] == 1 and received[0]["deliveryId"] == sent["deliveryId"]
    assert received[0]["sentAt"] == "2026-03-10T09:07:33.000Z"
    state = json.loads((store.layout.meta_dir / "notify.json").read_text())
    assert state["failures"] == 0 and state["retryAt"] is None


def test_a_retried_batch_keeps_its_delivery_id(tmp_path):
    """The receiver took the batch but the answer was lost: the retry carries the same id (body
    and ``Idempotency-Key``), so the receiver can drop it."""
    seen: list[tuple[str, str]] = []
    answers = iter([500, 200])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((body["deliveryId"], self.headers["Idempotency-Key"]))
            self.send_response(next(answers))
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        store = _store(tmp_path, f"http://127.0.0.1:{server.server_address[1]}/hook", settle_seconds=0)
        offer(store, _digest("a"), T0)
        assert offer(store, _digest("a"), T0 + timedelta(minutes=1))["sent"] == 1
    finally:
        server.shutdown()
        server.server_close()
    assert len(seen) == 2 and seen[0] == seen[1] and seen[0][0] == seen[0][1] and len(seen[0][0]) == 16


@pytest.mark.parametrize("url", ["http://127.0.0.1:87650/hook", "http://:8080/hook", "http://127.0.0.1:0/x"])
def test_a_webhook_url_no_post_can_reach_is_refused(url):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="port must be a number from 1 to 65535|names no host"):
        OperatorPolicy(webhook_url=url)


def test_slack_and_discord_read_the_text_as_typed_and_ping_nobody():
    """A session named ``<!channel>`` or ``<https://evil.example|the invoice>`` went into the
    text that Slack reads as mrkdwn: a ping of the whole channel, a link disguised as text.
    Discord reads ``content``, not ``text`` (every POST was refused), and pings ``@everyone``."""
    from memo_analytics.operator.notify import DISCORD_CONTENT_LIMIT, for_receiver

    text = "[session_stalled] <!channel> (web): no turn for 2 h → memo session show '<https://evil.example|x>' & co"
    payload = {"deliveryId": "d1", "items": [{"subject": "<!channel>"}], "text": text}
    slack = for_receiver("https://hooks.slack.com/services/T0/B0/x", payload)
    assert slack["text"] == ("[session_stalled] &lt;!channel&gt; (web): no turn for 2 h → memo session show "
                             "'&lt;https://evil.example|x&gt;' &amp; co")
    assert slack["items"] == payload["items"]  # the data as it is, for a receiver that reads it
    discord = for_receiver("https://discord.com/api/webhooks/1/abc", {**payload, "text": "@everyone " + text})
    assert discord["content"] == "@everyone " + text.replace("[", "\\[").replace("]", "\\]")
    assert discord["allowed_mentions"] == {"parse": []}
    long = for_receiver("https://discordapp.com/api/webhooks/1/abc", {**payload, "text": "\n".join(["x" * 99] * 50)})
    assert len(long["content"]) <= DISCORD_CONTENT_LIMIT and long["content"].endswith("… (more in memo digest)")
    assert for_receiver("https://hooks.example/x", payload) == payload  # any other receiver: as it is
    # found by an attacker: the host with its trailing dot is the same host
    assert for_receiver("https://hooks.slack.com./services/T0/B0/x", payload)["text"] == slack["text"]
    dotted = for_receiver("https://discord.com./api/webhooks/1/abc", {**payload, "text": "[Approve](https://evil.example)"})
    assert dotted["content"] == "\\[Approve\\](https://evil.example)"  # no masked link
    assert dotted["allowed_mentions"] == {"parse": []}


def test_an_error_of_the_post_never_quotes_the_webhooks_secrets():
    from memo_analytics.operator.notify import _without_secrets

    assert _without_secrets("InvalidURL: nonnumeric port: 'PASSW0RD@127.0.0.1'",
                            "http://user:PASSW0RD@127.0.0.1/hook/SECRETPATH") == "InvalidURL: nonnumeric port: '***@127.0.0.1'"
    assert "SECRETPATH" not in _without_secrets("URL can't contain control characters. '/hook/SECRETPATH?token=QSEC'",
                                                "http://127.0.0.1:1/hook/SECRETPATH?token=QSEC")


@pytest.mark.parametrize("edit", [
    {"sent": ["not", "a", "table"]}, {"failures": "many"}, {"failures": 10 ** 30}, {"retryAt": "9999-12-31T00:00:00Z"},
    {"lastSentAt": "9999-12-31T00:00:00Z"}, {"pendingSince": "tomorrow"}, {"lastSentAt": 5},
    {"actionsReportedUntil": "9999-12-31T00:00:00Z"}, {"retryAt": "NOW+5min", "failures": 0}])
def test_a_hand_edited_notify_state_is_started_afresh_not_a_crash_or_a_silence(tmp_path, receiver, caplog, edit):
    """notify.json edited by hand (or a clock set back): a ``failures`` that is not a count
    crashed every pass with a traceback; a ``retryAt`` or ``lastSentAt`` in the year 9999
    silenced the webhook for ever. What cannot be used is dropped, logged, and the pass goes on."""
    url, received, _ = receiver
    store = _store(tmp_path, url, settle_seconds=0)
    state = store.layout.meta_dir / "notify.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    soon = (datetime.now(timezone.utc) + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    edit = {key: soon if value == "NOW+5min" else value for key, value in edit.items()}  # backing off without a failure
    state.write_text(json.dumps({"sent": {}, "lastSentAt": None, "pendingSince": None, **edit}), encoding="utf-8")
    with caplog.at_level("WARNING", logger="memo_analytics.operator.notify"):
        result = offer(store, _digest("s1"), datetime.now(timezone.utc))
    assert result["reason"] == "sent" and len(received) == 1, result
    assert f"{next(iter(edit))} not usable" in caplog.text
    assert json.loads(state.read_text())["sent"]  # written back whole


def test_a_torn_notify_state_is_said_and_started_afresh(tmp_path, receiver, caplog):
    url, received, _ = receiver
    store = _store(tmp_path, url, settle_seconds=0)
    state = store.layout.meta_dir / "notify.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text('{"sent": {"a', encoding="utf-8")
    with caplog.at_level("WARNING", logger="memo_analytics.operator.notify"):
        assert offer(store, _digest("s1"), datetime.now(timezone.utc))["reason"] == "sent"
    assert "notify.json is not a JSON table" in caplog.text and len(received) == 1
