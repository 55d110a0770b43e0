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

    def count(self, tokens: dict[str, Any], priced: bool) -> None:
        """Count one turn's ``tokens`` (and whether it had a price); its cost is added apart,
        rounded (:func:`session_costs`)."""
        for key in TOKEN_KEYS:
            self.tokens[key] += count_of(tokens, key)
        self.turns += 1
        self.unpriced_turns += not priced

    def wire(self) -> dict[str, Any]:
        """``{costUsd (decimal text, 4 places), tokens {input, cacheRead, cacheWrite, output,
        reasoning}, turns, unpricedTurns}``."""
        return {"costUsd": str(self.cost.quantize(COST_PLACES)), "tokens": dict(self.tokens), "turns": self.turns,
                "unpricedTurns": self.unpriced_turns}


def session_costs(rows: list[tuple[str, str, str, str | None, str | None, str]], cache: PriceCache | None = None
                  ) -> tuple[dict[tuple[str, str], CostTotals], dict[str, CostTotals], list[str]]:
    """Price turns: ``rows`` of ``(project, session id, created ISO, model, source, meta JSON)``
    (prices from ``cache`` when given, which is saved when it grew).

    Rounding: what one model cost in one session is rounded to :data:`COST_PLACES` (0.0001 USD),
    and every figure is a sum of those parts — a session's cost, a model's, a client's, the
    total — so they add up whichever way the report is cut, and a filter (``--client``) never
    changes what a session or a model of a session cost.

    Returns
    -------
    tuple
        ``{(project, session id): CostTotals}``, ``{model: CostTotals}`` and the models
        without a price (sorted).
    """
    from ..domain.clock import from_iso

    by_session: dict[tuple[str, str], CostTotals] = {}
    by_model: dict[str, CostTotals] = {}
    exact: dict[tuple[tuple[str, str], str], Decimal] = {}  # (session, model): its turns' exact cost
    unpriced: set[str] = set()
    for project, session_id, created, model, source, meta in rows:
        stored = (json.loads(meta) or {}) if meta else {}
        tokens = stored.get("tokens")
        if not isinstance(tokens, dict) or not tokens:
            continue
        cost, parts = stored_turn_cost(stored, model, from_iso(created), source, cache)
        for part_model, (part, part_cost) in parts.items():
            name = part_model or "unknown"
            by_model.setdefault(name, CostTotals()).count(part, part_cost is not None)
            if part_cost is None:
                unpriced.add(name)
            else:
                exact[(project, session_id), name] = exact.get(((project, session_id), name), Decimal(0)) + part_cost
        by_session.setdefault((project, session_id), CostTotals()).count(tokens, cost is not None)
    for (session, part_model), cost in exact.items():
        rounded = cost.quantize(COST_PLACES)
        by_session[session].cost += rounded
        by_model[part_model].cost += rounded
    if cache is not None:
        cache.save()
    return by_session, by_model, sorted(unpriced)
