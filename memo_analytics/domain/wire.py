"""The one JSON encoder for every interface (CLI ``--json``, MCP, HTTP): same request,
byte-identical JSON (STYLE "One action table")."""

from __future__ import annotations

import json
from typing import Any


def dumps(value: Any) -> str:
    """Serialize a wire value: UTF-8 text kept as is, two-space indent, key order kept."""
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)
