"""SPEC §4 activity_report, computed over polars frames of the real index."""

from __future__ import annotations

import json
from datetime import timezone

import pytest

from memo_analytics.analytics.activity import ActivityRequest, activity_report
from memo_analytics.domain.errors import InvalidDateError
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import EndSessionRequest, RecordPromptRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from tests.inprocess import memo

UTC = timezone.utc


def session(store, sid, start, end, project="p1", client=None, billable=True, prompts=1):
    start_session(store, StartSessionRequest(session_id=sid, project=project, client=client, billable=billable,
                                             start_time=start))
    for _ in range(prompts):
        record_prompt(store, RecordPromptRequest(body="work", session_id=sid, project=project, created=start))
    if end:
        end_session(store, EndSessionRequest(session_id=sid, until=end))



def own_names(groups: dict) -> dict:
    """The client or project entries under this product's names, after checking that each
    also carries spec-memo's (``sessionCount`` = ``sessions``, ``totalHours`` = ``billableHours``)."""
    for bucket in groups.values():
        assert bucket["sessionCount"] == bucket["sessions"] and bucket["totalHours"] == bucket["billableHours"]
    return {name: {k: v for k, v in bucket.items() if k not in ("sessionCount", "totalHours")}
            for name, bucket in groups.items()}

@pytest.fixture
def filled(store):
    session(store, "a1", "2026-01-05T09:00:00Z", "2026-01-05T10:20:00Z", client="Acme", prompts=2)   # 80
    session(store, "a2", "2026-01-06T09:00:00Z", "2026-01-06T09:35:00Z", client="acme", project="p2")  # 35
    session(store, "g1", "2026-01-06T13:00:00Z", "2026-01-06T13:10:00Z", client="Globex")  # 10
    session(store, "i1", "2026-01-07T09:00:00Z", "2026-01-07T09:20:00Z")  # 20, internal
    session(store, "nb", "2026-01-07T10:00:00Z", "2026-01-07T15:00:00Z", client="Acme", billable=False)  # 300, not billable
    session(store, "open", "2026-01-08T09:00:00Z", None, client="Acme")  # open: bills nothing yet
    return store


def test_only_billable_completed_sessions_count_toward_totals(filled):
    report = activity_report(filled, ActivityRequest()).wire()
    assert report["totalDurationMinutes"] == 80 + 35 + 10 + 20
    assert report["totalBillableHours"] == 2.42  # 145 / 60 = 2.4166…
    assert len(report["sessions"]) == 6
    assert [s["durationMinutes"] for s in report["sessions"] if s["sessionId"] == "open"] == [None]


def test_missing_client_is_internal_and_clients_group_case_insensitively(filled):
    report = activity_report(filled, ActivityRequest()).wire()
    assert own_names(report["byClient"]) == {
        "Acme": {"durationMinutes": 115, "billableHours": 1.92, "sessions": 2},
        "Globex": {"durationMinutes": 10, "billableHours": 0.17, "sessions": 1},
        "internal": {"durationMinutes": 20, "billableHours": 0.33, "sessions": 1},
    }
    # projects are largest-remainder shares of the 2.42 h total (naive 1.83 + 0.58 = 2.41)
    assert own_names(report["byProject"]) == {
        "p1": {"durationMinutes": 110, "billableHours": 1.84, "sessions": 3},
        "p2": {"durationMinutes": 35, "billableHours": 0.58, "sessions": 1},
    }


def test_a_client_spelled_several_ways_takes_its_most_used_spelling_and_on_a_tie_its_first(store, monkeypatch):
    # records written before clients were recorded in one spelling (or pulled from another machine)
    import memo_analytics.services.sessions as sessions

    monkeypatch.setattr(sessions, "canonical_client", lambda store, client: client)
    session(store, "x1", "2026-01-05T09:00:00Z", "2026-01-05T09:30:00Z", client="globex")
    session(store, "x2", "2026-01-06T09:00:00Z", "2026-01-06T09:30:00Z", client="Globex")
    tied = activity_report(store, ActivityRequest()).wire()
    assert list(tied["byClient"]) == ["globex"]  # used first, though "Globex" sorts before it
    session(store, "x3", "2026-01-07T09:00:00Z", "2026-01-07T09:30:00Z", client="Globex")
    most = activity_report(store, ActivityRequest(client="GLOBEX")).wire()
    assert own_names(most["byClient"]) == {"Globex": {"durationMinutes": 90, "billableHours": 1.5, "sessions": 3}}
    # the report names the client as its sessions spell it (a timesheet's header printed "GLOBEX" as typed)
    assert most["totalPrompts"] == 3 and most["client"] == "Globex"


