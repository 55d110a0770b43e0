"""The MCP tool ``prompt`` driven by the SDK's own client (SPEC §3.1).

The transports are tested through real ``memo mcp`` processes (a whole session over stdio and
over streamable HTTP, and two agents' processes on one session); every other test talks to
the in-process server ``memo mcp`` serves, over the SDK's in-memory transport
(:func:`tests.inprocess.mcp_client`)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.inprocess import mcp_client, memo, tool_calls

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@asynccontextmanager
async def stdio_client(vault: Path, cwd: Path | None = None):
    """``memo --vault-root VAULT mcp`` as a real process, over its stdin and stdout, started in
    ``cwd`` (default: the vault's parent folder, outside any repository)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "memo_analytics", "--vault-root", str(vault), "mcp"],
                                   env={**os.environ},
                                   cwd=str(cwd or vault.parent))
    async with Client(params) as client:
        yield client


@asynccontextmanager
async def http_client(vault: Path):
    """``memo --vault-root VAULT mcp --http`` as a real process on a free loopback port."""
    port = free_port()
    log = vault.parent / f"mcp-http-{port}.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "memo_analytics", "--vault-root", str(vault), "mcp", "--http",
                                 "--port", str(port)], stdout=subprocess.DEVNULL, stderr=sink)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None:
                    raise AssertionError(log.read_text())
                time.sleep(0.1)
        # it says where it listens, as memo serve does
        assert f"memo mcp: streamable HTTP at http://127.0.0.1:{port}/mcp — Ctrl-C to stop" in log.read_text()
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            yield client
    finally:
        proc.terminate()
        proc.wait(10)


TRANSPORTS = {"stdio": stdio_client, "http": http_client, "memory": mcp_client}


