"""``memo watch`` and ``memo import auto`` (issue 14 point 4): a live transcript is imported as
it grows, survives truncation and rotation, the watcher idles on file-system events and stops
cleanly on SIGTERM and SIGINT. The watcher runs as its own process: signals and the event loop
are what is tested."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.inprocess import memo

SESSION = "0d3c5b1a-7e2f-4a6b-9c8d-1e2f3a4b5c6d"


def line(kind: str, uuid: str, at: str, text: str, cwd: str = "/home/ana/code/shop") -> str:
    message = {"role": kind, "content": text if kind == "user" else [{"type": "text", "text": text}]}
    return json.dumps({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd,
                       "sessionId": SESSION, "version": "2.1.200", "type": kind, "message": message,
                       "uuid": uuid, "timestamp": at}) + "\n"


#: A conversation's first exchange: the person's prompt at 09:00 and the agent's answer at 09:03.
def first_exchange() -> str:
    return (line("user", "u1", "2026-11-30T09:00:00.000Z", "Add the CSV export")
            + line("assistant", "a1", "2026-11-30T09:03:00.000Z", "Done."))


def watcher(tmp_path: Path, folder: Path, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMO_")}
    env.update(HOME=str(tmp_path / "home"), MEMO_VAULT=str(tmp_path / "v"), MEMO_CONFIG=str(tmp_path / "none.toml"),
               MEMO_TIMEZONE="UTC")
    return subprocess.Popen([sys.executable, "-m", "memo_analytics", "--json", "watch", "--only", str(folder),
                             "--debounce-ms", "100", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def home_watcher(tmp_path: Path, home: Path) -> subprocess.Popen:
    """``memo --json watch`` of the known folders under ``home`` (its HOME), into ``tmp_path/v``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMO_")}
    env.update(HOME=str(home), MEMO_VAULT=str(tmp_path / "v"), MEMO_CONFIG=str(tmp_path / "none.toml"),
               MEMO_TIMEZONE="UTC")
    return subprocess.Popen([sys.executable, "-m", "memo_analytics", "--json", "watch", "--debounce-ms", "100"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def watching_a_transcript(tmp_path: Path, folder_name: str) -> tuple[Path, subprocess.Popen]:
    """A Claude Code transcript of :func:`first_exchange` in ``projects/<folder_name>``, and a
    watcher of that folder."""
    folder = tmp_path / "claude" / ".claude" / "projects" / folder_name
    folder.mkdir(parents=True)
    transcript = folder / f"{SESSION}.jsonl"
    transcript.write_text(first_exchange())
    return transcript, watcher(tmp_path, folder)


def wait_for(proc: subprocess.Popen, predicate, timeout: float = 30.0) -> list[dict]:
    """Read the watcher's JSON lines until ``predicate(lines)`` holds."""
    import selectors

    seen: list[dict] = []
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while not predicate(seen):
        assert time.monotonic() < deadline, f"the watcher did not import in time: {seen}"
        if selector.select(timeout=0.5):
            text = proc.stdout.readline()
            assert text, f"the watcher ended: {proc.stderr.read()}"
            seen.append(json.loads(text))
    return seen


def ended(proc: subprocess.Popen) -> str:
    """The watcher killed if it still runs, its pipes closed; what it wrote on stderr."""
    if proc.poll() is None:
        proc.kill()
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.stderr.close()
    return stderr


@contextmanager
def running(proc: subprocess.Popen):
    """The watcher for the block; on leaving it, stopped by SIGTERM (it must exit 0), else killed."""
    try:
        yield proc
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        ended(proc)


def turns(vault: Path) -> list[str]:
    listed = json.loads(memo("--json", "prompt", "list", "--all", "--sort", "date-asc", "--limit", "100",
                             vault=vault).stdout)
    return [item["body"] for item in listed["items"]]


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_a_growing_transcript_is_imported_as_it_grows_and_the_watcher_stops_cleanly(tmp_path, how):
    transcript, proc = watching_a_transcript(tmp_path, "-home-ana-code-shop")
    folder = transcript.parent
    try:
        first = wait_for(proc, lambda seen: len(seen) >= 1)
        assert (first[0]["turns"], first[0]["sessions"], first[0]["source"]) == (1, 1, "claude-code")
        with open(transcript, "a") as handle:  # the agent writes on
            handle.write(line("user", "u2", "2026-11-30T09:05:00.000Z", "Now the tests"))
            handle.write(line("assistant", "a2", "2026-11-30T09:12:00.000Z", "Added."))
        grown = wait_for(proc, lambda seen: len(seen) >= 1)
        assert grown[0]["turns"] == 1 and grown[0]["sessions"] == 0  # the new turn; the session stretched
        # rotation: the agent starts another file
        (folder / "second.jsonl").write_text(line("user", "u9", "2026-11-30T10:00:00.000Z", "Another conversation")
                                             .replace(SESSION, "11111111-2222-4333-8444-555555555555"))
        rotated = wait_for(proc, lambda seen: any(s["path"].endswith("second.jsonl") for s in seen))
        assert [s["turns"] for s in rotated if s["path"].endswith("second.jsonl")] == [1]
        proc.send_signal(how)
        assert proc.wait(15) == 0
    finally:
        stderr = ended(proc)
    assert "Traceback" not in stderr and "stopped: 3 imports" in stderr
    vault = tmp_path / "v"
    assert turns(vault) == ["Add the CSV export", "Now the tests", "Another conversation"]
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert report["totalDurationMinutes"] == 12 + 0  # 09:00–09:12, and a one-prompt session of 0 minutes


def test_once_imports_what_changed_since_the_last_run_and_a_truncated_file_is_read_whole(tmp_path):
    folder = tmp_path / "t" / ".claude" / "projects" / "p"
    folder.mkdir(parents=True)
    transcript = folder / f"{SESSION}.jsonl"
    transcript.write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "first"))
    vault = tmp_path / "v"
    env = {"HOME": str(tmp_path / "home")}
    ran = json.loads(memo("--json", "watch", "--only", "--once", str(folder), vault=vault, env=env).stdout)
    assert ran["turns"] == 1
    again = memo("--json", "watch", "--only", "--once", str(folder), vault=vault, env=env)
    assert again.stdout == ""  # nothing changed: nothing imported, not even read
    transcript.write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "first")[:40])  # truncated mid-line
    cut = json.loads(memo("--json", "watch", "--only", "--once", str(folder), vault=vault, env=env).stdout)
    assert cut["turns"] == 0 and turns(vault) == ["first"]  # nothing lost


