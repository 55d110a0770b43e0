"""Every request to `memo serve` passes the browser boundary first (issue 11, point 1).

Loopback is no trust boundary: any page the person has open can send requests to
``127.0.0.1``, and a DNS-rebinding page can make its own name resolve there. A real
`memo serve` on a seeded vault is attacked the ways a web page can attack it, on every
route — the API reads, the API writes, the dashboard page, its static files and websocket:

A. raw requests, one wrong header at a time: a foreign ``Host`` (421, no vault data in the
   answer), a foreign ``Origin``, ``Origin: null`` or another local port's origin (403),
   ``Sec-Fetch-Site: cross-site|same-site`` (403), writes sent as ``text/plain``, form
   encodings or without a content type (415); the same requests with the right headers
   succeed, so every refusal is the boundary's, not a broken request.
B. Debian's Chromium on an attacker page served from another port (``127.0.0.1``, same
   site) and from another name (``attacker.test``, cross-site): ``no-cors`` and ``cors``
   fetches, beacons, auto-submitted ``text/plain``, urlencoded and multipart forms into
   hidden iframes, ``<img>`` and ``<script>`` loads, framing the dashboard, a websocket to
   it, and the MCP endpoint beside it; then DNS rebinding (``rebind.test`` mapped to
   ``127.0.0.1``); then the dashboard itself, which keeps working.

After each wave the vault's record files, its operator audit log and what ``memo session
show --all`` and ``memo prompt list --all`` print are exactly as before. Only then are the
attack requests sent as the product's own clients send them, and they do change the vault.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memo_analytics.config import Settings
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import EndSessionRequest, RecordPromptRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.services.store import VaultStore
from tests.integration.test_cli import memo
from tests.integration.test_http_api import Server, free_port

playwright_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

RULE = "Never commit directly to main."
SECRET_TURN = "Add pagination to the zebra-quartz invoices API"
OTHER_TURN = "Rotate the okapi-lumen staging keys before Friday"
SUMMARY = "Shipped the zebra-quartz pagination"
CLIENT = "Kestrel Umbrella"
STALLED, OPEN = "stalled-okra", "open-ember"
SUMMARY_SHOWN = f"session stalled {STALLED}"  # the digest item of the dashboard
#: Text only the vault holds: an answer that carries any of it leaked vault data.
SEEDED = ("zebra-quartz", "okapi-lumen", "Never commit directly", STALLED, OPEN, "Kestrel")
#: What the attacks would write (a vault holding any of it was changed by an attack).
PLANTED_TURN = "Planted by a cross-site page"
PLANTED_SESSION = "planted-session"
REPLACED_BODY = "Replaced by a cross-site push"
#: Where a text/plain form puts the ``=`` between its one field's name and value.
EQ = "@@EQ@@"


# ---------------------------------------------------------------- the vault and its state


def _seed(vault: Path, now: datetime) -> None:
    """Two projects, a completed session with turns, two open stalled sessions (one with a
    digest proposal to end it), a turn that reads as a rule."""
    store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
    try:
        start = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
        start_session(store, StartSessionRequest(session_id="s1", project="web", client=CLIENT, start_time=start),
                      now=start)
        for n, body in enumerate((RULE, SECRET_TURN), 1):
            record_prompt(store, RecordPromptRequest(session_id="s1", project="web", body=body,
                                                     created=start + timedelta(minutes=10 * n)),
                          now=start + timedelta(minutes=10 * n))
        end_session(store, EndSessionRequest(session_id="s1", project="web", until=start + timedelta(minutes=90),
                                             summary=SUMMARY), now=start + timedelta(minutes=90))
        record_prompt(store, RecordPromptRequest(session_id="z9", project="api", body=OTHER_TURN,
                                                 created=start + timedelta(days=1)), now=start + timedelta(days=1))
        for sid in (STALLED, OPEN):  # open, no turn for three hours: stalled
            opened = now - timedelta(hours=3)
            start_session(store, StartSessionRequest(session_id=sid, project="web", client=CLIENT, start_time=opened),
                          now=opened)
    finally:
        store.close()


def vault_state(vault: Path) -> dict[str, Any]:
    """Every record and view file (bytes), the audit log, and what the CLI lists."""
    files = {str(p.relative_to(vault)): p.read_bytes() for p in sorted(vault.rglob("*"))
             if p.is_file() and ".memo" not in p.relative_to(vault).parts}
    audit = vault / ".memo" / "audit.jsonl"
    return {
        "files": files,
        "audit": audit.read_bytes() if audit.exists() else None,
        "sessions": json.loads(memo("--json", "session", "show", "--all", "--limit", "100", vault=vault).stdout),
        "prompts": json.loads(memo("--json", "prompt", "list", "--all", "--limit", "100", vault=vault).stdout),
    }


def leaked(text: str) -> list[str]:
    return [marker for marker in SEEDED if marker.lower() in text.lower()]


def send(port: int, method: str, path: str, headers: dict[str, str], body: bytes | None = None) -> tuple[int, str]:
    """One raw request with exactly these headers (``Host`` included): status and body text."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


