"""The composition root (issue 12): the runtime alone turns the mode into wiring, and a
long-running process takes in a changed config file without a restart."""

from __future__ import annotations

import logging
import os
import threading
import time

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


_CLOCK = [time.time_ns()]


def _write_config(path, text: str) -> None:
    """Write the config file so that its stamp surely moves (each write a later mtime, even on
    a coarse file-system clock)."""
    _CLOCK[0] += 10**9
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(_CLOCK[0], _CLOCK[0]))


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
    with pytest.raises(RemoteModeError, match="remote mode: this machine keeps no vault"):
        runtime.store()
    assert not (tmp_path / "v").exists()


def test_a_changed_config_file_reaches_the_open_store_and_rewires_the_mode(tmp_path, config_file):
    _write_config(config_file, "[operator]\nstalledMinutes = 60\n")
    runtime = Runtime(Settings(vault_root=tmp_path / "v"), {"vault_root": tmp_path / "v"}, settle_seconds=0)
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
    runtime = Runtime(Settings(vault_root=tmp_path / "v"), {"vault_root": tmp_path / "v"}, settle_seconds=0)
    store = runtime.store()
    _write_config(config_file, "[operator]\nstalledMinutes = -3\n")
    with caplog.at_level(logging.WARNING, logger="memo_analytics.runtime"):
        assert runtime.refresh() is False
    assert store.settings.operator.stalled_minutes == 45
    assert "is not valid" in caplog.text and str(config_file) in caplog.text
    assert "operator.stalledMinutes" in caplog.text or "operator.stalled_minutes" in caplog.text  # the key is named


def test_each_thread_gets_its_own_store_sharing_the_wiring_and_a_new_one_after_a_change(tmp_path, config_file):
    runtime = Runtime(Settings(vault_root=tmp_path / "v", mode="hybrid", hybrid={"remoteUrl": DEAD_DAEMON}),
                      {"vault_root": tmp_path / "v"}, settle_seconds=0)
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


def test_a_file_still_changing_is_read_only_once_it_settled(tmp_path, config_file):
    _write_config(config_file, "[operator]\nstalledMinutes = 60\n")
    runtime = Runtime(Settings(vault_root=tmp_path / "v"), {"vault_root": tmp_path / "v"}, settle_seconds=0.2)
    store = runtime.store()
    _write_config(config_file, "[operator]\nstalledMinutes = 30\n")
    assert runtime.refresh() is False  # just changed: perhaps half written
    assert store.settings.operator.stalled_minutes == 60
    deadline = time.monotonic() + 5
    while not runtime.refresh() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.settings.operator.stalled_minutes == 30


@pytest.mark.parametrize("how", ["removed", "emptied"])
def test_a_config_file_gone_or_empty_mid_save_keeps_the_settings_and_the_vault(tmp_path, monkeypatch, config_file,
                                                                              caplog, how):
    """Without the file every default would apply — another vault (~/.memo/vault): a running
    process keeps what it read until the file holds settings again."""
    monkeypatch.delenv("MEMO_VAULT", raising=False)
    _write_config(config_file, f'vaultRoot = "{tmp_path / "vaultA"}"\n[operator]\nstalledMinutes = 45\n')
    runtime = Runtime(Settings(), {}, settle_seconds=0)
    store = runtime.store()
    assert store.root == tmp_path / "vaultA"
    if how == "removed":
        config_file.unlink()
    else:
        _write_config(config_file, "")
    with caplog.at_level(logging.WARNING, logger="memo_analytics.runtime"):
        assert runtime.refresh() is False
    assert runtime.store() is store and runtime.settings.vault_root == tmp_path / "vaultA"
    assert store.settings.operator.stalled_minutes == 45
    assert ("gone" if how == "removed" else "empty") in caplog.text
    _write_config(config_file, f'vaultRoot = "{tmp_path / "vaultA"}"\n[operator]\nstalledMinutes = 20\n')
    assert runtime.refresh() is True and store.settings.operator.stalled_minutes == 20


def test_a_new_vault_or_a_switch_to_remote_waits_for_a_restart_the_rest_applies(tmp_path, monkeypatch, config_file,
                                                                                caplog):
    monkeypatch.delenv("MEMO_VAULT", raising=False)
    _write_config(config_file, f'vaultRoot = "{tmp_path / "vaultA"}"\n')
    runtime = Runtime(Settings(), {}, settle_seconds=0)
    store = runtime.store()
    _write_config(config_file, f'vaultRoot = "{tmp_path / "vaultB"}"\nmode = "remote"\n[remote]\n'
                               f'url = "{DEAD_DAEMON}"\n[operator]\nstalledMinutes = 25\n')
    with caplog.at_level(logging.WARNING, logger="memo_analytics.runtime"):
        assert runtime.refresh() is True
    assert runtime.store() is store and store.root == tmp_path / "vaultA" and not runtime.remote
    assert store.settings.operator.stalled_minutes == 25  # the rest applied
    assert "vaultRoot and mode" in caplog.text and "starts again" in caplog.text
    assert not (tmp_path / "vaultB").exists()
