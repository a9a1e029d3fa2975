"""Context for the work at hand: which fragments govern the files being touched, and why (pure).

Given the repository paths of the work (``--paths``, the files of a diff) and what fragments
record about paths, each candidate gets a **path score** in [0, 1] from its strongest link, and
the **reason** it was chosen. The links, strongest first:

=================  =======================================================  ============================
rule               the fragment ...                                         path score
=================  =======================================================  ============================
``applies``        declares ``applies_to`` globs and one matches the path    0.55 + 0.40 × specificity
``cites``          cites the exact file as a source                          0.90
``ingested``       is a git-ingested chunk of the exact file                 0.80
``cites-dir``      cites a file in the same directory                        0.50
``ingested-dir``   is a git-ingested document (not code) in the directory    0.45
``owner``          is owned (not code) by a CODEOWNERS owner of the path     0.30
=================  =======================================================  ============================

*Specificity* of a glob for a path: its literal segments (a partly literal segment such as
``*.py`` counts one half) over the path's segments, at most 1; an exact file glob scores 0.95,
``services/payments/**`` for ``services/payments/stripe_client.py`` 0.55 + 0.40 × 2/3 ≈ 0.82, ``**``
0.55. Several paths or links: the strongest counts (ties: more linked paths first).

With a query, each candidate (path-linked, or a query hit) is ranked by
``PATH_WEIGHT × path + (1 − PATH_WEIGHT) × relevance`` (relevance: the hit's per-query score in
[0, 1]; 0 for a fragment the query did not find; ``path_weight`` overrides the weight); without
one, by the path score alone.

Globs (``applies_to``): repo-relative POSIX, matched against the whole path; ``**`` (a whole
segment) matches any number of directories, zero included; ``*`` any characters within one
segment; ``?`` one character but ``/``; a trailing ``/`` means everything under the directory.
No absolute globs, no ``..``, no ``[ ] { }`` (write several globs instead).

Paths are normalised: ``./`` and empty segments dropped, ``a/../b`` resolved; an absolute path or
one escaping the repository with ``..`` is an error. This module decides no visibility: it scores
only the candidates it is given (the caller's visible mask, as for any search) and does no I/O.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Mapping, Sequence

from ..errors import UserError

PATH_WEIGHT = 0.6          # weight of the path score against the query's relevance
MAX_PATHS = 2000           # work paths per call
MAX_PATH_CHARS = 1024
MAX_GLOBS = 100            # applies_to globs per fragment
SCORES = {"cites": 0.90, "ingested": 0.80, "cites-dir": 0.50, "ingested-dir": 0.45, "owner": 0.30}
APPLIES_BASE, APPLIES_SPAN = 0.55, 0.40
GLOB_RULE = ("a repo-relative POSIX glob: '**' (a whole segment) for any directories, '*' within one "
             "segment, '?' one character; no leading '/', no '..', no [ ] { }")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")
_GLOB_BAD = re.compile(r"[\[\]{}\\]")


def normalise_path(path: str) -> str:
    """A work path as repository-relative POSIX (``UserError`` for an absolute path, one escaping
    the repository, an empty one or one holding control characters)."""
    if not isinstance(path, str) or not path.strip():
        raise UserError("a path is empty", param="paths")
    text = path.strip()
    if len(text) > MAX_PATH_CHARS or _CONTROL.search(text):
        raise UserError(f"bad path {text[:80]!r}: too long or holds control characters", param="paths")
    if text.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", text):
        raise UserError(f"bad path {text!r}: paths are relative to the repository, not absolute", param="paths")
    parts: list[str] = []
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise UserError(f"bad path {text!r}: it leaves the repository ('..')", param="paths")
            parts.pop()
            continue
        parts.append(part)
    if not parts:
        raise UserError(f"bad path {text!r}: it names the repository itself, not a file in it", param="paths")
    return "/".join(parts)


def normalise_paths(paths: Iterable[str]) -> list[str]:
    """Work paths normalised, duplicates dropped, in the order given."""
    out: dict[str, None] = {}
    for p in paths:
        out[normalise_path(p)] = None
    if len(out) > MAX_PATHS:
        raise UserError(f"too many paths ({len(out)}; at most {MAX_PATHS})", param="paths")
    return list(out)


def glob_problem(glob: object) -> str | None:
    """Why ``glob`` is not a valid ``applies_to`` glob, or None."""
    if not isinstance(glob, str) or not glob.strip():
        return "a glob must be a non-empty string"
    if glob != glob.strip() or len(glob) > MAX_PATH_CHARS or _CONTROL.search(glob):
        return f"{glob[:80]!r}: surrounding spaces, control characters or too long"
    if glob.startswith("/"):
        return f"{glob!r}: globs are relative to the repository (no leading '/')"
    if _GLOB_BAD.search(glob):
        return f"{glob!r}: [ ] {{ }} and backslashes are not supported (write several globs)"
    segments = glob.rstrip("/").split("/")
    for seg in segments:
        if seg in ("", ".", ".."):
            return f"{glob!r}: empty, '.' or '..' segment"
        if "**" in seg and seg != "**":
            return f"{glob!r}: '**' must be a whole segment (like 'a/**/b.py')"
    return None


def check_globs(globs: object, *, where: str = "applies_to") -> tuple[str, ...]:
    """``applies_to`` as validated globs, or ``UserError`` naming the first bad one."""
    if not isinstance(globs, (list, tuple)):
        raise UserError(f"{where}: expected a list of globs ({GLOB_RULE})")
    if len(globs) > MAX_GLOBS:
        raise UserError(f"{where}: at most {MAX_GLOBS} globs")
    for g in globs:
        problem = glob_problem(g)
        if problem:
            raise UserError(f"{where}: bad glob {problem} ({GLOB_RULE})")
    return tuple(globs)


@lru_cache(maxsize=4096)
def _compiled(glob: str) -> re.Pattern[str]:
    text = glob + "**" if glob.endswith("/") else glob
    out, segments = [], text.split("/")
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        body = "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in seg)
        out.append(body if last else body + "/")
    return re.compile("".join(out))


def glob_match(glob: str, path: str) -> bool:
    """True when ``glob`` matches the whole (normalised) ``path`` (the matching rule above)."""
    return _compiled(glob).fullmatch(path) is not None


def specificity(glob: str, path: str) -> float:
    """How much of ``path`` the glob names literally, 0..1 (see the module docstring)."""
    segments = [s for s in glob.rstrip("/").split("/") if s != "**"]
    literal = sum(1.0 if not re.search(r"[*?]", s) else 0.5 if re.sub(r"[*?]", "", s) else 0.0 for s in segments)
    return min(1.0, literal / max(1, path.count("/") + 1))


@dataclass(frozen=True)
class Linked:
    """What links one fragment to paths, as the store records it."""

    id: str
    kind: str
    owner: str
    applies_to: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()   # normalised source paths
    ingested: bool = False          # a git-ingested chunk: its sources are the file it came from


@dataclass(frozen=True)
class PathLink:
    """The strongest link of one fragment to the work's paths."""

    id: str
    score: float
    rule: str
    path: str         # the work path it links to
    reason: str       # "applies to services/payments/**", "cites services/payments/stripe_client.py", ...
    paths: int = 1    # how many of the work's paths it links to

    def to_dict(self) -> dict[str, object]:
        return {"score": round(self.score, 6), "rule": self.rule, "path": self.path, "reason": self.reason,
                "paths": self.paths}


