"""The analyst API (SPEC §4): memo_analytics.open_vault → frames, the report, DuckDB; several
configured vaults for crossProject."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import polars as pl
import pytest

import memo_analytics
from memo_analytics.analytics.activity import ActivityRequest, activity_report
from memo_analytics.analytics.frames import DELIVERABLE_SCHEMA, PROMPT_SCHEMA, SESSION_SCHEMA
from memo_analytics.config import Settings
from memo_analytics.domain.errors import InvalidFieldError
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import EndSessionRequest, RecordPromptRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.services.store import VaultStore

from .test_cli import memo

UTC = timezone.utc


def work(store, sid, start, end, project="p1", client=None, prompts=1, deliverables=()):
    start_session(store, StartSessionRequest(session_id=sid, project=project, client=client, start_time=start))
    for _ in range(prompts):
        record_prompt(store, RecordPromptRequest(body=f"work on {sid}", session_id=sid, project=project,
                                                 created=start, tags=["billing"]))
    if end:
        end_session(store, EndSessionRequest(session_id=sid, until=end, deliverables=list(deliverables)))


@pytest.fixture
def vaults(tmp_path):
    """A personal vault and a team vault, with one session id in both."""
    mine = VaultStore(Settings(vault_root=tmp_path / "mine", timezone="UTC"))
    work(mine, "m1", "2026-01-05T09:00:00Z", "2026-01-05T10:30:00Z", client="Acme", prompts=2, deliverables=[
        {"type": "pr", "url": "https://github.com/o/r/pull/7", "title": "Pagination"},
        {"type": "commit", "sha": "a" * 40}])
    work(mine, "m2", "2026-01-06T23:30:00Z", "2026-01-07T00:10:00Z", project="p2", client="Globex")
    work(mine, "open", "2026-01-08T09:00:00Z", None)
    mine.close()
    team = VaultStore(Settings(vault_root=tmp_path / "team", timezone="UTC"))
    work(team, "t1", "2026-01-05T12:00:00Z", "2026-01-05T12:20:00Z", project="shared", client="acme", prompts=3)
    work(team, "m2", "2026-01-06T23:30:00Z", "2026-01-07T00:10:00Z", project="p2", client="Globex")  # synced copy
    team.close()
    return tmp_path / "mine", tmp_path / "team"


def test_frames_have_the_documented_columns_and_dtypes(vaults):
    with memo_analytics.open_vault(vaults[0]) as vault:
        sessions, prompts, deliverables = vault.sessions(), vault.prompts(), vault.deliverables()
    assert sessions.schema == pl.Schema({**SESSION_SCHEMA, "billed_minutes": pl.Int64})
    assert prompts.schema == pl.Schema(PROMPT_SCHEMA)
    assert deliverables.schema == pl.Schema(DELIVERABLE_SCHEMA)
    assert sessions.schema["start_time"] == pl.Datetime("us", "UTC")
    first = sessions.filter(pl.col("session_id") == "m1").row(0, named=True)
    assert first["start_time"] == datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    assert first["duration_minutes"] == 90 and first["client"] == "Acme" and first["vault"] == str(vaults[0])
    opened = sessions.filter(pl.col("session_id") == "open").row(0, named=True)
    assert opened["end_time"] is None and opened["duration_minutes"] is None and opened["client"] is None
    assert prompts.height == 4 and prompts["tags"].to_list()[0] == ["billing"]
    assert prompts.filter(pl.col("session_id") == "m1")["turn"].sort().to_list() == [1, 2]


def test_prompts_with_body(vaults):
    with memo_analytics.open_vault(vaults[0]) as vault:
        frame = vault.prompts(["p2"], body=True)
    assert frame.columns == [*PROMPT_SCHEMA, "body"] and frame["body"].to_list() == ["work on m2"]


def test_deliverables_one_row_per_deliverable_with_its_session(vaults):
    with memo_analytics.open_vault(vaults[0]) as vault:
        frame = vault.deliverables()
    assert frame.select("session_id", "position", "type", "url", "sha", "title", "project", "client").rows() == [
        ("m1", 0, "pr", "https://github.com/o/r/pull/7", None, "Pagination", "p1", "Acme"),
        ("m1", 1, "commit", None, "a" * 40, None, "p1", "Acme"),
    ]
    assert frame["session_start"].to_list() == [datetime(2026, 1, 5, 9, 0, tzinfo=UTC)] * 2


def test_further_vaults_are_read_with_a_vault_column_and_shared_ids_once(vaults):
    mine, team = vaults
    with memo_analytics.open_vault(mine, vaults=[team]) as vault:
        sessions = vault.sessions()
        assert vault.vaults == [mine, team]
    assert sorted(sessions["session_id"].to_list()) == ["m1", "m2", "open", "t1"]
    assert dict(sessions.select("session_id", "vault").iter_rows())["t1"] == str(team)
    assert dict(sessions.select("session_id", "vault").iter_rows())["m2"] == str(mine)  # the first vault wins
    with memo_analytics.open_vault(mine) as alone:  # a named vault reads itself only
        assert alone.sessions().height == 3


def test_activity_equals_the_report_of_every_interface(vaults, monkeypatch):
    mine, team = vaults
    config = mine.parent / "config.toml"
    config.write_text(f'vaults = ["{team}"]\ntimezone = "Europe/Berlin"\n', encoding="utf-8")
    monkeypatch.setenv("MEMO_CONFIG", str(config))
    monkeypatch.setenv("MEMO_VAULT", str(mine))
    with memo_analytics.open_vault() as vault:  # the configured vault and its further vaults
        report = vault.activity()
        assert vault.vaults == [mine, team]
        sessions_minutes = vault.sessions().filter(pl.col("duration_minutes").is_not_null())["duration_minutes"].sum()
        only_mine = vault.activity(cross_project=False)
    cli = json.loads(memo("--json", "activity", "--all", env={"MEMO_CONFIG": str(config), "MEMO_VAULT": str(mine)}).stdout)
    assert report.wire() == cli
    assert report.total_duration_minutes == 90 + 40 + 20 == sessions_minutes
    assert report.total_prompts == 2 + 1 + 1 + 3
    assert report.by_client["Acme"]["durationMinutes"] == 110
    assert report.by_day == {"2026-01-05": {"durationMinutes": 110, "billableHours": 1.83},
                             "2026-01-07": {"durationMinutes": 40, "billableHours": 0.67}}  # 00:30–01:10 Berlin
    assert only_mine.total_duration_minutes == 130
    without = json.loads(memo("--json", "activity", env={"MEMO_CONFIG": str(config), "MEMO_VAULT": str(mine)},
                              cwd=mine.parent).stdout)
    assert without["totalDurationMinutes"] == 130  # without --all: the vault itself


def test_the_mcp_action_reads_further_vaults_with_cross_project(vaults):
    from memo_analytics.actions import ACTIONS, run_action

    mine, team = vaults
    store = VaultStore(Settings(vault_root=mine, timezone="UTC", vaults=[team]))
    request = ACTIONS["activity_report"].request(cross_project=True)
    assert run_action(store, "activity_report", request) == activity_report(
        store, ActivityRequest(cross_project=True)).wire()
    assert run_action(store, "activity_report", request)["totalDurationMinutes"] == 150
    # found by a breaker: a misspelt project across every vault read answered 0 minutes, where one vault refuses it
    typo = ACTIONS["activity_report"].request(cross_project=True, project="nope")
    with pytest.raises(InvalidFieldError, match=r"^Invalid project: no vault read holds anything of project 'nope' "
                                                r"\(projects: "):
        run_action(store, "activity_report", typo)
    projects = {row[0] for row in store.conn.execute("SELECT DISTINCT project FROM records")}
    other = ACTIONS["activity_report"].request(cross_project=True, project=sorted(projects)[0])
    assert run_action(store, "activity_report", other)["totalSessions"] >= 1
    # found by a billing person: a misspelt owner across the vaults read gave an empty timesheet, no word
    with pytest.raises(InvalidFieldError, match=r"^Invalid owner: no session of the vaults read is bobb's"):
        run_action(store, "activity_report", ACTIONS["activity_report"].request(cross_project=True, owner="bobb"))
    store.close()


def test_duckdb_has_the_four_tables(vaults):
    with memo_analytics.open_vault(vaults[0], vaults=[vaults[1]]) as vault:
        db = vault.duckdb()
    try:
        tables = {row[0] for row in db.execute("SHOW TABLES").fetchall()}
        assert tables == {"prompts", "sessions", "deliverables", "usage"}
        minutes = db.execute("SELECT sum(duration_minutes) FROM sessions WHERE billable").fetchone()[0]
        assert minutes == 150
        assert db.execute("SELECT count(*) FROM prompts").fetchone()[0] == 7
        assert db.execute("SELECT typeof(start_time) FROM sessions LIMIT 1").fetchone()[0] == "TIMESTAMP WITH TIME ZONE"
        assert db.execute("SELECT count(*) FROM deliverables WHERE type = 'pr'").fetchone()[0] == 1
    finally:
        db.close()


def test_open_vault_refuses_a_folder_without_a_vault(tmp_path):
    with pytest.raises(InvalidFieldError, match=r"^Invalid path: .*nothing-here holds no vault"):
        memo_analytics.open_vault(tmp_path / "nothing-here")
    assert not (tmp_path / "nothing-here").exists()


def test_a_configured_further_vault_that_is_missing_is_named(vaults, tmp_path):
    with memo_analytics.open_vault(vaults[0], vaults=[tmp_path / "typo"]) as vault:
        with pytest.raises(InvalidFieldError, match="^Invalid vaults: .*typo holds no vault index"):
            vault.sessions()


def test_tokens_by_model_add_up_to_the_reports_cost_by_model(realdata, tmp_path):
    """Found by an analyst: the prompts frame put every token of a turn under its one ``model``,
    so a turn that opus and haiku answered gave opus 33,008 cache reads that ``memo activity``
    gives haiku. ``vault.usage()`` (and DuckDB's ``usage``) has a row per turn and model; a
    model's tokens add up to ``costByModel``'s on real Claude Code transcripts."""
    from memo_analytics.analytics.frames import USAGE_SCHEMA

    folder = realdata / "claude-code-jsonl" / "moredip-session-share" / "samples" / "claude-code-projects"
    memo("import", "claude-code", str(folder), vault=tmp_path / "v")
    with memo_analytics.open_vault(tmp_path / "v") as vault:
        usage = vault.usage()
        report = vault.activity(since="2000-01-01", until="2100-01-01")
        with vault.duckdb() as con:
            in_duckdb = dict(con.execute("SELECT model, sum(cache_read_tokens) FROM usage GROUP BY model").fetchall())
        prompts = vault.prompts()
    assert usage.schema == pl.Schema(USAGE_SCHEMA)
    columns = {"input": "input_tokens", "cacheRead": "cache_read_tokens", "cacheWrite": "cache_write_tokens",
               "output": "output_tokens"}
    by_model = {model: {key: int(usage.filter(pl.col("model") == model)[column].sum() or 0)
                        for key, column in columns.items()} for model in usage["model"].unique().to_list()}
    assert by_model == {model: {key: totals["tokens"][key] for key in columns}
                        for model, totals in report.cost_by_model.items()}
    assert len(by_model) >= 2 and in_duckdb == {m: t["cacheRead"] for m, t in by_model.items()}
    split = usage.group_by("id").len().filter(pl.col("len") > 1)["id"].to_list()
    assert split  # a turn two models answered: a row each
    # the prompts frame's one row per turn holds the same tokens in all
    assert int(prompts["cache_read_tokens"].sum()) == int(usage["cache_read_tokens"].sum())


def test_a_notebooks_vault_parameter_takes_a_home_path_and_a_typo_is_an_error(tmp_path, monkeypatch):
    """Found by an analyst: ``VAULT = '~/realv'`` and a misspelled path both ran the notebook on
    the built-in sample without a word (its 16.34 h passed for the analyst's own numbers)."""
    home = tmp_path / "home"
    (home / "realv" / "projects").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MEMO_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("MEMO_VAULT", str(tmp_path / "no-vault"))
    assert memo_analytics.notebook_vault("~/realv", tmp_path / "scratch") == ((home / "realv").resolve(), False)
    with pytest.raises(InvalidFieldError, match=r"Invalid VAULT: .*/home/relav holds no vault"):
        memo_analytics.notebook_vault("~/relav", tmp_path / "scratch")
    (home / ".memo").mkdir()  # the config's folder: `~` for `~/.memo/vault` is no vault either
    with pytest.raises(InvalidFieldError, match=r"Invalid VAULT: .*/home holds no vault"):
        memo_analytics.notebook_vault("~", tmp_path / "scratch")
    # found by a later analyst: `MEMO_VAULT=<typo> jupyter execute …` (the README's way) ran on the sample
    with pytest.raises(InvalidFieldError, match=r"Invalid VAULT: .*/no-vault \(MEMO_VAULT or the config's vaultRoot\) "
                                                r"holds no vault"):
        memo_analytics.notebook_vault(None, tmp_path / "scratch")
    assert not (tmp_path / "scratch").exists()  # no sample was built
    monkeypatch.delenv("MEMO_VAULT")
    root, on_sample = memo_analytics.notebook_vault(None, tmp_path / "scratch")  # nothing configured: the sample
    assert (root, on_sample) == (tmp_path / "scratch" / "vault", True)
    assert {"notebook_vault", "open_vault", "sample_vault"} <= set(dir(memo_analytics))


def test_the_sessions_frame_and_duckdb_bill_the_minutes_the_reports_bill(tmp_path, monkeypatch):
    """Found by an analyst: no frame, DuckDB table or export carried what a session bills — a sum
    of ``duration_minutes`` was 29 % off ``memo activity`` (a client's rounding, parallel
    sessions). ``billed_minutes`` is each session's ``billedMinutes``."""
    config = tmp_path / "config.toml"
    config.write_text('[clients."Acme"]\nhourlyRate = "100"\ncurrency = "EUR"\nminimumMinutes = 30\n', encoding="utf-8")
    monkeypatch.setenv("MEMO_CONFIG", str(config))
    root = tmp_path / "v"
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    for sid, start, end in (("a", "09:00", "10:00"), ("b", "09:30", "10:30"), ("c", "12:00", "12:04")):
        start_session(store, StartSessionRequest(session_id=sid, project="web", client="Acme", owner="ana",
                                                 start_time=f"2026-01-05T{start}:00Z"))
        end_session(store, EndSessionRequest(session_id=sid, project="web", until=f"2026-01-05T{end}:00Z"))
    start_session(store, StartSessionRequest(session_id="open", project="web", start_time="2026-01-06T09:00:00Z"))
    store.close()
    with memo_analytics.open_vault(root) as vault:
        frame = vault.sessions()
        report = vault.activity()
        db = vault.duckdb()
        [(in_sql,)] = db.sql("SELECT sum(billed_minutes) FROM sessions").fetchall()
        db.close()
    billed = dict(zip(frame["session_id"].to_list(), frame["billed_minutes"].to_list()))
    assert billed == {"a": 60, "b": 30, "c": 30, "open": 0}  # b: its half beside a; c: raised to 30
    assert {s["sessionId"]: s["billedMinutes"] for s in report.sessions} == {"a": 60, "b": 30, "c": 30, "open": None}
    assert frame["billed_minutes"].sum() == in_sql == report.total_duration_minutes == 120
    assert frame["duration_minutes"].sum() == 124  # what a sum of durations says


def test_an_unknown_client_is_refused_by_the_api_as_by_the_cli(tmp_path, monkeypatch):
    """Found by an analyst: ``vault.activity(client='Nobody')`` gave an empty report (0 hours, no
    error) where ``memo activity --client Nobody`` refuses the name: a typo in a notebook read as a
    client without work. Both refuse it, naming the clients known; a known client without work in
    the period is no error. And a ``MEMO_CONFIG`` naming a missing file is said (CLI and API)."""
    from tests.inprocess import memo as run

    monkeypatch.delenv("MEMO_CONFIG", raising=False)
    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    work(store, "s1", datetime(2026, 3, 2, 9, tzinfo=timezone.utc), datetime(2026, 3, 2, 10, tzinfo=timezone.utc),
         client="Acme Corp")
    store.close()
    vault = memo_analytics.open_vault(tmp_path / "v", timezone="UTC")
    with pytest.raises(InvalidFieldError, match="no session and no \\[clients\\] entry of the config has the client "
                                                "'Nobody'.*clients known: Acme Corp"):
        vault.activity(client="Nobody")
    assert vault.activity(client="acme corp", since="2026-04-01").total_duration_minutes == 0
    missing = tmp_path / "gone.toml"
    monkeypatch.setenv("MEMO_CONFIG", str(missing))
    with pytest.warns(UserWarning, match=f"MEMO_CONFIG names {missing}, which does not exist"):
        memo_analytics.open_vault(tmp_path / "v")
    ran = run("activity", "--all", vault=tmp_path / "v", env={"MEMO_CONFIG": str(missing)})
    assert ran.stderr.count(f"note: MEMO_CONFIG names {missing}, which does not exist") == 1


def test_an_unknown_project_is_refused_and_one_given_as_a_string_is_that_project(tmp_path):
    """Found by an analyst: ``vault.activity(projects=['specstory-clj'])`` (a typo) and
    ``vault.sessions(projects='p1')`` (a string, each letter taken for a project) gave 0 rows
    without a word, as ``memo activity --project specstory-clj`` did, where a misspelt client is
    refused. A project the vault holds nothing of is refused, naming the projects it holds; one
    given as a string is that project."""
    from tests.inprocess import memo as run

    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    work(store, "s1", datetime(2026, 3, 2, 9, tzinfo=timezone.utc), datetime(2026, 3, 2, 10, tzinfo=timezone.utc))
    store.close()
    vault = memo_analytics.open_vault(tmp_path / "v", timezone="UTC")
    for call in (lambda: vault.activity(projects=["p2"]), lambda: vault.sessions(projects=["p1", "p2"]),
                 lambda: vault.prompts(projects="p2"), lambda: vault.usage(projects=["p2"])):
        with pytest.raises(InvalidFieldError, match="^Invalid project: the vault holds nothing of project 'p2' "
                                                    "\\(projects: p1\\)$"):
            call()
    with pytest.raises(InvalidFieldError, match="^Invalid projects: 123 is no list of project ids"):
        vault.activity(projects=123)
    assert vault.sessions(projects="p1").height == 1 and vault.prompts(projects="p1").height == 1
    assert vault.activity(projects="p1").total_duration_minutes == 60
    assert vault.activity(projects=["p1"], since="2026-04-01").total_duration_minutes == 0  # known, no work: no error
    ran = run("activity", "--project", "p2", vault=tmp_path / "v", check=False)
    assert (ran.returncode, ran.stderr) == (1, "error: Invalid project: the vault holds nothing of project 'p2' "
                                               "(projects: p1)\n")


def test_an_open_vault_reads_the_index_rebuilt_under_it(tmp_path):
    """Found by an analyst: the index deleted under a notebook's open vault (and rebuilt by the
    next ``memo`` command) left ``sessions()`` and ``prompts()`` answering from the old file —
    one ``activity()`` gave fresh minutes beside a stale prompt count. Each read sees the files
    as they are now."""
    from tests.inprocess import memo as run

    root = tmp_path / "v"
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    work(store, "s1", datetime(2026, 3, 2, 9, tzinfo=UTC), datetime(2026, 3, 2, 10, tzinfo=UTC))
    store.close()
    vault = memo_analytics.open_vault(root, timezone="UTC")
    assert (vault.prompts().height, int(vault.sessions()["billed_minutes"].sum())) == (1, 60)
    for index_file in root.glob(".memo/index.sqlite*"):
        index_file.unlink()
    run("session", "start", "x1", "--project", "p1", "--start-time", "2026-03-03T09:00:00Z", vault=root)
    run("prompt", "record", "--session-id", "x1", "--project", "p1", "--created", "2026-03-03T09:01:00Z",
        "--body", "one more", vault=root)
    run("session", "end", "x1", "--project", "p1", "--until", "2026-03-03T10:00:00Z", vault=root)
    assert int(vault.sessions()["billed_minutes"].sum()) == 120
    assert vault.prompts().height == 2
    report = vault.activity()
    assert (report.total_duration_minutes, report.total_prompts) == (120, 2)
    assert vault.duckdb().sql("SELECT count(*) FROM prompts").fetchall() == [(2,)]
    vault.close()


def test_rule_candidates_refuse_a_misspelt_project_and_a_confidence_in_percent(tmp_path):
    """Found by an analyst: ``rule_candidates(project='acme-wbe')`` gave 0 rows without a word
    (the frames refuse it), ``min_confidence=80`` raised pydantic's ValidationError (no
    MemoError), and ``activity(client='')`` was every client (``memo activity --client ''`` is
    refused)."""
    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    work(store, "s1", datetime(2026, 3, 2, 9, tzinfo=UTC), datetime(2026, 3, 2, 10, tzinfo=UTC))
    store.close()
    vault = memo_analytics.open_vault(tmp_path / "v", timezone="UTC")
    with pytest.raises(InvalidFieldError, match="^Invalid project: the vault holds nothing of project 'p9'"):
        vault.rule_candidates(project="p9")
    assert vault.rule_candidates(project="p1").height == 0  # known, nothing said twice: no error
    for wrong in (80, -0.1, "0.8", True):
        with pytest.raises(InvalidFieldError, match="^Invalid min_confidence: .* is not a confidence from 0 to 1"):
            vault.rule_candidates(min_confidence=wrong)
    with pytest.raises(InvalidFieldError, match="^Invalid client: is empty"):
        vault.activity(client="  ")
    vault.close()


def test_a_misspelt_client_or_project_is_refused_across_further_vaults_too(vaults):
    """Found by an analyst: with further vaults a misspelt client or project read as 0 hours
    (the check ran on a single vault alone); a name only a further vault holds is no typo."""
    with memo_analytics.open_vault(vaults[0], vaults=[vaults[1]]) as vault:
        with pytest.raises(InvalidFieldError, match=r"^Invalid client: .*'Acme Crop'.*clients known: Acme, Globex"):
            vault.activity(client="Acme Crop")
        with pytest.raises(InvalidFieldError, match=r"^Invalid project: no vault read holds anything of project 'p9'"):
            vault.sessions(["p9"])
        with pytest.raises(InvalidFieldError, match=r"^Invalid projects: is empty"):
            vault.activity(projects=[])
        assert vault.sessions(["shared"])["session_id"].to_list() == ["t1"]  # only the team vault's
        assert vault.activity(client="acme", since="2026-01-05", until="2026-01-05").total_duration_minutes == 110
        # a client only the team vault's sessions have is known; read from the primary vault alone it is a typo
        assert vault.activity(client="Acme", projects=["shared"]).total_duration_minutes == 20
    with memo_analytics.open_vault(vaults[0], vaults=[vaults[1]]) as vault:
        with pytest.raises(InvalidFieldError, match=r"^Invalid project: the vault holds nothing of project 'shared'"):
            vault.activity(projects=["shared"], cross_project=False)


def test_the_api_refuses_what_the_cli_refuses_naming_the_field(vaults):
    """Found by an analyst: ``tz=""`` was taken for the default, ``since=2026`` was refused as
    ``'2026'`` (a valid year), a list for ``rule_candidates``' one project named ``projects``, and
    ``invoice("x")`` raised an AttributeError."""
    with memo_analytics.open_vault(vaults[0]) as vault:
        with pytest.raises(InvalidFieldError, match=r"^Invalid tz: is empty"):
            vault.activity(tz="")
        with pytest.raises(InvalidFieldError, match=r"^Invalid since date: 2026 \(a int, not text\)"):
            vault.activity(since=2026)
        assert vault.activity(since="2026").total_duration_minutes == 130
        with pytest.raises(InvalidFieldError, match=r"^Invalid project: \['p1'\] is no project id"):
            vault.rule_candidates(project=["p1"])
        with pytest.raises(InvalidFieldError, match=r"^Invalid report: a str is no activity report"):
            vault.invoice("x")
