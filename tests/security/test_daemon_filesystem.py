"""The daemon owns its filesystem (issue 11 point 3): a caller that other machines can reach
never chooses a path on the server, and on every transport a written export or report never
replaces an existing file unless asked, never follows a symlink, and only uses its kind's
suffixes. Replays: `vaultRoot` reading another vault and `export_story` overwriting
`~/.ssh/authorized_keys`, over the daemon's MCP endpoint, `/api/actions`, stdio (in-process
SDK client) and the CLI."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from memo_analytics.config import Settings
from tests.integration.test_cli import memo
from tests.integration.test_http_api import Server, free_port

TOKEN = "team-t0ken-for-the-daemon-7f3a"
KEYS = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKeyOfThePerson ana@laptop\n"


async def _mcp_call(url: str, **arguments):
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                result = await session.call_tool("prompt", arguments)
                return result.is_error, result.content[0].text


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    """A daemon bound off loopback (0.0.0.0, with its token), its vault seeded with one
    session; beside it another vault on the same host holding a secret prompt, and a fake
    home with ~/.ssh/authorized_keys."""
    root = tmp_path_factory.mktemp("daemon-fs")
    vault, other = root / "vault", root / "other-vault"
    memo("session", "start", "s1", "--project", "web", vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "web", "--body", "Ship the CSV export", vault=vault)
    memo("session", "end", "s1", "--summary", "CSV export shipped", vault=vault)
    memo("prompt", "record", "--project", "payroll", "--body", "The payroll of the other vault", vault=other)
    home = root / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text(KEYS)
    mcp_port = free_port()
    server = Server(vault, "--host", "0.0.0.0", "--token", TOKEN, "--mcp-port", str(mcp_port))
    yield {"vault": vault, "other": other, "home": home, "server": server,
           "mcp": f"http://127.0.0.1:{mcp_port}/mcp"}
    server.stop()


ATTACKS = [
    ({"action": "list", "crossProject": True, "vaultRoot": "{other}"}, "Invalid vaultRoot: not accepted here"),
    ({"action": "export_story", "sessionId": "s1", "output": "{home}/.ssh/authorized_keys", "cwd": "{home}"},
     "Invalid cwd: not accepted here"),
    ({"action": "export_story", "sessionId": "s1", "output": "{home}/.ssh/authorized_keys"},
     "Invalid output: not accepted here"),
    ({"action": "derive_rules", "projectId": "web", "promote": "CLAUDE.md"}, "Invalid promote: not accepted here"),
    ({"action": "record", "body": "x", "cwd": "/etc"}, "Invalid cwd: not accepted here"),
]


def _fill(arguments: dict, hosts) -> dict:
    return {k: v.format(other=hosts["other"], home=hosts["home"]) if isinstance(v, str) else v
            for k, v in arguments.items()}


@pytest.mark.parametrize("arguments, message", ATTACKS)
def test_the_off_loopback_mcp_endpoint_refuses_caller_chosen_paths(hosts, arguments, message):
    error, text = asyncio.run(_mcp_call(hosts["mcp"], **_fill(arguments, hosts)))
    assert error and message in text
    assert "payroll" not in text
    assert (hosts["home"] / ".ssh" / "authorized_keys").read_text() == KEYS


@pytest.fixture(scope="module")
def loopback(hosts):
    """The same vault served on loopback without a token: ``memo serve``'s MCP port."""
    mcp_port = free_port()
    server = Server(hosts["vault"], "--mcp-port", str(mcp_port))
    yield f"http://127.0.0.1:{mcp_port}/mcp"
    server.stop()


@pytest.mark.parametrize("arguments, message", ATTACKS)
def test_the_loopback_mcp_endpoint_refuses_caller_chosen_paths_too(hosts, loopback, arguments, message):
    """Found by an attacker: on loopback the MCP endpoint let any local process (another user of
    the machine, a page's request) read another vault, write a story anywhere and promote rules
    into any repository's CLAUDE.md. SPEC §11 refuses these fields over MCP HTTP, loopback too."""
    async def call():
        async with create_mcp_http_client() as http:
            async with streamable_http_client(loopback, http_client=http) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    result = await session.call_tool("prompt", _fill(arguments, hosts))
                    return result.is_error, result.content[0].text

    error, text = asyncio.run(call())
    assert error and message in text
    assert "payroll" not in text
    assert (hosts["home"] / ".ssh" / "authorized_keys").read_text() == KEYS


