"""The minutes each session bills (SPEC §9, issue 15 point 5): the client's rounding terms and
the overlap policy, worked out over *all* of a client's sessions — never over the sessions a
report happens to select — so a session bills the same minutes in every report, invoice and
export, whatever the project or period filter.

On the minute grid every report prints, a session runs from its start (seconds dropped) for
its ``durationMinutes``, first raised by its client's terms (``roundingMinutes``,
``minimumMinutes``: :meth:`~memo_analytics.domain.billing.ClientBilling.billed_minutes`).

- ``overlapPolicy = "union"`` (the default): one person's parallel sessions for one client bill
  their wall-clock union once. Sessions are grouped by vault and client; within a group, a
  session's person is its ``owner`` (the git identity it was recorded under): sessions of two
  owners (teammates whose sessions one team vault holds) never cover each other, while a
  session without one may be anyone's: it bills only what no session of the client covers, and
  covers no known owner's session (sessions of no known owner bill their union, as one
  person's do). Sessions
  on an issued invoice come first and keep the minutes the invoice billed (the invoice was
  sent), covering the parts of their spans they billed (the parts the same sessions bill without
  any invoice, when those come to what the invoice billed; else the whole span: a session
  recorded after the invoice never bills its minutes again); every other session, in start
  order, bills the minutes of its span that no session before it covered. The minutes of one person's sessions add up to the length of their union
  exactly (plus nothing for the frozen ones: they covered their spans).
- ``"sum"``: every session bills its whole (rounded) duration.

Sessions that do not count (open, not billable, superseded) bill nothing. Pure.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, Callable

import polars as pl

Key = tuple[str, str, str]  # (vault, project, session record id)


class _Covered:
    """Disjoint minute intervals ``[a, b)``, sorted; what a client's sessions already billed."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def uncovered(self, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of ``[start, end)`` not yet covered, in order."""
        parts, at = [], start
        i = bisect_left(self.ends, start + 1)
        while i < len(self.starts) and self.starts[i] < end:
            if self.starts[i] > at:
                parts.append((at, self.starts[i]))
            at = max(at, self.ends[i])
            i += 1
        if at < end:
            parts.append((at, end))
        return parts

    def new_minutes(self, start: int, end: int) -> int:
        """Minutes of ``[start, end)`` not yet covered."""
        if end <= start:
            return 0
        covered = 0
        i = bisect_left(self.ends, start + 1)  # the first interval that ends after start
        while i < len(self.starts) and self.starts[i] < end:
            covered += max(0, min(end, self.ends[i]) - max(start, self.starts[i]))
            i += 1
        return (end - start) - covered

    def add(self, start: int, end: int) -> None:
        if end <= start:
            return
        i = bisect_left(self.ends, start)  # the first interval that ends at or after start
        j = i
        while j < len(self.starts) and self.starts[j] <= end:
            start, end = min(start, self.starts[j]), max(end, self.ends[j])
            j += 1
        self.starts[i:j], self.ends[i:j] = [start], [end]


