"""``memo hooks install|uninstall|status AGENT`` (issue 14 point 1) and the events each agent's
hook then sends (point 2): a managed entry in the agent's own settings file, every other key,
value, comment and the formatting kept; uninstall gives the hand-written file back byte for
byte; a file that cannot be parsed is never touched. The payloads are the agents' documented
shapes (Claude Code, Codex and Gemini CLI hook references and schemas, Cursor's hooks page,
GitHub's Copilot CLI hooks reference)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memo_analytics.services import agent_hooks
from memo_analytics.vault.io import read_record
from tests.inprocess import memo

#: A hand-written settings file per agent, in its own style (indent, order, comments where the
#: agent reads JSON with comments), with hooks of the person's own.
HAND_WRITTEN = {
    "claude-code": '{\n    "model": "opus",\n    "hooks": {\n        "Stop": [\n            { "hooks": [ { "type": '
                   '"command", "command": "say done" } ] }\n        ]\n    },\n    "permissions": {"allow": '
                   '["Bash(ls)"]}\n}\n',
    "codex": '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}\n',
    "gemini": '{\n  // my Gemini settings\n  "theme": "GitHub",\n  /* hooks below */\n  "hooks": {}\n}\n',
    "cursor": '{\n\t"version": 1,\n\t"hooks": {\n\t\t"afterFileEdit": [{"command": "./format.sh"}]\n\t}\n}\n',
    "copilot": '',  # memo's own file in the hooks folder: created, then removed
}


def settings_file(home: Path, agent: str, repo: Path | None = None) -> Path:
    return agent_hooks.settings_path(agent_hooks.spec_for(agent), repo, home)


@pytest.mark.parametrize("agent", sorted(HAND_WRITTEN))
def test_install_then_uninstall_gives_the_hand_written_file_back_byte_for_byte(tmp_path, agent):
    home, vault = tmp_path / "home", tmp_path / "v"
    path = settings_file(home, agent)
    if HAND_WRITTEN[agent]:
        path.parent.mkdir(parents=True)
        path.write_text(HAND_WRITTEN[agent])
    env = {"HOME": str(home)}
    installed = json.loads(memo("--json", "hooks", "install", agent, vault=vault, env=env).stdout)
    spec = agent_hooks.spec_for(agent)
    assert installed["added"] == list(spec.events)
    text = path.read_text()
    data = json.loads(agent_hooks._blank_comments(text))
    for event in spec.events:  # the managed entry, in the agent's shape
        entry = data["hooks"][event][-1]
        handler = entry["hooks"][0] if spec.grouped else entry
        assert agent_hooks.is_managed(handler[spec.command_key], agent)
        assert handler[spec.command_key].endswith(f"hook {agent}" + (f" --event {event}" if spec.pass_event else "")
                                                  + f" --vault-root {vault.resolve()}")
    if HAND_WRITTEN[agent]:  # the person's own keys, comments and style are still there, unchanged
        original = HAND_WRITTEN[agent]
        kept_lines = [line for line in original.splitlines() if line.strip() not in ("}", "},", "]", "{}", '"hooks": {}')]
        assert all(line in text.splitlines() or line in text for line in kept_lines if "hooks" not in line)
        assert Path(installed["backup"]).read_text() == original
        assert Path(installed["backup"]).stat().st_mode & 0o777 == 0o600  # settings may hold API keys
    status = json.loads(memo("--json", "hooks", "status", agent, vault=vault, env=env).stdout)
    assert status["items"][0]["installed"] == list(spec.events) and status["items"][0]["missing"] == []
    again = memo("hooks", "install", agent, vault=vault, env=env, check=False)
    assert again.returncode == 1 and "already in" in again.stderr  # nothing to do
    removed = json.loads(memo("--json", "hooks", "uninstall", agent, vault=vault, env=env).stdout)
    assert removed["removed"] == list(spec.events)
    if HAND_WRITTEN[agent]:
        assert path.read_text() == HAND_WRITTEN[agent]
    else:
        assert not path.exists() and removed["deleted"] is True


def test_install_naming_no_agent_sets_up_every_agent_whose_folder_is_in_the_home(tmp_path):
    """Found by a developer's first hour: the README and ``memo demo`` say ``memo hooks install``,
    which ended "Missing argument 'AGENT'". Without an agent it installs for each agent whose
    folder is in the home directory; run again it says each is in place and exits 1 (nothing
    done); with none there it names the agents."""
    home, vault = tmp_path / "home", tmp_path / "v"
    (home / ".claude").mkdir(parents=True)
    (home / ".gemini").mkdir()
    env = {"HOME": str(home)}
    first = memo("hooks", "install", vault=vault, env=env)
    assert first.stdout.count("memo's hooks for ") == 2 and "for codex" not in first.stdout
    assert settings_file(home, "claude-code").is_file() and settings_file(home, "gemini").is_file()
    assert not settings_file(home, "codex").exists()
    again = memo("hooks", "install", vault=vault, env=env, check=False)
    assert again.returncode == 1 and again.stderr.count("already in") == 2
    assert again.stderr.strip().endswith("error: nothing to do: memo's hooks are in place for claude-code, gemini")
    # under --json one document for them all (an attacker: two objects back to back, no JSON)
    codex = home / ".codex"
    codex.mkdir()
    listed = json.loads(memo("--json", "hooks", "install", vault=vault, env=env).stdout)
    assert ([r["agent"] for r in listed["installed"]], listed["inPlace"], listed["failed"]) == (
        ["codex"], ["claude-code", "gemini"], [])
    (home / ".cursor").mkdir()
    (home / ".cursor" / "hooks.json").write_text("{ broken", encoding="utf-8")  # (an attacker: it exited 0)
    broken = memo("hooks", "install", vault=vault, env=env, check=False)
    assert broken.returncode == 1 and broken.stderr.strip().endswith(
        "error: memo's hooks could not be installed for cursor (the notes above say why); in place for claude-code, "
        "codex, gemini")
    bare = memo("hooks", "install", vault=vault, env={"HOME": str(tmp_path / "bare")}, check=False)
    assert bare.returncode == 1 and "name one: memo hooks install AGENT (claude-code, codex, gemini, cursor, copilot)" \
        in bare.stderr


def test_uninstall_after_the_person_edited_the_file_removes_only_the_managed_entries(tmp_path):
    home, vault = tmp_path / "home", tmp_path / "v"
    path = settings_file(home, "claude-code")
    path.parent.mkdir(parents=True)
    path.write_text(HAND_WRITTEN["claude-code"])
    env = {"HOME": str(home)}
    memo("hooks", "install", "claude-code", vault=vault, env=env)
    path.write_text(path.read_text().replace('"opus"', '"sonnet"'))  # the person changes their model meanwhile
    memo("hooks", "uninstall", "claude-code", vault=vault, env=env)
    assert path.read_text() == HAND_WRITTEN["claude-code"].replace('"opus"', '"sonnet"')


@pytest.mark.parametrize("content", ['{"hooks": [1, 2]}', '{"model": "opus",,}', '[1, 2]', '{"hooks": {"UserPromptSubmit": {}}}'])
def test_a_settings_file_that_cannot_be_used_is_never_touched(tmp_path, content):
    home, vault = tmp_path / "home", tmp_path / "v"
    path = settings_file(home, "claude-code")
    path.parent.mkdir(parents=True)
    path.write_text(content)
    ran = memo("hooks", "install", "claude-code", vault=vault, env={"HOME": str(home)}, check=False)
    assert ran.returncode == 1 and "Invalid settings" in ran.stderr and "memo left" in ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1
    assert path.read_text() == content and not (vault / ".memo" / "hooks").exists()


def test_project_level_goes_to_the_repository_settings_and_status_shows_both(tmp_path, repo):
    home, vault = tmp_path / "home", tmp_path / "v"
    env = {"HOME": str(home)}
    memo("hooks", "install", "cursor", "--project", vault=vault, env=env, cwd=repo)
    assert (repo / ".cursor" / "hooks.json").is_file() and not (home / ".cursor").exists()
    status = json.loads(memo("--json", "hooks", "status", "cursor", vault=vault, env=env, cwd=repo).stdout)
    assert [(i["level"], bool(i["installed"])) for i in status["items"]] == [("user", False), ("project", True)]
    outside = memo("hooks", "install", "cursor", "--project", vault=vault, env=env, cwd=tmp_path, check=False)
    assert outside.returncode == 1 and "not inside a git repository" in outside.stderr
    unknown = memo("hooks", "install", "windsurf", vault=vault, env=env, check=False)
    assert unknown.returncode == 1 and "Invalid agent: 'windsurf' is not one of" in unknown.stderr


def test_status_warns_when_an_installed_entry_runs_a_memo_that_is_not_there(tmp_path):
    """Found by a new user: after the virtual environment was made again elsewhere, every hook of
    the agent failed, yet `memo hooks status` showed all three events installed and `memo doctor`
    said nothing. Status names the program that is not there and the command that mends it."""
    import os
    import sys

    home, vault = tmp_path / "home", tmp_path / "v"
    env = {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    memo("hooks", "install", "claude-code", vault=vault, env=env, cwd=tmp_path)
    settings = home / ".claude" / "settings.json"
    fine = json.loads(memo("--json", "hooks", "status", "claude-code", vault=vault, env=env, cwd=tmp_path).stdout)
    assert [i["notFound"] for i in fine["items"]] == [[]]
    text = settings.read_text()
    program = json.loads(text)["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"].split()[0]
    settings.write_text(text.replace(program, str(tmp_path / "old-venv" / "bin" / "memo")))
    shown = memo("hooks", "status", "claude-code", vault=vault, env=env, cwd=tmp_path)
    assert (f"warning: claude-code's hooks in {settings} run {tmp_path / 'old-venv' / 'bin' / 'memo'}, which is not "
            "there: the agent's hook fails and nothing is captured; memo hooks install claude-code again") in \
        " ".join(shown.stderr.split())
    checks = {c["name"]: c for c in json.loads(memo("--json", "doctor", vault=vault, env=env, cwd=tmp_path,
                                                 check=False).stdout)["checks"]}
    assert (checks["hooks"]["status"], checks["hooks"]["install"]) == ("optional", "memo hooks install claude-code")


# ---------------------------------------------------------------- each agent's events, end to end

def _base():
    """``T(minutes)``: ISO UTC instants from an hour ago on (whole minutes), for events that carry their own time."""
    from datetime import datetime, timedelta, timezone

    start = (datetime.now(timezone.utc) - timedelta(hours=1)).replace(second=0, microsecond=0)
    return lambda minutes: (start + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _ms(iso: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def _hook(vault: Path, agent: str, payload: dict, *args: str) -> None:
    ran = memo("hook", agent, *args, vault=vault, input=json.dumps(payload), check=False)
    assert ran.returncode == 0 and ran.stdout == ""


def _turns(vault: Path, project: str) -> list[dict]:
    return sorted((read_record(p)[0] | {"body": read_record(p)[1]}
                   for p in (vault / "projects" / project / "prompts").glob("*.md")), key=lambda m: m["turn"])


def _session(vault: Path, project: str, session_id: str) -> dict:
    return read_record(vault / "projects" / project / "sessions" / f"session-{session_id}.md")[0]


def test_codex_hook_events(tmp_path, repo):
    vault = tmp_path / "v"
    common = {"session_id": "0199a213-81c0-7800-8aa1-bbab2a035a53", "transcript_path": None, "cwd": str(repo),
              "model": "gpt-5-codex", "permission_mode": "default"}
    _hook(vault, "codex", {**common, "hook_event_name": "SessionStart", "source": "startup"})
    _hook(vault, "codex", {**common, "hook_event_name": "UserPromptSubmit", "turn_id": "turn-1",
                           "prompt": "Rename `foo` to `bar`"})
    _hook(vault, "codex", {**common, "hook_event_name": "Stop", "turn_id": "turn-1", "stop_hook_active": False,
                           "last_assistant_message": "Done."})
    _hook(vault, "codex", {**common, "hook_event_name": "SessionEnd", "reason": "other"})
    [turn] = _turns(vault, "product")
    assert (turn["body"], turn["agentTurnId"], turn["model"]) == ("Rename `foo` to `bar`", "turn-1", "gpt-5-codex")
    assert _session(vault, "product", f"codex-{common['session_id']}")["status"] == "completed"


def test_gemini_hook_events_carry_their_own_iso_time(tmp_path, repo):
    vault = tmp_path / "v"
    T = _base()  # the events' own times (an hour ago): a hook believes them within a day of receipt
    common = {"session_id": "f2b1c3d4-0000-4000-8000-123456789abc", "transcript_path": "", "cwd": str(repo)}
    _hook(vault, "gemini", {**common, "hook_event_name": "SessionStart", "source": "startup",
                            "timestamp": T(0)})
    _hook(vault, "gemini", {**common, "hook_event_name": "BeforeAgent", "prompt": "Explain the build",
                            "timestamp": T(5)})
    _hook(vault, "gemini", {**common, "hook_event_name": "AfterAgent", "prompt": "Explain the build",
                            "prompt_response": "It uses make.", "stop_hook_active": False,
                            "timestamp": T(6)})
    _hook(vault, "gemini", {**common, "hook_event_name": "SessionEnd", "reason": "exit",
                            "timestamp": T(35)})
    [turn] = _turns(vault, "product")
    assert (turn["body"], turn["created"]) == ("Explain the build", T(5))
    session = _session(vault, "product", f"gemini-{common['session_id']}")
    assert (session["startTime"], session["endTime"], session["durationMinutes"]) == (
        T(0), T(35), 35)


def test_a_gemini_chat_imported_after_its_hook_stays_in_the_hooks_project(tmp_path, repo):
    """Found by an operator: a Gemini chat (it names no folder, only a hash of it) imported after
    its hook had captured the live turn was filed under ``default`` — the hook's turn superseded,
    the repository's view (``memo prompt list`` in it) left empty. It stays in the project its hook
    filed it under."""
    vault, chats = tmp_path / "v", tmp_path / "gemini" / "0123abcd" / "chats"
    chats.mkdir(parents=True)
    T = _base()
    sid = "a5b6c7d8-0000-4000-8000-0000000000g5".replace("g", "e")
    _hook(vault, "gemini", {"session_id": sid, "transcript_path": str(chats / f"session-{sid}.json"), "cwd": str(repo),
                            "hook_event_name": "BeforeAgent", "prompt": "Gemini: add rate limiting", "timestamp": T(5)})
    (chats / f"session-{sid}.json").write_text(json.dumps({
        "sessionId": sid, "projectHash": "0123abcd", "startTime": T(5), "lastUpdated": T(6), "kind": "main",
        "messages": [{"id": "1", "timestamp": T(5), "type": "user", "content": "Gemini: add rate limiting"},
                     {"id": "2", "timestamp": T(6), "type": "gemini", "content": "ok"}]}), encoding="utf-8")
    ran = memo("import", "gemini", str(tmp_path / "gemini"), vault=vault)
    assert "superseded by the transcript" in ran.stdout, ran.stdout
    listed = json.loads(memo("--json", "prompt", "list", vault=vault, cwd=repo).stdout)
    assert [(i["body"], i["source"]) for i in listed["items"]] == [("Gemini: add rate limiting", "import:gemini")]


def test_cursor_hook_events(tmp_path, repo):
    vault = tmp_path / "v"
    common = {"conversation_id": "afafb0bf-9b2e-4e2a-8857-88e522b364e6", "model": "claude-4.5-sonnet",
              "cursor_version": "2026.07.23-e383d2b", "workspace_roots": [str(repo)], "user_email": None,
              "transcript_path": None}
    _hook(vault, "cursor", {**common, "generation_id": common["conversation_id"], "hook_event_name": "sessionStart",
                            "session_id": common["conversation_id"], "is_background_agent": False,
                            "composer_mode": "agent"})
    _hook(vault, "cursor", {**common, "generation_id": "9d1c6a8e-1111-4222-8333-444455556666",
                            "hook_event_name": "beforeSubmitPrompt", "prompt": "Add a dark mode toggle",
                            "attachments": [{"type": "file", "file_path": str(repo / "app.css")}]})
    _hook(vault, "cursor", {**common, "generation_id": "9d1c6a8e-1111-4222-8333-444455556666",
                            "hook_event_name": "stop", "status": "completed", "loop_count": 0})
    _hook(vault, "cursor", {**common, "hook_event_name": "sessionEnd", "session_id": common["conversation_id"],
                            "reason": "completed", "duration_ms": 61000, "is_background_agent": False,
                            "final_status": "completed"})
    [turn] = _turns(vault, "product")  # the workspace root names the project
    assert (turn["body"], turn["agentTurnId"]) == ("Add a dark mode toggle", "9d1c6a8e-1111-4222-8333-444455556666")
    assert _session(vault, "product", f"cursor-{common['conversation_id']}")["status"] == "completed"


def test_copilot_hook_events_are_named_by_the_managed_entry(tmp_path, repo):
    """Copilot's camelCase payloads do not name their event: the entry passes ``--event``; its
    ``timestamp`` is Unix milliseconds."""
    vault = tmp_path / "v"
    T = _base()
    common = {"sessionId": "5c9a7e3e-aaaa-4bbb-8ccc-ddddeeeeffff", "cwd": str(repo)}
    _hook(vault, "copilot", {**common, "timestamp": _ms(T(0)), "source": "new"}, "--event", "sessionStart")
    _hook(vault, "copilot", {**common, "timestamp": _ms(T(5)), "prompt": "Fix the flaky test"},
          "--event", "userPromptSubmitted")
    _hook(vault, "copilot", {**common, "timestamp": _ms(T(30)), "reason": "user_exit"}, "--event", "sessionEnd")
    [turn] = _turns(vault, "product")
    assert (turn["body"], turn["created"]) == ("Fix the flaky test", T(5))
    session = _session(vault, "product", f"copilot-{common['sessionId']}")
    assert (session["startTime"], session["durationMinutes"]) == (T(0), 30)


def test_copilot_events_that_name_no_session_go_to_the_agents_session_of_the_repository(tmp_path, repo):
    """Copilot CLI's first hook payloads hold ``timestamp``, ``cwd`` and ``prompt``, no session id:
    every such event was dropped ("names no session"), so Copilot capture never recorded a turn.
    They go to one session of the repository (split at idle gaps like any other)."""
    vault = tmp_path / "v"
    T = _base()
    for minute, text in ((0, "Fix the flaky test"), (5, "Now the docs")):
        _hook(vault, "copilot", {"timestamp": _ms(T(minute)), "cwd": str(repo), "prompt": text},
              "--event", "userPromptSubmitted")
    turns = _turns(vault, "product")
    assert [t["body"] for t in turns] == ["Fix the flaky test", "Now the docs"]
    assert len({t["sessionId"] for t in turns}) == 1 and turns[0]["sessionId"].startswith("copilot-repo-")
    ran = memo("hook", "copilot", "--event", "userPromptSubmitted", vault=vault, check=False,
               input=json.dumps({"timestamp": _ms(T(6)), "prompt": "no folder either"}))
    assert ran.returncode == 0 and "names no session and no folder" in (vault / ".memo" / "spool" / "hooks.log").read_text()


def test_copilot_events_that_name_no_session_from_a_subfolder_are_the_same_session(tmp_path, repo):
    """Found by an agent's integrator: Copilot CLI moved to ``src`` (``/cwd src``) mid-conversation
    split it in two sessions of the repository, and its end, sent from the subfolder, left the
    first one open (the session was keyed on the folder, not the repository)."""
    vault = tmp_path / "v"
    T = _base()
    (repo / "src").mkdir()
    _hook(vault, "copilot", {"timestamp": _ms(T(0)), "cwd": str(repo), "source": "new"}, "--event", "sessionStart")
    _hook(vault, "copilot", {"timestamp": _ms(T(1)), "cwd": str(repo), "prompt": "Fix the flaky test"},
          "--event", "userPromptSubmitted")
    _hook(vault, "copilot", {"timestamp": _ms(T(4)), "cwd": str(repo / "src"), "prompt": "Now the parser"},
          "--event", "userPromptSubmitted")
    _hook(vault, "copilot", {"timestamp": _ms(T(9)), "cwd": str(repo / "src"), "reason": "complete"},
          "--event", "sessionEnd")
    turns = _turns(vault, "product")
    assert [(t["body"], t["turn"]) for t in turns] == [("Fix the flaky test", 1), ("Now the parser", 2)]
    [session_id] = {t["sessionId"] for t in turns}
    session = _session(vault, "product", session_id)
    assert (session["status"], session["startTime"], session["durationMinutes"]) == ("completed", T(0), 9)


def test_uninstall_removes_the_folders_install_created(tmp_path):
    home, vault = tmp_path / "home", tmp_path / "v"
    home.mkdir()
    env = {"HOME": str(home)}
    memo("hooks", "install", "copilot", vault=vault, env=env)
    assert (home / ".copilot" / "hooks" / "memo.json").is_file()
    memo("hooks", "uninstall", "copilot", vault=vault, env=env)
    assert list(home.iterdir()) == []  # ~/.copilot/hooks and ~/.copilot were memo's: gone again


# ---------------------------------------------------------------- found by trying to break it


def test_reinstall_after_the_person_edited_a_file_memo_created_keeps_their_edit_on_uninstall(tmp_path):
    home, vault = tmp_path / "home", tmp_path / "v"
    env = {"HOME": str(home)}
    path = settings_file(home, "claude-code")
    memo("hooks", "install", "claude-code", vault=vault, env=env)  # no file yet: memo creates it
    data = json.loads(path.read_text())
    del data["hooks"]["SessionEnd"]
    data["permissions"] = {"allow": ["Bash(ls)"]}
    path.write_text(json.dumps(data, indent=2) + "\n")
    mine = path.read_text()
    memo("hooks", "install", "claude-code", vault=vault, env=env)  # SessionEnd again
    memo("hooks", "uninstall", "claude-code", vault=vault, env=env)
    assert path.is_file() and json.loads(path.read_text())["permissions"] == {"allow": ["Bash(ls)"]}
    assert path.read_text() == mine  # as it was before the second install


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_settings_path_that_is_no_regular_file_is_refused(tmp_path, kind):
    import os

    home, vault = tmp_path / "home", tmp_path / "v"
    path = settings_file(home, "claude-code")
    path.parent.mkdir(parents=True)
    target = tmp_path / "target"
    os.mkfifo(target) if kind == "fifo" else target.mkdir()
    path.symlink_to(target)
    ran = memo("hooks", "install", "claude-code", vault=vault, env={"HOME": str(home)}, check=False)
    assert ran.returncode == 1 and "is not a regular file; memo left it as it is" in ran.stderr


def test_a_comment_only_file_is_refused_and_crlf_files_keep_their_line_endings(tmp_path):
    home, vault = tmp_path / "home", tmp_path / "v"
    env = {"HOME": str(home)}
    path = settings_file(home, "claude-code")
    path.parent.mkdir(parents=True)
    path.write_text("// nothing yet\n")
    ran = memo("hooks", "install", "claude-code", vault=vault, env=env, check=False)
    assert ran.returncode == 1 and "does not hold a JSON object" in ran.stderr
    path.write_bytes(b'{\r\n  "model": "opus"\r\n}\r\n')
    memo("hooks", "install", "claude-code", vault=vault, env=env)
    assert b"\n" not in path.read_bytes().replace(b"\r\n", b"")  # every line break is CRLF still


def test_a_repository_level_entry_names_no_path_of_this_machine(tmp_path, repo):
    home, vault = tmp_path / "home", tmp_path / "v"
    ran = memo("hooks", "install", "codex", "--project", vault=vault, env={"HOME": str(home)}, cwd=repo)
    commands = {h["command"] for group in json.loads((repo / ".codex" / "hooks.json").read_text())["hooks"].values()
                for entry in group for h in entry["hooks"]}
    assert commands == {"memo hook codex"}
    # found by a new user: installed with a vault chosen (MEMO_VAULT), the shared entry records into
    # each person's own vault, and nothing said so
    said = " ".join(ran.stderr.split())
    assert f"this repository's hooks record into each person's own vault (MEMO_VAULT in the agent's environment, " \
           f"else the config's vaultRoot), not into {vault.resolve()}" in said


def test_uninstall_from_another_vault_leaves_no_skeleton(tmp_path):
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    path = settings_file(home, "cursor")
    path.parent.mkdir(parents=True)
    path.write_text('{"x": "opus"}\n')
    memo("hooks", "install", "cursor", vault=tmp_path / "v1", env=env)
    path.write_text(path.read_text().replace('"opus"', '"sonnet"'))
    memo("hooks", "uninstall", "cursor", vault=tmp_path / "v2", env=env)  # the install record is in v1
    assert json.loads(path.read_text()) == {"x": "sonnet", "version": 1}
    memo("hooks", "install", "cursor", vault=tmp_path / "v1", env=env)
    path.write_text(path.read_text().replace('"sonnet"', '"haiku"'))
    memo("hooks", "uninstall", "cursor", vault=tmp_path / "v1", env=env)
    assert json.loads(path.read_text()) == {"x": "haiku", "version": 1}  # the version was there before


def test_installing_again_for_a_moved_vault_points_the_entries_at_it_and_uninstall_removes_them(tmp_path):
    """The README says to install again after moving the vault: it said 'already in …: nothing to
    do' and the entries kept running memo for the old vault (found by a helper)."""
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    settings = home / ".claude" / "settings.json"
    memo("hooks", "install", "claude-code", vault=tmp_path / "old", env=env)
    moved = memo("hooks", "install", "claude-code", vault=tmp_path / "new", env=env)
    # found by an operator: the events were said twice ("S, U, E; S, U, E ran another vault's … replaced")
    assert moved.stdout.splitlines()[0] == (f"memo's hooks for claude-code are in {settings}: SessionStart, "
                                            "UserPromptSubmit, Notification, Stop, SessionEnd replaced (they ran another vault's or "
                                            "another memo's command)")
    text = settings.read_text()
    assert text.count(f"--vault-root {(tmp_path / 'new').resolve()}") == 5 and str(tmp_path / "old") not in text
    again = memo("hooks", "install", "claude-code", vault=tmp_path / "new", env=env, check=False)
    assert again.returncode == 1 and "nothing to do" in again.stderr
    memo("hooks", "uninstall", "claude-code", vault=tmp_path / "new", env=env)
    assert not settings.exists() or "memo hook" not in settings.read_text()  # not the old vault's entries back