async def call(client, /, **arguments):
    result = await client.call_tool("prompt", arguments)
    text = result.content[0].text
    return (json.loads(text) if not result.is_error else None), result.is_error, text


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_a_whole_session_through_the_tool_matches_the_cli_json(tmp_path, transport):
    vault = tmp_path / "v"

    async def scenario():
        async with TRANSPORTS[transport](vault) as client:
            started, error, _ = await call(client, action="session_start", sessionId="m1", projectId="acme",
                                           client="Acme", startTime="2026-03-02T09:00:00Z", ide="claude-code")
            assert not error and started["status"] == "active" and started["ide"] == "claude-code"
            first, _, _ = await call(client, action="record", sessionId="m1", projectId="acme",
                                     body="Add pagination to the invoices endpoint")
            second, _, _ = await call(client, action="record", sessionId="m1", projectId="acme",
                                      body=f"use the token {TOKEN} for CI")
            assert (first["turn"], second["turn"]) == (1, 2) and first["client"] == "Acme"
            assert TOKEN not in second["body"]
            ended, _, _ = await call(client, action="session_end", sessionId="m1", projectId="acme",
                                     until="2026-03-02T10:30:00Z", pr="https://github.com/acme/web/pull/7",
                                     summary="Pagination added")
            assert ended["durationMinutes"] == 90 and ended["deliverables"][0]["type"] == "pr"
            feedback, _, _ = await call(client, action="feedback", id="prompt-m1-t1", helpful=True)
            assert feedback["feedback"]["hits"] == 1 and feedback["feedback"]["helpful"] == 1
            answers = {}
            for name, arguments in {
                "list": dict(action="list", projectId="acme"),
                "search": dict(action="search", projectId="acme", query="pagination"),
                "get": dict(action="get", id="prompt-m1-t1"),
                "session": dict(action="session", sessionId="m1"),
                "activity": dict(action="activity_report", crossProject=True, tz="UTC"),
                "story": dict(action="export_story", sessionId="m1"),
                "rules": dict(action="derive_rules", crossProject=True),
                "digest": dict(action="digest", asOf="2026-03-02T12:00:00Z"),
            }.items():
                result = await client.call_tool("prompt", arguments)
                assert not result.is_error, result.content[0].text
                answers[name] = result.content[0].text
            return answers

    answers = asyncio.run(scenario())
    cli = {
        "list": memo("--json", "prompt", "list", "--project", "acme", vault=vault).stdout,
        "search": memo("--json", "prompt", "search", "pagination", "--project", "acme", vault=vault).stdout,
        "get": memo("--json", "prompt", "get", "prompt-m1-t1", vault=vault).stdout,
        "session": memo("--json", "session", "show", "m1", vault=vault).stdout,
        "activity": memo("--json", "activity", "--all", "--tz", "UTC", vault=vault).stdout,
        "story": memo("--json", "session", "export", "m1", vault=vault).stdout,
        "rules": memo("--json", "report", "rules", "--all", vault=vault).stdout,
        "digest": memo("--json", "digest", "--as-of", "2026-03-02T12:00:00Z", vault=vault).stdout,
    }
    for name in answers:
        assert answers[name] == cli[name].rstrip("\n"), name  # byte-identical JSON
    assert json.loads(answers["search"])["items"][0]["id"] == "prompt-m1-t1"
    assert json.loads(answers["activity"])["totalBillableHours"] == 1.5


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(action="session_end", sessionId="ghost"), "No session record for ghost. Call session_start first"),
        (dict(action="list", since="2026-13-45", crossProject=True), "Invalid since date: '2026-13-45' (give a date as YYYY-MM-DD, a time as YYYY-MM-DDTHH:MM, a month YYYY-MM, a year YYYY or an ISO week YYYY-Www, ISO 8601)"),
        (dict(action="record", body="   ", projectId="p"), "Invalid body: must not be empty"),
        (dict(action="record", body="x", sessionId="../etc", projectId="p"), "Invalid sessionId:"),
        (dict(action="get", id="nothing"), "Record not found: nothing"),
        (dict(action="record", body="x", sessionId="b", projectId="p", turn=True), "Invalid turn: true is not a whole"),
        (dict(action="list", crossProject=True, limit=True), "Invalid limit: true is not a whole number"),
        (dict(action="list", crossProject=True, limit="\u0663"), "Invalid limit: Input should be a valid integer"),
        # billing tells people apart by their owner: one line of text, short enough to read back
        (dict(action="session_start", sessionId="o1", projectId="p", owner="alice@corp.example\x1b[2J"),
         "Invalid owner: holds the control character U+001B"),
        (dict(action="session_start", sessionId="o2", projectId="p", owner="x" * 300_000),
         "Invalid owner: is 300000 characters; at most 200"),
        (dict(action="list", since=TOKEN), "Invalid since date: '[REDACTED:github-token]' (give a date as YYYY-MM-DD, a time as YYYY-MM-DDTHH:MM, a month YYYY-MM, a year YYYY or an ISO week YYYY-Www, ISO 8601)"),
        (dict(action="activity_report", crossProject=True, client="acme"),  # misspelt: refused as by memo activity
         "Invalid client: no session and no [clients] entry of the config has the client 'acme' (exact name, any case); "
         "clients known: none yet"),
        # found by a tester of bad input: FTS5 stopped at the NUL ("unterminated string"), a message-less error
        (dict(action="search", query="a\u0000b", crossProject=True), "Invalid query: contains a NUL character"),
        (dict(action="list", query="a\u0000b", crossProject=True), "Invalid query: contains a NUL character"),
        (dict(action="activity_report", crossProject=True, client=TOKEN),  # a pasted secret is not echoed
         "Invalid client: no session and no [clients] entry of the config has the client '[REDACTED:github-token]'"),
    ],
)
def test_refusals_are_tool_errors_with_the_message(tmp_path, arguments, message):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "seed", "--project", "p", vault=vault)

    async def scenario():
        async with mcp_client(vault) as client:
            return await call(client, **arguments)

    _, is_error, text = asyncio.run(scenario())
    assert is_error and message in text and "Traceback" not in text and TOKEN not in text


