"""Secret guard: find credentials in fragment text before anything is stored.

Built on detect-secrets (Yelp), used offline as a library: its vendor plugins (AWS, Slack,
Stripe, GitHub, GitLab, JWT, private keys, basic-auth URLs, ...), its keyword plugin and its
high-entropy plugins, with its heuristic filters. ``secret_rules`` adds what detect-secrets
lacks and the placeholder rules that keep documentation (``<password>``, ``${DB_PASSWORD}``,
``changeme``...) from being flagged.

Text is normalised first (invisible format characters removed, NFKC), so ``AKIA`` + U+200B +
``IOSFODNN7EXAMPLE`` is a key; line numbers still refer to the original text. Findings never
carry the secret: the excerpt shows at most a short prefix.

Speed: detect-secrets' own driver runs all its plugins on every line, through its filter
injection (~200 fragments/s with ``scan_file``; ~80 with ``scan_line``, which also flags every
word). Here each text is read once by cheap prefilters, each of which can only say "no line can
match": per pattern a literal or trigger search over the whole text, secret words found with
``str.find`` for the keyword and assignment rules, one search for quoted strings for the entropy
rules. Plugins then run only on the few lines that hit, and a fragment's fields are scanned as
one text (~6,000 fragments/s on one core). Long-line guards keep the plugins' backtracking
regexes linear on pathological input (a line of 80 KB no longer takes seconds).

Pure: text in, findings out; no I/O, no network (detect-secrets' verification is never called).
detect-secrets is imported on first scan, not at import (it pulls in ``requests``: ~85 ms).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import secret_rules as rules


@dataclass(frozen=True)
class Finding:
    kind: str
    line: int           # 1-based, within the text of ``field``
    excerpt: str        # redacted: never the secret itself
    field: str = "body"

    def describe(self) -> str:
        where = f"line {self.line}" if self.field == "body" else f"{self.field} line {self.line}"
        return f"{where}: {self.kind} ({self.excerpt})"


# -- normalisation ---------------------------------------------------------------------------

# Unicode category Cf (format: zero-width space/joiners, bidi controls, BOM, soft hyphen, tags...)
# plus invisible characters of other categories (combining grapheme joiner, Hangul fillers,
# variation selectors). tests/test_secrets.py checks this covers every Cf of unicodedata.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e0fff]")


def normalise(text: str) -> str:
    """Remove invisible characters and NFKC-normalise, line by line (newlines are kept)."""
    if text.isascii():
        return text
    return "\n".join(line if line.isascii() else
                     _INVISIBLE.sub("", unicodedata.normalize("NFKC", _INVISIBLE.sub("", line)))
                     for line in text.split("\n"))


# -- the engine: detect-secrets plugins and our rules, compiled once --------------------------

_SKIPPED_PLUGINS = {"IPPublicDetector"}      # an IP address is not a credential
# specific kinds rank 0; a value found by several rules is reported under the best-ranked one
_RANK = {"password assignment": 1, "secret assignment": 1, "high-entropy string": 2}
_AWS_KEY_ID = re.compile(r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}")
_DS_KINDS = {
    "GitHub Token": "GitHub token", "Stripe Access Key": "Stripe secret key",
    "JSON Web Token": "JSON web token", "Private Key": "private key",
    "Basic Auth Credentials": "password in a connection string",
}


def _kind_of(secret_type: str, value: str) -> str:
    if secret_type == "AWS Access Key":
        return "AWS access key id" if _AWS_KEY_ID.fullmatch(value) else "AWS secret access key"
    if secret_type == "Slack Token":
        return "Slack webhook URL" if value.lower().startswith("https://") else "Slack token"
    return _DS_KINDS.get(secret_type, secret_type)


def _regex(source: str) -> Callable[[str, str], bool]:
    pattern = re.compile(source)
    return lambda text, low: pattern.search(text) is not None


def _words(*words: str) -> Callable[[str, str], bool]:
    if len(words) == 1:
        word = words[0]
        return lambda text, low: word in low
    return lambda text, low: any(w in low for w in words)


_B64URL_RUN = re.compile(r"[A-Za-z0-9_=-]*")


def _jwt_trigger(text: str, low: str) -> bool:
    """``eyJ`` + a base64url run + ``.``, in linear time (the plugin's own pattern rescans the
    rest of the run from every ``eyJ`` in it: seconds on a long run of them with no dot)."""
    at = text.find("eyJ")
    while at >= 0:
        end = _B64URL_RUN.match(text, at + 3).end()
        if end > at + 3 and text.startswith(".", end):
            return True
        at = text.find("eyJ", end)      # every eyJ inside this run ends where it does
    return False


# Most patterns start with a literal and re finds them in microseconds. These do not (a leading
# class, lookbehind, IGNORECASE, or backtracking that is quadratic on long lines): each gets a
# cheap condition that every match implies, and the pattern itself runs only when it holds. Keyed by (plugin, a piece of the pattern): a
# pattern a future detect-secrets changes gets no trigger and simply runs (slower, still right).
_TRIGGERS: tuple[tuple[str, str, Callable[[str, str], bool]], ...] = (
    ("ArtifactoryDetector", "AKC[", _regex(r"AKC[a-zA-Z0-9]{10}")),
    ("ArtifactoryDetector", "AP[", _regex(r"AP[\dABCDEF][a-zA-Z0-9]{8}")),
    ("CloudantDetector", "cloudant\\.com", _words("cloudant")),
    ("DiscordBotTokenDetector", "[MNO]", _regex(r"\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}")),
    ("JwtTokenDetector", "eyJ", _jwt_trigger),
    ("NpmDetector", "_authToken", _words("_authtoken")),     # its '//.+' is quadratic on long lines
    ("GitLabTokenDetector", "(glpat|", _words("glpat-", "gldt-", "glft-", "glsoat-", "glrt-")),
    ("MailchimpDetector", "-us", _regex(r"-us\d")),
    ("SlackDetector", "xox", _words("xox")),
    ("SlackDetector", "hooks", _words("hooks.slack.com")),
    ("SoftlayerDetector", "softlayer.com", _words("softlayer")),
    ("StripeDetector", "k_live_", _regex("_live_")),
    ("TelegramBotTokenDetector", ":[0-9A-Za-z_-]{35}", _regex(r":[0-9A-Za-z_-]{35}")),
    ("", "k_live_", _regex("_live_")),
)
# Patterns that need a secret word (key, pass, pwd, token, secret) in the match: they run only
# on the lines the assignment hint selects.
_LONG_RUN = re.compile(r"[A-Za-z0-9/+=_-]{24}")
_SPACES = re.compile(" {3,}")
_QUOTE = re.compile("[\"'`]")
_KEYWORD_BOUND = ("(?:key|pwd|", "(?:secret[-_]?(?:access)?[-_]?key)", "aws_?secret_?access_?key")


@dataclass
class _Rule:
    pattern: re.Pattern[str]
    trigger: Callable[[str, str], bool] | None     # None: keyword-bound
    plugin: Any = None                              # a detect-secrets plugin, or None for our rules
    kind: str = ""

    def __post_init__(self) -> None:
        self.whole = re.compile(self.pattern.pattern, self.pattern.flags | re.MULTILINE)

    def hits(self, i: int, line: str) -> Iterable[tuple]:
        for m in self.pattern.finditer(line):
            # the plugin has the last word (the JWT one decodes its candidates)
            if self.plugin is not None and next(iter(self.plugin.analyze_string(m.group())), None) is None:
                continue
            kind = _kind_of(self.plugin.secret_type, m.group()) if self.plugin is not None else self.kind
            start, end = m.span(_secret_group(m))
            while start < end and line[start] in _EDGE:      # Artifactory's (?:\s|=|:|"|^) context
                start += 1
            while end > start and line[end - 1] in _EDGE:
                end -= 1
            yield i, start, end, kind, line[start:end], ""


_EDGE = " \t\"'=:"


def _secret_group(m: re.Match[str]) -> int | str:
    """The part of a match that is the secret: our ``v`` group; a plugin's first group when it
    holds the value (basic-auth password, AWS secret after its keyword); else the whole match
    (not GitHub's ``(ghp|gho|...)`` prefix group, nor GitLab's optional ``glcbt-`` infix)."""
    if "v" in m.re.groupindex:
        return "v"
    if m.re.groups and m.group(1) and m.start(1) > m.start() and (
            len(m.group(1)) >= 8 or m.end(1) >= m.end() - 1):
        return 1
    return 0


def _rule(pattern: re.Pattern[str], plugin: Any = None, kind: str = "") -> _Rule:
    owner = type(plugin).__name__ if plugin is not None else ""
    if any(piece in pattern.pattern for piece in _KEYWORD_BOUND):
        return _Rule(pattern, None, plugin, kind)
    trigger = next((t for cls, piece, t in _TRIGGERS if cls == owner and piece in pattern.pattern), None)
    rule = _Rule(pattern, trigger, plugin, kind)
    if trigger is None:
        rule.trigger = lambda text, low: rule.whole.search(text) is not None
    return rule


class _Engine:
    def __init__(self) -> None:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.filters import heuristic
        from detect_secrets.plugins.base import RegexBasedDetector
        from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString
        from detect_secrets.plugins.keyword import KeywordDetector

        plugins = [cls() for cls in get_mapping_from_secret_type_to_class().values()
                   if issubclass(cls, RegexBasedDetector) and cls.__name__ not in _SKIPPED_PLUGINS]
        self.rules = [_rule(p, plugin) for plugin in plugins for p in plugin.denylist] + \
            [_rule(p, kind=kind) for kind, p in rules.OWN_RULES]
        self.keyword = KeywordDetector()
        self.b64, self.hex = Base64HighEntropyString(), HexHighEntropyString()
        # a hex string needs > 8 distinct symbols to pass 3.0 bits, base64 > 22 for 4.5 bits
        self.quoted = re.compile(r"([\"'])([" + re.escape(self.b64.charset) + r"]{9,})\1")
        self.h = heuristic

    # Each finder yields (line index, start, end, kind, value, label).

    def vendor_hits(self, lines: list[str], active: list[_Rule], index: list[int],
                    keyword_index: list[int]) -> Iterable[tuple]:
        bound = [r for r in self.rules if r.trigger is None]
        vendor, keyword = set(index), set(keyword_index)
        for i in sorted(vendor | keyword):
            line = lines[i].rstrip()
            for rule in (active if i in vendor else ()):
                yield from rule.hits(i, line)
            # Every keyword-bound pattern's value is a run of 24+ of these characters. Their
            # ' *(=|:| +) *' backtracks cubically on long runs of spaces (10 s on a 50 KB line);
            # they accept any number of spaces, so they read the line with runs cut to two.
            if i in keyword and _LONG_RUN.search(line):
                squeezed = _SPACES.sub("  ", line)
                for rule in bound:
                    for hit in rule.hits(i, squeezed):
                        start = line.find(hit[4]) if squeezed is not line else hit[1]
                        yield i, start, start + len(hit[4]), *hit[3:]

    def assignment_hits(self, lines: list[str], index: list[int]) -> Iterable[tuple]:
        h, budget = self.h, [_KEYWORD_WINDOWS]
        for i in index:
            line = lines[i].rstrip()
            names = [(m.start(), m.end(), m.group()) for m in rules.NAME.finditer(line)
                     if rules.ASSIGNMENT_HINT.search(m.group())]
            # detect-secrets' keyword plugin (quotes-required mode: each of its regexes needs a quote)
            for offset, part in (_windows(line, names, budget) if _QUOTE.search(line) else ()):
                for value in self.keyword.analyze_string(part):
                    start = offset + part.find(value)
                    name = next((n for s, e, n in reversed(names) if e <= start), None) or \
                        next((n for s, e, n in names if s >= start), "")
                    kind = rules.name_kind(name)
                    if kind and not any(c.isspace() for c in value) and not rules.is_path(value) and \
                            not h.is_indirect_reference(
                            line[max(start - 80, 0):start + len(value) + 2]):
                        yield i, start, start + len(value), kind, value, name + "="
            # our rule: also unquoted values, and token/key names the plugin does not know
            for s, e, name in names:
                m = rules.ASSIGNED.match(line, e)
                kind = rules.name_kind(name) if m else None
                if not kind:
                    continue
                value, quoted, tight = m.group("v"), bool(m.group("q")), bool(m.group("tight"))
                if rules.is_path(value) or not quoted and rules.is_reference(value):
                    continue
                if kind == "password assignment":
                    ok = rules.password_shaped(value, tight=tight or quoted) or rules.token_shaped(value)
                else:
                    ok = rules.token_shaped(value) or ((tight or quoted) and len(value) >= 8
                                                        and rules.password_shaped(value, tight=False))
                if ok:
                    yield i, m.start("v"), m.end("v"), kind, value, name + "="
            for m in rules.AUTH_HEADER.finditer(line):
                scheme, value = m.group("scheme"), m.group("v")
                if scheme.lower() == "basic":
                    if rules.basic_credentials(value):
                        yield i, m.start("v"), m.end("v"), "password in an Authorization header", value, "Basic "
                elif rules.token_shaped(value):
                    yield i, m.start("v"), m.end("v"), "secret assignment", value, scheme + " "

    def entropy_hits(self, norm: str, starts: list[int]) -> Iterable[tuple]:
        for m in self.quoted.finditer(norm):
            value = m.group(2)
            plugin = self.hex if rules.is_hex(value) else self.b64
            # n symbols carry at most log2(n) bits: skip what cannot pass before counting
            if len(value) <= 2 ** plugin.entropy_limit or \
                    plugin.calculate_shannon_entropy(value) <= plugin.entropy_limit:
                continue
            i = bisect_right(starts, m.start()) - 1
            col = m.start(2) - starts[i]
            line = norm[starts[i]:starts[i + 1] - 1 if i + 1 < len(starts) else len(norm)]
            if (self.h.is_likely_id_string(value, line, plugin)
                    or rules.looks_like_git_or_digest(value, line[:col])):
                continue
            yield i, col, col + len(value), "high-entropy string", value, ""

    def keep(self, value: str) -> bool:
        """detect-secrets' value filters (as its default scan applies them) and our placeholders."""
        h = self.h
        return not (h.is_sequential_string(value) or h.is_potential_uuid(value) or h.is_templated_secret(value)
                    or h.is_prefixed_with_dollar_sign(value) or h.is_not_alphanumeric_string(value)
                    or rules.is_placeholder(value))


