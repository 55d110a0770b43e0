"""memo_analytics: AI coding agents' turns and work sessions in a Markdown vault outside every
product repository, with search, billable activity, PDF timesheets and an MCP tool.

The command line is ``memo`` (:mod:`memo_analytics.interfaces.cli`); agents use the MCP tool
``prompt`` (:mod:`memo_analytics.interfaces.mcp`); analysts call :func:`open_vault`
(:mod:`memo_analytics.api`: polars frames, the activity report, DuckDB, derived-rule
candidates) and :func:`sample_vault` (the deterministic sample of ``memo demo``). Every error raised
on purpose is a :class:`MemoError`.
"""

from .domain.errors import (
    CorruptRecordError,
    IndexDamagedError,
    InvalidDateError,
    InvalidFieldError,
    MemoError,
    RecordNotFoundError,
    ReportError,
    SessionCompletedError,
    SessionNotStartedError,
    VaultBusyError,
)

__version__ = "0.1.0"

__all__ = [
    "CorruptRecordError", "IndexDamagedError", "InvalidDateError", "InvalidFieldError", "MemoError",
    "RecordNotFoundError", "ReportError", "SessionCompletedError", "SessionNotStartedError", "VaultBusyError",
    "Lake", "Vault", "__version__", "notebook_vault", "open_lake", "open_vault", "sample_vault",
]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})  # the lazily loaded analyst API shows in completion too


def __getattr__(name: str):
    # the analyst API loads polars and DuckDB: imported on first use, not by every `memo` start
    if name in ("open_vault", "Vault", "sample_vault", "notebook_vault", "open_lake", "Lake"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
