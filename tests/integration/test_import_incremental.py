"""Unchanged means cheap (issue 16 point 3): a transcript file the last import took in whole and
that has not changed costs a ``stat``; a grown one is read again and adds only what is new; a
conversation split over files is merged from all of them even when only one changed."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil

import pytest

from tests.inprocess import memo

CC = "claude-code-jsonl/moredip-session-share/samples/claude-code-projects"


def imported_json(vault, source, *args) -> dict:
    """``memo --json import SOURCE ARGS``'s answer (any exit code)."""
    return json.loads(memo("--json", "import", source, *args, vault=vault, check=False).stdout)


def imported(vault, *args, env=None) -> dict:
    ran = memo("--json", "import", "claude-code", *args, vault=vault, env=env or {})
    return json.loads(ran.stdout)


def test_an_unchanged_file_is_not_read_again_and_a_grown_one_adds_only_its_new_turn(realdata, tmp_path):
    folder = tmp_path / "projects"
    shutil.copytree(realdata / CC, folder, ignore=shutil.ignore_patterns("subagents"))
    vault = tmp_path / "v"
    first = imported(vault, str(folder))
    assert (first["files"], first["unchanged"]) == (2, 0) and first["turns"] > 0
    other = folder / "4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl"
    again = imported(vault, str(folder))
    assert (again["files"], again["unchanged"], again["turns"], again["sessions"], again["skipped"]) == (2, 2, 0, 0, 0)
    # one line appended: that file is read again (whole), the other is not; one new turn
    last = json.loads(other.read_text(encoding="utf-8").splitlines()[-1])
    line = {"type": "user", "sessionId": last["sessionId"], "uuid": "7f3c2a10-0000-4000-8000-000000000001",
            "parentUuid": last.get("uuid"), "timestamp": "2026-01-21T21:10:00.000Z", "cwd": last.get("cwd"),
            "message": {"role": "user", "content": "now add the retry loop to the fetcher"}}
    with other.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
    grown = imported(vault, str(folder))
    assert (grown["unchanged"], grown["turns"]) == (1, 1)
    found = json.loads(memo("--json", "prompt", "search", "fetcher", "--all", vault=vault).stdout)["items"]
    assert [item["body"] for item in found] == ["now add the retry loop to the fetcher"]
    # --rescan reads every file again and finds nothing new
    rescan = imported(vault, "--rescan", str(folder))
    assert (rescan["unchanged"], rescan["turns"], rescan["sessions"]) == (0, 0, 0)


def test_other_options_read_the_file_again(realdata, tmp_path):
    vault = tmp_path / "v"
    source = str(realdata / CC / "4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl")
    imported(vault, source)
    assert imported(vault, source)["unchanged"] == 1
    assert imported(vault, "--client", "Acme Corp", source)["unchanged"] == 0  # another client: read again


def test_a_conversation_split_over_two_files_is_merged_even_when_one_of_them_is_unchanged(realdata, tmp_path):
    """The second file of one session id grows: the first, unchanged, is read with it — else the
    import would see a conversation without its first half and take its turns for rewound."""
    source = realdata / CC / "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    half = len(lines) // 2
    folder = tmp_path / "split"
    folder.mkdir()
    (folder / "a.jsonl").write_text("".join(lines[:half]), encoding="utf-8")
    (folder / "b.jsonl").write_text("".join(lines[half:]), encoding="utf-8")
    vault = tmp_path / "v"
    whole = imported(vault, str(folder))
    turns = json.loads(memo("--json", "prompt", "list", "--all", "--limit", "100", vault=vault).stdout)["total"]
    assert whole["turns"] == turns > 0
    last = next(r for r in map(json.loads, reversed(lines)) if r.get("sessionId"))
    with (folder / "b.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"type": "user", "sessionId": last["sessionId"], "uuid": "7f3c2a10-0000-4000-8000-0000000000b2",
                                 "timestamp": "2026-01-22T23:59:00.000Z", "cwd": last.get("cwd"),
                                 "message": {"role": "user", "content": "one more thing: the changelog"}}) + "\n")
    grown = imported(vault, str(folder))
    assert (grown["unchanged"], grown["turns"], grown["superseded"]) == (0, 1, 0)  # a.jsonl read with it
    after = json.loads(memo("--json", "prompt", "list", "--all", "--limit", "100", vault=vault).stdout)["total"]
    assert after == turns + 1


def test_a_session_moved_to_another_project_is_followed_there_by_the_next_import(realdata, tmp_path):
    """Moved with `memo session edit --to-project`, then its transcript grows: the new turn joins it
    in its new project; no second copy of the session appears where the import first put it."""
    source = tmp_path / "t.jsonl"
    shutil.copy(realdata / CC / "4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl", source)
    vault = tmp_path / "v"
    imported(vault, str(source))
    session = json.loads(memo("--json", "session", "show", "--all", vault=vault).stdout)["items"][0]
    memo("session", "edit", session["sessionId"], "--to-project", "realproj", vault=vault)
    last = next(r for r in map(json.loads, reversed(source.read_text(encoding="utf-8").splitlines()))
                if r.get("sessionId"))
    with source.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"type": "user", "sessionId": last["sessionId"], "uuid": "7f3c2a10-0000-4000-8000-0000000000c3",
                                 "timestamp": "2026-01-21T21:00:00.000Z", "cwd": last.get("cwd"),
                                 "message": {"role": "user", "content": "and the curry colour chart"}}) + "\n")
    again = imported(vault, str(source))
    assert (again["sessions"], again["turns"]) == (0, 1)
    sessions = json.loads(memo("--json", "session", "show", "--all", vault=vault).stdout)["items"]
    assert [(s["project"], s["sessionId"]) for s in sessions] == [("realproj", session["sessionId"])]
    found = json.loads(memo("--json", "prompt", "search", "chart", "--all", vault=vault).stdout)["items"]
    assert [(f["project"], f["sessionId"]) for f in found] == [("realproj", session["sessionId"])]


def test_a_file_rewritten_with_its_time_set_back_or_records_deleted_since_is_read_again(realdata, tmp_path):
    folder = tmp_path / "projects"
    shutil.copytree(realdata / CC, folder, ignore=shutil.ignore_patterns("subagents"))
    vault = tmp_path / "v"
    imported(vault, str(folder))
    # the same size, the old modification time: the change time still tells
    path = folder / "4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl"
    before = path.stat()
    path.write_bytes(path.read_bytes())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert imported(vault, str(folder))["unchanged"] == 1
    # a project's records deleted, the index rebuilt: its transcripts are imported again
    sessions = json.loads(memo("--json", "session", "show", "--all", vault=vault).stdout)["items"]
    shutil.rmtree(vault / "projects" / sessions[0]["project"])
    memo("reindex", vault=vault)
    again = imported(vault, str(folder))
    assert again["sessions"] >= 1 and again["unchanged"] < 2
    # a state file that is not a regular file is ignored, never read (a FIFO would block)
    state = vault / ".memo" / "import-state.json"
    state.unlink()
    os.mkfifo(state)
    assert imported(vault, str(folder))["unchanged"] == 0


def _checkpointed(realdata, tmp_path, monkeypatch, name: str):
    """A copy of the real transcript ``name`` (checkpoints kept from 1 kB on) and a vault it was
    imported into: ``(its path, the vault)``."""
    from memo_analytics.services.importers import resume

    monkeypatch.setattr(resume, "RESUME_FROM_BYTES", 1024)
    source = realdata / CC / name
    path = tmp_path / source.name
    path.write_bytes(source.read_bytes())
    vault = tmp_path / "v"
    return path, vault, imported(vault, str(path))


def test_a_grown_file_is_read_on_from_where_the_last_import_stopped(realdata, tmp_path, monkeypatch):
    """Issue 16 point 3: the appended line is all that is parsed; the turn is the one a whole
    read gives, and a file rewritten since (its first bytes changed) is read whole."""
    path, vault, first = _checkpointed(realdata, tmp_path, monkeypatch, "4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl")
    assert (first["resumed"], first["unchanged"]) == (0, 0) and first["turns"] > 0
    assert list((vault / ".memo" / "import-cache").glob("*.fold"))
    last = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    line = {"type": "user", "sessionId": last["sessionId"], "uuid": "7f3c2a10-0000-4000-8000-0000000000c3",
            "timestamp": "2026-01-21T21:10:00.000Z", "cwd": last.get("cwd"),
            "message": {"role": "user", "content": "and log every retry at debug level"}}
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
    ran = memo("import", "claude-code", str(path), vault=vault)
    assert "files 1 (1 read on from where the last import stopped), sessions 0, turns 1" in ran.stdout
    found = json.loads(memo("--json", "prompt", "search", "retry", "--all", vault=vault).stdout)["items"]
    assert [item["body"] for item in found] == ["and log every retry at debug level"]
    # the same vault imported from scratch holds the same turns
    fresh = tmp_path / "fresh"
    imported(fresh, "--rescan", str(path))
    listing = lambda v: [(i["id"], i["body"]) for i in  # noqa: E731
                         json.loads(memo("--json", "prompt", "list", "--all", "--limit", "500", vault=v).stdout)["items"]]
    assert listing(vault) == listing(fresh)
    # the first line rewritten in place (and a line added): read whole, nothing new
    data = path.read_bytes()
    with path.open("r+b") as handle:
        handle.write(data[:1].replace(b"{", b" "))
        handle.seek(0, os.SEEK_END)
        handle.write(b"\n")
    again = imported(vault, str(path))
    assert (again["resumed"], again["unchanged"], again["turns"]) == (0, 0, 0)


def test_the_import_state_never_holds_a_file_name_and_a_cut_transcript_says_what_it_superseded(realdata, tmp_path):
    """A folder named like a token stays out of ``.memo/import-state.json`` (it keeps digests of
    paths); a transcript cut short marks its lost turn superseded, and the line says so in those
    words (not "hook-captured")."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    folder = tmp_path / token
    folder.mkdir()
    source = realdata / CC / "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    path = folder / source.name
    path.write_bytes(source.read_bytes())
    vault = tmp_path / "v"
    first = imported(vault, str(path))
    state = (vault / ".memo" / "import-state.json").read_text(encoding="utf-8")
    assert token not in state, state
    assert json.loads(state)["files"]
    assert all(token not in e for e in first["errors"])
    # cut short before its last prompt: that turn is no longer in the transcript
    from memo_analytics.services.importers import claude_code
    from memo_analytics.services.importers.common import ImportOptions

    def prompts_in(text: str) -> int:
        probe = tmp_path / "probe.jsonl"
        probe.write_text(text, encoding="utf-8")
        return sum(len(t.prompts) for t in claude_code.parse(probe, ImportOptions()).transcripts)

    whole_text = path.read_text(encoding="utf-8")
    lines = whole_text.splitlines(keepends=True)
    whole = prompts_in("".join(lines))
    assert whole == first["turns"] >= 2
    while prompts_in("".join(lines)) == whole:
        lines.pop()
    path.write_text("".join(lines), encoding="utf-8")
    ran = memo("import", "claude-code", str(path), vault=vault)
    cut = json.loads(memo("--json", "import", "claude-code", "--rescan", str(path), vault=vault).stdout)
    assert cut["superseded"] == 0  # already marked by the run before
    assert "turn the transcript no longer holds marked superseded" in ran.stdout, ran.stdout
    assert "hook-captured" not in ran.stdout
    assert ("warning: 1 imported turn is no longer in the transcript (rewound, cut short or cleared) and no longer "
            "bills: their sessions end earlier; if a file was cut or cleared by mistake, put it back and import "
            "again — they come back") in ran.stderr
    # put back whole: the turn counts again, as it was — not "whose text the transcript changed" (an attacker)
    path.write_text(whole_text, encoding="utf-8")
    back = memo("import", "claude-code", str(path), vault=vault)
    assert "1 turn back in the transcript, counted again" in back.stdout and "text the transcript changed" \
        not in back.stdout, back.stdout
    assert json.loads(memo("--json", "import", "claude-code", "--rescan", str(path), vault=vault).stdout)[
        "restored"] == 0  # once


def test_a_conversation_over_two_files_counts_the_same_tokens_whichever_of_them_changed(realdata, tmp_path):
    """Both files hold the same prompts (a conversation copied on): merged in file order, the
    tokens are the clean import's also when only the second file grew and the first is read
    after it."""
    source = realdata / "claude-code-jsonl/d-kimuson-claude-code-viewer/mock-global-claude-dir/projects/sample-project/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    lines = source.read_bytes().split(b"\n")[:-1]
    folder = tmp_path / "dup"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(b"\n".join(lines[:20] + lines[430:]) + b"\n")
    (folder / "b.jsonl").write_bytes(b"\n".join(lines[:10] + lines[430:]) + b"\n")
    vault = tmp_path / "v"
    imported(vault, str(folder))
    last = next(json.loads(line) for line in reversed(lines) if b'"sessionId"' in line)
    with (folder / "b.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"type": "user", "sessionId": last["sessionId"], "uuid": "7f3c2a10-0000-4000-8000-0000000000e5",
                                 "timestamp": "2025-09-03T01:06:00.000Z", "cwd": last.get("cwd"),
                                 "message": {"role": "user", "content": "dup append"}}) + "\n")
    grown = imported(vault, str(folder))
    assert grown["turns"] == 1
    fresh = tmp_path / "fresh"
    imported(fresh, str(folder))

    def tokens(v) -> list:
        items = json.loads(memo("--json", "prompt", "list", "--all", "--limit", "500", vault=v).stdout)["items"]
        return sorted((i["id"], json.dumps(i.get("tokens"), sort_keys=True)) for i in items)

    assert tokens(vault) == tokens(fresh)
    cost = lambda v: json.loads(memo("--json", "activity", "--all", vault=v).stdout)["totalCostUsd"]  # noqa: E731
    assert cost(vault) == cost(fresh)


BIG = "claude-code-jsonl/d-kimuson-claude-code-viewer/mock-global-claude-dir/projects/sample-project/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"


def _listing(vault) -> list:
    items = json.loads(memo("--json", "prompt", "list", "--all", "--limit", "1000", vault=vault).stdout)["items"]
    return sorted((i["id"], i["project"], i.get("model"), json.dumps(i.get("tokens"), sort_keys=True)) for i in items)


def _prompt_line(session: str, cwd: str, at: str, text: str, uid: str) -> str:
    return json.dumps({"type": "user", "sessionId": session, "uuid": uid, "timestamp": at, "cwd": cwd,
                       "message": {"role": "user", "content": text}}) + "\n"


def test_the_same_file_spelled_another_way_is_read_on_and_merged_as_a_clean_import_does(realdata, tmp_path, monkeypatch):
    """A relative path first, an absolute one next: one file, one checkpoint; its transcripts are
    the file's as given now, so a conversation it shares with another file merges as in a clean
    import (found by a helper: the new interval went to the other file's project)."""
    lines = (realdata / BIG).read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(json.loads(line) for line in lines if '"sessionId"' in line)
    folder = tmp_path / "rel"
    folder.mkdir()
    (folder / "A.jsonl").write_text("".join(lines[:380]), encoding="utf-8")
    (folder / "B.jsonl").write_text(_prompt_line(first["sessionId"], "/other/Elsewhere", "2025-09-03T00:53:00.000Z",
                                                 "a note from elsewhere", "7f3c2a10-0000-4000-8000-0000000000f1"),
                                    encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    vault = tmp_path / "v"
    imported(vault, "rel/A.jsonl", "rel/B.jsonl")
    with (folder / "A.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(_prompt_line(first["sessionId"], first.get("cwd") or "/work/demo", "2025-09-03T05:00:00.000Z",
                                  "later that day", "7f3c2a10-0000-4000-8000-0000000000f2"))
    again = imported(vault, str(folder / "A.jsonl"), str(folder / "B.jsonl"))
    assert again["resumed"] == 1 and again["turns"] == 1
    fresh = tmp_path / "fresh"
    imported(fresh, str(folder / "A.jsonl"), str(folder / "B.jsonl"))
    assert _listing(vault) == _listing(fresh)


def test_renaming_a_file_of_a_conversation_changes_no_turn(realdata, tmp_path):
    """A copy of the first prompt with a small usage in a second file: whichever name sorts
    first, the turn keeps the tokens of the file that holds the conversation."""
    lines = (realdata / BIG).read_text(encoding="utf-8").splitlines(keepends=True)
    first_prompt = next(line for line in lines if '"type":"user"' in line.replace(" ", "") and "tool_result" not in line)
    record = json.loads(first_prompt)
    answer = {"type": "assistant", "sessionId": record["sessionId"], "uuid": "7f3c2a10-0000-4000-8000-0000000000f3",
              "timestamp": record["timestamp"], "message": {"id": "msg_copy", "role": "assistant", "model": "claude-x",
                                                            "usage": {"input_tokens": 1, "output_tokens": 1}}}
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "A.jsonl").write_text("".join(lines[:380]), encoding="utf-8")
    (folder / "B.jsonl").write_text(first_prompt + json.dumps(answer) + "\n", encoding="utf-8")
    vault = tmp_path / "v"
    imported(vault, str(folder))
    before = _listing(vault)
    (folder / "B.jsonl").rename(folder / "0-B.jsonl")
    imported(vault, str(folder))
    assert _listing(vault) == before
    fresh = tmp_path / "fresh"
    imported(fresh, str(folder))
    assert _listing(fresh) == before


