"""Benchmark of ``memo serve`` on a 100,000-prompt vault: the status API and the dashboard
in a real browser (issue 6).

Measures, against a real ``memo serve`` subprocess:

- ``GET /api/prompts`` with filters (crossProject, ide, client, since; pages of 50 at several
  offsets) and with a full-text query (p50 / p95, ms over HTTP)  — target p95 ≤ 100 ms
- the dashboard's first meaningful paint: navigation start → the first page of the prompts
  table on screen, in Chromium (median of fresh browser contexts)  — target ≤ 3 s
- a filter change: click on an IDE chip → the table and its page status show the filtered
  page (median)  — target ≤ 500 ms

The vault is generated with :mod:`bench_core`'s generator (through the real service path)
unless ``--reuse`` finds one at ``--vault``.

Usage: ``python benchmarks/bench_dashboard.py [--vault /tmp/bench100k/vault --reuse]
[--sessions 10000 --turns 10 --projects 50]``
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import add_vault_arguments, pct, scale_vault  # noqa: E402


CHROMIUM = "/usr/bin/chromium"
# the text of the page status (inside the HTML pane's shadow root)
STATUS_JS = """() => {
    const find = (root) => {
        for (const el of root.querySelectorAll('*')) {
            if (el.classList && el.classList.contains('memo-status')) return el;
            if (el.shadowRoot) { const hit = find(el.shadowRoot); if (hit) return hit; }
        }
        return null;
    };
    const el = find(document);
    return el ? el.innerText : '';
}"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(vault: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "MEMO_CONFIG": str(vault.parent / "no-such-config.toml"), "MEMO_TIMEZONE": "UTC"}
    proc = subprocess.Popen([sys.executable, "-m", "memo_analytics", "--vault-root", str(vault), "serve",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("memo serve exited")
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("memo serve did not start")


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


def timed_get(url: str) -> float:
    t0 = time.perf_counter()
    get(url)
    return time.perf_counter() - t0


def bench_api(base: str) -> None:
    filtered = [f"{base}/api/prompts?crossProject=true&ide={ide}&client=Globex&since=2026-03-01&limit=50"
                f"&offset={offset}" for ide in ("cursor", "codex", "vscode") for offset in (0, 50, 100, 150, 200)]
    queries = ["invoice", "pagination envelope", "飞书", "café", "migrate deploy", "login", "never always"]
    searched = [f"{base}/api/prompts?crossProject=true&query={urllib.request.quote(q)}&limit=20&offset={offset}"
                for q in queries for offset in (0, 20)]
    for url in filtered[:3] + searched[:3]:  # warm the page cache and the server
        get(url)
    for label, urls in (("filters", filtered), ("query", searched)):
        times = [timed_get(urls[n % len(urls)]) for n in range(150)]
        total = get(urls[0])["total"]
        print(f"GET /api/prompts with {label:7}  p50 {1000 * statistics.median(times):6.1f} ms  "
              f"p95 {1000 * pct(times, .95):6.1f} ms   (target p95 ≤ 100 ms; first request matches {total:,})")


def bench_browser(base: str, paints: int = 5, changes: int = 10) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        first_paint = []
        for _ in range(paints):
            context = browser.new_context(viewport={"width": 1500, "height": 1000})
            page = context.new_page()
            t0 = time.perf_counter()
            page.goto(base + "/", wait_until="commit")
            page.wait_for_selector(".memo-prompts-table .tabulator-row", timeout=60_000)
            first_paint.append(time.perf_counter() - t0)
            context.close()
        print(f"dashboard first meaningful paint  median {statistics.median(first_paint):5.2f} s  "
              f"max {max(first_paint):5.2f} s   (target ≤ 3 s; navigation → first page of the table)")
        context = browser.new_context(viewport={"width": 1500, "height": 1000})
        page = context.new_page()
        page.goto(base + "/")
        page.wait_for_selector(".memo-prompts-table .tabulator-row", timeout=60_000)
        chips = page.locator(".memo-ide-chips button")
        names = [chips.nth(n).inner_text() for n in range(chips.count())]
        picks = [name for name in names if name != "All IDEs"] + ["All IDEs"]
        times = []
        for n in range(changes):
            name = picks[n % len(picks)]
            before = page.evaluate(STATUS_JS)
            t0 = time.perf_counter()
            page.locator(".memo-ide-chips").get_by_role("button", name=name, exact=True).click()
            page.wait_for_function(f"() => ({STATUS_JS})() !== {json.dumps(before)}", polling="raf", timeout=30_000)
            times.append(time.perf_counter() - t0)
        total = page.evaluate(STATUS_JS)
        print(f"filter change (IDE chip)          median {1000 * statistics.median(times):5.0f} ms  "
              f"max {1000 * max(times):5.0f} ms   (target ≤ 500 ms; last: {total})")
        context.close()
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_vault_arguments(parser)
    args = parser.parse_args()
    store, root, built, reuse = scale_vault(args, "memo-bench-dash-")
    store.close()
    if not reuse:
        print(f"generated {args.sessions * args.turns:,} prompts in {built:.0f} s")
    proc, base = start_server(root)
    try:
        total = get(f"{base}/api/prompts?crossProject=true&limit=1")["total"]
        print(f"vault: {root}  {total:,} prompts")
        bench_api(base)
        bench_browser(base)
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
