"""The status HTTP API (SPEC §3.3) over a real `memo serve`: every endpoint, the same JSON as
the CLI, safe output for hostile records, errors, tokens and the digest apply."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.integration.test_cli import memo

XSS = ('Fix it <script>alert("pwned")</script> <img src=x onerror=alert(1)> '
       '[click](javascript:alert(2)) <a href="javascript:alert(3)">x</a> "quoted" & done')


def live_markup(html: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """Every element of ``html`` with its attributes (text, escaped or not, is not markup)."""
    from html.parser import HTMLParser

    found: list = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, attrs))

    Collect().feed(html)
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def refused_port():
    """A loopback port bound but not listening while the block runs: a connection to it is
    refused, and no other test's server can take it meanwhile (``free_port`` only names one)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


class Server:
    def __init__(self, vault: Path, *args: str, port: int | None = None):
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        if "--mcp-port" not in args:  # the default (port + 1) may be another test's port: no MCP unless asked
            args = (*args, "--mcp-port", "0")
        self.proc = subprocess.Popen([sys.executable, "-m", "memo_analytics", "--vault-root", str(vault), "serve",
                                      "--port", str(self.port), *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # ready when this process says it listens: a port another process took meanwhile answers a
        # connect too, and the test would talk to that process
        self.startup_log: list[str] = []
        reader = threading.Thread(target=self._read_until_ready, daemon=True)
        reader.start()
        reader.join(60)
        if not self.startup_log or not self.startup_log[-1].startswith("memo serve: http"):
            if reader.is_alive():
                self.proc.kill()
                raise AssertionError("memo serve did not start: " + "".join(self.startup_log))
            self.proc.wait(10)
            self.proc.stderr.close()
            raise AssertionError("".join(self.startup_log))
        with socket.create_connection(("127.0.0.1", self.port), timeout=5):
            pass

    def _read_until_ready(self) -> None:
        for line in self.proc.stderr:
            self.startup_log.append(line)
            if line.startswith("memo serve: http"):
                return

    def request(self, path: str, data: dict | None = None, headers: dict | None = None):
        body = json.dumps(data).encode() if data is not None else None
        headers = {**({"Content-Type": "application/json"} if body is not None else {}), **(headers or {})}
        req = urllib.request.Request(self.base + path, data=body, headers=headers,
                                     method="POST" if data is not None else "GET")
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                return response.status, response.headers, response.read().decode("utf-8")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers, exc.read().decode("utf-8")

    def get_json(self, path: str, **kwargs):
        status, _, text = self.request(path, **kwargs)
        return status, json.loads(text)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.proc.stderr.close()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    vault = tmp_path_factory.mktemp("api") / "vault"
    memo("session", "start", "s1", "--project", "web", "--client", "Acme", "--ide", "cursor",
         "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "web", "--body", "Add pagination to the invoices API",
         "--tag", "api", vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "web", "--body", XSS, vault=vault)
    memo("session", "end", "s1", "--project", "web", "--until", "2026-03-02T10:30:00Z", "--summary", "Pagination",
         vault=vault)
    memo("prompt", "record", "--project", "api", "--session-id", "z9", "--ide", "claude-code", "--client", "Globex",
         "--body", "Never commit directly to main.", vault=vault)
    server = Server(vault)
    yield vault, server
    server.stop()


@pytest.mark.parametrize("path, cli", [
    ("/api/prompts?crossProject=true", ["prompt", "list", "--all"]),
    ("/api/prompts?project=web&query=pagination", ["prompt", "search", "pagination", "--project", "web"]),
    ("/api/prompts?crossProject=true&ide=CURSOR&limit=1", ["prompt", "list", "--all", "--ide", "CURSOR", "--limit", "1"]),
    ("/api/prompts?crossProject=true&client=Globex", ["prompt", "list", "--all", "--client", "Globex"]),
    ("/api/prompts?project=web&tag=api", ["prompt", "list", "--project", "web", "--tag", "api"]),
    ("/api/prompts/prompt-s1-t1", None),
    ("/api/prompts/sessions/s1?project=web", ["session", "show", "s1"]),
    ("/api/sessions?crossProject=true", ["session", "show", "--all"]),
    ("/api/activity?crossProject=true&tz=UTC", ["activity", "--all", "--tz", "UTC"]),
    ("/api/digest?asOf=2026-03-02T12:00:00Z", ["digest", "--as-of", "2026-03-02T12:00:00Z"]),
])
def test_every_endpoint_answers_the_same_json_as_the_cli(seeded, path, cli):
    vault, server = seeded
    status, answer = server.get_json(path)
    assert status == 200, answer
    if cli is None:
        expected = json.loads(memo("--json", "prompt", "get", "prompt-s1-t1", vault=vault).stdout)
        assert {k: v for k, v in answer.items() if k not in ("renderedHtml", "secretsRedacted")} == expected
    else:
        assert answer == json.loads(memo("--json", *cli, vault=vault).stdout)


def test_a_project_asked_for_with_cross_project_is_the_project_read(seeded):
    """Found by an analyst: ``?crossProject=true&project=web`` answered every project's total
    (and listed every project's sessions and turns) without a word; the Python API read the
    project. The project named is read, in every vault read."""
    vault, server = seeded
    _, alone = server.get_json("/api/activity?project=api&tz=UTC")
    _, both = server.get_json("/api/activity?crossProject=true&project=api&tz=UTC")
    assert both["projects"] == ["api"] and both["totalSessions"] == alone["totalSessions"]
    assert both["totalPrompts"] == 1
    _, sessions = server.get_json("/api/sessions?crossProject=true&project=web")
    assert {item["project"] for item in sessions["items"]} == {"web"}
    _, prompts = server.get_json("/api/prompts?crossProject=true&projectId=api")
    assert prompts["total"] == 1 and prompts["items"][0]["project"] == "api"


def test_a_call_of_300000_unknown_fields_is_refused_at_once(seeded):
    """Found by a security tester: 300,000 unknown fields in one 4 MB body took seconds of a worker
    (pydantic listed every one as an error), and eight at once stalled the API for half a minute."""
    _, server = seeded
    body = {f"k{i}": 1 for i in range(300_000)}
    status, answer = server.get_json("/api/actions/list", data=body)
    assert status == 400 and answer["error"] == ("Invalid input: holds more than 10,000 fields and list items; a call "
                                                 "of the tool prompt needs far fewer"), answer
    status, answer = server.get_json("/api/actions/list", data={"crossProject": True, "nope": 1})
    assert status == 400 and answer["error"].startswith("Invalid nope: unknown field"), answer
    # found by a breaker: a too-deep tags list was said as "Invalid body: …", the tool's own field
    deep: list = []
    for _ in range(40):
        deep = [deep]
    status, answer = server.get_json("/api/actions/record", data={"body": "x", "project": "web", "tags": deep})
    assert status == 400 and answer["error"] == "Invalid request body: is nested deeper than 32 levels", answer


def test_list_envelope_and_filters(seeded):
    _, server = seeded
    _, page = server.get_json("/api/prompts?crossProject=true&limit=2&offset=1")
    assert (page["total"], page["limit"], page["offset"], page["hasMore"], len(page["items"])) == (3, 2, 1, False, 2)
    _, billable = server.get_json("/api/prompts?crossProject=true&billable=false")
    assert billable["total"] == 0
    _, since = server.get_json("/api/prompts?crossProject=true&since=2100-01-01")
    assert since["total"] == 0


def test_hostile_text_never_runs_and_never_breaks_the_json(seeded):
    _, server = seeded
    status, headers, text = server.request("/api/prompts/prompt-s1-t2")
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert "<" not in text and ">" not in text  # escaped as \u003c / \u003e: inert even if embedded in HTML
    record = json.loads(text)
    assert record["body"] == XSS  # the stored text itself comes back unchanged
    tags = live_markup(record["renderedHtml"])
    assert not [t for t in tags if t[0] in ("script", "iframe", "object", "embed", "style")]
    assert not [a for _, attrs in tags for a in attrs if a[0].startswith("on")]
    assert not [a for _, attrs in tags for a in attrs if a[0] in ("href", "src") and "javascript:" in (a[1] or "")]
    assert "alert(&quot;pwned&quot;)" in record["renderedHtml"] or "alert(\"pwned\")" in record["renderedHtml"]
    for path in ("/api/prompts?project=web&query=pwned", "/api/prompts/sessions/s1?project=web"):
        status, _, listing = server.request(path)
        assert status == 200 and "<script" not in listing and json.loads(listing)["items"]


def test_story_download_is_markdown_with_a_safe_file_name(seeded):
    _, server = seeded
    status, headers, text = server.request("/api/prompts/sessions/s1/export")
    assert status == 200 and headers["Content-Type"] == "text/markdown; charset=utf-8"
    assert headers["Content-Disposition"] == 'attachment; filename="story-s1.md"'
    assert text.startswith("# Intent story: Pagination") and "Add pagination" in text
    bad, _, body = server.request("/api/prompts/sessions/..%2Fetc/export")
    assert bad in (400, 404) and "error" in json.loads(body)


@pytest.mark.parametrize("path, data, status, message", [
    ("/api/prompts?crossProject=true&since=2026-13-45", None, 400, "Invalid since date: '2026-13-45' (give a date as YYYY-MM-DD, a time as YYYY-MM-DDTHH:MM, a month YYYY-MM, a year YYYY or an ISO week YYYY-Www, ISO 8601)"),
    ("/api/prompts?crossProject=true&billable=maybe", None, 400, "Invalid billable"),
    ("/api/prompts/nothing-here", None, 404, "Record not found: nothing-here"),
    ("/api/prompts/sessions/s1", None, 400, "Invalid project: required"),
    ("/api/prompts/sessions/s1?project=api", None, 404, "Record not found: s1"),
    ("/api/prompts/derive-rules", {"format": "<script>x</script>"}, 400, "Invalid format"),
    ("/api/prompts/derive-rules", {"promote": "CLAUDE.md"}, 400, "Invalid promote: not accepted here"),
    ("/api/digest/apply", {"item": "session_stalled:ghost", "fingerprint": "0123456789abcdef"}, 400, "is not in the digest"),
    ("/api/digest/apply", {"item": "session_stalled:ghost", "fingerprint": "x"}, 400, "Invalid fingerprint: must be"),
    # without a fingerprint, the one the digest shows now (as memo digest apply): x is not in it
    ("/api/digest/apply", {"item": "x"}, 400, "Invalid item: x is not in the digest"),
    ("/api/digest/apply", {"item": "x", "note": "y"}, 400, "Invalid note"),
    ("/api/prompts?q=invoices", None, 400, "Invalid query parameter 'q': this endpoint reads project, projectId, query"),
    ("/api/prompts?projectid=web", None, 400, "Invalid query parameter 'projectid'"),  # projectId is the tool's name
    ("/api/nothing/here", None, 404, "No such endpoint: GET /api/nothing/here"),
    # tornado's own errors were HTML pages: a method the endpoint does not take, a path not UTF-8
    ("/api/sessions/s1/edit", None, 405, "Method GET is not allowed on /api/sessions/s1/edit; it takes POST"),
    ("/api/digest", {}, 405, "Method POST is not allowed on /api/digest; it takes GET"),
    ("/api/prompts/%ff", None, 400, "Invalid request: the path is not UTF-8"),
    ("/api/sessions/%ff/edit", {}, 400, "Invalid request: the path is not UTF-8"),
    # an edit over HTTP names what it takes by the wire names (it listed the CLI's options)
    ("/api/sessions/s1/edit", {"project": "web"}, 400, "Invalid session: nothing to change: give client, billable, "
     "summary, toProject, startTime, endTime, minutes or reviewed"),
    # found by a tester of bad input: an empty client (a form left blank) made a billed session internal
    ("/api/sessions/s1/edit", {"project": "web", "client": " "}, 400,
     "Invalid client: is empty: give the client's name ('internal' for none)"),
    ("/api/actions/search", {"query": "a\u0000b", "crossProject": True}, 400, "Invalid query: contains a NUL character"),
    # a misspelt client is refused as by memo activity (not an empty report), naming those known
    ("/api/activity?crossProject=true&client=acme%20corp", None, 400,
     "Invalid client: no session and no [clients] entry of the config has the client 'acme corp' (exact name, any "
     "case); clients known: Acme"),
    ("/api/activity?crossProject=true&client=%3Cscript%3Ealert(1)%3C/script%3E", None, 400, "Invalid client: no session"),
])
def test_errors_are_sanitized_json_with_the_message(seeded, path, data, status, message):
    _, server = seeded
    code, headers, text = server.request(path, data=data)
    assert code == status and headers["Content-Type"].startswith("application/json")
    assert message in json.loads(text)["error"] and "<script" not in text


def test_derive_rules_over_http_saves_traps(seeded):
    vault, server = seeded
    status, result = server.get_json("/api/prompts/derive-rules", data={"crossProject": True, "saveTraps": True})
    assert status == 200 and result["items"][0]["text"] == "Never commit directly to main."
    assert len(result["savedTraps"]) == 1
    assert (vault / "projects" / "api" / "traps" / f"{result['savedTraps'][0]}.md").is_file()


def test_digest_apply_refuses_stale_state_and_applies_fresh(tmp_path):
    vault = tmp_path / "vault"
    start = (datetime.now(timezone.utc) - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    memo("session", "start", "o1", "--project", "web", "--start-time", start, vault=vault)
    server = Server(vault)
    try:
        _, digest = server.get_json("/api/digest")
        [item] = digest["items"]
        stale, answer = server.get_json("/api/digest/apply", data={"item": item["id"], "fingerprint": "0" * 16})
        assert stale == 409 and answer["applied"] is False and answer["item"]["fingerprint"] == item["fingerprint"]
        ok, applied = server.get_json("/api/digest/apply", data={"item": item["id"], "fingerprint": item["fingerprint"]})
        assert ok == 200 and applied["applied"] is True
        _, after = server.get_json("/api/digest?refresh=true")
        assert after["items"] == []
    finally:
        server.stop()


def test_a_non_loopback_bind_needs_a_token(tmp_path):
    refused = memo("serve", "--host", "0.0.0.0", "--port", str(free_port()), vault=tmp_path / "v", check=False)
    assert refused.returncode == 1 and "Invalid token: binding 0.0.0.0 (not loopback) requires --token" in refused.stderr
    # the token is the network's only lock: "a" was taken (found by a helper), and so was a word repeated
    for weak in ("a", "password", "aaaaaaaaaaaaaaaaaaaa", "abababababababababab"):
        short = memo("serve", "--host", "0.0.0.0", "--port", str(free_port()), vault=tmp_path / "v",
                     env={"MEMO_TOKEN": weak}, check=False)
        assert short.returncode == 1 and "give one of at least 16 characters, not a word" in short.stderr, weak


def test_with_a_token_requests_without_it_get_401(tmp_path):
    server = Server(tmp_path / "v", "--token", "s3cret-token-value")
    try:
        status, _, text = server.request("/api/prompts?crossProject=true")
        assert status == 401 and "Unauthorized" in json.loads(text)["error"]
        wrong, _, _ = server.request("/api/prompts", headers={"Authorization": "Bearer nope"})
        assert wrong == 401
        ok, _, _ = server.request("/api/prompts?crossProject=true",
                                  headers={"Authorization": "Bearer s3cret-token-value"})
        assert ok == 200
        assert server.request("/api/digest", headers={"X-Memo-Token": "s3cret-token-value"})[0] == 200
        assert server.request("/api/digest?%74oken=s3cret-token-value")[0] == 200
        # the sign-in page says what the password is, loads nothing from outside (Panel's loaded its
        # logo from a CDN), and shows its own words for a failed sign-in, never the address's text
        status, _, page = server.request("/login?error=%3Cscript%3Ealert(1)%3C/script%3E")
        assert status == 200 and "MEMO_TOKEN" in page and "alert(1)" not in page
        assert "That is not the token memo serve was started with." in page
        assert "<script>" not in page and not re.search(r"(src|href)=\"(https?:)?//", page)
        # found by an attacker: the dashboard page's session token (readable by its scripts) carried
        # the request's Authorization header and the HttpOnly sign-in cookies
        import http.cookiejar
        import urllib.parse

        from bokeh.util.token import get_token_payload

        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        form = urllib.parse.urlencode({"username": "me", "password": "s3cret-token-value"}).encode()
        opener.open(urllib.request.Request(server.base + "/login", data=form), timeout=30).read()
        assert {cookie.name for cookie in jar} >= {"user"}
        signed_in = opener.open(urllib.request.Request(server.base + "/", headers={
            "Authorization": "Bearer s3cret-token-value", "X-Memo-Token": "s3cret-token-value"}), timeout=30)
        html = signed_in.read().decode("utf-8")
        token = re.search(r'"token":\s*"([^"]+)"', html).group(1)
        payload = get_token_payload(token)
        assert "s3cret-token-value" not in json.dumps(payload) and payload.get("cookies", {}) == {}
        assert not {"Authorization", "X-Memo-Token", "Cookie"} & set(payload.get("headers", {}))
        # refused from its headers, before a body (a sync push may be 64 MB) is read and kept: the
        # boundary's answer closes the connection
        import http.client

        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        connection.request("POST", "/api/sync/records", body=b'{"records": []}' + b" " * (8 * 1024 * 1024),
                           headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        assert (answer.status, answer.getheader("Connection")) == (401, "close")
        assert "Unauthorized" in json.loads(answer.read())["error"]
        connection.close()
    finally:
        server.stop()


def test_no_other_site_may_frame_the_dashboard_or_the_api(seeded):
    """Clickjacking: a page that framed the dashboard could trick a click on Issue invoice or
    Promote. ``Sec-Fetch-Dest: iframe`` is refused (403) in browsers that send it; every answer
    also says no other origin may frame it, for those that do not."""
    _, server = seeded
    for path in ("/", "/api/prompts?crossProject=true", "/api/nosuch"):
        status, headers, _ = server.request(path)
        assert status in (200, 404), path
        assert headers["X-Frame-Options"] in ("SAMEORIGIN", "DENY"), path
        policy = headers["Content-Security-Policy"]
        assert "frame-ancestors 'self'" in policy or "frame-ancestors 'none'" in policy, path
    refused, _, _ = server.request("/", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate",
                                                 "Sec-Fetch-Dest": "iframe"})
    assert refused == 403


def test_a_server_raises_its_open_files_limit_and_closes_idle_connections(tmp_path):
    """One file handle per connection: building the server raises the soft limit (often 1024) to
    the hard one, and its HTTP server closes a connection idle, or a body still arriving, after a
    minute (Tornado's default keeps them an hour)."""
    import resource

    from memo_analytics.config import Settings
    from memo_analytics.interfaces.server import build_server
    from memo_analytics.runtime import Runtime

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    server = None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))
        server = build_server(Runtime(Settings(vault_root=tmp_path / "v")), port=0)
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == (hard if hard != resource.RLIM_INFINITY else 1 << 20)
        params = server._http.conn_params
        assert (params.header_timeout, params.body_timeout) == (60, 60)
    finally:
        if server is not None:
            server.stop()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_big_body_is_refused_from_its_headers_on_every_route_but_the_sync_push(seeded):
    """The server reads up to 64 MB for the sync push; every other route refuses more than 4 MB
    from ``Content-Length`` before the body is kept (a caller sent twelve 63 MB bodies at once and
    the server grew by 0.8 GB), and a body sent in chunks (no length) is refused too."""
    import http.client

    _, server = seeded
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    body = b"{" + b" " * (5 * 1024 * 1024) + b"}"
    connection.request("POST", "/api/actions/record", body=body, headers={"Content-Type": "application/json"})
    answer = connection.getresponse()
    assert answer.status == 413 and answer.getheader("Connection") == "close"  # the boundary's, not a handler's
    assert json.loads(answer.read())["error"] == (f"Request body is {len(body)} bytes; this endpoint reads at most "
                                                  f"{4 * 1024 * 1024}")
    connection.close()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("POST", "/api/actions/record", body=iter([b'{"body": "x"}']), encode_chunked=True,
                       headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    answer = connection.getresponse()
    assert answer.status == 411 and "Content-Length" in json.loads(answer.read())["error"]
    connection.close()
    status, _ = server.get_json("/api/sync/records", data={"records": []})
    assert status != 413
    # the dashboard's routes too: a POST of 63 MB to / was read and held a minute, no token asked (a helper)
    for path in ("/", "/login", "/static/x.js", "/ws"):
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        connection.request("POST", path, body=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
        answer = connection.getresponse()
        assert (answer.status, answer.getheader("Connection")) == (413, "close"), path
        connection.close()
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        connection.request("POST", path, body=iter([b"a=1"]), encode_chunked=True,
                           headers={"Transfer-Encoding": "chunked"})
        assert connection.getresponse().status == 411, path
        connection.close()
    # a length that is not one number ("N,N", or two headers) was read as N past the 4 MB check: six
    # 59 MB bodies held at once grew the server by 360 MB (found by a helper)
    for lengths in ([b"Content-Length: 13,13"], [b"Content-Length: 13", b"Content-Length: 13"]):
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(b"\r\n".join([b"POST /api/actions/list HTTP/1.1", f"Host: 127.0.0.1:{server.port}".encode(),
                                        b"Content-Type: application/json", *lengths, b"", b'{"limit": 10}']))
            answer = sock.recv(65536).decode()
        assert answer.startswith("HTTP/1.1 400 Bad Request"), answer
        assert '"error": "Bad request: send one Content-Length, a number of bytes"' in answer


def test_a_token_given_as_an_option_is_said_to_be_readable_in_the_process_list(tmp_path):
    """Any user of the machine reads `ps -eo args`: the team daemon's token was there."""
    import socket

    from tests.inprocess import memo

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = str(taken.getsockname()[1])
        ran = memo("serve", "--token", "s3cret-token-value", "--port", port, vault=tmp_path / "v", check=False)
        assert ran.returncode == 1  # the port is taken: it stops before serving
        assert ran.stderr.startswith("warning: --token is in the process list, where every user of this machine "
                                     "can read it; give it as MEMO_TOKEN instead")
        quiet = memo("serve", "--port", port, vault=tmp_path / "v", check=False, env={"MEMO_TOKEN": "s3cret-token"})
        assert "warning" not in quiet.stderr
    finally:
        taken.close()


def _flooded(args: list[str], port: int, tmp_path: Path, probe: urllib.request.Request) -> bytes:
    """Start `memo ARGS` with 640 open files, flood ``port`` with 800 idle connections, check the
    server is still up, close them, and answer ``probe``'s body (the server must answer again)."""
    import resource

    def small_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (640, 640))

    proc = subprocess.Popen([sys.executable, "-m", "memo_analytics", "--vault-root", str(tmp_path / "v"), *args],
                            preexec_fn=small_limit, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    flood: list[socket.socket] = []
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                time.sleep(0.2)
        for _ in range(800):  # more than the server's 640 open files
            try:
                flood.append(socket.create_connection(("127.0.0.1", port), timeout=2))
            except OSError:
                break
        time.sleep(2)
        assert proc.poll() is None, proc.stderr.read()
        for sock in flood:
            sock.close()
        flood.clear()
        time.sleep(1)
        with urllib.request.urlopen(probe, timeout=30) as answer:
            assert answer.status == 200
            body = answer.read()
        assert proc.poll() is None
        return body
    finally:
        for sock in flood:
            sock.close()
        proc.terminate()
        proc.wait(10)
        proc.stderr.close()


def test_a_flood_of_idle_connections_beyond_the_open_files_limit_leaves_the_server_up(tmp_path):
    """4,200 bare connections took every file handle of `memo serve` (a limit of 4,096): it could
    not even load the code that reports the error, and stopped. Connections beyond the cap are
    closed as they arrive; once the flood goes, it answers again."""
    port = free_port()
    body = _flooded(["serve", "--port", str(port), "--mcp-port", "0"], port, tmp_path,
                    urllib.request.Request(f"http://127.0.0.1:{port}/api/activity?crossProject=true"))
    assert json.loads(body)["totalSessions"] == 0


def test_health_answers_with_the_version_and_every_endpoint_the_server_routes(seeded):
    """A monitor (or a person reading the API) had no route to probe and no list of routes."""
    from memo_analytics import __version__
    from memo_analytics.interfaces.http import ENDPOINTS, api_patterns

    _, server = seeded
    status, health = server.get_json("/api/health")
    assert status == 200 and health["status"] == "ok" and health["version"] == __version__
    assert health["endpoints"] == list(ENDPOINTS)
    routed = {pattern for pattern, _, _ in api_patterns(None, None) if pattern != r"/api/.*"}
    listed = {re.sub(r"\{[a-z]+\}", "X", e.split(" ", 1)[1]) for e in ENDPOINTS}
    assert {re.sub(r"\([^)]*\)", "X", p) for p in routed} == listed
    for endpoint in ENDPOINTS:  # each one is routed to its handler, not to the 404
        method, path = endpoint.split(" ", 1)
        code, _, text = server.request(path.replace("{id}", "nope").replace("{action}", "nope")
                                       .replace("{agent}", "nope"), data={} if method == "POST" else None)
        assert "No such endpoint" not in text, (endpoint, code)
    _, _, text = server.request("/api/nothing")
    assert "GET /api/health lists them" in json.loads(text)["error"]


@pytest.mark.parametrize("beside", [False, True], ids=["memo-mcp-http", "memo-serve-mcp-port"])
def test_a_flood_of_idle_connections_leaves_the_mcp_endpoint_up(tmp_path, beside):
    """800 bare connections to `memo mcp --http` (or to the MCP port of `memo serve`) with 640
    open files: uvicorn accepted 2,048 in one pass and held every idle one, the file handles ran
    out and the server stopped ("Cannot use …rich/traceback.py: Too many open files"). It now
    holds a capped number, closes idle ones after the keep-alive timeout, and answers again."""
    port = free_port()
    args = (["serve", "--port", str(free_port()), "--mcp-port", str(port)] if beside
            else ["mcp", "--http", "--port", str(port)])
    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}).encode()
    probe = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=initialize, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    assert b'"serverInfo"' in _flooded(args, port, tmp_path, probe)


@contextlib.contextmanager
def _capped_server(cap: int, per_address: int | None = None, address: str = "127.0.0.1"):
    """A Tornado server answering "hi" on a free port of ``address``, its connections capped as
    ``memo serve`` caps them (:func:`~memo_analytics.interfaces.server._cap_connections`); yields
    ``ask(source="127.0.0.1", to="127.0.0.1") -> bytes``: one whole request's answer (b"" when
    closed unanswered)."""
    import asyncio

    from tornado.httpserver import HTTPServer
    from tornado.ioloop import IOLoop
    from tornado.netutil import bind_sockets
    from tornado.web import Application, RequestHandler

    from memo_analytics.interfaces.server import _cap_connections

    class Hello(RequestHandler):
        def get(self) -> None:
            self.write("hi")

    box: dict = {}
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(asyncio.new_event_loop())
        server = HTTPServer(Application([(r"/", Hello)]))
        sockets = bind_sockets(0, address)
        server.add_sockets(sockets)
        _cap_connections(server, cap, per_address=per_address)
        box.update(port=sockets[0].getsockname()[1], loop=IOLoop.current())
        ready.set()
        IOLoop.current().start()

    def ask(source: str = "127.0.0.1", to: str = "127.0.0.1") -> bytes:
        answer = b""
        with socket.create_connection((to, box["port"]), timeout=5, source_address=(source, 0)) as sock:
            try:
                sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                while chunk := sock.recv(65536):
                    answer += chunk
            except ConnectionResetError:  # closed before the request was read
                pass
        return answer

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10)
    ask.port = box["port"]
    try:
        yield ask
    finally:
        box["loop"].add_callback(box["loop"].stop)
        thread.join(10)


