"""Identity per project (issue 13 point 2; SPEC §2.1: records live under
``projects/<projectId>/``): ``(project, id)`` is a record's key in the files, the index, sync
and vault-git. The same session id and the same derived trap exist in several projects; every
lookup by id takes a project, and an id that several projects hold, asked for without one,
is refused with a message that lists them — over MCP stdio, MCP HTTP, the HTTP API and the CLI."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from memo_analytics.config import HybridSync, Settings
from memo_analytics.domain.errors import AmbiguousIdError
from memo_analytics.index import store as index
from memo_analytics.index.reindex import rebuild
from memo_analytics.runtime import Runtime
from memo_analytics.services import sync, vault_git
from memo_analytics.services.prompts import get_record, record_prompt
from memo_analytics.services.requests import RecordPromptRequest
from memo_analytics.services.store import VaultStore
from tests.inprocess import memo, tool_calls

from .test_http_api import Server
from .test_mcp import TRANSPORTS
from .test_vault_git import T0, clone, git, no_git_identity, remote  # noqa: F401 (fixtures)

AMBIGUOUS = "Ambiguous id prompt-s1-t1: it exists in projects alpha, beta"

#: One agent's dialogue in two projects with the same session id, then lookups by id.
DIALOGUE = [
    {"action": "session_start", "sessionId": "s1", "projectId": "alpha", "startTime": "2026-11-02T09:00:00Z"},
    {"action": "session_start", "sessionId": "s1", "projectId": "beta", "startTime": "2026-11-02T10:00:00Z"},
    {"action": "record", "sessionId": "s1", "projectId": "alpha", "body": "alpha: add the CSV export"},
    {"action": "record", "sessionId": "s1", "projectId": "beta", "body": "beta: fix the login page"},
    {"action": "session_end", "sessionId": "s1", "projectId": "alpha", "until": "2026-11-02T10:00:00Z"},
    {"action": "session_end", "sessionId": "s1", "projectId": "beta", "until": "2026-11-02T10:30:00Z"},
    {"action": "get", "id": "prompt-s1-t1"},
    {"action": "get", "id": "prompt-s1-t1", "projectId": "beta"},
    {"action": "session", "sessionId": "s1"},
    {"action": "session", "sessionId": "s1", "projectId": "alpha"},
    {"action": "feedback", "id": "prompt-s1-t1", "feedback": "helpful"},
    {"action": "feedback", "id": "prompt-s1-t1", "projectId": "alpha", "feedback": "helpful"},
    {"action": "export_story", "sessionId": "s1", "projectId": "beta"},
    {"action": "activity_report", "crossProject": True},
]


def check_dialogue(answers: list[tuple[bool, object]]) -> None:
    """``answers``: (is_error, parsed answer or error text) for each call of DIALOGUE."""
    assert [error for error, _ in answers[:6]] == [False] * 6, answers[:6]
    started_alpha, started_beta, turn_alpha, turn_beta, ended_alpha, ended_beta = (a for _, a in answers[:6])
    assert (started_alpha["id"], started_alpha["project"]) == ("session-s1", "alpha")
    assert (started_beta["id"], started_beta["project"]) == ("session-s1", "beta")
    # the turn numbers of one session id are the project's own: both are turn 1
    assert (turn_alpha["id"], turn_alpha["turn"], turn_alpha["project"]) == ("prompt-s1-t1", 1, "alpha")
    assert (turn_beta["id"], turn_beta["turn"], turn_beta["project"]) == ("prompt-s1-t1", 1, "beta")
    assert (ended_alpha["durationMinutes"], ended_beta["durationMinutes"]) == (60, 30)
    error, message = answers[6]
    assert error and AMBIGUOUS in message, message
    assert answers[7] == (False, answers[7][1]) and answers[7][1]["body"] == "beta: fix the login page"
    error, message = answers[8]
    assert error and "Ambiguous id s1: it exists in projects alpha, beta" in message, message
    view = answers[9][1]
    assert view["session"]["project"] == "alpha" and [t["body"] for t in view["items"]] == ["alpha: add the CSV export"]
    error, message = answers[10]
    assert error and AMBIGUOUS in message
    feedback = answers[11][1]
    assert (feedback["project"], feedback["feedback"]["hits"], feedback["feedback"]["helpful"]) == ("alpha", 1, 1)
    story = answers[12][1]
    assert story["project"] == "beta" and "fix the login page" in story["markdown"]
    assert "add the CSV export" not in story["markdown"]
    report = answers[13][1]
    assert report["totalSessions"] == 2 and report["totalDurationMinutes"] == 90
    # each session is billed on its own (the same id in two projects is two sessions)
    assert sorted((s["project"], s["durationMinutes"], s["billableHours"]) for s in report["sessions"]) == [
        ("alpha", 60, 1.0), ("beta", 30, 0.5)]


def parsed(is_error: bool, text: str) -> tuple[bool, object]:
    return is_error, (text if is_error else json.loads(text))


def test_the_same_session_id_in_two_projects_over_the_in_memory_mcp_client(tmp_path):
    check_dialogue([parsed(*answer) for answer in tool_calls(tmp_path / "v", DIALOGUE)])


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_the_same_session_id_in_two_projects_over_each_mcp_transport(tmp_path, transport):
    async def scenario():
        async with TRANSPORTS[transport](tmp_path / "v") as client:
            answers = []
            for call in DIALOGUE:
                result = await client.call_tool("prompt", call)
                answers.append(parsed(bool(result.is_error), result.content[0].text))
            return answers

    check_dialogue(asyncio.run(scenario()))


def test_the_same_session_id_in_two_projects_over_the_http_api(tmp_path):
    server = Server(tmp_path / "v", "--mcp-port", "0")
    try:
        answers = []
        for call in DIALOGUE:
            status, body = server.get_json(f"/api/actions/{call['action']}",
                                           data={k: v for k, v in call.items() if k != "action"})
            answers.append((status != 200, body["error"] if status != 200 else body))
        # the record routes: ?project= chooses, without it the ambiguity is a 400 naming the projects
        chosen = server.get_json("/api/prompts/prompt-s1-t1?project=alpha")
        ambiguous = server.get_json("/api/prompts/prompt-s1-t1")
        export = server.request("/api/prompts/sessions/s1/export?projectId=beta")
        export_ambiguous = server.get_json("/api/prompts/sessions/s1/export")
        turns = server.get_json("/api/prompts/sessions/s1?project=beta")
    finally:
        server.stop()
    check_dialogue(answers)
    assert chosen[0] == 200 and chosen[1]["body"] == "alpha: add the CSV export" and chosen[1]["renderedHtml"]
    assert ambiguous[0] == 400 and AMBIGUOUS in ambiguous[1]["error"]
    assert export[0] == 200 and "fix the login page" in export[2] and "add the CSV export" not in export[2]
    assert export_ambiguous[0] == 400 and "exists in projects alpha, beta" in export_ambiguous[1]["error"]
    assert turns[0] == 200 and [t["project"] for t in turns[1]["items"]] == ["beta"]


def test_the_same_session_id_in_two_projects_over_the_cli(tmp_path):
    vault = tmp_path / "v"
    for project, start, until in (("alpha", "09:00", "10:00"), ("beta", "10:00", "10:30")):
        memo("session", "start", "s1", "--project", project, "--start-time", f"2026-11-02T{start}:00Z", vault=vault)
        memo("prompt", "record", "--session-id", "s1", "--project", project, "--body", f"{project}: a turn", vault=vault)
        memo("session", "end", "s1", "--project", project, "--until", f"2026-11-02T{until}:00Z", vault=vault)
    ambiguous = memo("prompt", "get", "prompt-s1-t1", vault=vault, check=False)
    assert ambiguous.returncode != 0 and AMBIGUOUS in ambiguous.stderr
    assert len(ambiguous.stderr.strip().splitlines()) == 1
    chosen = json.loads(memo("--json", "prompt", "get", "prompt-s1-t1", "--project", "beta", vault=vault).stdout)
    assert (chosen["project"], chosen["body"]) == ("beta", "beta: a turn")
    shown = memo("session", "show", "s1", vault=vault, check=False)
    assert shown.returncode != 0 and "Ambiguous id s1: it exists in projects alpha, beta" in shown.stderr
    story = memo("session", "export", "s1", "--project", "alpha", vault=vault).stdout
    assert "alpha: a turn" in story and "beta: a turn" not in story
    detail = json.loads(memo("--json", "prompt", "show", "prompt-s1-t1", "--project", "alpha", vault=vault).stdout)
    assert detail["project"] == "alpha"
    feedback = json.loads(memo("--json", "prompt", "feedback", "prompt-s1-t1", "--project", "beta", "--feedback",
                               "stale", vault=vault).stdout)
    assert (feedback["project"], feedback["feedback"]["stale"]) == ("beta", 1)
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert report["totalSessions"] == 2 and report["totalDurationMinutes"] == 90


def test_the_repository_of_cwd_chooses_among_the_projects_that_hold_an_id(tmp_path, repo):
    """``repo`` is a git repository named ``product``: a caller working there means its project."""
    vault = tmp_path / "v"
    for project in ("product", "other"):
        memo("prompt", "record", "--session-id", "s1", "--project", project, "--body", f"{project} turn", vault=vault)
    [(error, text)] = tool_calls(vault, [{"action": "get", "id": "prompt-s1-t1", "cwd": str(repo)}])
    assert not error and json.loads(text)["body"] == "product turn"
    # the CLI's cwd is the repository too
    ran = memo("--json", "prompt", "get", "prompt-s1-t1", vault=vault, cwd=repo)
    assert json.loads(ran.stdout)["project"] == "product"


def test_a_turn_of_a_session_that_lives_in_another_project_is_filed_beside_it(tmp_path):
    """A caller that sends the session id but neither projectId nor a repository cwd: the
    turn belongs to the one project whose session has this id, not to the default project."""
    vault = tmp_path / "v"
    [_, (error, text), _, (error2, text2)] = tool_calls(vault, [
        {"action": "session_start", "sessionId": "s7", "projectId": "alpha"},
        {"action": "record", "sessionId": "s7", "body": "a turn without a project"},
        {"action": "session_start", "sessionId": "s7", "projectId": "beta"},
        {"action": "record", "sessionId": "s7", "body": "now two projects hold s7"},
    ])
    assert not error and (json.loads(text)["project"], json.loads(text)["turn"]) == ("alpha", 1)
    assert error2 and "Ambiguous id s7: it exists in projects alpha, beta" in text2
    assert not (vault / "projects" / "default").exists()


def test_the_same_derived_trap_is_saved_in_two_projects(tmp_path):
    vault = tmp_path / "v"
    rule = "Always run the linter before you commit."
    for project in ("p1", "p2"):
        for n in range(4):
            memo("prompt", "record", "--session-id", f"s{n}", "--project", project, "--body", rule, vault=vault)
    answers = tool_calls(vault, [{"action": "derive_rules", "projectId": p, "saveTraps": True} for p in ("p1", "p2")])
    assert [error for error, _ in answers] == [False, False], answers
    saved = [json.loads(text)["savedTraps"] for _, text in answers]
    assert saved[0] and saved[0] == saved[1]  # the same trap id, once in each project
    for project in ("p1", "p2"):
        assert (vault / "projects" / project / "traps" / f"{saved[0][0]}.md").is_file()
    # saving again is idempotent in each project, still no clash
    again = tool_calls(vault, [{"action": "derive_rules", "projectId": "p2", "saveTraps": True}])
    assert not again[0][0] and json.loads(again[0][1])["savedTraps"] == saved[1]


def test_the_index_keys_records_by_project_and_id_and_a_rebuild_keeps_both(tmp_path):
    store = VaultStore(Settings(vault_root=tmp_path / "v"))
    for project in ("alpha", "beta"):
        record_prompt(store, RecordPromptRequest(session_id="s1", project=project, body=f"{project} body"))
    rows = store.conn.execute("SELECT project, id FROM records ORDER BY project").fetchall()
    assert [tuple(r) for r in rows] == [("alpha", "prompt-s1-t1"), ("beta", "prompt-s1-t1")]
    assert index.record_counts(store.conn, "alpha") == index.record_counts(store.conn, "beta") == {"prompt": 1}
    before = [tuple(r) for r in store.conn.execute("SELECT project, id, path, meta, body FROM records ORDER BY 1, 2")]
    result = rebuild(store.conn, store.layout)
    assert (result.indexed, result.skipped) == (2, [])
    after = [tuple(r) for r in store.conn.execute("SELECT project, id, path, meta, body FROM records ORDER BY 1, 2")]
    assert after == before
    # FTS rows follow their own record: a search scoped to one project finds only its body
    hits = store.conn.execute("SELECT r.project FROM records_fts f JOIN records r ON r.rowid = f.rowid "
                              "WHERE records_fts MATCH 'beta'").fetchall()
    assert [h[0] for h in hits] == ["beta"]
    with pytest.raises(AmbiguousIdError) as caught:
        get_record(store, "prompt-s1-t1")
    assert caught.value.projects == ["alpha", "beta"] and caught.value.field == "project"
    assert get_record(store, "prompt-s1-t1", "alpha")["body"] == "alpha body"


def test_an_index_of_the_old_schema_is_rebuilt_with_the_new_key(tmp_path):
    """An index made when ids were vault-wide (``id`` the primary key, schema 6) is another
    version: opening the vault rebuilds it from the files, and both projects' records are in."""
    vault = tmp_path / "v"
    store = VaultStore(Settings(vault_root=vault))
    for project in ("alpha", "beta"):
        record_prompt(store, RecordPromptRequest(session_id="s1", project=project, body=f"{project} body"))
    store.close()
    conn = sqlite3.connect(vault / ".memo" / "index.sqlite")
    conn.execute("PRAGMA user_version = 6")
    conn.commit()
    conn.close()
    reopened = VaultStore(Settings(vault_root=vault))
    assert reopened.conn.execute("SELECT count(*) FROM records").fetchone()[0] == 2
    assert any("schema is version 6" in line for line in reopened.repairs)


