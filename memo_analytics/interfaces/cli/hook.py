"""``memo hook AGENT``: the command an agent's hook entry runs (``memo hooks install``
writes those entries). It reads the event from stdin — or, for Codex's legacy ``notify``
program, from its last argument — and records it (:mod:`memo_analytics.services.capture`).

It never gets in the agent's way: nothing is printed on stdout (Claude Code and Gemini CLI put
a hook's stdout into the model's context), the exit status is always 0 (a non-zero status can
block the prompt), a broken config file or vault costs nothing but a line in
``<vault>/.memo/spool/hooks.log``, and an event the vault cannot take now is spooled and
replayed by the next run. ``MEMO_HOOK_DEBUG=1`` prints the outcome lines on stderr.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from .common import _settings, app, state


def _read_stdin(limit: int) -> bytes:
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return b""
        return sys.stdin.buffer.read(limit + 1)
    except (OSError, ValueError):
        return b""


@app.command("hook")
def hook(
    agent: str = typer.Argument(..., metavar="AGENT", help="claude-code, codex, gemini, cursor or copilot."),
    payload: Optional[str] = typer.Argument(None, metavar="[EVENT_JSON]",
                                            help="The event as an argument (Codex notify); default: stdin."),
    event: Optional[str] = typer.Option(None, "--event", help="The event's name, for agents that leave it out of "
                                                              "the payload."),
) -> None:
    """Record an agent's hook event (prompt, session start or end): prints nothing, always exits 0."""
    from ...config import default_vault_root
    from ...runtime import Runtime
    from ...services.capture import MAX_EVENT_BYTES, capture, fallback_vault, remote_sender

    raw = payload.encode("utf-8", "surrogateescape") if payload is not None else _read_stdin(MAX_EVENT_BYTES)
    overrides = {"vault_root": state.vault_root} if state.vault_root is not None else {}
    try:
        settings = _settings(**overrides)
        vault_root = settings.vault_root
    except Exception:  # noqa: BLE001 — a broken config file: spool beside the vault it would name
        settings = None
        vault_root = fallback_vault(state.vault_root or os.environ.get("MEMO_VAULT") or str(default_vault_root()))
        if vault_root is None:  # nowhere safe to keep it: say so on stderr (never stdout), exit 0
            sys.stderr.write(f"memo hook {agent}: the config or vault is unusable (run `memo doctor`); event not kept\n")
            raise typer.Exit(0)

    def open_store():
        if settings is None:
            raise RuntimeError("the config file cannot be read (run `memo doctor`)")
        runtime = Runtime(settings, overrides)
        state.runtime = runtime  # closed with the run
        return runtime.store()

    send = remote_sender(settings) if settings is not None and settings.mode == "remote" else None
    try:
        lines = capture(open_store, vault_root, agent, raw, event, send=send)
    except BaseException as exc:  # noqa: BLE001 — capture never raises; if it ever does, the agent still goes on
        lines = [f"{agent}: internal error: {type(exc).__name__}"]
    if os.environ.get("MEMO_HOOK_DEBUG"):
        for line in lines:
            sys.stderr.write(line + "\n")
    raise typer.Exit(0)
