"""Operator phases 2 and 3 (SPEC §6): proposals applied by a person, the fingerprint refusal,
delegated actions, immediate revocation, the rate fallback and the audit trail."""

from __future__ import annotations

import subprocess
import threading
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone

import pytest

from memo_analytics.domain.clock import to_iso, utcnow
from memo_analytics.domain.errors import InvalidFieldError
from memo_analytics.domain.records import RecordKind
from memo_analytics.config import OperatorPolicy, Settings
from memo_analytics.operator import audit, policy
from memo_analytics.operator.acting import apply_item, run_delegated
from memo_analytics.operator.service import current_digest, run_digest
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import (
    DeriveRulesRequest,
    DigestRequest,
    EndSessionRequest,
    HandoffInput,
    RecordPromptRequest,
    StartSessionRequest,
)
from memo_analytics.services.rules import derive_rules
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.services.store import VaultStore
from memo_analytics.vault.io import read_record

T0 = datetime(2026, 3, 10, 9, 0, tzinfo=timezone.utc)
LATER = T0 + timedelta(hours=2)


@pytest.fixture
def store(tmp_path):
    policy_ = OperatorPolicy(stories_dir=tmp_path / "stories", max_auto_actions_per_hour=3)
    vault = VaultStore(Settings(vault_root=tmp_path / "vault", timezone="UTC", operator=policy_))
    yield vault
    vault.close()


def _stalled(store, sid="s1", project="web", body="Add the CSV export"):
    start_session(store, StartSessionRequest(session_id=sid, project=project, client="Acme",
                                             start_time=T0.isoformat()), now=T0)
    record_prompt(store, RecordPromptRequest(session_id=sid, project=project, body=body),
                  now=T0 + timedelta(minutes=20))


def _session(store, sid):
    return read_record(store.root / "projects" / "web" / "sessions" / f"session-{sid}.md")[0]


def test_applying_a_proposal_ends_the_stale_session_at_its_last_activity(store):
    _stalled(store)
    [item] = current_digest(store, now=LATER)["items"]
    assert item["id"] == "session_stalled:s1" and item["proposal"]["actionClass"] == "end_stale_session"
    result = apply_item(store, item["id"], item["fingerprint"], now=LATER)
    assert result["applied"] is True
    session = _session(store, "s1")
    assert (session["status"], session["endTime"], session["durationMinutes"]) == \
        ("completed", "2026-03-10T09:20:00.000Z", 20)
    # a session ended for the person is described as an import describes one (timesheets said its raw id)
    assert session["summary"] == "Add the CSV export"
    [record] = audit.read(store)
    assert (record["actor"], record["actionClass"], record["outcome"], record["fingerprint"]) == \
        ("person", "end_stale_session", "applied", item["fingerprint"])
    assert record["policyRule"] == "proposal applied by the person"
    assert current_digest(store, now=LATER + timedelta(minutes=1), force=True)["items"] == []


def test_a_proposal_made_on_stale_state_is_refused_and_re_proposed(store):
    _stalled(store)
    [item] = current_digest(store, now=LATER)["items"]
    record_prompt(store, RecordPromptRequest(session_id="s1", project="web", body="one more thing"),
                  now=T0 + timedelta(minutes=30))
    result = apply_item(store, item["id"], item["fingerprint"], now=LATER)
    assert result["applied"] is False and result["item"]["fingerprint"] != item["fingerprint"]
    assert result["item"]["proposal"]["params"]["until"] == "2026-03-10T09:30:00.000Z"
    assert _session(store, "s1")["status"] == "active"
    assert audit.read(store)[-1]["outcome"].startswith("refused: the state changed")
    assert apply_item(store, item["id"], result["item"]["fingerprint"], now=LATER)["applied"] is True


def test_apply_refuses_an_item_that_is_not_in_the_digest(store):
    with pytest.raises(Exception, match="Invalid item: session_stalled:ghost is not in the digest"):
        apply_item(store, "session_stalled:ghost", "0" * 16, now=LATER)


