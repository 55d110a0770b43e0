"""The ``memo`` command line (SPEC §3.2): a thin Typer adapter over the action table and the
services. Human output by default (tables), ``--json`` for machines. Every error the product
raises on purpose exits non-zero with one line on stderr: ``error: <message>`` (under ``--json``
one JSON object ``{"error": …, "errorType": …, "exitCode": …}``).
"""

from __future__ import annotations

import gc
import importlib
import os
import re
import sqlite3
import sys
from typing import Any, Sequence

# pydantic looks for plugins in the entry points of every installed distribution when it builds
# its first model (a walk of every package's metadata: ~0.1 s of each run here); the command
# line uses none. ``PYDANTIC_DISABLE_PLUGINS`` is pydantic's own switch; a value the person set
# is kept.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

# Loading the modules creates a few hundred thousand objects (pydantic's schemas among them);
# the cyclic collector would walk them again and again while they load, for nothing. They live
# as long as the process: once loaded they are frozen (kept out of every later collection), or
# the first collection after loading would walk them all once more (≈ 14 ms of each run).
gc.disable()
try:
    import typer

    from ...domain.errors import MemoError, SessionNotStartedError, full_disk_error
    from ...domain.shell import shell_word
    from ...runtime import RemoteModeError
    from .common import _fail, state
    from .common import app as _app
finally:
    gc.freeze()
    gc.enable()

__all__ = ["COMMAND_MODULES", "app", "load_commands", "main"]

#: The modules that define each top-level command. A run loads only its command's module, so
#: ``memo prompt record`` builds (and imports for) four commands rather than forty; ``memo
#: --help``, a mistyped name and ``app`` itself load them all. ``tests/unit/interfaces`` checks
#: that this table names every command the modules define.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "prompt": ("prompts",), "prompts": ("prompts",),
    "session": ("sessions",),
    "activity": ("reports",), "report": ("reports", "rules"), "invoice": ("invoices",), "project": ("projects_cmd",),
    "import": ("operations",), "reindex": ("operations",), "mcp": ("operations",), "demo": ("operations",),
    "digest": ("operator",), "operator": ("operator",),
    "config": ("config_cmd",),
    "export": ("export",),
    "serve": ("serve",),
    "sync": ("sync_cmd",),
    "doctor": ("doctor",),
    "hook": ("hook",), "hooks": ("hooks_cmd",), "watch": ("watch_cmd",),
}
_ALL_MODULES = tuple(dict.fromkeys(m for modules in COMMAND_MODULES.values() for m in modules))
#: global options that take a value (``--vault-root DIR``)
_VALUED_GLOBALS = ("--vault-root",)


def _command_words(argv: Sequence[str]) -> str | None:
    """The command in ``argv`` as a person names it: ``report timesheet``, ``import claude-code``,
    ``watch`` (the top-level command and its subcommand, when one follows)."""
    top = _command_name(argv)
    if top is None:
        return None
    rest = list(argv[list(argv).index(top) + 1:])
    return f"{top} {rest[0]}" if rest and re.fullmatch(r"[a-z][a-z-]*", rest[0]) else top


def _command_name(argv: Sequence[str]) -> str | None:
    """The top-level command in ``argv`` (after the global options), or None when help is
    asked for first or there is none."""
    args = iter(argv)
    for arg in args:
        if arg in _VALUED_GLOBALS:
            next(args, None)
        elif arg == "--help":
            return None
        elif not arg.startswith("-"):
            return arg
    return None


def load_commands(argv: Sequence[str] | None = None) -> typer.Typer:
    """Register the commands a run of ``memo argv…`` needs (all of them when ``argv`` is None,
    names no known command, or asks for the top-level help) and return the Typer app."""
    name = None if argv is None else _command_name(argv)
    enabled = gc.isenabled()
    gc.disable()
    try:
        for module in COMMAND_MODULES.get(name or "", _ALL_MODULES):
            importlib.import_module(f"{__name__}.{module}")
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
    return _app


def __getattr__(name: str) -> Any:
    if name == "app":  # the whole command line (tests, docs): every command registered
        return load_commands()
    raise AttributeError(name)


def _run_hook(app) -> None:
    """``memo hook …``: whatever happens — a usage error, an unexpected failure — the exit
    status is 0 and stdout stays empty (an agent blocks or alters the prompt on a non-zero
    status, and puts a hook's stdout into the model's context); a message goes to stderr."""
    try:
        app(standalone_mode=False, prog_name="memo")
    except BaseException as exc:  # noqa: BLE001
        if not isinstance(exc, (SystemExit, typer.Exit)):
            sys.stderr.write(f"memo hook: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}\n")
    finally:
        state.close()
    sys.exit(0)


def _remote_daemon() -> str | None:
    """The team daemon's URL (password masked) when this run is in remote mode, else None."""
    try:
        from .common import on_remote

        return on_remote()
    except Exception:  # noqa: BLE001 — only a message depends on it
        return None


#: words a person reaches for under a command group → what does it there
_CREDIT = "an issued invoice is cancelled by a credit note: memo invoice credit NUMBER"
#: the MCP tool's actions (spec-memo's ``memo prompt <action>``) → the command that does each here
_ACTIONS = {"derive-rules": "memo report rules (--save-traps, --promote FILE, --format)",
            "activity-report": "memo activity", "export-story": "memo report story SESSION -o FILE",
            "session": "memo session show [SESSION]", "session-start": "memo session start",
            "session-end": "memo session end", "cancel-handoff": "memo session handoff SESSION --cancel",
            "handoffs": "memo session handoff", "digest": "memo digest", "prompt-detail": "memo prompt show ID"}
