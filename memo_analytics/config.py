"""Settings: one pydantic model, built once per entry point and passed as a value.

Sources, strongest first: explicit arguments, ``MEMO_*`` environment variables
(``MEMO_VAULT`` for the vault root), then defaults. The default vault lives under the
user's home (``~/.memo/vault``), never in the current repository (SPEC §2.1).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .domain.errors import InvalidFieldError

#: Largest prompt body accepted, in bytes of UTF-8 (bigger bodies are refused, not cut).
MAX_BODY_BYTES = 1_000_000


def default_vault_root() -> Path:
    """``~/.memo/vault``: outside every product repository."""
    return Path.home() / ".memo" / "vault"


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
    """

    model_config = SettingsConfigDict(env_prefix="MEMO_", extra="ignore")

    vault_root: Path = Field(
        default_factory=default_vault_root, validation_alias=AliasChoices("vault_root", "MEMO_VAULT")
    )
    timezone: str | None = None
    default_project: str = Field(
        default="default", validation_alias=AliasChoices("default_project", "MEMO_PROJECT")
    )
    idle_gap_minutes: int = Field(default=30, ge=1, le=525_600)
    capture_ignore: list[str] = Field(default_factory=list)

    @field_validator("vault_root", mode="before")
    @classmethod
    def _expand(cls, value: object) -> Path:
        if value is None:
            return default_vault_root()
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
