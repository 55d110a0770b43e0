"""``memo hook AGENT`` (issue 14 point 2): an agent's hook event becomes a turn through the
same service path as the MCP tool (redaction, capture-ignore, turn allocation under the lock);
the session starts on its first prompt and ends on the agent's session end. It never gets in
the agent's way: nothing on stdout, exit 0 always; a locked or broken vault spools the event
and the next run replays it with the instants it carried."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memo_analytics.services import capture
from memo_analytics.vault.io import read_record
from tests.inprocess import memo, tool_calls

SESSION = "8c35adc1-5b7e-4f0a-9d55-0a1b2c3d4e5f"
GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token shape (made up)


def claude(event: str, repo: Path, **fields) -> str:
    """A Claude Code hook payload (the common fields of every event, then the event's own)."""
    return json.dumps({"session_id": SESSION, "transcript_path": f"/home/ana/.claude/projects/x/{SESSION}.jsonl",
                       "cwd": str(repo), "permission_mode": "default", "hook_event_name": event, **fields})


def hook(vault: Path, agent: str, stdin: str | None = None, *args: str, env: dict | None = None):
    ran = memo("hook", agent, *args, vault=vault, input=stdin, check=False, env=env)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == ""  # the agent puts a hook's stdout into the model's context
    return ran


def turns(vault: Path, project: str) -> list[dict]:
    folder = vault / "projects" / project / "prompts"
    return sorted((read_record(p)[0] | {"body": read_record(p)[1]} for p in folder.glob("*.md")),
                  key=lambda m: m["turn"])


def _november(day: int, hour: int, minute: int):
    """An instant of November 2026 (UTC)."""
    from datetime import datetime, timezone

    return datetime(2026, 11, day, hour, minute, tzinfo=timezone.utc)


def _applied(tmp_path: Path, repo: Path, agent: str, session: str, events: list[tuple]) -> list[str]:
    """Each ``(kind, when, prompt)`` hook event of ``agent``'s ``session`` applied to the vault
    ``tmp_path / "v"`` in order, with the instant it carries (as a replayed or timed event is):
    the outcome lines."""
    from memo_analytics.config import Settings
    from memo_analytics.services.capture import HookEvent, apply_event
    from memo_analytics.services.store import VaultStore

    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    try:
        return [apply_event(store, HookEvent(agent, kind, session, when, prompt=text, cwd=str(repo)), f"{n:08x}")
                for n, (kind, when, text) in enumerate(events)]
    finally:
        store.close()


def test_a_claude_code_session_is_captured_from_its_hook_events(tmp_path, repo):
    vault = tmp_path / "v"
    (repo / ".memoignore").write_text("secrets/\n")
    hook(vault, "claude-code", claude("SessionStart", repo, source="startup"))
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt=f"Use {GHP} and read secrets/prod.env"))
    hook(vault, "claude-code", claude("Stop", repo, stop_hook_active=False))
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Now add the tests", prompt_id="p-2"))
    hook(vault, "claude-code", claude("SessionEnd", repo, reason="prompt_input_exit"))
    sid = f"claude-code-{SESSION}"
    first, second = turns(vault, "product")
    assert (first["id"], first["turn"], second["turn"]) == (f"prompt-{sid}-t1", 1, 2)
    assert GHP not in first["body"] and "[REDACTED" in first["body"]  # secret redaction
    assert "secrets/prod.env" not in first["body"]  # capture-ignore of the repository's .memoignore
    assert (first["source"], first["ide"], first["agentSessionId"]) == ("hook:claude-code", "claude-code", SESSION)
    assert second["agentTurnId"] == "p-2"
    session = read_record(vault / "projects" / "product" / "sessions" / f"session-{sid}.md")[0]
    head = (repo / ".git" / "HEAD").read_text().strip().rsplit("/", 1)[-1]  # the repository's branch (git's default)
    assert (session["status"], session["source"], session["branch"]) == ("completed", "hook:claude-code", head)
    assert session["durationMinutes"] == 0 and session["endTime"] >= session["startTime"]
    # found by a new user: a hook session ended without a summary (imports take one from the turns);
    # it is described by its first meaningful line — never one that held a secret (its redaction
    # marker would go on a client's invoice): the next turn's
    assert "[REDACTED:github-token]" in first["body"].splitlines()[0]
    assert session["summary"] == "Now add the tests" and GHP not in session["summary"]
    listed = json.loads(memo("--json", "prompt", "list", "--project", "product", vault=vault).stdout)
    assert listed["total"] == 2  # the index has them: the same path as the MCP tool


def test_a_locked_vault_spools_the_event_and_the_next_run_replays_it_in_order(tmp_path, repo, monkeypatch):
    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="first, before the lock"))
    monkeypatch.setattr(capture, "HOOK_LOCK_TIMEOUT_S", 0.2)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys; from filelock import FileLock; lock = FileLock(sys.argv[1]); lock.acquire(); "
        "print('held', flush=True); sys.stdin.read()"), str(vault / ".memo" / "vault.lock")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="second, while locked"))
        assert time.monotonic() - started < 5  # the agent did not wait for the lock
        [spooled] = capture.spooled(vault)
        assert json.loads(spooled.read_text())["payload"]["prompt"] == "second, while locked"
        assert [t["turn"] for t in turns(vault, "product")] == [1]
    finally:
        holder.stdin.close()
        holder.wait(10)
        holder.stdout.close()
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="third, after the lock"))
    assert capture.spooled(vault) == []
    recorded = turns(vault, "product")
    assert [t["body"] for t in recorded] == ["first, before the lock", "second, while locked", "third, after the lock"]
    assert recorded[1]["created"] < recorded[2]["created"]  # the spooled turn keeps the instant it arrived
    log = (vault / ".memo" / "spool" / "hooks.log").read_text()
    assert "spooled as" in log and "VaultBusyError" in log and "replayed" in log


def test_a_spooled_event_the_busy_vault_could_not_replay_keeps_its_place_and_is_never_set_aside(
        tmp_path, repo, monkeypatch):
    """Found by an agent integrator: while another process held the vault a little longer than a
    hook waits, the replay of a spooled prompt failed, the run's own later prompt was recorded
    first (turns reversed, the session started at the later one: minutes lost), and after three
    such runs the spooled prompt was set aside (.bad) — lost without a word. A busy vault is no
    fault of the event: the run's event waits behind it, in order, and nothing is counted."""
    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="first"))
    monkeypatch.setattr(capture, "HOOK_LOCK_TIMEOUT_S", 0.2)
    holders: list[subprocess.Popen] = []

    def hold() -> None:  # another process holds the vault
        holders.append(subprocess.Popen([sys.executable, "-c", (
            "import sys; from filelock import FileLock; lock = FileLock(sys.argv[1]); lock.acquire(); "
            "print('held', flush=True); sys.stdin.read()"), str(vault / ".memo" / "vault.lock")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        assert holders[-1].stdout.readline().strip() == "held"

    def release() -> None:
        for holder in holders:
            if not holder.stdin.closed:
                holder.stdin.close()
                holder.wait(10)
                holder.stdout.close()

    real_replay = capture._replay

    def replay_then_release(*args, **kwargs):  # the other process lets go right after the replay gave up
        stuck = real_replay(*args, **kwargs)
        release()
        return stuck

    try:
        hold()
        hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="second, while locked"))
        monkeypatch.setattr(capture, "_replay", replay_then_release)
        for n in range(3):  # three runs whose replay finds the vault busy
            if n:
                hold()
            hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt=f"later {n}"))
            assert [t["body"] for t in turns(vault, "product")] == ["first"]  # nothing jumps the queue
        waiting = [json.loads(path.read_text()) for path in capture.spooled(vault)]
        assert [w["payload"]["prompt"] for w in waiting] == ["second, while locked", "later 0", "later 1", "later 2"]
        assert not any("attempts" in w for w in waiting)
        assert not list(capture.spool_dir(vault).glob("*.bad"))
    finally:
        release()
    monkeypatch.setattr(capture, "_replay", real_replay)
    hook(vault, "claude-code", claude("Stop", repo))
    recorded = turns(vault, "product")
    assert [t["body"] for t in recorded] == ["first", "second, while locked", "later 0", "later 1", "later 2"]
    assert [t["turn"] for t in recorded] == [1, 2, 3, 4, 5]


def test_a_replayed_event_already_recorded_is_not_recorded_twice(tmp_path, repo):
    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="once only"))
    [turn] = turns(vault, "product")
    # a run that applied an event and died before removing its spool file
    entry = {"agent": "claude-code", "event": None, "receivedAt": turn["created"], "captureId": turn["captureId"],
             "payload": json.loads(claude("UserPromptSubmit", repo, prompt="once only"))}
    capture.spool_dir(vault).mkdir(parents=True, exist_ok=True)
    (capture.spool_dir(vault) / "00000000000000000001-1-x.json").write_text(json.dumps(entry))
    hook(vault, "claude-code", claude("Stop", repo))
    assert [t["body"] for t in turns(vault, "product")] == ["once only"]
    assert capture.spooled(vault) == []


def test_a_broken_index_spools_and_the_event_lands_after_the_repair(tmp_path, repo):
    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="before the damage"))
    (vault / ".memo" / "index.sqlite").write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        (vault / ".memo" / f"index.sqlite{suffix}").unlink(missing_ok=True)
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="while the index is damaged"))
    assert len(capture.spooled(vault)) == 1
    memo("reindex", vault=vault)
    hook(vault, "claude-code", claude("Stop", repo))
    assert [t["body"] for t in turns(vault, "product")] == ["before the damage", "while the index is damaged"]


def test_a_broken_config_file_costs_the_agent_nothing(tmp_path, repo):
    vault = tmp_path / "v"
    config = tmp_path / "config.toml"
    config.write_text("timezone = [unclosed\n")
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="kept for later"), env={"MEMO_CONFIG": str(config)})
    [spooled] = capture.spooled(vault)
    assert json.loads(spooled.read_text())["payload"]["prompt"] == "kept for later"
    config.write_text('timezone = "UTC"\n')
    hook(vault, "claude-code", claude("Stop", repo), env={"MEMO_CONFIG": str(config)})
    assert [t["body"] for t in turns(vault, "product")] == ["kept for later"]


def test_an_event_spooled_while_the_config_was_broken_lands_in_the_vault_the_config_names(tmp_path, repo):
    """Found by an operator: a prompt sent while the config file (which names the vault) could not
    be read was spooled beside the default vault; once the config was mended, `memo hooks replay`
    said "nothing waits" (it looked in the configured vault's spool) and the turn was lost for
    good. The configured vault takes in what waited for it."""
    config, vault = tmp_path / "config.toml", tmp_path / "work-vault"
    env = {"MEMO_CONFIG": str(config), "HOME": str(tmp_path / "home"), "MEMO_VAULT": None}
    config.write_text(f'vaultRoot = "{vault}"\ntimezone = "Europe/Berlin\n')  # an unclosed string
    ran = memo("hook", "claude-code", input=claude("UserPromptSubmit", repo, prompt="sent while broken"),
               check=False, env=env)
    assert (ran.returncode, ran.stdout) == (0, "")
    config.write_text(f'vaultRoot = "{vault}"\ntimezone = "Europe/Berlin"\n')
    assert "1 hook events wait in the spool" in memo("hooks", "status", env=env).stdout
    replayed = memo("hooks", "replay", env=env, check=False)
    assert replayed.returncode == 0, replayed.stderr
    assert [t["body"] for t in turns(vault, "product")] == ["sent while broken"]
    assert capture.spooled(vault) == []
    # found by an attacker: an event whose vault the hook named (--vault-root, as `memo --vault-root X
    # hooks install` writes it) is that vault's, broken config or not — another vault never takes it in
    named = tmp_path / "home" / ".memo" / "vault"
    config.write_text(f'vaultRoot = "{vault}"\ntimezone = "Europe/Berlin\n')
    ran = memo("hook", "claude-code", input=claude("UserPromptSubmit", repo, prompt="meant for the named vault"),
               vault=named, check=False, env=env)
    assert (ran.returncode, ran.stdout) == (0, "") and len(capture.spooled(named)) == 1
    config.write_text(f'vaultRoot = "{vault}"\ntimezone = "Europe/Berlin"\n')
    memo("hooks", "replay", env=env, check=False)
    assert [t["body"] for t in turns(vault, "product")] == ["sent while broken"]
    assert len(capture.spooled(named)) == 1


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", json.dumps({"hook_event_name": "UserPromptSubmit",
                                                                         "prompt": "no session id"})])
def test_an_unusable_event_is_dropped_with_a_line_in_the_log_and_exit_0(tmp_path, stdin):
    vault = tmp_path / "v"
    hook(vault, "claude-code", stdin)
    assert capture.spooled(vault) == [] and not (vault / "projects").exists()
    assert "event dropped" in (vault / ".memo" / "spool" / "hooks.log").read_text()


def test_an_unknown_agent_exits_0_and_says_why_in_the_log(tmp_path, repo):
    vault = tmp_path / "v"
    ran = hook(vault, "windsurf", claude("UserPromptSubmit", repo, prompt="x"), env={"MEMO_HOOK_DEBUG": "1"})
    assert "'windsurf' is not one of claude-code, codex, gemini, cursor, copilot" in ran.stderr


def test_codex_notify_takes_the_event_as_its_last_argument(tmp_path, repo):
    vault = tmp_path / "v"
    event = {"type": "agent-turn-complete", "thread-id": "0199a213-81c0-7800-8aa1-bbab2a035a53",
             "turn-id": "12", "cwd": str(repo), "input-messages": ["Rename the CSV column", "and update the docs"],
             "last-assistant-message": "Done."}
    hook(vault, "codex", None, json.dumps(event))
    [turn] = turns(vault, "product")
    assert turn["body"] == "Rename the CSV column\n\nand update the docs"
    assert (turn["sessionId"], turn["agentTurnId"]) == ("codex-0199a213-81c0-7800-8aa1-bbab2a035a53", "12")


def test_codex_legacy_notify_beside_its_prompt_hook_is_one_turn_however_late(tmp_path, repo):
    """Found by an agent's tester: Codex's legacy ``notify = ["memo", "hook", "codex"]`` left in
    ``config.toml`` beside the new hooks recorded each prompt twice — the prompt hook's turn, then
    the notice at the turn's end 25 s later (past the 10 s of two hooks of one prompt). The same
    text under the agent's own turn number is one turn, however late."""
    from datetime import datetime, timedelta, timezone

    from memo_analytics.config import Settings
    from memo_analytics.services.capture import HookEvent, apply_event
    from memo_analytics.services.store import VaultStore

    start = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    text = "Refactor the billing module into three files"
    try:
        apply_event(store, HookEvent("codex", "prompt", "cx9", start, prompt=text, cwd=str(repo), turn_id="1"),
                    "00000001")
        late = apply_event(store, HookEvent("codex", "prompt", "cx9", start + timedelta(seconds=25), prompt=text,
                                            cwd=str(repo), turn_id="1"), "00000002")
        again = apply_event(store, HookEvent("codex", "prompt", "cx9", start + timedelta(seconds=60), prompt=text,
                                             cwd=str(repo), turn_id="2"), "00000003")
    finally:
        store.close()
    assert "recorded once" in late and again == "turn 2 of codex-cx9 recorded", (late, again)
    assert [t["agentTurnId"] for t in turns(tmp_path / "v", "product")] == ["1", "2"]


def _transcript_line(kind: str, uuid: str, at: str, text: str, cwd: Path) -> str:
    message = {"role": kind, "content": text if kind == "user" else [{"type": "text", "text": text}]}
    return json.dumps({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": str(cwd),
                       "sessionId": SESSION, "version": "2.1.200", "gitBranch": "main", "type": kind,
                       "message": message, "uuid": uuid, "timestamp": at})


