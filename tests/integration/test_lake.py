"""The team's Iceberg tables (SPEC §10): ``memo export iceberg`` from several vaults into one SQL
catalog (SQLite; a real PostgreSQL server; a warehouse on an S3-compatible server on loopback),
incremental and idempotent, with vault and machine identity; ``memo activity --lake`` and
``open_lake`` read them."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

from tests.inprocess import memo

CLAUDE = "claude-code-jsonl/moredip-session-share/samples/claude-code-projects"


def _config(folder: Path, catalog: str, warehouse: str, extra: str = "") -> Path:
    config = folder / "config.toml"
    config.write_text(f'timezone = "UTC"\n\n[lake]\ncatalog = "{catalog}"\nwarehouse = "{warehouse}"\n{extra}'
                      '\n[clients."Acme Corp"]\nhourlyRate = "120.00"\ncurrency = "EUR"\nroundingMinutes = 15\n',
                      encoding="utf-8")
    return config


def _team(tmp_path: Path, realdata: Path, catalog: str, warehouse: str, extra: str = "") -> dict:
    """Two people's vaults: Ann's hand-recorded sessions for Acme Corp (15-minute steps), Bob's
    import of a real Claude Code transcript (token counts: an AI cost)."""
    config = _config(tmp_path, catalog, warehouse, extra)
    env = {"MEMO_CONFIG": str(config), "HOME": str(tmp_path)}
    ann, bob = tmp_path / "ann", tmp_path / "bob"
    for sid, start, end in (("a1", "2026-06-02T09:00:00Z", "2026-06-02T09:50:00Z"),
                            ("a2", "2026-06-03T14:00:00Z", "2026-06-03T15:05:00Z")):
        memo("session", "start", sid, "--project", "web", "--client", "Acme Corp", "--start-time", start,
             vault=ann, env=env)
        memo("session", "end", sid, "--project", "web", "--until", end, vault=ann, env=env)
    memo("prompt", "record", "--body", "tidy the cart", "--project", "web", "--session-id", "a1", "--created",
         "2026-06-02T09:10:00Z", vault=ann, env=env)
    source = realdata / CLAUDE / "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    memo("import", "claude-code", str(source), "--project", "tracker", vault=bob, env=env)
    return {"env": env, "ann": ann, "bob": bob, "config": config}


def _issue_june(team) -> dict:
    """Ann's June invoice to Acme Corp (the issuer and the client's address set in the config)."""
    from .test_issued_invoices import ISSUER

    text = team["config"].read_text(encoding="utf-8").replace('timezone = "UTC"\n', "")
    team["config"].write_text(ISSUER.replace('"Europe/Berlin"', '"UTC"') + text.replace(
        '[clients."Acme Corp"]\n', '[clients."Acme Corp"]\naddress = ["1 rue de la Paix"]\npostcode = "75002"\n'
        'city = "Paris"\ncountry = "FR"\nvatId = "FR40303265045"\ntaxRate = "20"\n'), encoding="utf-8")
    return json.loads(run(team, "ann", "--json", "invoice", "issue", "--all", "--client", "Acme Corp", "--since",
                          "2026-06-01", "--until", "2026-06-30").stdout)


def run(team, vault, *args, check=True):
    return memo(*args, vault=team[vault], env=team["env"], check=check)


def activity(team, vault, *args) -> dict:
    return json.loads(run(team, vault, "--json", "activity", *args).stdout)


def export(team, vault, *args) -> dict:
    return json.loads(run(team, vault, "--json", "export", "iceberg", *args).stdout)


def _snapshots(catalog_url: str, warehouse: str, table: str) -> int:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("memo", uri=catalog_url, warehouse=warehouse)
    return len(catalog.load_table(f"memo.{table}").snapshots())


def _lake_equals_the_sum(team) -> tuple[dict, dict, dict]:
    ann, bob, lake = activity(team, "ann", "--all"), activity(team, "bob", "--all"), activity(team, "ann", "--lake")
    assert lake["totalDurationMinutes"] == ann["totalDurationMinutes"] + bob["totalDurationMinutes"]
    assert lake["byProject"]["web"]["durationMinutes"] == ann["byProject"]["web"]["durationMinutes"]
    assert lake["byProject"]["tracker"] == bob["byProject"]["tracker"]
    assert lake["totalPrompts"] == ann["totalPrompts"] + bob["totalPrompts"]
    assert Decimal(lake["totalCostUsd"]) == Decimal(ann["totalCostUsd"]) + Decimal(bob["totalCostUsd"])
    assert {(s["project"], s["id"]): (s["billedMinutes"], s["costUsd"], s["tokens"]) for s in lake["sessions"]} == {
        (s["project"], s["id"]): (s["billedMinutes"], s["costUsd"], s["tokens"])
        for s in ann["sessions"] + bob["sessions"]}
    return ann, bob, lake


def test_two_vaults_export_into_one_lake_incrementally_and_activity_reads_them_once(tmp_path, realdata):
    catalog = f"sqlite:///{tmp_path / 'lake' / 'catalog.db'}"
    (tmp_path / "lake").mkdir()
    warehouse = str(tmp_path / "lake" / "warehouse")
    team = _team(tmp_path, realdata, catalog, warehouse)
    first = export(team, "ann")
    assert first["changed"] and first["tables"]["sessions"] == {"rows": 2, "written": 2, "deleted": 0}
    assert first["tables"]["prompts"]["written"] == 1
    bob = export(team, "bob")
    assert bob["vaultId"] != first["vaultId"] and bob["tables"]["sessions"]["written"] >= 1
    ann, _, lake = _lake_equals_the_sum(team)
    # Ann's 50 and 65 minutes bill 60 and 75 (15-minute steps): her vault's rules travel with the rows
    assert [s["billedMinutes"] for s in ann["sessions"]] == [60, 75]
    assert lake["byClient"]["Acme Corp"]["durationMinutes"] == 135
    assert Decimal(lake["totalCostUsd"]) > 0
    assert sorted(lake["vaults"]) == sorted(f"{e['vaultId']}@{socket.gethostname()}" for e in (first, bob))

    # nothing changed: nothing written, no snapshot
    url = f"sqlite:///{tmp_path / 'lake' / 'catalog.db'}"
    before = {t: _snapshots(url, f"file://{warehouse}", t) for t in ("sessions", "prompts")}
    again = run(team, "ann", "export", "iceberg")
    assert again.stdout.startswith("unchanged:"), again.stdout
    assert {t: _snapshots(url, f"file://{warehouse}", t) for t in ("sessions", "prompts")} == before

    # one session corrected: that row alone is written, and the lake bills it as corrected
    run(team, "ann", "session", "edit", "a2", "--project", "web", "--minutes", "100")
    changed = export(team, "ann")
    assert changed["tables"]["sessions"] == {"rows": 2, "written": 1, "deleted": 0}
    assert changed["tables"]["prompts"]["written"] == 0
    _, _, lake = _lake_equals_the_sum(team)
    assert lake["byClient"]["Acme Corp"]["durationMinutes"] == 60 + 105

    # a project renamed: its rows under the old name are deleted, the new ones written
    run(team, "ann", "project", "rename", "web", "shop")
    moved = export(team, "ann")
    assert moved["tables"]["sessions"] == {"rows": 2, "written": 2, "deleted": 2}
    lake = activity(team, "ann", "--lake")
    assert "web" not in lake["byProject"] and lake["byProject"]["shop"]["durationMinutes"] == 165
    misspelt = run(team, "ann", "activity", "--lake", "--project", "shopp", check=False)
    assert misspelt.returncode == 1 and "Invalid project: no vault of the lake holds anything of project 'shopp' " \
        "(projects: shop, tracker)" in misspelt.stderr, misspelt.stderr


def test_a_record_two_vaults_export_is_read_once(tmp_path, realdata):
    """A laptop's vault and the team daemon's, which holds the laptop's pushes, both export: the
    lake counts each session once (the row exported last)."""
    (tmp_path / "lake").mkdir()
    team = _team(tmp_path, realdata, str(tmp_path / "lake" / "c.db"), str(tmp_path / "lake" / "w"))
    export(team, "ann")
    daemon = tmp_path / "daemon"
    shutil.copytree(team["ann"], daemon, ignore=shutil.ignore_patterns("daemon-id"))  # another vault, same records
    team["daemon"] = daemon
    assert export(team, "daemon")["vaultId"] != export(team, "ann")["vaultId"]
    assert activity(team, "ann", "--lake")["totalDurationMinutes"] == activity(team, "ann", "--all")[
        "totalDurationMinutes"] == 135


def test_invoices_and_the_analyst_api_read_the_lake(tmp_path, realdata, monkeypatch):
    import memo_analytics as memo_api

    (tmp_path / "lake").mkdir()
    team = _team(tmp_path, realdata, str(tmp_path / "lake" / "c.db"), str(tmp_path / "lake" / "w"))
    issued = _issue_june(team)
    export(team, "ann")
    export(team, "bob")
    monkeypatch.setenv("MEMO_CONFIG", str(team["config"]))
    lake = memo_api.open_lake()
    invoices = lake.invoices()
    assert invoices.select("number", "kind", "status", "client", "currency").rows() == [
        (issued["number"], "invoice", "issued", "Acme Corp", "EUR")]
    assert invoices["gross"][0] == Decimal(issued["gross"]) and str(invoices["issued"].dtype) == "Date"
    sessions = lake.sessions()
    assert sorted(sessions.filter(sessions["project"] == "web")["invoice"].to_list()) == [issued["number"]] * 2
    assert set(sessions["vault_id"].unique()) == {export(team, "ann")["vaultId"], export(team, "bob")["vaultId"]}
    assert str(sessions["exported_at"].dtype) == "Datetime(time_unit='us', time_zone='UTC')"
    assert lake.activity().wire()["totalDurationMinutes"] == activity(team, "ann", "--lake")["totalDurationMinutes"]
    assert "body" in lake.prompts().columns and lake.deliverables().height == 0


def test_a_lake_without_settings_or_in_a_repository_is_refused_naming_the_field(tmp_path, realdata):
    (tmp_path / "e").mkdir()
    empty = _team(tmp_path / "e", realdata, str(tmp_path / "c0.db"), str(tmp_path / "w0"))  # nothing exported
    # found by an analyst: a read of a misspelt catalog made the file and answered 0 hours
    said = run(empty, "ann", "activity", "--lake", check=False)
    assert said.returncode == 1 and not (tmp_path / "c0.db").exists()
    assert f"Invalid lake.catalog: {tmp_path / 'c0.db'} does not exist: no vault was exported into that lake " \
           "(memo export iceberg makes it)" in said.stderr
    from memo_analytics import open_lake
    from memo_analytics.domain.errors import InvalidFieldError

    with pytest.raises(InvalidFieldError, match="does not exist"):
        open_lake(str(tmp_path / "c0.db"), str(tmp_path / "w0")).activity()
    assert not (tmp_path / "c0.db").exists()
    team = _team(tmp_path, realdata, "", "")
    ran = run(team, "ann", "export", "iceberg", check=False)
    assert ran.returncode == 1 and "Invalid lake.catalog: no catalog" in ran.stderr, ran.stderr
    ran = run(team, "ann", "activity", "--lake", check=False)
    assert ran.returncode == 1 and "Invalid lake.catalog" in ran.stderr
    repo = tmp_path / "product"
    (repo / ".git").mkdir(parents=True)
    ran = run(team, "ann", "export", "iceberg", "--catalog", str(tmp_path / "c.db"), "--warehouse",
              str(repo / "lake"), check=False)
    assert ran.returncode == 1 and "Invalid lake.warehouse:" in ran.stderr and "git repository" in ran.stderr
    for catalog in (str(team["ann"] / ".memo" / "index.sqlite"), str(repo / "lake.db")):  # wiped by a reindex
        ran = run(team, "ann", "export", "iceberg", "--catalog", catalog, "--warehouse", str(tmp_path / "w"),
                  check=False)
        assert ran.returncode == 1 and "Invalid lake.catalog:" in ran.stderr and (
            "overlap" in ran.stderr or "git repository" in ran.stderr), ran.stderr
    said = run(team, "ann", "export", "iceberg", "--catalog", f"sqlite:///{tmp_path / 'c.db'}?pw=Q5ecret",
               "--warehouse", str(tmp_path / "w"))
    assert "Q5ecret" not in said.stdout + said.stderr
    ran = run(team, "ann", "export", "iceberg", "--catalog", "mysql://x/y", "--warehouse", str(tmp_path / "w"),
              check=False)
    assert ran.returncode == 1 and "Invalid lake.catalog: mysql:// is not a catalog memo writes" in ran.stderr
    ran = run(team, "ann", "export", "iceberg", "--catalog", "postgresql://memo:s3cret@127.0.0.1:1/lake",
              "--warehouse", str(tmp_path / "w"), check=False)
    assert ran.returncode == 1 and "Lake catalog postgresql+psycopg2://memo:" in ran.stderr, ran.stderr
    assert "@127.0.0.1:1/lake cannot be opened: connection to server" in ran.stderr and "s3cret" not in ran.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _postgres_bin(name: str) -> str:
    found = shutil.which(name) or next((str(p) for p in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))),
                                       None)
    assert found, f"{name} not found: .ci/run installs Debian's postgresql"
    return found


@pytest.fixture
def postgres():
    """A PostgreSQL server of its own in a temporary folder, on a loopback port."""
    import tempfile

    # initdb refuses root: as root the server runs as nobody, in a folder of its own outside pytest's
    # (whose folders only root may enter)
    top = Path(tempfile.mkdtemp(prefix="memo-pg-"))
    data, port, user = top / "pg", _free_port(), {}
    if os.geteuid() == 0:
        import pwd

        nobody = pwd.getpwnam("nobody")
        data.mkdir()
        for folder in (top, data):
            os.chown(folder, nobody.pw_uid, nobody.pw_gid)
        user = {"user": nobody.pw_uid, "group": nobody.pw_gid}
    subprocess.run([_postgres_bin("initdb"), "-D", str(data), "-U", "memo", "--auth=trust", "-E", "UTF8"],
                   check=True, capture_output=True, **user)
    subprocess.run([_postgres_bin("pg_ctl"), "-D", str(data), "-o", f"-p {port} -k {data} -c listen_addresses=127.0.0.1",
                    "-l", str(data / "log"), "-w", "start"], check=True, capture_output=True, **user)
    try:
        subprocess.run([_postgres_bin("createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "memo", "lake"],
                       check=True, capture_output=True)
        yield f"postgresql://memo@127.0.0.1:{port}/lake"
    finally:
        subprocess.run([_postgres_bin("pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], capture_output=True,
                       **user)
        shutil.rmtree(top, ignore_errors=True)


def test_a_postgresql_catalog_holds_the_team_lake(tmp_path, realdata, postgres):
    (tmp_path / "lake").mkdir()
    team = _team(tmp_path, realdata, postgres, str(tmp_path / "lake" / "w"))
    # its user name masked, as a URL's lone user name is (often a token)
    assert export(team, "ann")["catalog"] == postgres.replace("postgresql://memo@", "postgresql+psycopg2://***@")
    export(team, "bob")
    _lake_equals_the_sum(team)
    assert run(team, "bob", "export", "iceberg").stdout.startswith("unchanged:")


@pytest.fixture
def s3(monkeypatch):
    """An S3-compatible server on loopback (moto's server mode) with the bucket ``lake``."""
    import boto3
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    for key, value in (("AWS_ACCESS_KEY_ID", "memo-test"), ("AWS_SECRET_ACCESS_KEY", "memo-test-secret")):
        monkeypatch.setenv(key, value)
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="lake")
    try:
        yield endpoint, client
    finally:
        server.stop()