def test_the_tool_schema_is_typed_and_described(tmp_path):
    async def scenario():
        async with mcp_client(tmp_path / "v") as client:
            return (await client.list_tools()).tools

    tools = asyncio.run(scenario())
    assert [t.name for t in tools] == ["prompt"]
    schema = tools[0].input_schema
    properties = schema["properties"]
    assert schema["required"] == ["action"]
    assert {"action", "body", "sessionId", "turn", "projectId", "cwd", "vaultRoot", "crossProject", "branch", "gitSha",
            "linkedPaths", "query", "limit", "offset", "since", "until", "pr", "deliverables"} <= set(properties)
    assert all(p.get("description") for p in properties.values())
    assert set(properties["action"]["enum"]) == {"record", "list", "get", "search", "session", "session_start",
                                                  "session_end", "cancel_handoff", "activity_report", "derive_rules", "export_story", "feedback", "digest",
                                                  "handoffs", "prompt_detail"}
    assert {"handoff", "objective", "owner", "shared"} <= set(properties)
    assert "session_start" in tools[0].description
    # each action is described once, in the tool's description (it was repeated in the field's: 2.5 KB of an
    # agent's context on every listing); an unknown field is refused, and the schema says so
    assert "Close a session" in tools[0].description and "Close a session" not in properties["action"]["description"]
    assert schema["additionalProperties"] is False


def test_concurrent_agents_on_one_session_never_collide(tmp_path):
    """Two agents are two ``memo mcp`` processes: the vault lock and the turn numbers hold
    across processes (real ones, so the process boundary is what is tested)."""
    vault = tmp_path / "v"

    async def agent(client, n):
        for i in range(10):
            _, error, text = await call(client, action="record", sessionId="shared", projectId="p", body=f"agent {n} turn {i}")
            assert not error, text

    async def scenario():
        async with stdio_client(vault) as one, stdio_client(vault) as two:
            await asyncio.gather(agent(one, 1), agent(two, 2))

    asyncio.run(scenario())
    names = sorted((vault / "projects/p/prompts").glob("prompt-shared-t*.md"))
    assert sorted(int(p.stem.rsplit("-t", 1)[1]) for p in names) == list(range(1, 21))


def test_handoff_through_the_tool(tmp_path):
    vault = tmp_path / "v"

    async def scenario():
        async with mcp_client(vault) as client:
            await call(client, action="session_start", sessionId="a", projectId="p", objective="ship")
            ended, error, text = await call(client, action="session_end", sessionId="a", projectId="p",
                                            handoff={"nextSteps": ["deploy"], "owner": "ana"}, shared=True)
            assert not error, text
            claimed, _, _ = await call(client, action="session_start", sessionId="b", projectId="p", owner="bob")
            _, error, text = await call(client, action="cancel_handoff", sessionId="a")
            return ended, claimed, error, text

    ended, claimed, cancel_error, cancel_text = asyncio.run(scenario())
    assert ended["handoffArchive"] == "handoff-a" and ended["objective"] is None
    assert claimed["handoff"]["nextSteps"] == ["deploy"] and claimed["handoff"]["shared"] is True
    assert cancel_error and "is claimed, not pending" in cancel_text


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(action="list", sesionId="s"), "Invalid sesionId: unknown field of the tool prompt"),
        (dict(action="list", limit="abc"), "Invalid limit: Input should be a valid integer"),
        (dict(body=f"pw postgres://u:{TOKEN}@h/db"), "Invalid action: is required"),
        (dict(action="serach"), "Invalid action: Input should be 'record'"),
        (dict(action="list", tags=TOKEN), "Invalid tags: Input should be a valid list"),
    ],
)
def test_bad_arguments_are_one_line_refusals_without_echo(tmp_path, arguments, message):
    from memo_analytics.config import Settings
    from memo_analytics.interfaces.mcp import build_server

    async def scenario():
        async with Client(build_server(Settings(vault_root=tmp_path / "v"))) as client:
            result = await client.call_tool("prompt", arguments)
            return result.is_error, result.content[0].text

    is_error, text = asyncio.run(scenario())
    assert is_error and message in text and "\n" not in text and TOKEN not in text
    assert not (tmp_path / "v" / "projects").exists()


def test_snake_case_field_names_are_understood(tmp_path):
    from memo_analytics.config import Settings
    from memo_analytics.interfaces.mcp import build_server

    async def scenario():
        async with Client(build_server(Settings(vault_root=tmp_path / "v"))) as client:
            return await call(client, action="record", body="x", session_id="snake", project_id="p")

    record, is_error, text = asyncio.run(scenario())
    assert not is_error and record["id"] == "prompt-snake-t1", text