@pytest.mark.parametrize("arguments, message", ATTACKS)
def test_the_http_api_refuses_caller_chosen_paths(hosts, arguments, message):
    arguments = _fill(arguments, hosts)
    action = arguments.pop("action")
    status, body = hosts["server"].get_json(f"/api/actions/{action}", data=arguments,
                                            headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 400 and body["error"].startswith(message)
    assert (hosts["home"] / ".ssh" / "authorized_keys").read_text() == KEYS


def test_an_export_over_the_daemon_answers_with_its_content(hosts):
    error, text = asyncio.run(_mcp_call(hosts["mcp"], action="export_story", sessionId="s1"))
    assert not error and "Ship the CSV export" in json.loads(text)["markdown"]
    status, body = hosts["server"].get_json("/api/actions/export_story", data={"sessionId": "s1"},
                                            headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and "Ship the CSV export" in body["markdown"] and "path" not in body


# ---------------------------------------------------------------- every transport: the output rules


@pytest.fixture
def local(tmp_path):
    """A vault with one session recorded from a product repository, and a place outside it."""
    repo = tmp_path / "web"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    vault = tmp_path / "vault"
    memo("session", "start", "s1", "--project", "web", vault=vault, cwd=repo)
    memo("prompt", "record", "--session-id", "s1", "--project", "web", "--body", "Ship the CSV export",
         vault=vault, cwd=repo)
    out = tmp_path / "out"
    out.mkdir()
    return vault, repo, out


async def _stdio_call(vault: Path, **arguments):
    from mcp import Client

    from memo_analytics.interfaces.mcp import build_server

    async with Client(build_server(Settings(vault_root=vault))) as client:
        result = await client.call_tool("prompt", arguments)
        return result.is_error, result.content[0].text


def test_over_stdio_an_export_keeps_to_its_suffix_and_never_replaces_a_file_unasked(local):
    vault, repo, out = local
    keys = out / "authorized_keys"
    keys.write_text(KEYS)
    error, text = asyncio.run(_stdio_call(vault, action="export_story", sessionId="s1", output=str(keys),
                                          cwd=str(repo)))
    assert error and "Invalid output:" in text and "must end with .md" in text and keys.read_text() == KEYS
    story = out / "story.md"
    story.write_text("my notes")
    error, text = asyncio.run(_stdio_call(vault, action="export_story", sessionId="s1", output=str(story),
                                          cwd=str(repo)))
    assert error and "already exists; ask to replace it (--force; over MCP, overwrite: true)" in text and story.read_text() == "my notes"
    error, text = asyncio.run(_stdio_call(vault, action="export_story", sessionId="s1", output=str(story),
                                          cwd=str(repo), overwrite=True))
    assert not error and "Ship the CSV export" in story.read_text()


def test_an_export_never_writes_through_a_symlink(local):
    vault, repo, out = local
    keys = out / "authorized_keys"
    keys.write_text(KEYS)
    link = out / "story.md"
    link.symlink_to(keys)
    error, text = asyncio.run(_stdio_call(vault, action="export_story", sessionId="s1", output=str(link),
                                          cwd=str(repo), overwrite=True))
    assert error and "is a symbolic link" in text
    proc = memo("session", "export", "s1", "-o", str(link), "--force", vault=vault, cwd=repo, check=False)
    assert proc.returncode == 1 and "is a symbolic link" in proc.stderr
    assert keys.read_text() == KEYS and link.is_symlink()


@pytest.mark.parametrize("command, name", [
    (["report", "timesheet", "--all"], "t.pdf"),
    (["report", "story", "s1"], "s.html"),
    (["session", "export", "s1"], "s.md"),
])
def test_cli_reports_replace_an_existing_file_only_with_force(local, command, name):
    vault, repo, out = local
    target = out / name
    target.write_bytes(b"kept")
    refused = memo(*command, "-o", str(target), vault=vault, cwd=repo, check=False)
    assert refused.returncode == 1 and "already exists; ask to replace it (--force" in refused.stderr
    assert target.read_bytes() == b"kept"
    memo(*command, "-o", str(target), "--force", vault=vault, cwd=repo)
    assert target.read_bytes() != b"kept" and target.stat().st_size > 0


@pytest.mark.parametrize("command, name", [
    (["report", "timesheet", "--all"], "authorized_keys"),
    (["report", "timesheet", "--all"], "t.md"),
    (["report", "story", "s1"], "s.sh"),
    (["report", "rules", "--all"], "r.md"),
    (["session", "export", "s1"], "s.pdf"),
])
def test_each_report_kind_writes_only_its_own_suffixes(local, command, name):
    vault, repo, out = local
    proc = memo(*command, "-o", str(out / name), vault=vault, cwd=repo, check=False)
    assert proc.returncode == 1 and "Invalid output:" in proc.stderr and "must end with" in proc.stderr
    assert not (out / name).exists()


def test_the_operator_story_export_never_replaces_a_file(tmp_path):
    from memo_analytics.operator.acting import _free_name

    folder = tmp_path / "stories"
    folder.mkdir()
    (folder / "s1.md").write_text("an earlier export")
    assert _free_name(folder, "s1", tmp_path / "vault") == folder / "s1-2.md"
    assert (folder / "s1.md").read_text() == "an earlier export"


def test_in_remote_mode_an_export_with_output_is_written_on_the_callers_machine(hosts, tmp_path):
    """The daemon refuses `output`; the remote-mode tool asks it for the story and writes the
    file locally, by the same rules (a product repository as cwd, `.md`, nothing replaced)."""
    from mcp import Client

    from memo_analytics.config import RemoteDaemon
    from memo_analytics.interfaces.mcp import build_server

    repo = tmp_path / "web"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    settings = Settings(vault_root=tmp_path / "no-local-vault", mode="remote",
                        remote=RemoteDaemon(url=hosts["server"].base, token=TOKEN))
    target = tmp_path / "story.md"

    async def call(**arguments):
        async with Client(build_server(settings)) as client:
            result = await client.call_tool("prompt", {"action": "export_story", "sessionId": "s1", **arguments})
            return result.is_error, result.content[0].text

    error, text = asyncio.run(call(output=str(target), cwd=str(repo)))
    assert not error and json.loads(text)["path"] == str(target) and "Ship the CSV export" in target.read_text()
    error, text = asyncio.run(call(output=str(target), cwd=str(repo)))
    assert error and "already exists" in text
    assert not (tmp_path / "no-local-vault").exists()


def test_a_call_to_a_daemon_off_loopback_that_names_nobody_leaves_the_owner_unknown(hosts):
    """`POST /api/actions/session_start` without `owner` got the daemon machine's own git
    identity: every such caller's sessions one person's (billed once beside each other). A
    daemon other machines call never puts its identity on their sessions; on loopback the
    caller is this machine's person (the parity of CLI, MCP and HTTP holds there)."""
    import urllib.request

    request = urllib.request.Request(
        f"{hosts['server'].base}/api/actions/session_start", method="POST",
        data=json.dumps({"sessionId": "scripted", "projectId": "web"}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200
    meta = (hosts["vault"] / "projects" / "web" / "sessions" / "session-scripted.md").read_text()
    assert "owner:" not in meta or "owner: null" in meta, meta


def test_the_off_loopback_mcp_endpoint_refuses_another_origin_with_the_token_too(hosts):
    """Found by a security tester: the team daemon's MCP endpoint (bound off loopback, where the
    SDK's Origin check is off) took a request of `Origin: http://evil.com` that carried the token;
    the status port refused it. Both refuse another origin; a client sending none is served."""
    import urllib.error
    import urllib.request

    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()

    def status(**extra: str) -> int:
        request = urllib.request.Request(hosts["mcp"], data=initialize, method="POST", headers={
            "Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream", **extra})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code

    assert status(Origin="http://evil.com") == 403
    assert status(Origin=hosts["mcp"].rsplit("/mcp", 1)[0]) == 200  # its own origin
    assert status() == 200
