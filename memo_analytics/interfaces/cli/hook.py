"""``memo hook AGENT``: the command an agent's hook entry runs (``memo hooks install``
writes those entries). It reads the event from stdin — or, for Codex's legacy ``notify``
program, from its last argument — and records it (:func:`memo_analytics.runtime.run_hook`).

It never gets in the agent's way: nothing is printed on stdout (Claude Code, Codex and Gemini
CLI put a hook's stdout into the model's context) but the hand-off a session start claims, as
the agent's ``SessionStart`` JSON (SPEC §2.5); the exit status is always 0 (a non-zero status can
block the prompt), a broken config file or vault costs nothing but a line in
``hooks.log`` beside the spool, and an event the vault cannot take now is spooled and
replayed by the next run. ``MEMO_HOOK_DEBUG=1`` prints the outcome lines on stderr.

The entries ``memo hooks install`` writes are run by :mod:`memo_analytics.interfaces.launch`
without loading the command line at all; this command serves the other spellings.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from .common import app, state


@app.command("hook")
def hook(
    agent: str = typer.Argument(..., metavar="AGENT", help="claude-code, codex, gemini, cursor or copilot."),
    payload: Optional[str] = typer.Argument(None, metavar="[EVENT_JSON]",
                                            help="The event as an argument (Codex notify); default: stdin."),
    event: Optional[str] = typer.Option(None, "--event", help="The event's name, for agents that leave it out of "
                                                              "the payload."),
) -> None:
    """Record an agent's hook event (prompt, session start or end): always exits 0; prints nothing
    but, on a new session's start, the hand-off it takes (for the agent to read)."""
    from ...runtime import run_hook

    lines = run_hook(agent, payload, event, state.vault_root)
    if os.environ.get("MEMO_HOOK_DEBUG"):
        for line in lines:
            sys.stderr.write(line + "\n")
    raise typer.Exit(0)
