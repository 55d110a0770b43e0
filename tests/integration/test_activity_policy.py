"""SPEC §4 activity_report beyond the seed: the per-day breakdown, the one rounding policy
under which rows add up to totals, and crossProject over every configured vault."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from tests.integration.test_activity import own_names

from memo_analytics.analytics.activity import ActivityRequest, activity_report
from memo_analytics.config import Settings
from memo_analytics.domain.errors import InvalidFieldError
from memo_analytics.domain.rounding import ROUNDING_POLICY
from memo_analytics.services.store import VaultStore

from .test_activity import session

UTC = timezone.utc


def cents(hours: float) -> int:
    return round(hours * 100)


def assert_columns_add_up(report: dict) -> None:
    total_minutes, total_cents = report["totalDurationMinutes"], cents(report["totalBillableHours"])
    for breakdown in ("byClient", "byProject", "byDay"):
        rows = report[breakdown].values()
        assert sum(r["durationMinutes"] for r in rows) == total_minutes, breakdown
        assert sum(cents(r["billableHours"]) for r in rows) == total_cents, breakdown
    counted = [s for s in report["sessions"] if s["billable"] and s["durationMinutes"] is not None]
    for name, bucket in report["byClient"].items():
        mine = [s for s in counted if s["client"].lower() == name.lower()]
        assert sum(s["billedMinutes"] for s in mine) == bucket["durationMinutes"]
        assert all(0 <= s["billedMinutes"] <= s["durationMinutes"] for s in mine)
        assert sum(cents(s["billableHours"]) for s in mine) == cents(bucket["billableHours"]), name
    assert all(s["billableHours"] is None for s in report["sessions"] if s not in counted)


def test_three_clients_of_twenty_minutes_total_the_sum_of_their_hours(store):
    for n, client in enumerate(["Acme", "Globex", "Initech"]):
        session(store, f"s{n}", f"2026-02-02T{9 + n:02d}:00:00Z", f"2026-02-02T{9 + n:02d}:20:00Z", client=client)
    report = activity_report(store, ActivityRequest(tz="UTC")).wire()
    assert {k: v["billableHours"] for k, v in report["byClient"].items()} == {"Acme": 0.33, "Globex": 0.33,
                                                                              "Initech": 0.33}
    assert report["totalDurationMinutes"] == 60 and report["totalBillableHours"] == 0.99
    assert own_names(report["byProject"]) == {"p1": {"durationMinutes": 60, "billableHours": 0.99, "sessions": 3}}
    assert report["byDay"] == {"2026-02-02": {"durationMinutes": 60, "billableHours": 0.99}}
    assert report["roundingPolicy"] == ROUNDING_POLICY
    assert_columns_add_up(report)


def test_a_clients_sessions_share_its_hours_by_largest_remainder(store):
    for n in range(3):
        session(store, f"s{n}", f"2026-02-02T{9 + n:02d}:00:00Z", f"2026-02-02T{9 + n:02d}:20:00Z", client="Acme")
    report = activity_report(store, ActivityRequest(tz="UTC")).wire()
    assert report["byClient"]["Acme"]["billableHours"] == 1.0 and report["totalBillableHours"] == 1.0
    assert [s["billableHours"] for s in report["sessions"]] == [0.34, 0.33, 0.33]  # naive: 0.99


def test_a_client_has_the_same_hours_alone_and_beside_other_clients(store):
    session(store, "a", "2026-02-02T09:00:00Z", "2026-02-02T09:20:00Z", client="Acme")
    session(store, "b", "2026-02-02T10:00:00Z", "2026-02-02T10:20:00Z", client="Globex", project="p2")
    session(store, "c", "2026-02-02T11:00:00Z", "2026-02-02T11:20:00Z", client="Initech", project="p3")
    together = activity_report(store, ActivityRequest(tz="UTC")).wire()
    alone = activity_report(store, ActivityRequest(tz="UTC", client="acme")).wire()
    assert together["byClient"]["Acme"]["billableHours"] == alone["totalBillableHours"] == 0.33


def test_a_session_crossing_local_midnight_is_split_per_day_and_the_parts_add_up(store):
    # 23:40:20–00:20:40 in Berlin (UTC+1): 19:40 and 20:40 of wall time; 40 whole minutes
    session(store, "late", "2026-01-05T22:40:20Z", "2026-01-05T23:20:40Z", client="Acme")
    # 23:30–02:00 in Berlin: 30 + 120 minutes
    session(store, "night", "2026-01-06T22:30:00Z", "2026-01-07T01:00:00Z", client="Globex")
    session(store, "day", "2026-01-07T09:00:00Z", "2026-01-07T09:07:00Z", client="Acme")
    report = activity_report(store, ActivityRequest(tz="Europe/Berlin")).wire()
    assert {d: v["durationMinutes"] for d, v in report["byDay"].items()} == {
        "2026-01-05": 20, "2026-01-06": 20 + 30, "2026-01-07": 120 + 7}
    assert report["totalDurationMinutes"] == 40 + 150 + 7 == 197
    # Acme 47 min = 0.78 h, Globex 150 min = 2.50 h: 3.28 h shared over the days by minutes
    assert report["totalBillableHours"] == 3.28
    assert {d: v["billableHours"] for d, v in report["byDay"].items()} == {
        "2026-01-05": 0.33, "2026-01-06": 0.83, "2026-01-07": 2.12}
    assert_columns_add_up(report)
    # in UTC no session crosses midnight except "night"
    utc = activity_report(store, ActivityRequest(tz="UTC")).wire()
    assert {d: v["durationMinutes"] for d, v in utc["byDay"].items()} == {
        "2026-01-05": 40, "2026-01-06": 90, "2026-01-07": 60 + 7}


def test_open_and_unbillable_sessions_are_in_no_breakdown(store):
    session(store, "nb", "2026-01-05T09:00:00Z", "2026-01-05T10:00:00Z", client="Acme", billable=False)
    session(store, "open", "2026-01-06T09:00:00Z", None, client="Acme")
    report = activity_report(store, ActivityRequest(tz="UTC")).wire()
    assert report["totalDurationMinutes"] == 0 and report["totalBillableHours"] == 0
    assert report["byClient"] == {} and report["byProject"] == {} and report["byDay"] == {}
    assert [s["billableHours"] for s in report["sessions"]] == [None, None]


def test_random_vaults_add_up_in_every_column(store):
    rng = random.Random(11)
    start = datetime(2026, 3, 1, tzinfo=UTC)
    for n in range(60):
        at = start + timedelta(minutes=rng.randint(0, 60 * 24 * 20), seconds=rng.randint(0, 59))
        end = at + timedelta(minutes=rng.randint(1, 300), seconds=rng.randint(0, 59))
        session(store, f"r{n}", at.isoformat(), end.isoformat(), project=f"p{n % 4}", prompts=0,
                client=rng.choice(["Acme", "acme", "Globex", "Initech", None, "Umbrella"]),
                billable=rng.random() > 0.1)
    for tz in ("UTC", "Europe/Berlin", "America/Los_Angeles", "Asia/Kolkata"):
        report = activity_report(store, ActivityRequest(tz=tz)).wire()
        assert_columns_add_up(report)
        assert all(abs(cents(v["billableHours"]) - v["durationMinutes"] * 100 / 60) < 1 + len(report["byClient"])
                   for v in report["byDay"].values())
    # over the Berlin daylight-saving night too
    march = activity_report(store, ActivityRequest(tz="Europe/Berlin", since="2026-03-28", until="2026-03-30"))
    assert_columns_add_up(march.wire())


def test_total_prompts_honour_a_time_bound_inclusive_to_the_millisecond(store):
    session(store, "a", "2026-01-05T09:00:00Z", "2026-01-05T10:00:00Z", client="Café Müller", prompts=2)
    session(store, "b", "2026-01-05T10:00:00.001Z", "2026-01-05T11:00:00Z", client="Globex")
    report = activity_report(store, ActivityRequest(tz="UTC", until="2026-01-05T09:00:00Z")).wire()
    assert report["totalPrompts"] == 2 and [s["sessionId"] for s in report["sessions"]] == ["a"]
    later = activity_report(store, ActivityRequest(tz="UTC", since="2026-01-05T10:00:00.0005Z")).wire()
    assert later["totalPrompts"] == 1 and [s["sessionId"] for s in later["sessions"]] == ["b"]
    # case-insensitive beyond ASCII, for sessions and prompts alike
    cafe = activity_report(store, ActivityRequest(tz="UTC", client="CAFÉ MÜLLER")).wire()
    assert cafe["totalPrompts"] == 2 and cafe["totalDurationMinutes"] == 60


def snapshot(root):
    """Every record file and the index database (SQLite's own -wal/-shm reader files aside)."""
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


@pytest.fixture
def team(tmp_path):
    team = VaultStore(Settings(vault_root=tmp_path / "team", timezone="UTC"))
    session(team, "t1", "2026-01-05T09:00:00Z", "2026-01-05T10:00:00Z", project="shared", client="Acme", prompts=3)
    session(team, "t2", "2026-01-06T09:00:00Z", "2026-01-06T09:30:00Z", project="p1", client="Globex")
    team.close()
    return tmp_path / "team"


def test_cross_project_reads_every_project_of_every_configured_vault(tmp_path, team):
    mine = VaultStore(Settings(vault_root=tmp_path / "mine", timezone="UTC", vaults=[team, tmp_path / "mine"]))
    session(mine, "m1", "2026-01-05T13:00:00Z", "2026-01-05T13:45:00Z", project="p1", client="acme")
    before = snapshot(team)
    every = activity_report(mine, ActivityRequest(cross_project=True)).wire()
    assert every["totalDurationMinutes"] == 60 + 30 + 45 and every["totalPrompts"] == 3 + 1 + 1
    assert every["byClient"]["Acme"]["durationMinutes"] == 105 and every["byProject"]["p1"]["sessions"] == 2
    assert {s["sessionId"] for s in every["sessions"]} == {"t1", "t2", "m1"}
    only_mine = activity_report(mine, ActivityRequest()).wire()
    assert only_mine["totalDurationMinutes"] == 45 and only_mine["totalPrompts"] == 1
    selected = activity_report(mine, ActivityRequest(cross_project=True, projects=["p1"])).wire()
    assert selected["totalDurationMinutes"] == 30 + 45 and selected["totalPrompts"] == 2
    assert snapshot(team) == before  # read, never written
    mine.close()


def test_a_record_in_two_vaults_counts_once(tmp_path, team):
    import shutil

    shutil.copytree(team, tmp_path / "copy")
    mine = VaultStore(Settings(vault_root=team, timezone="UTC", vaults=[tmp_path / "copy"]))
    report = activity_report(mine, ActivityRequest(cross_project=True)).wire()
    assert report["totalDurationMinutes"] == 90 and report["totalPrompts"] == 4 and len(report["sessions"]) == 2
    mine.close()


def test_a_further_vault_without_an_index_is_refused_by_name(tmp_path):
    mine = VaultStore(Settings(vault_root=tmp_path / "mine", timezone="UTC", vaults=[tmp_path / "typo"]))
    with pytest.raises(InvalidFieldError, match=r"^Invalid vaults: .*typo holds no vault index"):
        activity_report(mine, ActivityRequest(cross_project=True))
    assert not (tmp_path / "typo").exists()
    assert activity_report(mine, ActivityRequest()).total_duration_minutes == 0
