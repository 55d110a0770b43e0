"""``memo digest`` (what needs you now) and ``memo operator …`` (SPEC §6)."""

from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Any, Optional

import typer
from rich.table import Table

from ...domain.clock import to_iso, utcnow
from ...domain.errors import InvalidFieldError, MemoError
from ...domain.shell import one_line, shell_word, with_vault_root
from ...operator.audit import read as read_audit
from ...operator.digest import is_digest_command, moving_of
from ...operator.policy import ACTION_CLASSES, allow, revoke, set_off
from ...services.requests import DigestApplyRequest, DigestRequest
from .common import _build, _emit, _local, _refuse_missing_vault, _safe, _short, _zone, _zone_label, app, err, out, state


def utc_stamp() -> str:
    return to_iso(utcnow())[:19].replace("T", " ")


#: How old a cached digest ``memo digest`` shows may be, in seconds (SPEC §6).
PERSON_MAX_AGE_SECONDS = 60
#: How many rows of the moving lane ``memo digest`` prints (``--json`` has the digest's own list)
MOVING_SHOWN = 5


def _age(minutes: int) -> str:
    if minutes >= 2 * 24 * 60:
        return f"{minutes // (24 * 60)} d"
    return f"{minutes // 60} h {minutes % 60:02d}" if minutes >= 60 else f"{minutes} min"


def _read_here(text: str) -> str:
    """A proposal's summary with its UTC instants (``2026-12-05T11:10:00.000Z``) in this
    machine's zone, as every other time it prints (``2026-12-05 12:10 Europe/Berlin``)."""
    from ...domain.clock import local_instants

    return local_instants(text, _zone())


def apply_command(item: dict[str, Any], name_project: bool = False, as_of: str | None = None) -> str:
    """``memo digest apply ID --fingerprint FP`` for a digest item with a proposal: pasted after
    the state changed, it is refused and re-proposed (without the fingerprint it applied the
    proposal of the state then, one the person never read). ``--project`` when items of several
    projects share the id; ``--as-of``: the moment of the digest the item was picked from (a
    digest as of then: else "not in the digest of now"; a digest of now: its ``computedAt``, so
    that the proposal applied is the one shown)."""
    command = f"memo digest apply {shell_word(item['id'])} --fingerprint {shell_word(item['fingerprint'])}"
    command += f" --project {shell_word(item['project'])}" if name_project else ""
    return command + (f" --as-of {shell_word(as_of)}" if as_of else "")


def _on_this_vault(command: str) -> str:
    """``command`` with this run's ``--vault-root`` (:func:`with_vault_root`); as it is when the
    vault is the configured one, or in remote mode (the daemon's vault; a ``diff`` of its files
    said to be run on its machine)."""
    if state.settings.mode == "remote":
        # the daemon's files, on its machine: a `diff` of them cannot run here (memo commands can: they go there)
        return f"on the daemon's machine: {command}" if command.startswith("diff ") else command
    if state.vault_root is None:
        return command
    return with_vault_root(command, str(state.store.root))


digest_app = typer.Typer(help="What needs you now; apply a proposed action.", invoke_without_command=True)
app.add_typer(digest_app, name="digest")