# The keyword plugin's regexes backtrack quadratically on long lines full of keywords (8 s for an
# 80 KB line of ``password: `x...``). A line up to _LONG_LINE characters is given to it whole, as
# detect-secrets would; a longer one (minified JSON, a pasted blob) in windows around each secret
# word, at most _KEYWORD_WINDOWS per text. Our own assignment rule still reads every name.
_LONG_LINE = 2000
_KEYWORD_WINDOWS = 200


def _windows(line: str, names: list[tuple[int, int, str]], budget: list[int]) -> list[tuple[int, str]]:
    if len(line) <= _LONG_LINE:
        return [(0, line)]
    out = []
    for start, end, _ in names:
        if budget[0] <= 0:
            break
        budget[0] -= 1
        left = max(start - 200, 0)
        out.append((left, line[left:end + 400]))
    return out


@lru_cache(maxsize=1)
def _engine() -> _Engine:
    return _Engine()


# -- scanning ----------------------------------------------------------------------------------

def _redact(label: str, value: str) -> str:
    return f"{label}{value[:min(6, len(value) // 4)]}…"


def _line_index(starts: list[int], positions: Iterable[int]) -> list[int]:
    return sorted({bisect_right(starts, p) - 1 for p in positions})


def _hint_positions(norm: str, low: str) -> list[int]:
    """Where a secret word starts (str.find on the lowered text beats an IGNORECASE regex 10x)."""
    if len(low) != len(norm):       # lowering changed offsets (rare letters such as U+0130)
        return [m.start() for m in rules.ASSIGNMENT_HINT.finditer(norm)]
    found = []
    for word in rules.HINT_WORDS:
        at = low.find(word)
        while at >= 0:
            found.append(at)
            at = low.find(word, at + len(word))
    return found


