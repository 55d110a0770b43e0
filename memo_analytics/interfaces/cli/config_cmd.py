"""``memo config show|set|unset``: the TOML config file (``$MEMO_CONFIG``, else
``~/.memo/config.toml``) and the effective settings.

These commands never need valid settings: they are how a broken config file is repaired.

- ``show`` prints every effective setting with where its value comes from: ``default``,
  ``config file``, ``environment (MEMO_…)`` or ``command line (--vault-root)``. Secrets are
  masked: every token as ``***``, the password (or lone user name) of a URL and every query
  value as ``***`` (``https://ana:***@team.example/``), the path of a URL that is itself a
  secret (Slack or Discord webhooks) and every path of a webhook key (``operator.webhookUrl``:
  ``https://hooks.example/***``, its path being its secret) as ``/***``. A refused value (of the file, the
  environment or the command line) is left out — the next source or the default applies —
  and listed with its reason.
- ``set KEY VALUE`` takes a dotted camelCase key as in the file (``vaultGit.enabled``,
  ``hybrid.remoteUrl``, ``operator.stalledMinutes``, ``clients."Acme Corp".hourlyRate``) and
  a TOML value (``true``, ``42``, ``"text"``, ``["a", "b"]``); a value that is not TOML is
  taken as a string. The would-be file is validated as settings (without the environment;
  relative paths against the config file's folder) before anything is written: a bad value
  for the key, or any new problem, is refused with one line naming the key and the file stays
  byte-for-byte as it was. Problems elsewhere in the file that were there before do not block
  the change; they are listed on stderr. The file is rewritten atomically with ``tomli_w``,
  which keeps every key but not comments or layout. The value is echoed masked as in ``show``.
- ``unset KEY`` removes a key (an unknown one too), so its default (or environment) value
  applies again. It is refused only when the removal itself makes the file invalid (a
  client's ``currency`` without the client); what else stays invalid is listed on stderr.

A file that is not TOML at all cannot be edited by these commands: the error names the line
to repair in an editor.
"""

from __future__ import annotations

import copy
import json
from contextlib import contextmanager
import re
import sqlite3
import tomllib
import unicodedata
from pathlib import Path
from typing import Any

import tomli_w
import typer

from ...config import (
    ConfigProblem,
    Settings,
    config_file_problems,
    config_key_text,
    config_path,
    default_vault_root,
    env_name,
    load_config_toml,
    resolve_config_paths,
    settings_despite_problems,
    usable_config_data,
)
from ...domain.errors import InvalidFieldError, MemoError
from ...domain.shell import shell_word
from ...vault.io import atomic_write_bytes
from ...vault.redact import mask_url, redact_secrets
from .common import _emit, _safe, app, err, out, state

config_app = typer.Typer(
    help="Show the effective settings and change the TOML config file ($MEMO_CONFIG or ~/.memo/config.toml).",
    no_args_is_help=True,
)
app.add_typer(config_app, name="config")

MASK = "***"
#: A key whose value is a secret: ``token``, ``remote.token``, ``apiKey``, ``password`` …
_SECRET_KEY = re.compile(r"(?i)token|secret|passw|api_?key|credential")
#: A URL whose path is its secret: a webhook's (Slack, Discord, Teams, Zapier, n8n, a receiver of
#: one's own at ``/hook/<secret>``): shown as ``https://host/***``
_SECRET_PATH_KEY = re.compile(r"(?i)webhook")


def _top_fields() -> dict[str, str]:
    """camelCase config key → Settings field name."""
    return {(field.alias or name): name for name, field in Settings.model_fields.items()}


def _key_text(parts: list[str]) -> str:
    return config_key_text(parts)


def _leaves(value: Any, prefix: list[str]) -> list[tuple[list[str], Any]]:
    if isinstance(value, dict) and value:
        return [leaf for key, item in value.items() for leaf in _leaves(item, [*prefix, str(key)])]
    return [(prefix, value)]