def test_a_hybrid_push_carries_one_id_of_two_projects_as_two_records(tmp_path):
    daemon = Server(tmp_path / "team", "--mcp-port", "0")
    try:
        mine = Runtime(Settings(vault_root=tmp_path / "mine", timezone="UTC", mode="hybrid",
                                hybrid=HybridSync(remote_url=daemon.base, debounce_ms=0))).store()
        for project in ("alpha", "beta"):
            record_prompt(mine, RecordPromptRequest(session_id="s1", project=project, body=f"{project} body"))
        assert sync.status(mine)["pending"] == 2
        pushed = sync.push(mine)
        assert (pushed["pushed"], pushed["pending"], pushed["error"]) == (2, 0, None)
        assert sorted((r["project"], r["id"], r["outcome"]) for r in pushed["results"]) == [
            ("alpha", "prompt-s1-t1", "applied"), ("beta", "prompt-s1-t1", "applied")]
        # a change to one of them pushes that one only, against its own base
        record_prompt(mine, RecordPromptRequest(session_id="s1", project="beta", body="beta again"))
        assert sync.push(mine)["pushed"] == 1
        both = daemon.get_json("/api/prompts?crossProject=true")[1]
    finally:
        daemon.stop()
    assert sorted((i["project"], i["id"]) for i in both["items"]) == [
        ("alpha", "prompt-s1-t1"), ("beta", "prompt-s1-t1"), ("beta", "prompt-s1-t2")]
    for project in ("alpha", "beta"):
        assert (tmp_path / "team" / "projects" / project / "prompts" / "prompt-s1-t1.md").read_text() == \
            (tmp_path / "mine" / "projects" / project / "prompts" / "prompt-s1-t1.md").read_text()


