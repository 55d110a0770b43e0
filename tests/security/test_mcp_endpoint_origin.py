"""The MCP endpoint beside `memo serve` on loopback is at least as strict as the API (issue 11
point 1): a page on another local port is another origin (403), a foreign Host is refused
(421), and an agent (no Origin) or the endpoint's own origin still gets through."""

from __future__ import annotations

import json

import httpx2

from tests.integration.test_http_api import Server, free_port

PING = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def test_the_loopback_mcp_endpoint_refuses_other_origins_and_hosts(tmp_path):
    port = free_port()
    server = Server(tmp_path / "vault", "--mcp-port", str(port))
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        other_port = httpx2.post(url, json=PING, headers={**HEADERS, "Origin": f"http://127.0.0.1:{port + 7}"})
        assert other_port.status_code == 403
        assert httpx2.post(url, json=PING, headers={**HEADERS, "Origin": "http://evil.example"}).status_code == 403
        assert httpx2.post(url, json=PING, headers={**HEADERS, "Host": f"rebind.test:{port}"}).status_code == 421
        # found by an attacker: a request a browser marks cross-site, without an Origin, got through
        for site in ("cross-site", "same-site"):
            marked = httpx2.post(url, json=PING, headers={**HEADERS, "Sec-Fetch-Site": site})
            assert marked.status_code == 403 and "cross-site" in marked.text
        agent = httpx2.post(url, json=PING, headers=HEADERS)
        assert agent.status_code == 200 and "serverInfo" in agent.text
        own = httpx2.post(url, json=PING, headers={**HEADERS, "Origin": f"http://127.0.0.1:{port}"})
        assert own.status_code == 200
        assert json.loads(server.request("/api/prompts?crossProject=true")[2])["total"] == 0
    finally:
        server.stop()