def test_a_rescan_renews_a_damaged_checkpoint(realdata, tmp_path, monkeypatch):
    path, vault, _ = _checkpointed(realdata, tmp_path, monkeypatch, "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl")
    (fold,) = (vault / ".memo" / "import-cache").glob("*.fold")
    header, _, body = fold.read_bytes().partition(b"\n")
    state = json.loads(body)
    state[state.index("problems") + 1] = ["l", 10**6, 5]
    fold.write_bytes(header + b"\n" + json.dumps(state).encode())
    last = next(json.loads(line) for line in reversed(path.read_text(encoding="utf-8").splitlines()) if '"sessionId"' in line)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(_prompt_line(last["sessionId"], last.get("cwd") or "/w", "2026-01-22T23:50:00.000Z", "one", "u-f4"))
    grown = imported(vault, str(path))
    assert (grown["resumed"], grown["turns"]) == (0, 1)  # read whole: the damaged state is not used
    imported(vault, "--rescan", str(path))
    with path.open("a", encoding="utf-8") as handle:
        handle.write(_prompt_line(last["sessionId"], last.get("cwd") or "/w", "2026-01-22T23:55:00.000Z", "two", "u-f5"))
    assert imported(vault, str(path))["resumed"] == 1  # the rescan's checkpoint holds


_POOLED = """
import json, sys, threading
from pathlib import Path
from memo_analytics.config import Settings
from memo_analytics.services.importers import claude_code, common, resume
from memo_analytics.services.store import VaultStore
common.PARALLEL_FROM, resume.RESUME_FROM_BYTES = 1, 1024
assert threading.active_count() == 1  # else the files would be parsed in this process
store = VaultStore(Settings(vault_root=Path(sys.argv[1]), timezone="UTC"))
files = sorted(Path(sys.argv[2]).glob("*.jsonl"))
result = common.run_import(store, files, claude_code.parse, common.ImportOptions(), source="claude-code",
                           incremental=True)
store.close()
print(json.dumps(result.wire()))
"""


def test_parse_workers_hand_back_checkpoints_that_the_next_import_reads_on_from(realdata, tmp_path):
    """Many files are parsed in worker processes: the importer's reader goes to them and their
    checkpoints come back; the next import reads the grown file on from its checkpoint, and the
    turns equal a clean import's."""
    import subprocess
    import sys

    folder = tmp_path / "projects"
    shutil.copytree(realdata / CC, folder, ignore=shutil.ignore_patterns("subagents"))
    vault = tmp_path / "v"

    def pooled() -> dict:
        ran = subprocess.run([sys.executable, "-c", _POOLED, str(vault), str(folder)], capture_output=True, text=True,
                             env={**os.environ, "HOME": str(tmp_path / "home")}, timeout=300)
        assert ran.returncode == 0, ran.stderr
        return json.loads(ran.stdout)

    first = pooled()
    assert first["turns"] > 0 and len(list((vault / ".memo" / "import-cache").glob("*.fold"))) == 2
    path = folder / "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    last = next(json.loads(line) for line in reversed(path.read_text(encoding="utf-8").splitlines()) if '"sessionId"' in line)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(_prompt_line(last["sessionId"], last.get("cwd") or "/w", "2026-01-22T23:50:00.000Z",
                                  "pooled: one more", "7f3c2a10-0000-4000-8000-0000000000f6"))
    grown = pooled()
    assert (grown["resumed"], grown["unchanged"], grown["turns"]) == (1, 1, 1)
    fresh = tmp_path / "fresh"
    imported(fresh, str(folder))
    assert _listing(vault) == _listing(fresh)


def _conversation(session_id: str, text: str, at: str) -> str:
    lines = [{"type": "user", "sessionId": session_id, "uuid": f"{session_id}-u1", "timestamp": at, "cwd": "/w/app",
              "message": {"role": "user", "content": text}},
             {"type": "assistant", "sessionId": session_id, "uuid": f"{session_id}-a1", "parentUuid": f"{session_id}-u1",
              "timestamp": at.replace(":00.000Z", ":30.000Z"), "cwd": "/w/app",
              "message": {"role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "done"}],
                          "usage": {"input_tokens": 10, "output_tokens": 5}}}]
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_conversations_whose_ids_differ_only_in_case_are_two_sessions(tmp_path):
    """Session ids are lower case; two conversations whose ids differ only in case (``Ab12`` and
    ``ab12``) are two sessions — the one that came second gets the id with the hash of its own —
    with each its own prompt, in one import or in two, and a re-import finds nothing new."""
    folder = tmp_path / "projects"
    folder.mkdir()
    (folder / "one.jsonl").write_text(_conversation("Ab12Cd", "rename the fetcher", "2026-02-03T09:00:00.000Z"))
    (folder / "two.jsonl").write_text(_conversation("ab12cd", "add retries to the fetcher", "2026-02-04T14:00:00.000Z"))
    for vault, runs in ((tmp_path / "together", [[str(folder)]]),
                        (tmp_path / "apart", [[str(folder / "one.jsonl")], [str(folder / "two.jsonl")]])):
        summaries = [imported(vault, *files) for files in runs]
        assert sum(s["sessions"] for s in summaries) == 2 and sum(s["turns"] for s in summaries) == 2
        assert [s["skipped"] for s in summaries] == [0] * len(runs)
        sessions = json.loads(memo("--json", "session", "show", "--all", vault=vault).stdout)["items"]
        apart = hashlib.sha1(b"ab12cd").hexdigest()[:8]
        assert sorted(s["sessionId"] for s in sessions) == ["claude-code-ab12cd-1", f"claude-code-ab12cd-{apart}-1"]
        found = json.loads(memo("--json", "prompt", "search", "fetcher", "--all", vault=vault).stdout)["items"]
        assert sorted(item["body"] for item in found) == ["add retries to the fetcher", "rename the fetcher"]
        again = imported(vault, str(folder))
        assert (again["unchanged"], again["sessions"], again["turns"], again["skipped"]) == (2, 0, 0, 0)
        again = imported(vault, "--rescan", str(folder))
        assert (again["unchanged"], again["sessions"], again["turns"], again["skipped"]) == (0, 0, 0, 0)


def test_a_half_written_last_line_is_pending_not_skipped_and_taken_in_once_it_is_finished(tmp_path):
    """A transcript an agent is writing now may end in half a line (no newline yet): that line is
    not a bad line — not in ``skipped`` nor ``errors`` (a watcher would report one on every pass)
    but ``pending``, said in the summary — while a bad line inside the file is skipped and named;
    the next import, once the line is finished, takes its turn in. A file holding nothing but half
    a line says so."""
    folder = tmp_path / "projects"
    folder.mkdir()
    transcript = folder / "live.jsonl"
    finished = _prompt_line("live1", "/w/app", "2026-02-05T10:05:00.000Z", "now add the retry loop — é", "u2")
    cut = len(finished.encode("utf-8")) - 6  # inside the two bytes of "é": not even UTF-8 yet
    transcript.write_bytes((_conversation("live1", "rename the fetcher", "2026-02-05T10:00:00.000Z")
                            + "{not json\n").encode("utf-8") + finished.encode("utf-8")[:cut])
    vault = tmp_path / "v"
    first = imported(vault, str(folder))
    assert (first["sessions"], first["turns"], first["skipped"], first["pending"]) == (1, 1, 1, 1)
    assert [error.split(": ", 1)[1] for error in first["errors"]] == ["line 3: not JSON"]
    line = memo("import", "claude-code", "--rescan", str(folder), vault=vault)
    assert "skipped 1, 1 file with a last line still being written (no newline yet: taken in when it is finished)" \
        in line.stdout + line.stderr
    with transcript.open("ab") as handle:
        handle.write(finished.encode("utf-8")[cut:])
    second = imported(vault, str(folder))
    assert (second["sessions"], second["turns"], second["skipped"], second["pending"]) == (0, 1, 1, 0)
    assert [error.split(": ", 1)[1] for error in second["errors"]] == ["line 3: not JSON"]
    found = json.loads(memo("--json", "prompt", "search", "retry", "--all", vault=vault).stdout)["items"]
    assert [item["body"] for item in found] == ["now add the retry loop — é"]

    only = tmp_path / "only"
    only.mkdir()
    (only / "new.jsonl").write_text(finished[:40], encoding="utf-8")
    refused = memo("import", "claude-code", str(only), vault=vault, check=False)
    assert refused.returncode == 1
    assert "not a claude-code transcript (its only line is still being written: no newline, not JSON yet)" \
        in refused.stderr


def test_a_checkpoint_never_keeps_a_secret_and_the_file_is_then_read_whole(realdata, tmp_path, monkeypatch):
    """SPEC §2.4: a checkpoint lives in the vault's folder, so a file whose state holds text that
    secret redaction would change keeps none (the one kept before is removed): the secret is in no
    file of the vault, the turn is in redacted, and the next import reads the file whole."""
    path, vault, _ = _checkpointed(realdata, tmp_path, monkeypatch, "4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl")
    cache = vault / ".memo" / "import-cache"
    assert len(list(cache.glob("*.fold"))) == 1
    secret = "sk-ant-api03-" + "Qx7" * 31 + "AA"
    last = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    line = {"type": "user", "sessionId": last["sessionId"], "uuid": "7f3c2a10-0000-4000-8000-0000000000c4",
            "timestamp": "2026-01-21T21:12:00.000Z", "cwd": last.get("cwd"),
            "message": {"role": "user", "content": f"use the key {secret} for the retry test"}}
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
    grown = imported(vault, str(path))
    assert (grown["resumed"], grown["turns"]) == (1, 1)
    assert list(cache.glob("*.fold")) == []
    assert [p for p in vault.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()] == []
    found = json.loads(memo("--json", "prompt", "search", "retry test", "--all", vault=vault).stdout)["items"]
    assert len(found) == 1 and secret not in found[0]["body"] and "[REDACTED:" in found[0]["body"]
    again = imported(vault, str(path))
    assert (again["unchanged"], again["turns"]) == (1, 0)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({**line, "uuid": "7f3c2a10-0000-4000-8000-0000000000c5",
                                 "timestamp": "2026-01-21T21:14:00.000Z",
                                 "message": {"role": "user", "content": "and one more retry"}}) + "\n")
    whole = imported(vault, str(path))
    assert (whole["resumed"], whole["turns"]) == (0, 1)