def test_a_warehouse_on_an_s3_compatible_server(tmp_path, realdata, s3):
    endpoint, client = s3
    team = _team(tmp_path, realdata, str(tmp_path / "c.db"), "s3://lake/team",
                 extra=f's3Endpoint = "{endpoint}"\ns3Region = "us-east-1"\n')
    team["env"].update({"AWS_ACCESS_KEY_ID": "memo-test", "AWS_SECRET_ACCESS_KEY": "memo-test-secret"})
    export(team, "ann")
    export(team, "bob")
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="lake", Prefix="team/")["Contents"]]
    assert any(k.startswith("team/memo/sessions/data/") and k.endswith(".parquet") for k in keys), keys
    _lake_equals_the_sum(team)


def test_two_peoples_sessions_of_one_id_both_count_and_credit_notes_take_back(tmp_path, realdata, monkeypatch):
    """Found by a data lead: Ben's and Cai's `fix-login` of project shop, each in a vault of its own,
    were one row in the lake (Ben's hour gone); a credit note's row had positive amounts (an invoice
    and its credit note summed to twice the work); an empty table was a frame of no columns; a
    session that bills nothing had billed_minutes null where the vault's frames say 0; a relative
    lake.warehouse of the config file was read against the current folder; an s3:// warehouse
    without keys wrote a lake nothing could open again."""
    import polars as pl

    import memo_analytics as memo_api

    (tmp_path / "lake").mkdir()
    team = _team(tmp_path, realdata, "lake/c.db", "lake/w")  # relative: to the config file's folder
    monkeypatch.setenv("MEMO_CONFIG", str(team["config"]))
    monkeypatch.chdir(realdata)  # another current folder
    for vault, start, end in (("ann", "2026-06-20T09:00:00Z", "2026-06-20T10:00:00Z"),
                              ("bob", "2026-06-21T14:00:00Z", "2026-06-21T16:00:00Z")):
        run(team, vault, "session", "start", "fix-login", "--project", "shop", "--client", "Acme Corp",
            "--start-time", start)
        run(team, vault, "session", "end", "fix-login", "--project", "shop", "--until", end)
    run(team, "ann", "session", "edit", "a2", "--project", "web", "--no-billable")
    export(team, "ann")
    lake = memo_api.open_lake()  # (a lake no vault exported into yet is refused at the open)
    assert lake.invoices().columns[:3] == ["ref", "number", "kind"] and lake.invoices().height == 0
    export(team, "bob")
    assert (tmp_path / "lake" / "w" / "memo").is_dir()
    shop = activity(team, "ann", "--lake", "--project", "shop")
    assert shop["byProject"]["shop"] == {**shop["byProject"]["shop"], "durationMinutes": 180, "sessions": 2}
    sessions = lake.sessions()
    assert sessions.filter(pl.col("id") == "session-a2")["billed_minutes"].to_list() == [0]
    issued = _issue_june(team)
    run(team, "ann", "invoice", "credit", issued["number"], "--reason", "wrong rate")
    export(team, "ann")
    invoices = lake.invoices()
    assert invoices["gross"].sum() == 0 and invoices.filter(pl.col("kind") == "creditNote")["gross"][0] == \
        -Decimal(issued["gross"])
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    keyless = run(team, "ann", "export", "iceberg", "--warehouse", "s3://lake/team", check=False)
    assert keyless.returncode == 1 and "Invalid lake.warehouse: s3://lake/team is a bucket: give its keys in " \
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in keyless.stderr, keyless.stderr


