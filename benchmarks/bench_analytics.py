"""Benchmark of the analytics layer (issue 4) on a generated vault.

Generates — through the real service path, with the generator of ``bench_core.py`` — a vault
of 20,000 sessions and 100,000 prompts (5 turns each) over 50 projects and a year, or reuses
one (``--vault DIR --reuse``), then prints medians beside the targets:

- ``activity_report`` over every project, index warm          (target ≤ 1 s)
- ``open_vault(path).sessions()``                             (target ≤ 1 s)
- and, for information: a one-month activity report, ``prompts()``, ``deliverables()``,
  ``duckdb()``, and ``memo export parquet`` with a DuckDB read-back of the totals.

Usage: ``python benchmarks/bench_analytics.py [--sessions 20000] [--turns 5] [--projects 50]
[--vault /tmp/memo-bench-analytics --reuse] [--repeats 5]``
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time

import duckdb

from bench_core import add_vault_arguments, scale_vault, timed  # the same generator as the core benchmark

import memo_analytics
from memo_analytics.analytics.activity import ActivityRequest, activity_report
from memo_analytics.analytics.parquet import export_parquet


def line(label: str, seconds: list[float], target: str = "") -> None:
    print(f"{label:<38} median {statistics.median(seconds):7.3f} s  (min {min(seconds):.3f})"
          + (f"   target {target}" if target else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_vault_arguments(parser, sessions=20_000, turns=5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    store, root, built, reuse = scale_vault(args, "memo-bench-analytics-")
    counts = dict(store.conn.execute("SELECT kind, count(*) FROM records GROUP BY kind").fetchall())
    print(f"vault: {root}  {counts.get('session', 0)} sessions, {counts.get('prompt', 0)} prompts, "
          f"{args.projects} projects" + ("  (reused)" if reuse else f"  (built in {built:.0f} s)"))

    everything = ActivityRequest(projects=None, tz="Europe/Berlin", cross_project=True)
    t0 = time.perf_counter()
    report = activity_report(store, everything)  # warms the index pages and the imports
    cold = time.perf_counter() - t0
    print(f"activity (all), first call            {cold:7.3f} s  ({len(report.sessions)} sessions, "
          f"{report.total_duration_minutes} billable minutes, {len(report.by_day)} days)")
    line("activity (all), index warm", timed(lambda: activity_report(store, everything), args.repeats), "≤ 1 s")
    month = ActivityRequest(projects=None, since="2026-03-01", until="2026-03-31", tz="Europe/Berlin",
                            cross_project=True)
    line("activity (one month)", timed(lambda: activity_report(store, month), args.repeats))

    def open_and_read_sessions() -> None:
        with memo_analytics.open_vault(root) as vault:
            vault.sessions()

    line("open_vault(path).sessions()", timed(open_and_read_sessions, args.repeats), "≤ 1 s")
    with memo_analytics.open_vault(root) as vault:
        line("Vault.prompts()", timed(vault.prompts, args.repeats))
        line("Vault.deliverables()", timed(vault.deliverables, args.repeats))
        line("Vault.duckdb() (three tables)", timed(lambda: vault.duckdb().close(), max(1, args.repeats // 2)))

    out = root.parent / "bench-parquet"
    shutil.rmtree(out, ignore_errors=True)
    line("memo export parquet", timed(lambda: export_parquet(store, out), 1))
    db = duckdb.connect()
    minutes = db.execute(f"SELECT sum(duration_minutes) FROM read_parquet('{out}/sessions/**/*.parquet', "
                         "hive_partitioning = true) WHERE billable AND duration_minutes IS NOT NULL").fetchone()[0]
    prompts = db.execute(f"SELECT count(*) FROM read_parquet('{out}/prompts/**/*.parquet', "
                         "hive_partitioning = true)").fetchone()[0]
    agree = minutes == report.total_duration_minutes and prompts == report.total_prompts
    print(f"parquet read back by DuckDB: {minutes} billable minutes, {prompts} prompts "
          f"({'equal to' if agree else 'DIFFERENT FROM'} the activity report)")
    store.close()


if __name__ == "__main__":
    main()
