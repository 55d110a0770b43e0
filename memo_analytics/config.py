"""Settings: one pydantic model, built once per entry point and passed as a value.

Sources, strongest first: explicit arguments, ``MEMO_*`` environment variables
(``MEMO_VAULT`` for the vault root), the TOML config file (``$MEMO_CONFIG``, else
``~/.memo/config.toml``; camelCase keys as on the wire), then defaults. The default vault
lives under the user's home (``~/.memo/vault``), never in the current repository (SPEC §2.1).

Example config file::

    vaultRoot = "~/.memo/vault"
    timezone = "Europe/Berlin"
    vaults = ["~/team/vault"]           # further vaults read by crossProject reports
    templatesDir = "~/.memo/templates"  # your own timesheet/invoice templates

    [clients."Acme Corp"]
    hourlyRate = "120.00"
    currency = "EUR"

    [ports]
    status = 3124
"""

from __future__ import annotations

import os
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from .domain.errors import InvalidFieldError, MemoError

#: Largest prompt body accepted, in bytes of UTF-8 (bigger bodies are refused, not cut).
MAX_BODY_BYTES = 1_000_000


def default_vault_root() -> Path:
    """``~/.memo/vault``: outside every product repository."""
    return Path.home() / ".memo" / "vault"


def config_path() -> Path:
    """The config file: ``$MEMO_CONFIG``, else ``~/.memo/config.toml`` (it need not exist)."""
    given = os.environ.get("MEMO_CONFIG")
    return Path(given).expanduser() if given and given.strip() else Path.home() / ".memo" / "config.toml"


def read_config_file(path: Path | None = None) -> dict[str, Any]:
    """The config file's content (empty when there is none).

    Raises
    ------
    InvalidFieldError
        ``Invalid config: <path>: <what is wrong>`` for unreadable or broken TOML.
    """
    path = path or config_path()
    if not path.exists():
        return {}
    if not path.is_file():
        raise InvalidFieldError("config", f"{path} is not a regular file")
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidFieldError("config", f"{path}: {exc}") from None
    except UnicodeDecodeError:
        raise InvalidFieldError("config", f"{path} is not UTF-8") from None
    except RecursionError:
        raise InvalidFieldError("config", f"{path}: nested too deeply") from None
    except OSError as exc:
        raise InvalidFieldError("config", f"{path}: {exc.strerror or type(exc).__name__}") from None
    unknown = sorted(set(data) - _CONFIG_KEYS)
    if unknown:
        raise InvalidFieldError("config", f"{path}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_CONFIG_KEYS))})")
    return data


_CONFIG_KEYS = {"vaultRoot", "timezone", "defaultProject", "idleGapMinutes", "captureIgnore", "vaults", "clients",
                "templatesDir", "ports", "operator", "hybrid", "vaultGit", "mode", "remote"}


class _ConfigFileSource(PydanticBaseSettingsSource):
    def get_field_value(self, field, field_name):  # pragma: no cover - __call__ does the work
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return read_config_file()


class ClientBilling(BaseModel):
    """Billing terms of one client (config ``[clients."<name>"]``, SPEC §5.1).

    ``hourly_rate`` is a decimal amount of ``currency`` (an ISO 4217 code) per hour.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    hourly_rate: Decimal = Field(ge=0, max_digits=12, decimal_places=4)
    currency: str = Field(pattern=r"^[A-Z]{3}$")


class Ports(BaseModel):
    """Ports of the servers (config ``[ports]``, SPEC §3.3): ``status`` for the API and the
    dashboard; ``mcp`` for the MCP tool over streamable HTTP beside them (default: status + 1;
    0 turns it off)."""

    model_config = ConfigDict(extra="forbid")

    status: int = Field(default=3124, ge=1, le=65535)
    mcp: int | None = Field(default=None, ge=0, le=65535)


class OperatorPolicy(BaseModel):
    """Thresholds of the operator digest (config ``[operator]``, SPEC §6).

    ``stalled_minutes``: an open session with no turn for this long is stalled.
    ``open_too_long_hours``: an open session started this long ago would inflate a timesheet.
    ``handoff_unclaimed_hours``: a pending hand-off waits this long before it is listed.
    ``horizon_days``: items older than this are counted, not listed.
    ``debounce_seconds``: a change of the vault is folded into one recompute within this time.
    ``webhook_url`` / ``settle_seconds`` / ``notify_min_interval_seconds``: the notification
    (one per settle window, at most one per interval, never an item already sent).
    ``max_auto_actions_per_hour``: past this many automatic actions on one session in an
    hour, delegated actions fall back to proposals.
    ``stories_dir``: where the ``export_story`` action writes stories (outside any vault).
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    stalled_minutes: int = Field(default=60, ge=1, le=100_000)
    open_too_long_hours: float = Field(default=10.0, gt=0, le=10_000)
    handoff_unclaimed_hours: float = Field(default=4.0, ge=0, le=10_000)
    horizon_days: int = Field(default=14, ge=1, le=3650)
    debounce_seconds: float = Field(default=5.0, ge=0, le=3600)
    webhook_url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    settle_seconds: float = Field(default=60.0, ge=0, le=86_400)
    notify_min_interval_seconds: float = Field(default=3600.0, ge=0, le=604_800)
    max_auto_actions_per_hour: int = Field(default=3, ge=0, le=1000)
    stories_dir: Path = Field(default_factory=lambda: Path.home() / ".memo" / "stories")

    @field_validator("stories_dir", mode="before")
    @classmethod
    def _expand_stories(cls, value: object) -> object:
        return Path(str(value)).expanduser() if isinstance(value, (str, Path)) else value