def test_vault_git_commits_one_id_of_two_projects_as_two_records_and_the_other_clone_indexes_both(
        tmp_path, no_git_identity, remote):
    first = clone(remote, tmp_path / "a")
    for project in ("alpha", "beta"):
        record_prompt(first, RecordPromptRequest(session_id="s1", project=project, body=f"{project} body"))
    result = vault_git.sync(first, "manual", now=T0)
    assert result["error"] is None and result["committed"] == 2
    assert result["records"] == ["alpha/prompt-s1-t1", "beta/prompt-s1-t1"]
    subject = git("--git-dir", str(remote), "log", "-1", "--format=%s", "main").strip()
    assert subject.startswith("memo sync (manual): 2 records — prompt-s1-t1 (+")  # one id, named once
    second = clone(remote, tmp_path / "b")
    assert vault_git.sync(second, "manual", now=T0)["error"] is None
    assert sorted(tuple(r) for r in second.conn.execute("SELECT project, id FROM records")) == [
        ("alpha", "prompt-s1-t1"), ("beta", "prompt-s1-t1")]


def test_one_session_id_stalled_in_two_projects_is_two_digest_items_applied_one_at_a_time(tmp_path):
    from datetime import timedelta

    from memo_analytics.config import OperatorPolicy
    from memo_analytics.operator.acting import apply_item
    from memo_analytics.operator.service import apply_digest_item, current_digest
    from memo_analytics.services.requests import DigestApplyRequest

    from .test_operator_actions import LATER, T0, _stalled

    store = VaultStore(Settings(vault_root=tmp_path / "vault", timezone="UTC",
                                operator=OperatorPolicy(stories_dir=tmp_path / "stories")))
    _stalled(store, project="alpha")
    _stalled(store, project="beta")
    record_prompt(store, RecordPromptRequest(session_id="s1", project="beta", body="later, in beta only"),
                  now=T0 + timedelta(minutes=40))
    items = current_digest(store, now=LATER)["items"]
    assert sorted((i["id"], i["project"]) for i in items) == [("session_stalled:s1", "alpha"),
                                                             ("session_stalled:s1", "beta")]
    # each session's last activity is its own project's newest turn
    assert sorted((i["project"], i["proposal"]["params"]["until"]) for i in items) == [
        ("alpha", "2026-03-10T09:20:00.000Z"), ("beta", "2026-03-10T09:40:00.000Z")]
    assert items[0]["fingerprint"] != items[1]["fingerprint"]  # the project is part of the state
    with pytest.raises(AmbiguousIdError, match="session_stalled:s1: it exists in projects alpha, beta"):
        apply_digest_item(store, DigestApplyRequest(item="session_stalled:s1", as_of=LATER.isoformat()))
    beta = next(i for i in items if i["project"] == "beta")
    done = apply_item(store, beta["id"], beta["fingerprint"], now=LATER)  # the fingerprint chooses
    assert done["applied"] is True and done["item"]["project"] == "beta"
    sessions = {p: store.locate("session-s1", "session", p)["status"] for p in ("alpha", "beta")}
    assert sessions == {"alpha": "active", "beta": "completed"}
    rest = current_digest(store, now=LATER + timedelta(minutes=1), force=True)["items"]
    assert [(i["id"], i["project"]) for i in rest] == [("session_stalled:s1", "alpha")]
    again = apply_digest_item(store, DigestApplyRequest(item="session_stalled:s1", project="alpha",
                                                        as_of=(LATER + timedelta(minutes=1)).isoformat()))
    assert again["applied"] is True


