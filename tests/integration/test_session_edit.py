"""``memo session edit`` (issue 15 point 5): a session's client, billable flag and summary are
corrected in place; its turns follow; every report reflects the edit; a session on an issued
invoice keeps its billing fields until a credit note cancels the invoice."""

from __future__ import annotations

import json

import pytest

from memo_analytics.config import Settings
from memo_analytics.domain.errors import InvalidFieldError
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import RecordPromptRequest, StartSessionRequest
from memo_analytics.services.sessions import start_session
from memo_analytics.services.store import VaultStore
from tests.inprocess import memo

from .test_issued_invoices import ACME, ISSUER, billing, issue, run  # noqa: F401 - the fixture


def activity(billing, *args) -> dict:
    return json.loads(run(billing, "--json", "activity", "--all", "--since", "2026-06-01", "--until", "2026-06-30",
                          *args).stdout)


def test_a_new_client_moves_the_hours_and_the_turns_in_every_report(billing, tmp_path):
    memo("prompt", "record", "--body", "speed up the ETL", "--session-id", "g1", "--project", "etl", "--created",
         "2026-06-05T12:10:00Z",
         vault=billing["vault"], env=billing["env"])
    before = activity(billing)
    assert before["byClient"]["Globex"]["billableHours"] == 1.5
    edited = json.loads(run(billing, "--json", "session", "edit", "g1", "--client", "Acme Corp", "--summary",
                            "ETL speed-up").stdout)
    assert (edited["client"], edited["summary"], edited["changed"], edited["turnsUpdated"]) == (
        "Acme Corp", "ETL speed-up", ["client", "summary"], 1)
    after = activity(billing)
    assert "Globex" not in after["byClient"]
    assert after["byClient"]["Acme Corp"]["billableHours"] == before["byClient"]["Acme Corp"]["billableHours"] + 1.5
    assert activity(billing, "--client", "acme corp")["totalPrompts"] == 1  # the turn follows its session
    # the timesheet and the draft invoice read the same sessions: the ETL hour and a half is Acme's now
    sheet = json.loads(run(billing, "--json", "report", "timesheet", "--all", "--client", "Acme Corp", "--since",
                           "2026-06-01", "--until", "2026-06-30", "-o", str(tmp_path / "t.csv")).stdout)
    assert sheet["totalBillableHours"] == after["byClient"]["Acme Corp"]["billableHours"]
    assert "ETL speed-up" in (tmp_path / "t.csv").read_text(encoding="utf-8-sig")
    # the index after the edit is the index a rebuild reads back from the files
    store = VaultStore(Settings(vault_root=billing["vault"], timezone="UTC"))
    rows = sorted(tuple(r) for r in store.conn.execute("SELECT project, id, client, billable FROM records"))
    store.close()
    memo("reindex", vault=billing["vault"], env=billing["env"])
    store = VaultStore(Settings(vault_root=billing["vault"], timezone="UTC"))
    assert sorted(tuple(r) for r in store.conn.execute("SELECT project, id, client, billable FROM records")) == rows
    store.close()


def test_a_client_is_recorded_in_the_spelling_known_and_a_new_one_is_said(billing, tmp_path):
    """Found by a new user: ``--client "müller gmbh"`` was stored as typed, and Parquet, DuckDB and
    the analyst's frames grouped one client as two; ``--client "Mueller GmbH"`` (a misspelling)
    made a new client without a word. A client is recorded as the config (else the vault's
    sessions) spell it; a name neither knows is taken, and said."""
    edited = json.loads(run(billing, "--json", "session", "edit", "g1", "--client", "acme CORP").stdout)
    assert edited["client"] == "Acme Corp"  # the config's spelling
    started = run(billing, "session", "start", "n1", "--project", "etl", "--client", "Initech")
    assert "note: 'Initech' is a new client" in started.stderr  # its first session: said, as a misspelling would be
    again = run(billing, "session", "start", "n2", "--project", "etl", "--client", "INITECH")
    assert again.returncode == 0 and "new client" not in again.stderr
    assert json.loads(run(billing, "--json", "session", "show", "n2", "--project", "etl").stdout)["session"][
        "client"] == "Initech"  # the spelling the vault's sessions use
    turn = json.loads(run(billing, "--json", "prompt", "record", "--session-id", "n2", "--project", "etl", "--client",
                          "initech", "--body", "tidy up").stdout)
    assert turn["client"] == "Initech"  # a turn's too (found by a second attacker)
    separated = run(billing, "session", "start", "n3", "--project", "etl", "--client", "Acme\u2028Corp")
    assert separated.returncode == 1 and "Invalid client" in separated.stderr  # a line separator: no name
    typo = run(billing, "session", "edit", "a1", "--client", "Acme Crop")
    assert typo.returncode == 0 and "note: 'Acme Crop' is a new client" in typo.stderr
    known = run(billing, "session", "edit", "a2", "--client", "initech")
    assert known.returncode == 0 and "new client" not in known.stderr
    # one name per client in every group-by: the edited a2 joins the vault's Initech
    assert sorted(activity(billing)["byClient"]) == ["Acme Corp", "Acme Crop", "Initech"]


