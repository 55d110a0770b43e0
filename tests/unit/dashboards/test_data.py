"""The dashboard's pure helpers: the page request it sends, page counts, named periods, cell
previews, and the facets it reads from the index (SPEC §3.4)."""

from __future__ import annotations

from datetime import date

import pytest

from memo_analytics.analytics.facets import prompt_facets
from memo_analytics.dashboard_data import DashboardData, PromptQuery, page_count, period_bounds, preview
from memo_analytics.dashboards.style import esc
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import RecordPromptRequest


def test_a_page_of_the_dashboard_is_one_list_request_with_limit_and_offset():
    request = PromptQuery(query="  invoice ", ide="cursor", model=" gpt ", since=date(2026, 3, 1),
                          until=date(2026, 3, 31), page_size=50, page=3).request()
    assert (request.limit, request.offset) == (50, 100)
    assert (request.query, request.ide, request.model) == ("invoice", "cursor", "gpt")
    assert (request.since, request.until, request.cross_project, request.project) == \
        ("2026-03-01", "2026-03-31", True, None)
    assert PromptQuery(project="web", page=0, page_size=7).request().model_dump(include={
        "project", "cross_project", "limit", "offset", "query"}) == \
        {"project": "web", "cross_project": False, "limit": 20, "offset": 0, "query": None}


def test_page_counts_round_up_and_an_empty_result_has_one_page():
    assert [page_count(t, 20) for t in (0, 1, 20, 21, 100_400)] == [1, 1, 1, 2, 5020]


def test_named_periods_are_inclusive_local_dates():
    today = date(2026, 3, 15)
    assert period_bounds("this-month", today) == (date(2026, 3, 1), today)
    assert period_bounds("last-month", today) == (date(2026, 2, 1), date(2026, 2, 28))
    assert period_bounds("last-30-days", today) == (date(2026, 2, 14), today)
    assert period_bounds("this-year", today) == (date(2026, 1, 1), today)
    assert period_bounds("all", today) == (None, None)
    assert period_bounds("last-month", date(2026, 1, 5)) == (date(2025, 12, 1), date(2025, 12, 31))


def test_previews_fold_whitespace_and_cut_and_escaping_covers_attributes():
    assert preview("a\n\n  b\tc") == "a b c"
    assert preview("x" * 200, 10) == "x" * 9 + "…"
    assert esc('<img src=x onerror="a">') == "&lt;img src=x onerror=&quot;a&quot;&gt;" and esc(None) == ""


def test_facets_list_each_ide_once_whatever_its_case(store):
    for n, ide in enumerate(["cursor", "Cursor", "codex", "", "claude-code"]):
        record_prompt(store, RecordPromptRequest(body=f"turn {n}", project="web" if n < 3 else "api", ide=ide or None))
    facets = prompt_facets(store)
    assert [ide.lower() for ide in facets.ides] == ["claude-code", "codex", "cursor", "generic"]
    assert (facets.projects, facets.prompts) == (["api", "web"], 5)


def test_the_main_vault_is_the_only_one_without_further_vaults(store):
    data = DashboardData(store)
    assert list(data.vaults().values()) == [str(store.root)]
    assert data.store_for("") is store and data.is_main(str(store.root))


def test_shown_text_keeps_its_letters_in_their_order_without_direction_controls():
    """A turn holding U+202E before "evil" showed "live" in the dashboard's drawer and intent
    story (Trojan Source); right-to-left letters still read right to left."""
    from memo_analytics.reports.story import story_html_fragment

    spoof = "approve \u202eevil\u202c then \u2067שלום\u2069 <b>x</b>"
    assert esc(spoof) == "approve evil then שלום &lt;b&gt;x&lt;/b&gt;"
    fragment = story_html_fragment(spoof)
    assert "\u202e" not in fragment and "\u2067" not in fragment and "approve evil then שלום" in fragment


