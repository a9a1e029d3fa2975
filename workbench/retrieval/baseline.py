"""The knowledge-CI baseline file: written atomically, read back checked.

Format 2 holds, per golden query, its top-k ids, recall@10, the rank of its first relevant hit
and of every relevant fragment (up to the ranking depth of 100), whether context abstained and
which fragments it served; plus the overall metrics, the clock the queries were ranked at, and
``fragments``: what the baseline knew of each fragment it names (owner, scope, status, and for a
fragment that answers a golden query its length in words and a sketch of its body,
rank/retention.py). That record lets ``check`` name a fragment that has since been deleted (its
owner, to a reader who could see it) and tell a body rewritten into something else. Format 1
(no abstention, no records) is still read; ``check`` then says which checks it could not make.

This module reads and writes the file and judges nothing.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from datetime import UTC
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..models import Scope
from ..rank.retention import is_sketch

FORMAT = "workbench-check-baseline"
VERSION = 2
READS = (1, 2)
UPDATE_HINT = "run `workbench check --update-baseline` first"
MAX_BYTES = 64 * 1024 ** 2  # a baseline of 100,000 queries is about 40 MB


def baseline_data(entries: list[dict[str, Any]], metrics: dict[str, Any], *, golden: str, k: int,
                  ranked_at: str, pipeline: str, fragments: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "golden": golden, "pipeline": pipeline, "k": k,
            "ranked_at": ranked_at, "metrics": metrics, "queries": entries,
            "fragments": {fid: fragments[fid] for fid in sorted(fragments)}}


def write_baseline(path: Path, data: dict[str, Any]) -> None:
    """Write the baseline atomically: a temporary file in the same folder, then a rename over the old one."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                         suffix=".tmp", delete=False) as f:
            tmp = Path(f.name)
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise UserError(f"cannot write the baseline {path}: {e.strerror or e}") from e
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


def read_baseline(path: Path) -> dict[str, Any]:
    """The baseline at ``path``, checked: a clear error for a missing, unreadable, corrupt or foreign file."""
    again = "run `workbench check --update-baseline` to write a new one"
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise UserError(f"no baseline at {path}: {UPDATE_HINT}") from None
    except OSError as e:
        raise UserError(f"cannot read the baseline {path}: {e.strerror or e}") from e
    if len(raw) > MAX_BYTES:
        raise UserError(f"{path}: not a check baseline (over {MAX_BYTES // 1024 ** 2} MB); {again}")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise UserError(f"{path}: not a check baseline (not JSON: {_first_line(e)}); {again}") from e
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UserError(f"{path}: not a check baseline (JSON of another kind); {again}")
    if data.get("version") not in READS or isinstance(data.get("version"), bool):
        raise UserError(f"{path}: a check baseline of format version {data.get('version')!r} (this workbench "
                        f"reads versions {' and '.join(map(str, READS))}); {again}")
    problem = _problem(data)
    if problem:
        raise UserError(f"{path}: a corrupt check baseline ({problem}); {again}")
    return data


def ranked_at(data: dict[str, Any]):
    """The clock a baseline's queries were ranked at (a naive UTC datetime, as the store keeps them)."""
    from datetime import datetime

    try:
        at = datetime.fromisoformat(data["ranked_at"])
    except ValueError as e:
        raise UserError(f"a corrupt check baseline (ranked_at: {e}); run `workbench check --update-baseline` "
                        "to write a new one") from e
    return at.astimezone(UTC).replace(tzinfo=None) if at.tzinfo else at


def _first_line(e: Exception) -> str:
    return str(e).splitlines()[0][:200] if str(e) else type(e).__name__


def _is_rank(v: Any) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 1)


def _is_ratio(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= 1)


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _problem(data: dict[str, Any]) -> str | None:
    if not isinstance(data.get("metrics"), dict):
        return "metrics: expected an object"
    if not isinstance(data.get("ranked_at"), str):
        return "ranked_at: expected a time"
    queries = data.get("queries")
    if not isinstance(queries, list):
        return "queries: expected a list"
    seen = set()
    for i, q in enumerate(queries):
        problem = _query_problem(q, data["version"])
        if problem:
            return f"queries.{i}{problem}"
        if q["id"] in seen:
            return f"queries.{i}.id: duplicate query id {q['id']!r}"
        seen.add(q["id"])
    return _fragments_problem(data.get("fragments")) if data["version"] >= 2 else None


def _query_problem(q: Any, version: int) -> str | None:
    if not isinstance(q, dict):
        return ": expected an object"
    for key in ("id", "query", "principal"):
        if not isinstance(q.get(key), str):
            return f".{key}: expected a string"
    for key in ("relevant", "top") + (("served",) if version >= 2 else ()):
        if not _strings(q.get(key)):
            return f".{key}: expected a list of ids"
    if not _is_ratio(q.get("recall@10", "missing")):
        return ".recall@10: expected a number from 0 to 1, or null"
    if not _is_rank(q.get("first_relevant", "missing")):
        return ".first_relevant: expected a rank, or null"
    ranks = q.get("relevant_ranks")
    if not isinstance(ranks, dict) or set(ranks) != set(q["relevant"]) or not all(map(_is_rank, ranks.values())):
        return ".relevant_ranks: expected a rank (or null) for each relevant id"
    if version >= 2 and not isinstance(q.get("abstained"), bool):
        return ".abstained: expected true or false"
    return None


def _fragments_problem(fragments: Any) -> str | None:
    if not isinstance(fragments, dict):
        return "fragments: expected an object"
    for fid, record in fragments.items():
        where = f"fragments.{fid}"
        if not isinstance(record, dict):
            return f"{where}: expected an object"
        for key in ("owner", "scope", "status"):
            if not isinstance(record.get(key), str):
                return f"{where}.{key}: expected a string"
        try:
            Scope.parse(record["scope"])
        except UserError:
            return f"{where}.scope: expected a scope (org=ORG[,repo=REPO]...)"
        words = record.get("words")
        if words is not None and (isinstance(words, bool) or not isinstance(words, int) or words < 0):
            return f"{where}.words: expected a count of words"
        if record.get("sketch") is not None and not is_sketch(record["sketch"]):
            return f"{where}.sketch: expected hex digests"
    return None
