"""Benchmark of the PDF reports: a one-month timesheet and invoice of 1,000 sessions.

Builds a vault of N billable sessions in one month through the real service path
(``start_session``/``end_session``, no turns: the reports read sessions only), with task
slugs, summaries (some CJK, some long), PR deliverables and four clients (one unpriced
``internal``), then measures the median wall time of ``render_timesheet_pdf`` and
``render_invoice_pdf`` (one line per session) over the same ``activity_report`` and prints them beside the
target of issue 4 (one-month timesheet PDF of 1,000 sessions ≤ 5 s).

Usage: ``python benchmarks/bench_reports.py [--sessions 1000] [--repeats 5] [--profile]``
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import statistics
import tempfile
import time
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

from memo_analytics.analytics.activity import ActivityRequest, activity_report
from memo_analytics.config import ClientBilling, Settings
from memo_analytics.reports.invoice import render_invoice_pdf
from memo_analytics.reports.timesheet import render_timesheet_pdf
from memo_analytics.services.requests import EndSessionRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.services.store import VaultStore

TARGET_S = 5.0
CLIENTS = ["Acme Corp", "Globex", "Initech", None]
RATES = {"Acme Corp": ClientBilling(hourly_rate=Decimal("120.00"), currency="EUR"),
         "Globex": ClientBilling(hourly_rate=Decimal("95.50"), currency="USD"),
         "Initech": ClientBilling(hourly_rate=Decimal("80"), currency="EUR"),
         "internal": ClientBilling(hourly_rate=Decimal("0"), currency="EUR")}
SUMMARIES = [
    "Refactor the invoice module and add tests for rounding",
    "Fix pagination of the prompts endpoint (hasMore was wrong on the last page)",
    "飞书文档同步：修复导出时的编码问题",
    "Migrate the billing tables to the new schema; backfill currency codes; verify totals against the "
    "last quarter's invoices and document the rollback procedure for the operations team",
    None,
]


def build_vault(root: Path, sessions: int, seed: int = 11) -> VaultStore:
    """A vault of ``sessions`` billable sessions spread over March 2026 (UTC)."""
    settings = Settings(vault_root=root, timezone="UTC", clients=RATES)
    store = VaultStore(settings)
    rng = random.Random(seed)
    month_minutes = 30 * 24 * 60
    start = datetime(2026, 3, 1, 0, 0, tzinfo=timezone.utc)
    with store.deferred_views():
        for number in range(sessions):
            at = start + timedelta(minutes=number * month_minutes // sessions)
            sid = f"bench-{number:05d}"
            project = f"project-{number % 12:02d}"
            start_session(store, StartSessionRequest(session_id=sid, project=project, client=rng.choice(CLIENTS),
                                                     task_slug=f"task-{number % 97}", start_time=at), now=at)
            pr = f"https://github.com/example/{project}/pull/{number}" if number % 3 == 0 else None
            end_session(store, EndSessionRequest(session_id=sid, project=project, summary=rng.choice(SUMMARIES), pr=pr,
                                                 until=at + timedelta(minutes=rng.randint(10, 180))), now=at)
    return store


def font_subsetter() -> str:
    """Which library subsets the embedded fonts: HarfBuzz (fast) or fontTools (seconds more for
    a CJK font); WeasyPrint uses libharfbuzz-subset when the system has it."""
    try:
        from weasyprint.text.ffi import harfbuzz_subset
    except ImportError:  # pragma: no cover - another WeasyPrint layout
        return "unknown"
    if harfbuzz_subset is None:
        return "fontTools (install the system library libharfbuzz-subset0 for faster PDFs with CJK text)"
    return "HarfBuzz (libharfbuzz-subset)"


def timed(fn, repeats: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each run (CPU time shows the work when other processes share
    the cores; the target is on wall time)."""
    wall, cpu = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="print the top of a cProfile of one timesheet")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memo-bench-reports-"))
    t0 = time.perf_counter()
    store = build_vault(work / "vault", args.sessions)
    print(f"vault: {work / 'vault'}  {args.sessions} sessions (built in {time.perf_counter() - t0:.1f} s)")
    request = ActivityRequest(projects=None, since="2026-03-01", until="2026-03-31", tz="UTC")
    report = activity_report(store, request)
    billable = sum(1 for s in report.sessions if s["billable"] and s["durationMinutes"] is not None)
    print(f"one month: {billable} billable sessions, {report.total_billable_hours:.2f} h")
    timesheet = work / "timesheet.pdf"
    invoice = work / "invoice.pdf"
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(render_timesheet_pdf, report, timesheet, overwrite=True)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    times, cpu = timed(lambda: render_timesheet_pdf(report, timesheet, overwrite=True), args.repeats)
    print(f"timesheet PDF  median {statistics.median(times):6.3f} s  (min {min(times):.3f}, max {max(times):.3f}; "
          f"CPU median {statistics.median(cpu):.3f} s) for {billable} sessions   (target ≤ {TARGET_S:.0f} s for 1,000)")
    times, cpu = timed(lambda: render_invoice_pdf(report, store.settings, invoice, lines="session", overwrite=True),
                      args.repeats)
    print(f"invoice PDF    median {statistics.median(times):6.3f} s  (min {min(times):.3f}, max {max(times):.3f}; "
          f"CPU median {statistics.median(cpu):.3f} s) for {billable} session lines   (no target of its own)")
    print(f"PDFs: {timesheet}  {invoice}")
    print(f"font subsetting: {font_subsetter()}")
    store.close()


if __name__ == "__main__":
    main()