def test_a_projects_sessions_already_recorded_are_filed_under_a_client_at_once(billing):
    """Found by a new user: after setting ``projectClients``, the 52 sessions imported before it
    kept ``internal``, and took 52 ``memo session edit`` calls. ``memo project client`` files a
    project's sessions billed to internal (``--every``: all of them), turns included; a session
    on an issued invoice is left and named."""
    for sid, start in (("w1", "2026-06-08T09:00:00Z"), ("w2", "2026-06-09T09:00:00Z")):
        memo("session", "start", sid, "--project", "shop", "--start-time", start, vault=billing["vault"],
             env=billing["env"])
        memo("prompt", "record", "--session-id", sid, "--project", "shop", "--body", "tidy the cart",
             vault=billing["vault"], env=billing["env"])
        memo("session", "end", sid, "--project", "shop", "--until", start.replace("T09", "T10"),
             vault=billing["vault"], env=billing["env"])
    run(billing, "session", "edit", "w2", "--client", "Globex")
    ran = run(billing, "--json", "project", "client", "shop", "acme corp")
    assert ran.returncode == 0, ran.stderr
    filed = json.loads(ran.stdout)
    assert (filed["client"], filed["sessions"], filed["turnsUpdated"], filed["kept"]) == ("Acme Corp", 1, 1, 1)
    shop = json.loads(run(billing, "--json", "activity", "--project", "shop", "--since", "2026-06-01", "--until",
                          "2026-06-30").stdout)
    assert {c: v["durationMinutes"] for c, v in shop["byClient"].items()} == {"Acme Corp": 60, "Globex": 60}
    issue(billing, "--client", "Globex", "--since", "2026-06-01", "--until", "2026-06-30")
    every = run(billing, "project", "client", "shop", "Acme Corp", "--every")
    # nothing was done: exit 1, said once (it printed "0 sessions now bill Acme Corp" beside the error)
    assert every.returncode == 1 and every.stdout == ""
    assert every.stderr.strip().splitlines()[-1] == ("error: nothing filed: shop's sessions already bill Acme Corp or "
                                                     "are on issued invoices")
    # found by a new user: every session recorded after it was one more client_missing item
    # (a freelancer: "(the config's projectClients)" read as if the config mapped it to internal)
    assert every.stderr.splitlines()[0] == ("note: sessions recorded from now on in shop still bill internal (no "
                                            "projectClients.shop in the config); to file them under Acme Corp too: "
                                            "memo config set projectClients.shop 'Acme Corp'")
    run(billing, "config", "set", "projectClients.shop", "Acme Corp")
    assert "note:" not in run(billing, "project", "client", "shop", "Acme Corp", "--every").stderr
    assert run(billing, "project", "client", "nowhere", "Acme Corp").stderr.startswith(
        "error: Invalid project: no session in project nowhere")


def test_not_billable_leaves_the_invoice_and_nothing_to_change_says_so(billing):
    run(billing, "session", "edit", "a2", "--no-billable")
    assert activity(billing, "--client", "Acme Corp")["totalBillableHours"] == 1.33  # web's 80 minutes only
    same = run(billing, "session", "edit", "a2", "--no-billable")
    assert (same.returncode, same.stdout.strip()) == (1, "session a2: already so, nothing changed")
    none = run(billing, "session", "edit", "a2")
    assert none.stderr.strip() == ("error: Invalid session: nothing to change: give --client, "
                                   "--billable/--no-billable, --summary, --to-project, --start, --end, --minutes or --reviewed")
    missing = run(billing, "session", "edit", "nope", "--summary", "x")
    assert (missing.returncode, missing.stderr.strip()) == (
        1, "error: Invalid session: no session nope in the vault (memo session show lists them)")


def test_an_invoiced_session_keeps_its_billing_until_the_invoice_is_credited(billing):
    june = issue(billing, "--client", "Acme Corp", "--since", "2026-06-01", "--until", "2026-06-30")
    refused = run(billing, "session", "edit", "a1", "--client", "Globex")
    assert refused.stderr.strip() == ("error: Invalid client: session a1 is on invoice 2026-0001, which was issued "
                                      "with its client; credit it first (memo invoice credit 2026-0001)")
    assert run(billing, "session", "edit", "a1", "--summary", "CSV export").returncode == 0  # text is not billing
    moved = run(billing, "session", "edit", "a1", "--to-project", "api")
    assert moved.stderr.strip() == ("error: Invalid project: session a1 is on invoice 2026-0001, which was issued "
                                    "with its project; credit it first (memo invoice credit 2026-0001)")
    run(billing, "invoice", "credit", june["number"])
    assert run(billing, "session", "edit", "a1", "--client", "Globex").returncode == 0


