"""The token's lock on a server reachable from the network (found by a security tester): wrong
tokens are counted per address — past twenty a minute every request of it that needs the token
is refused unread (429), logged once —, a guessable token is refused for a network bind, a
signed-out cookie no longer signs in (a copy another local server read: cookies go to every port
of a host), nor does one of another run of the server, the sign-out page loads nothing from
outside, and a ``next_url`` cookie another port planted no longer breaks the sign-in."""

from __future__ import annotations

import http.client
import re
import urllib.parse

import pytest

from memo_analytics.domain.hosts import WRONG_TOKEN_LIMIT, WrongTokens, check_bind
from memo_analytics.domain.errors import InvalidFieldError
from tests.integration.test_http_api import Server, free_port

TOKEN = "guard-t0ken-Lq8Zx2Vb7Nm4"


def _post_form(port: int, path: str, form: dict, cookie: str | None = None) -> tuple[int, dict, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Host": f"127.0.0.1:{port}",
               **({"Cookie": cookie} if cookie else {})}
    conn.request("POST", path, body=urllib.parse.urlencode(form), headers=headers)
    response = conn.getresponse()
    answer = (response.status, {k.lower(): v for k, v in response.getheaders()} |
              {"set-cookie-all": response.msg.get_all("Set-Cookie") or []}, response.read().decode())
    conn.close()
    return answer


def _get(port: int, path: str, cookie: str | None = None, token: str | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Host": f"127.0.0.1:{port}", **({"Cookie": cookie} if cookie else {}),
               **({"Authorization": f"Bearer {token}"} if token else {})}
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    status, text = response.status, response.read().decode("utf-8", "replace")
    conn.close()
    return status, text


def _cookies(set_cookies: list[str]) -> str:
    return "; ".join(c.split(";", 1)[0] for c in set_cookies if c.split("=", 1)[0] in ("user", "id_token"))


def test_wrong_tokens_past_the_limit_are_refused_unread_the_right_one_too_and_logged_once(tmp_path):
    server = Server(tmp_path / "v", "--host", "0.0.0.0", "--token", TOKEN)
    try:
        statuses = [_get(server.port, "/api/health", token=f"guess-{n}")[0] for n in range(WRONG_TOKEN_LIMIT)]
        assert set(statuses) == {401}
        status, text = _get(server.port, "/api/health", token=TOKEN)  # unread: a guess learns nothing
        assert status == 429 and "too many wrong tokens from this address; try again in" in text
        assert _post_form(server.port, "/login", {"username": "a", "password": TOKEN})[0] == 429
        assert _get(server.port, "/api/health")[0] == 429  # and nothing else needing the token is read
    finally:
        server.proc.terminate()
        server.proc.wait(10)
    log = server.proc.stderr.read()
    server.proc.stderr.close()
    assert log.count(f"{WRONG_TOKEN_LIMIT} wrong tokens from 127.0.0.1 within 60 s") == 1 and TOKEN not in log


