"""``memo import``, ``memo reindex``, ``memo mcp`` and ``memo demo``."""

from __future__ import annotations

import os
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Callable, List, Optional

import typer

from ...config import Settings
from ...domain.shell import shell_word
from ...domain.clock import resolve_zone
from ...domain.errors import MemoError
from ...domain.hosts import is_loopback
from ...services.demo import DEMO_ZONE, build_demo_vault
from ...services.importers import IMPORTERS, load_importer
from .common import (
    DEMO_MARKER,
    _emit,
    _progress,
    _safe,
    _told_as,
    app,
    err,
    import_app,
    out,
    state,
)

# ---------------------------------------------------------------- import & reindex


def _import_command(source: str) -> Callable[..., None]:
    def command(
        paths: List[str] = typer.Argument(..., help="Transcript files or folders (hidden folders are walked)."),
        project: Optional[str] = typer.Option(None, "--project", help="File everything under this project."),
        client: Optional[str] = typer.Option(None, "--client", help="Client of the imported sessions."),
        billable: Optional[bool] = typer.Option(None, "--billable/--no-billable", help="Billable or not (default yes)."),
        idle_gap: Optional[int] = typer.Option(
            None, "--idle-gap", min=1, max=525_600,
            help="Minutes of pause that start a new session (1–525600; default 30 or MEMO_IDLE_GAP_MINUTES)."),
        tz: Optional[str] = typer.Option(None, "--tz", help="Zone of timestamps without an offset (default: the config's timezone, else the machine's)."),
        rescan: bool = typer.Option(False, "--rescan", help="Read every file again, also those unchanged since the "
                                                            "last import took them in."),
    ) -> None:
        from ...services.importers.common import ImportOptions, run_import, walk_files, with_imported_siblings

        module = load_importer(source)
        store = state.store  # remote mode keeps no vault: said before any folder is walked
        if any(not p.strip() for p in paths):
            raise MemoError("Invalid path: must not be empty")
        gap = idle_gap if idle_gap is not None else state.settings.idle_gap_minutes
        options = ImportOptions(project=project, client=client, billable=billable,
                                idle_gap=timedelta(minutes=gap), idle_gap_given=idle_gap is not None, zone=resolve_zone(tz or state.settings.timezone))
        for given in paths:
            if not Path(given).exists():
                if os.path.lexists(given):
                    raise MemoError(f"Invalid path: {given} is a symbolic link that leads nowhere (a loop, or its "
                                    "target is gone)")
                raise MemoError(f"Invalid path: {given} does not exist")
        left_out: list[str] = []
        files = list(walk_files([Path(p) for p in paths], module.SUFFIXES, module.EXCLUDE_DIRS, left_out))
        for line in left_out[:20]:
            err.print(_safe(f"left out: {line}"))
        if len(left_out) > 20:
            err.print(f"left out: … and {len(left_out) - 20} more")
        if not files:
            raise MemoError(f"nothing to import: no {' or '.join('*' + s for s in module.SUFFIXES)} file under "
                            f"{', '.join(paths)} (is this a {source} folder?)")
        singles = [Path(p) for p in paths if Path(p).is_file()]
        if singles and not rescan:  # a file given alone: with the files beside it of the same conversations
            beside = with_imported_siblings(store, singles, source)
            if len(beside) > len(singles):
                files = sorted(set(files) | set(beside))
        with _progress(f"import {source}", len(files)) as advance:
            result = run_import(store, files, module.parse, options, progress=lambda _p: advance(), source=source,
                                incremental=not rescan)
        for line in result.errors[:20]:
            err.print(_safe(f"{_told_as(line)}: {line}"))
        if len(result.errors) > 20:
            err.print(f"skipped: … and {len(result.errors) - 20} more (--json lists them all)")
        if not result.recognised and result.empty and result.empty == result.files - result.unchanged:
            raise MemoError("nothing to import: " + ("the file is empty" if result.empty == 1 else
                                                     f"the {result.empty} files are empty")
                            + " (an agent writes its transcript as the conversation goes on)")
        if not result.recognised:
            which = "the file is not" if result.files == 1 else f"none of the {result.files} files is"
            raise MemoError(f"nothing recognised: {which} a {source} transcript (see the lines above); "
                            "nothing was imported")
        chosen = [name for name, value in (("--project", project), ("--client", client),
                                           ("--billable/--no-billable", billable)) if value is not None]
        # not when every turn was skipped and nothing was there before (a fresh vault: no session "imported before")
        if chosen and not result.sessions and not state.json and not (
                result.skipped and not (result.unchanged or result.reindexed or result.revised or result.turns)) \
                and (result.unchanged or result.prompted):  # (a file still being written holds none yet)
            err.print(f"note: {', '.join(chosen)} appl{'ies' if len(chosen) == 1 else 'y'} to sessions new to the "
                      "vault; these files' sessions were "
                      "imported before and keep what they had (memo session edit ID --client NAME, --no-billable "
                      "or --to-project P changes one)")
        _note_new_sessions(result.untimed, result.sessions if client is None and billable is not False else 0)
        _emit(result.wire(), lambda r: out.print(result.line()))
        if result.rewound and not state.json:
            err.print(f"warning: {result.rewound} imported turn{'s are' if result.rewound != 1 else ' is'} no longer "
                      "in the transcript (rewound, cut short or cleared) and no longer bill"
                      f"{'' if result.rewound != 1 else 's'}: their sessions end earlier; if a file was cut or cleared "
                      "by mistake, put it back and import again — they come back")
        if result.took_nothing_in():
            raise MemoError(f"nothing imported: {result.nothing_taken()} (the lines above say why)")
        if result.refused:  # the rest imported, one conversation out: a cron job saw exit 0 (found by a breaker)
            raise MemoError(f"{result.refused} conversation{'s' if result.refused != 1 else ''} refused (the lines "
                            "above say why); the rest was imported")

    command.__doc__ = f"Import {source} transcripts: one session per work interval, one turn per human prompt."
    return command


