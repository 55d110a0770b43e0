"""Atomic Markdown + YAML frontmatter I/O (SPEC §2.3, §2.4).

Writes go to a temporary file in the same folder, are fsynced, then renamed over the
target, so a crash leaves either the old or the new file, never a torn one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import frontmatter
import yaml

from ..domain.errors import CorruptRecordError


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temp file + fsync + rename + dir fsync)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def dump_record(meta: dict[str, Any], body: str) -> str:
    """Render frontmatter + body as the Markdown text stored in the vault."""
    post = frontmatter.Post(body, **meta)
    return frontmatter.dumps(post, sort_keys=False, allow_unicode=True, width=1_000_000) + "\n"


def write_record(path: Path, meta: dict[str, Any], body: str) -> None:
    """Atomically write one record file."""
    atomic_write_bytes(path, dump_record(meta, body).encode("utf-8"))


def read_record(path: Path) -> tuple[dict[str, Any], str]:
    """Read one record file into ``(frontmatter dict, body)``.

    Raises
    ------
    CorruptRecordError
        When the file is not UTF-8, has no YAML frontmatter mapping, or the YAML is broken.
        The file itself is never modified.
    """
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptRecordError(str(path), f"not UTF-8 ({exc.reason})") from None
    if not text.startswith("---"):
        raise CorruptRecordError(str(path), "no YAML frontmatter")
    try:
        post = frontmatter.loads(text)
    except yaml.YAMLError as exc:
        raise CorruptRecordError(str(path), f"broken frontmatter ({str(exc).splitlines()[0]})") from None
    if not post.metadata or "id" not in post.metadata:
        raise CorruptRecordError(str(path), "frontmatter has no id")
    meta = {key: _plain(value) for key, value in post.metadata.items()}
    return meta, post.content


def _plain(value: Any) -> Any:
    """Hand-edited YAML may hold unquoted timestamps; keep them as stored ISO strings."""
    from datetime import date, datetime, timezone

    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        utc = value.astimezone(timezone.utc)
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
    if isinstance(value, date):
        return value.isoformat()
    return value
