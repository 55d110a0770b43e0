"""Shared pieces of the ``memo`` command line: the Typer apps, output, errors."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import typer
import typer.main
from typer.core import TyperGroup
from pydantic import ValidationError
from pydantic.alias_generators import to_camel
from rich.console import Console
from rich.segment import Segment

from ...services.requests import validation_problem
from ...config import ENV_NAMES, Settings, config_key_text, config_path, env_name, refused_value
from ...domain.errors import InvalidFieldError, MemoError
from ...domain.shell import shell_word
from ...domain.wire import dumps
from ...runtime import Runtime
from ...services.store import VaultStore
from ...vault.redact import redact_secrets

#: What a terminal would act on rather than show: escape sequences (CSI ``ESC [ … final``,
#: OSC ``ESC ] … BEL|ST``, DCS/SOS/PM/APC ``… ST``, two-character ``ESC x``), their 8-bit
#: C1 forms, every other C0 and C1 control character except tab and newline, and the
#: bidirectional overrides that make a terminal show text in another order than it is.
_TERMINAL_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b\][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[PX^_][^\x1b\x9c\n]*(?:\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]?"
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
    r"|[\u202a-\u202e\u2066-\u2069]"  # bidirectional embeddings, overrides and isolates: text shown reversed
)


def terminal_text(text: object) -> str:
    """``text`` fit for a terminal: escape sequences and control characters removed (C0
    except ``\\n`` and ``\\t``, DEL, C1), so stored text — a prompt, a summary, a client
    name, a file name in an error — cannot clear the screen, set the window title, write the
    clipboard or move the cursor. ``--json`` output is not passed through this (JSON
    escapes control characters itself)."""
    return _TERMINAL_CONTROL.sub("", str(text))


class _TerminalConsole(Console):
    """A rich console that prints stored text without its control characters: strings are
    cleaned before rich measures and lays them out (tables keep their widths), and every
    text segment again on its way out (text objects built elsewhere); rich's own styling
    and cursor control (progress bars) are untouched."""

    #: into a pipe or a file a line of text stays one line (grep, scripts); tables are laid out
    #: at the console's width as ever
    lines_unwrapped = False

    def render_str(self, text: str, **kwargs: Any):  # type: ignore[override]
        return super().render_str(terminal_text(text), **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        if self.lines_unwrapped and objects and all(isinstance(o, str) for o in objects):
            kwargs.setdefault("soft_wrap", True)
        super().print(*objects, **kwargs)

    def render(self, renderable: Any, options: Any = None):  # type: ignore[override]
        for segment in super().render(renderable, options):
            if segment.control or not _TERMINAL_CONTROL.search(segment.text):
                yield segment
            else:
                yield Segment(terminal_text(segment.text), segment.style, segment.control)


#: What a line on stderr starts with → its key under ``--json`` (any other line: ``message``).
_STDERR_KEYS = ("note", "warning", "skipped", "error")


def _told_as(line: str) -> str:
    """How an import's line is said on stderr: ``note`` for a line read with a byte replaced
    (nothing left out), else ``skipped``."""
    from ...services.importers.lines import is_replacement_note

    return "note" if is_replacement_note(line) else "skipped"


class _ErrorConsole(_TerminalConsole):
    """stderr. Under ``--json`` each line said is one JSON object, as a refused command's error
    is: ``note: …`` → ``{"note": "…"}``, likewise ``warning``, ``skipped`` and ``error``, any
    other text ``{"message": "…"}`` — a script reads every stderr line as JSON. Progress bars
    and other renderables are left to rich."""

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        if len(objects) == 1 and isinstance(objects[0], str) and _json_output():
            kind, sep, rest = objects[0].partition(": ")
            body = {kind: rest} if sep and kind in _STDERR_KEYS else {"message": objects[0]}
            sys.stderr.write(json.dumps({k: terminal_text(v) for k, v in body.items()}, ensure_ascii=False) + "\n")
            return
        super().print(*objects, **kwargs)


# markup and emoji off: stored text ("list[int]", "[/]", ":smile:") is printed as it is
out = _TerminalConsole(highlight=False, markup=False, emoji=False, width=None if sys.stdout.isatty() else 160)
out.lines_unwrapped = not sys.stdout.isatty()
err = _ErrorConsole(stderr=True, highlight=False, markup=False, emoji=False, soft_wrap=True)

_VAULT_ROOT_HELP = "Vault folder (default ~/.memo/vault; env MEMO_VAULT)."
_JSON_HELP = "Print machine-readable JSON instead of tables."


class _MemoGroup(TyperGroup):
    """The ``memo`` group: the global options ``--json`` and ``--vault-root`` are also options
    of every command below it, so ``memo activity --all --json`` and ``memo prompt list
    --vault-root V`` work like ``memo --json …`` and ``memo --vault-root V …``. Click parses
    them in their place: a value that only looks like an option (``--body --json``, after
    ``--``) stays a value."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        options = _command_global_options()
        for command in self.commands.values():
            _add_global_options(command, options)
            _one_value_once(command)