def test_a_hook_session_is_superseded_by_its_imported_transcript_one_turn_however_it_arrived(tmp_path, repo):
    """Issue 14 point 3: the hook captured two prompts live; the transcript (imported later)
    holds them and one more. The transcript is the truth: three turns, one session from the
    transcript's own times, billed once."""
    vault = tmp_path / "v"
    for prompt in ("Add the CSV export", "Now the tests"):
        hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt=prompt))
    hook(vault, "claude-code", claude("SessionEnd", repo, reason="prompt_input_exit"))
    folder = tmp_path / "claude" / "projects" / "-product"
    folder.mkdir(parents=True)
    lines = [_transcript_line("user", "u1", "2026-11-30T09:00:00.000Z", "Add the CSV export", repo),
             _transcript_line("assistant", "a1", "2026-11-30T09:04:00.000Z", "Done.", repo),
             _transcript_line("user", "u2", "2026-11-30T09:10:00.000Z", "Now the tests", repo),
             _transcript_line("assistant", "a2", "2026-11-30T09:20:00.000Z", "Added.", repo),
             _transcript_line("user", "u3", "2026-11-30T09:25:00.000Z", "And the README", repo),
             _transcript_line("assistant", "a3", "2026-11-30T09:40:00.000Z", "Updated.", repo)]
    (folder / f"{SESSION}.jsonl").write_text("\n".join(lines) + "\n")
    imported = json.loads(memo("--json", "import", "claude-code", str(folder), "--project", "product",
                               vault=vault).stdout)
    assert (imported["sessions"], imported["turns"], imported["superseded"]) == (1, 3, 3)  # the hook session + 2 turns
    listed = json.loads(memo("--json", "prompt", "list", "--project", "product", "--sort", "date-asc",
                             vault=vault).stdout)
    assert [i["body"] for i in listed["items"]] == ["Add the CSV export", "Now the tests", "And the README"]
    assert {i["source"] for i in listed["items"]} == {"import:claude-code"}
    found = json.loads(memo("--json", "prompt", "search", "CSV", "--project", "product", vault=vault).stdout)
    assert found["total"] == 1
    report = json.loads(memo("--json", "activity", "--project", "product", vault=vault).stdout)
    assert report["totalSessions"] == 1 and report["totalDurationMinutes"] == 40  # the transcript's 09:00–09:40
    assert report["totalPrompts"] == 3  # the superseded hook turns are not counted
    hook_session = read_record(vault / "projects" / "product" / "sessions" / f"session-claude-code-{SESSION}.md")[0]
    assert hook_session["status"] == "superseded"
    assert hook_session["supersededBy"] == [f"product/claude-code-{SESSION}-1"]
    # the hook's own session still shows its turns when asked for by id
    shown = json.loads(memo("--json", "session", "show", f"claude-code-{SESSION}", "--project", "product",
                            vault=vault).stdout)
    assert shown["total"] == 2 and {t["status"] for t in shown["items"]} == {"superseded"}
    # importing again changes nothing
    again = json.loads(memo("--json", "import", "claude-code", str(folder), "--project", "product", vault=vault).stdout)
    assert (again["turns"], again["superseded"]) == (0, 0)
    # a prompt the hook captures after the import is visible until the next import takes it in
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="One more thing"))
    listed = json.loads(memo("--json", "prompt", "list", "--project", "product", vault=vault).stdout)
    assert listed["total"] == 4
    # a hook that fires after the watcher imported the same prompt keeps no second copy (found by a new user:
    # it stayed until the transcript next changed)
    from datetime import datetime, timezone

    from memo_analytics.config import Settings
    from memo_analytics.services.capture import HookEvent, apply_event
    from memo_analytics.services.store import VaultStore

    store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
    try:
        said = apply_event(store, HookEvent("claude-code", "prompt", SESSION,
                                            datetime(2026, 11, 30, 9, 25, 2, tzinfo=timezone.utc),
                                            prompt="And the README", cwd=str(repo)), "0badc0de")
    finally:
        store.close()
    assert said.endswith("already imported from the agent's transcript")
    assert json.loads(memo("--json", "prompt", "list", "--project", "product", vault=vault).stdout)["total"] == 4
    # found by an integrator: the same text sent in another conversation (Cursor's, another Claude Code
    # one) within the window was dropped as "already imported", its whole session with it
    store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
    try:
        for agent, conversation in (("cursor", "cur-other-b"), ("claude-code", "0f0f0f0f-other-conversation")):
            said = apply_event(store, HookEvent(agent, "prompt", conversation,
                                                datetime(2026, 11, 30, 9, 25, 2, tzinfo=timezone.utc),
                                                prompt="And the README", cwd=str(repo)), "0badc0de")
            assert not said.endswith("already imported from the agent's transcript"), said
    finally:
        store.close()
    mine = json.loads(memo("--json", "prompt", "search", "And the README", "--project", "product",
                           vault=vault).stdout)["items"]
    assert sorted(i["sessionId"] for i in mine) == sorted([f"claude-code-{SESSION}-1", "cursor-cur-other-b",
                                                          "claude-code-0f0f0f0f-other-conversation"])


def test_after_a_one_off_import_the_rest_of_a_live_conversation_bills_until_the_agent_ends_it(tmp_path, repo):
    """Found by an integrator: a transcript imported once while its conversation went on (``memo
    import auto`` in another terminal) superseded the hook's session; the later prompts went into
    it and billed nothing (the imported session ends where the transcript did), the agent's end
    only said "its turns are imported". The work after the import is a work interval of its own;
    the next import takes it in, billed once."""
    from datetime import datetime, timezone

    from memo_analytics.config import Settings
    from memo_analytics.services.capture import HookEvent, apply_event
    from memo_analytics.services.store import VaultStore

    vault, folder = tmp_path / "v", tmp_path / "cc"
    folder.mkdir()
    transcript = folder / f"{SESSION}.jsonl"

    def at(minute: int) -> datetime:
        return datetime(2026, 11, 30, 9, minute, tzinfo=timezone.utc)

    def event(kind: str, minute: int, prompt: str | None = None) -> str:
        store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
        try:
            return apply_event(store, HookEvent("claude-code", kind, SESSION, at(minute), prompt=prompt, cwd=str(repo),
                                                transcript_path=str(transcript)), f"c{kind[:3]}{minute:04d}")
        finally:
            store.close()

    def billed() -> tuple[int, int]:
        report = json.loads(memo("--json", "activity", "--project", "product", vault=vault).stdout)
        return report["totalDurationMinutes"], report["totalPrompts"]

    event("session_start", 0)
    event("prompt", 0, "Add the CSV export")
    transcript.write_text("\n".join([_transcript_line("user", "u1", "2026-11-30T09:00:00.000Z", "Add the CSV export", repo),
                                     _transcript_line("assistant", "a1", "2026-11-30T09:05:00.000Z", "Done.", repo)])
                          + "\n", encoding="utf-8")
    os.utime(transcript, (at(5).timestamp(), at(5).timestamp()))
    memo("import", "claude-code", str(folder), "--project", "product", vault=vault)
    assert billed() == (5, 1)
    assert event("prompt", 10, "Now the tests") == f"turn 1 of claude-code-{SESSION}.2 recorded"
    assert event("session_end", 30) == f"session claude-code-{SESSION}.2 ended"
    assert billed() == (25, 2)  # 09:00–09:05 imported, 09:10–09:30 after the import (it billed 5 minutes)
    with transcript.open("a", encoding="utf-8") as grown:
        grown.write("\n".join([_transcript_line("user", "u2", "2026-11-30T09:10:00.000Z", "Now the tests", repo),
                               _transcript_line("assistant", "a2", "2026-11-30T09:29:00.000Z", "Tests pass.", repo)])
                    + "\n")
    memo("import", "claude-code", str(folder), "--project", "product", vault=vault)
    assert billed() == (29, 2)  # the transcript is the truth: 09:00–09:29 (a 5-minute pause is no idle gap), once


def test_a_prompt_the_hook_captured_and_the_agent_records_over_mcp_is_one_turn(tmp_path, repo):
    from tests.inprocess import tool_calls

    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Fix the flaky upload test"))
    [(error, text), (error2, text2)] = tool_calls(vault, [
        {"action": "record", "sessionId": "agent-own-1", "body": "Fix the flaky upload test", "cwd": str(repo)},
        {"action": "record", "sessionId": "agent-own-1", "body": "Something the hook never saw", "cwd": str(repo)},
    ])
    assert not error and not error2
    twin = json.loads(text)
    assert twin["duplicateOf"] == f"prompt-claude-code-{SESSION}-t1" and twin["source"] == "hook:claude-code"
    assert json.loads(text2)["sessionId"] == "agent-own-1"
    assert twin["note"] == ("not recorded again: the claude-code hook captured the same text as turn 1 of session "
                            f"claude-code-{SESSION} (one turn, however it arrived); another agent's turn names its agent")
    listed = json.loads(memo("--json", "prompt", "list", "--project", "product", vault=vault).stdout)
    assert sorted(i["body"] for i in listed["items"]) == ["Fix the flaky upload test", "Something the hook never saw"]


def test_a_prompt_the_agent_recorded_over_mcp_before_its_hook_fired_is_one_turn(tmp_path, repo):
    """Found by an agent over MCP: the hook's event of a prompt the agent had recorded over MCP
    first — the hook spooled while the vault was busy and replayed later, or simply fired after —
    was a second turn (only an MCP record after the hook's was recognised); and an agent naming
    itself "Claude Code" or "gemini-cli" was taken for another agent both ways."""
    from tests.inprocess import tool_calls

    vault = tmp_path / "v"
    [(error, text)] = tool_calls(vault, [{"action": "record", "sessionId": "agent-own-2", "agent": "Claude Code",
                                          "body": "Write the migration for the payments table", "cwd": str(repo)}])
    assert not error
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Write the migration for the payments table"))
    listed = json.loads(memo("--json", "prompt", "list", "--project", "product", vault=vault).stdout)
    assert [(i["id"], i["source"]) for i in listed["items"]] == [("prompt-agent-own-2-t1", "mcp")]
    # and the other way, an agent naming itself in its own words
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Bump the version to 2.1"))
    [(error, text)] = tool_calls(vault, [{"action": "record", "agent": "Claude Code", "body": "Bump the version to 2.1",
                                          "cwd": str(repo)}])
    assert json.loads(text)["duplicateOf"] == f"prompt-claude-code-{SESSION}-t1"
    assert json.loads(memo("--json", "prompt", "list", "--project", "product", vault=vault).stdout)["total"] == 2
    # found by an attacker: another product whose name begins alike ("Claude", "Copilot Chat") is not
    # the hook's agent, and a turn of a conversation that ended before the hook's prompt is another's
    from memo_analytics.services.prompts import same_agent

    assert [same_agent(n, "claude-code") for n in ("Claude Code", "claude_code", "Claude", "claude-desktop")] == [
        True, True, False, False]
    assert [same_agent(n, h) for n, h in (("gemini-cli", "gemini"), ("Copilot CLI", "copilot"),
                                          ("Copilot Chat", "copilot"))] == [True, True, False]
    tool_calls(vault, [{"action": "session_start", "sessionId": "m6", "cwd": str(repo)},
                       {"action": "record", "sessionId": "m6", "body": "deploy to staging", "cwd": str(repo)},
                       {"action": "session_end", "sessionId": "m6", "cwd": str(repo)}])
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, session_id="another-conversation",
                                      prompt="deploy to staging"))
    listed = json.loads(memo("--json", "prompt", "search", "staging", "--project", "product", vault=vault).stdout)
    assert sorted(i["sessionId"] for i in listed["items"]) == ["claude-code-another-conversation", "m6"]


def test_another_agent_recording_the_text_a_hook_just_captured_gets_its_own_turn(tmp_path, repo):
    """Found by a new user: an agent's MCP turn naming its own agent was answered with a Claude
    Code hook turn of the same text — another conversation's — and its own session kept no turn.
    Only the hook's own agent (or one naming none, or ``generic``) is answered with the hook's
    turn; an ``ide`` names where an agent runs (Claude Code in Cursor), not which (an attacker)."""
    from tests.inprocess import tool_calls

    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="fix the flaky test"))
    [(error, text), *same] = tool_calls(vault, [
        {"action": "record", "sessionId": "agent-d", "agent": "codex", "body": "fix the flaky test", "cwd": str(repo)},
        {"action": "record", "sessionId": "agent-e", "agent": "Claude-Code", "body": "fix the flaky test",
         "cwd": str(repo)},
        {"action": "record", "sessionId": "agent-e", "ide": "cursor", "body": "fix the flaky test", "cwd": str(repo)},
        {"action": "record", "sessionId": "agent-e", "agent": "generic", "ide": "vscode", "body": "fix the flaky test",
         "cwd": str(repo)},
    ])
    assert not error and "duplicateOf" not in json.loads(text)
    assert (json.loads(text)["id"], json.loads(text)["sessionId"]) == ("prompt-agent-d-t1", "agent-d")
    assert [json.loads(answer)["duplicateOf"] for _, answer in same] == [f"prompt-claude-code-{SESSION}-t1"] * 3


def test_a_conversation_resumed_after_its_end_is_a_new_work_interval(tmp_path, repo):
    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("SessionStart", repo, source="startup"))
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="first part"))
    hook(vault, "claude-code", claude("SessionEnd", repo, reason="prompt_input_exit"))
    hook(vault, "claude-code", claude("SessionStart", repo, source="resume"))  # Claude Code keeps the session id
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="after the resume"))
    hook(vault, "claude-code", claude("SessionEnd", repo, reason="prompt_input_exit"))
    folder = vault / "projects" / "product" / "sessions"
    first = read_record(folder / f"session-claude-code-{SESSION}.md")[0]
    second = read_record(folder / f"session-claude-code-{SESSION}.2.md")[0]
    assert (first["status"], second["status"]) == ("completed", "completed")
    assert second["startTime"] >= first["endTime"]
    shown = json.loads(memo("--json", "session", "show", f"claude-code-{SESSION}.2", "--project", "product",
                            vault=vault).stdout)
    assert [t["body"] for t in shown["items"]] == ["after the resume"]
    report = json.loads(memo("--json", "activity", "--project", "product", vault=vault).stdout)
    assert report["totalSessions"] == 2 and report["totalPrompts"] == 2


# ---------------------------------------------------------------- found by trying to break it


@pytest.mark.parametrize("args", [[], ["claude-code", "--bogus"], ["claude-code", "a", "b", "c"]])
def test_a_usage_error_still_exits_0_with_nothing_on_stdout(tmp_path, args):
    ran = memo("hook", *args, vault=tmp_path / "v", input="{}", check=False)
    assert (ran.returncode, ran.stdout) == (0, "") and ran.stderr.startswith("memo hook:")


@pytest.mark.parametrize("stdin", ["[" * 100_000, '{"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":'
                                   '"   \\u200b  "}'])  # (a prompt over the size limit is kept cut: below)
def test_an_event_that_cannot_be_read_or_recorded_is_dropped_and_exits_0(tmp_path, stdin):
    vault = tmp_path / "v"
    hook(vault, "claude-code", stdin)
    assert capture.spooled(vault) == [] and "event dropped" in (vault / ".memo" / "spool" / "hooks.log").read_text()


def test_a_spool_entry_that_cannot_be_read_is_set_aside_and_capture_goes_on(tmp_path, repo):
    vault = tmp_path / "v"
    folder = capture.spool_dir(vault)
    folder.mkdir(parents=True)
    (folder / "00000000000000000001-1-a.json").write_text("[" * 100_000)
    (folder / "00000000000000000002-1-b.json").mkdir()  # a folder with an entry's name
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="still captured"))
    assert [t["body"] for t in turns(vault, "product")] == ["still captured"]
    assert sorted(p.name for p in folder.iterdir()) == ["00000000000000000001-1-a.bad", "00000000000000000002-1-b.bad"]


def test_a_spooled_event_is_redacted_and_readable_by_its_owner_only(tmp_path, repo, monkeypatch):
    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="first"))
    (vault / ".memo" / "index.sqlite").write_bytes(b"not a database" * 50)  # the vault cannot take the next one
    for suffix in ("-wal", "-shm"):
        (vault / ".memo" / f"index.sqlite{suffix}").unlink(missing_ok=True)
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt=f"deploy with {GHP}"))
    [spooled] = capture.spooled(vault)
    assert GHP not in spooled.read_text() and "[REDACTED" in spooled.read_text()
    assert spooled.stat().st_mode & 0o777 == 0o600


def test_an_event_time_far_from_now_is_not_believed(tmp_path, repo):
    vault = tmp_path / "v"
    common = {"session_id": "g-1970", "cwd": str(repo)}
    for event, extra in (("SessionStart", {}), ("BeforeAgent", {"prompt": "hello"}), ("SessionEnd", {})):
        hook(vault, "gemini", json.dumps({**common, "hook_event_name": event, "timestamp": 1, **extra}))
    report = json.loads(memo("--json", "activity", "--project", "product", vault=vault).stdout)
    assert report["totalDurationMinutes"] < 5  # not 500,000 hours since 1970


def test_a_broken_config_with_a_vault_inside_a_repository_spools_nothing_there(tmp_path, repo):
    config = tmp_path / "config.toml"
    config.write_text("timezone = [unclosed\n")
    inside = repo / "vault"
    ran = memo("hook", "claude-code", input=claude("UserPromptSubmit", repo, prompt=f"a {GHP}"), check=False,
               env={"MEMO_CONFIG": str(config), "MEMO_VAULT": str(inside)})
    assert (ran.returncode, ran.stdout) == (0, "") and "event not kept" in ran.stderr
    assert not inside.exists()


@contextlib.contextmanager
def _remote_mode(tmp_path: Path):
    """This machine in remote mode (its spool under ``local``) towards a daemon that is down
    while the block runs (its port held, so no other test's server takes it): ``(local, env, port)``."""
    from .test_http_api import refused_port

    with refused_port() as port:
        config = tmp_path / "remote.toml"
        config.write_text(f'mode = "remote"\n[remote]\nurl = "http://127.0.0.1:{port}"\n')
        yield tmp_path / "local", {"MEMO_CONFIG": str(config)}, port


def test_in_remote_mode_the_hook_sends_the_event_to_the_daemon_and_spools_while_it_is_down(tmp_path, repo):
    from .test_http_api import Server

    with _remote_mode(tmp_path) as (local, env, port):
        hook(local, "claude-code", claude("UserPromptSubmit", repo, prompt="while the daemon is down"), env=env)
        [spooled] = capture.spooled(local)
        assert "while the daemon is down" in spooled.read_text()
    daemon = Server(tmp_path / "team", "--mcp-port", "0", port=port)
    try:
        hook(local, "claude-code", claude("UserPromptSubmit", repo, prompt="with the daemon up"), env=env)
    finally:
        daemon.stop()
    assert capture.spooled(local) == [] and not (local / "projects").exists()  # nothing kept on this machine
    recorded = turns(tmp_path / "team", "product")  # the project of the caller's repository
    assert [(t["body"], t["source"]) for t in recorded] == [("while the daemon is down", "hook:claude-code"),
                                                             ("with the daemon up", "hook:claude-code")]
    assert recorded[0]["created"] < recorded[1]["created"]
    # the caller's cwd names a folder of its machine: the daemon takes no path from it (a rule
    # promoted later would otherwise be written into whatever repository that path is here)
    kept = tmp_path / "team" / "projects" / "product" / "project.toml"
    assert not kept.exists() or "lastSeenRoot" not in kept.read_text()
    assert all(t.get("gitSha") is None for t in recorded)  # a repository without a commit


