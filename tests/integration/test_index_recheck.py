"""A long-running process sees what changed in the vault's files behind its index (SPEC §2.1: the
files are the truth): a server that checked its index only when it opened it answered from a
stale index for as long as it ran — a project folder removed by hand, another machine's records
brought by a sync tool, the index file removed — and wrote into an index file no longer there."""

from __future__ import annotations

import json
import os
import shutil
import time

from memo_analytics.config import Settings
from memo_analytics.services.store import RECHECK_SECONDS, VaultStore
from tests.inprocess import memo

from .test_http_api import Server


def _vault(tmp_path):
    vault = tmp_path / "v"
    for project, client in (("web", "Acme"), ("api", "Globex")):
        memo("session", "start", f"s-{project}", "--project", project, "--client", client,
             "--start-time", "2026-03-02T09:00:00Z", vault=vault)
        memo("prompt", "record", "--session-id", f"s-{project}", "--project", project, "--body", f"{project} turn",
             vault=vault)
        memo("session", "end", f"s-{project}", "--until", "2026-03-02T10:00:00Z", vault=vault)
    return vault


def _projects(store: VaultStore) -> list[str]:
    return sorted(row[0] for row in store.conn.execute("SELECT DISTINCT project FROM records"))


def test_recheck_takes_in_folders_changed_behind_the_index_and_reopens_a_removed_index(tmp_path):
    vault = _vault(tmp_path)
    store = VaultStore(Settings(vault_root=vault))
    try:
        assert _projects(store) == ["api", "web"]
        copy = tmp_path / "web-copy"
        shutil.copytree(vault / "projects" / "web", copy)
        shutil.rmtree(vault / "projects" / "web")
        store.recheck()  # checked a moment ago: not again yet
        assert _projects(store) == ["api", "web"]
        store.recheck(every=0)
        assert _projects(store) == ["api"]
        assert not (vault / "projects" / "web").exists()  # not made again with views of nothing
        shutil.copytree(copy, vault / "projects" / "web")  # a sync tool brings it back
        store.recheck(every=0)
        assert _projects(store) == ["api", "web"]
        for name in ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm"):
            (vault / ".memo" / name).unlink(missing_ok=True)
        store.recheck(every=0)
        assert _projects(store) == ["api", "web"] and (vault / ".memo" / "index.sqlite").is_file()
        with store.batch():  # never inside a batch of this store
            shutil.rmtree(vault / "projects" / "api")
            store.recheck(every=0)
            assert _projects(store) == ["api", "web"]
    finally:
        store.close()


def test_a_running_server_answers_from_the_files_as_they_are_now(tmp_path):
    vault = _vault(tmp_path)
    server = Server(vault, "--mcp-port", "0")
    try:
        def totals() -> tuple[int, list[str]]:
            status, body = server.get_json("/api/activity?crossProject=true")
            assert status == 200, body
            return body["totalDurationMinutes"], sorted(body["byClient"])

        assert totals() == (120, ["Acme", "Globex"])
        shutil.rmtree(vault / "projects" / "web")
        time.sleep(RECHECK_SECONDS + 0.2)
        assert totals() == (60, ["Globex"])
        for name in ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm"):
            (vault / ".memo" / name).unlink(missing_ok=True)
        time.sleep(RECHECK_SECONDS + 0.2)
        status, recorded = server.get_json("/api/actions/record", data={"project": "api", "body": "after"})
        assert status == 200
    finally:
        server.stop()
    # the turn went into the index file that is there, not into one removed before
    listed = json.loads(memo("--json", "prompt", "list", "--all", vault=vault).stdout)["items"]
    assert sorted(item["body"] for item in listed) == ["after", "api turn"]
    assert memo("prompt", "list", "--all", vault=vault).stderr == ""  # nothing for the CLI to repair


def test_a_dashboard_left_open_shows_the_files_as_they_are_now(tmp_path):
    """The dashboard reads through one store for as long as it is served: its data re-checks the
    index (at most every 2 s) as the API's per-request stores do."""
    from memo_analytics.dashboard_data import DashboardData

    vault = _vault(tmp_path)
    data = DashboardData(VaultStore(Settings(vault_root=vault)))
    try:
        assert data.clients() == ["Acme", "Globex"]
        shutil.rmtree(vault / "projects" / "web")
        time.sleep(RECHECK_SECONDS + 0.1)
        assert data.clients() == ["Globex"]
    finally:
        data.main.close()


