"""The Gemini CLI and Copilot CLI importers (SPEC §7) through ``memo import gemini|copilot``.

The real samples are read in place from ``../shared/realdata`` (the ``realdata`` fixture),
never copied. Every expected count was made by reading the files with json alone,
independently of the parsers; the comment beside it says how. Where a sample lacks a case
(``$rewindTo``, a user message written twice, a sub-agent chat, Copilot's autopilot and
injected messages) the test builds a small file inline from the documented shape — Gemini
CLI's ``chatRecordingService.ts`` and the Copilot SDK's generated ``session-events`` types —
and says so.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from memo_analytics.vault.io import read_record
from tests.inprocess import memo

MA = "multi-agent/Mai0313-VibeCodingTracker/"
LEGACY = MA + "examples/test_conversation_gemini.json"
GEMINI = MA + "tests/fixtures/sessions/gemini.jsonl"
COPILOT = MA + "tests/fixtures/sessions/copilot.jsonl"
LEGACY_ID = "8a20078e-2d5e-4f81-a640-9b879bbb7e6d"
GEMINI_ID = "0ab84937-9fe7-4284-986a-33c832af0b6a"
COPILOT_ID = "96ef38f0-9d09-45c3-8124-6448c36090ed"


def imported(vault: Path, source: str, *paths: Path | str, **kwargs) -> dict:
    return json.loads(memo("--json", "import", source, *map(str, paths), vault=vault, **kwargs).stdout)


def counts(result: dict) -> tuple[int, int, int, int]:
    return result["files"], result["sessions"], result["turns"], result["skipped"]


def turns(vault: Path) -> list[dict]:
    """Every prompt record of the vault, oldest first, with its body."""
    records = [read_record(p) for p in sorted((vault / "projects").glob("*/prompts/*.md"))]
    return sorted((meta | {"body": body.strip()} for meta, body in records), key=lambda m: (m["created"], m["turn"]))


def session(vault: Path, project: str, session_id: str) -> dict:
    return read_record(vault / "projects" / project / "sessions" / f"session-{session_id}.md")[0]


def digest(vault: Path) -> dict[str, str]:
    return {str(p.relative_to(vault)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((vault / "projects").rglob("*")) if p.is_file()}


def lines(*records: dict) -> str:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


# ---------------------------------------------------------------- Gemini CLI, real samples


def test_legacy_gemini_chat_is_one_session_with_its_one_user_message(tmp_path, realdata):
    # json: 4 messages — 1 "user" (content [{text}], 10:19:12.584Z) and 3 "gemini" (model
    # gemini-3.1-pro-preview-customtools); startTime = the user message, lastUpdated 10:22:00.022Z
    vault = tmp_path / "v"
    assert counts(imported(vault, "gemini", realdata / LEGACY)) == (1, 1, 1, 0)
    [turn] = turns(vault)
    assert turn["body"].startswith("請幫我依照專案實際狀況更新 README.md README.zh-CN.md README.zh-TW.md")
    assert turn["body"].endswith("開發者需要知道的知識應該放在 CONTRIBUTING.md")
    assert (turn["created"], turn["source"], turn["ide"], turn["agent"]) == (
        "2026-03-27T10:19:12.584Z", "import:gemini", "gemini", "gemini")
    assert (turn["id"], turn["model"]) == (f"prompt-gemini-{LEGACY_ID}-1-t1", "gemini-3.1-pro-preview-customtools")
    # the 3 gemini messages' tokens: input 11894+20960+43494 minus cached 7900+11834+20092,
    # output 68+8960+297, thoughts 344+10849+423, tool 0
    assert turn["tokens"] == {"input": 36522, "cacheRead": 39826, "output": 9325, "reasoning": 11616}
    meta = session(vault, "gemini-ab14fe39", f"gemini-{LEGACY_ID}-1")  # a chat names only its folder's hash
    assert (meta["startTime"], meta["endTime"], meta["transcriptId"]) == (
        "2026-03-27T10:19:12.584Z", "2026-03-27T10:22:00.022Z", LEGACY_ID)


def test_gemini_jsonl_keeps_the_typed_slash_command_and_drops_what_gemini_injected(tmp_path, realdata):
    # 28 lines: 1 header (startTime 12:52:52.759Z), 11 {"$set": {lastUpdated}}, 16 message
    # records with 11 distinct ids (5 gemini ids written twice as their tool calls arrived).
    # 3 "user" ids: 8828dd6a (content = the /init template, displayContent [{text: "/init"}]),
    # 1b8df650 (content "System: Please continue.", displayContent a functionResponse: the
    # CLI's own retry), 231038fa (typed, no displayContent); 2 "info" ("Empty GEMINI.md
    # created…", "Request cancelled." at 12:58:35.591Z, the last stamp) → 2 turns
    vault = tmp_path / "v"
    assert counts(imported(vault, "gemini", realdata / GEMINI)) == (1, 1, 2, 0)
    bodies = [(t["created"], t["body"], t["turn"]) for t in turns(vault)]
    assert bodies == [("2026-04-23T12:53:05.283Z", "/init", 1),
                      ("2026-04-23T12:54:16.106Z", "幫我做一個小修改 請幫我將上面確保執行時要透過 uv run 來執行 避免環境有問題", 2)]
    assert not any("You are an AI agent" in b or "Please continue" in b or "GEMINI.md created" in b for _, b, _ in bodies)
    # /init is answered by the 5 gemini-3-flash-preview ids up to 231038fa (last version of
    # each): input 13906+29082+38324+40914+40122 − cached 8156+32637+8158, output
    # 185+89+1172+351+89, thoughts 306+642+232+161+348; the second by 42a121a5 alone
    assert [(t["model"], t["tokens"]) for t in turns(vault)] == [
        ("gemini-3-flash-preview", {"input": 113397, "cacheRead": 48951, "output": 1886, "reasoning": 1689}),
        ("gemini-3.1-pro-preview", {"input": 40238, "cacheRead": 0, "output": 266, "reasoning": 452})]
    meta = session(vault, "gemini-9da8b3df", f"gemini-{GEMINI_ID}-1")
    assert (meta["startTime"], meta["endTime"], meta["model"]) == (
        "2026-04-23T12:52:52.759Z", "2026-04-23T12:58:35.591Z", "gemini-3-flash-preview")


def test_gemini_reimport_adds_nothing_and_changes_no_byte(tmp_path, realdata):
    vault = tmp_path / "v"
    first = imported(vault, "gemini", realdata / LEGACY, realdata / GEMINI)
    assert counts(first) == (2, 2, 3, 0)
    before = digest(vault)
    again = imported(vault, "gemini", realdata / LEGACY, realdata / GEMINI)
    assert counts(again) == (2, 0, 0, 0)
    assert digest(vault) == before


def test_an_imported_gemini_chat_supersedes_the_session_its_hook_captured(tmp_path, realdata):
    vault, cwd = tmp_path / "v", tmp_path / "work"
    cwd.mkdir()
    payload = {"session_id": GEMINI_ID, "hook_event_name": "BeforeAgent", "prompt": "/init", "cwd": str(cwd),
               "timestamp": "2026-04-23T12:53:05.000Z"}
    ran = memo("hook", "gemini", vault=vault, input=json.dumps(payload), check=False)
    assert ran.returncode == 0 and ran.stdout == ""
    result = imported(vault, "gemini", realdata / GEMINI)
    assert (result["turns"], result["superseded"]) == (2, 2)  # the hook's session and its one turn
    hook_session = session(vault, "work", f"gemini-{GEMINI_ID}")  # its folder
    # a chat names none: the import stays in the hook's project (it went to default, out of the repository's view)
    assert (hook_session["status"], hook_session["supersededBy"]) == ("superseded", [f"work/gemini-{GEMINI_ID}-1"])


# ---------------------------------------------------------------- Gemini CLI, built from the documented shape


def gemini_chat(session_id: str) -> str:
    """A JSON Lines chat as Gemini CLI's ChatRecordingService writes one (header, messages
    upserted by id, ``$set`` patches, a ``$rewindTo``, a ``$set.messages`` checkpoint)."""
    def user(mid: str, at: str, text: str) -> dict:
        return {"id": mid, "timestamp": f"2026-01-05T{at}Z", "type": "user", "content": [{"text": text}]}

    def model(mid: str, at: str, text: str = "", **extra) -> dict:
        return {"id": mid, "timestamp": f"2026-01-05T{at}Z", "type": "gemini", "content": text,
                "model": "gemini-2.5-pro", **extra}

    return lines(
        {"sessionId": session_id, "projectHash": "ab" * 32, "startTime": "2026-01-05T09:00:00.000Z",
         "lastUpdated": "2026-01-05T09:00:00.000Z", "kind": "main"},
        user("u1", "09:00:05.000", "plan the cart fix"),
        {"$set": {"lastUpdated": "2026-01-05T09:00:05.000Z"}},
        user("c1", "09:00:06.000", "/stats"),  # a local command an older version recorded
        user("x1", "09:00:07.000", "<session_context>\nThis is the Gemini CLI. Today is …"),
        {"id": "t1", "timestamp": "2026-01-05T09:00:20.000Z", "type": "user",  # a tool response
         "content": [{"functionResponse": {"id": "c0", "name": "read_file", "response": {"output": "…"}}}]},
        user("p1", "09:00:25.000", "Please continue."),  # the next-speaker check
        model("g1", "09:00:30.000"),
        model("g1", "09:00:30.000", "Here is the plan", toolCalls=[  # g1 again: an upsert
            {"id": "c1", "name": "read_file", "args": {}, "status": "success", "timestamp": "2026-01-05T09:00:40.000Z"}]),
        user("u2", "09:05:00.000", "rewrite the whole cart in Rust"),
        model("g2", "09:06:00.000", "Starting the rewrite"),
        {"$rewindTo": "u2"},  # /rewind: u2 and everything after it are gone
        user("u3", "09:10:00.000", "only fix the rounding of the total"),
        {"$set": {"lastUpdated": "2026-01-05T09:10:00.000Z"}},
        user("u3", "09:10:00.000", "only fix the rounding of the total"),  # written again: one message
        model("g3", "09:12:00.000", "Fixed"),
        {"$set": {"lastUpdated": "2026-01-05T09:13:00.000Z", "summary": "Cart total rounding", "messages": [
            user("u1", "09:00:05.000", "plan the cart fix"), model("g1", "09:00:30.000", "Here is the plan"),
            user("u3", "09:10:00.000", "only fix the rounding of the total"), model("g3", "09:12:00.000", "Fixed"),
            user("s1", "09:13:00.000", "Here is a summary of the work so far")]}},  # s1: made up by the checkpoint
        {"$rewindTo": "no-such-message"},  # an id the file does not hold removes nothing
        {"id": "i1", "timestamp": "2026-01-05T09:14:00.000Z", "type": "info", "content": "Request cancelled."},
    )


def test_gemini_rewind_drops_later_messages_and_a_repeated_id_is_one_message(tmp_path):
    vault, sid = tmp_path / "v", "5e55a0a1-0000-4000-8000-00000000ge01"
    path = tmp_path / "chats" / "session-2026-01-05T09-00-5e55a0a1.jsonl"
    path.parent.mkdir()
    path.write_text(gemini_chat(sid), encoding="utf-8")
    assert counts(imported(vault, "gemini", path)) == (1, 1, 2, 0)
    assert [(t["created"], t["body"]) for t in turns(vault)] == [
        ("2026-01-05T09:00:05.000Z", "plan the cart fix"),
        ("2026-01-05T09:10:00.000Z", "only fix the rounding of the total")]
    meta = session(vault, "gemini-abababab", f"gemini-{sid}-1")
    # the rewound work still happened: activity runs from the header to the last info message
    assert (meta["startTime"], meta["endTime"], meta["durationMinutes"], meta["summary"]) == (
        "2026-01-05T09:00:00.000Z", "2026-01-05T09:14:00.000Z", 14, "Cart total rounding")


def test_gemini_folder_sub_agent_chats_and_other_json_files_give_no_turns(tmp_path):
    """A ``~/.gemini/tmp/<project>/`` folder as Gemini CLI ≥ 0.29 lays it out: the
    ``.project_root`` marker, ``logs.json`` (a JSON array of inputs), a chat, and a
    sub-agent's chat under ``chats/<parent session>/`` (``kind: "subagent"``)."""
    vault, sid = tmp_path / "v", "5e55a0a1-0000-4000-8000-00000000ge02"
    project = tmp_path / "home" / ".gemini" / "tmp" / "shop-api"
    (project / "chats" / sid).mkdir(parents=True)
    (project / ".project_root").write_text("/home/ana/shop-api", encoding="utf-8")
    (project / "logs.json").write_text(json.dumps([{"sessionId": sid, "messageId": 0, "type": "user",
                                                    "message": "plan the cart fix",
                                                    "timestamp": "2026-01-05T09:00:05.000Z"}], indent=2))
    (project / "chats" / "session-2026-01-05T09-00-5e55a0a1.jsonl").write_text(gemini_chat(sid), encoding="utf-8")
    (project / "chats" / sid / "sub-1.jsonl").write_text(lines(
        {"sessionId": "sub-1", "projectHash": "ab" * 32, "startTime": "2026-01-05T09:01:00.000Z",
         "lastUpdated": "2026-01-05T09:01:00.000Z", "kind": "subagent", "directories": ["/home/ana/shop-api"]},
        {"id": "b1", "timestamp": "2026-01-05T09:01:00.000Z", "type": "user", "content": [{"text": "Explore the cart"}]},
    ), encoding="utf-8")
    result = imported(vault, "gemini", project.parent)
    assert counts(result) == (3, 1, 2, 0)
    assert (result["recognised"], result["unrecognised"], result["errors"]) == (3, 0, [])  # logs.json is Gemini's own
    assert {t["project"] for t in turns(vault)} == {"shop-api"}
    assert [t["body"] for t in turns(vault)] == ["plan the cart fix", "only fix the rounding of the total"]