def masked(value: Any, parts: tuple[str, ...] = ()) -> Any:
    """A config value as it may be shown: the value of a secret key (``token`` …) as ``***``,
    every URL through :func:`mask_url`, tables and lists item by item."""
    if isinstance(value, dict):
        return {key: masked(item, (*parts, str(key))) for key, item in value.items()}
    if isinstance(value, list):
        return [masked(item, parts) for item in value]
    if parts and _SECRET_KEY.search(parts[-1]) and value not in (None, ""):
        return MASK
    if isinstance(value, str) and "://" in value:
        return mask_url(value, secret_path=bool(parts and _SECRET_PATH_KEY.search(parts[-1])))
    return value


def _clean(text: str) -> str:
    """A message for the terminal: URLs masked, other secrets redacted, controls escaped."""
    text = re.sub(r"[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s'\"]+", lambda m: mask_url(m.group(0)), text)
    return _safe(redact_secrets(text)[0])


def _shown(value: Any) -> str:
    """A value as TOML writes it (``(none)`` for an unset one)."""
    if value is None:
        return "(none)"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return tomli_w.dumps({"v": value}).split("=", 1)[1].strip()


def _source(parts: list[str], file_data: dict[str, Any], settings: Settings, refused: set[str]) -> str:
    """Where the value at ``parts`` comes from; ``refused`` holds the sources left out."""
    field = _top_fields().get(parts[0], parts[0])
    env = env_name(field)
    if env and f"environment ({env})" not in refused:
        return f"environment ({env})"
    node: Any = file_data
    for part in parts:
        if isinstance(node, dict) and part not in node:  # a client's name the file spells in NFD (as a Mac types it)
            node = {unicodedata.normalize("NFC", key): value for key, value in node.items()}
        if not isinstance(node, dict) or part not in node:
            break
        node = node[part]
    else:
        return "config file"
    if field == "vault_root" and settings.vault_root != default_vault_root().resolve():
        return "command line (--vault-root)"
    return "default"


def _file(path: Path) -> dict[str, Any]:
    try:
        return copy.deepcopy(load_config_toml(path))
    except InvalidFieldError as exc:
        raise InvalidFieldError("config", f"{exc.reason} (not TOML: memo config cannot edit it; repair it in an "
                                          "editor)") from None


def _hint(problem: ConfigProblem) -> str:
    if problem.kind == "missing" and problem.parts[:1] == ("clients",) and len(problem.parts) >= 2:
        name = problem.parts[1].replace('"', '\\"')
        return (f"; a client needs both terms at once: memo config set 'clients.\"{name}\"' "
                "'{hourlyRate = \"95.50\", currency = \"USD\"}'")
    return ""


def _note_problems(path: Path, problems: list[ConfigProblem], what: str) -> None:
    if not problems:
        return
    listed = "; ".join(str(p) for p in problems)
    err.print(_clean(f"note: {path} {what} {len(problems)} invalid setting{'s' if len(problems) > 1 else ''} "
                     f"(other memo commands refuse to run until each is set or unset): {listed}"))