for _source in IMPORTERS:
    import_app.command(_source)(_import_command(_source))


@import_app.command("auto")
def import_auto_command(
    paths: Optional[List[Path]] = typer.Argument(None, help="Folders or files to import, each file by the importer "
                                                "that reads it (default: every known store on this machine)."),
    project: Optional[str] = typer.Option(None, "--project", help="File everything under this project."),
    client: Optional[str] = typer.Option(None, "--client", help="Client of the imported sessions."),
    idle_gap: Optional[int] = typer.Option(None, "--idle-gap", min=1, max=525_600,
                                           help="Minutes of pause that start a new session (default 30)."),
    tz: Optional[str] = typer.Option(None, "--tz", help="Zone of timestamps without an offset (default: the config's timezone, else the machine's)."),
) -> None:
    """Find every known transcript store on this machine (~/.claude/projects, ~/.codex/sessions,
    ~/.gemini/tmp, ~/.copilot/session-state, Cursor's globalStorage, ~/.local/share/opencode, and
    the .specstory/history of this repository and of those memo knows) — or the folders given —
    and import each with its own importer; one line of counts per folder."""
    from ...services.importers.common import ImportOptions
    from ...services.watch import import_auto

    gap = idle_gap if idle_gap is not None else state.settings.idle_gap_minutes
    options = ImportOptions(project=project, client=client, idle_gap=timedelta(minutes=gap), idle_gap_given=idle_gap is not None,
                            zone=resolve_zone(tz or state.settings.timezone))
    found = import_auto(state.store, options, paths=list(paths or []) or None)
    for item in found:
        for line in item["errors"][:20]:
            err.print(f"{_told_as(line)}: {line}")
        if item.get("untold"):
            more = f" and {item['untold'] - 5} more" if item["untold"] > 5 else ""
            err.print(_safe(f"skipped: {item['path']}: {item['untold']} file{'s' if item['untold'] > 1 else ''} no "
                            f"importer tells ({', '.join(item['untoldFiles'])}{more}); if one is a transcript, give its "
                            "importer: memo import SOURCE FILE"))
        if item.get("subAgentFiles"):
            n = item["subAgentFiles"]
            err.print(_safe(f"note: {item['path']}: {n} Claude Code sub-agent file{'s' if n > 1 else ''} "
                            "(<session>/subagents/) read for their model calls' tokens only: a sub-agent's brief and "
                            "tool traffic are no turn of yours"))

    def human(items) -> None:
        for item in items:  # as `memo import SOURCE` says them, its notes too (a tester: a line still being written)
            out.print(_safe(f"{item['source']} {item['path']}: {item['summary']}"), soft_wrap=True)

    # the notes `memo import SOURCE` gives (found by a freelancer: the newcomer's first command said neither)
    _note_new_sessions(sum(item.get("untimed") or 0 for item in found),
                       sum(item.get("sessions") or 0 for item in found) if client is None else 0)
    _emit({"sources": found}, lambda r: human(r["sources"]))
    if not any(item["recognised"] for item in found):
        raise MemoError("nothing recognised: no transcript in " + ("the folders given" if paths else "the known folders")
                        + " (" + ", ".join(item["path"] for item in found) + "); nothing was imported")
    refused = sum(item.get("refused") or 0 for item in found)
    if refused:  # a cron job of `import auto` saw exit 0 while a conversation stayed out (found by a breaker)
        raise MemoError(f"{refused} conversation{'s' if refused != 1 else ''} refused (the lines above say why); "
                        "the rest was imported")