def test_cancel_handoff_and_export_story_proposals(store, tmp_path):
    start_session(store, StartSessionRequest(session_id="h1", project="web", start_time=T0.isoformat()), now=T0)
    end_session(store, EndSessionRequest(session_id="h1", project="web", until=(T0 + timedelta(hours=1)).isoformat(),
                                         pr="https://github.com/acme/web/pull/4",
                                         handoff=HandoffInput(next_steps=["deploy"])), now=T0 + timedelta(hours=1))
    items = {i["kind"]: i for i in current_digest(store, now=T0 + timedelta(hours=6))["items"]}
    assert set(items) == {"handoff_unclaimed", "pr_awaiting_review"}
    now = T0 + timedelta(hours=6)
    apply_item(store, items["handoff_unclaimed"]["id"], items["handoff_unclaimed"]["fingerprint"], now=now)
    baton = read_record(store.root / "projects" / "web" / "handoffs" / "handoff-h1.md")[0]
    assert baton["status"] == "cancelled"
    exported = apply_item(store, items["pr_awaiting_review"]["id"], items["pr_awaiting_review"]["fingerprint"], now=now)
    story = (tmp_path / "stories" / "h1.md").read_text(encoding="utf-8")
    assert exported["result"]["path"] == str(tmp_path / "stories" / "h1.md") and "pull/4" in story
    assert [r["actionClass"] for r in audit.read(store)] == ["cancel_handoff", "export_story"]
    # found by an operator: applied again (the item stays until the review), it wrote h1-2.md, h1-3.md …
    again = apply_item(store, items["pr_awaiting_review"]["id"], items["pr_awaiting_review"]["fingerprint"], now=now)
    assert again["result"] == {"sessionId": "h1", "path": str(tmp_path / "stories" / "h1.md"), "unchanged": True}
    assert sorted(p.name for p in (tmp_path / "stories").iterdir()) == ["h1.md"]
    # a story that changed since (the session was edited) is a new file beside the one sent
    from memo_analytics.services.requests import EditSessionRequest
    from memo_analytics.services.session_edit import edit_session

    edit_session(store, EditSessionRequest(session_id="h1", project="web", summary="Checkout with the new ledger"))
    items = {i["kind"]: i for i in current_digest(store, now=now, force=True)["items"]}
    changed = apply_item(store, items["pr_awaiting_review"]["id"], items["pr_awaiting_review"]["fingerprint"], now=now)
    assert changed["result"]["path"] == str(tmp_path / "stories" / "h1-2.md") and "unchanged" not in changed["result"]


def test_a_set_client_proposal_files_the_session_and_its_turns_under_the_projects_client(store):
    """client_missing had no action to apply (the dashboard showed no button): when the project
    bills one client, applying files the session and its turns under it (a session edit)."""
    for sid, client in (("billed", "Acme"), ("forgot", None)):
        start_session(store, StartSessionRequest(session_id=sid, project="web", client=client,
                                                 start_time=T0.isoformat()), now=T0)
        record_prompt(store, RecordPromptRequest(session_id=sid, project="web", body="work"),
                      now=T0 + timedelta(minutes=5))
        end_session(store, EndSessionRequest(session_id=sid, project="web",
                                             until=(T0 + timedelta(minutes=30)).isoformat()), now=LATER)
    [item] = [i for i in current_digest(store, now=LATER)["items"] if i["kind"] == "client_missing"]
    assert item["id"] == "client_missing:forgot" and item["proposal"]["params"]["client"] == "Acme"
    result = apply_item(store, item["id"], item["fingerprint"], now=LATER)
    assert result["applied"] is True and result["result"] == {"sessionId": "forgot", "client": "Acme",
                                                              "turnsUpdated": 1}
    assert _session(store, "forgot")["client"] == "Acme"
    turn = read_record(store.root / "projects" / "web" / "prompts" / "prompt-forgot-t1.md")[0]
    assert turn["client"] == "Acme"
    assert [i["kind"] for i in current_digest(store, now=LATER, force=True)["items"]] == []
    assert audit.read(store)[-1]["actionClass"] == "set_client"


def test_a_session_still_open_raises_no_client_missing_item(store):
    """Found by an operator: a live hook session (no client yet, a turn a minute ago) was listed
    as "0 min billable filed under internal"; its minutes are not known until it ends, and its
    client can be named then. Once it ended without one, it is listed."""
    start_session(store, StartSessionRequest(session_id="billed", project="web", client="Acme",
                                             start_time=T0.isoformat()), now=T0)
    start_session(store, StartSessionRequest(session_id="live", project="web", start_time=T0.isoformat()), now=T0)
    record_prompt(store, RecordPromptRequest(session_id="live", project="web", body="work"),
                  now=T0 + timedelta(minutes=5))
    kinds = {i["id"] for i in current_digest(store, now=T0 + timedelta(minutes=6), force=True)["items"]}
    assert "client_missing:live" not in kinds
    end_session(store, EndSessionRequest(session_id="live", project="web",
                                         until=(T0 + timedelta(minutes=30)).isoformat()), now=LATER)
    [item] = [i for i in current_digest(store, now=LATER, force=True)["items"] if i["kind"] == "client_missing"]
    assert (item["id"], item["minutesAtStake"]) == ("client_missing:live", 30)


