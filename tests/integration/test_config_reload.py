"""A long-running ``memo serve`` takes in a changed config file without a restart (issue 12):
the digest of the API (and of the dashboard, which reads the same store) follows the new
thresholds within seconds."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta, timezone

from .test_cli import memo
from .test_http_api import Server


def _digest_kinds(server: Server) -> list[str]:
    status, digest = server.get_json("/api/digest?refresh=true")
    assert status == 200
    return sorted(item["kind"] for item in digest["items"])


def test_memo_serve_follows_a_changed_threshold_without_a_restart(tmp_path, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text("[operator]\nstalledMinutes = 600\nopenTooLongHours = 100\n", encoding="utf-8")
    monkeypatch.setenv("MEMO_CONFIG", str(config))
    vault = tmp_path / "vault"
    started = (datetime.now(timezone.utc) - timedelta(minutes=40)).strftime("%Y-%m-%dT%H:%M:%SZ")
    memo("session", "start", "o1", "--project", "web", "--start-time", started, vault=vault)
    server = Server(vault, "--mcp-port", "0")
    try:
        assert _digest_kinds(server) == []  # 40 minutes idle is not stalled at 600
        config.write_text("[operator]\nstalledMinutes = 15\nopenTooLongHours = 100\n", encoding="utf-8")
        os.utime(config, (time.time() + 5, time.time() + 5))
        deadline = time.monotonic() + 20
        kinds = _digest_kinds(server)
        while kinds != ["session_stalled"] and time.monotonic() < deadline:
            time.sleep(0.2)
            kinds = _digest_kinds(server)
        assert kinds == ["session_stalled"]
        # a broken edit is logged and the server keeps the last good settings
        config.write_text("[operator]\nstalledMinutes = -1\n", encoding="utf-8")
        os.utime(config, (time.time() + 10, time.time() + 10))
        assert _digest_kinds(server) == ["session_stalled"]
        status, _ = server.get_json("/api/prompts?crossProject=true")
        assert status == 200
    finally:
        server.stop()