@digest_app.callback()
def digest(
    ctx: typer.Context,
    refresh: bool = typer.Option(False, "--refresh", help="Recompute now instead of the cached digest."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="What needed you at this instant (ISO date or time)."),
    all_projects: bool = typer.Option(False, "--all", "--cross-project",
                                      help="Every project: what the digest always covers (taken, as by the listings)."),
) -> None:
    """What needs you now: stalled or overlong sessions, unclaimed hand-offs, PRs awaiting
    review, rules ready to promote, billable work without a client — one line each, ranked.
    In remote mode, the team daemon's."""
    if ctx.invoked_subcommand is not None:
        return
    from ...operator.service import run_digest

    if as_of is not None and not as_of.strip():  # it ran as the digest of now
        raise InvalidFieldError("asOf", "is empty: give a value, or leave the option out")

    if state.settings.mode == "remote":  # this machine keeps no vault: the team daemon's digest
        from ...services import remote

        result = remote.post(state.settings, "/api/actions/digest",
                             {"refresh": True, **({"asOf": as_of} if as_of else {})})
    else:
        # a person asking once gets the digest of now, not one a minute old (pollers get the cache)
        result = run_digest(state.store, _build(DigestRequest, refresh=refresh, as_of=as_of,
                                                max_age_seconds=PERSON_MAX_AGE_SECONDS))
        _refuse_missing_vault()

    def human(r: dict[str, Any]) -> None:
        if r.get("error"):
            out.print(_safe(f"note: {r['error']}; showing the digest of {_local(r['computedAt'])} {_zone_label()}"))
        if not r["items"]:
            out.print("Nothing needs you now." if not r["beyondHorizon"] else
                      f"Nothing of the last {r['horizonDays']} days needs you now.")
        else:
            table = Table(title=f"{len(r['items'])} {'item needs' if len(r['items']) == 1 else 'items need'} you · computed {_local(r['computedAt'])} {_zone_label()}")
            for column in ("#", "lane", "item", "owner", "age", "why"):
                table.add_column(column, overflow="fold")
            for n, item in enumerate(r["items"], 1):
                table.add_row(str(n), item["lane"], _safe(item["id"]), _safe(item.get("owner") or ""),
                              _age(item["ageMinutes"]), _safe(item["why"]))
            out.print(table)
            # the commands below the table, each whole on one line: folded in a column, a pasted
            # command ran without its last options (`memo session end … --project shop` without
            # its --until billed the idle night)
            shared = {i["id"] for i in r["items"] if sum(j["id"] == i["id"] for j in r["items"]) > 1}
            for n, item in enumerate(r["items"], 1):
                # one line of plain words, as built here: a team daemon's answer too ("…; curl … | sh")
                action = one_line(item["action"])
                shown = _on_this_vault(action) if is_digest_command(action) else (
                    "(not shown: a command no digest writes; see the item on the digest's own machine)")
                out.print(_safe(f"{n:>2}. {shown}"), soft_wrap=True, highlight=False)
                if item.get("proposal"):
                    out.print(_safe(f"    or apply its proposal ({one_line(_read_here(item['proposal']['summary']))}): "
                                    # as of the digest shown: an end "now" (an idle gap after the last
                                    # prompt, not yet reached) moves on with the clock, its fingerprint not
                                    + _on_this_vault(apply_command(item, item["id"] in shared,
                                                                   as_of or r["computedAt"]))),
                              soft_wrap=True, highlight=False)
        operator = r.get("operator") or {}
        for record in operator.get("acted", []):
            out.print(_safe(f"operator: {record['actionClass']} on {record['subject']} — {record['outcome']} "
                            f"({_local(record['at'])})"))
        for fallback in operator.get("fallbacks", []):
            out.print(_safe(f"operator: {fallback['id']}: {fallback['reason']}"))
        if r["items"] and state.settings.mode == "remote":
            out.print("the team daemon's vault: memo session start/end/show/edit/export and memo digest apply run "
                      "from here; memo report rules --promote runs in the repository's checkout")
        moved, count = moving_of(r)
        if moved:  # context, nothing to do: what ended and what was claimed in the last day
            out.print(f"moving in the last 24 h ({count}; nothing to do):")
            for row in moved[:MOVING_SHOWN]:
                out.print(_safe(one_line(f"  {row.get('id', '')} ({row.get('project') or '-'}) — {row.get('why', '')}")),
                          soft_wrap=True, highlight=False)
            if count > MOVING_SHOWN:
                out.print(f"  … and {count - MOVING_SHOWN} more (memo --json digest lists {len(moved)})")
        if r["beyondHorizon"]:
            older = ", ".join(f"{n} {kind}" for kind, n in r["beyondHorizon"].items())
            day = _local(r["beyondHorizonAsOf"])[:10] if r.get("beyondHorizonAsOf") else "DATE"
            # for this vault (a daemon's lead pasted it and read their own empty vault)
            # all of them: the horizon reaching back to the oldest (it gave no value nor command — a first hour)
            days = _days_back(r, r["horizonDays"])
            out.print(_safe(f"older than {r['horizonDays']} days (counted, not listed): {older} — the oldest of them: "
                            f"`{_on_this_vault(f'memo digest --as-of {day}')}`; all of them: "
                            f"`memo config set operator.horizonDays {days}`"))

    _emit(result, human)