def test_the_watcher_tells_a_person_what_it_took_in_not_each_pass_of_the_agent_writing(tmp_path):
    """While an agent works its transcript changes every few seconds with its own lines (answers,
    tool calls) and sometimes ends in half a line: a pass that takes in no turn and skips nothing
    prints no line for a person (only the count at the end) — with ``--json`` every pass is a line."""
    folder = tmp_path / "t" / ".claude" / "projects" / "p"
    folder.mkdir(parents=True)
    transcript = folder / f"{SESSION}.jsonl"
    transcript.write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "first"))
    vault = tmp_path / "v"
    env = {"HOME": str(tmp_path / "home")}
    took = memo("watch", "--only", "--once", str(folder), vault=vault, env=env)
    assert "files 1, sessions 1, turns 1, skipped 0" in took.stdout and "done: 1 import\n" in took.stderr
    with open(transcript, "a") as handle:  # the agent answers, and is writing its next line
        handle.write(line("assistant", "a1", "2026-11-30T09:04:00.000Z", "Done."))
        handle.write(line("assistant", "a2", "2026-11-30T09:06:00.000Z", "And the tests.")[:50])
    quiet = memo("watch", "--only", "--once", str(folder), vault=vault, env=env)
    assert quiet.stdout == ""
    assert quiet.stderr == "done: 1 import (1 with nothing new to tell: not shown)\n"
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert report["totalDurationMinutes"] == 4  # the session stretched to the answer all the same
    with open(transcript, "a") as handle:
        handle.write(line("assistant", "a2", "2026-11-30T09:06:00.000Z", "And the tests.")[50:])
    every = json.loads(memo("--json", "watch", "--only", "--once", str(folder), vault=vault, env=env).stdout)
    assert (every["turns"], every["sessions"], every["skipped"], every["pending"]) == (0, 0, 0, 0)


def test_watch_refuses_a_folder_that_does_not_exist_and_import_auto_finds_the_known_ones(tmp_path):
    vault = tmp_path / "v"
    home = tmp_path / "home"
    missing = memo("watch", "--only", str(tmp_path / "nope"), vault=vault, env={"HOME": str(home)}, check=False)
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    nothing = memo("import", "auto", vault=vault, env={"HOME": str(home)}, check=False)
    assert nothing.returncode == 1 and "no known transcript folder" in nothing.stderr
    folder = home / ".claude" / "projects" / "-home-ana-code-shop"
    folder.mkdir(parents=True)
    (folder / f"{SESSION}.jsonl").write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "from auto"))
    found = json.loads(memo("--json", "import", "auto", vault=vault, env={"HOME": str(home)}).stdout)
    assert [(s["source"], s["files"], s["turns"]) for s in found["sources"]] == [("claude-code", 1, 1)]


def test_import_auto_refuses_a_folder_it_cannot_tell_before_it_imports_any(tmp_path):
    """Found by an analyst and a tester of bad files: ``memo import auto GOOD BAD`` said only the
    error on BAD, exit 1, having imported GOOD without its counts (a person reran it, believing it
    failed). Every path is told first: nothing is imported, and the message says so."""
    vault = tmp_path / "v"
    good = tmp_path / "home" / ".claude" / "projects" / "-home-ana-code-shop"
    good.mkdir(parents=True)
    (good / f"{SESSION}.jsonl").write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "from auto"))
    bad = tmp_path / "notes"
    bad.mkdir()
    (bad / "readme.txt").write_text("no transcript here")
    ran = memo("import", "auto", str(good), str(bad), vault=vault, check=False)
    assert ran.returncode == 1 and ran.stderr.startswith(f"error: Invalid path: {bad} holds no transcript memo can "
                                                         "tell"), ran.stderr
    assert ran.stderr.strip().endswith("; nothing imported") and ran.stdout == ""
    assert not (vault / "projects").exists()
    found = json.loads(memo("--json", "import", "auto", str(good), vault=vault).stdout)
    assert [(s["source"], s["files"], s["turns"]) for s in found["sources"]] == [("claude-code", 1, 1)]
    again = memo("import", "auto", str(good), vault=vault).stdout  # (a developer's first hour: the count said)
    assert again == f"claude-code {good}: files 1 (1 unchanged), sessions 0, turns 0, skipped 0\n"


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process's CPU time from /proc (Linux)")
def test_the_watcher_idles_without_cpu(tmp_path):
    folder = tmp_path / "c" / ".claude" / "projects" / "p"
    folder.mkdir(parents=True)
    (folder / f"{SESSION}.jsonl").write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "first"))
    with running(watcher(tmp_path, folder)) as proc:
        wait_for(proc, lambda seen: len(seen) >= 1)
        time.sleep(1.5)  # past start-up and the first wake-up
        before = _cpu_seconds(proc.pid)
        time.sleep(5)
        used = _cpu_seconds(proc.pid) - before
    assert used < 0.25, f"{used:.2f} s of CPU in 5 s of idling"


