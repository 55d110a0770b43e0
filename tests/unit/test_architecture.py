"""Packaging and layering stay true (STYLE: layout, imports point one way)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_package_is_listed_for_the_wheel():
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(REPO).parts)
        for p in (REPO / "memo_analytics").rglob("__init__.py")
    } | {"memo_analytics.report_templates"}
    assert found == listed


def test_report_templates_ship_with_the_package():
    from memo_analytics.reports.render import templates_dir

    names = {p.name for p in templates_dir().iterdir()}
    assert {"timesheet.html.j2", "report.css"} <= names


def test_imports_point_one_way():
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint) if lint.exists() else "lint-imports"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 kept, 0 broken" in proc.stdout
