"""``memo config show|set|unset``: the TOML config file (``$MEMO_CONFIG``, else
``~/.memo/config.toml``) and the effective settings.

- ``show`` prints every effective setting with where its value comes from: ``default``,
  ``config file``, ``environment (MEMO_…)`` or ``command line (--vault-root)``. Tokens are
  shown as ``***``.
- ``set KEY VALUE`` takes a dotted camelCase key as in the file (``vaultGit.enabled``,
  ``hybrid.remoteUrl``, ``operator.stalledMinutes``, ``clients."Acme Corp".hourlyRate``) and
  a TOML value (``true``, ``42``, ``"text"``, ``["a", "b"]``); a value that is not TOML is
  taken as a string. The would-be file is validated as settings before anything is
  written; an unknown key or a bad value is refused with one line naming the key and the
  file stays byte-for-byte as it was. The file is rewritten atomically with ``tomli_w``,
  which keeps every key but not comments or layout.
- ``unset KEY`` removes a key, so its default (or environment) value applies again.
"""

from __future__ import annotations

import copy
import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import tomli_w
import typer
from pydantic import ValidationError

from ...config import Settings, config_path, default_vault_root, read_config_file
from ...domain.errors import InvalidFieldError
from ...vault.io import atomic_write_bytes
from .common import _emit, _safe, app, err, out, state

config_app = typer.Typer(
    help="Show the effective settings and change the TOML config file ($MEMO_CONFIG or ~/.memo/config.toml).",
    no_args_is_help=True,
)
app.add_typer(config_app, name="config")

_SECRET_KEYS = {"token"}
_ENV_NAMES = {"vault_root": ("MEMO_VAULT", "MEMO_VAULT_ROOT"), "default_project": ("MEMO_PROJECT", "MEMO_DEFAULT_PROJECT")}


def _top_fields() -> dict[str, str]:
    """camelCase config key → Settings field name."""
    return {(field.alias or name): name for name, field in Settings.model_fields.items()}


def _env_name(field: str) -> str | None:
    """The ``MEMO_*`` variable that sets ``field`` in this process, if any."""
    for name in _ENV_NAMES.get(field, (f"MEMO_{field.upper()}",)):
        if os.environ.get(name, "").strip():
            return name
    return None


def _key_text(parts: list[str]) -> str:
    return ".".join(p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else '"' + p.replace('"', '\\"') + '"' for p in parts)


def _leaves(value: Any, prefix: list[str]) -> list[tuple[list[str], Any]]:
    if isinstance(value, dict) and value:
        return [leaf for key, item in value.items() for leaf in _leaves(item, [*prefix, str(key)])]
    return [(prefix, value)]


def _shown(value: Any) -> str:
    """A value as TOML writes it (``(none)`` for an unset one)."""
    if value is None:
        return "(none)"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return tomli_w.dumps({"v": value}).split("=", 1)[1].strip()


def _source(parts: list[str], file_data: dict[str, Any], settings: Settings) -> str:
    field = _top_fields().get(parts[0], parts[0])
    env = _env_name(field)
    if env:
        return f"environment ({env})"
    node: Any = file_data
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            break
        node = node[part]
    else:
        return "config file"
    if field == "vault_root" and settings.vault_root != default_vault_root().resolve():
        return "command line (--vault-root)"
    return "default"


@config_app.command("show")
def config_show(
    json_output: bool = typer.Option(False, "--json", help="Print JSON (same as memo --json config show)."),
) -> None:
    """Show the effective settings, each with its source (default, config file, environment,
    command line), and the config file's path. Tokens are shown as ***."""
    path = config_path()
    file_data = read_config_file(path)
    settings = state.settings
    values = settings.model_dump(mode="json", by_alias=True)
    for table in ("hybrid", "remote"):
        if values.get(table, {}).get("token"):
            values[table]["token"] = "***"
    leaves = _leaves(values, [])
    result = {
        "configPath": str(path),
        "configFileExists": path.is_file(),
        "settings": values,
        "sources": {_key_text(parts): _source(parts, file_data, settings) for parts, _ in leaves},
    }

    def human(r: dict[str, Any]) -> None:
        out.print(_safe(f"config file: {r['configPath']}" + ("" if r["configFileExists"] else " (not there yet)")))
        width = max(len(k) for k in r["sources"])
        for parts, value in leaves:
            key = _key_text(parts)
            out.print(_safe(f"{key:<{width}}  {_shown(value)}  [{r['sources'][key]}]"))

    state.json = state.json or json_output
    _emit(result, human)