@pytest.mark.parametrize("kind", ["read-only", "hard-linked"])
def test_a_read_only_or_hard_linked_settings_file_is_left_as_it_is(tmp_path, kind):
    """It was replaced by a new file (rename): a read-only file became writable with memo's
    entries, a hard link's other name kept the old text."""
    import os

    home, vault = tmp_path / "home", tmp_path / "v"
    path = settings_file(home, "claude-code")
    path.parent.mkdir(parents=True)
    path.write_text(HAND_WRITTEN["claude-code"])
    if kind == "read-only":
        path.chmod(0o444)
    else:
        os.link(path, tmp_path / "dotfiles-settings.json")
    before = path.stat()
    ran = memo("hooks", "install", "claude-code", vault=vault, env={"HOME": str(home)}, check=False)
    assert ran.returncode == 1
    assert ("is read-only; memo left it as it is" if kind == "read-only" else "has 2 hard links") in ran.stderr
    after = path.stat()
    assert path.read_text() == HAND_WRITTEN["claude-code"]
    assert (after.st_ino, after.st_mode, after.st_nlink) == (before.st_ino, before.st_mode, before.st_nlink)
    assert not (vault / ".memo" / "hooks" / "backups").exists()  # nothing written anywhere


def test_a_settings_file_made_read_only_after_install_is_not_rewritten_by_uninstall(tmp_path):
    home, vault = tmp_path / "home", tmp_path / "v"
    path = settings_file(home, "claude-code")
    path.parent.mkdir(parents=True)
    path.write_text(HAND_WRITTEN["claude-code"])
    memo("hooks", "install", "claude-code", vault=vault, env={"HOME": str(home)})
    installed = path.read_text()
    path.chmod(0o400)
    ran = memo("hooks", "uninstall", "claude-code", vault=vault, env={"HOME": str(home)}, check=False)
    assert ran.returncode == 1 and "make it writable to remove memo's hooks for claude-code" in ran.stderr
    assert path.read_text() == installed and path.stat().st_mode & 0o777 == 0o400