def _two_turns_imported(tmp_path, session: str, first: str, second: str):
    """``(folder, transcript, vault)``: a conversation of two turns (10:00 and 10:05), imported."""
    folder = tmp_path / "projects"
    folder.mkdir()
    transcript = folder / "s.jsonl"
    transcript.write_text(_prompt_line(session, "/w/app", "2025-09-03T10:00:00.000Z", first, "u1")
                          + _prompt_line(session, "/w/app", "2025-09-03T10:05:00.000Z", second, "u2"),
                          encoding="utf-8")
    vault = tmp_path / "v"
    assert imported(vault, str(folder))["turns"] == 2
    return folder, transcript, vault


def test_a_line_stamped_before_the_first_takes_the_session_back_to_it_and_later_turns_still_come_in(tmp_path):
    """A clock set back (or a line written late) puts a line stamped 09:58 after turns of 10:00 and
    10:05 that are already imported: the session now begins at 09:58, as a clean import of the file
    gives, and the turns after it come in. It refused every later turn of the conversation, at
    every import, with advice that could not be followed (found by a helper)."""
    folder, transcript, vault = _two_turns_imported(tmp_path, "cb", "turn at ten", "turn at ten oh five")
    with transcript.open("a", encoding="utf-8") as handle:
        handle.write(_prompt_line("cb", "/w/app", "2025-09-03T09:58:00.000Z", "written late", "u3")
                     + _prompt_line("cb", "/w/app", "2025-09-03T10:10:00.000Z", "turn at ten past", "u4"))
    grown = imported(vault, str(folder))
    assert (grown["turns"], grown["skipped"], grown["errors"]) == (2, 0, [])
    fresh = tmp_path / "fresh"
    assert imported(fresh, str(folder))["turns"] == 4
    assert _listing(vault) == _listing(fresh)
    [session] = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)["sessions"]
    assert (session["startTime"], session["endTime"], session["durationMinutes"]) == (
        "2025-09-03T09:58:00.000Z", "2025-09-03T10:10:00.000Z", 12)
    [clean] = json.loads(memo("--json", "activity", "--all", vault=fresh).stdout)["sessions"]
    assert {k: session[k] for k in ("startTime", "endTime", "durationMinutes", "summary")} == {
        k: clean[k] for k in ("startTime", "endTime", "durationMinutes", "summary")}
    assert imported(vault, str(folder), "--rescan")["skipped"] == 0


def test_a_transcript_keeps_its_idle_gap_when_the_configs_changes(tmp_path):
    """Found by an integrator: after `memo config set idleGapMinutes 45` every transcript imported
    before was refused ("was imported with --idle-gap 30; re-import it with the same gap") — by
    `memo watch` on every pass, with no option to give — and its new turns were never imported.
    A transcript keeps the gap of its first import; new ones take the config's."""
    folder, transcript, vault = _two_turns_imported(tmp_path, "gap", "alpha one", "alpha two")
    with transcript.open("a", encoding="utf-8") as grown:
        grown.write(_prompt_line("gap", "/w/app", "2025-09-03T10:20:00.000Z", "alpha three", "u3"))
    other = folder / "new.jsonl"
    other.write_text(_prompt_line("new", "/w/app", "2025-09-04T09:00:00.000Z", "beta one", "n1")
                     + _prompt_line("new", "/w/app", "2025-09-04T09:40:00.000Z", "beta two", "n2"), encoding="utf-8")
    ran = memo("--json", "import", "claude-code", str(folder), vault=vault, env={"MEMO_IDLE_GAP_MINUTES": "45"})
    assert (json.loads(ran.stdout)["turns"], json.loads(ran.stdout)["skipped"]) == (3, 0), ran.stderr
    sessions = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)["sessions"]
    # one session each: the new one's 40-minute pause is within the config's 45 minutes
    assert sorted((s["startTime"], s["endTime"]) for s in sessions) == [
        ("2025-09-03T10:00:00.000Z", "2025-09-03T10:20:00.000Z"), ("2025-09-04T09:00:00.000Z", "2025-09-04T09:40:00.000Z")]
    gaps = {f.name: re.search(r"(?m)^idleGapMinutes: (\d+)$", f.read_text(encoding="utf-8")).group(1)
            for f in vault.glob("projects/*/sessions/*.md")}
    assert sorted(gaps.values()) == ["30", "45"], gaps  # the first transcript's own; the config's for the new one
    listed = json.loads(memo("--json", "prompt", "list", "--all", vault=vault).stdout)["items"]
    assert "alpha three" in {t["body"] for t in listed}


def test_import_auto_exits_non_zero_when_a_conversation_is_refused(tmp_path):
    """Found by a breaker: `memo import claude-code DIR` exited 1 over a refused conversation,
    `memo import auto DIR` 0 for the same line — a cron job never noticed."""
    folder, transcript, vault = _two_turns_imported(tmp_path, "gap", "alpha one", "alpha two")
    ran = memo("import", "auto", "--idle-gap", "10", str(folder), vault=vault, check=False)
    assert ran.returncode == 1, (ran.stdout, ran.stderr)
    assert ran.stderr.strip().splitlines()[-1] == \
        "error: 1 conversation refused (the lines above say why); the rest was imported"
    assert "import it with --idle-gap 30" in ran.stderr
    # so does `memo import SOURCE`, when another conversation came in (it exited 0: found by a breaker)
    (folder / "other.jsonl").write_text(_prompt_line("other", "/w/app", "2025-09-05T10:00:00.000Z", "beta", "o1"),
                                        encoding="utf-8")
    mixed = memo("import", "claude-code", "--idle-gap", "10", str(folder), vault=vault, check=False)
    assert mixed.returncode == 1 and "sessions 1, turns 1" in mixed.stdout, (mixed.stdout, mixed.stderr)
    assert mixed.stderr.strip().splitlines()[-1] == \
        "error: 1 conversation refused (the lines above say why); the rest was imported"


def test_an_import_that_only_refused_exits_non_zero_and_a_rewritten_turn_is_said(tmp_path):
    """A re-import with another idle gap is refused whole: the summary says so and the command
    exits 1 (it exited 0 with ``sessions 0, turns 0, skipped 1``). A transcript rewritten in
    place with other text says so in its line (it was in ``--json`` only)."""
    folder, transcript, vault = _two_turns_imported(tmp_path, "gap", "alpha one", "alpha two")
    refused = memo("import", "claude-code", "--rescan", "--idle-gap", "10", str(folder), vault=vault, check=False)
    assert refused.returncode == 1
    assert "import it with --idle-gap 30 (a transcript keeps the gap of its first import)" in refused.stderr
    assert refused.stderr.strip().splitlines()[-1] == "error: nothing imported: 1 conversation refused (the lines above say why)"
    assert "files 1, sessions 0, turns 0, skipped 1" in refused.stdout
    transcript.write_text(_prompt_line("gap", "/w/app", "2025-09-03T10:00:00.000Z", "bravo one", "u1")
                          + _prompt_line("gap", "/w/app", "2025-09-03T10:05:00.000Z", "bravo two", "u2"),
                          encoding="utf-8")
    rewritten = memo("import", "claude-code", str(folder), vault=vault)
    assert rewritten.returncode == 0
    assert "2 turns whose text the transcript changed, rewritten" in rewritten.stdout


def _answer_line(session: str, cwd: str, at: str, uid: str, input_tokens: int, output_tokens: int) -> str:
    return json.dumps({"type": "assistant", "sessionId": session, "uuid": uid, "timestamp": at, "cwd": cwd,
                       "message": {"role": "assistant", "model": "claude-sonnet-4-5-20250929",
                                   "content": [{"type": "text", "text": "Done."}],
                                   "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                                             "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}}) + "\n"


def test_a_turn_whose_text_the_transcript_changed_has_the_tokens_of_the_answer_there_now(tmp_path):
    """Found by a tester: a turn rewritten (the conversation rewound, another prompt typed there)
    kept the tokens of the earlier prompt's answer, gone from the file: the cost differed from a
    clean import of the same file. It has the tokens the transcript gives it now (none yet)."""
    folder = tmp_path / "projects"
    folder.mkdir()
    transcript = folder / "s.jsonl"
    first = (_prompt_line("tk", "/w/app", "2025-09-03T10:00:00.000Z", "alpha one", "u1")
             + _answer_line("tk", "/w/app", "2025-09-03T10:01:00.000Z", "a1", 1000, 200))
    transcript.write_text(first + _prompt_line("tk", "/w/app", "2025-09-03T10:05:00.000Z", "alpha two", "u2")
                          + _answer_line("tk", "/w/app", "2025-09-03T10:06:00.000Z", "a2", 90000, 8000),
                          encoding="utf-8")
    vault, fresh = tmp_path / "v", tmp_path / "fresh"
    assert imported(vault, str(folder))["turns"] == 2
    transcript.write_text(first + _prompt_line("tk", "/w/app", "2025-09-03T10:05:00.000Z", "bravo two", "u3"),
                          encoding="utf-8")
    assert imported(vault, str(folder))["revised"] == 1
    imported(fresh, str(folder))

    def figures(root) -> tuple:
        [session] = json.loads(memo("--json", "activity", "--all", vault=root).stdout)["sessions"]
        turns = json.loads(memo("--json", "prompt", "list", "--all", "--sort", "date-asc", vault=root).stdout)["items"]
        return session["costUsd"], session["tokens"], [(t["body"], t.get("tokens")) for t in turns]

    assert figures(vault) == figures(fresh)
    assert figures(vault)[2][1] == ("bravo two", None)


def test_a_prompt_stamped_before_the_imported_work_comes_in_apart_and_later_turns_come_in(tmp_path):
    """Found by a tester: a line appended with its clock set back (to 1970, or days) opened a work
    interval before the imported ones, which would renumber them: the whole conversation was
    refused on every import (and by ``memo watch`` on every change), each later turn lost. Such
    prompts come in as sessions of their own (nothing of the file lost, none renumbered); the
    others come in as before, the same on every import."""
    folder, transcript, vault = _two_turns_imported(tmp_path, "early", "alpha one", "alpha two")
    with transcript.open("a", encoding="utf-8") as grown:
        grown.write(_prompt_line("early", "/w/app", "1970-01-01T00:00:00.000Z", "dead clock", "u3")
                    + _prompt_line("early", "/w/app", "2025-09-01T10:00:00.000Z", "days before", "u4")
                    + _prompt_line("early", "/w/app", "2025-09-03T10:09:00.000Z", "real prompt after", "u5"))
    for args, turns in (((), 3), (("--rescan",), 0)):
        ran = memo("--json", "import", "claude-code", str(folder), *args, vault=vault, check=False)
        assert ran.returncode == 0, ran.stderr
        result = json.loads(ran.stdout)
        assert (result["turns"], result["skipped"], result["errors"]) == (turns, 0, [])
    listed = json.loads(memo("--json", "prompt", "list", "--all", "--sort", "date-asc", vault=vault).stdout)["items"]
    assert [i["body"] for i in listed] == ["dead clock", "days before", "alpha one", "alpha two", "real prompt after"]
    assert [i["sessionId"] for i in listed][:2] == ["claude-code-early-before-20250903t100000z-1",
                                                     "claude-code-early-before-20250903t100000z-2"]
    sessions = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)["sessions"]
    assert {s["sessionId"]: s["durationMinutes"] for s in sessions}["claude-code-early-1"] == 9


def test_an_earlier_part_imported_with_the_later_file_grown_loses_none_of_its_prompts(tmp_path):
    """Found by a breaker: the earlier file grown, both files read together (as `memo import auto`
    and `memo watch` meet them), the earlier file's new prompt was left out for good ("left out …
    a clean import takes it in"), its checkpoint past it; a re-import of both said prompts were
    left out that the vault held."""
    folder = tmp_path / "both"
    folder.mkdir()
    morning, afternoon = folder / "a.jsonl", folder / "b.jsonl"
    afternoon.write_text(_prompt_line("conv", "/w/app", "2025-09-03T14:00:00.000Z", "afternoon one", "b1")
                         + _answer_line("conv", "/w/app", "2025-09-03T14:20:00.000Z", "b1a", 10, 5), encoding="utf-8")
    vault = tmp_path / "v"
    imported(vault, str(afternoon), "--project", "app")
    morning.write_text(_prompt_line("conv", "/w/app", "2025-09-03T10:00:00.000Z", "morning one", "a1")
                       + _answer_line("conv", "/w/app", "2025-09-03T10:20:00.000Z", "a1a", 10, 5), encoding="utf-8")
    imported(vault, str(morning), "--project", "app")
    with morning.open("a", encoding="utf-8") as grown:
        grown.write(_prompt_line("conv", "/w/app", "2025-09-03T10:55:00.000Z", "morning appended", "a2")
                    + _answer_line("conv", "/w/app", "2025-09-03T11:05:00.000Z", "a2a", 10, 5))
    for args in ((), ("--rescan",)):
        result = imported(vault, str(folder), *args, "--project", "app")
        assert (result["skipped"], result["errors"]) == (0, []), result
    listed = json.loads(memo("--json", "prompt", "list", "--all", "--sort", "date-asc", vault=vault).stdout)["items"]
    assert [i["body"] for i in listed] == ["morning one", "morning appended", "afternoon one"]
    clean = tmp_path / "clean"
    imported(clean, str(folder), "--project", "app")
    totals = [json.loads(memo("--json", "activity", "--all", vault=v).stdout)["totalDurationMinutes"]
              for v in (vault, clean)]
    assert totals[0] == totals[1], totals