def test_a_read_on_a_vault_root_that_holds_no_vault_is_refused_not_answered_empty(tmp_path):
    """``list`` with ``vaultRoot: "/tmp"`` answered ``total: 0`` — an empty vault to the agent —
    where ``memo.open_vault`` refuses; a write there starts the vault, and reads then work."""
    vault, other = tmp_path / "v", tmp_path / "typo"
    other.mkdir()
    memo("prompt", "record", "--body", "seed", "--project", "p", vault=vault)

    async def scenario():
        async with mcp_client(vault) as client:
            refused = await call(client, action="list", vaultRoot=str(other), crossProject=True)
            written = await call(client, action="record", body="first here", projectId="p", vaultRoot=str(other))
            listed = await call(client, action="list", vaultRoot=str(other), crossProject=True)
            return refused, written, listed

    (_, refused, text), (_, written_error, _), (listed, listed_error, _) = asyncio.run(scenario())
    assert refused and f"Invalid vaultRoot: {other} holds no vault" in text
    assert not written_error and not listed_error and listed["total"] == 1


def test_an_agent_logs_a_past_session_and_is_told_what_its_end_does_not_bill(tmp_path):
    """Found by a spec-memo user: over MCP `record` refused `created` (every back-filled turn was
    stamped now, outside its session), `session_end` of a session ended before answered the old
    end as if the new one were taken, and an end before the session's turns said nothing."""
    vault = tmp_path / "v"

    async def scenario():
        async with mcp_client(vault) as client:
            await call(client, action="session_start", sessionId="past", projectId="web",
                       startTime="2026-05-01T09:00:00+02:00")
            turn, error, text = await call(client, action="record", sessionId="past", projectId="web",
                                           body="add the export", created="2026-05-01T09:30:00+02:00")
            assert not error, text
            ended = (await call(client, action="session_end", sessionId="past", projectId="web",
                                until="2026-05-01T09:20:00+02:00"))[0]
            again = (await call(client, action="session_end", sessionId="past", projectId="web",
                                until="2026-05-01T12:00:00+02:00"))[0]
            return turn, ended, again

    turn, ended, again = asyncio.run(scenario())
    assert turn["created"] == "2026-05-01T07:30:00.000Z" and "warnings" not in turn
    assert ended["durationMinutes"] == 20 and ended["warnings"] == [
        "1 of its turns lies outside its times (before its start or after its end): their time bills nothing"]
    assert again["durationMinutes"] == 20 and again["endTime"] == "2026-05-01T07:20:00.000Z"
    assert again["warnings"][0] == (
        "session past was already ended at 2026-05-01T07:20:00.000Z; it keeps its times and 20 minutes, not the end "
        "asked (2026-05-01T10:00:00.000Z): memo session edit past --project web --end TIME corrects them")
    # the command line says the same on stderr; a plain re-end (no time asked) warns of nothing new
    assert again["unchanged"] is True  # nothing was written
    shown = memo("session", "end", "past", "--project", "web", "--until", "2026-05-01T12:00:00+02:00", vault=vault,
                 check=False)
    assert shown.returncode == 1 and "warning: session past was already ended" in shown.stderr
    plain = memo("--json", "session", "end", "past", "--project", "web", vault=vault, check=False)
    assert plain.returncode == 1 and "already ended" not in plain.stdout and json.loads(plain.stdout)["unchanged"]


def test_list_search_and_session_read_date_bounds_in_the_zone_asked(tmp_path):
    """`tz` was taken by activity_report only: list and search named it `ignored`, and a date-only
    bound was a day of the server's zone. 23:30 UTC on 1 May is 2 May in Berlin."""
    vault = tmp_path / "v"

    async def scenario():
        async with mcp_client(vault, env={"MEMO_TIMEZONE": "UTC"}) as client:
            await call(client, action="session_start", sessionId="late", projectId="web",
                       startTime="2026-05-01T23:30:00Z")
            await call(client, action="record", sessionId="late", projectId="web", body="late fix",
                       created="2026-05-01T23:40:00Z")
            found = {}
            for tz in (None, "Europe/Berlin"):
                zone = {"tz": tz} if tz else {}
                found[tz] = [(await call(client, action=action, projectId="web", since="2026-05-02", **extra,
                                         **zone))[0]
                             for action, extra in (("list", {}), ("search", {"query": "fix"}), ("session", {}))]
            return found

    found = asyncio.run(scenario())
    assert [page["total"] for page in found[None]] == [0, 0, 0]
    assert [page["total"] for page in found["Europe/Berlin"]] == [1, 1, 1]
    assert all("ignored" not in page for page in found["Europe/Berlin"])


