"""``memo project rename|merge|client``: correct a project's name (SPEC §9), or file its
sessions already recorded under a client."""

from __future__ import annotations

import typer

from ...domain.shell import shell_word
from .common import _emit, _safe, app, err, note_new_client, out, state

project_app = typer.Typer(help="Rename a project, merge one into another (imports name projects after folders), or "
                               "file its sessions under a client.",
                          no_args_is_help=True)
app.add_typer(project_app, name="project")


def _said(result: dict) -> str:
    moved = ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in sorted(result["moved"].items())) or "nothing"
    return (f"{result['source']} → {result['target']}: moved {moved}"
            + (f"; {result['alreadyThere']} already there" if result["alreadyThere"] else ""))


@project_app.command("rename")
def project_rename(
    old: str = typer.Argument(..., help="The project's id now."),
    new: str = typer.Argument(..., help="Its new id (a project that does not exist yet)."),
) -> None:
    """Rename a project: every turn, session, trap, decision and hand-off moves to the new id."""
    from ...services.project_move import move_project
    from .config_cmd import follow_rename

    _moved(move_project(state.store, old, new))
    said = follow_rename(old, new)  # the project's client follows it
    if said:
        err.print(_safe(f"note: {said}"))


def _moved(result: dict) -> None:
    _emit(result, lambda r: out.print(_said(r)))
    for kept in result.get("keptApart", []):  # two people's sessions of one id: both kept
        err.print(_safe(f"note: kept apart: {kept['owner']}'s {kept['sessionId']} of {result['source']} is "
                        f"{kept['keptAs']} in {result['target']} (the session of that id there is another person's)"))
    if result.get("checkout"):  # found by a freelancer: the next session from that folder made the old project again
        err.print(_safe(f"note: what is recorded from now on in {result['checkout']} goes to "
                        f"{result['checkoutProject']} again (a project is its repository folder's name): rename that "
                        f"folder to {result['target']}, or merge it in again later (memo project merge "
                        f"{result['checkoutProject']} {result['target']})"))


@project_app.command("merge")
def project_merge(
    source: str = typer.Argument(..., help="The project to fold in (it disappears)."),
    into: str = typer.Argument(..., help="The project that takes its records."),
) -> None:
    """Merge a project into another; refused before anything moves when the two hold different records of one id."""
    from ...services.project_move import move_project

    _moved(move_project(state.store, source, into, merge=True))


@project_app.command("client")
def project_client(
    project: str = typer.Argument(..., help="The project whose sessions to file."),
    client: str = typer.Argument(..., help="The client they bill ('internal': none)."),
    every: bool = typer.Option(False, "--every", help="Every session of the project, also those of another client "
                                                      "(default: only those billed to internal)."),
) -> None:
    """File a project's sessions already recorded under a client (their turns follow); projectClients in the
    config files those recorded from now on. Sessions on an issued invoice are left as they are."""
    from ...services.session_edit import set_project_client

    result = set_project_client(state.store, project, client, every=every)
    if result["newClient"]:
        note_new_client(result["client"])

    def human(r: dict) -> None:
        out.print(f"{r['project']}: {r['sessions']} session{'s' if r['sessions'] != 1 else ''} now "
                  f"bill{'' if r['sessions'] != 1 else 's'} {r['client']} ({r['turnsUpdated']} "
                  f"turn{'s' if r['turnsUpdated'] != 1 else ''} updated)"
                  + (f"; {r['kept']} of another client or filed internal by name kept (--every files them too)"
                     if r["kept"] else "")
                  + (f"; left on issued invoices: {', '.join(r['onInvoice'])}" if r["onInvoice"] else ""))

    _emit(result, human if result["sessions"] else lambda r: None)  # nothing filed: said below, once
    if result["unreadable"]:  # not filed: they bill what they billed once mended
        n = len(result["unreadable"])
        err.print(_safe(f"note: {n} session file{'s' if n != 1 else ''} of {result['project']} cannot be read and "
                        f"{'were' if n != 1 else 'was'} not filed: {'; '.join(result['unreadable'][:3])}"
                        + (f"; and {n - 3} more (memo reindex lists them)" if n > 3 else "")
                        + "; mend them, then run this again"))
    mapped = state.store.settings.client_of_project(result["project"])
    if (mapped or "internal").casefold() != result["client"].casefold():  # else every new session is one more to file
        why = (f"the config's projectClients.{result['project']}" if mapped else
               f"no projectClients.{result['project']} in the config")
        err.print(_safe(f"note: sessions recorded from now on in {result['project']} still bill "
                        f"{mapped or 'internal'} ({why}); to file them under {result['client']} "
                        f"too: memo config set projectClients.{result['project']} {shell_word(result['client'])}"))
    if not result["sessions"]:
        left = [why for why, n in (("on issued invoices", result["onInvoice"]),
                                   ("of another client or filed internal by name (--every files them too)", result["kept"])) if n]
        err.print(f"error: nothing filed: {result['project']}'s sessions already bill {result['client']}"
                  + (f" or are {' or '.join(left)}" if left else ""))
        raise typer.Exit(1)