# ---------------------------------------------------------------- Copilot CLI


def test_copilot_session_has_one_typed_prompt_and_not_the_autopilot_nudge(tmp_path, realdata):
    # 55 events: session.start (data.startTime 17:08:08.893Z, context.gitRoot
    # /home/wei/repo/VibeCodingTracker), 2 session.model_change (newModel claude-sonnet-4.6),
    # 2 system.message, 2 user.message — line 7 typed (content = the Chinese request,
    # 17:11:16.238Z), line 48 autopilot's nudge (content "", the "You have not yet marked the
    # task as complete" text only in transformedContent) — and session.shutdown at 17:18:20.178Z
    # → 1 session, 1 turn
    vault = tmp_path / "v"
    assert counts(imported(vault, "copilot", realdata / COPILOT)) == (1, 1, 1, 0)
    [turn] = turns(vault)
    assert turn["body"] == ("請不要修改任何代碼 我希望你幫我調查一下 有沒有好一點的自動生成文檔可以給這個 rust 專案 "
                            "例如 python 可以透過 zensical 或 mkdostrings 之類的來做自動產生文檔網頁 我不確定有沒有適合我專案的 "
                            "請幫我調查 不要產生代碼或編輯代碼")
    assert (turn["created"], turn["project"], turn["model"], turn["ide"], turn["source"]) == (
        "2026-04-23T17:11:16.238Z", "vibecodingtracker", "claude-sonnet-4.6", "copilot", "import:copilot")
    assert "current_datetime" not in turn["body"]  # content, not the model's transformedContent
    meta = session(vault, "vibecodingtracker", f"copilot-{COPILOT_ID}-1")
    assert (meta["startTime"], meta["endTime"], meta["durationMinutes"]) == (
        "2026-04-23T17:08:08.893Z", "2026-04-23T17:18:20.178Z", 10)
    before = digest(vault)
    assert counts(imported(vault, "copilot", realdata / COPILOT)) == (1, 0, 0, 0)
    assert digest(vault) == before


