"""Settings: one pydantic model, built once per entry point and passed as a value.

Sources, strongest first: explicit arguments, ``MEMO_*`` environment variables
(``MEMO_VAULT`` for the vault root), the TOML config file (``$MEMO_CONFIG``, else
``~/.memo/config.toml``; camelCase keys as on the wire), then defaults. The default vault
lives under the user's home (``~/.memo/vault``), never in the current repository (SPEC §2.1).

Paths (``vaultRoot``, ``vaults``, ``templatesDir``, ``operator.storiesDir``): ``~`` is the
user's home; a relative path in the config file is read against the folder of the config
file, one given by argument or environment against the current directory, so one config file
means the same folders wherever a command runs.

Example config file::

    vaultRoot = "~/.memo/vault"
    timezone = "Europe/Berlin"
    vaults = ["~/team/vault"]           # further vaults read by crossProject reports
    templatesDir = "~/.memo/templates"  # your own timesheet/invoice templates

    [invoice]                           # who bills (issued invoices, SPEC §9)
    name = "Ana Dev GmbH"
    address = ["Hauptstr. 1"]
    postcode = "10115"
    city = "Berlin"
    country = "DE"
    vatId = "DE136695976"
    iban = "DE89 3704 0044 0532 0130 00"
    paymentTermsDays = 14

    [clients."Acme Corp"]
    hourlyRate = "120.00"
    currency = "EUR"
    taxRate = "19"                      # or reverseCharge = true
    address = ["1 Infinite Loop"]
    country = "FR"

    [ports]
    status = 3124
"""

from __future__ import annotations

import copy
import json
import os
import re
import tomllib
import types
import unicodedata
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from .domain.billing import ClientBilling, Issuer, NoFlagNumbers
from .domain.clock import zone_name_problem
from .domain.errors import InvalidFieldError, MemoError

#: Largest prompt body accepted, in bytes of UTF-8 (bigger bodies are refused, not cut).
MAX_BODY_BYTES = 1_000_000


def default_vault_root() -> Path:
    """``~/.memo/vault``: outside every product repository."""
    return Path.home() / ".memo" / "vault"


def config_path() -> Path:
    """The config file: ``$MEMO_CONFIG`` (``~`` expanded; a relative name is read against the
    current directory), else ``~/.memo/config.toml``. Always absolute; it need not exist."""
    given = os.environ.get("MEMO_CONFIG")
    path = Path(given).expanduser() if given and given.strip() else Path.home() / ".memo" / "config.toml"
    return path.absolute()