def test_an_earlier_part_of_a_conversation_in_another_file_imported_after_the_later_one_comes_in(tmp_path):
    """Found by a breaker: a conversation in two files, the later imported first — the earlier
    file's prompts were left out for good (50 of 90 minutes missing, whatever was imported again;
    before, the file was refused). The earlier part comes in as sessions of its own, the same on
    every import; the vault's totals are those of a clean import of both files."""
    def part(folder: Path, lines: list[tuple[str, str, str]]) -> Path:
        folder.mkdir(parents=True)
        text = ""
        for n, (asked, answered, body) in enumerate(lines):
            text += _prompt_line("conv", "/w/app", asked, body, f"{folder.name}-u{n}")
            text += _answer_line("conv", "/w/app", answered, f"{folder.name}-a{n}", 10, 5)
        (folder / f"{folder.name}.jsonl").write_text(text, encoding="utf-8")
        return folder

    morning = part(tmp_path / "a", [("2025-09-03T10:00:00.000Z", "2025-09-03T10:20:00.000Z", "morning one"),
                                     ("2025-09-03T10:25:00.000Z", "2025-09-03T10:50:00.000Z", "morning two")])
    afternoon = part(tmp_path / "b", [("2025-09-03T14:00:00.000Z", "2025-09-03T14:20:00.000Z", "afternoon one"),
                                       ("2025-09-03T14:25:00.000Z", "2025-09-03T14:40:00.000Z", "afternoon two")])
    vault = tmp_path / "v"
    imported(vault, str(afternoon), "--project", "app")
    result = imported(vault, str(morning), "--project", "app")
    assert (result["sessions"], result["turns"], result["skipped"], result["errors"]) == (1, 2, 0, [])
    for again in ((str(morning), str(afternoon), "--rescan"), (str(morning),)):
        assert imported(vault, *again, "--project", "app")["turns"] == 0
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    clean = json.loads(memo("--json", "activity", "--all", vault=tmp_path / "clean").stdout) \
        if imported(tmp_path / "clean", str(morning), str(afternoon), "--project", "app") else None
    assert (report["totalDurationMinutes"], report["totalPrompts"]) == (90, 4)
    assert (clean["totalDurationMinutes"], clean["totalPrompts"]) == (90, 4)
    listed = json.loads(memo("--json", "prompt", "list", "--all", "--sort", "date-asc", vault=vault).stdout)["items"]
    assert [i["body"] for i in listed] == ["morning one", "morning two", "afternoon one", "afternoon two"]
    assert listed[0]["sessionId"] == "claude-code-conv-before-20250903t140000z-1"


def test_a_line_stamped_in_year_1_or_9999_is_left_out_and_the_other_turns_are_kept(tmp_path):
    """Such a line refused the whole conversation at the session's start (``Invalid startTime
    date``) or lost the turns after it; it is now one skipped line, named with its number."""
    folder = tmp_path / "projects"
    folder.mkdir()
    (folder / "s.jsonl").write_text(
        _prompt_line("ts", "/w/app", "0001-01-01T00:00:00Z", "from year one", "u0")
        + _prompt_line("ts", "/w/app", "2025-09-03T10:00:00.000Z", "turn at ten", "u1")
        + _prompt_line("ts", "/w/app", "9999-12-31T23:00:00Z", "from the far future", "u2")
        + _prompt_line("ts", "/w/app", "2025-09-03T10:05:00.000Z", "turn at ten oh five", "u3"), encoding="utf-8")
    result = imported(tmp_path / "v", str(folder))
    assert (result["sessions"], result["turns"], result["skipped"]) == (1, 2, 2)
    assert [e.split(": ", 1)[1] for e in result["errors"]] == [
        "line 1: unreadable or out-of-range timestamp '0001-01-01T00:00:00Z' (a record's instant lies in 1970–9000)",
        "line 3: unreadable or out-of-range timestamp '9999-12-31T23:00:00Z' (a record's instant lies in 1970–9000)"]


def test_a_file_of_one_line_stamped_out_of_range_says_why_its_line_was_left_out(tmp_path):
    """Found by an attacker: said as "no line holds a Claude Code record" — it does, of year 9999."""
    folder = tmp_path / "projects"
    folder.mkdir()
    (folder / "s.jsonl").write_text(_prompt_line("ts", "/w/app", "9999-12-31T23:00:00Z", "far", "u0"), encoding="utf-8")
    ran = memo("import", "claude-code", str(folder), vault=tmp_path / "v", check=False)
    assert "line 1: unreadable or out-of-range timestamp '9999-12-31T23:00:00Z'" in ran.stderr
    assert "no line holds a Claude Code record" not in ran.stderr
    # found by an attacker: it said "sessions 0, turns 0, skipped 1" and exited 0 — a command that
    # did nothing says so and exits non-zero
    assert ran.returncode == 1
    assert ran.stderr.strip().splitlines()[-1] == "error: nothing imported: 1 line left out (the lines above say why)"


def test_a_line_stamped_in_the_future_keeps_every_later_turn_in_its_own_session(tmp_path):
    """Found by an attacker: a prompt stamped 2099 (within the record range, beyond the clock) took
    every later prompt of the file into its own interval, refused as in the future: the import
    said "skipped 1" and kept a session of 1 turn, the 20 real ones lost. Each prompt goes to the
    interval its own time lies in; only the future one is left out."""
    folder = tmp_path / "projects"
    folder.mkdir()
    lines = _prompt_line("fut", "/w/app", "2025-09-03T10:00:00.000Z", "turn at ten", "u0")
    lines += _prompt_line("fut", "/w/app", "2099-01-01T00:00:00.000Z", "from 2099", "u-future")
    lines += "".join(_prompt_line("fut", "/w/app", f"2025-09-03T10:{2 * n + 2:02d}:00.000Z", f"turn {n}", f"u{n + 1}")
                     for n in range(20))
    (folder / "s.jsonl").write_text(lines, encoding="utf-8")
    result = imported(tmp_path / "v", str(folder))
    assert (result["sessions"], result["turns"], result["skipped"]) == (1, 21, 1)
    [session] = json.loads(memo("--json", "activity", "--all", vault=tmp_path / "v").stdout)["sessions"]
    assert (session["startTime"], session["durationMinutes"]) == ("2025-09-03T10:00:00.000Z", 40)


def test_a_path_never_to_be_captured_is_in_no_summary_index_or_view_of_an_import(tmp_path):
    """MEMO_CAPTURE_IGNORE replaced the path in the turn's text, but the session's summary (made
    from the first prompts) kept it — in the session file, SESSIONS.md and the search index."""
    folder = tmp_path / "projects"
    folder.mkdir()
    (folder / "s.jsonl").write_text(
        _prompt_line("ign", "/w/app", "2025-09-03T10:00:00.000Z", "look at config/prod.yaml and fix it", "u1"),
        encoding="utf-8")
    vault = tmp_path / "v"
    env = {"MEMO_CAPTURE_IGNORE": '["config/prod.yaml"]'}
    assert imported(vault, str(folder), env=env)["turns"] == 1
    holding = [p.relative_to(vault) for p in vault.rglob("*") if p.is_file() and p.suffix in (".md", ".sqlite")
               and b"prod.yaml" in p.read_bytes()]
    assert holding == []
    [session] = json.loads(memo("--json", "activity", "--all", vault=vault, env=env).stdout)["sessions"]
    assert session["summary"] == "look at [IGNORED PATH] and fix it"


def test_a_symbolic_link_loop_is_named_as_one(tmp_path):
    loop = tmp_path / "loop.jsonl"
    os.symlink(loop, loop)
    ran = memo("import", "claude-code", str(loop), vault=tmp_path / "v", check=False)
    assert (ran.returncode, ran.stderr.strip()) == (
        1, f"error: Invalid path: {loop} is a symbolic link that leads nowhere (a loop, or its target is gone)")


def test_a_session_imported_as_its_transcript_grew_is_described_as_a_clean_import_describes_it(realdata, tmp_path):
    """An import made while the conversation was young described its session by its first prompt;
    the title Claude Code writes later never reached it, so a watched session's timesheet line
    differed from a clean import's (found by a helper). The summary an import gave is renewed as
    the transcript grows — never one a person wrote since."""
    source = next(realdata.rglob("0ccf1a04*.jsonl"))
    data = source.read_bytes()
    folder = tmp_path / "projects"
    folder.mkdir()
    grown = folder / source.name
    ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
    vault = tmp_path / "v"
    for share in (0.2, 0.5, 0.8):
        grown.write_bytes(data[:ends[int(len(ends) * share)]])
        imported(vault, str(folder))
    grown.write_bytes(data)
    imported(vault, str(folder))
    fresh = tmp_path / "fresh"
    imported(fresh, str(folder))

    def summaries(root):
        report = json.loads(memo("--json", "activity", "--all", vault=root).stdout)
        return {s["sessionId"]: s["summary"] for s in report["sessions"]}

    assert summaries(vault) == summaries(fresh)
    first = min(summaries(vault))
    memo("session", "edit", first, "--summary", "Poems for the team offsite", vault=vault)
    with grown.open("ab") as handle:
        handle.write(data[ends[-2]:])  # the last line once more: the file grew
    imported(vault, str(folder))
    assert summaries(vault)[first] == "Poems for the team offsite"


def test_a_pipe_named_like_a_transcript_inside_a_folder_is_named_not_passed_over_in_silence(tmp_path):
    folder, _, vault = _two_turns_imported(tmp_path, "fifo", "first", "second")
    os.mkfifo(folder / "stuck.jsonl")
    os.symlink(tmp_path / "gone.jsonl", folder / "dangling.jsonl")
    os.symlink(folder / "loop2.jsonl", folder / "loop1.jsonl")  # found by a tester: links in a loop said nothing
    os.symlink(folder / "loop1.jsonl", folder / "loop2.jsonl")
    ran = memo("import", "claude-code", str(folder), vault=vault)
    assert ran.returncode == 0
    left = sorted(line for line in ran.stderr.splitlines() if line.startswith("left out: "))
    assert left == [f"left out: {folder / name}: not a regular file (a pipe, a device or a link to nothing): not read"
                    for name in ("dangling.jsonl",)] + [
        f"left out: {folder / name}: not read (Too many levels of symbolic links)" for name in ("loop1.jsonl",
                                                                                             "loop2.jsonl")] + [
        f"left out: {folder / 'stuck.jsonl'}: not a regular file (a pipe, a device or a link to nothing): not read"]


def test_times_a_person_corrected_are_kept_when_the_transcript_grows_and_is_read_again(tmp_path):
    """``memo session edit --start/--end`` marks the session ``timesEdited``: a later import of its
    grown transcript takes in the new turn but neither refuses the moved start nor puts the end
    back where the transcript has it."""
    folder, transcript, vault = _two_turns_imported(tmp_path, "te", "turn at ten", "turn at ten oh five")
    sid = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)["sessions"][0]["sessionId"]
    memo("session", "edit", sid, "--start", "2025-09-03T09:30:00Z", "--end", "2025-09-03T11:00:00Z", vault=vault)
    with transcript.open("a", encoding="utf-8") as handle:
        handle.write(_prompt_line("te", "/w/app", "2025-09-03T10:10:00.000Z", "turn at ten past", "u3"))
    grown = imported(vault, str(folder))
    assert (grown["turns"], grown["skipped"], grown["errors"]) == (1, 0, [])
    [session] = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)["sessions"]
    assert (session["startTime"], session["endTime"], session["durationMinutes"]) == (
        "2025-09-03T09:30:00.000Z", "2025-09-03T11:00:00.000Z", 90)
    assert imported(vault, str(folder), "--rescan")["errors"] == []


def test_a_file_imported_alone_is_read_with_the_imported_file_beside_it_of_its_conversation(realdata, tmp_path):
    """``memo import claude-code b.jsonl``, then ``… a.jsonl`` — two files of one conversation,
    each given alone: the second made the turn only the first holds look cut (superseded, the
    session shortened) and a later import of the folder found both unchanged (found by a helper).
    A file given alone is now read with the files beside it an import already took in."""
    full = next((realdata / "claude-code-jsonl" / "d-kimuson-claude-code-viewer" / "mock-global-claude-dir" /
                 "projects" / "sample-project").glob("fe5e1c67-*.jsonl"))
    folder = tmp_path / "projects"
    folder.mkdir()
    lines = full.read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "a.jsonl").write_text("".join(lines[:80]), encoding="utf-8")
    (folder / "b.jsonl").write_text("".join(lines), encoding="utf-8")
    vault, clean = tmp_path / "v", tmp_path / "clean"
    imported(clean, str(folder))
    imported(vault, str(folder / "b.jsonl"))
    second = imported(vault, str(folder / "a.jsonl"))
    assert (second["superseded"], second["files"]) == (0, 2)
    assert _listing(vault) == _listing(clean)