def _scan_lines(text: str) -> list[tuple[int, str, str]]:
    """(0-based line, kind, excerpt) for every credential in ``text``, one per line and kind."""
    engine = _engine()
    norm = normalise(text)
    low = norm.lower()
    active = [r for r in engine.rules if r.trigger is not None and r.trigger(norm, low)]
    hints = _hint_positions(norm, low)
    quoted = engine.quoted.search(norm) is not None
    if not (active or hints or quoted):
        return []
    lines = norm.split("\n")
    starts, offset = [], 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    # every line a whole-text match touches: a leading \s may start it on the line before
    vendor = [at for r in active for m in r.whole.finditer(norm) for at in (m.start(), max(m.end() - 1, 0))]
    vendor = [i for first, last in zip(vendor[::2], vendor[1::2])
              for i in range(bisect_right(starts, first) - 1, bisect_right(starts, last))]
    keyword_index = _line_index(starts, hints)
    hits = [*engine.vendor_hits(lines, active, sorted(set(vendor)), keyword_index),
            *engine.assignment_hits(lines, keyword_index),
            *(engine.entropy_hits(norm, starts) if quoted else ())]
    by_line: dict[int, list[tuple]] = {}
    for hit in sorted((h for h in hits if engine.keep(h[4])), key=lambda h: (h[0], h[1])):
        by_line.setdefault(hit[0], []).append(hit)
    found: dict[tuple[int, str], str] = {}
    for i, line_hits in by_line.items():
        for _, start, end, kind, value, label in line_hits:
            rank = _RANK.get(kind, 0)
            if (i, kind) in found or any(h[1] < end and start < h[2] and _RANK.get(h[3], 0) < rank
                                         for h in line_hits):
                continue    # one per line and kind; a value with a more specific name is reported by it
            found[(i, kind)] = _redact(label, value)
    return [(i, kind, excerpt) for (i, kind), excerpt in found.items()]