def test_a_session_moved_to_another_project_takes_its_turns_and_that_projects_rate(billing, tmp_path):
    memo("prompt", "record", "--body", "add the CSV export", "--session-id", "a1", "--project", "web", "--created",
         "2026-06-02T09:05:00Z", vault=billing["vault"], env=billing["env"])
    before = activity(billing, "--client", "Acme Corp")
    assert before["byProject"]["web"]["durationMinutes"] == 80
    edited = json.loads(run(billing, "--json", "session", "edit", "a1", "--to-project", "api").stdout)
    assert (edited["project"], edited["changed"], edited["turnsUpdated"]) == ("api", ["project"], 1)
    after = activity(billing, "--client", "Acme Corp")
    assert "web" not in after["byProject"] or after["byProject"]["web"]["durationMinutes"] == 0
    assert after["byProject"]["api"]["durationMinutes"] == before["byProject"]["api"]["durationMinutes"] + 80
    api = json.loads(run(billing, "--json", "activity", "--project", "api", "--since", "2026-06-01", "--until",
                         "2026-06-30").stdout)
    assert api["totalPrompts"] == 1  # the turn moved with it
    assert not list((billing["vault"]).rglob("web/**/session-a1.md"))
    # the draft invoice bills the 80 minutes at api's own rate (140), not web's (120)
    draft = json.loads(run(billing, "--json", "report", "invoice", "--all", "--client", "Acme Corp", "--since",
                           "2026-06-01", "--until", "2026-06-30", "-o", str(tmp_path / "i.csv")).stdout)
    assert draft["totals"]["EUR"]["amount"] == "245.00"  # (80 + 25) minutes at 140, no web line at 120
    assert '"api","Work on api: 2 sessions",2,105,1.75,140.00,245.00' in (
        tmp_path / "i.csv").read_text(encoding="utf-8-sig")
    # a target that already holds a session of the id is refused, and nothing moves
    memo("session", "start", "a1", "--project", "web", "--client", "Acme Corp",
         vault=billing["vault"], env=billing["env"])
    clash = run(billing, "session", "edit", "a1", "--project", "web", "--to-project", "api")
    assert clash.stderr.strip() == "error: Invalid project: project api already holds a session a1; nothing was moved"
    # turns of the same session id in the target, without its session record: refused too, nothing overwritten
    memo("prompt", "record", "--body", "a turn of etl's own g1", "--session-id", "g1", "--project", "api",
         vault=billing["vault"], env=billing["env"])
    turns = run(billing, "session", "edit", "g1", "--project", "etl", "--to-project", "api")
    assert turns.returncode == 1 and "project api already holds " in turns.stderr and "g1" in turns.stderr
    kept = json.loads(run(billing, "--json", "prompt", "get", "prompt-g1-t1", "--project", "api").stdout)
    assert kept["body"] == "a turn of etl's own g1"
    bad = run(billing, "session", "edit", "a1", "--project", "api", "--to-project", "../etc")
    assert bad.returncode == 1 and "project" in bad.stderr


def test_a_session_is_named_by_its_id_or_by_its_records_id(billing):
    """Found by a new user: ``activity --json`` gives a session's ``id`` (``session-a2``) beside its
    ``sessionId`` (``a2``); ``session edit`` takes either."""
    edited = json.loads(run(billing, "--json", "session", "edit", "session-a2", "--summary", "API work").stdout)
    assert (edited["sessionId"], edited["summary"]) == ("a2", "API work")


def test_a_sessions_times_are_corrected_and_every_report_bills_the_new_span(billing, tmp_path):
    """A session of 0 minutes (an old SpecStory file keeps no time per message) or one left running
    is given its real span: ``--minutes`` from its start, or ``--start``/``--end``; its duration
    follows, and the activity report, the timesheet and the invoice draft bill it."""
    before = activity(billing, "--client", "Acme Corp")["totalBillableHours"]
    edited = json.loads(run(billing, "--json", "session", "edit", "z0", "--minutes", "30").stdout)
    assert (edited["startTime"], edited["endTime"], edited["durationMinutes"], edited["changed"]) == (
        "2026-06-04T09:00:00.000Z", "2026-06-04T09:30:00.000Z", 30, ["durationMinutes", "endTime"])
    assert edited["timesEdited"]
    after = activity(billing, "--client", "Acme Corp")
    assert after["totalBillableHours"] == round(before + 0.5, 2)
    sheet = json.loads(run(billing, "--json", "report", "timesheet", "--all", "--client", "Acme Corp", "--since",
                           "2026-06-01", "--until", "2026-06-30", "-o", str(tmp_path / "t.csv")).stdout)
    assert sheet["totalBillableHours"] == after["totalBillableHours"]
    moved = json.loads(run(billing, "--json", "session", "edit", "z0", "--start", "2026-06-04T08:45:00Z").stdout)
    assert (moved["startTime"], moved["endTime"], moved["durationMinutes"]) == (
        "2026-06-04T08:45:00.000Z", "2026-06-04T09:30:00.000Z", 45)
    human = run(billing, "session", "edit", "z0", "--end", "2026-06-04 12:00")  # the config's zone: Berlin, +2 h
    assert human.stdout.split() == ("session z0 (api): durationMinutes, endTime changed; now 75 minutes "
                                    "(2026-06-04 10:45 – 2026-06-04 12:00 Europe/Berlin)").split()