def test_a_conversation_id_shaped_like_a_token_stays_out_of_the_import_state(realdata, tmp_path):
    """The session became ``claude-code-redacted-…`` but ``import-state.json`` kept the raw id
    among the file's transcripts (found by a helper): it keeps their digests now, and a
    conversation over two files is still matched through them."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    source = realdata / CC / "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    folder = tmp_path / "projects"
    folder.mkdir()
    text = source.read_text(encoding="utf-8").replace("0ccf1a04-1b4c-43b6-8aa5-79e41db43a68", token)
    (folder / "a.jsonl").write_text(text, encoding="utf-8")
    vault = tmp_path / "v"
    assert imported(vault, str(folder))["sessions"] >= 1
    state = (vault / ".memo" / "import-state.json").read_text(encoding="utf-8")
    assert token not in state and json.loads(state)["files"]
    assert not [p for p in vault.rglob("*") if p.is_file() and token.encode() in p.read_bytes()]


CODEX = "codex-rollouts/7567491-Feishu_ClaudeCode/.codex/sessions/2025/11/28"


def _turns(vault) -> list[tuple]:
    listed = json.loads(memo("--json", "prompt", "list", "--all", "--limit", "1000", vault=vault).stdout)["items"]
    return sorted((t["sessionId"], t["turn"], t["status"], t["created"], t["body"]) for t in listed)


def _sessions(vault) -> list[tuple]:
    listed = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)["sessions"]
    return sorted((s["sessionId"], s["startTime"], s["endTime"], s["durationMinutes"]) for s in listed)


def _imported_rollout(realdata, tmp_path) -> tuple:
    """``(folder, path, vault, lines, fifth)``: the real Codex rollout copied into a folder of its
    own and imported (23 turns), its lines, and the index of the line before its fifth prompt."""
    [source] = (realdata / CODEX).glob("rollout-*.jsonl")
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = folder / source.name
    path.write_bytes(source.read_bytes())
    vault = tmp_path / "v"
    assert json.loads(memo("--json", "import", "codex", str(folder), vault=vault).stdout)["turns"] == 23
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    fifth = [n for n, line in enumerate(lines) if '"user_message"' in line][4] - 1  # its response_item line
    return folder, path, vault, lines, fifth


def test_a_rotated_codex_rollout_goes_on_after_the_turns_it_no_longer_holds(realdata, tmp_path):
    """Found by a new user: a rollout renamed aside and a new file going on with the same session
    (its first turns only in the old one) rewrote turn 1 with the new file's first prompt, shifted
    every turn and superseded the last four. For an agent that only appends (Codex, Claude Code)
    a file that lost its beginning was rotated or cut from the top: the turns before its first
    prompt stay as recorded, its own keep their numbers, and what it adds numbers on after them."""
    folder, path, vault, lines, fifth = _imported_rollout(realdata, tmp_path)
    before_turns, before_sessions = _turns(vault), _sessions(vault)
    path.rename(folder / (path.name + ".1"))  # rotated aside
    path.write_text("".join(lines[:2] + lines[fifth:]), encoding="utf-8")  # the session goes on in a new file
    ran = json.loads(memo("--json", "import", "codex", str(folder), vault=vault).stdout)
    assert (ran["turns"], ran["superseded"], ran["revised"], ran["skipped"]) == (0, 0, 0, 0), ran
    assert (_turns(vault), _sessions(vault)) == (before_turns, before_sessions)
    last = json.loads(lines[-1])["timestamp"]
    later = last[:11] + "23:59:00.000Z"  # the same evening, after a pause: a new work interval
    grown = {"timestamp": later, "type": "event_msg",
             "payload": {"type": "user_message", "message": "after the rotation", "images": []}}
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(grown) + "\n")
    ran = json.loads(memo("--json", "import", "codex", str(folder), vault=vault).stdout)
    assert (ran["turns"], ran["sessions"], ran["superseded"], ran["revised"]) == (1, 1, 0, 0), ran
    after = _turns(vault)
    assert after[:-1] == before_turns and after[-1][1:] == (1, "recorded", later, "after the rotation")
    assert after[-1][0].endswith("-2")  # the conversation's next work interval


def test_a_codex_rollout_cut_above_its_session_meta_is_still_its_conversation(realdata, tmp_path):
    """Found by an attacker: a rollout cut from the top, its ``session_meta`` line with it, was
    read as a new conversation named after the file: its last turns recorded a second time,
    billable (70 minutes became 122). The rollout's file name carries the conversation's id
    (``rollout-<time>-<id>.jsonl``): the cut file goes on as the same conversation."""
    folder, path, vault, lines, fifth = _imported_rollout(realdata, tmp_path)
    before_turns, before_sessions = _turns(vault), _sessions(vault)
    assert '"session_meta"' not in "".join(lines[fifth:])
    path.write_text("".join(lines[fifth:]), encoding="utf-8")
    ran = json.loads(memo("--json", "import", "codex", str(folder), vault=vault).stdout)
    assert (ran["turns"], ran["sessions"], ran["superseded"], ran["revised"]) == (0, 0, 0, 0), ran
    assert (_turns(vault), _sessions(vault)) == (before_turns, before_sessions)


def test_a_claude_code_transcript_cut_from_the_top_takes_its_next_prompt(realdata, tmp_path):
    """Found by a new user: a transcript whose first half was cut away (kept short by hand) was
    refused for good ("work interval 1 starts at … but was imported starting …") — its next
    prompt was never recorded."""
    source = realdata / CC / "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    folder = tmp_path / "projects"
    folder.mkdir()
    path = folder / source.name
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines), encoding="utf-8")
    vault = tmp_path / "v"
    first = imported(vault, str(folder))
    before_turns, before_sessions = _turns(vault), _sessions(vault)
    assert first["turns"] >= 3
    assert len(before_sessions) == 2  # two work intervals: the cut keeps the second
    second = next(n for n, line in enumerate(lines) if json.loads(line).get("timestamp", "") >= before_sessions[1][1])
    path.write_text("".join(lines[second:]), encoding="utf-8")  # cut: the first work interval is gone
    cut = imported(vault, str(folder))
    assert (cut["turns"], cut["superseded"], cut["revised"], cut["skipped"]) == (0, 0, 0, 0), cut
    assert (_turns(vault), _sessions(vault)) == (before_turns, before_sessions)
    last = next(record for record in map(json.loads, reversed(lines)) if "sessionId" in record)
    line = {"type": "user", "sessionId": last["sessionId"], "uuid": "7f3c2a10-0000-4000-8000-000000000002",
            "parentUuid": last.get("uuid"), "timestamp": last["timestamp"][:11] + "23:59:00.000Z",
            "cwd": last.get("cwd"), "message": {"role": "user", "content": "the next prompt, after the cut"}}
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
    grown = imported(vault, str(folder))
    assert (grown["turns"], grown["skipped"], grown["superseded"], grown["revised"]) == (1, 0, 0, 0), grown
    assert _turns(vault)[:len(before_turns)] == before_turns
    assert [t[4] for t in _turns(vault)].count("the next prompt, after the cut") == 1


def test_a_turn_imported_before_its_answer_takes_the_model_and_tokens_the_answer_brings(realdata, tmp_path):
    """Found by an operator: Claude Code writes the prompt's line before the answer that names the
    model, so a turn ``memo watch`` took in between had no model — its tokens came with the next
    import, its model never did: no price, AI cost 0. Imported line by line, each turn ends as a
    clean import of the whole file records it (the two-model turn's split too)."""
    for name in ("4b2030ed", "0ccf1a04"):
        source = next(realdata.rglob(f"{name}*.jsonl"))
        lines = source.read_bytes().splitlines(keepends=True)
        folder = tmp_path / name / "projects"
        folder.mkdir(parents=True)
        grown, vault, fresh = folder / source.name, tmp_path / name / "v", tmp_path / name / "fresh"
        step = max(1, len(lines) // 12)
        for end in [*range(1, len(lines), step), len(lines)]:
            grown.write_bytes(b"".join(lines[:end]))
            memo("import", "claude-code", str(folder), vault=vault, check=False)  # its first lines: no turn yet
        imported(fresh, str(folder))

        def turns(root):
            items = json.loads(memo("--json", "prompt", "list", "--all", "--limit", "500", vault=root).stdout)["items"]
            return {i["id"]: (i.get("model"), i.get("tokens"), i.get("tokensByModel")) for i in items}

        def cost(root):
            report = json.loads(memo("--json", "activity", "--all", vault=root).stdout)
            return report["totalCostUsd"], report["costByModel"], {s["sessionId"]: s.get("model") for s in report["sessions"]}

        assert turns(vault) == turns(fresh)
        assert any(model for model, _, _ in turns(vault).values())
        assert cost(vault) == cost(fresh)


def test_an_end_written_into_a_session_file_by_hand_is_kept_by_the_next_import(tmp_path):
    """Found by an attacker: an imported session's endTime and durationMinutes corrected in its
    file (09:12 → 12:00, 180 minutes) were indexed and billed — and the next import (a rescan,
    or the transcript growing) put the transcript's end back without a word. memo writes the end
    it worked out beside it (``computedEnd``): an end that differs was a person's, and is kept as
    an end ``memo session edit`` corrected is. A session nobody edited still follows its file."""
    source = tmp_path / "t" / "s1.jsonl"
    source.parent.mkdir()
    lines = []
    for i in range(3):
        lines.append(json.dumps({"type": "user", "sessionId": "s1", "cwd": "/tmp/alpha", "uuid": f"u{i}",
                                 "timestamp": f"2026-03-02T09:{i * 5:02d}:00.000Z",
                                 "message": {"role": "user", "content": f"prompt {i}"}}))
    source.write_text("\n".join(lines) + "\n")
    vault, other = tmp_path / "v", tmp_path / "other"
    for root in (vault, other):
        imported(root, str(source))
    edited = vault / "projects/alpha/sessions/session-claude-code-s1-1.md"
    text = edited.read_text()
    assert "computedEnd: '2026-03-02T09:10:00.000Z'" in text
    edited.write_text(text.replace("endTime: '2026-03-02T09:10:00.000Z'", "endTime: '2026-03-02T12:00:00.000Z'")
                      .replace("durationMinutes: 10", "durationMinutes: 180"))
    imported(vault, str(source), "--rescan")
    with source.open("a") as handle:  # the transcript grows, within the idle gap
        handle.write(json.dumps({"type": "user", "sessionId": "s1", "cwd": "/tmp/alpha", "uuid": "u9",
                                 "timestamp": "2026-03-02T09:20:00.000Z",
                                 "message": {"role": "user", "content": "one more"}}) + "\n")
    for root in (vault, other):
        imported(root, str(source))
    minutes = {root.name: json.loads(memo("--json", "activity", "--all", vault=root).stdout)["totalDurationMinutes"]
               for root in (vault, other)}
    assert minutes == {"v": 180, "other": 20}  # the person's end kept; the untouched session followed its file


def test_a_prompts_line_that_cannot_be_read_later_never_moves_the_turns_after_it(realdata, tmp_path):
    """Found by a tester of bad files: one byte that is not UTF-8 in line 263 of an imported Codex
    rollout (a prompt's line) and the next import rewrote 17 turns — t6 took t7's text, t7 t8's …
    — and marked t23, still in the file, rewound. The transcript is left as the vault holds it,
    refused with the line; the file put back imports as before."""
    source = realdata / "codex-rollouts/7567491-Feishu_ClaudeCode/.codex/sessions/2025/11/28"
    [original] = sorted(source.glob("rollout-*bdaa.jsonl"))
    folder, vault = tmp_path / "rollouts", tmp_path / "v"
    folder.mkdir()
    copy = folder / original.name
    shutil.copyfile(original, copy)
    memo("import", "codex", str(folder), vault=vault)
    before = {p.relative_to(vault): p.read_bytes() for p in (vault / "projects").rglob("*.md")}
    lines = copy.read_bytes().split(b"\n")
    assert b'"message":"' in lines[262]
    lines[262] = lines[262].replace(b'"message":"', b'"message":', 1)  # no longer JSON
    copy.write_bytes(b"\n".join(lines))
    again = memo("import", "codex", str(folder), vault=vault, check=False)
    assert again.returncode == 1
    assert ("line 263: not JSON — and the turns after it would "
            "stand at other numbers than the vault holds them (session codex-019acae2-56c7-73c2-a045-02820622bdaa-1): "
            "left as the vault holds it") in again.stderr, again.stderr
    assert {p.relative_to(vault): p.read_bytes() for p in (vault / "projects").rglob("*.md")} == before
    shutil.copyfile(original, copy)  # put back: as before, nothing to change
    assert json.loads(memo("--json", "import", "codex", str(folder), vault=vault).stdout)["turns"] == 0
    assert {p.relative_to(vault): p.read_bytes() for p in (vault / "projects").rglob("*.md")} == before
    # a byte that is not UTF-8 in the prompt: the line is read, the byte replaced — that turn's text
    # follows the file, no other turn moves (found by a tester: one byte cost the whole prompt)
    lines[262] = copy.read_bytes().split(b"\n")[262].replace(b'"message":"', b'"message":"\xff', 1)
    copy.write_bytes(b"\n".join(lines))
    replaced = memo("import", "codex", str(folder), vault=vault)
    assert "note: " in replaced.stderr and "line 263: byte 0xff at column 104 is not UTF-8 (replaced by U+FFFD; " \
        "the line is read)" in replaced.stderr, replaced.stderr
    after = {p.relative_to(vault): p.read_bytes() for p in (vault / "projects").rglob("*.md")}
    changed = {path for path in after if after[path] != before.get(path)}
    assert {path.name for path in changed if "/prompts/" in str(path)} == {
        "prompt-codex-019acae2-56c7-73c2-a045-02820622bdaa-1-t6.md"}, changed
    [turn] = [path for path in changed if path.name.endswith("-t6.md")]
    assert "\ufffd" in after[turn].decode("utf-8")


def test_transcripts_of_folders_named_outside_ascii_keep_apart_projects(tmp_path):
    """Found by a tester of bad files: transcripts of /home/u/飞书项目 and /home/u/日本語 were both
    imported into project ``untitled``, café and cafè into ``caf`` — without a note."""
    folder, vault = tmp_path / "projects" / "p", tmp_path / "v"
    folder.mkdir(parents=True)
    for number, name in enumerate(("飞书项目", "日本語", "ünï cödé"), 1):
        line = {"type": "user", "timestamp": "2026-11-03T09:00:00Z", "cwd": f"/home/u/{name}",
                "sessionId": f"bbbb000{number}-2222-3333-4444-555566667777", "uuid": f"u{number}",
                "message": {"role": "user", "content": f"kiwi {number}"}}
        (folder / f"bbbb000{number}-2222-3333-4444-555566667777.jsonl").write_text(json.dumps(line) + "\n")
    memo("import", "claude-code", str(folder.parent), vault=vault)
    assert sorted(p.name for p in (vault / "projects").iterdir()) == ["feishuxiangmu", "ribenyu", "uni-code"]


def test_a_new_transcript_of_its_snapshot_line_alone_is_no_other_format(realdata, tmp_path):
    """Found by an operator: Claude Code writes a ``file-history-snapshot`` line first; a watcher
    that read the file before the first message said "skipped: … not a claude-code transcript (no
    line holds a Claude Code record …)" of a conversation just begun."""
    source = realdata / ("claude-code-jsonl/moredip-session-share/samples/claude-code-projects/"
                         "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl")
    lines = source.read_bytes().splitlines(keepends=True)
    assert b'"file-history-snapshot"' in lines[0]
    folder, vault = tmp_path / "projects" / "p", tmp_path / "v"
    folder.mkdir(parents=True)
    copy = folder / source.name
    copy.write_bytes(lines[0])
    first = memo("watch", "--once", "--only", str(folder.parent), vault=vault, check=False)
    assert "not a claude-code transcript" not in first.stderr and "skipped" not in first.stderr, first.stderr
    copy.write_bytes(b"".join(lines))
    assert json.loads(memo("--json", "import", "claude-code", str(folder.parent), vault=vault).stdout)["turns"] == 7


def test_a_file_that_gave_nothing_but_problems_is_said_and_refused_again(realdata, tmp_path):
    """Found by a tester of bad files: a Gemini chat whose one message had an out-of-range
    timestamp was refused ("nothing imported: 1 line left out", exit 1); the next import of the
    same file said "files 1 (1 unchanged) … skipped 0" and exited 0 — a cron job saw success, and
    the line was never named again. Such a file is read again, its problems said again."""
    source = realdata / "multi-agent/Mai0313-VibeCodingTracker/examples/test_conversation_gemini.json"
    chat = json.loads(source.read_text(encoding="utf-8"))
    for message in chat["messages"]:
        message["timestamp"] = 12345678901234567890
    folder = tmp_path / "chats"
    folder.mkdir()
    (folder / "session-legacy.json").write_text(json.dumps(chat), encoding="utf-8")
    vault = tmp_path / "v"
    for _ in range(2):
        ran = memo("import", "gemini", str(folder), vault=vault, check=False)
        assert ran.returncode == 1 and "error: nothing imported" in ran.stderr, ran.stderr
        assert "unreadable or out-of-range timestamp" in ran.stderr and "unchanged" not in ran.stdout


def test_a_rollout_whose_every_timestamp_is_unreadable_names_its_lines(realdata, tmp_path):
    """Found by a tester of bad files: a Codex rollout (a Copilot session alike) whose every
    timestamp was an epoch number was "not a codex transcript (no line is a Codex record …)" —
    every line was one; only their instants were unreadable. Each line is named with its value."""
    [source] = sorted((realdata / "codex-rollouts").rglob("rollout-2025-11-27T11-39-23-*.jsonl"))
    folder = tmp_path / "rollouts"
    folder.mkdir()
    lines = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    for line in lines:
        line["timestamp"] = 1764214763
    (folder / source.name).write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    ran = memo("import", "codex", str(folder), vault=tmp_path / "v", check=False)
    assert ran.returncode == 1 and "not a codex transcript" not in ran.stderr, ran.stderr
    assert "line 1: unreadable or out-of-range timestamp '1764214763'" in ran.stderr
    assert f"error: nothing imported: {len(lines)} lines left out" in ran.stderr


@pytest.mark.parametrize("count", [-5000000, "12345", 10 ** 30])
def test_a_rollouts_token_count_that_is_no_count_is_said(realdata, tmp_path, count):
    """Found by a tester of bad files: token counts of text, below 0 or beyond reason were
    dropped (or priced) without a word: skipped 0, the cost 16× too low. Each such line is named
    and its counts left out; the turns are imported."""
    [source] = sorted((realdata / "codex-rollouts").rglob("rollout-2025-11-27T11-39-23-*.jsonl"))
    folder = tmp_path / "rollouts"
    folder.mkdir()
    lines = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    bad = 0
    for line in lines:
        info = line.get("payload", {}).get("info") if line.get("type") == "event_msg" else None
        if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
            info["total_token_usage"]["input_tokens"] = count
            bad += 1
    assert bad
    (folder / source.name).write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    answer = imported_json(tmp_path / "v", "codex", str(folder))
    assert answer["turns"] == 4 and answer["skipped"] == bad
    assert any("total_token_usage.input_tokens is" in e and "not a token count" in e for e in answer["errors"])


@pytest.mark.parametrize("command", [["import", "claude-code"], ["import", "auto"], ["watch", "--once", "--only"]])
def test_a_bad_project_is_refused_before_any_file_is_read(realdata, tmp_path, command):
    """Found by a tester of bad input: ``memo watch --once --only DIR --project ../x`` said 200
    "skipped: Invalid project" lines, then "done: 200 imports", exit 0 — and the next run took the
    files as imported ("nothing changed"), so they never came in; ``memo import`` said the same
    refusal once per file. One line, exit 1, nothing read."""
    folder = tmp_path / "cc"
    shutil.copytree(realdata / CC, folder)
    vault = tmp_path / "v"
    ran = memo(*command, str(folder), "--project", "../x", vault=vault, check=False)
    assert ran.returncode == 1 and ran.stderr.startswith("error: Invalid project: ") \
        and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    again = memo("watch", "--once", "--only", str(folder), vault=vault)
    assert "done: 0 imports" not in again.stdout
    assert json.loads(memo("--json", "prompt", "list", "--all", vault=vault).stdout)["total"] > 0


def test_a_transcript_read_as_it_grows_past_a_local_command_never_rewinds_a_turn(realdata, tmp_path):
    """Found by an operator: a Claude Code transcript cut just after a ``/plugin`` line (a local
    command whose output line was not written yet) counted it as a turn; the next import, the
    output there, dropped it — "1 turn the transcript no longer holds marked superseded" and a
    warning that the file was rewound — and a watcher flapped between the two as the agent wrote.
    A slash command nothing has followed yet waits for the next record."""
    source = realdata / CC / "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    folder = tmp_path / "p"
    folder.mkdir()
    growing = folder / source.name
    vault = tmp_path / "v"
    for n in (37, 38, 44, len(lines)):
        growing.write_bytes(b"".join(lines[:n]))
        answer = imported(vault, str(folder))
        assert (answer["superseded"], answer["rewound"], answer["revised"]) == (0, 0, 0), (n, answer)
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / source.name).write_bytes(source.read_bytes())
    once = imported(tmp_path / "v2", str(whole))
    assert json.loads(memo("--json", "prompt", "list", "--all", "--limit", "100", vault=vault).stdout)["total"] == \
        once["turns"]


def test_a_gemini_transcript_cut_from_the_top_keeps_the_turns_it_lost(realdata, tmp_path):
    """Found by a tester of bad files: a Gemini chat (a Copilot events file alike) that lost its
    first prompt had turn 1 rewritten with its second prompt and so on, the last marked
    superseded — the first prompt's text was in no file of the vault any more. As for Claude Code
    and Codex (whatever the agent), the turns recorded before the file's first prompt stay as they are."""
    agent, fixture = "gemini", "gemini.jsonl"
    source = realdata / "multi-agent/Mai0313-VibeCodingTracker/tests/fixtures/sessions" / fixture
    folder = tmp_path / "chats"
    folder.mkdir()
    path = folder / f"session-{agent}.jsonl"
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines), encoding="utf-8")
    vault = tmp_path / "v"
    first = json.loads(memo("--json", "import", agent, str(folder), vault=vault).stdout)
    assert first["turns"] >= 2, first
    before = _turns(vault)
    prompts = [n for n, line in enumerate(lines) if n and json.loads(line).get("type") in ("user", "user.message")]
    path.write_text("".join(lines[:1] + lines[prompts[1]:]), encoding="utf-8")  # the first prompt cut away
    ran = json.loads(memo("--json", "import", agent, str(folder), vault=vault).stdout)
    assert (ran["turns"], ran["superseded"], ran["revised"]) == (0, 0, 0), ran
    assert _turns(vault) == before


