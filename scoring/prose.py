"""What the prose of an item says about its substance, beyond its markdown structure.

Pages extracted from HTML rarely keep every list and fence: steps come as sentences
("First, ... Then ..."), guidance as "You should ..." or "Do not ...", code as bare lines of
SQL or Python, results as "3.2x faster" or "p99 dropped to 40 ms". This module counts those
in one pass over the lines outside fenced code, plus a few token-phrase matchers:

- ``guidance``: sentences that tell the reader what to do (an imperative verb first, or
  "you should / must / need to", "make sure", "do not", "never", "always"; a rule stated
  about its subject, "a primary button should ..."; a heading a flattened page ran into
  its first sentence, "Primary Use button.primary ...");
- ``prose_steps``: sentences that sequence work ("First,", "Then", "Next,", "Finally,", "Step 3");
- ``code_lines``: lines outside fences that read as code or a shell command;
- ``measurements``: numbers with a unit (%, ms, GB, x, req/s, ...);
- ``paper``: how many of the marks of a paper the opening has (an abstract, "we propose",
  results or experiments, an arXiv id), 0 unless it says what it does (abstract or method);
- ``announcement``: phrases of event, team, survey and brand announcements in the title and
  the opening (registration, tickets, welcome ... to the team, nominees, take the survey).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from signaldesk.scoring.keywords import KeywordMatcher, tokens

__all__ = ["MEASUREMENT", "ProseView", "analyse_prose"]

_SENTENCE = re.compile(r"(?<=[.!?:])\s+(?=[\"'(\[]?[A-Z0-9`])")
_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+")
_GUIDE_VERBS = frozenset(
    (
        "add",
        "allow",
        "always",
        "ask",
        "avoid",
        "build",
        "call",
        "change",
        "check",
        "choose",
        "configure",
        "consider",
        "copy",
        "create",
        "define",
        "delete",
        "describe",
        "disable",
        "do",
        "don't",
        "edit",
        "enable",
        "ensure",
        "explain",
        "follow",
        "give",
        "include",
        "install",
        "keep",
        "let",
        "limit",
        "list",
        "make",
        "mention",
        "move",
        "name",
        "never",
        "note",
        "only",
        "open",
        "pick",
        "pin",
        "practice",
        "prefer",
        "prepare",
        "put",
        "read",
        "remember",
        "remove",
        "replace",
        "rotate",
        "run",
        "say",
        "select",
        "set",
        "show",
        "split",
        "start",
        "stop",
        "tell",
        "test",
        "think",
        "try",
        "turn",
        "update",
        "upgrade",
        "use",
        "verify",
        "write",
    )
)
_YOU_SHOULD = re.compile(
    r"^(?:you|we)\s+(?:should|must|need\s+to|can|will\s+need|have\s+to)\b|^make\s+sure\b"
    r"|^it'?s\s+(?:best|important|a\s+good\s+idea)\b|^(?:do\s+not|don't|never|always)\b"
)
# A rule stated about its subject, in the sentence's first words ("A primary button should
# only appear once", "Lateral moves between tracks should be encouraged"): design and
# career guidance is written this way more than in the imperative.
_SUBJECT_SHOULD = re.compile(r"^(?:\S+\s+){1,6}?(?:should|must)(?:n't)?\s+\w")
# A heading run into its first sentence by a page flattened to plain text ("Primary Use
# button.primary to ..."): one to three capitalised words, then a capitalised verb of
# guidance and a lower-case word.
_RUN_IN = re.compile(r"^(?:[A-Z][\w-]*\s+){1,3}([A-Z][a-z']+)\s+[a-z]")
_ARTICLES = frozenset(("the", "a", "an", "this", "that", "our", "my", "your", "their", "its"))
_STEP_START = re.compile(
    r"^(?:first(?:ly)?|second(?:ly)?|third(?:ly)?|then|next|finally|after\s+that|once\s+"
    r"(?:that|this|you've|you\s+have)|now|step\s+\d+)\b[, :]"
)
# First words of a line of code or a shell command (lower-cased), for lines outside fences.
_CODE_STARTS = frozenset(
    (
        "select",
        "insert",
        "update",
        "delete",
        "merge",
        "create",
        "alter",
        "with",
        "grant",
        "explain",
        "pragma",
        "def",
        "class",
        "import",
        "from",
        "fn",
        "let",
        "const",
        "var",
        "function",
        "return",
        "pub",
        "async",
        "#include",
        "package",
        "func",
        "await",
    )
)
_YAML_KEY = re.compile(r"-?\s*[a-z_][a-z0-9_.-]*:")
# A JSON member on a line of its own ('"command": "npx",'), as a page's text keeps a config.
_JSON_MEMBER = re.compile(r'"[^"\s]{1,40}"\s*:\s*(?:["\[{\d-]|true|false|null)')
# A command-line flag ("--transport", "-y", "--scope=user").
_FLAG = re.compile(r"--?[A-Za-z][\w-]*(?:=\S*)?")
# A tool's name as typed: lower case, maybe with dots, dashes or a path ("kubectl", "./run").
_TOOL = re.compile(r"(?:\./)?[a-z][a-z0-9_.-]*")
_SQL_SECOND = frozenset(
    ("into", "from", "table", "index", "view", "user", "role", "extension", "as")
)
_PROSE_WORDS = re.compile(r"[A-Za-z]{3,}")
MEASUREMENT = re.compile(
    r"\b\d+(?:[.,]\d+)?\s?(?:%|percent\b|ms\b|µs\b|us\b|ns\b|sec\b|seconds?\b|minutes?\b|"
    r"hours?\b|x\b|\u00d7|kb\b|mb\b|gb\b|tb\b|kib\b|mib\b|gib\b|req/s|qps\b|rps\b|ops/s|"
    r"tokens?/s|fps\b|mbps\b|gbps\b|cores?\b|nodes?\b|rows\b|times\s+faster)",
    re.IGNORECASE,
)
_ARXIV_ID = re.compile(r"\b(?:arxiv:\s*)?\d{4}\.\d{4,5}(?:v\d+)?\b", re.IGNORECASE)
_PAPER_METHOD = KeywordMatcher(
    (
        "we propose",
        "we present",
        "we introduce",
        "in this paper",
        "this paper",
        "in this work",
        "our approach",
        "our method",
        "our framework",
        "we study",
        "we investigate",
    )
)
_PAPER_RESULT = KeywordMatcher(
    (
        "experiments",
        "experimental results",
        "results show",
        "we show",
        "we find",
        "we demonstrate",
        "outperform*",
        "state-of-the-art",
        "evaluation",
        "evaluate",
        "ablation*",
        "benchmark*",
    )
)
_ANNOUNCEMENT = KeywordMatcher(
    (
        # event logistics ("register" alone is also what a plugin or a handler does)
        "register now",
        "register here",
        "register today",
        "register for",
        "registration",
        "tickets",
        "ticket sales",
        "call for proposals",
        "call for papers",
        "cfp",
        "keynote*",
        "speakers",
        "schedule is live",
        "the schedule",
        "livestream",
        "live stream",
        "see you",
        "join us",
        "meetup",
        "webinar",
        "summit",
        "conference",
        "in person",
        "venue",
        # team and governance
        "welcome",
        "new members",
        "new member",
        "joining the team",
        "to the team",
        "nominee*",
        "nominations",
        "election*",
        "elected",
        "project director*",
        "leadership council",
        "steering",
        "maintainer update",
        "team update",
        "joins",
        "workgroup",
        "working group",
        "governance",
        "council",
        "mentorship program",
        # community programmes: their fellows, mentees and progress notes
        "gsoc",
        "summer of code",
        "fellows",
        "mentee*",
        "code of conduct",
        # link round-ups and newsletters (LABELLING: "link round-ups without content")
        "this week in",
        "weekly update",
        "community update",
        "year in review",
        "newsletter",
        "round-up",
        "roundup",
        "digest",
        "monthly",
        # surveys, brand, milestones, sponsorship
        "survey",
        "take the survey",
        "fill out",
        "brand",
        "birthday",
        "anniversary",
        "celebrating",
        "recap",
        "scholarship*",
        "sponsor*",
        "graduates",
        "graduated",
        "foundation",
        "podcast",
        "donat*",
    )
)
_OPENING_TOKENS = 300
# Conference names in titles: "TokioConf 2026", "PromCon is only one month away".
# Milestones too: "Helm Turns 5", "Linkerd 2.x turns one year old!", "10 years of ...", but
# not a release ("Jekyll turns 3.5").
_EVENT_TITLE = re.compile(
    r"\w(?:conf|con)\b|\b(?:conf|summit|meetup|hackathon)\b"
    r"|\bturns\s+(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten)\b(?![.\d])"
    r"|\b\d+\s+years\s+of\b|\byears?\s+old\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ProseView:
    """Counts over the prose of one item (see the module docstring)."""

    sentences: int
    guidance: int
    prose_steps: int
    code_lines: int
    measurements: int
    paper: int
    announcement: int
    paper_result: bool = False
    """The opening states a result ("we show", "outperforms", an evaluation...)."""
    titled_announcement: bool = False
    """The title itself names an event, a team or governance change, a survey or a round-up."""

    @property
    def paper_shaped(self) -> bool:
        """An abstract or "we propose", and at least one more mark of a paper."""
        return self.paper >= 2


def _is_code_line(line: str) -> bool:
    """A line outside fences that reads as code or a shell command (cheap checks first)."""
    if line.startswith(("$ ", ">>> ", "% ")):
        return True
    words = line.split()
    if line.endswith((";", "{")) or line == "}":
        return True
    if _flagged_command(line, words) or _JSON_MEMBER.match(line):
        return True
    if len(_PROSE_WORDS.findall(line)) > 8:
        return False  # a sentence, whatever its first word
    first = words[0].lower()
    if first in _CODE_STARTS:
        if first in ("select", "insert", "update", "delete", "merge", "create", "alter", "with"):
            # SQL reads like English at the start; it needs its second keyword or symbols.
            return len(words) > 1 and (
                words[1].lower() in _SQL_SECOND or "*" in line or "(" in line
            )
        return len(words) > 1
    # "name = value" and "key: value" lines (assignments, YAML, TOML) with few words; a
    # YAML key is lower-case ("runs-on:"), a label in prose is not ("When: April 20").
    if len(words) > 4 or len(words) < 2:
        return False
    if len(words) >= 3 and words[1] == "=":
        return True
    return bool(_YAML_KEY.fullmatch(words[0])) and words[1][:1] not in "*_"


def _flagged_command(line: str, words: list[str]) -> bool:
    """A shell command on a line of its own, as a page's text keeps it when the markup is
    gone ("claude mcp add --transport http github https://...", "yarn create app --template
    vue"): a tool's name, then at most a dozen words with a flag among them, and no
    sentence's end. Checked before the count of prose words, which a URL inflates."""
    if len(words) < 2 or len(words) > 14 or line.endswith((".", ",", ":", "?", "!")):
        return False
    if not _TOOL.fullmatch(words[0]) or {words[0], words[1].lower()} & _ARTICLES:
        return False
    return any(_FLAG.fullmatch(word) for word in words[1:])


def _run_in_guidance(sentence: str) -> bool:
    """A flattened heading followed by an imperative ("Primary Use button.primary to")."""
    match = _RUN_IN.match(sentence)
    if match is None or match.group(1).lower() not in _GUIDE_VERBS:
        return False
    before = sentence[: match.start(1)].split()
    return before[-1].lower() not in _ARTICLES


def analyse_prose(body: str, title: str, body_tokens: tuple[str, ...]) -> ProseView:
    """Count the prose signals of ``body`` (markdown, original case) and its title."""
    sentences = guidance = steps = code_lines = 0
    in_fence = False
    for raw in body.splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence or not line or line.startswith(("#", "|")):
            continue
        if raw.startswith(("    ", "\t")):
            continue  # indented code: counted as a code block by the line scan
        if _is_code_line(line):
            code_lines += 1
            continue
        text = _LIST_MARK.sub("", line).replace("*", "").replace("_", " ")
        for sentence in _SENTENCE.split(text):
            lowered = sentence.strip().lower()
            if len(lowered) < 8:
                continue
            sentences += 1
            first = lowered.split(None, 1)[0].strip(",:;") if lowered else ""
            if (
                first in _GUIDE_VERBS
                or _YOU_SHOULD.match(lowered)
                or _SUBJECT_SHOULD.match(lowered)
                or _run_in_guidance(sentence.strip())
            ):
                guidance += 1
            if _STEP_START.match(lowered):
                steps += 1
    opening = body_tokens[:_OPENING_TOKENS]
    title_tokens = tuple(tokens(title.lower()))
    head = body[:1500].lower()
    abstract = "abstract" in head[:400] or "abstract" in title.lower()
    method = sum(_PAPER_METHOD.count_tokens(opening).values()) > 0
    result = sum(_PAPER_RESULT.count_tokens(opening).values()) > 0
    marks = int(abstract) + int(method) + int(result) + int(bool(_ARXIV_ID.search(head)))
    # A paper says what it does ("we propose", or under "Abstract") and one more mark.
    paper = marks if (abstract or method) else 0
    in_title = sum(_ANNOUNCEMENT.count_tokens(title_tokens).values()) + len(
        _EVENT_TITLE.findall(title)
    )
    announcement = 2 * in_title + sum(_ANNOUNCEMENT.count_tokens(opening).values())
    return ProseView(
        sentences=sentences,
        guidance=guidance,
        prose_steps=steps,
        code_lines=code_lines,
        measurements=len(MEASUREMENT.findall(body)),
        paper=paper,
        announcement=announcement,
        paper_result=bool(paper) and result,
        titled_announcement=in_title > 0,
    )