@config_app.command("show")
def config_show(
    json_output: bool = typer.Option(False, "--json", help="Print JSON (same as memo --json config show)."),
) -> None:
    """Show the effective settings, each with its source (default, config file, environment,
    command line), and the config file's path. Secrets are masked (tokens, URL passwords and
    query values as ***). Refused values are left out and listed, so a broken file can be
    inspected and repaired with memo config set/unset."""
    path = config_path()
    usable, _ = usable_config_data(_file(path), path.parent)
    init = {"vault_root": state.vault_root} if state.vault_root is not None else {}
    settings, problems = settings_despite_problems(**init)
    refused = {p.source for p in problems if p.source != "config file"}
    values = masked(settings.model_dump(mode="json", by_alias=True))
    leaves = _leaves(values, [])
    result = {
        "configPath": str(path),
        "configFileExists": path.is_file(),
        "settings": values,
        "sources": {_key_text(parts): _source(parts, usable, settings, refused) for parts, _ in leaves},
        "problems": [{"key": p.key, "source": p.source, "message": _clean(str(p))} for p in problems],
    }

    def human(r: dict[str, Any]) -> None:
        out.print(_safe(f"config file: {r['configPath']}" + ("" if r["configFileExists"] else " (not there yet)")))
        width = max(len(k) for k in r["sources"])
        for parts, value in leaves:
            key = _key_text(parts)
            out.print(_safe(f"{key:<{width}}  {_shown(value)}  [{r['sources'][key]}]"))
        for problem in r["problems"]:
            out.print(f"not used: {problem['message']}")

    state.json = state.json or json_output
    _emit(result, human)
    if problems:
        err.print(f"note: {len(problems)} refused value{'s' if len(problems) > 1 else ''} not used; other memo "
                  "commands refuse to run until each is repaired (memo config set KEY VALUE, memo config unset KEY)")


def _parse_key(key: str, present: dict[str, Any] | None = None) -> list[str]:
    """``key`` split into its parts; an unknown top-level key is refused unless it is one of
    ``present`` (the file's, so that ``unset`` can remove it)."""
    # a client's name with a space, a dot or an accent is a quoted part (a freelancer typed
    # clients.Acme GmbH.roundingMinutes and was not told how)
    refused = InvalidFieldError("config key", f"{key!r} is not a dotted key such as vaultGit.enabled (a name with a "
                                              "space or a dot in quotes: 'clients.\"Acme GmbH\".roundingMinutes')")
    bare = re.sub(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'', "", key)  # outside quoted parts: no "=", "#" nor line break
    if "\n" in key or "\r" in key or "=" in bare or "#" in bare:
        raise refused
    try:
        parsed: Any = tomllib.loads(f"{key} = 0")
    except tomllib.TOMLDecodeError:
        raise refused from None
    parts = []
    while isinstance(parsed, dict):
        if len(parsed) != 1:  # "a = 5\nb": more than one key
            raise refused
        (name, parsed), = parsed.items()
        parts.append(name)
    if parsed != 0 or isinstance(parsed, bool):  # "a = 5 #": a value and a comment, not a key
        raise refused
    known = _top_fields()
    if parts[0] not in known and parts[0] not in (present or {}):
        raise InvalidFieldError(f"config key {key}", f"unknown key {parts[0]!r} (known: {', '.join(sorted(known))})")
    return parts


def _parse_value(text: str, key: str) -> Any:
    """``text`` as a TOML value when it is one, else the string itself.

    Raises
    ------
    InvalidFieldError
        ``config <key>``: a value nested too deeply to parse (a traceback before)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    except RecursionError:
        raise InvalidFieldError(f"config {key}", "the value is nested too deeply") from None


def _overlaps(a: tuple[str, ...] | list[str], b: tuple[str, ...] | list[str]) -> bool:
    n = min(len(a), len(b))
    return tuple(a[:n]) == tuple(b[:n])


def _changed(path: Path, before: dict[str, Any], after: dict[str, Any], parts: list[str] | None,
             key: str) -> list[ConfigProblem]:
    """The problems of the would-be file ``after``; raises for one the change brings: one that
    ``before`` did not have, or (with ``parts``, the key that is set) any at that key."""
    old = config_file_problems(before, path.parent)
    new = config_file_problems(after, path.parent)
    brought = [p for p in new if (parts is not None and _overlaps(p.parts, parts)) or p not in old]
    if brought:
        first = brought[0]
        raise InvalidFieldError(f"config {first.key or key}", _clean(first.reason + _hint(first)))
    return new


def _write(path: Path, data: dict[str, Any], old_text: str) -> None:
    # a config file that is a symbolic link (kept in a dotfiles repository) is written where it points
    path = path.resolve() if path.is_symlink() else path
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, tomli_w.dumps(data).encode("utf-8"), mode=0o600)  # it may hold tokens: yours alone
    if re.search(r"(?m)^\s*#|\s#", old_text):
        err.print(f"note: {path} was rewritten without its comments (tomli_w keeps keys and values, not comments)")


def _note_relative(path: Path, data: dict[str, Any], parts: list[str]) -> None:
    """Say where a relative path that was just set points: the config file's folder, not here."""
    elsewhere, resolved = resolve_config_paths(data, path.parent / "elsewhere"), resolve_config_paths(data, path.parent)
    for part in parts:
        elsewhere = elsewhere.get(part) if isinstance(elsewhere, dict) else None
        resolved = resolved.get(part) if isinstance(resolved, dict) else None
    if elsewhere != resolved and resolved is not None:  # the value depends on the file's folder
        where = ", ".join(map(str, resolved)) if isinstance(resolved, list) else resolved
        err.print(_safe(f"note: relative paths of the config file are read against its folder {path.parent}: {where}"))


