"""A full disk under the vault: every interface says so in one line (not "the index is damaged",
which sent people to ``memo reindex`` on a disk with no room for it), nothing is torn or half
written, and everything works again once space is freed. The vault lies on a real tmpfs of 2 MB
that the test mounts (root only: where it cannot mount, the tests say so and are skipped); the
SQLite case of ``SQLITE_FULL`` is also produced without a mount, by SQLite's own page limit."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from memo_analytics.config import Settings
from memo_analytics.domain.errors import DiskFullError, disk_full
from memo_analytics.services.importers.common import ImportOptions
from memo_analytics.services.store import VaultStore
from memo_analytics.services.watch import RETRY_AFTER_SECONDS, FileStates, import_changed
from tests.inprocess import memo, tool_calls

from .test_watch import SESSION, line


class Disk:
    """A tmpfs of ``size`` mounted at ``root``; :meth:`fill` takes every free byte, :meth:`free`
    gives them back."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.filler = root / "filler"

    def fill(self) -> None:
        with open(self.filler, "ab") as handle:
            try:
                while True:
                    handle.write(b"\0" * 65536)
                    handle.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC

    def free(self) -> None:
        self.filler.unlink()


@pytest.fixture
def disk(tmp_path):
    root = tmp_path / "disk"
    root.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(root)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield Disk(root)
    finally:
        subprocess.run(["umount", "-l", str(root)], check=False)


def message(vault: Path) -> str:
    return str(DiskFullError(str(vault)))


def test_the_cli_says_the_disk_is_full_writes_nothing_and_works_once_space_is_back(disk, tmp_path):
    vault = disk.root / "v"
    memo("session", "start", "s1", "--project", "p", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "p", "--body", "first", vault=vault)
    before = sorted(p.relative_to(vault) for p in vault.rglob("*") if p.is_file())
    transcript = tmp_path / "t" / "projects" / "app" / f"{SESSION}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "from the transcript"))
    disk.fill()
    for command in (["prompt", "record", "--session-id", "s1", "--project", "p", "--body", "second " * 2000],
                    ["import", "claude-code", str(transcript.parent.parent)],
                    ["session", "start", "s2", "--project", "p"]):
        refused = memo(*command, vault=vault, check=False)
        assert (refused.returncode, refused.stderr) == (1, f"error: {message(vault)}\n"), command
    after = sorted(p.relative_to(vault) for p in vault.rglob("*") if p.is_file() and not p.name.endswith(("-wal", "-shm")))
    assert [p for p in after if p not in before] == []  # no record, no temporary file left
    disk.free()
    memo("prompt", "record", "--session-id", "s1", "--project", "p", "--body", "second", vault=vault)
    memo("import", "claude-code", str(transcript.parent.parent), vault=vault)
    listed = json.loads(memo("--json", "prompt", "list", "--all", "--sort", "date-asc", vault=vault).stdout)["items"]
    assert sorted(item["body"] for item in listed) == ["first", "from the transcript", "second"]
    assert [item["turn"] for item in listed if item["sessionId"] == "s1"] == [1, 2]  # no turn number lost


def test_the_mcp_tool_says_the_disk_is_full(disk):
    vault = disk.root / "v"
    memo("session", "start", "s1", "--project", "p", vault=vault)
    disk.fill()
    [(is_error, text)] = tool_calls(vault, [{"action": "record", "projectId": "p", "sessionId": "s1",
                                             "body": "a turn " * 3000}])
    assert is_error and text == f"Error executing tool prompt: {message(vault)}"
    disk.free()
    [(is_error, text)] = tool_calls(vault, [{"action": "record", "projectId": "p", "sessionId": "s1",
                                             "body": "a turn"}])
    assert not is_error and json.loads(text)["turn"] == 1


def test_the_watcher_reports_a_failed_import_and_takes_the_file_in_later(disk, tmp_path):
    """A watcher left running must not die, nor stay silent, when the disk fills: the import of
    the file fails with the reason, the file is tried again (at its next change, or after
    ``RETRY_AFTER_SECONDS``) and once space is back its turns come in."""
    vault = disk.root / "v"
    transcript = tmp_path / "t" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    transcript.write_text(line("user", "u1", "2026-11-30T09:00:00.000Z", "first"))
    store = VaultStore(Settings(vault_root=vault))
    try:
        states = FileStates(vault)
        [took] = import_changed(store, [(transcript, "claude-code")], ImportOptions(), states)
        assert (took.error, took.result.turns) == (None, 1)
        with open(transcript, "a") as handle:
            handle.write(line("user", "u2", "2026-11-30T09:05:00.000Z", "second " * 2000))
        disk.fill()
        [failed] = import_changed(store, [(transcript, "claude-code")], ImportOptions(), states)
        assert failed.error == message(vault) and failed.wire()["error"] == message(vault)
        assert states.due() == [] and states.due(time.monotonic() + RETRY_AFTER_SECONDS) == [(transcript, "claude-code")]
        disk.free()
        [again] = import_changed(store, states.due(time.monotonic() + RETRY_AFTER_SECONDS), ImportOptions(), states)
        assert (again.error, again.result.turns) == (None, 1) and states.failed == {}
    finally:
        store.close()


def test_sqlite_full_is_a_full_disk_and_other_errors_are_not(tmp_path):
    """``SQLITE_FULL`` as SQLite raises it at its page limit (no mount needed), ``ENOSPC`` from the
    file system: both a full disk; a locked database or a missing file is not."""
    conn = sqlite3.connect(tmp_path / "small.sqlite")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("PRAGMA max_page_count = 2")
    with pytest.raises(sqlite3.OperationalError) as full:
        conn.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
    conn.close()
    assert disk_full(full.value, tmp_path)
    assert disk_full(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), tmp_path)
    assert not disk_full(OSError(errno.ENOENT, os.strerror(errno.ENOENT)), tmp_path)
    assert not disk_full(sqlite3.OperationalError("database is locked"), tmp_path)


