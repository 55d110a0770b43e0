"""Feedback on any memory record (issue 13 point 5): a prompt, a session, a trap or a decision
takes feedback, said as spec-memo's ``feedback: helpful|stale|wrong`` (with an optional
``comment``) or as today's ``helpful: true|false`` — through the MCP tool and the CLI alike.
``helpful: true`` ≡ ``feedback: helpful``; ``helpful: false`` counts ``notHelpful``; ``stale`` and
``wrong`` count themselves and ``notHelpful``. A comment is redacted like any text and the last
five are kept in the record's frontmatter."""

from __future__ import annotations

import json

from memo_analytics.vault.io import read_record
from tests.inprocess import memo, tool_calls

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _seed(vault):
    memo("session", "start", "s1", "--project", "web", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "web", "--created", "2026-03-02T09:05:00Z",
         "--body", "Never commit directly to main.", vault=vault)
    memo("session", "end", "s1", "--project", "web", "--until", "2026-03-02T10:00:00Z", vault=vault)


def _json(*args, vault):
    ran = memo("--json", *args, vault=vault)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def _tool(vault, *calls):
    return tool_calls(vault, list(calls))


def test_feedback_on_a_trap_and_a_session_over_the_tool_takes_spec_memo_verdicts_and_comments(tmp_path):
    vault = tmp_path / "v"
    _seed(vault)
    [(error, derived)] = _tool(vault, {"action": "derive_rules", "projectId": "web", "saveTraps": True})
    assert not error, derived
    [trap] = json.loads(derived)["savedTraps"]
    answers = _tool(vault,
                    {"action": "feedback", "id": trap, "feedback": "wrong", "comment": f"we push to main; token {SECRET}"},
                    {"action": "feedback", "id": trap, "helpful": True},
                    {"action": "feedback", "id": "s1", "feedback": "stale", "comment": "the redirect changed"},
                    {"action": "feedback", "id": "session-s1", "feedback": "helpful", "helpful": True})
    assert [error for error, _ in answers] == [False] * 4, answers
    on_trap, on_session = json.loads(answers[1][1]), json.loads(answers[3][1])
    assert (on_trap["kind"], on_trap["project"]) == ("trap", "web")
    assert {k: on_trap["feedback"][k] for k in ("hits", "helpful", "notHelpful", "stale", "wrong")} == \
        {"hits": 2, "helpful": 1, "notHelpful": 1, "stale": 0, "wrong": 1}
    assert (on_session["id"], on_session["kind"]) == ("session-s1", "session")
    assert {k: on_session["feedback"][k] for k in ("hits", "helpful", "notHelpful", "stale", "wrong")} == \
        {"hits": 2, "helpful": 1, "notHelpful": 1, "stale": 1, "wrong": 0}
    # the counts and the comment live in the trap's frontmatter, the secret redacted
    meta, body = read_record(vault / "projects" / "web" / "traps" / f"{trap}.md")
    [comment] = meta["feedback"]["comments"]
    assert comment["feedback"] == "wrong" and comment["comment"].startswith("we push to main; token [REDACTED:")
    assert SECRET not in (vault / "projects" / "web" / "traps" / f"{trap}.md").read_text()
    assert body.strip() == "Never commit directly to main." and meta["feedback"]["wrong"] == 1
    # the spec-memo fields are not "ignored" by feedback, and are by an action that does not use them
    [(_, listed)] = _tool(vault, {"action": "list", "projectId": "web", "feedback": "stale", "comment": "x"})
    assert json.loads(listed)["ignored"] == ["comment", "feedback"]


def test_helpful_true_is_feedback_helpful_and_helpful_false_counts_not_helpful_over_the_cli(tmp_path):
    vault = tmp_path / "v"
    _seed(vault)
    _json("prompt", "feedback", "prompt-s1-t1", "--helpful", vault=vault)
    _json("prompt", "feedback", "prompt-s1-t1", "--feedback", "helpful", vault=vault)
    _json("prompt", "feedback", "prompt-s1-t1", "--not-helpful", vault=vault)
    _json("prompt", "feedback", "prompt-s1-t1", "--feedback", "stale", "--not-helpful", vault=vault)
    last = _json("prompt", "feedback", "prompt-s1-t1", "--feedback", "wrong", "--comment", "  moved to v2  ", vault=vault)
    assert {k: last["feedback"][k] for k in ("hits", "helpful", "notHelpful", "stale", "wrong")} == \
        {"hits": 5, "helpful": 2, "notHelpful": 3, "stale": 1, "wrong": 1}
    assert [c["comment"] for c in last["feedback"]["comments"]] == ["moved to v2"]
    human = memo("prompt", "feedback", "s1", "--feedback", "stale", vault=vault)
    assert human.returncode == 0 and "feedback on session session-s1: used 1 times" in human.stdout
    # a verdict that contradicts helpful, or an unknown one, is refused by name
    for args, message in ((["--helpful", "--feedback", "wrong"], "Invalid feedback: wrong contradicts helpful: true"),
                          (["--feedback", "bogus"], "Invalid feedback: ")):
        refused = memo("prompt", "feedback", "prompt-s1-t1", *args, vault=vault, check=False)
        assert refused.returncode == 1 and message in refused.stderr, refused.stderr


def test_only_the_last_five_comments_are_kept_and_each_is_redacted(tmp_path):
    vault = tmp_path / "v"
    _seed(vault)
    calls = [{"action": "feedback", "id": "prompt-s1-t1", "comment": f"note {i} password=Sup3rS3cret!{i}"}
             for i in range(7)]
    answers = _tool(vault, *calls)
    comments = json.loads(answers[-1][1])["feedback"]["comments"]
    assert [c["comment"].split(" password")[0] for c in comments] == [f"note {i}" for i in range(2, 7)]
    assert all("Sup3rS3cret" not in c["comment"] and c["feedback"] is None for c in comments)
    assert json.loads(answers[-1][1])["feedback"]["hits"] == 7


def test_a_decision_takes_feedback_and_a_hand_off_does_not(tmp_path):
    vault = tmp_path / "v"
    _seed(vault)
    folder = vault / "projects" / "web" / "decisions"
    folder.mkdir(parents=True)
    (folder / "decision-cursor-pagination.md").write_text(
        "---\nid: decision-cursor-pagination\nkind: decision\nproject: web\ncreated: '2026-03-02T09:30:00Z'\n---\n\n"
        "Cursor pagination, never offsets.\n", encoding="utf-8")
    assert memo("reindex", vault=vault).returncode == 0
    decided = _json("prompt", "feedback", "decision-cursor-pagination", "--feedback", "helpful", vault=vault)
    assert (decided["kind"], decided["feedback"]["hits"], decided["feedback"]["helpful"]) == ("decision", 1, 1)
    meta, body = read_record(folder / "decision-cursor-pagination.md")
    assert meta["feedback"]["helpful"] == 1 and body.strip() == "Cursor pagination, never offsets."
    memo("session", "start", "s2", "--project", "web", vault=vault)
    memo("session", "end", "s2", "--project", "web", "--next-step", "document it", vault=vault)
    [(error, text)] = _tool(vault, {"action": "feedback", "id": "handoff-s2", "feedback": "helpful"})
    assert error and "Invalid id: handoff-s2 is a handoff" in text
    missing = memo("prompt", "feedback", "prompt-nope", "--helpful", vault=vault, check=False)
    assert missing.returncode == 1 and "prompt-nope" in missing.stderr