def test_hooks_status_answers_while_the_config_file_is_broken_and_install_refuses(tmp_path):
    """Found by a new user: with a broken config file (when the hooks spool every event) ``memo
    hooks status`` said only "Invalid config"; it shows what the agents run, with a warning."""
    home, vault = tmp_path / "home", tmp_path / "v"
    env = {"HOME": str(home)}
    memo("hooks", "install", "claude-code", vault=vault, env=env)
    config = tmp_path / "config.toml"
    config.write_text("timezone = [unclosed\n")
    env["MEMO_CONFIG"] = str(config)
    ran = memo("--json", "hooks", "status", "claude-code", vault=vault, env=env)
    [item] = [i for i in json.loads(ran.stdout)["items"] if i["level"] == "user"]
    assert item["installed"] == list(agent_hooks.spec_for("claude-code").events)
    warning = json.loads(ran.stderr.splitlines()[0])["warning"]  # under --json, a JSON line
    assert warning.startswith("Invalid config (MEMO_CONFIG)") and "spool every event" in warning
    refused = memo("hooks", "install", "codex", vault=vault, env=env, check=False)
    assert refused.returncode == 1 and "Invalid config" in refused.stderr
    assert not settings_file(home, "codex").exists()


def test_project_hooks_with_no_memo_on_the_path_say_so_and_doctor_names_the_fix(tmp_path, repo):
    """Found by an operator: ``hooks install … --project`` writes ``memo`` (no path of one machine
    in a shared file); with no memo on the PATH nothing was captured and nothing said so, and
    ``memo doctor`` suggested that same install, which answered "nothing to do"."""
    import sys

    home, vault = tmp_path / "home", tmp_path / "v"
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}  # no memo on it
    ran = memo("hooks", "install", "claude-code", "--project", vault=vault, env=env, cwd=repo)
    said = " ".join(ran.stderr.split())
    link = f"ln -sf {Path(sys.executable).with_name('memo')} ~/.local/bin/memo"
    assert "this repository's hooks run `memo` from the agent's PATH" in said and link in said
    doctor = " ".join(memo("doctor", vault=vault, env=env, cwd=repo, check=False).stdout.split())
    assert "which is not there: nothing is captured" in doctor and link in doctor
    # found by a new user: memo on the PATH only from the README's .venv (activated in this shell, not in the
    # agent's) said nothing, and the agent ran `memo: not found`
    venv = tmp_path / "proj" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "memo").write_text("#!/bin/sh\n")
    (venv / "bin" / "memo").chmod(0o755)
    again = memo("hooks", "install", "codex", "--project", vault=vault, env={**env, "PATH": f"{venv / 'bin'}:/usr/bin:/bin"},
                 cwd=repo)
    said = " ".join(again.stderr.split())
    assert f"this PATH has it only from a virtual environment ({venv / 'bin' / 'memo'})" in said and link in said
    # found by a freelancer: doctor then said "each runs a memo that is there"
    (repo / ".claude" / "settings.json").unlink()  # the codex hooks alone: memo only in the virtual environment
    doctor = " ".join(memo("doctor", vault=vault, env={**env, "PATH": f"{venv / 'bin'}:/usr/bin:/bin"}, cwd=repo,
                           check=False).stdout.split())
    assert "run `memo`, which this PATH has only from a virtual environment" in doctor and link in doctor, doctor