def test_bad_times_are_refused_by_field_and_an_open_or_invoiced_session_keeps_its_times(billing):
    def refused(*args) -> str:
        ran = run(billing, "session", "edit", *args)
        assert ran.returncode == 1 and ran.stdout == ""
        return ran.stderr.strip()

    # found by a new user: times said in UTC although given (and configured) in Berlin time
    assert refused("a1", "--end", "2026-06-02T08:00:00Z") == (
        "error: Invalid endTime: the session would end (2026-06-02 10:00 CEST) before it starts "
        "(2026-06-02 11:00 CEST)")
    assert refused("a1", "--end", "2026-06-02T11:00:00Z", "--minutes", "5") == (
        "error: Invalid minutes: give the end time or the minutes from the start, not both")
    assert refused("a1", "--start", "yesterday-ish") == "error: Invalid startTime date: 'yesterday-ish' (give a date as YYYY-MM-DD or a time as YYYY-MM-DDTHH:MM, ISO 8601)"
    assert refused("a1", "--minutes", "-5").startswith("error: Invalid minutes: ")
    assert refused("a1", "--end", "2999-01-01T00:00:00Z").startswith(
        "error: Invalid endTime: the session would end in the future")
    assert refused("a1", "--start", "2026-05-20T09:00:00Z").startswith(
        "error: Invalid startTime: the session would last 18800 minutes; a session lasts at most a week (10080 minutes)")
    memo("session", "start", "o1", "--project", "web", vault=billing["vault"], env=billing["env"])
    # named as given (it said "Invalid endTime" to --minutes), with the command that ends it
    assert refused("o1", "--minutes", "30") == (
        "error: Invalid minutes: session o1 is still open; end it first (memo session end o1 --until TIME)")
    assert refused("o1", "--start", "2026-05-20T09:00:00Z").startswith("error: Invalid startTime: session o1 is still open")
    june = issue(billing, "--client", "Acme Corp", "--since", "2026-06-01", "--until", "2026-06-30")
    assert refused("a1", "--minutes", "90") == (  # named as asked (it said "Invalid endTime")
        "error: Invalid minutes: session a1 is on invoice 2026-0001, which was issued with its times; credit it "
        "first (memo invoice credit 2026-0001)")
    assert activity(billing, "--client", "Acme Corp")["totalBillableHours"] == 1.75
    run(billing, "invoice", "credit", june["number"])
    assert run(billing, "session", "edit", "a1", "--minutes", "90").returncode == 0


def test_old_specstory_files_without_times_per_turn_are_named_at_import_and_their_time_is_set(realdata, tmp_path):
    """edobry-minsky's old Cursor SpecStory files keep one stamp per conversation: the import says
    how many new sessions are therefore 0 minutes and how to give them their time."""
    folder = realdata / "specstory-md" / "edobry-minsky"
    vault = tmp_path / "v"
    ran = memo("import", "specstory", str(folder), vault=vault)
    untimed = json.loads(memo("--json", "import", "specstory", str(folder), "--rescan", vault=tmp_path / "v2").stdout)
    assert untimed["untimed"] == 9 and untimed["sessions"] == 9
    assert ("note: 9 new sessions are 0 minutes: their transcripts keep one time for all its turns (or none per "
            "turn); give a session its time with memo session edit ID --minutes N (or --end TIME)") in ran.stderr
    first = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)["sessions"][0]
    assert first["durationMinutes"] == 0
    memo("session", "edit", first["sessionId"], "--minutes", "40", vault=vault)
    again = json.loads(memo("--json", "import", "specstory", str(folder), "--rescan", vault=vault).stdout)
    assert (again["sessions"], again["untimed"], again["errors"]) == (0, 0, [])
    assert json.loads(memo("--json", "activity", "--all", vault=vault).stdout)["totalDurationMinutes"] == 40


