"""`memo serve` also serves the MCP tool over streamable HTTP (issue 7 point 1): on
loopback without a token; off loopback only with the status server's token."""

from __future__ import annotations

import asyncio
import json
import time

from mcp.client.session import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from tests.integration.test_http_api import Server, free_port


async def _call(url: str, headers: dict | None = None, **arguments):
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool("prompt", arguments)
                return result.is_error, result.content[0].text


def test_the_daemon_serves_the_mcp_tool_beside_the_api(tmp_path):
    mcp_port = free_port()
    server = Server(tmp_path / "vault", "--mcp-port", str(mcp_port))
    try:
        url = f"http://127.0.0.1:{mcp_port}/mcp"
        error, text = asyncio.run(_call(url, action="record", projectId="web", sessionId="d1", body="From the daemon"))
        assert not error and json.loads(text)["id"] == "prompt-d1-t1"
        _, listing = server.get_json("/api/prompts?project=web")
        assert [item["id"] for item in listing["items"]] == ["prompt-d1-t1"]
    finally:
        server.stop()


def test_with_a_token_the_mcp_endpoint_refuses_calls_without_it(tmp_path):
    import httpx2

    mcp_port = free_port()
    server = Server(tmp_path / "vault", "--mcp-port", str(mcp_port), "--token", "t0ken-for-the-team")
    try:
        url = f"http://127.0.0.1:{mcp_port}/mcp"
        refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        error, text = asyncio.run(_call(url, {"Authorization": "Bearer t0ken-for-the-team"}, action="list",
                                        crossProject=True))
        assert not error and json.loads(text)["total"] == 0
    finally:
        server.stop()


def test_the_mcp_endpoint_keeps_a_bounded_number_of_sessions_open(tmp_path, monkeypatch):
    """3,000 `initialize` calls grew the endpoint by 120 MB (each session lives until its
    30-minute idle timeout; the SDK allows 10,000). Beyond the cap a new session gets 503; the
    sessions already open go on."""
    import httpx2

    from memo_analytics.interfaces import mcp as mcp_interface

    monkeypatch.setattr(mcp_interface, "MAX_MCP_SESSIONS", 3)
    port = free_port()
    server = mcp_interface.serve_http_in_thread(mcp_interface.Settings(vault_root=tmp_path / "v"), "127.0.0.1", port)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}
        headers = {"Accept": "application/json, text/event-stream"}
        answers = [httpx2.post(url, json=initialize, headers=headers, timeout=30) for _ in range(4)]
        assert [a.status_code for a in answers] == [200, 200, 200, 503]
        session = answers[0].headers["mcp-session-id"]
        ping = httpx2.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, timeout=30,
                           headers={**headers, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"})
        assert ping.status_code == 200
    finally:
        server.should_exit = True


def test_a_request_that_never_arrives_whole_is_closed_and_gives_its_place_back(tmp_path, monkeypatch):
    """Found by an attacker on loopback: a connection that sent half a header stayed open for ever
    (uvicorn cancels its keep-alive timer on the first byte), and 8,300 of them filled the MCP
    endpoint's cap: every real request was reset. A request must arrive whole in time (as on the
    status port); one that does is answered, and its connection is not cut while it is served."""
    import socket

    import httpx2

    from memo_analytics.interfaces import mcp as mcp_interface

    monkeypatch.setattr(mcp_interface, "REQUEST_READ_SECONDS", 1.5, raising=False)
    port = free_port()
    server = mcp_interface.serve_http_in_thread(mcp_interface.Settings(vault_root=tmp_path / "v"), "127.0.0.1", port)
    try:
        half_header = socket.create_connection(("127.0.0.1", port), timeout=10)
        half_header.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
        half_body = socket.create_connection(("127.0.0.1", port), timeout=10)
        half_body.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                          "Content-Length: 100\r\n\r\n{\"jsonrpc\"".encode())
        started = time.monotonic()
        for sock in (half_header, half_body):
            sock.sendall(b" ")  # more bytes: the deadline is the request's, not one of each byte
        assert half_header.recv(1024) == b"" and half_body.recv(1024) == b""  # closed, unanswered
        assert 1.0 < time.monotonic() - started < 8
        half_header.close()
        half_body.close()
        url = f"http://127.0.0.1:{port}/mcp"
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}
        with httpx2.Client(timeout=30) as client:  # one kept-alive connection, two requests apart in time
            first = client.post(url, json=initialize, headers={"Accept": "application/json, text/event-stream"})
            assert first.status_code == 200
            time.sleep(1)
            session = first.headers["mcp-session-id"]
            ping = client.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                               headers={"Accept": "application/json, text/event-stream", "mcp-session-id": session,
                                        "mcp-protocol-version": "2025-06-18"})
            assert ping.status_code == 200
    finally:
        server.should_exit = True


def test_over_http_a_new_turn_without_a_project_is_refused_not_filed_under_default(tmp_path):
    """Found by an agent's user: over HTTP (``cwd`` refused) a record without ``projectId`` went to
    the project ``default`` with only a warning, and the same session recorded with its project
    later made two ``prompt-http-1-t1``. It is refused with what to give; a session the vault holds
    is found by its id; a configured ``defaultProject`` is taken."""
    from memo_analytics.interfaces import mcp as mcp_interface

    for default in (None, "team"):
        port = free_port()
        settings = mcp_interface.Settings(vault_root=tmp_path / f"v-{default}",
                                          **({"default_project": default} if default else {}))
        server = mcp_interface.serve_http_in_thread(settings, "127.0.0.1", port)
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            bare = asyncio.run(_call(url, action="record", sessionId="http-1", body="hi"))
            start = asyncio.run(_call(url, action="session_start"))
            if default is None:
                for error, text in (bare, start):
                    assert error and "Invalid projectId: over HTTP memo cannot see the folder you work in" in text
                assert not list((tmp_path / "v-None").glob("projects/*/prompts/*.md"))
                error, text = asyncio.run(_call(url, action="record", projectId="shop", sessionId="http-1", body="hi"))
                assert not error
                error, text = asyncio.run(_call(url, action="record", sessionId="http-1", body="again"))
                assert not error and json.loads(text)["project"] == "shop" and json.loads(text)["turn"] == 2
            else:
                assert not bare[0] and json.loads(bare[1])["project"] == "team"
                assert not start[0] and json.loads(start[1])["project"] == "team"
        finally:
            server.should_exit = True
