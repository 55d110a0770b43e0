"""The operator digest atop every tab (SPEC §6): one line per item, ranked, with a one-click
apply of its proposed action. A proposal made on state that changed since is refused by
:func:`~memo_analytics.operator.acting.apply_item`; the view then shows the new proposal."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

import panel as pn

from memo_analytics.dashboard_data import DashboardData
from memo_analytics.dashboards.style import esc, html_pane, note
from memo_analytics.domain.clock import local_instants
from memo_analytics.domain.errors import MemoError
from memo_analytics.operator.acting import ItemGoneError
from memo_analytics.domain.shell import with_vault_root
from memo_analytics.operator.digest import moving_of

#: Items listed (the rest are counted); the list scrolls past about :data:`VISIBLE` items.
SHOWN = 25
#: Items the list shows before it scrolls (the header says when it does: three of fifteen looked like all;
#: its 420 px hold three — at five, a fourth and fifth were hidden without a word, found by an operator).
VISIBLE = 3
#: How many rows of the moving lane the dashboard shows (what moved in the last day: context)
MOVING_SHOWN = 5
#: The label of the apply button per action class (the proposal's summary is its tooltip).
APPLY_LABELS = {"end_stale_session": "End it", "cancel_handoff": "Cancel the hand-off",
                "promote_rule": "Promote into CLAUDE.md", "export_story": "Export the story",
                "set_client": "File under the project's client"}


def _hours(minutes: int) -> str:
    return f"{minutes / 60:.1f} h" if minutes >= 60 else f"{minutes} min"


def item_html(item: dict[str, Any], root: str | None = None) -> str:
    """One digest item as escaped HTML; its command names the vault it acts on (``--vault-root``:
    the item's further vault, else ``root``), as a person pastes it into any shell."""
    lane = "lane-waiting" if item["lane"] == "waiting on you" else "lane-dropped"
    where = (esc(item["project"]) + (f" · {esc(item['owner'])}" if item.get("owner") else "")
             + (f" · vault {esc(item['vault'])}" if item.get("vault") else ""))
    stake = f" · {_hours(item['minutesAtStake'])} billable at stake" if item.get("minutesAtStake") else ""
    vault = item.get("vault") or root
    # a served vault is often not the one a shell's memo opens: without it, a pasted command acted
    # on ~/.memo/vault
    command = with_vault_root(item["action"], str(vault)) if vault else item["action"]
    return (f'<div class="item"><span class="badge {lane}">{esc(item["lane"])}</span> '
            f'<span class="kind">{esc(item["kind"].replace("_", " "))}</span> '
            f'<b>{esc(item["subject"])}</b> <span class="muted">({where})</span><br>'
            f'<span class="why">{esc(item["why"])}</span> <span class="muted">— waits for '
            f'{esc(item["waitingFor"])}{esc(stake)}</span><br>'
            f'<span class="muted small">by hand:</span> <code>{esc(command)}</code></div>')


#: How long the periodic refresh leaves what an action said (seconds).
SAID_SECONDS = 60

#: In the page, at a click of an item's button: it is disabled and says so at once (on a slow link the
#: click showed nothing for seconds), and loses the focus — the list rebuilt under it put the focus on
#: the next item's button, and a second Enter ended a session nobody chose (found by an operator).
APPLYING_JS = """
cb_obj.disabled = true;
cb_obj.label = "… applying";
let focused = document.activeElement;
while (focused && focused.shadowRoot && focused.shadowRoot.activeElement) focused = focused.shadowRoot.activeElement;
if (focused && focused.blur) focused.blur();
"""


class DigestView:
    """The digest panel; :attr:`layout` is what the app shows."""

    def __init__(self, data: DashboardData) -> None:
        self.data = data
        self.header = html_pane(sizing_mode="stretch_width", margin=(0, 10))
        self.message = html_pane(sizing_mode="stretch_width", margin=(0, 10), visible=False)
        self.items = pn.Column(sizing_mode="stretch_width", margin=0, css_classes=["memo-digest-items"],
                               styles={"max-height": "420px", "overflow-y": "auto"})
        self.moving = html_pane(sizing_mode="stretch_width", margin=(6, 10), visible=False)
        self.refresh_button = pn.widgets.Button(label="↻ Refresh", button_type="light", width=100,
                                                css_classes=["memo-digest-refresh"])
        self.refresh_button.on_click(lambda _: self._tick(force=True))
        #: called after each ↻ and periodic refresh: other views that follow the vault (the Prompts table)
        self.followers: list[Any] = []
        self._shown: tuple | None = None  # what the list shows (refresh rebuilds it only when this changes)
        self._said_at = 0.0  # when an action's outcome was said (time.monotonic())
        #: called after a proposal was applied or a review marked: the app shows the records changed
        self.on_changed: Any = None
        self.layout = pn.Column(
            pn.FlexBox(self.header, self.refresh_button, flex_wrap="wrap", justify_content="space-between",
                       align_items="center", sizing_mode="stretch_width"),  # wraps on a phone
            self.message, self.items, self.moving, sizing_mode="stretch_width", css_classes=["memo-digest"],
            styles={"border": "1px solid #dfe5ec", "border-radius": "8px", "background": "#fbfcfd"},
            margin=(5, 10, 10, 10),
        )
        self.refresh()

    def auto_refresh(self, seconds: float) -> None:
        """Show the digest again every ``seconds`` (recomputed when older than that) while the
        page is open: an operator who keeps the dashboard open sees a session stall without
        pressing ↻. The list is rebuilt only when what it shows changed."""
        if seconds > 0 and pn.state.curdoc is not None:
            pn.state.add_periodic_callback(lambda: self._tick(max_age_seconds=max(1, int(seconds))),
                                           period=int(seconds * 1000))

    def _tick(self, said: bool = False, **how: Any) -> None:
        """The digest again, then each follower (↻ and the periodic refresh; after an action, so
        the other tabs show what it changed at once — the Activity tab kept an ended session open
        for half a minute, found by an operator). What the last action said goes at the next ↻ or
        periodic refresh (``said``: keep it, the action's own refresh): "Applied …" stayed for good."""
        import time

        # the periodic refresh leaves what an action said for a while (it went within seconds, a story's
        # path with it: found by an operator); ↻ takes it away at once
        if not said and (how.get("force") or time.monotonic() - self._said_at > SAID_SECONDS):
            self.message.visible = False
        self.refresh(**how)
        for follow in self.followers:
            follow()

    def refresh(self, force: bool = False, max_age_seconds: int | None = None) -> None:
        """Re-read the digest (``force``: recompute, not the cached answer; ``max_age_seconds``:
        recompute a cached answer older than that)."""
        try:
            digest = self.data.digest(refresh=force, max_age_seconds=max_age_seconds)
        except MemoError as exc:
            self.header.object = note("error", f"The digest could not be computed: {exc}")
            self.items.objects = []
            self.moving.visible = False
            self._shown = None
            return
        items = digest["items"]
        beyond = sum(digest.get("beyondHorizon", {}).values())
        older = f" · {beyond} older than {digest['horizonDays']} days (counted, not listed)" if beyond else ""
        title = f"{len(items)} {'item needs' if len(items) == 1 else 'items need'} you" if items \
            else "Nothing needs you now"
        scrolls = " · scroll the list for all of them" if len(items) > VISIBLE else ""
        computed = digest.get("computedAt") or digest.get("asOf")
        fresh = f" · computed {esc(self._clock(computed))}" if computed else ""
        self.header.object = (f'<h3 class="section">Operator digest — {esc(title)}</h3>'
                              f'<span class="muted small">ranked: waiting on you first, then billable minutes at '
                              f'stake, then age{esc(older)}{esc(scrolls)}{fresh}</span>')
        acted = (digest.get("operator") or {}).get("acted") or []
        self._show_moving(digest)
        shown = (tuple((i["id"], i["project"], i["fingerprint"], i["why"], i["action"], i.get("vault")) for i in items),
                 tuple(sorted(str(r) for r in acted)))
        if shown == self._shown:
            return  # nothing the list shows changed: its buttons stay as they are under the pointer
        self._shown = shown
        self.items.objects = [self._row(item, computed) for item in items[:SHOWN]]
        if len(items) > SHOWN:
            self.items.append(html_pane(f'<span class="muted">… and {len(items) - SHOWN} more '
                                        f'(<code>memo digest</code> lists them all)</span>', margin=(0, 10)))
        if acted:  # what the operator did by itself, as memo digest says it (a team lead reading only this missed it)
            lines = "<br>".join(f'{esc(r.get("actionClass", ""))} on <b>{esc(r.get("subject", ""))}</b> '
                                f'({esc(r.get("project") or "-")}) — {esc(r.get("outcome", ""))} '
                                f'<span class="muted">at {esc(r.get("at", ""))}</span>' for r in acted[-10:])
            self.items.append(html_pane(f'<div class="memo-digest-acted"><span class="muted small">the operator acted '
                                        f'by itself in the last 24 h ({len(acted)}; memo operator audit lists every '
                                        f'action):</span><br>{lines}</div>', sizing_mode="stretch_width",
                                        margin=(6, 10)))

    def _show_moving(self, digest: dict[str, Any]) -> None:
        """Below the items, what moved in the last day (``moving``: sessions ended, hand-offs
        claimed): context, nothing to do (OPERATOR.md); hidden when nothing did."""
        moved, count = moving_of(digest)
        lines = "<br>".join(f'{esc(str(m.get("kind", "")).replace("_", " "))} <b>{esc(m.get("subject", ""))}</b> '
                            f'<span class="muted">({esc(m.get("project") or "-")})</span> — {esc(m.get("why", ""))}'
                            for m in moved[:MOVING_SHOWN])
        more = f"<br>… and {count - MOVING_SHOWN} more" if count > MOVING_SHOWN else ""
        self.moving.object = (f'<div class="memo-digest-moving"><span class="muted small">moving in the last 24 h '
                              f'({count}; nothing to do):</span><br>{lines}{more}</div>') if moved else ""
        self.moving.visible = bool(moved)

    def _moment(self, instant: str) -> str:
        """``instant`` (UTC) as the vault's zone reads it: ``14:05`` today, else ``Dec 3 14:05``."""
        from datetime import datetime, timezone

        from memo_analytics.domain.clock import from_iso

        zone = self.data.store.zone
        local = from_iso(instant).astimezone(zone)
        today = datetime.now(timezone.utc).astimezone(zone).date()
        return f"{local:%H:%M}" if local.date() == today else f"{local:%b} {local.day} {local:%H:%M}"

    def _clock(self, instant: str) -> str:
        """``instant`` (UTC) as the time of day in the vault's zone, with the zone."""
        from memo_analytics.domain.clock import from_iso

        local = from_iso(instant).astimezone(self.data.store.zone)
        return f"{local:%H:%M:%S} {local.tzname() or ''}".strip()

    def _row(self, item: dict[str, Any], shown_at: str | None = None) -> pn.Row:
        """The item's text and buttons; ``shown_at`` is the moment of the digest it comes from,
        at which its proposal is applied (the one its button names)."""
        text = html_pane(item_html(item, str(self.data.store.root)), sizing_mode="stretch_width", margin=(4, 10))
        proposal = item.get("proposal")
        style = {"border-top": "1px solid #eef1f5"}
        buttons = []
        if proposal is not None:
            label = APPLY_LABELS.get(proposal["actionClass"], "Apply the proposal")
            if proposal["actionClass"] == "set_client":  # Bokeh shows a label as text, never HTML
                label = f"File under {proposal['params']['client'][:40]}"
            elif proposal["actionClass"] == "promote_rule" and proposal["params"].get("repository"):
                # which checkout it writes into: the one whose turn came last ("…/bob/shop/CLAUDE.md")
                tail = "/".join(PurePath(proposal["params"]["repository"]).parts[-2:])
                label = f"Promote into …/{tail[-40:]}/{proposal['params'].get('destination') or 'CLAUDE.md'}"
            elif proposal["actionClass"] == "end_stale_session" and proposal["params"].get("until"):
                # the moment it ends at, as the proposal has it: "at its last activity" was said of an
                # end an idle gap after the last prompt (its answer unseen)
                label = f"End it at {self._moment(proposal['params']['until'])}"
            button = pn.widgets.Button(label=f"▶ {label}", button_type="primary", width=260, margin=(0, 10, 6, 10),
                                       css_classes=["memo-digest-apply"], description=proposal["summary"])
            button.on_click(lambda _event, item=item: self.apply(item, shown_at))
            button.js_on_click(code=APPLYING_JS)  # says it is under way, and is pressed once
            buttons.append(button)
        if item["kind"] == "pr_awaiting_review" and not item.get("vault"):  # the review is the person's, done elsewhere
            reviewed = pn.widgets.Button(label="✓ Mark reviewed", button_type="light", width=160,
                                         margin=(0, 10, 6, 10), css_classes=["memo-digest-reviewed"],
                                         description="Its pull request was reviewed: record it (reviewedAt)")
            reviewed.on_click(lambda _event, item=item: self.mark_reviewed(item))
            reviewed.js_on_click(code=APPLYING_JS)
            buttons.append(reviewed)
        return pn.Column(text, *([pn.Row(*buttons, margin=0)] if buttons else []), sizing_mode="stretch_width",
                         css_classes=["memo-digest-item"], styles=style)

    def mark_reviewed(self, item: dict[str, Any]) -> None:
        """Record the review of ``item``'s pull request (its session's ``reviewedAt``)."""
        try:
            self.data.mark_reviewed(item["subject"], item["project"])
        except MemoError as exc:
            self._say("error", str(exc))
        else:
            self._say("ok", f"Marked reviewed: {item['subject']}")
        self._tick_after_action()

    def apply(self, item: dict[str, Any], shown_at: str | None = None) -> None:
        """Apply ``item``'s proposal with the fingerprint it was shown with, as of the digest it
        was shown in (``shown_at``): the end it names, not one a minute later."""
        try:
            result = self.data.apply(item["id"], item["fingerprint"], item.get("project"), as_of=shown_at)
        except ItemGoneError:  # handled meanwhile (another tab, the CLI): news, not a mistake (an operator)
            self._say("info", f"Nothing to do: {item['id']} was handled meanwhile (in another tab, or on the "
                              "command line), or is no longer due")
            self._tick_after_action()
            return
        except MemoError as exc:
            self._say("error", str(exc))
            self._tick_after_action()
            return
        if result["applied"]:
            done = (result.get("result") or {}) if isinstance(result.get("result"), dict) else {}
            where = (f" — {'already there: ' if done.get('unchanged') else 'written to '}{done['path']}"
                     if isinstance(done.get("path"), str) else "")  # a story: where the reviewer finds it
            self._say("ok", f"Applied: {local_instants(item['proposal']['summary'], self.data.store.zone)}{where}")
            if self.on_changed is not None:  # the prompts table showed "internal" until a reload
                self.on_changed()
        else:
            new = result["item"].get("proposal") or {}
            self._say("warn", f"Not applied: {result['reason']}. New proposal: "
                              f"{local_instants(new.get('summary', 'none'), self.data.store.zone)}")
        self._tick_after_action()

    def _tick_after_action(self) -> None:
        """The digest again after an action, its list rebuilt whatever it holds (the button
        pressed was disabled in the page: one left as it was stayed so)."""
        self._shown = None
        self._tick(said=True, force=True)

    def _say(self, kind: str, message: str) -> None:
        import time

        self.message.object = note(kind, message)
        self.message.visible = True
        self._said_at = time.monotonic()
