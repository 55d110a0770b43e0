"""Why writes into a vault fail, for a team daemon's health probe (found by a team lead: it said
"ok" while every push was refused)."""

from __future__ import annotations

import os
import shutil
from collections import namedtuple

from memo_analytics.services.maintenance import MIN_FREE_BYTES, write_problems


def test_a_vault_that_takes_writes_has_no_problem(tmp_path):
    (tmp_path / ".memo").mkdir()
    assert write_problems(tmp_path) == []


def test_a_read_only_mount_and_a_full_disk_are_said(tmp_path, monkeypatch):
    (tmp_path / ".memo").mkdir()
    real = os.statvfs

    class ReadOnly:
        def __init__(self, path):
            self.f_flag = real(path).f_flag | os.ST_RDONLY

    monkeypatch.setattr(os, "statvfs", ReadOnly)
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10 ** 9, 10 ** 9, MIN_FREE_BYTES // 2))
    assert write_problems(tmp_path) == [
        f"{tmp_path} is on a file system mounted read-only: writes fail",
        f"the disk of {tmp_path} has {MIN_FREE_BYTES // 2 // 1024} KB free: writes fail"]