def _override_note(parts: list[str]) -> str | None:
    field = _top_fields().get(parts[0])
    env = env_name(field) if field else None
    if env:
        err.print(f"note: {env} is set in the environment and overrides the config file's {parts[0]}")
    return env


@config_app.command("set", context_settings={"ignore_unknown_options": True})  # a value -10 is a value
def config_set(
    key: str = typer.Argument(..., help="Dotted camelCase key: vaultGit.enabled, hybrid.remoteUrl, "
                                        "operator.stalledMinutes, 'clients.\"Acme Corp\"'."),
    value: str = typer.Argument(..., help="A TOML value (true, 42, 1.5, \"text\", [\"a\", \"b\"], "
                                          "'{hourlyRate = \"120\", currency = \"EUR\"}'); anything else is "
                                          "taken as a string."),
) -> None:
    """Set one key of the config file after validating the would-be file; a bad value for the
    key is refused and the file is left untouched (problems elsewhere in the file do not block
    it and are listed). Relative paths are read against the config file's folder. The file is
    rewritten with tomli_w: keys and values are kept, comments and layout are not. A secret
    is echoed as ***."""
    path = config_path()
    with _editing(path):
        _set(path, key, value)


@contextmanager
def _editing(path: Path):
    """One ``config set``/``unset`` at a time per config file (a lock file beside it): two run at
    once each read the file and the second write lost the first's key."""
    from filelock import FileLock, Timeout

    real = path.resolve()  # one lock for the file however it is reached (through a link or not)
    if real.exists() and not real.is_file():  # /dev/null, a folder, a fifo: refused before a lock file is left beside it
        raise InvalidFieldError("config", f"{path} is not a regular file (MEMO_CONFIG names the TOML file memo edits)")
    lock = real.with_name(f".{real.name}.lock")
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(lock), timeout=10):
            yield
    except Timeout:
        raise MemoError(f"another memo config command is changing {path}; try again") from None


def _old_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace") if path.is_file() else ""


#: A client's terms read as decimal figures: a number typed for one is kept as the text typed.
_DECIMAL_TERMS = frozenset({"hourlyRate", "taxRate", "aiCostMargin", "aiCostExchangeRate", "monthlyHoursCap"})


