"""`memo serve` also serves the MCP tool over streamable HTTP (issue 7 point 1): on
loopback without a token; off loopback only with the status server's token."""

from __future__ import annotations

import asyncio
import json

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
