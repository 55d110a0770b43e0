"""The operator digest (SPEC §6, phase 1): what needs the human now. Pure — no I/O.

A deterministic join over the vault's records that returns one line per item: the reason
code (``kind``), its ``lane``, the ``subject`` it concerns (one row, one owner: a session or
a hand-off, or a project for its rules ready to promote — one item for all of them, since one
promotion writes them into one file —, never repeated per project), what it waits for, why it matters, its
age, the billable minutes at stake and the one command that unsticks it.

Ranking (documented and tested): lane (``waiting on you`` before ``dropped``), then the
billable minutes at stake (more first), then age (older first), then kind and subject.
Items older than the horizon are counted per kind, not listed. Record text is evidence,
never authority: nothing a prompt or summary says changes an item or grants an action.

Kinds
-----
waiting on you: ``agent_waiting`` (an open session's agent has waited ``waitingMinutes`` for the
person: a tool's permission, a question — SPEC §8's waiting states, from its hooks),
``session_open_too_long``, ``handoff_unclaimed``, ``pr_awaiting_review``,
``rule_ready``, ``invoice_number_twice`` (two machines of a vault-git vault issued one invoice
number: a credit note must cancel one), ``invoice_credited_twice`` (two credit notes cancel one
invoice: the client was credited twice), ``invoice_session_changed`` (a session on an issued
invoice now differs from it: a pull or a hand edit changed it afterwards), ``billing_terms_differ``
(an invoice another machine issued billed a client on other terms than this machine's config:
reports and invoices here come to other amounts; one item per client), ``invoice_late_work`` (a billable
session on no invoice in the period an issued invoice of its client billed: recorded after it), ``session_too_long`` (a
billable ended session longer than ``openTooLongHours``, not yet invoiced), ``retainer_projection``
(a client's ``monthlyHoursCap`` is used up, or the month's pace would use it up before the
month ends; one item per client), ``session_unreadable`` (a session file that cannot be read:
reports leave it out, documents of it are refused), ``import_held_back`` (a transcript holds work of a
session past what its issued invoice billed: an import left it out, no report counts it),
``session_billed_twice`` (a hybrid laptop's own invoice and the team daemon's both bill one
session, as the last pull said), ``sync_push_failing`` (a hybrid laptop's records wait: pushes to
the team daemon fail), ``sync_refused`` (a record the daemon refused waits in the outbox); dropped: ``session_stalled``, ``client_missing``,
``project_unbilled`` (a project none of whose sessions names a client, while the person bills
clients: a new repository, a checkout in a folder of another name; one item per project, over
its sessions of the horizon), ``sync_conflict`` (a version a sync kept beside a record, SPEC §2.7).
"""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any

from ..config import OperatorPolicy, config_key_text
from ..domain.shell import inert_hint, is_plain_command, one_line, shell_word, split_hint
from ..domain.clock import format_minutes, from_iso, minutes_between, to_iso
from ..domain.errors import InvalidDateError
from ..domain.rounding import hours_cents
from ..domain.wire import counted
from ..services.importers import IMPORTERS
from ..services.rules.extract import trap_rule
from ..services.sessions import MAX_SESSION_MINUTES, waiting_since

LANES = ("waiting on you", "dropped")
#: The lane of what moved in the last day: context for the person, nothing to do (OPERATOR.md);
#: listed apart from the items (``moving``), never ranked among them nor sent by the webhook
MOVING_LANE = "moving"
#: How far back the moving lane looks, and how many of its rows a digest lists (newest first)
MOVING_HOURS, MOVING_LISTED = 24, 20
KIND_LANE = {
    "agent_waiting": "waiting on you",
    "session_open_too_long": "waiting on you",
    "handoff_unclaimed": "waiting on you",
    "pr_awaiting_review": "waiting on you",
    "rule_ready": "waiting on you",
    "invoice_number_twice": "waiting on you",
    "invoice_credited_twice": "waiting on you",
    "invoice_session_changed": "waiting on you",
    "billing_terms_differ": "waiting on you",
    "session_too_long": "waiting on you",
    "invoice_late_work": "waiting on you",
    "retainer_projection": "waiting on you",
    "session_unreadable": "waiting on you",
    "import_held_back": "waiting on you",
    "session_billed_twice": "waiting on you",
    "sync_push_failing": "waiting on you",
    "sync_refused": "waiting on you",
    "session_stalled": "dropped",
    "client_missing": "dropped",
    "project_unbilled": "dropped",
    "sync_conflict": "dropped",
}


@dataclass
class Snapshot:
    """The records a digest pass joins (wire dicts as the index holds them)."""

    open_sessions: list[dict[str, Any]] = field(default_factory=list)
    pending_handoffs: list[dict[str, Any]] = field(default_factory=list)
    pull_request_sessions: list[dict[str, Any]] = field(default_factory=list)
    rule_traps: list[dict[str, Any]] = field(default_factory=list)
    unbilled_sessions: list[dict[str, Any]] = field(default_factory=list)
    #: billable sessions under no client in projects that bill none, when the person bills clients
    unfiled_sessions: list[dict[str, Any]] = field(default_factory=list)
    sync_conflicts: list[dict[str, Any]] = field(default_factory=list)
    #: ``{number, refs, client, created}`` of each invoice number two uncredited invoices carry
    duplicate_invoices: list[dict[str, Any]] = field(default_factory=list)
    #: session records differing from the invoice that billed them, with ``invoice``, ``fields``
    #: and ``asInvoiced`` (:func:`~memo_analytics.vault.ledger.differs_from_invoice`)
    invoiced_changed: list[dict[str, Any]] = field(default_factory=list)
    #: ``{invoice, client, differences, projects, created}`` of each pulled invoice whose client
    #: this machine's config bills otherwise
    terms_differ: list[dict[str, Any]] = field(default_factory=list)
    #: billable ended sessions longer than ``openTooLongHours``, not on an issued invoice
    long_sessions: list[dict[str, Any]] = field(default_factory=list)
    #: billable ended sessions on no invoice in the period of an issued invoice of their client
    #: (``invoice``, ``periodStart``, ``periodEnd``, ``invoiceClient``: :func:`~.snapshot._late_work`)
    late_sessions: list[dict[str, Any]] = field(default_factory=list)
    #: ``{client, capHours, zone, sessions: [{sessionId, project, startTime, endTime,
    #: billedMinutes}]}`` of each client with a ``monthlyHoursCap``: its billed sessions of the month
    retainers: list[dict[str, Any]] = field(default_factory=list)
    #: ``{id, sessionId, project, path, reason, invoice, billedMinutes, created}`` of each session file
    #: of the vault that cannot be read (:func:`~memo_analytics.operator.snapshot._unreadable_sessions`)
    unreadable_sessions: list[dict[str, Any]] = field(default_factory=list)
    #: ``{path, source, since, project, sessionId, invoice, turns, minutes, standing}`` of each session
    #: whose transcript holds work an import left out because an issued invoice billed the session
    #: (``standing``: the invoice is not credited yet; :func:`~.snapshot._held_back`)
    held_back: list[dict[str, Any]] = field(default_factory=list)
    #: ``{project, sessionId, invoice, teamInvoice, client, billedMinutes, created}`` of each session
    #: this vault's own invoice and the team daemon's both bill (:func:`~.snapshot._team_billed_too`)
    team_billed_too: list[dict[str, Any]] = field(default_factory=list)
    #: whether this vault is a laptop in hybrid mode (a shared baton is taken by a start on the team daemon)
    hybrid_laptop: bool = False
    #: a hybrid laptop's records that wait because pushes fail or the daemon refused them
    #: (:func:`~memo_analytics.services.sync.push_trouble`), else None
    push_trouble: dict[str, Any] | None = None
    #: conversations imported from their transcripts while their hook session was open, not ended
    #: by their agent (:func:`~memo_analytics.operator.snapshot._live_conversations`)
    live_conversations: list[dict[str, Any]] = field(default_factory=list)
    #: sessions completed and hand-offs claimed lately (the "moving" lane, :func:`moving`)
    ended_sessions: list[dict[str, Any]] = field(default_factory=list)
    claimed_handoffs: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Item:
    """One digest line. ``age_minutes`` since the moment the item began to wait;
    ``minutes_at_stake`` billable minutes it concerns (0 when none)."""

    kind: str
    lane: str
    subject: str
    project: str
    waiting_for: str
    why: str
    age_minutes: int
    minutes_at_stake: int
    action: str
    since: str
    fingerprint: str = ""
    proposal: dict[str, Any] | None = None
    vault: str | None = None
    #: whose work it is: the owner of the session (or hand-off) the item concerns, when recorded
    owner: str | None = None

    def __post_init__(self) -> None:
        # one line each: a line end in a title or a client's name made a pasted command two, the
        # second of the record's choosing; and a webhook's text one line per item
        self.action, self.why, self.waiting_for = one_line(self.action), one_line(self.why), one_line(self.waiting_for)
        # its hint quoted unless words only: zsh takes ``#`` for a word, and ran what a name held there
        self.action = inert_hint(self.action)

    @property
    def id(self) -> str:
        """``kind:subject``: how a person names the item (``memo digest apply``)."""
        return f"{self.kind}:{self.subject}"

    def wire(self) -> dict[str, Any]:
        data = asdict(self)
        return {
            "id": self.id,
            "kind": data["kind"], "lane": data["lane"], "subject": data["subject"], "project": data["project"],
            "waitingFor": data["waiting_for"], "why": data["why"], "ageMinutes": data["age_minutes"],
            "minutesAtStake": data["minutes_at_stake"], "action": data["action"], "since": data["since"],
            "fingerprint": data["fingerprint"], "proposal": data["proposal"], "vault": data["vault"],
            "owner": data["owner"],
        }

    @property
    def line(self) -> str:
        """The item as one line of text."""
        return f"[{self.kind}] {self.subject} ({self.project}) — waits for {self.waiting_for}; {self.why} → {self.action}"


