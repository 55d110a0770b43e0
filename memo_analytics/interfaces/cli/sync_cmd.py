"""``memo sync …``: hybrid pushes and vault-git sync (SPEC §2.7)."""

from __future__ import annotations

from typing import Any

import typer

from ...domain.errors import InvalidFieldError, MemoError
from ...services import sync
from ...services.vault_git import status as vault_git_status
from ...services.vault_git import sync as vault_git_sync
from ...services.store import shell_cwd
from .common import _emit, _safe, app, err, out, say_duplicate_invoices, state

#: The daemon's outcomes of a conflict, said from the laptop's side ("kept ours" was the daemon's own
#: version: a person read their own as kept — found by a team lead).
_LAPTOP_READS = {
    "kept ours, theirs kept as conflict": "the daemon kept its version, yours is kept beside it as the conflict file",
    "applied, older kept as conflict": "yours was applied, the daemon's older version is kept beside it as the "
                                       "conflict file",
}


def _as_laptop_reads(outcome: object) -> str:
    return _LAPTOP_READS.get(str(outcome), str(outcome))


sync_app = typer.Typer(help="Sync the vault: hybrid pushes to a team daemon, vault-git.", no_args_is_help=True)
app.add_typer(sync_app, name="sync")


def _remote_status() -> None:
    """Remote mode keeps no vault: what waits here is the hook events the daemon could not take
    (down, busy, or refusing the token), and the last line of ``hooks.log`` says why."""
    from ...services import capture
    from ...vault.redact import mask_url

    settings = state.settings
    waiting = len(capture.spooled(settings.vault_root))
    try:
        lines = capture.hook_log(settings.vault_root).read_text("utf-8", "replace").splitlines()
    except OSError:
        lines = []
    result = {"mode": "remote", "remoteUrl": mask_url(settings.remote.url or "") or None, "spooledEvents": waiting,
              "lastHookLine": lines[-1] if lines else None}
    _emit(result, lambda r: out.print(_safe(
        f"remote mode · daemon {r['remoteUrl'] or '—'} · {r['spooledEvents']} hook event"
        f"{'' if r['spooledEvents'] == 1 else 's'} waiting for it (sent with the next event)"
        + (f"\n  last: {r['lastHookLine']}" if r["lastHookLine"] else ""))))


@sync_app.command("status")
def sync_status() -> None:
    """Pending pushes, last success, last error and the next retry (hybrid), and the state
    of vault-git when it is on; in remote mode, the hook events waiting for the daemon."""
    if state.settings.mode == "remote":
        _remote_status()
        return
    result = sync.status(state.store)
    if state.settings.vault_git.enabled:
        result["vaultGit"] = vault_git_status(state.store)

    def human(r: dict[str, Any]) -> None:
        if r["remoteUrl"] or r["mode"] != "local" or r["pending"]:
            out.print(_safe(f"hybrid push (mode {r['mode']}) · daemon {r['remoteUrl'] or '—'} · "
                            f"{r['pending']} record{'' if r['pending'] == 1 else 's'} waiting · last success: {r['lastSuccessAt'] or 'never'}"))
            if r.get("firstPush"):
                shown = ", ".join(f"{project} ({n})" for project, n in r["firstPush"].items())
                out.print(_safe(f"  the first push sends the whole vault, every project of it: {shown}"))
            if r["lastError"]:
                out.print(_safe(f"  last error: {r['lastError']} at {r['lastErrorAt']} (attempt {r['attempts']}; "
                                f"next retry {r['nextRetryAt'] or 'now'})"))
            for item in r.get("refused") or []:
                out.print(_safe(f"  refused by the daemon: {item['id']}: {item['reason']}"))
            for item in r.get("conflicts") or []:
                out.print(_safe(f"  conflict on the daemon: {item['id']}: {_as_laptop_reads(item['outcome'])} "
                                f"({item['conflict']} there; its digest lists it)"))
            for item in r.get("keptOnDaemon") or []:
                why = (f"invoice {item['invoice']} billed them there; a credit note frees them" if item.get("invoice")
                       else "corrected there since your push")
                out.print(_safe(f"  merged on the daemon: {item['id']} keeps its {', '.join(item['keptHere'])} there "
                                f"({why}; this vault still has its own)"))
            if r.get("lastPullAt") or r.get("lastPullError"):
                out.print(_safe(f"  last pull: {r.get('lastPullAt') or 'never'}"
                                + (f" · error: {r['lastPullError']}" if r.get("lastPullError") else "")))
            for item in r.get("pulled") or []:
                out.print(_safe(f"  pulled from the daemon: {item['id']} ({item.get('kind')} of {item.get('project')})"))
            for item in r.get("keptApart") or []:
                out.print(_safe(f"  kept apart on the daemon: {item['id']} is {item['storedAs']} there "
                                + (f"(its session's id there is {item['heldBy']}'s session)" if item.get("heldBy")
                                   else "(since its first push, where another's session had its id)")))
        else:
            out.print(f"hybrid push: off (mode {r['mode']}, no daemon)")
        if "vaultGit" in r:
            git = r["vaultGit"]
            where = f"{git['remote']}/{git['branch']}" + (f" ({git['remoteUrl']})" if git.get("remoteUrl") else "")
            counts = "" if git["unpushedCommits"] is None else (
                f" · {git['unpushedCommits']} commit{'s' if git['unpushedCommits'] != 1 else ''} not pushed"
                f" · {git['uncommittedFiles']} file{'s' if git['uncommittedFiles'] != 1 else ''} not committed")
            out.print(_safe(f"vault-git: {where}{counts} · last success: {git['lastSuccessAt'] or 'never'}"))
            if git.get("lastError"):
                out.print(_safe(f"  last error: {git['lastError']} at {git['lastErrorAt']}"))
            for item in git.get("termsDiffer") or []:
                out.print(_safe(f"  invoice {item['invoice']}, pulled from another machine, billed {item['client']} "
                                f"on other terms than this machine's config: {'; '.join(item['differences'])}"))

    _emit(result, human)


