"""Honest importers (issue 14 point 6): a file that is not the format asked for is named with
the reason and an import that recognised nothing exits non-zero; every skipped file or line
is listed with why (JSON too); a bad byte costs its line, not the file."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from datetime import datetime, timedelta

import pytest

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
    assert result["turns"] == 4 and result["skipped"] == 0  # the four prompts are all there, the line read
    assert result["errors"][0].endswith("line 1: byte 0xc3 at column 11 is not UTF-8 (replaced by U+FFFD; the line "
                                        "is read)")


def test_a_fifo_named_like_a_transcript_is_passed_over_not_waited_for(realdata, tmp_path):
    import os
    import shutil

    folder = tmp_path / "projects"
    folder.mkdir()
    shutil.copy(realdata / "claude-code-jsonl/daaain-claude-code-log/test/test_data/edge_cases.jsonl", folder)
    os.mkfifo(folder / "pipe.jsonl")  # reading it would block forever
    result = json.loads(memo("--json", "import", "claude-code", str(folder), vault=tmp_path / "v").stdout)
    assert (result["files"], result["turns"]) == (1, 3)


def _specstory_copy(transcript, folder):
    """A SpecStory CLI export of the Claude Code ``transcript`` (its session comment names the
    session id), as SpecStory writes one: the person's turns and the agent's, each stamped."""
    lines = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines() if line.strip()]
    sid = next(d["sessionId"] for d in lines if d.get("sessionId"))
    turns = []
    for d in lines:
        content = d.get("message", {}).get("content") if isinstance(d.get("message"), dict) else None
        if d.get("type") == "user" and isinstance(content, str) and not d.get("isMeta"):
            turns.append(f"_**User ({d['timestamp']})**_\n\n{content}\n\n---\n")
        elif d.get("type") == "assistant":
            turns.append(f"_**Agent (claude-sonnet-4 {d['timestamp']})**_\n\nok\n\n---\n")
    history = folder / ".specstory" / "history"
    history.mkdir(parents=True)
    (history / "2026-01-01_00-00-00Z-port.md").write_text(
        f"<!-- Generated by SpecStory, Markdown v2.1.0 -->\n\n# Port\n\n<!-- Claude Code Session {sid} "
        f"({lines[0]['timestamp']}) -->\n\n" + "\n".join(turns), encoding="utf-8")
    return sid


def test_a_conversation_imported_from_its_transcript_and_from_a_specstory_export_counts_once(realdata, tmp_path):
    """The same Claude Code session imported from its JSONL and from SpecStory's export of it
    was two sessions and every turn twice (search, totals, rule occurrences; billed twice under
    overlapPolicy sum). The agent's own transcript is the truth, whichever came first."""
    source = realdata / "claude-code-jsonl/DRMacIver-claude-reliability/snapshot-tests/tests/python-to-rust-port"
    (tmp_path / "cc").mkdir()
    (tmp_path / "cc" / "transcript.jsonl").write_bytes((source / "transcript.jsonl").read_bytes())
    sid = _specstory_copy(source / "transcript.jsonl", tmp_path / "proj")
    config = tmp_path / "config.toml"
    config.write_text('overlapPolicy = "sum"\n', encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    for order in (("claude-code", "specstory"), ("specstory", "claude-code")):
        vault = tmp_path / "-then-".join(order)
        alone = None
        for source_name in order:
            folder = tmp_path / "cc" if source_name == "claude-code" else tmp_path / "proj" / ".specstory"
            ran = json.loads(memo("--json", "import", source_name, str(folder), vault=vault, env=env).stdout)
            assert ran["copies"] == (2 if source_name == order[1] else 0), (order, ran)  # a session and its turn
            if alone is None:
                alone = json.loads(memo("--json", "activity", "--all", vault=vault, env=env).stdout)
        both = json.loads(memo("--json", "activity", "--all", vault=vault, env=env).stdout)
        assert (both["totalSessions"], both["totalPrompts"]) == (1, 1), order
        [session] = both["sessions"]
        assert session["sessionId"] == f"claude-code-{sid}-1", order  # the agent's own transcript
        if order[0] == "claude-code":
            assert both["totalDurationMinutes"] == alone["totalDurationMinutes"]
        found = json.loads(memo("--json", "prompt", "search", "Port this", "--all", vault=vault, env=env).stdout)
        assert found["total"] == 1, order
        memo("reindex", vault=vault, env=env)  # the index rebuilt from the files says the same
        again = json.loads(memo("--json", "activity", "--all", vault=vault, env=env).stdout)
        assert (again["totalSessions"], again["totalPrompts"]) == (1, 1)


def test_a_specstory_export_that_only_names_a_session_hides_nothing_the_transcript_lacks(realdata, tmp_path):
    """An export naming a Claude Code session id but holding another conversation (or turns the
    transcript lost to pruning) was superseded whole by the transcript of that id: its turns left
    search and its minutes billing. Only what the transcript holds too is taken as a copy."""
    source = realdata / "claude-code-jsonl/DRMacIver-claude-reliability/snapshot-tests/tests/python-to-rust-port"
    (tmp_path / "cc").mkdir()
    (tmp_path / "cc" / "transcript.jsonl").write_bytes((source / "transcript.jsonl").read_bytes())
    sid = _specstory_copy(source / "transcript.jsonl", tmp_path / "proj")
    history = tmp_path / "proj" / ".specstory" / "history" / "2026-01-01_00-00-00Z-port.md"
    text = history.read_text(encoding="utf-8")
    last = max(json.loads(line)["timestamp"] for line in (source / "transcript.jsonl").read_text().splitlines()
               if line.strip() and "timestamp" in json.loads(line))
    at = (datetime.fromisoformat(last.replace("Z", "+00:00")) + timedelta(minutes=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    grown = (text + f"\n_**User ({at})**_\n\nPARTWORD a turn of the same hour the transcript lacks\n\n---\n"
             "\n_**User (2026-03-01T10:00:00Z)**_\n\nUNIQUEWORD the later turn the transcript lacks\n\n---\n")
    history.write_text(grown, encoding="utf-8")
    other = tmp_path / "other" / ".specstory" / "history"
    other.mkdir(parents=True)
    (other / "2026-03-05_09-00-00Z-else.md").write_text(
        f"<!-- Generated by SpecStory, Markdown v2.1.0 -->\n\n# Else\n\n<!-- Claude Code Session {sid} "
        "(2026-03-05T09:00:00Z) -->\n\n_**User (2026-03-05T09:00:00Z)**_\n\nOTHERWORD another conversation\n\n---\n\n"
        "_**Agent (claude-sonnet-4 2026-03-05T09:10:00Z)**_\n\nok\n\n---\n", encoding="utf-8")
    # the grown export: of its first work interval the copied turn is superseded, the session and the turn
    # the transcript lacks stay; its later work interval stays whole
    for export, copies, word in ((tmp_path / "proj", 1, "UNIQUEWORD"), (tmp_path / "other", 0, "OTHERWORD")):
        vault = tmp_path / f"v-{export.name}"
        memo("import", "specstory", str(export / ".specstory"), vault=vault)
        ran = json.loads(memo("--json", "import", "claude-code", str(tmp_path / "cc"), vault=vault).stdout)
        assert ran["copies"] == copies, export
        found = json.loads(memo("--json", "prompt", "search", word, "--all", vault=vault).stdout)
        assert found["total"] == 1, word
        found = json.loads(memo("--json", "prompt", "search", "Port this", "--all", vault=vault).stdout)
        assert [i["id"].startswith("prompt-claude-code-") for i in found["items"]] == [True]
        report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
        expected = (3, 3) if export.name == "proj" else (2, 2)
        assert (report["totalSessions"], report["totalPrompts"]) == expected, export
        if export.name == "proj":
            assert json.loads(memo("--json", "prompt", "search", "PARTWORD", "--all", vault=vault).stdout)["total"] == 1


def test_import_auto_takes_folders_and_imports_each_file_with_its_own_importer(realdata, tmp_path):
    """`memo import auto DIR` was refused ("Got unexpected extra argument"), while `memo watch DIR`
    tells each file's importer: a folder of mixed transcripts is imported as the watcher would."""
    vault = tmp_path / "v"
    ran = json.loads(memo("--json", "import", "auto", str(realdata / "codex-rollouts"),
                          str(realdata / "specstory-md"), vault=vault).stdout)
    by = {(item["source"], Path(item["path"]).name): item for item in ran["sources"]}
    assert set(by) == {("codex", "codex-rollouts"), ("specstory", "specstory-md")}
    assert by[("codex", "codex-rollouts")]["turns"] > 0 and by[("specstory", "specstory-md")]["turns"] > 0
    again = json.loads(memo("--json", "import", "auto", str(realdata / "codex-rollouts"), vault=vault).stdout)
    [item] = again["sources"]
    assert item["turns"] == 0 and item["unchanged"] == item["files"]
    # found by a new user: the legacy Gemini chat (a .json document outside ~/.gemini) was passed over
    # without a word; it is told by its header, and a file no importer tells is named
    mixed = tmp_path / "mixed"
    shutil.copytree(realdata / "multi-agent", mixed)
    (mixed / "notes.md").write_text("# my notes\n", encoding="utf-8")
    told = memo("--json", "import", "auto", str(mixed), vault=tmp_path / "v2")
    assert sorted(item["source"] for item in json.loads(told.stdout)["sources"]) == [
        "claude-code", "codex", "copilot", "gemini"]
    [gemini] = [i for i in json.loads(told.stdout)["sources"] if i["source"] == "gemini"]
    assert gemini["files"] == 2 and gemini["recognised"] == 2  # the .jsonl chat and the legacy .json document
    assert f"1 file no importer tells ({mixed / 'notes.md'})" in told.stderr
    missing = memo("import", "auto", str(tmp_path / "nowhere"), vault=vault, check=False)
    assert missing.returncode == 1 and "Invalid path:" in missing.stderr and "does not exist" in missing.stderr
    # found by a new user: a folder of terminal copies was told to "give its importer", which
    # refuses them (no importer reads a copy, which holds no times)
    copies = memo("import", "auto", str(realdata / "claude-console-md"), vault=vault, check=False)
    assert copies.returncode == 1 and "is a Claude Code session copied from the terminal, which holds no times (no " \
        "importer reads it): import the session's own .jsonl" in " ".join(copies.stderr.split())
    assert "give its importer" not in copies.stderr


def test_random_bytes_and_utf16_are_named_for_what_they_are_not_as_being_written(tmp_path):
    """Found by a helper: a binary or UTF-16 ``.jsonl`` was "its only line is still being written"
    (and random bytes "the file is empty"); half a JSON line at the end still is."""
    import random

    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "random.jsonl").write_bytes(bytes(random.Random(7).randrange(128, 256) for _ in range(3000)))
    (folder / "utf16.jsonl").write_bytes('{"type": "user"}\n{"type": "user"'.encode("utf-16"))
    (folder / "writing.jsonl").write_text('{"type": "user", "sessionId": "s', encoding="utf-8")
    for source in ("claude-code", "codex", "gemini", "copilot"):
        ran = memo("--json", "import", source, str(folder), vault=tmp_path / "v", check=False)
        why = {Path(line.split(": not ")[0]).name: line.split(" transcript ", 1)[1]
               for line in (json.loads(x)["skipped"] for x in ran.stderr.splitlines() if x.startswith('{"skipped"'))}
        assert "still being written" not in why["random.jsonl"] + why["utf16.jsonl"], (source, why)
        assert "empty" not in why["random.jsonl"], (source, why)
        assert "still being written" in why["writing.jsonl"], (source, why)
    one = memo("import", "claude-code", str(folder / "random.jsonl"), vault=tmp_path / "v", check=False)
    assert "(its bytes are not UTF-8 text: a binary or UTF-16 file?)" in one.stderr
    assert "error: nothing recognised: the file is not a claude-code transcript" in one.stderr


def test_a_turn_too_large_to_write_is_skipped_and_the_other_files_are_imported(realdata, tmp_path):
    """Found by an attacker: one turn whose metadata would be over 256,000 characters (3,000
    models answering it) ended the whole import with ``error: Invalid tokensByModel`` and nothing
    imported — records are rendered at the group commit. It is refused when it is written, as a
    write alone refuses it: that turn is skipped and named, every other file imported."""
    import uuid

    folder = tmp_path / "projects" / "demo"
    folder.mkdir(parents=True)
    sid = "11111111-2222-3333-4444-555555555555"
    lines = [{"type": "user", "sessionId": sid, "uuid": str(uuid.uuid4()), "cwd": "/path/to/Demo",
              "message": {"role": "user", "content": "Build the thing"}, "timestamp": "2026-11-03T10:00:00.000Z"}]
    for n in range(3000):
        lines.append({"type": "assistant", "sessionId": sid, "uuid": str(uuid.uuid4()), "requestId": f"req_{n}",
                      "timestamp": f"2026-11-03T10:{(n // 60) % 60:02d}:{n % 60:02d}.500Z",
                      "message": {"id": f"msg_{n}", "role": "assistant", "model": f"claude-opus-4-1-v{n}",
                                  "content": [{"type": "text", "text": "ok"}],
                                  "usage": {"input_tokens": 999_999, "cache_creation_input_tokens": 999_999,
                                            "cache_read_input_tokens": 999_999, "output_tokens": 999_999}}})
    (folder / f"{sid}.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    real = realdata / "claude-code-jsonl/d-kimuson-claude-code-viewer/mock-global-claude-dir/projects/sample-project"
    for source in real.glob("*.jsonl"):
        shutil.copy(source, folder / source.name)
    result = json.loads(memo("--json", "import", "claude-code", str(tmp_path / "projects"), vault=tmp_path / "v").stdout)
    assert result["turns"] >= 3 and result["skipped"] == 1, result
    [reason] = [e for e in result["errors"] if sid in e]
    assert "turn 1 of" in reason and "Invalid tokensByModel" in reason


def test_a_grown_specstory_copy_of_an_imported_transcript_imports_again_quietly(realdata, tmp_path):
    """Found by an attacker: once ``memo session end`` refused sessions superseded by their
    transcript's import, the import of a grown SpecStory export (its session a superseded copy)
    was refused with that advice. Only a person's or an agent's end is refused."""
    from datetime import datetime, timedelta

    source = realdata / "claude-code-jsonl/DRMacIver-claude-reliability/snapshot-tests/tests/python-to-rust-port"
    transcript = tmp_path / "cc" / "transcript.jsonl"
    transcript.parent.mkdir()
    transcript.write_bytes((source / "transcript.jsonl").read_bytes())
    _specstory_copy(transcript, tmp_path / "proj")
    vault, specstory = tmp_path / "v", tmp_path / "proj" / ".specstory"
    memo("import", "claude-code", str(transcript.parent), vault=vault)
    assert json.loads(memo("--json", "import", "specstory", str(specstory), vault=vault).stdout)["copies"] == 2
    lines = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines() if line.strip()]
    last = datetime.fromisoformat(max(d["timestamp"] for d in lines if "timestamp" in d).replace("Z", "+00:00"))
    prompt = next(d for d in lines if d.get("type") == "user" and isinstance(d["message"].get("content"), str))
    grown = {**prompt, "uuid": "u-grow-1", "timestamp": (last + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
             "message": {"role": "user", "content": "please also port the tests"}}
    with transcript.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(grown) + "\n")
    shutil.rmtree(specstory)
    _specstory_copy(transcript, tmp_path / "proj")
    again = json.loads(memo("--json", "import", "specstory", str(specstory), vault=vault).stdout)
    assert (again["refused"], again["skipped"], again["errors"]) == (0, 0, []), again


def test_an_empty_transcript_of_a_conversation_just_started_is_no_error(realdata, tmp_path):
    """Found by an operator: the empty ``.jsonl`` a just-started Claude Code conversation leaves
    was an error of every `memo watch` pass ("not a claude-code transcript (the file is
    empty)"). It is counted as empty, not as a file of another format; an import of empty files
    alone says there is nothing to import (exit 1)."""
    folder = tmp_path / "cc"
    folder.mkdir()
    real = sorted((realdata / "claude-code-jsonl").rglob("*.jsonl"))[0]
    (folder / real.name).write_bytes(real.read_bytes())
    (folder / "5f0c2b9e-1111-4222-8333-944455556667.jsonl").write_bytes(b"")
    # blank lines alone are nothing written either (found by a tester: "a binary or UTF-16 file?")
    (folder / "5f0c2b9e-1111-4222-8333-944455556668.jsonl").write_bytes(b"\n\n\r\n")
    ran = memo("--json", "import", "claude-code", str(folder), vault=tmp_path / "v")
    result = json.loads(ran.stdout)
    assert (result["empty"], result["unrecognised"], result["errors"]) == (2, 0, [])
    assert result["sessions"] >= 1 and "skipped" not in ran.stderr
    alone = memo("import", "claude-code", str(folder / "5f0c2b9e-1111-4222-8333-944455556667.jsonl"),
                 vault=tmp_path / "v2", check=False)
    assert alone.returncode == 1 and alone.stderr.strip() == (
        "error: nothing to import: the file is empty (an agent writes its transcript as the conversation goes on)")
    # found by a tester of bad files: an empty SpecStory history file was "files 1, sessions 0", exit 0
    history = tmp_path / "site" / ".specstory" / "history"
    history.mkdir(parents=True)
    (history / "2026-01-01_00-00Z-x.md").write_bytes(b"")
    empty = memo("import", "specstory", str(tmp_path / "site"), vault=tmp_path / "v3", check=False)
    assert empty.returncode == 1 and "nothing to import: the file is empty" in empty.stderr, empty.stderr


def test_import_auto_leaves_claude_code_sub_agent_files_out_and_says_so(realdata, tmp_path):
    """Found by a new user: `memo import auto` called the Claude Code sub-agent files it leaves out
    on purpose "files no importer tells … if one is a transcript, give its importer" — inviting an
    import of a sub-agent's brief and tool traffic as the person's turns."""
    folder = realdata / "claude-code-jsonl" / "moredip-session-share"
    subs = sorted(folder.rglob("subagents/*.jsonl"))
    assert subs  # the realdata holds them
    told = memo("import", "auto", str(folder), vault=tmp_path / "v")
    assert "no importer tells" not in told.stderr
    n = len(subs)
    assert f"note: {folder}: {n} Claude Code sub-agent file{'s' if n > 1 else ''} (<session>/subagents/) read for their model calls' tokens only" \
        in " ".join(told.stderr.split())
    [item] = json.loads(memo("--json", "import", "auto", str(folder), vault=tmp_path / "v2").stdout)["sources"]
    assert (item["source"], item["subAgentFiles"], item.get("untold")) == ("claude-code", n, None)


@pytest.mark.parametrize("client, said", [
    ("", "error: Invalid client: is empty: give a value, or leave the option out"),
    ("   ", "error: Invalid client: is empty: give a value, or leave the option out"),
    ("Acme\tCorp", "error: Invalid client: holds the control character U+0009"),
])
def test_a_blank_or_bad_client_of_an_import_is_refused_before_any_file_is_read(realdata, tmp_path, client, said):
    """Found by an attacker: ``--client ''`` imported everything as ``internal`` with exit 0, and a
    client holding a tab was said once per conversation as "skipped"."""
    folder = realdata / "claude-code-jsonl" / "moredip-session-share"
    for args in (["import", "claude-code", str(folder)], ["import", "auto", str(folder)]):
        ran = memo(*args, "--client", client, vault=tmp_path / "v", check=False)
        assert ran.returncode == 1 and ran.stderr.startswith(said), ran.stderr
    assert not (tmp_path / "v" / "projects").exists()


def test_a_transcript_no_line_of_which_carries_a_time_is_said_and_adds_no_turn(realdata, tmp_path):
    """Found by a tester of bad files: a Claude Code file whose every timestamp is null imported
    nothing without a word (exit 0); beside the real file, its copy came in as the same turns again,
    stamped at the session's start. Said, left out; the real file's turns once."""
    source = realdata / "claude-code-jsonl/d-kimuson-claude-code-viewer/mock-global-claude-dir/projects/sample-project"
    original = source / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
    stripped = "".join(json.dumps({**json.loads(line), "timestamp": None}) + "\n"
                       for line in original.read_text(encoding="utf-8").splitlines() if line.strip())
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "copy.jsonl").write_text(stripped, encoding="utf-8")
    ran = memo("import", "claude-code", str(alone), vault=tmp_path / "v1", check=False)
    assert ran.returncode == 1, ran.stdout
    assert "transcript 1af7fc5e-8455-4414-9ccd-011d40f70b2a: no line of it carries a time, so no work session " \
           "holds its 1 turn: not imported" in ran.stderr, ran.stderr
    both = tmp_path / "both"
    both.mkdir()
    shutil.copy(original, both)
    (both / "copy.jsonl").write_text(stripped, encoding="utf-8")
    memo("import", "claude-code", str(both), vault=tmp_path / "v2", check=False)
    memo("import", "claude-code", str(original), vault=tmp_path / "v3")
    totals = [json.loads(memo("--json", "prompt", "list", "--all", vault=tmp_path / v).stdout)["total"]
              for v in ("v2", "v3")]
    assert totals[0] == totals[1] == 1


def _stretches(null_user_times: bool) -> str:
    """A Claude Code conversation of four stretches (09:00, 11:00, 14:00, 16:00), two prompts each,
    the answers 5–30 minutes after them; with ``null_user_times`` the prompts' lines carry no time."""
    parts = {"A": ("09:00", "09:10", "09:20"), "B": ("11:00", "11:12", "11:30"), "C": ("14:00", "14:05", "14:15"),
             "D": ("16:00", "16:30", "16:40")}
    lines, parent = [], None
    for key, (asked, answered, last) in parts.items():
        for n, (kind, at, text) in enumerate((("user", asked, f"prompt {key}1"), ("assistant", answered, f"answer {key}1"),
                                              ("user", answered, f"prompt {key}2"), ("assistant", last, f"answer {key}2"))):
            uuid = f"{key}{n}-0000-4000-8000-000000000000"
            line = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/ana/product",
                    "sessionId": "5e55e55e-0000-4000-8000-000000000001", "uuid": uuid,
                    "timestamp": None if kind == "user" and null_user_times else f"2026-11-03T{at}:00.000Z"}
            if kind == "user":
                line.update(type="user", message={"role": "user", "content": text})
            else:
                line.update(type="assistant", message={"model": "claude-opus-4-5-20251101", "id": f"msg_{key}{n}",
                                                       "role": "assistant", "content": [{"type": "text", "text": text}],
                                                       "usage": {"input_tokens": 100, "output_tokens": 50}})
            lines.append(json.dumps(line))
            parent = uuid
    return "\n".join(lines) + "\n"


