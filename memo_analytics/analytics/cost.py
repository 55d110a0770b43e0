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
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..services.pricing import PriceCache, count_of, stored_turn_cost, turn_cost, usage_of

__all__ = ["COST_PLACES", "TOKEN_KEYS", "CostTotals", "PriceCache", "session_costs", "stored_turn_cost",
           "turn_cost", "usage_of"]

#: How costs are shown: USD to a hundredth of a cent.
COST_PLACES = Decimal("0.0001")
TOKEN_KEYS = ("input", "cacheRead", "cacheWrite", "output", "reasoning")


@dataclass
class CostTotals:
    """Tokens and cost of a group of turns (a session, a client, a model)."""

    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_KEYS, 0))
    cost: Decimal = Decimal(0)
    turns: int = 0
    unpriced_turns: int = 0

    def add(self, tokens: dict[str, Any], cost: Decimal | None) -> None:
        for key in TOKEN_KEYS:
            self.tokens[key] += count_of(tokens, key)
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