def test_the_report_also_answers_under_spec_memo_names(filled):
    """Agents written for spec-memo read totalSessions, sessionCount and totalHours (issue 13 point 6)."""
    report = activity_report(filled, ActivityRequest()).wire()
    assert report["totalSessions"] == len(report["sessions"]) == 6  # open and unbilled ones too
    assert {k: (v["sessionCount"], v["totalHours"]) for k, v in report["byClient"].items()} == {
        "Acme": (2, 1.92), "Globex": (1, 0.17), "internal": (1, 0.33)}
    assert {k: (v["sessionCount"], v["totalHours"]) for k, v in report["byProject"].items()} == {
        "p1": (3, 1.84), "p2": (1, 0.58)}


def test_client_filter_is_case_insensitive_and_internal_matches_no_client(filled):
    acme = activity_report(filled, ActivityRequest(client="ACME")).wire()
    assert acme["totalDurationMinutes"] == 115 and acme["totalPrompts"] == 2 + 1 + 1 + 1
    internal = activity_report(filled, ActivityRequest(client="internal")).wire()
    assert internal["totalDurationMinutes"] == 20 and [s["sessionId"] for s in internal["sessions"]] == ["i1"]


def test_total_prompts_counts_prompts_within_the_date_bounds(filled):
    report = activity_report(filled, ActivityRequest(since="2026-01-06", until="2026-01-07", tz="UTC")).wire()
    assert report["totalPrompts"] == 1 + 1 + 1 + 1  # a2, g1, i1, nb
    assert report["totalDurationMinutes"] == 35 + 10 + 20


def test_project_selection(filled):
    report = activity_report(filled, ActivityRequest(projects=["p2"])).wire()
    assert report["totalDurationMinutes"] == 35 and report["projects"] == ["p2"]


def test_session_json_keys(filled):
    item = activity_report(filled, ActivityRequest()).wire()["sessions"][0]
    assert list(item) == ["id", "sessionId", "project", "client", "billable", "status", "startTime", "endTime",
                          "durationMinutes", "billedMinutes", "billableHours", "taskSlug", "summary", "deliverables", "owner",
                          "costUsd", "tokens", "unpricedTurns", "invoice"]


def test_invalid_dates_in_the_report_are_refused(filled):
    with pytest.raises(InvalidDateError, match="^Invalid until date"):
        activity_report(filled, ActivityRequest(until="2026-13-45"))


def test_a_period_whose_until_is_before_its_since_is_refused_by_name(tmp_path):
    """``--since 2026-03-31 --until 2026-03-01`` gave four empty tables and exit 0; it names the field."""
    ran = memo("activity", "--all", "--since", "2026-03-31", "--until", "2026-03-01", vault=tmp_path / "v", check=False)
    assert (ran.returncode, ran.stderr) == (1, "error: Invalid until: 2026-03-01 is before since 2026-03-31: the "
                                               "period would be empty (swap them?)\n")
    (tmp_path / "v" / "projects").mkdir(parents=True)  # a vault of nothing yet (a missing one is refused)
    same_day = memo("--json", "activity", "--all", "--since", "2026-03-02", "--until", "2026-03-02", vault=tmp_path / "v")
    assert json.loads(same_day.stdout)["totalSessions"] == 0  # one day is a period


