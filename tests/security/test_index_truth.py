"""The index tells the truth of the files (issue "Trust every surface", points 6 and 8): each
finding replayed, its final state asserted.

A. A record file that exists but is not indexed (a writer killed between its rename and its
   index update) is indexed by the next import, by the next write of its session and, when
   its folder changed, by the next open.
B. A missing, empty, stale or other-schema index is found on open and rebuilt (or caught up
   folder by folder) before anything reads it, with one note on stderr; the check reads no
   record file and a write re-reads none.
D. A read-only index (file or folder) is one line ``error: index is read-only: <path>``,
   exit 1, and is never moved or rebuilt.
E. Text the CLI writes to a terminal holds no escape sequence and no control character;
   ``--json`` stays exact.

The CLI runs in-process through the console-script entry point (:func:`tests.inprocess.memo`,
Typer's ``CliRunner`` isolation), except for D, whose read-only files need a process without root's
permission override (``setpriv`` drops it when the tests run as root).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memo_analytics.config import Settings
from memo_analytics.domain.records import Prompt
from memo_analytics.index import freshness, reindex
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import RecordPromptRequest
from memo_analytics.services.store import VaultStore
from memo_analytics.vault.io import read_record, write_record
from tests.inprocess import Ran
from tests.inprocess import memo as memo_in_process

TRANSCRIPT = "claude-code-jsonl/moredip-session-share/samples/claude-code-projects/0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[31mRED\x9b2J\x1b]52;c;aGk=\x1b\\ end\r"
CONTROL = [chr(c) for c in [*range(0, 9), *range(11, 32), *range(127, 160)]]


def memo(vault: Path, *args: str) -> Ran:
    """``memo --vault-root VAULT ARGS`` in this process, through the console-script entry point."""
    return memo_in_process(*args, vault=vault, check=False)


def ok(vault: Path, *args: str) -> Ran:
    ran = memo(vault, *args)
    assert ran.code == 0, ran.stderr
    return ran


def as_json(vault: Path, *args: str) -> dict:
    return json.loads(ok(vault, "--json", *args).stdout)


def sql(vault: Path, statement: str, params: tuple = ()) -> None:
    with sqlite3.connect(vault / ".memo/index.sqlite") as conn:
        conn.execute(statement, params)


def ids(vault: Path, *args: str) -> list[str]:
    return sorted(item["id"] for item in as_json(vault, "prompt", "list", "--all", "--limit", "100", *args)["items"])


# ---------------------------------------------------------------- A: files the index lacks


def test_a_turn_whose_row_is_missing_is_indexed_by_the_next_import(tmp_path, realdata):
    vault = tmp_path / "v"
    first = as_json(vault, "import", "claude-code", str(realdata / TRANSCRIPT))
    everything = ids(vault)
    assert first["turns"] == 7 and len(everything) == 7  # 5 prompts + 2 typed while the agent worked
    bodies = {i: read_record(next(vault.glob(f"projects/*/prompts/{i}.md")))[1] for i in everything}
    lost = max(everything, key=lambda i: len(bodies[i]))  # a turn with words to search for
    body = bodies[lost]
    sql(vault, "DELETE FROM records WHERE id = ?", (lost,))  # the row is gone, the file (and its folder) as they were
    # as after an import killed between its renames and its index commit, which never notes the
    # transcript as taken in (importers.seen): the next import reads it again
    (vault / ".memo" / "import-state.json").unlink()
    assert lost not in ids(vault)

    again = as_json(vault, "import", "claude-code", str(realdata / TRANSCRIPT))
    assert (again["turns"], again["reindexed"]) == (0, 1)
    assert ids(vault) == everything
    word = max(body.split(), key=len)
    assert lost in [i["id"] for i in as_json(vault, "prompt", "search", word, "--all")["items"]]


def test_a_session_whose_row_lags_its_file_is_brought_up_to_date_by_the_next_import(tmp_path, realdata):
    vault = tmp_path / "v"
    ok(vault, "import", "claude-code", str(realdata / TRANSCRIPT))
    session = as_json(vault, "session", "show", "--all")["items"][0]
    sql(vault, "UPDATE records SET status = 'active', updated = '2000-01-01T00:00:00Z' WHERE id = ?", (session["id"],))
    (vault / ".memo" / "import-state.json").unlink()  # as after an import killed before its index commit
    again = as_json(vault, "import", "claude-code", str(realdata / TRANSCRIPT))
    assert again["reindexed"] == 1
    assert as_json(vault, "session", "show", "--all")["items"][0]["status"] == "completed"


def test_a_turn_whose_row_is_missing_is_indexed_by_the_next_turn_of_its_session(tmp_path):
    vault = tmp_path / "v"
    for text in ("first", "second"):
        ok(vault, "prompt", "record", "--body", text, "--session-id", "s", "--project", "p")
    sql(vault, "DELETE FROM records WHERE id = 'prompt-s-t2'")
    record = as_json(vault, "prompt", "record", "--body", "third", "--session-id", "s", "--project", "p")
    assert record["turn"] == 3  # never turn 2 again: that file is there
    assert ids(vault) == ["prompt-s-t1", "prompt-s-t2", "prompt-s-t3"]
    assert as_json(vault, "prompt", "get", "prompt-s-t2")["body"] == "second"


def test_a_turn_whose_row_is_missing_is_indexed_by_session_end(tmp_path):
    vault = tmp_path / "v"
    ok(vault, "session", "start", "s", "--project", "p")
    for text in ("first", "second", "third"):
        ok(vault, "prompt", "record", "--body", text, "--session-id", "s", "--project", "p")
    sql(vault, "DELETE FROM records WHERE id = 'prompt-s-t2'")  # in the middle: the next turn number hides nothing
    ok(vault, "session", "end", "s")
    shown = as_json(vault, "session", "show", "s")
    assert [t["turn"] for t in shown["items"]] == [1, 2, 3] and shown["session"]["status"] == "completed"


def _turn_file(vault: Path, session: str, turn: int, body: str) -> Path:
    """A turn renamed into place by a writer that died before its index update."""
    path = vault / f"projects/p/prompts/prompt-{session}-t{turn}.md"
    meta = Prompt(id=path.stem, project="p", created="2026-03-02T10:00:00Z", updated="2026-03-02T10:00:00Z",
                  session_id=session, turn=turn).wire()
    write_record(path, meta, body)
    return path


def test_a_turn_renamed_into_place_but_never_indexed_is_found_by_the_next_command(tmp_path):
    vault = tmp_path / "v"
    ok(vault, "prompt", "record", "--body", "first", "--session-id", "s", "--project", "p")
    _turn_file(vault, "s", 2, "orphaned by a killed writer")
    ran = ok(vault, "--json", "prompt", "search", "orphaned", "--all")
    assert [i["id"] for i in json.loads(ran.stdout)["items"]] == ["prompt-s-t2"]
    assert ran.stderr.count("\n") == 1 and "the index caught up with 1 record folder changed outside memo (p/prompts)" \
        in ran.stderr and "1 added" in ran.stderr


def test_a_long_running_store_takes_in_a_turn_another_writer_left_unindexed(tmp_path):
    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    record_prompt(store, RecordPromptRequest(body="first", session_id="s", project="p"))
    _turn_file(tmp_path / "v", "s", 2, "left by a writer killed before its index update")
    third = record_prompt(store, RecordPromptRequest(body="third", session_id="s", project="p"))
    assert third["turn"] == 3
    rows = store.conn.execute("SELECT id FROM records WHERE kind = 'prompt' ORDER BY id").fetchall()
    assert [r[0] for r in rows] == ["prompt-s-t1", "prompt-s-t2", "prompt-s-t3"]
    store.close()


# ---------------------------------------------------------------- B: missing, empty, stale, other schema


@pytest.fixture
def recorded(tmp_path) -> tuple[Path, dict]:
    """A vault with two billed sessions and five turns, and its ``--json activity --all``."""
    vault = tmp_path / "v"
    for sid, client, start, end in (("a", "Acme", "2026-03-02T09:00:00Z", "2026-03-02T10:30:00Z"),
                                    ("b", "Globex", "2026-03-03T14:00:00Z", "2026-03-03T14:45:00Z")):
        ok(vault, "session", "start", sid, "--project", "p", "--client", client, "--start-time", start)
        for n in range(2 if sid == "a" else 3):
            ok(vault, "prompt", "record", "--body", f"turn {n} of {sid} about invoices", "--session-id", sid,
               "--project", "p", "--created", start)
        ok(vault, "session", "end", sid, "--until", end)
    return vault, as_json(vault, "activity", "--all")


def _note(ran: Ran, reason: str) -> None:
    """One note on stderr (a JSON line: these runs ask for --json)."""
    assert ran.stderr.count("\n") == 1
    note = json.loads(ran.stderr)["note"]
    assert note.startswith("rebuilding the index ") and f"because {reason}" in note, ran.stderr


def test_a_deleted_index_is_rebuilt_on_open_and_activity_is_not_zero(recorded):
    vault, before = recorded
    for suffix in ("", "-wal", "-shm"):
        Path(f"{vault}/.memo/index.sqlite{suffix}").unlink(missing_ok=True)
    ran = ok(vault, "--json", "activity", "--all")
    _note(ran, "there was none")
    after = json.loads(ran.stdout)
    assert after["totalDurationMinutes"] == 135 and after["totalPrompts"] == 5
    assert after == before


@pytest.mark.parametrize("how", ["zero-byte file", "rows deleted"])
def test_an_empty_index_is_rebuilt_on_open(recorded, how):
    vault, before = recorded
    if how == "zero-byte file":
        for suffix in ("-wal", "-shm"):
            Path(f"{vault}/.memo/index.sqlite{suffix}").unlink(missing_ok=True)
        (vault / ".memo/index.sqlite").write_bytes(b"")
    else:
        for table in ("records", "records_fts", "record_counts"):
            sql(vault, f"DELETE FROM {table}")
    ran = ok(vault, "--json", "activity", "--all")
    _note(ran, "it is empty")
    assert json.loads(ran.stdout) == before


@pytest.mark.parametrize("change, reason", [
    ("PRAGMA user_version = 3", "its schema is version 3 (this memo uses"),
    ("PRAGMA user_version = 99", "its schema is version 99 (this memo uses"),
    ("DROP TABLE record_counts", "its table record_counts is missing"),
    ("ALTER TABLE records DROP COLUMN summary", "its table records lacks summary"),
])
def test_an_index_of_another_schema_is_rebuilt_on_open(recorded, change, reason):
    vault, before = recorded
    sql(vault, change)
    ran = ok(vault, "--json", "activity", "--all")
    _note(ran, reason)
    assert json.loads(ran.stdout) == before
    assert ok(vault, "--json", "activity", "--all").stderr == ""  # once rebuilt, it stays quiet


def test_files_added_and_removed_by_hand_are_caught_up_on_open(recorded):
    vault, _ = recorded
    (vault / "projects/p/prompts/prompt-b-t3.md").unlink()
    text = (vault / "projects/p/sessions/session-b.md").read_text()
    (vault / "projects/p/sessions/session-c.md").write_text(
        text.replace("session-b", "session-c").replace("sessionId: b", "sessionId: c"))
    ran = ok(vault, "--json", "activity", "--all")
    note = json.loads(ran.stderr)["note"]
    assert "the index caught up with 2 record folders changed outside memo" in note
    assert "1 added" in note and "1 removed" in note
    report = json.loads(ran.stdout)
    # c is b's copy: the same 45 minutes of the same client, billed once (the overlap policy)
    assert report["totalDurationMinutes"] == 90 + 45 and report["totalPrompts"] == 4
    [copy] = [s for s in report["sessions"] if s["sessionId"] == "c"]
    assert (copy["durationMinutes"], copy["billedMinutes"]) == (45, 0)
    assert "prompt-b-t3" not in ids(vault)


def test_a_folder_that_only_gained_a_temporary_file_or_a_conflict_copy_is_caught_up_quietly(recorded):
    vault, before = recorded
    prompts = vault / "projects/p/prompts"
    (prompts / ".prompt-a-t9.md.abcd1234.tmp").write_bytes(b"---\nid: prompt-a-t9\nki")  # a killed writer's
    (prompts / "prompt-a-t1.conflict-20260302T100000Z-0123abcd.md").write_text("the other machine's version")
    ran = ok(vault, "--json", "activity", "--all")
    assert ran.stderr == "" and json.loads(ran.stdout) == before
    store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
    assert freshness.check(store.conn, store.layout) is None  # the new folder time is recorded
    store.close()


def test_the_check_on_open_and_the_write_path_read_no_record_file(tmp_path, monkeypatch):
    root = tmp_path / "v"
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    for n in range(60):
        record_prompt(store, RecordPromptRequest(body=f"turn {n}", session_id=f"s{n % 30}", project=f"p{n % 30}"))
    store.close()

    def no_reading(*_args, **_kwargs):
        raise AssertionError("a record file was read")

    monkeypatch.setattr(reindex, "read_placed_record", no_reading)
    again = VaultStore(Settings(vault_root=root, timezone="UTC"))
    assert freshness.check(again.conn, again.layout) is None and again.repairs == []
    for n in range(10):
        record_prompt(again, RecordPromptRequest(body=f"more {n}", session_id="s1", project="p1"))
    assert again.repairs == []
    assert again.conn.execute("SELECT count(*) FROM records WHERE kind = 'prompt'").fetchone()[0] == 70
    again.close()


# ---------------------------------------------------------------- D: a read-only index


def _unprivileged(vault: Path, *args: str) -> subprocess.CompletedProcess:
    """``memo`` as a process that file permissions apply to (root loses its override)."""
    command = [sys.executable, "-m", "memo_analytics", "--vault-root", str(vault), *args]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: a read-only file is writable")
        command = [setpriv, "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search", "--reuid=0", *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "MEMO_VAULT"})


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_read_only_index_is_named_and_never_moved_or_rebuilt(tmp_path, what):
    vault = tmp_path / "v"
    ok(vault, "prompt", "record", "--body", "keep me", "--session-id", "s", "--project", "p")
    ok(vault, "reindex")  # the WAL checkpointed into the file
    meta = vault / ".memo"
    index = meta / "index.sqlite"
    target = index if what == "file" else meta
    mode = target.stat().st_mode
    target.chmod(0o444 if what == "file" else 0o555)
    try:
        before = _snapshot(meta)
        # reads answer from the index as it is (found by an operator: a vault mounted read-only, or a
        # full disk, refused every read as a write)
        listed = _unprivileged(vault, "--json", "prompt", "list", "--all")
        assert listed.returncode == 0 and [i["body"] for i in json.loads(listed.stdout)["items"]] == ["keep me"]
        assert json.loads(_unprivileged(vault, "--json", "activity", "--all").stdout)["totalPrompts"] == 1
        for args in (["reindex"], ["prompt", "record", "--body", "x", "--session-id", "s", "--project", "p"]):
            proc = _unprivileged(vault, *args)
            assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
            said = proc.stderr
            if "--json" in args:
                said = f"error: {json.loads(said)['error']}\n"
            assert said == f"error: index is read-only: {index}\n", (args, proc.stderr)
            assert proc.stdout == ""
        assert _snapshot(meta) == before  # not set aside, not rebuilt, not even touched
        assert not list(meta.glob("*damaged*"))
    finally:
        target.chmod(stat.S_IMODE(mode))
    assert ids(vault) == ["prompt-s-t1"]


# ---------------------------------------------------------------- E: terminal output


def _clean(text: str) -> bool:
    return not any(c in text for c in CONTROL)


def test_stored_text_reaches_a_terminal_without_control_characters_and_json_stays_exact(tmp_path):
    vault = tmp_path / "v"
    refused = memo(vault, "session", "start", "e", "--project", "p", "--client", f"Acme {HOSTILE}")
    assert refused.code == 1 and "Invalid client: holds the control character" in refused.stderr  # printed on invoices
    ok(vault, "session", "start", "e", "--project", "p", "--client", "Acme", "--summary", f"sum {HOSTILE}",
       "--start-time", "2026-03-02T09:00:00Z")
    ok(vault, "prompt", "record", "--body", f"body {HOSTILE} tail", "--session-id", "e", "--project", "p",
       "--tag", f"t{HOSTILE}", "--created", "2026-03-02T09:10:00Z")
    ok(vault, "session", "end", "e", "--until", "2026-03-02T10:00:00Z", "--summary", f"done {HOSTILE}",
       "--next-step", f"next {HOSTILE}")
    (vault / "projects/p/prompts" / f"broken\x1b[2J\x1b]0;t\x07.md").write_text("no frontmatter")
    for args in (["prompt", "list", "--all"], ["prompt", "search", "body", "--all"], ["prompt", "get", "prompt-e-t1"],
                 ["session", "show", "e"], ["session", "show", "--all"], ["activity", "--all"],
                 ["session", "handoff", "--all"], ["reindex"]):
        ran = memo(vault, *args)
        assert ran.code == 0, (args, ran.stderr)
        assert _clean(ran.stdout) and _clean(ran.stderr), (args, ran.stdout, ran.stderr)
    body = ok(vault, "prompt", "get", "prompt-e-t1").stdout.split("\n\n", 1)[1]  # after the frontmatter lines
    assert body.startswith("body RED end\n tail") and "pwned" not in body and "aGk=" not in body
    assert "skipped: Cannot parse" in memo(vault, "reindex").stderr  # the file name, cleaned
    record = as_json(vault, "prompt", "get", "prompt-e-t1")
    assert record["body"] == f"body {HOSTILE} tail".replace("\r", "\n")
    assert as_json(vault, "session", "show", "e")["session"]["summary"] == f"done {HOSTILE}".strip()


def test_a_record_folder_that_cannot_be_read_is_named_by_reindex_and_activity(tmp_path):
    """Found by a tester of bad files: with ``chmod 000 projects/ccp/prompts`` reindex said
    "indexed 3 records, skipped 0 files" and ``memo activity`` "prompts: 0" (39 before), the AI
    cost gone, without a word. The folder is named as left out, by both."""
    vault = tmp_path / "v"
    for turn in (1, 2):
        ok(vault, "prompt", "record", "--body", f"turn {turn}", "--session-id", "s", "--project", "ccp")
    folder = vault / "projects/ccp/prompts"
    folder.chmod(0)
    try:
        rebuilt = _unprivileged(vault, "reindex")
        assert rebuilt.stdout.strip() == "indexed 0 records, skipped 1 files", rebuilt
        assert f"skipped: Cannot parse {folder}: the folder cannot be read (Permission denied): its records are left " \
               "out of the index and every report" in rebuilt.stderr
        report = _unprivileged(vault, "activity", "--all")  # refused, or a note: the folder named either way
        assert "projects/ccp/prompts" in report.stderr and "Permission denied" in report.stderr, report
    finally:
        folder.chmod(0o755)