def test_user_hooks_run_this_installs_memo_by_its_full_path_when_the_path_lacks_it(tmp_path):
    """Found by a new user: ``.venv/bin/memo hooks install claude-code`` run without the virtual
    environment on the PATH wrote a bare ``memo``: every prompt was lost, and nothing said so."""
    import sys

    home, vault = tmp_path / "home", tmp_path / "v"
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}  # no memo on it
    memo("hooks", "install", "claude-code", vault=vault, env=env, cwd=tmp_path)
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command.split()[:3] == [str(Path(sys.executable).with_name("memo")), "hook", "claude-code"]
    status = json.loads(memo("--json", "hooks", "status", "claude-code", vault=vault, env=env, cwd=tmp_path).stdout)
    assert [i["notFound"] for i in status["items"]] == [[]]


def test_a_trailing_comma_is_named_with_its_line(tmp_path):
    """Found by a new user: a trailing comma in ``.claude/settings.json`` was refused as "not valid
    JSON" alone, although comments are read: it says where the comma is and that it is the trouble."""
    home = tmp_path / "home"
    path = settings_file(home, "claude-code")
    path.parent.mkdir(parents=True)
    path.write_text('{\n  // mine\n  "model": "opus",\n}\n')
    ran = memo("hooks", "install", "claude-code", vault=tmp_path / "v", env={"HOME": str(home)}, check=False)
    assert ran.returncode == 1
    assert "a comma before a closing bracket at line 3 (comments are read, trailing commas are not)); memo left " \
           "it as it is" in " ".join(ran.stderr.split())
    assert path.read_text() == '{\n  // mine\n  "model": "opus",\n}\n'