def test_a_copy_whose_prompts_carry_no_time_and_its_timed_original_count_each_turn_once(tmp_path):
    """Found by a breaker: a copy of a conversation whose user lines' timestamps were null was one
    10-minute session of all its eight turns (each stamped at its interval's start); its timed
    original imported after it counted every turn and its AI cost twice. A prompt without a time
    takes its answer's: the copy alone is the conversation's four stretches, and with the original
    each turn counts once."""
    (tmp_path / "copy").mkdir()
    copy, original = tmp_path / "copy" / "s.jsonl", tmp_path / "all.jsonl"
    copy.write_text(_stretches(True), encoding="utf-8")
    original.write_text(_stretches(False), encoding="utf-8")
    memo("import", "claude-code", str(original), "--project", "product", vault=tmp_path / "clean")
    clean = json.loads(memo("--json", "activity", "--all", vault=tmp_path / "clean").stdout)
    assert (clean["totalPrompts"], clean["totalDurationMinutes"]) == (8, 105)
    memo("import", "claude-code", str(copy), "--project", "product", vault=tmp_path / "both")
    alone = json.loads(memo("--json", "activity", "--all", vault=tmp_path / "both").stdout)
    assert alone["totalPrompts"] == 8 and len(alone["sessions"]) == 4  # four stretches, not one of 10 minutes
    memo("import", "claude-code", str(original), "--project", "product", vault=tmp_path / "both")
    both = json.loads(memo("--json", "activity", "--all", vault=tmp_path / "both").stdout)
    assert (both["totalPrompts"], both["totalDurationMinutes"], both["totalCostUsd"]) == \
        (8, 105, clean["totalCostUsd"])