def test_cancel_handoff_by_session_id_takes_the_project(tmp_path):
    vault = tmp_path / "v"
    calls = []
    for project in ("alpha", "beta"):
        calls += [{"action": "session_start", "sessionId": "s1", "projectId": project},
                  {"action": "session_end", "sessionId": "s1", "projectId": project,
                   "handoff": {"nextSteps": [f"continue {project}"], "shared": True}}]
    calls += [{"action": "cancel_handoff", "sessionId": "s1"},
              {"action": "cancel_handoff", "sessionId": "s1", "projectId": "beta"},
              {"action": "handoffs", "crossProject": True}]
    answers = tool_calls(vault, calls)
    assert [error for error, _ in answers[:4]] == [False] * 4, answers[:4]
    error, message = answers[4]
    assert error and "Ambiguous id handoff-s1: it exists in projects alpha, beta" in message
    cancelled = json.loads(answers[5][1])
    assert (cancelled["project"], cancelled["status"]) == ("beta", "cancelled")
    pending = json.loads(answers[6][1])["items"]
    assert [(h["project"], h["status"]) for h in pending] == [("alpha", "pending")]


def test_frames_over_several_vaults_keep_one_id_of_two_projects_twice_and_a_shared_record_once(tmp_path):
    import memo_analytics

    mine, team = tmp_path / "mine", tmp_path / "team"
    for vault, projects in ((mine, ("alpha", "beta")), (team, ("alpha", "gamma"))):
        store = VaultStore(Settings(vault_root=vault))
        for project in projects:
            record_prompt(store, RecordPromptRequest(session_id="s1", project=project, body=f"{project} in {vault.name}"))
        store.close()
    with memo_analytics.open_vault(mine, vaults=[team]) as vault:
        prompts = vault.prompts(body=True)
    rows = sorted(prompts.select("project", "id", "body").iter_rows())
    assert rows == [("alpha", "prompt-s1-t1", "alpha in mine"),  # the same record in both vaults: the first wins
                    ("beta", "prompt-s1-t1", "beta in mine"), ("gamma", "prompt-s1-t1", "gamma in team")]


