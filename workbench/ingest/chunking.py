"""Chunkers for repository files: markdown on headings (keeping the heading path), Python
on ast function/class boundaries (with a path::symbol header), other text on blank-line
blocks; long pieces are windowed with overlap. Pure: text in, chunks out.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

CHUNKER_VERSION = "git-chunker-v1"
MAX_LINES = 60      # a chunk longer than this is windowed
OVERLAP = 5         # lines shared by consecutive windows, and carried over between text blocks

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Chunk:
    symbol: str        # heading path ("Setup > Local") or python symbol ("Ledger.post") or "lines 1-40"
    start: int         # 1-based, inclusive
    end: int
    text: str


def _windows(lines: list[str], start: int, symbol: str) -> list[Chunk]:
    if len(lines) <= MAX_LINES:
        return [Chunk(symbol, start, start + len(lines) - 1, "\n".join(lines))] if any(l.strip() for l in lines) else []
    out, step = [], MAX_LINES - OVERLAP
    for offset in range(0, len(lines), step):
        part = lines[offset:offset + MAX_LINES]
        if any(l.strip() for l in part):
            out.append(Chunk(f"{symbol} (part {len(out) + 1})", start + offset, start + offset + len(part) - 1,
                             "\n".join(part)))
        if offset + MAX_LINES >= len(lines):
            break
    return out


def chunk_markdown(text: str, title: str) -> list[Chunk]:
    lines = text.splitlines()
    chunks: list[Chunk] = []
    stack: list[tuple[int, str]] = []
    begin, in_fence = 0, False
    path = title

    def flush(until: int) -> None:
        chunks.extend(_windows(lines[begin:until], begin + 1, path))

    for i, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match and i > begin:
            flush(i)
            begin = i
        if match:
            level = len(match.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, match.group(2)))
            path = " > ".join([title] + [h for _, h in stack])
    flush(len(lines))
    return chunks


def chunk_python(text: str) -> list[Chunk]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return chunk_text(text)
    lines = text.splitlines()
    chunks: list[Chunk] = []
    covered: set[int] = set()
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        end = node.end_lineno or node.lineno
        covered.update(range(start, end + 1))
        if isinstance(node, ast.ClassDef) and end - start + 1 > MAX_LINES:
            header_end = min([m.lineno for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
                             or [end + 1]) - 1
            chunks.extend(_windows(lines[start - 1:header_end], start, node.name))
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    m_start = min([member.lineno] + [d.lineno for d in member.decorator_list])
                    chunks.extend(_windows(lines[m_start - 1:member.end_lineno], m_start,
                                           f"{node.name}.{member.name}"))
        else:
            chunks.extend(_windows(lines[start - 1:end], start, node.name))
    rest = [i for i in range(1, len(lines) + 1) if i not in covered and lines[i - 1].strip()]
    if rest:
        first, last = rest[0], rest[-1]
        module = [lines[i - 1] if i not in covered else "" for i in range(first, last + 1)]
        body = [line for line in module]
        chunks.insert(0, Chunk("module", first, last, "\n".join(body).strip("\n")))
    return sorted(chunks, key=lambda c: c.start)


def chunk_text(text: str) -> list[Chunk]:
    """Blank-line blocks, merged up to MAX_LINES, each window starting with the last
    OVERLAP lines of the previous one."""
    lines = text.splitlines()
    blocks: list[tuple[int, int]] = []
    start = None
    for i, line in enumerate(lines + [""]):
        if line.strip() and start is None:
            start = i
        elif not line.strip() and start is not None:
            blocks.append((start, i - 1))
            start = None
    chunks: list[Chunk] = []
    group_start = group_end = None
    for b_start, b_end in blocks:
        if group_start is not None and b_end - group_start + 1 > MAX_LINES:
            chunks.append(Chunk(f"lines {group_start + 1}-{group_end + 1}", group_start + 1, group_end + 1,
                                "\n".join(lines[group_start:group_end + 1])))
            group_start = max(group_end - OVERLAP + 1, group_start + 1) if b_end - b_start + 1 < MAX_LINES else b_start
        if group_start is None:
            group_start = b_start
        group_end = b_end
    if group_start is not None:
        chunks.extend(_windows(lines[group_start:group_end + 1], group_start + 1,
                               f"lines {group_start + 1}-{group_end + 1}"))
    return chunks


def chunk_file(path: str, text: str) -> list[Chunk]:
    name = path.rsplit("/", 1)[-1]
    if name.lower().endswith((".md", ".markdown")):
        return chunk_markdown(text, name.rsplit(".", 1)[0])
    if name.endswith(".py"):
        return chunk_python(text)
    return chunk_text(text)
