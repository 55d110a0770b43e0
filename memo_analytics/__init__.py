"""memo_analytics: AI coding agents' turns and work sessions in a Markdown vault outside every
product repository, with search, billable activity, PDF timesheets and an MCP tool.

The command line is ``memo`` (:mod:`memo_analytics.interfaces.cli`); agents use the MCP tool
``prompt`` (:mod:`memo_analytics.interfaces.mcp`). Every error raised on purpose is a
:class:`MemoError`.
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
    "__version__",
]
