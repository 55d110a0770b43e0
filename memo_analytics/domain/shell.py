"""Commands printed for a person to paste into a POSIX shell (bash, zsh)."""

from __future__ import annotations

import shlex


def shell_word(value: str) -> str:
    """``value`` as one word of a shell command a person pastes, naming exactly ``value``.

    As it is when it needs no quoting, else in single quotes (``$(…)``, backquotes and escapes
    stay text), as :func:`shlex.quote` does. A value holding a character a terminal does not show
    as itself — an escape or other control character, a line end, a tab, a direction or
    zero-width mark, a byte that is not UTF-8 (a surrogate of ``os.fsdecode``) — is written in
    ANSI-C quotes (``$'…'``, bash and zsh) with that character as its escape: printed raw, the
    terminal dropped or acted on it and the pasted command named another folder or client.
    """
    if value.isprintable():
        return shlex.quote(value)
    parts = []
    for char in value:
        code = ord(char)
        if char in "\\'":
            parts.append("\\" + char)
        elif char.isprintable():
            parts.append(char)
        elif 0xDC80 <= code <= 0xDCFF:  # a byte os.fsdecode could not decode: that byte
            parts.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x80:
            parts.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            parts.append(f"\\u{code:04x}")
        else:
            parts.append(f"\\U{code:08x}")
    return "$'" + "".join(parts) + "'"


def one_line(text: str) -> str:
    """``text`` as one line of a command a person pastes: every character a terminal does not
    show as itself — a line end, a tab, an escape, a direction or zero-width mark — becomes a
    space. A command's words are :func:`shell_word` (printable already); what this guards is the
    free text beside them (a pull request's title or a client's name after ``#``), where a line
    end made the rest a second command that ran when the line was pasted."""
    return text if text.isprintable() else "".join(char if char.isprintable() else " " for char in text)