def test_a_comment_inside_an_empty_list_or_object_stays_and_an_item_on_one_line_is_indented(tmp_path):
    """Found by an operator: ``"UserPromptSubmit": [ // comment\\n]`` lost its comment on install
    (the empty list was replaced whole: the README says every comment stays); and the new item of
    a list written on one line started at column 0 inside an indented file."""
    home, vault = tmp_path / "home", tmp_path / "v"
    codex = settings_file(home, "codex")
    codex.parent.mkdir(parents=True)
    codex.write_text('{"hooks": {"UserPromptSubmit": [ // mine\n], "Other": { /* theirs */ }}}')
    claude = settings_file(home, "claude-code")
    claude.parent.mkdir(parents=True)
    claude.write_text('{\n    "hooks": {\n        "Stop": [{"hooks": [{"type": "command", "command": "x"}]}],\n'
                      '        "SessionEnd": [{"hooks": [{"type": "command", "command": "y"}]}]\n    }\n}\n')
    env = {"HOME": str(home)}
    memo("hooks", "install", "codex", vault=vault, env=env)
    memo("hooks", "install", "claude-code", vault=vault, env=env)
    text = codex.read_text()
    assert "// mine" in text and "/* theirs */" in text
    data = json.loads(agent_hooks._blank_comments(text))
    assert agent_hooks.is_managed(data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"], "codex")
    added = claude.read_text().split('"command": "y"}]}, ', 1)[1]
    assert added.startswith("{\n") and all(line.startswith("        ") for line in added.splitlines()[1:3])
    for agent, path in (("codex", codex), ("claude-code", claude)):
        before = path.read_text()
        memo("hooks", "uninstall", agent, vault=vault, env=env)
        assert path.read_text() != before and "memo hook" not in path.read_text()
    assert codex.read_text() == '{"hooks": {"UserPromptSubmit": [ // mine\n], "Other": { /* theirs */ }}}'


def test_an_install_of_the_three_events_of_old_gets_the_waiting_states_by_installing_again(tmp_path):
    """SPEC §8: the hook records the session's waiting states — for Claude Code its
    ``Notification`` (a permission prompt) and ``Stop`` (it went on). An install made before they
    were wanted (its start, prompt and end alone) is said to miss them, and installing again adds
    exactly those two, keeping the three as they are."""
    home, vault = tmp_path / "home", tmp_path / "v"
    env = {"HOME": str(home)}
    path = settings_file(home, "claude-code")
    memo("hooks", "install", "claude-code", vault=vault, env=env)
    data = json.loads(path.read_text())
    assert list(data["hooks"]) == ["SessionStart", "UserPromptSubmit", "Notification", "Stop", "SessionEnd"]
    old = {"hooks": {k: v for k, v in data["hooks"].items() if k not in ("Notification", "Stop")}}
    path.write_text(json.dumps(old, indent=2) + "\n")
    status = json.loads(memo("--json", "hooks", "status", "claude-code", vault=vault, env=env).stdout)
    [item] = [i for i in status["items"] if i["level"] == "user"]
    assert (item["installed"], item["missing"]) == (["SessionStart", "UserPromptSubmit", "SessionEnd"],
                                                    ["Notification", "Stop"])
    again = json.loads(memo("--json", "hooks", "install", "claude-code", vault=vault, env=env).stdout)
    [done] = again if isinstance(again, list) else [again]
    assert (done["added"], done["already"]) == (["Notification", "Stop"], ["SessionStart", "UserPromptSubmit",
                                                                           "SessionEnd"])
    now = json.loads(path.read_text())["hooks"]
    assert now["SessionStart"] == old["hooks"]["SessionStart"] and sorted(now) == sorted(data["hooks"])
    gemini = settings_file(home, "gemini")
    memo("hooks", "install", "gemini", vault=vault, env=env)
    assert list(json.loads(gemini.read_text())["hooks"]) == ["SessionStart", "BeforeAgent", "Notification",
                                                             "AfterAgent", "SessionEnd"]


def test_status_in_a_repository_does_not_call_the_project_level_missing_when_the_user_level_runs_there(tmp_path, repo):
    """A newcomer ran ``memo hooks install``, then ``memo hooks status`` in a repository listed
    every event missing at the project level and sent them to install again: the user level's
    hooks run in every repository."""
    home, vault = tmp_path / "home", tmp_path / "v"
    (home / ".claude").mkdir(parents=True)
    env = {"HOME": str(home)}
    memo("hooks", "install", "claude-code", vault=vault, env=env, cwd=repo)
    status = json.loads(memo("--json", "hooks", "status", "claude-code", vault=vault, env=env, cwd=repo).stdout)
    user, project = status["items"]
    assert (user["level"], user["missing"], user["coveredByUserLevel"]) == ("user", [], False)
    assert (project["level"], project["installed"], project["missing"], project["coveredByUserLevel"]) == \
        ("project", [], [], True)
    shown = memo("hooks", "status", "claude-code", vault=vault, env=env, cwd=repo).stdout
    assert "the user level's run here" in shown and "UserPromptSubmit" not in shown.split("project")[-1]
    # the user level without its hooks: the repository's level is missing them, as before
    memo("hooks", "uninstall", "claude-code", vault=vault, env=env, cwd=repo)
    status = json.loads(memo("--json", "hooks", "status", "claude-code", vault=vault, env=env, cwd=repo).stdout)
    assert [(i["coveredByUserLevel"], bool(i["missing"])) for i in status["items"]] == [(False, True), (False, True)]


def test_status_says_an_agent_not_on_this_machine_misses_nothing(tmp_path):
    """Found by a newcomer: ``memo hooks install`` skipped Cursor and Copilot (no folder in the
    home), then ``memo hooks status`` listed every event of theirs as missing: it read as a failed
    install."""
    home, vault = tmp_path / "home", tmp_path / "v"
    (home / ".claude").mkdir(parents=True)
    env = {"HOME": str(home)}
    memo("hooks", "install", vault=vault, env=env, cwd=tmp_path)
    status = json.loads(memo("--json", "hooks", "status", vault=vault, env=env, cwd=tmp_path).stdout)
    rows = {i["agent"]: (i["agentHere"], bool(i["installed"]), i["missing"]) for i in status["items"]}
    assert rows["claude-code"] == (True, True, [])
    assert rows["cursor"] == (False, False, []) and rows["copilot"] == (False, False, [])
    shown = memo("hooks", "status", vault=vault, env=env, cwd=tmp_path).stdout
    assert "the agent is not on this machine" in shown
    (home / ".cursor").mkdir()  # the agent ran once: its hooks are missing now
    status = json.loads(memo("--json", "hooks", "status", "cursor", vault=vault, env=env, cwd=tmp_path).stdout)
    assert status["items"][0]["agentHere"] and status["items"][0]["missing"]