def test_a_file_the_index_skips_is_said_once_per_run(tmp_path):
    """Found by an attacker: a session file copied under another name was said skipped twice by
    one ``memo activity`` (as a folder changed outside memo, then as one edited in place)."""
    vault = tmp_path / "v"
    memo("session", "start", "a", "--project", "web", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    memo("session", "end", "a", "--until", "2026-03-02T10:00:00Z", vault=vault)
    folder = vault / "projects" / "web" / "sessions"
    shutil.copy(folder / "session-a.md", folder / "session-renamed.md")
    later = (folder / "session-renamed.md").stat().st_mtime + 1  # written after the folder's own time, as cp can
    os.utime(folder / "session-renamed.md", (later, later))
    said = memo("activity", "--all", vault=vault).stderr
    assert said.count("session-renamed.md: id 'session-a' does not match the file name") == 1, said


def test_a_session_file_that_cannot_be_read_is_said_by_every_billing_report_that_leaves_it_out(tmp_path):
    """Found by an attacker: a hand edit a record rule refuses (``durationMinutes: 121`` on a
    120-minute session) was named once, when the index skipped it; every later activity report
    and timesheet printed a lower total without a word. Each report says it (a note, and
    ``unreadableSessionFiles`` on the wire) while the file cannot be read, and a document (timesheet,
    invoice) that would be short by it is refused."""
    from tests.inprocess import memo as run

    vault = tmp_path / "v"
    for sid, start, end in (("s1", "2026-03-02T09:00:00Z", "2026-03-02T11:00:00Z"),
                            ("s2", "2026-03-03T09:00:00Z", "2026-03-03T10:00:00Z")):
        run("session", "start", sid, "--project", "web", "--start-time", start, vault=vault)
        run("session", "end", sid, "--project", "web", "--until", end, vault=vault)
    path = vault / "projects/web/sessions/session-s1.md"
    path.write_text(path.read_text(encoding="utf-8").replace("durationMinutes: 120", "durationMinutes: 121"),
                    encoding="utf-8")
    said = ("1 session file cannot be read and is left out: projects/web/sessions/session-s1.md: durationMinutes: "
            "121 is more than endTime − startTime (120 minutes)")
    first = run("activity", "--all", vault=vault).stderr  # the catch-up that skips it names it (once a run)
    assert "1 file skipped" in first and "session-s1.md: durationMinutes: 121 is more than" in first and said not in first
    for args in (["activity", "--all"], ["activity", "--all"]):
        ran = run(*args, vault=vault)
        assert said in " ".join(ran.stderr.split()), (args, ran.stderr)
    # a document of it is refused (a found helper: a timesheet PDF read "No billable sessions" of such a
    # month); one of another client's or project's work is not held up by it
    for args in (["report", "timesheet", "--all", "-o", str(tmp_path / "t.csv")],
                 ["report", "timesheet", "--all", "-o", str(tmp_path / "t.pdf")],
                 ["report", "invoice", "--all", "--skip-unpriced", "-o", str(tmp_path / "i.pdf")]):
        ran = run(*args, vault=vault, check=False)
        assert ran.returncode == 1 and ("error: 1 session file of this report cannot be read, so it would be short "
                                        "by it: projects/web/sessions/session-s1.md: durationMinutes: 121") in \
            " ".join(ran.stderr.split()), (args, ran.stderr)
        assert not any(tmp_path.glob("[ti].*")), args
    run("session", "start", "o1", "--project", "other", "--start-time", "2026-03-04T09:00:00Z", vault=vault)
    run("session", "end", "o1", "--project", "other", "--until", "2026-03-04T10:00:00Z", vault=vault)
    run("report", "timesheet", "--project", "other", "-o", str(tmp_path / "other.csv"), vault=vault)
    path.write_text(path.read_text(encoding="utf-8").replace("client: null\n", "client: Globex\n"), encoding="utf-8")
    run("report", "timesheet", "--all", "--client", "internal", "-o", str(tmp_path / "internal.csv"), vault=vault)
    path.write_text(path.read_text(encoding="utf-8").replace("client: Globex\n", "client: null\n"), encoding="utf-8")
    as_json = json.loads(run("--json", "activity", "--all", vault=vault).stdout)
    assert as_json["totalDurationMinutes"] == 120  # s2 and o1: s1 left out
    # and the digest lists it (a helper: the digest, its JSON and the dashboard said nothing)
    [item] = [i for i in json.loads(run("--json", "digest", vault=vault).stdout)["items"]
              if i["kind"] == "session_unreadable"]
    assert (item["id"], item["lane"], item["project"]) == ("session_unreadable:s1", "waiting on you", "web")
    assert item["why"].startswith("projects/web/sessions/session-s1.md cannot be read, so reports leave it out and a "
                                  "timesheet or invoice of it is refused: durationMinutes: 121 is more than")
    assert [line.split(": ")[0] for line in as_json["unreadableSessionFiles"]] == ["projects/web/sessions/session-s1.md"]
    path.write_text(path.read_text(encoding="utf-8").replace("durationMinutes: 121", "durationMinutes: 120"),
                    encoding="utf-8")
    mended = run("--json", "activity", "--all", vault=vault)
    assert "unreadableSessionFiles" not in json.loads(mended.stdout) and "cannot be read" not in mended.stderr
    assert not [i for i in json.loads(run("--json", "digest", vault=vault).stdout)["items"]
                if i["kind"] == "session_unreadable"]


def test_a_huge_file_named_like_a_record_is_refused_from_its_size_not_read(tmp_path):
    """Found by an attacker: a 1.5 GB (sparse) file named like a session record was read whole by
    every report that said it could not be used: 3.8 s and 3.1 GB of memory per ``memo activity``.
    It is refused from its size, and said."""
    import resource

    from tests.inprocess import memo as run

    vault = tmp_path / "v"
    run("session", "start", "s1", "--project", "web", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    run("session", "end", "s1", "--project", "web", "--until", "2026-03-02T10:00:00Z", vault=vault)
    big = vault / "projects/web/sessions/session-big.md"
    with big.open("wb") as handle:
        handle.truncate(1_500_000_000)  # sparse: no disk used
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ran = run("--json", "activity", "--all", vault=vault)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert json.loads(ran.stdout)["unreadableSessionFiles"] == [
        "projects/web/sessions/session-big.md: 1500000000 bytes: larger than any record (16777216 bytes at most)"]
    assert grown_mb < 500, grown_mb  # never read


def test_a_further_vaults_session_file_that_cannot_be_read_holds_up_a_document_across_vaults(tmp_path):
    """Found by an attacker: a report across vaults (config ``vaults``) billed the further vault's
    sessions but looked for unreadable files in this vault only — an invoice was issued short by
    a further vault's broken session, and nothing was said anywhere."""
    from tests.inprocess import memo as run

    here, there, config = tmp_path / "here", tmp_path / "there", tmp_path / "config.toml"
    for vault, sid in ((here, "h1"), (there, "t1"), (there, "t2")):
        run("session", "start", sid, "--project", "web", "--client", "Acme", "--start-time", "2026-03-02T09:00:00Z",
            vault=vault)
        run("session", "end", sid, "--project", "web", "--until", "2026-03-02T10:00:00Z", vault=vault)
    config.write_text(f'vaults = ["{there}"]\n', encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    broken = there / "projects/web/sessions/session-t2.md"
    broken.write_text(broken.read_text(encoding="utf-8").replace("durationMinutes: 60", "durationMinutes: -5"),
                      encoding="utf-8")
    # edited in place, its own index not caught up yet: its row still billed the old minutes, without a word (an
    # attacker); it is named as edited, and a document is refused, until that vault's reindex
    stale = json.loads(run("--json", "activity", "--all", vault=here, env=env).stdout)["unreadableSessionFiles"]
    assert stale == [f"{broken}: edited since its vault's index read it: memo --vault-root {there} reindex takes it in"]
    held = run("report", "timesheet", "--all", "-o", str(tmp_path / "held.csv"), vault=here, env=env, check=False)
    assert held.returncode == 1 and "edited since its vault's index read it" in held.stderr
    run("activity", "--all", vault=there)  # its own index caught up (a further vault's is only read from here)
    ran = run("report", "timesheet", "--all", "-o", str(tmp_path / "t.csv"), vault=here, env=env, check=False)
    assert ran.returncode == 1 and f"{broken}: " in ran.stderr and "cannot be read" in ran.stderr, ran.stderr
    as_json = json.loads(run("--json", "activity", "--all", vault=here, env=env).stdout)
    assert [line.split(": ")[0] for line in as_json["unreadableSessionFiles"]] == [str(broken)]
    [item] = [i for i in json.loads(run("--json", "digest", vault=here, env=env).stdout)["items"]
              if i["kind"] == "session_unreadable"]
    assert (item["id"], item["vault"]) == ("session_unreadable:t2", str(there))
    assert f"memo --vault-root {there} reindex" in item["action"]  # its own vault's index (an attacker)
    # a further vault's project its index never saw is read too; an internal session (client: null, as memo
    # writes it) holds up no client's document
    fresh = there / "projects/new/sessions/session-n1.md"
    fresh.parent.mkdir(parents=True)
    fresh.write_text("---\nid: session-n1\n---\n", encoding="utf-8")
    listed = json.loads(run("--json", "activity", "--all", vault=here, env=env).stdout)["unreadableSessionFiles"]
    assert sorted(line.split(": ")[0] for line in listed) == sorted([str(broken), str(fresh)])
    fresh.unlink()
    broken.write_text(broken.read_text(encoding="utf-8").replace("client: Acme", "client: null"), encoding="utf-8")
    run("report", "timesheet", "--all", "--client", "Acme", "-o", str(tmp_path / "acme.csv"), vault=here, env=env)
    refused = run("report", "timesheet", "--all", "--client", "internal", "-o", str(tmp_path / "int.csv"), vault=here,
                  env=env, check=False)
    assert refused.returncode == 1 and "cannot be read" in refused.stderr


def test_the_digest_sees_a_session_file_edited_in_place(tmp_path):
    """Found by an operator: a session file rewritten in place (its folder's time unchanged) was
    not seen by ``memo digest`` — no ``session_unreadable`` item, twice — until a billing report
    caught the index up. The digest catches up as billing reads do."""
    from tests.inprocess import memo as run

    vault = tmp_path / "v"
    run("session", "start", "s1", "--project", "web", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    run("session", "end", "s1", "--project", "web", "--until", "2026-03-02T10:00:00Z", vault=vault)
    assert json.loads(run("--json", "digest", vault=vault).stdout)["items"] == []
    path = vault / "projects/web/sessions/session-s1.md"
    folder = os.stat(path.parent)
    with path.open("r+", encoding="utf-8") as handle:  # in place, as an editor that rewrites the file does
        text = handle.read().replace("durationMinutes: 60", "durationMinutes: 65")
        handle.seek(0)
        handle.write(text)
        handle.truncate()
    os.utime(path.parent, ns=(folder.st_atime_ns, folder.st_mtime_ns))
    items = json.loads(run("--json", "digest", vault=vault).stdout)["items"]
    assert [i["id"] for i in items] == ["session_unreadable:s1"], items


def test_showing_a_session_whose_file_cannot_be_read_names_the_file_and_the_line(tmp_path):
    """Found by a new user: ``memo session show`` of a session whose record a hand edit tore
    printed its turns under no header (or "Record not found" when it had none). It names the
    file, the line and the problem; the MCP tool answers alike."""
    vault = _vault(tmp_path)
    path = vault / "projects" / "web" / "sessions" / "session-s-web.md"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("status:"))
    lines[at] = "status: [completed\n"
    path.write_text("".join(lines), encoding="utf-8")
    said = (f"Cannot parse projects/web/sessions/session-s-web.md: broken frontmatter at line {at + 2} (did not find "
            f"expected ',' or ']', while parsing a flow sequence from line {at + 1})")
    shown = memo("session", "show", "s-web", vault=vault, check=False)
    assert shown.returncode == 1 and said in shown.stderr, shown.stderr
    assert "web turn" not in shown.stdout
    as_json = memo("--json", "session", "show", "s-web", "--project", "web", vault=vault, check=False)
    assert json.loads(as_json.stderr.splitlines()[-1])["errorType"] == "CorruptRecordError"
    from tests.inprocess import tool_calls

    [(failed, text)] = tool_calls(vault, [{"action": "session", "sessionId": "s-web"}])
    assert failed and said in text, text
    assert memo("session", "show", "s-api", vault=vault).returncode == 0  # the others read as before