# ---------------------------------------------------------------- found by trying to break it


def test_a_restart_or_a_turn_without_a_project_goes_where_the_session_lives(tmp_path):
    vault = tmp_path / "v"
    memo("session", "start", "fix-login", "--project", "shop", vault=vault)
    memo("prompt", "record", "--session-id", "fix-login", "--body", "first", vault=vault)
    memo("session", "start", "fix-login", vault=vault)  # a restart without a project: the same session
    memo("prompt", "record", "--session-id", "fix-login", "--body", "second", vault=vault)
    ended = json.loads(memo("--json", "session", "end", "fix-login", vault=vault).stdout)
    assert ended["project"] == "shop" and not (vault / "projects" / "default").exists()
    assert sorted(p.name for p in (vault / "projects" / "shop" / "prompts").glob("*.md")) == [
        "prompt-fix-login-t1.md", "prompt-fix-login-t2.md"]
    # a session known only by its turns: the next turn goes beside them
    memo("prompt", "record", "--session-id", "s5", "--project", "beta", "--body", "first", vault=vault)
    turn = json.loads(memo("--json", "prompt", "record", "--session-id", "s5", "--body", "second", vault=vault).stdout)
    assert (turn["project"], turn["turn"]) == ("beta", 2)


def test_a_session_record_under_a_turns_id_is_skipped_and_holds_no_id(tmp_path):
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "alpha", vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "alpha", "--body", "one", vault=vault)
    sessions = vault / "projects" / "alpha" / "sessions"
    text = (sessions / "session-s1.md").read_text().replace("id: session-s1", "id: prompt-s1-t2", 1)
    (sessions / "prompt-s1-t2.md").write_text(text)  # a session record, by hand, under a turn's id
    # a session whose id is not its session's is no record (it billed one session twice): skipped, said why
    [skipped] = json.loads(memo("--json", "reindex", vault=vault).stdout)["skipped"]
    assert "id: prompt-s1-t2 is not the id of session s1 (session-s1)" in skipped["reason"]
    turn = json.loads(memo("--json", "prompt", "record", "--session-id", "s1", "--project", "alpha", "--body", "two",
                           vault=vault).stdout)
    assert (turn["id"], turn["turn"]) == ("prompt-s1-t2", 2)  # the skipped file holds no id of the index