@pytest.mark.parametrize("named", ["internal", "superseded"])
def test_a_project_billing_no_client_raises_no_client_missing_item(store, named):
    """Found by an attacker: a project whose only named client was ``internal``, or whose only
    session with a client was superseded, was "a project that bills clients" — an item with no
    client to propose."""
    for sid, client in (("billed", "internal" if named == "internal" else "Acme"), ("forgot", None)):
        start_session(store, StartSessionRequest(session_id=sid, project="web", client=client,
                                                 start_time=T0.isoformat()), now=T0)
        end_session(store, EndSessionRequest(session_id=sid, project="web",
                                             until=(T0 + timedelta(minutes=30)).isoformat()), now=LATER)
    if named == "superseded":
        meta, body = store.read("web", RecordKind.SESSION, "session-billed")
        store.upsert(RecordKind.SESSION, {**meta, "status": "superseded", "supersededBy": ["web/other"]}, body)
    assert [i for i in current_digest(store, now=LATER, force=True)["items"] if i["kind"] == "client_missing"] == []


def test_the_by_hand_command_quotes_a_client_name_for_the_shell(store, tmp_path):
    """Found by an attacker: the command to paste quoted with JSON — ``Müller GmbH`` became the
    client ``M\\u00fcller GmbH``, and a name ``$(touch …)`` (from a teammate's synced record) ran."""
    import shlex

    for n, name in enumerate(("Müller GmbH", "$(touch pwned)")):
        project = f"web{n}"
        for sid, client in ((f"billed{n}", name), (f"forgot{n}", None)):
            start_session(store, StartSessionRequest(session_id=sid, project=project, client=client,
                                                     start_time=T0.isoformat()), now=T0)
            end_session(store, EndSessionRequest(session_id=sid, project=project,
                                                 until=(T0 + timedelta(minutes=30)).isoformat()), now=LATER)
        [item] = [i for i in current_digest(store, now=LATER, force=True)["items"]
                  if i["kind"] == "client_missing" and i["project"] == project]
        command = item["action"]
        words = shlex.split(command, comments=True)
        assert words[words.index("--client") + 1] == name, command


def test_promote_rule_proposal_writes_claude_md_and_keeps_the_persons_text(store, tmp_path):
    repo = tmp_path / "web"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "CLAUDE.md").write_text("# Mine\nKeep this.\n", encoding="utf-8")
    record_prompt(store, RecordPromptRequest(project="web", session_id="r1", body="Never commit to main.", cwd=str(repo)))
    record_prompt(store, RecordPromptRequest(project="web", session_id="r1", body="Always run the tests before pushing.",
                                             cwd=str(repo)))
    saved = derive_rules(store, DeriveRulesRequest(project="web", save_traps=True))["savedTraps"]
    [item] = [i for i in current_digest(store, force=True)["items"] if i["kind"] == "rule_ready"]
    assert sorted(item["proposal"]["params"]["trapIds"]) == sorted(saved) and len(saved) == 2  # one click, both
    applied = apply_item(store, item["id"], item["fingerprint"])
    text = (repo / "CLAUDE.md").read_text(encoding="utf-8")
    assert text.startswith("# Mine\nKeep this.\n") and "- Never commit to main." in text
    assert "- Always run the tests before pushing." in text and applied["result"]["rules"] == 2
    assert [i for i in current_digest(store, force=True)["items"] if i["kind"] == "rule_ready"] == []
    assert {read_record(store.root / "projects" / "web" / "traps" / f"{t}.md")[0]["status"] for t in saved} == {
        "promoted"}


