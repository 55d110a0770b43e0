"""No secret leaves through the logs (issue 11 point 5): `memo serve` used to write the full
request URI of every 4xx/5xx, `?token=` included, to its log. A real daemon bound off
loopback with a token is sent requests that get logged (400, 401, 404, 413), with the token
in the query string and in headers; its whole log is then scanned."""

from __future__ import annotations

import logging

import pytest

from memo_analytics.interfaces.http import install_log_redaction, redact_log_text
from tests.integration.test_http_api import Server

TOKEN = "daemon-t0ken-9c41be77d2"


def test_the_daemon_log_never_holds_the_token(tmp_path):
    server = Server(tmp_path / "vault", "--host", "0.0.0.0", "--token", TOKEN, "--mcp-port", "0")
    try:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert server.request(f"/api/prompts?crossProject=true&q=typo&token={TOKEN}")[0] == 400
        assert server.request(f"/api/nothing?token={TOKEN}")[0] == 404
        assert server.request("/api/prompts?token=wrong-guess-123")[0] == 401
        assert server.request("/api/prompts/missing-id", headers=auth)[0] == 404
        assert server.request("/api/prompts/missing-id", headers={"X-Memo-Token": TOKEN})[0] == 404
        assert server.request(f"/api/actions/record?token={TOKEN}", data={"body": "x" * 4_200_000})[0] == 413
        # found by a security tester: the token in another parameter than token= was logged in clear
        assert server.request(f"/api/prompts?token={TOKEN}&bogus={TOKEN}")[0] == 400
        assert server.request(f"/api/prompts?project={TOKEN}&tokn={TOKEN}", headers=auth)[0] == 400
    finally:
        server.proc.terminate()
        server.proc.wait(10)
    log = server.proc.stderr.read()
    server.proc.stderr.close()
    assert "/api/nothing?token=" in log  # the requests were logged ...
    assert TOKEN not in log               # ... without the token


def test_a_token_in_the_dashboards_address_is_refused_and_never_lands_in_a_cookie_or_the_log(tmp_path):
    """Found by an attacker: `/?token=T` was redirected to `./login?next=%2F%3Ftoken%3DT`, whose
    page set a cookie scripts read (`next_url="/?token=T"`), carried it into the dashboard's session
    arguments, and logged a `next=` holding it unmasked; the sign-in page showed any `?error=` text
    (a link from another site opens it). The dashboard's pages refuse an address naming a token."""
    import http.cookiejar
    import urllib.parse
    import urllib.request

    server = Server(tmp_path / "vault", "--token", TOKEN, "--mcp-port", "0")
    try:
        deep = f"/?token={TOKEN}"
        for _ in range(5):  # next= within next= … five levels down (four got through: found by a breaker)
            deep = "/login?next=" + urllib.parse.quote(deep, safe="")
        for path in (f"/?token={TOKEN}", f"/?%74oken={TOKEN}", f"/login?next=%2F%3Ftoken%3D{TOKEN}",
                     f"/login?next=https%3A%2F%2Fevil.example%2F%3Fa%3D1%26token%3D{TOKEN}",
                     f"/?a=1;token={TOKEN}", f"/login?next=%2F%3Fa%3D1%3Btoken%3D{TOKEN}", deep):
            jar = http.cookiejar.CookieJar()
            opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
            try:
                with opener.open(server.base + path, timeout=30) as response:
                    status, text = response.status, response.read().decode()
            except urllib.error.HTTPError as exc:
                status, text = exc.code, exc.read().decode()
            assert status == 400 and "takes its token at its sign-in page, never in its address" in text, path
            assert TOKEN not in text and not any(TOKEN in (cookie.value or "") for cookie in jar), path
        # a value that only holds the text (a search for "token=abc") is no token in the address
        assert server.request("/?q=token%3Dabc")[0] != 400
        # the api still takes it (scripts and curl), and the sign-in page shows memo's words only
        assert server.request(f"/api/prompts?crossProject=true&token={TOKEN}")[0] == 200
        status, _, page = server.request("/login?error=Session%20expired%3A%20paste%20your%20token%20at%20evil.example")
        assert status == 200 and "evil.example" not in page and "not the token memo serve was started with" in page
    finally:
        server.proc.terminate()
        server.proc.wait(10)
    log = server.proc.stderr.read()
    server.proc.stderr.close()
    assert TOKEN not in log


def test_a_token_said_twice_is_no_lock_for_a_network_bind():
    from memo_analytics.domain.errors import InvalidFieldError
    from memo_analytics.domain.hosts import check_bind

    for weak in ("abcdefghabcdefgh", "1234567812345678", "password12345678password12345678"):
        with pytest.raises(InvalidFieldError, match="not a word nor one said again"):
            check_bind("0.0.0.0", weak)
    check_bind("0.0.0.0", "Zq8xK2pLm4Nr7Vt9Wb3Yc6Hd")


def test_log_records_are_masked_as_they_are_made(caplog):
    install_log_redaction()
    with caplog.at_level(logging.WARNING, logger="tornado.access"):
        logging.getLogger("tornado.access").warning("%d %s", 404, f"GET /api/x?a=1&token={TOKEN} (127.0.0.1)")
        logging.getLogger("tornado.application").error("Uncaught exception\n%r",
                                                       {"Authorization": f"Bearer {TOKEN}", "X-Memo-Token": TOKEN})
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "GET /api/x?a=1&token=" in text and TOKEN not in text


def test_redact_log_text_masks_query_tokens_headers_and_secret_shapes():
    masked = redact_log_text(f"GET /api/p?token={TOKEN}&x=1 Authorization: Bearer {TOKEN} "
                             "key AKIAIOSFODNN7EXAMPLQ")
    assert TOKEN not in masked and "AKIAIOSFODNN7EXAMPLQ" not in masked and "&x=1" in masked
    nested = redact_log_text(f"400 GET /login?next=https%3A%2F%2Fevil.example%2F%3Fa%3D1%26token%3D{TOKEN}%26b%3D2 "
                             f"and /x?next=%252F%253Ftoken%253D{TOKEN}")
    assert TOKEN not in nested and "%26b%3D2" in nested and "evil.example" in nested


def test_a_browser_tab_closed_logs_no_traceback_and_other_errors_stay(caplog):
    """Found by an operator: each dashboard tab closed wrote a 50-line ERROR traceback
    (WebSocketClosedError, "Task exception was never retrieved") into `memo serve`'s log."""
    import logging

    from tornado.iostream import StreamClosedError
    from tornado.websocket import WebSocketClosedError

    from memo_analytics.interfaces.http import quiet_closed_tabs

    quiet_closed_tabs()
    quiet_closed_tabs()  # once is enough: no second filter
    logger = logging.getLogger("asyncio")
    assert len(logger.filters) == len(set(map(id, logger.filters)))
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        for exc in (WebSocketClosedError(), StreamClosedError(), RuntimeError("the index is damaged")):
            try:
                raise exc
            except Exception:  # noqa: BLE001 - logged as asyncio logs a task's exception
                logger.error("Task exception was never retrieved", exc_info=True)
    assert [r.exc_info[1].__class__.__name__ for r in caplog.records] == ["RuntimeError"]