@pytest.mark.parametrize("how", ["folder made again", "file replaced by a rename"])
def test_the_watcher_follows_a_folder_made_again_and_a_file_replaced_by_a_rename(tmp_path, how):
    import shutil

    folder = tmp_path / "c" / ".claude" / "projects" / "p"
    folder.mkdir(parents=True)
    transcript = folder / f"{SESSION}.jsonl"
    transcript.write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "first"))
    with running(watcher(tmp_path, folder if how == "folder made again" else transcript)) as proc:
        wait_for(proc, lambda seen: len(seen) >= 1)
        grown = transcript.read_text() + line("user", "u2", "2026-11-30T09:05:00.000Z", "second")
        if how == "folder made again":
            shutil.rmtree(folder)
            time.sleep(1.5)
            folder.mkdir()
            transcript.write_text(grown)
        else:
            (folder / "tmp").write_text(grown)
            (folder / "tmp").rename(transcript)  # an editor's atomic save
        wait_for(proc, lambda seen: any(s["turns"] for s in seen))
        more = transcript.read_text() + line("user", "u3", "2026-11-30T09:09:00.000Z", "third")
        (folder / "tmp").write_text(more)
        (folder / "tmp").rename(transcript)  # and again: still followed
        wait_for(proc, lambda seen: any(s["turns"] for s in seen))
    assert turns(tmp_path / "v") == ["first", "second", "third"]


def test_an_opencode_message_written_into_the_json_storage_lands_through_its_session(tmp_path):
    """OpenCode's JSON storage writes each message and part as a file of its own, beside the
    session file (which does not change): the watcher takes them in through their session."""
    from tests.integration.test_importers_cursor_opencode import PID, SID, opencode_messages, opencode_session

    storage = tmp_path / "share" / "opencode" / "storage"
    messages = dict((m["id"], (m, parts)) for m, parts in opencode_messages(SID))

    def write(message_id: str) -> None:
        message, parts = messages[message_id]
        (storage / "message" / SID).mkdir(parents=True, exist_ok=True)
        (storage / "part" / message_id).mkdir(parents=True, exist_ok=True)
        for part in parts:  # the parts first, the message last: as OpenCode does, it sees them as it goes
            (storage / "part" / message_id / f"{part['id']}.json").write_text(json.dumps(part))
        (storage / "message" / SID / f"{message_id}.json").write_text(json.dumps(message))

    (storage / "session" / PID).mkdir(parents=True)
    (storage / "session" / PID / f"{SID}.json").write_text(json.dumps(opencode_session(SID, revert=None)))
    write("msg_01")
    write("msg_02")
    with running(watcher(tmp_path, storage.parent)) as proc:
        first = wait_for(proc, lambda seen: len(seen) >= 1)
        assert (first[0]["source"], first[0]["turns"], first[0]["path"]) == (
            "opencode", 1, str(storage / "session" / PID / f"{SID}.json"))
        write("msg_06")  # the person's next prompt
        later = wait_for(proc, lambda seen: sum(s["turns"] for s in seen) >= 1)
        assert sum(s["turns"] for s in later) == 1
        assert {s["path"] for s in later} == {str(storage / "session" / PID / f"{SID}.json")}
    assert turns(tmp_path / "v") == ["fix the rounding of the cart total", "now add a test for it"]


def test_a_watched_folder_takes_claude_code_sessions_that_open_with_a_snapshot_and_skips_their_sub_agents(realdata, tmp_path):
    """Found by a new user: ``memo watch --only FOLDER`` outside ``~/.claude`` sniffs each file's
    first record. A session whose first line is a ``file-history-snapshot`` is Claude Code's; the
    ``<session>/subagents/`` files beside it are read with the session, not as sessions."""
    from memo_analytics.services.watch import source_of

    folder = realdata / "claude-code-jsonl/moredip-session-share/samples/claude-code-projects"
    main = sorted(folder.glob("*.jsonl"))
    agents = sorted(folder.glob("*/subagents/*.jsonl"))
    assert main and agents
    assert any(json.loads(p.read_text(encoding="utf-8").splitlines()[0])["type"] == "file-history-snapshot" for p in main)
    assert [source_of(p) for p in main] == ["claude-code"] * len(main)
    assert [source_of(p) for p in agents] == [None] * len(agents)
    vault = tmp_path / "v"
    ran = memo("watch", "--only", str(folder), "--once", vault=vault, env={"HOME": str(tmp_path / "home")})
    turns = json.loads(memo("--json", "prompt", "list", "--all", vault=vault).stdout)["total"]
    direct = tmp_path / "direct"
    memo("import", "claude-code", str(folder), vault=direct)
    assert turns == json.loads(memo("--json", "prompt", "list", "--all", vault=direct).stdout)["total"] > 0, ran.stdout