def test_a_record_whose_metadata_would_not_read_back_is_refused_not_written(tmp_path):
    """Found by an attacker: only body and summary had a size limit on the way in, while reading
    refuses a frontmatter over 256,000 characters. A hand-off of 300,000 characters answered
    success, then every `session start` of the project failed on it (and a reindex dropped it);
    30,000 tags vanished at the next reindex. Such a write is refused, naming the field, and
    nothing is written."""
    vault = tmp_path / "v"

    async def scenario():
        async with mcp_client(vault) as client:
            await call(client, action="session_start", projectId="hp", sessionId="h1", startTime="2026-11-01T10:00:00Z")
            ended = await call(client, action="session_end", projectId="hp", sessionId="h1",
                               until="2026-11-01T11:00:00Z", handoff={"nextSteps": ["n" * 300_000]})
            tagged = await call(client, action="record", projectId="hp", sessionId="h1", body="x",
                                tags=[f"t{n}" for n in range(30_000)])
            started = await call(client, action="session_start", projectId="hp", sessionId="h2")
            return ended, tagged, started

    ended, tagged, started = asyncio.run(scenario())
    assert ended[1] and "Invalid nextSteps: about 300,004 characters" in ended[2] and "at most 256,000" in ended[2]
    assert tagged[1] and "Invalid tags" in tagged[2]
    assert not started[1] and started[0]["sessionId"] == "h2"
    assert not list((vault / "projects" / "hp").glob("handoffs/*.md")) and not list((vault / "projects" / "hp").glob(
        "prompts/*.md"))
    memo("reindex", vault=vault)
    assert json.loads(memo("--json", "session", "show", "h1", "--project", "hp", vault=vault).stdout)["session"][
        "status"] == "active"  # the refused end left the session as it was


def test_a_session_at_its_last_turn_says_so_when_one_more_is_recorded(tmp_path):
    """Found by an attacker: after an explicit turn 1,000,000 the next turn of the session was
    refused as `Invalid turn: Input should be less than or equal to 1000000` — a turn the call
    never gave. The refusal names the session and what to do."""
    answers = tool_calls(tmp_path / "v", [
        {"action": "record", "body": "x", "projectId": "p1", "sessionId": "s1", "turn": 1_000_000},
        {"action": "record", "body": "next", "projectId": "p1", "sessionId": "s1"}])
    assert not answers[0][0] and answers[1][0]
    assert "Invalid sessionId: session s1 holds turn 1,000,000, the last a session can have; record this turn in a new " \
           "session" in answers[1][1]


def test_over_stdio_a_call_without_cwd_reads_the_repository_the_agent_started_the_server_in(tmp_path, repo):
    """Found by a new user: ``memo mcp`` started by an agent inside the ``product`` repository
    answered ``list`` (no ``cwd``, no ``crossProject``) with every project's turns — another
    client's too — while ``memo prompt list`` run there lists the product's. A call without
    ``cwd`` is made where the server was started; ``crossProject`` still reads every project."""
    vault = tmp_path / "v"
    memo("prompt", "record", "--project", "product", "--body", "the product's turn", vault=vault)
    memo("prompt", "record", "--project", "other-client", "--body", "another client's plan", vault=vault)

    async def scenario(cwd):
        async with stdio_client(vault, cwd) as client:
            listed, _, _ = await call(client, action="list")
            every, _, _ = await call(client, action="list", crossProject=True)
            found, _, _ = await call(client, action="search", query="plan")
            return (sorted(i["project"] for i in listed["items"]), every["total"], found["total"])

    assert asyncio.run(scenario(repo)) == (["product"], 2, 0)
    assert asyncio.run(scenario(tmp_path)) == (["other-client", "product"], 2, 1)  # outside any repository: all

    # found by an attacker: the start folder removed, every call without cwd was refused as if the agent gave it
    from memo_analytics.interfaces.mcp import PromptTool
    from memo_analytics.runtime import Runtime
    from memo_analytics.config import Settings
    from mcp.server.mcpserver.exceptions import ToolError

    gone = tmp_path / "gone"
    runtime = Runtime(Settings(vault_root=vault, timezone="UTC"))
    try:
        tool = PromptTool(runtime, launch_dir=str(gone))
        with pytest.raises(ToolError, match=r"^Invalid cwd: the folder memo mcp was started in \(.*gone\) is gone"):
            tool(action="list")
        assert json.loads(tool(action="list", crossProject=True).content[0].text)["total"] == 2
    finally:
        runtime.close()