def test_in_remote_mode_a_refused_token_keeps_the_event_and_the_turn_carries_the_callers_branch(tmp_path, repo):
    """A wrong ``remote.token``: every event was dropped ("the daemon refused it") and ``memo
    doctor`` said all was well. It is kept in the spool as while the daemon is down, doctor says
    the daemon refuses this machine, and once the token is right the events arrive — with the
    branch and commit of the caller's repository (the daemon had none: it takes no path)."""
    from .test_http_api import Server, free_port

    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "-b", "feature/cart"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=ana@example.com", "-c", "user.name=Ana", "commit", "-q",
                    "--allow-empty", "-m", "start"], check=True)
    sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    local, port = tmp_path / "local", free_port()
    config = tmp_path / "remote.toml"
    env = {"MEMO_CONFIG": str(config)}
    daemon = Server(tmp_path / "team", "--token", "the-teams-token-1234", port=port)
    try:
        config.write_text(f'mode = "remote"\n[remote]\nurl = "http://127.0.0.1:{port}"\ntoken = "a-wrong-token-1234"\n')
        hook(local, "claude-code", claude("UserPromptSubmit", repo, prompt="with a wrong token"), env=env)
        [spooled] = capture.spooled(local)
        assert "with a wrong token" in spooled.read_text()
        waiting = json.loads(memo("--json", "sync", "status", vault=local, env=env).stdout)  # it was refused: no vault
        assert (waiting["mode"], waiting["spooledEvents"]) == ("remote", 1)
        assert "refused this machine (HTTP 401" in waiting["lastHookLine"]
        doctor = memo("doctor", env=env, check=False)
        [line] = [line for line in doctor.stdout.splitlines() if " vault " in line]
        assert doctor.returncode == 1, doctor.stdout
        assert "refused this machine (HTTP 401" in line and "memo config set remote.token TOKEN" in doctor.stdout
        config.write_text(f'mode = "remote"\n[remote]\nurl = "http://127.0.0.1:{port}"\n'
                          'token = "the-teams-token-1234"\n')
        assert "answers and takes this machine's token" in memo("doctor", env=env, check=False).stdout
        hook(local, "claude-code", claude("UserPromptSubmit", repo, prompt="with the right token"), env=env)
    finally:
        daemon.stop()
    assert capture.spooled(local) == []
    recorded = turns(tmp_path / "team", "product")
    assert [(t["body"], t["branch"], t["gitSha"]) for t in recorded] == [
        ("with a wrong token", "feature/cart", sha), ("with the right token", "feature/cart", sha)]


def test_cursor_running_claude_codes_hook_as_well_as_its_own_records_the_prompt_once(tmp_path, repo):
    """Cursor loads Claude Code's hooks too: its event reaches ``memo hook cursor`` and
    ``memo hook claude-code``; it is Cursor's, and one turn."""
    vault = tmp_path / "v"
    event = {"conversation_id": "c0ffee00-1111-4222-8333-444455556666", "generation_id": "g-1",
             "hook_event_name": "beforeSubmitPrompt", "prompt": "Add a dark mode", "workspace_roots": [str(repo)],
             "cursor_version": "2026.07.23"}
    hook(vault, "cursor", json.dumps(event))
    hook(vault, "claude-code", json.dumps(event))
    [turn] = turns(vault, "product")
    assert (turn["agent"], turn["sessionId"]) == ("cursor", "cursor-c0ffee00-1111-4222-8333-444455556666")
    assert not (vault / "projects" / "product" / "sessions" / "session-claude-code-c0ffee00-1111-4222-8333-444455556666.md").exists()


def test_a_conversation_id_holding_a_secret_is_in_no_id_file_name_or_answer(tmp_path, repo):
    """SPEC §2.4: an agent's session id shaped like a key (a hostile hook payload, a transcript
    named after one) became the session id — file names, records, lists, the digest — lower-cased
    but whole. Such an id gives ``{agent}-redacted-<hash>``: the same for the hook and the import
    of the same conversation, so the transcript still supersedes what the hook captured."""
    key = "AKIAQRSTUVWXYZABCDEF"
    vault = tmp_path / "v"
    payload = json.loads(claude("UserPromptSubmit", repo, prompt="ship it"))
    payload["session_id"] = f"sechk{key}"
    hook(vault, "claude-code", json.dumps(payload))
    transcript = tmp_path / "t" / f"sechk{key}.jsonl"
    transcript.parent.mkdir()
    transcript.write_text(json.dumps({
        "type": "user", "sessionId": f"sechk{key}", "uuid": "7f3c2a10-0000-4000-8000-0000000000d1", "cwd": str(repo),
        "timestamp": "2026-11-30T09:00:00.000Z", "message": {"role": "user", "content": "ship it"}}) + "\n")
    memo("import", "claude-code", str(transcript.parent), vault=vault)
    listed = json.loads(memo("--json", "prompt", "list", "--all", vault=vault).stdout)["items"]
    assert [item["sessionId"] for item in listed] == ["claude-code-redacted-71bc27fd52ff-1"]
    everything = [str(p) for p in vault.rglob("*")] + [p.read_text("utf-8", "replace") for p in vault.rglob("*.md")]
    assert not any(key.lower() in text.lower() for text in everything)


def test_a_vault_path_that_is_a_link_into_a_repository_spools_nothing_there(tmp_path, repo):
    """The vault named through a symbolic link to a folder of a repository: the settings refuse
    it, and the spool beside it went through the link into the repository (found by a helper)."""
    inside = repo / "sub"
    inside.mkdir()
    link = tmp_path / "vlink"
    link.symlink_to(inside)
    ran = memo("hook", "claude-code", input=claude("UserPromptSubmit", repo, prompt="hi"), check=False,
               env={"MEMO_VAULT": str(link)})
    assert (ran.returncode, ran.stdout) == (0, "") and "event not kept" in ran.stderr
    assert list(inside.iterdir()) == []


def test_the_same_prompt_twice_is_two_turns_when_the_agent_numbers_them_apart_and_one_from_two_hooks(tmp_path, repo):
    """'continue' sent twice within a minute is two turns when the agent gave each its own id (it
    was kept once, as if a second installed hook had sent it again); the same prompt with the same
    id — two hooks of one agent firing for one prompt — stays one turn."""
    vault = tmp_path / "v"
    for prompt_id in ("pid-1", "pid-2", "pid-2"):
        hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="continue", prompt_id=prompt_id))
    assert [t["agentTurnId"] for t in turns(vault, "product")] == ["pid-1", "pid-2"]


def test_a_prompt_cut_inside_a_character_is_kept_with_a_replacement_character(tmp_path, repo):
    """A lone surrogate in the payload's prompt dropped the turn ('1 validation error …', the field
    unnamed); the importers already keep such text with U+FFFD, and so does a hook now."""
    vault = tmp_path / "v"
    payload = claude("UserPromptSubmit", repo, prompt="fix the \ud800 parser")
    assert "\\ud800" in payload  # as JSON carries it
    hook(vault, "claude-code", payload)
    [turn] = turns(vault, "product")
    assert turn["body"] == "fix the \ufffd parser"


def test_agent_sessions_x_upper_x_and_x_2_are_three_sessions_and_one_end_ends_only_its_own(tmp_path, repo):
    """An agent's ids ``x``, ``X`` and ``x.2`` once met in one vault session (case folding, and
    ``.2`` read as the second work interval of ``x``): a SessionEnd of one ended another."""
    vault = tmp_path / "v"

    def event(sid: str, name: str, **fields) -> str:
        return json.dumps({"session_id": sid, "cwd": str(repo), "hook_event_name": name, **fields})

    for sid in ("x", "X", "x.2"):
        hook(vault, "claude-code", event(sid, "SessionStart", source="startup"))
        hook(vault, "claude-code", event(sid, "UserPromptSubmit", prompt=f"prompt of {sid}"))
    hook(vault, "claude-code", event("X", "SessionEnd", reason="prompt_input_exit"))
    folder = vault / "projects" / "product" / "sessions"
    sessions = {read_record(p)[0]["agentSessionId"]: read_record(p)[0] for p in folder.glob("*.md")}
    assert sorted(sessions) == ["X", "x", "x.2"]
    assert len({s["sessionId"] for s in sessions.values()}) == 3
    assert sessions["x"]["sessionId"] == "claude-code-x"  # a lower-case slug keeps its plain id
    assert {sid: s["status"] for sid, s in sessions.items()} == {"x": "active", "X": "completed", "x.2": "active"}
    by_session = {}
    for turn in turns(vault, "product"):
        by_session.setdefault(turn["sessionId"], []).append(turn["body"])
    assert sorted(by_session.values()) == [["prompt of X"], ["prompt of x"], ["prompt of x.2"]]


def test_a_prompt_spooled_before_its_session_ended_is_recorded_in_that_session_not_a_new_one(tmp_path, repo):
    """A prompt that waited in the spool (the vault was busy) while another hook process recorded
    the SessionEnd opened ``….2`` on replay — a session no SessionEnd would ever close."""
    from datetime import datetime, timezone

    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("SessionStart", repo, source="startup"))
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="first"))
    waited = datetime.now(timezone.utc)
    time.sleep(1.1)
    hook(vault, "claude-code", claude("SessionEnd", repo, reason="prompt_input_exit"))
    capture._spool(vault, {"agent": "claude-code", "event": None, "receivedAt": waited.isoformat(),
                           "payload": json.loads(claude("UserPromptSubmit", repo, prompt="second, spooled")),
                           "captureId": "0123456789abcdef"})
    hook(vault, "claude-code", claude("Stop", repo, stop_hook_active=False))  # any later event replays the spool
    assert capture.spooled(vault) == []
    folder = vault / "projects" / "product" / "sessions"
    [session] = [read_record(p)[0] for p in folder.glob("*.md")]
    assert (session["sessionId"], session["status"]) == (f"claude-code-{SESSION}", "completed")
    assert [(t["sessionId"], t["body"]) for t in turns(vault, "product")] == [
        (f"claude-code-{SESSION}", "first"), (f"claude-code-{SESSION}", "second, spooled")]


def test_a_worktree_a_subfolder_and_a_link_of_one_repository_are_its_project_for_hook_and_import(tmp_path, repo):
    """An agent working in a linked worktree (``git worktree add``), a subfolder or through a link
    to the repository files its work under the repository's project, by hook and by import alike
    (the hook named the worktree's folder, the import the subfolder's name: one repository's
    work was billed as three projects)."""
    git = ["git", "-c", "user.email=a@b.c", "-c", "user.name=A", "-C", str(repo)]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "start"], check=True)
    subprocess.run([*git, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "product-feature")], check=True)
    sha = subprocess.run([*git, "rev-parse", "feature"], check=True, capture_output=True, text=True).stdout.strip()
    (tmp_path / "product-feature" / "api").mkdir()
    (tmp_path / "link").symlink_to(repo)
    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", tmp_path / "product-feature" / "api", prompt="in a worktree"))
    hook(vault, "codex", None, json.dumps({"type": "agent-turn-complete", "thread-id": "t-link",
                                           "cwd": str(tmp_path / "link"), "input-messages": ["through a link"]}))
    folder = tmp_path / "claude" / "projects" / "-product-api"
    folder.mkdir(parents=True)
    other = "0e7b2a51-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
    lines = [_transcript_line("user", "u1", "2026-11-30T09:00:00.000Z", "in a subfolder", repo / "api"),
             _transcript_line("assistant", "a1", "2026-11-30T09:04:00.000Z", "Done.", repo / "api")]
    (repo / "api").mkdir()
    (folder / f"{other}.jsonl").write_text("\n".join(lines).replace(SESSION, other) + "\n")
    subprocess.run(["git", "-C", str(repo), "config", "user.email", "ana@example.com"], check=True)
    memo("import", "claude-code", str(folder), vault=vault)
    assert sorted(p.name for p in (vault / "projects").iterdir()) == ["product"]
    imported = read_record(vault / "projects" / "product" / "sessions" / f"session-claude-code-{other}-1.md")[0]
    assert imported["owner"] == "ana@example.com"  # whose work it is, as a hook records it (parallel sessions)
    assert sorted(t["body"] for t in turns(vault, "product")) == ["in a subfolder", "in a worktree", "through a link"]
    session = read_record(vault / "projects" / "product" / "sessions" / f"session-claude-code-{SESSION}.md")[0]
    assert (session["branch"], session["gitSha"]) == ("feature", sha)  # read where git keeps a worktree's branch


def test_an_event_larger_than_the_capture_takes_is_read_to_its_end_so_the_agents_write_does_not_fail(tmp_path, repo):
    """The process boundary is what is tested: the hook read 8 MiB and left, and the agent's
    write of the rest failed on a closed pipe (EPIPE)."""
    vault = tmp_path / "v"
    big = claude("UserPromptSubmit", repo, prompt="x" * (capture.MAX_EVENT_BYTES + 4 * 1024 * 1024)).encode()
    proc = subprocess.Popen([sys.executable, "-m", "memo_analytics", "--vault-root", str(vault), "hook", "claude-code"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write(big)  # BrokenPipeError here when the hook stops reading early
    proc.stdin.close()
    out = proc.stdout.read()
    proc.stderr.close()
    proc.stdout.close()
    assert (proc.wait(60), out) == (0, b"")
    assert "event dropped: the event is larger than" in (vault / ".memo" / "spool" / "hooks.log").read_text()


def test_a_team_daemon_records_the_callers_person_never_its_own_git_identity(tmp_path, repo, monkeypatch):
    """Hook events sent to the daemon in remote mode started sessions owned by the daemon's own
    global git identity — every laptop's sessions one person's, so two people's parallel
    sessions for one client billed once. The laptop sends its person (the git identity of its
    repository). (A call that names nobody to a daemon off loopback: tests/security.)"""
    from .test_http_api import Server, free_port

    daemon_config = tmp_path / "daemon.gitconfig"
    daemon_config.write_text("[user]\n\temail = daemon@example.com\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(daemon_config))  # the daemon's machine, and the laptop's global
    subprocess.run(["git", "-C", str(repo), "config", "user.email", "ana@example.com"], check=True)
    config = tmp_path / "remote.toml"
    port = free_port()
    config.write_text(f'mode = "remote"\n[remote]\nurl = "http://127.0.0.1:{port}"\n')
    daemon = Server(tmp_path / "team", port=port)
    try:
        hook(tmp_path / "local", "claude-code", claude("UserPromptSubmit", repo, prompt="from ana's laptop"),
             env={"MEMO_CONFIG": str(config)})
    finally:
        daemon.stop()
    owners = {read_record(p)[0]["id"]: read_record(p)[0].get("owner")
              for p in (tmp_path / "team" / "projects").glob("*/sessions/*.md")}
    assert owners == {f"session-claude-code-{SESSION}": "ana@example.com"}, owners


def test_a_spooled_event_that_keeps_failing_stops_no_other_and_is_set_aside(tmp_path, repo):
    """One repository whose `.memoignore` cannot be read (a link to /proc/self/mem: EIO) had its
    event spooled, and then every later event of every repository was spooled behind it: the
    replay failed first, for good. The event of the run is recorded all the same; the stuck one
    is retried, and set aside (`.bad`) after failing three times while others were recorded."""
    vault = tmp_path / "v"
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    subprocess.run(["git", "init", "-q", str(hostile)], check=True)
    (hostile / ".memoignore").symlink_to("/proc/self/mem")
    stuck = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "evil", "prompt": "x", "cwd": str(hostile)})
    hook(vault, "claude-code", stuck)
    assert len(capture.spooled(vault)) == 1
    for n in range(1, 4):
        hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt=f"turn {n}"))
        assert [t["body"] for t in turns(vault, "product")] == [f"turn {i}" for i in range(1, n + 1)]
        assert len(capture.spooled(vault)) == (1 if n < 3 else 0)
    assert len(list(capture.spool_dir(vault).glob("*.bad"))) == 1
    log = (capture.spool_dir(vault).parent / "hooks.log").read_text()
    assert "failed again (1 of 3; other events go on): OSError" in log
    assert "set aside (.bad) after failing 3 times while other events were recorded: OSError" in log