def test_watch_refuses_a_file_no_importer_reads_and_says_when_nothing_changed(tmp_path):
    vault = tmp_path / "v"
    env = {"HOME": str(tmp_path / "home")}
    other = tmp_path / "notes.txt"
    other.write_text("not a transcript")
    refused = memo("watch", "--only", "--once", str(other), vault=vault, env=env, check=False)
    assert (refused.returncode, refused.stderr) == (1, f"error: Invalid path: {other} is not a transcript file (memo "
                                                       "follows *.db, *.json, *.jsonl, *.md, *.vscdb files, or folders)\n")
    folder = tmp_path / "t" / ".claude" / "projects" / "p"
    folder.mkdir(parents=True)
    (folder / f"{SESSION}.jsonl").write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "first"))
    assert memo("watch", "--only", "--once", str(folder), vault=vault, env=env).stderr == "done: 1 import\n"
    again = memo("watch", "--only", "--once", str(folder), vault=vault, env=env)
    assert (again.returncode, again.stderr) == (0, "done: 0 imports (nothing changed since the last run)\n")


def test_a_bad_line_is_told_of_once_not_at_every_pass_of_a_running_watcher(tmp_path):
    """A transcript with a line that is not JSON is read whole at every change (it is small): the
    watcher names that line the first time, not again at every pass the agent's writing causes —
    while a new bad line is named when it comes."""
    folder = tmp_path / "claude" / ".claude" / "projects" / "-home-ana-code-shop"
    folder.mkdir(parents=True)
    transcript = folder / f"{SESSION}.jsonl"
    transcript.write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "Add the CSV export") + "{broken\n")
    proc = watcher(tmp_path, folder)
    try:
        assert wait_for(proc, lambda seen: len(seen) >= 1)[0]["skipped"] == 1
        for n in range(2, 5):
            with open(transcript, "a") as handle:
                handle.write(line("assistant", f"a{n}", f"2026-11-30T09:0{n}:00.000Z", f"step {n}"))
            assert wait_for(proc, lambda seen: len(seen) >= 1)[0]["skipped"] == 1
        with open(transcript, "a") as handle:
            handle.write("{also broken\n")
        assert wait_for(proc, lambda seen: len(seen) >= 1)[0]["skipped"] == 2
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        stderr = ended(proc)
    told = [json.loads(text)["skipped"].split(": ", 1)[1] for text in stderr.splitlines() if '"skipped"' in text]
    assert told == ["line 2: not JSON", "line 6: not JSON"]


def test_a_changed_file_of_a_conversation_over_two_files_is_read_with_its_sibling(realdata, tmp_path):
    """A conversation in two files of one folder (the full transcript, and a copy of its first 80
    lines): the copy cut to 5 lines, as a watcher reads it on its own, made the turn only the full
    file holds look cut — marked superseded, the session 10 minutes shorter, and it stayed so
    after the copy was put back (found by a helper). The watcher now reads the files of the folder
    an import already took in with it: the vault stays as a clean import of the files gives."""
    from memo_analytics.config import Settings
    from memo_analytics.services.importers.common import ImportOptions
    from memo_analytics.services.store import VaultStore
    from memo_analytics.services.watch import FileStates, import_changed

    full = next((realdata / "claude-code-jsonl" / "d-kimuson-claude-code-viewer" / "mock-global-claude-dir" /
                 "projects" / "sample-project").glob("fe5e1c67-*.jsonl"))
    folder = tmp_path / "projects"
    folder.mkdir()
    lines = full.read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "a.jsonl").write_text("".join(lines), encoding="utf-8")
    copy = folder / "b.jsonl"
    copy.write_text("".join(lines[:80]), encoding="utf-8")
    vault = tmp_path / "v"
    memo("import", "claude-code", str(folder), vault=vault)

    def totals(where: Path) -> tuple:
        report = json.loads(memo("--json", "activity", "--all", vault=where).stdout)
        return report["totalDurationMinutes"], report["totalPrompts"]

    clean = totals(vault)
    assert clean == (10, 2)
    store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
    try:
        states = FileStates(vault)
        for cut in (lines[:5], lines[:80]):
            copy.write_text("".join(cut), encoding="utf-8")
            [item] = import_changed(store, [(copy, "claude-code")], ImportOptions(), states)
            assert item.error is None and item.result.superseded == 0
    finally:
        store.close()
    assert totals(vault) == clean


