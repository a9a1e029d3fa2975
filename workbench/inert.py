"""Text written by someone else, made inert before it is shown: the one sanitiser of every face.

Titles, bodies, reasons, questions, owners, tags and ids come from other principals and from
agents, and so do error messages that echo them. Shown raw, such text can attack the reader's
terminal: ``ESC[2J`` clears the screen, an OSC sequence retitles the window or writes the
clipboard, a carriage return overwrites what the line said, and a right-to-left override makes
``txt.exe`` read as ``exe.txt``. Invisible characters attack the reader (and the agent that reads
an exported AGENTS.md, CLAUDE.md, cursor rule or llms.txt) another way: Unicode tag characters
U+E0000-U+E007F spell out whole instructions that no editor shows, and zero-width characters hide
words inside words. ``inert`` shows every such character visibly instead, as the six characters
``\\u001b`` (``\\u`` and four lowercase hex digits): C0 controls except tab and newline, DEL, C1
controls, Unicode's Bidi_Control characters (embeddings and overrides U+202A-U+202E, isolates
U+2066-U+2069, the marks U+200E, U+200F, U+061C), lone surrogates, and the invisible ones: the
tag characters, zero-width space U+200B, word joiner U+2060 and the invisible operators
U+2061-U+2064, the deprecated format characters U+206A-U+206F, the Mongolian vowel separator
U+180E, U+FEFF (a zero-width no-break space; wherever it is: readers strip a file's byte-order
mark before anything is stored, so text that reaches ``inert`` never starts a file with one), the
interlinear annotation characters U+FFF9-U+FFFB, and the line and paragraph separators U+2028 and
U+2029 (a line break to some readers, none to others). A character beyond U+FFFF (a tag) is shown
as JSON writes it, a surrogate pair: U+E0041 as ``\\udb40\\udc41``. ``\\r\\n`` becomes ``\\n``. An
escape sequence is left with no control character in it (its ESC and its BEL or ST terminator are
shown escaped), so the whole sequence reads as plain text and does nothing.

Kept as they are: tab and newline; the zero-width non-joiner U+200C and joiner U+200D, which
Persian, Arabic, the Indic scripts and emoji sequences (a family, a flag with a rainbow) need to be
written at all; variation selectors (emoji presentation); the soft hyphen U+00AD, a hyphenation
hint that shows where it breaks a line.

Shown, not removed: a reviewer sees that the text carried something, and what. The form is also
JSON's own escape, so ``inert`` applied to JSON text keeps it valid and exactly equal in value
(the CLI's ``--json`` output and JSON log lines go through it unchanged in meaning). Applying it
twice changes nothing more; text without such characters comes back as the same object.

It never changes what is stored: faces call it on the way out. It must stay pure, small and
fast (one precompiled search on every rendered string), and import nothing of workbench.
"""

from __future__ import annotations

import re

# C0 but tab and newline; DEL and C1; Bidi_Control; surrogates (only lone ones exist in a str);
# the invisible: Mongolian vowel separator, zero-width space, line and paragraph separators, word
# joiner and invisible operators, deprecated format characters, BOM, interlinear annotations, tags.
_UNSAFE_CLASS = ("\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
                 "\u180e\u200b\u2028\u2029\u2060-\u2064\u206a-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f")
_UNSAFE = re.compile(f"\r\n|[{_UNSAFE_CLASS}]")
_FOUND = re.compile(f"[{_UNSAFE_CLASS}]").search


def _visible(match: re.Match) -> str:
    found = match.group()
    if found == "\r\n":
        return "\n"
    code = ord(found)
    if code > 0xFFFF:  # as JSON escapes it: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def inert(text: str) -> str:
    """``text`` with every control, bidi-control, invisible and lone-surrogate character shown as
    ``\\uXXXX`` (``\\r\\n`` as ``\\n``); ``text`` itself when it has none."""
    if _FOUND(text) is None:
        return text
    return _UNSAFE.sub(_visible, text)


def is_inert(text: str) -> bool:
    """Whether ``text`` has nothing ``inert`` would change."""
    return _FOUND(text) is None