def test_import_auto_takes_the_specstory_history_of_this_repository_and_of_those_memo_knows(realdata, tmp_path):
    """Found by a newcomer: `memo import auto`, run in a repository holding `.specstory/history`,
    read the agents' home folders alone — 275 turns left out without a word (SpecStory keeps its
    histories in each repository). It takes this repository's, and those of the repositories the
    vault's projects were last seen in."""
    home, vault = tmp_path / "home", tmp_path / "v"
    home.mkdir()
    histories = sorted((realdata / "specstory-md").rglob(".specstory/history"))
    assert histories
    repos = []
    for name, history in zip(("shop", "api"), histories[:2]):
        repo = tmp_path / name
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        shutil.copytree(history, repo / ".specstory" / "history")
        repos.append(repo)
    env = {"HOME": str(home)}
    ran = memo("--json", "import", "auto", vault=vault, env=env, cwd=repos[0])
    [item] = json.loads(ran.stdout)["sources"]
    assert (item["source"], item["path"]) == ("specstory", str(repos[0] / ".specstory" / "history"))
    assert item["turns"] > 0
    # a repository the vault knows (a turn recorded there), from anywhere
    memo("prompt", "record", "--body", "hello", "--session-id", "s1", vault=vault, env=env, cwd=repos[1])
    again = json.loads(memo("--json", "import", "auto", vault=vault, env=env, cwd=tmp_path).stdout)["sources"]
    # shop's, imported from there before, too (found by a breaker: read no more once elsewhere)
    assert sorted(Path(i["path"]).parent.parent.name for i in again) == ["api", "shop"]
    nothing = memo("import", "auto", vault=tmp_path / "empty", env=env, cwd=tmp_path, check=False)
    assert nothing.returncode == 1 and "and for .specstory/history in this repository and those memo knows" \
        in nothing.stderr


