"""``memo`` and ``memo mcp`` in the test process, as a fresh process would run them.

:func:`memo` runs the console-script entry point (``memo_analytics.interfaces.launch.main``: an
agent's plain hook call is recorded there, every other command line goes to
``memo_analytics.interfaces.cli.main``, which holds the one-line ``error: …`` translation users get) inside Typer's ``CliRunner`` isolation:
stdin, stdout, stderr and the environment are swapped for the call, ``sys.argv`` is set, and
``SystemExit`` gives the exit code. The answer has the fields of a finished
``subprocess.run`` (``returncode``, ``stdout``, ``stderr``), so a test reads the same either way.

What a fresh process would not carry over is reset around every call:

- the CLI's module-level ``state`` (global options, the run's store or runtime) starts empty and
  its stores are closed afterwards;
- the current directory (``cwd=``), ``sys.argv`` and the environment (``env=``, and no
  ``MEMO_VAULT`` unless asked for, as the subprocess helper had it) are restored afterwards;
- logging has no handler, as in a fresh interpreter: a warning lands on the call's stderr
  (Python's last-resort handler), not in pytest's log capture;
- warnings follow Python's default filters, as in ``python -m memo_analytics``, not the
  suite's warnings-as-errors;
- an exception escaping ``main()`` is printed as a traceback on the call's stderr with exit
  code 1, as the interpreter would;
- ``gc.freeze()`` is a no-op during the call. ``main()`` freezes everything it loaded because
  the process ends right after; in a test process that lives for thousands of calls each
  freeze would also pin the garbage of every earlier test (measured: +0.37 MB and a doubled
  run time per call over 600 calls).

:func:`mcp_client` connects the SDK's own client, in memory, to the server ``memo mcp`` serves
(``build_server`` on the runtime ``memo --vault-root VAULT mcp`` builds), for tests where the
transport is not what is tested.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import traceback
import warnings
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncIterator, Iterator, Mapping

from typer.testing import CliRunner

__all__ = ["Ran", "environment", "mcp_client", "memo", "tool_calls"]

_RUNNER = CliRunner()


@dataclass
class Ran:
    """What one ``memo`` run gave: the fields of ``subprocess.CompletedProcess``."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    #: the exception that escaped ``main()`` (a crash; its traceback is in ``stderr``), if any
    exception: BaseException | None = field(default=None, repr=False)

    @property
    def code(self) -> int:
        return self.returncode


def _overrides(vault: Path | None, env: Mapping[str, str | None] | None) -> dict[str, str | None]:
    overrides: dict[str, str | None] = dict(env or {})
    if vault is None and "MEMO_VAULT" not in overrides:
        overrides["MEMO_VAULT"] = None  # no developer's (or earlier test's) vault unless asked for
    return overrides


@contextmanager
def environment(overrides: Mapping[str, str | None]) -> Iterator[None]:
    """``os.environ`` with ``overrides`` (None removes a name) for the block, then as it was."""
    def apply(values: Mapping[str, str | None]) -> None:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    saved = {name: os.environ.get(name) for name in overrides}
    try:
        apply(overrides)
        yield
    finally:
        apply(saved)


@contextmanager
def _directory(cwd: Path | str | None) -> Iterator[None]:
    if cwd is None:
        yield
        return
    before = os.getcwd()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


@contextmanager
def _fresh_interpreter() -> Iterator[None]:
    """Logging without handlers, Python's default warning filters, ``gc.freeze`` a no-op."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()
    root.setLevel(logging.WARNING)
    freeze = gc.freeze
    gc.freeze = lambda: None
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()
            for action, category in (("ignore", DeprecationWarning), ("ignore", PendingDeprecationWarning),
                                     ("ignore", ImportWarning), ("ignore", ResourceWarning)):
                warnings.simplefilter(action, category)
            warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
            yield
    finally:
        gc.freeze = freeze
        root.handlers[:] = handlers
        root.setLevel(level)


def _reset_cli_state() -> None:
    """The CLI's module-level state as a fresh import has it (its stores closed)."""
    from memo_analytics.interfaces.cli.common import state

    try:
        state.close()
    finally:
        vars(state).clear()  # the instance holds nothing: every field is the class default again


def memo(*args: str, vault: Path | None = None, env: Mapping[str, str | None] | None = None,
         cwd: Path | str | None = None, check: bool = True, input: str | bytes | None = None) -> Ran:
    """``memo [--vault-root VAULT] ARGS`` in this process, through the console-script entry point.

    ``env`` adds to (None: removes from) the environment for the call; ``cwd`` is the current
    directory for the call; ``input`` is its stdin (empty otherwise). With ``check`` a non-zero
    exit raises ``AssertionError`` with the stderr.
    """
    from memo_analytics.interfaces.launch import main

    argv = [*(["--vault-root", str(vault)] if vault is not None else []), *args]
    code, crash = 0, None
    with _directory(cwd), _RUNNER.isolation(input=input, env=_overrides(vault, env)) as (stdout, stderr, _):
        saved_argv, sys.argv = sys.argv, ["memo", *argv]
        _reset_cli_state()
        try:
            with _fresh_interpreter():
                main()
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:  # sys.exit("text"): the interpreter prints it and exits 1
                sys.stderr.write(f"{exc.code}\n")
                code = 1
        except (KeyboardInterrupt, GeneratorExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - the interpreter would print it and exit 1
            crash = exc
            sys.stderr.write(traceback.format_exc())
            code = 1
        finally:
            sys.argv = saved_argv
            _reset_cli_state()
            sys.stdout.flush()
            sys.stderr.flush()
        ran = Ran(["memo", *argv], code, stdout.getvalue().decode("utf-8"),
                  stderr.getvalue().decode("utf-8", "backslashreplace"), crash)
    if check and ran.returncode != 0:
        raise AssertionError(f"memo {' '.join(args)} failed ({ran.returncode}): {ran.stderr}")
    return ran


@asynccontextmanager
async def mcp_client(vault: Path | None, env: Mapping[str, str | None] | None = None) -> AsyncIterator:
    """The SDK's ``Client`` connected in memory to the server ``memo [--vault-root VAULT] mcp``
    serves: ``build_server`` on the runtime that command builds (from the environment, ``env``
    included, and the config file it names, which stay in place while the client is open);
    the runtime's stores are closed afterwards, as the command's exit closes them."""
    from mcp import Client

    from memo_analytics.config import Settings
    from memo_analytics.interfaces.mcp import build_server
    from memo_analytics.runtime import Runtime

    overrides = {"vault_root": str(vault)} if vault is not None else {}
    with environment(_overrides(vault, env)):
        runtime = Runtime(Settings(**overrides), overrides)
        try:
            async with Client(build_server(runtime)) as client:
                yield client
        finally:
            runtime.close()


def tool_calls(vault: Path | None, calls: list[dict], env: Mapping[str, str | None] | None = None) -> list[tuple[bool, str]]:
    """Each call of the tool ``prompt`` in order, through one in-memory client on the server
    ``memo [--vault-root VAULT] mcp`` serves: ``(is_error, text)`` per call."""
    import asyncio

    async def run() -> list[tuple[bool, str]]:
        answers = []
        async with mcp_client(vault, env) as client:
            for arguments in calls:
                result = await client.call_tool("prompt", arguments)
                answers.append((result.is_error, result.content[0].text))
        return answers

    return asyncio.run(run())