def _note_new_sessions(untimed: int, without_client: int) -> None:
    """What an import says of the sessions it made: ``untimed`` of 0 minutes (one time for all their
    turns), and — ``without_client`` new sessions named no client and the config maps no project —
    that they bill 'internal' and how to file them."""
    if state.json:
        return
    if untimed:
        err.print(f"note: {untimed} new session{'s are' if untimed != 1 else ' is'} 0 minutes: "
                  f"{'their transcripts keep' if untimed != 1 else 'its transcript keeps'} one time for all its turns "
                  "(or none per turn); give a session its time with memo session edit ID --minutes N (or --end TIME)")
    if without_client and not state.settings.project_clients:
        err.print("note: the new sessions have no client, so they bill to 'internal'; to file a project's sessions "
                  "under its client at once: memo project client PROJECT NAME (one session: memo session edit ID "
                  "--client NAME, or --no-billable); for what comes next, map projects to clients with "
                  "[projectClients] in the config, or import with --client NAME")


@app.command("reindex")
def reindex() -> None:
    """Rebuild the SQLite index (records, records_fts) from the vault's files alone."""
    from ...services.maintenance import reindex as reindex_vault

    store = state.store
    if not store.root.is_dir():
        raise MemoError(f"No vault at {store.root}")
    total = len(store.layout.record_files())
    with _progress("reindex", total) as advance:
        result = reindex_vault(store, progress=lambda n, t: advance())
    for error in result.skipped:
        err.print(f"skipped: {error}")
    from ...index.store import turns_at_odds

    for odd in turns_at_odds(store.conn):  # an edit of a session's client cut short: its turns say another
        billed = shell_word(odd["client"]) if odd["client"] else "internal"
        flag = "" if odd["billable"] else " --no-billable"
        err.print(_safe(f"note: {odd['turns']} turn{'s' if odd['turns'] != 1 else ''} of session {odd['sessionId']} "
                        f"({odd['project']}) bill another client than the session ({odd['client'] or 'internal'}"
                        f"{'' if odd['billable'] else ', not billable'}): an edit cut short? memo session edit "
                        f"{shell_word(odd['sessionId'])} --project {odd['project']} --client {billed}{flag} puts them "
                        "in line (or run the edit that was cut short again)"))
    _emit(result.wire(), lambda r: out.print(
        f"indexed {r['indexed']} records, skipped {len(r['skipped'])} files"
        + (f", removed {r['removedTempFiles']} stale temporary files" if r["removedTempFiles"] else "")))