def test_a_clients_projects_add_up_to_its_hours_and_a_project_bills_alike_with_or_without_its_client(store):
    """Three clients of 20, 10 and 10 minutes: 0.33 + 0.17 + 0.17 = 0.67 h. Shared out of the
    0.67 h total, Acme's two 10-minute projects came to 0.34 h (17 + 17 of 67 hundredths), not its
    0.33 h, and one of them billed 0.17 h beside the other clients but 0.16 h with --client Acme."""
    session(store, "a1", "2026-01-05T09:00:00Z", "2026-01-05T09:10:00Z", project="p1", client="Acme")
    session(store, "a2", "2026-01-05T10:00:00Z", "2026-01-05T10:10:00Z", project="p2", client="Acme")
    session(store, "g1", "2026-01-05T11:00:00Z", "2026-01-05T11:10:00Z", project="p3", client="Globex")
    session(store, "i1", "2026-01-05T12:00:00Z", "2026-01-05T12:10:00Z", project="p4", client="Initech")
    every = activity_report(store, ActivityRequest()).wire()
    hours = {name: bucket["billableHours"] for name, bucket in every["byProject"].items()}
    assert every["byClient"]["Acme"]["billableHours"] == 0.33 and every["totalBillableHours"] == 0.67
    assert hours == {"p1": 0.17, "p2": 0.16, "p3": 0.17, "p4": 0.17}
    assert round(hours["p1"] + hours["p2"], 2) == 0.33 and round(sum(hours.values()), 2) == 0.67
    acme = activity_report(store, ActivityRequest(client="acme")).wire()
    assert {name: bucket["billableHours"] for name, bucket in acme["byProject"].items()} == {"p1": 0.17, "p2": 0.16}
    sessions = {s["sessionId"]: s["billableHours"] for s in every["sessions"]}
    assert sessions == {"a1": 0.17, "a2": 0.16, "g1": 0.17, "i1": 0.17}  # a project's sessions add up to it


def test_a_teams_report_says_the_billed_time_of_each_person(tmp_path):
    """A team lead could not see who did what: ``byOwner`` gives each person's billed minutes,
    hours and sessions (the sessions' shares: they add up to the total), and the human report a
    table by person when the vault holds more than one."""
    vault = tmp_path / "v"
    for sid, owner, start, end in (("a1", "ana@team.test", "09:00", "10:20"), ("b1", "bob@team.test", "09:30", "10:00"),
                                   ("b2", "bob@team.test", "11:00", "11:10"), ("n1", None, "13:00", "13:25")):
        memo("session", "start", sid, "--project", "shop", "--client", "Acme", "--start-time",
             f"2026-03-02T{start}:00Z", *(["--owner", owner] if owner else []), vault=vault)
        memo("session", "end", sid, "--project", "shop", "--until", f"2026-03-02T{end}:00Z", vault=vault)
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    third = next(s["owner"] for s in report["sessions"] if s["sessionId"] == "n1") or "unknown"  # this machine's git identity, if any
    assert report["byOwner"] == {
        "ana@team.test": {"durationMinutes": 80, "billableHours": 1.33, "sessions": 1},
        "bob@team.test": {"durationMinutes": 40, "billableHours": 0.67, "sessions": 2},
        third: {"durationMinutes": 25, "billableHours": 0.42, "sessions": 1}}
    assert round(sum(o["billableHours"] for o in report["byOwner"].values()), 2) == report["totalBillableHours"]
    human = memo("activity", "--all", vault=vault).stdout
    assert "Billable time by person" in human and "bob@team.test" in human


