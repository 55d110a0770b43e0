"""Layering stays true (STYLE: imports point one way; packaging: tests/unit/test_packaging.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_imports_point_one_way():
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint) if lint.exists() else "lint-imports"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for contract in ("layers point one way", "interfaces never import each other",
                     "no import cycles between the modules of a package", "SQL lives only in index/ and analytics/"):
        assert contract in proc.stdout
    assert "4 kept, 0 broken" in proc.stdout


def test_the_sql_contract_sees_calls_and_statements_and_not_words():
    from tests.contracts import sql_in_source

    source = (
        'rows = conn.execute(q)\n'
        'Q = "SELECT id FROM records"\n'
        'F = f"INSERT INTO t VALUES ({x})"\n'
        'P = """\n  PRAGMA user_version"""\n'
        'word = "begin"\n'
        'text = "select the text you want"\n'
        'doc = "Update the summary"\n'
    )
    assert [line for line, _ in sql_in_source(source)] == [1, 2, 3, 4]
