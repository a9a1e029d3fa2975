"""Secret guard: find credentials in fragment text before anything is stored.

Detects private keys, cloud access keys, well-known token formats and passwords in
connection strings. Placeholders (``<password>``, ``{{password}}``, ``${DB_PASSWORD}``,
``****``, ``changeme``...) are not secrets. Pure: text in, findings out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    kind: str
    line: int       # 1-based, within the text scanned
    excerpt: str    # redacted

    def describe(self) -> str:
        return f"line {self.line}: {self.kind} ({self.excerpt})"


_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private key", re.compile(r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY(?: BLOCK)?-----")),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    ("AWS secret access key", re.compile(r"(?i)aws_?secret_?access_?key\s*[:=]\s*['\"]?([A-Za-z0-9/+=]{40})\b")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("GitHub token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{22,}\b")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("Stripe secret key", re.compile(r"\b[sr]k_live_[0-9A-Za-z]{20,}\b")),
    ("JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b")),
    ("password in a connection string",
     re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@'\"]+:(?P<secret>[^\s@/'\"]{3,})@[^\s'\"]+", re.I)),
    ("password assignment",
     re.compile(r"(?i)\b(?:password|passwd|pwd|secret|api_?key|access_?token|auth_?token)\b\s*[:=]\s*"
                r"['\"](?P<secret>[^'\"\s]{8,})['\"]")),
]

_PLACEHOLDER = re.compile(
    r"^(?:<[^>]*>|\{\{.*\}\}|\$\{[^}]*\}|\$[A-Z_][A-Z0-9_]*|%\([^)]*\)s|\*+|x+|\.\.\.|redacted|changeme|example|"
    r"password|secret|placeholder|your[-_].*|xxx.*|dummy.*|fake.*|test.*|<redacted>)$", re.I)


def _redact(text: str) -> str:
    text = text.strip()
    return text[:6] + "…" if len(text) > 6 else "…"


def scan(text: str) -> list[Finding]:
    """Credentials found in ``text``, one finding per line and kind."""
    findings: list[Finding] = []
    for number, line in enumerate(text.splitlines(), start=1):
        for kind, pattern in _PATTERNS:
            for match in pattern.finditer(line):
                secret = match.groupdict().get("secret") or match.group(0)
                if _PLACEHOLDER.match(secret):
                    continue
                findings.append(Finding(kind, number, _redact(match.group(0))))
                break
    return findings