def test_a_lead_reports_and_timesheets_one_persons_work(tmp_path):
    """Found by a team lead: no timesheet per person — ``memo report timesheet`` had no
    ``--owner``, its rows no person; only ``byOwner`` totals existed. ``--owner`` (the MCP tool's
    and the API's ``owner``) selects one person's sessions in any case, ``unknown`` those of no
    recorded person; each person's report adds up to their ``byOwner`` line; a name no session has
    is refused with the owners the vault knows (a typo read as no work)."""
    from tests.inprocess import tool_calls

    vault = tmp_path / "v"
    for sid, owner, start, end in (("a1", "ana@team.test", "09:00", "10:20"), ("b1", "bob@team.test", "09:30", "10:00"),
                                   ("b2", "bob@team.test", "11:00", "11:10")):
        memo("session", "start", sid, "--project", "shop", "--client", "Acme", "--start-time",
             f"2026-03-02T{start}:00Z", "--owner", owner, vault=vault)
        memo("prompt", "record", "--session-id", sid, "--project", "shop", "--body", f"work of {sid}",
             "--created", f"2026-03-02T{start}:01Z", vault=vault)
        memo("session", "end", sid, "--project", "shop", "--until", f"2026-03-02T{end}:00Z", vault=vault)
    whole = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    bob = json.loads(memo("--json", "activity", "--all", "--owner", "BOB@team.test", vault=vault).stdout)
    assert [s["sessionId"] for s in bob["sessions"]] == ["b1", "b2"]
    assert (bob["owner"], bob["totalDurationMinutes"], bob["totalBillableHours"], bob["totalPrompts"]) == (
        "BOB@team.test", 40, whole["byOwner"]["bob@team.test"]["billableHours"], 2)
    assert "person: BOB@team.test" in memo("activity", "--all", "--owner", "BOB@team.test", vault=vault).stdout
    memo("report", "timesheet", "--all", "--owner", "bob@team.test", "-o", str(tmp_path / "bob.csv"), vault=vault)
    assert [line.split(",")[3] for line in (tmp_path / "bob.csv").read_text("utf-8-sig").splitlines()[1:]] == [
        '"b1"', '"b2"']
    memo("report", "timesheet", "--all", "--owner", "bob@team.test", "-o", str(tmp_path / "bob.pdf"), vault=vault)
    from tests.integration.test_cli import pdf_text

    assert "Person bob@team.test" in " ".join(pdf_text(tmp_path / "bob.pdf").split())
    [(is_error, text)] = tool_calls(vault, [{"action": "activity_report", "crossProject": True, "owner": "ana@team.test"}])
    assert not is_error and [s["sessionId"] for s in json.loads(text)["sessions"]] == ["a1"]
    assert "ignored" not in json.loads(text)
    typo = memo("activity", "--all", "--owner", "bobby@team.test", vault=vault, check=False)
    assert (typo.returncode, typo.stderr.strip()) == (1, "error: Invalid owner: no session of the vault is "
                                                         "bobby@team.test's (owners: ana@team.test, bob@team.test; "
                                                         "'unknown' for none)")
    assert json.loads(memo("--json", "activity", "--all", "--owner", "unknown", vault=vault).stdout)["sessions"] == []
    # found by an attacker: a blank owner read as everyone's report, a long one was echoed whole
    blank = memo("activity", "--all", "--owner", "  ", vault=vault, check=False)
    assert (blank.returncode, blank.stderr.strip()) == (1, "error: Invalid owner: is empty: give a value, or leave "
                                                           "the option out")
    long = memo("activity", "--all", "--owner", "x" * 5000, vault=vault, check=False)
    assert long.returncode == 1 and len(long.stderr) < 400 and "x" * 100 + "…'s" in long.stderr


def test_a_turn_file_that_cannot_be_read_is_named_by_the_activity_report(tmp_path):
    """Found by a tester of bad files: a turn file with ``turn`` twice (or emptied) lowered
    ``memo activity``'s prompts and AI cost without a word (a session file is named)."""
    from tests.inprocess import memo

    vault = tmp_path / "v"
    memo("session", "start", "s", "--project", "web", vault=vault)
    for turn in (1, 2):
        memo("prompt", "record", "--body", f"turn {turn}", "--session-id", "s", "--project", "web", vault=vault)
    memo("session", "end", "s", "--project", "web", vault=vault)
    path = vault / "projects/web/prompts/prompt-s-t2.md"
    path.write_text(path.read_text(encoding="utf-8").replace("turn: 2\n", "turn: 2\nturn: 3\n"), encoding="utf-8")
    memo("reindex", vault=vault, check=False)
    report = memo("activity", "--all", vault=vault)
    assert "prompts: 1" in report.stdout
    assert ("note: 1 prompt file cannot be read and is left out: projects/web/prompts/prompt-s-t2.md: frontmatter "
            "names 'turn' twice") in report.stderr, report.stderr