def scan(text: str, *, field: str = "body") -> list[Finding]:
    """Credentials found in ``text``, one finding per line and kind, in line order."""
    return [Finding(kind, i + 1, excerpt, field) for i, kind, excerpt in _scan_lines(text)] if text else []


def scan_fields(fields: Iterable[tuple[str, str]]) -> list[Finding]:
    """Scan named text fields (``("title", ...)``, ``("evidence.0", ...)``); findings name their field.

    The fields are scanned as one text (no rule crosses a line), so a fragment with a dozen
    short fields costs one scan, not a dozen.
    """
    fields = [(name, text) for name, text in fields if text]
    firsts, count = [], 0
    for _, text in fields:
        firsts.append(count)
        count += text.count("\n") + 1
    findings = []
    for i, kind, excerpt in _scan_lines("\n".join(text for _, text in fields)) if fields else ():
        n = bisect_right(firsts, i) - 1
        findings.append(Finding(kind, i - firsts[n] + 1, excerpt, fields[n][0]))
    return findings


_GIT_ID = re.compile(r"[0-9a-fA-F]{7,64}")


def content_fields(content: Any) -> list[tuple[str, str]]:
    """Every free-text field of a ``workbench.models.Content``, named for findings.

    A source's ``commit`` is a git object id: it is scanned only when it is not one.
    """
    fields: list[tuple[str, str]] = [("title", content.title), ("body", content.body)]
    for name, value in content.details:
        if isinstance(value, str):
            fields.append((name, value))
        elif isinstance(value, (list, tuple)):
            fields.extend((f"{name}.{n}", str(item)) for n, item in enumerate(value))
        elif value is not None:
            fields.append((name, str(value)))
    fields.extend((f"tags.{n}", tag) for n, tag in enumerate(content.tags))
    fields.extend((f"links.{n}", link) for n, link in enumerate(content.links))
    for n, source in enumerate(content.sources):
        fields.append((f"sources.{n}.path", source.path))
        if source.repo:
            fields.append((f"sources.{n}.repo", source.repo))
        if source.commit and not _GIT_ID.fullmatch(source.commit):
            fields.append((f"sources.{n}.commit", source.commit))
    return fields


def scan_content(content: Any) -> list[Finding]:
    """Scan title, body, anti-pattern details (dont/why/instead/evidence), tags, links and sources."""
    return scan_fields(content_fields(content))