def _set(path: Path, key: str, value: str) -> None:
    original = _file(path)  # a file that is not TOML or not UTF-8: one line, before anything
    old_text = _old_text(path)
    data = copy.deepcopy(original)
    parts = _parse_key(key)
    parsed = _parse_value(value, key)
    clients = original.get("clients") if isinstance(original.get("clients"), dict) else {}
    if parts[0] == "clients" and len(parts) >= 3 and parts[1] not in clients:
        spelled = next((name for name in clients if name.strip().lower() == parts[1].strip().lower()), None)
        if spelled is not None:  # one client in any case: a key of a second spelling said "both terms at once"
            right = config_key_text(["clients", spelled, *parts[2:]])
            raise InvalidFieldError(f"config key {key}", f"the config names this client {spelled!r} (a client's "
                                                         f"name matches in any case): memo config set "
                                                         f"{shell_word(right)} {shell_word(value)}")
    node = data
    for depth, part in enumerate(parts[:-1], 1):
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            where = _key_text(parts[:depth])
            raise InvalidFieldError(f"config key {key}",
                                    f"{where} is a value, not a table (memo config unset {where} first)")
    if isinstance(parsed, float) and parts[0] == "clients" and (
            parts[-1] in _DECIMAL_TERMS or (len(parts) >= 2 and parts[-2] == "projectRates")):
        # an amount typed without quotes (hourlyRate 130.00) was kept as the float 130.0 (found by a new
        # user): as written, the text the README's examples quote
        parsed = value.strip()
    node[parts[-1]] = parsed
    try:
        remaining = _changed(path, original, data, parts, key)
    except MemoError as refused:
        if not isinstance(parsed, (int, float)) or isinstance(parsed, bool):
            raise
        # digits where the key holds text (a postcode, an account number): the text as written
        node[parts[-1]] = parsed = value.strip()
        try:
            remaining = _changed(path, original, data, parts, key)
        except MemoError:
            raise refused from None
    _write(path, data, old_text)
    overridden = _override_note(parts)
    _note_relative(path, data, parts)
    shown_value = masked(parsed, tuple(parts))
    line = (f"{key} = {_shown(shown_value)} in {path}" if shown_value == parsed
            else f"{key} set to {MASK if shown_value == MASK else _shown(shown_value)} in {path}")
    _emit({"configPath": str(path), "key": key, "value": shown_value, "overriddenBy": overridden,
           "problems": [_clean(str(p)) for p in remaining]},
          lambda r: out.print(_safe(line)))
    _note_problems(path, remaining, "still has")
    if len(parts) == 2 and parts[0] == "projectClients" and isinstance(parsed, str):
        _note_recorded_before(parts[1], parsed)
    if parts == ["invoice", "numberFormat"] and isinstance(parsed, str):
        _note_new_sequence(parsed)


def _note_new_sequence(number_format: str) -> None:
    """After ``config set invoice.numberFormat``: when the vault's documents were numbered in
    another sequence (a format with ``{year}`` for one without, or the other way), the next
    number begins one of its own — 2026-0012, then 1, then 2026-0013, and nothing said so (found
    by a billing person). Nothing when the vault cannot be read or holds no document."""
    from datetime import datetime, timezone

    from ...services.store import VaultStore
    from ...vault import ledger
    from .common import _settings

    try:
        store = VaultStore(_settings(**({"vault_root": state.vault_root} if state.vault_root else {})))
        try:
            docs = ledger.documents(store.root) if store.exists else []
            year = datetime.now(timezone.utc).astimezone(store.zone).year
        finally:
            store.close()
        if not ledger.begins_a_sequence(docs, number_format, year):
            return
        first = number_format.format(year=year, seq=1)
    except (MemoError, OSError, sqlite3.Error, ValueError, KeyError, IndexError):
        return
    last = max(docs, key=lambda d: (str(d.meta.get("issued") or ""), int(d.meta.get("sequence") or 0)))
    err.print(_safe(f"note: {number_format} numbers in a sequence of its own: the next document is {first}, after "
                    f"{len(docs)} numbered in another (the last {last.number}) — a numbering that begins again reads "
                    "as a gap to a tax auditor; keep the format's {year} (or its absence) to go on from there"))


