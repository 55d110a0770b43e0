"""``projectClients`` in the config (issue 15 point 5): a project's sessions bill its client when
none is named — imported transcripts, hooks and agents alike — and ``--client`` still wins."""

from __future__ import annotations

import json

from tests.inprocess import memo

from .test_importers_realdata import CC


def test_imports_without_a_client_bill_the_client_of_their_project(realdata, tmp_path):
    source = realdata / CC / "moredip-session-share/samples/claude-code-projects"
    vault, config = tmp_path / "v", tmp_path / "config.toml"
    env = {"MEMO_CONFIG": str(config), "HOME": str(tmp_path / "home")}
    memo("import", "claude-code", str(source), vault=vault, env=env)
    unmapped = json.loads(memo("--json", "activity", "--all", vault=vault, env=env).stdout)
    projects = sorted(unmapped["byProject"])
    assert projects and unmapped["byClient"].keys() == {"internal"}  # no config: nobody to bill
    mapped = projects[0]
    config.write_text(f'[projectClients]\n"{mapped}" = "Acme Corp"\n', encoding="utf-8")
    memo("import", "claude-code", str(source), vault=tmp_path / "v2", env=env)
    report = json.loads(memo("--json", "activity", "--all", vault=tmp_path / "v2", env=env).stdout)
    assert report["byClient"]["Acme Corp"]["durationMinutes"] == report["byProject"][mapped]["durationMinutes"]
    by_session = {s["project"]: s["client"] for s in report["sessions"]}
    assert by_session[mapped] == "Acme Corp"
    assert all(client == "internal" for project, client in by_session.items() if project != mapped)
    # an explicit client wins over the map
    memo("session", "start", "s1", "--project", mapped, "--client", "Globex", vault=tmp_path / "v2", env=env)
    memo("session", "start", "s2", "--project", mapped, vault=tmp_path / "v2", env=env)
    sessions = {s["sessionId"]: s["client"] for s in json.loads(
        memo("--json", "activity", "--all", vault=tmp_path / "v2", env=env).stdout)["sessions"]}
    assert (sessions["s1"], sessions["s2"]) == ("Globex", "Acme Corp")


def test_a_bad_map_is_one_line_naming_the_key(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[projectClients]\n"../x" = "Acme"\n', encoding="utf-8")
    ran = memo("activity", "--all", vault=tmp_path / "v", env={"MEMO_CONFIG": str(config)}, check=False)
    assert ran.returncode == 1
    [line] = ran.stderr.strip().splitlines()
    assert line.startswith("error: Invalid projectClients")
