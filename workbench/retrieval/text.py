"""Text handling for context: boilerplate stripping and heading-path sections.

Bodies are never paraphrased: these functions only remove boilerplate (HTML comments,
badge images, blank-line runs, trailing spaces) and cut on headings, keeping the path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_BADGE = re.compile(r"^\s*(\[!\[[^\]]*\]\([^)]*\)\]\([^)]*\)\s*|!\[[^\]]*\]\([^)]*\)\s*)+$", re.M)
_BLANKS = re.compile(r"\n{3,}")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@lru_cache(maxsize=4096)  # pure; a context strips ~20 bodies, most of them served before (~3 % of a
def strip_boilerplate(body: str) -> str:  # server's GIL time under load went to these regexes)
    text = _COMMENT.sub("", body)
    text = _BADGE.sub("", text)
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return _BLANKS.sub("\n\n", text).strip()


@dataclass(frozen=True)
class Section:
    path: tuple[str, ...]   # heading path, outermost first (without the fragment title)
    text: str               # the section verbatim, its heading line included

    def heading_path(self, title: str) -> str:
        return " > ".join((title, *self.path))


def sections(body: str) -> list[Section]:
    """Split markdown on headings (not inside code fences), keeping each heading path."""
    out: list[Section] = []
    stack: list[tuple[int, str]] = []
    current: list[str] = []
    path: tuple[str, ...] = ()
    in_fence = False

    def flush() -> None:
        text = "\n".join(current).strip()
        if text:
            out.append(Section(path, text))

    for line in body.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            flush()
            level, title = len(match.group(1)), match.group(2)
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            path = tuple(t for _, t in stack)
            current = [line]
        else:
            current.append(line)
    flush()
    return out