def test_a_connection_beyond_the_cap_is_closed_at_once_and_a_freed_place_serves_again():
    """The server holds at most its cap of HTTP connections: one more is closed as it arrives
    (a flood of idle connections never takes the last file handles), and a connection that ends
    — the caller hung up, or its answer closed it — frees its place."""
    def served_within(ask, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if ask().startswith(b"HTTP/1.1 200"):
                return True
            time.sleep(0.05)
        return False

    with _capped_server(2) as ask:
        assert ask().startswith(b"HTTP/1.1 200") and ask().startswith(b"HTTP/1.1 200")  # answered ones free their place
        deadline = time.monotonic() + 10
        while True:  # an answered connection leaves the count just after its caller saw it close
            held = [socket.create_connection(("127.0.0.1", ask.port), timeout=5) for _ in range(2)]
            for sock in held:
                sock.sendall(b"GET / HTTP/1.1\r\n")  # headers still arriving: the connection stays open
            time.sleep(0.2)
            third = ask()
            if third == b"" or time.monotonic() > deadline:
                break
            for sock in held:
                sock.close()
            time.sleep(0.2)
        assert third == b""  # the third is closed without an answer
        held.pop().close()
        assert served_within(ask, 5)  # the place a caller left is taken again
        [kept] = held  # the one still held was never dropped: it is answered once its request is whole
        kept.sendall(b"Host: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert kept.recv(65536).startswith(b"HTTP/1.1 200")
        kept.close()


def _this_machines_address() -> str:
    """This machine's address on its network (not loopback): the source of its own connections to it."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("203.0.113.1", 9))  # no packet is sent: the route names the address
        return probe.getsockname()[0]
    finally:
        probe.close()


def test_one_address_holding_its_share_of_connections_leaves_room_for_the_others():
    """Found by an attacker: one host held every connection place of a team daemon with idle
    connections (no token needed), and no laptop got in until it let go. An address of the network
    holds at most its share; another address is still answered. Loopback — a TLS proxy on this
    machine brings every laptop from it (found by a breaker: 32 idle connections locked the team
    out) — holds only the cap."""
    network = _this_machines_address()
    assert not network.startswith("127."), network
    held = []
    with _capped_server(10, per_address=2, address="0.0.0.0") as ask:
        try:
            for _ in range(2):  # the flooding host's share, held idle
                sock = socket.create_connection((network, ask.port), timeout=5, source_address=(network, 0))
                sock.sendall(b"GET / HTTP/1.1\r\n")
                held.append(sock)
            time.sleep(0.3)
            assert ask(network, network) == b""  # its third is closed unanswered
            assert ask("127.0.0.1").startswith(b"HTTP/1.1 200")  # another address gets in
            for _ in range(3):  # loopback (a proxy here) past the share: still answered
                sock = socket.create_connection(("127.0.0.1", ask.port), timeout=5)
                sock.sendall(b"GET / HTTP/1.1\r\n")
                held.append(sock)
            time.sleep(0.3)
            assert ask("127.0.0.1").startswith(b"HTTP/1.1 200")
            held.pop(0).close()
            time.sleep(0.3)
            assert ask(network, network).startswith(b"HTTP/1.1 200")  # a place it let go is its own again
        finally:
            for sock in held:
                sock.close()


def test_a_server_whose_hybrid_remote_is_itself_is_refused(tmp_path):
    """A team daemon started with the lead laptop's config (hybrid, remoteUrl = this daemon)
    pushed every record it took to itself."""
    port = free_port()
    config = tmp_path / "config.toml"
    config.write_text(f'mode = "hybrid"\n[hybrid]\nremoteUrl = "http://localhost:{port}"\n')
    ran = memo("serve", "--port", str(port), vault=tmp_path / "v", env={"MEMO_CONFIG": str(config)}, check=False)
    assert ran.returncode == 1 and ran.stderr.strip() == (
        f"error: Invalid hybrid.remoteUrl: http://localhost:{port} is this server itself: it would push every record "
        "to itself; give the team daemon a config of its own (MEMO_CONFIG=FILE memo serve), mode local")


@pytest.mark.parametrize("sig, said", [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "Ctrl-C")])
def test_a_server_stopped_by_a_signal_says_so_and_exits_0(tmp_path, sig, said):
    """Found by an operator: ``memo serve`` under a service manager stopped by SIGTERM exited 143
    without a word (and Ctrl-C said ``error: aborted``, exit 130). The signal is taken from before
    the ready line on, so a stop sent the moment the line is read is a clean stop too."""
    server = Server(tmp_path / "vault")
    server.proc.send_signal(sig)  # at once, the ready line just read
    time.sleep(0.2)
    server.proc.send_signal(sig)  # found by an attacker: a second one while it wound down exited 143 (130)
    rest = server.proc.stderr.read()
    assert server.proc.wait(20) == 0, rest
    server.proc.stderr.close()
    assert rest.strip().splitlines()[-1] == f"memo serve: stopped ({said})"


def test_a_page_out_of_range_is_told_and_compact_answers_alike_over_http(seeded):
    """Found by an operator and a tester: ``limit: -3``/``offset: -1`` were answered ``limit: 1``,
    ``offset: 0`` without a word (the CLI refuses them); ``POST /api/actions/list`` took
    ``compact: true`` and answered in full; a compact empty page had no ``items``."""
    _, server = seeded
    status, page = server.get_json("/api/prompts?crossProject=true&limit=-3&offset=-1")
    assert status == 200 and (page["limit"], page["offset"]) == (1, 0)
    assert page["note"] == "limit -3 is out of range (1–100): 1 was used; offset -1 is out of range (0 or more): 0 was used"
    status, full = server.get_json("/api/actions/list", data={"crossProject": True, "limit": 2})
    status, small = server.get_json("/api/actions/list", data={"crossProject": True, "limit": 2, "compact": True})
    assert status == 200 and "note" not in full and len(small["items"]) == len(full["items"]) == 2
    assert "status" in full["items"][0] and "status" not in small["items"][0]  # compact leaves the defaults out
    status, empty = server.get_json("/api/actions/list", data={"projectId": "web", "sessionId": "nope", "compact": True})
    assert status == 200 and empty["items"] == [] and empty["total"] == 0


def test_a_damaged_index_answers_503_not_a_callers_error(tmp_path):
    """Found by an operator: an index the server cannot use (read-only, damaged) answered HTTP 400,
    a caller's error, to every request; it is the server's: 503, with the one-line reason."""
    vault = tmp_path / "vault"
    memo("session", "start", "s1", "--project", "web", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    server = Server(vault)
    try:
        index = vault / ".memo" / "index.sqlite"
        for suffix in ("-wal", "-shm"):
            Path(f"{index}{suffix}").unlink(missing_ok=True)
        index.unlink()
        index.write_bytes(b"this is not a database" * 100)  # another file at its path: opened again
        time.sleep(2.5)  # past the server's recheck interval (RECHECK_SECONDS)
        status, body = server.get_json("/api/sessions?crossProject=true")
        assert status == 503 and "is damaged" in body["error"], (status, body)
    finally:
        server.stop()