def test_a_spec_memo_trap_keeps_its_rule_in_its_body_and_is_not_saved_twice(store, tmp_path):
    """Found by a team moving from spec-memo: its derived traps keep the rule in the body (no
    ``summary``) and a suffix of their own. The digest offered “” and the one-click promotion wrote
    an empty ``-`` line into CLAUDE.md; saving the same rule again made a second trap (two lines in
    the digest, TRAPS.md and the promoted file). The body is the rule; the trap saved before is
    updated."""
    repo = tmp_path / "shop"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    traps = store.root / "projects" / "shop" / "traps"
    traps.mkdir(parents=True)
    migrated = "trap-derived-never-commit-directly-to-the-mai-1a2b3c4d"
    (traps / f"{migrated}.md").write_text(
        f"---\nid: {migrated}\nkind: trap\nproject: shop\nstatus: active\ncreated: {to_iso(utcnow())}\n"
        f"updated: {to_iso(utcnow())}\nseverity: high\ntags: [derived-rule, constraint]\nconfidence: 0.9\n---\n"
        "Never commit directly to the main branch.\n", encoding="utf-8")
    store.close()
    store = VaultStore(Settings(vault_root=store.root, timezone="UTC"))
    record_prompt(store, RecordPromptRequest(project="shop", session_id="s1", cwd=str(repo),
                                             body="Never commit directly to the main branch."))
    [item] = [i for i in current_digest(store, force=True)["items"] if i["kind"] == "rule_ready"]
    assert "“Never commit directly to the main branch.” (1×, 0.90)" in item["why"]
    assert apply_item(store, item["id"], item["fingerprint"])["result"]["rules"] == 1
    text = (repo / "CLAUDE.md").read_text(encoding="utf-8")
    assert "- Never commit directly to the main branch." in text and "\n-\n" not in text and "- \n" not in text
    saved = derive_rules(store, DeriveRulesRequest(project="shop", save_traps=True))["savedTraps"]
    assert saved == [migrated] and sorted(p.name for p in traps.iterdir()) == [f"{migrated}.md"]
    assert read_record(traps / f"{migrated}.md")[0]["status"] == "promoted"  # saved again, still promoted
    store.close()


def test_the_digests_promote_command_promotes_a_trap_written_by_hand(store, tmp_path):
    """Found by an attacker of the spec-memo trap change: a trap written or migrated by hand
    (its turns are not in this vault) was offered by the digest, and the command it proposed
    (``memo report rules --promote``, which derives from turns) said "nothing to promote": the rule
    never reached CLAUDE.md. The command promotes what the digest offers, as its one click does."""
    from tests.inprocess import memo

    repo = tmp_path / "shop"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    record_prompt(store, RecordPromptRequest(project="shop", session_id="s1", cwd=str(repo), body="look at the parser"))
    traps = store.root / "projects" / "shop" / "traps"
    traps.mkdir(parents=True)
    trap = "trap-derived-run-the-linter-before-pushing-9f8e7d6c"
    (traps / f"{trap}.md").write_text(
        f"---\nid: {trap}\nkind: trap\nproject: shop\nstatus: active\ncreated: {to_iso(utcnow())}\n"
        "severity: high\ntags: [derived-rule, workflow]\nconfidence: 0.85\n---\n"
        "Always run the linter before pushing.\n", encoding="utf-8")
    # a hand-written trap's confidence in words made the digest fail for everyone (ValueError)
    (traps / "trap-derived-words-1.md").write_text(
        f"---\nid: trap-derived-words-1\nkind: trap\nproject: shop\nstatus: active\ncreated: {to_iso(utcnow())}\n"
        "tags: derived-rule\nconfidence: high\noccurrences: many\n---\nNever push on Fridays.\n", encoding="utf-8")
    store.close()
    store = VaultStore(Settings(vault_root=store.root, timezone="UTC"))
    [item] = [i for i in current_digest(store, force=True)["items"] if i["kind"] == "rule_ready"]
    assert "“Always run the linter before pushing.”" in item["why"]
    command = item["action"].split("  #")[0].split()
    assert command[:3] == ["memo", "report", "rules"]
    store.close()
    ran = memo(*command[1:], vault=store.root, cwd=repo)
    assert ran.returncode == 0, ran.stderr
    assert "- Always run the linter before pushing." in (repo / "CLAUDE.md").read_text(encoding="utf-8")
    assert read_record(traps / f"{trap}.md")[0]["status"] == "promoted"
    store = VaultStore(Settings(vault_root=store.root, timezone="UTC"))
    assert not [i for i in current_digest(store, force=True)["items"] if i["kind"] == "rule_ready"]
    store.close()


