"""The overlap policy and the one rounding of times (issue 15 point 5): one person's parallel
sessions for one client bill their wall-clock union once (``overlapPolicy = "sum"`` bills each in
full); every report prints a span that equals the minutes it bills."""

from __future__ import annotations

import re

import csv
import io
import json
from pathlib import Path

import pytest

from memo_analytics.config import Settings
from memo_analytics.services.requests import StartSessionRequest
from memo_analytics.services.sessions import start_session
from memo_analytics.services.store import VaultStore
from tests.inprocess import memo

from .test_issued_invoices import _session


@pytest.fixture
def parallel(tmp_path) -> dict:
    """Acme: 09:00–10:00 and 09:30–10:30 (30 minutes in parallel), and 10:15–10:45 (15 more
    inside the second); Globex: 09:30–10:00, beside them (another client: billed in full)."""
    root = tmp_path / "vault"
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    _session(store, "p1", "web", "Acme", "2026-06-01T09:00:00Z", "2026-06-01T10:00:00Z")
    _session(store, "p2", "api", "Acme", "2026-06-01T09:30:00Z", "2026-06-01T10:30:00Z")
    _session(store, "p3", "api", "Acme", "2026-06-01T10:15:00Z", "2026-06-01T10:45:00Z")
    _session(store, "g1", "etl", "Globex", "2026-06-01T09:30:00Z", "2026-06-01T10:00:00Z")
    store.close()
    return {"vault": root, "config": tmp_path / "config.toml"}


def report(parallel, *args) -> dict:
    env = {"MEMO_CONFIG": str(parallel["config"])}
    scope = () if "--project" in args else ("--all",)
    return json.loads(memo("--json", "activity", *scope, "--tz", "UTC", *args, vault=parallel["vault"], env=env).stdout)


def test_parallel_sessions_of_one_client_bill_their_union_once(parallel, tmp_path):
    union = report(parallel)
    # Acme's wall clock: 09:00–10:45 = 105 minutes (60 + 30 new + 15 new), not 60 + 60 + 30 = 150
    assert union["byClient"]["Acme"]["durationMinutes"] == 105
    assert union["byClient"]["Globex"]["durationMinutes"] == 30
    assert {s["sessionId"]: (s["durationMinutes"], s["billedMinutes"]) for s in union["sessions"]} == {
        "p1": (60, 60), "p2": (60, 30), "p3": (30, 15), "g1": (30, 30)}
    assert union["totalDurationMinutes"] == 135 and union["totalBillableHours"] == 1.75 + 0.50
    assert union["overlapPolicy"].startswith("Parallel sessions of one person for one client bill")
    memo("report", "timesheet", "--all", "--tz", "UTC", "-o", str(tmp_path / "t.csv"), vault=parallel["vault"])
    rows = list(csv.DictReader(io.StringIO((tmp_path / "t.csv").read_text(encoding="utf-8-sig"))))
    assert [(int(r["workedMinutes"]), int(r["billedMinutes"])) for r in rows if r["client"] == "Acme"] == [
        (60, 60), (60, 30), (30, 15)]
    assert rows[1]["note"] == "parallel to another session of this client: 30 of 60 minutes billed"
    assert rows[1]["deliverables"] == ""
    parallel["config"].write_text('overlapPolicy = "sum"\n', encoding="utf-8")
    summed = report(parallel)
    assert summed["byClient"]["Acme"]["durationMinutes"] == 150 and summed["totalDurationMinutes"] == 180
    assert summed["overlapPolicy"] == "Every session bills its whole duration, parallel sessions included."


def test_the_invoice_bills_the_union_too(parallel, tmp_path):
    parallel["config"].write_text('[clients.Acme]\nhourlyRate = "100"\ncurrency = "EUR"\n', encoding="utf-8")
    env = {"MEMO_CONFIG": str(parallel["config"])}
    draft = json.loads(memo("--json", "report", "invoice", "--all", "--client", "Acme", "--tz", "UTC", "--lines",
                            "session", "-o", str(tmp_path / "i.csv"), vault=parallel["vault"], env=env).stdout)
    assert draft["totals"]["EUR"]["amount"] == "175.00" and draft["totalDurationMinutes"] == 105