def test_an_agent_is_told_when_a_search_searched_nothing_and_how_many_sessions_are_open(tmp_path):
    """Found by a new user (as an agent): ``search`` without words answered an empty page, read
    as "no match"; ``activity_report`` counted two sessions in all while its client counted one
    (the other still open), without saying why."""
    vault = tmp_path / "v"
    memo("session", "start", "a1", "--project", "web", "--client", "Acme", "--start-time", "2026-03-02T09:00:00Z",
         vault=vault)
    memo("session", "end", "a1", "--project", "web", "--until", "2026-03-02T10:00:00Z", vault=vault)
    memo("session", "start", "a2", "--project", "web", "--client", "Acme", "--start-time", "2026-03-02T11:00:00Z",
         vault=vault)
    answers = tool_calls(vault, [{"action": "search", "crossProject": True},
                                 {"action": "search", "query": " ?! ", "crossProject": True},
                                 {"action": "activity_report", "crossProject": True}])
    for error, text in answers[:2]:
        page = json.loads(text)
        assert not error and page["total"] == 0 and page["note"].startswith(
            "the query holds no words to search for (letters or digits;")
    report = json.loads(answers[2][1])
    assert (report["totalSessions"], report["openSessions"], report["byClient"]["Acme"]["sessionCount"]) == (2, 1, 1)


def test_a_search_that_matched_nothing_says_every_word_must_match_and_a_huge_one_is_refused(tmp_path):
    """Found by a new user (as an agent): ``rounding OR pagination`` answered ``total: 0`` and
    nothing else, read as "never asked". Found by an attacker: 20,000 words took seconds of a
    server's worker each (FTS5's cost grows with the square of the words); more than 100 words
    are refused, naming the field."""
    vault = tmp_path / "v"
    memo("prompt", "record", "--project", "web", "--session-id", "a1", "--body", "Add pagination to the API",
         vault=vault)
    answers = tool_calls(vault, [{"action": "search", "query": "rounding OR pagination", "crossProject": True},
                                 {"action": "search", "query": "rounding", "projectId": "web"},
                                 {"action": "search", "query": "pagination", "crossProject": True},
                                 {"action": "search", "query": "a " * 20_000, "crossProject": True},
                                 {"action": "search", "query": "nosuchword ( - : ?", "crossProject": True},
                                 {"action": "search", "query": "pagination:add", "crossProject": True},
                                 {"action": "search", "query": "project:web", "crossProject": True}])
    page = json.loads(answers[0][1])
    assert page["total"] == 0 and page["note"] == (
        "no turn holds all 3 words in this scope: every word must match (OR and AND are searched as words); fewer "
        "or other words, or word* for a prefix, find more")
    # in one project: how to search every project (a new user's agent found the imported turns only so)
    assert json.loads(answers[1][1])["note"].endswith("; crossProject: true (memo: --all) searches every project")
    # outside a repository, no project named: every project searched already, no such hint (a newcomer)
    outside = memo("--json", "prompt", "search", "nosuchword", vault=vault, cwd=tmp_path)
    assert "searches every project" not in json.loads(outside.stdout)["note"]
    found = json.loads(answers[2][1])
    assert found["total"] == 1 and "note" not in found
    # punctuation is no word to match (found by an analyst: "all 5 words")
    assert json.loads(answers[4][1])["note"].startswith("no turn holds this word in this scope")
    assert not json.loads(answers[4][1])["note"].endswith("choose those)")
    # words joined by a mark are one phrase in that order; no column filter (found by an analyst)
    for number, joined in ((5, "pagination:add"), (6, "project:web")):
        assert json.loads(answers[number][1])["note"].endswith(
            f"; {joined} is searched as one phrase, its words in that order (a mark between words joins them; no "
            "column filter: the project and client filters choose those)"), answers[number]
    error, text = answers[3]
    assert error and "Invalid query: 20,000 words, 40,000 characters; at most 100 words and 4,000 characters" in text
    shown = memo("prompt", "search", "--all", "pagination:add", vault=vault)  # the table says why too (a breaker)
    assert "note: no turn holds this word" in shown.stderr and "is searched as one phrase" in shown.stderr, shown
    refused = memo("prompt", "search", "--all", " ".join(["word"] * 101), vault=vault, check=False)
    assert refused.returncode == 1 and refused.stderr.startswith("error: Invalid query: 101 words")