def _part_of(folder: Path, conversation: str, start: str, turns: int) -> Path:
    """A file of ``turns`` prompts of ``conversation``, 5 minutes apart from ``start``, each answered
    4 minutes later."""
    from datetime import datetime, timedelta

    folder.mkdir(parents=True, exist_ok=True)
    at, text = datetime.fromisoformat(start), ""
    stamp = lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")  # noqa: E731
    for n in range(turns):
        text += _prompt_line(conversation, "/w/app", stamp(at), f"{folder.name} prompt {n}", f"{folder.name}-u{n}")
        text += _answer_line(conversation, "/w/app", stamp(at + timedelta(minutes=4)), f"{folder.name}-a{n}", 10, 5)
        at += timedelta(minutes=5)
    (folder / f"{folder.name}.jsonl").write_text(text, encoding="utf-8")
    return folder


def _activity_totals(vault) -> tuple[int, int]:
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    return report["totalDurationMinutes"], report["totalPrompts"]


@pytest.mark.parametrize("order", ["acb", "cab", "whole-after-ac"])
def test_the_middle_part_of_a_conversation_imported_last_comes_in(tmp_path, order):
    """Found by a breaker: a conversation in three files (09:00, 11:00, 14:00), the first and last
    imported before the middle one — the middle part was refused ("work interval 2 starts at 11:00
    but was imported starting 14:00"), for good: the whole conversation read together was refused
    too. It comes in as sessions of their own; the totals are those of a clean import."""
    parts = {"a": _part_of(tmp_path / "a", "conv", "2026-11-02T09:00:00", 8),
             "b": _part_of(tmp_path / "b", "conv", "2026-11-02T11:00:00", 6),
             "c": _part_of(tmp_path / "c", "conv", "2026-11-02T14:00:00", 10)}
    whole = tmp_path / "whole"
    whole.mkdir()
    (whole / "all.jsonl").write_text("".join((parts[k] / f"{k}.jsonl").read_text(encoding="utf-8") for k in "abc"),
                                     encoding="utf-8")
    vault = tmp_path / "v"
    steps = [parts[k] for k in order] if order != "whole-after-ac" else [parts["a"], parts["c"], whole]
    for step in steps:
        result = imported(vault, str(step), "--project", "app")
        assert (result["skipped"], result["errors"]) == (0, []), result
    imported(tmp_path / "clean", str(whole), "--project", "app")
    assert _activity_totals(vault) == _activity_totals(tmp_path / "clean") == (39 + 29 + 49, 24)
    again = imported(vault, str(whole), "--project", "app", "--rescan")  # read again: nothing new, nothing refused
    assert (again["turns"], again["skipped"], again["errors"]) == (0, 0, [])
    assert _activity_totals(vault) == (117, 24)


def test_a_line_stamped_with_a_clock_set_back_in_a_later_file_refuses_no_earlier_file(tmp_path):
    """Found by a breaker: one line of the last file stamped a month back, that file imported
    first: every earlier file of the conversation was refused after it."""
    parts = {"a": _part_of(tmp_path / "a", "conv", "2026-11-02T09:00:00", 8),
             "b": _part_of(tmp_path / "b", "conv", "2026-11-02T11:00:00", 6),
             "c": _part_of(tmp_path / "c", "conv", "2026-11-02T14:00:00", 10)}
    late = parts["c"] / "c.jsonl"
    lines = late.read_text(encoding="utf-8").splitlines(keepends=True)
    assert "2026-11-02T14:10:00.000Z" in lines[4]
    lines[4] = lines[4].replace("2026-11-02T14:10:00.000Z", "2026-10-01T14:10:00.000Z")
    late.write_text("".join(lines), encoding="utf-8")
    vault = tmp_path / "v"
    for step in ("c", "a", "b"):
        result = imported(vault, str(parts[step]), "--project", "app")
        assert (result["skipped"], result["errors"]) == (0, []), (step, result)
    assert _activity_totals(vault)[1] == 24  # every turn is in


def _stretch_lines(parts: dict[str, tuple[str, str, str]]) -> str:
    """A Claude Code conversation: per part two prompts and their answers at the part's three
    clock times (2026-11-03, UTC)."""
    lines = []
    for key, (asked, answered, last) in parts.items():
        for n, (kind, at, text) in enumerate((("user", asked, f"prompt {key}1"), ("assistant", answered, f"answer {key}1"),
                                              ("user", answered, f"prompt {key}2"), ("assistant", last, f"answer {key}2"))):
            line = {"sessionId": "5e55e55e-0000-4000-8000-000000000002", "uuid": f"{key}{n}-1111-4000-8000-000000000000",
                    "cwd": "/home/ana/product", "timestamp": f"2026-11-03T{at}:00.000Z", "type": kind,
                    "message": {"role": "user", "content": text} if kind == "user" else
                    {"role": "assistant", "id": f"m{key}{n}", "model": "claude-opus-4-5-20251101",
                     "content": [{"type": "text", "text": text}], "usage": {"input_tokens": 10, "output_tokens": 5}}}
            lines.append(json.dumps(line))
    return "\n".join(lines) + "\n"


def test_lines_appended_with_a_clock_set_back_into_a_gap_join_the_interval_they_lead_into(tmp_path):
    """Found by a breaker: a transcript grew by a part stamped 10:00–10:40 (the clock set back),
    between its 09:00 and 11:00 parts; its prompt at 10:00 became an earlier part of 0 minutes, the
    one at 10:30 stretched the 11:00 interval back — 95 minutes where the whole file imported at once
    bills 125. Work that leads into an interval within idle gaps joins it, as a clean import joins it."""
    first = {"A": ("09:00", "09:10", "09:20"), "B": ("11:00", "11:12", "11:30"), "C": ("14:00", "14:05", "14:15")}
    grown = tmp_path / "grow.jsonl"
    grown.write_text(_stretch_lines(first), encoding="utf-8")
    memo("import", "claude-code", str(grown), "--project", "product", vault=tmp_path / "v")
    grown.write_text(_stretch_lines({**first, "D": ("10:00", "10:30", "10:40")}), encoding="utf-8")
    memo("import", "claude-code", str(grown), "--project", "product", vault=tmp_path / "v")
    memo("import", "claude-code", str(grown), "--project", "product", vault=tmp_path / "clean")
    totals = [json.loads(memo("--json", "activity", "--all", vault=tmp_path / v).stdout) for v in ("v", "clean")]
    assert [(t["totalDurationMinutes"], t["totalPrompts"]) for t in totals] == [(125, 8), (125, 8)]
    assert [s["durationMinutes"] for s in totals[0]["sessions"]] == [20, 90, 15]


