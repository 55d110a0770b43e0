"""Pricing turns offline (SPEC §9, issue 15 point 6): the API-equivalent cost in USD of a turn's
token counts, and the cache of prices already worked out (``<vault>/.memo/cost-cache.json``).

Here, below the analytics, so that an import can price the turns it reads while it writes them
(issue 16: the first ``memo activity`` after an import then finds every price in the cache and
does not load ``genai-prices``). How our counts map onto the library's usage is described in
:mod:`memo_analytics.analytics.cost`.
"""

from __future__ import annotations

import json
import warnings
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

#: Sources whose ``output`` count excludes the model's reasoning (thinking) tokens.
_REASONING_APART = ("gemini", "opencode")


#: The most tokens of one kind a turn is taken to have: no model reads or writes a billion tokens
#: in one turn (context windows hold a few million). A larger count is a damaged or hostile
#: transcript (``10**30``: its cost overflowed every report) and counts nothing.
MAX_TURN_TOKENS = 10**9


def plausible_tokens(value: Any) -> bool:
    """Whether ``value`` is a token count a turn can have: a whole number from 0 to
    :data:`MAX_TURN_TOKENS` (``True`` is not one)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TURN_TOKENS


def plausible_turn(meta: dict[str, Any]) -> bool:
    """Whether a stored turn's token counts are ones a turn can have: each kind (``input``,
    ``cacheRead`` …) summed over the parts of ``tokensByModel`` is at most
    :data:`MAX_TURN_TOKENS`, as each count of ``tokens`` is (:func:`plausible_tokens`). A turn
    split into hundreds of model parts of just under a billion each priced USD 33 million."""
    parts = meta.get("tokensByModel")
    if not isinstance(parts, dict):
        return True
    totals: dict[str, int] = {}
    for part in parts.values():
        if isinstance(part, dict):
            for key, value in part.items():
                if plausible_tokens(value):
                    totals[key] = totals.get(key, 0) + value
    return all(total <= MAX_TURN_TOKENS for total in totals.values())


def count_of(tokens: dict[str, Any], key: str) -> int:
    """``tokens[key]`` when it is a positive count a turn can have (:func:`plausible_tokens`), else 0."""
    value = tokens.get(key)
    return value if plausible_tokens(value) and value > 0 else 0


def usage_of(tokens: dict[str, Any], source: str | None) -> dict[str, int]:
    """``genai-prices`` usage keys for one turn's stored ``tokens`` (see the module docstring). Pure."""
    cache_read, cache_write = count_of(tokens, "cacheRead"), count_of(tokens, "cacheWrite")
    five, hour = count_of(tokens, "cacheWrite5m"), count_of(tokens, "cacheWrite1h")
    cache_write = max(cache_write, five + hour)
    output = count_of(tokens, "output")
    if source and any(name in source for name in _REASONING_APART):
        output += count_of(tokens, "reasoning")
    usage = {"input_tokens": count_of(tokens, "input") + cache_read + cache_write, "output_tokens": output}
    if cache_read:
        usage["cache_read_tokens"] = cache_read
    if cache_write:
        usage["cache_write_tokens"] = cache_write
        if five or hour:
            usage["cache_write_5m_tokens"] = cache_write - hour
            usage["cache_write_1h_tokens"] = hour
    return usage