def test_memo_mcp_http_refuses_caller_chosen_paths_and_stdio_takes_them(tmp_path):
    """SPEC §11: over MCP HTTP (loopback too) a caller never chooses a path on the server; over
    stdio the agent runs the server itself, in its own folder, and gives its ``cwd``."""
    vault = tmp_path / "v"
    other = tmp_path / "other"

    async def scenario():
        async with http_client(vault) as client:
            for field, value in (("cwd", str(tmp_path)), ("vaultRoot", str(other)), ("output", str(tmp_path / "s.md"))):
                _, error, text = await call(client, action="record", projectId="web", body="x", **{field: value})
                assert error and f"Invalid {field}: not accepted here" in text, text
        async with stdio_client(vault) as client:
            recorded, error, text = await call(client, action="record", body="x", cwd=str(tmp_path))
            assert not error, text

    asyncio.run(scenario())
    assert not other.exists() and not (tmp_path / "s.md").exists()


def test_list_with_a_query_lists_the_turns_that_hold_it_as_the_http_listing_does(tmp_path):
    """Found by a team moving from spec-memo: ``{"action": "list", "query": "regression"}`` listed
    every turn of the project (5) and named ``query`` neither applied nor ignored, while ``GET
    /api/prompts?query=regression`` gave the one turn that holds it (SPEC §2.6: list filters by
    query)."""
    vault = tmp_path / "v"
    for body in ("fix the regression in checkout", "add a test", "rename the module"):
        memo("prompt", "record", "--body", body, "--session-id", "s", "--project", "web", vault=vault)
    [(error, text)] = tool_calls(vault, [{"action": "list", "projectId": "web", "query": "regression"}])
    page = json.loads(text)
    assert not error and page["total"] == 1 and page["items"][0]["body"] == "fix the regression in checkout"
    assert "query" not in page.get("ignored", [])


def test_a_restart_of_an_active_session_says_what_it_kept(tmp_path):
    """Found by an agent's integrator: a second session_start of an active session with another
    client, start and summary answered the first ones with no word (SPEC §2.5 keeps them): an
    agent believed its new client was billed. The answer says what the session kept."""
    start = {"action": "session_start", "projectId": "web", "sessionId": "e2"}
    answers = tool_calls(tmp_path / "v", [
        {**start, "client": "Globex", "startTime": "2026-03-02T09:00:00Z", "summary": "first"},
        {**start, "client": "Initech", "startTime": "2026-03-02T10:00:00Z", "summary": "second"},
        {**start, "client": "globex", "startTime": "2026-03-02T10:00:00+01:00"},  # the same, as written otherwise
        {**start, "client": "internal"},
    ])
    assert [error for error, _ in answers] == [False] * 4
    first, second, same, internal = (json.loads(text) for _, text in answers)
    assert "note" not in first and "note" not in same
    assert (second["client"], second["startTime"], second["summary"]) == ("Globex", "2026-03-02T09:00:00.000Z", "first")
    assert second["note"].startswith("session e2 was active: it keeps its client Globex, summary, startTime "
                                      "2026-03-02T09:00:00.000Z (")
    assert "memo session edit" in second["note"]
    assert internal["note"].startswith("session e2 was active: it keeps its client Globex (")
    ran = memo("session", "start", "e2", "--project", "web", "--client", "Initech", vault=tmp_path / "v")
    assert "note: session e2 was active: it keeps its client Globex (" in ran.stderr