def test_import_auto_takes_the_specstory_history_of_the_folder_it_runs_in_below_a_repository_or_in_none(
        realdata, tmp_path):
    """Found by a breaker: SpecStory writes its history in the folder opened as the workspace —
    a repository's subfolder, or a folder of no repository —, and `memo import auto` run there
    read only the repository root's (149 turns left out without a word) or refused."""
    home = tmp_path / "home"
    home.mkdir()
    histories = sorted((realdata / "specstory-md").rglob(".specstory/history"))
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shutil.copytree(histories[0], repo / ".specstory" / "history")
    shutil.copytree(histories[1], repo / "cli" / ".specstory" / "history")
    (repo / "cli" / "src").mkdir()
    ran = json.loads(memo("--json", "import", "auto", vault=tmp_path / "v", env={"HOME": str(home)},
                          cwd=repo / "cli" / "src").stdout)["sources"]
    assert sorted(Path(i["path"]).relative_to(tmp_path).as_posix() for i in ran) == [
        "repo/.specstory/history", "repo/cli/.specstory/history"]
    alone = tmp_path / "notes"
    shutil.copytree(histories[1], alone / ".specstory" / "history")
    ran = json.loads(memo("--json", "import", "auto", vault=tmp_path / "w", env={"HOME": str(home)},
                          cwd=alone).stdout)["sources"]
    assert [Path(i["path"]) for i in ran] == [alone / ".specstory" / "history"] and ran[0]["turns"] > 0