def load_config_toml(path: Path | None = None) -> dict[str, Any]:
    """The config file's TOML as it is written (empty when there is none): keys and values
    unchecked, relative paths left relative. ``memo config set|unset`` edit this.

    Raises
    ------
    InvalidFieldError
        ``Invalid config: <path>: <what is wrong>`` for an unreadable file or broken TOML.
    """
    path = path or config_path()
    if not path.exists():
        return {}
    if not path.is_file():
        raise InvalidFieldError("config", f"{path} is not a regular file")
    try:
        # a byte order mark (Windows Notepad writes one) is no statement: it read "Invalid statement
        # (at line 1, column 1)" with no word of it (found by a tester)
        return tomllib.loads(path.read_bytes().removeprefix(b"\xef\xbb\xbf").decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InvalidFieldError("config", f"{path}: {exc}") from None
    except UnicodeDecodeError:
        raise InvalidFieldError("config", f"{path} is not UTF-8") from None
    except RecursionError:
        raise InvalidFieldError("config", f"{path}: nested too deeply") from None
    except OSError as exc:
        raise InvalidFieldError("config", f"{path}: {exc.strerror or type(exc).__name__}") from None


def read_config_file(path: Path | None = None) -> dict[str, Any]:
    """:func:`load_config_toml` with its top-level keys checked (empty when there is none).

    Raises
    ------
    InvalidFieldError
        ``Invalid config: <path>: <what is wrong>`` for unreadable or broken TOML, or an
        unknown top-level key.
    """
    path = path or config_path()
    data = load_config_toml(path)
    unknown = sorted(set(data) - _CONFIG_KEYS)
    if unknown:
        raise InvalidFieldError("config", f"{path}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_CONFIG_KEYS))}; "
                                          f"repair: memo config unset {unknown[0]})")
    return data


_CONFIG_KEYS = {"vaultRoot", "timezone", "defaultProject", "idleGapMinutes", "captureIgnore", "vaults", "clients",
                "invoice", "projectClients", "overlapPolicy", "templatesDir", "ports", "operator", "hybrid", "vaultGit", "mode", "remote",
                "lake"}


def _file_path(value: object, folder: Path) -> object:
    """One path value of the config file, absolute: ``~`` expanded, a relative path joined
    to ``folder``. Anything that is not a non-empty string is left for the validators."""
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        return value
    try:
        path = Path(value).expanduser()
    except RuntimeError:  # ~user of an unknown user: the validator names it
        return value
    return str(path if path.is_absolute() else folder / path)


def resolve_config_paths(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A copy of the config file's ``data`` whose path values are absolute.

    ``vaultRoot``, ``templatesDir``, every item of ``vaults``, ``operator.storiesDir`` and
    ``lake.catalog``/``lake.warehouse`` when they are paths, not URLs:
    ``~`` is the user's home, a relative path is read against ``folder`` (the config file's
    folder, never the current directory). Other keys are copied as they are.
    """
    resolved = copy.deepcopy(data)
    for key in ("vaultRoot", "templatesDir"):
        if key in resolved:
            resolved[key] = _file_path(resolved[key], folder)
    if isinstance(resolved.get("vaults"), list):
        resolved["vaults"] = [_file_path(item, folder) for item in resolved["vaults"]]
    operator = resolved.get("operator")
    if isinstance(operator, dict) and "storiesDir" in operator:
        operator["storiesDir"] = _file_path(operator["storiesDir"], folder)
    lake = resolved.get("lake")
    if isinstance(lake, dict):  # a file's path, not a URL (sqlite:///…, postgresql://…, s3://…)
        for key in ("catalog", "warehouse"):
            value = lake.get(key)
            if isinstance(value, str) and "://" not in value:
                lake[key] = _file_path(value, folder)
            elif isinstance(value, str) and value.lower().startswith(("sqlite:///", "file://")) \
                    and not value.lower().startswith(("sqlite:////", "file:///")):
                # a relative path in a URL (sqlite:///lake/c.db, file://lake/w): the file's folder too, as
                # the plain path is read (it was read against the current folder: a second catalog, found by a breaker)
                scheme, rest = value.split("://", 1)
                rest = rest[1:] if scheme.lower() == "sqlite" else rest
                path, _, query = rest.partition("?")
                resolved_path = _file_path(path, folder)
                lake[key] = f"{scheme}:///{resolved_path}" + (f"?{query}" if query else "") \
                    if scheme.lower() == "sqlite" else f"{scheme}://{resolved_path}"
    return resolved


#: The config file's content as :class:`Settings` reads it, when a caller (``memo config
#: show``) hands it over instead of the file (see :func:`settings_despite_problems`).
_FILE_DATA: ContextVar[dict[str, Any] | None] = ContextVar("memo_config_file_data", default=None)
#: Fields whose ``MEMO_*`` variable :class:`Settings` leaves out (``memo config show`` lists a
#: refused variable and goes on with the file's value or the default).
_ENV_LEFT_OUT: ContextVar[frozenset[str]] = ContextVar("memo_env_left_out", default=frozenset())


def _config_file_values() -> dict[str, Any]:
    """The config file's values as :class:`Settings` reads them: top-level keys checked, paths
    made absolute against the file's folder (or what :func:`settings_despite_problems` hands over)."""
    given = _FILE_DATA.get()
    if given is not None:
        return given
    path = config_path()
    return resolve_config_paths(read_config_file(path), path.parent)


def _takes_json(annotation: Any) -> bool:
    """Whether a field of this type is given as JSON in the environment: a list, a table
    (``dict``) or a model, optional or not (``MEMO_CAPTURE_IGNORE='["a"]'``)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return any(_takes_json(arg) for arg in get_args(annotation) if arg is not type(None))
    kind = origin or annotation
    return isinstance(kind, type) and issubclass(kind, (list, tuple, set, frozenset, dict, BaseModel))


def _environment_values(fields: dict[str, Any]) -> dict[str, Any]:
    """The ``MEMO_*`` variables of the environment, by field name: ``MEMO_<FIELD>`` (any case)
    or the names :data:`ENV_NAMES` gives; lists, tables and models as JSON.

    Raises
    ------
    InvalidFieldError
        A list, table or model variable that is not JSON (``Invalid captureIgnore:
        MEMO_CAPTURE_IGNORE must be JSON …``).
    """
    present = _memo_environment()
    if not present:
        return {}
    values: dict[str, Any] = {}
    left_out = _ENV_LEFT_OUT.get()
    for name, field in fields.items():
        env = next((e for e in ENV_NAMES.get(name, (f"MEMO_{name.upper()}",)) if e in present), None)
        if env is None or name in left_out:
            continue
        value: Any = present[env][1]
        if _takes_json(field.annotation):
            try:
                value = json.loads(value)
            except (ValueError, RecursionError):
                raise InvalidFieldError(field.alias or name, f"{present[env][0]} must be JSON (a list, a table or "
                                                             f"an object) of at most a few levels, "
                                                             f"e.g. {env}='[\"a\"]'") from None
        values[name] = value
    return values


def _memo_environment() -> dict[str, tuple[str, str]]:
    """The ``MEMO_*`` variables of this process, any case: ``{NAME: (name as set, value)}``."""
    return {name.upper(): (name, value) for name, value in os.environ.items() if name[:5].upper() == "MEMO_"}


def _merged(stronger: dict[str, Any], weaker: dict[str, Any]) -> dict[str, Any]:
    """``weaker`` updated by ``stronger``, tables merged key by key (a config file's table
    keeps the keys the environment's does not set)."""
    merged = dict(weaker)
    for key, value in stronger.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(value, merged[key])
        else:
            merged[key] = value
    return merged


def _user_path(value: object, what: str) -> Path:
    """``value`` as an absolute path: ``~`` expanded, a relative path against the current
    directory (the config file's own relative paths were made absolute before)."""
    if not isinstance(value, (str, Path)):
        raise ValueError(f"must be {what}")
    text = str(value)
    if "\x00" in text:
        raise ValueError("contains a NUL character")
    try:
        return Path(text).expanduser().absolute()
    except RuntimeError as exc:  # ~user of an unknown user
        raise ValueError(f"{text}: {exc}") from None


class Ports(NoFlagNumbers):
    """Ports of the servers (config ``[ports]``, SPEC §3.3): ``status`` for the API and the
    dashboard; ``mcp`` for the MCP tool over streamable HTTP beside them (default: status + 1;
    0 turns it off)."""

    model_config = ConfigDict(extra="forbid")

    status: int = Field(default=3124, ge=1, le=65535)
    mcp: int | None = Field(default=None, ge=0, le=65535)


class OperatorPolicy(NoFlagNumbers):
    """Thresholds of the operator digest (config ``[operator]``, SPEC §6).

    ``stalled_minutes``: an open session with no turn for this long is stalled.
    ``waiting_minutes``: an open session whose agent has waited this long for the person (a
    tool's permission, a question: SPEC §8's waiting states) is listed (``agent_waiting``).
    ``open_too_long_hours``: an open session started this long ago would inflate a timesheet.
    ``handoff_unclaimed_hours``: a pending hand-off waits this long before it is listed.
    ``horizon_days``: items older than this are counted, not listed.
    ``debounce_seconds``: a change of the vault is folded into one recompute within this time.
    ``webhook_url`` / ``settle_seconds`` / ``notify_min_interval_seconds``: the notification
    (one per settle window, at most one per interval, never an item already sent while it
    stays in the digest); ``webhook_timeout_seconds``: how long one POST may take in all.
    ``max_auto_actions_per_hour``: past this many automatic actions on one session in an
    hour, delegated actions on that session fall back to proposals (per session, SPEC §6:
    every other session's stale state is still acted on).
    ``stories_dir``: where the ``export_story`` action writes stories (outside any vault).
    ``dashboard_refresh_seconds``: an open dashboard shows the digest again this often, as
    recomputed when older than that (0: only its refresh button does).
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    stalled_minutes: int = Field(default=60, ge=1, le=100_000)
    waiting_minutes: int = Field(default=5, ge=0, le=100_000)
    open_too_long_hours: float = Field(default=10.0, gt=0, le=10_000)
    handoff_unclaimed_hours: float = Field(default=4.0, ge=0, le=10_000)
    horizon_days: int = Field(default=14, ge=1, le=3650)
    debounce_seconds: float = Field(default=5.0, ge=0, le=3600)
    webhook_url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    settle_seconds: float = Field(default=60.0, ge=0, le=86_400)
    notify_min_interval_seconds: float = Field(default=3600.0, ge=0, le=604_800)
    webhook_timeout_seconds: float = Field(default=10.0, ge=1, le=300)
    max_auto_actions_per_hour: int = Field(default=3, ge=0, le=1000)
    stories_dir: Path = Field(default_factory=lambda: Path.home() / ".memo" / "stories")
    dashboard_refresh_seconds: float = Field(default=30.0, ge=0, le=3600)

    @field_validator("dashboard_refresh_seconds")
    @classmethod
    def _refresh_period(cls, value: float) -> float:
        """0 (off) or at least a second: 0.0004 made a period of 0 ms, a server busy for nobody."""
        if 0 < value < 1:
            raise ValueError(f"{value:g} is under a second: give 0 (only the refresh button) or 1 to 3600 seconds")
        return value

    @field_validator("webhook_url")
    @classmethod
    def _webhook_address(cls, value: str | None) -> str | None:
        """A URL a POST can reach: a host, and a port from 1 to 65535 when one is given
        (``:87650`` was accepted, and every pass failed); no control character, nothing beyond
        ASCII, no ``user:password@`` (urllib sends none of them: every POST failed, its error
        naming the secret)."""
        if value is None:
            return value
        from urllib.parse import urlsplit

        if re.search(r"[\x00-\x1f\x7f]", value):
            raise ValueError("it holds a control character (every POST would fail)")
        if not value.isascii():
            raise ValueError("it holds a character beyond ASCII: percent-encode it (é as %C3%A9)")
        parts = urlsplit(value)
        if "@" in parts.netloc:
            raise ValueError("it holds a user or password before the host, which a POST never sends: put the "
                             "secret in the path or query, as the receiver's webhook URL has it")
        try:
            port = parts.port
        except ValueError:
            raise ValueError("its port must be a number from 1 to 65535") from None
        if not parts.hostname:
            raise ValueError("it names no host (http://HOST[:PORT]/PATH)")
        if port == 0:
            raise ValueError("its port must be a number from 1 to 65535")
        return value

    @field_validator("stories_dir", mode="before")
    @classmethod
    def _expand_stories(cls, value: object) -> object:
        """Absolute: ``~`` expanded, relative against the config file's folder (in the file)
        or the current directory (argument, environment)."""
        return _user_path(value, "a folder path") if isinstance(value, (str, Path)) else value


class HybridSync(NoFlagNumbers):
    """Hybrid mode (config ``[hybrid]``, SPEC §2.7): local writes plus a debounced push of
    changed records to the daemon at ``remote_url`` (its token in ``token``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    remote_url: str | None = Field(default=None, pattern=r"^https?://[^\s/]+(?::\d+)?/?$")
    debounce_ms: int = Field(default=2000, ge=0, le=3_600_000)
    token: str | None = None
    batch_size: int = Field(default=200, ge=1, le=10_000)


class RemoteDaemon(NoFlagNumbers):
    """Remote mode (config ``[remote]``): every tool call goes to the daemon at ``url``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    url: str | None = Field(default=None, pattern=r"^https?://[^\s/]+(?::\d+)?/?$")
    token: str | None = None
    timeout_seconds: float = Field(default=30.0, gt=0, le=600)


class VaultGit(NoFlagNumbers):
    """Vault-git (config ``[vaultGit]``): the vault is a git repository; sync commits changed
    files, pulls, resolves conflicts like hybrid, and pushes to ``remote``/``branch``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    enabled: bool = False
    remote: str = Field(default="origin", pattern=r"^[A-Za-z0-9._-]+$")
    branch: str = Field(default="main", pattern=r"^[A-Za-z0-9._/-]+$")


class Lake(NoFlagNumbers):
    """The team's Iceberg tables (config ``[lake]``, SPEC §10): ``catalog`` an SQL catalog
    (an SQLite file's path or ``sqlite:////PATH.db``, or ``postgresql://USER@HOST:PORT/DB``),
    ``warehouse`` where the data files go (a folder or ``s3://BUCKET/PREFIX``), the S3 endpoint
    and region of an S3-compatible server (its keys from ``AWS_ACCESS_KEY_ID`` and
    ``AWS_SECRET_ACCESS_KEY`` in the environment, never in the config)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    catalog: str | None = None
    warehouse: str | None = None
    s3_endpoint: str | None = Field(default=None, pattern=r"^https?://[^\s/]+(?::\d+)?/?$")
    s3_region: str | None = Field(default=None, pattern=r"^[a-z0-9-]{1,40}$")


class _SettingsData(NoFlagNumbers):
    """The fields of :class:`Settings` and their rules, from the given data alone (no
    environment, no config file): the would-be config file of ``memo config set|unset`` and
    each key of the config file are checked with it.

    Attributes
    ----------
    vault_root : Path
        The vault folder (env ``MEMO_VAULT``).
    timezone : str | None
        IANA zone for display and for reading timestamps without an offset; None means the
        machine's zone (env ``MEMO_TIMEZONE``).
    default_project : str
        Project id used when a caller names none (env ``MEMO_PROJECT``).
    idle_gap_minutes : int
        Importers split a transcript into one session per work interval at pauses longer
        than this many minutes (SPEC §7).
    capture_ignore : list[str]
        Gitignore-style globs of paths never captured in a body, on top of the product
        root's ``.memoignore`` (env ``MEMO_CAPTURE_IGNORE`` as a JSON list) (SPEC §2.4).
    vaults : list[Path]
        Further vaults whose projects ``crossProject`` reports and :func:`open_vault` read
        besides ``vault_root`` (SPEC §4); they are read, never written.
    clients : dict[str, ClientBilling]
        Billing terms and profile per client name (matched case-insensitively) for invoices:
        rate, currency, project rates, tax, address, VAT id (SPEC §9).
    project_clients : dict[str, str]
        ``projectClients``: the client a project's sessions bill when none is named (an import
        without ``--client``, a hook, an agent's ``session_start``), ``{project: client}``.
    overlap_policy : {"union", "sum"}
        ``overlapPolicy``: how one person's parallel sessions for one client bill — their
        wall-clock union once (default) or each in full (SPEC §9).
    invoice : Issuer
        Who issues the invoices (``[invoice]``): name, address, VAT id, bank account, payment
        terms, footer, number format.
    templates_dir : Path | None
        A folder whose templates (``timesheet.html.j2``, ``invoice.html.j2``, ``issued.html.j2``, ``report.css``)
        replace the shipped ones of the same name.
    ports : Ports
        ``ports.status``: the port of ``memo serve`` (default 3124).
    operator : OperatorPolicy
        Thresholds and notification of the operator digest (``[operator]``).
    mode : str
        ``local`` (default), ``hybrid`` (local writes + push to ``hybrid.remoteUrl``) or
        ``remote`` (every tool call proxied to ``remote.url``; nothing written locally).
    hybrid, remote, vault_git
        The sync settings of each mode (SPEC §2.7).
    lake : Lake
        Where ``memo export iceberg`` writes and ``memo activity --lake`` reads (SPEC §10).
    """

    # built on first use (memo config set|show): other commands build only Settings' schema
    model_config = ConfigDict(extra="ignore", alias_generator=to_camel, populate_by_name=True, defer_build=True)

    vault_root: Path = Field(
        default_factory=default_vault_root, validation_alias=AliasChoices("vault_root", "vaultRoot", "MEMO_VAULT")
    )
    timezone: str | None = None
    default_project: str = Field(
        default="default", validation_alias=AliasChoices("default_project", "defaultProject", "MEMO_PROJECT")
    )
    idle_gap_minutes: int = Field(default=30, ge=1, le=525_600)
    capture_ignore: list[str] = Field(default_factory=list)
    vaults: list[Path] = Field(default_factory=list)
    clients: dict[str, ClientBilling] = Field(default_factory=dict)
    invoice: Issuer = Field(default_factory=Issuer)
    project_clients: dict[str, str] = Field(default_factory=dict)
    overlap_policy: Literal["union", "sum"] = "union"
    templates_dir: Path | None = None
    ports: Ports = Field(default_factory=Ports)
    operator: OperatorPolicy = Field(default_factory=OperatorPolicy)
    mode: Literal["local", "hybrid", "remote"] = "local"
    hybrid: HybridSync = Field(default_factory=HybridSync)
    remote: RemoteDaemon = Field(default_factory=RemoteDaemon)
    vault_git: VaultGit = Field(default_factory=VaultGit)
    lake: Lake = Field(default_factory=Lake)

    @field_validator("vaults", mode="before")
    @classmethod
    def _expand_vaults(cls, value: object) -> object:
        """Each further vault absolute (``~`` expanded; relative as for ``templates_dir``)."""
        if isinstance(value, list):
            return [_user_path(item, "a list of folder paths") for item in value]
        return value

    @field_validator("templates_dir", mode="before")
    @classmethod
    def _expand_templates(cls, value: object) -> object:
        """An existing folder, absolute: ``~`` expanded, relative against the config file's
        folder (in the file) or the current directory (argument, environment)."""
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        path = _user_path(value, "a folder path")
        if not path.is_dir():
            raise ValueError(f"{path} is not a folder")
        return path

    @field_validator("timezone", mode="before")
    @classmethod
    def _known_zone(cls, value: object) -> object:
        """A zone the reports can use (:func:`memo_analytics.domain.clock.zone_name_problem`)."""
        if value is None:
            return None
        problem = zone_name_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return str(value).strip()

    @field_validator("default_project")
    @classmethod
    def _project_id(cls, value: str) -> str:
        """A project id as every command takes one (SPEC §2.1): the project of a turn from outside
        any repository — a hook's prompt there was dropped for good by a ``../x`` or ``My Shop``
        the config took without a word (found by a tester)."""
        from .domain.ids import validate_slug

        try:
            return validate_slug(value, "defaultProject")
        except InvalidFieldError as exc:
            raise ValueError(exc.reason) from None

    @field_validator("clients")
    @classmethod
    def _distinct_clients(cls, value: dict[str, ClientBilling]) -> dict[str, ClientBilling]:
        from .domain.billing import client_name_problem

        seen: dict[str, str] = {}
        for name in value:
            if client_name_problem(name) is not None or not name.strip():
                # a name is matched against sessions' clients, which never hold these: it would match none
                raise ValueError(f"{name!r} is no client name (one line of at most 200 characters, without control "
                                 "or invisible characters)")
            key = unicodedata.normalize("NFC", name).strip().lower()
            if key in seen:
                raise ValueError(f"{seen[key]!r} and {name!r} are one client (names match in any case); keep one")
            seen[key] = name
        # one spelling of a name: "Café" typed on a Mac (e + U+0301) is the client the sessions name
        return {unicodedata.normalize("NFC", name): terms for name, terms in value.items()}

    @field_validator("project_clients")
    @classmethod
    def _project_clients(cls, value: dict[str, str]) -> dict[str, str]:
        from .domain.billing import client_name_problem
        from .domain.ids import validate_slug

        for project, client in value.items():
            validate_slug(project, "projectClients")
            if not client.strip() or len(client) > 200:
                raise ValueError(f"{project}: the client must be a name of at most 200 characters")
            problem = client_name_problem(client.strip())  # one rule for every client name (a U+200B too)
            if problem is not None:
                raise ValueError(f"{project}: the client {problem}")
        return {project: unicodedata.normalize("NFC", client.strip()) for project, client in value.items()}

    def client_of_project(self, project: str) -> str | None:
        """The client ``projectClients`` maps ``project`` to, else None (``internal``)."""
        client = self.project_clients.get(project)
        return None if client is None or client.lower() == "internal" else client

    def billing_for(self, client: str | None) -> ClientBilling | None:
        """The configured terms of ``client`` (case-insensitive), or None."""
        if not client:
            return None
        wanted = client.strip().lower()
        return next((terms for name, terms in self.clients.items() if name.strip().lower() == wanted), None)

    @field_validator("vault_root", mode="before")
    @classmethod
    def _expand(cls, value: object) -> Path:
        if value is None:
            return default_vault_root()
        if not isinstance(value, (str, Path)):
            raise InvalidFieldError("vaultRoot", "must be a folder path")
        text = str(value)
        if not text.strip():
            raise InvalidFieldError("vaultRoot", "must not be empty")
        if "\x00" in text:
            raise InvalidFieldError("vaultRoot", "contains a NUL character")
        try:
            path = Path(text).expanduser().resolve()
        except (RuntimeError, OSError) as exc:
            raise InvalidFieldError("vaultRoot", str(exc)) from None
        if path.exists() and not path.is_dir():  # /dev/null, a file: refused where it is set, not by each command after
            raise InvalidFieldError("vaultRoot", f"{path} is not a folder")
        repository = enclosing_repository(path)
        if repository is None and (path / ".git").exists() and not is_vault_repository(path):
            raise InvalidFieldError(
                "vaultRoot", f"{path} is a git repository with other content; keep the vault outside product repositories"
            )
        if repository is not None:
            raise InvalidFieldError(
                "vaultRoot", f"{path} is inside the git repository {repository}; keep the vault outside product repositories"
            )
        outer = next((parent for parent in path.parents if (parent / ".memo" / "index.sqlite").is_file()
                      and (parent / "projects").is_dir()), None)
        if outer is not None:  # its records and index beside the other vault's, never seen by it (found by a tester)
            raise InvalidFieldError("vaultRoot", f"{path} is inside the vault {outer}; give that vault, or a folder "
                                                 "outside it")
        return path


class Settings(_SettingsData):
    """Runtime settings (the fields: :class:`_SettingsData`).

    ``Settings(**values)`` reads its sources, strongest first: ``values`` (by field name or
    camelCase key), the ``MEMO_*`` environment (:func:`_environment_values`), the config file
    (:func:`config_path`), the defaults. Tables merge key by key.

    Raises
    ------
    pydantic.ValidationError
        A value is refused (its ``loc`` is the config file's key).
    InvalidFieldError
        The config file cannot be read, or an environment variable is not the JSON its field
        needs.
    """

    model_config = ConfigDict(extra="ignore", alias_generator=to_camel, populate_by_name=True, defer_build=False)

    def __init__(self, **values: Any) -> None:
        fields = type(self).model_fields
        super().__init__(**_merged(_keyed(values, fields), _merged(_keyed(_environment_values(fields), fields),
                                                                   _keyed(_config_file_values(), fields))))

    @classmethod
    def isolated(cls, **values: Any) -> "Settings":
        """Settings of ``values`` and the defaults alone: no ``MEMO_*`` environment, no config
        file — the sample vault's (``memo demo``, the notebooks on it), whose numbers are the
        same on every machine whatever the person's client terms.

        Raises
        ------
        pydantic.ValidationError
            A value is refused.
        """
        settings = cls.__new__(cls)
        _SettingsData.__init__(settings, **_keyed(values, cls.model_fields))
        return settings


def _model_of(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model a field holds (``Ports``), or whose values a table of it holds
    (``dict[str, ClientBilling]``: ``(ClientBilling, True)``), else ``(None, False)``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    if get_origin(annotation) is dict:
        value = get_args(annotation)[1:]
        if value and isinstance(value[0], type) and issubclass(value[0], BaseModel):
            return value[0], True
    return None, False


def _keyed(data: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """``data`` with every key of a field spelled one way (:func:`_field_keys`), in the tables
    of its models too: ``stalled_minutes`` in the environment and ``stalledMinutes`` in the file
    are one key, the stronger source's value wins."""
    keys = _field_keys(fields)
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = keys.get(key, key)
        field = next((f for n, f in fields.items() if keys.get(n) == name), None)
        model, table = _model_of(field.annotation) if field is not None else (None, False)
        if model is not None and isinstance(value, dict):
            if table:
                value = {k: _keyed(v, model.model_fields) if isinstance(v, dict) else v for k, v in value.items()}
            else:
                value = _keyed(value, model.model_fields)
        out[name] = value
    return out


def _field_keys(fields: dict[str, Any]) -> dict[str, str]:
    """Every spelling of a :class:`Settings` field (its name, its camelCase alias, its
    validation aliases) to one key, its first alias, so that sources merge field by field
    whatever their spelling and a refusal names the key as the config file spells it."""
    keys: dict[str, str] = {}
    for name, field in fields.items():
        choices = [c for c in getattr(field.validation_alias, "choices", []) if isinstance(c, str)]
        spellings = choices or [field.alias or name]
        for spelling in (name, *spellings):
            keys[spelling] = spellings[0]
    return keys


_VAULT_ENTRIES = {".git", ".memo", "projects", "invoices", ".gitignore", ".gitattributes", "README.md"}


def is_vault_repository(path: Path) -> bool:
    """A git repository used as a vault (vault-git): it already holds a vault, or nothing yet."""
    try:
        entries = {entry.name for entry in path.iterdir()}
    except OSError:
        return False
    return (path / ".memo").is_dir() or entries <= _VAULT_ENTRIES


def enclosing_repository(path: Path) -> Path | None:
    """The git work tree strictly above ``path``, if any (a vault that is itself a git
    repository, for vault-git, is fine)."""
    for parent in path.parents:
        if (parent / ".git").exists():
            return parent
    return None


def config_key_text(parts: list[str] | tuple[str, ...]) -> str:
    """A dotted config key as written in TOML: ``hybrid.remoteUrl``, ``clients."Acme Corp".currency``."""
    return ".".join(p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else '"' + p.replace('"', '\\"') + '"'
                    for p in map(str, parts))


@dataclass(frozen=True)
class ConfigProblem:
    """One value the settings refuse.

    Attributes
    ----------
    parts : tuple[str, ...]
        The key as in the config file, split (``("clients", "Acme", "currency")``).
    reason : str
        Why it is refused, one line.
    kind : str
        The pydantic error type (``missing``, ``value_error``, ``extra_forbidden`` …),
        ``unknown_key`` for an unknown top-level key, ``invalid`` for a refusal raised as an
        :class:`~memo_analytics.domain.errors.InvalidFieldError` (``vaultRoot``).
    source : str
        Where the value came from: ``config file``, ``environment (MEMO_…)`` or ``command line``.
    """

    parts: tuple[str, ...]
    reason: str
    kind: str = "invalid"
    source: str = "config file"

    @property
    def key(self) -> str:
        """The dotted key (:func:`config_key_text`)."""
        return config_key_text(self.parts)

    def __str__(self) -> str:
        if self.source == "config file":
            return f"Invalid config {self.key}: {self.reason}"
        where = self.source.removeprefix("environment (").removesuffix(")") if self.source.startswith(
            "environment (") else self.source
        return f"Invalid {self.key} ({where}): {self.reason}"


def refused_value(key: str, error: Any) -> str:
    """``, not '95,50' (a decimal point, not a comma: 95.50)``: the refused value when it is a
    short scalar of a key that holds no secret, so the person sees what the file says (a URL's
    user and password masked, a webhook's path and query too: the message may reach a
    long-running process's log)."""
    value = error.get("input")
    if (not isinstance(value, (str, int, float)) or isinstance(value, bool) or len(str(value)) > 60
            or re.search(r"token|secret|password|key", key, re.I) or str(value) in str(error.get("msg"))):
        return ""
    if isinstance(value, str):
        value = re.sub(r"(?<=//)[^/@\s]+@", "***@", value)
        if re.search(r"webhook", key, re.I):  # a webhook's path (and query) is its secret
            value = re.sub(r"^([^/]*//[^/?#]*)[/?#].+$", r"\1/***", value)
    hint = ""
    if isinstance(value, str) and "decimal" in error.get("type", "") and re.fullmatch(r"\s*\d+,\d+\s*", value):
        hint = f" (a decimal point, not a comma: {value.strip().replace(',', '.')})"
    return f", not {value!r}{hint}"


def _problems_of(exc: Exception, top: str, source: str) -> list[ConfigProblem]:
    if isinstance(exc, ValidationError):
        found = []
        for error in exc.errors():
            parts = tuple(str(p) for p in error["loc"]) or (top,)
            reason = error["msg"].removeprefix("Value error, ") + refused_value(config_key_text(parts), error)
            if error["type"] == "extra_forbidden":
                reason = "unknown key"
            found.append(ConfigProblem(parts, reason, error["type"], source))
        return found
    reason = exc.reason if isinstance(exc, InvalidFieldError) else str(exc)
    return [ConfigProblem((top,), reason, "invalid", source)]


def config_file_problems(data: dict[str, Any], folder: Path) -> list[ConfigProblem]:
    """Every problem of the config file's ``data`` (as :func:`load_config_toml` reads it),
    key by key, so that one bad value never hides another.

    Paths are read against ``folder`` (:func:`resolve_config_paths`); the environment is not
    looked at. Top-level keys are independent (no rule of :class:`Settings` ties two of them),
    so the file is valid exactly when this is empty.

    Returns
    -------
    list[ConfigProblem]
        In the file's key order; an unknown top-level key is ``unknown key``.
    """
    resolved = resolve_config_paths(data, folder)
    problems: list[ConfigProblem] = []
    for top, value in resolved.items():
        if top not in _CONFIG_KEYS:
            problems.append(ConfigProblem((top,), f"unknown key (known: {', '.join(sorted(_CONFIG_KEYS))})",
                                          "unknown_key"))
            continue
        try:
            _SettingsData.model_validate({top: value})
        except (ValidationError, MemoError) as exc:
            problems.extend(_problems_of(exc, top, "config file"))
    return problems


def _without(data: dict[str, Any], parts: tuple[str, ...]) -> None:
    """Remove the deepest table entry of ``data`` on the way to ``parts`` (a missing or list
    leaf takes its table entry with it)."""
    node, trail = data, []
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            break
        trail.append((node, part))
        node = node[part]
    if trail:
        holder, part = trail[-1]
        del holder[part]


def usable_config_data(data: dict[str, Any], folder: Path) -> tuple[dict[str, Any], list[ConfigProblem]]:
    """The config file's ``data`` without its refused values (paths made absolute against
    ``folder``), and the problems that were left out (:func:`config_file_problems`)."""
    problems = config_file_problems(data, folder)
    usable = resolve_config_paths(data, folder)
    for problem in problems:
        _without(usable, problem.parts)
    for _ in range(len(_CONFIG_KEYS)):  # a table that lost a leaf may still be refused
        remaining = config_file_problems(usable, folder)
        if not remaining:
            break
        for problem in remaining:
            _without(usable, problem.parts)
    return usable, problems


#: Environment variables of the fields whose name is not ``MEMO_<FIELD>``.
ENV_NAMES = {"vault_root": ("MEMO_VAULT", "MEMO_VAULT_ROOT"), "default_project": ("MEMO_PROJECT", "MEMO_DEFAULT_PROJECT")}


def env_name(field: str) -> str | None:
    """The ``MEMO_*`` variable that sets the :class:`Settings` field ``field`` in this process, if
    any, spelled as it is set (``memo_timezone`` is read as ``MEMO_TIMEZONE`` is)."""
    present = _memo_environment()
    for name in ENV_NAMES.get(field, (f"MEMO_{field.upper()}",)):
        if name in present and present[name][1].strip():
            return present[name][0]
    return None


def _field_of(key: str) -> str | None:
    """The :class:`Settings` field a key of an error names (its name, alias or env alias)."""
    keys = _field_keys(Settings.model_fields)
    if key not in keys:
        return None
    return next(name for name in Settings.model_fields if keys[name] == keys[key])


def settings_despite_problems(**init: Any) -> tuple[Settings, list[ConfigProblem]]:
    """The effective settings with every refused value left out, and the refused values.

    For ``memo config show``, which must show and explain a broken configuration instead of
    refusing to run: a refused value of the config file (:func:`usable_config_data`), of the
    environment or of ``init`` (the command line) is left out — the next source, or the
    default, applies — and listed.

    Raises
    ------
    InvalidFieldError
        The config file cannot be read as TOML at all (``Invalid config: <path>: …``), or
        even a default is refused (a default vault inside a git repository).
    """
    path = config_path()
    usable, problems = usable_config_data(load_config_toml(path), path.parent)
    token = _FILE_DATA.set(usable)
    replaced: set[str] = set()
    left_out: set[str] = set()
    try:
        while True:
            env_token = _ENV_LEFT_OUT.set(frozenset(left_out))
            try:
                return Settings(**init), problems
            except (ValidationError, InvalidFieldError) as exc:
                if isinstance(exc, ValidationError):
                    loc = exc.errors()[0]["loc"]
                    name = _field_of(str(loc[0])) if loc else None
                else:
                    name = _field_of(exc.field)
                env = env_name(name) if name else None
                if name is None or name in replaced or (name not in init and env is None):
                    raise  # not the command line's or the environment's: the default itself is refused
                replaced.add(name)
                alias = Settings.model_fields[name].alias or name
                source = "command line" if name in init else f"environment ({env})"
                problems.extend(ConfigProblem((alias, *p.parts[1:]), p.reason, p.kind, p.source)
                                for p in _problems_of(exc, alias, source) if _field_of(p.parts[0]) == name)
                if name in init:  # the file's value (checked) or the default takes the place of the refused one
                    init[name] = getattr(_SettingsData.model_validate({alias: usable[alias]} if alias in usable
                                                                      else {}), name)
                else:  # the environment's: left out, as if it were not set
                    left_out.add(name)
            finally:
                _ENV_LEFT_OUT.reset(env_token)
    finally:
        _FILE_DATA.reset(token)
