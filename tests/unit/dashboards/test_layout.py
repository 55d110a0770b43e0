"""Where the dashboard lives and how the layers see it (STYLE: layout, imports point one way):
dashboards/ at the top of the repository is ``memo_analytics.dashboards`` once installed, and
the import contract (``lint-imports``) reads it as the top-level package ``dashboards`` (grimp
scans the source folders, not the installed mapping). Its PDF downloads render off the server's
event loop."""

from __future__ import annotations

import ast
import asyncio
import inspect
import threading
import tomllib
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import grimp

from memo_analytics.dashboard_data import DashboardData

REPO = Path(__file__).resolve().parents[3]
LINTER = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def test_the_import_contract_reads_every_dashboard_module_and_its_imports(monkeypatch):
    assert "dashboards" in LINTER["root_packages"]
    (layers,) = [[{name.strip() for name in layer.split("|")} for layer in c["layers"]]
                 for c in LINTER["contracts"] if c["name"] == "layers point one way"]
    level = {name: n for n, layer in enumerate(layers) for name in layer}
    assert level["memo_analytics.interfaces"] < level["dashboards"] < level["memo_analytics.dashboard_data"] \
        < level["memo_analytics.actions"]
    monkeypatch.syspath_prepend(str(REPO))  # lint-imports runs in the repository, which is on its path
    graph = grimp.build_graph(*LINTER["root_packages"], cache_dir=None)
    modules = {p.relative_to(REPO).with_suffix("").as_posix().replace("/", ".")
               for p in (REPO / "dashboards").glob("*.py") if p.name != "__init__.py"}
    assert modules <= graph.modules
    assert {"memo_analytics.dashboard_data", "memo_analytics.services.store"} <= \
        graph.find_modules_directly_imported_by("dashboards.app")


def _imported(path: Path) -> set[str]:
    """The absolute names of the modules ``path`` (a module of memo_analytics/) imports."""
    package = path.relative_to(REPO).with_suffix("").parts[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = list(package[:len(package) - node.level + 1]) if node.level else []
            names.add(".".join([*base, *([node.module] if node.module else [])]))
    return names


def test_inside_the_package_only_memo_serve_imports_the_dashboard():
    # grimp cannot see an import of memo_analytics.dashboards from inside the package (in the source
    # tree that name is dashboards/): this keeps the layers true in that direction
    importers = sorted(path.relative_to(REPO).as_posix() for path in (REPO / "memo_analytics").rglob("*.py")
                       if any(name == "memo_analytics.dashboards" or name.startswith("memo_analytics.dashboards.")
                              for name in _imported(path)))
    assert importers == ["memo_analytics/interfaces/server.py"]


def test_pdf_downloads_render_off_the_event_loop(store):
    from memo_analytics.dashboards.activity_view import ActivityView

    threads: list[str] = []

    def render(report) -> bytes:
        threads.append(threading.current_thread().name)
        return b"%PDF-" + str(report.total_billable_hours).encode()

    data = DashboardData(store)
    view = SimpleNamespace(report=data.activity(None, None, None), data=SimpleNamespace(timesheet_pdf=render,
                                                                                        invoice_pdf=render))
    view._pdf = partial(ActivityView._pdf, view)
    for callback in (ActivityView._timesheet_pdf, ActivityView._invoice_pdf):  # the download buttons' callbacks
        assert inspect.iscoroutinefunction(callback)  # Panel awaits them on the event loop
        assert asyncio.run(callback(view)).read() == b"%PDF-0.0"
    assert len(threads) == 2 and all(name.startswith("memo-pdf") for name in threads)
