"""The ``memo`` command line (SPEC §3.2): a thin Typer adapter over the action table and the
services. Human output by default (tables), ``--json`` for machines. Every error the product
raises on purpose exits non-zero with one line on stderr: ``error: <message>``.
"""

from __future__ import annotations

import sqlite3
import sys

import typer

from ...domain.errors import MemoError
from . import config_cmd, export, operations, operator, prompts, reports, rules, serve, sessions, sync_cmd  # noqa: F401  (register the commands)
from .common import _fail, app, state

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point.

    Every expected failure ends as one line ``error: <message>`` on stderr (secrets in the
    message redacted) and a non-zero exit: 1 for a refused request, 2 for a usage error.
    """
    try:
        code = app(standalone_mode=False, prog_name="memo")
        if isinstance(code, int) and code:
            sys.exit(code)  # a command that ended with typer.Exit(code)
    except MemoError as exc:
        _fail(str(exc))
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _fail("aborted", 130)
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        _fail(f"Cannot use{where}: {exc.strerror or type(exc).__name__}")
    except sqlite3.DatabaseError as exc:
        path = state.settings.vault_root / ".memo" / "index.sqlite" if state.settings else "the index"
        _fail(f"The index {path} is damaged ({exc}); run `memo reindex` to rebuild it")
    except Exception as exc:
        # usage errors of the click that typer ships (duck-typed: typer may vendor click)
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.exit(0)
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            context = getattr(exc, "ctx", None)
            where = f" ({context.command_path})" if context is not None else ""
            hint = "; put --json before the command: memo --json <command>" if "--json" in exc.format_message() else ""
            _fail(f"{exc.format_message()}{where}; see --help{hint}", exc.exit_code)
        raise