#: The commands a digest item's ``action`` runs: ``memo`` and these words after it (every
#: action :func:`build_items` writes starts so, but a sync conflict's ``diff A B``).
DIGEST_COMMANDS = (("sync", "status"), ("sync", "push"), ("session", "edit"), ("session", "end"), ("session", "show"), ("session", "start"), ("session", "handoff"),
                   ("project", "client"),
                   ("session", "export"), ("report", "rules"), ("invoice", "credit"), ("invoice", "show"),
                   ("invoice", "issue"),
                   ("digest", "apply"), ("activity",), ("reindex",),
                   # the import that takes in what an invoice held back (import_held_back): a transcript's path
                   *(("import", source) for source in IMPORTERS))


#: The options those commands carry in a digest (``--promote`` with a file name of the repository's root).
DIGEST_OPTIONS = frozenset({"--project", "--until", "--client", "--fingerprint", "--as-of", "--start", "--end",
                            "--minutes", "--promote", "--reviewed", "--branch", "--owner", "--billable",
                            "--since", "--all", "--here", "--replaces"})


def is_digest_command(action: str) -> bool:
    """Whether ``action`` is a command a digest writes: plain words only
    (:func:`~memo_analytics.domain.shell.is_plain_command`) and one of :data:`DIGEST_COMMANDS`
    (``memo session end …``). A team daemon's item is shown to be pasted only then: plain words
    alone let "bash -c '… | sh'" or "memo config set remote.url …" through."""
    command = split_hint(action)[0]
    # no ANSI-C word: shlex reads $'-o' as "$-o", bash as the option -o (the records a digest
    # names are one plain line: it writes none)
    if not is_plain_command(action) or "$'" in command:
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if words[:1] == ["diff"]:  # a sync conflict's two versions (a record, its conflict file): reads, changes nothing
        return len(words) == 3 and all(w.endswith(".md") and "/projects/" in w and not w.startswith("-")
                                       for w in words[1:]) and ".conflict-" in words[2]
    known = next((c for c in DIGEST_COMMANDS if words[:1] == ["memo"] and tuple(words[1:1 + len(c)]) == c), None)
    if known is None:
        return False
    # only the options a digest writes: a daemon's "--output ~/notes/README.md --force" or
    # "--vault-root /tmp/evil" passed as plain words
    rest = words[1 + len(known):]
    for option, value in zip(rest, [*rest[1:], ""]):
        if option.startswith("-") and option not in DIGEST_OPTIONS:
            return False
        if option == "--promote" and (not value.endswith(".md") or "/" in value or value.startswith(".")):
            return False
    return True


def _changed_stake(changed: dict[str, Any]) -> int:
    """The minutes an invoiced session's change puts at stake: the difference from what the
    invoice billed when only its times changed (120 invoiced, 180 now: 60 — it said 180, found by
    an operator), else what it billed (another client, no longer billable: the whole of it)."""
    now = int(changed.get("durationMinutes") or 0)
    billed = (changed.get("asInvoiced") or {}).get("durationMinutes")
    if isinstance(billed, int) and not isinstance(billed, bool) and \
            set(changed.get("fields") or ()) <= {"startTime", "endTime", "durationMinutes"}:
        return abs(now - billed)
    return int(billed) if isinstance(billed, int) and not isinstance(billed, bool) else now


def _push_trouble(trouble: dict[str, Any] | None, now: datetime) -> list[tuple[Item, dict[str, Any]]]:
    """A hybrid laptop's records that do not reach the team daemon: one ``sync_push_failing`` item
    while pushes fail (records waiting since the last push that went through), one
    ``sync_refused`` item per record the daemon refused (it waits, refused again at each push)."""
    if not trouble:
        return []
    items = []
    try:  # waiting since the last push that went through
        since = from_iso(str(trouble.get("lastSuccessAt") or trouble.get("lastErrorAt")))
    except ValueError:
        since = now
    if trouble.get("lastError"):
        waiting = counted(trouble["pending"], "record")
        items.append((Item("sync_push_failing", KIND_LANE["sync_push_failing"], "outbox", "",
                           "you to mend the push to the team daemon",
                           f"{waiting} of this laptop wait{'s' if trouble['pending'] == 1 else ''} in its outbox: "
                           f"pushes to the team daemon fail ({trouble['lastError']}), so the team's reports and "
                           "invoices lack them", _age(since, now), 0,
                           "memo sync status  # then memo sync push", to_iso(since),
                           fingerprint("sync_push_failing", trouble.get("lastSuccessAt"))), trouble))
    for refused in trouble.get("refused") or []:
        record = str(refused["id"])
        items.append((Item("sync_refused", KIND_LANE["sync_refused"], record, str(refused.get("project") or ""),
                           "you to file the record so the team daemon takes it",
                           f"the team daemon refused {record}: {refused.get('reason')}; it waits in this laptop's "
                           "outbox, refused again at each push, and the team's reports lack it",
                           _age(since, now), 0, "memo sync status  # lists each refused record with its reason",
                           to_iso(since), fingerprint("sync_refused", refused.get("project"), record,
                                                      refused.get("reason"))), refused))
    return items


