"""Benchmark of the walking skeleton's hot paths on a generated vault.

Generates a vault through the real service path (``start_session``/``record_prompt``/
``end_session``), then measures, with medians over repeats:

- recording one turn (p50 / p95, ms)           — the write path must not grow with the vault
- ``list`` with filters and ``search`` (p50 / p95, ms)
- ``activity_report`` over every project (median, s)
- rendering a one-month timesheet PDF (median, s)
- ``reindex`` from the files (s)

Targets named by the issues are printed beside the figures (issue 3, on 100,000 prompts and
10,000 sessions: recording p50 ≤ 10 ms and ≤ 1.5× its time on a 1,000-prompt vault, search and
filtered list p95 ≤ 50 ms, reindex ≤ 20 s and ≤ 2.5× a bare YAML parse of the same files;
issue 4: activity ≤ 1 s, one-month PDF of 1,000 sessions ≤ 5 s).

Usage: ``python benchmarks/bench_core.py [--sessions 10000] [--turns 10] [--vault /tmp/memo-bench]``
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memo_analytics.analytics.activity import ActivityRequest, activity_report
from memo_analytics.config import Settings
from memo_analytics.reports.timesheet import render_timesheet_pdf
from memo_analytics.services.maintenance import reindex
from memo_analytics.services.prompts import list_prompts, record_prompt, search_prompts
from memo_analytics.services.requests import EndSessionRequest, ListRequest, RecordPromptRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.services.store import VaultStore

DOMAIN = ("invoice refactor login search export billing sync report cache index migrate deploy test "
          "never always must pagination envelope 飞书 文档 日志 café crème").split()


def vocabulary(rng: random.Random, size: int = 3000) -> tuple[list[str], list[float]]:
    """Zipf-distributed words, as in real prompts: a few very common ones, a long tail; the
    domain words the benchmark searches for sit at ranks 40–400 (each in ~1–10 % of prompts)."""
    syllables = "ka ri to me nu sa po li de fa go hu ji ke lo ma ne pi qu ro su ta vi wo xe yu za".split()
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(size)]
    for n, word in enumerate(DOMAIN):
        words[40 + n * 15] = word
    weights = [1.0 / (rank + 1) for rank in range(size)]
    return words, weights
CLIENTS = ["Acme Corp", "Globex", "Initech", None]
IDES = ["cursor", "claude-code", "codex", "vscode", "gemini"]


def generate(store: VaultStore, sessions: int, turns: int, projects: int, seed: int = 7) -> None:
    with store.deferred_views():
        _generate(store, sessions, turns, projects, seed)


def _generate(store: VaultStore, sessions: int, turns: int, projects: int, seed: int) -> None:
    rng = random.Random(seed)
    words, weights = vocabulary(rng)
    start = datetime(2026, 1, 1, 8, 0, tzinfo=timezone.utc)
    for number in range(sessions):
        at = start + timedelta(minutes=number * 523 % (365 * 24 * 60))
        project = f"project-{number % projects:02d}"
        sid = f"bench-{number:06d}"
        start_session(store, StartSessionRequest(session_id=sid, project=project, client=rng.choice(CLIENTS),
                                                 ide=rng.choice(IDES), start_time=at), now=at)
        for turn in range(turns):
            body = " ".join(rng.choices(words, weights, k=rng.randint(8, 40)))
            record_prompt(store, RecordPromptRequest(body=body, session_id=sid, project=project,
                                                     created=at + timedelta(minutes=5 * turn)), now=at)
        end_session(store, EndSessionRequest(session_id=sid, project=project,
                                             until=at + timedelta(minutes=rng.randint(10, 180))), now=at)


def timed(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def record_latencies(store: VaultStore, n: int = 200) -> list[float]:
    return timed(lambda: record_prompt(store, RecordPromptRequest(
        body="Please add pagination to the invoices endpoint", session_id="bench-extra", project="project-00",
        client="Acme Corp")), n)


def yaml_parse_seconds(root: Path) -> float:
    """The bare cost of parsing every record file's frontmatter with the YAML library
    (libyaml loader, one process): the floor a rebuild is compared with."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    files = [p for kind in ("prompts", "sessions") for p in root.glob(f"projects/*/{kind}/*.md")]
    t0 = time.perf_counter()
    for path in files:
        text = path.read_text(encoding="utf-8")
        yaml.load(text.split("\n---\n", 1)[0].removeprefix("---\n"), Loader=loader)
    return time.perf_counter() - t0


def add_vault_arguments(parser: argparse.ArgumentParser, sessions: int = 10_000, turns: int = 10) -> None:
    """The scale-vault options every benchmark shares."""
    parser.add_argument("--sessions", type=int, default=sessions)
    parser.add_argument("--turns", type=int, default=turns)
    parser.add_argument("--projects", type=int, default=50)
    parser.add_argument("--vault", type=Path, default=None)
    parser.add_argument("--reuse", action="store_true",
                        help="keep the vault at --vault when it exists (its shape must match the other options)")


def scale_vault(args: argparse.Namespace, prefix: str) -> tuple[VaultStore, Path, float, bool]:
    """Generate the scale vault the options describe (or reuse it with ``--reuse``).
    Returns ``(store, root, seconds spent building, reused)``."""
    root = args.vault or Path(tempfile.mkdtemp(prefix=prefix)) / "vault"
    reuse = args.reuse and args.vault is not None and (root / "projects").is_dir()
    if not reuse:
        shutil.rmtree(root, ignore_errors=True)
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    t0 = time.perf_counter()
    if not reuse:
        generate(store, args.sessions, args.turns, args.projects)
    return store, root, time.perf_counter() - t0, reuse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_vault_arguments(parser)
    args = parser.parse_args()
    small_root = Path(tempfile.mkdtemp(prefix="memo-bench-small-")) / "vault"
    small = VaultStore(Settings(vault_root=small_root, timezone="UTC"))
    generate(small, 100, 10, 10)
    small_record = record_latencies(small)
    print(f"1,000-prompt vault: record a turn p50 {1000 * statistics.median(small_record):.2f} ms")
    store, root, built, _ = scale_vault(args, "memo-bench-")
    prompts = args.sessions * args.turns
    print(f"vault: {root}  {args.sessions} sessions, {prompts} prompts, {args.projects} projects "
          f"(built in {built:.1f} s, {1000 * built / (prompts + 2 * args.sessions):.2f} ms per record)")

    counter = iter(range(10**9))
    record = record_latencies(store)
    ratio = statistics.median(record) / statistics.median(small_record)
    print(f"record a turn        p50 {1000 * statistics.median(record):7.2f} ms  p95 {1000 * pct(record, .95):7.2f} ms"
          f"   {ratio:.2f}× the 1,000-prompt vault   (target p50 ≤ 10 ms, ≤ 1.5×)")
    filt = timed(lambda: list_prompts(store, ListRequest(cross_project=True, ide="cursor", client="Globex",
                                                         since="2026-03-01", limit=50, offset=next(counter) % 5)), 50)
    print(f"list with filters    p50 {1000 * statistics.median(filt):7.2f} ms  p95 {1000 * pct(filt, .95):7.2f} ms"
          f"   (target p95 ≤ 50 ms)")
    queries = ["invoice", "pagination envelope", "飞书", "café", "migrate deploy", "login"]
    matches = {q: search_prompts(store, ListRequest(cross_project=True, query=q, limit=1))["total"] for q in queries}
    search = timed(lambda: search_prompts(store, ListRequest(cross_project=True, query=queries[next(counter) % 6],
                                                             limit=20)), 60)
    print(f"search (FTS5, bm25)  p50 {1000 * statistics.median(search):7.2f} ms  p95 {1000 * pct(search, .95):7.2f} ms"
          f"   (target p95 ≤ 50 ms)  matches per query: {matches}")
    common = max(matches, key=matches.get)
    worst = timed(lambda: search_prompts(store, ListRequest(cross_project=True, query="ka*", limit=20)), 10)
    broad = search_prompts(store, ListRequest(cross_project=True, query="ka*", limit=1))["total"]
    print(f"search, broad query  p50 {1000 * statistics.median(worst):7.2f} ms  (ka*: {broad} matches, "
          f"{100 * broad / max(prompts, 1):.0f} % of prompts; most common benchmark word: {common})")
    act = timed(lambda: activity_report(store, ActivityRequest(projects=None, tz="Europe/Berlin")), 5)
    print(f"activity (all)       median {statistics.median(act):6.3f} s   (target ≤ 1 s)")
    month = activity_report(store, ActivityRequest(projects=None, since="2026-03-01", until="2026-03-31", tz="UTC"))
    out = root.parent / "bench-timesheet.pdf"
    pdf = timed(lambda: render_timesheet_pdf(month, out, overwrite=True), 3)
    print(f"timesheet PDF        median {statistics.median(pdf):6.3f} s for {len(month.sessions)} sessions "
          f"(target ≤ 5 s for 1,000)")
    store.close()
    rebuilt = statistics.median(timed(lambda: reindex(VaultStore(Settings(vault_root=root, timezone="UTC"))), 3))
    floor = yaml_parse_seconds(root)
    print(f"reindex (median of 3) {rebuilt:5.2f} s for {prompts + args.sessions + 400} records; bare YAML parse "
          f"{floor:.2f} s → {rebuilt / floor:.2f}×   (target ≤ 20 s, ≤ 2.5×)")


if __name__ == "__main__":
    main()