def test_a_view_of_clients_without_billing_terms_is_a_hint_not_a_warning(store):
    """The Activity tab of a new vault (All time, All clients) showed a yellow warning,
    'Invoice: Invalid clients."internal".hourlyRate …': the usual state of a vault whose
    clients have no terms yet is said as a hint with what to set."""
    from memo_analytics.analytics.activity import report_for
    from memo_analytics.services.requests import ActivityReportRequest, EndSessionRequest, StartSessionRequest
    from memo_analytics.services.sessions import end_session, start_session

    start_session(store, StartSessionRequest(session_id="s1", project="web", start_time="2026-03-02T09:00:00Z"))
    end_session(store, EndSessionRequest(session_id="s1", project="web", until="2026-03-02T10:00:00Z"))
    report = report_for(store, ActivityReportRequest(cross_project=True))
    kind, why = DashboardData(store).invoice_problem(report)
    # terms for "no client" make no sense: the hint says to give the work a client
    assert (kind, why) == ("info", "a draft needs a client for its work filed under internal (memo session edit SID "
                                   "--client NAME), or choose a client that has terms")


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # Panel's own, on building a button
def test_the_digest_says_when_its_list_scrolls(store):
    """Fifteen items, three visible above the fold of an inner scroll and no cue: the digest
    looked like three. Its header says when the list holds more than it shows."""
    from datetime import datetime, timedelta, timezone

    from memo_analytics.dashboards.digest_view import VISIBLE, DigestView
    from memo_analytics.services.requests import StartSessionRequest
    from memo_analytics.services.sessions import start_session

    long_ago = datetime.now(timezone.utc) - timedelta(days=2)
    assert VISIBLE <= 3  # four items overflowed the list's 420 px without a word (found by an operator)
    for n in range(4):  # each open for two days: it would bill the nights
        start_session(store, StartSessionRequest(session_id=f"open-{n}", project="web",
                                                 start_time=long_ago + timedelta(minutes=n)))
    view = DigestView(DashboardData(store))
    assert "items need you" in view.header.object and "scroll the list for all of them" in view.header.object
    assert len(view.items.objects) > VISIBLE


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_a_pull_request_marked_reviewed_on_the_dashboard_leaves_the_digest(store):
    """pr_awaiting_review could only be ended with `memo session edit SID --reviewed`: the
    dashboard's row had an export button and no way to say the review was done."""
    from datetime import datetime, timedelta, timezone

    from memo_analytics.dashboards.digest_view import DigestView
    from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
    from memo_analytics.services.sessions import end_session, start_session

    start = datetime.now(timezone.utc) - timedelta(hours=5)
    start_session(store, StartSessionRequest(session_id="pr-1", project="web", start_time=start))
    end_session(store, EndSessionRequest(session_id="pr-1", project="web", until=start + timedelta(hours=1),
                                         pr="https://github.com/acme/web/pull/7"))
    view = DigestView(DashboardData(store))
    [row] = view.items.objects
    [buttons] = [o for o in row.objects if hasattr(o, "objects")]
    reviewed = [b for b in buttons.objects if "memo-digest-reviewed" in b.css_classes]
    assert [b.label for b in buttons.objects] == ["▶ Export the story", "✓ Mark reviewed"]
    reviewed[0].clicks += 1  # as a click in the browser
    assert "Marked reviewed: pr-1" in view.message.object and view.items.objects == []
    assert store.read("web", "session", "session-pr-1")[0]["reviewedAt"]


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_billable_work_without_a_client_has_a_button_naming_the_projects_client(store):
    from datetime import datetime, timedelta, timezone

    from memo_analytics.dashboards.digest_view import DigestView
    from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
    from memo_analytics.services.sessions import end_session, start_session

    start = datetime.now(timezone.utc) - timedelta(hours=5)
    for sid, client in (("billed", "Acme Corp"), ("forgot", None)):
        start_session(store, StartSessionRequest(session_id=sid, project="web", client=client, start_time=start))
        end_session(store, EndSessionRequest(session_id=sid, project="web", until=start + timedelta(hours=1)))
    view = DigestView(DashboardData(store))
    changed: list[bool] = []
    view.on_changed = lambda: changed.append(True)  # the app shows the records again (the table said internal)
    [row] = view.items.objects
    [buttons] = [o for o in row.objects if hasattr(o, "objects")]
    [apply] = buttons.objects
    assert apply.label == "▶ File under Acme Corp"
    apply.clicks += 1
    assert "Applied: file forgot under Acme Corp" in view.message.object and view.items.objects == []
    assert store.read("web", "session", "session-forgot")[0]["client"] == "Acme Corp"
    assert changed == [True]
    # below the list, what moved in the last day (both ended 4 h ago): context, escaped, no button
    assert view.moving.visible and "moving in the last 24 h (2; nothing to do)" in view.moving.object
    assert "session completed <b>forgot</b>" in view.moving.object


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_an_item_handled_in_another_tab_is_news_not_an_error(store):
    """Found by an operator: the second of two tabs applying one item said, as an error,
    "Invalid item: … is not in the digest now" — as if the operator had made a mistake."""
    from datetime import datetime, timedelta, timezone

    from memo_analytics.dashboards.digest_view import DigestView
    from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
    from memo_analytics.services.sessions import end_session, start_session

    start = datetime.now(timezone.utc) - timedelta(hours=5)
    for sid, client in (("billed", "Acme Corp"), ("forgot", None)):
        start_session(store, StartSessionRequest(session_id=sid, project="web", client=client, start_time=start))
        end_session(store, EndSessionRequest(session_id=sid, project="web", until=start + timedelta(hours=1)))
    first, second = DigestView(DashboardData(store)), DigestView(DashboardData(store))
    for view in (first, second):
        [row] = view.items.objects
        [buttons] = [o for o in row.objects if hasattr(o, "objects")]
        buttons.objects[0].clicks += 1
    assert "Applied: file forgot under Acme Corp" in first.message.object
    assert second.message.object.startswith('<div class="note info" role="status">Nothing to do: client_missing:forgot was '
                                            "handled meanwhile"), second.message.object


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_a_summary_in_the_moving_lane_is_shown_as_text(store):
    from datetime import datetime, timedelta, timezone

    from memo_analytics.dashboards.digest_view import DigestView
    from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
    from memo_analytics.services.sessions import end_session, start_session

    start = datetime.now(timezone.utc) - timedelta(hours=2)
    start_session(store, StartSessionRequest(session_id="x1", project="web", start_time=start))
    end_session(store, EndSessionRequest(session_id="x1", project="web", until=start + timedelta(hours=1),
                                         summary='<img src=x onerror="alert(1)">'))
    view = DigestView(DashboardData(store))
    assert view.items.objects == [] and view.moving.visible
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in view.moving.object and "<img" not in view.moving.object


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_what_the_operator_did_by_itself_is_shown_beside_the_digest(store):
    """Found by an operator: `memo digest` printed "operator: end_stale_session on … — applied",
    the dashboard said "Nothing needs you now" and nothing of the action."""
    from datetime import datetime, timedelta, timezone

    from memo_analytics.dashboards.digest_view import DigestView
    from memo_analytics.operator.policy import allow
    from memo_analytics.services.prompts import record_prompt
    from memo_analytics.services.requests import RecordPromptRequest, StartSessionRequest
    from memo_analytics.services.sessions import start_session

    start = datetime.now(timezone.utc) - timedelta(hours=3)
    start_session(store, StartSessionRequest(session_id="idle", project="web", start_time=start))
    record_prompt(store, RecordPromptRequest(session_id="idle", project="web", body="tidy", created=start))
    allow(store, "end_stale_session", "web")
    view = DigestView(DashboardData(store))
    shown = " ".join(o.object for o in view.items.objects if isinstance(getattr(o, "object", None), str))
    assert "the operator acted by itself in the last 24 h (1;" in shown
    assert "end_stale_session on <b>idle</b> (web) — applied" in shown


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning",
                            "ignore::FutureWarning")  # Panel's and its table's own, on building the view