def test_a_hand_edited_file_naming_another_project_is_not_pushed_and_leaves_the_outbox(tmp_path):
    daemon = Server(tmp_path / "team", "--mcp-port", "0")
    try:
        mine = Runtime(Settings(vault_root=tmp_path / "mine", timezone="UTC", mode="hybrid",
                                hybrid=HybridSync(remote_url=daemon.base, debounce_ms=0))).store()
        record_prompt(mine, RecordPromptRequest(session_id="s1", project="beta", body="beta secret plan"))
        path = tmp_path / "mine" / "projects" / "beta" / "prompts" / "prompt-s1-t1.md"
        path.write_text(path.read_text().replace("project: beta", "project: alpha"))
        pushed = sync.push(mine)
        # the daemon refuses a push whose project contradicts the record's frontmatter
        status, answer = daemon.get_json("/api/sync/records", data={"records": [
            {"id": "prompt-s1-t1", "project": "beta", "text": path.read_text()}]})
    finally:
        daemon.stop()
    assert (pushed["pushed"], pushed["pending"]) == (0, 0)
    assert pushed["results"][0]["outcome"] == "refused" and "names project 'alpha'" in pushed["results"][0]["reason"]
    assert not (tmp_path / "team" / "projects").exists()
    assert status == 200 and answer["results"][0]["outcome"] == "refused"
    assert "the push names project beta but the record's frontmatter names alpha" in answer["results"][0]["reason"]