def test_a_hook_session_idle_past_the_idle_gap_ends_at_its_last_turn_and_goes_on_in_a_new_interval(tmp_path, repo):
    """Found by a new user: a session captured by hooks alone never split at pauses, as an import
    splits a transcript: prompts at 16:01 and 16:40, the next at 08:05 the day after and the end
    at 09:00 billed 17 hours — the night included. A prompt after more than the idle gap (30
    minutes) ends the interval and opens the next (``.2``), and so does an end after such a pause:
    an agent that names its transcript (Claude Code) worked until its last write; one that does not
    (Cursor) is counted an idle gap of answer after its last prompt, never the night."""
    from datetime import datetime, timezone

    from memo_analytics.config import Settings
    from memo_analytics.services.capture import HookEvent, apply_event
    from memo_analytics.services.store import VaultStore

    at = _november
    said = _applied(tmp_path, repo, "cursor", "c1", [
        ("prompt", at(30, 16, 1), "start the export"), ("prompt", at(30, 16, 25), "add the tests"),
        ("prompt", datetime(2026, 12, 1, 8, 5, tzinfo=timezone.utc), "fix the review"),
        ("session_end", datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc), None),
        ("prompt", datetime(2026, 12, 1, 9, 5, tzinfo=timezone.utc), "one more"),
        ("session_end", datetime(2026, 12, 1, 11, 0, tzinfo=timezone.utc), None)])
    folder = tmp_path / "v" / "projects" / "product" / "sessions"
    first = read_record(folder / "session-cursor-c1.md")[0]
    second = read_record(folder / "session-cursor-c1.2.md")[0]
    third = read_record(folder / "session-cursor-c1.3.md")[0]
    assert (first["startTime"], first["endTime"], first["durationMinutes"]) == (
        "2026-11-30T16:01:00.000Z", "2026-11-30T16:55:00.000Z", 54)
    assert (second["startTime"], second["endTime"], second["durationMinutes"]) == (
        "2026-12-01T08:05:00.000Z", "2026-12-01T08:35:00.000Z", 30)
    assert (third["startTime"], third["endTime"], third["durationMinutes"]) == (  # the end came 115 minutes on
        "2026-12-01T09:05:00.000Z", "2026-12-01T09:35:00.000Z", 30)
    assert said[-1] == "session cursor-c1.3 ended at its last work 2026-12-01T09:35:00.000Z, 85 minutes idle before " \
                       "the agent's end"
    assert sorted((t["sessionId"], t["turn"]) for t in turns(tmp_path / "v", "product")) == [
        ("cursor-c1", 1), ("cursor-c1", 2), ("cursor-c1.2", 1), ("cursor-c1.3", 1)]

    # Claude Code names its transcript: its answers went on until its last write (16:50), so a prompt
    # at 17:10 is the same work interval; one at 18:00 is not
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n")
    os.utime(transcript, (at(30, 16, 50).timestamp(),) * 2)
    store = VaultStore(Settings(vault_root=tmp_path / "v2", timezone="UTC"))
    try:
        for n, when in enumerate((at(30, 16, 1), at(30, 17, 10), at(30, 18, 0))):
            apply_event(store, HookEvent("claude-code", "prompt", "k1", when, prompt=f"step {n}", cwd=str(repo),
                                         transcript_path=str(transcript)), f"{n + 100:08x}")
            if n == 1:
                os.utime(transcript, (at(30, 17, 20).timestamp(),) * 2)
    finally:
        store.close()
    sessions = tmp_path / "v2" / "projects" / "product" / "sessions"
    ended = read_record(sessions / "session-claude-code-k1.md")[0]
    assert (ended["endTime"], ended["durationMinutes"]) == ("2026-11-30T17:20:00.000Z", 79)
    assert read_record(sessions / "session-claude-code-k1.2.md")[0]["startTime"] == "2026-11-30T18:00:00.000Z"


def test_the_same_prompt_again_after_the_twin_window_is_another_turn_for_an_agent_without_turn_ids(tmp_path, repo):
    """Found by a new user: Cursor and Copilot give no turn id, and a second "continue" sent 13 s
    or 43 s after the first was dropped as "a second hook of the agent" (a minute's window). Two
    hooks of one prompt fire within seconds; later it is the person again."""
    from datetime import datetime, timedelta, timezone

    from memo_analytics.config import Settings
    from memo_analytics.services.capture import HookEvent, apply_event
    from memo_analytics.services.store import VaultStore

    start = datetime(2026, 11, 30, 16, 0, tzinfo=timezone.utc)
    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    try:
        said = [apply_event(store, HookEvent("cursor", "prompt", "c9", start + timedelta(seconds=s), prompt="continue",
                                             cwd=str(repo)), f"{n:08x}") for n, s in enumerate((0, 2, 13, 43))]
    finally:
        store.close()
    assert "recorded once" in said[1] and [t["created"][11:19] for t in turns(tmp_path / "v", "product")] == [
        "16:00:00", "16:00:13", "16:00:43"]


def test_the_same_short_prompt_after_the_agents_answer_is_another_turn_even_within_seconds(tmp_path, repo):
    """Found by an agent's tester: "yes" → the agent asks "Push?" → "yes" again within 10 s was
    recorded once ("the same prompt a moment ago"): the second "yes" lost. The agent's transcript
    holds its answer since the first: another turn. Two hooks of one prompt (no answer between)
    are still one."""
    from datetime import datetime, timedelta, timezone

    from memo_analytics.config import Settings
    from memo_analytics.services.capture import HookEvent, apply_event
    from memo_analytics.services.store import VaultStore

    transcript = tmp_path / "cc98.jsonl"
    transcript.write_text('{"type":"user","message":{"role":"user","content":"yes"}}\n', encoding="utf-8")
    start = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))

    def prompt(second: int, number: int) -> str:
        return apply_event(store, HookEvent("claude-code", "prompt", "cc98", start + timedelta(seconds=second),
                                            prompt="yes", cwd=str(repo), transcript_path=str(transcript)),
                           f"{number:08x}")

    try:
        said = [prompt(0, 0), prompt(1, 1)]  # two hooks of one prompt: nothing answered between
        with transcript.open("a", encoding="utf-8") as handle:
            handle.write('{"type":"assistant","message":{"role":"assistant","content":"Push?"}}\n')
        said += [prompt(3, 2), prompt(8, 3)]
    finally:
        store.close()
    assert "recorded once" in said[1] and "recorded once" in said[3], said
    assert [t["created"][11:19] for t in turns(tmp_path / "v", "product")] == ["10:00:00", "10:00:03"]


def test_an_agent_opened_and_left_bills_from_its_first_prompt_and_one_closed_unasked_bills_nothing(tmp_path, repo):
    """Found by a new user: a session began at the agent's SessionStart, not at the first prompt as
    the README says — an agent opened at 08:00 and first asked at 10:00 billed the two hours (or,
    idle-split, an empty interval); one opened and quit without a prompt billed its minutes."""
    from datetime import datetime, timedelta, timezone

    from memo_analytics.config import Settings
    from memo_analytics.services.capture import HookEvent, apply_event
    from memo_analytics.services.store import VaultStore

    t = datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc)
    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    try:
        for n, (sid, kind, minutes) in enumerate([("a", "session_start", 0), ("a", "prompt", 120), ("a", "session_end", 140),
                                                  ("b", "session_start", 0), ("b", "session_end", 12)]):
            apply_event(store, HookEvent("cursor", kind, sid, t + timedelta(minutes=minutes), prompt="go",
                                         cwd=str(repo)), f"{n:08x}")
    finally:
        store.close()
    folder = tmp_path / "v" / "projects" / "product" / "sessions"
    opened = read_record(folder / "session-cursor-a.md")[0]
    assert (opened["startTime"], opened["durationMinutes"]) == ("2026-11-30T10:00:00.000Z", 20)
    assert not (folder / "session-cursor-a.2.md").exists()
    assert read_record(folder / "session-cursor-b.md")[0]["durationMinutes"] == 0


def test_a_vault_folder_that_cannot_be_written_keeps_the_event_in_the_persons_spool(tmp_path, repo, monkeypatch):
    # found by a new user: a vault on a disk not mounted (here: its folder's parent is a file) lost every event
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    drive = tmp_path / "drive"
    drive.write_text("not mounted")
    vault = drive / "vault"
    env = {"HOME": str(home), "MEMO_HOOK_DEBUG": "1"}
    ran = hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt=f"while the disk is away {GHP}"), env=env)
    assert "event lost" not in ran.stderr and "spooled as" in ran.stderr
    [waiting] = capture.spooled(vault)
    assert waiting.is_relative_to(home / ".memo" / "spool") and waiting.stat().st_mode & 0o777 == 0o600
    assert GHP not in waiting.read_text()  # redacted before it waits
    assert "spooled as" in capture.hook_log(vault).read_text()
    assert capture.spooled(tmp_path / "another-vault") == []  # kept for the vault it was meant for only
    drive.unlink()
    drive.mkdir()  # the disk is back
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="after it came back"), env=env)
    assert capture.spooled(vault) == []
    recorded = turns(vault, "product")
    assert [t["body"].split(" [")[0] for t in recorded] == ["while the disk is away", "after it came back"]
    assert recorded[0]["created"] < recorded[1]["created"]  # the instant it happened, not when replayed


def test_the_persons_spool_is_not_used_inside_a_git_repository(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert capture.user_spool_dir(tmp_path / "vault") == home / ".memo" / "spool" / capture.user_spool_dir(
        tmp_path / "vault").parent.name / "hooks"
    subprocess.run(["git", "init", "-q", str(home)], check=True)  # a home folder kept as a dotfiles repository
    assert capture.user_spool_dir(tmp_path / "vault") is None


def test_a_late_prompt_goes_to_the_work_interval_of_its_time(tmp_path, repo):
    """A prompt that waited (spooled, or at a remote machine) while later work was recorded went
    to the newest interval — before its start, so it billed nothing. It goes to the interval of
    its time; made after that interval's end it extends it (within the idle gap) or is an interval
    of its own (beyond it); the live interval stays the one later prompts go to."""
    at = _november
    said = _applied(tmp_path, repo, "cursor", "c1", [
        ("prompt", at(29, 16, 1), "start the export"), ("prompt", at(29, 16, 25), "add the tests"),
        ("prompt", at(30, 8, 5), "fix the review"),
        ("prompt", at(29, 16, 10), "late: within the first"),
        ("prompt", at(29, 17, 0), "late: just after the first"),
        ("prompt", at(29, 20, 0), "late: an evening's work"),
        ("prompt", at(30, 8, 20), "live again"),
        ("session_end", at(30, 8, 50), None)])
    folder = tmp_path / "v" / "projects" / "product" / "sessions"
    times = {name: read_record(folder / f"session-{name}.md")[0] for name in ("cursor-c1", "cursor-c1.2", "cursor-c1.3")}
    assert [(m["startTime"][5:16], m["endTime"][5:16], m["durationMinutes"]) for m in times.values()] == [
        ("11-29T16:01", "11-29T17:30", 89),  # went on until the late prompt and an idle gap of its answer
        ("11-30T08:05", "11-30T08:50", 45),  # the live interval kept its later prompt and its end
        ("11-29T20:00", "11-29T20:30", 30)]  # the evening's prompt: an interval of its own
    assert said[-1] == "session cursor-c1.2 ended"
    by_session: dict = {}
    for turn in turns(tmp_path / "v", "product"):
        by_session.setdefault(turn["sessionId"], []).append(turn["body"])
    assert by_session == {
        "cursor-c1": ["start the export", "add the tests", "late: within the first", "late: just after the first"],
        "cursor-c1.2": ["fix the review", "live again"], "cursor-c1.3": ["late: an evening's work"]}
    report = json.loads(memo("--json", "activity", "--project", "product", "--since", "2026-11-29",
                             "--until", "2026-11-30", vault=tmp_path / "v").stdout)
    assert report["totalDurationMinutes"] == 89 + 45 + 30


@pytest.mark.parametrize("named", ["/dev/zero", "folder", "notes.txt"])
def test_only_a_transcript_file_tells_when_the_agent_last_worked(tmp_path, repo, named):
    """Found by an attacker: the idle-gap split took the time of whatever ``transcript_path``
    named — a device (``/dev/zero``: 770 minutes billed), a folder, any file through a link
    (967). Only a regular ``.json``/``.jsonl`` file is the agent's transcript; else the interval
    counts an idle gap after its last prompt, as for an agent that names none."""
    import os
    from datetime import datetime, timedelta, timezone

    from memo_analytics.config import Settings
    from memo_analytics.services.capture import HookEvent, apply_event
    from memo_analytics.services.store import VaultStore

    path = {"/dev/zero": "/dev/zero", "folder": str(tmp_path / "folder"), "notes.txt": str(tmp_path / "notes.txt")}[named]
    (tmp_path / "folder").mkdir()
    (tmp_path / "notes.txt").write_text("not a transcript")
    now = datetime.now(timezone.utc).replace(microsecond=0)
    before = now - timedelta(hours=20)
    for one in (tmp_path / "folder", tmp_path / "notes.txt"):  # written between the two prompts
        stamp = (before + timedelta(hours=10)).timestamp()
        os.utime(one, (stamp, stamp))
    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    try:
        for n, (kind, when, text) in enumerate([("prompt", before, "first"), ("prompt", now, "second"),
                                                ("session_end", now, None)]):
            apply_event(store, HookEvent("gemini", kind, "g1", when, prompt=text, cwd=str(repo), transcript_path=path),
                        f"{n:08x}")
    finally:
        store.close()
    first = read_record(tmp_path / "v" / "projects" / "product" / "sessions" / "session-gemini-g1.md")[0]
    assert first["durationMinutes"] == 30  # an idle gap after its prompt, not until the file's time


def test_hooks_replay_records_the_spooled_events_now(tmp_path, repo):
    """``memo hooks status`` said events wait "for the next hook run": with the agent quiet, a
    person had no way to record them. ``memo hooks replay`` does, and says when nothing waited."""
    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="first"))
    capture._spool(vault, {"agent": "claude-code", "event": None, "receivedAt": "2026-11-03T10:00:00Z",
                           "payload": json.loads(claude("UserPromptSubmit", repo, prompt="spooled one")),
                           "captureId": "0123456789abcdef"})
    assert "memo hooks replay" in memo("hooks", "status", vault=vault).stdout
    replayed = memo("hooks", "replay", vault=vault)
    assert replayed.stdout.splitlines()[-1] == "1 of 1 spooled hook events applied"
    assert [t["body"] for t in turns(vault, "product")] == ["first", "spooled one"]
    assert capture.spooled(vault) == []
    again = memo("--json", "hooks", "replay", vault=vault, check=False)
    assert again.returncode == 1 and json.loads(again.stdout) == {"waiting": 0, "recorded": 0, "left": 0, "lines": []}


def test_in_remote_mode_hooks_replay_sends_the_spooled_events_to_the_daemon(tmp_path, repo):
    """Remote mode keeps no vault here: the replay sends what waits to the daemon, as a hook run would."""
    from .test_http_api import Server

    with _remote_mode(tmp_path) as (local, env, port):
        hook(local, "claude-code", claude("UserPromptSubmit", repo, prompt="while the daemon is down"), env=env)
        down = memo("hooks", "replay", vault=local, env=env, check=False)
        assert down.returncode == 1 and "0 of 1 spooled hook events applied; 1 still wait" in down.stdout
    daemon = Server(tmp_path / "team", "--mcp-port", "0", port=port)
    try:
        up = memo("hooks", "replay", vault=local, env=env)
    finally:
        daemon.stop()
    assert "sent to the daemon" in up.stdout and capture.spooled(local) == []
    assert not (local / "projects").exists()
    assert [t["body"] for t in turns(tmp_path / "team", "product")] == ["while the daemon is down"]


def test_in_remote_mode_an_event_the_daemon_refuses_is_dropped_and_logged_not_kept(tmp_path, repo):
    """A daemon's refusal of the event itself (HTTP 400) drops it, with the daemon's words in
    the hook log; kept in the spool, it would be sent and refused again on every run."""
    from .test_sync_hybrid import _hostile_daemon

    local, config = tmp_path / "local", tmp_path / "remote.toml"
    with _hostile_daemon([(400, {"error": "Invalid payload: no prompt"})]) as url:
        config.write_text(f'mode = "remote"\n[remote]\nurl = "{url}"\n')
        hook(local, "claude-code", claude("UserPromptSubmit", repo, prompt="refused"), env={"MEMO_CONFIG": str(config)})
    assert capture.spooled(local) == []
    assert "event dropped: the daemon refused it: Invalid payload: no prompt" in capture.hook_log(local).read_text()


def test_ending_a_stalled_session_whose_answers_are_unseen_counts_an_idle_gap_after_its_prompt(tmp_path, repo):
    """Found by an operator: a Cursor session stalled after one prompt was proposed to end at that
    prompt (0 minutes billed), while the capture ends such a session an idle gap after its last
    prompt (its answer is not seen). The proposal and the delegated action end it there too."""
    from datetime import datetime, timedelta, timezone

    from memo_analytics.config import Settings
    from memo_analytics.services.capture import HookEvent, apply_event
    from memo_analytics.services.store import VaultStore

    now = datetime.now(timezone.utc).replace(microsecond=0)
    start = now - timedelta(hours=3)
    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    try:
        for n, (kind, when, text) in enumerate([("session_start", start, None),
                                                ("prompt", start + timedelta(minutes=1), "fix the cart")]):
            apply_event(store, HookEvent("cursor", kind, "c1", when, prompt=text, cwd=str(repo)), f"{n:08x}")
    finally:
        store.close()
    digest = json.loads(memo("--json", "digest", vault=tmp_path / "v").stdout)
    [item] = [i for i in digest["items"] if i["kind"] == "session_stalled"]
    until = start + timedelta(minutes=31)
    assert item["proposal"]["params"]["until"] == until.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert item["proposal"]["summary"].startswith("end cursor-c1 at an idle gap after its last prompt (its answer "
                                                  "is unseen) ")
    memo("digest", "apply", item["id"], "--fingerprint", item["fingerprint"], vault=tmp_path / "v")
    session = read_record(tmp_path / "v" / "projects" / "product" / "sessions" / "session-cursor-c1.md")[0]
    assert (session["status"], session["durationMinutes"]) == ("completed", 31)


