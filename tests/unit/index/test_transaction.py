"""The index's one transaction helper (:func:`memo_analytics.index.store.transaction`)."""

from __future__ import annotations

import sqlite3

import pytest

from memo_analytics.index.store import begin, rollback, transaction


def _conn() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE t(x)")
    return conn


def test_an_error_sqlite_ended_the_transaction_on_is_raised_not_hidden():
    """Found by a tester: on a full disk SQLite rolls the transaction back by itself; the
    helper's ROLLBACK then failed with "cannot rollback - no transaction is active", and
    ``memo reindex`` called the index damaged instead of the disk full."""
    conn = _conn()
    with pytest.raises(sqlite3.OperationalError, match="database or disk is full"):
        with transaction(conn):
            conn.execute("INSERT INTO t VALUES (1)")
            conn.execute("ROLLBACK")  # what SQLite does by itself on SQLITE_FULL
            raise sqlite3.OperationalError("database or disk is full")
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0 and not conn.in_transaction


def test_inside_a_batch_the_step_is_undone_and_an_ended_batch_raises_its_own_error():
    conn = _conn()
    begin(conn)
    with pytest.raises(ValueError):
        with transaction(conn):
            conn.execute("INSERT INTO t VALUES (1)")
            raise ValueError("a bad record")
    with transaction(conn):
        conn.execute("INSERT INTO t VALUES (2)")
    with pytest.raises(sqlite3.OperationalError, match="database or disk is full"):
        with transaction(conn):
            conn.execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")
    rollback(conn)
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0
