"""Hand-off batons are addressed by default (issue 13 point 4): written without explicit
values, a baton takes the session's branch and the cwd repository's git identity (``user.email``,
else ``user.name``) as owner; delivery honours owner and branch unless ``shared``;
``cancel_handoff`` without an id cancels the caller's pending batons for this owner and branch,
and succeeds doing nothing when there is none — through the CLI and the MCP tool alike."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from tests.inprocess import mcp_client, memo


def _repo(path: Path, email: str | None, name: str = "Ana", branch: str = "main") -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", branch, str(path)], check=True)
    if email:
        subprocess.run(["git", "-C", str(path), "config", "user.email", email], check=True)
    subprocess.run(["git", "-C", str(path), "config", "user.name", name], check=True)
    return path


#: no machine-wide git identity: each test's repository says who works in it
NO_GLOBAL_GIT = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def _json(*args, vault, cwd):
    return json.loads(memo("--json", *args, vault=vault, cwd=cwd, env=NO_GLOBAL_GIT).stdout)


def test_a_baton_without_address_goes_to_the_same_branch_and_person(tmp_path):
    vault, ana = tmp_path / "v", _repo(tmp_path / "ana" / "web", "ana@example.com")
    _json("session", "start", "s1", "--project", "web", vault=vault, cwd=ana)
    _json("session", "end", "s1", "--project", "web", "--next-step", "deploy to staging", vault=vault, cwd=ana)
    [baton] = _json("session", "handoff", "--project", "web", vault=vault, cwd=ana)["items"]
    assert (baton["owner"], baton["branch"], baton["shared"]) == ("ana@example.com", "main", False)
    # another person on the branch, and the same person on another branch, do not get it
    bob = _json("session", "start", "s2", "--project", "web", "--owner", "bob@example.com", vault=vault, cwd=ana)
    other_branch = _json("session", "start", "s3", "--project", "web", "--branch", "fix", vault=vault, cwd=ana)
    assert bob["handoff"] is None and other_branch["handoff"] is None
    mine = _json("session", "start", "s4", "--project", "web", vault=vault, cwd=ana)
    assert mine["owner"] == "ana@example.com" and mine["handoff"]["id"] == "handoff-s1"


def test_without_an_email_the_git_name_owns_it_and_a_shared_baton_goes_to_anyone(tmp_path):
    vault, repo = tmp_path / "v", _repo(tmp_path / "r" / "web", None, name="Ana Lima")
    _json("session", "start", "s1", "--project", "web", vault=vault, cwd=repo)
    ended = _json("session", "end", "s1", "--project", "web", "--next-step", "review", "--shared", vault=vault, cwd=repo)
    [baton] = _json("session", "handoff", "--project", "web", vault=vault, cwd=repo)["items"]
    assert ended["handoffArchive"] == "handoff-s1" and baton["owner"] == "Ana Lima" and baton["shared"] is True
    anyone = _json("session", "start", "s2", "--project", "web", "--owner", "bob", "--branch", "other", vault=vault,
                   cwd=tmp_path)
    assert anyone["handoff"]["id"] == "handoff-s1"


def test_cancel_without_an_id_cancels_the_callers_pending_batons_and_is_fine_with_none(tmp_path):
    vault, ana = tmp_path / "v", _repo(tmp_path / "ana" / "web", "ana@example.com")
    for sid, owner in (("s1", None), ("s2", "bob@example.com")):
        _json("session", "start", sid, "--project", "web", *(["--owner", owner] if owner else []), vault=vault, cwd=ana)
        _json("session", "end", sid, "--project", "web", "--next-step", f"next after {sid}", vault=vault, cwd=ana)
    cancelled = _json("session", "handoff", "--cancel", "--project", "web", vault=vault, cwd=ana)
    assert cancelled["cancelled"] == ["handoff-s1"] and cancelled["owner"] == "ana@example.com"
    pending = _json("session", "handoff", "--project", "web", vault=vault, cwd=ana)["items"]
    assert [b["id"] for b in pending] == ["handoff-s2"]  # bob's baton stays

    async def again_over_the_tool():
        async with mcp_client(vault) as client:
            result = await client.call_tool("prompt", {"action": "cancel_handoff", "projectId": "web", "cwd": str(ana)})
            return result.is_error, json.loads(result.content[0].text)

    is_error, answer = asyncio.run(again_over_the_tool())
    assert not is_error and answer["cancelled"] == [] and answer["total"] == 0  # nothing to do: no error
    human = memo("session", "handoff", "--cancel", "--project", "web", vault=vault, cwd=ana, env=NO_GLOBAL_GIT,
                 check=False)
    assert human.returncode == 1 and "nothing to cancel" in human.stdout  # it did nothing: says so, exits 1


def test_a_hand_off_addressed_to_no_one_the_vault_knows_says_so(tmp_path):
    """Found by a team lead: ``--handoff-owner ana`` (the README's own short form) was taken
    without a word; Ana (ana@team.example) never received it."""
    vault = tmp_path / "v"
    for sid, owner in (("a1", "ana@team.example"), ("l1", "lead@team.example")):
        memo("session", "start", sid, "--project", "web", "--owner", owner, vault=vault)
    ran = memo("session", "end", "l1", "--project", "web", "--next-step", "review PR 77", "--handoff-owner", "ana",
               vault=vault)
    assert ran.returncode == 0 and ("no session of the vault is ana's (owners: ana@team.example, lead@team.example): "
                                    "the hand-off waits for a start by exactly ana") in ran.stderr, ran.stderr
    ran = memo("session", "end", "a1", "--project", "web", "--next-step", "ship it", "--handoff-owner",
               "LEAD@team.example", vault=vault)
    assert "no session of the vault is" not in ran.stderr  # a known person, in any case
    # found by a team lead: a hybrid laptop holds its own person's sessions only — a teammate is no
    # one it knows, and the team daemon hands the baton on: no warning on every hand-off
    config = tmp_path / "hybrid.toml"
    config.write_text('mode = "hybrid"\n[hybrid]\nremoteUrl = "http://127.0.0.1:9"\n')
    ran = memo("session", "start", "b1", "--project", "web", "--owner", "bob@team.example", vault=tmp_path / "bob",
               env={"MEMO_CONFIG": str(config)})
    ran = memo("session", "end", "b1", "--project", "web", "--next-step", "review", "--handoff-owner",
               "ana@team.example", vault=tmp_path / "bob", env={"MEMO_CONFIG": str(config)})
    assert ran.returncode == 0 and "no session of the vault is" not in ran.stderr, ran.stderr