def test_a_restart_naming_the_client_a_session_already_bills_says_nothing_kept(tmp_path):
    answers = tool_calls(tmp_path / "v", [
        {"action": "session_start", "projectId": "web", "sessionId": "i1"},
        {"action": "session_start", "projectId": "web", "sessionId": "i1", "client": "internal"}])
    assert [error for error, _ in answers] == [False, False]
    assert "note" not in json.loads(answers[1][1])


def test_a_call_holding_thousands_of_fields_is_refused_before_it_is_validated(tmp_path):
    """Found by a security tester: 300,000 unknown fields in one call took seconds to list as errors."""
    [(is_error, text)] = tool_calls(tmp_path / "vault", [{"action": "list", "crossProject": True,
                                                           **{f"k{i}": 1 for i in range(10_001)}}])
    assert is_error and text.endswith("Invalid input: holds more than 10,000 fields and list items; a call of the "
                                      "tool prompt needs far fewer"), text


def test_a_turn_after_a_pause_longer_than_the_idle_gap_warns_that_the_pause_bills(tmp_path):
    """Found by an integrator: an agent's session resumed the next morning billed the night (990
    minutes) and no answer said so. The record after a pause longer than the idle gap warns, with
    the end that would leave the pause out; a turn within the gap warns of nothing."""
    vault = tmp_path / "v"
    answers = tool_calls(vault, [
        {"action": "session_start", "sessionId": "night", "projectId": "web", "startTime": "2026-12-05T17:00:00Z"},
        {"action": "record", "sessionId": "night", "projectId": "web", "body": "Finish the report export",
         "created": "2026-12-05T17:05:00Z"},
        {"action": "record", "sessionId": "night", "projectId": "web", "body": "Continue the export",
         "created": "2026-12-06T09:00:00Z"},
        {"action": "record", "sessionId": "night", "projectId": "web", "body": "And its tests",
         "created": "2026-12-06T09:20:00Z"}])
    assert not any(error for error, _ in answers)
    assert "warnings" not in json.loads(answers[1][1]) and "warnings" not in json.loads(answers[3][1])
    assert json.loads(answers[2][1])["warnings"] == [
        "session night was idle 15 h 55 min before this turn (its last activity 2026-12-05T17:05:00.000Z); a "
        "session bills from its start to its end, the pause too: for work after such a pause start a new session "
        "(this turn is recorded in this one, and with it the pause: --minutes N, which ends a session N minutes "
        "after its start, would leave out the work after it, not the pause)"]


def test_the_handoffs_action_pages_as_list_and_search_do(tmp_path):
    """Found by an integrator: ``handoffs`` with ``limit`` answered ``ignored: ['limit']`` and every
    baton, with no ``limit``, ``offset`` or ``hasMore``: it pages in the envelope of every list."""
    vault = tmp_path / "v"
    calls = []
    for n, project in enumerate(("web", "api", "ops")):  # one baton pending in each (a start claims its project's)
        calls += [{"action": "session_start", "sessionId": f"h{n}", "projectId": project},
                  {"action": "session_end", "sessionId": f"h{n}", "projectId": project,
                   "handoff": {"nextSteps": [f"step {n}"]}}]
    assert not any(error for error, _ in tool_calls(vault, calls))
    every = {"action": "handoffs", "crossProject": True}
    answers = tool_calls(vault, [{**every, "limit": 2}, {**every, "limit": 2, "offset": 2}, every])
    first, second, every = (json.loads(text) for _, text in answers)
    assert (first["total"], first["limit"], first["offset"], first["hasMore"], len(first["items"])) == (3, 2, 0, True, 2)
    assert (second["offset"], second["hasMore"], len(second["items"])) == (2, False, 1)
    assert "ignored" not in first and (every["total"], every["limit"], len(every["items"]), every["hasMore"]) == (
        3, 100, 3, False)  # the largest page (it said "limit": 3, and 0 of an empty page)
    assert {i["id"] for i in first["items"] + second["items"]} == {i["id"] for i in every["items"]}
