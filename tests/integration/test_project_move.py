"""``memo project rename|merge`` (issue 15 point 5): every record of a project moves to its real
name or into another project; reports, search and a rebuilt index agree; differing records of
one id, and sessions on an issued invoice, are refused before anything moves."""

from __future__ import annotations

import json

from memo_analytics.config import Settings
from memo_analytics.services.store import VaultStore
from tests.inprocess import memo

from .test_importers_realdata import CC
from .test_issued_invoices import billing, issue, run  # noqa: F401 - the fixture


def records(vault) -> list[tuple]:
    store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
    rows = sorted(tuple(r) for r in store.conn.execute("SELECT project, id, kind, client FROM records"))
    store.close()
    return rows


def test_rename_and_merge_move_every_record_and_a_rebuild_agrees(realdata, tmp_path):
    vault = tmp_path / "v"
    memo("import", "claude-code", str(realdata / CC / "moredip-session-share"), vault=vault)
    before = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    projects = sorted(before["byProject"])
    assert len(projects) == 2
    renamed = json.loads(memo("--json", "project", "rename", projects[0], "acme-web", vault=vault).stdout)
    assert renamed["moved"]["session"] == before["byProject"][projects[0]]["sessions"]
    merged = json.loads(memo("--json", "project", "merge", projects[1], "acme-web", vault=vault).stdout)
    assert merged["moved"]["session"] == before["byProject"][projects[1]]["sessions"]
    after = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert list(after["byProject"]) == ["acme-web"]
    assert (after["totalDurationMinutes"], after["totalPrompts"], after["totalCostUsd"]) == (
        before["totalDurationMinutes"], before["totalPrompts"], before["totalCostUsd"])
    assert sorted(p.name for p in (vault / "projects").iterdir()) == ["acme-web"]  # the old folders are gone
    found = json.loads(memo("--json", "prompt", "search", "curry", "--all", vault=vault).stdout)
    assert found["items"] and {i["project"] for i in found["items"]} == {"acme-web"}
    rows = records(vault)
    memo("reindex", vault=vault)
    assert records(vault) == rows


def test_a_rename_cut_short_is_finished_by_running_it_again(realdata, tmp_path):
    vault = tmp_path / "v"
    memo("import", "claude-code", str(realdata / CC / "moredip-session-share"), vault=vault)
    project = sorted(json.loads(memo("--json", "activity", "--all", vault=vault).stdout)["byProject"])[0]
    # as if killed after the first turn was written: one copy in the new project
    first = sorted((vault / "projects" / project / "prompts").glob("*.md"))[0]
    (vault / "projects" / "acme-web" / "prompts").mkdir(parents=True)
    text = first.read_text(encoding="utf-8").replace(f"project: {project}", "project: acme-web")
    (vault / "projects" / "acme-web" / "prompts" / first.name).write_text(text, encoding="utf-8")
    done = json.loads(memo("--json", "project", "rename", project, "acme-web", vault=vault).stdout)
    assert done["alreadyThere"] == 1
    assert project not in {r[0] for r in records(vault)}


def test_a_rename_killed_after_records_moved_is_finished_by_running_it_again(realdata, tmp_path):
    """Found by an attacker: killed once records had moved *and* left the source, running the rename
    again was refused ("project gamma exists; fold alpha into it"), against what the README says.
    A rename says where it goes before the first record moves; run again, it finishes."""
    import pytest

    from memo_analytics.services.project_move import move_project

    vault = tmp_path / "v"
    memo("import", "claude-code", str(realdata / CC / "moredip-session-share"), vault=vault)
    before = records(vault)
    project = sorted({r[0] for r in before})[0]
    store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
    try:
        real_remove, removed = store.remove, []

        def killed(*args, **kwargs):
            if len(removed) == 3:
                raise KeyboardInterrupt  # as a kill -9 between two writes
            removed.append(args)
            return real_remove(*args, **kwargs)

        store.remove = killed
        with pytest.raises(KeyboardInterrupt):
            move_project(store, project, "acme-web")
    finally:
        store.close()
    other = memo("project", "rename", project, "zeta", vault=vault, check=False)  # found by a second attacker
    assert other.returncode == 1 and f"finish it first: memo project rename {project} acme-web" in other.stderr
    # found by a reliability tester: until run again, every command says the move was cut short (the
    # records in both projects were counted twice, without a word)
    warned = f"warning: a rename of project {project} to acme-web was cut short: some records are in both " \
             f"(reports count them twice); finish it first: memo project rename {project} acme-web"
    for command in (("activity", "--all"), ("prompt", "list", "--all"), ("digest",)):
        assert warned in memo(*command, vault=vault).stderr, command
    assert json.loads(memo("--json", "activity", "--all", vault=vault).stderr.splitlines()[-1]) == {
        "warning": warned.removeprefix("warning: ")}
    finishing = memo("--json", "project", "rename", project, "acme-web", vault=vault)
    assert "cut short" not in finishing.stderr
    done = json.loads(finishing.stdout)
    assert done["alreadyThere"] == 1  # the record written there but not yet removed here
    after = records(vault)
    assert project not in {r[0] for r in after} and len(after) == len(before)
    assert not (vault / ".memo" / "renaming.json").exists()
    assert "cut short" not in memo("activity", "--all", vault=vault).stderr
    refused = memo("project", "rename", sorted({r[0] for r in before})[1], "acme-web", vault=vault, check=False)
    assert refused.returncode == 1 and "project acme-web exists" in refused.stderr  # another rename into it: refused


