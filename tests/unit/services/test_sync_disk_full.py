"""A team daemon whose disk is full says so (HTTP 507), whichever write of a push meets it."""

from __future__ import annotations

import errno

import pytest

from memo_analytics.config import Settings
from memo_analytics.domain.errors import DiskFullError
from memo_analytics.services import sync
from memo_analytics.services.store import VaultStore


def test_the_count_of_a_laptops_pushes_on_a_full_disk_is_a_full_disk(tmp_path, monkeypatch):
    """Found by a team lead: a push to a daemon of 0 bytes free was "HTTP 400 … cannot be written
    (No space left on device …; move what is there away)": a client's error, and advice that reads
    as something in the way."""
    store = VaultStore(Settings(vault_root=tmp_path / "team", timezone="UTC"))
    store.root.mkdir(parents=True)

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sync, "write_json_state", full)
    with pytest.raises(DiskFullError, match=r"^No space left on the disk of .*team: nothing is damaged"):
        sync.received_push(store, "a" * 32, 3)
    store.close()