def billed_minutes(sessions: pl.DataFrame, policy: str, terms: Callable[[str], Any],
                   frozen: dict[Key, int]) -> dict[Key, int]:
    """``{(vault, project, id): billed minutes}`` of every counted session of ``sessions`` (a
    :func:`~.frames.sessions_frame` of every project: the whole vault).

    Parameters
    ----------
    policy : {"union", "sum"}
    terms : callable
        Client name → its ``ClientBilling`` or None (``Settings.billing_for``).
    frozen : dict
        Sessions on an issued, uncredited invoice → the minutes that invoice billed.
    """
    counted = sessions.filter(
        pl.col("billable") & pl.col("duration_minutes").is_not_null() & pl.col("start_time").is_not_null()
        & (pl.col("status").fill_null("") != "superseded")
    ).select(
        "vault", "project", "id", "duration_minutes",
        pl.col("client").str.strip_chars().replace("", None).fill_null("internal").alias("client"),
        (pl.col("start_time").dt.truncate("1m").dt.epoch("s") // 60).alias("start"),
        pl.col("owner").str.strip_chars().str.to_lowercase().replace("", None).alias("owner")
        if "owner" in sessions.columns else pl.lit(None, pl.String).alias("owner"),
    ).sort("start", "id")
    out: dict[Key, int] = {}
    groups: dict[tuple[str, str], list[tuple]] = {}
    for vault, project, record_id, minutes, client, start, owner in counted.iter_rows():
        groups.setdefault((vault, client.lower()), []).append(
            (vault, project, record_id, int(minutes), client, start, owner))
    for rows in groups.values():
        billing = terms(rows[0][4])
        spans = []
        for vault, project, record_id, minutes, _, start, owner in rows:
            rounded = billing.billed_minutes(minutes) if billing is not None and (
                billing.rounding_minutes or billing.minimum_minutes) else minutes
            spans.append(((vault, project, record_id), start, start + rounded, rounded, owner))
        if policy == "sum":
            out.update({key: frozen.get(key, rounded) for key, _, _, rounded, _ in spans})
            continue
        out.update(_union_per_person(spans, frozen))
    return out


def _union_per_person(spans: list[tuple], frozen: dict[Key, int]) -> dict[Key, int]:
    """Billed minutes of one client's sessions under the union policy, person by person.

    ``spans`` are ``(key, start, end, rounded, owner)`` in minutes since the epoch (UTC),
    ordered by start then id. A session of a known owner bills what that owner's earlier
    sessions did not cover: two people's parallel sessions each bill in full. A session of no
    known owner may be anyone's: it bills only what no session of the client covers, and covers
    no known owner's session — so its outcome never depends on the order of ids. What an
    issued invoice billed stays as it was billed (``frozen``); an invoiced session of no known
    owner covers one person only, the one whose sessions overlap it most (ties: the first
    owner by name), never several.
    """
    out: dict[Key, int] = {}
    everyone = _Covered()  # every counted session: what covers a session of no known owner
    of: dict[str, _Covered] = {}  # each owner's sessions
    known = [(key, start, end, owner) for key, start, end, _, owner in spans if owner is not None]
    unknown = [(key, start, end) for key, start, end, _, owner in spans if owner is None]
    # what an invoiced session covers: the minutes it billed — the parts the same sessions bill
    # without any invoice, when they come to what it billed (its invoice was made of them); else its
    # whole span (a session recorded after the invoice must not bill its minutes again). It
    # covered its whole span, and an earlier session overlapping it lost the minutes it had billed.
    claims = _claims(known, unknown) if frozen else {}

    def covers(key: Key, start: int, end: int) -> list[tuple[int, int]]:
        parts = claims.get(key)
        return parts if parts is not None and sum(b - a for a, b in parts) == frozen[key] else [(start, end)]

    for key, start, end, owner in known:  # what was invoiced stays as it was invoiced
        if key in frozen:
            out[key] = frozen[key]
            for a, b in covers(key, start, end):
                of.setdefault(owner, _Covered()).add(a, b)
                everyone.add(a, b)
    invoiced_unknown = [(key, start, end) for key, start, end in unknown if key in frozen]
    if invoiced_unknown:
        whole: dict[str, _Covered] = {}  # each owner's every session, to find whose an invoiced one may be
        for _, start, end, owner in known:
            whole.setdefault(owner, _Covered()).add(start, end)
        for key, start, end in invoiced_unknown:
            out[key] = frozen[key]
            parts = covers(key, start, end)
            for a, b in parts:
                everyone.add(a, b)
            overlaps = [(-((end - start) - spans_of.new_minutes(start, end)), owner)
                        for owner, spans_of in whole.items()]
            most, owner = min(overlaps, default=(0, ""))
            if most < 0:
                for a, b in parts:
                    of.setdefault(owner, _Covered()).add(a, b)
    for key, start, end, owner in known:
        if key not in frozen:
            mine = of.setdefault(owner, _Covered())
            out[key] = mine.new_minutes(start, end)
            mine.add(start, end)
            everyone.add(start, end)
    for key, start, end in unknown:
        if key not in frozen:
            out[key] = everyone.new_minutes(start, end)
            everyone.add(start, end)
    return out


def _claims(known: list[tuple], unknown: list[tuple]) -> dict[Key, list[tuple[int, int]]]:
    """The minute intervals each session bills under the union policy with no invoice at all
    (:func:`_union_per_person`'s order: known owners' sessions in start order against their
    owner's, then those of no known owner against every session)."""
    claims: dict[Key, list[tuple[int, int]]] = {}
    everyone, of = _Covered(), {}
    for key, start, end, owner in known:
        mine = of.setdefault(owner, _Covered())
        claims[key] = mine.uncovered(start, end)
        mine.add(start, end)
        everyone.add(start, end)
    for key, start, end in unknown:
        claims[key] = everyone.uncovered(start, end)
        everyone.add(start, end)
    return claims