"""A vault opened for reading only: a further vault of ``Settings.vaults`` (SPEC §2.7, §3.4).

:class:`ReadOnlyVaultStore` is a :class:`~memo_analytics.services.store.VaultStore` whose
index is opened read-only (``mode=ro``, ``query_only``): nothing is created, migrated,
repaired or written in that vault, and taking its vault lock — which every write does — is
refused. Every read service (``list``, ``search``, ``get``, stories, facets) takes it as it
takes the normal store.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from typing import Iterator

from ..domain.shell import shell_word
from ..domain.errors import InvalidFieldError
from ..index import store as index
from .store import VaultStore


class ReadOnlyVaultStore(VaultStore):
    """A vault read, never written (see the module notes).

    Raises
    ------
    InvalidFieldError
        On first read, ``Invalid vault: … holds no vault index`` when the vault has no index
        (it is never built here); on a write, ``Invalid vault: … is read, never written``.
    """

    @property
    def conn(self) -> sqlite3.Connection:
        with self._conn_guard:
            if self._conn is None:
                path = self.layout.index_path
                if not path.is_file():
                    raise InvalidFieldError("vault", f"{self.root} holds no vault index; "
                                                     f"run `memo --vault-root {shell_word(str(self.root))} reindex`")
                self._conn = index.connect_readonly(path)
            return self._conn

    @contextmanager
    def lock(self) -> Iterator[None]:
        raise InvalidFieldError("vault", f"{self.root} is a further vault: it is read, never written")
        yield  # pragma: no cover - never reached
