"""Agent-sized answers (issue 13 point 11): the server has a version and publishes an output
schema, every answer carries structured content equal to its JSON text, and ``compact`` fits a
20-item search in 6,000 characters — over stdio and streamable HTTP as over the in-memory client."""

from __future__ import annotations

import asyncio
import json
from importlib.metadata import version

import pytest

from tests.inprocess import mcp_client, memo

from .test_mcp import TRANSPORTS

BODY = ("Please refactor the invoice export module so that pagination uses cursors instead of offsets, and "
        "add tests for the edge cases we discussed yesterday; keep the public API unchanged and update the "
        "README section on exports accordingly (turn {n}).")


def _seed(vault):
    memo("session", "start", "s1", "--project", "acme-web", "--client", "Acme Corp", "--ide", "claude-code",
         "--model", "claude-sonnet-4-5", "--agent", "claude-code", vault=vault)
    for n in range(1, 23):
        memo("prompt", "record", "--session-id", "s1", "--project", "acme-web", "--body", BODY.format(n=n),
             "--tag", "billing", vault=vault)


async def _answers(client):
    tools = (await client.list_tools()).tools
    full = await client.call_tool("prompt", {"action": "search", "projectId": "acme-web", "query": "invoice"})
    small = await client.call_tool("prompt", {"action": "search", "projectId": "acme-web", "query": "invoice",
                                              "compact": True})
    return client.server_info, tools[0], full, small


def _check(server_info, tool, full, small):
    assert server_info.name == "memo_analytics" and server_info.version == version("memo-analytics") != ""
    assert tool.output_schema["type"] == "object" and tool.output_schema["description"]
    assert not full.is_error and full.structured_content == json.loads(full.content[0].text)
    assert len(full.structured_content["items"]) == 20 and len(full.content[0].text) > 12_000
    text = small.content[0].text
    assert len(text) <= 6_000, len(text)
    assert small.structured_content == json.loads(text)
    first = small.structured_content["items"][0]
    assert first["bodyLength"] == len(BODY.format(n=22)) and first["body"].endswith("…")
    assert BODY.format(n=22).startswith(first["body"][:-1])
    assert all(value is not None for item in small.structured_content["items"] for value in item.values())
    shared = small.structured_content["shared"]  # what every item holds alike, given once
    assert shared["client"] == "Acme Corp" and shared["sessionId"] == "s1" and shared["tags"] == ["billing"]
    assert [i["turn"] for i in small.structured_content["items"]] == list(range(22, 2, -1))
    assert small.structured_content["total"] == 22 and small.structured_content["hasMore"] is True


def test_compact_answers_fit_an_agents_context_in_memory(tmp_path):
    vault = tmp_path / "v"
    _seed(vault)

    async def scenario():
        async with mcp_client(vault) as client:
            return await _answers(client)

    _check(*asyncio.run(scenario()))


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_version_schema_structured_and_compact_answers_over_each_transport(tmp_path, transport):
    vault = tmp_path / "v"
    _seed(vault)

    async def scenario():
        async with TRANSPORTS[transport](vault) as client:
            return await _answers(client)

    _check(*asyncio.run(scenario()))


def test_a_compact_report_leaves_the_policies_prose_out(tmp_path):
    """Found by an agent: ``activity_report`` with ``compact: true`` was about 3 KB for three
    sessions, most of it the rounding and overlap policies in prose (the full answer has them)."""
    from tests.inprocess import tool_calls

    vault = tmp_path / "v"
    _seed(vault)
    [(error, full), (error2, small)] = tool_calls(vault, [{"action": "activity_report", "crossProject": True},
                                                          {"action": "activity_report", "crossProject": True,
                                                           "compact": True}])
    assert not error and not error2
    assert "roundingPolicy" in json.loads(full) and "overlapPolicy" in json.loads(full)
    compacted = json.loads(small)
    assert "roundingPolicy" not in compacted and "overlapPolicy" not in compacted
    assert compacted["totalDurationMinutes"] == json.loads(full)["totalDurationMinutes"]
    # found by a later attacker: a client named "overlapPolicy" left byClient too
    from memo_analytics.domain.wire import compact

    assert compact({"byClient": {"overlapPolicy": 2.0}, "overlapPolicy": "…"}) == {"byClient": {"overlapPolicy": 2.0}}


def test_a_compact_get_gives_the_whole_text_and_a_hand_off_is_got_by_its_id(tmp_path):
    """Found by an agent: ``get`` with ``compact: true`` cut the body as a page does, while the
    description sends an agent to ``get`` for the whole text; and the ``handoffArchive`` id an
    ended session names was "Record not found"."""
    from tests.inprocess import tool_calls

    vault = tmp_path / "v"
    long_body = "The cart total shows 19.999 instead of 20.00 " * 20
    memo("session", "start", "s1", "--project", "web", vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "web", "--body", long_body, vault=vault)
    memo("session", "end", "s1", "--project", "web", "--next-step", "deploy", vault=vault)
    [(e1, got), (e2, page), (e3, baton)] = tool_calls(vault, [
        {"action": "get", "id": "prompt-s1-t1", "compact": True},
        {"action": "list", "crossProject": True, "compact": True},
        {"action": "get", "id": "handoff-s1", "compact": True}])
    assert not (e1 or e2 or e3), (got, page, baton)
    assert json.loads(got)["body"] == long_body.strip() and "bodyLength" not in json.loads(got)
    assert json.loads(page)["items"][0]["body"].endswith("…")  # a page still gives snippets
    assert (json.loads(baton)["kind"], json.loads(baton)["nextSteps"]) == ("handoff", ["deploy"])
