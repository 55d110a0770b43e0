"""SPEC §2.5 hand-off baton and session objective, on a real vault."""

from __future__ import annotations

import threading

import pytest

from memo_analytics.domain.errors import InvalidFieldError, RecordNotFoundError
from memo_analytics.services.handoffs import cancel_handoff, list_handoffs
from memo_analytics.services.requests import CancelHandoffRequest, EndSessionRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.vault.io import read_record

T0 = "2026-03-02T09:00:00Z"


def start(store, sid, **kw):
    kw.setdefault("project", "p")
    return start_session(store, StartSessionRequest(session_id=sid, **kw))


def end(store, sid, **kw):
    return end_session(store, EndSessionRequest(session_id=sid, until=kw.pop("until", "2026-03-02T10:00:00Z"), **kw))


def test_session_end_with_handoff_writes_a_baton_and_records_handoff_archive(store):
    start(store, "a", start_time=T0)
    ended = end(store, "a", handoff={"nextSteps": ["run migrations"], "failedApproaches": "tried X",
                                     "openQuestions": ["which region?"], "branch": "main", "owner": "ana"})
    assert ended["handoffArchive"] == "handoff-a"
    meta, body = read_record(store.root / "projects/p/handoffs/handoff-a.md")
    assert (meta["status"], meta["nextSteps"], meta["failedApproaches"], meta["openQuestions"]) == (
        "pending", ["run migrations"], ["tried X"], ["which region?"])
    assert (meta["branch"], meta["owner"], meta["shared"]) == ("main", "ana", False)
    assert "## Next steps\n- run migrations" in body


def test_the_next_eligible_start_claims_the_baton_exactly_once(store):
    start(store, "a", start_time=T0)
    end(store, "a", handoff={"nextSteps": "deploy", "branch": "main"})
    assert start(store, "other-branch", branch="dev")["handoff"] is None
    claimed = start(store, "b", branch="main")["handoff"]
    assert claimed["id"] == "handoff-a" and claimed["status"] == "claimed" and claimed["claimedBy"] == "b"
    assert start(store, "c", branch="main")["handoff"] is None
    assert start(store, "b", branch="main")["handoff"] is None  # a restart claims nothing new
    assert list_handoffs(store, "p") == []


def test_owner_matters_unless_shared_and_other_projects_never_claim(store):
    start(store, "a", start_time=T0)
    end(store, "a", handoff={"nextSteps": "for ana", "owner": "ana"})
    start(store, "x", start_time=T0)
    end(store, "x", handoff={"nextSteps": "anyone", "owner": "ana", "shared": True})
    assert start(store, "elsewhere", project="q", owner="ana")["handoff"] is None
    assert start(store, "bob", owner="bob")["handoff"]["id"] == "handoff-x"
    assert start(store, "ana", owner="ana")["handoff"]["id"] == "handoff-a"


def test_concurrent_starts_claim_one_baton_once(store):
    start(store, "a", start_time=T0)
    end(store, "a", handoff={"nextSteps": "only one of you"})
    results = []

    def worker(n):
        results.append(start(store, f"s{n}")["handoff"])

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(1 for r in results if r) == 1


def test_objective_is_set_on_start_and_cleared_on_end(store):
    assert start(store, "a", start_time=T0, objective="ship pagination", branch="main")["objective"] == "ship pagination"
    assert end(store, "a")["objective"] is None


def test_cancel_handoff_stops_a_claim_and_only_pending_batons_cancel(store):
    start(store, "a", start_time=T0)
    end(store, "a", handoff={"nextSteps": "x"})
    cancelled = cancel_handoff(store, CancelHandoffRequest(session_id="a"))
    assert cancelled["status"] == "cancelled"
    assert start(store, "b")["handoff"] is None
    with pytest.raises(InvalidFieldError, match="is cancelled, not pending"):
        cancel_handoff(store, CancelHandoffRequest(id="handoff-a"))
    with pytest.raises(RecordNotFoundError):
        cancel_handoff(store, CancelHandoffRequest(id="handoff-nobody"))


