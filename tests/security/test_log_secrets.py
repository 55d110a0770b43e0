"""No secret leaves through the logs (issue 11 point 5): `memo serve` used to write the full
request URI of every 4xx/5xx, `?token=` included, to its log. A real daemon bound off
loopback with a token is sent requests that get logged (400, 401, 404, 413), with the token
in the query string and in headers; its whole log is then scanned."""

from __future__ import annotations

import logging

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
    finally:
        server.proc.terminate()
        server.proc.wait(10)
    log = server.proc.stderr.read()
    server.proc.stderr.close()
    assert "/api/nothing?token=" in log  # the requests were logged ...
    assert TOKEN not in log               # ... without the token


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