def _parse_key(key: str) -> list[str]:
    try:
        parsed: Any = tomllib.loads(f"{key} = 0")
    except tomllib.TOMLDecodeError:
        raise InvalidFieldError("config key", f"{key!r} is not a dotted key such as vaultGit.enabled") from None
    parts = []
    while isinstance(parsed, dict):
        (name, parsed), = parsed.items()
        parts.append(name)
    known = _top_fields()
    if parts[0] not in known:
        raise InvalidFieldError(f"config key {key}", f"unknown key {parts[0]!r} (known: {', '.join(sorted(known))})")
    return parts


def _parse_value(text: str) -> Any:
    """``text`` as a TOML value when it is one, else the string itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _validated(data: dict[str, Any], key: str) -> Settings:
    """Settings built from ``data`` alone (no environment): the would-be config file."""
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _key_text([str(p) for p in first["loc"]]) or key
        reason = "unknown key" if first["type"] == "extra_forbidden" else first["msg"].removeprefix("Value error, ")
        loc = [str(p) for p in first["loc"]]
        if first["type"] == "missing" and loc[:1] == ["clients"] and len(loc) >= 2:
            name = loc[1].replace('"', '\\"')
            reason += (f"; a client needs both terms at once: memo config set 'clients.\"{name}\"' "
                       "'{hourlyRate = \"95.50\", currency = \"USD\"}'")
        raise InvalidFieldError(f"config {where}", reason) from None


def _write(path: Path, data: dict[str, Any], old_text: str) -> None:
    atomic_write_bytes(path, tomli_w.dumps(data).encode("utf-8"))
    if re.search(r"(?m)^\s*#|\s#", old_text):
        err.print(f"note: {path} was rewritten without its comments (tomli_w keeps keys and values, not comments)")


def _override_note(parts: list[str]) -> str | None:
    env = _env_name(_top_fields()[parts[0]])
    if env:
        err.print(f"note: {env} is set in the environment and overrides the config file's {parts[0]}")
    return env


@config_app.command("set")
def config_set(
    key: str = typer.Argument(..., help="Dotted camelCase key: vaultGit.enabled, hybrid.remoteUrl, "
                                        "operator.stalledMinutes, 'clients.\"Acme Corp\"'."),
    value: str = typer.Argument(..., help="A TOML value (true, 42, 1.5, \"text\", [\"a\", \"b\"], "
                                          "'{hourlyRate = \"120\", currency = \"EUR\"}'); anything else is "
                                          "taken as a string."),
) -> None:
    """Set one key of the config file after validating the whole would-be file; an unknown key
    or a bad value is refused and the file is left untouched. The file is rewritten with
    tomli_w: keys and values are kept, comments and layout are not."""
    path = config_path()
    old_text = path.read_text(encoding="utf-8") if path.is_file() else ""
    data = copy.deepcopy(read_config_file(path))
    parts = _parse_key(key)
    parsed = _parse_value(value)
    node = data
    for depth, part in enumerate(parts[:-1], 1):
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise InvalidFieldError(f"config key {key}", f"{_key_text(parts[:depth])} is a value, not a table")
    node[parts[-1]] = parsed
    _validated(data, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, data, old_text)
    overridden = _override_note(parts)
    shown = _shown(parsed)
    _emit({"configPath": str(path), "key": key, "value": parsed, "overriddenBy": overridden},
          lambda r: out.print(_safe(f"{key} = {shown} in {path}")))


@config_app.command("unset")
def config_unset(key: str = typer.Argument(..., help="Dotted camelCase key, e.g. hybrid.remoteUrl.")) -> None:
    """Remove one key from the config file, so its default (or environment) value applies."""
    path = config_path()
    old_text = path.read_text(encoding="utf-8") if path.is_file() else ""
    data = copy.deepcopy(read_config_file(path))
    parts = _parse_key(key)
    trail = [data]
    for part in parts[:-1]:
        nxt = trail[-1].get(part)
        if not isinstance(nxt, dict):
            break
        trail.append(nxt)
    if len(trail) != len(parts) or parts[-1] not in trail[-1]:
        raise InvalidFieldError(f"config key {key}", f"not set in {path}")
    del trail[-1][parts[-1]]
    for parent, part, child in reversed(list(zip(trail[:-1], parts, trail[1:]))):
        if not child:
            del parent[part]  # an emptied table goes too
    _validated(data, key)
    _write(path, data, old_text)
    _emit({"configPath": str(path), "key": key, "removed": True},
          lambda r: out.print(_safe(f"{key} removed from {path}")))

