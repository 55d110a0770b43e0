"""Issue 13 point 7: SPEC §2.2 random ids for a turn without a session; compiled views list
session ids and link prompt files; ``?project=``/``projectId`` accepted on every record route
(SPEC §3.3); story export creates a missing destination folder (still outside repositories and
the vault, never through a symbolic link)."""

from __future__ import annotations

import json
import re

import pytest

from memo_analytics.domain.ids import LONE_PROMPT_ID
from tests.inprocess import memo, tool_calls

from .test_http_api import Server



# --- SPEC §2.2: a turn without a sessionId gets the random id -------------------------------

def test_a_turn_without_a_session_gets_the_random_prompt_id_over_the_cli(tmp_path):
    vault = tmp_path / "v"
    recorded = json.loads(memo("--json", "prompt", "record", "--body", "lone turn", "--turn", "5", "--project", "p",
                               vault=vault).stdout)
    assert LONE_PROMPT_ID.fullmatch(recorded["id"]), recorded["id"]
    assert recorded["sessionId"] is None and recorded.get("turn") is None  # no session to number it in
    assert (vault / "projects" / "p" / "prompts" / f"{recorded['id']}.md").is_file()
    got = json.loads(memo("--json", "prompt", "get", recorded["id"], vault=vault).stdout)
    assert got["body"] == "lone turn"


def test_a_turn_without_a_session_gets_the_random_prompt_id_over_mcp(tmp_path):
    vault = tmp_path / "v"
    first, second = tool_calls(vault, [
        {"action": "record", "projectId": "p", "body": "one", "turn": 1},
        {"action": "record", "projectId": "p", "body": "two", "turn": 1},
    ])
    assert not first[0] and not second[0], (first, second)
    ids = [json.loads(answer)["id"] for _, answer in (first, second)]
    assert all(LONE_PROMPT_ID.fullmatch(i) for i in ids) and ids[0] != ids[1]  # never the same file
    # with a session the id stays prompt-{sessionId}-t{turn}
    (with_session,) = tool_calls(vault, [{"action": "record", "projectId": "p", "body": "x",
                                                  "sessionId": "s", "turn": 3}])
    assert json.loads(with_session[1])["id"] == "prompt-s-t3"


# --- compiled views -------------------------------------------------------------------------