def test_the_watchers_state_keeps_no_path(tmp_path):
    """``.memo/watch.json`` kept each file's path: a folder named like a token rested in the
    vault's folder (found by a helper). It keeps digests of paths now."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    folder = tmp_path / token
    folder.mkdir()
    (folder / "s.jsonl").write_text(line("user", "u1", "2026-03-02T09:00:00.000Z", "first question"), encoding="utf-8")
    vault = tmp_path / "v"
    memo("watch", "--once", "--only", str(folder), vault=vault)
    kept = (vault / ".memo" / "watch.json").read_text(encoding="utf-8")
    assert token not in kept and json.loads(kept)["files"]
    again = memo("watch", "--once", "--only", str(folder), vault=vault)
    assert again.stderr.strip() == "done: 0 imports (nothing changed since the last run)"  # found by its digest


def test_a_transcript_over_the_size_limit_is_named_not_read_and_the_watch_goes_on(tmp_path):
    """A sparse 4 GB `.jsonl` in a watched folder (no disk used): the watcher read it whole, held
    about three times its size and died of MemoryError. Over 1 GB a transcript is named and left;
    the other files are imported."""
    import os

    folder = tmp_path / "t" / ".claude" / "projects" / "p"
    folder.mkdir(parents=True)
    (folder / f"{SESSION}.jsonl").write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "first"))
    huge = folder / "4c0c4c0c-0000-4000-8000-000000000000.jsonl"
    with open(huge, "wb") as handle:
        handle.truncate((1 << 30) + 1)
    assert os.stat(huge).st_blocks == 0  # sparse: the test writes nothing
    vault = tmp_path / "v"
    ran = memo("watch", "--only", "--once", str(folder), vault=vault, env={"HOME": str(tmp_path / "home")})
    assert turns(vault) == ["first"]
    assert "the file is 1,073,741,825 bytes; memo reads transcripts of up to 1,073,741,824 bytes (1 GB)" in ran.stderr


def test_a_watcher_left_running_follows_an_agent_used_for_the_first_time_after_it_started(realdata, tmp_path):
    """Found by a new user: `memo watch` started before Codex was ever run followed only the
    folders that existed then (~/.claude/projects), so a month of Codex sessions went unseen
    until a restart, and its start line did not say so. The known folders not made yet are
    followed once they appear, and the start line names them."""
    import shutil

    home = tmp_path / "home"
    claude = home / ".claude" / "projects" / "p"
    claude.mkdir(parents=True)
    (claude / f"{SESSION}.jsonl").write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "first"))
    proc = home_watcher(tmp_path, home)
    with running(proc):
        wait_for(proc, lambda seen: any(s["source"] == "claude-code" for s in seen))
        [rollout] = sorted((realdata / "codex-rollouts").rglob("rollout-2025-11-27*.jsonl"))
        day = home / ".codex" / "sessions" / "2025" / "11" / "27"
        day.mkdir(parents=True)
        shutil.copy(rollout, day / rollout.name)
        seen = wait_for(proc, lambda seen: any(s["source"] == "codex" and s["turns"] for s in seen))
    assert [s["path"] for s in seen if s["source"] == "codex"] == [str(day / rollout.name)]


def _without_dac_override(tmp_path) -> tuple[list[str], dict[str, str]]:
    """The command prefix and environment that run memo in a process of its own on ``tmp_path``
    (vault ``v``, home ``home``) — as root without the capabilities that pass over file permissions."""
    import shutil

    prefix = []
    if os.geteuid() == 0:
        assert shutil.which("setpriv"), "util-linux setpriv runs memo as root without DAC override"
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMO_")}
    env.update(HOME=str(tmp_path / "home"), MEMO_VAULT=str(tmp_path / "v"), MEMO_CONFIG=str(tmp_path / "none.toml"),
               MEMO_TIMEZONE="UTC")
    return prefix, env


def test_a_folder_that_cannot_be_read_is_said_and_the_rest_is_still_followed(tmp_path):
    """Found by an attacker: one subfolder this user cannot read made the system's events fail
    for the whole root; the watcher re-subscribed every second, failed again, imported nothing
    more and said nothing. It says so once and looks at the readable files instead. (As root,
    the watcher runs without the capabilities that pass over file permissions.)"""
    folder = tmp_path / "claude" / ".claude" / "projects"
    (folder / "open").mkdir(parents=True)
    (folder / "locked").mkdir()
    (folder / "locked" / "x.jsonl").write_text(line("user", "u0", "2026-11-30T08:00:00.000Z", "hidden"))
    (folder / "locked").chmod(0)
    prefix, env = _without_dac_override(tmp_path)
    proc = subprocess.Popen([*prefix, sys.executable, "-m", "memo_analytics", "--json", "watch", "--only", str(folder),
                             "--debounce-ms", "100"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        time.sleep(2)
        (folder / "open" / f"{SESSION}.jsonl").write_text(first_exchange())
        [item] = wait_for(proc, lambda seen: len(seen) >= 1, timeout=20)
        assert item["turns"] == 1 and item["path"].endswith(f"open/{SESSION}.jsonl")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        (folder / "locked").chmod(0o755)
        stderr = ended(proc)
    [warning] = [json.loads(x)["warning"] for x in stderr.splitlines() if x.startswith('{"warning"')]
    assert "locked" in warning and "Permission denied" in warning and "looking at the readable files" in warning
    assert turns(tmp_path / "v") == ["Add the CSV export"]


def test_a_file_named_that_no_importer_tells_is_refused_not_passed_over_as_unchanged(tmp_path):
    """Found by a tester: ``memo watch --once --only FILE`` of a Gemini chat cut in half, or of a
    file of NUL bytes, said "done: 0 imports (nothing changed since the last run)", exit 0, on a new
    vault. A file named that no importer tells is refused naming it (left running: a warning)."""
    vault, env = tmp_path / "v", {"HOME": str(tmp_path / "home")}
    cut = tmp_path / "chat.json"
    cut.write_text('{"sessionId": "g1", "projectHash": "ab", "messages": [{"type": "user", "content": "hal')
    zeros = tmp_path / "zeros.jsonl"
    zeros.write_bytes(b"\0" * 5000)
    for given in (cut, zeros):
        ran = memo("watch", "--once", "--only", str(given), vault=vault, env=env, check=False)
        assert ran.returncode == 1 and ran.stderr.startswith(f"error: Invalid path: {given}: no importer tells it "
                                                             "as a transcript"), ran
    assert not vault.exists()


def test_a_sub_agents_file_is_its_sessions_transcript_to_the_watcher(tmp_path):
    """A Claude Code sub-agent's file (``<session>/subagents/``) changing is its session's
    transcript changing: the watcher imports the transcript, and the sub-agent's tokens count."""
    from memo_analytics.services.importers import claude_code

    transcript = tmp_path / "p" / f"{SESSION}.jsonl"
    sub = tmp_path / "p" / SESSION / "subagents" / "agent-a1.jsonl"
    sub.parent.mkdir(parents=True)
    transcript.write_text("")
    sub.write_text("")
    assert claude_code.session_of(sub) == transcript
    assert claude_code.session_of(transcript) is None
    transcript.unlink()
    assert claude_code.session_of(sub) is None  # a sub-agent's file whose transcript is not there