def _directory(path: str) -> str:
    return posixpath.dirname(path)


class PathIndex:
    """The linked fragments of one generation, by exact source path and by directory (pure)."""

    def __init__(self, linked: Iterable[Linked]):
        self.linked: dict[str, Linked] = {}
        self.by_path: dict[str, list[str]] = defaultdict(list)
        self.by_dir: dict[str, list[str]] = defaultdict(list)
        self.by_owner: dict[str, list[str]] = defaultdict(list)
        self.globbed: list[str] = []
        for item in linked:
            self.linked[item.id] = item
            for source in dict.fromkeys(item.sources):
                self.by_path[source].append(item.id)
                self.by_dir[_directory(source)].append(item.id)
            if item.applies_to:
                self.globbed.append(item.id)
            if item.kind != "code":
                self.by_owner[item.owner].append(item.id)

    def links(self, paths: Sequence[str], allowed: Callable[[str], bool],
              owners: Mapping[str, Sequence[str]] | None = None) -> dict[str, PathLink]:
        """Fragment id → its strongest link to ``paths`` (normalised), for the ids ``allowed``
        accepts (the caller's visibility: nothing else is even looked at). ``owners``: path →
        principals CODEOWNERS names for it."""
        best: dict[str, PathLink] = {}
        counted: dict[str, set[str]] = defaultdict(set)

        def offer(fid: str, score: float, rule: str, path: str, reason: str) -> None:
            if not allowed(fid):
                return
            counted[fid].add(path)
            held = best.get(fid)
            if held is None or score > held.score:
                best[fid] = PathLink(fid, score, rule, path, reason)

        for path in paths:
            for fid in self.by_path.get(path, ()):
                item = self.linked[fid]
                if item.ingested:
                    offer(fid, SCORES["ingested"], "ingested", path, f"ingested from {path}")
                else:
                    offer(fid, SCORES["cites"], "cites", path, f"cites {path}")
            folder = _directory(path)
            for fid in self.by_dir.get(folder, ()):
                item = self.linked[fid]
                near = next((s for s in item.sources if _directory(s) == folder and s != path), None)
                if near is None:
                    continue
                if item.ingested and item.kind != "code":
                    offer(fid, SCORES["ingested-dir"], "ingested-dir", path, f"ingested from {near}, next to {path}")
                elif not item.ingested:
                    offer(fid, SCORES["cites-dir"], "cites-dir", path, f"cites {near}, next to {path}")
            for fid in self.globbed:
                matched = [g for g in self.linked[fid].applies_to if glob_match(g, path)]
                if matched:
                    glob = max(matched, key=lambda g: specificity(g, path))
                    offer(fid, APPLIES_BASE + APPLIES_SPAN * specificity(glob, path), "applies", path,
                          f"applies to {glob}")
            for principal in (owners or {}).get(path, ()):
                for fid in self.by_owner.get(principal, ()):
                    offer(fid, SCORES["owner"], "owner", path, f"owned by {principal}, a CODEOWNERS owner of {path}")
        return {fid: PathLink(link.id, link.score, link.rule, link.path, link.reason, len(counted[fid]))
                for fid, link in best.items()}


def combine(path_score: float, relevance: float | None, weight: float = PATH_WEIGHT) -> float:
    """The rank of a candidate: the path score alone without a query (``relevance`` None), else
    ``weight × path + (1 − weight) × relevance``."""
    if relevance is None:
        return path_score
    return weight * path_score + (1.0 - weight) * max(0.0, min(1.0, relevance))


def order(scored: Mapping[str, tuple[float, int]]) -> list[str]:
    """Ids by combined score (then more linked paths, then id)."""
    return sorted(scored, key=lambda fid: (-scored[fid][0], -scored[fid][1], fid))


def check_weight(weight: object) -> float:
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0.0 <= float(weight) <= 1.0:
        raise UserError(f"the path weight must be a number from 0 to 1, not {weight!r}", param="path_weight")
    return float(weight)


__all__ = ["Linked", "PATH_WEIGHT", "PathIndex", "PathLink", "check_globs", "check_weight", "combine",
           "glob_match", "glob_problem", "normalise_path", "normalise_paths", "order", "specificity"]
