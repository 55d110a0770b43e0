"""Every action of the table answers the same JSON through the CLI, the MCP tool and the HTTP
API (STYLE "One action table"; issue 12).

Reads run against one seeded vault through all three: the CLI and the tool answer byte-identical
JSON; the HTTP API the same JSON value (its text escapes ``<``, ``>`` and ``&`` so that no answer
can be read as HTML). A write runs
once per interface on an identical copy of the vault; the answers must be identical except
for the instants the write stamped itself (``updated``, ``lastAt``, …), which are compared as
"present" only. ``digest_apply`` (people only: not offered to agents) is compared between the
CLI and its HTTP route.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pytest

from memo_analytics.actions import ACTIONS, AGENT_ACTIONS
from tests.inprocess import mcp_client, memo

from .test_http_api import Server

#: instants a write stamps with "now": equal across interfaces only in shape
STAMPS = {"created", "updated", "lastAt", "claimedAt", "cancelledAt", "at", "computedAt"}
#: where a record came from: each interface names itself (cli, mcp, http)
SOURCES = {"cli", "mcp", "http"}
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")

#: action → (tool arguments, CLI arguments) for the reads
READS = {
    "list": ({"projectId": "web"}, ["prompt", "list", "--project", "web"]),
    "search": ({"projectId": "web", "query": "pagination"}, ["prompt", "search", "pagination", "--project", "web"]),
    "get": ({"id": "prompt-s1-t1"}, ["prompt", "get", "prompt-s1-t1"]),
    "session": ({"sessionId": "s1", "projectId": "web"}, ["session", "show", "s1", "--project", "web"]),
    "activity_report": ({"crossProject": True, "tz": "UTC"}, ["activity", "--all", "--tz", "UTC"]),
    "derive_rules": ({"crossProject": True}, ["report", "rules", "--all"]),
    "export_story": ({"sessionId": "s1"}, ["session", "export", "s1"]),
    "digest": ({"asOf": "2026-03-02T12:00:00Z"}, ["digest", "--as-of", "2026-03-02T12:00:00Z"]),
    "handoffs": ({"crossProject": True}, ["session", "handoff", "--all"]),
    "prompt_detail": ({"id": "prompt-s1-t2"}, ["prompt", "show", "prompt-s1-t2"]),
}
#: action → (tool arguments, CLI arguments) for the writes
WRITES = {
    "record": ({"sessionId": "s1", "projectId": "web", "body": "Add a CSV export too"},
               ["prompt", "record", "--session-id", "s1", "--project", "web", "--body", "Add a CSV export too"]),
    "session_start": ({"sessionId": "s3", "projectId": "web", "startTime": "2026-03-03T09:00:00Z", "client": "Acme"},
                      ["session", "start", "s3", "--project", "web", "--start-time", "2026-03-03T09:00:00Z",
                       "--client", "Acme"]),
    "session_end": ({"sessionId": "s2", "projectId": "web", "until": "2026-03-02T16:00:00Z", "summary": "Export"},
                    ["session", "end", "s2", "--project", "web", "--until", "2026-03-02T16:00:00Z",
                     "--summary", "Export"]),
    "cancel_handoff": ({"sessionId": "s1", "projectId": "web"},
                       ["session", "handoff", "s1", "--cancel", "--project", "web"]),
    "feedback": ({"id": "prompt-s1-t1", "helpful": True}, ["prompt", "feedback", "prompt-s1-t1", "--helpful"]),
}


def _seed(vault: Path) -> None:
    memo("session", "start", "s1", "--project", "web", "--client", "Acme", "--ide", "cursor",
         "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "web", "--created", "2026-03-02T09:05:00Z",
         "--body", "Add pagination to the invoices API; never commit directly to main", vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "web", "--created", "2026-03-02T09:20:00Z",
         "--body", "Use **cursor** pagination, never offsets. Never commit directly to main.", vault=vault)
    memo("session", "end", "s1", "--project", "web", "--until", "2026-03-02T10:30:00Z", "--summary", "Pagination",
         "--next-step", "Document the cursor parameter", "--handoff-branch", "docs", "--pr", "https://github.com/acme/web/pull/7", vault=vault)
    memo("session", "start", "s2", "--project", "web", "--start-time", "2026-03-02T14:00:00Z", vault=vault)
    memo("prompt", "record", "--session-id", "s2", "--project", "web", "--created", "2026-03-02T14:10:00Z",
         "--body", "Never commit directly to main; add the CSV export", vault=vault)


def _shape(value):
    """``value`` with the self-stamped instants replaced by a marker (when they are instants)."""
    if isinstance(value, dict):
        return {k: ("<instant>" if k in STAMPS and isinstance(v, str) and ISO.match(v)
                    else "<interface>" if k == "source" and v in SOURCES else _shape(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return value


async def _tool(vault: Path, calls: dict[str, dict]) -> dict[str, str]:
    answers = {}
    async with mcp_client(vault) as client:
        for name, arguments in calls.items():
            result = await client.call_tool("prompt", {"action": name, **arguments})
            assert not result.is_error, (name, result.content[0].text)
            answers[name] = result.content[0].text
    return answers


def _http(server: Server, name: str, arguments: dict) -> str:
    status, _, text = server.request(f"/api/actions/{name}", data=arguments)
    assert status == 200, (name, text)
    return text


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    vault = tmp_path_factory.mktemp("parity") / "vault"
    _seed(vault)
    return vault


def test_every_action_is_covered_here():
    assert set(READS) | set(WRITES) == set(AGENT_ACTIONS)
    assert set(ACTIONS) - set(AGENT_ACTIONS) == {"digest_apply"}


def test_every_read_answers_byte_identical_json_through_cli_mcp_and_http(seeded):
    tool = asyncio.run(_tool(seeded, {name: args for name, (args, _) in READS.items()}))
    server = Server(seeded, "--mcp-port", "0")
    try:
        http = {name: _http(server, name, args) for name, (args, _) in READS.items()}
    finally:
        server.stop()
    cli = {name: memo("--json", *argv, vault=seeded).stdout.rstrip("\n") for name, (_, argv) in READS.items()}
    for name in READS:
        assert tool[name] == cli[name], name
        assert json.loads(http[name]) == json.loads(cli[name]), name
    assert json.loads(cli["handoffs"])["total"] == 1
    assert "<strong>cursor</strong>" in json.loads(cli["prompt_detail"])["renderedHtml"]


def test_every_write_answers_the_same_json_through_cli_mcp_and_http(seeded, tmp_path):
    copies = {}
    for interface in ("cli", "mcp", "http"):
        copies[interface] = tmp_path / interface
        shutil.copytree(seeded, copies[interface])
    # outside any repository, as the tool and the API are called here (no git branch or sha to add)
    cli = {name: json.loads(memo("--json", *argv, vault=copies["cli"], cwd=tmp_path).stdout)
           for name, (_, argv) in WRITES.items()}
    tool = {name: json.loads(text) for name, text in
            asyncio.run(_tool(copies["mcp"], {name: args for name, (args, _) in WRITES.items()})).items()}
    server = Server(copies["http"], "--mcp-port", "0")
    try:
        http = {name: json.loads(_http(server, name, args)) for name, (args, _) in WRITES.items()}
    finally:
        server.stop()
    for name in WRITES:
        assert _shape(tool[name]) == _shape(cli[name]), name
        assert _shape(http[name]) == _shape(cli[name]), name
    assert cli["record"]["turn"] == 3 and cli["session_end"]["durationMinutes"] == 120
    assert cli["cancel_handoff"]["status"] == "cancelled" and cli["feedback"]["feedback"]["helpful"] == 1


def test_digest_apply_answers_the_same_through_the_cli_and_its_http_route(seeded, tmp_path):
    copies = {}
    for interface in ("cli", "http"):
        copies[interface] = tmp_path / interface
        shutil.copytree(seeded, copies[interface])
    as_of = "2026-03-03T09:00:00Z"  # s2 has been open for 19 hours: the digest proposes to end it
    digest = json.loads(memo("--json", "digest", "--as-of", as_of, vault=copies["cli"]).stdout)
    [item] = [i for i in digest["items"] if i.get("proposal") and i["subject"] == "s2"
              and i["proposal"]["actionClass"] == "end_stale_session"]
    cli = json.loads(memo("--json", "digest", "apply", item["id"], "--fingerprint", item["fingerprint"],
                          "--as-of", as_of, vault=copies["cli"]).stdout)
    server = Server(copies["http"], "--mcp-port", "0")
    try:
        status, _, text = server.request("/api/digest/apply", data={"item": item["id"],
                                                                    "fingerprint": item["fingerprint"], "asOf": as_of})
    finally:
        server.stop()
    assert status == 200, text
    assert cli["applied"] is True
    assert _shape(json.loads(text)) == _shape(cli)