def test_a_search_over_the_word_limit_is_said_on_the_page(store):
    """Found by an attacker: a search box holding more than 100 words raised pydantic's error in
    the widget's callback: nothing was said and the last results stayed on screen."""
    from memo_analytics.dashboards.prompts_view import PromptsView
    from memo_analytics.domain.errors import InvalidFieldError

    record_prompt(store, RecordPromptRequest(project="web", body="hello"))
    with pytest.raises(InvalidFieldError, match=r"^Invalid query: 101 words"):
        PromptQuery(query=" ".join(["word"] * 101)).request()
    view = PromptsView(DashboardData(store))
    view.search.value = " ".join(["word"] * 101)
    assert "Invalid query: 101 words" in view.message.object and view.message.visible
    # found by an operator: a search of no words, or of words no turn holds, showed 0 rows and nothing else
    view.search.value = '"'
    assert view.message.visible and "the query holds no words to search for" in view.message.object
    view.search.value = "nosuchword"
    assert view.message.visible and "no turn holds this word" in view.message.object
    view.search.value = "hello"
    assert not view.message.visible


def _stalled_end_button(store, now, source, prompt_ago):
    """A session started 3 h before ``now`` whose one prompt was ``prompt_ago`` before it: the
    digest view and the end button of its stalled item."""
    from datetime import timedelta

    from memo_analytics.dashboards.digest_view import DigestView
    from memo_analytics.services.requests import StartSessionRequest
    from memo_analytics.services.sessions import start_session

    start_session(store, StartSessionRequest(session_id="s1", project="web", start_time=now - timedelta(hours=3),
                                             source=source))
    record_prompt(store, RecordPromptRequest(session_id="s1", project="web", body="port the parser"),
                  now=now - prompt_ago)
    view = DigestView(DashboardData(store))
    [row] = view.items.objects
    [buttons] = [o for o in row.objects if hasattr(o, "objects")]
    [end] = buttons.objects
    return view, end


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_the_end_button_of_a_stalled_session_names_the_moment_it_ends_at(store):
    """Found by a new user: the button said "End it at its last activity" while the proposal it
    applied ended the session an idle gap later (its answer unseen). It names the moment."""
    from datetime import datetime, timedelta, timezone

    now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
    _, end = _stalled_end_button(store, now, None, timedelta(hours=2))
    last = (now - timedelta(hours=2)).astimezone(store.zone)
    expected = f"{last:%H:%M}" if last.date() == datetime.now(timezone.utc).astimezone(store.zone).date() \
        else f"{last:%b} {last.day} {last:%H:%M}"
    assert end.label == f"▶ End it at {expected}"


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_the_end_button_ends_the_session_at_the_moment_it_names_minutes_later(tmp_path, monkeypatch):
    """Found by a new user: a stalled session whose idle gap after its last prompt has not run
    out yet is proposed to end "now"; the button named 00:31 and, clicked at 00:32, ended it at
    00:32 (a minute more billed than it said) with the same fingerprint. The button applies the
    proposal as of the digest it was shown in; the banner reads the vault's time, not UTC."""
    from datetime import datetime, timedelta, timezone

    from memo_analytics.config import Settings
    from memo_analytics.operator import acting
    from memo_analytics.services.store import VaultStore

    store = VaultStore(Settings(vault_root=tmp_path / "vault", timezone="Europe/Berlin", idle_gap_minutes=180))
    try:
        # a hook's session: its answers unseen (no transcript), its end an idle gap after the prompt
        view, end = _stalled_end_button(store, datetime.now(timezone.utc), "hook:claude-code", timedelta(minutes=90))
        [item] = DashboardData(store).digest()["items"]
        shown_until = item["proposal"]["params"]["until"]
        later = datetime.now(timezone.utc) + timedelta(minutes=5)
        monkeypatch.setattr(acting, "utcnow", lambda: later)
        end.clicks += 1  # the person clicks five minutes later
        ended = store.read("web", "session", "session-s1")[0]
        assert ended["status"] == "completed" and ended["endTime"] == shown_until, (ended["endTime"], shown_until)
        assert "Applied: end s1 at" in view.message.object and "Europe/Berlin" in view.message.object
        assert "Z" not in view.message.object.split("Applied:")[1].split("<")[0]
    finally:
        store.close()


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_the_export_button_says_where_the_story_went_and_a_second_click_writes_no_copy(tmp_path):
    """Found by an operator: the button said only "Applied: export the story of mcp-b for the
    reviewer" (the CLI printed the path), and each click wrote one more copy."""
    from datetime import datetime, timedelta, timezone

    from memo_analytics.config import OperatorPolicy, Settings
    from memo_analytics.dashboards.digest_view import DigestView
    from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
    from memo_analytics.services.sessions import end_session, start_session
    from memo_analytics.services.store import VaultStore

    stories = tmp_path / "stories"
    store = VaultStore(Settings(vault_root=tmp_path / "vault", timezone="UTC",
                                operator=OperatorPolicy(stories_dir=stories)))
    try:
        start = datetime.now(timezone.utc) - timedelta(hours=5)
        start_session(store, StartSessionRequest(session_id="pr-2", project="web", start_time=start))
        end_session(store, EndSessionRequest(session_id="pr-2", project="web", until=start + timedelta(hours=1),
                                             pr="https://github.com/acme/web/pull/8"))
        view = DigestView(DashboardData(store))
        for said in ("written to", "already there:"):
            [row] = view.items.objects
            [buttons] = [o for o in row.objects if hasattr(o, "objects")]
            [export] = [b for b in buttons.objects if b.label == "▶ Export the story"]
            export.clicks += 1
            assert f"Applied: export the story of pr-2 for the reviewer — {said} {stories / 'pr-2.md'}" in \
                view.message.object
        assert [p.name for p in stories.iterdir()] == ["pr-2.md"]
    finally:
        store.close()


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_the_promote_button_names_the_checkout_it_writes_into(store, tmp_path):
    """Found by an operator: the proposal writes into the checkout whose turn came last (Bob's
    clone, then Ana's), and the button said only "Promote into CLAUDE.md"."""
    import subprocess

    from memo_analytics.dashboards.digest_view import DigestView
    from memo_analytics.services.requests import DeriveRulesRequest
    from memo_analytics.services.rules import derive_rules

    repo = tmp_path / "bob" / "shop"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    record_prompt(store, RecordPromptRequest(project="shop", session_id="r1", body="Never commit to main.",
                                             cwd=str(repo)))
    derive_rules(store, DeriveRulesRequest(project="shop", save_traps=True))
    view = DigestView(DashboardData(store))
    [row] = [r for r in view.items.objects if "rule" in str(r.objects[0].object)]
    [buttons] = [o for o in row.objects if hasattr(o, "objects")]
    assert buttons.objects[0].label == "▶ Promote into …/bob/shop/CLAUDE.md"


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning", "ignore::DeprecationWarning")
def test_an_action_of_the_digest_shows_in_the_other_tabs_at_once_and_its_word_goes_at_the_next_refresh(store):
    """Found by an operator: after "▶ End it" the Activity tab kept the session open for half a
    minute (till the periodic refresh), and "Applied: …" stayed on screen for good."""
    from datetime import datetime, timedelta, timezone

    now = datetime.now(timezone.utc).replace(second=0, microsecond=0)
    view, end = _stalled_end_button(store, now, None, timedelta(hours=2))
    followed = []
    view.followers.append(lambda: followed.append(store.read("web", "session", "session-s1")[0]["status"]))
    end.clicks += 1
    assert followed == ["completed"]  # the followers read the vault after the action
    assert view.message.visible and "Applied: end s1 at" in view.message.object
    view._tick(max_age_seconds=30)  # the periodic refresh, at once: the word stays (an operator lost it in seconds)
    assert view.message.visible
    view._said_at -= 61  # a minute on
    view._tick(max_age_seconds=30)
    assert not view.message.visible
    view._say("ok", "again")
    view._tick(force=True)  # ↻: gone at once
    assert not view.message.visible