@dataclass
class Memo:
    """The served vault: its ports, what it held before any attack, the attack bodies."""

    vault: Path
    server: Server
    mcp_port: int
    before: dict[str, Any]
    posts: dict[str, dict[str, Any]]
    log: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def own(self) -> str:
        return f"127.0.0.1:{self.port}"


def _attack_bodies(vault: Path, now: datetime, digest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The JSON body of each write: what a page would have the server do. One string value
    in each holds ``EQ``, where a text/plain form puts its ``=`` (removed for other senders)."""
    turn = (vault / "projects/web/prompts/prompt-s1-t2.md").read_text(encoding="utf-8")
    updated = re.search(r"^updated: '?([^'\n]+)'?$", turn, re.M).group(1)
    # a push names the owner of the turn's session, as a hybrid laptop sends it (none: kept apart)
    owner = re.search(r"^owner: (.*)$", (vault / "projects/web/sessions/session-s1.md").read_text(encoding="utf-8"),
                      re.M).group(1).strip("'")
    [proposal] = [item for item in digest["items"] if item["id"] == f"session_stalled:{STALLED}"]
    backdated = (now - timedelta(hours=3) + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "/api/actions/record": {"body": PLANTED_TURN + EQ, "projectId": "web"},
        "/api/actions/session_start": {"summary": "planted" + EQ, "sessionId": PLANTED_SESSION, "projectId": "web",
                                       "startTime": "2026-01-05T08:00:00Z", "client": CLIENT},
        "/api/actions/session_end": {"summary": "ended from another site" + EQ, "sessionId": OPEN, "projectId": "web",
                                     "until": backdated},
        "/api/sync/records": {"records": [{"id": "prompt-s1-t2", "base": updated, "owner": owner,
                                           "text": turn.replace(SECRET_TURN, REPLACED_BODY + EQ)}]},
        # the digest_apply request takes exactly these fields (an unknown one is refused, 400)
        "/api/digest/apply": {"item": proposal["id"], "fingerprint": proposal["fingerprint"] + EQ},
        "/api/prompts/derive-rules": {"crossProject": True, "saveTraps": True, "limit": "20" + EQ},
        # a session's billing data: a page must not move its hours to another client
        "/api/sessions/s1/edit": {"client": "Evil Corp" + EQ, "project": "web"},
        # a hook event of a machine in remote mode: a page must not plant a turn through it either
        "/api/hooks/claude-code": {"payload": {"session_id": PLANTED_SESSION, "hook_event_name": "UserPromptSubmit",
                                               "prompt": PLANTED_TURN + EQ},
                                   "receivedAt": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "captureId": "0123456789abcdef",
                                   "project": "web"},
    }


def plain(body: dict[str, Any]) -> bytes:
    """The body as every sender but a text/plain form sends it."""
    return json.dumps(body).replace(EQ, "").replace('"limit": "20"', '"limit": 20').encode()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    vault = tmp_path_factory.mktemp("boundary") / "vault"
    now = datetime.now(timezone.utc)
    _seed(vault, now)
    mcp_port = free_port()
    server = Server(vault, "--mcp-port", str(mcp_port))
    log: list[str] = []
    drain = threading.Thread(target=lambda: log.extend(server.proc.stderr), daemon=True)
    drain.start()  # the server's log never fills its pipe
    try:
        status, text = send(server.port, "GET", "/api/digest", {"Host": f"127.0.0.1:{server.port}"})
        assert status == 200, text
        posts = _attack_bodies(vault, now, json.loads(text))
        yield Memo(vault, server, mcp_port, vault_state(vault), posts, log)
    finally:
        server.proc.terminate()
        server.proc.wait(10)
        drain.join(10)
        server.proc.stderr.close()


# ---------------------------------------------------------------- A. raw requests

#: GET routes: path and the seeded text its answer shows to the server's own clients.
GETS = {
    "prompts": ("/api/prompts?crossProject=true", "zebra-quartz"),
    "prompt": ("/api/prompts/prompt-s1-t2", "zebra-quartz"),
    "session turns": ("/api/prompts/sessions/s1?project=web", "zebra-quartz"),
    "session export": ("/api/prompts/sessions/s1/export", "zebra-quartz"),
    "sessions": ("/api/sessions?crossProject=true", STALLED),
    "activity": ("/api/activity?crossProject=true", "Kestrel"),
    "digest": ("/api/digest", STALLED),
    "dashboard": ("/", "<title>memo</title>"),
    "static file": ("/static/js/bokeh.min.js", "Bokeh"),
}
POSTS = {"record": "/api/actions/record", "session_start": "/api/actions/session_start",
         "session_end": "/api/actions/session_end", "sync": "/api/sync/records", "digest apply": "/api/digest/apply",
         "derive-rules": "/api/prompts/derive-rules", "hook": "/api/hooks/claude-code",
         "session edit": "/api/sessions/s1/edit"}
WEBSOCKET = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
             "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}

#: One wrong header each (``{port}`` and ``{other}`` filled in), and the status it gets.
HEADER_ATTACKS = {
    "foreign Host": ({"Host": "evil.example:{port}"}, 421),
    "foreign Host, no port": ({"Host": "evil.example"}, 421),
    "loopback address, other port": ({"Host": "127.0.0.1:{other}"}, 421),
    # found by an attacker: taken on a 127.0.0.1 bind, the dashboard answered it 500 with a traceback
    "IPv6 loopback on an IPv4 bind": ({"Host": "[::1]:{port}"}, 421),
    "foreign Origin": ({"Origin": "http://evil.example"}, 403),
    "Origin null": ({"Origin": "null"}, 403),
    "Origin of another local port": ({"Origin": "http://127.0.0.1:{other}"}, 403),
    "Origin https of another name": ({"Origin": "https://evil.example:{port}"}, 403),
    "Sec-Fetch-Site cross-site": ({"Sec-Fetch-Site": "cross-site"}, 403),
    "Sec-Fetch-Site same-site": ({"Sec-Fetch-Site": "same-site"}, 403),
    "cross-site subresource": ({"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors",
                                "Sec-Fetch-Dest": "image"}, 403),
    "cross-site frame": ({"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate",
                          "Sec-Fetch-Dest": "iframe"}, 403),
}
#: A top-level navigation from another site: refused for the API, let through for the dashboard.
NAVIGATION = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document",
              "Sec-Fetch-User": "?1"}
CONTENT_TYPES = {"text/plain": "text/plain", "text/plain;charset=UTF-8": "text/plain;charset=UTF-8",
                 "urlencoded": "application/x-www-form-urlencoded",
                 "multipart": "multipart/form-data; boundary=----memo", "no Content-Type": None}


def _raw_cases() -> list[tuple[str, str, str, str, dict[str, str], int]]:
    """(route, attack, method, path, headers with placeholders, expected status)."""
    cases = []
    for route, (path, _) in GETS.items():
        for attack, (headers, status) in HEADER_ATTACKS.items():
            cases.append((route, attack, "GET", path, headers, status))
        if path.startswith("/api/"):
            cases.append((route, "cross-site navigation", "GET", path, NAVIGATION, 403))
    for route, path in POSTS.items():
        for attack, (headers, status) in HEADER_ATTACKS.items():
            cases.append((route, attack, "POST", path, {"Content-Type": "application/json", **headers}, status))
        cases.append((route, "cross-site navigation", "POST", path,
                      {"Content-Type": "application/json", **NAVIGATION}, 403))
        for attack, content_type in CONTENT_TYPES.items():
            cases.append((route, attack, "POST", path, {"Content-Type": content_type} if content_type else {}, 415))
    for attack in ("foreign Host", "foreign Origin", "Origin null", "Origin of another local port",
                   "Sec-Fetch-Site cross-site"):
        headers, status = HEADER_ATTACKS[attack]
        cases.append(("websocket", attack, "GET", "/ws", {**WEBSOCKET, **headers}, status))
    # found by an attacker: a bare upgrade (no subprotocol: no session) logged a 56-line traceback each
    cases.append(("websocket", "no subprotocol", "GET", "/ws", WEBSOCKET, 400))
    return cases


RAW_CASES = _raw_cases()
#: Other spellings of an API path (``{port}`` filled in): each is refused or names no route.
SPELLINGS = ("//api/{route}", "/api//{route}", "/%61pi/{route}", "/API/{route}", "/api/{route}/", "/./api/{route}",
             "/static/../api/{route}", "http://127.0.0.1:{port}/api/{route}", "/api/{route}#x")


@dataclass
class RawWave:
    answers: dict[tuple[str, str], tuple[int, str]]
    controls: dict[str, tuple[int, str]]
    navigation_to_dashboard: tuple[int, str]
    spelled: dict[str, tuple[int, str]]
    after: dict[str, Any]


@pytest.fixture(scope="module")
def raw(served):
    """Every raw attack, then the GET routes as the server's own page asks for them."""
    other = free_port()
    answers = {}
    for route, attack, method, path, headers, _ in RAW_CASES:
        filled = {"Host": served.own}
        filled.update({k: v.format(port=served.port, other=other) for k, v in headers.items()})
        body = plain(served.posts[path]) if method == "POST" else None
        answers[route, attack] = send(served.port, method, path, filled, body)
    same_origin = {"Host": served.own, "Origin": f"http://{served.own}", "Sec-Fetch-Site": "same-origin",
                   "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}
    controls = {route: send(served.port, "GET", path, {"Host": served.own}) for route, (path, _) in GETS.items()}
    controls |= {f"{route}, same origin": send(served.port, "GET", path, same_origin)
                 for route, (path, _) in GETS.items() if path.startswith("/api/")}
    controls["prompts, Host localhost"] = send(served.port, "GET", GETS["prompts"][0],
                                               {"Host": f"localhost:{served.port}"})
    navigation = send(served.port, "GET", "/", {"Host": served.own, **NAVIGATION})
    record = plain(served.posts[POSTS["record"]])
    spelled = {}
    for spelling in SPELLINGS:
        write = spelling.format(route="actions/record", port=served.port)
        spelled["POST text/plain " + write] = send(served.port, "POST", write, {"Host": served.own,
                                                                                "Content-Type": "text/plain"}, record)
        read = spelling.format(route="prompts", port=served.port)
        spelled["cross-site navigation to " + read] = send(served.port, "GET", read, {"Host": served.own, **NAVIGATION})
    ARTIFACTS.mkdir(exist_ok=True)  # what each attack got, for the record
    (ARTIFACTS / "browser-boundary-raw.json").write_text(json.dumps(
        {f"{route}: {attack}": status for (route, attack), (status, _) in answers.items()}
        | {request: status for request, (status, _) in spelled.items()}
        | {f"control {route}": status for route, (status, _) in controls.items()}, indent=1), encoding="utf-8")
    return RawWave(answers, controls, navigation, spelled, vault_state(served.vault))


@pytest.mark.parametrize("route, attack, method, path, headers, status",
                         RAW_CASES, ids=[f"{c[0]}: {c[1]}" for c in RAW_CASES])
def test_each_attack_on_each_route_is_refused_before_the_route(raw, route, attack, method, path, headers, status):
    got, text = raw.answers[route, attack]
    assert got == status, f"{method} {path} with {headers}: {got} {text[:300]}"
    assert leaked(text) == []
    assert json.loads(text)["error"]


@pytest.mark.parametrize("route", [*GETS, *(f"{r}, same origin" for r, (p, _) in GETS.items() if p.startswith("/api/")),
                                   "prompts, Host localhost"])
def test_the_same_reads_with_the_servers_own_headers_succeed(raw, route):
    status, text = raw.controls[route]
    assert status == 200, text[:300]
    assert GETS[route.split(",")[0]][1] in text


def test_a_link_from_another_site_opens_the_dashboard_page(raw):
    # a top-level navigation: the person sees the dashboard; the linking page reads nothing of it
    status, text = raw.navigation_to_dashboard
    assert status == 200 and "<title>memo</title>" in text


def test_a_component_route_imports_no_module_and_a_link_opens_only_the_dashboard(tmp_path):
    """Found by an attacker: Panel's ``/components/<module>/…`` imported whatever installed module
    the URL named, before any check and through the navigation exception — ``venv.__main__`` ended
    the server (one GET, no token: a link on any page did it). A module the dashboard did not load
    is 404 and the server runs on; a link from another site opens the dashboard's page and sign-in,
    no other route."""
    server = Server(tmp_path / "vault")
    try:
        own = {"Host": f"127.0.0.1:{server.port}"}
        for path in ("/components/venv.__main__/x/_css/y", "/components/venv%2E__main__/x/_css/y",
                     "/components/memo_analytics.__main__/x/_css/y", "/components/this/x/_css/y"):
            for headers in (own, {**own, **NAVIGATION}):
                status, text = send(server.port, "GET", path, headers)
                assert (status, json.loads(text)) == ((404, {"error": "Not found"}) if headers is own else
                                                      (403, {"error": "Forbidden: cross-site request"})), path
                assert server.proc.poll() is None, f"{path} ended the server"
        assert send(server.port, "GET", "/api/health", own)[0] == 200
        for path in ("/static/extensions/panel/css/loading.css", "/components/panel/x/_css/y", "/ws"):
            assert send(server.port, "GET", path, {**own, **NAVIGATION})[0] == 403, path
        assert send(server.port, "GET", "/", {**own, **NAVIGATION})[0] == 200
        # a module the dashboard loaded still serves its listed resources (its import does nothing)
        assert send(server.port, "GET", "/components/panel/x/_css/y", own)[0] == 404  # no such component: Panel's
    finally:
        server.stop()


def test_other_spellings_of_an_api_path_are_refused_or_name_no_route(raw):
    got = {request: status for request, (status, _) in raw.spelled.items()}
    assert {request: status for request, status in got.items() if status not in (403, 404, 405, 415)} == {}
    assert [request for request, (_, text) in raw.spelled.items() if leaked(text)] == []


def test_raw_attacks_left_the_vault_as_it_was(served, raw):
    assert raw.after == served.before
    assert raw.after["audit"] is None  # no digest action was ever applied


# ---------------------------------------------------------------- B. the real browser

ATTACK_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>cute cats</title></head><body>
<h1>Nothing to see</h1>
<script>
const M = __MEMO__, MCP = __MCP__, POSTS = __POSTS__, GETS = __GETS__, EQ = __EQ__;
window.results = [];
window.done = false;
const log = (kind, target, outcome, text) =>
    window.results.push({kind, target, outcome, text: String(text || "").slice(0, 4000)});
window.addEventListener("error", (e) => log("window error", String(e.filename || ""), String(e.message || ""), ""));
const json = (body) => JSON.stringify(body).split(EQ).join("");

async function tryFetch(kind, url, init) {
    try {
        const r = await fetch(url, init);
        let text = "";
        try { text = await r.text(); } catch (e) { text = ""; }
        log(kind, url, `answered type=${r.type} status=${r.status}`, text);
    } catch (e) {
        log(kind, url, `rejected ${e.name}`, "");
    }
}

function submitForm(kind, path, enctype, fields) {
    return new Promise((resolve) => {
        const name = "f" + Math.random().toString(36).slice(2);
        const frame = document.createElement("iframe");
        frame.name = name;
        frame.style.display = "none";
        let settled = false, armed = false;
        const done = (outcome) => {
            if (settled) return;
            settled = true;
            let text = "";
            try { text = frame.contentDocument.body.innerText; outcome += " and read"; }
            catch (e) { outcome += ` unreadable (${e.name})`; }
            log(kind, path, outcome, text);
            resolve();
        };
        frame.onload = () => { if (armed) done("loaded"); };
        document.body.appendChild(frame);
        const form = document.createElement("form");
        form.method = "POST";
        form.action = M + path;
        form.enctype = enctype;
        form.target = name;
        for (const [k, v] of fields) {
            const input = document.createElement("input");
            input.type = "hidden";
            input.name = k;
            input.value = v;
            form.appendChild(input);
        }
        document.body.appendChild(form);
        armed = true;
        form.submit();
        setTimeout(() => done("no load"), 5000);
    });
}

function load(tag, path) {
    return new Promise((resolve) => {
        const el = document.createElement(tag);
        const timer = setTimeout(() => { log(tag, path, "no answer", ""); resolve(); }, 5000);
        el.onload = () => {
            clearTimeout(timer);
            log(tag, path, "load", tag === "img" ? `${el.naturalWidth}x${el.naturalHeight}` : "");
            resolve();
        };
        el.onerror = () => { clearTimeout(timer); log(tag, path, "error", ""); resolve(); };
        el.src = M + path;
        document.body.appendChild(el);
    });
}

function frame(path) {
    return new Promise((resolve) => {
        const el = document.createElement("iframe");
        const timer = setTimeout(() => finish("no load"), 8000);
        let settled = false;
        const finish = (outcome) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            let text = "";
            try { text = el.contentDocument.documentElement.outerHTML; outcome += " and read"; }
            catch (e) { outcome += ` unreadable (${e.name})`; }
            try { text += String(el.contentWindow.results || el.contentWindow.document.title); } catch (e) {}
            log("iframe", path, outcome, text);
            resolve();
        };
        el.onload = () => setTimeout(() => finish("loaded"), 1500);
        el.src = M + path;
        document.body.appendChild(el);
    });
}

function socket(path) {
    return new Promise((resolve) => {
        let ws;
        const seen = [];
        try { ws = new WebSocket(M.replace("http", "ws") + path, ["bokeh", "x"]); }
        catch (e) { log("websocket", path, `threw ${e.name}`, ""); return resolve(); }
        const timer = setTimeout(() => {
            log("websocket", path, "still open", seen.join("\\n"));
            ws.close();
            resolve();
        }, 5000);
        ws.onopen = () => seen.push("OPEN");
        ws.onmessage = (e) => seen.push(String(e.data));
        ws.onclose = (e) => {
            clearTimeout(timer);
            log("websocket", path, `closed code=${e.code} opened=${seen.includes("OPEN")}`, seen.join("\\n"));
            resolve();
        };
    });
}

async function run() {
    for (const [path, body] of Object.entries(POSTS)) {
        for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                            "application/json"]) {
            // no-cors: the browser sends only CORS-safelisted types (application/json becomes text/plain)
            await tryFetch(`no-cors POST ${type}`, M + path, {method: "POST", mode: "no-cors", credentials: "include",
                                                             headers: {"Content-Type": type}, body: json(body)});
        }
        await tryFetch("no-cors POST blob", M + path, {method: "POST", mode: "no-cors",
                                                       body: new Blob([json(body)], {type: "text/plain"})});
        await tryFetch("cors POST application/json", M + path, {method: "POST", mode: "cors",
                                                              headers: {"Content-Type": "application/json"},
                                                              body: json(body)});
        log("beacon", path, `queued=${navigator.sendBeacon(M + path, new Blob([json(body)], {type: "text/plain"}))}`,
            "");
        const [name, value] = JSON.stringify(body).split(EQ);
        await submitForm("form text/plain", path, "text/plain", [[name, value]]);
        const fields = Object.entries(body).map(([k, v]) => [k, typeof v === "string" ? v.split(EQ).join("") :
                                                                 JSON.stringify(v)]);
        await submitForm("form urlencoded", path, "application/x-www-form-urlencoded", fields);
        await submitForm("form multipart", path, "multipart/form-data", fields);
    }
    for (const path of GETS) {
        await tryFetch("cors GET", M + path, {mode: "cors"});
        await tryFetch("cors GET with credentials", M + path, {mode: "cors", credentials: "include"});
        await tryFetch("no-cors GET", M + path, {mode: "no-cors"});
        await load("img", path);
        await load("script", path);
    }
    await frame("/");
    await frame("/api/prompts?crossProject=true");
    await socket("/ws");
    const rpc = (id, method, params) => JSON.stringify({jsonrpc: "2.0", id, method, params});
    const init = rpc(1, "initialize", {protocolVersion: "2025-03-26", capabilities: {},
                                       clientInfo: {name: "cats", version: "1"}});
    const call = rpc(2, "tools/call", {name: "prompt", arguments: {action: "record", body: __PLANTED__,
                                                                   projectId: "web"}});
    const accept = "application/json, text/event-stream";
    for (const body of [init, call]) {
        await tryFetch("MCP no-cors POST text/plain", MCP, {method: "POST", mode: "no-cors",
                                                            headers: {"Content-Type": "text/plain", Accept: accept},
                                                            body});
        await tryFetch("MCP cors POST application/json", MCP, {method: "POST", mode: "cors",
                                                               headers: {"Content-Type": "application/json",
                                                                         Accept: accept}, body});
    }
    await tryFetch("MCP cors GET", MCP, {mode: "cors", headers: {Accept: "text/event-stream"}});
    await new Promise((r) => setTimeout(r, 1500));  // let the beacons go out
    window.done = true;
}
run();
</script></body></html>
"""


class _AttackSite(BaseHTTPRequestHandler):
    page = b""

    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args):
        pass


@dataclass
class Visit:
    """What one attacker page got: its own results, and the real statuses the browser saw."""

    results: list[dict[str, str]]
    statuses: list[tuple[str, str, int]]
    failures: list[tuple[str, str, str]]


@dataclass
class BrowserWave:
    visits: dict[str, Visit]
    after: dict[str, Any]
    rebinding: dict[str, Any]
    dashboard: dict[str, Any]


def _attack_page(served: Memo) -> bytes:
    gets = [path for path, _ in GETS.values()]
    page = (ATTACK_PAGE.replace("__MEMO__", json.dumps(f"http://{served.own}"))
            .replace("__MCP__", json.dumps(f"http://127.0.0.1:{served.mcp_port}/mcp"))
            .replace("__POSTS__", json.dumps(served.posts)).replace("__GETS__", json.dumps(gets))
            .replace("__EQ__", json.dumps(EQ)).replace("__PLANTED__", json.dumps(PLANTED_TURN)))
    return page.encode("utf-8")


def _visit(context, url: str, served: Memo) -> Visit:
    """Open the attacker page and wait for its attacks. The statuses are what came over the
    wire (DevTools' network log: also for answers the page was refused, e.g. by CORS), and
    for framed documents Playwright's own responses."""
    ours = (f"http://{served.own}", f"ws://{served.own}", f"http://127.0.0.1:{served.mcp_port}")
    sent: dict[str, tuple[str, str]] = {}
    wire: dict[str, int] = {}
    framed: list[tuple[str, str, int]] = []
    failures: list[tuple[str, str, str]] = []
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.on("Network.requestWillBeSent", lambda e: sent.__setitem__(e["requestId"], (e["request"]["method"],
                                                                                    e["request"]["url"])))
    cdp.on("Network.responseReceivedExtraInfo", lambda e: wire.__setitem__(e["requestId"], e["statusCode"]))
    cdp.on("Network.responseReceived", lambda e: wire.setdefault(e["requestId"], e["response"]["status"]))
    cdp.on("Network.webSocketCreated", lambda e: sent.__setitem__(e["requestId"], ("WEBSOCKET", e["url"])))
    cdp.on("Network.webSocketHandshakeResponseReceived",
           lambda e: wire.__setitem__(e["requestId"], e["response"]["status"]))
    page.on("response", lambda r: framed.append((r.request.method, r.url, r.status))
            if r.url.startswith(ours) and r.request.resource_type == "document" else None)
    page.on("requestfailed", lambda r: failures.append((r.method, r.url, r.failure or "")) if r.url.startswith(ours)
            else None)
    page.goto(url)
    page.wait_for_function("window.done === true", timeout=240_000, polling=500)
    results = page.evaluate("window.results")
    page.close()
    statuses = [(method, target, wire.get(request_id, 0)) for request_id, (method, target) in sent.items()
                if target.startswith(ours)]
    return Visit(results, statuses + framed, failures)


@pytest.fixture(scope="module")
def browser(served, raw):
    """The attacker pages, DNS rebinding, then the dashboard itself, in Debian's Chromium."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed")
    _AttackSite.page = _attack_page(served)
    site = ThreadingHTTPServer(("127.0.0.1", 0), _AttackSite)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    other = site.server_address[1]
    rules = "MAP rebind.test 127.0.0.1, MAP attacker.test 127.0.0.1"
    try:
        with playwright_api.sync_playwright() as p:
            chromium = p.chromium.launch(executable_path=CHROMIUM,
                                         args=["--no-sandbox", f"--host-resolver-rules={rules}"])
            try:
                context = chromium.new_context()
                visits = {origin: _visit(context, f"http://{origin}:{other}/cats.html", served)
                          for origin in ("127.0.0.1", "attacker.test")}
                context.close()
                after = vault_state(served.vault)
                rebinding = _rebind(chromium, served)
                dashboard = _dashboard(chromium, served)
            finally:
                chromium.close()
    finally:
        site.shutdown()
        site.server_close()
    ARTIFACTS.mkdir(exist_ok=True)  # what each attack got, for the record
    (ARTIFACTS / "browser-boundary.json").write_text(json.dumps({
        origin: {"results": v.results, "statuses": v.statuses, "failures": v.failures} for origin, v in visits.items()
    } | {"rebinding": {k: v for k, v in rebinding.items() if k != "after"}}, indent=1), encoding="utf-8")
    return BrowserWave(visits, after, rebinding, dashboard)


def _rebind(chromium, served: Memo) -> dict[str, Any]:
    """The page of a name that now resolves to loopback: its navigations and its own
    same-origin reads of the API."""
    seen: dict[str, Any] = {}
    context = chromium.new_context()
    page = context.new_page()
    base = f"http://rebind.test:{served.port}"
    for path in ("/api/prompts?crossProject=true", "/", "/api/digest"):
        response = page.goto(base + path)
        seen[path] = (response.status, page.content())
    seen["same-origin reads"] = page.evaluate("""async (paths) => {
        const out = [];
        for (const path of paths) {
            try {
                const r = await fetch(path);
                out.push([path, r.status, await r.text()]);
            } catch (e) { out.push([path, 0, String(e)]); }
        }
        const post = await fetch("/api/actions/record", {
            method: "POST", headers: {"Content-Type": "application/json"},
            body: JSON.stringify({body: "rebound turn", projectId: "web"})});
        out.push(["POST /api/actions/record", post.status, await post.text()]);
        return out;
    }""", [path for path, _ in GETS.values()])
    context.close()
    seen["after"] = vault_state(served.vault)
    return seen


def _dashboard(chromium, served: Memo) -> dict[str, Any]:
    """The dashboard as the person opens it: what it shows, its console, its websocket."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    console: list[str] = []
    sockets: list[dict[str, Any]] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: console.append(f"pageerror: {exc}"))

    def on_socket(ws):
        entry = {"url": ws.url, "received": 0, "errors": []}
        ws.on("framereceived", lambda _: entry.__setitem__("received", entry["received"] + 1))
        ws.on("socketerror", lambda error: entry["errors"].append(str(error)))
        sockets.append(entry)

    page.on("websocket", on_socket)
    response = page.goto(f"http://{served.own}/")
    page.wait_for_selector(".memo-prompts-table .tabulator-row", timeout=60_000)
    shown = {}  # what is on screen (has_text also reads the shadow roots Panel renders into)
    for text, locator in {SECRET_TURN: page.locator(".memo-prompts-table .tabulator-row", has_text=SECRET_TURN),
                          SUMMARY_SHOWN: page.locator(".memo-digest-item", has_text=SUMMARY_SHOWN)}.items():
        try:
            locator.first.wait_for(state="visible", timeout=20_000)
            shown[text] = True
        except playwright_api.TimeoutError:
            shown[text] = False
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "browser-boundary-dashboard.png"), full_page=True)
    seen = {"status": response.status, "shown": shown, "console": console, "sockets": sockets}
    context.close()
    return seen


