"""Honest importers (issue 14 point 6): a file that is not the format asked for is named with
the reason and an import that recognised nothing exits non-zero; every skipped file or line
is listed with why (JSON too); a bad byte costs its line, not the file."""

from __future__ import annotations

import json

from tests.inprocess import memo

CX = "codex-rollouts/7567491-Feishu_ClaudeCode/.codex/sessions/2025/11/"


def test_claude_code_transcripts_given_to_the_specstory_importer_are_refused_by_name(realdata, tmp_path):
    ran = memo("import", "specstory", str(realdata / "claude-code-jsonl"), vault=tmp_path / "v", check=False)
    assert ran.returncode == 1
    assert "nothing to import: no *.md file under" in ran.stderr and "is this a specstory folder?" in ran.stderr
    assert not (tmp_path / "v").exists()


def test_codex_rollouts_given_to_the_claude_code_importer_say_what_they_are(realdata, tmp_path):
    ran = memo("--json", "import", "claude-code", str(realdata / CX), vault=tmp_path / "v", check=False)
    assert ran.returncode == 1
    lines = ran.stderr.strip().splitlines()
    skipped = [json.loads(x)["skipped"] for x in lines if x.startswith('{"skipped"')]  # every line JSON, under --json
    assert len(skipped) == 3
    assert all("not a claude-code transcript (a Codex rollout: import it with `memo import codex`)" in x
               for x in skipped)
    assert json.loads(lines[-1]) == {  # under --json the error is a JSON line, after the lines it refers to
        "error": "nothing recognised: none of the 3 files is a claude-code transcript (see the lines above); nothing "
                 "was imported", "errorType": "MemoError", "exitCode": 1}


def test_a_markdown_file_that_is_no_specstory_history_is_named(tmp_path):
    readme = tmp_path / "notes" / "README.md"
    readme.parent.mkdir()
    readme.write_text("# Notes\n\nNothing to see.\n")
    ran = memo("import", "specstory", str(readme), vault=tmp_path / "v", check=False)
    assert ran.returncode == 1 and "not a specstory transcript (no SpecStory turn marker" in ran.stderr


def test_every_skipped_line_is_listed_with_its_reason_in_the_json(realdata, tmp_path):
    path = realdata / "claude-code-jsonl/daaain-claude-code-log/test/test_data/edge_cases.jsonl"
    result = json.loads(memo("--json", "import", "claude-code", str(path), vault=tmp_path / "v").stdout)
    assert result["skipped"] == 6 and len(result["errors"]) == 6
    assert [e.rsplit(": line ", 1)[1].split(":")[0] for e in result["errors"]] == ["10", "11", "13", "14", "15", "16"]
    assert (result["recognised"], result["unrecognised"], result["turns"]) == (1, 0, 3)


def test_a_bad_byte_in_a_codex_rollout_costs_one_line(realdata, tmp_path):
    source = realdata / CX / "27/rollout-2025-11-27T11-39-23-019ac364-f0dc-7043-9750-594e12f5fd21.jsonl"
    lines = source.read_bytes().split(b"\n")
    lines[0] = lines[0][:10] + b"\xc3\x28" + lines[0][10:]  # an invalid UTF-8 sequence in the session_meta line
    broken = tmp_path / "rollouts" / source.name
    broken.parent.mkdir()
    broken.write_bytes(b"\n".join(lines))
    result = json.loads(memo("--json", "import", "codex", str(broken), vault=tmp_path / "v").stdout)
    assert result["turns"] == 4 and result["skipped"] == 1  # the four prompts are all there
    assert result["errors"][0].endswith("line 1: not UTF-8 text (byte 0xc3 at column 11); the line is left out")


def test_a_fifo_named_like_a_transcript_is_passed_over_not_waited_for(realdata, tmp_path):
    import os
    import shutil

    folder = tmp_path / "projects"
    folder.mkdir()
    shutil.copy(realdata / "claude-code-jsonl/daaain-claude-code-log/test/test_data/edge_cases.jsonl", folder)
    os.mkfifo(folder / "pipe.jsonl")  # reading it would block forever
    result = json.loads(memo("--json", "import", "claude-code", str(folder), vault=tmp_path / "v").stdout)
    assert (result["files"], result["turns"]) == (1, 3)
