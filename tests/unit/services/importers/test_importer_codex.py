"""Codex CLI rollout parser on small synthetic rollouts (SPEC §7)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from memo_analytics.services.importers import codex
from memo_analytics.services.importers.common import ImportOptions

UTC = timezone.utc
SESSION = "019ac364-f0dc-7043-9750-594e12f5fd21"


def line(ts, kind: str, payload: dict) -> dict:
    return {"timestamp": ts, "type": kind, "payload": payload}


def user_event(ts, message: str, **extra) -> dict:
    return line(ts, "event_msg", {"type": "user_message", "message": message, "images": [], **extra})


def user_item(ts, text: str) -> dict:
    return line(ts, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})


def write(tmp_path: Path, *lines, name: str = f"rollout-2026-01-05T17-30-00-{SESSION}.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    return path


META = line("2026-01-05T09:30:00.100Z", "session_meta", {
    "id": SESSION, "timestamp": "2026-01-05T09:30:00.000Z", "cwd": "/home/ccp/shop-api",
    "originator": "codex_cli_rs", "cli_version": "0.63.0",
    "git": {"repository_url": "https://github_pat_11AAAAAAA0aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb@github.com/x/y.git"},
})


def test_only_user_message_events_are_prompts(tmp_path):
    path = write(
        tmp_path,
        META,
        user_item("2026-01-05T09:30:00.200Z", "<environment_context>\n  <cwd>/home/ccp/shop-api</cwd>\n</environment_context>"),
        user_item("2026-01-05T09:30:00.300Z", "# AGENTS.md instructions for /home/ccp\n\n<INSTRUCTIONS>\nreply in Chinese\n</INSTRUCTIONS>"),
        user_item("2026-01-05T09:31:00.000Z", "阅读readme"),
        user_event("2026-01-05T09:31:00.001Z", "阅读readme"),
        line("2026-01-05T09:31:00.050Z", "turn_context", {"cwd": "/home/ccp/shop-api", "model": "gpt-5.1-codex-max"}),
        line("2026-01-05T09:31:05Z", "response_item", {"type": "function_call", "name": "shell", "arguments": "{}"}),
        line("2026-01-05T09:31:09Z", "response_item", {"type": "function_call_output", "output": "README"}),
        line("2026-01-05T09:31:12Z", "event_msg", {"type": "agent_message", "message": "读完了"}),
        user_event("2026-01-05T09:40:00Z", "实现方案1"),
        line("2026-01-05T09:44:30Z", "event_msg", {"type": "token_count", "info": None}),
    )
    result = codex.parse(path, ImportOptions())
    assert result.skipped_lines == 0
    [transcript] = result.transcripts
    assert transcript.transcript_id == SESSION
    assert (transcript.source, transcript.ide, transcript.agent) == ("codex", "codex", "codex")
    assert transcript.model == "gpt-5.1-codex-max"
    assert transcript.project_hint == "shop-api"
    assert [(p.text, p.at) for p in transcript.prompts] == [
        ("阅读readme", datetime(2026, 1, 5, 9, 31, 0, 1000, tzinfo=UTC)),
        ("实现方案1", datetime(2026, 1, 5, 9, 40, tzinfo=UTC)),
    ]
    # the session_meta payload stamp and every envelope stamp are activity
    assert min(transcript.activity) == datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
    assert max(transcript.activity) == datetime(2026, 1, 5, 9, 44, 30, tzinfo=UTC)
    assert len(transcript.activity) == 12


def test_ide_wrapper_is_cut_to_the_persons_request(tmp_path):
    wrapped = ("# Context from my IDE setup:\n\n## Active file: go.mod\n\n## Open tabs:\n- go.mod: go.mod\n\n"
               "## My request for Codex:\n幫我檢查一下 go.mod\n最後幫我把 TODO.md 刪除\n")
    path = write(
        tmp_path, META,
        user_event("2026-01-05T09:31:00Z", wrapped, kind="plain"),
        user_event("2026-01-05T09:32:00Z", "# Context from my IDE setup:\n\n## Active file: go.mod\n"),  # no request
        user_event("2026-01-05T09:33:00Z", "<user_instructions>be terse</user_instructions>", kind="user_instructions"),
        user_event("2026-01-05T09:34:00Z", "<environment_context><cwd>/x</cwd></environment_context>"),
        user_event("2026-01-05T09:35:00Z", "   "),
    )
    [transcript] = codex.parse(path, ImportOptions()).transcripts
    assert [p.text for p in transcript.prompts] == ["幫我檢查一下 go.mod\n最後幫我把 TODO.md 刪除"]


def test_human_request_rules():
    assert codex.human_request("plain words") == "plain words"
    assert codex.human_request("# Context from my IDE setup:\n## My request for Codex:\n  do it  ") == "do it"
    assert codex.human_request("# Context from my IDE setup:\n## Open tabs:\n- a") is None
    assert codex.human_request("<environment_context>x</environment_context>") is None
    assert codex.human_request("") is None


def test_malformed_lines_are_counted_and_never_raise(tmp_path):
    path = write(
        tmp_path,
        META,
        '{"timestamp": "2026-01-05T09:31:00Z", "type": "event_msg", "payload": {"type": ',  # broken JSON
        "[1, 2]",                                                                            # not an object
        json.dumps({"timestamp": "2026-01-05T09:31:00Z", "type": "event_msg", "payload": "nope"}),   # payload not an object
        json.dumps({"timestamp": "2026-01-05T09:31:00Z", "type": "mystery", "payload": {}}),         # unknown type
        json.dumps({"silly": "this"}),
        json.dumps(user_event("2026-02-30T09:31:00Z", "bad date")),                                   # junk timestamp
        "",
        user_event("2026-01-05T09:32:00Z", "kept"),
    )
    result = codex.parse(path, ImportOptions())
    assert result.skipped_lines == 6
    assert [p.text for p in result.transcripts[0].prompts] == ["kept"]


def test_naive_timestamps_are_read_in_the_zone(tmp_path):
    path = write(tmp_path, line("2026-01-05T17:30:00", "session_meta", {"id": SESSION, "cwd": "/w/app"}),
                 user_event("2026-01-05T17:31:00", "hi"))
    [transcript] = codex.parse(path, ImportOptions(zone=ZoneInfo("Asia/Shanghai"))).transcripts
    assert transcript.prompts[0].at == datetime(2026, 1, 5, 9, 31, tzinfo=UTC)
    assert sorted(transcript.activity) == [datetime(2026, 1, 5, 9, 30, tzinfo=UTC), datetime(2026, 1, 5, 9, 31, tzinfo=UTC)]


def test_older_rollouts_without_envelope_use_user_message_items(tmp_path):
    path = write(
        tmp_path,
        {"id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e", "timestamp": "2025-05-10T08:00:00.000Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "id": None, "role": "user", "content": [{"type": "input_text", "text": "<user_instructions>terse</user_instructions>"}]},
        {"type": "message", "id": None, "role": "user", "content": [{"type": "input_text", "text": "explain this repo"}]},
        {"type": "message", "id": None, "role": "assistant", "content": [{"type": "output_text", "text": "It is ..."}]},
        name="rollout-2025-05-10-5973b6c0.jsonl",
    )
    result = codex.parse(path, ImportOptions())
    assert result.skipped_lines == 0
    [transcript] = result.transcripts
    assert transcript.transcript_id == "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
    assert [(p.text, p.at) for p in transcript.prompts] == [("explain this repo", None)]
    assert transcript.activity == [datetime(2025, 5, 10, 8, 0, tzinfo=UTC)]


def test_a_file_that_is_not_a_rollout_yields_nothing(tmp_path):
    path = write(tmp_path, {"type": "user", "sessionId": "s", "timestamp": "2026-01-05T10:00:00Z",
                            "message": {"role": "user", "content": "hi"}}, name="claude.jsonl")
    result = codex.parse(path, ImportOptions())
    assert (result.transcripts, result.skipped_lines) == ([], 0)


def test_a_rollout_without_prompts_yields_no_transcript(tmp_path):
    path = write(tmp_path, META, user_item("2026-01-05T09:30:01Z", "<environment_context/>"))
    assert codex.parse(path, ImportOptions()).transcripts == []


def test_a_turn_runs_on_the_model_of_the_context_written_after_its_message(tmp_path):
    """Found by a tester of other agents' files: Codex writes a turn's ``turn_context`` after its
    ``user_message``; after a ``/model`` switch the first turn on the new model was priced at the
    model before it (each turn took the model of the turn before)."""
    path = write(
        tmp_path,
        META,
        user_event("2026-01-05T09:31:00Z", "阅读readme"),
        line("2026-01-05T09:31:00.050Z", "turn_context", {"cwd": "/home/ccp/shop-api", "model": "gpt-5.1-codex-max"}),
        line("2026-01-05T09:31:12Z", "event_msg", {"type": "agent_message", "message": "读完了"}),
        user_event("2026-01-05T09:40:00Z", "写入AGENTS.md"),
        line("2026-01-05T09:40:00.050Z", "turn_context", {"cwd": "/home/ccp/shop-api", "model": "gpt-5-mini"}),
        line("2026-01-05T09:40:09Z", "event_msg", {"type": "agent_message", "message": "好"}),
        line("2026-01-05T09:41:00.050Z", "turn_context", {"cwd": "/home/ccp/shop-api", "model": "gpt-5.1-codex-max"}),
        user_event("2026-01-05T09:45:00Z", "再来"),
    )
    [transcript] = codex.parse(path, ImportOptions()).transcripts
    assert [(p.text, p.model) for p in transcript.prompts] == [
        ("阅读readme", "gpt-5.1-codex-max"), ("写入AGENTS.md", "gpt-5-mini"), ("再来", "gpt-5.1-codex-max")]