def test_push_state_kept_by_plain_id_goes_to_the_one_project_that_holds_the_id(tmp_path):
    store = Runtime(Settings(vault_root=tmp_path / "mine", timezone="UTC", mode="hybrid",
                             hybrid=HybridSync(remote_url="http://127.0.0.1:9", debounce_ms=0))).store()
    record_prompt(store, RecordPromptRequest(session_id="s1", project="alpha", body="only alpha"))
    for project in ("alpha", "beta"):
        record_prompt(store, RecordPromptRequest(session_id="s2", project=project, body=f"{project} too"))
    rekeyed = sync._rekey(store, {"prompt-s1-t1": "v1", "prompt-s2-t1": "v2", "gamma/prompt-x": "v3"})
    assert rekeyed == {"alpha/prompt-s1-t1": "v1", "gamma/prompt-x": "v3"}  # s2's entry: whose it was is unknown


def test_project_values_are_checked_on_every_surface(tmp_path):
    vault = tmp_path / "v"
    for project in ("alpha", "beta"):
        memo("prompt", "record", "--session-id", "s1", "--project", project, "--body", f"{project} turn", vault=vault)
    applied = memo("digest", "apply", "session_stalled:s1", "--project", "../x", vault=vault, check=False)
    assert applied.returncode == 1 and "Invalid project" in applied.stderr
    missing = memo("prompt", "get", "prompt-s1-t1", "--project", "nosuch", vault=vault, check=False)
    assert "Record not found: prompt-s1-t1 in project nosuch" in missing.stderr
    [(error, text)] = tool_calls(vault, [{"action": "digest", "projectId": "../x"}])
    assert error and "Invalid projectId" in text
    server = Server(vault, "--mcp-port", "0")
    try:
        control = server.get_json("/api/prompts?project=%00")
        spaced = server.get_json("/api/prompts?project=%20alpha")
        twice = server.get_json("/api/prompts?project=alpha&project=beta")
    finally:
        server.stop()
    assert control[0] == spaced[0] == twice[0] == 400
    assert "Invalid project" in control[1]["error"] and "Invalid project" in spaced[1]["error"]
    assert "Invalid project: is given more than once" in twice[1]["error"]