def copilot_event(number: int, kind: str, data: dict, **envelope) -> dict:
    return {"type": kind, "data": data, "id": envelope.pop("id", f"e{number}"),
            "timestamp": f"2026-01-05T10:{number:02d}:00.000Z", "parentId": f"e{number - 1}" if number > 1 else None,
            **envelope}


def test_copilot_injected_rewound_and_repeated_messages_are_not_turns(tmp_path):
    """Built from the Copilot SDK's event types: ``isAutopilotContinuation``, ``source``
    (``skill-…``, ``agent-…``), a sub-agent's ``agentId``, ``session.snapshot_rewind``
    ("this event and all after it were removed"), an event written twice."""
    sid = "c0b11e7a-0000-4000-8000-000000000001"
    vault, path = tmp_path / "v", tmp_path / "session-state" / sid / "events.jsonl"
    path.parent.mkdir(parents=True)
    repeated = copilot_event(12, "user.message", {"content": "add a test for it", "source": "user"})
    path.write_text(lines(
        copilot_event(1, "session.start", {"sessionId": sid, "startTime": "2026-01-05T10:01:00.000Z",
                                           "selectedModel": "gpt-5", "context": {
                                               "cwd": "/home/ana/shop-api/src", "gitRoot": "/home/ana/shop-api"}}),
        copilot_event(2, "session.model_change", {"previousModel": "gpt-5", "newModel": "claude-sonnet-4.5"}),
        copilot_event(3, "user.message", {"content": "fix the cart total", "transformedContent": "<x/>fix"}),
        copilot_event(4, "assistant.message", {"messageId": "m1", "content": "Done"}),
        copilot_event(5, "user.message", {"content": "", "transformedContent": "You have not yet marked the task"}),
        copilot_event(6, "user.message", {"content": "Continue until done", "isAutopilotContinuation": True}),
        copilot_event(7, "user.message", {"content": "Use the PDF skill", "source": "skill-pdf"}),
        copilot_event(8, "user.message", {"content": "Explore the cart code", "source": "agent-explore"}),
        copilot_event(9, "user.message", {"content": "sub-agent brief"}, agentId="explore-1"),
        copilot_event(10, "user.message", {"content": "rewrite it in Rust"}),
        copilot_event(11, "session.snapshot_rewind", {"upToEventId": "e10", "eventsRemoved": 1}),
        repeated, repeated,
        copilot_event(13, "assistant.message", {"messageId": "m2", "content": "Added", "model": "claude-opus-4.5"}),
        copilot_event(14, "session.title_changed", {"title": "Cart total fix"}),
        copilot_event(15, "session.model_change", {"previousModel": "claude-sonnet-4.5", "newModel": "gpt-5.1"}),
        copilot_event(16, "session.shutdown", {"shutdownType": "routine"}),
    ), encoding="utf-8")
    assert counts(imported(vault, "copilot", path.parent.parent)) == (1, 1, 2, 0)
    assert [(t["created"], t["body"], t["model"]) for t in turns(vault)] == [
        ("2026-01-05T10:03:00.000Z", "fix the cart total", "claude-sonnet-4.5"),  # the model in effect then
        ("2026-01-05T10:12:00.000Z", "add a test for it", "claude-opus-4.5")]  # the one its answer names
    assert session(vault, "shop-api", f"copilot-{sid}-1")["model"] == "claude-sonnet-4.5"
    meta = session(vault, "shop-api", f"copilot-{sid}-1")  # the repository root, not cwd's src/
    assert (meta["startTime"], meta["endTime"], meta["summary"]) == (
        "2026-01-05T10:01:00.000Z", "2026-01-05T10:16:00.000Z", "Cart total fix")