def test_differing_records_of_one_id_or_an_invoiced_session_refuse_the_move(billing, tmp_path):
    # two projects with a session of the same id but other times
    run(billing, "session", "start", "a1", "--project", "shop", "--client", "Acme Corp", "--start-time",
        "2026-06-10T09:00:00Z")
    clash = run(billing, "project", "merge", "shop", "web")
    assert clash.returncode == 1
    assert clash.stderr.strip() == ("error: Invalid id: 1 records of shop and web share an id but differ "
                                    "(session-a1); nothing was moved")
    assert run(billing, "project", "rename", "shop", "web").stderr.strip() == (
        "error: Invalid project: project web exists; fold shop into it with memo project merge shop web")
    issue(billing, "--client", "Globex", "--since", "2026-06-01", "--until", "2026-06-30")
    refused = run(billing, "project", "rename", "etl", "data")
    assert refused.stderr.strip() == ("error: Invalid project: project etl has sessions on invoice 2026-0001, which "
                                      "names the project; credit it first (memo invoice credit)")
    assert (billing["vault"] / "projects" / "etl").is_dir() and not (billing["vault"] / "projects" / "data").exists()


def test_a_rename_killed_after_its_last_record_moved_is_finished_too(realdata, tmp_path, monkeypatch):
    """Found by a second attacker: killed once every record had moved (before the project's own
    files followed), running it again said "project … has no records" for ever."""
    import pytest

    import memo_analytics.services.project_move as project_move

    vault = tmp_path / "v"
    memo("import", "claude-code", str(realdata / CC / "moredip-session-share"), vault=vault)
    project = sorted({r[0] for r in records(vault)})[0]
    (vault / "projects" / project / "project.toml").write_text('name = "web"\n', encoding="utf-8")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # as a kill -9 after the last record moved

    clear = project_move._clear_folder
    monkeypatch.setattr(project_move, "_clear_folder", killed)
    store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
    try:
        with pytest.raises(KeyboardInterrupt):
            project_move.move_project(store, project, "acme-web")
    finally:
        store.close()
    monkeypatch.setattr(project_move, "_clear_folder", clear)
    memo("project", "rename", project, "acme-web", vault=vault)
    assert not (vault / "projects" / project).exists() and (vault / "projects" / "acme-web" / "project.toml").is_file()
    assert not (vault / ".memo" / "renaming.json").exists()


def test_a_rename_says_a_checkout_of_the_old_name_still_files_under_it(tmp_path):
    """Found by a freelancer: after ``memo project rename portal-checkout initech-portal`` the next
    session in the checkout folder made the project portal-checkout again, without a word."""
    import subprocess

    checkout = tmp_path / "portal-checkout"
    checkout.mkdir()
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--start-time", "2026-12-01T09:00:00Z", vault=vault, cwd=checkout)
    memo("session", "end", "s1", "--until", "2026-12-01T10:00:00Z", vault=vault, cwd=checkout)
    ran = memo("project", "rename", "portal-checkout", "initech-portal", vault=vault)
    assert ran.stderr == (f"note: what is recorded from now on in {checkout.resolve()} goes to portal-checkout again (a "
                          "project is its repository folder's name): rename that folder to initech-portal, or merge "
                          "it in again later (memo project merge portal-checkout initech-portal)\n")
    again = json.loads(memo("--json", "project", "rename", "initech-portal", "portal", vault=vault).stdout)
    assert (again["checkout"], again["checkoutProject"]) == (str(checkout.resolve()), "portal-checkout")