@pytest.mark.parametrize("killed_after", [1, 3, 4])  # a turn moved; every turn moved; the session written there too
def test_a_move_cut_short_is_finished_by_running_it_again_and_its_hand_off_follows(tmp_path, killed_after):
    """Found by an attacker: ``session edit --to-project`` killed halfway left turns in both projects,
    and running it again was refused ("already holds … nothing was moved") — nothing could reunite
    the session with its turns. The session's hand-off stayed behind, pending in the old project.
    A move marks the session first; running it again finishes it."""
    from memo_analytics.services.requests import EditSessionRequest, EndSessionRequest, HandoffInput
    from memo_analytics.services.session_edit import edit_session
    from memo_analytics.services.sessions import end_session

    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    try:
        start_session(store, StartSessionRequest(session_id="big", project="tmpabc", start_time="2026-06-01T09:00:00Z"))
        for n in range(1, 4):
            record_prompt(store, RecordPromptRequest(session_id="big", project="tmpabc", turn=n, body=f"turn {n}",
                                                     created=f"2026-06-01T09:0{n}:00Z"))
        end_session(store, EndSessionRequest(session_id="big", project="tmpabc", until="2026-06-01T10:00:00Z",
                                             handoff=HandoffInput(next_steps=["deploy"])))
        real_remove, removed = store.remove, []

        def killed(*args, **kwargs):
            if len(removed) == killed_after:
                raise KeyboardInterrupt  # as a kill -9 between two writes
            removed.append(args)
            return real_remove(*args, **kwargs)

        store.remove = killed
        with pytest.raises(KeyboardInterrupt):
            edit_session(store, EditSessionRequest(session_id="big", project="tmpabc", to_project="web"))
        store.remove = real_remove
        # found by a second attacker: another edit dropped the mark, or a move elsewhere split the turns
        for other in ({"summary": "better"}, {"to_project": "gamma"}):
            with pytest.raises(InvalidFieldError, match="was cut short; finish it first: memo session edit big"):
                edit_session(store, EditSessionRequest(session_id="big", project="tmpabc", **other))
        # the same command as typed: without --project, even when the session was already written there too
        done = edit_session(store, EditSessionRequest(session_id="big", to_project="web"))
        assert done["project"] == "web" and "movingTo" not in done
        files = sorted(p.relative_to(tmp_path / "v" / "projects").as_posix()
                       for p in (tmp_path / "v" / "projects").rglob("*.md") if p.parent.name != "projects")
        assert [f for f in files if f.startswith("tmpabc/")] == []
        assert {"web/sessions/session-big.md", "web/handoffs/handoff-big.md", "web/prompts/prompt-big-t1.md",
                "web/prompts/prompt-big-t3.md"} <= set(files)
    finally:
        store.close()


def test_a_time_the_clocks_skipped_is_refused_not_moved_by_an_hour(billing):
    """Found by an attacker: ``--start 2026-03-29T02:30`` (Europe/Berlin, the config's zone; that
    time did not exist) was stored as 03:30 without a word, billing an hour less."""
    refused = run(billing, "session", "edit", "a1", "--start", "2026-03-29T02:30", "--end", "2026-03-29T04:00")
    assert refused.returncode == 1 and refused.stderr.strip() == (
        "error: Invalid startTime: 2026-03-29T02:30 did not exist in Europe/Berlin (the clocks were put forward over "
        "it); give the time the clock showed, or its UTC offset")
    started = run(billing, "session", "start", "d1", "--project", "web", "--start-time", "2026-03-29T02:15")
    assert started.returncode == 1 and "did not exist in Europe/Berlin" in started.stderr
    moved = json.loads(run(billing, "--json", "session", "edit", "a1", "--start", "2026-03-29T01:30",
                           "--end", "2026-03-29T03:30").stdout)
    assert moved["durationMinutes"] == 60  # 01:30 CET to 03:30 CEST: one hour


def test_a_time_that_happened_twice_is_refused_not_read_as_the_first(billing):
    """Found by a billing person: ``--end 2026-10-25T02:30`` (Europe/Berlin; the clocks went back
    from 03:00 to 02:00 that night) was taken as the first 02:30 without a word — the second
    would have billed an hour more. Its UTC offset says which."""
    refused = run(billing, "session", "edit", "a1", "--start", "2026-10-25T01:30", "--end", "2026-10-25T02:30")
    assert refused.returncode == 1 and refused.stderr.strip() == (
        "error: Invalid endTime: 2026-10-25T02:30 happened twice in Europe/Berlin (the clocks were put back over "
        "it): give its UTC offset, +02:00 for the first or +01:00 for the second")
    for offset, minutes in (("+02:00", 60), ("+01:00", 120)):
        moved = json.loads(run(billing, "--json", "session", "edit", "a1", "--start", "2026-10-25T01:30",
                               "--end", f"2026-10-25T02:30{offset}").stdout)
        assert moved["durationMinutes"] == minutes
    assert run(billing, "session", "edit", "a1", "--end", "2026-10-25T03:30").returncode == 0  # once: taken