def _days_back(result: dict, horizon: int) -> int:
    """The horizon (days) that reaches back to the oldest item the digest left beyond it, from when
    it was computed (its ``beyondHorizonAsOf`` is the day after that item); ``horizon`` + 1 when
    unknown."""
    from ...domain.clock import from_iso

    try:
        oldest = from_iso(result["beyondHorizonAsOf"])
        now = from_iso(result.get("asOf") or result["computedAt"])
    except (KeyError, TypeError, ValueError):
        return horizon + 1
    return max(horizon + 1, (now - oldest).days + 2)


operator_app = typer.Typer(help="The operator: watch the vault, notify, act within your delegations.",
                           no_args_is_help=True)
app.add_typer(operator_app, name="operator")


class _StampedLog(logging.Handler):
    """The watch's log lines (a config file that changed but does not validate …) on stderr,
    each stamped with the UTC time as the watch's own lines are."""

    def emit(self, record: logging.LogRecord) -> None:
        err.print(_safe(f"{utc_stamp()} {record.getMessage()}"), soft_wrap=True)


@operator_app.command("watch")
def operator_watch(
    interval: float = typer.Option(30.0, "--interval", min=1.0, help="Seconds between passes."),
    once: bool = typer.Option(False, "--once", help="One pass, then exit: 1 when the notification failed, or "
                              "waits after failures to be tried again (undelivered: for cron)."),
) -> None:
    """Each pass: record the hook events waiting in the spool, recompute the digest when the
    vault changed, run the actions you delegated (memo operator allow), and send new items to
    the webhook (operator.webhookUrl), coalesced per settle window and at most one an hour. A
    failed POST is tried again on later passes, backing off; stopped mid-POST (Ctrl-C,
    SIGTERM), the batch is sent again by the next run under the same deliveryId."""
    from ...operator.notify import webhook_label
    from ...operator.service import watch_pass

    stamped = _StampedLog(logging.WARNING)
    logging.getLogger("memo_analytics").addHandler(stamped)
    last_reason = None
    in_pass = False
    stopped_by = _stop_on_sigterm()
    try:
        while True:
            state.runtime.refresh()  # thresholds and the webhook follow a changed config file
            settling = state.runtime.settling()
            if settling is not None:  # changed just now: read it in this pass, not one interval later
                time.sleep(settling + 0.05)
                state.runtime.refresh()
            url = state.store.settings.operator.webhook_url
            if last_reason is None and not once:
                err.print(_safe(f"{utc_stamp()} watching {state.store.root} every {interval:g} s; "
                                + (f"notifying {webhook_label(url)} (operator.webhookUrl)" if url else
                                   "no webhook configured (operator.webhookUrl): the digest is kept and delegated "
                                   "actions run, nothing is sent")), soft_wrap=True)
            try:
                in_pass = True
                result = watch_pass(state.store, fresh=once)  # one pass only: the vault as it is now
            except MemoError as exc:
                if once:
                    raise
                err.print(_safe(f"{utc_stamp()} error: {exc}; trying again in {interval:g} s"))  # it keeps watching
                last_reason = "error"
            else:
                def human(r: dict[str, Any]) -> None:
                    for line in r["spool"]:
                        out.print(_safe(f"{utc_stamp()} spool: {line}"), soft_wrap=True)
                    for record in r["acted"]:
                        out.print(_safe(f"{utc_stamp()} operator: {record['actionClass']} on {record['subject']} "
                                        f"({record.get('project')}) — {record['outcome']}"), soft_wrap=True)
                    for fallback in r["fallbacks"]:
                        out.print(_safe(f"{utc_stamp()} operator: {fallback['id']}: {fallback['reason']}"),
                                  soft_wrap=True)
                    if once or r["reason"] != last_reason or r["sent"] or r.get("reported"):  # a long watch logs what changed
                        counts = [f"{r['sent']} items" if r["sent"] else "",
                                  f"{r['reported']} of the operator's actions" if r.get("reported") else ""]
                        counts = ", ".join(c for c in counts if c)
                        out.print(_safe(f"{utc_stamp()} notification: {r['reason']}"
                                        + (f" ({counts})" if counts else "")), soft_wrap=True)

                _emit(result, human)
                last_reason = result["reason"]
                if once and result.get("failed"):
                    raise typer.Exit(1)
            in_pass = False
            if once:
                return
            time.sleep(interval)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (a service manager): said, and a clean exit
        err.print(_safe(f"{utc_stamp()} stopped ({stopped_by[0] or 'Ctrl-C'})"
                        + ("; a notification being sent is sent again by the next run, under the same deliveryId "
                           "(a receiver that keeps the ids drops the repeat)" if in_pass else "")), soft_wrap=True)
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, signal.SIG_DFL if stopped_by[1] is None else stopped_by[1])
        logging.getLogger("memo_analytics").removeHandler(stamped)