@pytest.mark.parametrize("origin", ["127.0.0.1", "attacker.test"])
def test_an_attacker_page_reads_nothing_of_the_vault(browser, origin):
    visit = browser.visits[origin]
    assert visit.results, "the attacker page ran no attack"
    assert [r for r in visit.results if leaked(json.dumps(r))] == []
    assert [r for r in visit.results if r["kind"].startswith(("cors", "MCP cors"))
            and not r["outcome"].startswith("rejected")] == []
    assert [r for r in visit.results if r["kind"].startswith(("no-cors", "MCP no-cors"))
            and r["outcome"] != "answered type=opaque status=0"] == []
    assert [r for r in visit.results if r["kind"].startswith(("form", "iframe")) and " and read" in r["outcome"]] == []
    assert [r for r in visit.results if r["kind"] == "img" and r["outcome"] != "error"] == []
    assert [r for r in visit.results if r["kind"] == "script" and r["outcome"] != "error"] == []
    assert [r for r in visit.results if r["kind"] == "websocket" and "opened=false" not in r["outcome"]] == []


@pytest.mark.parametrize("origin", ["127.0.0.1", "attacker.test"])
def test_every_request_of_an_attacker_page_is_refused_by_the_boundary(browser, served, origin):
    visit = browser.visits[origin]
    memo = f"http://{served.own}"
    ours = [(m, u, s) for m, u, s in visit.statuses if u.startswith((memo, f"ws://{served.own}"))]
    answered = [(m, u, s) for m, u, s in ours if s]
    assert [(m, u, s) for m, u, s in answered if s != 403] == []
    tried = {(m, u.removeprefix(memo)) for m, u, _ in answered}
    assert {("GET", path) for path, _ in GETS.values()} | {("POST", path) for path in POSTS.values()} <= tried
    assert {u.removeprefix(memo) for m, u, _ in answered if m == "OPTIONS"} == set(POSTS.values())  # preflights
    # never sent: the JSON POSTs whose preflight was refused; the websocket's handshake is
    # refused with 403 (A), here the page only sees it closed unopened
    assert sorted((m, u) for m, u, s in ours if not s) == sorted(
        [("POST", memo + path) for path in POSTS.values()] + [("WEBSOCKET", f"ws://{served.own}/ws")])
    mcp = [(m, u, s) for m, u, s in visit.statuses if u.startswith(f"http://127.0.0.1:{served.mcp_port}")]
    assert mcp and [(m, u, s) for m, u, s in mcp if 0 < s < 400] == []