def test_a_file_that_fails_alike_on_every_retry_is_said_once_until_it_fails_otherwise(tmp_path, monkeypatch):
    """Found by an operator: with the vault's disk full, ``memo watch`` printed one line per waiting
    file every 30 s (8 lines a minute here; a weekend, ~23,000). A failure is said once per file
    until the file imports or fails otherwise. (The watcher's passes are replayed: a disk full
    for a minute is not a test.)"""
    from memo_analytics.services import watch as watching
    from memo_analytics.services.importers.common import ImportResult

    full = "No space left on the disk of the vault: nothing is damaged"
    passes = [[("a.jsonl", full), ("b.jsonl", full)], [("a.jsonl", full), ("b.jsonl", full)],
              [("a.jsonl", "the vault is busy")], [("a.jsonl", None)], [("a.jsonl", full)]]

    def replay(store, roots, options, on_import, stop, **_):
        for one in passes:
            for name, error in one:
                on_import(watching.Imported(tmp_path / name, "claude-code", ImportResult(), error=error))

    monkeypatch.setattr(watching, "watch", replay)
    (tmp_path / "v" / "projects").mkdir(parents=True)
    ran = memo("watch", "--only", str(tmp_path), vault=tmp_path / "v")
    said = [line.split(" ", 1)[1] for line in ran.stderr.splitlines() if "not imported" in line]
    assert [line.split(": not imported: ")[0].rsplit("/", 1)[1] + ": " + line.split(": not imported: ")[1].split(" (")[0]
            for line in said] == [f"a.jsonl: {full}", f"b.jsonl: {full}", "a.jsonl: the vault is busy",
                                  f"a.jsonl: {full}"]


def test_a_file_name_that_is_not_utf8_is_said_once_and_the_watch_goes_on(tmp_path):
    """Found by a tester of bad files: a transcript named with bytes that are not UTF-8 killed a
    running ``memo watch`` with a traceback from the event library ("Unable to decode path"), and
    again after each restart once the file changed. The watcher says so once and looks at the
    files instead; such a file is imported, and so are the others. Its ``--json`` line is UTF-8
    (the name's bytes escaped, as ``json`` and ``os.fsencode`` read them back)."""
    folder = tmp_path / "claude" / ".claude" / "projects" / "shop"
    folder.mkdir(parents=True)
    odd = os.path.join(os.fsencode(folder), b"x\xff\xfey.jsonl")
    proc = watcher(tmp_path, folder)
    try:
        time.sleep(2)
        with open(odd, "w") as handle:
            handle.write(first_exchange())
        [first] = wait_for(proc, lambda seen: len(seen) >= 1, timeout=20)
        assert os.fsencode(first["path"]) == odd
        time.sleep(1)
        with open(odd, "a") as handle:  # it changes again: the watcher goes on
            handle.write(line("user", "u2", "2026-11-30T09:05:00.000Z", "Now the PDF"))
        time.sleep(1)
        (folder / "other.jsonl").write_text(line("user", "v1", "2026-11-30T10:00:00.000Z", "Fix the login")
                                            .replace(SESSION, "1d3c5b1a-7e2f-4a6b-9c8d-1e2f3a4b5c6d"))
        wait_for(proc, lambda seen: any(s["path"].endswith("other.jsonl") for s in seen), timeout=30)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        stderr = ended(proc)
    assert "Traceback" not in stderr
    warnings = [json.loads(x)["warning"] for x in stderr.splitlines() if x.startswith('{"warning"')]
    assert len(warnings) == 1 and "not UTF-8" in warnings[0], stderr
    assert sorted(turns(tmp_path / "v")) == ["Add the CSV export", "Fix the login", "Now the PDF"]