_SYNONYMS = {"invoice": dict.fromkeys(("void", "cancel", "delete", "remove", "refund", "revoke", "storno"), _CREDIT),
             **{group: {**{name: f"the {name.replace('-', '_')} action is {command}" for name, command in _ACTIONS.items()},
                        **{name.replace("-", "_"): f"the {name.replace('-', '_')} action is {command}"
                           for name, command in _ACTIONS.items()}}
                for group in ("prompt", "prompts")}}


def _instead(exc: Exception, context: Any) -> str:
    """``; an issued invoice is cancelled by a credit note: memo invoice credit NUMBER`` for a
    command that does not exist under that name ('memo invoice void'); ``; --skip-unpriced is an
    option of memo report invoice`` for an option another command has (the README names it
    beside this one)."""
    if context is None:
        return ""
    option = re.match(r"No such option: (--[\w-]+)", exc.format_message())  # type: ignore[attr-defined]
    if option is not None:
        found = []

        def walk(command: Any, path: str) -> None:
            if any(option.group(1) in getattr(param, "opts", ()) for param in command.params) \
                    and path != context.command_path:
                found.append(path)
            for name, sub in sorted(getattr(command, "commands", {}).items()):
                walk(sub, f"{path} {name}")

        walk(typer.main.get_command(load_commands()), "memo")  # every command: a run loads only its own
        return f"; {option.group(1)} is an option of {', '.join(found[:3])}" if found else ""
    typed = re.match(r"No such command '([^']*)'", exc.format_message())  # type: ignore[attr-defined]
    if typed is None:
        return ""
    hint = _SYNONYMS.get(context.command_path.split()[-1], {}).get(typed.group(1).lower())
    return f"; {hint}" if hint else ""


def main() -> None:
    """Console-script entry point.

    Every expected failure ends as one line ``error: <message>`` on stderr (secrets in the
    message redacted) and a non-zero exit: 1 for a refused request, 2 for a usage error.
    """
    comment = next((n for n, word in enumerate(sys.argv) if n > 1 and word == "#"
                    and not sys.argv[n - 1].startswith("-")), None)
    if comment is not None:
        # a command pasted with its comment into zsh (macOS's shell), where `#` starts no comment
        # unless `setopt interactive_comments`: the digest's "memo session show S  # resume, or: …"
        # failed with "unexpected extra argument(s)". A lone `#` and what follows is the comment —
        # but not an option's value (`--body '#'` records the text #)
        del sys.argv[comment:]
    app = load_commands(sys.argv[1:])
    if _command_name(sys.argv[1:]) == "hook":
        _run_hook(app)
        return
    # What is loaded now lives as long as the process: kept out of the collector's walks, and
    # out of the interpreter's collections at exit (tens of milliseconds on every command).
    gc.freeze()
    try:
        code = app(standalone_mode=False, prog_name="memo")
        if isinstance(code, int) and code:
            sys.exit(code)  # a command that ended with typer.Exit(code)
    except RemoteModeError as exc:
        _fail(str(exc.for_command(_command_words(sys.argv[1:]))), exc=exc)
    except SessionNotStartedError as exc:  # the wire's words name the MCP tool: here, its command
        what = f"No session record for {exc.session_id}" if exc.session_id else "sessionId is required"
        start = f"memo session start {shell_word(exc.session_id)}" if exc.session_id else "memo session start ID"
        _fail(f"{what}: {start} --project PROJECT starts it", exc=exc)
    except MemoError as exc:
        _fail(str(exc), exc=exc)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _fail("aborted", 130)
    except OSError as exc:
        full = full_disk_error(exc, state.settings.vault_root if state.settings else None)
        if full is not None:
            _fail(str(full), exc=full)
        where = f" {exc.filename}" if exc.filename else ""
        _fail(f"Cannot use{where}: {exc.strerror or str(exc) or type(exc).__name__}", exc=exc)
    except sqlite3.DatabaseError as exc:
        root = state.settings.vault_root if state.settings else None
        full = full_disk_error(exc, root)
        if full is not None:
            _fail(str(full), exc=full)
        path = root / ".memo" / "index.sqlite" if root else "the index"
        if root is not None and (path.is_dir() or (path.exists() and not path.is_file())):
            # no reindex mends that: it would open the same path
            _fail(f"The index {path} is a folder or a special file, not memo's index: move it away, then run "
                  f"`memo reindex` to rebuild it", exc=exc)
        _fail(f"The index {path} is damaged ({exc}); run `memo reindex` to rebuild it", exc=exc)
    except Exception as exc:
        # usage errors of the click that typer ships (duck-typed: typer may vendor click)
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.exit(0)
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):
            context = getattr(exc, "ctx", None)
            where = f" ({context.command_path})" if context is not None else ""
            _fail(f"{exc.format_message()}{where}{_instead(exc, context)}; see --help", exc.exit_code, exc=exc)
        daemon = _remote_daemon()
        if daemon is not None and isinstance(exc, (TypeError, KeyError, AttributeError, ValueError, IndexError)):
            # remote mode keeps no vault: what the command worked on is the daemon's answer, of another shape
            _fail(f"Remote daemon {daemon} answered something memo cannot use ({type(exc).__name__} reading it)",
                  exc=exc)
        raise
    finally:
        state.close()  # the index connection closed (its WAL checkpointed), not left to the collector