def test_a_printed_span_equals_the_minutes_it_bills(tmp_path):
    """Durations are whole minutes, half up (SPEC §2.5): 09:00:40–09:10:10 is 9.5 → 10 minutes,
    09:00:20–09:10:50 is 10.5 → 11. Seconds dropped for display would print 09:00–09:10 for
    both; the printed end is the printed start plus the minutes billed."""
    root = tmp_path / "vault"
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    _session(store, "s1", "web", "Acme", "2026-06-01T09:00:40Z", "2026-06-01T09:10:10Z")
    _session(store, "s2", "web", "Acme", "2026-06-02T09:00:20Z", "2026-06-02T09:10:50Z")
    _session(store, "s3", "web", "Acme", "2026-06-03T23:50:30Z", "2026-06-04T00:20:00Z")  # 29.5 → 30, past midnight
    store.close()
    memo("report", "timesheet", "--all", "--tz", "UTC", "-o", str(tmp_path / "t.csv"), vault=root)
    rows = list(csv.DictReader(io.StringIO((tmp_path / "t.csv").read_text(encoding="utf-8-sig"))))
    assert [(r["start"], r["end"], r["workedMinutes"], r["billedMinutes"]) for r in rows] == [
        ("09:00", "09:10", "10", "10"), ("09:00", "09:11", "11", "11"), ("23:50", "00:20 (+1d)", "30", "30")]
    for row in rows:
        start_h, start_m = map(int, row["start"].split(":"))
        end_h, end_m = map(int, row["end"][:5].split(":"))
        span = (end_h * 60 + end_m) - (start_h * 60 + start_m) + (1440 if "(+1d)" in row["end"] else 0)
        assert span == int(row["workedMinutes"])


