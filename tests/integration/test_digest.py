"""The operator digest on a real vault (SPEC §6 phase 1): cached until the vault changes or
a threshold falls due, debounced, a failed recompute keeps the last answer; CLI output."""

from __future__ import annotations

import json
import re
import os
import shlex
import sqlite3
import subprocess
from datetime import datetime, timedelta, timezone

import pytest

from memo_analytics.operator import service
from memo_analytics.operator.service import current_digest
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import DigestRequest, EndSessionRequest, HandoffInput, RecordPromptRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.vault.io import read_record
from tests.integration.test_cli import memo

T0 = datetime(2026, 3, 10, 9, 0, tzinfo=timezone.utc)


def _open_session(store, sid="s1", start=T0):
    start_session(store, StartSessionRequest(session_id=sid, project="web", client="Acme",
                                             start_time=start.isoformat()), now=start)
    record_prompt(store, RecordPromptRequest(session_id=sid, project="web", body="Add the CSV export"),
                  now=start + timedelta(minutes=5))


def test_digest_is_cached_until_the_vault_changes(store):
    _open_session(store)
    now = T0 + timedelta(hours=2)
    first = current_digest(store, now=now)
    assert [(i["kind"], i["subject"]) for i in first["items"]] == [("session_stalled", "s1")]
    assert first["cached"] is False
    again = current_digest(store, now=now + timedelta(seconds=1))
    assert again["cached"] is True and again["items"] == first["items"]
    # a change: a new turn un-stalls the session; inside the debounce window the old answer is served, marked stale
    record_prompt(store, RecordPromptRequest(session_id="s1", project="web", body="and the tests"),
                  now=now + timedelta(seconds=2))
    within = current_digest(store, now=now + timedelta(seconds=3))
    assert within["stale"] is True and within["items"] == first["items"]
    after = current_digest(store, now=now + timedelta(seconds=30))
    assert after["cached"] is False and after["items"] == []


def test_digest_recomputes_when_a_threshold_falls_due_without_any_change(store):
    _open_session(store)
    quiet = current_digest(store, now=T0 + timedelta(minutes=30))
    assert quiet["items"] == []
    assert current_digest(store, now=T0 + timedelta(minutes=40))["cached"] is True
    due = current_digest(store, now=T0 + timedelta(minutes=66))  # last turn at +5 min, stalls at +65 min
    assert due["cached"] is False and [i["kind"] for i in due["items"]] == ["session_stalled"]


def test_a_failed_recompute_keeps_the_previous_digest_and_says_so(store, monkeypatch):
    _open_session(store)
    first = current_digest(store, now=T0 + timedelta(hours=2))

    def broken(_store):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(service, "take_snapshot", broken)
    kept = current_digest(store, now=T0 + timedelta(hours=3), force=True)
    assert kept["items"] == first["items"] and kept["computedAt"] == first["computedAt"]
    assert kept["error"].startswith("recompute failed: DatabaseError")


