"""Fragment bodies placed under an item heading: their own headings demoted below it.

A fragment body is markdown with its own ``## Context`` / ``## Rules`` sections. Pasted under
``### Title`` in AGENTS.md they would become siblings of the file's own sections, and an agent
reading the outline would see ``Context`` beside ``Do not``. ``demote(body, level)`` shifts every
heading of a body so that the shallowest sits at ``level + 1``; one that would go past ``######``
becomes a bold line. It follows CommonMark's block structure where a heading can hide or be
faked: fenced code (``` and ~~~ of any length, inside lists and quotes), indented code, raw HTML
blocks, block quotes and list items, lazy continuation lines; setext headings (a paragraph
underlined with ``===`` or ``---``) become ATX headings at the new level. A body that leaves a
fence or an HTML block open is closed, so it cannot swallow the items that follow it.

Pure text in, text out: no parser dependency and no I/O (the tests check the output with
markdown-it-py and mistletoe, two independent CommonMark parsers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_QUOTE = re.compile(r" {0,3}> ?")
_MARKER = re.compile(r" {0,3}([-+*]|[0-9]{1,9}[.)])(?= |$)")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)$")
_ATX = re.compile(r" {0,3}#{1,6}(?=[ \t]|$)")
_THEMATIC = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_BLOCK_TAGS = ("address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|"
               "dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h1|h2|h3|h4|h5|h6|head|header|"
               "hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|"
               "section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul")
# CommonMark HTML blocks that hide headings until an end marker (kinds 1-5): start, end, what closes it
_HTML = [
    (re.compile(r" {0,3}<(pre|script|style|textarea)(?:[ \t>]|$)", re.I),
     re.compile(r"</(?:pre|script|style|textarea)>", re.I), None),
    (re.compile(r" {0,3}<!--"), re.compile(r"-->"), "-->"),
    (re.compile(r" {0,3}<\?"), re.compile(r"\?>"), "?>"),
    (re.compile(r" {0,3}<![A-Za-z]"), re.compile(r">"), ">"),
    (re.compile(r" {0,3}<!\[CDATA\["), re.compile(r"\]\]>"), "]]>"),
]
# Kinds 6 (a block-level tag) and 7 (any other lone tag; it cannot interrupt a paragraph) run to the
# next blank line. Parsers disagree on their edges, so a heading-like line inside one is demoted all the
# same (harmless to raw HTML): it hides fence openers, not headings.
_HTML_BREAK = re.compile(rf" {{0,3}}</?(?:{_BLOCK_TAGS})(?:[ \t]|/?>|$)", re.I)
_ATTRIBUTE = r"""(?:[ \t]+[A-Za-z_:][A-Za-z0-9_.:-]*(?:[ \t]*=[ \t]*(?:[^ \t"'=<>`]+|'[^']*'|"[^"]*"))?)"""
_HTML_TAG = re.compile(rf" {{0,3}}(?:<[A-Za-z][A-Za-z0-9-]*{_ATTRIBUTE}*[ \t]*/?>|</[A-Za-z][A-Za-z0-9-]*[ \t]*>)"
                       r"[ \t]*$")


@dataclass
class _Heading:
    start: int      # first line (a setext heading spans start..end)
    end: int
    level: int
    offset: int     # column of the heading's content in the (tab-expanded) first line
    quote: str      # the block-quote prefix, for the blank lines around a bold line
    text: str
    in_html: bool = False  # a heading-like line inside a raw HTML block (not a heading to parsers)


@dataclass
class _Open:
    """A fenced code or HTML block still open, and the container it lives in."""
    depth: int      # block-quote depth
    col: int        # list content column (relative to the quote prefix), 0 outside lists
    fence: tuple[str, int] | None = None   # (character, length), or None for an HTML block
    html_end: re.Pattern | None = None     # None for HTML kinds 6 and 7: they end at a blank line
    close: str = ""  # what to append if the body ends inside it


def _quotes(line: str, limit: int = 99) -> tuple[int, int]:
    """How many block-quote markers (at most ``limit``) open ``line``, and where its content starts."""
    depth, pos = 0, 0
    while depth < limit and (m := _QUOTE.match(line, pos)):
        depth, pos = depth + 1, m.end()
    return depth, pos


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


def _hashes(s: str) -> int:
    return len(s.lstrip(" ")) - len(s.lstrip(" ").lstrip("#"))


def _atx_text(s: str) -> str:
    rest = s.lstrip(" ").lstrip("#").strip()
    return re.sub(r"(?:^|[ \t])#+[ \t]*$", "", rest).strip()


def _list_item(s: str, para_open: bool) -> tuple[int, str] | None:
    """(content column, content) when ``s`` starts a list item that may start here."""
    m = _MARKER.match(s)
    if not m or _THEMATIC.match(s):
        return None
    rest = s[m.end():]
    empty = not rest.strip()
    if para_open and (empty or (m.group(1)[0].isdigit() and int(m.group(1)[:-1]) != 1)):
        return None  # an empty item, or an ordered one not starting at 1, cannot interrupt a paragraph
    spaces = _indent(rest)
    width = 1 if empty or spaces > 4 else spaces
    return m.end() + width, rest[width:]


def _html_start(s: str):
    for start, end, close in _HTML:
        if start.match(s):
            return end, close
    return None


def _fence_open(s: str) -> re.Match | None:
    m = _FENCE.match(s)
    return None if m is None or (m.group(1)[0] == "`" and "`" in m.group(2)) else m


def _starts_block(s: str, para_open: bool) -> bool:
    """Would ``s`` (indented less than 4) start a block rather than continue a paragraph lazily?"""
    return bool(_ATX.match(s) or _fence_open(s) or _THEMATIC.match(s) or s.lstrip(" ").startswith(">")
                or _list_item(s, para_open) or _html_start(s) or _HTML_BREAK.match(s))


def _scan(lines: list[str]) -> tuple[list[_Heading], list[str]]:
    """The headings of a markdown text, and the lines that close a block it leaves open."""
    heads: list[_Heading] = []
    lists: list[int] = []           # content columns of the open list items, innermost last
    empty_item = False              # the innermost item has no content yet (a blank line then ends it)
    depth = 0                       # block-quote depth of the current containers
    block: _Open | None = None      # an open fence or HTML block
    para: dict | None = None        # the open paragraph: start line, container, first offset, texts
    for i, raw in enumerate(lines):
        line = raw.expandtabs(4)
        if block is not None:
            d, pos = _quotes(line, block.depth)
            inner = line[pos:] if d >= block.depth else ""
            ended = d < block.depth or (inner.strip() and block.col and _indent(inner) < block.col)
            if not ended:
                content = inner[block.col:] if _indent(inner) >= block.col else inner.lstrip(" ")
                if block.fence:
                    m = _FENCE.match(content)
                    if m and m.group(1)[0] == block.fence[0] and len(m.group(1)) >= block.fence[1] \
                            and not m.group(2).strip():
                        block = None
                elif block.html_end is None:
                    if not content.strip():
                        block = None
                    elif _ATX.match(content):  # see _HTML_BREAK
                        heads.append(_Heading(i, i, _hashes(content), line.index("#", pos), line[:pos] if d else "",
                                              _atx_text(content), in_html=True))
                elif block.html_end.search(content):
                    block = None
                continue
            block = None  # its container closed: so did it
        d, pos = _quotes(line)
        body = line[pos:]
        blank = not body.strip()
        if para is not None and not blank and d <= depth and (d < depth or (lists and _indent(body) < lists[-1])):
            inside = [c for c in lists if c <= _indent(body)] if d == depth else []
            probe = body[inside[-1]:] if inside else body  # the line in the container it still belongs to
            if not _starts_block(probe if _indent(probe) < 4 else "x", False):
                para["texts"].append(body.strip())  # a lazy continuation line
                continue
        if d != depth:  # a quote opens or closes: lists inside quotes are not tracked across it
            depth, lists, para = d, [], None
        if blank:
            para = None
            if empty_item and lists:
                lists.pop()
            empty_item = False
            continue
        empty_item = False
        while lists and _indent(body) < lists[-1]:
            lists.pop()
            para = None
        col = lists[-1] if lists else 0
        content, base = body[col:], pos + col
        while True:
            ctx = (depth, len(lists))
            if _indent(content) >= 4:
                if para is not None and para["ctx"] == ctx:
                    para["texts"].append(content.strip())
                break  # indented code, or a paragraph's continuation
            setext = _SETEXT.match(content)
            if setext and para is not None and para["ctx"] == ctx:
                level = 1 if setext.group(1)[0] == "=" else 2
                heads.append(_Heading(para["start"], i, level, para["offset"], line[:pos] if depth else "",
                                      " ".join(para["texts"])))
                para = None
                break
            if _THEMATIC.match(content):
                para = None
                break
            if content.lstrip(" ").startswith(">"):  # a block quote inside a list item
                _, qpos = _quotes(content)
                base, content, para = base + qpos, content[qpos:], None
                continue
            item = _list_item(content, para is not None and para["ctx"] == ctx)
            if item:
                width, rest = item
                lists.append(col + width)
                col, base, content, para = col + width, base + width, rest, None
                if not rest.strip():
                    empty_item = True
                    break
                continue
            if _ATX.match(content):
                offset = line.index("#", base)
                heads.append(_Heading(i, i, _hashes(content), offset, line[:pos] if depth else "", _atx_text(content)))
                para = None
                break
            fence = _fence_open(content)
            if fence:
                block = _Open(depth, col, fence=(fence.group(1)[0], len(fence.group(1))),
                              close=fence.group(1)[0] * len(fence.group(1)))
                para = None
                break
            html = _html_start(content)
            if html:
                end, close = html
                if not end.search(content):
                    if close is None:  # <pre>, <script>...: closed by the tag it opened
                        close = "</" + re.match(r" {0,3}<([A-Za-z]+)", content).group(1).lower() + ">"
                    block = _Open(depth, col, html_end=end, close=close)
                para = None
                break
            if _HTML_BREAK.match(content) or (_HTML_TAG.match(content) and not (para and para["ctx"] == ctx)):
                block = _Open(depth, col)
                para = None
                break
            if para is not None and para["ctx"] == ctx:
                para["texts"].append(content.strip())
            else:
                para = {"start": i, "ctx": ctx, "offset": base + _indent(content), "texts": [content.strip()]}
            break
    tail: list[str] = []
    if block is not None and block.depth == 0 and block.col == 0 and block.close:  # kinds 6, 7 end at our blank
        tail.append(block.close)
    return heads, tail


def demote(text: str, level: int) -> str:
    """``text`` with every heading moved below ``level`` (1-6), keeping their relative depth."""
    lines = text.split("\n")
    heads, tail = _scan(lines)
    if tail:
        lines = [*lines, *tail]
    if not heads:
        return "\n".join(lines)
    shift = max(0, level + 1 - min(h.level for h in heads))
    if shift == 0:
        return "\n".join(lines)
    replaced: dict[int, list[str]] = {}
    for h in heads:
        first = lines[h.start].expandtabs(4)
        new = h.level + shift
        if new <= 6:
            replaced[h.start] = [first[:h.offset] + "#" * new + (f" {h.text}" if h.text else "")]
        elif h.in_html:  # inside raw HTML: no blank line may end the block early
            replaced[h.start] = [first[:h.offset] + f"**{h.text}**" if h.text else first[:h.offset]]
        elif h.text:  # deeper than markdown goes: a bold line, set apart so it stays a paragraph of its own
            replaced[h.start] = [h.quote.rstrip(), first[:h.offset] + f"**{h.text}**", h.quote.rstrip()]
        else:
            replaced[h.start] = [h.quote.rstrip()]
        for j in range(h.start + 1, h.end + 1):  # a setext heading's other lines and its underline
            replaced[j] = []
    out: list[str] = []
    for i, line in enumerate(lines):
        out.extend(replaced.get(i, [line]))
    return "\n".join(out)
