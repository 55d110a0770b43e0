"""The temporary file every record write starts with (``vault.io.write_temporary``): created
exclusively beside its record, named as the vault's open recognises memo's own leftovers, never
over a file that is there, in a folder made when missing."""

from __future__ import annotations

import itertools
import os
import stat
from pathlib import Path

from memo_analytics.vault import io
from memo_analytics.vault.layout import _OWN_TEMPORARY


def test_a_temporary_file_is_named_as_the_open_clears_them_and_holds_the_bytes(tmp_path):
    record = tmp_path / "projects" / "p" / "prompts" / "prompt-s-t1.md"  # no folder yet
    tmp = io.write_temporary(record, b"---\nid: x\n---\n", durable=True)
    assert tmp.parent == record.parent and _OWN_TEMPORARY.fullmatch(tmp.name)
    assert tmp.read_bytes() == b"---\nid: x\n---\n"
    assert stat.S_IMODE(tmp.stat().st_mode) == io._FILE_MODE
    assert io.write_temporary(record, b"", mode=0o600).stat().st_mode & 0o777 == 0o600


def test_a_name_already_taken_is_never_written_over(tmp_path, monkeypatch):
    record = tmp_path / "s.md"
    monkeypatch.setattr(io, "_TEMPORARY_NAMES", itertools.count(7))
    taken = tmp_path / f".s.md.{7:08x}.tmp"
    taken.write_bytes(b"a crash left me")
    os.symlink(tmp_path / "elsewhere", tmp_path / f".s.md.{8:08x}.tmp")  # a link is not followed either
    tmp = io.write_temporary(record, b"new")
    assert tmp.name == f".s.md.{9:08x}.tmp" and tmp.read_bytes() == b"new"
    assert taken.read_bytes() == b"a crash left me" and not (tmp_path / "elsewhere").exists()


def test_a_folder_that_takes_no_new_file_is_said_as_the_system_says_it():
    """Found by an attacker: ``-o /proc/self/x.pdf`` tried 1,000 names and said "cannot write …
    (None)". A folder that is there and still refuses a new file is the system's own error."""
    import pytest

    with pytest.raises(FileNotFoundError) as raised:
        io.write_temporary(Path("/proc/self/x.pdf"), b"x")
    assert raised.value.strerror == "No such file or directory"