# ---------------------------------------------------------------- mcp


@app.command("mcp")
def mcp_server(
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio."),
    port: int = typer.Option(3125, "--port", min=1, max=65535, help="HTTP port (with --http)."),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP address (loopback only)."),
) -> None:
    """Run the MCP server with the one tool `prompt` (stdio by default)."""
    if http and not is_loopback(host):  # before the SDK loads
        raise MemoError(f"Invalid host: {host} is not a loopback address; the MCP server listens on 127.0.0.1 only")
    from ...runtime import server

    server("mcp")(state.runtime, http=http, host=host, port=port)


# ---------------------------------------------------------------- demo


@app.command("demo")
def demo(
    out_dir: Path = typer.Option(Path.home() / ".memo" / "demo", "--out", help="Folder for the sample vault and PDF."),
    tz: str = typer.Option(DEMO_ZONE, "--tz", help="Zone of the sample's working hours and of the report."),
) -> None:
    """Build a sample vault, print its activity and write its PDF timesheet."""
    from ...analytics.activity import ActivityRequest, activity_report
    from ...reports.timesheet import render_timesheet_pdf
    from ...vault.io import atomic_write_bytes
    from .reports import _print_activity

    out_dir = out_dir.expanduser().resolve()
    vault = out_dir / "vault"
    marker = out_dir / DEMO_MARKER
    resolve_zone(tz)
    if out_dir.exists() and not out_dir.is_dir():
        raise MemoError(f"Invalid out: {out_dir} is not a folder")
    if marker.is_symlink() or (vault.is_symlink()):
        raise MemoError(f"Invalid out: {out_dir} holds a symbolic link where memo demo writes; choose another --out")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not marker.is_file():
        raise MemoError(f"Invalid out: {out_dir} is not empty and was not made by memo demo; choose another --out")
    # its own vault, on a remote-mode laptop too, and none of this machine's terms (a client's rounding
    # in the config file changed the sample's hours): the same numbers on every machine
    settings = Settings.isolated(vault_root=vault, timezone=tz, mode="local")
    if vault.exists():
        shutil.rmtree(vault)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(marker, b"This folder was made by `memo demo`; the next run replaces it.\n")
    state.use(settings, {"vault_root": vault, "timezone": tz, "mode": "local"})
    counts = build_demo_vault(state.store)
    report = activity_report(state.store, ActivityRequest(projects=None, tz=tz))
    pdf = render_timesheet_pdf(report, out_dir / "timesheet.pdf", overwrite=True)  # the demo's own folder
    if state.json:
        _emit({"vault": str(vault), "timesheet": str(pdf), **counts, "activity": report.wire()}, lambda _: None)
        return
    _print_activity(report.wire())
    out.print()
    out.print(f"sample vault : {vault}  ({counts['sessions']} sessions, {counts['turns']} turns)")
    out.print(f"timesheet PDF: {pdf}")
    root = shell_word(str(vault))  # pasted as it is: a home folder with a space too
    out.print(f"try          : memo --vault-root {root} prompt search invoices --all")
    out.print(f"               memo --vault-root {root} digest --as-of 2026-03-07T08:00   # what needed you")
    out.print(f"               memo --vault-root {root} report rules --all                # rules you repeat")
    out.print(f"               memo --vault-root {root} serve                             # the dashboard")
    # the way from the sample to one's own agents' work (found by a new user: every line above is the sample's)
    out.print("your own      : memo import auto      # what your agents already left on this machine")
    out.print("               memo hooks install     # every turn from now on (Claude Code, Codex, Gemini CLI …)")
    out.print("               memo prompt list --all # what you asked (memo activity --all: how long you worked)")