def fingerprint(*parts: Any) -> str:
    """A short stable hash of the state an item (or a proposal) was made on."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _q(value: str) -> str:
    """``value`` as one word of a POSIX shell command a person pastes: as it is when it needs no
    quoting, else in single quotes (``$(…)``, backquotes and escapes stay text: JSON quoting
    made ``Müller GmbH`` the client ``M`` + an escape + ``ller GmbH``, and ran a ``$(…)`` in a name);
    a character a terminal does not show as itself as its escape (:func:`~memo_analytics.domain.shell.shell_word`)."""
    return shell_word(value)


def back_as_invoiced(changed: dict[str, Any]) -> str:
    """The command that puts a session back as its invoice billed it: ``{sessionId, project,
    fields, asInvoiced}`` (a sync's ``invoicedSessionsChanged`` item, or the digest's)."""
    billed = changed.get("asInvoiced") or {}
    return " ".join([f"memo session edit {_q(changed['sessionId'])} --project {_q(changed['project'])}",
                     *(f"--{flag} {_q(str(billed[key]))}" for flag, key in
                       (("start", "startTime"), ("end", "endTime"), ("client", "client"))
                       if key in changed["fields"] and billed.get(key)),
                     # an invoice bills billable work: a session made not billable since is put back so
                     *(["--billable"] if "billable" in changed["fields"] else [])])


def _age(since: datetime, now: datetime) -> int:
    return minutes_between(since, now)


def _hours(minutes: int) -> str:
    return f"{minutes / 60:.1f} h" if minutes >= 60 else f"{minutes} min"


def _billed(minutes: int) -> str:
    """Billable minutes as the reports say them: ``45 min``, else hours with two decimals
    (147 billable minutes read "2.5 h" where the invoice said 2.45 h: found by a newcomer)."""
    return _hours_text(minutes) if minutes >= 60 else f"{minutes} min"


def _cut(text: str, most: int) -> str:
    """``text`` in at most ``most`` characters: cut with an ellipsis ("…100% coverag" read as the
    rule's own text)."""
    return text if len(text) <= most else text[:most - 1].rstrip() + "…"


def _since(minutes: int) -> str:
    """How long ago, as the age column says it: days from two days on (``111.5 h`` beside
    ``4 d`` read as two figures); time billed stays in hours (:func:`_hours`)."""
    return f"{minutes / 1440:.1f} d" if minutes >= 2 * 1440 else _hours(minutes)


def _last_activity(session: dict[str, Any]) -> datetime:
    """When an open session last saw work: its last turn, or the last write of its agent's
    transcript after it (``lastActivityAt``: the agent's answers), never before its start."""
    start = from_iso(session["startTime"])
    moments = [session.get("lastTurnAt"), session.get("lastActivityAt")]
    return max([start, *(from_iso(m) for m in moments if m)])


def _session_items(session: dict[str, Any], now: datetime, policy: OperatorPolicy) -> Item | None:
    start, last = from_iso(session["startTime"]), _last_activity(session)
    open_minutes = _age(start, now)
    idle_minutes = _age(last, now)
    billable = session.get("billable", True) is not False
    sid, project = session["sessionId"], session["project"]
    state = fingerprint(session["id"], session.get("updated"), session.get("lastTurnAt"), session.get("status"),
                        session.get("lastActivityAt"))
    # where to end it: its last activity; when its agent's answer to the last prompt is unseen
    # (no transcript here), up to an idle gap after it, as the capture ends such a session
    unseen = session.get("answeredUntil")
    until = max(last, min(from_iso(unseen), now)) if unseen else last
    how = "an idle gap after its last prompt (its answer is unseen)" if until > last else "its last activity"
    # every command names the project: the same session id may exist in another (SPEC §2.1)
    end_command = f"memo session end {_q(sid)} --project {_q(project)} --until {to_iso(until)}"
    proposal = {"actionClass": "end_stale_session", "params": {"sessionId": sid, "project": project,
                                                                "until": to_iso(until)},
                "summary": f"end {sid} at {how} {to_iso(until)}"}
    if until - start > timedelta(minutes=MAX_SESSION_MINUTES):
        # no session lasts over a week (a start years off): its end is refused, its start is to correct
        proposal = None
        end_command = (f"memo session edit {_q(sid)} --project {_q(project)} --start TIME  # it would last "
                       f"{_hours(minutes_between(start, until))} to its last work: correct its start first")
    waited = waiting_since(session)
    if waited is not None and now - waited >= timedelta(minutes=policy.waiting_minutes):
        # the agent stopped for the person (a permission, a question): the most immediate of its reasons
        age = _age(waited, now)
        asked = str(session.get("waitingFor") or "permission")
        said = _cut(str(session.get("waitingMessage") or ""), 160)
        agent = str(session.get("agent") or session.get("ide") or "its agent")
        branch = session.get("branch")
        where = f"{agent} on branch {branch}" if isinstance(branch, str) and branch else agent
        why = (f"its agent has waited for {asked} {_since(age)}" + (f": “{said}”" if said else "")
               + "; its work stops until you answer (a wait past the idle gap is not billed)")
        return Item("agent_waiting", KIND_LANE["agent_waiting"], sid, project, f"you to answer {where}",
                    why + ("" if billable else " (not billable)"), age, age if billable else 0,
                    f"memo session show {_q(sid)} --project {_q(project)}  # answer its agent, or: {end_command}",
                    to_iso(waited), fingerprint(state, session.get("waitingSince")), None)
    # thresholds against the exact durations, as next_due schedules them: rounded minutes
    # counted 91 s as 2 minutes (a session "stalled" 29 s early)
    if now - start >= timedelta(hours=policy.open_too_long_hours):
        # at stake: the minutes since its last turn, which ending it now would bill for nothing
        at_stake = idle_minutes if billable else 0
        if not session.get("lastTurnAt"):  # a first prompt that opened it is a turn (said "no turn" of it)
            why = f"open {_hours(open_minutes)} with no turn recorded; ending now would bill {_hours(open_minutes)}"
        else:
            why = (f"open {_hours(open_minutes)}, last turn {_since(idle_minutes)} ago; ending now would bill "
                   f"{_hours(open_minutes)}, " + (f"{_hours(idle_minutes)} of it after its last turn" if idle_minutes
                                                 else "none of it idle"))
        why += "" if billable else " (not billable)"
        return Item("session_open_too_long", KIND_LANE["session_open_too_long"], sid, project,
                    "you to end it", why, open_minutes, at_stake, end_command, to_iso(start), state, proposal)
    if now - last >= timedelta(minutes=policy.stalled_minutes):
        turned = from_iso(session["lastTurnAt"]) if session.get("lastTurnAt") else None
        # the agent's answers moved after its last turn: the quiet counts from them, and says so
        why = (f"no activity for {_since(idle_minutes)} (its last turn {_since(_age(turned, now))} ago; its agent "
               "wrote its transcript since)" if turned is not None and start < turned < last
               else f"no turn for {_since(idle_minutes)}")
        return Item("session_stalled", KIND_LANE["session_stalled"], sid, project,
                    "a turn or an end", why, idle_minutes,
                    idle_minutes if billable else 0, f"memo session show {_q(sid)} --project {_q(project)}  # resume, or: {end_command}",
                    to_iso(last), state, proposal)
    return None


def _month_of(now: datetime, zone_name: str) -> tuple[datetime, str, int, int, datetime]:
    """``(the month's start, its first day as YYYY-MM-DD, today's day of the month, the days of
    the month, the next midnight)`` of ``now`` in the zone ``zone_name`` (instants in UTC)."""
    import calendar
    from datetime import time as clock_time
    from zoneinfo import ZoneInfo

    zone = ZoneInfo(zone_name)
    today = now.astimezone(zone).date()
    first = today.replace(day=1)
    start = datetime.combine(first, clock_time(), zone)
    tomorrow = datetime.combine(today + timedelta(days=1), clock_time(), zone)
    return (start.astimezone(now.tzinfo), first.isoformat(), today.day,
            calendar.monthrange(today.year, today.month)[1], tomorrow.astimezone(now.tzinfo))


def _hours_text(minutes: float) -> str:
    """Hours with two decimals, as the activity report rounds them (``32.25 h``)."""
    return f"{hours_cents(round(minutes)) / 100:.2f} h"


def _late_scope(late: dict[str, Any]) -> str:
    """The scope of the invoice a late-work item proposes: the late session's project, or — for
    a credited invoice of several projects, re-issued whole — ``--all`` (a breaker: after the first
    project's ``--replaces``, the others' commands were refused, replaced already)."""
    if late.get("creditedBy") and len(late.get("invoiceProjects") or ()) > 1:
        return "--all"
    return f"--project {_q(late['project'])}"


def _retainer(retainer: dict[str, Any], now: datetime) -> Item | None:
    """A client's ``monthlyHoursCap`` used up, or the month's pace running past it
    (``retainer_projection``); None while the pace stays within it.

    Used: the billed minutes of the client's sessions that started this month (in the vault's
    zone) and ended by ``now``, as ``memo activity --all --client C --since <the 1st>`` bills them.
    The pace: used ÷ the days of the month so far (today counts whole) × the days of the
    month, read once a quarter of the month has passed or half the cap is used. ``since``: the
    end of its latest such session (the pace is as of then); at stake: the minutes already past
    the cap, which the client has not agreed to pay. Listed whatever the horizon: it is about
    the month of ``now``."""
    start, first, day, days, _ = _month_of(now, retainer["zone"])
    cap = float(retainer["capHours"]) * 60
    counted = sorted((s for s in retainer["sessions"] if s.get("endTime") and from_iso(s["startTime"]) >= start
                      and from_iso(s["endTime"]) <= now and int(s.get("billedMinutes") or 0) > 0),
                     key=lambda s: (s["endTime"], s["sessionId"]))
    used = sum(int(s["billedMinutes"]) for s in counted)
    projected = used * days / day
    # a pace is read once a quarter of the month has passed or half the cap is used: on the 1st, one
    # hour "projected" 31 (every capped client flagged on its first working day)
    paced = day * 4 >= days or used * 2 >= cap
    if not counted or (used < cap and (projected <= cap or not paced)):
        return None
    client, cap_text = retainer["client"], _hours_text(cap)
    latest = from_iso(counted[-1]["endTime"])
    if used >= cap:
        waiting = "you to tell the client: its hours for the month are used up"
        why = (f"{_hours_text(used)} of its {cap_text} a month used by day {day} of {days}"
               + (f", {_hours_text(used - cap)} over" if used > cap else ""))
    else:
        waiting = "you to tell the client, or to slow down"
        why = (f"{_hours_text(used)} of its {cap_text} a month used by day {day} of {days}; at this pace "
               f"{_hours_text(projected)} by the month's end, {_hours_text(projected - cap)} over")
    return Item("retainer_projection", KIND_LANE["retainer_projection"], client,
                ", ".join(sorted({s["project"] for s in counted})), waiting, why, _age(latest, now),
                max(0, round(used - cap)),
                f"memo activity --all --client {_q(client)} --since {first} --until {first[:8]}{days:02d}",
                to_iso(latest),
                # not the hours: a new session does not make it a new item (nor a new notification)
                fingerprint(client, first, retainer["capHours"], used >= cap))


def _live_stall(live: dict[str, Any], now: datetime, policy: OperatorPolicy) -> Item | None:
    """A conversation still open in its agent (no end from its hook) whose transcript an import
    took in, quiet for ``stalledMinutes`` (``session_stalled``): the agent waits on the person.
    Nothing is at stake (its imported sessions bill the time worked, split at idle gaps) and
    nothing to end here: the person resumes it, or ends it, in the agent. Past
    ``openTooLongHours`` of quiet it is left alone (a conversation abandoned, not stalled)."""
    last = from_iso(live["lastActivityAt"])
    quiet = now - last
    if not timedelta(minutes=policy.stalled_minutes) <= quiet < timedelta(hours=policy.open_too_long_hours):
        return None
    sid, project = live["sessionId"], live["project"]
    return Item("session_stalled", KIND_LANE["session_stalled"], sid, project, "a turn or an end",
                f"no turn for {_since(_age(last, now))}; its agent's conversation is still open (its hook has not "
                "said it ended); the import bills only the time worked", _age(last, now), 0,
                f"memo session show {_q(sid)} --project {_q(project)}  # then resume it in the agent, or end it there",
                to_iso(last), fingerprint(live["id"], live["lastActivityAt"]))


def _client_missing(session: dict[str, Any], now: datetime) -> Item:
    """A billable session filed under ``internal`` in a project that bills clients. The proposal
    (``set_client``) files it under the project's client when its sessions name one only (in any
    case); with several, which one is the person's call: the command says ``NAME`` and lists them."""
    sid, project = session["sessionId"], session["project"]
    start = from_iso(session["startTime"])
    clients = session.get("_projectClients") or []
    only = clients[0] if clients and len({c.casefold() for c in clients}) == 1 else None
    edit = f"memo session edit {_q(sid)} --project {_q(project)} --client"
    # the lasting fix beside the one session's: every internal session of the project at once
    # the sessions to come are filed already when projectClients maps the project (it is why it is asked)
    to_come = "" if session.get("_mapped") or not only else \
        f"; the sessions to come: memo config set projectClients.{project} {_q(only)}"
    action = (f"{edit} {_q(only)}  # its turns follow; every internal session of {project}: memo project client "
              f"{_q(project)} {_q(only)}{to_come}") if only else (
        f"{edit} NAME  # its turns follow; {project} bills {', '.join(clients[:5])}" if clients
        else f"{edit} NAME  # its turns follow")
    proposal = None if only is None else {
        "actionClass": "set_client", "params": {"sessionId": sid, "project": project, "client": only},
        "summary": f"file {sid} under {only}, the client {project} bills"}
    minutes = int(session.get("durationMinutes") or 0)
    return Item("client_missing", KIND_LANE["client_missing"], sid, project, "a client",
                f"{_billed(minutes)} billable filed under internal in a project that bills "
                + (only if only else "clients"), _age(start, now), minutes, action, to_iso(start),
                fingerprint(session["id"], session.get("updated"), only), proposal)


def _once_per_person(sessions: list[dict[str, Any]]) -> int:
    """The minutes of ``sessions`` with one person's overlapping time counted once, as the activity
    report bills them (the overlap policy ``union``): the digest had said 13 min billable of a
    project whose report billed 9 (found by a freelancer). Sessions of no owner count as one person's."""
    spans: dict[str, list[tuple[datetime, datetime]]] = {}
    for session in sessions:
        minutes = int(session.get("durationMinutes") or 0)
        if minutes > 0 and session.get("startTime"):
            start = from_iso(session["startTime"])
            spans.setdefault(str(session.get("owner") or "").strip().lower(), []).append(
                (start, start + timedelta(minutes=minutes)))
    total = 0.0
    for intervals in spans.values():
        end = None
        for a, b in sorted(intervals):
            if end is None or a > end:
                total += (b - a).total_seconds()
            elif b > end:
                total += (b - end).total_seconds()
            end = b if end is None or b > end else end
    return round(total / 60)


def _project_unbilled(project: str, sessions: list[dict[str, Any]], now: datetime) -> Item:
    """Billable work of ``project`` (``sessions``, of the horizon, oldest first) filed under no
    client, where no session of the project names one (``client_missing`` asks of projects that
    do): one item for the project — one cause, one decision (a client, or ``internal`` on purpose)."""
    first, last = from_iso(sessions[0]["startTime"]), from_iso(sessions[-1]["startTime"])
    minutes = _once_per_person(sessions)
    many = f"{len(sessions)} sessions" if len(sessions) > 1 else "a session"
    return Item("project_unbilled", KIND_LANE["project_unbilled"], project, project, "a client, or internal",
                f"{_billed(minutes)} billable in {many} of {project}, which bills no client: a new project (a "
                "repository, or a checkout in a folder of another name, is a project of its folder's name)",
                _age(first, now), minutes,
                f"memo project client {_q(project)} NAME  # files its sessions under NAME (the sessions to come: "
                f"memo config set projectClients.{project} NAME); work of no client: memo config set "
                f"projectClients.{project} internal", to_iso(last),
                fingerprint(project, *((s["id"], s.get("updated")) for s in sessions)))


def _too_long(session: dict[str, Any], now: datetime) -> Item:
    """A billable ended session longer than ``openTooLongHours``: left running over a night, or
    times pulled from another machine that span years; it bills all of it until its times are
    corrected (or it is invoiced as it is)."""
    sid, project = session["sessionId"], session["project"]
    minutes = int(session.get("durationMinutes") or 0)
    ended = from_iso(session["endTime"])
    action = (f"memo session show {_q(sid)} --project {_q(project)}  # its turns; then memo session edit {_q(sid)} "
              f"--project {_q(project)} --end TIME (or --minutes N)")
    return Item("session_too_long", KIND_LANE["session_too_long"], sid, project, "you to check its times",
                f"it bills {_hours(minutes)} ({session['startTime'][:16].replace('T', ' ')} – "
                f"{session['endTime'][:16].replace('T', ' ')} UTC): a session left running bills the time nobody "
                "worked", _age(ended, now), minutes, action, to_iso(ended),
                fingerprint(session["id"], session.get("updated")))


def build_items(snapshot: Snapshot, now: datetime, policy: OperatorPolicy, zone: tzinfo | None = None) -> list[Item]:
    """Every item of ``snapshot`` at ``now`` (unranked, horizon not applied; ``zone``: the vault's,
    whose months the work to bill is counted in — UTC when None). Records of a
    further vault (``_vault`` set) are listed with that vault and without a proposal: the
    operator never writes to a vault it only reads."""
    items = _build_items(snapshot, now, policy, zone)
    for item, record in items:
        # the same subject id may exist in several projects (SPEC §2.1): the project is part of the state
        item.fingerprint = fingerprint(item.project, item.fingerprint)
        owner = record.get("owner")
        item.owner = owner if isinstance(owner, str) and owner else None
        if record.get("_vault"):
            item.vault, item.proposal = record["_vault"], None
    return [item for item, _ in items]


def _build_items(snapshot: Snapshot, now: datetime, policy: OperatorPolicy,
                 zone: tzinfo | None = None) -> list[tuple[Item, dict[str, Any]]]:
    items: list[tuple[Item, dict[str, Any]]] = []
    for session in snapshot.open_sessions:
        item = _session_items(session, now, policy)
        if item is not None:
            items.append((item, session))
    for baton in snapshot.pending_handoffs:
        created = from_iso(baton["created"])
        age = _age(created, now)
        if now - created < timedelta(hours=policy.handoff_unclaimed_hours):
            continue
        target = ", ".join(part for part in (f"branch {baton['branch']}" if baton.get("branch") else "",
                                             f"owner {baton['owner']}" if baton.get("owner") else "") if part)
        # no "memo session start": it took the baton into an empty session of the person's that stalled;
        # an agent's next session takes it (its session_start, or the session-start hook of Claude
        # Code, Codex or Gemini CLI, which puts it into the agent's context)
        # a baton written by hand or another tool may name no fromSessionId: its own id names it
        read = f"memo session handoff {_q(baton.get('fromSessionId') or baton['id'])} --project {_q(baton['project'])}"
        taker = "any agent's next session in the project" if baton.get("shared") else \
            "an agent's next session" + (f" on branch {baton['branch']}" if baton.get("branch") else "") \
            + (f" by {baton['owner']}" if baton.get("owner") else "") + " in the project"
        hint = (f"{taker} takes it (its session_start tool, or the session-start hook of Claude Code, Codex or "
                "Gemini CLI); or add --cancel")
        if baton.get("shared") and snapshot.hybrid_laptop:  # it stays for a start on the daemon (a team lead)
            hint = ("a session started on the team daemon takes it (an agent's session_start there, or a laptop in "
                    "remote mode): a start on this laptop takes no shared baton; or add --cancel")
        items.append((Item("handoff_unclaimed", KIND_LANE["handoff_unclaimed"], baton["id"], baton["project"],
                          "a session to pick it up" + (f" ({target})" if target else ""),
                          f"{counted(len(baton.get('nextSteps') or []), 'next step')} left by {baton.get('fromSessionId') or baton.get('sessionId') or 'a session'} "
                          f"{_since(age)} ago", age, 0,
                          f"{read}  # {one_line(hint)}",
                          to_iso(created), fingerprint(baton["id"], baton.get("updated"), baton.get("status")),
                          {"actionClass": "cancel_handoff", "params": {"id": baton["id"], "project": baton["project"]},
                           "summary": f"cancel {baton['id']}, unclaimed for {_since(age)}"}), baton))
    for session in snapshot.pull_request_sessions:
        deliverables = session.get("deliverables") or []
        if any(d.get("type") in ("review", "merge", "merged") for d in deliverables):
            continue
        ended = from_iso(session.get("endTime") or session["startTime"])
        prs = [d.get("url") or d.get("title") or "pull request" for d in deliverables if d.get("type") == "pr"]
        items.append((Item("pr_awaiting_review", KIND_LANE["pr_awaiting_review"], session["sessionId"],
                          session["project"], "your review", f"finished {_since(_age(ended, now))} ago with "
                          f"{', '.join(prs)}", _age(ended, now),
                          int(session.get("durationMinutes") or 0) if session.get("billable", True) is not False else 0,
                          f"memo session export {_q(session['sessionId'])} --project {_q(session['project'])}  "
                          f"# then review {prs[0]}; once reviewed: memo session edit {_q(session['sessionId'])} "
                          f"--project {_q(session['project'])} --reviewed", to_iso(ended),
                          fingerprint(session["id"], session.get("updated")),
                          {"actionClass": "export_story", "params": {"sessionId": session["sessionId"],
                                                                     "project": session["project"]},
                           "summary": f"export the story of {session['sessionId']} for the reviewer"}), session))
    ready: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for trap in snapshot.rule_traps:
        # a trap that keeps its rule in its body alone (spec-memo's) is said by it; one holding no
        # rule is none to promote (it was offered as “”, and promoted as an empty line)
        rule = trap_rule(trap, trap.get("_body") or "")
        trap = {**trap, "summary": rule["text"], "confidence": rule["confidence"], "occurrences": rule["occurrences"]}
        if trap["confidence"] >= 0.8 and trap["summary"]:
            ready.setdefault((trap.get("_vault") or "", trap["project"]), []).append(trap)
    for (_, project), traps in sorted(ready.items()):
        # one item per project: promotion writes all of a project's rules into one file, and a
        # dozen single instructions must not bury a stalled session (one row, one owner)
        traps.sort(key=lambda t: (-t["confidence"], t["id"]))
        since = max(from_iso(t.get("updated") or t["created"]) for t in traps)
        command = f"memo report rules --project {_q(project)} --promote CLAUDE.md"
        # promotion writes into the project's repository: proposed only where this machine knows it,
        # naming it — and a proposal made before the project's repository changed is refused
        repository = traps[0].get("_repository", True)
        known = bool(repository)
        where = f"{repository}/CLAUDE.md" if isinstance(repository, str) else "CLAUDE.md of the project's repository"
        owner = traps[0].get("_repositoryProject")
        if isinstance(repository, str) and owner and owner != project:
            # another project's checkout (a monorepo's, or a --project named in the wrong folder): said
            where += f" (the checkout of project {owner}, where {project}'s turns were last recorded)"
        said = "; ".join(f"“{_cut(t.get('summary') or '', 80)}” ({t.get('occurrences', 1)}×, "
                         f"{t['confidence']:.2f})" for t in traps[:3])
        more = f" and {len(traps) - 3} more" if len(traps) > 3 else ""
        count = f"{len(traps)} rules" if len(traps) > 1 else "a rule"
        items.append((Item("rule_ready", KIND_LANE["rule_ready"], project, project, "your review and promotion",
                          f"{count} ready to promote (confidence ≥ 0.8): {said}{more}", _age(since, now), 0,
                          # it writes into the repository it runs in: the one memo knows is named (pasted in
                          # another checkout, the rules went into that repository's instructions)
                          f"{command}  # in {repository}" if isinstance(repository, str) else command if known
                          else f"{command}  # in a checkout of {project}'s repository (memo knows no repository "
                          "of it on this machine)",
                          to_iso(since), fingerprint(*((t["id"], t.get("updated"), t.get("status")) for t in traps),
                                                     repository),
                          {"actionClass": "promote_rule", "params": {"trapIds": [t["id"] for t in traps],
                                                                     "project": project, "destination": "CLAUDE.md",
                                                                     **({"repository": repository}
                                                                        if isinstance(repository, str) else {})},
                           "summary": f"promote {count} into {where}"}
                          if known else None), traps[0]))
    for live in snapshot.live_conversations:
        item = _live_stall(live, now, policy)
        if item is not None:
            items.append((item, live))
    for session in snapshot.unbilled_sessions:
        items.append((_client_missing(session, now), session))
    unfiled: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    # the sessions of the horizon — of last month on, work a month end bills (:data:`BILLING_GAPS`)
    horizon = to_iso(min(now - timedelta(days=policy.horizon_days), _start_of_last_month(now, zone)))
    for session in sorted(snapshot.unfiled_sessions, key=lambda s: s.get("startTime") or ""):
        unfiled.setdefault((session["project"], session.get("_vault")), []).append(session)
    for (project, _), sessions in unfiled.items():  # over the horizon's sessions; older ones counted beyond it
        recent = [s for s in sessions if (s.get("startTime") or "") >= horizon] or sessions[-1:]
        items.append((_project_unbilled(project, recent, now), recent[-1]))
    for session in snapshot.long_sessions:
        items.append((_too_long(session, now), session))
    # a credited session whose transcript holds work an import held back: the import first (its own item),
    # the invoice after — re-issued first, it billed without that work, and a credit again (found by a breaker)
    importing_first = {h["invoice"] for h in snapshot.held_back if not h["standing"]}
    for late in snapshot.late_sessions:  # the period was billed, this work of it was not
        if late.get("creditedBy") and late.get("invoice") in importing_first:
            continue  # its re-issue waits for the import that takes in what the credited invoice held back
        minutes = int(late.get("billedMinutes", late.get("durationMinutes")) or 0)  # as the invoice of it bills
        recorded = from_iso(str(late.get("recordedAt") or late.get("created") or late["endTime"]))
        # the late session's project alone: --all billed another project's work the invoice left out on
        # purpose (found by a breaker); a hybrid laptop issues its own with --here (the team's: the daemon)
        why = (f"{late['invoiceClient']}'s invoice {late['invoice']} of {late['periodStart']} – {late['periodEnd']} "
               f"is cancelled by credit note {late['creditedBy']}, and this session it billed, {_billed(minutes)}, is "
               "on no invoice now" if late.get("creditedBy") else
               f"{late['invoiceClient']}'s {late['periodStart']} – {late['periodEnd']} is invoiced ({late['invoice']}) "
               f"but this session of it, {_billed(minutes)}, is on no invoice (recorded after the invoice was issued)")
        items.append((Item("invoice_late_work", KIND_LANE["invoice_late_work"], late["sessionId"], late["project"],
                           "you to bill it", why, _age(recorded, now), minutes,
                           f"memo invoice issue {_late_scope(late)} --client {_q(late['invoiceClient'])} "
                           f"--since {late['periodStart']} --until {late['periodEnd']}"
                           f"{' --here' if late.get('hybridLaptop') else ''}"
                           + (f" --replaces {late['invoice']}  # bills it again" if late.get("creditedBy")
                              and not late.get("replaced") else f"  # bills what {late['invoice']} left out"),
                           to_iso(recorded), fingerprint(late["id"], late.get("updated"), late["invoice"])), late))
    for retainer in snapshot.retainers:  # one row per client: its cap is one agreement
        item = _retainer(retainer, now)
        if item is not None:
            items.append((item, retainer))
    for broken in snapshot.unreadable_sessions:
        since = from_iso(broken["created"])
        billed = f"; it is on invoice {broken['invoice']}, which billed {_billed(broken['billedMinutes'])}" \
            if broken.get("invoice") else ""
        items.append((Item("session_unreadable", KIND_LANE["session_unreadable"], broken["sessionId"],
                           broken["project"], "you to mend its file",
                           f"{broken['path']} cannot be read, so reports leave it out and a timesheet or invoice "
                           f"of it is refused{billed}: {broken['reason']}", _age(since, now),
                           int(broken.get("billedMinutes") or 0),
                           (f"memo reindex  # once {broken['path']} is mended as said" if not broken.get("_vault") else
                            f"memo reindex  # of that vault: memo --vault-root {_q(broken['_vault'])} reindex, once "
                            f"{broken['path']} is mended as said"), to_iso(since),
                           fingerprint(broken["path"], broken["reason"])), broken))
    for held in snapshot.held_back:  # a transcript grew after its session was invoiced
        since = from_iso(held["since"])
        grown = ", ".join(part for part in (counted(held["turns"], "turn") if held["turns"] else "",
                                            _billed(held["minutes"]) if held["minutes"] else "") if part)
        what = f"work ({grown})" if grown else "work"
        importing = f"memo import {held['source']} {_q(held['path'])}"
        items.append((Item("import_held_back", KIND_LANE["import_held_back"], held["sessionId"], held["project"],
                           "you to bill or leave work after its invoice",
                           (f"{held['path']} holds {what} of this session past what invoice {held['invoice']} billed: "
                            "an import leaves a session on an issued invoice as it was billed, so no report counts it"
                            if held["standing"] else
                            f"{held['path']} holds {what} of this session that an import left out while invoice "
                            f"{held['invoice']} billed it; that invoice is credited now: the next import takes it in"),
                           _age(since, now), int(held["minutes"]),
                           (f"memo invoice credit {_q(held['invoice'])}  # then {importing} takes it in; bill the "
                            "session again (or leave it: that work stays out of every report)" if held["standing"] else
                            f"{importing}  # takes in what {held['invoice']} held back"),
                           to_iso(since), fingerprint(held["path"], held["sessionId"], held["invoice"],
                                                      held["standing"], held["turns"], held["minutes"])), held))
    items += _push_trouble(snapshot.push_trouble, now)
    for both in snapshot.team_billed_too:  # a hybrid laptop's own invoice and the team's bill one session
        since = from_iso(both["created"])
        items.append((Item("session_billed_twice", KIND_LANE["session_billed_twice"], both["sessionId"],
                           both["project"], "you to cancel one of two invoices of one session",
                           f"invoice {both['invoice']}, issued here, and the team daemon's {both['teamInvoice']} both "
                           f"bill this session, {_billed(both['billedMinutes'])}: {both['client'] or 'the client'} "
                           "is billed twice", _age(since, now), both["billedMinutes"],
                           f"memo invoice credit {_q(both['invoice'])}  # then bill what else it billed again "
                           f"(--here), or have {both['teamInvoice']} credited on the daemon",
                           to_iso(since), fingerprint(both["project"], both["sessionId"], both["invoice"],
                                                      both["teamInvoice"])), both))
    for twice in snapshot.duplicate_invoices:
        since = from_iso(twice["created"])
        later = twice["refs"][-1]
        if twice.get("creditedTwice"):  # a credit note cannot be cancelled: the person settles it with the client
            items.append((Item("invoice_credited_twice", KIND_LANE["invoice_credited_twice"], twice["number"],
                               twice["client"], "you to settle a second credit with the client",
                               f"invoice {twice['number']} is cancelled by {len(twice['refs'])} credit notes "
                               f"({', '.join(twice['refs'])}, issued on two machines): the client was credited more "
                               "than once" + (f" ({twice['currency']} {twice['gross']} too much)" if twice.get("gross")
                                              else ""),
                               _age(since, now), 0, f"memo invoice show {_q(later)}  # not to be sent: if it was, "
                               "the client owes its amount back", to_iso(since), fingerprint(*twice["refs"])), twice))
            continue
        items.append((Item("invoice_number_twice", KIND_LANE["invoice_number_twice"], twice["number"],
                           twice["client"], "you to cancel one of two invoices", f"invoice number {twice['number']} "
                           f"was issued on two machines ({', '.join(twice['refs'])}): a number must be issued once",
                           _age(since, now), 0, f"memo invoice credit {_q(later)}  # then bill its sessions again",
                           to_iso(since), fingerprint(*twice["refs"])), twice))
    for changed in snapshot.invoiced_changed:
        since = from_iso(changed["created"])
        if changed.get("missing"):
            sid, project, number = changed["sessionId"], changed["project"], changed["invoice"]
            minutes = int(changed.get("durationMinutes") or 0)
            items.append((Item("invoice_session_changed", KIND_LANE["invoice_session_changed"], sid, project,
                               "you to restore a session its invoice billed",
                               f"on invoice {number}, its record is gone from the vault (its file deleted, or one "
                               f"memo reindex cannot read): reports leave out the {_billed(minutes)} the client was billed",
                               _age(since, now), minutes,
                               f"memo invoice show {_q(number)}  # then put back projects/{project}/sessions/"
                               f"session-{sid}.md (memo reindex names a file it cannot read), or memo invoice credit "
                               f"{_q(number)} if it should not have been billed", to_iso(since),
                               fingerprint(project, sid, number, "missing")), changed))
            continue
        items.append((Item("invoice_session_changed", KIND_LANE["invoice_session_changed"], changed["sessionId"],
                           changed["project"], "you to reconcile a session with its invoice",
                           f"on invoice {changed['invoice']}, its {', '.join(changed['fields'])} now differ from the "
                           "invoice's: reports show the record and bill the invoice's minutes, as the client was "
                           "billed",
                           _age(since, now),
                           _changed_stake(changed),
                           f"{back_as_invoiced(changed)}  # or memo invoice credit {_q(changed['invoice'])} and bill "
                           "it again", to_iso(since),
                           fingerprint(changed["id"], changed.get("updated"), changed["invoice"])), changed))
    by_client: dict[str, list[dict[str, Any]]] = {}
    for differing in snapshot.terms_differ:  # one row per client: one config entry sets it right
        by_client.setdefault(differing["client"], []).append(differing)
    for client, invoices in sorted(by_client.items()):
        invoices.sort(key=lambda i: (i["created"], i["invoice"]))
        latest, since = invoices[-1], from_iso(invoices[0]["created"])
        refs = ", ".join(i["invoice"] for i in invoices)
        key = config_key_text(["clients", client])
        items.append((Item("billing_terms_differ", KIND_LANE["billing_terms_differ"], client,
                           ", ".join(latest["projects"]) or "-", "you to set this machine's billing terms",
                           f"invoice{'s' if len(invoices) > 1 else ''} {refs}, issued on another machine, billed "
                           f"{client} on other terms than this machine's config: {'; '.join(latest['differences'])}; "
                           "reports and invoices here come to other amounts",
                           _age(since, now), 0,
                           # the key as text: the hint is quoted whole, a quoted word inside it read badly
                           f"memo invoice show {_q(latest['invoice'])}  # its terms; then memo config set "
                           f"{key}.… as on the machine that issued it", to_iso(since),
                           fingerprint(*((i["invoice"], i["differences"]) for i in invoices))), latest))
    for conflict in snapshot.sync_conflicts:
        since = from_iso(conflict["created"])
        items.append((Item("sync_conflict", KIND_LANE["sync_conflict"], conflict["recordId"], conflict["project"],
                           "you to compare two versions", f"a sync kept the losing version of {conflict['recordId']} "
                           f"beside it ({conflict['path']})", _age(since, now), 0,
                           f"diff {_q(conflict['recordPath'])} {_q(conflict['path'])}  # keep what you need, then delete "
                           "the conflict file", to_iso(since), fingerprint(conflict["path"])), conflict))
    return items


def moving(snapshot: Snapshot, now: datetime) -> list[dict[str, Any]]:
    """What moved in the last :data:`MOVING_HOURS` hours before ``now``, newest first: each
    session completed (``session_completed``) and hand-off claimed (``handoff_claimed``) then,
    as ``{id, kind, lane, subject, project, why, since, owner, vault}`` (``since``: when it
    ended or was claimed, UTC). Context for the person: no action, no rank (OPERATOR.md)."""
    start = now - timedelta(hours=MOVING_HOURS)
    rows: list[dict[str, Any]] = []

    def row(kind: str, subject: str, record: dict[str, Any], why: str, moment: datetime) -> None:
        owner = record.get("owner")
        rows.append({"id": f"{kind}:{subject}", "kind": kind, "lane": MOVING_LANE, "subject": subject,
                     "project": str(record.get("project") or ""), "why": one_line(why), "since": to_iso(moment),
                     "owner": owner if isinstance(owner, str) and owner else None, "vault": record.get("_vault")})

    # an imported part of a conversation still open in its agent has not ended: it is the live one
    live = {tuple(key) for conversation in snapshot.live_conversations for key in conversation.get("imported") or []}
    for session in snapshot.ended_sessions:
        if (str(session.get("project")), str(session.get("sessionId"))) in live:
            continue
        try:
            ended = from_iso(str(session.get("endTime")))
        except InvalidDateError:  # a record the index kept without a readable end: not context
            continue
        if start <= ended <= now:
            minutes = int(session.get("durationMinutes") or 0)
            client = str(session.get("client") or "").strip() or "internal"
            billed = client if session.get("billable", True) is not False else f"{client}, not billable"
            said = str(session.get("summary") or session.get("taskSlug") or "").strip()
            row("session_completed", str(session["sessionId"]), session,
                f"ended {_since(_age(ended, now))} ago, {format_minutes(minutes)} worked ({billed})"
                + (f": {said[:100]}" if said else ""), ended)
    for baton in snapshot.claimed_handoffs:
        try:
            claimed = from_iso(str(baton.get("claimedAt")))
        except InvalidDateError:
            continue
        if start <= claimed <= now:
            steps = [str(step) for step in baton.get("nextSteps") or []]
            row("handoff_claimed", str(baton["id"]), baton,
                f"claimed {_since(_age(claimed, now))} ago by session {baton.get('claimedBy') or '?'}"
                + (f": {'; '.join(steps)[:100]}" if steps else ""), claimed)
    rows.sort(key=lambda r: (r["since"], r["id"]), reverse=True)
    return rows


def moving_of(digest: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """``(rows, count)`` of a digest's moving lane as it can be shown: its rows that are objects,
    and ``movingCount`` when it is a whole number of at least those rows (else their number) — a
    team daemon's answer is read, never trusted (``"moving": 5`` ended ``memo digest`` in a
    TypeError)."""
    raw = digest.get("moving")
    rows = [row for row in raw if isinstance(row, dict)] if isinstance(raw, list) else []
    count = digest.get("movingCount")
    valid = isinstance(count, int) and not isinstance(count, bool) and count >= len(rows)
    return rows, count if valid else len(rows)


def rank_key(item: Item) -> tuple:
    """Lane, then billable minutes at stake (more first), then age (older first), then kind
    and subject: the documented ranking order."""
    return (LANES.index(item.lane), -item.minutes_at_stake, -item.age_minutes, item.kind, item.subject)


#: The kinds about work not yet billed to anyone, or billed wrong: listed from the first day of last
#: month (in the vault's zone) on, however short the horizon (a month end bills them) — a session
#: left open over a weekend of last month, late work of an invoiced month, one of 48 hours too (a
#: freelancer's month end said "Nothing of the last 14 days needs you now" of them).
BILLING_GAPS = frozenset({"project_unbilled", "client_missing", "invoice_late_work", "session_open_too_long",
                          "session_too_long"})


def _start_of_last_month(now: datetime, zone: tzinfo | None = None) -> datetime:
    """00:00 in ``zone`` (UTC when None) of the first day of the month before ``now``'s there (a
    session of 1 November 08:30 in Tokyo, 23:30 UTC the day before, is November's work there:
    found by a breaker)."""
    local = now.astimezone(zone or timezone.utc)
    first = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0, tzinfo=None)
    previous = (first - timedelta(days=1)).replace(day=1)
    return previous.replace(tzinfo=zone or timezone.utc)


def compute_digest(snapshot: Snapshot, now: datetime, policy: OperatorPolicy,
                   zone: tzinfo | None = None) -> dict[str, Any]:
    """The ranked digest (wire dict): ``items`` within the horizon (work to bill —
    :data:`BILLING_GAPS` — from the first day of last month on, if that is earlier), ``beyondHorizon``
    counts per kind for older ones (``beyondHorizonAsOf``: an instant whose digest lists the oldest
    of them), ``counts`` per kind listed, ``computedAt``; ``moving``
    (:func:`moving`, at most :data:`MOVING_LISTED`) and ``movingCount`` (all of them)."""
    horizon = now - timedelta(days=policy.horizon_days)
    # work to bill of this month and the last is what a month end bills, the horizon notwithstanding:
    # run a week into December, the digest said nothing needs you while November's work of a project
    # filed under no client went unbilled (found by a billing person)
    billing_horizon = min(horizon, _start_of_last_month(now, zone))
    listed, beyond = [], {}
    oldest: datetime | None = None
    for item in sorted(build_items(snapshot, now, policy, zone), key=rank_key):
        # a cap is about this month, however long ago its last session ended
        since = from_iso(item.since)
        if item.kind != "retainer_projection" and (
                since < billing_horizon or (since < horizon and item.kind not in BILLING_GAPS)):
            beyond[item.kind] = beyond.get(item.kind, 0) + 1
            oldest = min(oldest or since, since)
        else:
            listed.append(item)
    counts: dict[str, int] = {}
    for item in listed:
        counts[item.kind] = counts.get(item.kind, 0) + 1
    moved = moving(snapshot, now)
    return {
        "computedAt": to_iso(now),
        "items": [item.wire() for item in listed],
        "moving": moved[:MOVING_LISTED],
        "movingCount": len(moved),
        "counts": dict(sorted(counts.items())),
        "beyondHorizon": dict(sorted(beyond.items())),
        # an --as-of that lists the oldest of them (a day after it began): "--as-of DATE" named no date
        **({"beyondHorizonAsOf": to_iso(oldest + timedelta(days=1))} if oldest is not None else {}),
        "horizonDays": policy.horizon_days,
        "ranking": "lane (waiting on you, dropped), billable minutes at stake, age, kind, subject",
    }


def next_due(snapshot: Snapshot, now: datetime, policy: OperatorPolicy) -> datetime | None:
    """The earliest moment an age threshold falls due (a session stalls or runs too long, a
    hand-off becomes unclaimed): the digest must be recomputed then even if nothing changed."""
    due: list[datetime] = []
    for session in snapshot.open_sessions:
        start, last = from_iso(session["startTime"]), _last_activity(session)
        due += [start + timedelta(hours=policy.open_too_long_hours), last + timedelta(minutes=policy.stalled_minutes)]
        if (waited := waiting_since(session)) is not None:
            due.append(waited + timedelta(minutes=policy.waiting_minutes))
    for baton in snapshot.pending_handoffs:
        due.append(from_iso(baton["created"]) + timedelta(hours=policy.handoff_unclaimed_hours))
    for live in snapshot.live_conversations:  # a quiet conversation stalls, then is left alone
        last = from_iso(live["lastActivityAt"])
        due += [last + timedelta(minutes=policy.stalled_minutes), last + timedelta(hours=policy.open_too_long_hours)]
    for row in moving(snapshot, now):  # a row leaves the moving lane a day after it moved
        due.append(from_iso(row["since"]) + timedelta(hours=MOVING_HOURS, seconds=1))
    for retainer in snapshot.retainers:  # a day without work slows the pace; a new month starts afresh
        if _retainer(retainer, now) is not None:
            due.append(_month_of(now, retainer["zone"])[4])
    future = [moment for moment in due if moment > now]
    return min(future) if future else None