@sync_app.command("push")
def sync_push(every: bool = typer.Option(False, "--all", help="Every record of the vault, whatever was pushed before "
                                                             "(a laptop pointed at another daemon).")) -> None:
    """Push the records waiting in the outbox to the hybrid daemon now (ignores the backoff), batch
    after batch (hybrid.batchSize each) until none waits or one fails. Exits 1 when a push failed
    or the daemon refused a record (it waits in the outbox; the operator digest lists it)."""
    result = sync.push_everything(state.store) if every else sync.push_every_batch(state.store)
    said = sync.own_invoices_note(state.store) if not result.get("error") else None
    if said:
        err.print(_safe(f"warning: {said}"))
    forgot = result.get("daemonForgot")
    if forgot:
        err.print(f"warning: the daemon holds {forgot['received']} of the {forgot['sent']} pushes this laptop made to "
                  "it (its vault restored from a backup?): every record of this vault was sent again")
    owned = result.get("owned")
    if owned and owned.get("owner"):
        err.print(_safe(f"note: {owned['sessions']} session{'' if owned['sessions'] == 1 else 's'} named no owner "
                        f"(spec-memo writes none): {'they are' if owned['sessions'] != 1 else 'it is'} "
                        f"{owned['owner']}'s now (your git identity), as the team vault tells people apart by it"))
    elif owned:
        err.print(f"note: {owned['sessions']} session{'' if owned['sessions'] == 1 else 's'} name no owner and this "
                  "machine has no git identity: the team vault counts them as one person's, their overlapping time "
                  "billed once; set yours (git config --global user.email YOU@EXAMPLE) and push again")
    for item in result["results"]:
        if isinstance(item.get("conflict"), str):
            err.print(_safe(f"note: {item.get('id')} met another version on the daemon: "
                            f"{_as_laptop_reads(item.get('outcome'))} ({item['conflict']} there; its digest lists it)"))
        if isinstance(item.get("keptHere"), list) and item["keptHere"]:
            why = (f"is on invoice {item['invoice']} there" if isinstance(item.get("invoice"), str) else
                   "was corrected on the daemon since your last push")
            err.print(_safe(f"note: {item.get('id')} {why}: it keeps its {', '.join(map(str, item['keptHere']))} "
                            "there, your other changes merged"))
        if isinstance(item.get("storedAs"), str):
            err.print(_safe(f"note: {item.get('id')} is kept on the daemon as {item['storedAs']} "
                            + (f"(its session's id there is {item['heldBy']}'s session)" if item.get("heldBy") else
                               "(kept apart there since its first push, where another's session had its id)")))
        if item.get("outcome") == "refused":  # "4 waiting" said nothing of why
            err.print(_safe(f"note: {item.get('id')}: {item.get('reason')}" if item.get("here") else
                            f"note: {item.get('id')} refused by the daemon: {item.get('reason')} (it waits in the "
                            "outbox: the next push sends it again)"))
    _emit(result, lambda r: out.print(_safe(f"pushed {r['pushed']} record{'' if r['pushed'] == 1 else 's'}; {r['pending']} waiting"
                                            + (f"; error: {r['error']}" if r["error"] else ""))))
    if result["error"]:  # hybrid off too: nothing was pushed
        raise typer.Exit(1)
    if any(item.get("outcome") == "refused" for item in result["results"]):  # they wait: not pushed (a team lead)
        raise typer.Exit(1)


