"""``memo digest`` (what needs you now) and ``memo operator …`` (SPEC §6)."""

from __future__ import annotations

import time
from typing import Any, Optional

import typer
from rich.table import Table

from ...domain.clock import to_iso, utcnow
from ...operator.notify import offer
from ...operator.service import current_digest, run_digest
from ...services.requests import DigestRequest
from .common import _build, _emit, _safe, _short, app, out, state


def utc_stamp() -> str:
    return to_iso(utcnow())[:19].replace("T", " ")


def _age(minutes: int) -> str:
    if minutes >= 2 * 24 * 60:
        return f"{minutes // (24 * 60)} d"
    return f"{minutes // 60} h {minutes % 60:02d}" if minutes >= 60 else f"{minutes} min"


@app.command("digest")
def digest(
    refresh: bool = typer.Option(False, "--refresh", help="Recompute now instead of the cached digest."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="What needed you at this instant (ISO date or time)."),
) -> None:
    """What needs you now: stalled or overlong sessions, unclaimed hand-offs, PRs awaiting
    review, rules ready to promote, billable work without a client — one line each, ranked."""
    result = run_digest(state.store, _build(DigestRequest, refresh=refresh, as_of=as_of))

    def human(r: dict[str, Any]) -> None:
        if r.get("error"):
            out.print(_safe(f"note: {r['error']}; showing the digest of {r['computedAt']}"))
        if not r["items"]:
            out.print("Nothing needs you now.")
        else:
            table = Table(title=f"{len(r['items'])} items need you · computed {r['computedAt'][:16].replace('T', ' ')} UTC")
            for column in ("lane", "kind", "subject", "age", "why", "do"):
                table.add_column(column, overflow="fold")
            for item in r["items"]:
                table.add_row(item["lane"], item["kind"], _short(item["subject"], 30), _age(item["ageMinutes"]),
                              _short(item["why"], 60), _safe(item["action"]))
            out.print(table)
        if r["beyondHorizon"]:
            older = ", ".join(f"{n} {kind}" for kind, n in r["beyondHorizon"].items())
            out.print(f"older than {r['horizonDays']} days (counted, not listed): {older}")

    _emit(result, human)


operator_app = typer.Typer(help="The operator: watch the vault, notify, act within your delegations.",
                           no_args_is_help=True)
app.add_typer(operator_app, name="operator")


@operator_app.command("watch")
def operator_watch(
    interval: float = typer.Option(30.0, "--interval", min=1.0, help="Seconds between passes."),
    once: bool = typer.Option(False, "--once", help="One pass, then exit (for cron)."),
) -> None:
    """Recompute the digest when the vault changes and send new items to the configured
    webhook (operator.webhookUrl), coalesced per settle window and at most one an hour."""
    while True:
        result = offer(state.store, current_digest(state.store))
        _emit(result, lambda r: out.print(_safe(f"{utc_stamp()} notification: {r['reason']}"
                                                + (f" ({r['sent']} items)" if r["sent"] else ""))))
        if once:
            return
        time.sleep(interval)
