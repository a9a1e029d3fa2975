"""Text written by someone else, made inert before it is shown: the one sanitiser of every face.

Titles, bodies, reasons, questions, owners, tags and ids come from other principals and from
agents, and so do error messages that echo them. Shown raw, such text can attack the reader's
terminal: ``ESC[2J`` clears the screen, an OSC sequence retitles the window or writes the
clipboard, a carriage return overwrites what the line said, and a right-to-left override makes
``txt.exe`` read as ``exe.txt``. ``inert`` shows every such character visibly instead, as the six
characters ``\\u001b`` (``\\u`` and four lowercase hex digits): C0 controls except tab and newline,
DEL, C1 controls, Unicode's Bidi_Control characters (embeddings and overrides U+202A-U+202E,
isolates U+2066-U+2069, the marks U+200E, U+200F, U+061C) and lone surrogates. ``\\r\\n`` becomes
``\\n``. An escape sequence is left with no control character in it (its ESC and its BEL or ST
terminator are shown escaped), so the whole sequence reads as plain text and does nothing.

Shown, not removed: a reviewer sees that the text carried something, and what. The form is also
JSON's own escape, so ``inert`` applied to JSON text keeps it valid and exactly equal in value
(the CLI's ``--json`` output and JSON log lines go through it unchanged in meaning). Applying it
twice changes nothing more; text without such characters comes back as the same object.

It never changes what is stored: faces call it on the way out. It must stay pure, small and
fast (one precompiled search on every rendered string), and import nothing of workbench.
"""

from __future__ import annotations

import re

# C0 but tab and newline; DEL and C1; Bidi_Control; surrogates (only lone ones exist in a str).
_UNSAFE_CLASS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE = re.compile(f"\r\n|[{_UNSAFE_CLASS}]")
_FOUND = re.compile(f"[{_UNSAFE_CLASS}]").search


def _visible(match: re.Match) -> str:
    found = match.group()
    return "\n" if found == "\r\n" else f"\\u{ord(found):04x}"


def inert(text: str) -> str:
    """``text`` with every control, bidi-control and lone-surrogate character shown as ``\\uXXXX``
    (``\\r\\n`` as ``\\n``); ``text`` itself when it has none."""
    if _FOUND(text) is None:
        return text
    return _UNSAFE.sub(_visible, text)


def is_inert(text: str) -> bool:
    """Whether ``text`` has nothing ``inert`` would change."""
    return _FOUND(text) is None