def test_a_vault_moved_while_the_watch_runs_stops_it_and_makes_no_second_vault(tmp_path):
    """Found by an operator: ``mv ~/.memo/vault /elsewhere`` while ``memo watch`` ran — its next
    import made a second, empty vault at the old path, and the index still open in the moved vault
    was brought in line with that empty folder ("6 removed"): the moved vault's sessions billed
    ``internal`` until a reindex. The watcher stops and says so; the moved vault is as it was."""
    transcript, proc = watching_a_transcript(tmp_path, "shop")
    try:
        wait_for(proc, lambda seen: len(seen) >= 1, timeout=20)
        (tmp_path / "v").rename(tmp_path / "moved")
        with transcript.open("a") as handle:
            handle.write(line("user", "u2", "2026-11-30T09:05:00.000Z", "Now the PDF"))
        assert proc.wait(20) == 1
    finally:
        stderr = ended(proc)
    assert "was moved or removed while memo ran" in stderr and "Traceback" not in stderr
    assert not (tmp_path / "v").exists()
    assert turns(tmp_path / "moved") == ["Add the CSV export"]
    shown = json.loads(memo("--json", "activity", "--all", vault=tmp_path / "moved").stdout)
    assert shown["totalSessions"] == 1 and shown["totalPrompts"] == 1


def test_a_watcher_started_before_any_agent_ran_waits_for_its_folder(tmp_path):
    """Found by an operator: ``memo watch`` on a machine where no agent had run yet said "watching
    (and ~/.claude/projects, … once made)", then exited 1 ("nothing to watch") — the README says
    a store made later is followed once it appears. It waits, and imports the first transcript."""
    home = tmp_path / "home"
    home.mkdir()
    proc = home_watcher(tmp_path, home)
    with running(proc):
        time.sleep(3)
        assert proc.poll() is None, proc.stderr.read()
        folder = home / ".claude" / "projects" / "-home-ana-code-shop"
        folder.mkdir(parents=True)
        (folder / f"{SESSION}.jsonl").write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "the first prompt"))
        wait_for(proc, lambda seen: any(item.get("turns") for item in seen), timeout=60)
    assert turns(tmp_path / "v") == ["the first prompt"]


def test_import_auto_says_the_new_sessions_bill_internal_as_an_importer_does(tmp_path):
    """Found by a freelancer: ``memo import auto`` — the newcomer's first command — never said the
    new sessions bill 'internal' (nor the way to file them), where ``memo import claude-code`` does."""
    folder = tmp_path / "home" / ".claude" / "projects" / "-home-ana-code-shop"
    folder.mkdir(parents=True)
    (folder / f"{SESSION}.jsonl").write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "from auto"))
    ran = memo("import", "auto", str(folder), vault=tmp_path / "v")
    assert "note: the new sessions have no client, so they bill to 'internal'" in ran.stderr
    assert "memo project client PROJECT NAME" in ran.stderr


def test_import_auto_names_a_file_it_cannot_read_with_why(tmp_path):
    """Found by a tester: a transcript of no read permission in a folder given to ``memo import
    auto`` was called "1 file no importer tells … give its importer" (``skipped 0``); it is named
    with "Permission denied" and counted skipped, the readable one imported. (As root, memo runs
    without the capabilities that pass over file permissions.)"""
    folder = tmp_path / "given"
    folder.mkdir()
    (folder / f"{SESSION}.jsonl").write_text(first_exchange())
    locked = folder / "0000aaaa-1111-4222-8333-444455556666.jsonl"
    locked.write_text(line("user", "u9", "2026-11-30T08:00:00.000Z", "hidden"))
    locked.chmod(0)
    prefix, env = _without_dac_override(tmp_path)
    try:
        ran = subprocess.run([*prefix, sys.executable, "-m", "memo_analytics", "--json", "import", "auto", str(folder)],
                             capture_output=True, text=True, env=env, timeout=120)
    finally:
        locked.chmod(0o644)
    assert ran.returncode == 0, ran.stderr
    assert "no importer tells" not in ran.stderr
    assert f"{locked}: Permission denied" in ran.stderr, ran.stderr
    assert '"skipped": 1' in ran.stdout, ran.stdout
    assert turns(tmp_path / "v") == ["Add the CSV export"]


def test_import_auto_names_a_pipe_a_link_to_nothing_and_a_link_loop_it_left_out(tmp_path):
    """Found by a tester: `memo import auto DIR` imported the one transcript and said nothing of a
    FIFO, a link to nothing and two links in a loop beside it (`memo import claude-code` names each)."""
    folder = tmp_path / "given"
    folder.mkdir()
    (folder / f"{SESSION}.jsonl").write_text(first_exchange())
    os.mkfifo(folder / "pipe.jsonl")
    (folder / "dangling.jsonl").symlink_to(folder / "nowhere.jsonl")
    (folder / "a.jsonl").symlink_to(folder / "b.jsonl")
    (folder / "b.jsonl").symlink_to(folder / "a.jsonl")
    ran = memo("--json", "import", "auto", str(folder), vault=tmp_path / "v")
    [item] = json.loads(ran.stdout)["sources"]
    assert item["skipped"] == 4 and item["turns"] == 1
    for name in ("pipe.jsonl", "dangling.jsonl", "a.jsonl", "b.jsonl"):
        assert any(error.startswith(f"{folder / name}: ") for error in item["errors"]), name
    human = memo("import", "auto", str(folder), vault=tmp_path / "v2")
    assert f"skipped: {folder / 'pipe.jsonl'}: not a regular file" in human.stderr


def test_a_folders_file_no_importer_tells_is_named_by_a_run_once(tmp_path):
    """Found by a tester of bad files: `memo watch --once --only DIR` of a folder holding a corrupt
    transcript said only "done: 0 imports (nothing changed since the last run)" on a new vault."""
    folder = tmp_path / "u8"
    folder.mkdir()
    (folder / "bad.jsonl").write_bytes(b"\xff\xfe\n")
    ran = memo("watch", "--once", "--only", str(folder), vault=tmp_path / "v", env={"HOME": str(tmp_path / "home")},
               check=False)
    assert f"warning: 1 file no importer tells as a transcript passed over ({folder / 'bad.jsonl'}): memo import " \
           "SOURCE FILE reads one" in " ".join(ran.stderr.split()), ran.stderr


