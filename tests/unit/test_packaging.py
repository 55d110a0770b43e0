"""The wheel ships what the product runs (STYLE: layout): every package of memo_analytics/,
and the two folders at the top of the repository that ship inside it — report_templates/ as
``memo_analytics.report_templates`` and dashboards/ (the Panel app) as
``memo_analytics.dashboards`` (``[tool.setuptools.package-dir]``)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SETUPTOOLS = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
#: The dashboard's files as the source tree holds them (dashboards/app.py …).
DASHBOARD_SOURCES = sorted(p.relative_to(REPO / "dashboards").as_posix() for p in (REPO / "dashboards").rglob("*.py")
                           if "__pycache__" not in p.parts)


def _packages_under(folder: Path, package: str) -> set[str]:
    return {".".join([package, *p.parent.relative_to(folder).parts]) for p in folder.rglob("__init__.py")
            if "__pycache__" not in p.parts}


def test_every_package_is_listed_for_the_wheel():
    found = _packages_under(REPO / "memo_analytics", "memo_analytics")
    for package, folder in SETUPTOOLS["package-dir"].items():  # folders at the top, shipped inside the package
        found |= _packages_under(REPO / folder, package) | {package}
    assert found == set(SETUPTOOLS["packages"])


def test_dashboards_at_the_top_of_the_repository_are_the_installed_memo_analytics_dashboards():
    assert SETUPTOOLS["package-dir"]["memo_analytics.dashboards"] == "dashboards"
    assert not (REPO / "memo_analytics" / "dashboards").exists()  # one copy of the app, at the top
    spec = importlib.util.find_spec("memo_analytics.dashboards.app")
    assert spec is not None and Path(spec.origin) == REPO / "dashboards" / "app.py", \
        "memo_analytics.dashboards is not the dashboards/ folder: run `pip install -e .` again"
    assert {"app.py", "activity_view.py", "digest_view.py", "prompts_view.py", "rules_view.py",
            "style.py"} <= set(DASHBOARD_SOURCES)


def test_report_templates_ship_with_the_package():
    from memo_analytics.reports.render import templates_dir

    names = {p.name for p in templates_dir().iterdir()}
    assert {"timesheet.html.j2", "report.css"} <= names


def _can_build_wheels() -> bool:
    """setuptools builds wheels itself from 70.1 on; before that it needs the wheel package."""
    import setuptools

    major, minor = (int(part) for part in setuptools.__version__.split(".")[:2])
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory) -> set[str]:
    """The files of the wheel built from a copy of the sources (nothing is written into the
    repository). Without a wheel builder here (setuptools < 70.1 and no ``wheel``): the files
    setuptools' ``build_py`` lays out, which is what ``bdist_wheel`` packs."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for name in {"memo_analytics", *SETUPTOOLS["package-dir"].values()}:
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if _can_build_wheels():
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                               "-w", str(base / "dist"), str(source)], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        (wheel,) = (base / "dist").glob("memo_analytics-*.whl")
        return set(zipfile.ZipFile(wheel).namelist())
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", "from setuptools import setup; setup()", "-q",
                           "build_py", "--build-lib", str(base / "lib")], cwd=source, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {p.relative_to(base / "lib").as_posix() for p in (base / "lib").rglob("*") if p.is_file()}


def test_the_wheel_ships_the_dashboard_app_views_and_styles_inside_the_package(wheel_files):
    assert {f"memo_analytics/dashboards/{name}" for name in DASHBOARD_SOURCES} <= wheel_files
    assert "memo_analytics/dashboard_data.py" in wheel_files  # the dashboard's data access, in the package
    assert {"memo_analytics/report_templates/timesheet.html.j2", "memo_analytics/report_templates/invoice.html.j2",
            "memo_analytics/report_templates/report.css"} <= wheel_files
    # nothing at the top of site-packages but the package (and its metadata)
    assert {name.split("/")[0] for name in wheel_files} - {"memo_analytics"} <= {
        name.split("/")[0] for name in wheel_files if ".dist-info/" in name}
