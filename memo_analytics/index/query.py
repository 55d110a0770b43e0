"""Pure query building for listing and search (SPEC §2.6). No I/O here."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..domain.clock import TimeBounds, to_iso
from ..domain.errors import InvalidFieldError

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
#: Largest offset passed to SQLite (beyond any vault; keeps the value a 64-bit integer).
MAX_OFFSET = 2**53


def clamp_page(limit: object = None, offset: object = None) -> tuple[int, int]:
    """Clamp ``limit`` to 1–100 (default 20) and ``offset`` to ≥ 0 (SPEC §2.6): a number out of
    range is brought into it; a value that is no whole number (``"abc"``, ``true``, ``2.5``)
    is refused.

    Raises
    ------
    InvalidFieldError
        ``Invalid limit: …`` / ``Invalid offset: …``.
    """
    return _whole(limit, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT), _whole(offset, "offset", 0, 0, MAX_OFFSET)


def clamp_note(limit: object = None, offset: object = None) -> str | None:
    """What :func:`clamp_page` brought into range, said for the answer's ``note`` (an agent that
    asked ``limit: 0`` was answered one item without a word), or None."""
    said = []
    for name, value, used in zip(("limit", "offset"), (limit, offset), clamp_page(limit, offset)):
        if value is not None and value != "" and _whole(value, name, used, -(2**63), 2**63) != used:
            said.append(f"{name} {value} is out of range ({'1–100' if name == 'limit' else '0 or more'}): {used} was used")
    return "; ".join(said) or None


def _whole(value: object, field: str, default: int, low: int, high: int) -> int:
    if value is None or value == "":
        return default
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?[0-9]{1,30}\s*", value):
        number = int(value)
    if number is None:
        raise InvalidFieldError(field, f"{str(value)[:40]!r} is not a whole number (give {low}–{high}; "
                                       f"out of range is brought into it)" if field == "limit" else
                                f"{str(value)[:40]!r} is not a whole number (give 0 or more)")
    return min(max(number, low), high)


_WORD = re.compile(r"\w", re.UNICODE)
# Han, Hiragana, Katakana, Hangul: scripts written without spaces between words
_CJK_RUN = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
    "\U00020000-\U0002fa1f]+"
)


def _bigrams(run: str) -> str:
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + " "


def _indexed_bigrams(match: re.Match[str]) -> str:
    run = match.group(0)
    # the last character also stands alone, so that a one-character query (a prefix query)
    # finds it at the end of a run too
    return _bigrams(run) + (f"{run[-1]} " if len(run) > 1 else "")


def fts_text(text: str) -> str:
    """The text FTS5 indexes: runs of Chinese, Japanese or Korean characters become
    overlapping bigrams plus the run's last character (``查看飞书`` → ``查看 看飞 飞书 书``), so
    that a word inside a sentence is found; other text is left as it is (the
    ``unicode61`` tokenizer splits it and folds accents). Pure.
    """
    return _CJK_RUN.sub(_indexed_bigrams, text)


def fts_match_expression(query: str) -> str | None:
    """Quote free text into an FTS5 MATCH expression that can never be a syntax error.

    Every whitespace-separated token becomes a quoted phrase (inner quotes doubled) of its
    :func:`fts_text` tokens; tokens are AND-combined. Operators a user types (``AND``,
    ``-x``, ``a:b``, ``C++``, brackets) are searched as text, not interpreted; the one
    exception is a trailing ``*``, which asks for a prefix (``decorat*``). Tokens without
    any letter or digit are dropped. Returns None when nothing searchable is left (the
    caller answers with an empty page, SPEC §2.6).
    """
    phrases = []
    for token in query.split():
        prefix = token.endswith("*") and len(token) > 1
        word = token.rstrip("*") if prefix else token
        if not _WORD.search(word):
            continue
        parts = _CJK_RUN.sub(lambda m: _bigrams(m.group(0)), word).split()
        if len(parts) == 1 and len(parts[0]) == 1 and _CJK_RUN.fullmatch(parts[0]):
            prefix = True  # one CJK character: every bigram that starts with it
        phrase = '"' + " ".join(parts).replace('"', '""') + '"'
        phrases.append(phrase + ("*" if prefix else ""))
    return " ".join(phrases) if phrases else None


@dataclass
class PromptFilter:
    """Metadata filters, AND-combined (SPEC §2.6).

    ``ide`` exact case-insensitive; ``model``/``agent`` case-insensitive substring;
    ``session_id``, ``task_slug``, ``client`` exact; ``billable`` exact; every tag in
    ``tags`` must be present; ``bounds`` limit ``created`` (half-open, UTC).
    ``projects`` None means every project (cross-project).
    """

    projects: list[str] | None = None
    ide: str | None = None
    model: str | None = None
    agent: str | None = None
    session_id: str | None = None
    task_slug: str | None = None
    client: str | None = None
    billable: bool | None = None
    tags: list[str] = field(default_factory=list)
    bounds: TimeBounds = field(default_factory=TimeBounds)
    #: Include records a transcript import superseded (``status: superseded``: the turns a hook
    #: captured live, once the agent's transcript is imported); left out by default.
    superseded: bool = False


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def build_where(kind: str, flt: PromptFilter, alias: str = "r") -> tuple[str, list[object]]:
    """SQL ``WHERE`` clause and parameters for ``flt`` over ``records`` aliased ``alias``."""
    a = alias
    clauses = [f"{a}.kind = ?"]
    params: list[object] = [kind]
    if not flt.superseded:
        clauses.append(f"coalesce({a}.status, '') <> 'superseded'")
    if flt.projects is not None:
        clauses.append(f"{a}.project IN ({','.join('?' * len(flt.projects)) or 'NULL'})")
        params.extend(flt.projects)
    if flt.ide:
        clauses.append(f"lower({a}.ide) = lower(?)")
        params.append(flt.ide)
    for column, value in (("model", flt.model), ("agent", flt.agent)):
        if value:
            clauses.append(f"lower({a}.{column}) LIKE '%' || lower(?) || '%' ESCAPE '\\'")
            params.append(_like_escape(value))
    for column, value in (("session_id", flt.session_id), ("task_slug", flt.task_slug), ("client", flt.client)):
        if value:
            clauses.append(f"{a}.{column} = ?")
            params.append(value)
    if flt.billable is not None:
        clauses.append(f"{a}.billable = ?")
        params.append(1 if flt.billable else 0)
    for tag in flt.tags:
        clauses.append(f"EXISTS (SELECT 1 FROM json_each({a}.tags) WHERE json_each.value = ?)")
        params.append(tag)
    if flt.bounds.since is not None:
        clauses.append(f"{a}.created >= ?")
        params.append(to_iso(flt.bounds.since))
    if flt.bounds.until_exclusive is not None:
        clauses.append(f"{a}.created < ?")
        params.append(to_iso(flt.bounds.until_exclusive))
    return " AND ".join(clauses), params
