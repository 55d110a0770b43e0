"""``memo doctor``: does this machine have what memo needs? One line per check, read-only.

Required (exit 1 when one is missing): Python ≥ 3.11; Pango, which WeasyPrint needs for
every PDF (checked by rendering a one-line PDF); the reports' Latin font (DejaVu Sans); a CJK
font, so Chinese, Japanese and Korean text prints; a valid config file (or none); a usable
vault. Optional (reported, never failing): HarfBuzz-subset (fast font embedding), an emoji
font, ``pdftoppm`` (looking at PDF pages as images), and Chromium at ``/usr/bin/chromium``
with Playwright, which only the browser tests need.

Each missing piece names what to install: the Debian package (the list ``.ci/run``
installs) or the ``pip`` command. ``memo --json doctor`` prints the checks as JSON.

Nothing is created or changed: the vault's index is opened read-only (``immutable`` when no
writer has it open, so SQLite adds no ``-wal``/``-shm`` files), a vault that is not there yet
is only looked at. WeasyPrint and fontconfig load inside the command, never at import.

Where the checks look is a :class:`Probe` (the ``PATH``, the Chromium path, the font query,
the PDF renderer, the Python version), so tests point them at missing things without
touching the machine.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from pydantic.alias_generators import to_camel

from ...domain.errors import MemoError
from ...domain.shell import shell_word
from ...services.maintenance import MIN_FREE_BYTES  # below it writes fail (as /api/health says)
from .common import _emit, _safe, _settings, app, on_path_command, out, state

#: Debian's Chromium, which the browser tests drive through Playwright
CHROMIUM = Path("/usr/bin/chromium")
#: The Latin font the report templates name first (``report_templates/report.css``)
LATIN_FAMILY = "DejaVu Sans"
PANGO_DEBS = ("libpango-1.0-0", "libpangoft2-1.0-0")


@dataclass
class Check:
    """The outcome of one check.

    Attributes
    ----------
    name : str
        Short id (``pango``, ``cjkFont``, …); the JSON key ``name``.
    title : str
        What is checked and what for, one phrase.
    required : bool
        False for what only some work needs (browser tests, looking at PDF pages).
    ok : bool
        Whether it is there and works.
    detail : str
        What was found (version, path, families, time), or what is wrong.
    debian_packages : list[str]
        The Debian packages that provide it (installed by ``.ci/run``).
    install : str | None
        What to run when it is missing (``apt-get install …``, ``pip install …``, a
        ``memo`` command); None when it is there.
    elapsed_ms : float
        Wall time of the check, in milliseconds.
    """

    name: str
    title: str
    required: bool
    ok: bool
    detail: str
    debian_packages: list[str] = field(default_factory=list)
    install: Optional[str] = None
    elapsed_ms: float = 0.0

    @property
    def status(self) -> str:
        """``ok``, ``missing`` (required) or ``optional`` (missing, not required)."""
        return "ok" if self.ok else "missing" if self.required else "optional"


def fontconfig_families(pattern: str) -> list[str]:
    """The font families fontconfig lists for ``pattern`` (as ``fc-list PATTERN family``,
    e.g. ``:lang=zh``), asked through ``libfontconfig`` itself: Pango uses the same library,
    and the ``fc-list`` program (Debian ``fontconfig``) need not be installed.

    Raises
    ------
    OSError
        ``libfontconfig`` cannot be loaded (Debian ``libfontconfig1``, which Pango pulls in).
    """
    import ctypes
    import ctypes.util

    class FontSet(ctypes.Structure):
        _fields_ = [("nfont", ctypes.c_int), ("sfont", ctypes.c_int), ("fonts", ctypes.POINTER(ctypes.c_void_p))]

    try:
        lib = ctypes.CDLL("libfontconfig.so.1")
    except OSError:
        lib = ctypes.CDLL(ctypes.util.find_library("fontconfig") or "libfontconfig.so.1")
    lib.FcNameParse.restype = ctypes.c_void_p
    lib.FcNameParse.argtypes = [ctypes.c_char_p]
    lib.FcObjectSetCreate.restype = ctypes.c_void_p
    lib.FcObjectSetAdd.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.FcFontList.restype = ctypes.POINTER(FontSet)
    lib.FcFontList.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.FcPatternGetString.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                       ctypes.POINTER(ctypes.c_char_p)]
    for name in ("FcFontSetDestroy", "FcObjectSetDestroy", "FcPatternDestroy"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    query = lib.FcNameParse(pattern.encode())
    if not query:
        raise ValueError(f"not a fontconfig pattern: {pattern!r}")
    objects = lib.FcObjectSetCreate()
    lib.FcObjectSetAdd(objects, b"family")
    found = lib.FcFontList(None, query, objects)
    families: set[str] = set()
    try:
        for i in range(found.contents.nfont if found else 0):
            value = ctypes.c_char_p()
            if lib.FcPatternGetString(found.contents.fonts[i], b"family", 0, ctypes.byref(value)) == 0:
                families.add(value.value.decode("utf-8", "replace"))
    finally:
        if found:
            lib.FcFontSetDestroy(found)
        lib.FcObjectSetDestroy(objects)
        lib.FcPatternDestroy(query)
    return sorted(families)


def render_one_line_pdf() -> tuple[bytes, dict[str, Any]]:
    """A one-line PDF from WeasyPrint, and what it ran on: ``weasyprint`` and ``pango``
    versions, ``harfbuzzSubset`` (bool), ``importMs`` (the import, in milliseconds).

    Raises
    ------
    ImportError
        WeasyPrint is not installed.
    OSError
        A system library (Pango, HarfBuzz, fontconfig) cannot be loaded.
    """
    import contextlib
    import io
    import warnings

    start = time.perf_counter()
    # WeasyPrint prints its installation hints to stdout when a library is missing (they would
    # break --json) and warns when HarfBuzz-subset is: both are said here, one line each.
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import weasyprint
        from weasyprint.text import ffi as text_ffi
    import_ms = (time.perf_counter() - start) * 1000
    pdf = weasyprint.HTML(string="<p>memo doctor: Pango lays out this line.</p>").write_pdf()
    number = text_ffi.pango.pango_version()  # major * 10000 + minor * 100 + micro
    pango = f"{number // 10000}.{number // 100 % 100}.{number % 100}"
    return pdf, {"weasyprint": weasyprint.__version__, "pango": pango,
                 "harfbuzzSubset": text_ffi.harfbuzz_subset is not None, "importMs": import_ms}


@dataclass
class Probe:
    """Where the checks look; the defaults are this machine.

    Attributes
    ----------
    path : str
        The ``PATH`` searched for ``pdftoppm``.
    chromium : Path
        The browser the browser tests drive.
    fonts : Callable[[str], list[str]]
        Font families for a fontconfig pattern (:func:`fontconfig_families`).
    render_pdf : Callable[[], tuple[bytes, dict]]
        Renders a one-line PDF (:func:`render_one_line_pdf`).
    python : tuple[int, int, int]
        The Python version.
    has_module : Callable[[str], bool]
        Whether a module could be imported (found, not imported).
    """

    path: str = field(default_factory=lambda: os.environ.get("PATH", os.defpath))
    chromium: Path = CHROMIUM
    fonts: Callable[[str], list[str]] = fontconfig_families
    render_pdf: Callable[[], tuple[bytes, dict[str, Any]]] = render_one_line_pdf
    python: tuple[int, int, int] = tuple(sys.version_info[:3])  # type: ignore[assignment]
    has_module: Callable[[str], bool] = field(default=lambda name: _findable(name))


def _findable(module: str) -> bool:
    """Whether ``module`` can be imported (it is found; nothing is imported)."""
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _apt(*packages: str) -> str:
    return "apt-get install " + " ".join(packages)


def _timed(run: Callable[[], Check]) -> Check:
    start = time.perf_counter()
    check = run()
    check.elapsed_ms = round((time.perf_counter() - start) * 1000, 1)
    return check


def _python(probe: Probe) -> Check:
    version = ".".join(map(str, probe.python))
    ok = probe.python >= (3, 11)
    return Check("python", "Python ≥ 3.11", True, ok,
                 f"Python {version} ({sys.executable})" if ok else f"Python {version} is older than 3.11",
                 ["python3", "python3-venv"], None if ok else "Python 3.11 or newer (Debian 12: apt-get install python3 "
                 "python3-venv), then a fresh virtual environment")


def _pango(probe: Probe, rendered: dict[str, Any]) -> Check:
    """Render a one-line PDF; what it ran on goes into ``rendered["info"]``."""
    title = "Pango (every PDF; WeasyPrint renders one line)"
    start = time.perf_counter()
    try:
        pdf, info = probe.render_pdf()
    except ImportError as exc:
        return Check("pango", title, True, False, f"WeasyPrint does not import: {exc}", list(PANGO_DEBS),
                     "pip install -e . (WeasyPrint is one of memo's dependencies)")
    except Exception as exc:  # OSError for a missing library; whatever else Pango or WeasyPrint raise
        first = str(exc).splitlines()[0] if str(exc) else ""
        return Check("pango", title, True, False, f"WeasyPrint cannot render: {type(exc).__name__}: {first}",
                     list(PANGO_DEBS), _apt(*PANGO_DEBS))
    rendered["info"] = info
    if not pdf.startswith(b"%PDF"):
        return Check("pango", title, True, False, "WeasyPrint returned something that is not a PDF",
                     list(PANGO_DEBS), _apt(*PANGO_DEBS))
    import_ms = info.get("importMs", 0.0)
    render_ms = (time.perf_counter() - start) * 1000 - import_ms
    return Check("pango", title, True, True, f"WeasyPrint {info.get('weasyprint')} on Pango {info.get('pango')}: "
                 f"{len(pdf) / 1000:.0f} kB in {render_ms:.0f} ms (import {import_ms:.0f} ms)", list(PANGO_DEBS))


def _harfbuzz_subset(info: dict[str, Any] | None) -> Check:
    title = "HarfBuzz-subset (fonts embedded in PDFs fast: a CJK font in ms, not s)"
    if info is None:
        return Check("harfbuzzSubset", title, False, False, "not checked: WeasyPrint did not load",
                     ["libharfbuzz-subset0"], _apt("libharfbuzz-subset0"))
    ok = bool(info.get("harfbuzzSubset"))
    return Check("harfbuzzSubset", title, False, ok, "loaded by WeasyPrint" if ok else "not found: WeasyPrint "
                 "subsets fonts with fontTools instead (slow)", ["libharfbuzz-subset0"],
                 None if ok else _apt("libharfbuzz-subset0"))


def _font(probe: Probe, name: str, title: str, required: bool, patterns: dict[str, str], deb: str) -> Check:
    """A font check: every pattern of ``patterns`` (what → fontconfig pattern) must list a family."""
    try:
        found = {what: probe.fonts(pattern) for what, pattern in patterns.items()}
    except Exception as exc:
        return Check(name, title, required, False, f"fontconfig cannot be asked ({type(exc).__name__}: {exc})",
                     [deb, "libfontconfig1"], _apt(*PANGO_DEBS, deb))
    lacking = [what for what, families in found.items() if not families]
    families = sorted({f for fs in found.values() for f in fs})
    if lacking:
        return Check(name, title, required, False, f"no font for {', '.join(lacking)}", [deb], _apt(deb))
    shown = ", ".join(families[:3]) + (f" … ({len(families)} families)" if len(families) > 3 else "")
    return Check(name, title, required, True, shown, [deb])


def _program(probe: Probe, program: str, title: str, deb: str) -> Check:
    where = shutil.which(program, path=probe.path)
    return Check(program, title, False, where is not None, where or f"{program} is not on the PATH", [deb],
                 None if where else _apt(deb))


def _chromium(probe: Probe) -> Check:
    ok = probe.chromium.is_file() and os.access(probe.chromium, os.X_OK)
    return Check("chromium", "Chromium (browser tests only)", False, ok,
                 str(probe.chromium) if ok else f"{probe.chromium} is not there", ["chromium"],
                 None if ok else _apt("chromium"))


def _playwright(probe: Probe) -> Check:
    ok = probe.has_module("playwright")
    return Check("playwright", "Playwright (browser tests only)", False, ok,
                 "importable" if ok else "not installed", [], None if ok else "pip install -e '.[test]'")


def _config(vault_root: str | None, found: dict[str, Any]) -> Check:
    """The config file: valid, or the one line every other command would refuse with. The
    settings go into ``found["settings"]`` (with refused values left out, as ``memo config
    show`` reads them; None when even that fails) for the vault check."""
    from ...config import config_path, settings_despite_problems
    from ...vault.redact import redact_secrets

    path = config_path()
    init = {"vault_root": vault_root} if vault_root is not None else {}
    try:
        found["settings"] = _settings(**init)
    except MemoError as exc:
        try:
            found["settings"] = settings_despite_problems(**init)[0]
            repair = "memo config set KEY VALUE or memo config unset KEY (memo config show lists every refused value)"
        except MemoError:  # not TOML at all, or even the default refused
            found["settings"] = None
            repair = f"repair {path} in an editor" if path.is_file() else "memo config show explains it"
        message = redact_secrets(str(exc))[0]
        named = re.search(r"; repair: (.+?)\)", message)  # the message's own repair, for this key
        return Check("config", "config file", True, False, message, [], named.group(1) if named else repair)
    where = f"{path}: valid" if path.is_file() else f"{path} is not there: the defaults apply"
    return Check("config", "config file", True, True, where)




def _vault(settings: Any, vault_root: str | None) -> Check:
    """Where the vault is, whether it is (or can be made) a writable folder and whether its
    index opens — read-only: nothing is created or changed."""
    import sqlite3

    from ...config import default_vault_root
    from ...index.store import probe as probe_index
    from ...vault.layout import VaultLayout

    title = "vault"
    if settings is not None and settings.mode == "remote":
        return _daemon(settings)
    root = (settings.vault_root if settings is not None
            else Path(vault_root or default_vault_root()).expanduser().absolute())
    layout = VaultLayout(root)
    if root.exists() and not root.is_dir():
        return Check("vault", title, True, False, f"{root} is not a folder", [], "--vault-root DIR or MEMO_VAULT=DIR")
    if not root.exists():
        parent = next((p for p in root.parents if p.exists()), None)
        if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
            return Check("vault", title, True, False, f"{root} is not there and cannot be created "
                         f"({parent} is not a writable folder)", [], "--vault-root DIR or MEMO_VAULT=DIR")
        return Check("vault", title, True, True, f"{root} is not there yet: the first record or import creates it")
    for folder in (root, layout.meta_dir):
        if folder.is_dir() and os.statvfs(folder).f_flag & os.ST_RDONLY:  # chmod cannot help (found by an attacker)
            return Check("vault", title, True, False, f"{folder} is on a file system mounted read-only: writes fail "
                                                      "(reads answer from the index as it is)", [],
                         "mount it read-write (mount -o remount,rw …), or --vault-root a writable folder")
        if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            return Check("vault", title, True, False, f"{folder} is not writable", [], f"chmod u+w {folder}")
    free = shutil.disk_usage(root).free
    if free < MIN_FREE_BYTES:  # found by an operator: "writable", on a full disk every write failed
        return Check("vault", title, True, False, f"{root}: its disk has {free // 1024} KB free: writes fail (reads "
                                                  "answer from the index as it is)", [], f"free some space on {root}'s disk")
    index = layout.index_path
    if not index.exists():
        return Check("vault", title, True, True, f"{root}: writable; no index yet (built on first use)")
    try:
        problem, counts = probe_index(index)
    except sqlite3.Error as exc:
        return Check("vault", title, True, False, f"{root}: the index {index} does not open ({exc})", [],
                     "memo reindex")
    if problem:
        return Check("vault", title, True, True, f"{root}: writable; index {problem}: rebuilt from the files on next use")
    from ...index.store import SUPERSEDED_COUNT

    superseded = counts.pop(SUPERSEDED_COUNT, 0)
    shown = ", ".join(f"{n} {kind}{'' if n == 1 else 's'}" for kind, n in sorted(counts.items())) or "empty"
    if superseded:  # lists and reports count fewer: said why (found by a newcomer)
        shown += (f"; {superseded} of them superseded — a hook's capture by its transcript's import, and the like — "
                  "and left out of lists and reports")
    return Check("vault", title, True, True, f"{root}: writable; index opens ({shown}){_shared(root)}")


def _shared(root: Path) -> str:
    """A note when other users of this machine can list or read the vault (a vault made
    before memo made it ``0700``, or copied): the turns hold what people asked their agents."""
    try:
        mode = root.stat().st_mode
    except OSError:
        return ""
    if not mode & 0o077:
        return ""
    return (f"; other users of this machine can read it (mode {mode & 0o777:o}): "
            f"chmod 700 {shell_word(str(root))} keeps it yours")


def _daemon(settings: Any, pushes: bool = False) -> Check:
    """Remote mode: whether the daemon answers and takes this machine's token (one listing of
    one turn: every hook event and tool call goes there). ``pushes``: hybrid mode, where the
    vault here works alone and only the push needs the daemon — an optional check of its own
    (a wrong token had left "4 records waiting … HTTP 401" unsaid)."""
    from ...services import remote, sync
    from ...vault.redact import mask_url, redact_secrets

    name, title = ("daemon", "the team daemon (hybrid push)") if pushes else ("vault", "vault")
    section = "hybrid.remoteUrl" if pushes else "remote.url"
    token_key = "hybrid.token" if pushes else "remote.token"
    where = (f"mode hybrid: the daemon {mask_url(settings.hybrid.remote_url or '')}" if pushes else
             f"mode remote: this machine keeps no vault; the daemon {mask_url(settings.remote.url or '')}")
    try:
        if pushes:  # what the push sends, where it sends it: an empty push changes nothing
            sync.check_daemon(settings)
        else:
            remote.post(settings, "/api/actions/list", {"limit": 1})
    except MemoError as exc:
        message = redact_secrets(str(exc))[0]
        repair = (f"memo config set {token_key} TOKEN (the daemon's MEMO_TOKEN)" if "refused this machine" in message
                  or "token" in message.lower() else f"start the daemon (memo serve on its machine) or memo config "
                  f"set {section} URL")
        return Check(name, title, not pushes, False, f"{where} does not take calls: {message}"
                     + ("; records wait in the outbox until it does (memo sync status)" if pushes else ""), [], repair)
    return Check(name, title, not pushes, True, f"{where} answers and takes this machine's token")


def run_checks(probe: Probe | None = None, vault_root: str | None = None) -> list[Check]:
    """Every check, in the order printed. Reads only; each check times itself.

    Parameters
    ----------
    probe : Probe, optional
        Where to look (default: this machine, this process's ``PATH``).
    vault_root : str, optional
        ``--vault-root`` or ``MEMO_VAULT`` as given; else the config file's or the default.
    """
    probe = probe or Probe()
    checks = [_timed(lambda: _python(probe))]
    rendered: dict[str, Any] = {}
    checks.append(_timed(lambda: _pango(probe, rendered)))
    checks.append(_timed(lambda: _harfbuzz_subset(rendered.get("info"))))
    checks.append(_timed(lambda: _font(probe, "latinFont", f"Latin font {LATIN_FAMILY} (the reports' font)", True,
                                       {LATIN_FAMILY: f"{LATIN_FAMILY}:lang=en"}, "fonts-dejavu-core")))
    checks.append(_timed(lambda: _font(probe, "cjkFont", "CJK font (Chinese, Japanese, Korean text in PDFs)", True,
                                       {"Chinese": ":lang=zh", "Japanese": ":lang=ja", "Korean": ":lang=ko"},
                                       "fonts-noto-cjk")))
    checks.append(_timed(lambda: _font(probe, "emojiFont", "emoji font (colour emoji in PDFs)", False,
                                       {"emoji": ":lang=und-zsye"}, "fonts-noto-color-emoji")))
    checks.append(_timed(lambda: _program(probe, "pdftoppm", "pdftoppm (PDF pages as images, to look at them)",
                                          "poppler-utils")))
    checks += [_timed(lambda: _chromium(probe)), _timed(lambda: _playwright(probe))]
    found: dict[str, Any] = {}
    checks.append(_timed(lambda: _config(vault_root, found)))
    checks.append(_timed(lambda: _vault(found.get("settings"), vault_root)))
    settings = found.get("settings")
    if settings is not None and settings.mode == "hybrid":  # the laptop works alone; its push needs the daemon
        checks.append(_timed(lambda: _daemon(settings, pushes=True)))
    checks.append(_timed(lambda: _hooks(found.get("settings"))))
    return checks


def _hooks(settings: Any) -> Check:
    """Optional: the agents' hook entries memo installed run a program that is there (a virtual
    environment made again elsewhere leaves every hook failing, and nothing captured)."""
    from ...services import agent_hooks
    from ...services.store import repository_root

    title = "agent hooks (automatic capture)"
    vault = settings.vault_root if settings is not None else Path.home() / ".memo" / "vault"
    try:
        items = agent_hooks.status(list(agent_hooks.AGENT_HOOKS), vault, repository_root(Path.cwd()))["items"]
    except (MemoError, OSError) as exc:
        return Check("hooks", title, False, False, f"cannot be read: {exc}")
    installed = [i for i in items if i["installed"]]
    broken = [(i, program) for i in installed for program in i["notFound"]]
    if broken:
        item, program = broken[0]
        again = (on_path_command() if "/" not in program and "\\" not in program else  # the PATH lacks memo
                 f"memo hooks install {item['agent']}{' --project' if item['level'] == 'project' else ''}")
        return Check("hooks", title, False, False, f"{item['agent']}'s hooks in {item['path']} run {program}, which "
                     "is not there: nothing is captured" + (f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""),
                     [], again)
    venv = [(i, program) for i in installed if i["level"] == "project"
            for program in i.get("onlyInAVirtualEnvironment", [])]
    if venv:
        item, program = venv[0]
        return Check("hooks", title, False, False, f"{item['agent']}'s hooks in {item['path']} run `{program}`, which "
                     "this PATH has only from a virtual environment: an agent started elsewhere finds none, and "
                     "nothing is captured", [], on_path_command())
    if not installed:
        return Check("hooks", title, False, True, "none installed (memo hooks install AGENT captures every turn)")
    return Check("hooks", title, False, True, "installed for " + ", ".join(sorted({i["agent"] for i in installed}))
                 + "; each runs a memo that is there")


def check_lines(checks: list[Check]) -> list[str]:
    """One line per check: status, name, whether it is required, what was found and, for what
    is missing, what to install."""
    width = max(len(c.name) for c in checks)
    lines = []
    for c in checks:
        status = {"ok": "ok", "missing": "MISSING", "optional": "missing"}[c.status]
        need = "required" if c.required else "optional"
        fix = f" → {c.install}" if c.install else ""
        lines.append(f"{status:<7}  {c.name:<{width}}  {need}  {c.title}: {c.detail}{fix}")
    return lines


def as_json(checks: list[Check], elapsed_ms: float) -> dict[str, Any]:
    """The checks as ``memo --json doctor`` prints them (camelCase keys)."""
    return {
        "ok": all(c.ok for c in checks if c.required),
        "missingRequired": [c.name for c in checks if c.status == "missing"],
        "missingOptional": [c.name for c in checks if c.status == "optional"],
        "elapsedMs": round(elapsed_ms, 1),
        "checks": [{to_camel(k): v for k, v in {**asdict(c), "status": c.status}.items()} for c in checks],
    }


@app.command("doctor")
def doctor() -> None:
    """Check this machine for what memo needs and say what to install.

    Required: Python ≥ 3.11, Pango and the Latin and CJK fonts for PDFs, a valid config
    file, a usable vault (looked at read-only). Optional: HarfBuzz-subset, an emoji font,
    pdftoppm, Chromium and Playwright (browser tests only). Exit 1 when something required
    is missing."""
    start = time.perf_counter()
    checks = run_checks(vault_root=state.vault_root)
    result = as_json(checks, (time.perf_counter() - start) * 1000)

    def human(r: dict[str, Any]) -> None:
        for line in check_lines(checks):
            out.print(_safe(line), soft_wrap=True)  # one line per check, however long
        optional = f"; optional missing: {', '.join(r['missingOptional'])}" if r["missingOptional"] else ""
        if r["ok"]:
            out.print(f"everything required is there{optional} ({r['elapsedMs'] / 1000:.1f} s)")

    _emit(result, human)
    if not result["ok"]:
        failed = result["missingRequired"]
        raise MemoError(f"{len(failed)} required check{'s' if len(failed) > 1 else ''} failed: {', '.join(failed)}"
                        + ("" if state.json else " (what to install or run is on each line above)"))
