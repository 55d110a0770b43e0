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


def test_project_client_names_the_session_files_it_could_not_read_and_file(tmp_path):
    """Found by a tester of bad files: with ``billable: maybe`` in 5 of a project's 9 session files,
    ``memo project client P "Acme Corp"`` said "4 sessions now bill Acme Corp" and nothing of the
    other 5, which stayed internal after they were mended. They are named, not filed."""
    vault = tmp_path / "v"
    for sid in ("s1", "s2", "s3"):
        memo("session", "start", sid, "--project", "web", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
        memo("session", "end", sid, "--project", "web", "--until", "2026-03-02T10:00:00Z", vault=vault)
    path = vault / "projects/web/sessions/session-s2.md"
    path.write_text(path.read_text(encoding="utf-8").replace("billable: true", "billable: maybe"), encoding="utf-8")
    ran = memo("project", "client", "web", "Acme Corp", vault=vault)
    assert ran.stdout.startswith("web: 2 sessions now bill Acme Corp")
    assert ("note: 1 session file of web cannot be read and was not filed: projects/web/sessions/session-s2.md: "
            "billable: Input should be a valid boolean, unable to interpret input; mend them, then run this again") \
        in ran.stderr
    shown = json.loads(memo("--json", "project", "client", "web", "Acme Corp", vault=vault, check=False).stdout)
    assert [line.split(":")[0] for line in shown["unreadable"]] == ["projects/web/sessions/session-s2.md"]