def test_an_end_stamped_before_the_last_prompt_ends_the_session_at_that_prompt(tmp_path, repo):
    """Found by an attacker: Gemini's SessionEnd stamped 10:10 after a prompt at 10:20 (a clock
    gone back) stored the session as 10:00–10:10: the 10:20 turn lay outside it. The end is never
    before the last turn, and the hook log says so."""
    from datetime import datetime, timedelta, timezone

    vault = tmp_path / "v"
    common = {"session_id": "g2", "cwd": str(repo)}
    start = datetime.now(timezone.utc).replace(second=0, microsecond=0) - timedelta(hours=2)

    def at(minutes: int) -> str:
        return (start + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.000Z")

    for name, minutes, extra in (("SessionStart", 0, {}), ("BeforeAgent", 5, {"prompt": "p1"}),
                                 ("BeforeAgent", 20, {"prompt": "p2"}), ("SessionEnd", 10, {})):
        hook(vault, "gemini", json.dumps({**common, "hook_event_name": name, "timestamp": at(minutes), **extra}))
    session = read_record(vault / "projects" / "product" / "sessions" / "session-gemini-g2.md")[0]
    assert (session["endTime"], session["durationMinutes"]) == (at(20), 20)
    assert (f"session gemini-g2 ended at its last turn {at(20)} (the end event was stamped {at(10)}, before it)"
            in capture.hook_log(vault).read_text())


@pytest.mark.parametrize("stdin, said", [
    ('{"hook_event_name":"UserPromptSubmit","session_id":"s1","prompt":123}', "Invalid prompt: is a number, not text"),
    ('{"hook_event_name":"UserPromptSubmit","session_id":"s1","prompt":["a"]}', "Invalid prompt: is an array, not text"),
    ("not json", "the event is not JSON (Expecting value at line 1 column 1)"),
    ('{"hook_event_name":"UserPromptSubmit","session_id":"s1","prompt":" \\u200b "}', "Invalid body: must not be empty"),
])
def test_a_dropped_event_is_logged_as_what_is_wrong_with_it(tmp_path, repo, stdin, said):
    """Found by an attacker: a prompt that was a number was dropped as "Invalid body: must not be
    empty", and a payload that was not JSON as "Expecting value: line 1 column 1 (char 0)". Found
    by an operator: an empty prompt, dropped, had opened a session of no turn first, which then
    stalled in the digest — a dropped event writes nothing."""
    vault = tmp_path / "v"
    hook(vault, "claude-code", stdin.replace('"session_id"', f'"cwd":{json.dumps(str(repo))},"session_id"'))
    assert f"claude-code: event dropped: {said}" in capture.hook_log(vault).read_text()
    assert not list(vault.glob("projects/*/sessions/*.md"))


def _left_a_shared_baton(vault: Path, client: str | None = None) -> None:
    memo("session", "start", "agent-a", "--project", "product", *(["--client", client] if client else []), vault=vault)
    memo("session", "end", "agent-a", "--project", "product", "--next-step", "deploy to staging", "--shared",
         vault=vault)


def _pending(vault: Path) -> list[str]:
    return [b["id"] for b in json.loads(memo("--json", "session", "handoff", "--all", vault=vault).stdout)["items"]]


def test_a_claude_code_session_start_hands_its_agent_the_pending_hand_off_and_bills_its_client(tmp_path, repo):
    """Found by a new user: hook-driven agents never received a baton — a hook printed nothing,
    so the digest's fix for an unclaimed hand-off opened an empty session that stalled. Claude
    Code, Codex and Gemini CLI put a ``SessionStart`` hook's ``additionalContext`` into the
    model's context: the hook's start of a new conversation claims the hand-off (SPEC §2.5)
    and prints it there. The session takes the client of the session that left it (the
    project maps to none), where it had been ``internal``."""
    vault = tmp_path / "v"
    _left_a_shared_baton(vault, client="acme")
    ran = memo("hook", "claude-code", vault=vault, input=claude("SessionStart", repo, source="startup"), check=False)
    assert ran.returncode == 0, ran.stderr
    shown = json.loads(ran.stdout)["hookSpecificOutput"]
    assert shown["hookEventName"] == "SessionStart"
    assert "- deploy to staging" in shown["additionalContext"]
    assert f"claude-code-{SESSION}" in shown["additionalContext"] and "handoff-agent-a" in shown["additionalContext"]
    assert _pending(vault) == []
    baton = json.loads(memo("--json", "session", "handoff", "agent-a", "--project", "product", vault=vault).stdout)
    assert (baton["status"], baton["claimedBy"]) == ("claimed", f"claude-code-{SESSION}")
    session = json.loads(memo("--json", "session", "show", f"claude-code-{SESSION}", "--project", "product",
                              vault=vault).stdout)["session"]
    assert (session["client"], session["handoffClaimed"]) == ("acme", "handoff-agent-a")
    # the conversation's later events show nothing again: a prompt, a resume, a compaction
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="go on"))
    hook(vault, "claude-code", claude("SessionStart", repo, source="compact"))


@pytest.mark.parametrize("agent, payload", [
    ("gemini", lambda repo: json.dumps({"session_id": "g-1", "cwd": str(repo), "hook_event_name": "SessionStart",
                                        "source": "startup", "timestamp": "2026-12-01T09:00:00Z"})),
    ("codex", lambda repo: json.dumps({"session_id": "c-1", "cwd": str(repo), "hook_event_name": "SessionStart",
                                       "source": "startup", "model": "gpt-5"})),
])
def test_gemini_and_codex_session_starts_hand_over_too(tmp_path, repo, agent, payload):
    vault = tmp_path / "v"
    _left_a_shared_baton(vault)
    ran = memo("hook", agent, vault=vault, input=payload(repo), check=False)
    assert "deploy to staging" in json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
    assert _pending(vault) == []


def test_a_start_that_shows_no_baton_leaves_it_pending(tmp_path, repo):
    """Cursor's and Copilot's session starts, a spooled start replayed later, a resumed
    conversation and an import show the agent nothing: the hand-off stays pending for a start
    that shows it (``memo session start``, the tool's ``session_start``)."""
    vault = tmp_path / "v"
    _left_a_shared_baton(vault)
    hook(vault, "cursor", json.dumps({"conversation_id": "cur-1", "hook_event_name": "sessionStart",
                                      "workspace_roots": [str(repo)]}))
    hook(vault, "copilot", json.dumps({"sessionId": "cop-1", "cwd": str(repo), "source": "new"}),
         "--event", "sessionStart")
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="what is the weather"))  # no start seen
    hook(vault, "claude-code", claude("SessionStart", repo, source="resume"))  # the conversation goes on
    transcripts = tmp_path / "cc"
    transcripts.mkdir()
    (transcripts / "5f0c2b9e-1111-4222-8333-944455556666.jsonl").write_text(json.dumps(
        {"type": "user", "sessionId": "5f0c2b9e-1111-4222-8333-944455556666", "timestamp": "2026-11-30T09:00:00.000Z",
         "uuid": "u1", "message": {"role": "user", "content": "an old conversation"}}) + "\n", encoding="utf-8")
    imported = memo("--json", "import", "claude-code", str(transcripts), "--project", "product", vault=vault)
    assert json.loads(imported.stdout)["sessions"] == 1
    assert _pending(vault) == ["handoff-agent-a"]
    started = json.loads(memo("--json", "session", "start", "agent-b", "--project", "product", vault=vault).stdout)
    assert started["handoff"]["nextSteps"] == ["deploy to staging"]


def test_a_spooled_session_start_replayed_later_claims_nothing(tmp_path, repo):
    vault = tmp_path / "v"
    _left_a_shared_baton(vault)
    capture._spool(vault, {"agent": "claude-code", "event": None, "receivedAt": "2026-11-30T09:00:00Z",
                           "payload": json.loads(claude("SessionStart", repo, source="startup")),
                           "captureId": "c0ffee"})
    ran = memo("hook", "claude-code", vault=vault, input=json.dumps(
        {"session_id": "other", "cwd": str(repo), "hook_event_name": "UserPromptSubmit", "prompt": "hi"}), check=False)
    assert ran.stdout == ""
    assert f".json: session claude-code-{SESSION} started\n" in capture.hook_log(vault).read_text()
    assert _pending(vault) == ["handoff-agent-a"]


def test_in_a_folder_of_no_repository_hooks_the_tool_and_the_cli_file_work_under_its_name(tmp_path):
    """Found by an integrator: in a folder not yet ``git init``-ed a hook filed the work under the
    folder's name (as its import does) and the MCP tool and ``memo prompt record`` under
    ``default``: the agent's own record of a hook's prompt became a second turn, and a hand-off
    left over MCP never reached the folder's next session. All of them file it under its name."""
    from tests.inprocess import tool_calls

    vault, folder = tmp_path / "v", tmp_path / "Scraper Tool"
    folder.mkdir()
    hook(vault, "claude-code", claude("UserPromptSubmit", folder, prompt="Write the README for the scraper"))
    [(error, text)] = tool_calls(vault, [{"action": "record", "body": "Write the README for the scraper",
                                          "agent": "claude-code", "cwd": str(folder)}])
    assert not error and json.loads(text)["duplicateOf"] == f"prompt-claude-code-{SESSION}-t1"
    recorded = json.loads(memo("--json", "prompt", "record", "--session-id", "by-hand", "--body", "a note",
                               vault=vault, cwd=folder).stdout)
    assert recorded["project"] == "scraper-tool"
    answers = tool_calls(vault, [
        {"action": "session_start", "sessionId": "ng-work", "cwd": str(folder)},
        {"action": "record", "sessionId": "ng-work", "body": "scrape the listing pages", "cwd": str(folder)},
        {"action": "session_end", "sessionId": "ng-work", "cwd": str(folder),
         "handoff": {"nextSteps": ["parse the detail pages"]}}])
    assert [error for error, _ in answers] == [False, False, False], answers
    ran = memo("hook", "claude-code", vault=vault, check=False, input=json.dumps(
        {"session_id": "ng-next", "cwd": str(folder), "hook_event_name": "SessionStart", "source": "startup"}))
    assert ran.returncode == 0, ran.stderr
    assert "parse the detail pages" in json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
    projects = {p.name for p in (vault / "projects").iterdir()}
    assert projects == {"scraper-tool"}


def test_in_a_folder_of_no_repository_reached_through_a_link_memo_names_it_as_the_hook_does(tmp_path):
    """Found by a breaker: in a folder of no repository reached through a link, the hook filed the
    work under the link's name (the agent's cwd) and ``memo`` under the target's (its working
    folder resolved): two projects of one folder. memo names it as the shell does (``$PWD``)."""
    vault, real = tmp_path / "v", tmp_path / "real-folder"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    hook(vault, "claude-code", claude("UserPromptSubmit", link, prompt="do the thing"))
    recorded = json.loads(memo("--json", "prompt", "record", "--session-id", "by-hand", "--body", "a note",
                               vault=vault, cwd=link, env={"PWD": str(link)}).stdout)
    assert recorded["project"] == "link"
    assert {p.name for p in (vault / "projects").iterdir()} == {"link"}
    # a $PWD of another folder (stale, inherited) is not taken
    other = json.loads(memo("--json", "prompt", "record", "--session-id", "by-hand-2", "--body", "b",
                            vault=vault, cwd=real, env={"PWD": str(tmp_path)}).stdout)
    assert other["project"] == "real-folder"
    # a cwd an MCP caller gives is taken as given, whatever the server's $PWD (it was swapped for it:
    # the MCP turn filed under the link's name, the hook's of the same cwd under the folder's)
    hook(vault, "claude-code", claude("UserPromptSubmit", real, session_id="h9", prompt="by its real path"))
    [(error, text)] = tool_calls(vault, [{"action": "record", "sessionId": "m1", "body": "mcp, real path",
                                          "cwd": str(real)}], env={"PWD": str(link)})
    assert not error and json.loads(text)["project"] == "real-folder"
    assert {p.name for p in (vault / "projects").iterdir()} == {"link", "real-folder"}


def test_the_installed_launcher_prints_the_hand_off_for_the_agent(tmp_path, repo):
    """The entry ``memo hooks install`` writes runs the launcher, not the command line: it
    prints the same answer (a process, as the agent runs it)."""
    vault = tmp_path / "v"
    _left_a_shared_baton(vault)
    ran = subprocess.run([sys.executable, "-m", "memo_analytics", "--vault-root", str(vault), "hook", "claude-code"],
                         input=claude("SessionStart", repo, source="startup"), capture_output=True, text=True,
                         timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert "deploy to staging" in json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_live_conversation_imported_from_its_transcript_stalls_until_its_agent_ends_it(tmp_path, repo):
    """Found by a new user: with hooks and ``memo watch`` both on (the set-up the README gives),
    the import of a live Claude Code transcript superseded the open hook session by completed
    sessions at once: the conversation was never listed as stalled, however long the agent
    waited on the person. Until the agent's end, a quiet conversation is ``session_stalled``
    (nothing at stake: the import bills only the time worked); after it, or resumed, it is not."""
    from datetime import datetime, timedelta, timezone

    from memo_analytics.config import Settings
    from memo_analytics.operator.service import current_digest
    from memo_analytics.services.store import VaultStore

    vault, folder = tmp_path / "v", tmp_path / "cc"
    folder.mkdir()
    transcript = folder / f"{SESSION}.jsonl"
    now = datetime.now(timezone.utc)
    transcript.write_text(json.dumps({
        "type": "user", "sessionId": SESSION, "uuid": "u-1", "cwd": str(repo),
        "timestamp": (now - timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "message": {"role": "user", "content": "Fix the flaky upload test"}}) + "\n", encoding="utf-8")
    hook(vault, "claude-code", claude("SessionStart", repo, source="startup", transcript_path=str(transcript)))
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Fix the flaky upload test",
                                      transcript_path=str(transcript)))
    memo("import", "claude-code", str(folder), vault=vault)  # what memo watch does as the file grows

    def stalled(at: datetime) -> list[tuple[str, int]]:
        store = VaultStore(Settings(vault_root=vault))
        try:
            digest = current_digest(store, now=at, force=True)
        finally:
            store.close()
        return [(i["id"], i["minutesAtStake"]) for i in digest["items"] if i["kind"] == "session_stalled"]

    assert stalled(now + timedelta(minutes=30)) == []  # quiet for less than stalledMinutes (60)
    assert stalled(now + timedelta(hours=2)) == [(f"session_stalled:claude-code-{SESSION}-1", 0)]
    assert stalled(now + timedelta(hours=11)) == []  # quiet past openTooLongHours: abandoned, not stalled
    hook(vault, "claude-code", claude("SessionEnd", repo, reason="prompt_input_exit", transcript_path=str(transcript)))
    assert stalled(now + timedelta(hours=2)) == []
    # a prompt made before the end and sent late (a spool, a remote machine) does not open it again (an attacker)
    from memo_analytics.services.capture import HookEvent, apply_event

    store = VaultStore(Settings(vault_root=vault))
    try:
        apply_event(store, HookEvent("claude-code", "prompt", SESSION, now - timedelta(minutes=1),
                                     prompt="a late one", cwd=str(repo), transcript_path=str(transcript)), "1ate0ne")
    finally:
        store.close()
    assert stalled(now + timedelta(hours=2)) == []
    hook(vault, "claude-code", claude("SessionStart", repo, source="resume", transcript_path=str(transcript)))
    assert stalled(now + timedelta(hours=2)) == [(f"session_stalled:claude-code-{SESSION}-1", 0)]


def test_ending_a_hook_session_its_transcripts_import_superseded_names_the_imported_one(tmp_path, repo):
    """Found by an operator: ``memo session end`` with the agent's own session id, superseded by
    the import of its transcript, made it ``completed`` again — a second row in reports beside
    the imported session (twice the minutes under overlapPolicy sum). It is refused, naming the
    imported session to end or leave the hand-off from."""
    vault, folder = tmp_path / "v", tmp_path / "cc"
    folder.mkdir()
    transcript = folder / f"{SESSION}.jsonl"
    transcript.write_text(json.dumps({"type": "user", "sessionId": SESSION, "uuid": "u-1", "cwd": str(repo),
                                      "timestamp": "2026-11-30T09:00:00.000Z",
                                      "message": {"role": "user", "content": "Fix it"}}) + "\n", encoding="utf-8")
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Fix it", transcript_path=str(transcript)))
    memo("import", "claude-code", str(folder), vault=vault)
    project = read_record(next((vault / "projects").glob(f"*/sessions/session-claude-code-{SESSION}.md")))[0]["project"]
    ran = memo("session", "end", f"claude-code-{SESSION}", "--project", project, "--next-step", "deploy", vault=vault,
               check=False)
    assert ran.returncode == 1 and (f"was superseded by the import of its transcript (claude-code-{SESSION}-1): end "
                                    f"it, or leave its hand-off, there: memo session end claude-code-{SESSION}-1 "
                                    f"--project {project} --next-step …") in " ".join(ran.stderr.split()), ran.stderr
    record = read_record(vault / "projects" / project / "sessions" / f"session-claude-code-{SESSION}.md")[0]
    assert record["status"] == "superseded"
    memo("session", "end", f"claude-code-{SESSION}-1", "--project", project, "--next-step", "deploy", vault=vault)