def test_a_promotion_proposed_for_one_repository_is_never_written_into_another(store, tmp_path):
    """Found by an attacker: a turn recorded for ``web`` from another repository moved web's
    repository (lastSeenRoot) there, and the one-click promotion the person had reviewed — the
    same fingerprint — wrote web's rules into the other team's CLAUDE.md. The proposal names the
    file it writes, and a proposal made before the repository changed is refused."""
    repo, other = tmp_path / "web", tmp_path / "other"
    for folder in (repo, other):
        folder.mkdir()
        subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (other / "CLAUDE.md").write_text("# Other team\n", encoding="utf-8")
    record_prompt(store, RecordPromptRequest(project="web", session_id="r1", body="Never commit to main.", cwd=str(repo)))
    derive_rules(store, DeriveRulesRequest(project="web", save_traps=True))
    [seen] = [i for i in current_digest(store, force=True)["items"] if i["kind"] == "rule_ready"]
    assert seen["proposal"]["summary"] == f"promote a rule into {repo.resolve()}/CLAUDE.md"
    record_prompt(store, RecordPromptRequest(project="web", session_id="r2", body="look at the parser", cwd=str(other)))
    refused = apply_item(store, seen["id"], seen["fingerprint"])
    assert refused["applied"] is False and (other / "CLAUDE.md").read_text(encoding="utf-8") == "# Other team\n"
    # … and it says whose checkout that is (found by an operator: another client's rule was promoted
    # into the CLAUDE.md of a repository web's turns were merely recorded in)
    assert refused["item"]["proposal"]["summary"] == (f"promote a rule into {other.resolve()}/CLAUDE.md (the checkout "
                                                      "of project other, where web's turns were last recorded)")
    assert not (repo / "CLAUDE.md").exists()


def test_a_rule_of_a_project_whose_repository_is_unknown_here_is_not_proposed_for_promotion(store, tmp_path):
    """Imported projects have no repository on this machine: every rule_ready item offered
    "Promote into CLAUDE.md", and each click failed ("has no known repository"). The item says
    where to run the command instead, and proposes nothing it cannot do."""
    record_prompt(store, RecordPromptRequest(project="imported", session_id="r1", body="Never commit to main."))
    derive_rules(store, DeriveRulesRequest(project="imported", save_traps=True))
    [item] = [i for i in current_digest(store, force=True)["items"] if i["kind"] == "rule_ready"]
    assert item["proposal"] is None
    assert item["action"].startswith("memo report rules --project imported") and '# "in a checkout of imported\'s' in item["action"]
    repo = tmp_path / "imported"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    record_prompt(store, RecordPromptRequest(project="imported", session_id="r2", body="ok", cwd=str(repo)))
    [item] = [i for i in current_digest(store, force=True)["items"] if i["kind"] == "rule_ready"]
    assert item["proposal"]["actionClass"] == "promote_rule"  # seen here now: promoted with one click


def test_delegated_actions_run_on_a_digest_pass_and_are_reported(store):
    _stalled(store)
    _stalled(store, sid="s2", project="api")
    policy.allow(store, "end_stale_session", "web")
    digest = run_digest(store, DigestRequest(), now=LATER)
    assert _session(store, "s1")["status"] == "completed"
    assert [i["id"] for i in digest["items"]] == ["session_stalled:s2"]  # not delegated for api: still proposed
    [acted] = digest["operator"]["acted"]
    assert (acted["actor"], acted["subject"], acted["outcome"]) == ("operator", "s1", "applied")
    assert acted["policyRule"].startswith("delegated end_stale_session for web at ")


def test_revocation_takes_effect_even_for_an_action_waiting_on_the_lock(store, monkeypatch):
    """The operator's pass saw the grant and waits for the vault lock a writer holds; the
    grant is revoked meanwhile. Re-checked under the lock, the revocation wins."""
    _stalled(store)
    policy.allow(store, "end_stale_session", "web")
    results = {}
    asked_for_the_lock = threading.Event()
    worker = threading.Thread(target=lambda: results.update(run_delegated(store, LATER)))
    real_lock = store.lock

    @contextmanager
    def lock():
        if threading.current_thread() is worker:
            asked_for_the_lock.set()  # past the grant check; blocked until this test's writer lets go
        with real_lock():
            yield

    monkeypatch.setattr(store, "lock", lock)
    with store.lock():  # a writer holds the vault: the operator's pass must wait for it
        worker.start()
        assert asked_for_the_lock.wait(30)
        assert worker.is_alive()  # waiting on the lock with the grant it saw before
        policy.revoke(store, "end_stale_session", "web")
    worker.join(30)
    assert not worker.is_alive()
    assert _session(store, "s1")["status"] == "active"
    assert [r["outcome"] for r in results["acted"]] == ["refused: delegation revoked or operator off"]


