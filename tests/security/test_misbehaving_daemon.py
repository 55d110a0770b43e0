"""A team daemon that misbehaves (found by an attacker on loopback): remote mode, a hook in
remote mode and the hybrid push never follow a redirect (urllib sent the ``Authorization``
header — the daemon's token — to whatever host a 302 named, and took that host's answer for
the daemon's), give up when the status line and headers do not come within
``timeoutSeconds`` (a daemon sending a header byte now and then held them for ever), and say
in one line when an answer is not what memo reads (a traceback, or exit 0 printing ``[1, 2,
3]`` as the recorded turn)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memo_analytics.services import capture
from tests.inprocess import memo

TOKEN = "team-token-" + "x" * 24


class _Daemon:
    """A daemon answering every request by ``mode``, and a second host (``other``) that logs
    what reaches it."""

    def __init__(self) -> None:
        self.mode = "redirect"
        self.seen: list[tuple[int, str | None]] = []  # (port, Authorization) of every request
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                self.answer()

            def do_POST(self):
                self.answer()

            def answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                port = self.server.server_address[1]
                outer.seen.append((port, self.headers.get("Authorization")))
                if port == outer.other.server_address[1]:
                    return self.send(200, b'{"items": [], "total": 0, "results": []}')
                if outer.mode == "redirect":
                    self.send_response(302)
                    self.send_header("Location", f"http://127.0.0.1:{outer.other.server_address[1]}/steal")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif outer.mode == "slow headers":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                    for _ in range(60):  # a header byte a second, never the end of the headers
                        time.sleep(1)
                        try:
                            self.wfile.write(b"X")
                            self.wfile.flush()
                        except OSError:
                            return
                elif outer.mode == "list":
                    self.send(200, b"[1, 2, 3]")
                elif outer.mode == "wrong types":
                    self.send(200, json.dumps({"items": "not a list", "total": "many", "id": 7, "session": "x",
                                               "turns": 5, "byClient": [], "sessions": 3}).encode())

            def send(self, code, body):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.other = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = self.other.daemon_threads = True
        for one in (self.server, self.other):
            threading.Thread(target=one.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        for one in (self.server, self.other):
            one.shutdown()
            one.server_close()

    def reached_the_other_host(self) -> list[str | None]:
        return [auth for port, auth in self.seen if port == self.other.server_address[1]]


@pytest.fixture
def evil():
    daemon = _Daemon()
    yield daemon
    daemon.stop()


def _remote(tmp_path, evil) -> dict:
    config = tmp_path / "remote.toml"
    config.write_text(f'mode = "remote"\n[remote]\nurl = "{evil.base}"\ntoken = "{TOKEN}"\ntimeoutSeconds = 2\n')
    return {"MEMO_CONFIG": str(config)}


def test_a_redirect_is_not_followed_and_the_token_stays_with_the_daemon(tmp_path, evil, repo):
    env = _remote(tmp_path, evil)
    ran = memo("prompt", "list", "--all", vault=tmp_path / "laptop", env=env, check=False)
    assert ran.returncode == 1 and "answered with a redirect (HTTP 302); memo follows none" in ran.stderr
    payload = json.dumps({"session_id": "abc", "cwd": str(repo), "hook_event_name": "UserPromptSubmit",
                          "prompt": "kept for the right address"})
    memo("hook", "claude-code", vault=tmp_path / "laptop", env=env, input=payload)
    [kept] = capture.spooled(tmp_path / "laptop")  # not dropped as "refused": the address is what is wrong
    assert "kept for the right address" in kept.read_text()
    assert evil.reached_the_other_host() == []
    assert [auth for _, auth in evil.seen] == [f"Bearer {TOKEN}"] * 2  # the daemon's own address only


def test_the_hybrid_push_follows_no_redirect(tmp_path, evil):
    config = tmp_path / "hybrid.toml"
    config.write_text(f'mode = "hybrid"\n[hybrid]\nremoteUrl = "{evil.base}"\ntoken = "{TOKEN}"\n')
    env = {"MEMO_CONFIG": str(config)}
    vault = tmp_path / "laptop"
    memo("session", "start", "s1", "--project", "shop", vault=vault, env=env)
    pushed = json.loads(memo("--json", "sync", "push", vault=vault, env=env, check=False).stdout)
    assert pushed["pushed"] == 0 and pushed["pending"] >= 1 and "HTTP 302: a redirect" in pushed["error"]
    assert evil.reached_the_other_host() == []


def test_a_daemon_that_never_ends_its_headers_is_given_up_after_the_timeout(tmp_path, evil):
    evil.mode = "slow headers"
    started = time.monotonic()
    ran = memo("prompt", "list", "--all", vault=tmp_path / "laptop", env=_remote(tmp_path, evil), check=False)
    assert ran.returncode == 1 and "unreachable: the answer did not arrive within 2 s" in ran.stderr
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("mode", ["list", "wrong types"])
@pytest.mark.parametrize("command", [("prompt", "record", "--session-id", "s1", "--project", "shop", "--body", "hi"),
                                     ("prompt", "list", "--all"), ("session", "show", "--all"), ("activity", "--all"),
                                     ("prompt", "get", "prompt-s1-t1")])
def test_an_answer_memo_cannot_read_is_one_line_and_exit_1(tmp_path, evil, mode, command):
    evil.mode = mode
    for json_flag in ((), ("--json",)):
        ran = memo(*json_flag, *command, vault=tmp_path / "laptop", env=_remote(tmp_path, evil), check=False)
        assert ran.returncode == 1, (json_flag, ran.stdout)
        assert "Traceback" not in ran.stderr and "answered something memo cannot use" in ran.stderr, ran.stderr