@sync_app.command("pull")
def sync_pull() -> None:
    """Pull from the hybrid daemon what the team left this laptop's people: hand-offs addressed
    to them (your next session start claims one) and corrections of their sessions made there.
    A baton claimed here, or a session changed here since its push, keeps this vault's version."""

    result = sync.pull(state.store, cwd=shell_cwd())  # this repository's person too
    for item in result["results"]:
        if item["outcome"] in ("kept yours", "refused"):  # "left": the daemon's news of nothing held here
            err.print(_safe(f"note: {item.get('id')}: {item['outcome']}: {item.get('reason')}"))
        elif item["outcome"] == "moved":  # the lead's move: this vault's session went with it
            err.print(_safe(f"note: {item.get('id')}: moved from project {item.get('movedFrom')} to "
                            f"{item.get('project')}, as the daemon holds it"))
    if result.get("note"):
        err.print(_safe(f"note: {result['note']}"))
    for number, again in (result.get("invoicedAgain") or {}).items():  # a routine correction: said as one
        err.print(_safe(f"note: invoice {number} is credited on the team daemon; its sessions of yours are billed "
                        f"on {', '.join(again)} now"))
    for number in result.get("noLongerInvoiced", []):  # credited there, or a daemon restored from a backup
        err.print(_safe(f"note: the team daemon no longer names invoice {number} as billing sessions of yours: "
                        "credited there, or the daemon was restored from a backup that predates it — if it was "
                        "sent, tell the person who issues the team's invoices"))

    def human(r: dict[str, Any]) -> None:
        taken = [item for item in r["results"] if item["outcome"] == "pulled"]
        moved = sum(item["outcome"] == "moved" for item in r["results"])
        out.print(_safe(f"pulled {r['pulled']} record{'' if r['pulled'] == 1 else 's'}"
                        + (f" ({', '.join(item['id'] for item in taken[:8])}{', …' if len(taken) > 8 else ''})"
                           if taken else "") + (f"; moved {moved} session{'' if moved == 1 else 's'} where the "
                                                 "daemon holds them" if moved else "")
                        + (f"; error: {r['error']}" if r["error"] else "")))

    _emit(result, human)
    if result["error"]:
        raise typer.Exit(1)


def _print_git(result: dict) -> None:
    vg = state.settings.vault_git
    parts = [f"committed {result['committed']} record{'s' if result['committed'] != 1 else ''}"]
    if result["records"]:
        shown = ", ".join(result["records"][:8]) + (", …" if len(result["records"]) > 8 else "")
        parts[0] += f" ({_safe(shown)})"
    others = len(result.get("otherFiles", []))
    if others:  # an issued invoice, the ledger, memo's .gitignore …
        parts[0] += f" and {others} other file{'s' if others != 1 else ''}"
    if result["error"] and not (result["pulled"] or result["pushed"]):  # "nothing to pull" read as all clear
        parts.append("nothing pulled or pushed: the sync stopped (the error below)")
    else:
        parts.append(f"pulled from {vg.remote}/{vg.branch}" if result["pulled"] else "nothing to pull")
        parts.append(f"pushed to {vg.remote}/{vg.branch}" if result["pushed"] else "nothing pushed")
    out.print("; ".join(parts))
    for path in result["conflicts"]:
        out.print(f"conflict: the older version is kept as {_safe(path)}")
    for path in result.get("renumberedTurns", []):
        out.print(_safe(f"renumbered: the other machine had numbered its own turn of this session alike; yours is now "
                        f"{path}"))
    for ref in result.get("invoicesPulled", []):
        out.print(_safe(f"pulled {ref}, issued on another machine: it changes what is billed (memo invoice show {ref})"))
    say_duplicate_invoices(result)


@sync_app.command("git")
def sync_git() -> None:
    """Run a vault-git sync now: commit the changed records in one commit, pull (fetch + merge)
    from vaultGit.remote/vaultGit.branch, keep the older side of a conflict beside the record,
    push. Needs `[vaultGit] enabled = true` and a git remote in the vault."""
    settings = state.settings
    if not settings.vault_git.enabled:
        raise InvalidFieldError("vaultGit.enabled", "vault-git is off; turn it on with "
                                                    "`memo config set vaultGit.enabled true`")
    if settings.mode == "remote":
        raise InvalidFieldError("mode", "remote mode writes nothing locally, so there is no vault to sync")
    result = vault_git_sync(state.store, "manual")
    _emit(result, _print_git)
    if result["error"]:
        raise MemoError(result["error"])