def test_attacker_pages_left_the_vault_as_it_was(served, browser):
    assert browser.after == served.before
    assert browser.after["audit"] is None


@pytest.mark.parametrize("path", ["/api/prompts?crossProject=true", "/", "/api/digest"])
def test_a_rebound_name_gets_421_and_no_vault_data(browser, path):
    status, content = browser.rebinding[path]
    assert status == 421
    assert leaked(content) == []


def test_a_rebound_page_cannot_read_or_write_through_its_own_origin(served, browser):
    reads = browser.rebinding["same-origin reads"]
    assert [(path, status) for path, status, _ in reads] == [(path, 421) for path, _ in GETS.values()] + [
        ("POST /api/actions/record", 421)]
    assert [path for path, _, text in reads if leaked(text)] == []
    assert browser.rebinding["after"] == served.before


def test_the_dashboard_itself_still_shows_the_vault(browser):
    seen = browser.dashboard
    assert seen["status"] == 200
    assert seen["shown"] == {SECRET_TURN: True, SUMMARY_SHOWN: True}
    [socket] = [s for s in seen["sockets"] if "/ws" in s["url"]]
    assert socket["received"] > 0 and socket["errors"] == []
    assert [line for line in seen["console"] if re.search(r"websocket|403|421|refused|forbidden", line, re.I)] == []