def test_the_http_api_answers_507_insufficient_storage(disk):
    from .test_http_api import Server

    vault = disk.root / "v"
    memo("session", "start", "s1", "--project", "p", vault=vault)
    server = Server(vault, "--mcp-port", "0")
    try:
        disk.fill()
        status, body = server.get_json("/api/actions/record", data={"project": "p", "sessionId": "s1",
                                                                     "body": "a turn " * 3000})
        disk.free()
        again, recorded = server.get_json("/api/actions/record", data={"project": "p", "sessionId": "s1",
                                                                        "body": "a turn"})
    finally:
        server.stop()
    assert (status, body["error"]) == (507, message(vault))
    assert again == 200 and recorded["turn"] == 1


def test_reads_go_on_from_the_index_as_it_is_while_the_disk_is_full(disk):
    """Found by an operator: with the disk full, every read failed as a write does — ``memo prompt
    list``, ``memo digest``, the dashboard (a traceback) and the API (507) —, though nothing needed
    writing: a command opens the index, and opening it writes its lock files. Reads answer from
    the index as it is; writes are still refused, one line; once space is back, all is as before."""
    vault = disk.root / "v"
    memo("session", "start", "s1", "--project", "p", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "p", "--body", "before the disk filled", vault=vault)
    disk.fill()
    listed = memo("--json", "prompt", "list", "--all", vault=vault)
    assert [i["body"] for i in json.loads(listed.stdout)["items"]] == ["before the disk filled"]
    assert memo("digest", vault=vault).returncode == 0
    assert json.loads(memo("--json", "activity", "--all", vault=vault).stdout)["totalPrompts"] == 1
    refused = memo("prompt", "record", "--session-id", "s1", "--project", "p", "--body", "x", vault=vault, check=False)
    assert (refused.returncode, refused.stderr) == (1, f"error: {message(vault)}\n")
    checked = json.loads(memo("--json", "doctor", vault=vault, check=False).stdout)  # it said "writable" and exit 0
    [vault_check] = [c for c in checked["checks"] if c["name"] == "vault"]
    assert not vault_check["ok"] and "KB free: writes fail" in vault_check["detail"], vault_check
    # an index behind its files is not read as it is (found by an attacker: a session deleted since
    # was billed by the timesheet and the draft invoice, one added since was not listed)
    session = vault / "projects" / "p" / "sessions" / "session-s1.md"
    kept = session.read_bytes()
    session.unlink()
    stale = memo("activity", "--all", vault=vault, check=False)
    assert (stale.returncode, stale.stderr) == (1, f"error: {message(vault)}\n")
    disk.free()
    session.write_bytes(kept)
    memo("prompt", "record", "--session-id", "s1", "--project", "p", "--body", "after", vault=vault)
    assert json.loads(memo("--json", "prompt", "list", "--all", vault=vault).stdout)["total"] == 2


def test_a_vault_mounted_read_only_is_read_and_doctor_says_why_writes_fail(tmp_path):
    """Found by an operator (a vault bind-mounted read-only refused every read) and an attacker
    (`memo doctor` then proposed `chmod u+w`, which cannot help): reads answer, a write is refused
    in one line, and doctor names the read-only mount."""
    source, mounted = tmp_path / "v", tmp_path / "ro"
    memo("session", "start", "s1", "--project", "p", "--start-time", "2026-03-02T09:00:00Z", vault=source)
    mounted.mkdir()
    bound = subprocess.run(["mount", "--bind", str(source), str(mounted)], capture_output=True, text=True)
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here (needs root): {bound.stderr.strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(mounted)], check=True)
        shown = json.loads(memo("--json", "session", "show", "--all", vault=mounted).stdout)
        assert [s["sessionId"] for s in shown["items"]] == ["s1"]
        refused = memo("session", "start", "s2", "--project", "p", vault=mounted, check=False)
        assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        checked = json.loads(memo("--json", "doctor", vault=mounted, check=False).stdout)
        [vault_check] = [c for c in checked["checks"] if c["name"] == "vault"]
        assert "mounted read-only" in vault_check["detail"] and "chmod" not in (vault_check["install"] or "")
    finally:
        subprocess.run(["umount", "-l", str(mounted)], check=False)


def test_a_store_whose_check_met_a_database_error_opens_the_index_again(tmp_path, monkeypatch):
    """Found by an attacker on loopback: after a full disk a server answered 500 to every request,
    ``/api/health`` too, until restarted ("Cannot operate on a closed database"): the check of
    the index against the files closed the store's connection on SQLite's error and the store
    kept it. The error is said once; the next use opens the index again. (SQLite's error is
    produced here by a fault put into the check: the server's failure could not be timed.)"""
    from memo_analytics.index import freshness
    from memo_analytics.services import store as store_module

    vault = tmp_path / "v"
    memo("prompt", "record", "--session-id", "s1", "--project", "web", "--body", "kept", vault=vault)
    store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
    try:
        assert store.conn.execute("SELECT count(*) FROM records").fetchone()[0] == 1
        real = freshness.check

        def failing(conn, layout):
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(store_module.freshness, "check", failing)
        with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
            store.recheck(every=0)
        monkeypatch.setattr(store_module.freshness, "check", real)
        assert store.conn.execute("SELECT count(*) FROM records").fetchone()[0] == 1
    finally:
        store.close()