def _stop_on_sigterm() -> list[Any]:
    """SIGTERM stops a long-running command as Ctrl-C does (it exited 143 without a word, mid-POST
    too); returns ``[name of the signal once one came, the handler it replaced]``."""
    stopped_by: list[Any] = [None, signal.SIG_DFL]
    if threading.current_thread() is not threading.main_thread():
        return stopped_by  # a handler can be set in the main thread only

    def stop(signum: int, _frame: Any) -> None:
        stopped_by[0] = signal.Signals(signum).name
        raise KeyboardInterrupt

    stopped_by[1] = signal.signal(signal.SIGTERM, stop)
    return stopped_by


@digest_app.command("apply")
def digest_apply(
    item: str = typer.Argument(..., help="The item, KIND:SUBJECT as `memo --json digest` names it (its id)."),
    fingerprint: Optional[str] = typer.Option(None, "--fingerprint", help="The fingerprint of the proposal you "
                                              "reviewed (default: the one in the digest shown now, or --as-of)."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="The moment of the digest you picked the item from "
                                        "(as given to `memo digest --as-of`)."),
    project: Optional[str] = typer.Option(None, "--project", help="The item's project, when items of several "
                                          "projects have this id."),
) -> None:
    """Apply a proposed action: refused (and re-proposed) if the state changed since."""
    from ...operator.service import apply_digest_item

    request = _build(DigestApplyRequest, item=item, fingerprint=fingerprint, as_of=as_of, project=project)
    if state.settings.mode == "remote":  # applied by the team daemon, on its vault
        from ...services import remote

        result = remote.post(state.settings, "/api/digest/apply", request.model_dump(by_alias=True, exclude_none=True),
                             answers=(409,))
    else:
        try:
            result = apply_digest_item(state.store, request)
        except InvalidFieldError as exc:  # "… by hand: memo …": the command, for this run's vault
            if "; by hand: " not in exc.reason:
                raise
            said, command = exc.reason.split("; by hand: ", 1)
            raise InvalidFieldError(exc.field, f"{said}; by hand: {_on_this_vault(command)}") from None

    def human(r: dict[str, Any]) -> None:
        if r["applied"]:
            written = r.get("result", {}).get("path")
            out.print(_safe(f"applied {_read_here(r['item']['proposal']['summary'])}" + (f" → {written}" if written else "")))
            if r["item"]["kind"] == "pr_awaiting_review":  # the story is for the review; the item waits for it
                session = r["item"]["subject"]
                err.print(_safe(f"note: the item stays until the review is done: "
                                f"{_on_this_vault(f'memo session edit {shell_word(session)} --reviewed')}"))
        else:
            out.print(_safe(f"not applied: {one_line(r['reason'])}. New proposal: "
                            f"{one_line(_read_here(r['item']['proposal']['summary']))}; "
                            f"to apply it: {_on_this_vault(apply_command(r['item'], bool(project), as_of))}"),
                      soft_wrap=True, highlight=False)

    _emit(result, human)
    if not result["applied"]:
        raise typer.Exit(3)


