"""The one JSON encoder for every interface (CLI ``--json``, MCP, HTTP): same request,
byte-identical JSON (STYLE "One action table")."""

from __future__ import annotations

import json
import re
from typing import Any


#: Unicode's explicit direction controls (embeddings, overrides, isolates, their ends): a value
#: holding one prints reversed, and runs on over the cells and sentences printed after it.
DIRECTION_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


_SURROGATE = re.compile("[\ud800-\udfff]")
_DIRECTION = re.compile(f"[{DIRECTION_CONTROLS}]")


def without_direction_controls(text: str) -> str:
    """``text`` without :data:`DIRECTION_CONTROLS`, for display: the letters stay, in their own
    order (a right-to-left script still reads right to left), but a U+202E cannot show "evil"
    as "live" ("Trojan Source") or reverse what is printed after it."""
    return _DIRECTION.sub("", text) if _DIRECTION.search(text) else text


#: What a printed document never shows: the direction controls and the control characters other
#: than tab, line feed and carriage return (C0, DEL, C1), which XML 1.0 cannot hold either.
_UNPRINTABLE = re.compile(f"[{DIRECTION_CONTROLS}\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff]")


#: What one plain line never holds: every control character (tab and line ends included) and the
#: direction controls.
_NOT_ONE_PLAIN_LINE = re.compile(f"[{DIRECTION_CONTROLS}\x00-\x1f\x7f-\x9f]")


def is_one_plain_line(text: str) -> bool:
    """Whether ``text`` is one line without control or direction characters (a link or a title
    a terminal, a chat message or a PDF shows as typed)."""
    return not _NOT_ONE_PLAIN_LINE.search(text)


def printable_text(text: str) -> str:
    """``text`` as a document prints it (PDF, e-invoice XML, CSV/XLSX cells): without direction
    controls (:func:`without_direction_controls`) and without control characters other than tab,
    line feed and carriage return — a vertical tab in a summary stopped the Factur-X XML, and a
    U+202E in it made the e-invoice read otherwise than the printed page."""
    return _UNPRINTABLE.sub("", text) if _UNPRINTABLE.search(text) else text


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate (a JSON string cut inside a character, as real
    transcripts and agents' payloads hold) replaced by U+FFFD: text UTF-8 can carry."""
    return _SURROGATE.sub("\ufffd", text)


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless one: ``1 minute``, ``2 minutes``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def dumps(value: Any) -> str:
    """Serialize a wire value: UTF-8 text kept as is, two-space indent, key order kept."""
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


#: Characters of a body a compact answer keeps (``bodyLength`` gives the whole length).
SNIPPET_CHARS = 80
#: Values a compact answer leaves out because they are what a reader assumes.
_DEFAULTS = {"kind": "prompt", "status": "recorded", "billable": True}


def _is_default(key: str, item: Any) -> bool:
    return key in _DEFAULTS and type(item) is type(_DEFAULTS[key]) and item == _DEFAULTS[key]


#: A report's rules in prose, the same in every answer: most of a compact report's size.
_POLICY_PROSE = frozenset({"roundingPolicy", "overlapPolicy"})


def compact(value: Any, whole_bodies: bool = False, _top: bool = True) -> Any:
    """``value`` sized for an agent's context (the tool's ``compact`` option): nulls, empty
    lists and objects, a report's policies in prose (``roundingPolicy``, ``overlapPolicy``:
    the full answer has them), ``updated`` equal to ``created`` and the defaults ``kind: prompt``,
    ``status: recorded``, ``billable: true`` left out; each ``body`` cut to
    ``SNIPPET_CHARS`` characters (ending in ``…``) with ``bodyLength`` the whole length in
    characters; a page's fields that every item holds alike given once, as ``shared`` (an item
    is ``{**shared, **item}``). Key order kept. ``whole_bodies``: bodies as they are (the answer
    to ``get``: the record asked for, whose whole text a page's snippet sends an agent to);
    an empty ``body`` and token counts that are all 0 are left out too. An empty page keeps
    its ``items: []``."""
    if isinstance(value, list):
        return [compact(item, whole_bodies, False) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if _top and key == "items" and item == []:
            out[key] = item  # an empty page still has its items: an agent reads page["items"]
            continue
        # the policies of the answer itself: a client named "overlapPolicy" deeper down is data
        if item is None or item == [] or item == {} or _is_default(key, item) or (_top and key in _POLICY_PROSE):
            continue
        if key == "updated" and item == value.get("created"):
            continue
        if (key == "body" and item == "") or (key == "tokens" and isinstance(item, dict) and item
                                              and not any(item.values())):
            continue
        if key == "body" and isinstance(item, str) and len(item) > SNIPPET_CHARS and not whole_bodies:
            out["body"] = item[: SNIPPET_CHARS - 1].rstrip() + "…"
            out["bodyLength"] = len(item)
            continue
        out[key] = compact(item, whole_bodies, False)
    return _hoist_shared(out)


#: Fields that name an item: never moved to ``shared``.
_OWN_FIELDS = ("id", "body", "bodyLength")


def _hoist_shared(page: dict[str, Any]) -> dict[str, Any]:
    """A page whose items all hold the same value for a field gives that field once, as
    ``shared`` before ``items`` (lossless: an item is ``{**shared, **item}``)."""
    items = page.get("items")
    if not isinstance(items, list) or len(items) < 2 or not all(isinstance(i, dict) for i in items):
        return page
    first = items[0]
    common = {k: v for k, v in first.items()
              if k not in _OWN_FIELDS and all(k in other and other[k] == v for other in items[1:])}
    if not common:
        return page
    out: dict[str, Any] = {}
    for key, value in page.items():
        if key == "items":
            out["shared"] = common
            out["items"] = [{k: v for k, v in item.items() if k not in common} for item in items]
        else:
            out[key] = value
    return out


def dumps_compact(value: Any, whole_bodies: bool = False) -> str:
    """:func:`compact` serialized without indentation (one line, UTF-8 kept)."""
    return json.dumps(compact(value, whole_bodies), ensure_ascii=False, separators=(",", ":"), default=str)
