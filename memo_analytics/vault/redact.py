"""Secret redaction before anything is persisted (SPEC §2.4).

Two passes, in this order:

1. our own patterns for multi-line and vendor formats the maintained detector misses or
   only half-catches (private key blocks, GitHub fine-grained tokens, OpenAI/Anthropic
   keys, passwords inside URLs ...);
2. the maintained detector `detect-secrets` with its regex plugins (cloud keys, VCS
   tokens, chat tokens, JWTs, keyword assignments such as ``password = "..."``). Its
   high-entropy plugins are left off: on prose and code they flag ordinary words.

Each secret becomes ``[REDACTED:<kind>]``. :func:`redact_secrets` returns the redacted
text and the number of secrets replaced.
"""

from __future__ import annotations

import re
from functools import lru_cache

REDACTION = "[REDACTED:{kind}]"

# (kind, pattern, group to replace: 0 = whole match)
_OWN_PATTERNS: list[tuple[str, re.Pattern[str], int]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
            re.S,
        ),
        0,
    ),
    ("github-token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), 0),
    ("github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), 0),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), 0),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), 0),
    # a key glued to other text (no word boundary): long, with digits and both cases
    ("openai-key", re.compile(r"sk-(?=[A-Za-z0-9_-]{40})(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Z])(?=[A-Za-z0-9_-]*[a-z])[A-Za-z0-9_-]{40,}"), 0),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), 0),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), 0),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), 0),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"), 0),
    ("discord-webhook", re.compile(r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+"), 0),
    ("stripe-key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"), 0),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), 0),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), 0),
    ("pypi-token", re.compile(r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"), 0),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), 0),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0),
    ("url-password", re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s/:@]+:([^\s/@]{3,})@"), 1),
    ("bearer-token", re.compile(r"(?i)(?<=\bBearer )[A-Za-z0-9._~+/-]{20,}=*"), 0),
]

# detect-secrets plugins that look for a known shape (no entropy guessing)
_DETECTOR_PLUGINS = [
    "ArtifactoryDetector", "AWSKeyDetector", "AzureStorageKeyDetector", "BasicAuthDetector",
    "CloudantDetector", "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector",
    "IbmCloudIamDetector", "IbmCosHmacDetector", "JwtTokenDetector", "KeywordDetector",
    "MailchimpDetector", "NpmDetector", "OpenAIDetector", "PrivateKeyDetector",
    "PypiTokenDetector", "SendGridDetector", "SlackDetector", "SoftlayerDetector",
    "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
]
_MIN_DETECTED_LENGTH = 6
_ALREADY = re.compile(r"\[REDACTED:[a-z-]+\]")


@lru_cache(maxsize=1)
def _detector_config() -> dict:
    return {"plugins_used": [{"name": name} for name in _DETECTOR_PLUGINS]}


def _detector_secrets(line: str) -> list[tuple[str, str]]:
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings

    found: list[tuple[str, str]] = []
    with transient_settings(_detector_config()):
        for secret in scan_line(line):
            value = secret.secret_value
            if value and len(value) >= _MIN_DETECTED_LENGTH and not _ALREADY.search(value):
                kind = re.sub(r"[^a-z]+", "-", secret.type.lower()).strip("-")
                found.append((kind, value))
    return found


def redact_secrets(text: str) -> tuple[str, int]:
    """Replace every secret in ``text`` by ``[REDACTED:<kind>]``.

    Parameters
    ----------
    text : str
        Any text (a prompt body, a summary, a title).

    Returns
    -------
    tuple[str, int]
        The redacted text and how many secrets were replaced.
    """
    count = 0

    def _sub(kind: str, group: int):
        def replace(match: re.Match[str]) -> str:
            nonlocal count
            count += 1
            if group == 0:
                return REDACTION.format(kind=kind)
            whole = match.group(0)
            start, end = match.span(group)
            offset = match.start(0)
            return whole[: start - offset] + REDACTION.format(kind=kind) + whole[end - offset :]

        return replace

    for kind, pattern, group in _OWN_PATTERNS:
        text = pattern.sub(_sub(kind, group), text)

    lines = text.split("\n")
    for index, line in enumerate(lines):
        if len(line) > 20_000 or not line.strip():
            continue
        for kind, value in _detector_secrets(line):
            if value in line:
                line = line.replace(value, REDACTION.format(kind=kind))
                count += 1
        lines[index] = line
    return "\n".join(lines), count