@operator_app.command("allow")
def operator_allow(
    action_class: str = typer.Argument(..., help=f"One of: {', '.join(ACTION_CLASSES)}."),
    project: str = typer.Option(..., "--project", help="The project the delegation covers."),
) -> None:
    """Delegate an action class for a project: the operator then runs it on each digest pass."""
    _emit(allow(state.store, action_class, project),
          lambda r: out.print(_safe(f"delegated {action_class} for {project}")))


@operator_app.command("revoke")
def operator_revoke(
    action_class: str = typer.Argument(..., help=f"One of: {', '.join(ACTION_CLASSES)}."),
    project: str = typer.Option(..., "--project", help="The project."),
) -> None:
    """Withdraw a delegation; takes effect at once."""
    _emit(revoke(state.store, action_class, project),
          lambda r: out.print(_safe(f"revoked {action_class} for {project}")))


@operator_app.command("status")
def operator_status() -> None:
    """Whether the operator runs, and every delegation: action class, project, since when."""
    from ...operator.notify import notification_status
    from ...operator.policy import load

    data = {**load(state.store), "notifications": notification_status(state.store)}

    def human(r: dict[str, Any]) -> None:
        grants = [(project, action_class, grant["grantedAt"]) for project, classes in sorted(r["grants"].items())
                  for action_class, grant in sorted(classes.items())]
        out.print("operator off: nothing runs automatically (memo operator on)" if r["off"] else
                  "operator on: delegated actions run on digest passes")
        for project, action_class, since in grants:
            out.print(_safe(f"  {action_class} for {project} (since {_local(since)} {_zone_label()})"))
        if not grants:
            out.print("no delegation: nothing runs by itself (memo operator allow ACTION --project PROJECT)")
        n = r["notifications"]  # whether anyone hears of it: failures were in the watch's log alone
        if not n["webhook"]:
            out.print("webhook: none (operator.webhookUrl): the digest is kept, nothing is sent")
            return
        sent = f"last sent {_local(n['lastSentAt'])} {_zone_label()}" if n["lastSentAt"] else "nothing sent yet"
        line = f"webhook {n['webhook']}: {sent}"
        if n["failures"]:
            line += (f"; FAILING: {n['failures']} tr{'y' if n['failures'] == 1 else 'ies'} in a row"
                     + (f", the next after {_local(n['retryAt'])} {_zone_label()}" if n["retryAt"] else "")
                     + (f" ({n['lastError']})" if n["lastError"] else ""))
        elif n["pendingSince"]:
            line += f"; items waiting since {_local(n['pendingSince'])} {_zone_label()}"
        out.print(_safe(line), soft_wrap=True)

    _emit(data, human)


@operator_app.command("off")
def operator_off() -> None:
    """Stop every automatic action at once (delegations are kept for `memo operator on`)."""
    _emit(set_off(state.store, True), lambda r: out.print("operator off: nothing runs automatically"))


@operator_app.command("on")
def operator_on() -> None:
    """Let delegated actions run again."""
    _emit(set_off(state.store, False), lambda r: out.print("operator on: delegated actions run on digest passes"))


@operator_app.command("audit")
def operator_audit(limit: int = typer.Option(50, "--limit", min=1, help="The last N records.")) -> None:
    """The audit trail: every action the operator or a person applied, with its policy and outcome."""
    records = read_audit(state.store, limit)

    def human(rows: list[dict[str, Any]]) -> None:
        table = Table(title=f"{len(rows)} audit record{'' if len(rows) == 1 else 's'}")
        for column in (f"at ({_zone_label()})", "actor", "action", "subject", "project", "rule", "outcome"):
            table.add_column(column, overflow="fold")
        for r in rows:  # the project: a session id may be one of several projects'
            table.add_row(_local(r["at"], seconds=True), r["actor"], r["actionClass"], _short(r["subject"], 30),
                          _short(r.get("project") or "-", 30), _safe(r["policyRule"]), _short(r["outcome"], 50))
        out.print(table)

    _emit(records, human)