def _one_value_once(command: Any) -> None:
    """An option of one value given twice is refused (``memo activity --project a --project
    b`` reported b alone, without a word: Click keeps the last); repeatable options, flags and
    the global ``--vault-root`` (the last wins, as before the command) are not concerned."""
    for sub in getattr(command, "commands", {}).values():
        _one_value_once(sub)
    if getattr(command, "commands", None):
        return
    make_parser = command.make_parser

    def checked_parser(ctx: Any) -> Any:
        parser = make_parser(ctx)
        parse = parser.parse_args

        def parse_args(args: list[str]) -> Any:
            opts, rest, order = parse(args=args)
            if not ctx.resilient_parsing:
                for param in dict.fromkeys(order):
                    times = sum(1 for given in order if given is param)
                    if times > 1 and getattr(param, "param_type_name", "") == "option" and param.expose_value \
                            and not (param.multiple or param.count or param.is_flag):
                        also = "; --all takes every project" if param.name == "project" else ""
                        raise typer.BadParameter(f"given {times} times: it takes one value{also}", ctx=ctx,
                                                 param=param)
            return opts, rest, order

        parser.parse_args = parse_args
        return parser

    command.make_parser = checked_parser


def _command_global_options() -> list[Any]:
    """``--vault-root`` and ``--json`` as options of a command (built by Typer, so its help
    shows them): given there they apply as if given before the command."""
    helper = typer.Typer(add_completion=False)

    @helper.command()
    def _options(
        late_vault_root: Optional[str] = typer.Option(None, "--vault-root", help=_VAULT_ROOT_HELP + " Also before the command."),
        late_json: bool = typer.Option(False, "--json", help=_JSON_HELP + " Also before the command."),
    ) -> None: ...

    options = list(typer.main.get_command(helper).params)
    for option in options:
        option.expose_value = False  # the command's own function never sees them
        option.callback = _late_vault_root if option.name == "late_vault_root" else _late_json
    return options


def _add_global_options(command: Any, options: list[Any]) -> None:
    own = {opt for param in command.params for opt in getattr(param, "opts", ())}
    command.params.extend(option for option in options if not own & set(option.opts))  # `config show --json` keeps its own
    for sub in getattr(command, "commands", {}).values():
        _add_global_options(sub, options)


def _late_json(ctx: Any, param: Any, value: bool) -> bool:
    if not ctx.resilient_parsing:
        if value:
            state.json = True
        if not getattr(ctx.command, "commands", None):
            # the command's own options are parsed: a `--json` in argv not taken as the option was
            # another option's value (`--client --json`), and no longer switches stderr to JSON
            state.json_parsed = True
    return value


def _late_vault_root(ctx: Any, param: Any, value: Optional[str]) -> Optional[str]:
    if value is not None and not ctx.resilient_parsing:  # the last --vault-root given wins, as before the command
        _apply_globals(value, state.json, ctx.find_root().invoked_subcommand)
    return value


