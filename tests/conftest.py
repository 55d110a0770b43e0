"""Shared fixtures: a fresh vault per test, and the real transcripts in ../shared/realdata."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from memo_analytics.config import Settings
from memo_analytics.services.store import VaultStore

REPO = Path(__file__).resolve().parents[1]

# no developer's settings leak into a test: their MEMO_* variables (a MEMO_VAULT of their own, a
# MEMO_TIMEZONE …) are cleared, and ~/.memo/config.toml is not read (tests that need one write their own)
for _name in [n for n in os.environ if n.startswith("MEMO_") and n != "MEMO_REALDATA"]:
    del os.environ[_name]
# an empty config file of the run's own (a missing one is said by every command: a note in every output)
_CONFIG_DIR = tempfile.mkdtemp(prefix="memo-tests-config-")
atexit.register(shutil.rmtree, _CONFIG_DIR, True)
os.environ["MEMO_CONFIG"] = str(Path(_CONFIG_DIR) / "config.toml")
Path(os.environ["MEMO_CONFIG"]).write_text("", encoding="utf-8")


def realdata_root() -> Path:
    """``$MEMO_REALDATA``, else ``<repo>/../shared/realdata``, else ``/work/shared/realdata``."""
    candidates = [os.environ.get("MEMO_REALDATA"), REPO.parent / "shared" / "realdata", Path("/work/shared/realdata")]
    for candidate in candidates:
        if candidate and (Path(candidate) / "MANIFEST.tsv").is_file():
            return Path(candidate)
    raise RuntimeError("real transcripts not found: set MEMO_REALDATA to the shared/realdata folder")


@pytest.fixture(scope="session")
def realdata() -> Path:
    return realdata_root()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(vault_root=tmp_path / "vault", timezone="UTC")


@pytest.fixture
def store(settings: Settings):
    vault = VaultStore(settings)
    yield vault
    vault.close()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A product repository: a fresh git work tree named ``product`` (its project's slug)."""
    root = tmp_path / "product"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root