class PriceCache:
    """Prices already worked out, kept in ``<vault>/.memo/cost-cache.json`` between runs: the
    library takes ~0.1 ms a turn, which is a second on a vault of 10,000 turns, on every
    ``memo activity``. Keyed by model, day and usage; tied to the installed ``genai-prices``
    version (another version's prices are not reused). A cache: lost or unreadable, the prices
    are worked out again."""

    def __init__(self, path: Path | None = None) -> None:
        from importlib.metadata import version

        self.path, self.version = path, version("genai-prices")
        self.entries: dict[str, str | None] = {}
        self.added = False
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(data, dict) and data.get("version") == self.version and isinstance(data.get("prices"), dict):
                    self.entries = data["prices"]
            except (OSError, ValueError):
                pass

    def get(self, model: str, day: str, usage: tuple[tuple[str, int], ...]) -> Decimal | None:
        key = f"{model}|{day}|" + ",".join(f"{k}={v}" for k, v in usage)
        if key in self.entries:
            value = _readable(self.entries[key])
            if value is not False:
                return value
        price = _price(model, day, usage)
        self.entries[key] = None if price is None else str(price)
        self.added = True
        return price

    def add(self, entries: dict[str, str | None]) -> None:
        """Take in prices worked out elsewhere (``{key: price text or None}``, as :attr:`entries`
        keeps them: what an import's workers priced)."""
        fresh = {key: value for key, value in entries.items()
                 if key not in self.entries or _readable(self.entries[key]) is False}
        if fresh:
            self.entries.update(fresh)
            self.added = True

    def save(self) -> None:
        """Write the cache when it grew (atomically, under a lock, keeping what another run saved
        meanwhile; a vault that cannot be written is skipped)."""
        if self.path is None or not self.added:
            return
        from filelock import FileLock, Timeout

        from ..vault.io import write_json_state

        try:  # another run may have saved meanwhile: its prices are kept beside ours
            with FileLock(str(self.path.with_name(self.path.name + ".lock")), timeout=5):
                saved = PriceCache(self.path).entries
                write_json_state(self.path, {"version": self.version, "prices": {**saved, **self.entries}})
        except (OSError, Timeout):
            pass


def _readable(value: object) -> Decimal | None | bool:
    """A cached price as a finite non-negative Decimal, None (no price), or False when the cache
    holds something else there (a damaged or edited file): that price is worked out again."""
    if value is None:
        return None
    if not isinstance(value, str):
        return False
    try:
        price = Decimal(value)
    except ArithmeticError:
        return False
    return price if price.is_finite() and price >= 0 else False


@lru_cache(maxsize=4096)
def _price(model: str, day: str, usage: tuple[tuple[str, int], ...]) -> Decimal | None:
    from genai_prices import Usage, calc_price

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the library warns about keys it does not price
            result = calc_price(Usage(**dict(usage)), model, genai_request_timestamp=datetime.fromisoformat(day))
    except (LookupError, ValueError):
        return None
    return Decimal(str(result.total_price))


def turn_cost(tokens: dict[str, Any] | None, model: str | None, at: datetime, source: str | None = None,
              cache: PriceCache | None = None) -> Decimal | None:
    """The API-equivalent cost in USD of one turn (``tokens`` as stored), priced at ``at``
    (its UTC date); ``Decimal(0)`` without tokens; None when the model has no price."""
    if not tokens:
        return Decimal(0)
    usage = usage_of(tokens, source)
    if not any(usage.values()):
        return Decimal(0)
    if not model:
        return None
    day, key = at.date().isoformat() + "T12:00:00+00:00", tuple(sorted(usage.items()))
    return cache.get(model, day, key) if cache is not None else _price(model, day, key)


def turn_parts(meta: dict[str, Any], model: str | None) -> dict[str | None, dict[str, Any]]:
    """A stored turn's token counts by the model that spent them: its ``tokensByModel`` when it
    holds one (several models answered it), else ``{model: tokens}`` (empty when it gives none);
    ``{}`` for a damaged or hostile record (:func:`plausible_turn`)."""
    if not plausible_turn(meta):
        return {}
    tokens = meta.get("tokens") if isinstance(meta.get("tokens"), dict) else {}
    parts = meta.get("tokensByModel")
    if not isinstance(parts, dict) or not parts or not all(isinstance(v, dict) for v in parts.values()):
        return {model: tokens}
    return parts


def stored_turn_cost(meta: dict[str, Any], model: str | None, at: datetime, source: str | None = None,
                     cache: PriceCache | None = None
                     ) -> tuple[Decimal | None, dict[str | None, tuple[dict[str, Any], Decimal | None]]]:
    """The cost of one stored turn (its frontmatter ``meta``): priced part by part when it
    holds ``tokensByModel``, else its ``tokens`` at ``model``. Returns the cost (None when no
    part has a price; the priced parts otherwise) and ``{model: (tokens, cost)}``."""
    if not plausible_turn(meta):
        return Decimal(0), {}  # a damaged or hostile record: its counts count nothing
    parts = turn_parts(meta, model)
    priced = {part_model: (part, turn_cost(part, part_model, at, source, cache)) for part_model, part in parts.items()}
    costs = [cost for _, cost in priced.values() if cost is not None]
    return (sum(costs, Decimal(0)) if costs else None), priced
