"""The API-equivalent AI cost of the agents' work (SPEC §9, issue 15 point 6).

Token counts come from the transcripts at import (the turn's ``tokens`` frontmatter, issue 14
point 7): ``input`` (not cached), ``cacheRead``, ``cacheWrite`` (with the ``cacheWrite5m`` /
``cacheWrite1h`` tiers where the agent logs them), ``output`` and ``reasoning``. Each turn is
priced offline with the maintained ``genai-prices`` data at the turn's own date (prices change;
a June turn costs June's price), for the turn's model; the library applies the cache-write
tiers and the long-context prices (above 200k input tokens) itself. Prices are USD.

Our counts map onto the library's usage like this: ``input_tokens`` is the whole input
(``input + cacheRead + cacheWrite``), ``cache_read_tokens`` / ``cache_write_tokens`` /
``cache_write_5m_tokens`` / ``cache_write_1h_tokens`` the parts; ``output_tokens`` is the whole
output — ``output`` for Claude Code and Codex (whose output counts already include reasoning),
``output + reasoning`` for the agents that log thinking apart (Gemini CLI, OpenCode).

A turn answered by several models (``tokensByModel``: a main model and a small one for titles
or sub-tasks) is priced part by part, each at its own model. A turn without token counts costs
nothing; a turn whose model the price data does not know
(``<synthetic>``, a private model) is counted in ``unpricedTurns`` and its model listed, never
guessed.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

#: Sources whose ``output`` count excludes the model's reasoning (thinking) tokens.
_REASONING_APART = ("gemini", "opencode")
#: How costs are shown: USD to a hundredth of a cent.
COST_PLACES = Decimal("0.0001")
TOKEN_KEYS = ("input", "cacheRead", "cacheWrite", "output", "reasoning")


def _count(tokens: dict[str, Any], key: str) -> int:
    value = tokens.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def usage_of(tokens: dict[str, Any], source: str | None) -> dict[str, int]:
    """``genai-prices`` usage keys for one turn's stored ``tokens`` (see the module docstring). Pure."""
    cache_read, cache_write = _count(tokens, "cacheRead"), _count(tokens, "cacheWrite")
    five, hour = _count(tokens, "cacheWrite5m"), _count(tokens, "cacheWrite1h")
    cache_write = max(cache_write, five + hour)
    output = _count(tokens, "output")
    if source and any(name in source for name in _REASONING_APART):
        output += _count(tokens, "reasoning")
    usage = {"input_tokens": _count(tokens, "input") + cache_read + cache_write, "output_tokens": output}
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
            value = self.entries[key]
            return None if value is None else Decimal(value)
        price = _price(model, day, usage)
        self.entries[key] = None if price is None else str(price)
        self.added = True
        return price

    def save(self) -> None:
        """Write the cache when it grew (atomically; a vault that cannot be written is skipped)."""
        if self.path is None or not self.added:
            return
        from ..vault.io import write_json_state

        try:
            write_json_state(self.path, {"version": self.version, "prices": self.entries})
        except OSError:
            pass


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


def stored_turn_cost(meta: dict[str, Any], model: str | None, at: datetime, source: str | None = None,
                     cache: PriceCache | None = None
                     ) -> tuple[Decimal | None, dict[str | None, tuple[dict[str, Any], Decimal | None]]]:
    """The cost of one stored turn (its frontmatter ``meta``): priced part by part when it
    holds ``tokensByModel``, else its ``tokens`` at ``model``. Returns the cost (None when no
    part has a price; the priced parts otherwise) and ``{model: (tokens, cost)}``."""
    tokens = meta.get("tokens") if isinstance(meta.get("tokens"), dict) else {}
    parts = meta.get("tokensByModel")
    if not isinstance(parts, dict) or not parts or not all(isinstance(v, dict) for v in parts.values()):
        parts = {model: tokens}
    priced = {part_model: (part, turn_cost(part, part_model, at, source, cache)) for part_model, part in parts.items()}
    costs = [cost for _, cost in priced.values() if cost is not None]
    return (sum(costs, Decimal(0)) if costs else None), priced


@dataclass
class CostTotals:
    """Tokens and cost of a group of turns (a session, a client, a model)."""

    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_KEYS, 0))
    cost: Decimal = Decimal(0)
    turns: int = 0
    unpriced_turns: int = 0

    def add(self, tokens: dict[str, Any], cost: Decimal | None) -> None:
        for key in TOKEN_KEYS:
            self.tokens[key] += _count(tokens, key)
        self.turns += 1
        if cost is None:
            self.unpriced_turns += 1
        else:
            self.cost += cost

    def wire(self) -> dict[str, Any]:
        """``{costUsd (decimal text, 4 places), tokens {input, cacheRead, cacheWrite, output,
        reasoning}, turns, unpricedTurns}``."""
        return {"costUsd": str(self.cost.quantize(COST_PLACES)), "tokens": dict(self.tokens), "turns": self.turns,
                "unpricedTurns": self.unpriced_turns}


def session_costs(rows: list[tuple[str, str, str, str | None, str | None, str]], cache: PriceCache | None = None
                  ) -> tuple[dict[tuple[str, str], CostTotals], dict[str, CostTotals], list[str]]:
    """Price turns: ``rows`` of ``(project, session id, created ISO, model, source, meta JSON)``
    (prices from ``cache`` when given, which is saved when it grew).

    Returns
    -------
    tuple
        ``{(project, session id): CostTotals}``, ``{model: CostTotals}`` and the models
        without a price (sorted).
    """
    from ..domain.clock import from_iso

    by_session: dict[tuple[str, str], CostTotals] = {}
    by_model: dict[str, CostTotals] = {}
    unpriced: set[str] = set()
    for project, session_id, created, model, source, meta in rows:
        stored = (json.loads(meta) or {}) if meta else {}
        tokens = stored.get("tokens")
        if not isinstance(tokens, dict) or not tokens:
            continue
        cost, parts = stored_turn_cost(stored, model, from_iso(created), source, cache)
        for part_model, (part, part_cost) in parts.items():
            by_model.setdefault(part_model or "unknown", CostTotals()).add(part, part_cost)
            if part_cost is None:
                unpriced.add(part_model or "unknown")
        by_session.setdefault((project, session_id), CostTotals()).add(tokens, cost)
    if cache is not None:
        cache.save()
    return by_session, by_model, sorted(unpriced)
