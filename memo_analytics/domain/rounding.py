"""The rounding policy of every activity report and timesheet (SPEC §4, §5.1). Pure.

Minutes are the unit of truth: a session's duration is whole minutes and every sum of
minutes is exact. Hours are shown with two decimals and obey one policy, chosen so that
every printed column of hours adds up to its total:

1. **A client's hours** are its billable minutes / 60, rounded half up to two decimals
   (:func:`hours_cents`). The client is the unit that is billed, so its figure is the same
   in every report over the same sessions: alone (``--client``) or beside other clients.
2. **The total hours** are the sum of the clients' hours (not the rounded total minutes:
   those can differ by 0.01 per client, e.g. three clients of 20 minutes are 0.33 h each,
   0.99 h in all, though 60 minutes are 1.00 h).
3. **Every other breakdown** — hours by project, by day, and per session within its client —
   is the largest-remainder apportioning (:func:`apportion`) of its parent's hundredths of
   an hour in proportion to minutes: each line is its exact share rounded down or up by at
   most 0.01 h, and the lines add up to the parent exactly.

A session that crosses local midnight is split into per-day parts in the report's zone
(:func:`minutes_by_local_day`): its whole minutes are apportioned over the days in
proportion to the time it ran on each, by largest remainder, so the parts add up exactly to
its ``durationMinutes``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta, tzinfo

from .clock import local_day_spans

#: The policy as stated on every report (wire ``roundingPolicy``, timesheet footer).
ROUNDING_POLICY = (
    "Minutes are exact: durations are whole minutes (end − start, half up) and every sum of minutes is exact. "
    "A client's hours are its minutes / 60 rounded half up to 2 decimals; total hours are the sum of the clients' "
    "hours. A client's hours are apportioned over its projects, and a project's part over its sessions, by "
    "largest remainder in proportion to minutes (a project of several clients has the sum of its parts); hours "
    "by day are the largest-remainder apportioning of the total in proportion to minutes; so every column adds "
    "up to its total, a client's projects to the client's hours and a project's sessions to the project's. "
    "A session crossing local midnight is split into per-day parts whose whole minutes are apportioned by largest "
    "remainder in proportion to the time run on each day; they add up to its duration."
)


#: :data:`ROUNDING_POLICY` as a client reads it at the foot of a timesheet or an invoice: the same
#: rules, without the words of the trade ("largest remainder", "apportioned") or the tables a
#: document does not have (hours by day).
ROUNDING_POLICY_PRINTED = (
    "Each session counts its whole minutes (end − start). A client's hours are its minutes divided by 60, "
    "rounded half up to 2 decimals, and are shared out over its projects and sessions in proportion to their "
    "minutes, so the lines add up exactly to the subtotals and totals. A session that runs past midnight is "
    "split between the two days in proportion to the time run on each."
)


def hours_cents(minutes: int) -> int:
    """Hundredths of an hour in ``minutes``, rounded half up (``20`` → ``33``, ``35`` → ``58``).

    Exact integer arithmetic: ``floor(minutes * 100 / 60 + 1/2)``.

    Raises
    ------
    ValueError
        Negative minutes.
    """
    if minutes < 0:
        raise ValueError("minutes must not be negative")
    return (10 * int(minutes) + 3) // 6


def cents_to_hours(cents: int) -> float:
    """``242`` → ``2.42`` (hundredths of an hour as a two-decimal float)."""
    return int(cents) / 100


def apportion(total: int, weights: Sequence[int]) -> list[int]:
    """Split the whole number ``total`` over ``weights`` by largest remainder (Hamilton).

    Each part is ``total * w / sum(weights)`` rounded down, and the units left over go one
    each to the parts with the largest remainders; ties go to the larger weight, then to the
    earlier position. The parts add up to ``total`` exactly; a zero weight gets nothing.
    Deterministic, exact (integers only).

    Parameters
    ----------
    total : int
        Units to share (≥ 0): minutes, or hundredths of an hour.
    weights : sequence of int
        Non-negative integer weights, one per part.

    Returns
    -------
    list[int]
        One part per weight, summing to ``total`` (all zero when every weight is zero and
        ``total`` is 0).

    Raises
    ------
    ValueError
        A negative total or weight, or a positive total over weights that are all zero.
    """
    if total < 0 or any(w < 0 for w in weights):
        raise ValueError("apportion needs non-negative total and weights")
    whole = sum(weights)
    if whole == 0:
        if total:
            raise ValueError("cannot apportion a positive total over zero weights")
        return [0] * len(weights)
    parts = [total * w // whole for w in weights]
    left = total - sum(parts)
    if left:
        order = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % whole), -weights[i], i))
        for i in order[:left]:
            parts[i] += 1
    return parts


def minutes_by_local_day(start: datetime, end: datetime | None, minutes: int, zone: tzinfo) -> list[tuple[date, int]]:
    """Split a session's ``minutes`` over the local days (in ``zone``) it ran on.

    The weights are the microseconds between ``start`` and ``end`` that fall on each local
    day (days as the zone has them: 23 or 25 hours across a daylight-saving change);
    :func:`apportion` gives whole minutes that add up to ``minutes`` exactly. Without an
    end, or with an end not after the start, everything lands on the start's local day.

    Returns
    -------
    list[tuple[datetime.date, int]]
        ``(local date, minutes)`` in date order; days the session only touched for a
        moment may carry 0.
    """
    spans = local_day_spans(start, end, zone) if end is not None and end > start else []
    if not spans:
        return [(start.astimezone(zone).date(), int(minutes))]
    weights = [span // timedelta(microseconds=1) for _, span in spans]
    return list(zip((day for day, _ in spans), apportion(int(minutes), weights)))