# ---------------------------------------------------------------- both, where the agents keep them


def test_import_auto_finds_the_gemini_and_copilot_folders(tmp_path, realdata):
    """``~/.gemini/tmp`` and ``~/.copilot/session-state`` under a made-up home; the sessions
    in them are symbolic links to the real samples (read in place)."""
    home, vault = tmp_path / "home", tmp_path / "v"
    chats = home / ".gemini" / "tmp" / ("9d" * 32) / "chats"
    state = home / ".copilot" / "session-state" / COPILOT_ID
    chats.mkdir(parents=True)
    state.mkdir(parents=True)
    (chats / "session-2026-04-23T12-52-0ab84937.jsonl").symlink_to(realdata / GEMINI)
    (state / "events.jsonl").symlink_to(realdata / COPILOT)
    found = json.loads(memo("--json", "import", "auto", vault=vault, env={"HOME": str(home)}).stdout)["sources"]
    assert {s["source"]: counts(s) for s in found} == {"gemini": (1, 1, 2, 0), "copilot": (1, 1, 1, 0)}


# ---------------------------------------------------------------- honest importers (issue 14 point 6)


def test_a_file_of_another_agent_is_refused_by_name(tmp_path, realdata):
    sessions = realdata / MA / "tests/fixtures/sessions"
    cases = [("gemini", sessions / "copilot.jsonl", "a Copilot CLI session: import it with `memo import copilot`"),
             ("gemini", sessions / "claude_code.jsonl", "a Claude Code transcript: import it with `memo import claude-code`"),
             ("copilot", sessions / "gemini.jsonl", "a Gemini CLI chat: import it with `memo import gemini`"),
             ("copilot", sessions / "codex.jsonl", "a Codex rollout: import it with `memo import codex`")]
    for source, path, looks in cases:
        ran = memo("import", source, str(path), vault=tmp_path / "v", check=False)
        assert ran.returncode == 1
        assert f"{path.name}: not a {source} transcript ({looks})" in ran.stderr
        assert "error: nothing recognised" in ran.stderr
    assert not (tmp_path / "v" / "projects").exists()


def test_every_bad_gemini_or_copilot_line_is_named_and_costs_only_itself(tmp_path):
    """Built from the documented shapes: one line of each is not JSON, one has a byte that
    is not UTF-8 (read, the byte replaced), one a timestamp that cannot be read; the prompts around them are kept."""
    vault = tmp_path / "v"
    chat = tmp_path / "chats" / "session-bad.jsonl"
    chat.parent.mkdir()
    chat.write_bytes(lines(
        {"sessionId": "5e55a0a1-0000-4000-8000-00000000ge03", "projectHash": "ab" * 32,
         "startTime": "2026-01-05T09:00:00.000Z", "lastUpdated": "2026-01-05T09:00:00.000Z"},
        {"id": "u1", "timestamp": "2026-01-05T09:01:00.000Z", "type": "user", "content": "first"},
        {"id": "u2", "timestamp": "yesterday", "type": "user", "content": "no time"},
    ).encode() + b'{"id": "u3", "type": "user", "content": "\xff"}\n{not json\n' + lines(
        {"id": "u4", "timestamp": "2026-01-05T09:02:00.000Z", "type": "user", "content": "second"}).encode())
    result = imported(vault, "gemini", chat)
    assert counts(result) == (1, 1, 3, 2)  # the line of a byte not UTF-8 is read, the byte replaced
    assert [e.split(": line ", 1)[1] for e in result["errors"]] == [
        "4: byte 0xff at column 42 is not UTF-8 (replaced by U+FFFD; the line is read)", "3: unreadable or out-of-range timestamp 'yesterday' (a record's instant lies in 1970–9000)",
        "5: not JSON"]
    events = tmp_path / "session-state" / "c0b11e7a-0000-4000-8000-000000000002" / "events.jsonl"
    events.parent.mkdir(parents=True)
    events.write_text(lines(
        copilot_event(1, "session.start", {"sessionId": "c0b11e7a-0000-4000-8000-000000000002"}),
        copilot_event(2, "user.message", {"content": "first"}),
        {"type": "user", "message": {"content": "a Claude Code record"}},
        copilot_event(4, "user.message", {"content": "second"}) | {"timestamp": "soon"},
        copilot_event(5, "user.message", {"content": "third"})) + "{not json\n", encoding="utf-8")
    result = imported(vault, "copilot", events)
    assert counts(result) == (1, 1, 2, 3)
    assert [e.split(": line ", 1)[1] for e in result["errors"]] == [
        "3: not a Copilot event (a dotted type and a data object)", "4: unreadable or out-of-range timestamp 'soon' (a record's instant lies in 1970–9000)", "6: not JSON"]


