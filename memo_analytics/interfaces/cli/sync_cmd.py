"""``memo sync …``: hybrid pushes and vault-git sync (SPEC §2.7)."""

from __future__ import annotations

from typing import Any

import typer

from ...services import sync
from .common import _emit, _safe, app, out, state

sync_app = typer.Typer(help="Sync the vault: hybrid pushes to a team daemon, vault-git.", no_args_is_help=True)
app.add_typer(sync_app, name="sync")


@sync_app.command("status")
def sync_status() -> None:
    """Pending pushes, last success, last error and the next retry."""
    result = sync.status(state.store)

    def human(r: dict[str, Any]) -> None:
        out.print(_safe(f"mode {r['mode']} · remote {r['remoteUrl'] or '—'} · {r['pending']} records waiting"))
        out.print(_safe(f"last success: {r['lastSuccessAt'] or 'never'}"))
        if r["lastError"]:
            out.print(_safe(f"last error: {r['lastError']} at {r['lastErrorAt']} (attempt {r['attempts']}; "
                            f"next retry {r['nextRetryAt'] or 'now'})"))

    _emit(result, human)


@sync_app.command("push")
def sync_push() -> None:
    """Push the records waiting in the outbox to the hybrid daemon now (ignores the backoff)."""
    result = sync.push(state.store, force=True)
    _emit(result, lambda r: out.print(_safe(f"pushed {r['pushed']} records; {r['pending']} waiting"
                                            + (f"; error: {r['error']}" if r["error"] else ""))))
    if result["error"] and result["error"] != "hybrid sync is off":
        raise typer.Exit(1)