def test_each_session_keeps_its_own_figures_and_a_daemons_copy_under_another_name_counts_once(tmp_path, realdata):
    """Found by a breaker and a team lead: two people's `fix-login` were two rows of the lake, but
    `activity --lake` gave each the other's hours and invoice (keyed by project and id); one
    person's two `fix-login` on two laptops (other starts) were one row, an invoiced hour gone;
    two people's turns of one id and time were one; a team daemon's copy of a laptop's session —
    kept apart under `fix-login--…`, or moved by the lead to another project — counted twice; a
    misspelt client read as 0 hours; `sqlite:///lake/c.db` in the config was read against the
    current folder."""
    import shutil

    (tmp_path / "lake").mkdir()
    team = _team(tmp_path, realdata, "sqlite:///lake/c.db", "lake/w")
    team.update(ann2=tmp_path / "ann2", daemon=tmp_path / "daemon")
    for vault, start, end, owner, body in (
            ("ann", "2026-06-20T09:00:00Z", "2026-06-20T10:00:00Z", "ann@x.example", "ann's turn"),
            ("bob", "2026-06-20T09:00:00Z", "2026-06-20T11:30:00Z", "bob@x.example", "bob's turn"),
            ("ann2", "2026-06-25T13:00:00Z", "2026-06-25T13:30:00Z", "ann@x.example", "ann's other turn")):
        run(team, vault, "session", "start", "fix-login", "--project", "shop", "--client", "Acme Corp",
            "--start-time", start, "--owner", owner)
        run(team, vault, "prompt", "record", "--session-id", "fix-login", "--project", "shop", "--body", body,
            "--created", "2026-06-20T09:10:00Z" if vault != "ann2" else "2026-06-25T13:10:00Z")
        run(team, vault, "session", "end", "fix-login", "--project", "shop", "--until", end)
    issued = _issue_june(team)  # Ann's invoice bills her fix-login (and her a1, a2)
    # the team daemon's copy of Bob's session: kept apart from Ann's of the same id, in the project the lead merged it into
    bob_file = team["bob"] / "projects" / "shop" / "sessions" / "session-fix-login.md"
    from memo_analytics.services.sync import apart_session_id

    apart = apart_session_id("fix-login", "bob@x.example")  # as a daemon names it (a dot and all: a team lead)
    copy = team["daemon"] / "projects" / "webshop" / "sessions" / f"session-{apart}.md"
    copy.parent.mkdir(parents=True)
    shutil.copy(bob_file, copy)
    copy.write_text(copy.read_text().replace("id: session-fix-login", f"id: session-{apart}")
                    .replace("sessionId: fix-login", f"sessionId: {apart}").replace("project: shop", "project: webshop"))
    run(team, "daemon", "reindex")
    other = tmp_path / "elsewhere"
    other.mkdir()
    for vault in ("ann", "bob", "ann2", "daemon"):
        memo("export", "iceberg", vault=team[vault], env=team["env"], cwd=other)
    assert (tmp_path / "lake" / "c.db").exists() and not (other / "lake").exists()
    lake = activity(team, "ann", "--lake", "--since", "2026-06-20", "--until", "2026-06-30")
    fix = sorted(s["id"] for s in lake["sessions"] if s["id"].startswith("session-fix-login"))
    # told apart, each with its own figures; Bob's once (the daemon's copy was exported last)
    assert fix == [f"session-{apart}", "session-fix-login@2026-06-20T09:00:00",
                   "session-fix-login@2026-06-25T13:00:00"], fix
    mine = [s for s in lake["sessions"] if s["owner"] == "ann@x.example"]
    assert sorted((s["startTime"][:10], s["billedMinutes"], s["invoice"]) for s in mine) == [
        ("2026-06-20", 60, issued["number"]), ("2026-06-25", 30, None)]
    [bobs] = [s for s in lake["sessions"] if s["owner"] == "bob@x.example"]
    assert (bobs["billedMinutes"], bobs["invoice"], bobs["billableHours"]) == (150, None, 2.5)
    assert lake["totalDurationMinutes"] == 60 + 150 + 30
    assert lake["totalPrompts"] == 3  # Ann's and Bob's turns of one id and time both count
    assert sum(s["billableHours"] for s in lake["sessions"]) == lake["totalBillableHours"]
    typo = run(team, "ann", "activity", "--lake", "--client", "Acme Corpp", check=False)
    assert typo.returncode == 1 and "Invalid client: no session of the lake and no [clients] entry of the config " \
        "has the client 'Acme Corpp'" in typo.stderr