def test_a_file_refused_over_a_broken_session_file_is_taken_in_once_that_file_is_mended(tmp_path):
    """Found by a tester of bad files: with the session's file broken by hand, the watcher's import
    of the grown transcript was refused (rightly) but the file was noted as taken in — mended and
    reindexed, ``memo watch --once`` said "nothing changed since the last run", exit 0, and the
    third turn stayed missing until a ``memo import``. It fails (exit 1) and is tried again."""
    folder = tmp_path / "t" / ".claude" / "projects" / "p"
    folder.mkdir(parents=True)
    transcript = folder / f"{SESSION}.jsonl"
    transcript.write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "first")
                          + line("user", "u2", "2026-11-30T09:10:00.000Z", "second"))
    vault = tmp_path / "v"
    env = {"HOME": str(tmp_path / "home")}
    memo("watch", "--only", "--once", str(folder), vault=vault, env=env)
    [session] = (vault / "projects").glob("*/sessions/*.md")
    good = session.read_text(encoding="utf-8")
    session.write_text(good.replace("status: completed", "status: [completed"), encoding="utf-8")
    with transcript.open("a") as grown:
        grown.write(line("user", "u3", "2026-11-30T09:20:00.000Z", "third"))
    refused = memo("watch", "--only", "--once", str(folder), vault=vault, env=env, check=False)
    assert refused.returncode == 1 and "not imported" in refused.stderr, refused.stderr
    session.write_text(good, encoding="utf-8")
    memo("reindex", vault=vault, env=env)
    mended = memo("watch", "--only", "--once", str(folder), vault=vault, env=env)
    assert "nothing changed" not in mended.stderr, mended.stderr
    assert turns(vault) == ["first", "second", "third"]


def test_a_folder_moved_in_whole_is_imported_by_the_running_watcher(tmp_path):
    """Found by a tester of bad files: a project folder moved into ``~/.claude/projects`` with
    ``mv`` (one event, for the folder) was never imported by a running ``memo watch``; a file
    moved in, or a folder copied in, was."""
    home = tmp_path / "home"
    projects = home / ".claude" / "projects"
    (projects / "-home-ana-code-shop").mkdir(parents=True)
    (projects / "-home-ana-code-shop" / f"{SESSION}.jsonl").write_text(first_exchange())
    proc = home_watcher(tmp_path, home)  # the known folders, as memo watch follows them
    with running(proc):
        wait_for(proc, lambda seen: len(seen) >= 1)
        outside = tmp_path / "elsewhere" / "-home-ana-code-web"
        outside.mkdir(parents=True)
        (outside / "moved.jsonl").write_text(line("user", "u9", "2026-11-30T10:00:00.000Z", "Moved in whole")
                                             .replace(SESSION, "11111111-2222-4333-8444-555555555555"))
        outside.rename(projects / outside.name)
        moved = wait_for(proc, lambda seen: any(s["path"].endswith("moved.jsonl") for s in seen))
        assert [s["turns"] for s in moved if s["path"].endswith("moved.jsonl")] == [1]


def test_a_known_folder_named_again_is_watched_once(tmp_path):
    """Found by a breaker: `memo watch ~/.claude/projects` said "watching …/.claude/projects,
    …/.claude/projects" (the known folder, and the one named)."""
    home = tmp_path / "home"
    projects = home / ".claude" / "projects"
    projects.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMO_")}
    env.update(HOME=str(home), MEMO_VAULT=str(tmp_path / "v"), MEMO_CONFIG=str(tmp_path / "none.toml"))
    said = ""
    with running(subprocess.Popen([sys.executable, "-m", "memo_analytics", "watch", str(projects)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)) as proc:
        deadline = time.monotonic() + 30
        while "watching" not in said and time.monotonic() < deadline:
            said += proc.stderr.readline()
    assert "watching" in said and said.count(str(projects)) == 1, said


def test_a_running_watcher_names_a_file_no_importer_tells_once(tmp_path):
    """Found by a tester of bad files: a transcript written as UTF-16 into a watched folder went by
    without a word ("stopped: 0 imports"); a run once named it, a running watcher did not. (A folder
    of no agent's: each file told by its first line.)"""
    folder = tmp_path / "p"
    folder.mkdir(parents=True)
    (folder / f"{SESSION}.jsonl").write_text(first_exchange())
    proc = watcher(tmp_path, folder)
    try:
        wait_for(proc, lambda seen: any(item.get("turns") for item in seen))  # following the folder now
        bad = folder / "a.jsonl"
        bad.write_bytes(first_exchange().encode("utf-16"))
        time.sleep(1.5)
        bad.write_bytes(first_exchange().encode("utf-16") * 2)  # changed again: said once
        time.sleep(1.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        stderr = ended(proc)
    said = [json.loads(line)["warning"] for line in stderr.splitlines() if line.startswith('{"warning"')]
    assert said.count(f"{bad}: no importer tells it as a transcript: passed over (memo import SOURCE FILE reads it "
                      "as that agent's and says what is wrong)") == 1, stderr