def test_a_specstory_file_of_cr_line_ends_imports_its_turns(realdata, tmp_path):
    """Found by a tester: a SpecStory file whose lines end in CR alone imported 0 turns, exit 0,
    without a word (its LF and CRLF copies import 4)."""
    source = realdata / "specstory-md/hpm27-agente-bsc-rag/.specstory/history/2025-10-15_00-22Z-me-ajude-a-resolver.md"
    counts = []
    for name, ends in (("lf", "\n"), ("cr", "\r"), ("crlf", "\r\n")):
        copy = tmp_path / name / source.name
        copy.parent.mkdir()
        copy.write_bytes(source.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", ends.encode()))
        counts.append(json.loads(memo("--json", "import", "specstory", str(copy), vault=tmp_path / f"v-{name}").stdout)
                      ["turns"])
    assert counts[0] > 0 and counts == [counts[0]] * 3


def test_a_gemini_chat_nested_too_deep_is_named_not_waited_for(realdata, tmp_path):
    """Found by a tester: a whole chat file nested 1,100 deep was said to be "still being written"
    at every import, exit 0, for good."""
    source = realdata / "multi-agent/Mai0313-VibeCodingTracker/examples/test_conversation_gemini.json"
    data = source.read_bytes().rstrip()
    chat = tmp_path / "chats" / "chat.json"
    chat.parent.mkdir()
    chat.write_bytes(data[:-1] + b', "extra": ' + b"[" * 1100 + b"]" * 1100 + b"}\n")
    ran = memo("import", "gemini", str(chat), vault=tmp_path / "v", check=False)
    assert ran.returncode == 1 and "nested too deep to parse" in ran.stderr and "still being written" not in \
        ran.stdout + ran.stderr, ran
