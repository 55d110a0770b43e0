"""The ``memo`` console script. An agent's hook entry (``memo hook AGENT [--event NAME]
[--vault-root DIR]``, as ``memo hooks install`` writes it) runs on every prompt the person types:
it is recorded here without loading the command line (Typer, rich and the other commands' models:
about a third of its start-up). Every other command line goes to
:func:`memo_analytics.interfaces.cli.main`, and so does a hook call of any other shape.
"""

from __future__ import annotations

import os
import sys
from typing import Sequence

__all__ = ["hook_call", "main"]

# pydantic looks for plugins in the entry points of every installed distribution when it builds
# its first model (a walk of every package's metadata: ~0.1 s of each run); memo uses none.
# ``PYDANTIC_DISABLE_PLUGINS`` is pydantic's own switch; a value the person set is kept.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def hook_call(argv: Sequence[str]) -> tuple[str, str | None, str | None, str | None] | None:
    """``(agent, payload, event, vault root)`` when ``argv`` is a plain hook call:
    ``[--vault-root DIR] hook AGENT [EVENT_JSON] [--event NAME] [--vault-root DIR]`` (the options
    in any order after the agent, each once); None for anything else (``--help``, ``--json``,
    ``--opt=value``, a value that looks like an option), which the command line parses."""
    args = list(argv)
    options: dict[str, str] = {}

    def take_option(at: int) -> bool:
        name = args[at]
        if name not in ("--vault-root", "--event") or name in options or at + 1 >= len(args):
            return False
        value = args[at + 1]
        if not value or value.startswith("-"):
            return False
        options[name] = value
        del args[at:at + 2]
        return True

    if args[:1] == ["--vault-root"] and not take_option(0):
        return None
    if len(args) < 2 or args[0] != "hook" or not args[1] or args[1].startswith("-"):
        return None
    agent, payload = args[1], None
    del args[:2]
    while args:
        if args[0].startswith("-"):
            if not take_option(0):
                return None
        elif payload is None:
            payload = args.pop(0)
        else:
            return None
    vault_root = options.get("--vault-root") or os.environ.get("MEMO_VAULT") or None
    return agent, payload, options.get("--event"), vault_root


def main() -> None:
    """Entry point of ``memo`` (and ``python -m memo_analytics``)."""
    call = hook_call(sys.argv[1:])
    if call is None:
        from .cli import main as cli_main

        cli_main()
        return
    try:
        import gc
        import importlib

        gc.disable()  # what loads now lives as long as the process: not walked by the collector
        try:
            from ..runtime import run_hook

            importlib.import_module("memo_analytics.services.capture")  # and what the hook runs
        finally:
            gc.freeze()
            gc.enable()
        lines = run_hook(*call)
        if os.environ.get("MEMO_HOOK_DEBUG"):
            for line in lines:
                sys.stderr.write(line + "\n")
    except BaseException as exc:  # noqa: BLE001 — whatever happens, the agent goes on: exit 0, nothing more on stdout
        if not isinstance(exc, SystemExit):
            sys.stderr.write(f"memo hook: {type(exc).__name__}\n")
    sys.exit(0)
