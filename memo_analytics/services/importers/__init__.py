"""Importers of real agent transcripts (SPEC §7): Claude Code JSONL, SpecStory Markdown, Codex rollouts,
Gemini CLI chats (JSON and JSONL), Copilot CLI sessions (events.jsonl), Cursor (``state.vscdb``
chat rows and "Export Chat" Markdown) and OpenCode (``opencode.db`` and its JSON storage).

Each importer module exposes ``SUFFIXES``, ``EXCLUDE_DIRS`` and ``parse(path, options)``.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

#: CLI name → module name.
IMPORTERS = {"claude-code": "claude_code", "specstory": "specstory", "codex": "codex", "gemini": "gemini",
             "copilot": "copilot", "cursor": "cursor", "opencode": "opencode"}


def load_importer(source: str) -> ModuleType:
    """The parser module of ``source`` (a key of :data:`IMPORTERS`)."""
    return import_module(f"{__name__}.{IMPORTERS[source]}")