app = typer.Typer(
    cls=_MemoGroup,
    name="memo",
    help="Keep AI coding agents' turns and work sessions in a Markdown vault outside your repositories; "
    "search them, report billable hours, print timesheets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
prompt_app = typer.Typer(help="Record, list, search and get prompt turns.", no_args_is_help=True)
session_app = typer.Typer(help="Open and close work sessions.", no_args_is_help=True)
report_app = typer.Typer(help="Printable reports (PDF).", no_args_is_help=True)
import_app = typer.Typer(help="Import real agent transcripts as sessions and turns.", no_args_is_help=True)
app.add_typer(prompt_app, name="prompt")
app.add_typer(prompt_app, name="prompts", help="Alias of `memo prompt`.")
app.add_typer(session_app, name="session")
app.add_typer(report_app, name="report")
app.add_typer(import_app, name="import")


class State:
    """What one ``memo`` run works with: the global options and its :class:`Runtime`."""

    json: bool = False
    #: the command's options are parsed: ``json`` says all (before, :func:`_json_asked` guesses from argv)
    json_parsed: bool = False
    #: ``--vault-root`` (or ``MEMO_VAULT``) as given; ``memo config`` builds its settings itself
    vault_root: str | None = None
    runtime: Runtime | None = None
    #: why the config file could not be read, for a command that goes on without it (memo hooks status)
    config_error: MemoError | None = None
    #: the zone a command's ``--tz`` names: its times are shown in it too (None: the configured zone)
    shown_zone: str | None = None
    #: whether this run opened the vault (its end then says a move cut short, :func:`_say_a_move_cut_short`)
    store_used: bool = False

    @property
    def settings(self) -> Settings | None:
        return self.runtime.settings if self.runtime is not None else None

    def use(self, settings: Settings | None, overrides: dict[str, Any] | None = None) -> None:
        """Work with ``settings`` from now on (None: none yet); the stores opened so far are closed."""
        self.close()
        self.runtime = Runtime(settings, overrides) if settings is not None else None

    @property
    def store(self) -> VaultStore:
        """The vault of this run, opened on first use.

        Raises
        ------
        RemoteModeError
            In remote mode (SPEC §2.7: this machine keeps no vault).
        """
        assert self.runtime is not None
        store = self.runtime.store()
        if store.on_repair is None:
            # the index was brought in line with the files on open: say so, on stderr
            store.on_repair = lambda line: err.print(f"note: {line}")
        self.store_used = True
        return store

    def close(self) -> None:
        """Close the stores this run opened (their SQLite connections), if any — first saying a
        ``memo project rename|merge`` cut short in the vault it used (still so after this run)."""
        if self.runtime is not None and self.store_used:
            self.store_used = False
            try:
                _say_a_move_cut_short(self.runtime.store())
            except MemoError:
                pass
        if self.runtime is not None:
            self.runtime.close()


state = State()


def _say_a_move_cut_short(store: Any) -> None:
    """A ``memo project rename|merge`` killed in this vault, said at the end of every command that
    used the vault until it is run again (the run that finishes it says nothing): its records
    are in both projects meanwhile."""
    from ...services.project_move import cut_short_note, move_cut_short

    try:
        under_way = move_cut_short(store)
    except (OSError, ValueError):
        return
    if under_way:
        err.print(f"warning: {cut_short_note(under_way)}")


@app.callback()
def _global(
    ctx: typer.Context,
    vault_root: Optional[str] = typer.Option(None, "--vault-root", envvar="MEMO_VAULT", help=_VAULT_ROOT_HELP),
    json_output: bool = typer.Option(False, "--json", help=_JSON_HELP),
    version: bool = typer.Option(False, "--version", is_eager=True, callback=lambda value: _version(value),
                                 help="Print memo's version and exit."),
) -> None:
    """Global options (also accepted after the command: ``memo activity --all --json``)."""
    _CONFIG_SAID.clear()  # a new run (one process runs many in tests and the operator)
    _apply_globals(vault_root, json_output, ctx.invoked_subcommand)


def _version(value: bool) -> None:
    """``memo --version``: ``memo 0.1.0`` on stdout (``{"version": "0.1.0"}`` with ``--json``), and exit 0."""
    if value:
        from ... import __version__

        sys.stdout.write(json.dumps({"version": __version__}) + "\n" if _json_asked(sys.argv[1:])
                         else f"memo {__version__}\n")
        raise typer.Exit()


def _apply_globals(vault_root: Optional[str], json_output: bool, command: Optional[str]) -> None:
    """Take the global options of this run (again, when the command repeats them)."""
    if vault_root is not None and vault_root.startswith("-"):  # `memo --vault-root --json …`: the value is missing
        raise MemoError(f"Invalid vaultRoot: {vault_root!r} is an option, not a folder; give the folder right "
                        "after --vault-root")
    state.json = json_output
    state.json_parsed = False
    state.vault_root = vault_root
    state.config_error = None
    state.shown_zone = None
    state.use(None)
    if command in ("config", "doctor", "hook"):
        # memo config reads (and repairs) the config file itself, valid or not; memo doctor checks it; a
        # hook must record (or spool) whatever the config file says
        return
    _note_missing_config()
    overrides = {"vault_root": vault_root} if vault_root is not None else {}
    if command == "hooks":  # memo hooks status says what the agents run also while the config is broken
        try:
            state.use(_settings(**overrides), overrides)
        except MemoError as exc:
            state.config_error = exc
        return
    state.use(_settings(**overrides), overrides)


_CONFIG_SAID: set[str] = set()


def _note_missing_config() -> None:
    """Say (once a run) that ``MEMO_CONFIG`` names a file that is not there: its defaults applied
    without a word — no client's terms, rounding or zone (a notebook had removed its own config
    and left the variable set)."""
    given = os.environ.get("MEMO_CONFIG")
    if not given or not given.strip():
        return

    path = config_path()
    if not path.exists() and str(path) not in _CONFIG_SAID:
        _CONFIG_SAID.add(str(path))
        err.print(_safe(f"note: MEMO_CONFIG names {path}, which does not exist: no config file is read (defaults "
                        "apply; memo config set creates it)"))


def _emit(value: Any, human: Callable[[Any], None]) -> None:
    if state.json:
        sys.stdout.write(dumps(value) + "\n")
    else:
        human(value)


def _refuse_missing_vault() -> None:
    """A read of a vault that is not there is refused (a mistyped ``--vault-root`` or
    ``MEMO_VAULT`` printed an empty report, "Nothing needs you now" or an empty timesheet, exit 0).

    Raises
    ------
    MemoError
        ``No vault at …``, and where a vault comes from."""
    if on_remote() is None and not state.store.exists:
        raise MemoError(f"No vault at {state.store.root}: nothing is recorded or imported there (check --vault-root "
                        "and MEMO_VAULT; an agent's hooks or `memo import auto` fill one)")


def _scope_line(projects: list[str] | None, explicit: bool) -> str:
    where = f" · the team daemon at {on_remote()}" if on_remote() is not None else ""
    if projects is None:
        return f"Projects: all{where}"
    note = "" if explicit else " (the current repository; --all for every project)"
    return f"Projects: {', '.join(projects)}{note}{where}"


def on_remote() -> str | None:
    """The team daemon's URL (without a password) when this machine is in remote mode
    (SPEC §2.7: it keeps no vault), else None."""
    settings = state.settings
    if settings is None or settings.mode != "remote":
        return None
    from ...vault.redact import mask_url

    return mask_url(settings.remote.url or "(remote.url)")


def read_scope(project: str | None, cross_project: bool, cwd: str | None) -> list[str] | None:
    """The projects a read covers (None: all), as :meth:`VaultStore.scope` — in remote mode
    without a vault: the explicit project, else the repository of ``cwd``, else all (the
    daemon's own ``MEMO_PROJECT`` is not known here)."""
    if on_remote() is None:
        return state.store.scope(project, cross_project, cwd)
    from ...services.store import projects_read

    return projects_read(project, cross_project, cwd)


def answer_of(action: str, request: Any, here: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The answer of the tool action ``action`` to ``request``: ``here()`` on a machine that
    keeps its own vault; in remote mode the team daemon's (the call ``memo mcp`` sends it,
    ``POST /api/actions/{action}``, the caller's repository resolved here, SPEC §2.7).

    Raises
    ------
    MemoError
        The daemon refused the call (its one-line message) or could not be reached.
    """
    if on_remote() is None:
        return here()
    from ...actions import PromptToolInput
    from ...services import remote

    if "tz" in type(request).model_fields and request.tz is None:
        # date-only bounds are days of this machine's zone, as the times the tables show (not the daemon's)
        request = request.model_copy(update={"tz": _zone_label()})
    arguments = request.model_dump(by_alias=True, exclude_none=True)  # camelCase, a hand-off's fields too
    if "project" in arguments:
        arguments["projectId"] = arguments.pop("project")
    # the tool's fields; what only this machine's own writes use (source, extra) is not sent
    fields = {field.alias or name for name, field in PromptToolInput.model_fields.items()}
    answer = remote.call(state.settings, {"action": action, **{k: v for k, v in arguments.items() if k in fields}})
    return remote.checked_answer(state.settings, action, answer)  # what the tables and --json callers rely on


def _check_scope(project: Optional[str], all_projects: bool) -> None:
    if project and all_projects:
        raise InvalidFieldError("project", "--project and --all exclude each other")


def note_new_client(client: str) -> None:
    """Say on stderr that ``client`` was new to the config and the vault when it was written."""
    err.print(_safe(f"note: {client!r} is a new client: no [clients] entry of the config and no other session has it "
                    "(any case); check the spelling, and give it billing terms to invoice it"))


def on_path_command() -> str:
    """The command that puts this memo on the PATH an agent's hooks run with (a repository's
    hooks name ``memo``, no path of one machine): a link in ``~/.local/bin``."""
    here = Path(sys.executable).with_name("memo")
    return f"mkdir -p ~/.local/bin && ln -sf {shell_word(str(here))} ~/.local/bin/memo  # on the PATH of your shell"


def _safe(text: object) -> str:
    """Stored text for a terminal (:func:`terminal_text`): escape sequences that could set
    the window title, clear the screen or write the clipboard, and every other control
    character but tab and newline, are removed."""
    return terminal_text(text)


def _short(text: str | None, width: int = 70) -> str:
    text = " ".join(_safe(text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


#: Columns beside the id a listing needs at least (times, project, a few words); below, it is a list.
_BESIDE_ID = 64


def print_listing(title: str, columns: tuple[str, ...], id_column: str, rows: list[tuple[str, ...]]) -> None:
    """A listing whose ``id_column`` holds ids a person copies into the next command (`memo
    prompt get ID`): a table where the ids fit whole on one line; on a console too narrow for
    that, each row as its id on a line of its own and the other cells on the next (an id
    folded inside a cell could not be copied)."""
    from rich.table import Table

    at = columns.index(id_column)
    widest = max((len(row[at]) for row in rows), default=0)
    if out.width >= widest + _BESIDE_ID:
        table = Table(title=title)
        for column in columns:
            if column == id_column:
                table.add_column(column, no_wrap=True, overflow="ignore", min_width=max(widest, len(column)))
            else:
                table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*row)
        out.print(table)
        return
    out.print(title)
    for row in rows:
        out.print(row[at], soft_wrap=True, highlight=False)
        out.print("  " + " · ".join(cell for n, cell in enumerate(row) if n != at and cell), highlight=False)


#: How often a progress bar is redrawn at most.
_REDRAW_SECONDS = 0.1


class _progress:
    """A progress bar on a terminal, redrawn by the work itself (at most every
    :data:`_REDRAW_SECONDS`), never by a thread of its own: an import forks its worker processes
    only in a process of one thread (a lock another thread holds at the fork would stay held in
    the worker), so a refresh thread would keep a first import at a terminal on one core.
    Where stderr is no terminal nothing is drawn (and rich's progress module is not loaded)."""

    def __init__(self, label: str, total: int) -> None:
        self.progress = None
        if err.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                     console=err, transient=True, auto_refresh=False)
        self.total = total

    def __enter__(self) -> Callable[[], None]:
        import time

        progress = self.progress
        if progress is None:
            return lambda: None
        progress.start()
        task = progress.add_task("", total=self.total)
        drawn = [0.0]

        def advance() -> None:
            progress.advance(task)
            if time.monotonic() - drawn[0] >= _REDRAW_SECONDS:
                drawn[0] = time.monotonic()
                progress.refresh()

        return advance

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()



DEMO_MARKER = ".memo-demo"


def _validation_field(exc: ValidationError) -> tuple[str, str]:
    """``(field, reason)`` of a request's first refused field (wire name)."""
    return validation_problem(exc)


def _validation_message(exc: ValidationError) -> str:
    return "Invalid {}: {}".format(*_validation_field(exc))


#: Options that name something (a filter, a bound, an id): given empty, they are refused, not
#: read as "not given" (``--since ''`` ran with no bound, ``--client ''`` covered every client).
_NOT_BLANK = ("since", "until", "tz", "client", "project", "session_id", "task_slug", "ide", "model", "agent",
              "to_project", "owner")


def _build(request_model: type, /, **fields: Any):
    """``request_model`` of ``fields`` (a command's options), refusing with the field named: a
    value the model refuses, or an empty one of :data:`_NOT_BLANK`."""
    for name in _NOT_BLANK:
        value = fields.get(name)
        if isinstance(value, str) and not value.strip():
            raise InvalidFieldError(to_camel(name), "is empty: give a value, or leave the option out")
    try:
        return request_model(**fields)
    except ValidationError as exc:
        raise InvalidFieldError(*_validation_field(exc)) from None


def _grouped(amount: object) -> str:
    """A money amount (decimal text, in its currency's minor unit) with thousands grouped, as the
    PDFs print it: ``95800`` → ``95,800``, ``1005.41`` → ``1,005.41``; other text as it is."""
    from decimal import Decimal, InvalidOperation

    try:
        return f"{Decimal(str(amount)):,}"
    except (InvalidOperation, ValueError):
        return str(amount)


def _zone():
    """The zone a person's tables and lines show times in: the command's ``--tz``, else the
    configured ``timezone``, else the machine's (the zone of every report's dates)."""
    from ...domain.clock import resolve_zone

    return resolve_zone(state.shown_zone or (state.settings.timezone if state.settings else None))


def _zone_label() -> str:
    """The name of :func:`_zone` (``Europe/Berlin``)."""
    from ...domain.clock import zone_name

    return zone_name(_zone())


def _local(instant: str | None, seconds: bool = False) -> str:
    """A stored UTC instant (ISO text) as a person reads it, in :func:`_zone` (``2026-03-02
    10:00``); ``open`` for None."""
    if not instant:
        return "open"
    from ...domain.clock import from_iso

    return from_iso(instant).astimezone(_zone()).strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")


def _settings(**fields: Any) -> Settings:
    """The settings of a command; a refused value is one line naming the key, where it came
    from (the ``MEMO_*`` variable or the config file) and how to repair the file."""
    try:
        return Settings(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(part) for part in first["loc"]] or ["setting"]
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", loc[0]).lower()
        field = key = config_key_text([to_camel(loc[0]), *loc[1:]])
        env = env_name(snake)
        unknown = first["type"] == "extra_forbidden"  # no value can make it right: it goes
        if env is None and snake not in fields and config_path().is_file():
            word = shell_word(key)  # pasted as printed: clients."Acme Corp".x lost its quotes to the shell
            source = (f"{config_path()}; repair: memo config unset {word}" if unknown else
                      f"{config_path()}; repair: memo config set {word} VALUE, or memo config unset {word}")
        else:
            source = env or ENV_NAMES.get(snake, (f"MEMO_{snake.upper()}",))[0]
        said = "not a key memo knows (a misspelling, or a key of another section?)" if unknown else \
            first["msg"].removeprefix("Value error, ") + refused_value(key, first)
        raise MemoError(f"Invalid {field} ({source}): {said}") from None
    except InvalidFieldError as exc:  # refused by a rule of the field itself: name the variable or file that set it
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", exc.field).lower()
        env = env_name(snake)
        if env is None and snake not in fields and snake in Settings.model_fields and config_path().is_file():
            word = shell_word(exc.field)
            raise MemoError(f"Invalid {exc.field} ({config_path()}; repair: memo config set {word} VALUE, or memo "
                            f"config unset {word}): {exc.reason}") from None
        if env is None or env in str(exc):
            raise
        raise MemoError(f"Invalid {exc.field} ({env}): {exc.reason}") from None


def _fail(message: str, code: int = 1, exc: BaseException | None = None) -> None:
    """End the run with exit status ``code`` and one line on stderr: ``error: <message>``, or
    under ``--json`` one JSON object ``{"error": message, "errorType": name, "exitCode": code}``
    (plus ``field`` when the error names one, as an invalid date or id does) — secrets in the
    message redacted either way."""
    message = redact_secrets(message)[0]
    if _json_output():
        body: dict[str, Any] = {"error": message, "errorType": type(exc).__name__ if exc is not None else "Error",
                                "exitCode": code}
        field = getattr(exc, "field", None)
        param = getattr(exc, "param", None)  # a usage error of the parser names its option or argument
        if not isinstance(field, str) and isinstance(getattr(param, "name", None), str):
            field = to_camel(param.name)
        if isinstance(field, str):
            body["field"] = field
        sys.stderr.write(json.dumps(body, ensure_ascii=False) + "\n")  # one line, as the plain error
    else:
        err.print(f"error: {message}")
    sys.exit(code)


def _json_output() -> bool:
    """Whether this run speaks JSON on stderr: ``--json`` as parsed, or before the command's options
    are parsed (an error of the config, of the vault root) ``--json`` among the words of argv."""
    return state.json or (not state.json_parsed and _json_asked(sys.argv[1:]))


def _json_asked(argv: Sequence[str]) -> bool:
    """``--json`` among the options of ``argv`` (before any ``--``): for an error raised before
    the parser reached it (a command's ``--json`` comes after the settings are loaded)."""
    head = list(argv[:argv.index("--")]) if "--" in argv else list(argv)
    return "--json" in head


def left_off_note(left: dict) -> None:
    """One stderr note of the period's billable sessions an invoice did not bill (``leftOff``:
    ``alreadyInvoiced``, ``zeroMinutes``, ``open``) and of the turns its AI cost leaves out
    (``unpricedTurns``: models without a price), when there are any: nothing is left off without
    a word — the AI cost of a session of 0 minutes included."""
    zero = left.get("zeroMinutes") or 0
    parts = [f"{zero} session{'s' if zero != 1 else ''} of 0 minutes, with {'their' if zero != 1 else 'its'} AI cost "
             f"(--zero-minutes bills {'them' if zero != 1 else 'it'})" if zero else "",
             f"{left['open']} still open (billed once ended)" if left.get("open") else "",
             f"{left['alreadyInvoiced']} already invoiced (memo invoice list)" if left.get("alreadyInvoiced") else ""]
    if any(parts):
        err.print("note: billable sessions of the period left off: " + "; ".join(p for p in parts if p))
    if left.get("unpricedTurns"):  # turns, not sessions: a note of its own
        turns = left["unpricedTurns"]
        err.print(f"note: the AI cost leaves out {turns} turn{'s' if turns != 1 else ''} of models without a price "
                  "(memo activity names them)")


def say_duplicate_invoices(result: dict) -> None:
    """A warning for each document of a vault-git sync's ``duplicateInvoices`` and
    ``duplicateCreditNotes``, and for each of its ``invoicedSessionsChanged``."""
    if result.get("recovered"):
        err.print(_safe(f"note: {result['recovered']}"))
    here = set(result.get("renamedHere", []))
    for ref in [*result.get("duplicateInvoices", []), *result.get("duplicateCreditNotes", [])]:
        if ref in here:  # this machine's own document lost its number's file to the other machine's
            number = ref.split(".duplicate-")[0]
            kind = "invoice" if ref in result.get("duplicateInvoices", []) else "credit note"
            err.print(_safe(f"warning: number {number} was also given on another machine, before this one: its "
                            f"document keeps the file invoices/{number}.pdf; the {kind} issued here is now {ref} "
                            f"(invoices/{ref}.pdf) and stays issued"
                            + (f": if it went out as {number}, cancel it with memo invoice credit {ref} and bill its "
                               f"sessions again" if kind == "invoice" else
                               f": tell its recipient that number {number} was given twice (memo invoice show {ref})")))
    for ref in result.get("duplicateInvoices", []):
        if ref in here:
            continue
        number = ref.split(".duplicate-")[0]
        err.print(_safe(f"warning: invoice number {number} was issued on two machines; both stay issued, the later "
                        f"as {ref} (its sessions stay invoiced): cancel one with memo invoice credit {ref} (or "
                        f"{number}) and bill its sessions again"))
    from ...operator.digest import back_as_invoiced

    for item in result.get("invoicedSessionsChanged", []):
        err.print(_safe(f"warning: the pull changed session {item['sessionId']} ({item['project']}), billed on invoice "
                        f"{item['invoice']}: its {', '.join(item['fields'])} now differ from the invoice's, and "
                        f"reports show the record's (they still bill the invoice's minutes); put it back "
                        f"({back_as_invoiced(item)}) or cancel the invoice (memo invoice credit {item['invoice']}) and "
                        "bill it again"))
    for item in result.get("termsDiffer", []):
        key = config_key_text(["clients", item["client"]])
        err.print(_safe(f"warning: invoice {item['invoice']}, issued on another machine, billed {item['client']} on "
                        f"other terms than this machine's config: {'; '.join(item['differences'])}; reports and "
                        f"invoices here come to other amounts until [{key}] is the same as that machine's (billing "
                        f"terms are each machine's config: memo config show there, "
                        f"memo config set {shell_word(key)} … here)"))
    root = state.settings.vault_root if state.settings else "~/.memo/vault"
    for path in result.get("issuedChangedHere", []):
        err.print(_safe(f"warning: {path} was changed or deleted since it was issued; it is not committed (an issued "
                        f"document never changes: the other machines would refuse it and stop syncing); put it back: "
                        f"git -C {shell_word(str(root))} checkout HEAD -- {shell_word(path)} (to bill otherwise: "
                        f"memo invoice credit, then issue again)"))
    for item in result.get("strayTurns", []):
        move = (f"memo project merge {shell_word(item['project'])} {shell_word(item['sessionProject'])}"
                if not item["projectSessions"] else
                f"memo project merge {shell_word(item['project'])} {shell_word(item['sessionProject'])} (it moves "
                f"the {item['projectSessions']} session{'s' if item['projectSessions'] != 1 else ''} of "
                f"{item['project']} too)")
        err.print(_safe(f"warning: {item['turns']} turn{'s' if item['turns'] != 1 else ''} of session "
                        f"{item['sessionId']} stayed in project {item['project']}, while the session is in "
                        f"{item['sessionProject']} now (renamed on another machine meanwhile): they count apart from "
                        f"it; {move}"))
    for item in result.get("invoicedDeletedHere", []):
        err.print(_safe(f"warning: {item['path']} was deleted, and invoice {item['invoice']} bills that session; the "
                        f"deletion is not committed (every machine's reports would lose what the invoice billed); put "
                        f"it back: git -C {shell_word(str(root))} checkout HEAD -- {shell_word(item['path'])} (to bill "
                        f"otherwise: memo invoice credit {item['invoice']}, then delete it)"))
    for ref in result.get("duplicateCreditNotes", []):
        if ref in here:
            continue
        number = ref.split(".duplicate-")[0]
        err.print(_safe(f"warning: number {number} was given to two documents on two machines, the later a credit "
                        f"note now kept as {ref}; both stand (a credit note cancels its invoice and is never "
                        f"cancelled itself): tell its recipient that it carries the number {number} twice "
                        f"(memo invoice show {ref})"))