def test_remote_mode_uses_the_repository_only_to_choose_among_projects(tmp_path, repo):
    """The daemon holds session s3 in project solo only; the caller works in repository
    ``product``: lookups find solo's records, a turn of s3 goes beside its session."""
    daemon = Server(tmp_path / "team", "--mcp-port", "0")
    config = tmp_path / "remote.toml"
    config.write_text(f'mode = "remote"\n[remote]\nurl = "{daemon.base}"\n')
    try:
        memo("session", "start", "s3", "--project", "solo", vault=tmp_path / "team")
        memo("prompt", "record", "--session-id", "s3", "--project", "solo", "--body", "solo turn", vault=tmp_path / "team")
        answers = tool_calls(None, [
            {"action": "get", "id": "prompt-s3-t1", "cwd": str(repo)},
            {"action": "record", "sessionId": "s3", "body": "from the product repository", "cwd": str(repo)},
            {"action": "record", "sessionId": "new1", "body": "a new session's turn", "cwd": str(repo)},
        ], env={"MEMO_CONFIG": str(config)})
    finally:
        daemon.stop()
    assert [error for error, _ in answers] == [False] * 3, answers
    assert json.loads(answers[0][1])["project"] == "solo"
    assert (json.loads(answers[1][1])["project"], json.loads(answers[1][1])["turn"]) == ("solo", 2)
    assert json.loads(answers[2][1])["project"] == "product"


def test_a_duplicate_of_another_kind_is_never_indexed_even_once_the_record_that_held_its_id_is_gone(tmp_path):
    """A session record copied by hand under a turn's id is no record: a session's id is its
    session's (a copy under another id billed one session twice). It stays skipped, and a
    rebuild says why."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "alpha", vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "alpha", "--body", "one", vault=vault)
    folder = vault / "projects" / "alpha"
    text = (folder / "sessions" / "session-s1.md").read_text().replace("id: session-s1", "id: prompt-s1-t1", 1)
    (folder / "sessions" / "prompt-s1-t1.md").write_text(text)  # the same id as the turn, by hand
    memo("prompt", "list", "--project", "alpha", vault=vault)  # caught up: the duplicate skipped
    (folder / "prompts" / "prompt-s1-t1.md").unlink()
    gone = memo("--json", "prompt", "get", "prompt-s1-t1", "--project", "alpha", vault=vault, check=False)
    assert gone.returncode == 1
    rebuilt = json.loads(memo("--json", "reindex", vault=vault).stdout)
    assert rebuilt["indexed"] == 1 and [s["reason"][:40] for s in rebuilt["skipped"]] == [
        "id: prompt-s1-t1 is not the id of sessio"]


def test_a_session_is_found_by_its_record_id_too(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--session-id", "gm-1", "--project", "alpha", "--body", "a turn", vault=vault)
    memo("session", "start", "gm-1", "--project", "alpha", vault=vault)
    by_record_id = json.loads(memo("--json", "session", "show", "session-gm-1", vault=vault).stdout)
    assert by_record_id["session"]["sessionId"] == "gm-1" and by_record_id["total"] == 1


def test_session_handoff_shows_the_baton_a_session_left_in_its_project(tmp_path):
    vault = tmp_path / "v"
    for project in ("alpha", "beta"):
        memo("session", "start", "s1", "--project", project, vault=vault)
        memo("session", "end", "s1", "--project", project, "--next-step", f"continue in {project}", "--shared",
             vault=vault)
    ambiguous = memo("session", "handoff", "s1", vault=vault, check=False)
    assert ambiguous.returncode == 1 and "Ambiguous id handoff-s1: it exists in projects alpha, beta" in ambiguous.stderr
    shown = json.loads(memo("--json", "session", "handoff", "s1", "--project", "beta", vault=vault).stdout)
    assert (shown["id"], shown["project"], shown["status"]) == ("handoff-s1", "beta", "pending")
    assert "continue in beta" in shown["body"]
    missing = memo("session", "handoff", "s9", "--project", "beta", vault=vault, check=False)
    assert missing.returncode == 1 and "Record not found: handoff-s9 in project beta" in missing.stderr