def _views(tmp_path):
    vault = tmp_path / "v"
    memo("session", "start", "fix_login", "--project", "web", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    memo("prompt", "record", "--session-id", "fix_login", "--project", "web", "--body", "Fix the redirect",
         vault=vault)
    memo("session", "end", "fix_login", "--project", "web", "--until", "2026-03-02T10:00:00Z", vault=vault)
    memo("session", "start", "other-1", "--project", "web", "--start-time", "2026-03-03T09:00:00Z", vault=vault)
    lone = json.loads(memo("--json", "prompt", "record", "--project", "web", "--body", "no session", vault=vault).stdout)
    return vault / "projects" / "web", lone["id"]


def test_sessions_view_lists_each_session_id_with_a_link_to_its_file(tmp_path):
    folder, _ = _views(tmp_path)
    text = (folder / "SESSIONS.md").read_text(encoding="utf-8")
    assert "| session | start (UTC) |" in text
    for session_id in ("fix_login", "other-1"):
        assert f"[{session_id}](sessions/session-{session_id}.md)" in text
        assert (folder / "sessions" / f"session-{session_id}.md").is_file()


def test_prompts_view_links_each_prompt_to_its_file(tmp_path):
    folder, lone = _views(tmp_path)
    text = (folder / "PROMPTS.md").read_text(encoding="utf-8")
    links = re.findall(r"\[([^\]]+)\]\((prompts/[^)]+)\)", text)
    assert sorted(name for name, _ in links) == sorted(["prompt-fix_login-t1", lone])
    for name, target in links:
        assert target == f"prompts/{name}.md" and (folder / target).is_file()  # relative to the view


def test_a_view_holds_no_escape_or_direction_character_of_a_records_text(tmp_path):
    """Found by an attacker: a hook's prompt with an OSC title sequence, colour codes and a
    U+202E was written raw into ``PROMPTS.md``; ``cat`` on the view acted on them."""
    vault = tmp_path / "v"
    memo("prompt", "record", "--project", "web", "--body", "title \x1b]0;pwned\x07 red \x1b[31m flip \u202eevil",
         vault=vault)
    memo("reindex", vault=vault)  # views are compiled
    text = (vault / "projects" / "web" / "PROMPTS.md").read_text(encoding="utf-8")
    assert "title ]0;pwned red [31m flip evil" in text
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", text)


# --- HTTP: ?project= / projectId on every record route ---------------------------------------

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    vault = tmp_path_factory.mktemp("routes") / "vault"
    memo("session", "start", "s1", "--project", "web", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "web", "--body", "Always run the linter first",
         vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "web", "--body", "Always run the linter first, "
         "then the tests", vault=vault)
    memo("session", "end", "s1", "--project", "web", "--until", "2026-03-02T10:00:00Z", vault=vault)
    memo("prompt", "record", "--session-id", "z9", "--project", "api", "--body", "Always run the linter first",
         vault=vault)
    server = Server(vault)
    yield vault, server
    server.stop()


@pytest.mark.parametrize("name", ["project", "projectId"])
def test_project_is_accepted_on_every_record_route(served, name):
    _, server = served
    status, record = server.get_json(f"/api/prompts/prompt-s1-t1?{name}=web")
    assert status == 200 and record["id"] == "prompt-s1-t1" and "renderedHtml" in record
    status, turns = server.get_json(f"/api/prompts/sessions/s1?{name}=web")
    assert status == 200 and turns["session"]["sessionId"] == "s1" and turns["total"] == 2
    status, headers, story = server.request(f"/api/prompts/sessions/s1/export?{name}=web")
    assert status == 200 and headers["Content-Type"].startswith("text/markdown") and "| Session | s1 |" in story
    status, page = server.get_json(f"/api/prompts?{name}=api")
    assert status == 200 and [i["id"] for i in page["items"]] == ["prompt-z9-t1"]


@pytest.mark.parametrize("name", ["project", "projectId"])
@pytest.mark.parametrize("path", ["/api/prompts/prompt-s1-t1", "/api/prompts/sessions/s1",
                                  "/api/prompts/sessions/s1/export"])
def test_a_record_route_with_another_project_is_not_found(served, path, name):
    _, server = served
    status, answer = server.get_json(f"{path}?{name}=api")
    assert status == 404 and answer["error"].startswith("Record not found"), answer


def test_a_record_route_refuses_project_and_projectid_that_differ(served):
    _, server = served
    status, answer = server.get_json("/api/prompts/prompt-s1-t1?project=web&projectId=api")
    assert status == 400 and "differ" in answer["error"]
    status, _ = server.get_json("/api/prompts/prompt-s1-t1?project=web&projectId=web")
    assert status == 200


def test_routes_without_a_project_answer_as_before(served):
    _, server = served
    assert server.get_json("/api/prompts/prompt-s1-t1")[0] == 200
    assert server.request("/api/prompts/sessions/s1/export")[0] == 200
    status, answer = server.get_json("/api/prompts/sessions/s1")
    assert status == 400 and "Invalid project" in answer["error"]  # SPEC §3.3: the turns route requires one


def test_derive_rules_takes_projectid_as_well_as_project(served):
    _, server = served
    by_http = server.get_json("/api/prompts/derive-rules", data={"project": "web", "minConfidence": 0.5})
    by_mcp = server.get_json("/api/prompts/derive-rules", data={"projectId": "web", "minConfidence": 0.5})
    assert by_http[0] == by_mcp[0] == 200, (by_http, by_mcp)
    assert by_http[1] == by_mcp[1]
    projects = {e["project"] for item in by_mcp[1]["items"] for e in item["evidence"]}
    assert projects == {"web"}
    status, answer = server.get_json("/api/prompts/derive-rules", data={"project": "web", "projectId": "api"})
    assert status == 400 and "differ" in answer["error"]


# --- story export creates a missing destination folder ----------------------------------------

def _story_vault(tmp_path):
    vault = tmp_path / "vault"
    memo("session", "start", "s1", "--project", "web", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "web", "--body", "Add dark mode", vault=vault)
    memo("session", "end", "s1", "--project", "web", "--until", "2026-03-02T10:00:00Z", vault=vault)
    return vault


def test_story_export_creates_a_missing_destination_folder_over_mcp(tmp_path, repo):
    vault = _story_vault(tmp_path)
    target = tmp_path / "stories" / "2026" / "march" / "s1.md"
    ((error, text),) = tool_calls(vault, [{"action": "export_story", "sessionId": "s1",
                                                   "output": str(target), "cwd": str(repo)}])
    assert not error, text
    assert json.loads(text)["path"] == str(target)
    assert target.read_text(encoding="utf-8") == memo("session", "export", "s1", vault=vault).stdout


def test_story_export_creates_a_missing_destination_folder_over_the_cli(tmp_path, repo):
    vault = _story_vault(tmp_path)
    memo("session", "export", "s1", "-o", "../exports/new/s1.md", vault=vault, cwd=repo)
    assert "Add dark mode" in (tmp_path / "exports" / "new" / "s1.md").read_text(encoding="utf-8")
    memo("report", "story", "s1", "-o", str(tmp_path / "printed" / "s1.html"), vault=vault, cwd=repo)
    assert "Add dark mode" in (tmp_path / "printed" / "s1.html").read_text(encoding="utf-8")


def test_a_timesheet_goes_into_a_folder_made_for_it_as_a_story_does(tmp_path, repo):
    """Reports and stories follow one rule for a missing destination folder: it is made (it was
    refused for reports, 'folder … does not exist'), never inside a repository or the vault."""
    vault = _story_vault(tmp_path)
    target = tmp_path / "reports" / "2026" / "march" / "timesheet.pdf"
    memo("report", "timesheet", "--all", "-o", str(target), vault=vault)
    assert target.read_bytes().startswith(b"%PDF-")
    for output in (repo / "new" / "t.pdf", vault / "new" / "t.pdf"):
        refused = memo("report", "timesheet", "--all", "-o", str(output), vault=vault, check=False)
        assert refused.returncode == 1 and "Invalid output" in refused.stderr and not output.parent.exists()
    nothing = tmp_path / "invoices" / "new" / "i.pdf"  # a report that fails makes no folder
    failed = memo("report", "invoice", "--all", "-o", str(nothing), vault=vault, check=False)  # no billing terms
    assert failed.returncode == 1 and "no billing terms" in failed.stderr and not (tmp_path / "invoices").exists()
    memo("report", "rules", "--all", "-o", str(tmp_path / "rules" / "new" / "r.html"), vault=vault)
    assert (tmp_path / "rules" / "new" / "r.html").is_file()


def test_a_person_prints_a_story_from_any_folder_but_never_into_a_repository_or_the_vault(tmp_path, repo):
    """``memo report story`` is a person's printout: an imported session often has no repository
    on this machine, so it is written from any folder (``export_story``, the agents' tool, keeps
    SPEC §5.2's rule: from a product repository) — still never inside a git work tree or the vault."""
    vault = _story_vault(tmp_path)
    plain = tmp_path / "plain"
    plain.mkdir()
    memo("report", "story", "s1", "-o", "stories/s1.pdf", vault=vault, cwd=plain)
    assert (plain / "stories" / "s1.pdf").read_bytes().startswith(b"%PDF-")
    for output in (repo / "s1.pdf", vault / "s1.pdf"):
        refused = memo("report", "story", "s1", "-o", str(output), vault=vault, cwd=plain, check=False)
        assert refused.returncode == 1 and "Invalid output" in refused.stderr and not output.exists()
    agent = memo("session", "export", "s1", "-o", "s1.md", vault=vault, cwd=plain, check=False)
    assert agent.returncode == 1 and "is not inside a product repository" in agent.stderr


@pytest.mark.parametrize("where, message", [
    ("repo", "is inside the git repository"),
    ("vault", "is inside the vault"),
    ("dangling", "symbolic link"),
    ("through-link-to-repo", "is inside the git repository"),
    ("under-a-file", "is not a folder"),
])
def test_story_export_never_creates_a_folder_inside_a_repository_the_vault_or_through_a_link(tmp_path, repo, where,
                                                                                            message):
    vault = _story_vault(tmp_path)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "to-repo").symlink_to(repo)
    (tmp_path / "a-file").write_text("x")
    output = {"repo": repo / "new" / "s1.md", "vault": vault / "new" / "s1.md",
              "dangling": tmp_path / "dangling" / "new" / "s1.md",
              "through-link-to-repo": tmp_path / "to-repo" / "new" / "s1.md",
              "under-a-file": tmp_path / "a-file" / "new" / "s1.md"}[where]
    for command in (["session", "export", "s1", "-o", str(output)], ["report", "story", "s1", "-o", str(output)]):
        refused = memo(*command, vault=vault, cwd=repo, check=False)
        assert refused.returncode == 1 and "Invalid output" in refused.stderr and message in refused.stderr, \
            refused.stderr
    assert not (repo / "new").exists() and not (vault / "new").exists() and not (tmp_path / "nowhere").exists()