def test_a_gemini_or_copilot_line_still_being_written_is_pending_and_taken_in_once_finished(tmp_path):
    """Half a last line (no newline, not JSON yet) is not a bad line: nothing skipped, ``pending``
    1; once the agent finishes it the next import takes its turn in. A whole JSON value with no
    newline yet is taken in at once."""
    vault = tmp_path / "v"
    chat = tmp_path / "chats" / "session-live.jsonl"
    chat.parent.mkdir()
    head = lines({"sessionId": "5e55a0a1-0000-4000-8000-00000000ge04", "projectHash": "ab" * 32,
                  "startTime": "2026-01-05T09:00:00.000Z", "lastUpdated": "2026-01-05T09:00:00.000Z"},
                 {"id": "u1", "timestamp": "2026-01-05T09:01:00.000Z", "type": "user", "content": "first"})
    last = lines({"id": "u2", "timestamp": "2026-01-05T09:02:00.000Z", "type": "user", "content": "second"})
    events = tmp_path / "session-state" / "c0b11e7a-0000-4000-8000-000000000004" / "events.jsonl"
    events.parent.mkdir(parents=True)
    start = lines(copilot_event(1, "session.start", {"sessionId": "c0b11e7a-0000-4000-8000-000000000004"}),
                  copilot_event(2, "user.message", {"content": "first"}))
    third = lines(copilot_event(3, "user.message", {"content": "second"}))
    for source, path, whole, line in (("gemini", chat, head, last), ("copilot", events, start, third)):
        path.write_text(whole + line[:30], encoding="utf-8")
        result = imported(vault, source, path)
        assert (counts(result), result["pending"], result["errors"]) == ((1, 1, 1, 0), 1, [])
        path.write_text(whole + line, encoding="utf-8")
        result = imported(vault, source, path)
        assert (counts(result), result["pending"], result["errors"]) == ((1, 0, 1, 0), 0, [])
    assert sorted(t["body"] for t in turns(vault)) == ["first", "first", "second", "second"]
    third = lines({"id": "u3", "timestamp": "2026-01-05T09:03:00.000Z", "type": "user", "content": "third"})
    chat.write_text(head + last + third.rstrip("\n"), encoding="utf-8")
    result = imported(vault, "gemini", chat)
    assert (counts(result), result["pending"]) == ((1, 0, 1, 0), 0)  # whole, only the newline to come


def test_a_rewound_gemini_chat_follows_its_transcript_on_re_import(tmp_path):
    """Built from the documented JSONL shape: two prompts imported; the person rewinds to the
    second and types something else, then rewinds to the first; each re-import leaves the vault
    with what the transcript holds now (the turn the rewind dropped superseded, not lost)."""
    import json as _json

    chats = tmp_path / ".gemini" / "tmp" / "abc" / "chats"
    chats.mkdir(parents=True)
    path = chats / "session-2026-11-30T09-00-aaaa1111.jsonl"
    header = {"sessionId": "aaaa1111-0000-4000-8000-000000000001", "projectHash": "abc",
              "startTime": "2026-11-30T09:00:00.000Z", "lastUpdated": "2026-11-30T09:00:00.000Z", "kind": "main"}

    def message(mid, minute, kind, text):
        return {"id": mid, "timestamp": f"2026-11-30T09:{minute:02d}:00.000Z", "type": kind, "content": [{"text": text}]}

    lines = [header, message("u1", 1, "user", "first question"), message("g1", 2, "gemini", "answer one"),
             message("u2", 3, "user", "second question"), message("g2", 4, "gemini", "answer two")]
    path.write_text("\n".join(_json.dumps(x) for x in lines) + "\n")
    vault = tmp_path / "v"

    def bodies():
        listed = _json.loads(memo("--json", "prompt", "list", "--all", "--sort", "date-asc", vault=vault).stdout)
        return [i["body"] for i in listed["items"]]

    memo("import", "gemini", str(path), vault=vault)
    assert bodies() == ["first question", "second question"]
    with open(path, "a") as handle:  # rewind to u2 (dropping it), then a new second prompt
        handle.write(_json.dumps({"$rewindTo": "u2"}) + "\n")
        handle.write(_json.dumps(message("u3", 10, "user", "a better second question")) + "\n")
        handle.write(_json.dumps(message("g3", 11, "gemini", "answer three")) + "\n")
    again = _json.loads(memo("--json", "import", "gemini", str(path), vault=vault).stdout)
    assert again["revised"] == 1 and bodies() == ["first question", "a better second question"]
    with open(path, "a") as handle:  # rewind to u3: only the first prompt is left
        handle.write(_json.dumps({"$rewindTo": "u3"}) + "\n")
    third = _json.loads(memo("--json", "import", "gemini", str(path), vault=vault).stdout)
    assert third["superseded"] == 1 and bodies() == ["first question"]


def test_one_byte_that_is_not_utf8_in_a_gemini_json_chat_loses_one_character_not_the_chat(tmp_path, realdata):
    """Claude Code skips a line with such a byte; a Gemini chat is one JSON document, and the whole
    file was refused (found by a helper). The byte is replaced and said; the turns come in."""
    data = (realdata / LEGACY).read_bytes()
    at = data.index(b'"text": "') + len(b'"text": "')  # inside the first prompt's text
    damaged = tmp_path / "chat.json"
    damaged.write_bytes(data[:at] + b"\xff" + data[at:])
    result = imported(tmp_path / "v", "gemini", damaged)
    assert counts(result) == (1, 1, 1, 1)
    assert [e.split(": ", 1)[1] for e in result["errors"]] == [
        f"byte 0xff at offset {at} is not UTF-8 (replaced by U+FFFD; the rest of the chat is read)"]


# ---------------------------------------------------------------- a human turn is never dropped silently