@pytest.mark.parametrize("change", ["bridged", "last_removed"])
def test_an_interval_the_grown_or_cut_file_no_longer_has_bills_no_more(tmp_path, change):
    """Found by a tester of bad files: lines appended at the end but stamped between two imported
    intervals joined them into one — the first session took every turn, the second kept its three:
    12 turns, 168 minutes under ``overlapPolicy = "sum"`` and the AI cost of three turns twice,
    where a clean import gives 9. And a file that lost its whole last interval kept billing it. A
    session of the conversation past the file's last interval is superseded, as a turn the file no
    longer holds at its end is."""
    first = {"A": ("09:00", "09:10", "09:20"), "B": ("11:00", "11:12", "11:30")}
    if change == "last_removed":
        first["C"] = ("14:00", "14:05", "14:15")
    grown = tmp_path / "grow.jsonl"
    grown.write_text(_stretch_lines(first), encoding="utf-8")
    memo("import", "claude-code", str(grown), "--project", "product", vault=tmp_path / "v")
    now = {**first, "D": ("09:45", "10:10", "10:35")} if change == "bridged" else \
        {key: part for key, part in first.items() if key != "C"}
    grown.write_text(_stretch_lines(now), encoding="utf-8")
    memo("import", "claude-code", str(grown), "--project", "product", vault=tmp_path / "v")
    memo("import", "claude-code", str(grown), "--project", "product", vault=tmp_path / "clean")
    summed = {"MEMO_CONFIG": str(tmp_path / "sum.toml")}  # this test's own config: the suite's is shared
    memo("config", "set", "overlapPolicy", "sum", env=summed)
    totals = [json.loads(memo("--json", "activity", "--all", vault=tmp_path / v, env=summed).stdout)
              for v in ("v", "clean")]
    expected = (150, 6) if change == "bridged" else (50, 4)
    assert [(t["totalDurationMinutes"], t["totalPrompts"]) for t in totals] == [expected, expected], totals
    assert totals[0]["totalCostUsd"] == totals[1]["totalCostUsd"]
    assert totals[0]["totalSessions"] == totals[1]["totalSessions"] == (1 if change == "bridged" else 2)


def test_a_codex_conversation_continued_in_a_second_file_counts_each_turns_tokens_once(realdata, tmp_path):
    """Found by a tester of bad files: a rollout continued in a second file (its ``session_meta``
    again, then the later turns) priced the second file's first turn with the conversation's whole
    running total — the first half's cost counted twice (5.9027 USD for 4.5069). A file's first
    count, come after its first prompt, takes that turn's own request (``last_token_usage``) from
    the running total."""
    source = next((realdata / CODEX).glob("*019acae2*.jsonl"))
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = next(n for n in range(404, len(lines)) if '"user_message"' in lines[n])
    whole, split = tmp_path / "whole", tmp_path / "split"
    whole.mkdir()
    split.mkdir()
    (whole / source.name).write_text("".join(lines), encoding="utf-8")
    (split / source.name).write_text("".join(lines[:cut]), encoding="utf-8")
    (split / source.name.replace("T22-33-42", "T23-59-59")).write_text("".join(lines[:1] + lines[cut:]),
                                                                        encoding="utf-8")
    reports = []
    for folder in (whole, split):
        memo("import", "codex", str(folder), vault=tmp_path / f"v-{folder.name}")
        reports.append(json.loads(memo("--json", "activity", "--all", vault=tmp_path / f"v-{folder.name}").stdout))
    assert [(r["totalPrompts"], r["totalCostUsd"]) for r in reports] == [
        (reports[0]["totalPrompts"], reports[0]["totalCostUsd"])] * 2, [r["totalCostUsd"] for r in reports]


def test_a_file_that_joins_an_earlier_interval_to_an_invoiced_one_is_refused_not_counted_twice(tmp_path):
    """Found by a breaker of the rule above: the later interval was on an issued invoice (or timed by
    hand), so it stayed — and the earlier one took its turns too: 8 prompts for 6, their cost twice.
    The conversation is refused whole, naming the session and what holds it."""
    first = {"A": ("09:00", "09:10", "09:20"), "B": ("11:00", "11:12", "11:30")}
    vault, grown, listed, second = _imported_with_a_part_timed_by_hand(tmp_path, first, "11:00", 25)
    grown.write_text(_stretch_lines({**first, "D": ("09:45", "10:10", "10:35")}), encoding="utf-8")
    ran = memo("import", "claude-code", str(grown), "--project", "product", vault=vault, check=False)
    assert ran.returncode == 1 and f"the part imported as session {second} is not the interval of its number now), which has times a person set" in \
        " ".join(ran.stderr.split()), ran.stderr
    after = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert after["totalPrompts"] == listed["totalPrompts"] == 4


def test_a_file_whose_intervals_moved_along_past_a_session_timed_by_hand_is_refused(tmp_path):
    """Found by a breaker of the rule above: the refusal looked only past the file's last interval;
    once the file grew again (a part joining two, then a later part) the hand-timed session's number
    was another part's — its turns went into it (billing nothing) and one turn was kept twice."""
    parts = {"A": ("09:00", "09:10", "09:20"), "B": ("11:00", "11:12", "11:30"), "C": ("14:00", "14:05", "14:15")}
    vault, grown, before, third = _imported_with_a_part_timed_by_hand(tmp_path, parts, "14:00", 20)
    # a part joins A and B, a later one comes after C: the intervals' numbers move along
    grown.write_text(_stretch_lines({**parts, "D": ("09:45", "10:10", "10:35"), "F": ("16:00", "16:05", "16:20")}),
                     encoding="utf-8")
    ran = memo("import", "claude-code", str(grown), "--project", "product", vault=vault, check=False)
    assert ran.returncode == 1 and f"as session {third} is not the interval of its number now), which has times a person set" in " ".join(ran.stderr.split())
    after = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert (after["totalPrompts"], after["totalDurationMinutes"]) == (before["totalPrompts"], before["totalDurationMinutes"] - 15 + 20)


def _imported_with_a_part_timed_by_hand(tmp_path, parts: dict, start: str, minutes: int):
    """A conversation of ``parts`` (:func:`_stretch_lines`) imported, then its part begun at
    ``start`` timed by hand to ``minutes``: ``(vault, file, activity before, that session's id)``."""
    vault, grown = tmp_path / "v", tmp_path / "grow.jsonl"
    grown.write_text(_stretch_lines(parts), encoding="utf-8")
    memo("import", "claude-code", str(grown), "--project", "product", vault=vault)
    before = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    held = [s["sessionId"] for s in before["sessions"] if s["startTime"].startswith(f"2026-11-03T{start}")][0]
    memo("session", "edit", held, "--project", "product", "--minutes", str(minutes), vault=vault)
    return vault, grown, before, held


def test_a_transcript_cut_then_put_back_brings_its_work_back(tmp_path):
    """Found by a breaker: a transcript cut to its first part superseded the others (said: "if a
    file was cut or cleared by mistake, put it back and import again — they come back"); put back,
    its import said "sessions 0, turns 0" and the vault stayed at 20 minutes and 2 prompts of 65
    and 6. Put back, the work comes back, as a clean import of the file gives it."""
    parts = {"A": ("09:00", "09:10", "09:20"), "B": ("11:00", "11:12", "11:30"), "C": ("14:00", "14:05", "14:15")}
    grown = tmp_path / "g.jsonl"
    vault = tmp_path / "v"

    def totals() -> tuple[int, int]:
        report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
        return report["totalDurationMinutes"], report["totalPrompts"]

    grown.write_text(_stretch_lines(parts), encoding="utf-8")
    memo("import", "claude-code", str(grown), "--project", "product", vault=vault)
    assert totals() == (65, 6)
    grown.write_text(_stretch_lines({"A": parts["A"]}), encoding="utf-8")
    cut = memo("import", "claude-code", str(grown), "--project", "product", vault=vault)
    assert totals() == (20, 2) and "put it back and import again" in cut.stderr, cut.stderr
    grown.write_text(_stretch_lines(parts), encoding="utf-8")
    back = memo("import", "claude-code", str(grown), "--project", "product", vault=vault)
    assert totals() == (65, 6), (back.stdout, back.stderr)


def test_a_transcript_cut_then_gone_on_with_other_work_imports_the_new_work(tmp_path):
    """Found by a breaker: a transcript cut to its first part (the later sessions marked rewound),
    then gone on with work at 16:00, was refused for good ("work interval 2 starts at … but was
    imported starting 11:00; re-import with the same --tz"): the new work was never imported, the
    watcher failed on every pass. The new work takes the rewound session's place, as a clean import
    of the file gives it; the turn counts say turns (the session was counted as one)."""
    parts = {"A": ("09:00", "09:10", "09:20"), "B": ("11:00", "11:12", "11:30"), "C": ("14:00", "14:05", "14:15")}
    grown = tmp_path / "g.jsonl"
    vault = tmp_path / "v"

    def totals(where: Path) -> tuple[int, int]:
        report = json.loads(memo("--json", "activity", "--all", vault=where).stdout)
        return report["totalDurationMinutes"], report["totalPrompts"]

    grown.write_text(_stretch_lines(parts), encoding="utf-8")
    memo("import", "claude-code", str(grown), "--project", "product", vault=vault)
    grown.write_text(_stretch_lines({"A": parts["A"]}), encoding="utf-8")
    cut = json.loads(memo("--json", "import", "claude-code", str(grown), "--project", "product", vault=vault).stdout)
    assert cut["rewound"] == 4  # B's and C's turns; not their sessions
    went_on = {"A": parts["A"], "D": ("16:00", "16:10", "16:25")}
    grown.write_text(_stretch_lines(went_on), encoding="utf-8")
    ran = memo("--json", "import", "claude-code", str(grown), "--project", "product", vault=vault)
    assert (json.loads(ran.stdout)["sessions"], json.loads(ran.stdout)["turns"]) == (1, 2), ran.stderr
    clean = tmp_path / "clean"
    memo("import", "claude-code", str(grown), "--project", "product", vault=clean)
    assert totals(vault) == totals(clean) == (20 + 25, 4)  # A, then D
    # cut and gone on between two imports (a cron job's): the same (found by a breaker: refused for good)
    once = tmp_path / "once"
    grown.write_text(_stretch_lines(parts), encoding="utf-8")
    memo("import", "claude-code", str(grown), "--project", "product", vault=once)
    grown.write_text(_stretch_lines(went_on), encoding="utf-8")
    both = memo("import", "claude-code", str(grown), "--project", "product", vault=once, check=False)
    assert both.returncode == 0, both.stderr
    assert totals(once) == (45, 4)
    # cut again, then put back whole: as a clean import of each file (found by a breaker: D counted twice)
    grown.write_text(_stretch_lines({"A": parts["A"]}), encoding="utf-8")
    memo("import", "claude-code", str(grown), "--project", "product", vault=once)
    assert totals(once) == (20, 2)
    grown.write_text(_stretch_lines(went_on), encoding="utf-8")
    memo("import", "claude-code", str(grown), "--project", "product", vault=once)
    assert totals(once) == (45, 4)
    listed = json.loads(memo("--json", "prompt", "list", "--all", vault=vault).stdout)["items"]
    assert sorted((t["created"][11:16], t["body"]) for t in listed) == [
        ("09:00", "prompt A1"), ("09:10", "prompt A2"), ("16:00", "prompt D1"), ("16:10", "prompt D2")]


def test_lines_that_join_two_earlier_intervals_are_refused_saying_so_not_naming_another_zone(tmp_path):
    """Found by a breaker: a part stamped 09:45–10:35 written into a conversation of parts at 09:00,
    11:00 and 14:00 joins the first two into one interval; its import was refused with "re-import
    with the same --tz and all files of the conversation together" — one file, one zone. The
    refusal says what happened; nothing of it is written."""
    parts = {"A": ("09:00", "09:10", "09:20"), "B": ("11:00", "11:12", "11:30"), "C": ("14:00", "14:05", "14:15")}
    grown = tmp_path / "g.jsonl"
    vault = tmp_path / "v"
    grown.write_text(_stretch_lines(parts), encoding="utf-8")
    memo("import", "claude-code", str(grown), "--project", "product", vault=vault)
    grown.write_text(_stretch_lines({**parts, "D": ("09:45", "10:10", "10:35")}), encoding="utf-8")
    ran = memo("import", "claude-code", str(grown), "--project", "product", vault=vault, check=False)
    assert ran.returncode == 1 and "now join the work imported as session" in ran.stderr and "--tz" not in ran.stderr, \
        ran.stderr
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert (report["totalDurationMinutes"], report["totalPrompts"]) == (65, 6)


def test_a_session_file_moved_by_hand_into_another_projects_folder_is_not_imported_twice(tmp_path):
    """Found by a tester of bad files: a session's file moved with ``mv`` into another project's
    folder (its ``project:`` left as it was) could not be read there; the next import of its grown
    transcript wrote the session anew in the old project — once the file was mended, one id billed
    in two projects. The import refuses the conversation, naming the file; nothing is written."""
    parts = {"A": ("09:00", "09:10", "09:20")}
    grown = tmp_path / "g.jsonl"
    vault = tmp_path / "v"
    grown.write_text(_stretch_lines(parts), encoding="utf-8")
    memo("import", "claude-code", str(grown), "--project", "product", vault=vault)
    [session] = (vault / "projects/product/sessions").glob("*.md")
    (vault / "projects/other/sessions").mkdir(parents=True)
    moved = vault / "projects/other/sessions" / session.name
    session.rename(moved)
    grown.write_text(_stretch_lines({**parts, "B": ("09:25", "09:30", "09:40")}), encoding="utf-8")
    ran = memo("import", "claude-code", str(grown), "--project", "product", vault=vault, check=False)
    assert ran.returncode == 1 and f"is in the vault as projects/other/sessions/{session.name}, which cannot be read" \
        in ran.stderr, ran.stderr
    assert not list((vault / "projects/product/sessions").glob("*.md"))
    moved.rename(session)  # put back where it belongs: the import takes the conversation in, once
    memo("import", "claude-code", str(grown), "--project", "product", vault=vault)
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert (report["totalSessions"], report["totalPrompts"], list(report["byProject"])) == (1, 4, ["product"]), \
        sorted(str(p.relative_to(vault)) for p in vault.glob("projects/*/*/*.md"))


