"""SPEC §2.6 ``sort``: ``date-desc`` (the default of ``list``) or ``date-asc`` by ``created``,
the same over the CLI, the MCP tool and the HTTP API (one request model, ``ListRequest``)."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.inprocess import mcp_client, memo

# recorded out of date order, so the order of an answer is not the order of recording
CREATED = {"alpha second": "2026-03-02T10:00:00Z", "alpha third": "2026-03-03T10:00:00Z",
           "alpha first": "2026-03-01T10:00:00Z"}
OLDEST_FIRST = ["alpha first", "alpha second", "alpha third"]


@pytest.fixture
def vault(tmp_path):
    vault = tmp_path / "v"
    for body, created in CREATED.items():
        memo("prompt", "record", "--project", "p", "--body", body, "--created", created, vault=vault)
    return vault


def bodies(stdout: str) -> list[str]:
    return [item["body"] for item in json.loads(stdout)["items"]]


def tool(vault, **arguments):
    async def go():
        async with mcp_client(vault) as client:
            result = await client.call_tool("prompt", {"projectId": "p", **arguments})
            return result.is_error, result.content[0].text

    return asyncio.run(go())


@pytest.mark.parametrize("command", [["list"], ["search", "alpha"]])
def test_sort_date_asc_gives_oldest_first_over_the_cli(vault, command):
    ran = memo("--json", "prompt", *command, "--project", "p", "--sort", "date-asc", vault=vault)
    assert bodies(ran.stdout) == OLDEST_FIRST
    ran = memo("--json", "prompt", *command, "--project", "p", "--sort", "date-desc", vault=vault)
    assert bodies(ran.stdout) == OLDEST_FIRST[::-1]


def test_list_without_sort_is_newest_first_over_the_cli(vault):
    assert bodies(memo("--json", "prompt", "list", "--project", "p", vault=vault).stdout) == OLDEST_FIRST[::-1]


@pytest.mark.parametrize("arguments", [dict(action="list"), dict(action="search", query="alpha")])
def test_sort_date_asc_gives_oldest_first_over_the_mcp_tool(vault, arguments):
    for sort, expected in (("date-asc", OLDEST_FIRST), ("date-desc", OLDEST_FIRST[::-1])):
        error, text = tool(vault, sort=sort, **arguments)
        assert not error, text
        assert bodies(text) == expected


def test_sort_answers_byte_identical_json_over_the_cli_and_the_mcp_tool(vault):
    cli = memo("--json", "prompt", "list", "--project", "p", "--sort", "date-asc", vault=vault).stdout
    error, text = tool(vault, action="list", sort="date-asc")
    assert not error and cli == text + "\n"


def test_sort_is_described_in_the_tool_schema(vault):
    async def go():
        async with mcp_client(vault) as client:
            return (await client.list_tools()).tools[0].input_schema

    schema = asyncio.run(go())
    text = json.dumps(schema["properties"]["sort"])
    assert "date-asc" in text and "date-desc" in text and "list/search" in text


def test_an_unknown_sort_is_refused_by_name(vault):
    ran = memo("prompt", "list", "--project", "p", "--sort", "newest", vault=vault, check=False)
    assert ran.returncode == 1 and ran.stderr.startswith("error: Invalid sort:")
    error, text = tool(vault, action="list", sort="newest")
    assert error and "sort" in text


def test_sort_over_http_answers_what_the_cli_answers(vault):
    from tests.integration.test_http_api import Server

    server = Server(vault, "--mcp-port", "0")  # the HTTP API alone
    try:
        for query, command in (("", ["list"]), ("&query=alpha", ["search", "alpha"])):
            for sort in ("date-asc", "date-desc"):
                status, answer = server.get_json(f"/api/prompts?project=p&sort={sort}{query}")
                assert status == 200, answer
                assert answer == json.loads(memo("--json", "prompt", *command, "--project", "p", "--sort", sort,
                                                 vault=vault).stdout)
                assert [i["body"] for i in answer["items"]] == (OLDEST_FIRST if sort == "date-asc"
                                                                else OLDEST_FIRST[::-1])
        status, answer = server.get_json("/api/prompts?project=p&sort=newest")
        assert status == 400 and "sort" in json.dumps(answer)
    finally:
        server.stop()
