"""The ``memo`` command line (SPEC §3.2), run in-process through its console-script entry point
(:func:`tests.inprocess.memo`; ``tests/integration/test_startup.py`` starts the real process)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pypdf import PdfReader

from tests.inprocess import memo, tool_calls

from tests.integration.test_activity import own_names

__all__ = ["grand_total", "memo", "pdf_text"]


def pdf_text(path: Path) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(str(path)).pages)


def grand_total(text: str) -> str:
    match = re.search(r"Total billable hours: ([0-9]+\.[0-9]{2})", text)
    assert match, text[-500:]
    return match.group(1)


def test_record_list_search_get_round_trip_as_json(tmp_path):
    vault = tmp_path / "v"
    rec = json.loads(memo("--json", "prompt", "record", "--body", "Refactor the invoice module", "--session-id",
                          "s1", "--project", "acme", "--client", "Acme", "--ide", "cursor", vault=vault).stdout)
    assert rec["id"] == "prompt-s1-t1" and rec["ide"] == "cursor" and rec["client"] == "Acme"
    page = json.loads(memo("--json", "prompts", "list", "--project", "acme", vault=vault).stdout)
    assert list(page) == ["total", "limit", "offset", "hasMore", "items"] and page["total"] == 1
    found = json.loads(memo("--json", "prompt", "search", "invoice", "--project", "acme", vault=vault).stdout)
    assert [i["id"] for i in found["items"]] == ["prompt-s1-t1"]
    got = json.loads(memo("--json", "prompt", "get", "prompt-s1-t1", vault=vault).stdout)
    assert got["body"] == "Refactor the invoice module"


def test_session_start_end_and_activity_json_keys(tmp_path):
    vault = tmp_path / "v"
    memo("session", "start", "s9", "--project", "acme", "--client", "Acme", "--start-time", "2026-01-05T09:00:00Z",
         vault=vault)
    memo("prompt", "record", "--body", "go", "--session-id", "s9", "--project", "acme", vault=vault)
    ended = json.loads(memo("--json", "session", "end", "s9", "--until", "2026-01-05T10:30:00Z", "--pr",
                            "https://github.com/o/r/pull/7", "--summary", "done", vault=vault).stdout)
    assert ended["durationMinutes"] == 90 and ended["deliverables"][0]["type"] == "pr"
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    for key in ("totalDurationMinutes", "totalBillableHours", "byClient", "byProject", "totalPrompts", "sessions"):
        assert key in report
    assert report["totalBillableHours"] == 1.5 and report["byClient"]["Acme"]["durationMinutes"] == 90
    assert set(report["sessions"][0]) >= {"id", "sessionId", "project", "client", "billable", "startTime", "endTime",
                                          "durationMinutes", "taskSlug", "summary", "deliverables"}
    # found by a new user: the sessions table listed an open session the per-client count left out, unsaid
    memo("session", "start", "s10", "--project", "acme", "--client", "Acme", "--start-time", "2026-01-05T11:00:00Z",
         vault=vault)
    # and a turn's time in memo session show names its zone, as the session's own line does
    shown = memo("session", "show", "s9", "--project", "acme", vault=vault, env={"MEMO_TIMEZONE": "Europe/Berlin"}).stdout
    assert re.search(r"\n\[turn 1\] \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} Europe/Berlin\ngo\n", shown), shown
    # which sessions had the most turns: each listed session says how many it holds
    listed = json.loads(memo("--json", "session", "show", "--all", vault=vault).stdout)["items"]
    assert [(item["sessionId"], item["turns"]) for item in listed] == [("s10", 0), ("s9", 1)]
    table = memo("activity", "--all", vault=vault).stdout
    assert "│ Work on acme " in table
    empty = memo("activity", "--all", "--since", "2025-11-01", "--until", "2025-11-30", vault=vault)
    assert empty.stderr.strip() == "note: no session in this period and scope"  # not empty tables alone
    sheet = memo("report", "timesheet", "--all", "--since", "2025-11-01", "--until", "2025-11-30", "-o",
                 str(tmp_path / "empty.pdf"), vault=vault)  # written, and said to be empty
    assert sheet.stderr.strip() == "note: no billable session in this period and scope: the timesheet lists none"  # s10 has no summary: described as the timesheet describes it
    assert table.rstrip().endswith("Total billable: 1:30 (1.50 h) · prompts: 1 · 1 open session not counted until it "
                                   "ends")


@pytest.mark.parametrize(
    "args, message",
    [
        (["prompt", "record", "--body", "x", "--session-id", "../etc"], "error: Invalid sessionId:"),
        (["prompt", "record", "--body", "   "], "error: Invalid body: must not be empty"),
        (["prompt", "record", "--body", "x", "--project", "a/b"], "error: Invalid project:"),
        (["prompt", "record", "--body", "x", "--turn", "0", "--session-id", "s"], "error: Invalid turn:"),
        (["prompt", "list", "--since", "2026-13-45"], "error: Invalid since date: '2026-13-45' (give a date as YYYY-MM-DD, a time as YYYY-MM-DDTHH:MM, a month YYYY-MM, a year YYYY or an ISO week YYYY-Www, ISO 8601)"),
        (["activity", "--all", "--until", "soon"], "error: Invalid until date: 'soon' (give a date as YYYY-MM-DD, a time as YYYY-MM-DDTHH:MM, a month YYYY-MM, a year YYYY or an ISO week YYYY-Www, ISO 8601)"),
        (["activity", "--all", "--tz", "Mars/Olympus"], "error: Invalid tz: unknown time zone 'Mars/Olympus'"),
        (["session", "end", "ghost"], "error: No session record for ghost: memo session start ghost --project PROJECT starts it"),
        (["prompt", "get", "nothing-here"], "error: Record not found: nothing-here"),
        (["session", "end", "s", "--deliverables", "{bad"], "error: Invalid deliverables: not JSON"),
    ],
)
def test_bad_input_is_one_line_non_zero_and_writes_nothing(tmp_path, args, message):
    vault = tmp_path / "v"
    proc = memo(*args, vault=vault, check=False)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), proc.stderr
    assert not (vault / "projects").exists()


def test_get_of_an_unknown_id_names_it(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "x", "--project", "p", vault=vault)
    proc = memo("prompt", "get", "nothing-here", vault=vault, check=False)
    assert proc.returncode == 1 and proc.stderr.strip() == "error: Record not found: nothing-here"


def test_default_vault_is_under_home_never_the_current_repository(tmp_path):
    home, repo = tmp_path / "home", tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    home.mkdir()
    memo("prompt", "record", "--body", "hello", cwd=repo, env={"HOME": str(home)})
    assert list((home / ".memo" / "vault" / "projects" / "repo" / "prompts").glob("*.md"))
    assert [p.name for p in repo.iterdir()] == [".git"]


def test_memo_vault_env_sets_the_vault(tmp_path):
    memo("prompt", "record", "--body", "hello", "--project", "p", env={"MEMO_VAULT": str(tmp_path / "envvault")})
    assert list((tmp_path / "envvault" / "projects" / "p" / "prompts").glob("*.md"))


def test_demo_builds_the_sample_and_its_pdf_total_matches_activity(tmp_path):
    out = tmp_path / "my demo"  # a home folder with a space: the printed commands still paste
    proc = memo("demo", "--out", str(out))
    assert "timesheet PDF" in proc.stdout and str(out / "timesheet.pdf") in proc.stdout
    assert f"try          : memo --vault-root '{out / 'vault'}' prompt search invoices --all" in proc.stdout
    # and the way to one's own agents' work (found by a new user: every line was the sample's)
    assert "your own      : memo import auto      # what your agents already left on this machine" in proc.stdout
    vault = out / "vault"
    report = json.loads(memo("--json", "activity", "--all", "--tz", "Europe/Berlin", vault=vault).stdout)
    text = pdf_text(out / "timesheet.pdf")
    assert grand_total(text) == f"{report['totalBillableHours']:.2f}"
    assert "All times in Europe/Berlin" in text
    clients = set(report["byClient"])
    assert {"Acme Corp", "Globex", "Initech"} <= clients
    assert any(not s["billable"] for s in report["sessions"])
    assert "(+1d)" in text  # the session crossing local midnight
    assert len({s["project"] for s in report["sessions"]}) >= 4
    # deterministic: a second demo produces the same vault content
    first = {p.relative_to(vault): p.read_bytes() for p in (vault / "projects").rglob("*.md")}
    memo("demo", "--out", str(out))
    second = {p.relative_to(vault): p.read_bytes() for p in (vault / "projects").rglob("*.md")}
    assert first == second


@pytest.mark.parametrize("mine", ["vault/keep.txt", "timesheet.pdf"])
def test_demo_refuses_a_folder_it_did_not_make_and_touches_nothing(tmp_path, mine):
    (tmp_path / mine).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / mine).write_text("mine")
    proc = memo("demo", "--out", str(tmp_path), check=False)
    assert proc.returncode == 1 and "was not made by memo demo" in proc.stderr
    assert (tmp_path / mine).read_text() == "mine"


def test_demo_checks_the_zone_before_replacing_its_previous_vault(tmp_path):
    memo("demo", "--out", str(tmp_path / "d"))
    before = sorted(p.name for p in (tmp_path / "d" / "vault" / "projects").iterdir())
    proc = memo("demo", "--out", str(tmp_path / "d"), "--tz", "Nowhere/Zone", check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("error: Invalid tz:")
    assert sorted(p.name for p in (tmp_path / "d" / "vault" / "projects").iterdir()) == before


def test_timesheet_pdf_rows_subtotals_and_total_for_a_client_filter(tmp_path):
    vault = tmp_path / "v"
    memo("demo", "--out", str(tmp_path / "d"))
    vault = tmp_path / "d" / "vault"
    report = json.loads(memo("--json", "activity", "--all", "--client", "globex", "--tz", "Asia/Tokyo",
                             vault=vault).stdout)
    pdf = tmp_path / "globex.pdf"
    memo("report", "timesheet", "--all", "--client", "globex", "--tz", "Asia/Tokyo", "-o", str(pdf), vault=vault)
    text = pdf_text(pdf)
    assert grand_total(text) == f"{report['totalBillableHours']:.2f}"
    assert "Client: Globex" in text and "Client: Acme" not in text
    assert "All times in Asia/Tokyo" in text
    rows = [s for s in report["sessions"] if s["billable"] and s["durationMinutes"] is not None]
    assert text.count("globex-etl") >= len(rows)


def test_reindex_reports_counts(tmp_path):
    memo("demo", "--out", str(tmp_path / "d"))
    vault = tmp_path / "d" / "vault"
    result = json.loads(memo("--json", "reindex", vault=vault).stdout)
    files = [p for kind in ("prompts", "sessions") for p in vault.glob(f"projects/*/{kind}/*.md")]
    assert len(files) == 76  # the sample: 17 sessions, 59 turns
    assert result["indexed"] == len(files) and result["skipped"] == []


def _commands(group, prefix=()):
    """Every command under ``group``, sub-commands too (duck-typed: typer may ship its own click,
    whose groups are no ``click.Group`` of the installed one)."""
    for name, command in group.commands.items():
        yield (*prefix, name), command
        if hasattr(command, "commands"):
            yield from _commands(command, (*prefix, name))


def test_every_command_has_help_text():
    import typer.main

    from memo_analytics.interfaces.cli import app

    root = typer.main.get_command(app)
    assert ("invoice", "show") in dict(_commands(root))  # the walk reaches sub-commands
    missing = [" ".join(path) for path, command in _commands(root) if not (command.help or "").strip()]
    assert missing == []
    for path, command in _commands(root):
        for param in command.params:
            if param.param_type_name == "option" and param.name != "help":
                assert (param.help or "").strip(), f"{' '.join(path)} {param.name} lacks help"
    # a docstring's reST markup reached `memo invoice --help` as a literal ``-o``
    markup = [" ".join(path) for path, command in _commands(root) for text in
              [command.help or "", command.short_help or "", *(getattr(p, "help", "") or "" for p in command.params)]
              if re.search(r"``|:(func|class|data|meth):", text)]
    assert markup == []


def test_a_command_a_person_reaches_for_points_to_the_one_that_does_it(tmp_path):
    """``memo invoice void`` (or cancel, delete …) says an issued invoice is cancelled by a credit note."""
    for word in ("void", "Cancel", "delete"):
        typed = memo("invoice", word, "2026-0001", vault=tmp_path / "v", check=False)
        assert (typed.returncode, typed.stderr.strip()) == (2, (
            f"error: No such command '{word}'. (memo invoice); an issued invoice is cancelled by a credit note: "
            "memo invoice credit NUMBER; see --help"))
    other = memo("invoice", "frob", vault=tmp_path / "v", check=False)
    assert other.stderr.strip() == "error: No such command 'frob'. (memo invoice); see --help"
    # found by a billing person: the README names --skip-unpriced right after `memo invoice issue`
    option = memo("invoice", "issue", "--skip-unpriced", "--client", "x", vault=tmp_path / "v", check=False)
    assert (option.returncode, option.stderr.strip()) == (2, (
        "error: No such option: --skip-unpriced (Possible options: --since) (memo invoice issue); --skip-unpriced is "
        "an option of memo report invoice; see --help"))
    nowhere = memo("activity", "--frob", vault=tmp_path / "v", check=False)
    assert nowhere.stderr.strip() == "error: No such option: --frob (memo activity); see --help"


def test_reads_outside_a_repository_cover_every_project_and_inside_one_only_its_own(tmp_path):
    vault = tmp_path / "v"
    repo = tmp_path / "acme-web"
    (repo / ".git").mkdir(parents=True)
    memo("prompt", "record", "--body", "in the repo", vault=vault, cwd=repo)
    memo("prompt", "record", "--body", "elsewhere", "--project", "other", vault=vault)
    outside = json.loads(memo("--json", "prompt", "list", vault=vault, cwd=tmp_path).stdout)
    inside = json.loads(memo("--json", "prompt", "list", vault=vault, cwd=repo).stdout)
    assert outside["total"] == 2
    assert [i["project"] for i in inside["items"]] == ["acme-web"]


@pytest.mark.slow
def test_real_transcripts_imported_by_the_cli_agree_with_the_timesheet_and_reimport_changes_nothing(tmp_path, realdata):
    import hashlib

    vault = tmp_path / "v"
    sources = [("claude-code", "claude-code-jsonl"), ("specstory", "specstory-md"), ("codex", "codex-rollouts")]
    lines = [memo("import", name, str(realdata / folder), vault=vault).stdout.strip() for name, folder in sources]
    assert lines == ["files 16, sessions 17, turns 30, skipped 6", "files 28, sessions 37, turns 275, skipped 0",
                     "files 3, sessions 3, turns 39, skipped 0"]

    def digest() -> dict[str, str]:
        return {str(p.relative_to(vault)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in (vault / "projects").rglob("*") if p.is_file()}

    before = digest()
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    memo("report", "timesheet", "--all", "-o", str(tmp_path / "t.pdf"), vault=vault)
    assert grand_total(pdf_text(tmp_path / "t.pdf")) == f"{report['totalBillableHours']:.2f}"
    assert report["totalPrompts"] == 30 + 275 + 39 and len(report["sessions"]) == 17 + 37 + 3
    again = [memo("import", name, str(realdata / folder), vault=vault).stdout.strip() for name, folder in sources]
    assert [line.split(", ")[1:3] for line in again] == [["sessions 0", "turns 0"]] * 3
    assert digest() == before


def test_project_and_all_exclude_each_other(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "x", "--project", "p", vault=vault)
    for args in (["prompt", "list"], ["activity"], ["report", "timesheet", "-o", str(tmp_path / "t.pdf")]):
        proc = memo(*args, "--all", "--project", "p", vault=vault, check=False)
        assert proc.returncode == 1
        assert proc.stderr.strip() == "error: Invalid project: --project and --all exclude each other"
    # found by an analyst: said as a MemoError, no field, where the README promises the field named
    wired = json.loads(memo("--json", "activity", "--all", "--project", "p", vault=vault, check=False).stderr)
    assert (wired["errorType"], wired["field"]) == ("InvalidFieldError", "project")


def test_a_misspelt_client_is_refused_naming_the_known_clients(tmp_path):
    """A client no session and no config entry has is refused (exit 1, no file written) by the
    activity report, the timesheet and the draft invoice; a known client with nothing in the
    period, or one of the config's [clients] without sessions yet, is an empty report."""
    vault = tmp_path / "v"
    config = tmp_path / "config.toml"
    config.write_text('[clients."Globex"]\nhourlyRate = "100"\ncurrency = "EUR"\n', encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    memo("session", "start", "a", "--project", "p", "--client", "Acme Corp", "--start-time", "2026-03-02T09:00:00Z",
         vault=vault, env=env)
    memo("session", "end", "a", "--until", "2026-03-02T10:00:00Z", vault=vault, env=env)
    refused = ("error: Invalid client: no session and no [clients] entry of the config has the client 'acme' "
               "(exact name, any case); clients known: Acme Corp, Globex")
    for args in (["activity"], ["--json", "activity"], ["report", "timesheet", "-o", str(tmp_path / "t.pdf")],
                 ["report", "invoice", "-o", str(tmp_path / "i.pdf")]):
        proc = memo(*args, "--all", "--client", "acme", vault=vault, env=env, check=False)
        said = proc.stderr.strip()
        if "--json" in args:  # the same words, as JSON
            said = "error: " + json.loads(said)["error"]
        assert (proc.returncode, said, proc.stdout) == (1, refused, ""), args
    assert not (tmp_path / "t.pdf").exists() and not (tmp_path / "i.pdf").exists()
    proc = memo("activity", "--all", "--client", "ACME CORP", "--until", "2026-03-01", vault=vault, env=env)
    assert "note: the client 'ACME CORP' has no session in this period and scope" in proc.stderr
    assert "Total billable: 0:00" in proc.stdout
    report = json.loads(memo("--json", "activity", "--all", "--client", "globex", vault=vault, env=env).stdout)
    assert (report["totalSessions"], report["totalBillableHours"]) == (0, 0)
    memo("report", "timesheet", "--all", "--client", "Acme Corp", "-o", str(tmp_path / "t.pdf"), vault=vault, env=env)
    assert grand_total(pdf_text(tmp_path / "t.pdf")) == "1.00"


def test_reending_says_the_times_are_kept(tmp_path):
    vault = tmp_path / "v"
    memo("session", "start", "a", "--project", "p", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    memo("session", "end", "a", "--until", "2026-03-02T10:00:00Z", vault=vault)
    record = vault / "projects" / "p" / "sessions" / "session-a.md"
    before = record.read_bytes()
    # found by an attacker: ending it again changed nothing, yet rewrote the file (a later `updated`)
    # and exited 0; it says nothing changed and exits 1, the file as it was
    for again in (("--until", "2026-03-02T11:00:00Z"), ()):
        proc = memo("session", "end", "a", *again, vault=vault, check=False)
        assert proc.returncode == 1 and proc.stdout.startswith(
            "session a was already ended (60 minutes, 2026-03-02 09:00 – 2026-03-02 10:00 Etc/UTC): nothing changed")
        assert record.read_bytes() == before
        # the end asked for and not taken is warned of; a plain re-end asks for none
        assert ("warning: session a was already ended at 2026-03-02T10:00:00.000Z" in proc.stderr) == bool(again)
    proc = memo("session", "end", "a", "--summary", "Pagination", vault=vault)
    assert "was already ended; its times and duration are kept (60 minutes" in proc.stdout
    assert record.read_bytes() != before and "summary: Pagination" in record.read_text()


def test_prompt_record_can_be_backdated(tmp_path):
    vault = tmp_path / "v"
    rec = json.loads(memo("--json", "prompt", "record", "--body", "x", "--project", "p", "--created",
                          "2026-03-02T10:00:00+01:00", vault=vault).stdout)
    assert rec["created"] == "2026-03-02T09:00:00.000Z"


def test_a_client_spelled_several_ways_is_one_line_under_its_usual_spelling(tmp_path):
    vault = tmp_path / "v"
    for n, (client, hour) in enumerate([("Acme", 9), ("ACME", 11), ("Acme", 13)]):
        memo("session", "start", f"s{n}", "--project", "p", "--client", client,
             "--start-time", f"2026-03-02T{hour:02d}:00:00Z", vault=vault)
        memo("session", "end", f"s{n}", "--until", f"2026-03-02T{hour:02d}:30:00Z", vault=vault)
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert own_names(report["byClient"]) == {"Acme": {"durationMinutes": 90, "billableHours": 1.5, "sessions": 3}}
    memo("report", "timesheet", "--all", "--since", "2026-03-01", "--until", "2026-03-31", "--tz", "UTC",
         "-o", str(tmp_path / "t.pdf"), vault=vault)
    text = pdf_text(tmp_path / "t.pdf")
    assert "Client: Acme" in text and "Client: ACME" not in text
    assert "2026-03-01 – 2026-03-31" in text


def test_handoff_through_the_cli(tmp_path):
    vault = tmp_path / "v"
    memo("session", "start", "a", "--project", "p", "--branch", "main", vault=vault)
    memo("session", "end", "a", "--next-step", "run migrations", "--failed", "tried X", "--handoff-branch", "main",
         vault=vault)
    pending = json.loads(memo("--json", "session", "handoff", "--all", vault=vault).stdout)
    assert [h["id"] for h in pending["items"]] == ["handoff-a"]
    started = memo("session", "start", "b", "--project", "p", "--branch", "main", vault=vault).stdout
    assert "hand-off claimed (handoff-a)" in started and "- run migrations" in started
    assert json.loads(memo("--json", "session", "handoff", "--all", vault=vault).stdout)["total"] == 0
    proc = memo("session", "end", "b", "--failed", "x", vault=vault, check=False)
    assert proc.returncode == 1 and "give at least one --next-step" in proc.stderr


def test_the_progress_bar_on_a_terminal_runs_no_thread_of_its_own(monkeypatch):
    """An import forks its parse workers only in a process of one thread: the progress bar at a
    terminal is redrawn by the work, not by a refresh thread (it kept a first import at a
    terminal on one core)."""
    import threading

    from memo_analytics.interfaces.cli import common

    monkeypatch.setattr(common.err, "_force_terminal", True)
    assert common.err.is_terminal
    before = threading.active_count()
    bar = common._progress("import x", 3)
    assert not bar.progress.disable
    with bar as advance:
        for _ in range(3):
            advance()
        assert threading.active_count() == before
    assert bar.progress.tasks[0].completed == 3


def test_a_client_given_to_a_second_import_says_it_changes_no_session_already_imported(tmp_path, realdata):
    """Sessions already in the vault are not re-filed by ``import --client`` (imports are
    idempotent): the import says so and how to change one, instead of a silent no-op."""
    vault = tmp_path / "v"
    memo("import", "codex", str(realdata / "codex-rollouts"), vault=vault)
    again = memo("import", "codex", str(realdata / "codex-rollouts"), "--rescan", "--client", "Acme", vault=vault)
    assert again.stdout.strip() == "files 3, sessions 0, turns 0, skipped 0"
    assert again.stderr.strip() == (
        "note: --client applies to sessions new to the vault; these files' sessions were imported before and keep "
        "what they had (memo session edit ID --client NAME, --no-billable or --to-project P changes one)")
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert set(report["byClient"]) == {"internal"}


def test_the_by_day_table_says_sessions_are_split_at_midnight_only_when_one_is(tmp_path):
    vault = tmp_path / "v"
    memo("session", "start", "day", "--project", "p", "--client", "Acme", "--start-time", "2026-03-02T09:00:00Z",
         vault=vault)
    memo("session", "end", "day", "--until", "2026-03-02T10:00:00Z", vault=vault)
    shown = memo("activity", "--all", "--tz", "UTC", vault=vault).stdout
    assert "Billable time by day (UTC)" in shown and "past midnight" not in shown
    memo("session", "start", "night", "--project", "p", "--client", "Acme", "--start-time",
         "2026-03-02T23:30:00Z", vault=vault)
    memo("session", "end", "night", "--until", "2026-03-03T00:30:00Z", vault=vault)
    # found by a billing user: "sessions split at midnight" under the table read as an orphan heading
    assert "1 session past midnight: split between its days" in memo("activity", "--all", "--tz", "UTC",
                                                                      vault=vault).stdout


def test_a_turn_recorded_after_its_session_ended_is_said_to_bill_nothing(tmp_path):
    vault = tmp_path / "v"
    memo("session", "start", "fix-api", "--project", "p", "--start-time", "2026-03-02T08:00:00Z", vault=vault)
    memo("session", "end", "fix-api", "--until", "2026-03-02T09:30:00Z", vault=vault)
    late = memo("prompt", "record", "--session-id", "fix-api", "--project", "p", "--body", "one more thing",
                vault=vault)
    assert "recorded prompt-fix-api-t1 in project p" in late.stdout
    assert ("note: session fix-api ended at 2026-03-02T09:30:00.000Z; this turn comes after its end, so its time "
            "bills nothing (the session keeps its times); for more work start a new session") in late.stderr
    on_time = memo("prompt", "record", "--session-id", "fix-api", "--project", "p", "--body", "within it",
                   "--created", "2026-03-02T09:00:00Z", vault=vault)
    assert "note:" not in on_time.stderr
    early = json.loads(memo("--json", "prompt", "record", "--session-id", "fix-api", "--project", "p", "--body",
                            "before it", "--created", "2026-03-02T07:00:00Z", vault=vault).stdout)
    assert early["warnings"] == ["session fix-api started at 2026-03-02T08:00:00.000Z; this turn comes before its "
                                 "start, so its time bills nothing (the session keeps its times: memo session edit "
                                 "--start moves it)"]
    # an agent over MCP is told as well (it was answered as if the turn counted)
    memo("session", "start", "open-one", "--project", "p", vault=vault)
    (failed, late), (_, open_one) = tool_calls(vault, [
        {"action": "record", "sessionId": "fix-api", "projectId": "p", "body": "and after it"},
        {"action": "record", "sessionId": "open-one", "projectId": "p", "body": "in it"}])
    assert not failed and json.loads(late)["warnings"][0].startswith("session fix-api ended at 2026-03-02T09:30")
    assert "warnings" not in json.loads(open_one)


def test_the_activity_table_prints_a_sessions_span_as_the_timesheet_does(tmp_path):
    """13:00:40–13:04:10 is 3.5 → 4 minutes: the timesheet prints 13:00–13:04; the activity table
    printed the recorded end, 13:04 vs 13:03 for 13:00:20–13:03:50 (found by a helper)."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "p", "--client", "Acme", "--start-time", "2026-03-02T13:00:20Z",
         vault=vault)
    memo("session", "end", "s1", "--until", "2026-03-02T13:03:50Z", vault=vault)
    shown = memo("activity", "--all", "--tz", "UTC", vault=vault).stdout
    row = next(line for line in shown.splitlines() if "2026-03-02 13:00" in line and "Acme" in line)
    assert "2026-03-02 13:04" in row and "13:03" not in row
    memo("report", "timesheet", "--all", "--tz", "UTC", "-o", str(tmp_path / "t.csv"), vault=vault)
    assert "13:00" in (tmp_path / "t.csv").read_text(encoding="utf-8-sig") and \
        ",13:04," in (tmp_path / "t.csv").read_text(encoding="utf-8-sig").replace('"', "")


def test_session_and_prompt_lines_show_times_in_the_configured_zone(tmp_path):
    vault = tmp_path / "v"
    env = {"MEMO_TIMEZONE": "Europe/Berlin"}
    started = memo("session", "start", "z1", "--project", "p", "--start-time", "2026-11-02T09:00:00+01:00",
                   vault=vault, env=env)
    assert "at 2026-11-02 09:00 (Europe/Berlin)" in started.stdout
    ended = memo("session", "end", "z1", "--until", "2026-11-02T08:30:00Z", vault=vault, env=env)
    assert "30 minutes (2026-11-02 09:00 – 2026-11-02 09:30 Europe/Berlin)" in ended.stdout
    memo("session", "start", "z2", "--project", "p", "--start-time", "2026-11-02T11:40:50Z", vault=vault, env=env)
    short = memo("session", "end", "z2", "--until", "2026-11-02T11:41:10Z", vault=vault, env=env)
    # 20 seconds: 0 minutes, printed as a span of 0 minutes as every report prints it (it said 12:40 – 12:41)
    assert "0 minutes (2026-11-02 12:40 – 2026-11-02 12:40 Europe/Berlin)" in short.stdout
    memo("prompt", "record", "--session-id", "z1", "--project", "p", "--body", "hello", "--created",
         "2026-11-02T08:10:00Z", vault=vault, env=env)
    listed = memo("prompt", "list", "--all", vault=vault, env=env).stdout
    assert "created (Europe/Berlin)" in listed and "2026-11-02 09:10" in listed


def test_ids_in_listings_are_never_broken_across_lines(tmp_path, monkeypatch):
    """Imported ids (`prompt-specstory-<uuid>-1-t1`, 60–80 characters) were folded inside their
    cell, so the id `memo prompt get` needs could not be copied. On a console where the whole id
    fits beside the other columns it is one line of the table; on a narrower one each row is its
    id on a line of its own, then the rest."""
    from memo_analytics.interfaces.cli import common

    vault = tmp_path / "v"
    long_id = "specstory-887aca16-4688-482f-b016-492617e56372-3"
    memo("session", "start", long_id, "--project", "web", vault=vault)
    memo("prompt", "record", "--session-id", long_id, "--project", "web", "--body", "Make the redirect work " * 8,
         vault=vault)
    wide = memo("prompt", "search", "redirect", "--all", vault=vault).stdout
    assert f"prompt-{long_id}-t1" in wide and "┃" in wide  # a table, the id whole on its line
    sessions = memo("session", "show", "--all", vault=vault).stdout
    assert long_id in sessions and "1 session" in sessions and "1 sessions" not in sessions
    monkeypatch.setattr(common.out, "_width", 90)
    narrow = memo("prompt", "search", "redirect", "--all", vault=vault).stdout
    lines = narrow.splitlines()
    assert f"prompt-{long_id}-t1" in lines and "┃" not in narrow
    following = lines[lines.index(f"prompt-{long_id}-t1") + 1]
    assert following.startswith("  ") and " · web · " in following and "Make the redirect work" in following


def test_a_session_listing_says_which_page_it_shows_and_where_the_next_begins(tmp_path):
    """Found by a new user: `memo session show --all` titled its table "52 sessions" and showed 20
    rows, with no "showing 1–20" nor "more: --offset 20" as the prompt listings have."""
    vault = tmp_path / "v"
    for n in range(3):
        memo("session", "start", f"s{n}", "--project", "web", "--start-time", f"2026-06-0{n + 1}T09:00:00Z", vault=vault)
    first = memo("session", "show", "--all", "--limit", "2", vault=vault).stdout
    assert "3 sessions (showing 1–2)" in first and first.rstrip().endswith("more: --offset 2")
    last = memo("session", "show", "--all", "--limit", "2", "--offset", "2", vault=vault).stdout
    assert "3 sessions (showing 3–3)" in last and "more:" not in last
    whole = memo("session", "show", "--all", vault=vault).stdout
    assert "3 sessions" in whole and "showing" not in whole and "more:" not in whole
    beyond = memo("session", "show", "--all", "--offset", "5", vault=vault).stdout
    assert beyond.strip() == "No sessions from offset 5 (3 in all)."


def test_a_search_without_words_is_refused_naming_the_query(tmp_path):
    """`memo prompt search` with no query answered an empty page and exit 0, as if nothing
    matched; the command searched nothing, and says so (the MCP tool keeps SPEC §2.6's empty page)."""
    vault = tmp_path / "v"
    memo("prompt", "record", "--project", "web", "--body", "Fix the login redirect", vault=vault)
    for args in ([], ["   "], ['"*('], ["--query", "--"]):
        ran = memo("prompt", "search", *args, "--all", vault=vault, check=False)
        assert ran.returncode == 1 and ran.stderr.startswith("error: Invalid query: give words to search for"), args
    assert json.loads(memo("--json", "prompt", "search", "login", "--all", vault=vault).stdout)["total"] == 1


def test_a_client_filter_of_a_listing_matches_the_exact_name_in_any_case_as_reports_do(tmp_path):
    """``activity --client "acme corp"`` found the Acme Corp sessions; ``prompt list`` (and search,
    ``session show``, the API, the tool and the dashboard's Client box) with the same filter found
    none (found by four helpers). A listing matches the client's exact name in any case, as every
    report does; a part of the name matches nothing."""
    vault = tmp_path / "v"
    memo("session", "start", "a", "--project", "p", "--client", "Acme Corp", "--start-time", "2026-03-02T09:00:00Z",
         vault=vault)
    memo("prompt", "record", "--session-id", "a", "--project", "p", "--body", "fix the cart", vault=vault)

    def listed(*args: str) -> list[str]:
        return [i.get("sessionId") for i in json.loads(memo("--json", *args, vault=vault).stdout)["items"]]

    for args in (["prompt", "list", "--all"], ["prompt", "search", "cart", "--all"], ["session", "show", "--all"]):
        for name in ("Acme Corp", "acme corp", "ACME CORP"):
            assert listed(*args, "--client", name) == ["a"], (args, name)
        assert listed(*args, "--client", "acme") == [], args  # the exact name, not a part of it
    [(error, text)] = tool_calls(vault, [{"action": "list", "client": "acme corp", "crossProject": True}])
    assert not error and json.loads(text)["total"] == 1


def test_a_turn_of_a_session_the_project_does_not_hold_is_said_with_the_closest_ids(tmp_path):
    """A mistyped ``--session-id`` filed the turn in no session — billing nothing — without a word."""
    vault = tmp_path / "v"
    memo("session", "start", "fix-login", "--project", "shop", vault=vault)
    typo = memo("prompt", "record", "--session-id", "fix-logn", "--project", "shop", "--body", "x", vault=vault)
    assert typo.stderr.strip() == ("note: project shop holds no session fix-logn: this turn bills nothing until one is "
                                   "recorded (the session_start action, or memo session start fix-logn --project "
                                   "shop); did you mean fix-login?")
    answer = json.loads(memo("--json", "prompt", "record", "--session-id", "zzz", "--project", "shop", "--body", "y",
                             vault=vault).stdout)
    assert answer["warnings"] == ["project shop holds no session zzz: this turn bills nothing until one is recorded "
                                  "(the session_start action, or memo session start zzz --project shop)"]
    fine = memo("prompt", "record", "--session-id", "fix-login", "--project", "shop", "--body", "z", vault=vault)
    assert fine.stderr == ""


def test_a_limit_over_a_page_is_said(tmp_path):
    """`--limit 500` showed 100 without a word (a page holds at most 100, SPEC §2.6)."""
    vault = tmp_path / "v"
    memo("prompt", "record", "--project", "p", "--body", "x", vault=vault)
    ran = memo("prompt", "list", "--all", "--limit", "500", vault=vault)
    assert ran.stderr.strip() == ("note: a page holds at most 100 prompts (--limit 500 asked); --offset pages on, "
                                  "--json with the same --offset too")
    assert memo("prompt", "list", "--all", "--limit", "100", vault=vault).stderr == ""


@pytest.mark.parametrize("args, field", [
    (["activity", "--all", "--since", ""], "since"), (["activity", "--all", "--until", " "], "until"),
    (["activity", "--all", "--tz", ""], "tz"), (["activity", "--all", "--client", ""], "client"),
    (["session", "start", "x", "--project", ""], "project"), (["session", "start", "", "--project", "web"], "sessionId"),
    (["session", "show", ""], "sessionId"), (["prompt", "list", "--all", "--model", ""], "model"),
    (["digest", "--as-of", ""], "asOf"),
])
def test_an_empty_option_is_refused_not_read_as_not_given(tmp_path, args, field):
    """Found by an attacker: ``--since ''`` ran with no bound, ``--client ''`` covered every client,
    ``--project ''`` filed a session under ``default``, ``session start ''`` made up an id."""
    ran = memo(*args, vault=tmp_path / "v", check=False)
    assert (ran.returncode, ran.stderr) == (1, f"error: Invalid {field}: is empty: give a value, or leave the option "
                                               "out\n")
    assert not (tmp_path / "v" / "projects").exists()


@pytest.mark.parametrize("args, said", [
    (["--limit", "0"], "error: Invalid limit: 0 is below 1: a page holds 1–100 prompts"),
    (["--limit", "-1"], "error: Invalid limit: -1 is below 1: a page holds 1–100 prompts"),
    (["--offset", "-1"], "error: Invalid offset: -1 is below 0: the prompts to skip"),
])
def test_a_page_out_of_range_is_refused_on_the_command_line(tmp_path, args, said):
    """Found by an attacker: ``--limit 0`` showed one prompt and ``--offset -1`` the first page,
    without a word (the tool's clamping, SPEC §2.6, is for agents)."""
    memo("prompt", "record", "--project", "web", "--body", "hello", vault=tmp_path / "v")
    ran = memo("prompt", "list", "--all", *args, vault=tmp_path / "v", check=False)
    assert (ran.returncode, ran.stderr.strip()) == (1, said)


def test_filing_a_projects_sessions_under_an_empty_client_is_refused(tmp_path):
    """Found by an attacker: ``memo project client p1 '' --every`` filed every session of another
    client under internal, unasked."""
    vault = tmp_path / "v"
    memo("session", "start", "a", "--project", "p1", "--client", "Acme", vault=vault)
    ran = memo("project", "client", "p1", " ", "--every", vault=vault, check=False)
    assert (ran.returncode, ran.stderr.strip()) == (1, "error: Invalid client: is empty: give the client's name "
                                                       "('internal' for none)")
    assert "client: Acme" in (vault / "projects" / "p1" / "sessions" / "session-a.md").read_text()


def test_a_branch_starting_with_a_dash_is_refused(tmp_path):
    """Found by an attacker: ``--handoff-branch -x`` was taken, and the digest then withheld the
    hand-off's command (``--branch -x`` reads as an option); git allows no such branch name."""
    vault = tmp_path / "v"
    memo("session", "start", "ho", "--project", "shop", vault=vault)
    ran = memo("session", "end", "ho", "--project", "shop", "--next-step", "Deploy", "--handoff-branch", "-x",
               vault=vault, check=False)
    assert (ran.returncode, ran.stderr.strip()) == (1, "error: Invalid handoff.branch: '-x' starts with '-', which "
                                                       "no git branch name does")
    started = memo("session", "start", "h2", "--project", "shop", "--branch=-y", vault=vault, check=False)
    assert started.returncode == 1 and started.stderr.startswith("error: Invalid branch: '-y' starts with '-'")


def test_a_timesheet_says_the_open_sessions_it_leaves_out(tmp_path):
    """Found by a billing person: the draft invoice said "1 open session is not billed"; the
    timesheet of the same period left it out without a word."""
    vault = tmp_path / "v"
    memo("session", "start", "done", "--project", "p", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    memo("session", "end", "done", "--project", "p", "--until", "2026-03-02T10:00:00Z", vault=vault)
    memo("session", "start", "open", "--project", "p", "--start-time", "2026-03-03T09:00:00Z", vault=vault)
    ran = memo("report", "timesheet", "--all", "-o", str(tmp_path / "t.csv"), vault=vault)
    assert "note: 1 open session is not on it (a session is listed once it ends)" in ran.stderr


def test_a_turn_whose_file_cannot_be_read_is_named_not_called_not_found(tmp_path):
    """Found by a tester: ``memo prompt get`` and ``memo prompt feedback`` of a turn whose file had
    bytes that are not UTF-8 said "Record not found" (``session show`` names such a file)."""
    vault = tmp_path / "v"
    memo("session", "start", "s2", "--project", "p1", "--start-time", "2026-03-03T09:00:00Z", vault=vault)
    memo("prompt", "record", "--session-id", "s2", "--project", "p1", "--body", "gamma", vault=vault)
    path = vault / "projects/p1/prompts/prompt-s2-t1.md"
    path.write_bytes(path.read_bytes() + b"\xff\xfe")
    memo("reindex", vault=vault)
    for args in (["prompt", "get", "prompt-s2-t1"], ["prompt", "feedback", "prompt-s2-t1", "--helpful"]):
        ran = memo(*args, vault=vault, check=False)
        assert (ran.returncode, ran.stderr.strip()) == (1, (
            "error: Cannot parse projects/p1/prompts/prompt-s2-t1.md: not UTF-8 (invalid start byte); fix the file "
            "(`memo reindex` lists every file it cannot read)")), args
    assert path.read_bytes().endswith(b"\xff\xfe")  # left as it was
    assert memo("prompt", "get", "prompt-s2-t9", vault=vault, check=False).stderr.strip() == \
        "error: Record not found: prompt-s2-t9"


@pytest.mark.parametrize("typed, said", [
    ("derive-rules", "the derive_rules action is memo report rules (--save-traps, --promote FILE, --format)"),
    ("export_story", "the export_story action is memo report story SESSION -o FILE"),
    ("activity_report", "the activity_report action is memo activity"),
    ("session", "the session action is memo session show [SESSION]"),
])
def test_an_mcp_action_typed_under_memo_prompt_names_the_command_that_does_it(tmp_path, typed, said):
    """Found by a team moving from spec-memo, whose CLI is ``memo prompt <action>``: ``memo prompt
    derive-rules`` said only "No such command"; it names the command that does it here."""
    ran = memo("prompt", typed, vault=tmp_path / "v", check=False)
    assert (ran.returncode, ran.stderr.strip()) == (2, f"error: No such command '{typed}'. (memo prompt); {said}; "
                                                       "see --help")
    # the commands named exist
    command = said.split(" is ", 1)[1].split(" (")[0].replace(" SESSION", "").replace(" [SESSION]", "").split(" -o")[0]
    assert memo(*command.split()[1:], "--help", vault=tmp_path / "v").returncode == 0


def test_prompt_list_search_and_session_show_take_the_zone_of_their_days_as_mcp_does(tmp_path):
    """Found by an analyst: MCP ``list``/``search``/``session`` take ``tz`` for date-only bounds,
    the CLI commands refused ``--tz`` — the same day gave 35 turns on one side and 23 on the other.
    28 November in Shanghai (UTC+8) ends at 16:00 UTC."""
    from tests.inprocess import memo, tool_calls

    vault = tmp_path / "v"
    env = {"MEMO_TIMEZONE": "UTC"}
    for sid, at in (("early", "2025-11-28T10:00:00Z"), ("late", "2025-11-28T17:00:00Z")):
        memo("session", "start", sid, "--project", "web", "--start-time", at, vault=vault, env=env)
        memo("prompt", "record", "--session-id", sid, "--project", "web", "--created", at, "--body",
             f"Fix the parser {sid}", vault=vault, env=env)
    day = ("--all", "--since", "2025-11-28", "--until", "2025-11-28")

    def total(*args):
        return json.loads(memo("--json", *args, *day, vault=vault, env=env).stdout)["total"]

    assert [total("prompt", "list"), total("prompt", "search", "parser"), total("session", "show")] == [2, 2, 2]
    shanghai = [json.loads(memo("--json", *command, *day, "--tz", "Asia/Shanghai", vault=vault, env=env).stdout)
                for command in (("prompt", "list"), ("prompt", "search", "parser"), ("session", "show"))]
    assert [page["total"] for page in shanghai] == [1, 1, 1]
    assert shanghai[0]["items"][0]["sessionId"] == "early"
    # the times shown are of that zone too (rows asked for 28 November read "2025-11-28 18:00", not 10:00 UTC)
    shown = memo("prompt", "list", *day, "--tz", "Asia/Shanghai", vault=vault, env=env).stdout
    assert "2025-11-28 18:00" in shown and "Asia/Shanghai" in shown, shown
    one = memo("session", "show", "early", "--project", "web", "--tz", "Asia/Shanghai", vault=vault, env=env).stdout
    assert "2025-11-28 18:00" in one and "Asia/Shanghai" in one, one
    [(failed, text)] = tool_calls(vault, [{"action": "list", "crossProject": True, "since": "2025-11-28",
                                           "until": "2025-11-28", "tz": "Asia/Shanghai"}], env=env)
    assert not failed and json.loads(text)["total"] == 1


def test_the_total_says_how_much_of_it_is_internal_work(tmp_path):
    """Found by a developer's first hour: work of no client counts in "Total billable" (SPEC §4: a
    session is billable unless marked not), which read as hours to bill someone. The total says
    how much of it is internal."""
    vault = tmp_path / "v"
    for sid, client, end in (("s1", "Acme", "2026-01-05T10:00:00Z"), ("s2", None, "2026-01-05T11:30:00Z")):
        memo("session", "start", sid, "--project", "web", *(["--client", client] if client else []),
             "--start-time", "2026-01-05T09:00:00Z" if sid == "s1" else "2026-01-05T11:00:00Z", vault=vault)
        memo("session", "end", sid, "--project", "web", "--until", end, vault=vault)
    table = memo("activity", "--all", vault=vault).stdout
    assert table.rstrip().endswith("Total billable: 1:30 (1.50 h) · prompts: 0 · 0.50 h of it internal (no client)")
    # the period asked for is named (a developer's first hour: a week or a month was said nowhere)
    week = memo("activity", "--all", "--since", "2026-W02", "--until", "2026-W02", "--tz", "Europe/Berlin",
                vault=vault).stdout
    assert week.splitlines()[0] == "Projects: all · 2026-01-05 – 2026-01-11 · times in Europe/Berlin"
    # (a breaker: a day whose midnight the clocks skip was a time; seconds were cut)
    skipped = memo("activity", "--all", "--since", "2026-09-06", "--until", "2026-09-06", "--tz", "America/Santiago",
                   vault=vault).stdout
    assert skipped.splitlines()[0] == "Projects: all · 2026-09-06 – 2026-09-06 · times in America/Santiago"
    timed = memo("activity", "--all", "--since", "2026-03-01T09:30:45", "--until", "2026-03-01T17:00:30", "--tz",
                 "UTC", vault=vault).stdout
    assert timed.splitlines()[0] == "Projects: all · 2026-03-01 09:30:45 – 2026-03-01 17:00:30 · times in UTC"


def test_an_option_of_one_value_given_twice_is_refused_not_the_last_taken(tmp_path):
    """Found by an analyst: `memo activity --project ccp --project demo` reported demo alone (13
    of 160 minutes) and exit 0 — Click keeps the last value; a timesheet too. An option of one
    value given twice is a usage error; repeatable options and flags are as before."""
    vault = tmp_path / "v"
    for project, minutes in (("ccp", 147), ("demo", 13)):
        memo("session", "start", f"s-{project}", "--project", project, "--start-time", "2026-03-02T09:00:00Z", vault=vault)
        memo("session", "end", f"s-{project}", "--project", project, "--until", f"2026-03-02T{9 + minutes // 60:02d}:"
             f"{minutes % 60:02d}:00Z", vault=vault)
    ran = memo("--json", "activity", "--project", "ccp", "--project", "demo", vault=vault, check=False)
    assert ran.returncode == 2 and ran.stdout == ""
    assert json.loads(ran.stderr)["error"].startswith("Invalid value for '--project': given 2 times: it takes one "
                                                      "value; --all takes every project")
    ran = memo("report", "timesheet", "--project", "ccp", "--project", "demo", "-o", str(tmp_path / "t.csv"),
               vault=vault, check=False)
    assert ran.returncode == 2 and not (tmp_path / "t.csv").exists()
    assert json.loads(memo("--json", "activity", "--project", "ccp", "--json", vault=vault).stdout)[
        "totalDurationMinutes"] == 147
    listed = memo("--json", "prompt", "list", "--all", "--tag", "a", "--tag", "b", vault=vault)  # repeatable
    assert json.loads(listed.stdout)["total"] == 0


def test_a_listing_says_the_prompt_files_it_cannot_read(tmp_path):
    """Found by a tester of bad files: a turn hand-edited with a wrong type vanished from `memo
    prompt list`, search, the API and the dashboard without a word (`memo activity` said it)."""
    import re as _re

    vault = tmp_path / "v"
    memo("prompt", "record", "--project", "web", "--session-id", "s1", "--body", "tidy the cart", vault=vault)
    memo("prompt", "record", "--project", "web", "--session-id", "s1", "--body", "price the basket", vault=vault)
    path = vault / "projects" / "web" / "prompts" / "prompt-s1-t1.md"
    path.write_text(_re.sub(r"(?m)^turn: 1$", 'turn: "one"', path.read_text(encoding="utf-8")), encoding="utf-8")
    memo("reindex", vault=vault, check=False)
    said = "1 prompt file cannot be read and is left out (projects/web/prompts/prompt-s1-t1.md; memo reindex says why)"
    listed = memo("prompt", "list", "--all", vault=vault)
    assert f"note: {said}" in listed.stderr, listed.stderr
    found = json.loads(memo("--json", "prompt", "search", "cart", "--all", vault=vault).stdout)
    assert found["leftOut"] == ["projects/web/prompts/prompt-s1-t1.md"] and said in found["note"]