def test_a_time_edit_that_leaves_turns_outside_the_session_says_so(billing):
    """Found by a new user: ``--start 23:00 --end 23:30`` left the session's only turn (23:46)
    outside its times without a word."""
    memo("prompt", "record", "--body", "add the CSV export", "--session-id", "a1", "--project", "web", "--created",
         "2026-06-02T09:50:00Z", vault=billing["vault"], env=billing["env"])
    ran = run(billing, "session", "edit", "a1", "--start", "2026-06-02T09:00:00Z", "--end", "2026-06-02T09:30:00Z")
    assert ran.returncode == 0 and "note: 1 of its turns lies outside its new times" in ran.stderr
    assert json.loads(run(billing, "--json", "session", "edit", "a1", "--minutes", "60").stdout)["turnsOutside"] == 0


def test_session_end_says_its_refused_times_in_the_configured_zone(billing):
    """Found by a second attacker: `session end --until` refusals still quoted UTC instants
    (`2026-10-25T00:10:00.000Z is before …`) where `session edit` says local times."""
    memo("session", "start", "late", "--project", "web", "--start-time", "2026-10-25T01:30:00+01:00",
         vault=billing["vault"], env=billing["env"])
    ran = run(billing, "session", "end", "late", "--project", "web", "--until", "2026-10-25T01:10:00+01:00")
    assert ran.returncode == 1 and ran.stderr.strip() == (
        "error: Invalid until: 2026-10-25 02:10 CEST is before the session's start 2026-10-25 02:30 CEST")


def test_a_session_started_for_a_client_no_one_knows_says_so(tmp_path):
    """Found by a billing person: ``session start --client "Acme Crop"`` said nothing (an edit
    says it), and that work quietly stayed off Acme Corp's invoice."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "web", "--client", "Acme Corp", vault=vault)
    typo = memo("session", "start", "s2", "--project", "web", "--client", "Acme Crop", vault=vault)
    assert "note: 'Acme Crop' is a new client" in typo.stderr and "check the spelling" in typo.stderr
    known = memo("session", "start", "s3", "--project", "web", "--client", "acme corp", vault=vault)
    assert "new client" not in known.stderr


def test_an_edit_of_a_session_whose_file_cannot_be_read_says_why(tmp_path):
    """Found by an attacker: with ``billable: maybe`` in a session file (which reindex then left
    out), ``memo session edit`` said "no session … in the vault" — the file is there; it says
    why it cannot be read, as ``memo session end`` does, and changes nothing."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "web", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    path = vault / "projects/web/sessions/session-s1.md"
    text = path.read_text(encoding="utf-8").replace("billable: true", "billable: maybe")
    assert "billable: maybe" in text
    path.write_text(text, encoding="utf-8")
    memo("reindex", vault=vault, check=False)
    for args in (["--project", "web"], []):
        ran = memo("session", "edit", "s1", *args, "--summary", "x", vault=vault, check=False)
        last = ran.stderr.strip().splitlines()[-1]  # after the notes of an index rebuilt from no file
        assert ran.returncode == 1 and last.startswith(f"error: Cannot parse {path}: billable:"), ran.stderr
    assert path.read_text(encoding="utf-8") == text


def test_an_end_set_to_the_minute_is_the_end_every_report_prints(tmp_path):
    """Found by a billing person: ``--end 22:30`` on a session that started at 21:56:41 billed
    33 minutes and every report printed 21:56 – 22:29 (start to the minute plus the minutes). The
    end is set from the start as printed: 21:56 – 22:30, 34 minutes."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "web", "--start-time", "2026-06-15T21:56:41Z", vault=vault)
    memo("session", "end", "s1", "--project", "web", "--until", "2026-06-15T23:00:00Z", vault=vault)
    edited = json.loads(memo("--json", "session", "edit", "s1", "--project", "web", "--end", "2026-06-15T22:30:00Z",
                             vault=vault).stdout)
    assert (edited["startTime"], edited["endTime"], edited["durationMinutes"]) == (
        "2026-06-15T21:56:00.000Z", "2026-06-15T22:30:00.000Z", 34)
    table = memo("activity", "--all", "--tz", "UTC", vault=vault).stdout
    assert "2026-06-15 21:56 │ 2026-06-15 22:30" in table


def test_a_session_whose_turns_all_carry_one_time_is_counted_as_0_minutes_at_import(realdata, tmp_path):
    """Found by a billing person: a SpecStory file whose turns all carry 22:25 made a session of
    0 minutes that the import's note did not count ("1 new session is 0 minutes", two were)."""
    folder = realdata / "specstory-md" / "hpm27-agente-bsc-rag"
    ran = memo("import", "specstory", str(folder), vault=tmp_path / "v")
    sessions = json.loads(memo("--json", "session", "show", "--all", "--limit", "100", vault=tmp_path / "v").stdout)
    zero = sum(1 for s in sessions["items"] if s["durationMinutes"] == 0)
    assert zero == 2, [s["durationMinutes"] for s in sessions["items"]]
    assert "note: 2 new sessions are 0 minutes" in ran.stderr