def _post_as(port: int, path: str, headers: dict) -> int:
    """A POST whose headers (its Host too) are ``headers``."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.putrequest("POST", path, skip_host=True)
    for name, value in headers.items():
        conn.putheader(name, value)
    conn.putheader("Content-Length", "1")
    conn.endheaders(b"x")
    status = conn.getresponse().status
    conn.close()
    return status


def _post(port: int, path: str, headers: dict) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", path, body=b"x", headers={"Host": f"127.0.0.1:{port}", **headers})
    status = conn.getresponse().status
    conn.close()
    return status


def test_a_web_pages_requests_and_requests_of_no_token_never_lock_the_right_token_out(tmp_path):
    """Found by a security tester: any page's cross-site posts to the MCP port had their token read
    before their site, each counted a wrong token: twenty locked the person's right token out of
    the API, the sign-in and MCP (429) for as long as the tab stayed open. The MCP port refuses a
    cross-site request first (403, as the status port does), and a request of no token at all
    (a page's, an agent configured without it) guesses nothing and is not counted."""
    port, mcp_port = free_port(), free_port()
    server = Server(tmp_path / "v", "--token", TOKEN, "--mcp-port", str(mcp_port), port=port)
    try:
        page = {"Origin": "http://localhost:8000", "Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}
        assert {_post(mcp_port, "/mcp", page) for _ in range(WRONG_TOKEN_LIMIT + 5)} == {403}
        bare = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        assert {_post(mcp_port, "/mcp", bare) for _ in range(WRONG_TOKEN_LIMIT + 5)} == {401}
        assert {_get(port, "/api/health")[0] for _ in range(WRONG_TOKEN_LIMIT + 5)} == {401}
        assert _get(port, "/api/health", token=TOKEN)[0] == 200
        # a DNS-rebinding page: its Host and Origin another name's, "same-origin", tokens it guesses — refused for
        # its Host before any is counted (found by a security tester: 20 of them locked the right token out)
        rebound = {**bare, "Host": f"rebind.attacker.example:{mcp_port}", "Sec-Fetch-Site": "same-origin",
                   "Origin": f"http://rebind.attacker.example:{mcp_port}"}
        assert {_post_as(mcp_port, "/mcp", {**rebound, "Authorization": f"Bearer guess-{n}"})
                for n in range(WRONG_TOKEN_LIMIT + 5)} == {421}
        assert _get(port, "/api/health", token=TOKEN)[0] == 200
        # a wrong token given is counted, on either port
        assert {_post(mcp_port, "/mcp", {**bare, "Authorization": f"Bearer guess-{n}"})
                for n in range(WRONG_TOKEN_LIMIT)} == {401}
        assert _get(port, "/api/health", token=TOKEN)[0] == 429
    finally:
        server.stop()


def test_wrong_sign_ins_count_as_wrong_tokens(tmp_path):
    server = Server(tmp_path / "v", "--token", TOKEN)
    try:
        for n in range(WRONG_TOKEN_LIMIT):
            assert _post_form(server.port, "/login", {"username": "a", "password": f"guess-{n}"})[0] == 302
        assert _post_form(server.port, "/login", {"username": "a", "password": TOKEN})[0] == 429
    finally:
        server.stop()


def test_the_count_forgets_an_address_a_window_after_its_last_wrong_token():
    count = WrongTokens(limit=3, window=60)
    for t in (0, 10, 20):
        assert count.wait("192.0.2.7", t) is None
        said = count.failed("192.0.2.7", t)
    assert said == "3 wrong tokens from 192.0.2.7 within 60 s: its requests that need the token are refused for 60 s"
    assert count.wait("192.0.2.7", 30) == 50 and count.wait("192.0.2.8", 30) is None  # another address is not
    assert count.wait("192.0.2.7", 80.5) is None  # a window after the last wrong one
    assert count.failed("192.0.2.7", 81) is None and count.wait("192.0.2.7", 81) is None  # counting afresh
    spaced = WrongTokens(limit=3, window=60)
    for t in (0, 61, 122):  # one a minute never adds up
        spaced.failed("192.0.2.9", t)
    assert spaced.wait("192.0.2.9", 123) is None


@pytest.mark.parametrize("token", ["Password1234567!", "Summer2026Summer!", "abcdefgh12345678"])
def test_a_guessable_token_is_no_lock_for_a_network_bind(token):
    with pytest.raises(InvalidFieldError, match="guessable in about 10\\^"):
        check_bind("0.0.0.0", token)
    check_bind("127.0.0.1", token)  # loopback asks no token at all
    check_bind("0.0.0.0", TOKEN)


def test_a_signed_out_cookie_and_one_of_another_run_no_longer_sign_in(tmp_path):
    port = free_port()
    server = Server(tmp_path / "v", "--token", TOKEN, port=port)
    try:
        status, headers, _ = _post_form(port, "/login", {"username": "ana", "password": TOKEN})
        assert status == 302
        cookie = _cookies(headers["set-cookie-all"])
        assert _get(port, "/", cookie=cookie)[0] == 200
        kept = cookie  # what another local server on another port received with a request
        status, page = _get(port, "/logout", cookie=cookie)
        assert status == 200 and "signed out" in page
        assert not re.search(r"(src|href)=\"(https?:)?//", page)  # Panel's loaded its logo from a CDN
        status, _ = _get(port, "/", cookie=kept)
        assert status == 302  # to the sign-in: the copy signs in no more
        status, headers, _ = _post_form(port, "/login", {"username": "ana", "password": TOKEN})
        again = _cookies(headers["set-cookie-all"])
    finally:
        server.stop()
    server = Server(tmp_path / "v", "--token", TOKEN, port=port)  # the same token, another run
    try:
        assert _get(port, "/", cookie=again)[0] == 302
    finally:
        server.stop()


def test_a_next_url_cookie_planted_by_another_port_does_not_break_the_sign_in(tmp_path):
    server = Server(tmp_path / "v", "--token", TOKEN)
    try:
        status, headers, _ = _post_form(server.port, "/login", {"username": "a", "password": TOKEN},
                                        cookie='next_url="https://evil.example/"')
        assert status == 302 and headers["location"] == "/"
        status, headers, _ = _post_form(server.port, "/login", {"username": "a", "password": TOKEN},
                                        cookie='next_url="/?tab=activity"')
        assert status == 302 and headers["location"] == "/?tab=activity"
    finally:
        server.stop()


def test_the_throttle_has_no_way_round_and_a_long_token_is_taken(tmp_path):
    """Found by a breaker: sign-ins as a multipart form were never counted, one with the token in the
    address was read (and echoed back in the address of Panel's answer), the MCP endpoint took
    X-Forwarded-For as the caller's address and counted apart from the API, and a token of over 72
    characters ended `memo serve --host 0.0.0.0` in a traceback (zxcvbn's limit)."""
    import secrets
    import uuid

    port, mcp_port = free_port(), free_port()
    server = Server(tmp_path / "v", "--token", TOKEN, "--mcp-port", str(mcp_port), port=port)
    try:
        assert _post_form(port, f"/login?username=a&password={TOKEN}", {})[0] == 400
        boundary = uuid.uuid4().hex
        for n in range(WRONG_TOKEN_LIMIT // 2):  # half as multipart sign-ins
            body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"username\"\r\n\r\na\r\n"
                    f"--{boundary}\r\nContent-Disposition: form-data; name=\"password\"\r\n\r\nguess-{n}\r\n"
                    f"--{boundary}--\r\n")
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/login", body=body, headers={"Host": f"127.0.0.1:{port}", "Content-Type":
                                                                f"multipart/form-data; boundary={boundary}"})
            assert conn.getresponse().status == 302
            conn.close()
        for n in range(WRONG_TOKEN_LIMIT - WRONG_TOKEN_LIMIT // 2):  # half at the MCP endpoint, each "from" elsewhere
            conn = http.client.HTTPConnection("127.0.0.1", mcp_port, timeout=30)
            conn.request("POST", "/mcp", body="{}", headers={"Host": f"127.0.0.1:{mcp_port}", "Authorization":
                                                             f"Bearer guess-{n}", "X-Forwarded-For": f"10.0.0.{n}",
                                                             "Content-Type": "application/json"})
            assert conn.getresponse().status == 401
            conn.close()
        assert _get(port, "/api/health", token=TOKEN)[0] == 429  # one count for the address, whatever route
    finally:
        server.stop()
    check_bind("0.0.0.0", secrets.token_urlsafe(64))
    check_bind("0.0.0.0", secrets.token_hex(48))