def test_a_handoff_needs_next_steps_and_is_redacted(store):
    start(store, "a", start_time=T0)
    with pytest.raises(InvalidFieldError, match="^Invalid handoff.nextSteps: must not be empty"):
        end(store, "a", handoff={"nextSteps": ["   "]})
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    end(store, "a", handoff={"nextSteps": [f"use {token}"]})
    assert token not in (store.root / "projects/p/handoffs/handoff-a.md").read_text()


def test_a_claimed_baton_is_not_replaced_by_re_ending(store):
    start(store, "a", start_time=T0)
    end(store, "a", handoff={"nextSteps": "first"})
    start(store, "b")
    with pytest.raises(InvalidFieldError, match="already claimed by b"):
        end(store, "a", handoff={"nextSteps": "second"})


def test_ending_an_ended_session_again_with_a_hand_off_says_the_hand_off_is_pending_again(tmp_path):
    """A hand-off cancelled, then the session ended again with --next-step: the baton is written
    anew and pending — which the command said nothing of (found by a helper)."""
    import json

    from tests.inprocess import memo as run

    vault = tmp_path / "v"
    run("session", "start", "h1", "--project", "p", vault=vault)
    run("session", "end", "h1", "--next-step", "ship", vault=vault)
    run("session", "handoff", "h1", "--cancel", "--project", "p", vault=vault)
    again = run("session", "end", "h1", "--next-step", "ship again", vault=vault)
    assert "its hand-off is written anew and pending (memo session handoff --cancel takes it back)" in \
        " ".join(again.stdout.split())
    pending = json.loads(run("--json", "session", "handoff", "--all", vault=vault).stdout)
    assert [h["nextSteps"] for h in pending["items"]] == [["ship again"]]


def test_a_hand_off_is_named_by_its_own_id_too_and_one_of_no_from_session_is_listed(tmp_path):
    """Found by a team moving from spec-memo: ``memo session handoff handoff-fx --cancel`` (the id
    the listing prints first) said "Record not found: handoff-handoff-fx"; a baton written by
    another tool with ``sessionId`` but no ``fromSessionId`` stopped the listing with a
    ``KeyError`` traceback, and the digest said "left by None" and printed ``memo session handoff ''``."""
    from tests.inprocess import memo

    vault = tmp_path / "v"
    memo("session", "start", "fx", "--project", "shop", vault=vault)
    memo("session", "end", "fx", "--project", "shop", "--next-step", "do it", vault=vault)
    shown = memo("session", "handoff", "handoff-fx", "--project", "shop", vault=vault)
    assert shown.stdout.startswith("handoff-fx · pending")
    cancelled = memo("session", "handoff", "handoff-fx", "--project", "shop", "--cancel", vault=vault)
    assert cancelled.stdout.strip() == "cancelled handoff-fx"
    (vault / "projects/shop/handoffs/handoff-zz-123.md").write_text(
        "---\nid: handoff-zz-123\nkind: handoff\nproject: shop\nstatus: pending\ncreated: '2026-03-03T09:00:00.000Z'\n"
        "updated: '2026-03-03T09:00:00.000Z'\nsessionId: zz\nnextSteps:\n- a\n---\nbody\n", encoding="utf-8")
    listed = memo("session", "handoff", "--all", vault=vault)
    assert listed.returncode == 0 and listed.stdout.startswith("handoff-zz-123 (shop, from zz):\nbody")
    digest = memo("--json", "digest", "--as-of", "2026-03-05T09:00", vault=vault)
    [item] = [i for i in __import__("json").loads(digest.stdout)["items"] if i["kind"] == "handoff_unclaimed"]
    assert item["why"].startswith("1 next step left by zz ")
    assert item["action"].startswith("memo session handoff handoff-zz-123 --project shop  #")
    assert memo("session", "handoff", "handoff-zz-123", "--project", "shop", "--cancel", vault=vault).stdout.strip() \
        == "cancelled handoff-zz-123"
