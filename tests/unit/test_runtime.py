"""The composition root (issue 12): the runtime alone turns the mode into wiring, and a
long-running process takes in a changed config file without a restart."""

from __future__ import annotations

import logging
import os
import threading

import pytest

from memo_analytics.config import Settings
from memo_analytics.runtime import RemoteModeError, Runtime
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import EndSessionRequest, RecordPromptRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.services.store import VaultStore

DEAD_DAEMON = "http://127.0.0.1:9"  # discard port: nothing answers


@pytest.fixture
def config_file(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    monkeypatch.setenv("MEMO_CONFIG", str(path))
    return path


def _write_config(path, text: str) -> None:
    """Write the config file so that its stamp surely moves (size and mtime)."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before + 10**9, before + 10**9))


def _outbox(store: VaultStore) -> list[str]:
    path = store.layout.meta_dir / "sync" / "outbox.jsonl"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _turn(store, body="Add the CSV export"):
    return record_prompt(store, RecordPromptRequest(session_id="s1", project="web", body=body))


def test_a_local_store_has_no_listeners_and_queues_nothing(tmp_path, config_file):
    store = Runtime(Settings(vault_root=tmp_path / "v")).store()
    _turn(store)
    assert store.listeners == {"write": [], "session_end": []}
    assert _outbox(store) == []


def test_a_store_opened_without_a_runtime_knows_nothing_of_modes(tmp_path, config_file):
    """Below the runtime nothing reads the mode: a bare store in hybrid settings queues nothing."""
    store = VaultStore(Settings(vault_root=tmp_path / "v", mode="hybrid", hybrid={"remoteUrl": DEAD_DAEMON}))
    _turn(store)
    assert _outbox(store) == []


def test_hybrid_queues_every_write_and_a_session_end_pushes_without_failing(tmp_path, config_file):
    runtime = Runtime(Settings(vault_root=tmp_path / "v", mode="hybrid", hybrid={"remoteUrl": DEAD_DAEMON}))
    store = runtime.store()
    start_session(store, StartSessionRequest(session_id="s1", project="web"))
    _turn(store)
    ended = end_session(store, EndSessionRequest(session_id="s1", project="web", summary="done"))
    assert ended["status"] == "completed"  # SPEC §2.5: the failed push never fails the end
    queued = [line for line in _outbox(store)]
    assert len(queued) == 3  # the session (twice: started, ended) and the turn
    state = (store.layout.meta_dir / "sync" / "state.json").read_text(encoding="utf-8")
    assert "lastError" in state  # the push after the session end was tried and failed


def test_remote_mode_opens_no_vault(tmp_path, config_file):
    runtime = Runtime(Settings(vault_root=tmp_path / "v", mode="remote", remote={"url": DEAD_DAEMON}))
    assert runtime.remote
    with pytest.raises(RemoteModeError, match="Invalid mode: remote — this machine keeps no vault"):
        runtime.store()
    assert not (tmp_path / "v").exists()


def test_a_changed_config_file_reaches_the_open_store_and_rewires_the_mode(tmp_path, config_file):
    _write_config(config_file, "[operator]\nstalledMinutes = 60\n")
    runtime = Runtime(Settings(vault_root=tmp_path / "v"), {"vault_root": tmp_path / "v"}, long_running=False)
    store = runtime.store()
    assert store.settings.operator.stalled_minutes == 60
    assert runtime.refresh() is False  # unchanged: nothing re-read
    _write_config(config_file, f'mode = "hybrid"\n[hybrid]\nremoteUrl = "{DEAD_DAEMON}"\n'
                               "[operator]\nstalledMinutes = 15\n")
    assert runtime.refresh() is True
    assert runtime.store() is store  # the same open store took the new settings
    assert store.settings.operator.stalled_minutes == 15
    assert store.settings.vault_root == tmp_path / "v"  # the explicit override stays
    _turn(store)
    assert len(_outbox(store)) == 1  # hybrid now: the write was queued


def test_an_invalid_edit_is_logged_and_the_previous_settings_stay(tmp_path, config_file, caplog):
    _write_config(config_file, "[operator]\nstalledMinutes = 45\n")
    runtime = Runtime(Settings(vault_root=tmp_path / "v"), {"vault_root": tmp_path / "v"})
    store = runtime.store()
    _write_config(config_file, "[operator]\nstalledMinutes = -3\n")
    with caplog.at_level(logging.WARNING, logger="memo_analytics.runtime"):
        assert runtime.refresh() is False
    assert store.settings.operator.stalled_minutes == 45
    assert "is not valid" in caplog.text and str(config_file) in caplog.text


def test_each_thread_gets_its_own_store_sharing_the_wiring_and_a_new_one_after_a_change(tmp_path, config_file):
    runtime = Runtime(Settings(vault_root=tmp_path / "v", mode="hybrid", hybrid={"remoteUrl": DEAD_DAEMON}),
                      {"vault_root": tmp_path / "v"})
    mine = runtime.thread_store()
    theirs: list[VaultStore] = []
    worker = threading.Thread(target=lambda: theirs.append(runtime.thread_store()))
    worker.start()
    worker.join()
    assert theirs[0] is not mine and runtime.thread_store() is mine
    assert theirs[0].listeners is mine.listeners is runtime.store().listeners
    _turn(theirs[0])
    assert len(_outbox(mine)) == 1  # a sibling's write reached the same outbox
    _write_config(config_file, "[operator]\nstalledMinutes = 20\n")
    assert runtime.refresh()
    fresh = runtime.thread_store()
    assert fresh is not mine and fresh.settings.operator.stalled_minutes == 20
    assert fresh.listeners == {"write": [], "session_end": []}  # local mode now (the file names no mode)