# ---------------------------------------------------------------- the same writes, sent right


@pytest.fixture(scope="module")
def sent_right(request, served, raw):
    """The attack bodies as the product's own clients send them (after every attack)."""
    if Path(CHROMIUM).exists():
        request.getfixturevalue("browser")
    headers = {"Host": served.own, "Origin": f"http://{served.own}", "Content-Type": "application/json",
               "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}
    answers = {}
    for route in ("digest apply", "session_end", "record", "session_start", "sync", "derive-rules", "session edit"):
        status, text = send(served.port, "POST", POSTS[route], headers, plain(served.posts[POSTS[route]]))
        answers[route] = (status, json.loads(text))
    return answers, vault_state(served.vault)


def test_the_attack_writes_sent_as_the_product_sends_them_change_the_vault(served, sent_right):
    answers, after = sent_right
    assert {route: status for route, (status, _) in answers.items()} == dict.fromkeys(answers, 200), answers
    assert answers["digest apply"][1]["applied"] is True
    assert answers["sync"][1]["results"][0]["outcome"] == "applied"
    assert answers["derive-rules"][1]["savedTraps"]
    sessions = {s["sessionId"]: s for s in after["sessions"]["items"]}
    assert sessions[STALLED]["endTime"] and sessions[OPEN]["endTime"] and PLANTED_SESSION in sessions
    assert answers["session edit"][1]["changed"] == ["client"] and sessions["s1"]["client"] == "Evil Corp"
    bodies = [p["body"] for p in after["prompts"]["items"]]
    assert PLANTED_TURN in bodies and REPLACED_BODY in bodies and SECRET_TURN not in bodies
    assert after["audit"] is not None
    assert after["files"] != served.before["files"]


def test_on_an_ipv6_bind_the_dashboard_at_a_bracketed_address_names_where_to_open_it():
    """Found by an attacker: ``memo serve --host ::1`` printed ``http://::1:PORT/`` (no URL) and its
    dashboard at ``http://[::1]:PORT/`` answered 500 with a traceback (Panel cannot read a bracketed
    host); the API there works."""
    from memo_analytics.interfaces.http import BrowserBoundary

    boundary = BrowserBoundary("::1", 8123)
    assert boundary.refusal("GET", "/", {"Host": "[::1]:8123"}) == (
        421, "Misdirected request: open the dashboard at http://localhost:8123/")
    assert boundary.refusal("GET", "/api/health", {"Host": "[::1]:8123"}) is None
    assert boundary.refusal("GET", "/", {"Host": "localhost:8123"}) is None
    assert BrowserBoundary("127.0.0.1", 8123).refusal("GET", "/api/health", {"Host": "[::1]:8123"})[0] == 421
