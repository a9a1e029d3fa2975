"""Reproducible bundles: fragments.jsonl (each fragment with its full version history) and
manifest.yaml (the set's definition, the pins in force for it, model and chunker versions,
creation time, checksum). The format is documented by ``schemas/bundle-manifest.schema.json``
and ``schemas/bundle-record.schema.json``; ``read`` refuses a manifest that does not follow it.

Byte-identical for the same workspace state: records and pins are sorted, JSON is canonical,
and the creation time is the newest version time in the bundle, not the clock. This module
reads and writes files only: what a bundle's content may do to a workspace is decided by
``ingest/bundles.py`` and the policy.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from ..errors import UserError
from ..inert import inert
from ..models import Fragment, Version

FORMAT_VERSION = 1
MAX_BUNDLE_BYTES = 2 * 1024 ** 3  # a bundle larger than this is not a knowledge base


def _ts(value) -> str | None:
    """Full precision: a bundle round trip loses nothing."""
    return None if value is None else value.isoformat() + "Z"


def record(f: Fragment, versions: list[Version]) -> dict[str, Any]:
    return {
        "id": f.id, "version": f.version, "content_hash": f.content_hash, "owner": f.owner,
        "scope": f.scope.to_dict(), "kind": f.kind, "title": f.title, "status": f.status,
        "sources": [s.to_dict() for s in f.sources], "text": f.body,
        "created_at": _ts(f.created_at), "updated_at": _ts(f.updated_at), "verified_at": _ts(f.verified_at),
        "versions": [{"version": v.number, "author": v.author, "created_at": _ts(v.created_at), "reason": v.reason,
                      "content_hash": v.content_hash, "content": v.content.to_dict()} for v in versions],
    }


def pin_record(pin: dict[str, Any]) -> dict[str, Any]:
    """A pin (a row of ``Store.pins``) as the manifest carries it; who pinned it is a claim."""
    return {"id": pin["fragment_id"], "scope": pin["scope"], "pinned_by": pin["pinned_by"],
            "pinned_at": _ts(pin["pinned_at"]), "reason": pin["reason"], "until": _ts(pin["until"])}


def write(out: Path, records: list[dict[str, Any]], definition: dict[str, Any], *, model: str, chunker: str,
          force: bool = False, pins: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Write fragments.jsonl and manifest.yaml together (``export.writer``: both appear at once in a
    new or empty folder; with ``force``, the manifest, which holds the checksum, is replaced last).
    ``pins`` are ``pin_record`` dicts."""
    from .writer import check_folder, write_tree

    check_folder(out, force=force)
    records = sorted(records, key=lambda r: r["id"])
    pins = sorted(pins or [], key=lambda p: (p["id"], p["scope"]))
    # inert JSON: C1 and bidi characters escaped as \\uXXXX, the same values (one record a line, whatever the text)
    data = "".join(inert(json.dumps(r, sort_keys=True, ensure_ascii=False, separators=(",", ":"))) + "\n"
                   for r in records)
    checksum = hashlib.sha256(data.encode("utf-8")).hexdigest()
    created = max((v["created_at"] for r in records for v in r["versions"]), default=None)
    manifest = {"format": FORMAT_VERSION, "set": definition, "fragments": len(records),
                "model": model, "chunker": chunker, "created_at": created, "pins": pins,
                "checksum": {"algorithm": "sha256", "file": "fragments.jsonl", "value": checksum}}
    write_tree(out, [("fragments.jsonl", data),
                     ("manifest.yaml", yaml.safe_dump(manifest, sort_keys=True, allow_unicode=True))], force=force)
    return manifest


def read(folder: Path) -> tuple[dict[str, Any], list[Any]]:
    """Manifest (checked against its schema) and records, after checking the checksum; refuses
    anything inconsistent. The records are untrusted until ``ingest/bundles.py`` has checked each one."""
    from ..errors import ValidationError
    from ..safeyaml import load as safe_load
    from ..schemas import plain_yaml, validate

    manifest_path, data_path = folder / "manifest.yaml", folder / "fragments.jsonl"
    if not manifest_path.is_file() or not data_path.is_file():
        raise UserError(f"{folder} is not a bundle (needs manifest.yaml and fragments.jsonl)")
    if data_path.stat().st_size > MAX_BUNDLE_BYTES:
        raise UserError(f"{data_path}: larger than {MAX_BUNDLE_BYTES} bytes; not imported")
    try:
        manifest = safe_load(manifest_path.read_text(encoding="utf-8"), file=str(manifest_path))
        expected = manifest["checksum"]["value"]
        if manifest.get("format") != FORMAT_VERSION or not isinstance(expected, str):
            raise ValueError(f"format {manifest.get('format')!r}; this workbench reads format {FORMAT_VERSION}")
    except ValidationError as e:
        raise UserError(f"not a bundle manifest: {e.message}") from e
    except (UnicodeDecodeError, KeyError, TypeError, ValueError, AttributeError) as e:
        raise UserError(f"{manifest_path}: not a bundle manifest ({e})") from e
    try:
        validate("bundle-manifest", plain_yaml(manifest), file=str(manifest_path))
    except ValidationError as e:
        raise UserError(f"{folder}: bundle refused, nothing imported: {e.message}") from e
    raw = data_path.read_bytes()
    if hashlib.sha256(raw).hexdigest() != expected:
        raise UserError(f"{folder}: checksum mismatch: fragments.jsonl does not match manifest.yaml; nothing imported")
    try:
        records = [json.loads(line) for line in raw.decode("utf-8").split("\n") if line.strip()]
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise UserError(f"{data_path}: unreadable ({type(e).__name__}: {str(e)[:200]})") from e
    return manifest, records
