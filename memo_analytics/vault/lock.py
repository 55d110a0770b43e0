"""The vault lock (SPEC §2.4): one lock per vault, re-entrant, across processes and threads.

Turn allocation and the generic record upsert both take this lock; because it is
re-entrant, a service that allocates a turn can call the upsert while holding it.
"""

from __future__ import annotations

import threading
from pathlib import Path

from filelock import FileLock

_LOCKS: dict[str, FileLock] = {}
_GUARD = threading.Lock()


def vault_lock(lock_path: Path, timeout_s: float = 60.0) -> FileLock:
    """The process-wide re-entrant lock object for the vault whose lock file is ``lock_path``.

    ``filelock.FileLock`` is re-entrant within a thread and exclusive across threads
    (thread-local mode) and across processes (``flock``). One object per path per process
    keeps the re-entrancy counter shared.
    """
    key = str(Path(lock_path).resolve())
    with _GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            Path(lock_path).parent.mkdir(parents=True, exist_ok=True)
            lock = FileLock(key, timeout=timeout_s, is_singleton=False)
            _LOCKS[key] = lock
        return lock