def legacy_with_a_second_prompt(realdata) -> dict:
    """The real legacy chat with a second user message after its answers (as Gemini appends one)."""
    chat = json.loads((realdata / LEGACY).read_text(encoding="utf-8"))
    chat["messages"].append({"id": "u2", "timestamp": "2026-03-27T10:25:00.000Z", "type": "user",
                             "content": [{"text": "now translate CONTRIBUTING.md"}]})
    return chat


def test_a_gemini_message_of_the_wrong_type_is_named_and_the_other_turns_come_in(tmp_path, realdata):
    """Found by mutating the real legacy chat: a user message whose ``content`` is a number was
    dropped without a word. It is named; the other prompt comes in. (The messages that are simply
    not prompts — a tool response, a sentinel, injected context — stay unsaid: ``gemini_chat``
    holds each, and its tests count nothing skipped.)"""
    chat = legacy_with_a_second_prompt(realdata)
    chat["messages"][0]["content"] = 12
    path = tmp_path / "chats" / "session-x.json"
    path.parent.mkdir()
    path.write_text(json.dumps(chat), encoding="utf-8")
    result = imported(tmp_path / "v", "gemini", path)
    assert counts(result) == (1, 1, 1, 1)
    assert [e.split(": ", 1)[1] for e in result["errors"]] == ["message 1: content is a number, not text or parts"]
    assert [t["body"] for t in turns(tmp_path / "v")] == ["now translate CONTRIBUTING.md"]
    lines_chat = tmp_path / "chats" / "session-y.jsonl"
    lines_chat.write_text(lines(
        {"sessionId": "5e55a0a1-0000-4000-8000-00000000ge04", "projectHash": "ab" * 32},
        {"id": "u1", "timestamp": "2026-01-05T09:01:00.000Z", "type": "user", "content": [12]},
        {"id": "u2", "timestamp": "2026-01-05T09:02:00.000Z", "type": "user", "content": [{"text": 7}]},
        {"id": "u3", "timestamp": "2026-01-05T09:03:00.000Z", "type": "user", "content": "/init", "displayContent": True},
        {"id": "u4", "timestamp": "2026-01-05T09:04:00.000Z", "type": "user", "content": "second"},
        {"id": "u5", "timestamp": "2026-01-05T09:05:00.000Z", "type": ["user"], "content": "third"}), encoding="utf-8")
    result = imported(tmp_path / "v2", "gemini", lines_chat)
    assert counts(result) == (1, 1, 1, 4)
    assert [e.split(": ", 1)[1] for e in result["errors"]] == [
        "line 2: content[0] is a number, not text or a part", "line 3: content[0].text is a number, not text",
        "line 4: displayContent is true or false, not text or parts",
        "line 6: type is a list, not a message type (user, gemini, info …)"]


def test_a_gemini_chat_without_a_message_list_or_a_session_id_is_said_so(tmp_path, realdata):
    """Found by mutating the real legacy chat: ``"messages": "notalist"`` gave nothing and said
    nothing; ``"sessionId": null`` was called a Claude Code transcript."""
    for number, (key, value, said) in enumerate((
            ("messages", "notalist", "document: messages is text, not a list"),
            ("sessionId", None, "document: the chat has no sessionId (null); the chat is left out"))):
        chat = json.loads((realdata / LEGACY).read_text(encoding="utf-8"))
        chat[key] = value
        path = tmp_path / f"session-{number}.json"
        path.write_text(json.dumps(chat), encoding="utf-8")
        ran = memo("--json", "import", "gemini", str(path), vault=tmp_path / "v", check=False)
        result = json.loads(ran.stdout)
        assert (counts(result), result["recognised"], result["unrecognised"]) == ((1, 0, 0, 1), 1, 0)
        assert [e.split(": ", 1)[1] for e in result["errors"]] == [said]
        assert ran.returncode == 1 and "nothing imported" in ran.stderr  # a command that took nothing in


def test_an_integer_too_long_for_python_costs_only_its_token_count(tmp_path, realdata):
    """Found by mutating the real legacy chat: a 5,000-digit ``tokens.input`` refused the whole
    chat with Python's "Exceeds the limit (4300 digits)". The count is left out and said; the
    prompt and the other counts come in (in a JSON document and on a JSON Lines line alike)."""
    text = (realdata / LEGACY).read_text(encoding="utf-8")
    assert text.count('"input": 11894') == 1  # the first answer's prompt count
    path = tmp_path / "chats" / "session-x.json"
    path.parent.mkdir()
    path.write_text(text.replace('"input": 11894', '"input": 1' + "0" * 4999), encoding="utf-8")
    result = imported(tmp_path / "v", "gemini", path)
    assert counts(result) == (1, 1, 1, 1)
    assert [e.split(": ", 1)[1] for e in result["errors"]] == [
        "message 2: tokens.input is an integer of 5000 digits; the count is left out"]
    [turn] = turns(tmp_path / "v")
    # test_legacy_gemini_chat_…'s counts without the first answer's input (11894 - 7900 cached)
    assert turn["tokens"] == {"input": 36522 - 3994, "cacheRead": 39826, "output": 9325, "reasoning": 11616}
    chat = tmp_path / "chats" / "session-y.jsonl"
    chat.write_text(lines(
        {"sessionId": "5e55a0a1-0000-4000-8000-00000000ge06", "projectHash": "ab" * 32},
        {"id": "u1", "timestamp": "2026-01-05T09:01:00.000Z", "type": "user", "content": "first"}) +
        '{"id": "g1", "timestamp": "2026-01-05T09:01:30.000Z", "type": "gemini", "content": "ok", '
        '"tokens": {"input": 100, "output": 1' + "0" * 4999 + "}}\n" + lines(
        {"id": "u2", "timestamp": "2026-01-05T09:02:00.000Z", "type": "user", "content": "second"}), encoding="utf-8")
    result = imported(tmp_path / "v2", "gemini", chat)
    assert counts(result) == (1, 1, 2, 1)
    assert [e.split(": ", 1)[1] for e in result["errors"]] == [
        "line 3: tokens.output is an integer of 5000 digits; the count is left out"]
    assert [(t["body"], t.get("tokens")) for t in turns(tmp_path / "v2")] == [("first", {"input": 100}), ("second", None)]