def test_two_sessions_of_one_owner_begun_at_one_instant_and_one_words_turns_in_two_projects_all_count(tmp_path,
                                                                                                      realdata):
    """Found by a breaker: a session's second identity (its owner and its record's making) put two of
    one owner begun at one instant (a start given by hand is its record's time) together — client
    Beta's 2 hours gone; and "yes" said at one time in two projects was one turn."""
    (tmp_path / "lake").mkdir()
    team = _team(tmp_path, realdata, "lake/c.db", "lake/w")
    for sid, project, client, end in (("fix-a", "shop", "Acme Corp", "10:00"), ("fix-b", "web2", "Beta", "11:00")):
        run(team, "ann", "session", "start", sid, "--project", project, "--owner", "ann", "--client", client,
            "--start-time", "2026-12-01T09:00:00Z")
        run(team, "ann", "session", "end", sid, "--project", project, "--until", f"2026-12-01T{end}:00Z")
    for project in ("alpha", "beta"):
        run(team, "ann", "prompt", "record", "--project", project, "--body", "yes", "--created", "2026-12-01T10:00:00Z")
    # found by an analyst: an old SpecStory file stamps every turn alike — "continue" said twice in one
    # session at one time is two turns (the lake kept one)
    for turn in (1, 2):
        run(team, "ann", "prompt", "record", "--session-id", "fix-a", "--project", "shop", "--body", "continue",
            "--created", "2026-12-01T09:30:00Z", "--turn", str(turn))
    export(team, "ann")
    vault = activity(team, "ann", "--all", "--since", "2026-12-01", "--until", "2026-12-01")
    lake = activity(team, "ann", "--lake", "--since", "2026-12-01", "--until", "2026-12-01")
    assert (lake["totalDurationMinutes"], lake["totalPrompts"]) == (vault["totalDurationMinutes"],
                                                                    vault["totalPrompts"]) == (180, 4)
    assert activity(team, "ann", "--lake", "--project", "beta")["totalPrompts"] == 1