def test_a_renamed_projects_client_follows_it_in_the_config(tmp_path):
    """Found by a team lead: ``projectClients.api = "Globex"`` stayed on the old name after
    ``memo project rename api globex-api``, without a word — every session recorded in globex-api
    from then on billed internal. The config maps the new name too (the old kept: a checkout of
    that name still records there); a config with comments is not rewritten: the command is said."""
    from tests.inprocess import memo as run

    vault, config = tmp_path / "v", tmp_path / "config.toml"
    config.write_text('[projectClients]\napi = "Globex"\n', encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    run("session", "start", "s1", "--project", "api", "--start-time", "2026-03-02T09:00:00Z", vault=vault, env=env)
    run("session", "end", "s1", "--project", "api", "--until", "2026-03-02T10:00:00Z", vault=vault, env=env)
    ran = run("project", "rename", "api", "globex-api", vault=vault, env=env)
    assert f"note: projectClients.globex-api = 'Globex' added in {config}, as projectClients.api" in ran.stderr
    run("session", "start", "s2", "--project", "globex-api", "--start-time", "2026-03-03T09:00:00Z", vault=vault, env=env)
    run("session", "end", "s2", "--project", "globex-api", "--until", "2026-03-03T10:00:00Z", vault=vault, env=env)
    report = json.loads(run("--json", "activity", "--all", vault=vault, env=env).stdout)
    assert {name: c["durationMinutes"] for name, c in report["byClient"].items()} == {"Globex": 120}
    config.write_text('# the team\'s clients\n[projectClients]\nweb = "Acme"\n', encoding="utf-8")
    run("session", "start", "s3", "--project", "web", "--start-time", "2026-03-04T09:00:00Z", vault=vault, env=env)
    ran = run("project", "rename", "web", "shop", vault=vault, env=env)
    assert "sessions of shop bill internal until it maps shop too (memo config set projectClients.shop Acme)" \
        in ran.stderr
    assert config.read_text(encoding="utf-8").startswith("# the team's clients\n")


def test_a_merge_keeps_two_peoples_sessions_of_one_id_apart(tmp_path):
    """Found by a team lead: Ana's ``fix`` in p2 and Cat's ``fix`` in p1 — ``memo project merge p1
    p2`` was refused ("share an id but differ") and no command could rename a session: the two
    projects could never be one. Two people's sessions of one id are kept apart, as a team daemon
    keeps them: the one moved in goes under ``fix--<owner>-<6 hex>``, its turns with it; the same
    person's two of one id still refuse the merge."""
    from memo_analytics.services.sync import apart_session_id

    vault = tmp_path / "v"
    for project, owner, start, text in (("p2", "ana@x.test", "2026-11-02T09:00:00Z", "ana's fix"),
                                        ("p1", "cat@x.test", "2026-11-03T09:00:00Z", "cat's fix")):
        memo("session", "start", "fix", "--project", project, "--owner", owner, "--start-time", start, vault=vault)
        memo("prompt", "record", "--session-id", "fix", "--project", project, "--body", text,
             "--created", start.replace("09:00", "09:05"), vault=vault)
        memo("session", "end", "fix", "--project", project, "--until", start.replace("09:00", "10:00"), vault=vault)
    before = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    merged = memo("project", "merge", "p1", "p2", vault=vault, check=False)
    assert merged.returncode == 0, merged.stderr
    apart = apart_session_id("fix", "cat@x.test")
    assert f"kept apart: cat@x.test's fix of p1 is {apart} in p2" in " ".join(merged.stderr.split()), merged.stderr
    after = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert (after["totalDurationMinutes"], after["totalPrompts"], list(after["byProject"])) == (
        before["totalDurationMinutes"], before["totalPrompts"], ["p2"]) == (120, 2, ["p2"])
    assert sorted(s["sessionId"] for s in after["sessions"]) == sorted(["fix", apart])
    turns = {r[1] for r in records(vault) if r[2] == "prompt"}
    assert turns == {"prompt-fix-t1", f"prompt-{apart}-t1"}