def test_a_copilot_message_of_the_wrong_type_is_named_and_the_other_turns_come_in(tmp_path):
    """Found by a mutated session: a ``user.message`` whose ``data.content`` is a number was
    dropped without a word. It is named (and so is a ``data.source`` that is not text); the other
    prompts come in; autopilot's empty nudge stays unsaid (not a prompt, not malformed)."""
    sid = "c0b11e7a-0000-4000-8000-000000000003"
    events = tmp_path / "session-state" / sid / "events.jsonl"
    events.parent.mkdir(parents=True)
    events.write_text(lines(
        copilot_event(1, "session.start", {"sessionId": sid}),
        copilot_event(2, "user.message", {"content": "first"}),
        copilot_event(3, "user.message", {"content": 42}),
        copilot_event(4, "user.message", {"content": "from somewhere", "source": 7}),
        copilot_event(5, "user.message", {"content": "", "transformedContent": "You have not yet marked the task"}),
        copilot_event(6, "user.message", {"content": "second"})), encoding="utf-8")
    result = imported(tmp_path / "v", "copilot", events)
    assert counts(result) == (1, 1, 2, 2)
    assert [e.split(": ", 1)[1] for e in result["errors"]] == [
        "line 3: data.content is a number, not text", "line 4: data.source is a number, not text"]
    assert [t["body"] for t in turns(tmp_path / "v")] == ["first", "second"]


def test_a_copilot_start_time_that_cannot_be_read_is_quoted_with_its_field(tmp_path, realdata):
    """Found by mutating the real session: a bad ``data.startTime`` was reported with the
    envelope's valid ``timestamp``. The bad value is quoted and its field named; the prompt comes in."""
    text = (realdata / COPILOT).read_text(encoding="utf-8")
    first, rest = text.split("\n", 1)
    start = json.loads(first)
    start["data"]["startTime"] = "2026-13-45T99:99:99Z"
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(start) + "\n" + rest, encoding="utf-8")
    result = imported(tmp_path / "v", "copilot", path)
    assert counts(result) == (1, 1, 1, 1)
    assert [e.split(": ", 1)[1] for e in result["errors"]] == [
        "line 1: unreadable or out-of-range data.startTime '2026-13-45T99:99:99Z' (a record's instant lies in "
        "1970–9000); the rest of the event is read"]
    [turn] = turns(tmp_path / "v")
    assert turn["created"] == "2026-04-23T17:11:16.238Z"
    # the session is the one session.start names (its id, not the file's folder), with its project
    assert turn["sessionId"] == f"copilot-{start['data']['sessionId']}-1"


def test_a_copilot_conversation_its_hooks_captured_without_a_session_id_counts_once(tmp_path):
    """Found by a tester of other agents' files: Copilot CLI's documented hook input names no
    session (``cwd``, ``timestamp``, ``prompt``), so its hook turns go to the repository's session
    (``copilot-repo-…``); the import of the same conversation's ``events.jsonl`` left them beside its
    own — every prompt twice, 40 minutes where the transcript says 38. The hook's turns the
    transcript holds give way to it; a turn of another conversation of the repository stays."""
    import subprocess

    repo = tmp_path / "shop"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    vault = tmp_path / "v"
    from datetime import datetime, timedelta, timezone

    began = (datetime.now(timezone.utc) - timedelta(hours=3)).replace(second=0, microsecond=0)  # a hook's time is recent
    ms = lambda minute: int((began + timedelta(minutes=minute)).timestamp() * 1000)  # noqa: E731
    at = lambda minute: (began + timedelta(minutes=minute)).isoformat(timespec="milliseconds").replace(  # noqa: E731
        "+00:00", "Z")
    events = [("sessionStart", {"cwd": str(repo), "timestamp": ms(0)})]
    events += [("userPromptSubmitted", {"cwd": str(repo), "timestamp": ms(minute), "prompt": text})
               for minute, text in ((1, "plan the refactor"), (15, "now write tests"), (28, "fix the failing one"))]
    events += [("userPromptSubmitted", {"cwd": str(repo), "timestamp": ms(33), "prompt": "another window: bump the version"}),
               # another window typed a prompt of the same text (found by a breaker: the import took it too)
               ("userPromptSubmitted", {"cwd": str(repo), "timestamp": ms(20), "prompt": "now write tests"}),
               ("sessionEnd", {"cwd": str(repo), "timestamp": ms(40)})]
    for name, payload in events:
        ran = memo("hook", "copilot", "--event", name, vault=vault, input=json.dumps(payload), check=False)
        assert ran.returncode == 0, ran.stderr
    state = tmp_path / "session-state" / "aaaabbbb-0000-4000-8000-000000000002" / "events.jsonl"
    state.parent.mkdir(parents=True)
    state.write_text(lines(
        copilot_event(1, "session.start", {"sessionId": "aaaabbbb-0000-4000-8000-000000000002",
                                           "context": {"cwd": str(repo), "gitRoot": str(repo)}}, timestamp=at(0)),
        *(copilot_event(n, "user.message", {"content": text}, timestamp=at(minute))
          for n, (minute, text) in enumerate(((1, "plan the refactor"), (15, "now write tests"),
                                              (28, "fix the failing one")), 2)),
        copilot_event(5, "assistant.message", {"content": "ok", "model": "claude-sonnet-4.6"}, timestamp=at(38))),
        encoding="utf-8")
    result = imported(vault, "copilot", state)
    assert result["superseded"] == 3, result  # the hook's three turns of it; its session keeps the other
    listed = json.loads(memo("--json", "prompt", "list", "--all", vault=vault).stdout)["items"]
    assert sorted((t["body"], t["sessionId"].split("-")[1]) for t in listed) == [
        ("another window: bump the version", "repo"), ("fix the failing one", "aaaabbbb"),
        ("now write tests", "aaaabbbb"), ("now write tests", "repo"), ("plan the refactor", "aaaabbbb")]
    again = json.loads(memo("--json", "import", "copilot", "--rescan", str(state), vault=vault).stdout)
    assert again["superseded"] == 0  # read again, it takes no other window's turn