def test_the_lakes_report_names_the_models_it_could_not_price(tmp_path, realdata):
    """Found by an analyst: ``memo activity --lake`` gave the AI cost as complete where one model of
    the turns had no price — the vault's report names it (``unpricedModels``), the lake's said nothing."""
    (tmp_path / "lake").mkdir()
    team = _team(tmp_path, realdata, "lake/c.db", "lake/w")
    folder = tmp_path / "cc"
    folder.mkdir()
    lines = [{"type": "user", "sessionId": "c0ffee00-0000-4000-8000-000000000001", "uuid": "u-1", "cwd": "/w/labs",
              "timestamp": "2026-06-10T09:00:00.000Z", "message": {"role": "user", "content": "try the new model"}},
             {"type": "assistant", "sessionId": "c0ffee00-0000-4000-8000-000000000001", "uuid": "a-1",
              "cwd": "/w/labs", "timestamp": "2026-06-10T09:05:00.000Z",
              "message": {"role": "assistant", "id": "m1", "model": "acme-llm-9", "content": [{"type": "text",
                          "text": "done"}], "usage": {"input_tokens": 100, "output_tokens": 50}}}]
    (folder / "c0ffee00-0000-4000-8000-000000000001.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    run(team, "ann", "import", "claude-code", str(folder))
    export(team, "ann")
    vault = activity(team, "ann", "--all")
    lake = activity(team, "ann", "--lake")
    assert vault["unpricedModels"] == lake["unpricedModels"] == ["acme-llm-9"], (vault["unpricedModels"],
                                                                                 lake["unpricedModels"])
    assert "no price for acme-llm-9" in run(team, "ann", "activity", "--lake").stdout


def test_a_superseded_session_bills_0_minutes_in_the_lake_as_in_the_vaults_frame(tmp_path, realdata, monkeypatch):
    """Found by an analyst: a superseded session's ``billed_minutes`` was null in the lake, 0 in
    ``open_vault().sessions()`` (its docstring: 0 when it bills nothing) — ``== 0`` and
    ``is_null()`` picked other rows. The lake's docstrings name every column of its frames."""
    import memo_analytics as memo_api

    (tmp_path / "lake").mkdir()
    team = _team(tmp_path, realdata, str(tmp_path / "lake" / "c.db"), str(tmp_path / "lake" / "w"))
    path = team["ann"] / "projects" / "web" / "sessions" / "session-a2.md"
    path.write_text(path.read_text(encoding="utf-8").replace("status: completed", "status: superseded"),
                    encoding="utf-8")
    run(team, "ann", "reindex")
    export(team, "ann")
    monkeypatch.setenv("MEMO_CONFIG", str(team["config"]))
    sessions = memo_api.open_lake().sessions()
    assert sessions.filter(sessions["id"] == "session-a2").select("status", "billed_minutes").rows() == [("superseded", 0)], \
        sessions.select("id", "status", "billed_minutes").rows()
    vault = memo_api.open_vault(team["ann"]).sessions()
    assert vault.filter(vault["id"] == "session-a2")["billed_minutes"].to_list() == [0]
    lake = memo_api.open_lake()
    for name in ("sessions", "prompts", "deliverables", "invoices"):
        frame = getattr(lake, name)()
        told = getattr(memo_api.Lake, name).__doc__
        assert not [c for c in frame.columns if f"``{c}``" not in told], (name, frame.columns)


def test_the_team_daemons_row_of_a_session_wins_over_a_laptops_whenever_each_exported(tmp_path):
    """Found by a team lead: a session bills 15 minutes on the team daemon (the client's 15-minute
    steps in its config) and 10 on the laptop whose config has none; the laptop's export, made
    after the daemon's, changed the team's figures in the lake (`activity --lake`: 10), and the
    daemon's export again said "unchanged". The daemon's row counts, whichever exported last."""
    import shutil

    (tmp_path / "lake").mkdir()
    lake = f'\n[lake]\ncatalog = "sqlite:///{tmp_path}/lake/c.db"\nwarehouse = "{tmp_path}/lake/w"\n'
    acme = '\n[clients."Acme Corp"]\nhourlyRate = "120.00"\ncurrency = "EUR"\n'
    laptop_config, daemon_config = tmp_path / "laptop.toml", tmp_path / "daemon.toml"
    laptop_config.write_text('timezone = "UTC"\nmode = "hybrid"\n' + lake + acme
                             + '\n[hybrid]\nremoteUrl = "http://127.0.0.1:9"\n', encoding="utf-8")
    daemon_config.write_text('timezone = "UTC"\n' + lake + acme + 'roundingMinutes = 15\n', encoding="utf-8")
    laptop, daemon = tmp_path / "laptop", tmp_path / "daemon"
    on_laptop, on_daemon = {"MEMO_CONFIG": str(laptop_config)}, {"MEMO_CONFIG": str(daemon_config)}
    memo("session", "start", "s1", "--project", "shop", "--client", "Acme Corp", "--owner", "ana@x.example",
         "--start-time", "2026-06-02T09:00:00Z", vault=laptop, env=on_laptop)
    memo("session", "end", "s1", "--project", "shop", "--until", "2026-06-02T09:10:00Z", vault=laptop, env=on_laptop)
    pushed = daemon / "projects" / "shop" / "sessions" / "session-s1.md"  # as a push leaves it there
    pushed.parent.mkdir(parents=True)
    shutil.copy(laptop / "projects" / "shop" / "sessions" / "session-s1.md", pushed)
    memo("reindex", vault=daemon, env=on_daemon)

    def billed(env, where) -> int:
        [session] = json.loads(memo("--json", "activity", "--lake", vault=where, env=env).stdout)["sessions"]
        return session["billedMinutes"]

    memo("export", "iceberg", vault=daemon, env=on_daemon)
    memo("export", "iceberg", vault=laptop, env=on_laptop)  # exported last
    assert billed(on_daemon, daemon) == billed(on_laptop, laptop) == 15  # the daemon's figure, read anywhere
    frames = __import__("memo_analytics").open_lake(f"sqlite:///{tmp_path}/lake/c.db", f"{tmp_path}/lake/w")
    [row] = frames.sessions().rows(named=True)
    assert (row["billed_minutes"], row["exported_by_laptop"]) == (15, False)
    # a laptop that exported in local mode, then joined the team (found by a breaker: its row, unchanged,
    # stayed "not a laptop's" and beat the daemon's — 10 minutes, and both exports said "unchanged")
    local_text = laptop_config.read_text(encoding="utf-8")
    laptop_config.write_text(local_text.replace('mode = "hybrid"\n', "").split("\n[hybrid]")[0], encoding="utf-8")
    shutil.rmtree(tmp_path / "lake")
    (tmp_path / "lake").mkdir()
    memo("export", "iceberg", vault=daemon, env=on_daemon)
    memo("export", "iceberg", vault=laptop, env=on_laptop)  # in local mode: a vault of its own
    assert billed(on_daemon, daemon) == 10
    laptop_config.write_text(local_text, encoding="utf-8")  # joins the team
    memo("export", "iceberg", vault=laptop, env=on_laptop)
    memo("export", "iceberg", vault=daemon, env=on_daemon)
    assert billed(on_daemon, daemon) == billed(on_laptop, laptop) == 15


def test_open_lake_refuses_a_catalog_or_warehouse_that_is_not_there_at_the_open(tmp_path, realdata):
    """Found by an analyst: `open_lake` of a misspelt catalog returned a Lake (the error came at
    the first read), and one of a misspelt warehouse read the right one's rows without a word —
    its docstring said both are refused."""
    from memo_analytics import open_lake
    from memo_analytics.domain.errors import InvalidFieldError

    (tmp_path / "lake").mkdir()
    team = _team(tmp_path, realdata, f"sqlite:///{tmp_path}/lake/c.db", f"{tmp_path}/lake/w")
    export(team, "ann")
    assert open_lake(f"sqlite:///{tmp_path}/lake/c.db", f"{tmp_path}/lake/w").sessions().height == 2
    with pytest.raises(InvalidFieldError, match=r"Invalid lake.catalog: .*/lake/nope.db does not exist"):
        open_lake(f"sqlite:///{tmp_path}/lake/nope.db", f"{tmp_path}/lake/w")
    with pytest.raises(InvalidFieldError, match=r"Invalid lake.warehouse: .*/lake/ww does not exist"):
        open_lake(f"sqlite:///{tmp_path}/lake/c.db", f"{tmp_path}/lake/ww")
    (tmp_path / "lake" / "empty").mkdir()  # a folder that is there, of no lake (found by a breaker)
    with pytest.raises(InvalidFieldError, match=r"Invalid lake.warehouse: .*/lake/empty holds no memo tables"):
        open_lake(f"sqlite:///{tmp_path}/lake/c.db", f"{tmp_path}/lake/empty")