class HybridSync(BaseModel):
    """Hybrid mode (config ``[hybrid]``, SPEC §2.7): local writes plus a debounced push of
    changed records to the daemon at ``remote_url`` (its token in ``token``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    remote_url: str | None = Field(default=None, pattern=r"^https?://[^\s/]+(?::\d+)?/?$")
    debounce_ms: int = Field(default=2000, ge=0, le=3_600_000)
    token: str | None = None
    batch_size: int = Field(default=200, ge=1, le=10_000)


class RemoteDaemon(BaseModel):
    """Remote mode (config ``[remote]``): every tool call goes to the daemon at ``url``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    url: str | None = Field(default=None, pattern=r"^https?://[^\s/]+(?::\d+)?/?$")
    token: str | None = None
    timeout_seconds: float = Field(default=30.0, gt=0, le=600)


class VaultGit(BaseModel):
    """Vault-git (config ``[vaultGit]``): the vault is a git repository; sync commits changed
    files, pulls, resolves conflicts like hybrid, and pushes to ``remote``/``branch``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    enabled: bool = False
    remote: str = Field(default="origin", pattern=r"^[A-Za-z0-9._-]+$")
    branch: str = Field(default="main", pattern=r"^[A-Za-z0-9._/-]+$")


class Settings(BaseSettings):
    """Runtime settings.

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
        Hourly rate and currency per client name (matched case-insensitively) for invoices.
    templates_dir : Path | None
        A folder whose templates (``timesheet.html.j2``, ``invoice.html.j2``, ``report.css``)
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
    """

    model_config = SettingsConfigDict(env_prefix="MEMO_", extra="ignore", alias_generator=to_camel,
                                      populate_by_name=True)

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
    templates_dir: Path | None = None
    ports: Ports = Field(default_factory=Ports)
    operator: OperatorPolicy = Field(default_factory=OperatorPolicy)
    mode: Literal["local", "hybrid", "remote"] = "local"
    hybrid: HybridSync = Field(default_factory=HybridSync)
    remote: RemoteDaemon = Field(default_factory=RemoteDaemon)
    vault_git: VaultGit = Field(default_factory=VaultGit)

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):
        return init_settings, env_settings, _ConfigFileSource(settings_cls)

    @field_validator("vaults", mode="before")
    @classmethod
    def _expand_vaults(cls, value: object) -> object:
        if isinstance(value, list):
            return [Path(str(item)).expanduser() for item in value]
        return value

    @field_validator("templates_dir", mode="before")
    @classmethod
    def _expand_templates(cls, value: object) -> object:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if not isinstance(value, (str, Path)):
            raise ValueError("must be a folder path")
        path = Path(str(value)).expanduser()
        if not path.is_dir():
            raise ValueError(f"{path} is not a folder")
        return path

    @field_validator("timezone", mode="before")
    @classmethod
    def _known_zone(cls, value: object) -> object:
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise ValueError("must be an IANA time zone name such as Europe/Berlin")
        from .domain.clock import resolve_zone

        try:
            resolve_zone(value)
        except MemoError as exc:
            raise ValueError(str(exc).split(": ", 1)[-1]) from None
        return value.strip()

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
        repository = enclosing_repository(path)
        if repository is None and (path / ".git").exists() and not is_vault_repository(path):
            raise InvalidFieldError(
                "vaultRoot", f"{path} is a git repository with other content; keep the vault outside product repositories"
            )
        if repository is not None:
            raise InvalidFieldError(
                "vaultRoot", f"{path} is inside the git repository {repository}; keep the vault outside product repositories"
            )
        return path


_VAULT_ENTRIES = {".git", ".memo", "projects", ".gitignore", ".gitattributes", "README.md"}


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