def test_showing_a_session_by_the_agents_own_id_names_the_hooks_session(tmp_path, repo):
    """Found by a new user: ``memo session show dbl`` answered "Record not found: dbl", with no
    word that a hook records the agent's conversation ``dbl`` as ``claude-code-dbl``."""
    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="hi"))
    shown = memo("session", "show", SESSION, vault=vault, check=False)
    assert shown.returncode == 1 and shown.stderr.strip() == (
        f"error: Record not found: {SESSION}; the session claude-code's hook recorded for that conversation is "
        f"claude-code-{SESSION}: memo session show claude-code-{SESSION} --project product")
    assert memo("session", "show", f"claude-code-{SESSION}", vault=vault).returncode == 0


def test_the_import_that_supersedes_a_hook_session_bills_the_client_it_was_given(tmp_path, repo):
    """Found in review: a hook session that took a hand-off (and its client), or that a person
    filed under a client by hand, was superseded by its transcript's import, whose sessions
    billed ``internal`` — the client was lost. The imported sessions bill the hook session's."""
    vault = tmp_path / "v"
    _left_a_shared_baton(vault, client="acme")
    memo("hook", "claude-code", vault=vault, input=claude("SessionStart", repo, source="startup"))
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Deploy to staging"))
    folder = tmp_path / "claude" / "projects" / "-product"
    folder.mkdir(parents=True)
    lines = [_transcript_line("user", "u1", "2026-11-30T09:00:00.000Z", "Deploy to staging", repo),
             _transcript_line("assistant", "a1", "2026-11-30T09:30:00.000Z", "Deployed.", repo)]
    (folder / f"{SESSION}.jsonl").write_text("\n".join(lines) + "\n")
    imported = json.loads(memo("--json", "import", "claude-code", str(folder), "--project", "product",
                               vault=vault).stdout)
    assert imported["sessions"] == 1 and imported["superseded"] >= 1
    session = read_record(vault / "projects" / "product" / "sessions" / f"session-claude-code-{SESSION}-1.md")[0]
    assert session["client"] == "acme"
    # --client given to the import still wins
    again = tmp_path / "v2"
    _left_a_shared_baton(again, client="acme")
    memo("hook", "claude-code", vault=again, input=claude("SessionStart", repo, source="startup"))
    memo("import", "claude-code", str(folder), "--project", "product", "--client", "globex", vault=again)
    session = read_record(again / "projects" / "product" / "sessions" / f"session-claude-code-{SESSION}-1.md")[0]
    assert session["client"] == "globex"


def test_a_resumed_or_compacted_conversation_memo_never_saw_takes_no_hand_off(tmp_path, repo):
    """Found by an attacker: a conversation resumed in the agent (its hook installed since, or its
    transcript imported alone) claimed the pending hand-off, as if new: the agent's ``source``
    says it is not."""
    vault = tmp_path / "v"
    _left_a_shared_baton(vault)
    for source in ("resume", "compact"):
        hook(vault, "claude-code", json.dumps({"session_id": f"old-{source}", "cwd": str(repo),
                                                "hook_event_name": "SessionStart", "source": source}))
    assert _pending(vault) == ["handoff-agent-a"]


def test_a_project_mapped_to_internal_stays_internal_when_its_session_takes_a_hand_off(tmp_path, repo):
    """Found by an attacker: ``projectClients`` mapping the project to ``internal`` read as no
    mapping, and the session that took a hand-off billed the client of the session that left it."""
    vault, config = tmp_path / "v", tmp_path / "config.toml"
    config.write_text('[projectClients]\nproduct = "internal"\n', encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    memo("session", "start", "agent-a", "--project", "product", "--client", "acme", vault=vault, env=env)
    memo("session", "end", "agent-a", "--project", "product", "--next-step", "go on", "--shared", vault=vault, env=env)
    memo("hook", "claude-code", vault=vault, input=claude("SessionStart", repo, source="startup"), env=env)
    session = read_record(vault / "projects" / "product" / "sessions" / f"session-claude-code-{SESSION}.md")[0]
    assert session["handoffClaimed"] == "handoff-agent-a" and session["client"] is None


def test_a_long_hand_off_is_cut_in_the_agents_context_and_names_the_command_for_the_rest(tmp_path, repo):
    """Found by an attacker: a hand-off of 200 steps of 900 characters put 181 kB into the
    model's context."""
    vault = tmp_path / "v"
    memo("session", "start", "agent-a", "--project", "product", vault=vault)
    steps = [arg for n in range(200) for arg in ("--next-step", f"step {n} " + "x" * 890)]
    memo("session", "end", "agent-a", "--project", "product", *steps, "--shared", vault=vault)
    ran = memo("hook", "claude-code", vault=vault, input=claude("SessionStart", repo, source="startup"))
    context = json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
    assert len(context) < capture.MAX_HANDOFF_SHOWN + 1_000
    assert context.endswith("(`memo session handoff agent-a --project product` shows it whole.)")


def test_one_long_next_step_is_cut_alone_and_the_hand_offs_later_sections_reach_the_agent(tmp_path, repo):
    """Found by an agent's tester: a hand-off with one next step of 9,000 characters reached the
    agent as "- short step one\n…" — its failed approaches gone, the baton claimed all the same.
    The long step is cut alone; the sections after it are there."""
    vault = tmp_path / "v"
    memo("session", "start", "agent-a", "--project", "product", vault=vault)
    memo("session", "end", "agent-a", "--project", "product", "--next-step", "short step one", "--next-step",
         "y" * 9_000, "--failed", "retrying the cache", "--shared", vault=vault)
    ran = memo("hook", "claude-code", vault=vault, input=claude("SessionStart", repo, source="startup"))
    context = json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "- short step one\n- " + "y" * 100 in context and "y" * 1_001 not in context
    assert "## Failed approaches\n- retrying the cache" in context
    assert context.endswith("(`memo session handoff agent-a --project product` shows it whole.)")


def test_in_remote_mode_the_daemon_hands_the_agent_its_hand_off(tmp_path, repo):
    """Found by a team lead: on a laptop in remote mode the session-start hook printed nothing and
    the hand-off stayed pending on the daemon. The daemon claims it for a live start and answers
    it; the hook prints it for the agent."""
    from .test_http_api import Server

    team = tmp_path / "team"
    _left_a_shared_baton(team)
    with _remote_mode(tmp_path) as (local, env, port):
        pass
    daemon = Server(team, "--mcp-port", "0", port=port)
    try:
        ran = memo("hook", "claude-code", vault=local, input=claude("SessionStart", repo, source="startup"), env=env)
        assert ran.returncode == 0, ran.stderr
        shown = json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "- deploy to staging" in shown and f"claude-code-{SESSION}" in shown
    finally:
        daemon.stop()
    assert _pending(team) == []


def test_in_remote_mode_the_same_short_prompt_after_the_agents_answer_is_another_turn(tmp_path, repo):
    """Found by an attacker: in remote mode "yes" → the agent's "Push?" → "yes" was one turn on
    the daemon ("the same prompt a moment ago"): the daemon cannot read the laptop's transcript.
    The laptop reads it, and says the agent answered since."""
    from .test_http_api import Server

    team = tmp_path / "team"
    transcript = tmp_path / "r1.jsonl"
    transcript.write_text('{"type":"user","message":{"role":"user","content":"yes"}}\n', encoding="utf-8")
    with _remote_mode(tmp_path) as (local, env, port):
        pass
    daemon = Server(team, "--mcp-port", "0", port=port)
    try:
        said = []
        for answer in (None, None, '{"type":"assistant","message":{"role":"assistant","content":"Push?"}}\n'):
            if answer:
                with transcript.open("a", encoding="utf-8") as handle:
                    handle.write(answer)
            ran = memo("hook", "claude-code", vault=local, env={**env, "MEMO_HOOK_DEBUG": "1"},
                       input=claude("UserPromptSubmit", repo, prompt="yes", transcript_path=str(transcript)))
            said.append(ran.stderr)
    finally:
        daemon.stop()
    assert "recorded once" in said[1] and "recorded once" not in said[2], said
    assert len(list((team / "projects" / "product" / "prompts").glob("*.md"))) == 2


def test_a_stop_is_said_to_the_debug_output_alone_and_an_event_memo_does_not_know_is_logged(tmp_path, repo):
    """Found by an operator: a hook wired to ``Stop`` instead of ``SessionEnd`` left no trace, even
    under ``MEMO_HOOK_DEBUG`` — every other drop is said. It is said there (not in ``hooks.log``:
    a Stop comes after every turn), and the vault is not opened."""
    vault = tmp_path / "v"
    ran = hook(vault, "claude-code", json.dumps({"hook_event_name": "Stop", "session_id": "s1", "cwd": str(repo)}),
               env={"MEMO_HOOK_DEBUG": "1"})
    # found by an integrator: "not an event memo records" where the README says a Stop ends a wait
    assert ran.stderr.strip() == ("claude-code: Stop: nothing to record (it ends a wait for you, and none was open; "
                                  "the session's end is its own event)")
    assert not vault.exists()
    quiet = hook(vault, "claude-code", json.dumps({"hook_event_name": "Stop", "session_id": "s1", "cwd": str(repo)}))
    assert quiet.stderr == ""
    # found by a new user: an event memo does not know (Claude Code's name sent to the Gemini hook, or none)
    # left no line in hooks.log either, where the README sends a person whose prompt went missing
    from memo_analytics.services import capture

    hook(vault, "gemini", json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "g9", "prompt": "x",
                                      "cwd": str(repo)}))
    hook(vault, "claude-code", json.dumps({"prompt": "y", "cwd": str(repo)}))
    logged = capture.hook_log(vault).read_text(encoding="utf-8")
    assert "gemini: UserPromptSubmit: not an event memo records" in logged
    assert "claude-code: an event naming no event: not an event memo records" in logged
    assert "Stop" not in logged


def test_a_conversation_that_moves_between_repositories_bills_each_its_time_and_ends_whole(tmp_path, repo):
    """Found by an operator (and a tester sending no ``cwd``): Claude Code reports its shell's
    folder as ``cwd``; after a ``cd`` to a folder outside any repository, to one since removed,
    or with none at all, the same conversation opened a second and third session in those
    folders' projects (``default``; each with its own turn 1, the id ambiguous), and the end
    closed one of them only: the others stalled and billed on. Such a turn stays with the
    conversation. A turn from another *repository* is that project's work (found by a new user:
    "fix the ETL there too" was billed to the first repository's client): the interval in the
    project it left ends there, and the end closes the one open interval wherever it is sent from."""
    vault = tmp_path / "v"
    other = tmp_path / "lib"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    outside, gone = tmp_path / "scratch", tmp_path / "gone"
    outside.mkdir()
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="first, in the product"))
    for folder, text in ((outside, "second, from outside"), (gone, "third, gone"), (other, "fourth, in lib")):
        hook(vault, "claude-code", claude("UserPromptSubmit", folder, prompt=text))
    hook(vault, "claude-code", json.dumps({"session_id": SESSION, "hook_event_name": "UserPromptSubmit",
                                           "prompt": "fifth, no cwd"}))
    hook(vault, "claude-code", claude("SessionEnd", repo, reason="prompt_input_exit"))  # sent from where it began
    assert sorted(p.name for p in (vault / "projects").iterdir()) == ["lib", "product"]
    assert [t["body"] for t in turns(vault, "product")] == ["first, in the product", "second, from outside",
                                                            "third, gone"]
    assert [t["body"] for t in turns(vault, "lib")] == ["fourth, in lib", "fifth, no cwd"]
    [left] = [read_record(p)[0] for p in (vault / "projects/product/sessions").glob("*.md")]
    [moved] = [read_record(p)[0] for p in (vault / "projects/lib/sessions").glob("*.md")]
    assert (left["status"], moved["status"]) == ("completed", "completed")
    assert left["endTime"] <= moved["startTime"]  # never open in two projects at once: its time is billed once


def test_a_prompt_said_again_after_the_hooks_conversation_ended_is_a_turn_of_its_own(tmp_path, repo):
    """Found by an operator: an MCP agent's ``record`` of "first prompt b" into its own session
    was answered with a Claude Code hook turn of the same text from a conversation that had
    ended minutes before, and nothing was written to the agent's session. A hook's turn answers
    an MCP record only while its conversation is open."""
    from tests.inprocess import tool_calls

    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="run the tests"))
    hook(vault, "claude-code", claude("SessionEnd", repo, reason="prompt_input_exit"))
    time.sleep(0.01)
    [(error, text)] = tool_calls(vault, [{"action": "record", "sessionId": "mcp-s2", "body": "run the tests",
                                          "cwd": str(repo)}])
    assert not error and "duplicateOf" not in json.loads(text)
    assert (json.loads(text)["id"], json.loads(text)["sessionId"]) == ("prompt-mcp-s2-t1", "mcp-s2")


def test_a_conversation_closed_without_a_prompt_bills_nothing_and_gives_back_its_baton(tmp_path, repo):
    """Found by an operator: a Claude Code conversation opened and closed without a prompt billed
    its whole span (25 minutes to Acme) when its transcript file existed — the agent writes it at
    its start — and a pending hand-off it took at its start was claimed for good, its next steps
    read by no work. It bills 0 minutes and the baton is pending again."""
    import os
    from datetime import datetime, timezone

    from memo_analytics.config import Settings
    from memo_analytics.services.capture import HookEvent, apply_event
    from memo_analytics.services.requests import EndSessionRequest, HandoffInput, StartSessionRequest
    from memo_analytics.services.sessions import end_session, start_session
    from memo_analytics.services.store import VaultStore

    transcript = tmp_path / "cc-r.jsonl"
    transcript.write_text('{"type":"summary"}\n')
    began = datetime(2026, 12, 5, 10, 0, tzinfo=timezone.utc)
    os.utime(transcript, (began.timestamp() + 5, began.timestamp() + 5))
    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    try:
        start_session(store, StartSessionRequest(session_id="h1", project="product", client="Acme Corp",
                                                 start_time="2026-12-05T08:00:00Z"))
        end_session(store, EndSessionRequest(session_id="h1", project="product", until="2026-12-05T09:00:00Z",
                                             handoff=HandoffInput(next_steps=["roll out CSRF"])))
        batons: list = []
        said = [apply_event(store, HookEvent("claude-code", kind, "cc-r", when, cwd=str(repo),
                                             transcript_path=str(transcript)), f"c{n}", replayed=False,
                            batons=batons if kind == "session_start" else None)
                for n, (kind, when) in enumerate((("session_start", began),
                                                  ("session_end", began.replace(minute=25))))]
    finally:
        store.close()
    assert [b["id"] for b in batons] == ["handoff-h1"]  # it had taken it at its start
    assert said[1] == ("session claude-code-cc-r ended with no turn: 0 minutes; the hand-off handoff-h1 it took is "
                       "pending again")
    session = read_record(tmp_path / "v/projects/product/sessions/session-claude-code-cc-r.md")[0]
    assert (session["durationMinutes"], session["handoffClaimed"]) == (0, None)
    baton = read_record(tmp_path / "v/projects/product/handoffs/handoff-h1.md")[0]
    assert (baton["status"], baton["claimedBy"]) == ("pending", None)


def test_a_hook_in_a_folder_of_no_repository_files_under_the_folders_name_as_its_import_does(tmp_path):
    """Found by a freelancer: a prompt sent from a checkout not yet ``git init``-ed was filed under
    ``default`` (silently: hooks print nothing), while the import of the same transcript files it
    under the folder's name — ``projectClients.portal`` never matched, and the work billed
    internal. A configured default project still takes it."""
    from tests.inprocess import memo

    folder = tmp_path / "portal"
    folder.mkdir()
    payload = {"session_id": "th-1", "hook_event_name": "UserPromptSubmit", "cwd": str(folder),
               "prompt": "Add rate limiting"}
    memo("hook", "claude-code", vault=tmp_path / "v", input=json.dumps(payload))
    listed = json.loads(memo("--json", "prompt", "list", "--all", vault=tmp_path / "v").stdout)
    assert [(item["project"], item["body"]) for item in listed["items"]] == [("portal", "Add rate limiting")]
    # reached through a link: the link's name, as the import of its transcript (which names that cwd) files it
    (tmp_path / "linky").symlink_to(folder)
    memo("hook", "claude-code", vault=tmp_path / "l", input=json.dumps({**payload, "cwd": str(tmp_path / "linky")}))
    listed = json.loads(memo("--json", "prompt", "list", "--all", vault=tmp_path / "l").stdout)
    assert [item["project"] for item in listed["items"]] == ["linky"]
    memo("hook", "claude-code", vault=tmp_path / "w", input=json.dumps(payload), env={"MEMO_PROJECT": "scratch"})
    listed = json.loads(memo("--json", "prompt", "list", "--all", vault=tmp_path / "w").stdout)
    assert [item["project"] for item in listed["items"]] == ["scratch"]


