"""The ids of agents and of their conversations' sessions (a hook's and an import's alike).

Apart from the capture (:mod:`.capture`), which records hook events, so that the session
services can name a hook's session without importing the capture (which imports them).
"""

from __future__ import annotations

import hashlib
import re

from ..domain.ids import slugify, validate_session_id
from ..vault.redact import redact_secrets

#: The agents ``memo hook`` understands, by the name on its command line.
AGENTS = ("claude-code", "codex", "gemini", "cursor", "copilot")


def secret_free_id(conversation: str) -> str | None:
    """``redacted-`` and a hash of an agent's conversation id that holds a secret (what redaction
    would change), else None: the base of its session ids, for the hook and the import alike, so
    no file name, record or answer shows it (SPEC §2.4)."""
    if not redact_secrets(conversation)[1]:
        return None
    return f"redacted-{hashlib.sha1(conversation.encode('utf-8')).hexdigest()[:12]}"


#: How :func:`numbered` marks a later work interval of one agent session (``….2``).
_INTERVAL_MARK = re.compile(r"\.\d+$")


def hook_session_id(agent: str, session: str) -> str:
    """The product's session id of an agent's session: ``{agent}-{its id}`` (ids that are not
    lower-case safe slugs, or too long, or that end like a later work interval's ``.N``, are
    slugged and given a short hash — so two agent sessions never share one, ``x``, ``X`` and
    ``x.2`` included; an id holding a secret is ``redacted-`` and a hash of it: no file name,
    record or answer shows it, SPEC §2.4)."""
    hidden = secret_free_id(session)
    if hidden is not None:
        return validate_session_id(f"{agent}-{hidden}")
    base = slugify(session, 120)
    if base != session or _INTERVAL_MARK.search(base):
        base = f"{base[:100]}-{hashlib.sha1(session.encode('utf-8')).hexdigest()[:8]}"
    return validate_session_id(f"{agent}-{base}")