def test_a_span_over_a_daylight_saving_change_prints_the_wall_clock_it_ended_at(tmp_path):
    """Found by an attacker: the printed end was the start plus the minutes in wall-clock time —
    60 minutes from 01:30 CET on the spring night printed 02:30 (a time that did not exist; it
    ended 03:30 CEST), and the autumn hour from 02:30 CEST ended 03:30 (it ended 02:30 CET), in
    the timesheet and on invoices issued by session, for good. The minutes are added in absolute
    time; where the offset changed, each time carries its zone."""
    root = tmp_path / "vault"
    store = VaultStore(Settings(vault_root=root, timezone="Europe/Berlin"))
    _session(store, "spring", "web", "Acme", "2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z")
    _session(store, "autumn", "web", "Acme", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z")
    _session(store, "night", "web", "Acme", "2026-10-24T21:30:00Z", "2026-10-25T01:10:00Z")  # 23:30 CEST–02:10 CET
    _session(store, "june", "web", "Acme", "2026-06-01T07:00:00Z", "2026-06-01T08:00:00Z")
    store.close()
    config = tmp_path / "config.toml"
    config.write_text('[clients.Acme]\nhourlyRate = "100"\ncurrency = "EUR"\n', encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    memo("report", "timesheet", "--all", "--tz", "Europe/Berlin", "--since", "2026-01-01", "--until", "2026-12-31",
         "-o", str(tmp_path / "t.csv"), vault=root, env=env)
    rows = list(csv.DictReader(io.StringIO((tmp_path / "t.csv").read_text(encoding="utf-8-sig"))))
    assert [(r["date"], r["start"], r["end"], r["workedMinutes"]) for r in rows] == [
        ("2026-03-29", "01:30 CET", "03:30 CEST", "60"), ("2026-06-01", "09:00", "10:00", "60"),
        ("2026-10-24", "23:30 CEST", "02:10 CET (+1d)", "220"), ("2026-10-25", "02:30 CEST", "02:30 CET", "60")]
    draft = json.loads(memo("--json", "report", "invoice", "--all", "--tz", "Europe/Berlin", "--since", "2026-01-01",
                            "--until", "2026-12-31", "--lines", "session", "-o", str(tmp_path / "i.csv"), vault=root,
                            env=env).stdout)
    assert [line["date"] for line in draft["items"]] == [
        "2026-03-29 01:30 CET–03:30 CEST", "2026-06-01 09:00–10:00", "2026-10-24 23:30 CEST–02:10 CET (+1d)",
        "2026-10-25 02:30 CEST–02:30 CET"]


def test_an_invoice_lines_work_lists_summaries_without_doubled_stops(tmp_path):
    """Found by a new user: "…architecture.; OK task to; Continue from where you left off.; and 6
    more". Each summary is listed without its closing stop."""
    from memo_analytics.services.requests import EndSessionRequest
    from memo_analytics.services.sessions import end_session

    root = tmp_path / "vault"
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    for n, summary in enumerate(("Explain the architecture.", "OK task to", "Continue from where you left off.",
                                 "Ship it;", "..."), 1):
        start_session(store, StartSessionRequest(session_id=f"w{n}", project="web", client="Acme",
                                                 start_time=f"2026-06-0{n}T09:00:00Z"))
        end_session(store, EndSessionRequest(session_id=f"w{n}", project="web", until=f"2026-06-0{n}T10:00:00Z",
                                             summary=summary))
    store.close()
    config = tmp_path / "config.toml"
    config.write_text('[clients.Acme]\nhourlyRate = "100"\ncurrency = "EUR"\n', encoding="utf-8")
    draft = json.loads(memo("--json", "report", "invoice", "--all", "--tz", "UTC", "--since", "2026-06-01", "--until",
                            "2026-06-30", "-o", str(tmp_path / "i.csv"), vault=root, env={"MEMO_CONFIG": str(config)}
                            ).stdout)
    assert draft["items"][0]["notes"] == [
        "Explain the architecture; OK task to; Continue from where you left off; and 1 more"]
    assert draft["items"][0]["rate"] == "100.00"  # set as "100": printed in the currency's decimals, as 95.00 is


def test_a_clients_rounding_and_minimum_raise_each_span_before_the_union(parallel, tmp_path):
    """Acme bills in 15-minute steps with a 30-minute minimum: a session's span is raised first
    (a lone 10 minutes bills 30), then parallel spans bill their union once — ten hours started a
    minute apart bill 69 minutes of wall clock, not ten minimums (a breaker's case)."""
    parallel["config"].write_text('[clients.Acme]\nhourlyRate = "100"\ncurrency = "EUR"\nroundingMinutes = 15\n'
                                  'minimumMinutes = 30\n', encoding="utf-8")
    store = VaultStore(Settings(vault_root=parallel["vault"], timezone="UTC"))
    _session(store, "lone", "web", "Acme", "2026-06-02T09:00:00Z", "2026-06-02T09:10:00Z")
    for n in range(10):
        _session(store, f"t{n}", "web", "Acme", f"2026-06-03T10:{n:02d}:00Z", f"2026-06-03T11:{n:02d}:00Z")
    _session(store, "first", "web", "Acme", "2026-06-04T09:00:00Z", "2026-06-04T09:20:00Z")  # 20 → 09:00–09:30
    _session(store, "beside", "api", "Acme", "2026-06-04T09:20:00Z", "2026-06-04T09:25:00Z")  # 5 → 09:20–09:50
    store.close()
    rounded = report(parallel)
    billed = {s["sessionId"]: s["billedMinutes"] for s in rounded["sessions"]}
    assert (billed["p1"], billed["p2"], billed["p3"], billed["g1"]) == (60, 30, 15, 30)
    assert billed["lone"] == 30
    assert sum(billed[f"t{n}"] for n in range(10)) == 69
    assert (billed["first"], billed["beside"]) == (30, 20)
    assert rounded["byClient"]["Acme"]["durationMinutes"] == 105 + 30 + 69 + 50
    memo("report", "timesheet", "--all", "--tz", "UTC", "-o", str(tmp_path / "t.csv"), vault=parallel["vault"],
         env={"MEMO_CONFIG": str(parallel["config"])})
    notes = {r["sessionId"]: r["note"] for r in csv.DictReader(io.StringIO(
        (tmp_path / "t.csv").read_text(encoding="utf-8-sig")))}
    assert notes["lone"] == "billed 30 minutes (the client's rounding)"
    assert notes["p3"] == "parallel to another session of this client: 15 of 30 minutes billed"
    # 5 minutes raised to 30, 10 of which "first" covers: not "billed 20 minutes (the client's rounding)"
    assert notes["beside"] == ("raised to 30 minutes by the client's rounding, then parallel to another session "
                               "of this client: 20 billed")
    parallel["config"].write_text('[clients.Acme]\nhourlyRate = "100"\ncurrency = "EUR"\nroundingMinutes = 0\n',
                                  encoding="utf-8")
    ran = memo("activity", "--all", vault=parallel["vault"], env={"MEMO_CONFIG": str(parallel["config"])}, check=False)
    assert ran.returncode == 1 and "roundingMinutes" in ran.stderr


def test_a_session_bills_the_same_minutes_whatever_the_report_selects(parallel, tmp_path):
    """A breaker's case: invoicing each project (or half the period) of one client apart must not
    bill their parallel half hour twice."""
    whole = {s["sessionId"]: s["billedMinutes"] for s in report(parallel)["sessions"]}
    web = {s["sessionId"]: s["billedMinutes"] for s in report(parallel, "--project", "web")["sessions"]}
    api = {s["sessionId"]: s["billedMinutes"] for s in report(parallel, "--project", "api")["sessions"]}
    late = {s["sessionId"]: s["billedMinutes"] for s in report(parallel, "--since", "2026-06-01T09:15:00Z")["sessions"]}
    assert web == {"p1": 60} and api == {"p2": 30, "p3": 15}
    assert late["p2"] == whole["p2"] == 30


def test_an_invoiced_session_keeps_the_minutes_its_invoice_billed(tmp_path):
    """A breaker's case: P (09:30–10:30) is invoiced while O (from 09:00) is still open; when O
    ends at 11:00, P keeps its 60 invoiced minutes and O bills the other 60 — not 120."""
    from .test_issued_invoices import ACME, ISSUER

    root, config = tmp_path / "vault", tmp_path / "config.toml"
    config.write_text(ISSUER + ACME, encoding="utf-8")
    env = {"MEMO_CONFIG": str(config), "HOME": str(tmp_path)}
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    start_session(store, StartSessionRequest(session_id="O", project="web", client="Acme Corp",
                                             start_time="2026-06-05T09:00:00Z"))
    _session(store, "P", "web", "Acme Corp", "2026-06-05T09:30:00Z", "2026-06-05T10:30:00Z")
    store.close()
    first = json.loads(memo("--json", "invoice", "issue", "--all", "--client", "Acme Corp", "--since", "2026-06-01",
                            "--until", "2026-06-30", vault=root, env=env).stdout)
    assert first["billableHours"] == "1.00"
    memo("session", "end", "O", "--project", "web", "--until", "2026-06-05T11:00:00Z", vault=root, env=env)
    billed = {s["sessionId"]: s["billedMinutes"] for s in json.loads(
        memo("--json", "activity", "--all", vault=root, env=env).stdout)["sessions"]}
    assert billed == {"O": 60, "P": 60}
    second = json.loads(memo("--json", "invoice", "issue", "--all", "--client", "Acme Corp", "--since", "2026-06-01",
                             "--until", "2026-06-30", vault=root, env=env).stdout)
    assert second["billableHours"] == "1.00"  # 2 h of wall clock, billed 1 h + 1 h


def test_an_invoice_says_how_the_clients_terms_bill_a_session(tmp_path):
    """An invoice whose lines bill more than the sessions lasted (rounded up to 15 minutes, at least
    30) says why at its foot — the draft and the issued one (stored in the document): 'each session
    is billed in steps of 15 minutes, at least 30 minutes (the client's terms)'."""
    from .test_cli import pdf_text
    from .test_issued_invoices import ACME, ISSUER

    root, config = tmp_path / "vault", tmp_path / "config.toml"
    config.write_text(ISSUER + ACME + "roundingMinutes = 15\nminimumMinutes = 30\n", encoding="utf-8")
    env = {"MEMO_CONFIG": str(config), "HOME": str(tmp_path)}
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    _session(store, "short", "web", "Acme Corp", "2026-06-05T09:00:00Z", "2026-06-05T09:10:00Z")
    _session(store, "within", "web", "Acme Corp", "2026-06-05T09:02:00Z", "2026-06-05T09:06:00Z")
    store.close()
    # 'within' is raised to 30 minutes too, then bills what 'short' (raised to 09:00–09:30) did not cover: 2
    # minutes — a line of 0.03 h under "at least 30 minutes", which the note must explain
    said = ("Acme Corp: each session is billed in steps of 15 minutes, at least 30 minutes; then a session beside an "
            "earlier one of the client bills only the minutes that one did not cover (the client's terms)")
    draft = tmp_path / "draft.pdf"
    memo("report", "invoice", "--all", "--since", "2026-06-01", "--until", "2026-06-30", "-o", str(draft),
         vault=root, env=env)
    assert said in " ".join(pdf_text(draft).split())
    by_session = tmp_path / "by-session.pdf"
    memo("report", "invoice", "--all", "--since", "2026-06-01", "--until", "2026-06-30", "--lines", "session",
         "-o", str(by_session), vault=root, env=env)
    assert re.findall(r"(\d+\.\d\d) 120\.00 (\d+\.\d\d)", pdf_text(by_session)) == [("0.50", "60.00"), ("0.03", "3.60")]
    issued = json.loads(memo("--json", "invoice", "issue", "--all", "--client", "Acme Corp", "--since", "2026-06-01",
                             "--until", "2026-06-30", vault=root, env=env).stdout)
    assert said in " ".join(pdf_text(Path(issued["pdf"])).split())
    from memo_analytics.domain.billing import ClientBilling

    assert ClientBilling(hourly_rate="100", currency="EUR").rounding_note() is None  # billed as they are: nothing said
    assert ClientBilling(hourly_rate="100", currency="EUR", minimum_minutes=30).rounding_note() == (
        "each session is billed at least 30 minutes")


def test_a_session_wholly_beside_an_earlier_one_gets_no_zero_line_on_an_invoice_by_session(tmp_path):
    """Under the union policy a session inside an earlier one of the client bills nothing: an
    invoice by session prints no ``0.00 h × 120.00 = 0.00`` line for it (nor its e-invoice XML a
    zero line), and still bills it — the session is on the invoice, never billed again."""
    from .test_cli import pdf_text
    from .test_issued_invoices import ACME, ISSUER

    root, config = tmp_path / "vault", tmp_path / "config.toml"
    config.write_text(ISSUER + ACME, encoding="utf-8")
    env = {"MEMO_CONFIG": str(config), "HOME": str(tmp_path)}
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    _session(store, "hour", "web", "Acme Corp", "2026-06-05T09:00:00Z", "2026-06-05T10:00:00Z")
    _session(store, "inside", "web", "Acme Corp", "2026-06-05T09:10:00Z", "2026-06-05T09:20:00Z")
    store.close()
    issued = json.loads(memo("--json", "invoice", "issue", "--all", "--client", "Acme Corp", "--since", "2026-06-01",
                             "--until", "2026-06-30", "--lines", "session", vault=root, env=env).stdout)
    text = pdf_text(Path(issued["pdf"]))
    assert re.findall(r"(\d+\.\d\d) 120\.00 (\d+\.\d\d)", text) == [("1.00", "120.00")]
    assert (issued["sessions"], issued["billableHours"]) == (2, "1.00")
    again = memo("invoice", "issue", "--all", "--client", "Acme Corp", "--since", "2026-06-01", "--until", "2026-06-30",
                 vault=root, env=env, check=False)
    assert again.returncode == 1  # nothing left to bill: 'inside' is on the first invoice too


def test_two_peoples_parallel_sessions_for_one_client_each_bill_in_full(tmp_path, monkeypatch):
    """A team vault (the daemon's, fed by hybrid laptops) holds Alice's and Bob's sessions: Bob's
    09:00–12:00 for Acme billed 0 minutes beside Alice's. A session's person is its ``owner``;
    one of no known owner may be anyone's and is billed once beside any."""
    from memo_analytics.services.requests import EndSessionRequest
    from memo_analytics.services.sessions import end_session

    (tmp_path / "gitconfig").write_text("")  # the daemon's machine has no git identity of its own
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    store = VaultStore(Settings(vault_root=tmp_path / "team", timezone="UTC"))
    for sid, owner, start, end in (("alice-1", "alice@example.com", "09:00", "12:00"),
                                   ("bob-1", "Bob@Example.com", "09:00", "12:00"),
                                   ("bob-2", "bob@example.com", "11:00", "13:00"),  # Bob's own parallel hour
                                   ("imported", None, "12:30", "13:30")):  # no owner: may be either's
        start_session(store, StartSessionRequest(session_id=sid, project="web", client="Acme", owner=owner,
                                                 start_time=f"2026-11-02T{start}:00Z"))
        end_session(store, EndSessionRequest(session_id=sid, project="web", until=f"2026-11-02T{end}:00Z"))
    store.close()
    report = json.loads(memo("--json", "activity", "--all", "--tz", "UTC", vault=tmp_path / "team").stdout)
    billed = {s["sessionId"]: s["billedMinutes"] for s in report["sessions"]}
    assert billed == {"alice-1": 180, "bob-1": 180, "bob-2": 60, "imported": 30}
    assert report["byClient"]["Acme"]["durationMinutes"] == 450


def test_a_session_started_outside_a_repository_is_its_persons_by_their_global_git_identity(tmp_path, monkeypatch):
    """Two hybrid laptops recording as the README shows (`memo session start X --project shop`,
    outside any repository) gave sessions of no owner: the team vault billed Alice's 0 of 60
    minutes beside Bob's. The person's global git identity names them; a remote-mode call sends
    the laptop's, so the daemon does not put its own."""
    from memo_analytics.services.remote import _localize

    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("[user]\n\temail = alice@example.com\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    memo("session", "start", "offline-1", "--project", "shop", "--client", "Acme", vault=tmp_path / "v")
    shown = json.loads(memo("--json", "session", "show", "offline-1", vault=tmp_path / "v").stdout)
    assert shown["session"]["owner"] == "alice@example.com"
    sent, _ = _localize({"action": "session_start", "sessionId": "s1", "cwd": str(tmp_path)})
    assert sent["owner"] == "alice@example.com"
    assert _localize({"action": "session_start", "sessionId": "s1", "owner": "bob"})[0]["owner"] == "bob"


def test_a_session_of_no_known_owner_covers_no_person_and_its_outcome_does_not_hang_on_ids(tmp_path, monkeypatch):
    """An imported session of no owner (09:00–12:00) beside Alice's and Bob's parallel
    09:00–12:00 covered both of them when its id sorted first (each billed 0: 180 minutes for two
    people's six hours) and neither when it sorted last. It may be anyone's: it bills what no
    session covers and covers no known owner's session, whatever the ids."""
    from memo_analytics.analytics.billed import _union_per_person

    (tmp_path / "gitconfig").write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    for unknown_id in ("a-imported", "z-imported"):
        root = tmp_path / unknown_id
        store = VaultStore(Settings(vault_root=root, timezone="UTC"))
        for sid, owner, start, end in (("m-alice", "alice@example.com", "09:00", "12:00"),
                                       ("m-bob", "bob@example.com", "09:00", "12:00"),
                                       (unknown_id, None, "09:00", "12:30")):
            start_session(store, StartSessionRequest(session_id=sid, project="web", client="Acme", owner=owner,
                                                     start_time=f"2026-11-02T{start}:00Z"))
            from memo_analytics.services.requests import EndSessionRequest
            from memo_analytics.services.sessions import end_session
            end_session(store, EndSessionRequest(session_id=sid, project="web", until=f"2026-11-02T{end}:00Z"))
        store.close()
        report = json.loads(memo("--json", "activity", "--all", "--tz", "UTC", vault=root).stdout)
        billed = {s["sessionId"]: s["billedMinutes"] for s in report["sessions"]}
        assert billed == {"m-alice": 180, "m-bob": 180, unknown_id: 30}, unknown_id
    # an invoiced session of no owner covers one person: the one whose sessions overlap it most
    spans = [("u", 0, 180, 180, None), ("a", 0, 60, 60, "alice"), ("b", 0, 120, 120, "bob")]
    assert _union_per_person(spans, {"u": 180}) == {"u": 180, "a": 60, "b": 0}
    spans = [("u", 0, 60, 60, None), ("b", 0, 60, 60, "bob"), ("a", 0, 60, 60, "alice")]
    assert _union_per_person(spans, {"u": 60}) == {"u": 60, "a": 0, "b": 60}  # a tie: the first by name