def test_an_end_that_makes_a_session_last_over_a_week_is_refused_naming_its_last_turn(tmp_path):
    """Found by an attacker: a session started at 1970-01-01 and ended now billed 499,032 hours
    (an edit refuses more than a week). A person's or an agent's end refuses it too, on every
    interface, naming the session's last turn; an end at a time within the week is taken."""
    from tests.inprocess import tool_calls

    vault = tmp_path / "v"
    memo("session", "start", "old", "--project", "p3", "--start-time", "2026-11-01T09:00:00Z", vault=vault)
    memo("prompt", "record", "--session-id", "old", "--project", "p3", "--body", "hi", "--created",
         "2026-11-01T10:00:00Z", vault=vault)
    ran = memo("session", "end", "old", "--project", "p3", vault=vault, check=False)
    assert ran.returncode == 1 and ran.stderr.startswith("error: Invalid until: session old would last ")
    assert "a session lasts at most a week; end it at its last work (its last turn: 2026-11-01T10:00:00.000Z)" \
        in ran.stderr
    [(failed, text)] = tool_calls(vault, [{"action": "session_end", "sessionId": "old", "projectId": "p3"}])
    assert failed and "at most a week" in text
    ended = json.loads(memo("--json", "session", "end", "old", "--project", "p3", "--until", "2026-11-01T10:30:00Z",
                            vault=vault).stdout)
    assert ended["durationMinutes"] == 90


def test_a_session_file_renamed_by_hand_is_named_not_started_again(tmp_path):
    """Found in the left-over list: a session file renamed by hand (as an editor renames a note)
    is left out of the index, and ``memo session start`` of its id wrote a second
    ``session-s1.md`` — the renamed file's minutes then out of every report for good. A start,
    an end and an edit of the id name the renamed file and write nothing."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "web", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    folder = vault / "projects/web/sessions"
    (folder / "session-s1.md").rename(folder / "my notes.md")
    for args in (["session", "start", "s1", "--project", "web"], ["session", "end", "s1", "--project", "web"],
                 ["session", "end", "s1"], ["session", "edit", "s1", "--summary", "x"]):
        ran = memo(*args, vault=vault, check=False)
        last = ran.stderr.strip().splitlines()[-1]
        assert ran.returncode == 1 and last == (
            "error: Cannot parse projects/web/sessions/my notes.md: it holds session-s1 under another name; "
            "rename it to session-s1.md (a second session-s1 would leave its work out of every report)"), (args, ran.stderr)
        assert sorted(p.name for p in folder.iterdir()) == ["my notes.md"]
    other = memo("session", "start", "s2", "--project", "web", vault=vault)
    assert other.returncode == 0 and (folder / "session-s2.md").exists()


def test_an_edit_cut_short_between_turns_and_session_is_named_by_reindex_and_put_in_line(tmp_path):
    """Found by a tester of bad files: ``memo session edit S --client Beta`` that stopped after the
    turns (a sessions folder it could not write, a kill) left the turns billing Beta and the session
    internal — ``prompt list --client Beta`` listed them, ``activity --client Beta`` knew no such
    client, and nothing said so. Reindex names it with the command that puts the turns in line;
    that command, on a session already so, updates the turns (it said "nothing changed")."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "web", vault=vault)
    for turn in (1, 2):
        memo("prompt", "record", "--body", f"turn {turn}", "--session-id", "s1", "--project", "web", vault=vault)
    for turn in (1, 2):  # what the edit wrote before it was cut short
        path = vault / f"projects/web/prompts/prompt-s1-t{turn}.md"
        path.write_text(path.read_text(encoding="utf-8").replace("client: null", "client: Beta"), encoding="utf-8")
    ran = memo("reindex", vault=vault)
    assert ("note: 2 turns of session s1 (web) bill another client than the session (internal): an edit cut short? "
            "memo session edit s1 --project web --client internal puts them in line") in ran.stderr, ran.stderr
    fixed = memo("session", "edit", "s1", "--project", "web", "--client", "internal", vault=vault)
    # internal by name now (deliberate, as a start's --client internal): a change, its turns follow
    assert fixed.stdout.strip() == "session s1 (web): client (now internal) changed; its 2 turns updated too"
    assert "bill another client" not in memo("reindex", vault=vault).stderr
    again = memo("session", "edit", "s1", "--project", "web", "--client", "internal", vault=vault, check=False)
    assert (again.returncode, again.stdout.strip()) == (1, "session s1: already so, nothing changed")


