"""Tolerant on known fields, strict on unknown ones (issue 13 point 1): every field of the
tool's schema is accepted on every action; those the action does not use are ignored and named
in the answer (``ignored``); a name the schema does not know is still refused by name. The same
rule on ``POST /api/actions/*``, where the tool's names (``projectId``) and the HTTP names
(``project``) both work."""

from __future__ import annotations

import json

from tests.inprocess import memo, tool_calls

from .test_http_api import Server



def test_fields_an_action_does_not_use_are_ignored_and_named_and_unknown_ones_refused(tmp_path):
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "web", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    ended, listed, refused = tool_calls(vault, [
        # spec-memo's agents send body with summary and a pagination limit with session_end
        {"action": "session_end", "sessionId": "s1", "projectId": "web", "until": "2026-03-02T10:00:00Z",
         "summary": "done", "body": "the turn text", "limit": 5, "cwd": str(tmp_path)},
        {"action": "list", "projectId": "web", "summary": "x", "helpful": True},
        {"action": "list", "projectId": "web", "sesionId": "s1"},
    ])
    assert not ended[0] and not listed[0]
    answer = json.loads(ended[1])
    assert answer["ignored"] == ["body", "limit"]  # the context field cwd is not named
    assert answer["durationMinutes"] == 60  # never taken from the limit (SPEC §2.5)
    assert json.loads(listed[1])["ignored"] == ["helpful", "summary"]
    assert refused[0] and "Invalid sesionId: unknown field of the tool prompt" in refused[1]
    # an answer without ignored fields carries no ignored key: the CLI's JSON stays the same
    plain = json.loads(memo("--json", "prompt", "list", "--project", "web", vault=vault).stdout)
    assert "ignored" not in plain


def test_the_http_actions_take_both_field_names_and_name_the_ignored_ones(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "Add the CSV export", "--project", "web", "--session-id", "s1", vault=vault)
    server = Server(vault, "--mcp-port", "0")
    try:
        by_tool_name = server.get_json("/api/actions/list", data={"projectId": "web", "summary": "x"})
        by_http_name = server.get_json("/api/actions/list", data={"project": "web", "summary": "x"})
        unknown = server.get_json("/api/actions/list", data={"project": "web", "nosuch": 1})
    finally:
        server.stop()
    assert by_tool_name[0] == by_http_name[0] == 200
    assert by_tool_name[1] == by_http_name[1]
    assert by_tool_name[1]["total"] == 1 and by_tool_name[1]["ignored"] == ["summary"]
    assert unknown[0] == 400 and "Invalid nosuch" in unknown[1]["error"]


def test_a_turn_number_without_a_session_is_named_as_ignored(tmp_path):
    """SPEC §2.2: a turn without a sessionId gets the random id, so its number is not used."""
    [(is_error, text)] = tool_calls(tmp_path / "v", [
        {"action": "record", "projectId": "web", "body": "a lone turn", "turn": 3}])
    answer = json.loads(text)
    assert not is_error and answer["ignored"] == ["turn"] and answer["turn"] is None
    assert answer["id"].startswith("prompt-") and "-t3" not in answer["id"]


def test_a_choice_field_is_checked_by_the_action_that_reads_it_and_a_handoffs_wrong_key_is_named(tmp_path):
    """Found by an agent's new user: ``{"action": "digest", "status": "open"}`` was refused for a
    field digest does not read (the README: ignored and named); a hand-off given as
    ``{"nextStep": …, "failed": …}`` (the CLI's option names) was refused as "handoff.nextSteps: is
    required", never naming the keys that were wrong; and one given as text in pydantic's words."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "web", vault=vault)
    digest, handoffs, wrong_key, as_text, both = tool_calls(vault, [
        {"action": "digest", "projectId": "web", "status": "open", "sort": "new", "feedback": "meh"},
        {"action": "handoffs", "projectId": "web", "status": "open"},
        {"action": "session_end", "sessionId": "s1", "projectId": "web",
         "handoff": {"nextStep": "wire the ledger", "failed": "stubs"}},
        {"action": "session_end", "sessionId": "s1", "projectId": "web", "handoff": "wire the ledger"},
        {"action": "list", "projectId": "web", "sort": "new"},
    ])
    assert not digest[0] and json.loads(digest[1])["ignored"] == ["feedback", "sort", "status"]
    assert handoffs[0] and "Invalid status: Input should be 'pending', 'claimed' or 'cancelled'" in handoffs[1]
    assert wrong_key[0] and "Invalid handoff.nextStep: unknown field of handoff; it takes nextSteps, " \
                             "failedApproaches, openQuestions, branch, owner, shared" in wrong_key[1]
    assert as_text[0] and "Invalid handoff: must be an object {nextSteps, failedApproaches, openQuestions, " \
                          "branch, owner, shared}" in as_text[1]
    assert both[0] and "Invalid sort: Input should be 'date-desc' or 'date-asc'" in both[1]
    # the session is still open: nothing was ended by a refused call
    assert json.loads(memo("--json", "session", "show", "s1", "--project", "web", vault=vault).stdout)[
        "session"]["status"] == "active"


def test_the_tool_schema_still_offers_the_choices_of_each_choice_field():
    from memo_analytics.actions import PromptToolInput

    schema = PromptToolInput.model_json_schema(by_alias=True)["properties"]
    assert schema["status"]["enum"] == ["pending", "claimed", "cancelled"]
    assert schema["sort"]["enum"] == ["date-desc", "date-asc"]
    assert schema["feedback"]["enum"] == ["helpful", "stale", "wrong"]