def test_a_file_size_limit_is_said_as_such_not_as_a_damaged_index(tmp_path):
    """Found by a tester of bad files: under ``ulimit -f`` an import said "The index … is damaged
    (disk I/O error); run memo reindex" — nothing was damaged (the next command caught up). It
    says the process's file-size limit, and that nothing is damaged. (The process boundary is what
    is tested: the limit is the process's.)"""
    import resource
    import subprocess
    import sys

    lines = [json.dumps({"type": "user", "sessionId": "big-1", "uuid": f"u{n}", "cwd": "/w/p",
                         "timestamp": f"2026-11-0{1 + n % 5}T{9 + n % 8:02d}:{n % 60:02d}:00.000Z",
                         "message": {"role": "user", "content": "x" * 300 + str(n)}}) for n in range(3000)]
    big = tmp_path / "big.jsonl"
    big.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    limit = 1_500_000 if hard == resource.RLIM_INFINITY else min(1_500_000, hard)
    ran = subprocess.run([sys.executable, "-m", "memo_analytics", "--vault-root", str(tmp_path / "v"), "import",
                          "claude-code", str(big)], capture_output=True, text=True, timeout=300,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard)))
    assert ran.returncode == 1 and "could not grow past this process's file-size limit" in ran.stderr \
        and "index" not in ran.stderr, ran.stderr


def test_import_auto_says_the_notes_memo_import_says(tmp_path):
    """Found by a tester of bad files: ``memo import auto FILE`` of a transcript whose last line was
    still being written said "files 1, sessions 1, turns 1, skipped 0" — ``memo import claude-code``
    says "1 file with a last line still being written". Each folder's line is the import's own."""
    grown = tmp_path / "cc" / "g.jsonl"
    grown.parent.mkdir()
    whole = _stretch_lines({"A": ("09:00", "09:10", "09:20")})
    grown.write_text(whole + whole.splitlines()[0][:40], encoding="utf-8")  # half a line at the end
    ran = memo("import", "auto", str(grown.parent), vault=tmp_path / "v")
    assert "1 file with a last line still being written" in ran.stdout, ran.stdout
    said = json.loads(memo("--json", "import", "auto", str(grown.parent), vault=tmp_path / "v2").stdout)
    assert said["sources"][0]["summary"].startswith("files 1, sessions 1, turns 2"), said


def test_a_user_line_of_neither_session_nor_time_is_said_not_dropped(tmp_path):
    """Found by a tester of bad files: a Claude Code user line with neither ``sessionId`` nor
    ``timestamp`` was dropped without a word (turns 1, skipped 0): it is skipped, and said."""
    lines = [{"type": "user", "message": {"role": "user", "content": "no ts no sid"}},
             {"type": "user", "sessionId": "one", "timestamp": "2026-01-06T10:00:00Z", "cwd": "/x/p",
              "message": {"role": "user", "content": "timed"}}]
    source = tmp_path / "one.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    said = json.loads(memo("--json", "import", "claude-code", str(source), vault=tmp_path / "v").stdout)
    assert (said["turns"], said["skipped"]) == (1, 1), said
    assert any("line 1: a user message with neither sessionId nor timestamp" in e for e in said["errors"]), said


def test_a_prompt_stamped_in_the_future_is_left_out_and_the_rest_imported(tmp_path):
    """Found by a tester of other agents' files: one prompt line stamped a year ahead refused the
    whole conversation ("Invalid startTime: … is in the future", naming no line, and no field of
    the file). That prompt is left out, said, and the rest imported."""
    from datetime import datetime, timedelta, timezone

    ahead = (datetime.now(timezone.utc) + timedelta(days=400)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    folder = tmp_path / "projects"
    folder.mkdir()
    (folder / "s.jsonl").write_text(_prompt_line("fut", "/w/app", "2025-09-03T10:00:00.000Z", "first", "u1")
                                    + _prompt_line("fut", "/w/app", ahead, "from a clock ahead", "u2")
                                    + _prompt_line("fut", "/w/app", "2025-09-03T10:05:00.000Z", "second", "u3"),
                                    encoding="utf-8")
    ran = memo("--json", "import", "claude-code", str(folder), vault=tmp_path / "v")
    result = json.loads(ran.stdout)
    assert (result["turns"], result["skipped"]) == (2, 1), ran.stderr
    assert any(f"transcript fut: 1 prompt stamped in the future ({ahead}: the clock of the machine that wrote it "
               "ahead?) left out; the rest imported" in e for e in result["errors"]), result["errors"]
    # a conversation all of whose prompts are ahead is refused whole: the command exits 1 (found by a breaker)
    (folder / "all.jsonl").write_text(_prompt_line("all", "/w/app", ahead, "only ahead", "a1"), encoding="utf-8")
    whole = memo("import", "claude-code", str(folder), vault=tmp_path / "v", check=False)
    assert whole.returncode == 1 and "1 conversation refused" in whole.stderr, whole.stderr


def test_a_transcript_cut_gone_on_before_the_cut_work_cut_again_and_put_back_counts_as_a_clean_import(tmp_path):
    """Found by a breaker: A and B imported; cut to A; gone on with D (before where B began) and F;
    cut to A again; put back — D came in as an "earlier part" beside B's place, was not marked
    when cut, and was counted twice when put back (7 prompts where a clean import has 5)."""
    a, b = ("09:00", "09:10", "09:20"), ("11:00", "11:12", "11:30")
    d, f = ("10:00", "10:10", "10:25"), ("16:00", "16:05", "16:15")
    grown, vault = tmp_path / "g.jsonl", tmp_path / "v"

    def step(parts: dict) -> tuple[int, int]:
        grown.write_text(_stretch_lines(parts), encoding="utf-8")
        memo("import", "claude-code", str(grown), "--project", "product", vault=vault)
        clean = tmp_path / f"clean-{len(list(tmp_path.iterdir()))}"
        memo("import", "claude-code", str(grown), "--project", "product", vault=clean)
        report = lambda where: json.loads(memo("--json", "activity", "--all", vault=where).stdout)  # noqa: E731
        mine, theirs = report(vault), report(clean)
        assert (mine["totalDurationMinutes"], mine["totalPrompts"]) == (
            theirs["totalDurationMinutes"], theirs["totalPrompts"]), parts.keys()
        return mine["totalDurationMinutes"], mine["totalPrompts"]

    assert step({"A": a, "B": b}) == (50, 4)
    assert step({"A": a}) == (20, 2)
    assert step({"A": a, "D": d, "F": f}) == (20 + 25 + 15, 6)
    assert step({"A": a}) == (20, 2)
    assert step({"A": a, "D": d, "F": f}) == (60, 6)


def test_a_byte_not_utf8_in_a_session_id_leaves_its_turn_out_until_mended_and_never_counts_it_twice(tmp_path):
    """Found by a breaker: a byte that is not UTF-8 inside one line's ``sessionId`` (read with
    U+FFFD since) filed that turn under another conversation; mended, the turn came in again in
    its own — listed twice."""
    folder = tmp_path / "projects"
    folder.mkdir()
    transcript = folder / "s.jsonl"
    lines = [_prompt_line("sid1", "/w/app", "2025-09-03T10:00:00.000Z", "first", "u1"),
             _prompt_line("sid1", "/w/app", "2025-09-03T10:05:00.000Z", "second", "u2"),
             _prompt_line("sid1", "/w/app", "2025-09-03T10:09:00.000Z", "third", "u3")]
    broken = lines[1].encode("utf-8").replace(b'"sid1"', b'"sid\xff1"')
    transcript.write_bytes(lines[0].encode() + broken + lines[2].encode())
    vault = tmp_path / "v"
    ran = memo("--json", "import", "claude-code", str(folder), vault=vault, check=False)
    assert json.loads(ran.stdout)["turns"] == 2
    assert "its id holds a byte that is not UTF-8, so its 1 turn cannot be told to be of its conversation" in ran.stderr
    transcript.write_text("".join(lines), encoding="utf-8")  # mended
    memo("import", "claude-code", str(folder), vault=vault)
    listed = json.loads(memo("--json", "prompt", "list", "--all", vault=vault).stdout)["items"]
    assert sorted(t["body"] for t in listed) == ["first", "second", "third"]


def test_a_byte_not_utf8_in_a_working_folder_leaves_the_conversation_out_until_mended(tmp_path):
    """Found by a breaker: a byte that is not UTF-8 in the ``cwd`` of a conversation's first line
    filed its work under a garbled project (``pr-duct``) for good; the mended file changed nothing."""
    folder = tmp_path / "projects"
    folder.mkdir()
    transcript = folder / "g.jsonl"
    lines = [_prompt_line("sid1", "/home/ana/product", f"2025-09-03T10:0{n}:00.000Z", f"turn {n}", f"u{n}")
             for n in range(3)]
    transcript.write_bytes(lines[0].encode().replace(b"/product", b"/pr\xffduct") + "".join(lines[1:]).encode())
    vault = tmp_path / "v"
    ran = memo("--json", "import", "claude-code", str(folder), vault=vault, check=False)
    assert ran.returncode == 1 and json.loads(ran.stdout)["turns"] == 0
    assert "its working folder holds a byte that is not UTF-8, so the project of its 3 turns cannot be told" in \
        ran.stderr, ran.stderr
    transcript.write_text("".join(lines), encoding="utf-8")  # mended
    memo("import", "claude-code", str(folder), vault=vault)
    clean = tmp_path / "clean"
    memo("import", "claude-code", str(folder), vault=clean)
    listed = [(t["project"], t["body"]) for t in json.loads(memo("--json", "prompt", "list", "--all",
                                                                  vault=vault).stdout)["items"]]
    assert sorted(listed) == [("product", "turn 0"), ("product", "turn 1"), ("product", "turn 2")]
    assert sorted((p.relative_to(vault).as_posix() for p in vault.joinpath("projects").rglob("*.md"))) == \
        sorted(p.relative_to(clean).as_posix() for p in clean.joinpath("projects").rglob("*.md"))


@pytest.mark.parametrize("broken", ["timestamp", "cut"])
def test_a_prompt_line_left_out_then_mended_costs_what_a_clean_import_costs(realdata, tmp_path, broken):
    """Found by a tester: a prompt's line unreadable (its timestamp) gave its answer's tokens to the
    turn before it, split by model; the file mended, that turn kept the split — the cost counted
    twice (0.2739 USD where a clean import has 0.2455), ``--rescan`` and ``reindex`` kept it. A line
    cut in half (a prompt of the same words as a later one): the turn kept the later one's time
    and both answers (0.3748)."""
    source = realdata / ("claude-code-jsonl/moredip-session-share/samples/claude-code-projects/"
                         "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl")
    folder = tmp_path / "t"
    folder.mkdir()
    transcript = folder / "s.jsonl"
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    assert "2026-01-22T21:21:07.551Z" in lines[73]
    clean, vault = tmp_path / "clean", tmp_path / "v"
    transcript.write_text("".join(lines), encoding="utf-8")
    memo("import", "claude-code", str(transcript), vault=clean)
    at = 73 if broken == "timestamp" else 43
    bad = lines[73].replace("2026-01-22T21:21:07.551Z", "not-a-time") if broken == "timestamp" else \
        lines[43][:100] + "\n"
    transcript.write_text("".join(lines[:at] + [bad] + lines[at + 1:]), encoding="utf-8")
    memo("import", "claude-code", str(transcript), vault=vault, check=False)
    transcript.write_text("".join(lines), encoding="utf-8")  # mended
    memo("import", "claude-code", str(transcript), vault=vault)

    def cost(where):
        report = json.loads(memo("--json", "activity", "--all", vault=where).stdout)
        return report["totalCostUsd"], {m: t["tokens"] for m, t in report["costByModel"].items()}

    def turns(where):
        listed = json.loads(memo("--json", "prompt", "list", "--all", vault=where).stdout)["items"]
        return sorted((t["id"], t["created"], t.get("tokens")) for t in listed)

    assert cost(vault) == cost(clean) and turns(vault) == turns(clean)


def test_a_half_read_file_is_said_at_every_import_while_it_stays_so(realdata, tmp_path):
    """Found by a tester: a transcript with a line cut in half said "line 44: not JSON" at its first
    import; every later one said "1 unchanged", and a cron job that missed the first never knew."""
    source = realdata / ("claude-code-jsonl/moredip-session-share/samples/claude-code-projects/"
                         "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl")
    folder = tmp_path / "t"
    folder.mkdir()
    lines = source.read_bytes().split(b"\n")
    lines[43] = lines[43][:100]
    (folder / "s.jsonl").write_bytes(b"\n".join(lines))
    vault = tmp_path / "v"
    first = memo("import", "claude-code", str(folder), vault=vault)
    assert f"{folder / 's.jsonl'}: line 44: not JSON" in first.stderr
    again = memo("import", "claude-code", str(folder), vault=vault)
    assert "(1 unchanged)" in again.stdout
    assert f"{folder / 's.jsonl'}: line 44: not JSON (as its import said: the file is unchanged)" in again.stderr
    (folder / "s.jsonl").write_bytes(source.read_bytes())  # mended: read, and said no more
    memo("import", "claude-code", str(folder), vault=vault)
    assert "not JSON" not in memo("import", "claude-code", str(folder), vault=vault).stderr