def test_a_hooks_prompt_over_the_size_limit_is_kept_cut(tmp_path, repo):
    """Found by an agent over MCP: a prompt of 1.1 MB (a pasted log) sent by a hook was dropped
    whole ("event dropped: Invalid body"), the person's turn lost but for a line of the hook's log.
    It is kept cut to the limit, saying so, as an import keeps it."""
    from memo_analytics.vault.io import read_record

    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Here is the log:\n" + "y" * 1_100_000))
    [turn] = (vault / "projects" / "product" / "prompts").glob("*.md")
    body = read_record(turn)[1]
    assert body.startswith("Here is the log:") and body.rstrip().endswith(
        "[… cut by memo: the turn held 1,100,017 bytes; a turn keeps at most 1,000,000]")


def test_a_hooks_prompt_holding_a_nul_character_is_kept(tmp_path, repo):
    """Found by an agent's tester: a prompt asking about a file's NUL bytes (JSON ``\\u0000``) was
    dropped whole ("event dropped: Invalid body: contains a NUL character"), exit 0. It is kept,
    each NUL as U+FFFD."""
    from memo_analytics.vault.io import read_record

    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="why does this file start with \x00\x00 bytes?"))
    [turn] = (vault / "projects" / "product" / "prompts").glob("*.md")
    assert read_record(turn)[1].strip() == "why does this file start with \ufffd\ufffd bytes?"


def test_a_turn_recorded_over_mcp_into_a_session_never_started_says_so(tmp_path, repo):
    """Found by an agent over MCP: ``record`` into a session it never started was taken without a
    word — its turns counted, its time never did, and ``session_end`` then said "Call
    session_start first". The answer says so."""
    from tests.inprocess import tool_calls

    [(error, text)] = tool_calls(tmp_path / "v", [{"action": "record", "sessionId": "never-started",
                                                  "body": "an orphan turn", "cwd": str(repo)}])
    assert not error and json.loads(text)["note"] == (
        "session never-started has no record: its turns count, its time bills once it is started (session_start) "
        "and ended")


def _waiting_digest(vault: Path, config: Path) -> list[dict]:
    digest = json.loads(memo("--json", "digest", "--refresh", vault=vault, env={"MEMO_CONFIG": str(config)}).stdout)
    return [item for item in digest["items"] if item["kind"] == "agent_waiting"]


def test_an_agent_waiting_for_permission_is_what_needs_the_person_until_it_is_let_go_on(tmp_path, repo):
    """SPEC §8: a hook records the session's waiting states. Claude Code's ``Notification`` of a
    permission prompt puts the session's agent in the digest's "waiting on you" lane (its words
    redacted as a turn is); the agent's ``Stop`` (it went on and finished) or the person's next
    prompt ends it; an ``idle_prompt`` (an answered agent waiting for the next prompt) is no such state."""
    vault, config = tmp_path / "v", tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n[operator]\nwaitingMinutes = 0\n')
    env = {"MEMO_CONFIG": str(config)}
    sid = f"claude-code-{SESSION}"
    path = vault / "projects" / "product" / "sessions" / f"session-{sid}.md"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Deploy the site"), env=env)
    hook(vault, "claude-code", claude("Notification", repo, notification_type="idle_prompt",
                                      message="Claude is waiting for your input"), env=env)
    assert "waitingSince" not in read_record(path)[0] and _waiting_digest(vault, config) == []
    hook(vault, "claude-code", claude("Notification", repo, notification_type="permission_prompt",
                                      message=f"Claude needs your permission to use Bash with {GHP}"), env=env)
    session = read_record(path)[0]
    assert session["waitingFor"] == "permission" and session["status"] == "active"
    assert GHP not in session["waitingMessage"] and "needs your permission to use Bash" in session["waitingMessage"]
    [item] = _waiting_digest(vault, config)
    assert (item["lane"], item["subject"], item["project"]) == ("waiting on you", sid, "product")
    assert item["since"] == session["waitingSince"] and "waited for permission" in item["why"]
    # a freelancer's 45 minutes of waiting went unbilled where the item said "the session bills on"
    assert item["why"].endswith("its work stops until you answer (a wait past the idle gap is not billed)")
    assert GHP not in item["why"] and item["waitingFor"] == f"you to answer claude-code on branch {session['branch']}"
    # a second notification of the same wait keeps its start
    hook(vault, "claude-code", claude("Notification", repo, notification_type="permission_prompt",
                                      message="Claude needs your permission to use Bash"), env=env)
    assert read_record(path)[0]["waitingSince"] == session["waitingSince"]
    hook(vault, "claude-code", claude("Stop", repo, stop_hook_active=False), env=env)
    after = read_record(path)[0]
    assert not {"waitingSince", "waitingFor", "waitingMessage"} & set(after) and after["status"] == "active"
    assert _waiting_digest(vault, config) == []
    # an elicitation waits for an answer; the person's next prompt ends it, and the turn is recorded
    hook(vault, "claude-code", claude("Notification", repo, notification_type="elicitation_dialog",
                                      message="The server asks which region"), env=env)
    assert read_record(path)[0]["waitingFor"] == "an answer"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="eu-west, go on"), env=env)
    assert "waitingSince" not in read_record(path)[0]
    assert [t["body"] for t in turns(vault, "product")] == ["Deploy the site", "eu-west, go on"]


def test_a_gemini_tool_permission_waits_and_a_session_end_or_another_conversation_does_what_it_should(tmp_path, repo):
    """Gemini CLI's ``Notification`` (``ToolPermission``) is a waiting state too; its ``AfterAgent``
    lets it go; a Stop of another conversation changes nothing of this one; the session's end
    ends its wait (an ended session's agent waits for nobody)."""
    vault, config = tmp_path / "v", tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n[operator]\nwaitingMinutes = 0\n')
    env = {"MEMO_CONFIG": str(config)}

    def gemini(event: str, session: str = "g-1", **fields) -> str:
        return json.dumps({"session_id": session, "cwd": str(repo), "hook_event_name": event,
                           "timestamp": datetime.now(timezone.utc).isoformat(), **fields})

    path = vault / "projects" / "product" / "sessions" / "session-gemini-g-1.md"
    hook(vault, "gemini", gemini("BeforeAgent", prompt="Refactor the parser"), env=env)
    hook(vault, "gemini", gemini("BeforeAgent", session="g-2", prompt="Another window"), env=env)
    hook(vault, "gemini", gemini("Notification", notification_type="ToolPermission",
                                 message="Tool run_shell_command wants to run rm -rf build"), env=env)
    assert read_record(path)[0]["waitingFor"] == "permission"
    hook(vault, "gemini", gemini("AfterAgent", session="g-2"), env=env)  # another conversation's
    assert read_record(path)[0]["waitingFor"] == "permission"
    assert [i["subject"] for i in _waiting_digest(vault, config)] == ["gemini-g-1"]
    hook(vault, "gemini", gemini("AfterAgent"), env=env)
    assert "waitingSince" not in read_record(path)[0]
    hook(vault, "gemini", gemini("Notification", notification_type="ToolPermission", message="again"), env=env)
    hook(vault, "gemini", gemini("SessionEnd"), env=env)
    ended = read_record(path)[0]
    assert ended["status"] == "completed" and "waitingSince" not in ended
    assert _waiting_digest(vault, config) == []


def test_an_agent_recording_its_conversation_over_mcp_beside_its_hook_bills_it_once_in_its_own_session(tmp_path, repo):
    """Found by an integrator replacing spec-memo: a Claude Code conversation captured by the hook
    while the agent recorded it over MCP in its own session (spec-memo's agents do) billed twice —
    the hook's session (internal) and the agent's (its client): 86 minutes for one hour — and the
    agent's session held none of its turns. The agent's session holds them and bills the time; the
    hook's gives way (superseded), and its later prompts go to the agent's session while it is open.
    An agent named "claude" in the ide claude-code is the hook's agent."""
    vault = tmp_path / "v"
    env = {"MEMO_CONFIG": str(tmp_path / "none.toml")}
    now = datetime.now(timezone.utc).replace(microsecond=0)

    def hook_at(event: str, minutes: int, **fields):
        stamp = (now - timedelta(minutes=60 - minutes)).isoformat().replace("+00:00", "Z")
        return hook(vault, "gemini", json.dumps({"session_id": "x1", "cwd": str(repo), "hook_event_name": event,
                                                 "timestamp": stamp, **fields}), env={**env, "MEMO_HOOK_DEBUG": "1"})

    def mcp(arguments: dict) -> dict:
        [(error, text)] = tool_calls(vault, [arguments], env=env)
        assert not error, text
        return json.loads(text)

    def at(minutes: int) -> str:
        return (now - timedelta(minutes=60 - minutes)).isoformat().replace("+00:00", "Z")

    hook_at("SessionStart", 0, source="startup")
    mcp({"action": "session_start", "sessionId": "dual", "client": "Acme Corp", "ide": "gemini", "cwd": str(repo),
         "startTime": at(0)})
    hook_at("BeforeAgent", 1, prompt="Add a dark mode toggle")
    first = mcp({"action": "record", "sessionId": "dual", "body": "Add a dark mode toggle", "created": at(1),
                 "agent": "gemini", "cwd": str(repo)})
    assert first["sessionId"] == "dual" and "duplicateOf" not in first and first["client"] == "Acme Corp"
    hook_at("BeforeAgent", 20, prompt="Now the settings page")  # goes to the agent's own session
    second = mcp({"action": "record", "sessionId": "dual", "body": "Now the settings page", "created": at(20),
                  "agent": "gemini", "cwd": str(repo)})
    assert second["sessionId"] == "dual" and second.get("duplicateOf") == second["id"]
    mcp({"action": "session_end", "sessionId": "dual", "summary": "dark mode", "until": at(55), "cwd": str(repo)})
    ended = hook_at("SessionEnd", 58)
    # found by an integrator: the log said its turns "are imported from the transcript" (none was)
    assert "its conversation ended (its turns are the agent's own session's, product/dual)" in ended.stderr, ended
    report = json.loads(memo("--json", "activity", "--all", vault=vault, env=env).stdout)
    assert report["totalDurationMinutes"] == 55 and report["totalPrompts"] == 2, report
    assert [(s["sessionId"], s["client"]) for s in report["sessions"]] == [("dual", "Acme Corp")]
    hooked = read_record(vault / "projects" / "product" / "sessions" / "session-gemini-x1.md")[0]
    assert (hooked["status"], hooked["supersededBy"]) == ("superseded", ["product/dual"])


def test_an_agent_named_claude_in_claude_code_is_the_hooks_agent(tmp_path, repo):
    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Prompt for agent claude"))
    [(error, text)] = tool_calls(vault, [{"action": "record", "body": "Prompt for agent claude", "agent": "claude",
                                          "ide": "claude-code", "cwd": str(repo)}])
    assert not error and json.loads(text).get("duplicateOf") == f"prompt-claude-code-{SESSION}-t1", text
    # found by an integrator: "claude" alone (the command Claude Code runs as) with a prompt of substance is the
    # hook's agent too (each turn was counted twice); Claude's desktop app names itself otherwise
    [(error, text)] = tool_calls(vault, [{"action": "record", "body": "Prompt for agent claude", "agent": "claude",
                                          "cwd": str(repo)}])
    assert not error and json.loads(text).get("duplicateOf") == f"prompt-claude-code-{SESSION}-t1", text
    [(error, text)] = tool_calls(vault, [{"action": "record", "body": "Prompt for agent claude",
                                          "agent": "claude-desktop", "cwd": str(repo)}])
    assert not error and "duplicateOf" not in json.loads(text)  # Claude (the app) is another product


def test_a_stop_older_than_the_wait_leaves_it_to_the_waits_own_stop(tmp_path, repo):
    """Found by a breaker: Gemini's AfterAgent stamped before the permission notification (a turn's
    end sent late) cleared nothing but took the marker away, so the real AfterAgent was never
    looked at and the session waited for good in the digest."""
    vault = tmp_path / "v"

    def gemini(event: str, at: str, **fields) -> None:
        hook(vault, "gemini", json.dumps({"session_id": "g1", "cwd": str(repo), "hook_event_name": event,
                                          "timestamp": f"{now:%Y-%m-%d}T{at}Z", **fields}))

    now = datetime.now(timezone.utc) - timedelta(hours=1)
    path = vault / "projects" / "product" / "sessions" / "session-gemini-g1.md"
    stamp = lambda minutes: (now + timedelta(minutes=minutes)).strftime("%H:%M:%S")  # noqa: E731
    gemini("BeforeAgent", stamp(0), prompt="refactor")
    gemini("Notification", stamp(2), notification_type="ToolPermission", message="Allow shell?")
    gemini("AfterAgent", stamp(1))  # older than the wait
    assert read_record(path)[0]["waitingFor"] == "permission"
    gemini("AfterAgent", stamp(3))
    assert "waitingSince" not in read_record(path)[0]


def test_a_wait_of_a_conversation_the_agent_records_in_its_own_session_is_that_sessions(tmp_path, repo):
    """Found by a breaker: with the hook's session joined to the agent's own (it records over MCP),
    a permission prompt was "not open, nothing to record": the digest never said the agent waited."""
    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("SessionStart", repo, source="startup"))
    [(error, _)] = tool_calls(vault, [{"action": "session_start", "sessionId": "agent-1", "ide": "claude-code",
                                        "cwd": str(repo)}])
    assert not error
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Deploy it"))
    [(error, _)] = tool_calls(vault, [{"action": "record", "sessionId": "agent-1", "body": "Deploy it",
                                        "agent": "claude-code", "cwd": str(repo)}])
    assert not error
    hook(vault, "claude-code", claude("Notification", repo, notification_type="permission_prompt",
                                      message="Claude needs your permission to use Bash"))
    agent = read_record(vault / "projects" / "product" / "sessions" / "session-agent-1.md")[0]
    assert agent["waitingFor"] == "permission"
    hook(vault, "claude-code", claude("Stop", repo))
    assert "waitingSince" not in read_record(vault / "projects" / "product" / "sessions" / "session-agent-1.md")[0]


def test_a_hook_session_with_turns_before_the_agents_own_session_ends_where_that_one_begins(tmp_path, repo):
    """The agent began its own session (MCP) after a prompt the hook alone captured: that prompt's
    time is the hook's session's, which ends where the agent's begins — it stayed open for good
    (its end went to the agent's session), and billed the agent's hour a second time."""
    vault = tmp_path / "v"
    env = {"MEMO_CONFIG": str(tmp_path / "none.toml")}
    now = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=2)

    def at(minutes: int) -> str:
        return (now + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")

    def gemini(event: str, minutes: int, **fields) -> None:
        hook(vault, "gemini", json.dumps({"session_id": "x2", "cwd": str(repo), "hook_event_name": event,
                                          "timestamp": at(minutes), **fields}), env=env)

    gemini("BeforeAgent", 0, prompt="Look around the code")
    calls = [{"action": "session_start", "sessionId": "own", "client": "Acme Corp", "ide": "gemini", "cwd": str(repo),
              "startTime": at(10)}]
    assert not tool_calls(vault, calls, env=env)[0][0]
    gemini("BeforeAgent", 11, prompt="Now fix the login")
    calls = [{"action": "record", "sessionId": "own", "body": "Now fix the login", "created": at(11), "agent": "gemini",
              "cwd": str(repo)},
             {"action": "session_end", "sessionId": "own", "until": at(55), "cwd": str(repo)}]
    assert not any(error for error, _ in tool_calls(vault, calls, env=env))
    gemini("SessionEnd", 56)
    report = json.loads(memo("--json", "activity", "--all", vault=vault, env=env).stdout)
    assert sorted((s["sessionId"], s["durationMinutes"]) for s in report["sessions"]) == [("gemini-x2", 10), ("own", 45)]
    assert report["totalDurationMinutes"] == 55 and report["totalPrompts"] == 2


def test_an_agent_waiting_stays_the_digests_item_when_its_transcript_is_imported(tmp_path, repo):
    """Found by a breaker: with ``memo watch`` running, the import of the transcript superseded the
    hook's session of a waiting agent — the digest's ``agent_waiting`` item went, and the next
    Notification was "not open, nothing to record". The waiting session stays open (its turns
    give way to the transcript's, counted once) until the wait ends; the next import supersedes it."""
    from datetime import datetime, timedelta, timezone

    vault, folder = tmp_path / "v", tmp_path / "cc"
    config = tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n[operator]\nwaitingMinutes = 0\n')
    env = {"MEMO_CONFIG": str(config)}
    folder.mkdir()
    transcript = folder / f"{SESSION}.jsonl"
    now = datetime.now(timezone.utc)
    transcript.write_text(json.dumps({
        "type": "user", "sessionId": SESSION, "uuid": "u-1", "cwd": str(repo),
        "timestamp": (now - timedelta(minutes=3)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "message": {"role": "user", "content": "Deploy the site"}}) + "\n", encoding="utf-8")
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Deploy the site",
                                      transcript_path=str(transcript)), env=env)
    hook(vault, "claude-code", claude("Notification", repo, notification_type="permission_prompt",
                                      message="Claude needs your permission to use Bash",
                                      transcript_path=str(transcript)), env=env)
    memo("import", "claude-code", str(folder), vault=vault, env=env)  # what memo watch does as the file grows
    assert [i["subject"] for i in _waiting_digest(vault, config)] == [f"claude-code-{SESSION}"]
    report = json.loads(memo("--json", "activity", "--all", vault=vault, env=env).stdout)
    assert report["totalPrompts"] == 1  # the turn once: the transcript's
    ran = hook(vault, "claude-code", claude("Notification", repo, notification_type="permission_prompt",
                                            message="Claude needs your permission to use Edit",
                                            transcript_path=str(transcript)), env=env)
    assert [i["subject"] for i in _waiting_digest(vault, config)] == [f"claude-code-{SESSION}"], ran
    hook(vault, "claude-code", claude("Stop", repo, stop_hook_active=False, transcript_path=str(transcript)), env=env)
    assert _waiting_digest(vault, config) == []
    memo("import", "claude-code", str(folder), "--rescan", vault=vault, env=env)
    hooked = read_record(next((vault / "projects").glob(f"*/sessions/session-claude-code-{SESSION}.md")))[0]
    assert hooked["status"] == "superseded"  # the wait over, the transcript's session is the one


