"""A contract type for import-linter (``lint-imports``): SQL lives only in the packages that
own a database (STYLE: "SQL lives in ``index/`` and ``analytics/`` only").

A module breaks it when, outside ``allowed_modules``, it calls ``.execute``,
``.executemany`` or ``.executescript``, or holds a string that begins as a SQL statement
(``SELECT …``, ``INSERT INTO …``, ``PRAGMA …``, keywords in capitals as SQL is written
here; f-strings included). Registered in
``pyproject.toml`` under ``[tool.importlinter] contract_types``.
"""

from __future__ import annotations

import ast
import importlib.util
import re

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck

_SQL = re.compile(r"\s*(SELECT\s|INSERT\s+(OR\s+\w+\s+)?INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|CREATE\s+"
                  r"(TABLE|INDEX|VIEW|TRIGGER|VIRTUAL)\s|DROP\s+(TABLE|INDEX|VIEW)\s|ALTER\s+TABLE\s|PRAGMA\s"
                  r"|WITH\s+\w+\s+AS\s*\(|ANALYZE\b|VACUUM\b|BEGIN(\s+IMMEDIATE)?\s*;?\s*$|SET\s+TimeZone\b)")
_CALLS = {"execute", "executemany", "executescript"}


def _first_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return None


def sql_in_source(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for each SQL call or SQL string in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CALLS:
            found.append((node.lineno, f".{node.func.attr}(…)"))
        elif isinstance(node, (ast.Constant, ast.JoinedStr)):
            text = _first_text(node)
            if text and _SQL.match(text):
                found.append((node.lineno, repr(text.strip()[:40])))
    return sorted(set(found))


class SqlConfinedContract(Contract):
    """Configuration: ``allowed_modules`` (packages that may hold SQL)."""

    allowed_modules = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        allowed = [str(m) for m in self.allowed_modules]  # type: ignore[attr-defined]
        roots = tuple(self.session_options.get("root_packages") or [self.session_options["root_package"]])
        broken = []
        for module in sorted(graph.modules):
            if not module.startswith(roots) or any(module == a or module.startswith(a + ".") for a in allowed):
                continue
            spec = importlib.util.find_spec(module)
            if spec is None or not spec.origin or not spec.origin.endswith(".py"):
                continue
            with open(spec.origin, encoding="utf-8") as handle:
                for line, what in sql_in_source(handle.read()):
                    broken.append(f"{module}:{line}: {what}")
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for line in check.metadata["broken"]:
            output.print_error(f"SQL outside {', '.join(map(str, self.allowed_modules))}: {line}")  # type: ignore[attr-defined]
            output.new_line()
