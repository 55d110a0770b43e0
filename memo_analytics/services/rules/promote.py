"""Promotion of derived rules into a product repository (SPEC §5.3).

The one write memo makes inside a product repository. Only allow-listed instruction files
(``.cursor/rules/*.mdc|*.md``, ``.github/copilot-instructions.md``, ``CLAUDE.md``,
``GEMINI.md``) inside the product root are accepted. The rules go into a managed block
between two marker lines; promoting again replaces that block only, so the person's own
text before and after it is kept byte for byte. The write is atomic.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ...domain.errors import InvalidFieldError
from ...vault.io import atomic_write_bytes
from .formats import CURSOR_FRONT_MATTER

BLOCK_START = "<!-- memo:derived-rules:start — managed by memo; `memo report rules --promote` replaces this block -->"
BLOCK_END = "<!-- memo:derived-rules:end -->"
_START_PREFIX = "<!-- memo:derived-rules:start"

#: destination (relative to the product root) → the format it takes by default
ALLOWED_FILES = {"CLAUDE.md": "claude", "GEMINI.md": "gemini", ".github/copilot-instructions.md": "copilot"}
CURSOR_RULES_DIR = ".cursor/rules"


def allowed_destination(product_root: Path, destination: str) -> tuple[Path, str]:
    """The file a promotion writes and its default format.

    Raises
    ------
    InvalidFieldError
        ``Invalid promote: ...`` — outside the product root (``..``, an absolute path
        elsewhere, a symbolic link leading out) or not an allow-listed file.
    """
    if not destination or not destination.strip() or "\x00" in destination:
        raise InvalidFieldError("promote", "give a destination: CLAUDE.md, GEMINI.md, "
                                           ".github/copilot-instructions.md or .cursor/rules/<name>.mdc")
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
    raise InvalidFieldError("promote", f"{relative} is not an agent instruction file; use CLAUDE.md, GEMINI.md, "
                                       ".github/copilot-instructions.md or .cursor/rules/<name>.mdc")


def merged_text(existing: str | None, rules: str, cursor: bool) -> str:
    """``existing`` with its managed block replaced by ``rules`` (appended when absent).

    Raises
    ------
    InvalidFieldError
        The file holds a start marker without its end, or several blocks: it was edited by
        hand, and guessing could destroy the person's text.
    """
    block = f"{BLOCK_START}\n{rules.rstrip()}\n{BLOCK_END}\n"
    if existing is None or not existing.strip():
        return (CURSOR_FRONT_MATTER + "\n" if cursor else "") + block
    starts = existing.count(_START_PREFIX)
    ends = existing.count(BLOCK_END)
    if starts == 0 and ends == 0:
        separator = "" if existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
        return existing + separator + block
    if starts != 1 or ends != 1 or existing.index(_START_PREFIX) > existing.index(BLOCK_END):
        raise InvalidFieldError("promote", "the file's memo block markers were edited (missing, repeated or out of "
                                           "order); fix or remove them by hand, then promote again")
    before = existing[: existing.index(_START_PREFIX)]
    after = existing[existing.index(BLOCK_END) + len(BLOCK_END):]
    after = after[1:] if after.startswith("\n") else after
    return before + block + after


def promote(product_root: Path, destination: str, rules: str) -> Path:
    """Write ``rules`` into the managed block of an allow-listed file (created if missing,
    its folder too). Returns the file written.

    Raises
    ------
    InvalidFieldError
        Refused destination, hand-edited markers, a file that is not UTF-8 text.
    """
    target, fmt = allowed_destination(product_root, destination)
    existing = None
    if target.exists():
        if not target.is_file():
            raise InvalidFieldError("promote", f"{target} is not a regular file")
        try:
            existing = target.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise InvalidFieldError("promote", f"{target} is not UTF-8 text") from None
    text = merged_text(existing, rules, cursor=fmt == "cursor")
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, text.encode("utf-8"))
    return target