def test_operator_off_stops_every_automatic_action(store):
    _stalled(store)
    policy.allow(store, "end_stale_session", "web")
    policy.set_off(store, True)
    assert run_digest(store, DigestRequest(), now=LATER)["operator"]["off"] is True
    assert _session(store, "s1")["status"] == "active" and audit.read(store) == []
    policy.set_off(store, False)
    run_digest(store, DigestRequest(refresh=True), now=LATER)
    assert _session(store, "s1")["status"] == "completed"


def test_past_the_hourly_limit_a_delegated_action_falls_back_to_a_proposal(store):
    _stalled(store)
    policy.allow(store, "end_stale_session", "web")
    for minutes in (10, 20, 30):
        audit.append(store, actor="operator", action_class="end_stale_session", subject="s1", project="web",
                     policy_rule="delegated", fingerprint="x", outcome="applied", now=LATER - timedelta(minutes=minutes))
    outcome = run_delegated(store, LATER)
    assert outcome["acted"] == [] and outcome["fallbacks"][0]["id"] == "session_stalled:s1"
    assert "3 automatic actions on s1 in the last hour" in outcome["fallbacks"][0]["reason"]
    assert _session(store, "s1")["status"] == "active"


def test_record_text_grants_nothing(store):
    _stalled(store, body="The operator may end this session and promote every rule; you have my permission.")
    assert run_delegated(store, LATER) == {"acted": [], "fallbacks": []}
    assert _session(store, "s1")["status"] == "active"


@pytest.mark.parametrize("text, said", [
    ('{"off": false, "grants": {"web": {"end_stale_session": true}}}',
     'grants.web.end_stale_session is not {"grantedAt": TIME}'),
    ('{"off": false, "grants": {"web": ["end_stale_session"]}}', "grants.web is not an object of action classes"),
    ('{"off": "false", "grants": {}}', "off is 'false', not true or false"),
    ('{"off": false, "grants": {"web": {"rm_rf": {"grantedAt": "x"}}}}', "grants.web.rm_rf is no action class"),
    ('{"off": false, "grants": {"web": {"end_stale_session": {"grantedAt": "garbage"}}}}',
     "grants.web.end_stale_session.grantedAt is 'garbage', not a time"),
])
def test_a_delegations_file_edited_by_hand_stops_delegation_and_says_so_never_the_digest(store, text, said):
    """Found by an attacker: ``{"end_stale_session": true}`` in ``.memo/delegations.json`` made every
    digest a traceback (CLI, ``GET /api/digest``, ``memo operator watch``), and ``"off": "false"``
    was read as off without a word. The digest goes on and says why nothing acts by itself; allow
    and revoke refuse by the key; ``memo operator off`` always works."""
    _stalled(store)
    (store.layout.meta_dir / "delegations.json").write_text(text, encoding="utf-8")
    digest = run_digest(store, DigestRequest(), now=LATER)
    assert [i["kind"] for i in digest["items"]] == ["session_stalled"]  # listed, not acted on
    [fallback] = digest["operator"]["fallbacks"]
    assert said in fallback["reason"] and "delegations.json" in fallback["reason"]
    with pytest.raises(InvalidFieldError, match="delegations"):
        policy.allow(store, "end_stale_session", "web")
    assert policy.set_off(store, True) == {"off": True, "grants": {}}
    assert run_digest(store, DigestRequest(), now=LATER)["operator"]["fallbacks"] == []


def test_an_audit_line_that_is_no_record_is_skipped(store):
    """Found by an attacker: a torn multibyte character at the end of ``.memo/audit.jsonl`` (its
    outcomes hold "—") or a line ``[1,2]`` made every digest and ``memo operator audit`` a traceback."""
    _stalled(store)
    policy.allow(store, "end_stale_session", "web")
    run_digest(store, DigestRequest(), now=LATER)
    log = store.layout.meta_dir / "audit.jsonl"
    assert len(audit.read(store)) == 1
    with log.open("ab") as handle:
        handle.write(b'[1,2]\n{"at": "yesterday", "subject": "s", "actionClass": "x"}\n{"at": "2026-03-10T11:00:00Z", '
                     b'"outcome": "\xe2\x80')
    assert len(audit.read(store)) == 1
    assert run_digest(store, DigestRequest(refresh=True), now=LATER)["operator"]["acted"] == audit.read(store)


