"""Rule candidates from what people keep telling their agents (SPEC §5.3). Pure: no I/O.

Only the person's own words count. Before sentences are read, a turn loses what the person
pasted rather than said: fenced and indented code, quoted lines (``>``), XML-like tag
blocks (slash-command expansions, system reminders), tables, log and stack-trace lines, and
whole pasted documents and templates (:func:`is_pasted_template`): a turn with several
Markdown headings is a spec the person pasted; a turn with a template placeholder
(``$ARGUMENTS``, ``${VAR}``, ``{{…}}``, ``{% … %}``, an expanded ``ARGUMENTS:`` line) is a
command or prompt template; a turn written to a model — "The assistant **MUST** …", a
"You are a … assistant" role opening — together with a heading or the other of the two is
a pasted prompt. None of these is an instruction the person gave. A sentence whose
subject is the assistant or the model in the third person ("the model should …") is not
the person's instruction either, and neither are questions.

Signal groups and base confidence (SPEC §5.3, checked most specific first):

========================================  ============  ==========
phrases                                    category      confidence
========================================  ============  ==========
must not, cannot, should never             constraint    0.90
never, do not, don't, under no circumst.   constraint    0.90
refuse, reject, prohibit                   security      0.90
always, every time                         process       0.85
must, strictly required, mandatory         architecture  0.85
========================================  ============  ==========

A candidate's text is one sentence of 15–300 characters. Identical instructions group by a
normalized key (case, spacing, quotes and end punctuation folded); each further occurrence
adds 0.05, capped at 0.99.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Iterable

MIN_RULE_CHARS = 15
MAX_RULE_CHARS = 300
REPEAT_BONUS = 0.05
MAX_CONFIDENCE = 0.99
#: A turn with this many Markdown headings is a pasted document, not an instruction.
PASTED_DOCUMENT_HEADINGS = 3
#: A turn with this many of {a heading, text about the assistant in the third person, a
#: "You are …" role opening} is a pasted prompt template (see :func:`is_pasted_template`).
PASTED_TEMPLATE_MARKS = 2

_APOS = "['\u2019]"
#: (category, base confidence, phrase pattern), most specific first.
SIGNALS: list[tuple[str, float, re.Pattern[str]]] = [
    ("constraint", 0.9, re.compile(r"\b(?:must\s+not|mustn" + _APOS + r"t|cannot|should\s+never)\b", re.I)),
    ("constraint", 0.9, re.compile(r"\b(?:never|do\s+not|don" + _APOS + r"t|under\s+no\s+circumstances)\b", re.I)),
    ("security", 0.9, re.compile(r"\b(?:refuse|reject|prohibit)(?:s|d|ed)?\b", re.I)),
    ("process", 0.85, re.compile(r"\b(?:always|every\s+time)\b", re.I)),
    ("architecture", 0.85, re.compile(r"\b(?:must|strictly\s+required|mandatory)\b", re.I)),
]

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})(.*)$")
_TAG_LINE = re.compile(r"^\s*</?[A-Za-z][\w:-]*(?:\s[^>]*)?>")
_TAG_OPEN = re.compile(r"^\s*<([A-Za-z][\w:-]*)(?:\s[^>]*)?>\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_LOG_LINE = re.compile(
    r"^\s*(?:\d{4}-\d{2}-\d{2}[T ]\d|\[\d|at [\w.$<>]+\(|File \"|Traceback|[A-Z]+\s*\||\$ |>>> |\w+Error:|(?i:error|warning|fatal):|❯|"
    r"(?:ERROR|WARN|WARNING|INFO|DEBUG)\b|npm (?:ERR|WARN)|\s*\d+\s*\|)")
_TABLE = re.compile(r"^\s*\|.*\|\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？；;])")
_INLINE_NOISE = re.compile(r"\s+")
_INLINE_CODE = re.compile(r"(`+)[^`\n]*?\1")
# Placeholders a template is filled through: Claude Code's $ARGUMENTS (and the "ARGUMENTS:"
# line its expansion ends with), ${VAR}, Mustache/Jinja {{ … }} and {% … %}.
_PLACEHOLDER = re.compile(r"\$ARGUMENTS\b|\$\{[A-Za-z_]\w*\}|\{\{[^{}\n]{1,100}\}\}|\{%[^%\n]{1,100}%\}|"
                          r"^[ \t]*ARGUMENTS:\s", re.M)  # (blank lines not crossed: quadratic in them)
# Text about the model in the third person: "The assistant **MUST** …", "Claude should …"
# (words that name a model only; "the model" and "the agent" are often the person's code).
_ABOUT_THE_MODEL = re.compile(
    r"\b(?:(?:the|this|an?)\s+(?:ai\s+)?(?:assistant|ai|llm|chatbot|language\s+model)|claude(?:\s+code)?)\s+"
    r"[*_]{0,2}(?:must|should|shall|will|may|is\s+to|is\s+required|needs?\s+to|has\s+to|can(?:not)?|never|always|"
    r"do(?:es)?\s+not)\b", re.I)
# A role opening addressed to a model: "You are Claude Code, …", "You are an expert Go reviewer."
_ROLE_OPENING = re.compile(
    r"^[ \t#>*_-]*you\s+are\s+(?:now\s+)?(?:(?:a|an|the)\s+)?(?:[\w-]+\s+){0,4}?"
    r"(?:assistant|ai|model|llm|agent|chatbot|bot|claude|expert|engineer|developer|programmer|specialist|reviewer|"
    r"architect|analyst|writer|consultant|gpt|gemini|copilot|codex)\b", re.I | re.M)


@dataclass
class Evidence:
    """One turn that said the instruction."""

    id: str
    session_id: str | None
    project: str
    turn: int | None
    created: str


@dataclass
class Candidate:
    """A derived-rule candidate: ``text`` (first spelling seen), ``category``,
    ``confidence`` (0–0.99), ``occurrences`` and the turns that said it."""

    key: str
    text: str
    category: str
    base_confidence: float
    signal: str
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def occurrences(self) -> int:
        return len(self.evidence)

    @property
    def confidence(self) -> float:
        return round(min(MAX_CONFIDENCE, self.base_confidence + REPEAT_BONUS * (self.occurrences - 1)), 2)

    def wire(self, evidence_limit: int | None = 20) -> dict[str, Any]:
        items = self.evidence if evidence_limit is None else self.evidence[:evidence_limit]
        return {
            "key": self.key, "text": self.text, "category": self.category, "confidence": self.confidence,
            "occurrences": self.occurrences, "signal": self.signal,
            "projects": sorted({e.project for e in self.evidence}),
            "evidence": [{"id": e.id, "sessionId": e.session_id, "project": e.project, "turn": e.turn,
                          "created": e.created} for e in items],
        }


def is_pasted_template(body: str, spoken: str | None = None) -> bool:
    """True when a turn is a document or template the person pasted, not words they said:
    ≥ :data:`PASTED_DOCUMENT_HEADINGS` Markdown headings; or, outside code, a template
    placeholder (``$ARGUMENTS``, ``${VAR}``, ``{{…}}``, ``{% … %}``, an ``ARGUMENTS:`` line);
    or ≥ :data:`PASTED_TEMPLATE_MARKS` of: a heading, text about the assistant in the third
    person ("The assistant **MUST** …"), a "You are a … assistant" role opening.
    ``spoken`` is the turn with code, quotes and tags removed (computed when omitted)."""
    headings = sum(1 for line in body.splitlines() if _HEADING.match(line))
    if headings >= PASTED_DOCUMENT_HEADINGS:
        return True
    text = _INLINE_CODE.sub(" ", _strip_pasted_lines(body) if spoken is None else spoken)
    if _PLACEHOLDER.search(text):
        return True
    marks = (headings > 0) + bool(_ABOUT_THE_MODEL.search(text)) + bool(_ROLE_OPENING.search(text))
    return marks >= PASTED_TEMPLATE_MARKS


def spoken_text(body: str) -> str:
    """The part of a turn the person said themselves (see the module notes): code fences,
    indented code, quotes, tag blocks, tables and log lines removed; a pasted document or
    template (:func:`is_pasted_template`) becomes empty."""
    spoken = _strip_pasted_lines(body)
    return "" if is_pasted_template(body, spoken) else spoken


def _strip_pasted_lines(body: str) -> str:
    lines = body.splitlines()
    kept: list[str] = []
    fence: str | None = None
    open_tag: str | None = None
    for line in lines:
        if fence is not None:
            # CommonMark: closed by the same character, at least as long, nothing after it
            closing = _FENCE.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence) \
                    and not closing.group(2).strip():
                fence = None
            continue
        marker = _FENCE.match(line)
        if marker and not (marker.group(1)[0] == "`" and "`" in marker.group(2)):
            fence = marker.group(1)
            continue
        if open_tag is not None:
            if re.search(rf"</{re.escape(open_tag)}\s*>", line):
                open_tag = None
            continue
        tag = _TAG_OPEN.match(line)
        if tag and not re.search(rf"</{re.escape(tag.group(1))}\s*>", line):
            open_tag = tag.group(1)
            continue
        if (line.startswith(("    ", "\t")) and not _BULLET.match(line)) or line.lstrip().startswith(">") \
                or _TAG_LINE.match(line) or _TABLE.match(line) or _LOG_LINE.match(line):
            kept.append("")
            continue
        kept.append(line)
    return "\n".join(kept)


def sentences(text: str) -> Iterable[str]:
    """Sentences of ``text``: split at line ends and at sentence punctuation; list markers
    and surrounding emphasis removed."""
    for line in text.splitlines():
        line = _BULLET.sub("", line).strip()
        for part in _SENTENCE_END.split(line):
            part = part.strip().strip("*_").strip().rstrip(";；").rstrip()
            if part:
                yield part


def normalized_key(text: str) -> str:
    """The grouping key: Unicode-folded, lower case, quotes unified, spacing collapsed,
    leading fillers ("ok,", "please", "also") and end punctuation dropped (``"Never use
    var."``, ``ok, never  use var!`` share a key)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = folded.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    folded = _FILLER.sub("", _INLINE_NOISE.sub(" ", folded).strip())
    return folded.rstrip(" .!;:,。！；").strip()


# Words a person puts before an instruction ("ok, from now on, never ...").
_FILLER = re.compile(
    r"^(?:(?:ok(?:ay)?|so|and|also|but|yes|no|please|pls|again|now|then|remember|important|note|"
    r"from now on|going forward|in (?:the )?future|and yes|for (?:the )?record|btw)\b[\s,:;!-]*)+", re.I)
# The person addresses the agent: "you must", "you should never", "you don't need to".
_ADDRESSED = re.compile(r"^(?:you|u)\s+(?:\w+\s+){0,2}?(?:must|should|shall|need|have|never|always|do|don"
                        + _APOS + r"t|cannot|can" + _APOS + r"t|are\s+not)\b", re.I)
# A norm about the work: "<subject> should always / must never / must be ...".
_NORMATIVE = re.compile(r"\b(?:should|must|shall|has\s+to|have\s+to|needs?\s+to)\s+(?:always|never|not\b|only|be\b|"
                        r"\w+\s+(?:always|never))", re.I)
# Phrases that state a norm whoever the subject is ("every handler must validate ...").
_INHERENTLY_NORMATIVE = re.compile(r"(?:must|mustn" + _APOS + r"t|should\s+never|strictly\s+required|mandatory|"
                                   r"under\s+no\s+circumstances)\b", re.I)
_MAKE_SURE = re.compile(r"^(?:make\s+sure|ensure|be\s+sure)\b", re.I)
# A team's norm: "we always squash …", "we never push …", "we cannot use the staging database …" —
# not what happens to it ("we always get this error", "we cannot reproduce it", "we never got …").
_TEAM_NORM = re.compile(r"^we\s+(?:always|never|must(?:\s+not)?|mustn" + _APOS + r"t|cannot|can" + _APOS
                        + r"t|should\s+(?:always|never))\s+(?!(?:get|gets|got|see|saw|seen|hit|end|ended|seem|seemed|"
                        r"know|knew|find|found|reproduce|figure|figured|manage|managed|had|have|been|run\s+into|"
                        r"ran\s+into|tell|told|notice|noticed|understand|remember|say|said|hear|heard)\b)[a-z]", re.I)
# After "don't": a pronoun makes a question ("don't we want ..."), a verb of opinion or
# perception a statement with its subject dropped ("don't think ...", "don't like ...").
_NOT_AN_ORDER = re.compile(r"^\s*(?:we|you|i|they|it|he|she|u|think|like|know|understand|see|remember|believe|"
                           r"agree|mind|care|get\s+it|love|feel)\b", re.I)


def is_instruction(sentence: str, phrase_start: int) -> bool:
    """True when the sentence gives an instruction rather than narrating: it starts with the
    signal phrase (an imperative, after fillers such as "ok, from now on,"), addresses the
    agent ("you must ...", "you don't need to ..."), states a norm ("results should always
    be ...", "rules MUST be created in ...", the team's "we never push to main"), or asks to
    make sure of something. "I don't
    think ...", "we don't know ...", "it never gets to 0" are narration."""
    if _INHERENTLY_NORMATIVE.match(sentence, phrase_start):
        return True
    head = _FILLER.sub("", sentence[:phrase_start]).strip(" ,:;*_`\"'")
    phrase = re.match(r"\S+(?:\s+not)?", sentence[phrase_start:])
    after = sentence[phrase_start + (phrase.end() if phrase else 0):]
    if _NOT_AN_ORDER.match(after):
        return False
    if not head:
        return True
    rest = _FILLER.sub("", sentence).strip(" ,:;*_`\"'")
    return bool(_ADDRESSED.match(rest) or _MAKE_SURE.match(rest) or _TEAM_NORM.match(rest)
                or _NORMATIVE.search(sentence))


def classify(sentence: str, strict: bool = True) -> tuple[str, float, str] | None:
    """``(category, base confidence, matched phrase)`` of the first signal group that
    matches, or None. Questions are not instructions; with ``strict`` neither is a
    sentence that narrates (:func:`is_instruction`) or that speaks of the assistant in the
    third person ("the assistant must …", a template's words)."""
    if sentence.rstrip().endswith(("?", "？")):
        return None
    if strict and _ABOUT_THE_MODEL.search(sentence):
        return None  # "the assistant must …": a template's words about the model
    for category, confidence, pattern in SIGNALS:
        for match in pattern.finditer(sentence):
            # a signal within the sentence that is no instruction there ("…, and never push") leaves the
            # others to be tried: "Always run the tests …, and never push to main" gave no rule (an operator)
            if strict and not is_instruction(sentence, match.start()):
                continue
            return category, confidence, match.group(0).lower()
    return None


def extract(turns: Iterable[dict[str, Any]], naive: bool = False) -> list[Candidate]:
    """Rule candidates from prompt turns (wire dicts with ``id, body, project, sessionId,
    turn, created``), sorted by confidence, then occurrences, then text.

    ``naive`` skips :func:`spoken_text` and :func:`is_instruction` (every line with a
    signal phrase counts, pasted code and narration included): the baseline the precision
    benchmark compares with.
    """
    groups: dict[str, Candidate] = {}
    for turn in turns:
        text = turn.get("body") or ""
        seen_in_turn: set[str] = set()
        for sentence in sentences(text if naive else spoken_text(text)):
            if not MIN_RULE_CHARS <= len(sentence) <= MAX_RULE_CHARS:
                continue
            signal = classify(sentence, strict=not naive)
            if signal is None:
                continue
            key = normalized_key(sentence)
            if key in seen_in_turn:
                continue
            seen_in_turn.add(key)
            candidate = groups.get(key)
            if candidate is None:
                candidate = groups[key] = Candidate(key, sentence, signal[0], signal[1], signal[2])
            candidate.evidence.append(Evidence(turn["id"], turn.get("sessionId"), turn["project"], turn.get("turn"),
                                               turn.get("created", "")))
    return sorted(groups.values(), key=lambda c: (-c.confidence, -c.occurrences, c.key))


def trap_text(meta: dict[str, Any], body: str = "") -> str:
    """A trap's rule: its ``summary``, else the first paragraph of its body (a spec-memo trap
    keeps the rule in its body alone: it was promoted as an empty ``-`` line), without the
    Markdown marks that open it (``#``, ``-``, ``*``, ``>``); "" when it holds none."""
    summary = meta.get("summary")
    if isinstance(summary, str) and summary.strip():
        return summary.strip()
    paragraph = []
    for line in (body or "").strip().splitlines():
        if not line.strip():
            break
        paragraph.append(line.strip())
    return re.sub(r"^(?:[#>*+-]+\s+)+", "", " ".join(paragraph)).strip()


def trap_rule(meta: dict[str, Any], body: str = "") -> dict[str, Any]:
    """A saved trap as a rule ``{text, category, confidence, occurrences}`` (what
    :func:`~.formats.rules_body` takes and the digest shows): :func:`trap_text`, the last of its
    ``tags``, and its numbers — a hand-written trap's ``confidence: high`` or ``occurrences: many``
    read as 0 and 1 (they made the digest fail for every one)."""
    tags = meta.get("tags")
    tags = [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []

    def number(value: Any, kind: type, default: Any) -> Any:
        try:
            read = kind(value)
        except (TypeError, ValueError, OverflowError):
            return default
        return read if read == read and abs(read) != float("inf") else default

    return {"text": trap_text(meta, body), "category": tags[-1] if tags else "rule",
            "confidence": number(meta.get("confidence") or 0, float, 0.0),
            "occurrences": number(meta.get("occurrences") or 1, int, 1)}


def trap_id(candidate: Candidate) -> str:
    """``trap-derived-{slug32}-{suffix8}`` (SPEC §5.3): the first 32 characters of the
    text's slug and 8 hex of the key's SHA-256, so re-saving a rule updates its trap."""
    ascii_text = unicodedata.normalize("NFKD", candidate.key).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:32].strip("-") or "rule"
    suffix = hashlib.sha256(candidate.key.encode("utf-8")).hexdigest()[:8]
    return f"trap-derived-{slug}-{suffix}"