def test_a_named_pipe_among_the_session_files_holds_no_start(tmp_path):
    """Found by an attacker (round six): the check for a renamed session file opened a FIFO in
    ``sessions/`` and waited for a writer: every later session start (a hook's too) hung."""
    import os
    import threading

    vault = tmp_path / "v"
    memo("session", "start", "a1", "--project", "shop", vault=vault)
    os.mkfifo(vault / "projects/shop/sessions/notes.md")
    done = []
    runner = threading.Thread(target=lambda: done.append(memo("session", "start", "a2", "--project", "shop",
                                                              vault=vault, check=False)), daemon=True)
    runner.start()
    runner.join(30)
    assert done and done[0].returncode == 0 and "started session a2" in done[0].stdout


def test_a_session_moved_into_a_project_of_another_client_says_which_client_it_still_bills(billing):
    """Found by a freelancer: a session moved into Globex's project kept billing Acme Corp, in
    Acme's currency, without a word. The move says so and names the edit that files it there."""
    billing["config"].write_text(billing["config"].read_text(encoding="utf-8") + '\n[projectClients]\nlab = "Globex"\n',
                                 encoding="utf-8")
    moved = run(billing, "session", "edit", "a1", "--to-project", "lab")
    assert moved.returncode == 0, moved.stderr
    assert ("note: it still bills Acme Corp; project lab's sessions bill Globex (projectClients): to file it there "
            "too, memo session edit a1 --project lab --client Globex") in moved.stderr, moved.stderr
    again = run(billing, "session", "edit", "a1", "--project", "lab", "--to-project", "web", "--client", "Acme Corp")
    assert "note: it still bills" not in again.stderr


def test_a_move_over_the_json_api_says_which_client_the_project_bills(billing, monkeypatch):
    """The note of a move into a project of another client was the CLI's alone: the JSON API's
    edit (what a laptop in remote mode calls) and ``--json`` name it as ``projectBills``."""
    from .test_http_api import Server

    billing["config"].write_text(billing["config"].read_text(encoding="utf-8") + '\n[projectClients]\nlab = "Globex"\n',
                                 encoding="utf-8")
    moved = run(billing, "--json", "session", "edit", "a1", "--to-project", "lab")
    assert json.loads(moved.stdout)["projectBills"] == "Globex", moved.stdout
    monkeypatch.setenv("MEMO_CONFIG", str(billing["config"]))
    server = Server(billing["vault"])
    try:
        status, answer = server.get_json("/api/sessions/a1/edit", data={"project": "lab", "toProject": "web"})
        assert (status, answer["project"], answer.get("projectBills")) == (200, "web", None), answer
        status, answer = server.get_json("/api/sessions/a1/edit", data={"project": "web", "toProject": "lab"})
        assert (status, answer["client"], answer["projectBills"]) == (200, "Acme Corp", "Globex"), answer
        status, answer = server.get_json("/api/sessions/a1/edit", data={"project": "lab", "client": "Globex"})
        assert (status, answer["client"], answer.get("projectBills")) == (200, "Globex", None), answer
    finally:
        server.stop()


def test_a_session_edited_internal_by_name_is_filed_so_on_purpose_as_one_started_so(billing):
    """Found by a breaker: ``memo session edit z --client internal`` stored no client, so Acme's
    invoice was refused over it, and the advice it gave (``memo project client p1 'Acme Corp'``)
    filed under Acme a session started ``--client internal`` on purpose too. Internal by name is
    deliberate whichever command wrote it: the invoice goes; ``project client`` leaves it (kept)."""
    for sid, start, client in (("z", "2026-06-05T09:00:00Z", None), ("y", "2026-06-06T09:00:00Z", "internal")):
        memo("session", "start", sid, "--project", "lab", *(("--client", client) if client else ()), "--start-time",
             start, vault=billing["vault"], env=billing["env"])
        memo("session", "end", sid, "--project", "lab", "--until", start.replace("T09", "T10"), vault=billing["vault"],
             env=billing["env"])
    memo("session", "start", "x", "--project", "lab", "--client", "Acme Corp", "--start-time", "2026-06-07T09:00:00Z",
         vault=billing["vault"], env=billing["env"])
    memo("session", "end", "x", "--project", "lab", "--until", "2026-06-07T10:00:00Z", vault=billing["vault"],
         env=billing["env"])
    edited = run(billing, "session", "edit", "z", "--project", "lab", "--client", "internal")
    assert edited.returncode == 0 and "client (now internal) changed" in edited.stdout, edited.stdout
    assert "client: internal" in (billing["vault"] / "projects/lab/sessions/session-z.md").read_text(encoding="utf-8")
    filed = json.loads(run(billing, "--json", "project", "client", "lab", "Acme Corp").stdout)
    assert (filed["sessions"], filed["kept"]) == (0, 2), filed
    ran = run(billing, "--json", "invoice", "issue", "--client", "Acme Corp", "--project", "lab", "--since",
              "2026-06-05", "--until", "2026-06-07")
    assert ran.returncode == 0, ran.stderr
    assert (json.loads(ran.stdout)["sessions"], json.loads(ran.stdout)["billableHours"]) == (1, "1.00"), ran.stdout