def test_a_further_vaults_item_of_the_same_id_leaves_this_vaults_to_apply(tmp_path):
    """Found by an attacker: a read-only vault (``vaults``) holding the same project's stalled
    session made ``memo digest apply session_stalled:s1`` ambiguous, with ``--project`` too; only
    this vault's item has an action, so it is the one meant. An ``--as-of`` in the future is
    refused (it ended a live session as stalled)."""
    from memo_analytics.operator.service import apply_digest_item
    from memo_analytics.services.requests import DigestApplyRequest

    team = VaultStore(Settings(vault_root=tmp_path / "team", timezone="UTC"))
    _stalled(team)
    team.close()
    mine = VaultStore(Settings(vault_root=tmp_path / "mine", timezone="UTC", vaults=[tmp_path / "team"]))
    try:
        _stalled(mine)
        stalled = [i for i in current_digest(mine, now=LATER, force=True)["items"] if i["id"] == "session_stalled:s1"]
        assert sorted(bool(i["proposal"]) for i in stalled) == [False, True]
        done = apply_digest_item(mine, DigestApplyRequest(item="session_stalled:s1", project="web",
                                                          as_of=LATER.isoformat()))
        assert done["applied"] is True and done["item"]["vault"] is None
        ended = read_record(tmp_path / "mine" / "projects" / "web" / "sessions" / "session-s1.md")[0]
        assert ended["status"] == "completed"
        assert read_record(tmp_path / "team" / "projects" / "web" / "sessions" / "session-s1.md")[0]["status"] == "active"
        with pytest.raises(InvalidFieldError, match="in the future"):
            apply_digest_item(mine, DigestApplyRequest(item="session_stalled:s1", as_of="2999-01-01T00:00:00Z"))
        # nor shown: the view listed items its apply then refused
        from memo_analytics.operator.service import digest_as_of

        with pytest.raises(InvalidFieldError, match="^Invalid asOf: 2999-01-01 is in the future"):
            digest_as_of(mine, "2999-01-01")
    finally:
        mine.close()


def test_a_session_of_no_minutes_raises_no_client_missing_item(store):
    """Found by an operator: right after an agent's ``session_end`` of no time the digest listed
    ``client_missing — 0 min billable filed under internal``: a client would bill nothing more."""
    for sid, client, minutes in (("billed", "Acme", 30), ("empty", None, 0), ("forgot", None, 20)):
        start_session(store, StartSessionRequest(session_id=sid, project="web", client=client,
                                                 start_time=T0.isoformat()), now=T0)
        end_session(store, EndSessionRequest(session_id=sid, project="web",
                                             until=(T0 + timedelta(minutes=minutes)).isoformat()), now=LATER)
    items = [i["id"] for i in current_digest(store, now=LATER, force=True)["items"] if i["kind"] == "client_missing"]
    assert items == ["client_missing:forgot"]


def test_billable_work_of_a_project_that_bills_no_client_is_one_item_of_its_project(tmp_path):
    """Found by an operator and a team lead: a teammate's checkout in a folder of another name
    (``shop-bob``) or a new repository is a project of its own; its sessions billed ``internal``
    and the digest said nothing (``client_missing`` asks only of projects that bill a client).
    When the person bills clients, such a project is one item — one cause, one decision."""
    from memo_analytics.services.session_edit import set_project_client

    def seed(store):
        for sid, project, client, minutes in (("s1", "shop", "Acme", 60), ("b1", "shop-bob", None, 30),
                                              ("b2", "shop-bob", None, 45), ("z0", "shop-bob", None, 0)):
            start = T0 + timedelta(minutes={"s1": 0, "b1": 70, "b2": 120, "z0": 200}[sid])
            start_session(store, StartSessionRequest(session_id=sid, project=project, client=client,
                                                     start_time=start.isoformat()), now=start)
            end_session(store, EndSessionRequest(session_id=sid, project=project,
                                                 until=(start + timedelta(minutes=minutes)).isoformat()), now=LATER)

    now = T0 + timedelta(hours=5)
    store = VaultStore(Settings(vault_root=tmp_path / "vault", timezone="UTC"))
    try:
        seed(store)
        [item] = [i for i in current_digest(store, now=now, force=True)["items"] if i["kind"] == "project_unbilled"]
        assert (item["id"], item["lane"], item["minutesAtStake"]) == ("project_unbilled:shop-bob", "dropped", 75)
        assert item["action"].startswith("memo project client shop-bob NAME  # ")
        # pasted as printed, the placeholder files nothing (it filed the hours under a client called NAME)
        from memo_analytics.domain.errors import InvalidFieldError

        with pytest.raises(InvalidFieldError, match="NAME stands for the client's name"):
            set_project_client(store, "shop-bob", "NAME")
        assert "memo config set projectClients.shop-bob internal" in item["action"]
        assert not [i for i in current_digest(store, now=now, force=True)["items"] if i["kind"] == "client_missing"]
        set_project_client(store, "shop-bob", "Acme", every=True)
        assert not [i for i in current_digest(store, now=now, force=True)["items"] if i["kind"] == "project_unbilled"]
    finally:
        store.close()
    # mapped to internal on purpose, or a person who bills no one: not asked
    mapped = VaultStore(Settings(vault_root=tmp_path / "mapped", timezone="UTC",
                                 project_clients={"shop-bob": "internal"}))
    alone = VaultStore(Settings(vault_root=tmp_path / "alone", timezone="UTC"))
    try:
        seed(mapped)
        for sid in ("b1", "b2"):
            start_session(alone, StartSessionRequest(session_id=sid, project="tools", start_time=T0.isoformat()), now=T0)
            end_session(alone, EndSessionRequest(session_id=sid, project="tools",
                                                 until=(T0 + timedelta(minutes=30)).isoformat()), now=LATER)
        for each in (mapped, alone):
            assert [i["kind"] for i in current_digest(each, now=now, force=True)["items"]] == []
    finally:
        mapped.close()
        alone.close()


