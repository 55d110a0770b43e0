"""The one zone rule of ``domain/clock`` agrees with what the analytics layer (polars) can use,
for every zone of this machine's tz database and its ``right/`` and ``posix/`` copies."""

from __future__ import annotations

import os
import zoneinfo
from datetime import datetime, timezone

import polars as pl
import pytest

from memo_analytics.domain.clock import check_zone_name, resolve_zone, zone_name_problem
from memo_analytics.domain.errors import InvalidFieldError

INSTANT = pl.Series([datetime(2026, 3, 29, 0, 30, tzinfo=timezone.utc)])  # a DST change in Europe


def polars_converts(name: str) -> bool:
    try:
        INSTANT.dt.convert_time_zone(name).dt.date()
    except Exception:  # noqa: BLE001 - polars raises ComputeError (or a panic) for a zone it lacks
        return False
    return True


def variant_names() -> list[str]:
    """The ``right/`` and ``posix/`` copies this machine ships (zoneinfo loads them, polars not)."""
    found = set()
    for root in zoneinfo.TZPATH:
        for folder in ("right", "posix"):
            top = os.path.join(root, folder)
            for here, _, files in os.walk(top):
                found.update(os.path.relpath(os.path.join(here, f), root) for f in files)
    return sorted(found)


def test_the_rule_accepts_exactly_the_available_zones_polars_converts_to():
    names = sorted(zoneinfo.available_timezones())
    disagreements = [(name, zone_name_problem(name)) for name in names
                     if (zone_name_problem(name) is None) != polars_converts(name)]
    assert disagreements == []
    assert len(names) > 300  # a real tz database was checked


def test_every_right_and_posix_copy_is_refused_and_polars_agrees():
    names = variant_names() or ["right/UTC", "posix/Europe/Berlin"]
    assert [n for n in names if zone_name_problem(n) is None] == []
    assert [n for n in names if polars_converts(n)] == []


@pytest.mark.parametrize("name, reason", [
    ("Factory", "'Factory' is a placeholder of the tz database, not a place's time zone; use an IANA name"),
    ("localtime", "'localtime' is a placeholder of the tz database"),
    ("posixrules", "'posixrules' is a placeholder of the tz database"),
    ("right/UTC", "'right/UTC' is the right/ copy of a zone, which reports cannot use; use 'UTC'"),
    ("posix/Europe/Berlin", "'posix/Europe/Berlin' is the posix/ copy of a zone, which reports cannot use; "
                            "use 'Europe/Berlin'"),
    ("right/Mars/Olympus", "unknown time zone 'right/Mars/Olympus'"),
    ("Mars/Olympus", "unknown time zone 'Mars/Olympus'; use an IANA name such as Europe/Berlin or UTC"),
    ("europe/berlin", "unknown time zone 'europe/berlin'"),
    ("", "must be a time zone name"),
])
def test_a_refused_zone_is_one_line_naming_the_field(name, reason):
    assert zone_name_problem(name).startswith(reason)
    with pytest.raises(InvalidFieldError) as refused:
        check_zone_name(name, "timezone")
    assert str(refused.value) == f"Invalid timezone: {zone_name_problem(name)}" and "\n" not in str(refused.value)
    if name:
        with pytest.raises(InvalidFieldError, match=r"^Invalid tz: "):
            resolve_zone(name)


def test_a_usable_zone_is_returned_without_surrounding_space():
    assert check_zone_name("  Europe/Berlin ") == "Europe/Berlin"
    assert resolve_zone(" Asia/Tokyo").key == "Asia/Tokyo"


def test_the_machine_zone_is_always_one_polars_can_use():
    assert polars_converts(resolve_zone(None).key)


@pytest.mark.parametrize("machine, expected", [("right/Europe/Berlin", "Europe/Berlin"), ("posix/Asia/Tokyo", "Asia/Tokyo"),
                                               ("Factory", "UTC"), ("Nowhere/Zone", "UTC"), ("Europe/Paris", "Europe/Paris")])
def test_an_unusable_machine_zone_falls_back_to_its_plain_name_or_utc(monkeypatch, machine, expected):
    import tzlocal

    monkeypatch.setattr(tzlocal, "get_localzone_name", lambda: machine)
    assert resolve_zone(None).key == expected


def test_the_quick_tzpath_check_agrees_with_the_full_list_of_zones():
    """The start-up path checks a name with a few directory listings instead of walking the
    whole database; it must answer as ``available_timezones`` does, case included."""
    from memo_analytics.domain.clock import _listed_on_tzpath

    names = sorted(zoneinfo.available_timezones())
    on_path = [n for n in names if _listed_on_tzpath(n)]
    assert len(on_path) > 300  # the machine's database is on the tz path
    assert [n for n in on_path if n not in names] == []
    mangled = ["europe/berlin", "EUROPE/Berlin", "utc", "Europe/../UTC", "Europe//Berlin", "zone.tab",
               "Europe", "iso3166.tab", "Europe/Berlin/x", "/UTC"]
    assert [n for n in mangled if _listed_on_tzpath(n)] == []
    assert [n for n in mangled if zone_name_problem(n) is None] == []
