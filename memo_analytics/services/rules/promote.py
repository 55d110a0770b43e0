"""Promotion of derived rules into a product repository (SPEC §5.3).

The one write memo makes inside a product repository. Only allow-listed instruction files
(``.cursor/rules/*.mdc|*.md``, ``.github/copilot-instructions.md``, ``CLAUDE.md``,
``GEMINI.md``) inside the product root are accepted. The rules go into a managed block
between two marker lines; promoting again replaces that block only, so the person's own
text before and after it is kept byte for byte. The write is atomic.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ...domain.errors import InvalidFieldError
from ...vault.io import atomic_write_bytes
from .formats import CURSOR_FRONT_MATTER

BLOCK_START = "<!-- memo:derived-rules:start — managed by memo; `memo report rules --promote` replaces this block -->"
BLOCK_END = "<!-- memo:derived-rules:end -->"
_START_PREFIX = "<!-- memo:derived-rules:start"

#: destination (relative to the product root) → the format it takes by default
#: AGENTS.md, the instructions file Codex, Cursor and others read (CLAUDE.md is often a link to it),
#: takes the rules as CLAUDE.md does.
ALLOWED_FILES = {"CLAUDE.md": "claude", "AGENTS.md": "claude", "GEMINI.md": "gemini",
                 ".github/copilot-instructions.md": "copilot"}
CURSOR_RULES_DIR = ".cursor/rules"


def allowed_destination(product_root: Path, destination: str) -> tuple[Path, str]:
    """The file a promotion writes and its default format.

    Raises
    ------
    InvalidFieldError
        ``Invalid promote: ...`` — outside the product root (``..``, an absolute path
        elsewhere, a symbolic link leading out), a control character in the name, or not an
        allow-listed file.
    """
    if not destination or not destination.strip() or "\x00" in destination:
        raise InvalidFieldError("promote", "give a destination: CLAUDE.md, AGENTS.md, GEMINI.md, "
                                           ".github/copilot-instructions.md or .cursor/rules/<name>.mdc")
    if any(ch < " " or ch == "\x7f" for ch in destination):
        raise InvalidFieldError("promote", f"{destination!r} holds a control character (a line break, a tab …); "
                                           "name the file plainly, e.g. .cursor/rules/derived.mdc")
    root = product_root.resolve()
    candidate = Path(destination).expanduser()
    target = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if not target.is_relative_to(root):
        raise InvalidFieldError("promote", f"{destination} is outside the product root {root}")
    relative = PurePosixPath(target.relative_to(root).as_posix())
    if str(relative) in ALLOWED_FILES:
        return target, ALLOWED_FILES[str(relative)]
    if str(relative.parent) == CURSOR_RULES_DIR and relative.suffix in (".mdc", ".md") and relative.stem:
        return target, "cursor"
    raise InvalidFieldError("promote", f"{relative} is not an agent instruction file; use CLAUDE.md, AGENTS.md, GEMINI.md, "
                                       ".github/copilot-instructions.md or .cursor/rules/<name>.mdc")


def _neutral(rules: str) -> str:
    """Rule text can never open or close a comment (and so never fake our markers)."""
    return rules.replace("<!--", "<!- -").replace("-->", "- ->")


def merged_text(existing: str | None, rules: str, cursor: bool) -> str:
    """``existing`` with its managed block replaced by ``rules`` (appended when absent). The
    person's text outside the block is kept byte for byte, line endings included; the block
    uses the file's line ending (CRLF when the file has any).

    Raises
    ------
    InvalidFieldError
        The file holds a start marker without its end, or several blocks: it was edited by
        hand, and guessing could destroy the person's text.
    """
    nl = "\r\n" if existing and "\r\n" in existing else "\n"
    body = nl.join(_neutral(rules).rstrip().split("\n"))
    block = f"{BLOCK_START}{nl}{body}{nl}{BLOCK_END}{nl}"
    if existing is None or not existing.strip():
        return (CURSOR_FRONT_MATTER + "\n" if cursor else "") + block
    starts = existing.count(_START_PREFIX)
    ends = existing.count(BLOCK_END)
    if starts == 0 and ends == 0:
        separator = "" if existing.endswith(nl * 2) else (nl if existing.endswith(("\n", "\r")) else nl * 2)
        return existing + separator + block
    if starts != 1 or ends != 1 or existing.index(_START_PREFIX) > existing.index(BLOCK_END):
        raise InvalidFieldError("promote", "the file's memo block markers were edited (missing, repeated or out of "
                                           "order); fix or remove them by hand, then promote again")
    before = existing[: existing.index(_START_PREFIX)]
    after = existing[existing.index(BLOCK_END) + len(BLOCK_END):]
    after = after[len(nl):] if after.startswith(nl) else (after[1:] if after.startswith("\n") else after)
    return before + block + after


@dataclass
class Promotion:
    """A promotion checked and merged, not yet written."""

    target: Path
    text: str
    mode: int | None


def check_product_root(product_root: Path, vault_root: Path | None) -> Path:
    """A product root a promotion may write into: a git work tree, not the vault nor inside it.

    Raises
    ------
    InvalidFieldError
        ``Invalid promote: ...``.
    """
    root = product_root.resolve()
    if not (root / ".git").exists():
        raise InvalidFieldError("promote", f"{root} is not a git repository (the product root)")
    if vault_root is not None:
        vault = vault_root.resolve()
        if root == vault or root.is_relative_to(vault):
            raise InvalidFieldError("promote", f"{root} is the vault; promote into a product repository")
    return root


def plan_promotion(product_root: Path, destination: str, rules: str, vault_root: Path | None = None) -> Promotion:
    """Everything a promotion checks, before anything is written: the product root, the
    allow-list, the file (regular, UTF-8, markers intact) and the merged text.

    Raises
    ------
    InvalidFieldError
        Refused root or destination, hand-edited markers, a file that is not UTF-8 text.
    """
    root = check_product_root(product_root, vault_root)
    target, fmt = allowed_destination(root, destination)
    if any(len(part.encode("utf-8")) > 255 for part in target.relative_to(root).parts):
        raise InvalidFieldError("promote", f"{destination}: a file or folder name is too long")
    existing, mode = None, None
    for folder in (target.parent, *target.parent.parents):
        if folder == root:
            break
        if folder.exists() and not folder.is_dir():
            raise InvalidFieldError("promote", f"{folder} is not a folder")
    if target.exists():
        if not target.is_file():
            raise InvalidFieldError("promote", f"{target} is not a regular file")
        if not target.stat().st_mode & 0o222 or not os.access(target, os.W_OK):  # read-only on purpose: kept
            raise InvalidFieldError("promote", f"{target} is read-only; make it writable to promote into it")
        try:
            existing = target.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidFieldError("promote", f"{target} is not UTF-8 text") from None
        mode = stat.S_IMODE(target.stat().st_mode)
    return Promotion(target, merged_text(existing, rules, cursor=fmt == "cursor"), mode)


def write_promotion(plan: Promotion) -> Path:
    """Write a checked promotion atomically (folders created as needed, the file's mode kept).

    Raises
    ------
    InvalidFieldError
        The file system refused the write; folders this call created are removed again.
    """
    created = [folder for folder in (plan.target.parent, *plan.target.parent.parents) if not folder.exists()]
    try:
        plan.target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(plan.target, plan.text.encode("utf-8"))
        if plan.mode is not None:
            os.chmod(plan.target, plan.mode)
    except OSError as exc:
        for folder in created:  # innermost first
            try:
                folder.rmdir()
            except OSError:
                pass
        raise InvalidFieldError("promote", f"cannot write {plan.target} ({exc.strerror or type(exc).__name__})") from None
    return plan.target


def promote(product_root: Path, destination: str, rules: str, vault_root: Path | None = None) -> Path:
    """Write ``rules`` into the managed block of an allow-listed file (created if missing,
    its folder too). Returns the file written.

    Raises
    ------
    InvalidFieldError
        Refused root or destination, hand-edited markers, a file that is not UTF-8 text, a
        write the file system refused.
    """
    return write_promotion(plan_promotion(product_root, destination, rules, vault_root))