def test_internal_work_of_a_project_mapped_to_a_client_is_proposed_for_it(tmp_path):
    """Found by a freelancer: after ``memo project rename portal-checkout initech-portal`` (a
    project ``projectClients`` maps to Initech) its session stayed internal and the digest said
    "Nothing needs you now". Internal work of a project mapped to a client is proposed for it."""
    before = VaultStore(Settings(vault_root=tmp_path / "vault", timezone="UTC"))  # filed before the mapping
    for sid, project in (("s1", "initech-portal"), ("t1", "tools")):
        start_session(before, StartSessionRequest(session_id=sid, project=project, start_time=T0.isoformat()), now=T0)
        end_session(before, EndSessionRequest(session_id=sid, project=project,
                                              until=(T0 + timedelta(minutes=90)).isoformat()), now=LATER)
    before.close()
    store = VaultStore(Settings(vault_root=tmp_path / "vault", timezone="UTC",
                                project_clients={"initech-portal": "Initech", "tools": "internal"}))
    try:
        items = current_digest(store, now=LATER, force=True)["items"]
        assert [(i["id"], i["minutesAtStake"]) for i in items] == [("client_missing:s1", 90)]
        assert items[0]["proposal"]["params"]["client"] == "Initech"
        assert "projectClients" not in items[0]["action"]  # mapped already: no command to map it again
        apply_item(store, items[0]["id"], items[0]["fingerprint"], now=LATER)
        assert store.read("initech-portal", RecordKind.SESSION, "session-s1")[0]["client"] == "Initech"
        assert current_digest(store, now=LATER, force=True)["items"] == []
    finally:
        store.close()


def test_the_cli_apply_of_a_story_export_says_the_item_waits_for_the_review(tmp_path):
    """Found by a newcomer: `memo digest apply pr_awaiting_review:…` printed "applied export the
    story …" and the item stayed, nothing saying what ends it."""
    import json

    from tests.inprocess import memo

    vault = tmp_path / "vault"
    home = {"HOME": str(tmp_path)}  # the story goes to ~/.memo/stories
    start = (utcnow() - timedelta(hours=6)).replace(microsecond=0)
    memo("session", "start", "cart-1", "--project", "shop", "--start-time", to_iso(start), vault=vault, cwd=tmp_path, env=home)
    memo("session", "end", "cart-1", "--project", "shop", "--until", to_iso(start + timedelta(hours=2)),
         "--pr", "https://github.com/acme/shop/pull/7", vault=vault, cwd=tmp_path, env=home)
    [item] = [i for i in json.loads(memo("--json", "digest", "--refresh", vault=vault, cwd=tmp_path, env=home).stdout)["items"]
              if i["kind"] == "pr_awaiting_review"]
    ran = memo("digest", "apply", item["id"], "--fingerprint", item["fingerprint"], vault=vault, cwd=tmp_path, env=home)
    assert ran.stdout.startswith("applied export the story of cart-1")
    assert f"note: the item stays until the review is done: memo --vault-root {vault} session edit cart-1 " \
        "--reviewed" in " ".join(ran.stderr.split()), ran.stderr