def _note_recorded_before(project: str, client: str) -> None:
    """After ``config set projectClients.<project> NAME``: the sessions of ``project`` already
    recorded that bill another client (but those an issued invoice bills: they stay as billed), and
    the command that files them — the setting files the
    sessions recorded from now on, and ``memo activity --client NAME`` showed nothing, without a
    word (found by a developer's first hour). Nothing when the vault cannot be read."""
    from ...services.session_edit import sessions_to_file
    from ...services.store import VaultStore
    from .common import _settings

    store = None
    try:
        store = VaultStore(_settings(**({"vault_root": state.vault_root} if state.vault_root else {})))
        if not store.exists:
            return
        count, every = sessions_to_file(store, project, client)
    except (MemoError, OSError, sqlite3.Error):
        return
    finally:
        if store is not None:
            store.close()
    if not count:
        return
    one = count == 1
    err.print(_safe(f"note: {count} session{'' if one else 's'} of {project} recorded before "
                    f"bill{'s' if one else ''} another client or none; this setting files the sessions recorded from "
                    f"now on — memo project client {shell_word(project)} {shell_word(client.strip())}"
                    f"{' --every' if every else ''} files {'it' if one else 'them'}"))


def follow_rename(old: str, new: str) -> str | None:
    """After ``memo project rename old new``: the config file's ``projectClients.<old>`` is given to
    ``<new>`` too (kept for ``old``: a checkout of that name still records there) — the sessions of
    the renamed project billed ``internal`` from then on. Written only when the file maps ``old``
    and not ``new`` and holds no comment (a rewrite would drop them): else the command is said. The
    note to print, or None when the file maps nothing of it."""
    path = config_path()
    with _editing(path):
        original = _file(path) if path.is_file() else {}
        mapped = original.get("projectClients")
        if not isinstance(mapped, dict) or old not in mapped or new in mapped:
            return None
        command = f"memo config set projectClients.{new} {shell_word(str(mapped[old]))}"
        old_text = _old_text(path)
        if re.search(r"(?m)^\s*#|\s#", old_text):
            return (f"projectClients.{old} = {mapped[old]!r} in {path}: sessions of {new} bill internal until it "
                    f"maps {new} too ({command})")
        data = copy.deepcopy(original)
        data["projectClients"][new] = mapped[old]
        try:
            _changed(path, original, data, ["projectClients", new], f"projectClients.{new}")
        except MemoError:
            return f"sessions of {new} bill internal until the config maps it ({command})"
        _write(path, data, old_text)
        return (f"projectClients.{new} = {mapped[old]!r} added in {path}, as projectClients.{old} (kept: a checkout "
                f"named {old} still records there)")


@config_app.command("unset")
def config_unset(key: str = typer.Argument(..., help="Dotted camelCase key, e.g. hybrid.remoteUrl.")) -> None:
    """Remove one key from the config file (even an unknown or refused one), so its default (or
    environment) value applies; whatever else in the file is still invalid is listed."""
    path = config_path()
    with _editing(path):
        _unset(path, key)


def _unset(path: Path, key: str) -> None:
    original = _file(path)
    old_text = _old_text(path)
    data = copy.deepcopy(original)
    parts = _parse_key(key, present=data)
    trail = [data]
    for part in parts[:-1]:
        nxt = trail[-1].get(part)
        if not isinstance(nxt, dict):
            break
        trail.append(nxt)
    if len(trail) != len(parts) or parts[-1] not in trail[-1]:
        # not an invalid key (found by a bookkeeper): nothing was done, said as such
        raise MemoError(f"{key} is not set in {path}: nothing to unset (its default applies)")
    del trail[-1][parts[-1]]
    for parent, part, child in reversed(list(zip(trail[:-1], parts, trail[1:]))):
        if not child:
            del parent[part]  # an emptied table goes too
    remaining = _changed(path, original, data, None, key)
    _write(path, data, old_text)
    _emit({"configPath": str(path), "key": key, "removed": True, "problems": [_clean(str(p)) for p in remaining]},
          lambda r: out.print(_safe(f"{key} removed from {path}")))
    _note_problems(path, remaining, "still has")
