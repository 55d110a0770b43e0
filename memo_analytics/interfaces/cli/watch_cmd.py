"""``memo watch [PATH…]``: import the agents' transcripts as they are written
(:mod:`memo_analytics.services.watch`)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import List, Optional

import typer

from ...domain.clock import resolve_zone
import json
from .common import _safe, _told_as, app, err, out, state


@app.command("watch")
def watch_command(
    paths: Optional[List[str]] = typer.Argument(None, help="Folders or files to follow besides the known transcript "
                                                          "stores (~/.claude/projects, ~/.codex/sessions, ~/.gemini/tmp, ~/.copilot/session-state, "
                                                          "Cursor's globalStorage, ~/.local/share/opencode)."),
    only: bool = typer.Option(False, "--only", help="Follow the given folders only, not the known ones."),
    once: bool = typer.Option(False, "--once", help="Import what changed since the last run, then stop."),
    project: Optional[str] = typer.Option(None, "--project", help="File everything under this project."),
    client: Optional[str] = typer.Option(None, "--client", help="Client of the imported sessions."),
    idle_gap: Optional[int] = typer.Option(None, "--idle-gap", min=1, max=525_600,
                                           help="Minutes of pause that start a new session (default 30)."),
    tz: Optional[str] = typer.Option(None, "--tz", help="Zone of timestamps without an offset (default: the config's timezone, else the machine's)."),
    debounce_ms: int = typer.Option(500, "--debounce-ms", min=50, max=60_000,
                                    help="Wait this long after a change for more before importing (ms)."),
) -> None:
    """Follow the agents' transcript folders and import each transcript as it grows; one line
    per import that took something in (every import with --json). Stops cleanly on Ctrl-C or SIGTERM."""
    from ...services.importers.common import ImportOptions
    from ...services.watch import RETRY_AFTER_SECONDS, WatchedRoot, known_roots, watch

    roots = [] if only else known_roots(awaited=not once)  # left running: an agent used for the first time later too
    known = {os.path.realpath(root.path) for root in roots}  # a known folder named again: watched once (a breaker)
    for given in dict.fromkeys(Path(p).expanduser() for p in paths or []):
        if os.path.realpath(given) not in known:
            known.add(os.path.realpath(given))
            roots.append(WatchedRoot(given))
    gap = idle_gap if idle_gap is not None else state.settings.idle_gap_minutes
    options = ImportOptions(project=project, client=client, idle_gap=timedelta(minutes=gap), idle_gap_given=idle_gap is not None,
                            zone=resolve_zone(tz or state.settings.timezone))
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    count = quiet = failed = 0
    told: dict[Path, set[str]] = {}  # the reasons of skipped lines already printed, per file: each once
    failing: dict[Path, str] = {}  # the failure last said of each file: a retry that fails alike is not said again

    def on_import(item) -> None:
        nonlocal count, quiet, failed
        count += 1
        failed += 1 if item.error else 0
        if not item.error:
            failing.pop(item.path, None)  # imported: a later failure is news again
        at = datetime.now(timezone.utc).astimezone(state.store.zone).strftime("%H:%M:%S")
        if state.json:
            sys.stdout.write(_json_line(item.wire()))  # one JSON object per line
        elif item.error:
            if failing.get(item.path) == item.error:  # a full disk said every 30 s for every file waiting: once
                return
            failing[item.path] = item.error
            err.print(_safe(f"{at} {item.source} {item.path}: not imported: {item.error}"
                            + ("" if once else f" (tried again at its next change, or every {RETRY_AFTER_SECONDS:.0f} s"
                                               "; said again when it fails otherwise)")))
            return
        elif not item.result.news(told.get(item.path, set())):
            quiet += 1  # only the agent's own lines (the session stretched), half a line, a bad line told of before
            return
        else:
            out.print(_safe(f"{at} {item.source} {item.path}: {item.result.line()}"), soft_wrap=True)  # a log line: whole
        sys.stdout.flush()
        before = told.setdefault(item.path, set())
        fresh = [line for line in item.result.errors if line not in before]
        before.update(item.result.errors)
        for line in fresh[:5]:
            err.print(_safe(f"{_told_as(line)}: {line}"))

    try:
        if not once and not state.json:
            awaited = [str(r.path) for r in roots if r.awaited]
            present = ", ".join(str(r.path) for r in roots if not r.awaited)
            err.print(_safe(("watching " + present + (f" (and {', '.join(awaited)} once made)" if awaited else "")
                             if present else f"watching for {', '.join(awaited)}: none is made yet (an agent run for "
                                             "the first time makes its folder)") + " (Ctrl-C stops)"))
        def on_warning(line: str) -> None:
            if state.json:
                sys.stderr.write(_json_line({"warning": line}))
            else:
                err.print(_safe(f"warning: {line}"))

        watch(state.store, roots, options, on_import, stop, once=once, debounce_ms=debounce_ms, on_warning=on_warning)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    notes = [f"{quiet} with nothing new to tell: not shown"] if quiet else []
    notes += [f"{failed} failed"] if failed else []
    notes += ["nothing changed since the last run"] if once and not count else []
    noted = f" ({', '.join(notes)})" if notes else ""
    err.print(f"{'stopped' if not once else 'done'}: {count} import{'s' if count != 1 else ''}{noted}")  # stderr: --json keeps stdout JSON lines
    if once and failed:
        raise typer.Exit(1)


def _json_line(value: dict) -> str:
    """One JSON line of the watcher, UTF-8 text — a path of bytes that are not UTF-8 (a lone
    surrogate of ``os.fsdecode``) escaped as ``\\udcXX``, as Python's ``json`` reads it back and
    ``os.fsencode`` gives the name's bytes (written raw, the line was not UTF-8 and a reader of
    the watcher's output died on it)."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value)
    return text + "\n"