def test_a_gemini_chat_read_in_the_middle_of_its_rewrite_is_taken_in_once_whole(tmp_path, realdata):
    """Found by a tester of other agents' files: Gemini rewrites its chat's JSON whole; read in the
    middle of a rewrite it was "not a gemini transcript" (and `memo watch` said a skipped file at
    each rewrite). It is a chat still being written, taken in once whole."""
    source = realdata / "multi-agent/Mai0313-VibeCodingTracker/examples/test_conversation_gemini.json"
    chat = tmp_path / "chats" / "session.json"
    chat.parent.mkdir()
    chat.write_bytes(source.read_bytes()[:95_000])
    vault = tmp_path / "v"
    cut = memo("--json", "import", "gemini", str(chat.parent), vault=vault)
    assert (json.loads(cut.stdout)["pending"], json.loads(cut.stdout)["errors"]) == (1, []), cut.stderr
    # said again the next time, not "1 unchanged"; no note of sessions "imported before" (found by a breaker)
    again = memo("import", "gemini", "--project", "g", str(chat.parent), vault=vault)
    assert "1 file with a last line still being written" in again.stdout and "imported before" not in again.stderr
    chat.write_bytes(source.read_bytes())
    assert counts(imported(vault, "gemini", chat.parent))[1:3] == (1, 1)


def test_a_gemini_chat_of_no_project_root_is_filed_by_its_folders_hash(realdata, tmp_path):
    """Found by a newcomer: Gemini chats of two projects (hash folders, no ``.project_root``) went
    to one project, ``default``, without a word — one client billed for both. A chat's
    ``projectHash`` is the SHA-256 of its folder's path: the folder memo runs in (or above), or a
    repository the vault knows, names the project; another is filed under ``gemini-<hash>``, said."""
    import hashlib
    import subprocess

    source = realdata / "multi-agent/Mai0313-VibeCodingTracker/tests/fixtures/sessions/gemini.jsonl"
    shop = tmp_path / "work" / "shop"
    (shop / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(shop)], check=True)
    # started in the repository's subfolder: the repository's project (found by a breaker: "src")
    ours = hashlib.sha256(str(shop / "src").encode()).hexdigest()
    chats = tmp_path / "gemini" / "tmp"
    text = source.read_text(encoding="utf-8")
    theirs = json.loads(text.splitlines()[0])["projectHash"]
    for folder, digest, session in ((ours[:8], ours, "s-ours"), (theirs[:8], theirs, "s-theirs")):
        (chats / folder / "chats").mkdir(parents=True)
        first = json.loads(text.splitlines()[0])
        (chats / folder / "chats" / f"{session}.jsonl").write_text(
            text.replace(first["projectHash"], digest).replace(first["sessionId"], session), encoding="utf-8")
    ran = memo("import", "gemini", str(chats), vault=tmp_path / "v", cwd=shop / "src")
    assert f"filed under gemini-{theirs[:8]} (a Gemini chat names only a hash of its folder, not found here: " \
           f"memo project rename gemini-{theirs[:8]} NAME)" in ran.stdout, ran.stdout
    listed = json.loads(memo("--json", "session", "show", "--all", vault=tmp_path / "v").stdout)["items"]
    assert sorted((s["project"], s["sessionId"]) for s in listed) == [
        (f"gemini-{theirs[:8]}", "gemini-s-theirs-1"), ("shop", "gemini-s-ours-1")]
    # renamed as the import says: the next chat of that folder goes there too (a breaker: a new gemini-… again)
    memo("project", "rename", f"gemini-{theirs[:8]}", "api", vault=tmp_path / "v")
    first = json.loads(text.splitlines()[0])
    (chats / theirs[:8] / "chats" / "s-next.jsonl").write_text(
        text.replace(first["sessionId"], "s-next"), encoding="utf-8")
    again = memo("import", "gemini", str(chats), vault=tmp_path / "v", cwd=tmp_path)
    assert "filed under" not in again.stdout, again.stdout
    listed = json.loads(memo("--json", "session", "show", "--all", vault=tmp_path / "v").stdout)["items"]
    assert ("api", "gemini-s-next-1") in {(s["project"], s["sessionId"]) for s in listed}
    # a chat kept under another hash's folder than the hash it names: the folder Gemini named it by (a planted
    # chat named a repository's hash to be filed and billed there: found by a security tester)
    planted = chats / "aaaaaaaa" / "chats"
    planted.mkdir(parents=True)
    (planted / "s-planted.jsonl").write_text(text.replace(first["projectHash"], ours).replace(first["sessionId"],
                                                                                              "s-planted"),
                                             encoding="utf-8")
    memo("import", "gemini", str(chats), vault=tmp_path / "v", cwd=shop)
    listed = json.loads(memo("--json", "session", "show", "--all", vault=tmp_path / "v").stdout)["items"]
    assert ("gemini-aaaaaaaa", "gemini-s-planted-1") in {(s["project"], s["sessionId"]) for s in listed}


def test_a_copilot_events_file_that_lost_its_beginning_is_said_not_passed_over(realdata, tmp_path):
    """Found by a tester: an ``events.jsonl`` whose first lines (the session's start and the
    person's prompts) were gone held 4 answers and 6 tool runs: "files 1, sessions 0", exit 0."""
    source = realdata / "multi-agent/Mai0313-VibeCodingTracker/tests/fixtures/sessions/copilot.jsonl"
    folder = tmp_path / "copilot" / "96ef38f0"
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_text("".join(source.read_text(encoding="utf-8").splitlines(keepends=True)[27:]),
                                         encoding="utf-8")
    ran = memo("import", "copilot", str(tmp_path / "copilot"), vault=tmp_path / "v", check=False)
    assert ran.returncode == 1
    assert "4 answers of the agent and no prompt of the person's: nothing to import (the file lost its beginning" \
        in ran.stderr, ran.stderr
