"""The persisted base of a workspace's search index: what a fresh process loads instead of
rebuilding (lexical postings, vocabulary, text hashes, vectors memory-mapped).

A snapshot is derived data, a cache: it lives next to the database (``workbench.duckdb.index/``)
and records, for each fragment it covers, the id and content hash it was built from. A process
uses the rows whose (id, content hash) still match and reads the rest from the store, so a
snapshot from an older generation is still useful (the difference becomes the bm25 delta) and a
wrong or foreign one costs only speed. Anything unreadable, malformed or of another format,
model or chunker is ignored (and rebuilt).

Writes are atomic: files go to a fresh ``tmp-*`` folder, are flushed to disk, and the folder is
renamed to ``base-<n>``; ``CURRENT`` (written to a temporary file and renamed over) then names
it. Its files are as readable as the database they derive from (a private workspace's are this
user's alone, 0600; a workspace whose database others may read shares its index with them). A process killed at any point leaves either the old snapshot or the new one, never half of
one; stale folders are swept on the next save. Readers that memory-mapped an old folder keep
their mapping after it is removed (POSIX).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..rank.bm25 import Postings

FORMAT = 1
POSTINGS = ("indptr", "doc", "tf", "lengths")


@dataclass
class Snapshot:
    ids: np.ndarray            # object array of fragment ids, in the base's document order
    content_hashes: np.ndarray
    text_hashes: np.ndarray
    vocabulary: list[str]      # token ids are positions in this list
    postings: Postings
    vectors: np.ndarray | None  # float32 rows in document order (memory-mapped), when saved with them


def folder(db_path: Path) -> Path:
    return Path(db_path).with_name(Path(db_path).name + ".index")


def _meta(model: str, chunker: str) -> dict:
    return {"format": FORMAT, "model": model, "chunker": chunker}


def load(db_path: Path, *, model: str, chunker: str) -> Snapshot | None:
    """The current snapshot, or None when there is none usable."""
    root = folder(db_path)
    try:
        name = (root / "CURRENT").read_text().strip()
        if not name.startswith("base-") or "/" in name or name.startswith("base-."):
            return None
        where = root / name
        meta = json.loads((where / "meta.json").read_text())
        if {k: meta.get(k) for k in ("format", "model", "chunker")} != _meta(model, chunker):
            return None
        docs = json.loads((where / "docs.json").read_text())
        vocabulary = json.loads((where / "vocab.json").read_text())
        # mapped, read as plain array views: np.memmap's subclass hooks cost ~5 µs per slice, and
        # a query slices the postings ~100 times
        arrays = {k: np.asarray(np.load(where / f"{k}.npy", mmap_mode="r", allow_pickle=False)) for k in POSTINGS}
        n = len(docs["ids"])
        postings = Postings(arrays["indptr"], arrays["doc"], arrays["tf"], arrays["lengths"])
        if (len(docs["content"]) != n or len(docs["text"]) != n or postings.n != n
                or postings.vocab_size > len(vocabulary) or not all(isinstance(t, str) for t in vocabulary)):
            return None
        postings.check()
        vectors = None
        if (where / "vectors.npy").is_file():
            vectors = np.load(where / "vectors.npy", mmap_mode="r", allow_pickle=False)
            if vectors.dtype != np.float32 or vectors.ndim != 2 or vectors.shape[0] != n:
                vectors = None
        return Snapshot(np.array(docs["ids"], dtype=object), np.array(docs["content"], dtype=object),
                        np.array(docs["text"], dtype=object), vocabulary, postings, vectors)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save(db_path: Path, snapshot: Snapshot, *, model: str, chunker: str) -> bool:
    """Write ``snapshot`` atomically and make it current; False when it cannot be written."""
    root = folder(db_path)
    file_mode, folder_mode = _modes(db_path)
    try:
        root.mkdir(exist_ok=True)
        os.chmod(root, folder_mode)
        tmp = Path(tempfile.mkdtemp(prefix="tmp-", dir=root))
        os.chmod(tmp, folder_mode)  # readable by whoever may read the workspace
        try:
            _write(tmp / "meta.json", json.dumps({**_meta(model, chunker), "n": int(snapshot.postings.n)}).encode(),
                   file_mode)
            _write(tmp / "docs.json", json.dumps({"ids": snapshot.ids.tolist(),
                                                  "content": snapshot.content_hashes.tolist(),
                                                  "text": snapshot.text_hashes.tolist()}).encode(), file_mode)
            _write(tmp / "vocab.json", json.dumps(snapshot.vocabulary).encode(), file_mode)
            p = snapshot.postings
            for name, array in (("indptr", p.indptr), ("doc", p.doc), ("tf", p.tf), ("lengths", p.lengths)):
                _save_array(tmp / f"{name}.npy", np.ascontiguousarray(array), file_mode)
            if snapshot.vectors is not None:
                _save_array(tmp / "vectors.npy", np.ascontiguousarray(snapshot.vectors, dtype=np.float32), file_mode)
            serial = 1 + max((int(p.name[5:]) for p in root.glob("base-*") if p.name[5:].isdigit()), default=0)
            final = root / f"base-{serial}"
            os.rename(tmp, final)
            _write(root / "CURRENT", final.name.encode(), file_mode)
            _fsync_dir(root)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        for old in root.iterdir():  # earlier bases and folders of writers that were killed
            if old.is_dir() and old.name != final.name and (old.name.startswith("base-") or old.name.startswith("tmp-")):
                if old.name.startswith("tmp-") and _young(old):
                    continue  # another process may be writing it right now
                shutil.rmtree(old, ignore_errors=True)
        return True
    except OSError:
        return False


_FILES = ("meta.json", "docs.json", "vocab.json", *(f"{k}.npy" for k in POSTINGS), "vectors.npy")


def pack(db_path: Path) -> dict[str, bytes] | None:
    """The current snapshot's files (name -> bytes), to share with other processes of a workspace
    whose store they share (replicas on other machines); None when there is none."""
    root = folder(db_path)
    try:
        name = (root / "CURRENT").read_text().strip()
        if not name.startswith("base-") or "/" in name:
            return None
        return {f: (root / name / f).read_bytes() for f in _FILES if (root / name / f).is_file()}
    except OSError:
        return None


def unpack(db_path: Path, files: dict[str, bytes]) -> bool:
    """Install files ``pack`` made (another process's snapshot) as this folder's current snapshot,
    atomically; ``load`` then checks them as any other. False when they cannot be written."""
    if not set(files) <= set(_FILES) or "meta.json" not in files:
        return False
    root = folder(db_path)
    file_mode, folder_mode = _modes(db_path)
    try:
        root.mkdir(exist_ok=True)
        os.chmod(root, folder_mode)
        tmp = Path(tempfile.mkdtemp(prefix="tmp-", dir=root))
        try:
            os.chmod(tmp, folder_mode)
            for name, data in files.items():
                _write(tmp / name, data, file_mode)
            serial = 1 + max((int(p.name[5:]) for p in root.glob("base-*") if p.name[5:].isdigit()), default=0)
            final = root / f"base-{serial}"
            os.rename(tmp, final)
            _write(root / "CURRENT", final.name.encode(), file_mode)
            _fsync_dir(root)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return True
    except OSError:
        return False


def _modes(db_path: Path) -> tuple[int, int]:
    """(file mode, folder mode) for a snapshot: this user's, plus what the database grants others."""
    try:
        others = os.stat(db_path).st_mode & 0o066
    except OSError:
        others = 0
    return 0o600 | others, 0o700 | others | ((others & 0o044) >> 2)


def _young(path: Path, seconds: float = 600) -> bool:
    import time

    try:
        return time.time() - path.stat().st_mtime < seconds
    except OSError:
        return False


def _write(path: Path, data: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _save_array(path: Path, array: np.ndarray, mode: int) -> None:
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "wb") as f:
        np.save(f, array, allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