def test_handoffs_rules_and_open_sessions_through_the_cli(tmp_path):
    vault = tmp_path / "vault"
    config = tmp_path / "config.toml"
    config.write_text("[operator]\nhandoffUnclaimedHours = 0\n", encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    now = datetime.now(timezone.utc)
    iso = lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    memo("session", "start", "a1", "--project", "web", "--client", "Acme", "--start-time", iso(now - timedelta(hours=12)),
         vault=vault, env=env)
    memo("session", "start", "b1", "--project", "web", "--client", "Acme", "--start-time", iso(now - timedelta(hours=3)),
         vault=vault, env=env)
    memo("session", "end", "b1", "--until", iso(now - timedelta(hours=2)), "--next-step", "deploy to staging",
         "--pr", "https://github.com/acme/web/pull/3", vault=vault, env=env)
    for _ in (1, 2):
        memo("prompt", "record", "--project", "web", "--session-id", "a1", "--body", "Never commit directly to main.",
             vault=vault, env=env)
    memo("report", "rules", "--project", "web", "--save-traps", vault=vault, env=env)
    result = json.loads(memo("--json", "digest", vault=vault, env=env).stdout)
    # ranked: lane, then billable minutes at stake (the PR session's 60), then age, then kind
    assert [i["kind"] for i in result["items"]] == ["pr_awaiting_review", "session_open_too_long",
                                                   "handoff_unclaimed", "rule_ready"]
    assert result["items"][0]["minutesAtStake"] == 60
    assert json.loads(memo("--json", "digest", vault=vault, env=env).stdout)["cached"] is True
    human = memo("digest", vault=vault, env=env).stdout
    here = f"memo --vault-root {vault.resolve()} "
    assert "4 items need you" in human and f"{here}session end a1 --project" in human
    past = json.loads(memo("--json", "digest", "--as-of", iso(now - timedelta(hours=2, minutes=30)), vault=vault,
                           env=env).stdout)
    assert past["items"] == []  # nothing of it existed yet, or nothing was due yet
    refused = memo("digest", "--as-of", "2026-13-45", vault=vault, check=False)
    assert refused.returncode == 1 and "Invalid asOf date" in refused.stderr


def test_an_empty_vault_has_an_empty_digest_and_a_missing_one_is_refused(tmp_path):
    """A missing vault (a mistyped --vault-root) said "Nothing needs you now", exit 0: refused."""
    (tmp_path / "empty" / "projects").mkdir(parents=True)
    assert json.loads(memo("--json", "digest", vault=tmp_path / "empty").stdout)["items"] == []
    missing = memo("digest", vault=tmp_path / "none", check=False)
    assert missing.returncode == 1 and missing.stderr.startswith(f"error: No vault at {tmp_path / 'none'}: ")
    assert not (tmp_path / "none").exists()


def test_cli_apply_allow_revoke_and_audit(tmp_path):
    vault = tmp_path / "vault"
    now = datetime.now(timezone.utc)
    start = (now - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    memo("session", "start", "w1", "--project", "web", "--client", "Acme", "--start-time", start, vault=vault)
    memo("session", "start", "w2", "--project", "web", "--client", "Acme", "--start-time", start, vault=vault)
    shown = json.loads(memo("--json", "digest", vault=vault).stdout)
    assert {i["id"] for i in shown["items"]} == {"session_stalled:w1", "session_stalled:w2"}
    applied = memo("digest", "apply", "session_stalled:w1", vault=vault).stdout
    assert "applied end w1 at its last activity" in applied
    # asked right after (within the debounce window of a polling dashboard), a person gets the
    # digest of the vault as it is now, not the cached one that still lists w1
    right_after = json.loads(memo("--json", "digest", vault=vault).stdout)
    assert ({i["id"] for i in right_after["items"]}, right_after["stale"]) == ({"session_stalled:w2"}, False)
    unknown = memo("digest", "apply", "session_stalled:nope", vault=vault, check=False)
    assert unknown.returncode == 1 and unknown.stderr.strip() == (
        "error: Invalid item: session_stalled:nope is not in the digest of now; run `memo digest` and pick an id (an "
        "item picked from `memo digest --as-of DATE` is applied with the same --as-of DATE)")
    stale = memo("digest", "apply", "session_stalled:w2", "--fingerprint", "0000000000000000", vault=vault,
                 check=False)
    assert stale.returncode == 3 and "not applied: the state changed" in stale.stdout
    assert "allow" in memo("operator", "--help", vault=vault).stdout
    bad = memo("operator", "allow", "delete_everything", "--project", "web", vault=vault, check=False)
    assert bad.returncode == 1 and "Invalid actionClass" in bad.stderr
    typo = memo("operator", "allow", "end_stale_session", "--project", "wbe", vault=vault, check=False)
    assert (typo.returncode, typo.stderr.strip()) == (1, "error: Invalid project: the vault holds no project wbe "
                                                         "(projects: web)")  # it had said "delegated … for wbe"
    assert memo("operator", "status", vault=vault).stdout.splitlines() == [
        "operator on: delegated actions run on digest passes",
        "no delegation: nothing runs by itself (memo operator allow ACTION --project PROJECT)",
        "webhook: none (operator.webhookUrl): the digest is kept, nothing is sent"]
    memo("operator", "allow", "end_stale_session", "--project", "web", vault=vault)
    status = json.loads(memo("--json", "operator", "status", vault=vault).stdout)
    assert (status["off"], list(status["grants"]), list(status["grants"]["web"])) == (False, ["web"],
                                                                                        ["end_stale_session"])
    assert memo("operator", "status", vault=vault).stdout.splitlines()[1].startswith(
        "  end_stale_session for web (since ")
    after = json.loads(memo("--json", "digest", "--refresh", vault=vault).stdout)
    assert after["items"] == [] and after["operator"]["acted"][0]["subject"] == "w2"
    memo("operator", "revoke", "end_stale_session", "--project", "web", vault=vault)
    again = memo("operator", "revoke", "end_stale_session", "--project", "web", vault=vault, check=False)
    assert again.returncode == 1 and "end_stale_session is not delegated for web: nothing to revoke" in again.stderr
    trail = json.loads(memo("--json", "operator", "audit", vault=vault).stdout)
    assert [(r["actor"], r["subject"], r["outcome"].split(":")[0]) for r in trail] == [
        ("person", "w1", "applied"), ("person", "w2", "refused"), ("operator", "w2", "applied")]


def test_further_vaults_are_read_and_never_acted_on(tmp_path):
    from memo_analytics.config import Settings
    from memo_analytics.services.store import VaultStore

    team = VaultStore(Settings(vault_root=tmp_path / "team", timezone="UTC"))
    _open_session(team, sid="t1")
    team.close()
    mine = VaultStore(Settings(vault_root=tmp_path / "mine", timezone="UTC", vaults=[tmp_path / "team"]))
    _open_session(mine, sid="m1")
    digest = current_digest(mine, now=T0 + timedelta(hours=2))
    by_subject = {i["subject"]: i for i in digest["items"]}
    assert set(by_subject) == {"m1", "t1"}
    assert by_subject["t1"]["vault"] == str((tmp_path / "team").resolve()) and by_subject["t1"]["proposal"] is None
    assert by_subject["m1"]["vault"] is None and by_subject["m1"]["proposal"]["actionClass"] == "end_stale_session"


def test_the_sample_digest_as_of_its_week_can_be_applied(tmp_path):
    memo("demo", "--out", str(tmp_path / "d"))
    vault = tmp_path / "d" / "vault"
    now_view = memo("digest", vault=vault).stdout
    # the sample's week is months old: nothing recent, its items counted past the horizon
    assert "Nothing of the last 14 days needs you now." in now_view and f"the oldest of them: `memo --vault-root {vault} digest --as-of 2026-03-03`" in now_view.replace("\n", "")
    past = json.loads(memo("--json", "digest", "--as-of", "2026-03-07T08:00", vault=vault).stdout)
    assert past["items"][0]["id"] == "session_open_too_long:demo-open-acme-web"
    # the table says when in the person's zone, as every other table (it said UTC)
    shown = " ".join(memo("digest", "--as-of", "2026-03-07T08:00", vault=vault,
                          env={"MEMO_TIMEZONE": "Europe/Berlin"}).stdout.split())
    assert "computed 2026-03-07 08:00 Europe/Berlin" in shown
    applied = memo("digest", "apply", "session_open_too_long:demo-open-acme-web", "--as-of", "2026-03-07T08:00",
                   vault=vault, env={"MEMO_TIMEZONE": "Europe/Berlin"}).stdout
    # its time in the person's zone too (a new user read 11:10Z beside 12:10 everywhere else)
    assert "applied end demo-open-acme-web at its last activity 2026-03-06 17:05 Europe/Berlin" in applied
    session = json.loads(memo("--json", "session", "show", "demo-open-acme-web", vault=vault).stdout)["session"]
    assert (session["status"], session["durationMinutes"]) == ("completed", 65)


def test_a_changed_policy_recomputes_the_cached_digest(tmp_path):
    vault = tmp_path / "vault"
    memo("demo", "--out", str(tmp_path / "d"))
    vault = tmp_path / "d" / "vault"
    assert json.loads(memo("--json", "digest", vault=vault).stdout)["items"] == []
    config = tmp_path / "config.toml"
    config.write_text("[operator]\nhorizonDays = 3650\n", encoding="utf-8")
    wider = json.loads(memo("--json", "digest", vault=vault, env={"MEMO_CONFIG": str(config)}).stdout)
    assert wider["cached"] is False and len(wider["items"]) == 6


def test_an_item_names_whose_work_it_is(tmp_path):
    """A lead saw a stalled session but not whose: each item carries the session's ``owner``
    (null when none is recorded), in the JSON, the CLI table and the dashboard's row."""
    from memo_analytics.dashboards.digest_view import item_html

    vault = tmp_path / "v"
    memo("session", "start", "w1", "--project", "web", "--owner", "ana@team.test", "--start-time",
         "2026-03-10T09:00:00Z", vault=vault)
    memo("prompt", "record", "--project", "web", "--session-id", "w1", "--body", "tidy", "--created",
         "2026-03-10T09:20:00Z", vault=vault)
    [item] = [i for i in json.loads(memo("--json", "digest", "--as-of", "2026-03-10T12:00", vault=vault).stdout)["items"]
              if i["subject"] == "w1"]
    assert item["owner"] == "ana@team.test"
    human = memo("digest", "--as-of", "2026-03-10T12:00", vault=vault).stdout
    row = next(line for line in human.splitlines() if "session_stalled:w1" in line)
    assert "│ session_stalled:w1 " in row and "│ ana@team.test" in row  # the id alone: it is what apply takes
    assert "web · ana@team.test" in item_html({**item, "owner": "ana@team.test"})
    assert "&lt;b&gt;" in item_html({**item, "owner": "<b>x</b>"})
    # found by a new user: the dashboard's command named no vault, and pasted it acted on ~/.memo/vault
    assert "<code>memo --vault-root /srv/team session show w1 --project web" in item_html(item, "/srv/team")
    assert "<code>memo --vault-root /srv/other session show w1" in item_html({**item, "vault": "/srv/other"}, "/srv/x")


def test_a_reviewed_pull_request_leaves_the_digest(tmp_path):
    """`pr_awaiting_review` stayed after the story was exported and the PR reviewed: nothing could
    record a review. `memo session edit SID --reviewed` does (``reviewedAt``), and the item goes."""
    vault = tmp_path / "v"
    memo("session", "start", "w1", "--project", "web", "--start-time", "2026-03-10T09:00:00Z", vault=vault)
    memo("session", "end", "w1", "--project", "web", "--until", "2026-03-10T10:00:00Z", "--pr",
         "https://github.com/acme/web/pull/3", vault=vault)

    def awaiting() -> list[dict]:
        items = json.loads(memo("--json", "digest", "--as-of", "2026-03-11T09:00", vault=vault).stdout)["items"]
        return [i for i in items if i["kind"] == "pr_awaiting_review"]

    [item] = awaiting()
    assert item["why"] == "finished 23.0 h ago with https://github.com/acme/web/pull/3"
    later = json.loads(memo("--json", "digest", "--as-of", "2026-03-14T10:00", vault=vault).stdout)["items"]
    assert [i["why"] for i in later if i["kind"] == "pr_awaiting_review"] == [
        "finished 4.0 d ago with https://github.com/acme/web/pull/3"]  # in days, as the age column (it said 96.0 h)
    assert item["action"].endswith("# 'then review https://github.com/acme/web/pull/3; once reviewed: memo session "
                                   "edit w1 --project web --reviewed'")
    edited = json.loads(memo("--json", "session", "edit", "w1", "--reviewed", vault=vault).stdout)
    assert edited["changed"] == ["reviewedAt"] and edited["reviewedAt"]
    assert awaiting() == []
    again = memo("session", "edit", "w1", "--reviewed", vault=vault, check=False)
    assert again.stdout.strip() == "session w1: already so, nothing changed"  # it keeps when it was reviewed
    memo("session", "edit", "w1", "--not-reviewed", vault=vault)
    assert [i["id"] for i in awaiting()] == ["pr_awaiting_review:w1"]


def test_the_commands_print_whole_on_one_line_each(tmp_path):
    """Found by an operator: in an 80-column terminal the table folded the ``do`` command, so a
    pasted line ran ``memo session end … --project shop`` without its ``--until`` (billing the idle
    night), and the item column showed ``session_stalled:own-1 (bob)``, which apply refused.
    Each command is one whole line below the table; the item column holds the id only."""
    vault = tmp_path / "v"
    long = "a-session-with-a-rather-long-name-from-a-hook"
    memo("session", "start", long, "--project", "a-shop-project-also-long", "--owner", "bob", "--start-time",
         "2026-03-10T09:00:00Z", vault=vault)
    memo("prompt", "record", "--project", "a-shop-project-also-long", "--session-id", long, "--body", "tidy",
         "--created", "2026-03-10T09:20:00Z", vault=vault)
    human = memo("digest", "--as-of", "2026-03-10T20:00", vault=vault, env={"COLUMNS": "80"}).stdout
    here = f"memo --vault-root {vault.resolve()}"
    end = (f"{here} session end {long} --project a-shop-project-also-long --until 2026-03-10T09:20:00.000Z")
    assert f" 1. {end}" in human.splitlines()
    apply = next(line for line in human.splitlines() if "or apply its proposal" in line)
    [item] = json.loads(memo("--json", "digest", "--as-of", "2026-03-10T20:00", vault=vault).stdout)["items"]
    # picked from a digest --as-of, the apply names the same moment (else "not in the digest of now")
    assert apply.endswith(f": {here} digest apply session_open_too_long:{long} --fingerprint {item['fingerprint']} "
                          "--as-of 2026-03-10T20:00")
    assert item["minutesAtStake"] == 640 and "10.7 h of it after its last turn" in item["why"]
    pasted = shlex.split(apply.split(": ", 1)[1])
    assert "applied end" in memo(*pasted[1:]).stdout  # its own --vault-root: no vault given by the caller
    assert "(bob)" not in human


def test_a_printed_command_acts_on_the_vault_it_was_printed_from_and_an_apply_on_the_state_read(tmp_path):
    """Found by an operator: ``memo --vault-root X digest`` printed ``memo session end …`` and
    ``memo digest apply ID``; pasted, they acted on the configured vault (not X), and the apply took
    the proposal of the state at the time of pasting, one nobody had read. Each printed command
    names the vault it was printed from, and the apply names the fingerprint of the proposal shown:
    pasted after the session changed, it is refused with the new proposal's command."""
    vault, other = tmp_path / "picked", tmp_path / "configured"
    config = tmp_path / "config.toml"
    config.write_text(f'vaultRoot = "{other}"\ntimezone = "UTC"\n', encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    memo("session", "start", "s1", "--project", "web", "--start-time", "2026-03-10T09:00:00Z", vault=vault, env=env)
    memo("prompt", "record", "--project", "web", "--session-id", "s1", "--body", "tidy",
         "--created", "2026-03-10T09:20:00Z", vault=vault, env=env)
    human = memo("digest", "--as-of", "2026-03-10T20:00", vault=vault, env=env).stdout
    apply = shlex.split(next(line for line in human.splitlines() if "or apply its proposal" in line).split(": ", 1)[1])
    assert apply[:3] == ["memo", "--vault-root", str(vault.resolve())] and "--fingerprint" in apply
    # the session changed after the digest was read: a later turn
    memo("prompt", "record", "--project", "web", "--session-id", "s1", "--body", "one more",
         "--created", "2026-03-10T10:00:00Z", vault=vault, env=env)
    refused = memo(*apply[1:], env=env, check=False)
    assert refused.returncode == 3 and "not applied: the state changed since the proposal" in refused.stdout
    assert "New proposal: end s1 at its last activity 2026-03-10 10:00 UTC;" in refused.stdout  # the new proposal, read first
    again = shlex.split(refused.stdout.split("to apply it: ", 1)[1].strip())
    assert again[:3] == ["memo", "--vault-root", str(vault.resolve())]
    assert "applied end" in memo(*again[1:], env=env).stdout
    assert read_record(vault / "projects/web/sessions/session-s1.md")[0]["status"] == "completed"
    assert not other.exists()  # the configured vault was never touched


def test_the_vault_root_goes_after_each_memo_that_starts_a_command_and_never_into_a_quoted_name():
    from memo_analytics.domain.shell import with_vault_root

    hostile = shlex.quote("it's: memo x")  # a session id that reads like a command
    rooted = with_vault_root(f"memo session show {hostile} --project p  # resume, or: memo session end {hostile}",
                             "/v y")
    assert rooted.startswith(f"memo --vault-root '/v y' session show {hostile} --project p  # ")
    # the hint quoted as one word (zsh does not take # for a comment), its text rooted too
    assert shlex.split(rooted.split("  # ", 1)[1]) == [f"resume, or: memo --vault-root '/v y' session end {hostile}"]
    assert with_vault_root("in a checkout of web's repository: memo report rules --project web (memo knows no "
                           "repository of it on this machine)", "/v") == (
        "in a checkout of web's repository: memo --vault-root /v report rules --project web (memo knows no "
        "repository of it on this machine)")
    assert with_vault_root("memo invoice credit INV-2  # or memo invoice credit INV-1", "/v").count("--vault-root") == 2


def test_a_threshold_is_met_by_the_exact_duration_not_by_rounded_minutes(tmp_path):
    """Found by an operator: with ``stalledMinutes = 2`` a session idle for 91 s was listed as
    stalled (91 s rounds to 2 minutes), half a minute before its threshold fell due."""
    vault, config = tmp_path / "v", tmp_path / "config.toml"
    config.write_text("[operator]\nstalledMinutes = 2\nopenTooLongHours = 1\n", encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    memo("session", "start", "s1", "--project", "web", "--start-time", "2026-03-10T09:00:00Z", vault=vault, env=env)
    memo("prompt", "record", "--project", "web", "--session-id", "s1", "--body", "tidy",
         "--created", "2026-03-10T09:00:10Z", vault=vault, env=env)

    def kinds(moment: str) -> list[str]:
        digest = json.loads(memo("--json", "digest", "--as-of", moment, vault=vault, env=env).stdout)
        return [item["kind"] for item in digest["items"]]

    assert kinds("2026-03-10T09:01:41Z") == []  # idle 91 s: not yet 2 minutes
    assert kinds("2026-03-10T09:02:10Z") == ["session_stalled"]  # idle 2 minutes exactly
    assert kinds("2026-03-10T09:59:35Z") == ["session_stalled"]  # open 59 min 35 s: not yet 1 hour
    assert kinds("2026-03-10T10:00:00Z") == ["session_open_too_long"]


def test_a_person_asking_is_not_served_a_digest_computed_long_ago(tmp_path):
    """Found by an operator: ``memo digest`` served the cached digest while nothing changed
    (valid until the next threshold falls due), with its ages and "no turn for …" as of then —
    an hour-old digest said a session idle for 3 h was idle for 2 h. A person asking gets the
    digest of now; a caller polling within the minute is still served the cache."""
    from memo_analytics.runtime import Runtime
    from memo_analytics.config import Settings

    vault = tmp_path / "v"
    now = datetime.now(timezone.utc)
    iso = lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    memo("session", "start", "s1", "--project", "web", "--start-time", iso(now - timedelta(hours=3)), vault=vault)
    memo("prompt", "record", "--project", "web", "--session-id", "s1", "--body", "tidy",
         "--created", iso(now - timedelta(hours=3)), vault=vault)
    store = Runtime(Settings(vault_root=vault, timezone="UTC")).store()
    old = service.run_digest(store, DigestRequest(refresh=True), now=now - timedelta(hours=1))
    assert old["items"][0]["ageMinutes"] == 120
    # the rule is the service's (HTTP maxAgeSeconds, the MCP tool): a poller is served the cache
    assert service.run_digest(store, DigestRequest(), now=now)["items"][0]["ageMinutes"] == 120
    assert service.run_digest(store, DigestRequest(max_age_seconds=7200), now=now)["cached"] is True
    assert service.run_digest(store, DigestRequest(max_age_seconds=1800), now=now)["items"][0]["ageMinutes"] == 180
    service.run_digest(store, DigestRequest(refresh=True), now=now - timedelta(hours=1))  # an hour old again
    shown = json.loads(memo("--json", "digest", vault=vault).stdout)
    assert shown["cached"] is False and shown["items"][0]["ageMinutes"] == 180
    assert json.loads(memo("--json", "digest", vault=vault).stdout)["cached"] is True  # asked again at once


def test_a_fingerprint_that_is_none_is_refused_before_the_audit_trail(tmp_path):
    """Found by an attacker: ``memo digest apply ID --fingerprint <any text>`` (an escape
    included) went into the audit trail as ``proposedOn``, reported as "the state changed"."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "web", "--start-time", "2026-03-10T09:00:00Z", vault=vault)
    ran = memo("digest", "apply", "session_stalled:s1", "--fingerprint", "zz\x1b[2J", vault=vault, check=False)
    assert ran.returncode == 1 and ran.stderr.startswith("error: Invalid fingerprint: must be the 16 hex digits")
    assert not (vault / ".memo" / "audit.jsonl").exists()


def _pasted(line: str) -> list[str]:
    """The words bash makes of a pasted command line."""
    words = subprocess.run(["bash", "-c", f"printf '%s\\0' {line}"], capture_output=True, check=True).stdout
    return [os.fsdecode(word) for word in words.split(b"\0")[:-1]]


def test_a_vault_path_a_terminal_does_not_show_as_itself_is_printed_as_its_escapes(tmp_path):
    """Found by an attacker: a vault folder whose name holds an escape sequence printed its
    commands with the sequence removed (as all stored text is), so the pasted command named
    another folder — one a second vault may sit in. Such a path is printed in ANSI-C quotes."""
    vault = tmp_path / "pick\x1b[2Jed"
    decoy = tmp_path / "picked"  # the folder the printed name read as
    memo("session", "start", "s1", "--project", "web", "--start-time", "2026-03-10T09:00:00Z", vault=vault)
    memo("prompt", "record", "--project", "web", "--session-id", "s1", "--body", "tidy",
         "--created", "2026-03-10T09:20:00Z", vault=vault)
    human = memo("digest", "--as-of", "2026-03-10T20:00", vault=vault).stdout
    assert "\x1b" not in human
    line = next(line for line in human.splitlines() if "or apply its proposal" in line).split(": ", 1)[1]
    assert "$'" in line and "\\x1b[2Jed'" in line
    apply = _pasted(line)
    assert apply[:3] == ["memo", "--vault-root", str(vault.resolve())]
    assert "applied end" in memo(*apply[1:]).stdout
    assert read_record(vault / "projects/web/sessions/session-s1.md")[0]["status"] == "completed"
    assert not decoy.exists()


@pytest.mark.parametrize("value", ["plain", "a b", "it's", "tab\there", "line\nend", "\u202eright-to-left",
                                   "C1 \x9b", "back\\slash'", "zero\u200bwidth", "not UTF-8 \udce9", "\x1bab"])
def test_a_printed_word_names_exactly_the_value_when_pasted(value):
    from memo_analytics.domain.shell import shell_word

    word = shell_word(value)
    assert word.isprintable() and _pasted(word) == [value]


def test_a_line_end_in_a_records_text_never_makes_a_printed_command_two(tmp_path):
    """Found by an attacker: a pull request URL with a line end (a hand-edited record, or one a
    teammate's sync pushed) printed the digest's command as two lines; pasted, the second —
    ``touch …`` — ran. Free text beside a command's words is one line."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "web", "--client", "Acme", "--start-time", "2026-03-10T09:00:00Z",
         vault=vault)
    memo("session", "end", "s1", "--project", "web", "--until", "2026-03-10T10:00:00Z", "--pr",
         "https://github.com/o/r/pull/7", vault=vault)
    path = vault / "projects/web/sessions/session-s1.md"
    text = path.read_text(encoding="utf-8")
    assert "https://github.com/o/r/pull/7" in text
    planted = tmp_path / "planted"
    path.write_text(text.replace("https://github.com/o/r/pull/7",
                                 f'"https://github.com/o/r/pull/7\\ntouch {planted} #"', 1), encoding="utf-8")
    memo("reindex", vault=vault)
    shown = memo("digest", "--as-of", "2026-03-11T12:00", vault=vault).stdout
    [line] = [line for line in shown.splitlines() if "review" in line and line.lstrip().startswith("1.")]
    assert f"pull/7 touch {planted} #" in line  # the text stays, on the command's own line
    assert not any(line.startswith("touch") for line in shown.splitlines())
    for line in shown.splitlines():  # pasted, every printed line: nothing is planted
        if line.lstrip()[:2] in {"1.", "2."}:
            subprocess.run(["bash", "-c", line.split(". ", 1)[1].replace("memo ", ": memo ", 1)], check=False)
    assert not planted.exists()
    as_json = json.loads(memo("--json", "digest", "--as-of", "2026-03-11T12:00", vault=vault).stdout)
    assert all("\n" not in item["action"] and "\n" not in item["why"] for item in as_json["items"])


def test_a_billable_session_far_longer_than_a_day_of_work_is_asked_about_until_corrected(tmp_path):
    """Found by an attacker: a session pulled from another machine, 2020-01-01 to 2026-11-30 (its
    minutes matching its times), billed 60,602 h on the next draft without a digest item; a session
    left running over a night billed the night as silently. A billable ended session longer than
    ``openTooLongHours`` is listed until its times are corrected or it is invoiced."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "web", "--client", "Acme", "--start-time", "2026-03-09T09:00:00Z",
         vault=vault)
    memo("session", "end", "s1", "--project", "web", "--until", "2026-03-10T11:00:00Z", vault=vault)  # 26 h
    memo("session", "start", "s2", "--project", "web", "--client", "Acme", "--start-time", "2026-03-10T12:00:00Z",
         vault=vault)
    memo("session", "end", "s2", "--project", "web", "--until", "2026-03-10T14:00:00Z", vault=vault)  # 2 h: fine

    def items(as_of: str) -> list[dict]:
        return json.loads(memo("--json", "digest", "--as-of", as_of, vault=vault).stdout)["items"]

    [item] = items("2026-03-11T09:00")
    assert (item["id"], item["lane"], item["minutesAtStake"]) == ("session_too_long:s1", "waiting on you", 1560)
    assert item["why"] == ("it bills 26.0 h (2026-03-09 09:00 – 2026-03-10 11:00 UTC): a session left running bills "
                           "the time nobody worked")
    assert item["action"] == ("memo session show s1 --project web  # 'its turns; then memo session edit s1 --project "
                              "web --end TIME (or --minutes N)'")
    memo("session", "edit", "s1", "--project", "web", "--end", "2026-03-09T17:00:00Z", vault=vault)
    assert items("2026-03-11T09:00") == []  # 8 h: within a day's work (openTooLongHours = 10)


def test_a_session_written_active_with_an_end_is_asked_about_as_the_ended_session_it_bills(tmp_path):
    """Found by an attacker: a session file written ``status: active`` with an ``endTime`` billed
    its minutes (the activity reads it as ended) while the digest called it open and proposed
    ``memo session end``, which bills it to now. It is asked about as the ended session it bills:
    26 h is too long, and the edit the digest names corrects it (``memo session edit`` had refused
    it as still open)."""
    vault = tmp_path / "v"
    memo("session", "start", "s0", "--project", "web", "--client", "Acme", "--start-time", "2026-03-09T08:00:00Z",
         vault=vault)
    memo("session", "end", "s0", "--project", "web", "--until", "2026-03-09T08:30:00Z", vault=vault)
    (vault / "projects" / "web" / "sessions" / "session-s1.md").write_text(
        "---\nid: session-s1\nkind: session\nproject: web\nstatus: active\ncreated: 2026-03-09T09:00:00Z\n"
        "sessionId: s1\nclient: Acme\nstartTime: 2026-03-09T09:00:00Z\nendTime: 2026-03-10T11:00:00Z\n---\n", encoding="utf-8")
    memo("reindex", vault=vault)
    billed = json.loads(memo("--json", "activity", "--all", "--since", "2026-03-09", "--until", "2026-03-10",
                             vault=vault).stdout)
    assert [s["durationMinutes"] for s in billed["sessions"]] == [30, 1560]

    def items(as_of: str) -> list[dict]:
        return json.loads(memo("--json", "digest", "--as-of", as_of, vault=vault).stdout)["items"]

    found = items("2026-03-11T09:00")
    assert [i["id"] for i in found] == ["session_too_long:s1"]
    command = shlex.split(found[0]["action"].split("'its turns; then ")[1].rstrip("'").replace("TIME", "2026-03-09T17:00:00Z")
                          .replace(" (or --minutes N)", ""))
    assert command[:3] == ["memo", "session", "edit"]
    memo(*command[1:], vault=vault)
    meta = read_record(vault / "projects" / "web" / "sessions" / "session-s1.md")[0]
    assert (meta["status"], meta["durationMinutes"]) == ("completed", 480)
    assert items("2026-03-11T09:00") == []


def test_an_item_without_a_proposal_names_its_command_for_the_vault_it_was_asked_of(tmp_path):
    """Found by an attacker: ``memo --vault-root X digest apply session_too_long:s1`` answered
    "by hand: memo session show …" without ``--vault-root`` (``memo digest`` names it)."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "web", "--client", "Acme", "--start-time", "2026-03-09T09:00:00Z",
         vault=vault)
    memo("session", "end", "s1", "--project", "web", "--until", "2026-03-10T11:00:00Z", vault=vault)
    ran = memo("digest", "apply", "session_too_long:s1", "--as-of", "2026-03-11T09:00", vault=vault, check=False)
    assert ran.returncode == 1 and f"by hand: memo --vault-root {vault.resolve()} session show s1 --project web" \
        in " ".join(ran.stderr.split()), ran.stderr


def test_an_agent_still_writing_its_transcript_is_not_a_stalled_session(tmp_path):
    """Found by an operator: a hook session whose agent went on writing answers into its
    transcript after the last prompt was listed as stalled, and a delegated end ended it at the
    prompt — 0 minutes billed while the agent worked. The transcript's last write is activity."""
    import os as _os

    vault, now = tmp_path / "v", datetime.now(timezone.utc)
    iso = lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    memo("session", "start", "h1", "--project", "web", "--start-time", iso(now - timedelta(hours=2)), vault=vault)
    memo("prompt", "record", "--project", "web", "--session-id", "h1", "--body", "port the parser",
         "--created", iso(now - timedelta(hours=2)), vault=vault)
    transcript = tmp_path / "agent" / "h1.jsonl"
    transcript.parent.mkdir()
    transcript.write_text("{}\n", encoding="utf-8")
    path = vault / "projects/web/sessions/session-h1.md"
    path.write_text(path.read_text(encoding="utf-8").replace("\n---\n", f"\ntranscriptPath: {transcript}\n---\n", 1),
                    encoding="utf-8")
    memo("reindex", vault=vault)

    def items(written_minutes_ago: int) -> list[dict]:
        stamp = (now - timedelta(minutes=written_minutes_ago)).timestamp()
        _os.utime(transcript, (stamp, stamp))
        return json.loads(memo("--json", "digest", "--refresh", vault=vault).stdout)["items"]

    assert items(5) == []  # written 5 minutes ago: the agent works (its last prompt is 2 hours old)
    [stalled] = items(90)  # stalledMinutes = 60
    assert stalled["id"] == "session_stalled:h1" and stalled["ageMinutes"] == 90
    written = iso(now - timedelta(minutes=90)).replace("Z", ".000Z")
    assert stalled["proposal"]["params"]["until"][:16] == written[:16]  # ended at the agent's last write


def test_a_clients_monthly_hours_cap_is_watched_at_the_months_pace_as_its_sessions_bill(tmp_path):
    """OPERATOR.md ``retainer_projection``: a client's ``monthlyHoursCap`` (config) projected to
    run out before the month ends, at the pace so far, is one digest item for the client. Its
    hours are the ones ``memo activity --all --client C --since <the 1st>`` bills (its terms' rounding:
    a 50-minute session bills 60), counted in the configured zone; an edit that lowers them below
    the pace takes the item away."""
    vault, config = tmp_path / "v", tmp_path / "config.toml"
    config.write_text('timezone = "Europe/Berlin"\n[clients."Acme Corp"]\nhourlyRate = "100"\ncurrency = "EUR"\n'
                      'roundingMinutes = 60\nmonthlyHoursCap = "12"\n', encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    for sid, start, end in (("s1", "2026-03-02T09:00:00Z", "2026-03-02T11:50:00Z"),   # 170 min → 3 h
                            ("s2", "2026-03-03T09:00:00Z", "2026-03-03T10:50:00Z"),   # 110 min → 2 h
                            ("old", "2026-02-27T09:00:00Z", "2026-02-27T19:00:00Z")):  # February's
        memo("session", "start", sid, "--project", "web", "--client", "Acme Corp", "--start-time", start,
             vault=vault, env=env)
        memo("session", "end", sid, "--project", "web", "--until", end, vault=vault, env=env)

    def items(as_of: str) -> list[dict]:
        return json.loads(memo("--json", "digest", "--as-of", as_of, vault=vault, env=env).stdout)["items"]

    [item] = items("2026-03-10T12:00")  # 5 h by day 10 of 31: 15.5 h at this pace
    assert (item["id"], item["lane"], item["project"], item["minutesAtStake"]) == (
        "retainer_projection:Acme Corp", "waiting on you", "web", 0)
    assert item["why"] == ("5.00 h of its 12.00 h a month used by day 10 of 31; at this pace 15.50 h by the "
                           "month's end, 3.50 h over")
    assert item["action"] == "memo activity --all --client 'Acme Corp' --since 2026-03-01 --until 2026-03-31"
    shown = memo("--json", "activity", "--all", "--client", "Acme Corp", "--since", "2026-03-01", "--until", "2026-03-10",
                 vault=vault, env=env)
    assert json.loads(shown.stdout)["byClient"]["Acme Corp"]["billableHours"] == 5.0  # the hours it counted
    assert items("2026-03-20T12:00") == []  # 5 h by day 20: 7.75 h at this pace
    memo("session", "edit", "s1", "--project", "web", "--minutes", "50", vault=vault, env=env)  # 1 h billed
    assert items("2026-03-10T12:00") == []  # 3 h by day 10: 9.3 h at this pace


def test_memo_digest_shows_what_moved_in_the_last_day_after_what_needs_you(tmp_path):
    """OPERATOR.md's "moving" lane on the command line: a session that ended an hour ago is
    context below the items (nothing to do), in ``--json`` as ``moving``; as of before it ended,
    nothing had moved."""
    vault, now = tmp_path / "v", datetime.now(timezone.utc)
    iso = lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    memo("session", "start", "d1", "--project", "web", "--start-time", iso(now - timedelta(hours=3)), vault=vault)
    memo("session", "end", "d1", "--project", "web", "--until", iso(now - timedelta(hours=1)),
         "--summary", "Add the CSV export", vault=vault)
    shown = memo("digest", vault=vault).stdout
    assert shown.splitlines()[:3] == ["Nothing needs you now.", "moving in the last 24 h (1; nothing to do):",
                                      "  session_completed:d1 (web) — ended 1.0 h ago, 2:00 worked (internal): Add "
                                      "the CSV export"]
    as_json = json.loads(memo("--json", "digest", vault=vault).stdout)
    assert (as_json["items"], as_json["movingCount"], [m["id"] for m in as_json["moving"]]) == (
        [], 1, ["session_completed:d1"])
    later = json.loads(memo("--json", "digest", "--as-of", iso(now - timedelta(minutes=90)), vault=vault).stdout)
    assert later["moving"] == []  # as of before it ended: nothing had moved


def test_an_apply_printed_by_the_digest_of_now_names_its_moment(tmp_path):
    """Found by a new user (on the dashboard; the command line did the same): an end "now" — an
    idle gap after the last prompt, not yet reached — moved on with the clock while the
    fingerprint stayed, so an apply pasted a minute later ended the session a minute later than
    the proposal it printed. The printed apply names the moment of the digest it comes from."""
    from datetime import datetime, timedelta, timezone

    vault = tmp_path / "v"
    start = datetime.now(timezone.utc) - timedelta(hours=3)
    memo("session", "start", "s1", "--project", "web", "--start-time", start.isoformat(), vault=vault)
    memo("prompt", "record", "--project", "web", "--session-id", "s1", "--body", "tidy",
         "--created", (start + timedelta(minutes=20)).isoformat(), vault=vault)
    human = memo("digest", vault=vault).stdout
    digest = json.loads(memo("--json", "digest", vault=vault).stdout)
    apply = shlex.split(next(line for line in human.splitlines() if "or apply its proposal" in line).split(": ", 1)[1])
    assert apply[-2:] == ["--as-of", digest["computedAt"]]
    assert "applied end" in memo(*apply[1:]).stdout


def test_memo_digest_takes_all_as_the_listings_do(tmp_path):
    """Found by an operator: the README's ``--all`` ("every project") was refused by ``memo
    digest`` (No such option) — whose digest covers every project anyway."""
    from tests.inprocess import memo

    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "web", "--start-time", "2026-01-05T09:00:00Z", vault=vault)
    plain = json.loads(memo("--json", "digest", "--as-of", "2026-01-05T18:00:00Z", vault=vault).stdout)
    every = json.loads(memo("--json", "digest", "--all", "--as-of", "2026-01-05T18:00:00Z", vault=vault).stdout)
    assert every["items"] == plain["items"] and any(i["kind"] == "session_stalled" for i in every["items"])


def test_a_pasted_action_runs_nothing_a_name_holds_even_where_hash_is_no_comment(tmp_path):
    """Found by an attacker: zsh (macOS' shell) takes ``#`` for a word unless ``interactive_comments``
    is set, so the hint after it was shell text — a client ``Acme; touch …`` or a pull request's
    ``…#$(id>…)`` ran when the line was pasted. Each hint is words only or one quoted word: read
    without comments, an action holds no operator (``;``, ``|``, ``&``, ``(``, redirection)."""
    vault = tmp_path / "v"
    for sid, client, day in (("s-a", "Acme; touch /tmp/PWNED", "01"), ("s-b", "Beta $(touch /tmp/PWNED)", "02"),
                             ("s-d", None, "04")):
        memo("session", "start", sid, "--project", "web", *(["--client", client] if client else []),
             "--start-time", f"2026-12-{day}T09:00:00Z", vault=vault)
        memo("session", "end", sid, "--project", "web", "--until", f"2026-12-{day}T10:00:00Z", vault=vault)
    memo("session", "start", "s-pr", "--project", "api", "--start-time", "2026-12-04T14:00:00Z", vault=vault)
    memo("session", "end", "s-pr", "--project", "api", "--until", "2026-12-04T16:00:00Z",
         "--pr", "https://github.com/acme/api/pull/9#$(id>/tmp/PWNED_PR)", vault=vault)
    items = json.loads(memo("--json", "digest", "--as-of", "2026-12-05T12:00", vault=vault).stdout)["items"]
    assert {i["kind"] for i in items} >= {"client_missing", "pr_awaiting_review"}
    for item in items:
        lexer = shlex.shlex(item["action"], posix=True, punctuation_chars=True)
        lexer.commenters = ""  # zsh's default: no comments on the command line
        words = list(lexer)
        assert not [w for w in words if set(w) <= set("();<>|&")], item["action"]
        assert words[0] == "memo" and "#" in words, item["action"]
    [missing] = [i for i in items if i["kind"] == "client_missing"]
    assert missing["action"].endswith("# 'its turns follow; web bills Acme; touch /tmp/PWNED, Beta $(touch /tmp/PWNED)'")


def test_a_config_change_an_item_asks_for_clears_it_at_once(tmp_path):
    """Found by an operator: after ``memo config set projectClients.newthing internal`` (the
    command the item gives) ``memo digest`` still listed ``project_unbilled:newthing`` — the cached
    digest was keyed by the vault only — until ``--refresh``."""
    vault, config = tmp_path / "v", tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n')
    env = {"MEMO_CONFIG": str(config)}
    now = datetime.now(timezone.utc).replace(microsecond=0)
    for sid, project, client in (("a1", "web", "Acme"), ("n1", "newthing", None)):
        start = (now - timedelta(hours=3)).isoformat()
        memo("session", "start", sid, "--project", project, *(["--client", client] if client else []),
             "--start-time", start, vault=vault, env=env)
        memo("session", "end", sid, "--project", project, "--until", (now - timedelta(hours=2)).isoformat(),
             vault=vault, env=env)

    def kinds():
        return [i["id"] for i in json.loads(memo("--json", "digest", vault=vault, env=env).stdout)["items"]]

    assert kinds() == ["project_unbilled:newthing"]
    memo("config", "set", "projectClients.newthing", "internal", vault=vault, env=env)
    assert kinds() == []


def test_a_digest_action_pasted_into_zsh_runs_as_it_reads(tmp_path):
    """Found by a new user on a Mac: ``memo session show S --project P  # resume, or: memo session
    end …`` pasted into zsh (no ``interactive_comments``) failed with "Got unexpected extra
    argument(s) (# resume, or: …)": memo takes a lone ``#`` and what follows as the comment."""
    vault = tmp_path / "v"
    start = (datetime.now(timezone.utc) - timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    memo("session", "start", "w1", "--project", "web", "--client", "Acme", "--start-time", start, vault=vault)
    items = json.loads(memo("--json", "digest", vault=vault).stdout)["items"]
    [stalled] = [i for i in items if i["kind"] == "session_stalled"]
    lexer = shlex.shlex(stalled["action"], posix=True)
    lexer.commenters = ""  # zsh's default: `#` is a word
    lexer.whitespace_split = True
    words = list(lexer)
    assert "#" in words and words[0] == "memo"
    ran = memo(*words[1:], vault=vault)
    assert ran.returncode == 0 and ran.stdout.startswith("session w1 · web"), ran.stderr
    # found by an attacker: an option's value that is `#` is a value, not a comment
    memo("prompt", "record", "--session-id", "w1", "--project", "web", "--body", "#", vault=vault)
    assert json.loads(memo("--json", "prompt", "get", "prompt-w1-t1", "--project", "web", vault=vault).stdout)[
        "body"] == "#"


def test_work_beyond_the_horizon_is_counted_with_the_date_that_lists_it(tmp_path):
    """Found by a new user: "older than 14 days (counted, not listed): 2 client_missing — see them
    with `memo digest --as-of DATE`" left the date to guess; it is named, and that digest lists them."""
    vault = tmp_path / "v"
    memo("session", "start", "old", "--project", "web", "--client", "Acme", "--start-time", "2026-01-05T09:00:00Z",
         vault=vault)
    memo("session", "end", "old", "--project", "web", "--until", "2026-01-05T10:00:00Z", vault=vault)
    memo("session", "start", "o2", "--project", "web", "--start-time", "2026-01-06T09:00:00Z", vault=vault)
    memo("session", "end", "o2", "--project", "web", "--until", "2026-01-06T10:00:00Z", vault=vault)
    shown = memo("digest", vault=vault, env={"MEMO_TIMEZONE": "UTC"}).stdout
    # for this vault (found by a team lead: pasted, it read the lead's own empty vault)
    said = re.search(r"counted, not listed\): 1 client_missing — the oldest of them: `memo --vault-root (\S+) "
                     r"digest --as-of (\d{4}-\d\d-\d\d)`", shown.replace("\n", ""))
    assert said and (said.group(1), said.group(2)) == (str(vault), "2026-01-07"), shown
    said = re.search(r"--as-of (\d{4}-\d\d-\d\d)`", shown.replace("\n", ""))
    listed = json.loads(memo("--json", "digest", "--as-of", said.group(1), vault=vault,
                             env={"MEMO_TIMEZONE": "UTC"}).stdout)["items"]
    assert [i["id"] for i in listed] == ["client_missing:o2"]
    # all of them: the command with the horizon that reaches them (a first hour: no value, no command)
    days = int(re.search(r"all of them: `memo config set operator.horizonDays (\d+)`", shown.replace("\n", "")).group(1))
    config = tmp_path / "config.toml"
    config.write_text(f'timezone = "UTC"\n[operator]\nhorizonDays = {days}\n', encoding="utf-8")
    reaching = json.loads(memo("--json", "digest", vault=vault, env={"MEMO_CONFIG": str(config)}).stdout)
    assert [i["id"] for i in reaching["items"]] == ["client_missing:o2"] and not reaching["beyondHorizon"]


def test_work_to_bill_of_last_month_is_listed_at_a_month_end_whatever_the_horizon(tmp_path):
    """Found by a billing person: run a week into December, `memo digest` said nothing needs you
    while November's 5.1 h of a project filed under no client went unbilled (the 14-day horizon
    counted it "older", pointing at a 2025 item). Work to bill of this month and the last is listed."""
    vault = tmp_path / "v"
    env = {"MEMO_TIMEZONE": "UTC"}
    for sid, project, client, day in (("b1", "shop", "Acme", "09-21"), ("u1", "dd-web", None, "09-02"),
                                      ("u2", "dd-web", None, "09-20")):
        memo("session", "start", sid, "--project", project, *(("--client", client) if client else ()),
             "--start-time", f"2026-{day}T10:00:00Z", vault=vault, env=env)
        memo("session", "end", sid, "--project", project, "--until", f"2026-{day}T13:00:00Z", vault=vault, env=env)
    early_october = json.loads(memo("--json", "digest", "--as-of", "2026-10-07T09:00:00Z", vault=vault, env=env).stdout)
    [item] = [i for i in early_october["items"] if i["kind"] == "project_unbilled"]
    assert item["id"] == "project_unbilled:dd-web" and item["why"].startswith("6.00 h billable in 2 sessions of dd-web")
    november = json.loads(memo("--json", "digest", "--as-of", "2026-11-10T09:00:00Z", vault=vault, env=env).stdout)
    assert not [i for i in november["items"] if i["kind"] == "project_unbilled"]
    assert november["beyondHorizon"] == {"project_unbilled": 1}
    # the months of the vault's zone (found by a breaker): 30 September 23:30 UTC is 1 October in Tokyo
    tokyo = {"MEMO_TIMEZONE": "Asia/Tokyo"}
    memo("session", "edit", "u1", "--project", "dd-web", "--start", "2026-09-30T23:30:00Z", "--end",
         "2026-10-01T01:30:00Z", vault=vault, env=tokyo)
    memo("session", "edit", "u2", "--project", "dd-web", "--to-project", "later", vault=vault, env=tokyo)
    listed = json.loads(memo("--json", "digest", "--as-of", "2026-11-10T09:00:00Z", vault=vault, env=tokyo).stdout)
    assert [i["id"] for i in listed["items"] if i["kind"] == "project_unbilled"] == ["project_unbilled:dd-web"]
    assert not [i for i in json.loads(memo("--json", "digest", "--as-of", "2026-11-10T09:00:00Z", vault=vault,
                                           env=env).stdout)["items"] if i["kind"] == "project_unbilled"]


def test_a_session_its_first_prompt_opened_is_never_said_to_hold_no_turn(store):
    """Found by an agent's tester: every hook session a first prompt opened (its turn at its very
    start) was "open 11.7 h with no turn recorded" in the digest, though it held that turn."""
    start_session(store, StartSessionRequest(session_id="s1", project="web", start_time=T0.isoformat()), now=T0)
    record_prompt(store, RecordPromptRequest(session_id="s1", project="web", body="Add the CSV export",
                                             created=T0.isoformat()), now=T0)
    [item] = current_digest(store, now=T0 + timedelta(hours=12))["items"]
    assert item["kind"] == "session_open_too_long"
    assert item["why"] == "open 12.0 h, last turn 12.0 h ago; ending now would bill 12.0 h, 12.0 h of it after its last turn"


def test_a_projects_unbilled_minutes_count_one_persons_overlapping_time_once(store):
    """Found by a freelancer: the digest said "13 min billable in 4 sessions" of a project whose
    activity report billed 9 — it added the sessions' lengths, where the report bills one person's
    overlapping time once. It says what the report bills."""
    spans = (("a", "web", None, T0, 60), ("b", "web", None, T0 + timedelta(minutes=30), 60),
             ("c", "shop", "Acme", T0 - timedelta(days=1), 30))  # (the person bills a client)
    for sid, project, client, start, minutes in spans:
        start_session(store, StartSessionRequest(session_id=sid, project=project, client=client,
                                                 start_time=start.isoformat()), now=start)
        end = start + timedelta(minutes=minutes)
        end_session(store, EndSessionRequest(session_id=sid, project=project, until=end.isoformat()), now=end)
    [item] = [i for i in current_digest(store, now=T0 + timedelta(hours=3))["items"] if i["kind"] == "project_unbilled"]
    assert item["why"].startswith("1.50 h billable in 2 sessions of web") and item["minutesAtStake"] == 90, item