def test_a_prompt_sent_late_from_before_the_wait_leaves_the_wait_for_its_own_after_agent_to_end(tmp_path, repo):
    """Found by a breaker: Gemini's prompt stamped before the permission wait but sent after it left
    the session waiting (right) but dropped the conversation's waiting mark — the wait's own
    ``AfterAgent`` then never opened the vault, and the digest said the agent waited for good."""
    vault, config = tmp_path / "v", tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n[operator]\nwaitingMinutes = 0\n')
    env = {"MEMO_CONFIG": str(config)}
    now = datetime.now(timezone.utc)

    def gemini(event: str, minutes_ago: int, **fields) -> str:
        return json.dumps({"session_id": "g-1", "cwd": str(repo), "hook_event_name": event,
                           "timestamp": (now - timedelta(minutes=minutes_ago)).isoformat(), **fields})

    hook(vault, "gemini", gemini("SessionStart", 10), env=env)
    hook(vault, "gemini", gemini("BeforeAgent", 9, prompt="first ask"), env=env)
    hook(vault, "gemini", gemini("Notification", 5, notification_type="ToolPermission", message="run it?"), env=env)
    hook(vault, "gemini", gemini("BeforeAgent", 6, prompt="second ask sent earlier"), env=env)
    assert [i["subject"] for i in _waiting_digest(vault, config)] == ["gemini-g-1"]
    hook(vault, "gemini", gemini("AfterAgent", 1), env=env)
    assert _waiting_digest(vault, config) == []


@pytest.mark.parametrize("with_hook", [False, True])
def test_a_transcript_imported_after_the_agent_recorded_it_over_mcp_counts_once_in_the_agents_session(
        tmp_path, repo, with_hook):
    """Found by an integrator and a breaker: an agent recorded its conversation over MCP in its own
    session (client Globex), and the import of its transcript (``memo watch``) made a second session
    of the same turns under ``internal`` — four prompts for two, 49 minutes more, and the AI cost
    under ``internal``. The imported turns give way to the agent's, their tokens carried there."""
    from tests.inprocess import tool_calls

    vault, folder = tmp_path / "v", tmp_path / "cc"
    folder.mkdir()
    transcript = folder / f"{SESSION}.jsonl"
    day = "2026-12-05T"
    lines = []
    for n, (asked, answered, text) in enumerate((("09:01", "09:05", "Fix the checkout total rounding bug"),
                                                 ("09:30", "09:50", "Add tests for the checkout rounding"))):
        lines.append({"type": "user", "sessionId": SESSION, "uuid": f"u-{n}", "cwd": str(repo),
                      "timestamp": f"{day}{asked}:00.000Z", "message": {"role": "user", "content": text}})
        lines.append({"type": "assistant", "sessionId": SESSION, "uuid": f"a-{n}", "cwd": str(repo),
                      "timestamp": f"{day}{answered}:00.000Z",
                      "message": {"role": "assistant", "id": f"m{n}", "model": "claude-sonnet-4-20250514",
                                  "content": [{"type": "text", "text": "done"}],
                                  "usage": {"input_tokens": 1000, "output_tokens": 1000}}})
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    def hooked(kind: str, at: str, prompt: str | None = None) -> None:
        # Claude Code's payload carries no time: the hook's event as it came at that time
        from memo_analytics.config import Settings
        from memo_analytics.services.capture import HookEvent, apply_event
        from memo_analytics.services.store import VaultStore

        store = VaultStore(Settings(vault_root=vault))
        try:
            apply_event(store, HookEvent("claude-code", kind, SESSION, datetime.fromisoformat(f"{day}{at}+00:00"),
                                         prompt=prompt, cwd=str(repo), transcript_path=str(transcript)),
                        f"c{kind[:3]}{at.replace(':', '')}")
        finally:
            store.close()

    if with_hook:  # the hook captures the first prompt before the agent records it: the two join
        hooked("session_start", "09:00:30")
        hooked("prompt", "09:01:00", "Fix the checkout total rounding bug")
    calls = [{"action": "session_start", "sessionId": "agentA", "projectId": "product", "client": "Globex",
              "startTime": f"{day}09:00:00Z"}]
    for created, text in (("09:02", "Fix the checkout total rounding bug"),
                          ("09:31", "Add tests for the checkout rounding")):
        if with_hook and created == "09:31":  # found by a newcomer: a prompt the hook took into the agent's session
            continue
        calls.append({"action": "record", "sessionId": "agentA", "projectId": "product", "body": text,
                      "created": f"{day}{created}:00Z"})
    assert not any(error for error, _ in tool_calls(vault, calls))
    if with_hook:  # the hook's later prompt of the conversation goes to the agent's open session
        hooked("prompt", "09:30:00", "Add tests for the checkout rounding")
    assert not any(error for error, _ in tool_calls(vault, [
        {"action": "session_end", "sessionId": "agentA", "projectId": "product", "until": f"{day}09:55:00Z"}]))
    for _ in range(2):  # memo watch imports it again as it grows: still once
        memo("import", "claude-code", str(folder), vault=vault)
        report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
        assert (report["totalPrompts"], report["totalDurationMinutes"], list(report["byClient"])) == (
            2, 55, ["Globex"]), [(x["sessionId"], x["status"], x["startTime"], x["endTime"], x["client"]) for x in report["sessions"]]
        assert list(report["costByClient"]) == ["Globex"] and float(report["costByClient"]["Globex"]) > 0, report
    # found by a breaker: the person makes the agent's session non-billable, the transcript grows by
    # a prompt the agent did not record — the imported session came back from 09:01, billing the 55
    # minutes again; it bills from its first turn of its own, and is no longer called superseded
    memo("session", "edit", "agentA", "--project", "product", "--no-billable", vault=vault)

    def grown(n: int, asked: str, answered: str, text: str) -> tuple[list, dict]:
        lines.extend([{"type": "user", "sessionId": SESSION, "uuid": f"u-{n}", "cwd": str(repo),
                       "timestamp": f"{day}{asked}:00.000Z", "message": {"role": "user", "content": text}},
                      {"type": "assistant", "sessionId": SESSION, "uuid": f"a-{n}", "cwd": str(repo),
                       "timestamp": f"{day}{answered}:00.000Z",
                       "message": {"role": "assistant", "id": f"m{n}", "model": "claude-sonnet-4-20250514",
                                   "content": [{"type": "text", "text": "done"}],
                                   "usage": {"input_tokens": 10, "output_tokens": 10}}}])
        transcript.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        memo("import", "claude-code", str(folder), vault=vault)
        report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
        return [x for x in report["sessions"] if x["sessionId"] != "agentA"], report

    imported, report = grown(2, "10:00", "10:04", "Now the invoice totals")
    assert [(x["startTime"][11:16], x["endTime"][11:16], x["status"]) for x in imported] == [
        ("10:00", "10:04", "completed")], imported
    assert (report["totalPrompts"], report["totalDurationMinutes"]) == (3, 4), report["sessions"]
    [path] = (vault / "projects" / "product" / "sessions").glob(f"session-claude-code-{SESSION}-1.md")
    assert "supersededBy" not in path.read_text(encoding="utf-8")
    # and as it grows once more (memo watch): still from its own first turn (a breaker: from 09:01 again)
    imported, report = grown(3, "10:10", "10:15", "And the credit notes")
    assert [(x["startTime"][11:16], x["endTime"][11:16]) for x in imported] == [("10:00", "10:15")], imported
    assert (report["totalPrompts"], report["totalDurationMinutes"]) == (4, 15), report["sessions"]


@pytest.mark.parametrize("other", ["agent", "person"])
def test_another_agents_or_persons_mcp_turn_of_the_same_words_is_not_the_transcripts(tmp_path, repo, other):
    """Found by a breaker of the rule above: a Codex agent's own "continue" over MCP (another
    person's too), 5 minutes from a Claude Code conversation's "continue", took the imported
    conversation's whole session — 50 minutes of Acme's gone, its tokens on the Codex turn."""
    from tests.inprocess import tool_calls

    vault, folder = tmp_path / "v", tmp_path / "cc"
    folder.mkdir()
    transcript = folder / f"{SESSION}.jsonl"
    lines = [{"type": "user", "sessionId": SESSION, "uuid": "u-0", "cwd": str(repo),
              "timestamp": "2026-12-05T11:00:00.000Z", "message": {"role": "user", "content": "continue"}},
             *[{"type": "assistant", "sessionId": SESSION, "uuid": f"a-{at}", "cwd": str(repo),
                "timestamp": f"2026-12-05T11:{at}:00.000Z",
                "message": {"role": "assistant", "id": f"m{at}", "model": "claude-sonnet-4-20250514",
                            "content": [{"type": "text", "text": "working"}],
                            "usage": {"input_tokens": 1000, "output_tokens": 1000}}} for at in ("20", "40", "50")]]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    named = {"agent": "codex", "ide": "codex"} if other == "agent" else {"owner": "bob@elsewhere.example"}
    calls = [{"action": "session_start", "sessionId": "own", "projectId": "product", "client": "Beta Ltd",
              "startTime": "2026-12-05T11:05:00Z", **named},
             {"action": "record", "sessionId": "own", "projectId": "product", "body": "continue",
              "created": "2026-12-05T11:10:00Z", **({"agent": "codex"} if other == "agent" else {})},
             {"action": "session_end", "sessionId": "own", "projectId": "product", "until": "2026-12-05T11:15:00Z"}]
    assert not any(error for error, _ in tool_calls(vault, calls))
    ran = memo("import", "claude-code", str(folder), "--client", "Acme Corp", vault=vault,
               env={"GIT_AUTHOR_EMAIL": "ana@x.example"})
    assert "kept there" not in ran.stdout + ran.stderr and "hook-captured" not in ran.stdout + ran.stderr
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert report["totalPrompts"] == 2 and report["byClient"]["Acme Corp"]["durationMinutes"] == 50, report["sessions"]



def test_the_agents_session_begins_when_its_conversation_did(tmp_path, repo):
    """Found by a newcomer: the hook captured the first prompt at 11:34; the agent explored, called
    ``session_start`` at 11:36 and recorded that prompt — the hook's session gave way (superseded) and
    the agent's began at 11:36: the first two minutes were billed by nobody. The agent's session
    begins when the conversation did."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    vault = tmp_path / "v"
    env = {"MEMO_CONFIG": str(tmp_path / "none.toml")}

    def stamp(minutes_ago: int) -> str:
        return (now - timedelta(minutes=minutes_ago)).isoformat().replace("+00:00", "Z")

    def gemini(event: str, minutes_ago: int, **fields) -> None:
        hook(vault, "gemini", json.dumps({"session_id": "x2", "cwd": str(repo), "hook_event_name": event,
                                          "timestamp": stamp(minutes_ago), **fields}), env=env)

    gemini("SessionStart", 2, source="startup")
    gemini("BeforeAgent", 2, prompt="Refactor the auth middleware into its own module")
    answers = tool_calls(vault, [
        {"action": "session_start", "sessionId": "auth", "client": "Acme Corp", "ide": "gemini", "cwd": str(repo)},
        {"action": "record", "sessionId": "auth", "body": "Refactor the auth middleware into its own module",
         "agent": "gemini", "cwd": str(repo)},
        {"action": "session_end", "sessionId": "auth", "cwd": str(repo)}], env=env)
    assert not any(error for error, _ in answers), answers
    report = json.loads(memo("--json", "activity", "--all", vault=vault, env=env).stdout)
    assert [(s["sessionId"], s["durationMinutes"]) for s in report["sessions"]] == [("auth", 2)], report["sessions"]


@pytest.mark.parametrize("named", ["claude", "claude-opus-4-1", "anthropic/claude-code", "Claude Code"])
def test_an_agent_naming_itself_by_its_short_name_vendor_or_model_records_a_hooked_prompt_once(tmp_path, repo,
                                                                                                named):
    """Found by an integrator: an agent with hooks naming itself over MCP by its model
    ("claude-opus-4-1"), its command ("claude") or with its vendor ("anthropic/claude-code") was
    taken for another agent: every turn counted twice. A prompt of substance both recorded is one
    turn; a short one ("yes") proves nothing, and another agent's product stays another."""
    from memo_analytics.services.prompts import same_agent
    from tests.inprocess import tool_calls

    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Build the invoice PDF export"))
    [(error, text)] = tool_calls(vault, [{"action": "record", "agent": named, "body": "Build the invoice PDF export",
                                          "cwd": str(repo)}])
    assert not error and json.loads(text)["duplicateOf"] == f"prompt-claude-code-{SESSION}-t1"
    assert json.loads(memo("--json", "prompt", "list", "--project", "product", vault=vault).stdout)["total"] == 1
    body = "Build the invoice PDF export"
    assert [same_agent(n, h, None, body) for n, h in (("gpt-5-codex", "codex"), ("openai-codex", "codex"),
                                                      ("google-gemini-cli", "gemini"), ("gemini-2.5-pro", "gemini"),
                                                      ("openai/gpt-5", "codex"), ("anthropic", "claude-code"),
                                                      ("claude-desktop", "claude-code"), ("codex", "claude-code"),
                                                      ("Copilot Chat", "copilot"))] == [True] * 6 + [False] * 3
    assert same_agent("claude", "claude-code", None, "yes") is False
    # another vendor's model is another agent's (found by a breaker: a Codex agent's turn taken for Claude Code's)
    assert [same_agent(n, h, None, body) for n, h in (("gpt-5-codex", "claude-code"), ("claude-opus-4-1", "codex"),
                                                      ("o3", "claude-code"), ("gemini-2.5-pro", "claude-code"))] == \
        [False] * 4
    # no agent named, an editor named: Claude Code in VS Code or Cursor (found by a breaker: its "yes" counted twice)
    assert same_agent(None, "claude-code", "vscode", "yes") and same_agent(None, "claude-code", "cursor", "yes")


def test_another_agents_short_prompt_never_takes_over_a_hooked_conversation(tmp_path, repo):
    """Found by an integrator: a Cursor agent (over MCP, no agent named) recorded "yes" in its own
    session while a hooked Claude Code conversation had just said "yes": that conversation was
    joined to the Cursor agent's session — its later prompts billed to the Cursor agent's client,
    Claude Code's session closed."""
    from tests.inprocess import tool_calls

    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("SessionStart", repo, source="startup"))
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Refactor the cart service"))
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="yes"))
    results = tool_calls(vault, [{"action": "session_start", "sessionId": "cursor-chat-9", "ide": "cursor",
                                  "client": "Beta GmbH", "cwd": str(repo)},
                                 {"action": "record", "sessionId": "cursor-chat-9", "ide": "cursor", "body": "yes",
                                  "cwd": str(repo)}])
    assert not any(error for error, _ in results)
    assert "duplicateOf" not in json.loads(results[1][1])
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Now profile the slow checkout query"))
    sessions = {s["sessionId"]: s for s in json.loads(memo("--json", "session", "show", "--all", vault=vault,
                                                             cwd=repo).stdout)["items"]}
    assert (sessions[f"claude-code-{SESSION}"]["status"], sessions[f"claude-code-{SESSION}"]["turns"]) == ("active", 3)
    assert (sessions["cursor-chat-9"]["client"], sessions["cursor-chat-9"]["turns"]) == ("Beta GmbH", 1)


def test_a_conversation_going_on_after_the_agent_ended_its_own_session_keeps_its_client(tmp_path, repo):
    """Found by an integrator: the agent recorded the hooked conversation in its own session (client
    Acme Corp) and ended it; the conversation went on, and its next interval billed "internal"."""
    from tests.inprocess import tool_calls

    vault = tmp_path / "v"
    hook(vault, "claude-code", claude("SessionStart", repo, source="startup"))
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Set up the CI pipeline for the shop"))
    results = tool_calls(vault, [{"action": "session_start", "sessionId": "ag-1", "client": "Acme Corp", "cwd": str(repo)},
                                 {"action": "record", "sessionId": "ag-1", "body": "Set up the CI pipeline for the shop",
                                  "cwd": str(repo)},
                                 {"action": "session_end", "sessionId": "ag-1", "cwd": str(repo)}])
    assert not any(error for error, _ in results)
    hook(vault, "claude-code", claude("UserPromptSubmit", repo, prompt="Thanks, now also cache the pip downloads in CI"))
    hook(vault, "claude-code", claude("SessionEnd", repo, reason="other"))
    sessions = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)["sessions"]
    assert sorted((s["sessionId"], s["client"]) for s in sessions) == [
        ("ag-1", "Acme Corp"), (f"claude-code-{SESSION}.2", "Acme Corp")]
