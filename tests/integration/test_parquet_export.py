"""``memo export parquet DIR``: Hive-partitioned Parquet that DuckDB reads as it is, with the
same activity totals as ``activity_report`` (issue 4 point 7)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from memo_analytics.analytics.parquet import MANIFEST, export_parquet
from memo_analytics.config import Settings
from memo_analytics.domain.errors import InvalidFieldError
from memo_analytics.services.store import VaultStore

from .test_activity import session
from .test_cli import memo

CLIENT = "coalesce(nullif(trim(client), ''), 'internal')"


@pytest.fixture
def two_vaults(tmp_path):
    mine = VaultStore(Settings(vault_root=tmp_path / "mine", timezone="UTC"))
    session(mine, "a1", "2026-01-05T09:00:00Z", "2026-01-05T10:20:00Z", client="Acme", prompts=2)
    session(mine, "a2", "2026-01-31T23:30:00Z", "2026-02-01T00:35:00Z", client="acme", project="p2")
    session(mine, "g1", "2026-02-06T13:00:00Z", "2026-02-06T13:10:00Z", client="Globex", project="p2")
    session(mine, "i1", "2026-03-07T09:00:00Z", "2026-03-07T09:20:00Z")
    session(mine, "nb", "2026-03-07T10:00:00Z", "2026-03-07T15:00:00Z", client="Acme", billable=False)
    session(mine, "open", "2026-03-08T09:00:00Z", None, client="Acme")
    mine.close()
    team = VaultStore(Settings(vault_root=tmp_path / "team", timezone="UTC"))
    session(team, "t1", "2026-02-10T09:00:00Z", "2026-02-10T09:07:00Z", client="ACME", project="shared", prompts=3)
    team.close()
    config = tmp_path / "config.toml"
    config.write_text(f'vaults = ["{tmp_path / "team"}"]\n', encoding="utf-8")
    return tmp_path / "mine", {"MEMO_CONFIG": str(config), "MEMO_VAULT": str(tmp_path / "mine")}


def parquet(out: Path, table: str) -> str:
    return f"read_parquet('{out / table}/**/*.parquet', hive_partitioning = true)"


def totals_from_parquet(out: Path, since: str | None = None, client: str | None = None) -> dict:
    db = duckdb.connect()
    db.execute("SET TimeZone = 'UTC'")
    where = ["billable", "duration_minutes IS NOT NULL"]
    prompt_where = ["true"]
    params: dict = {}
    if since:
        where.append("start_time >= $since::TIMESTAMPTZ")
        prompt_where.append("created >= $since::TIMESTAMPTZ")
        params["since"] = since
    if client:
        where.append(f"lower({CLIENT}) = lower($client)")
        prompt_where.append(f"lower({CLIENT}) = lower($client)")
        params["client"] = client
    sessions = f"SELECT * FROM {parquet(out, 'sessions')} WHERE {' AND '.join(where)}"
    by_client = db.execute(f"SELECT lower({CLIENT}), sum(duration_minutes), count(*) FROM ({sessions}) "
                           "GROUP BY ALL ORDER BY 1", params).fetchall()
    by_project = db.execute(f"SELECT project, sum(duration_minutes), count(*) FROM ({sessions}) GROUP BY ALL ORDER BY 1",
                            params).fetchall()
    prompts = db.execute(f"SELECT count(*) FROM {parquet(out, 'prompts')} WHERE {' AND '.join(prompt_where)}",
                         params).fetchone()[0]
    # the report's rounding policy: each client's hours rounded half up from its minutes, the total their sum
    cents = sum((10 * int(m) + 3) // 6 for _, m, _ in by_client)
    return {"totalDurationMinutes": sum(int(m) for _, m, _ in by_client), "totalBillableHours": cents / 100,
            "byClient": {c: (int(m), n) for c, m, n in by_client},
            "byProject": {p: (int(m), n) for p, m, n in by_project}, "totalPrompts": prompts}


def totals_from_report(report: dict) -> dict:
    return {"totalDurationMinutes": report["totalDurationMinutes"], "totalBillableHours": report["totalBillableHours"],
            "byClient": {c.lower(): (b["durationMinutes"], b["sessions"]) for c, b in report["byClient"].items()},
            "byProject": {p: (b["durationMinutes"], b["sessions"]) for p, b in report["byProject"].items()},
            "totalPrompts": report["totalPrompts"]}


def test_duckdb_reads_the_export_back_with_the_activity_totals(two_vaults, tmp_path):
    vault, env = two_vaults
    out = tmp_path / "lake"
    result = json.loads(memo("--json", "export", "parquet", str(out), env=env).stdout)
    assert result["tables"] == {"prompts": {"rows": 2 + 1 + 1 + 1 + 1 + 1 + 3, "files": 5},
                                "sessions": {"rows": 7, "files": 5}, "deliverables": {"rows": 0, "files": 1}}
    # a table without rows still reads, as the README's query has it (DuckDB failed: "No files found")
    empty = duckdb.connect().execute(f"SELECT count(*), any_value(project), any_value(month) FROM read_parquet("
                                     f"'{out}/deliverables/**/*.parquet', hive_partitioning=true)").fetchone()
    assert empty == (0, None, None)
    report = json.loads(memo("--json", "activity", "--all", "--tz", "UTC", env=env).stdout)
    assert totals_from_parquet(out) == totals_from_report(report)
    assert report["totalDurationMinutes"] == 80 + 65 + 10 + 20 + 7
    filtered = json.loads(memo("--json", "activity", "--all", "--tz", "UTC", "--since", "2026-02-01",
                               "--client", "ACME", env=env).stdout)
    assert totals_from_parquet(out, since="2026-02-01T00:00:00Z", client="acme") == totals_from_report(filtered)
    assert filtered["totalDurationMinutes"] == 7


def test_the_layout_is_hive_partitioned_by_project_and_utc_month(two_vaults, tmp_path):
    vault, env = two_vaults
    out = tmp_path / "lake"
    memo("export", "parquet", str(out), env=env)
    files = sorted(str(p.relative_to(out / "sessions")) for p in (out / "sessions").rglob("*.parquet"))
    assert files == ["project=p1/month=2026-01/part-0.parquet", "project=p1/month=2026-03/part-0.parquet",
                     "project=p2/month=2026-01/part-0.parquet", "project=p2/month=2026-02/part-0.parquet",
                     "project=shared/month=2026-02/part-0.parquet"]
    schema = pq.read_schema(out / "sessions" / files[0])
    assert "project" not in schema.names and "month" not in schema.names  # the paths carry them
    assert str(schema.field("start_time").type) == "timestamp[us, tz=UTC]"
    assert str(schema.field("session_id").type) == "string"
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["format"] == "memo-parquet/1" and manifest["partitioning"] == ["project", "month"]
    assert manifest["vaults"] == [str(vault), str(tmp_path / "team")]
    db = duckdb.connect()
    rows = db.execute(f"SELECT vault, session_id FROM {parquet(out, 'sessions')} WHERE project = 'shared'").fetchall()
    assert rows == [(str(tmp_path / "team"), "t1")]
    bodies = db.execute(f"SELECT body FROM {parquet(out, 'prompts')} WHERE session_id = 't1'").fetchall()
    assert bodies == [("work",)] * 3


def test_deliverables_and_a_second_export_replace_the_first_atomically(tmp_path):
    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
    from memo_analytics.services.sessions import end_session, start_session

    start_session(store, StartSessionRequest(session_id="s1", project="web", start_time="2026-04-30T22:00:00Z"))
    end_session(store, EndSessionRequest(session_id="s1", until="2026-05-01T01:00:00Z",
                                         pr="https://github.com/o/r/pull/9", deliverables=[{"type": "commit",
                                                                                            "sha": "b" * 40}]))
    out = tmp_path / "lake"
    out.mkdir()  # an empty folder is fine
    first = export_parquet(store, out, body=False)
    assert first.rows == {"prompts": 0, "sessions": 1, "deliverables": 2}
    db = duckdb.connect()
    got = db.execute(f"SELECT type, url, sha, project, month, position FROM {parquet(out, 'deliverables')} "
                     "ORDER BY position").fetchall()
    assert got == [("commit", None, "b" * 40, "web", "2026-04", 0),
                   ("pr", "https://github.com/o/r/pull/9", None, "web", "2026-04", 1)]
    assert [p.name for p in (out / "prompts").iterdir()] == ["part-0.parquet"]  # no rows, every column
    assert pq.read_table(out / "prompts" / "part-0.parquet").num_rows == 0
    assert {"project", "month", "created"} <= set(pq.read_schema(out / "prompts" / "part-0.parquet").names)
    session_id = "s2"
    start_session(store, StartSessionRequest(session_id=session_id, project="api", start_time="2026-06-01T09:00:00Z"))
    second = export_parquet(store, out, projects=["api"])
    assert second.rows["sessions"] == 1
    assert sorted(p.name for p in (out / "sessions").iterdir()) == ["project=api"]  # nothing left of the first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lake", "v"]  # no staging folder left behind
    store.close()


@pytest.mark.parametrize("where, message", [
    ("mine/exports", "is inside the vault"),
    (".", "contains the vault"),
    ("repo/exports", "is inside the git repository"),
    ("foreign", "is not empty and was not written by memo export parquet"),
    ("file.txt", "exists and is not a folder"),
    ("missing/lake", "does not exist"),
])
def test_refused_destinations_are_named_and_left_untouched(two_vaults, tmp_path, where, message):
    vault, env = two_vaults
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "mine.csv").write_text("keep")
    (tmp_path / "file.txt").write_text("keep")
    before = sorted(str(p) for p in tmp_path.rglob("*") if "-wal" not in p.name and "-shm" not in p.name)
    proc = memo("export", "parquet", str(tmp_path / where), env=env, check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("error: Invalid dir: ") and message in proc.stderr
    after = sorted(str(p) for p in tmp_path.rglob("*") if "-wal" not in p.name and "-shm" not in p.name)
    assert after == before
    assert (tmp_path / "foreign" / "mine.csv").read_text() == "keep"


def test_the_api_refuses_a_folder_inside_a_further_vault(two_vaults, tmp_path):
    vault, _ = two_vaults
    store = VaultStore(Settings(vault_root=vault, timezone="UTC", vaults=[tmp_path / "team"]))
    with pytest.raises(InvalidFieldError, match="^Invalid dir: .* is inside the vault .*team"):
        export_parquet(store, tmp_path / "team" / "lake")
    store.close()


def test_a_project_the_vaults_hold_nothing_of_is_refused_not_exported_empty(two_vaults, tmp_path):
    """Found by an analyst: `memo export parquet DIR --project nope` wrote an empty export and
    exited 0, where every other read refuses a misspelt project."""
    primary, _ = two_vaults
    ran = memo("export", "parquet", str(tmp_path / "pq"), "--project", "nope", vault=primary, check=False)
    assert ran.returncode == 1 and ran.stderr.startswith(
        "error: Invalid project: the vault holds nothing of project 'nope' (projects: ")
    assert not (tmp_path / "pq").exists()


def test_the_client_internal_is_known_to_an_empty_vault(tmp_path):
    """Found by an analyst: `memo activity --all --client internal` on an empty vault was refused
    as a misspelt client; internal is the built-in client of work with none."""
    (tmp_path / "ev" / ".memo").mkdir(parents=True)
    ran = memo("--json", "activity", "--all", "--client", "internal", vault=tmp_path / "ev")
    assert json.loads(ran.stdout)["totalDurationMinutes"] == 0
