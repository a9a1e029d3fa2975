"""The incremental index and its persisted base: an edit is a delta on the lexical base with
scores exactly those of a full rebuild; a fresh process loads the snapshot instead of rebuilding;
a snapshot killed mid-write, torn or forged costs speed, never a wrong answer."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from datetime import datetime

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import Workbench
from workbench.models import Scope
from workbench.retrieval import snapshot
from workbench.retrieval.lexical import Bm25, Vocabulary

NOW = datetime(2026, 12, 1, 12, 0)
WORDS = ["ledger", "retry", "payment", "deploy", "rollback", "kafka", "schema", "owner", "NWPAY-4091", "pci"]
QUERIES = ["ledger retry", "deploy rollback kafka", "NWPAY-4091 payment", "schema owner pci ledger", "zzz"]


def _snapshot_folder(root):
    """Where the workspace at ``root`` keeps its index snapshot (next to its store, whichever it is)."""
    with Workbench.open(root) as wb:
        return snapshot.folder(wb.store.path)


def _full(ids, texts):
    """A full rebuild over the current texts (a fresh vocabulary)."""
    return Bm25(texts, [f"{i}:{t}" for i, t in zip(ids, texts)], Vocabulary())


def _texts_fn(texts):
    return lambda positions: [texts[i] for i in positions]


def _all_fn(texts):
    return lambda: iter(enumerate(texts))


edits = st.lists(st.tuples(st.sampled_from(["edit", "add", "remove"]), st.integers(0, 10_000),
                           st.lists(st.sampled_from(WORDS), max_size=8)), min_size=1, max_size=25)


@settings(max_examples=examples(60), deadline=None)
@given(start=st.lists(st.lists(st.sampled_from(WORDS), max_size=8), min_size=1, max_size=15), ops=edits,
       merge_min=st.sampled_from([1, 3, 2000]), masked=st.booleans())
def test_incremental_scores_equal_a_full_rebuild_after_random_edits(start, ops, merge_min, masked, monkeypatch_module):
    monkeypatch_module.setattr(Bm25, "MERGE_MIN", merge_min)
    docs = {f"f{i:05d}": " ".join(w) for i, w in enumerate(start)}
    versions = dict.fromkeys(docs, 1)
    vocabulary = Vocabulary()
    ids = sorted(docs)
    backend = Bm25.derive(None, ids, np.array([f"h{versions[i]}" for i in ids], dtype=object), vocabulary,
                          texts=_texts_fn([docs[i] for i in ids]), all_texts=_all_fn([docs[i] for i in ids]))
    serial = len(docs)
    for op, pick, words in ops:
        if op == "add" or not docs:
            serial += 1
            fid = f"f{serial:05d}" if pick % 2 else f"a{serial:05d}"   # new ids land before and after the others
            docs[fid], versions[fid] = " ".join(words), 1
        elif op == "edit":
            fid = sorted(docs)[pick % len(docs)]
            docs[fid], versions[fid] = " ".join(words), versions[fid] + 1
        else:
            fid = sorted(docs)[pick % len(docs)]
            del docs[fid], versions[fid]
        ids = sorted(docs)
        texts = [docs[i] for i in ids]
        content = np.array([f"h{versions[i]}:{docs[i]}" for i in ids], dtype=object)
        backend = Bm25.derive(backend, ids, content, vocabulary, texts=_texts_fn(texts), all_texts=_all_fn(texts))
        whole = _full(ids, texts)
        mask = np.array([hash(i) % 3 != 0 for i in ids], dtype=bool) if masked else None
        for q in QUERIES:
            ours, theirs = backend.scores(q, mask), whole.scores(q, mask)
            assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), (q, ours, theirs)
        for token in ("ledger", "nwpay-4091", "kafka"):
            assert backend.document_frequency(token, mask) == whole.document_frequency(token, mask)
        tid = vocabulary.ids.get("ledger")
        if tid is not None:
            positions = np.arange(len(ids))
            held = backend.matrix.contains([tid], positions)
            assert held[0].tolist() == ["ledger" in docs[i].split() for i in ids]


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _scores(wb, query, who="priya.raman"):
    index = wb.search_index()
    return index, index.lexical("bm25").scores(query, index.visible(wb.principal(who)))


def test_edits_through_the_service_are_deltas_equal_to_a_rebuild(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        base = wb.search_index().lexical("bm25").base
        wb.edit("nw-rb-deploy-rollback", "## Steps\nRoll back with `nwctl rollback` and page NWPAY-4091.",
                reason="shorter", actor="dan.kowalski")
        wb.archive("nw-pol-pci-scope", actor="priya.raman", reason="moved")
        index, ours = _scores(wb, "rollback NWPAY-4091 pci scope")
        bm25 = index.lexical("bm25")
        assert bm25.base is base and bm25.delta_size == 1       # one edit in the delta, one tombstone
        whole = Bm25(index.texts_of(list(range(len(index.ids)))), index.ids, Vocabulary())
        mask = index.visible(wb.principal("priya.raman"))
        assert np.array_equal(ours, whole.scores("rollback NWPAY-4091 pci scope", mask))
        assert "nw-pol-pci-scope" not in index.pos


def test_a_fresh_process_loads_the_snapshot_instead_of_rebuilding(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        wb.warm()
        expected = wb.search("customer charged twice on retry", principal="marco.bianchi", trace=False, now=NOW)
    assert (_snapshot_folder(sample_workspace) / "CURRENT").is_file()
    with Workbench.open(sample_workspace) as wb:
        pages = []
        real = wb.store.fragment_pages
        wb.store.fragment_pages = lambda **kw: pages.append(kw) or real(**kw)
        got = wb.search("customer charged twice on retry", principal="marco.bianchi", trace=False, now=NOW)
        index = wb.search_index()
        assert pages == []                                     # no text read to build anything
        assert isinstance(index.vectors().base, np.memmap)     # the vectors are the snapshot's, mapped
        assert index.lexical("bm25").delta_size == 0
    assert [(h.id, h.score) for h in got.hits] == [(h.id, h.score) for h in expected.hits]


def test_a_snapshot_from_an_older_generation_is_used_for_what_did_not_change(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        wb.warm()
        wb.edit("nw-rb-deploy-rollback", "## Steps\nRoll back with `nwctl rollback`.", reason="r", actor="dan.kowalski")
    with Workbench.open(sample_workspace) as wb:
        reads, real = [], wb.store.fragments
        wb.store.fragments = lambda **kw: reads.append(kw.get("ids")) or real(**kw)
        index, ours = _scores(wb, "nwctl rollback")
        wb.store.fragments = real
        assert reads and all(r == ["nw-rb-deploy-rollback"] for r in reads if r is not None)
        assert index.lexical("bm25").delta_size == 1
        whole = Bm25(index.texts_of(list(range(len(index.ids)))), index.ids, Vocabulary())
        assert np.array_equal(ours, whole.scores("nwctl rollback", index.visible(wb.principal("priya.raman"))))


@pytest.mark.parametrize("damage", ["truncated-vectors", "garbage-current", "other-model", "bad-postings",
                                    "path-current"])
def test_a_damaged_or_forged_snapshot_is_ignored(sample_workspace, damage):
    with Workbench.open(sample_workspace) as wb:
        wb.warm()
        expected = wb.search("roll back a bad deploy", principal="dan.kowalski", trace=False, now=NOW)
    root = _snapshot_folder(sample_workspace)
    base = root / (root / "CURRENT").read_text()
    if damage == "truncated-vectors":
        data = (base / "vectors.npy").read_bytes()
        (base / "vectors.npy").write_bytes(data[: len(data) // 2])
    elif damage == "garbage-current":
        (root / "CURRENT").write_text("\x00\x01 nonsense")
    elif damage == "path-current":
        (root / "CURRENT").write_text("base-../../etc")
    elif damage == "other-model":
        meta = json.loads((base / "meta.json").read_text())
        (base / "meta.json").write_text(json.dumps({**meta, "model": "something-else"}))
    else:  # postings pointing past the documents
        doc = np.load(base / "doc.npy")
        doc[:] = 10_000_000
        np.save(base / "doc.npy", doc)
    with Workbench.open(sample_workspace) as wb:
        got = wb.search("roll back a bad deploy", principal="dan.kowalski", trace=False, now=NOW)
    assert [(h.id, h.score) for h in got.hits] == [(h.id, h.score) for h in expected.hits]


KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from workbench import Workbench
    from workbench.retrieval import snapshot
    from workbench.retrieval.lexical import Bm25
    Bm25.MERGE_MIN = Bm25.MERGE_SHARE = 0  # any change merges into a new base, which is saved
    where = sys.argv[2]
    real = snapshot._save_array if where == "arrays" else snapshot._fsync_dir
    def die(*a, **kw):
        if where == "arrays":
            real(*a, **kw)
        os.kill(os.getpid(), signal.SIGKILL)
    if where == "arrays":
        snapshot._save_array = die
    else:
        snapshot._fsync_dir = die  # after the folder is renamed and CURRENT is written
    with Workbench.open(sys.argv[1]) as wb:
        wb.edit("nw-rb-deploy-rollback", "## Steps\\nRoll back with nwctl.", reason="r", actor="dan.kowalski")
        wb.ws.index.invalidate()
        wb.warm()
""")


@pytest.mark.parametrize("where", ["arrays", "after-rename"])
def test_kill_9_while_saving_leaves_a_usable_workspace(sample_workspace, where):
    with Workbench.open(sample_workspace) as wb:
        wb.warm()
    r = subprocess.run([sys.executable, "-c", KILL_SCRIPT, str(sample_workspace), where], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == -signal.SIGKILL, r.stderr
    with Workbench.open(sample_workspace) as wb:
        got = wb.search("nwctl rollback", principal="dan.kowalski", trace=False, now=NOW)
        index = wb.search_index()
        whole = Bm25(index.texts_of(list(range(len(index.ids)))), index.ids, Vocabulary())
        mask = index.visible(wb.principal("dan.kowalski"))
        assert np.array_equal(index.lexical("bm25").scores("nwctl rollback", mask),
                              whole.scores("nwctl rollback", mask))
        assert got.hits[0].id == "nw-rb-deploy-rollback" and got.hits[0].fragment.version == 2
    root = _snapshot_folder(sample_workspace)
    leftovers = [p.name for p in root.iterdir() if p.name.startswith("tmp-")]
    assert len(leftovers) <= 1 and os.listdir(root)


@pytest.mark.duckdb_only("a read-only DuckDB file")
def test_a_read_only_workspace_writes_no_snapshot(sample_workspace):
    db = sample_workspace / "workbench.duckdb"
    shutil.rmtree(snapshot.folder(db), ignore_errors=True)
    os.chmod(db, 0o444)
    os.chmod(sample_workspace, 0o555)
    try:
        with Workbench.open(sample_workspace) as wb:
            assert wb.store.read_only
            assert wb.search("roll back a bad deploy", principal="dan.kowalski", trace=False, now=NOW).hits
    finally:
        os.chmod(sample_workspace, 0o755)
        os.chmod(db, 0o644)
    assert not snapshot.folder(db).exists()


def test_more_hits_than_the_fragment_cache_holds(sample_wb, monkeypatch):
    from workbench.retrieval import index as index_module

    monkeypatch.setattr(index_module, "FRAGMENT_CACHE", 5)
    index = sample_wb.search_index()
    first = index.fragments_at(range(3))
    everything = index.fragments_at(range(len(index.ids)))          # far more than the cache holds
    assert [f.id for f in everything] == index.ids
    assert [f.id for f in index.fragments_at([2, 1, 0, 40, 41, 42, 0])] == [index.ids[i] for i in (2, 1, 0, 40, 41, 42, 0)]
    assert [f.id for f in first] == index.ids[:3]


def _equal_to_a_full_build(wb, queries=("rollback postgres failover", "ledger retry NWPAY-4091", "zebrafinch")):
    """The manager's current index (patched or not) holds what a full build of the store holds."""
    from workbench.retrieval.build import build_index
    from workbench.retrieval.manager import IndexManager

    ours = wb.search_index()
    full = build_index(wb.store, IndexManager(wb.store, wb.embedder))
    assert ours.ids == full.ids and ours.hashes == full.hashes and ours.generation == full.generation
    for name in ("versions", "kinds", "owners", "fresh_s", "updated_s"):
        assert np.array_equal(getattr(ours, name), getattr(full, name)), name
    assert np.array_equal(ours.half_lives(lambda k: len(k)), full.half_lives(lambda k: len(k)))
    assert np.allclose(ours.vectors(), full.vectors(), atol=1e-6)
    for tags in (("postgres",), ("payments", "zebra-tag")):
        assert np.array_equal(ours.filter_mask(tags=tags), full.filter_mask(tags=tags))
    for who in wb.config.principals:
        p = wb.principal(who)
        mask = ours.visible(p)
        assert np.array_equal(mask, full.visible(p)), who
        assert np.allclose(ours.authority_for(mask), full.authority_for(mask)), who
        assert np.array_equal(ours.superseders(mask), full.superseders(mask)), who
        for q in queries:
            assert np.array_equal(ours.lexical("bm25").scores(q, mask), full.lexical("bm25").scores(q, mask)), q
    return ours


def test_an_edit_patches_the_previous_generation_into_what_a_full_build_holds(sample_workspace):
    """Body, tags, owner, scope and verification edits patch the previous generation (its ids list
    is shared); a changed link is a full build. Each generation equals a full build of the store."""
    from dataclasses import replace

    from workbench.ingest.files import render

    with Workbench.open(sample_workspace) as wb:
        lead = "priya.raman"
        wb.warm()
        before = wb.search_index()
        before.authority_for(before.visible(wb.principal("marco.bianchi")))

        def change(fid, **fields):
            f = wb.get(fid, principal=lead)
            wb.edit(fid, render(fid, replace(f.content, **fields)), reason="patch test", actor=lead)

        steps = [
            ("body", lambda: change("nw-rb-deploy-rollback", body="Roll back with `nwctl rollback`. zebrafinch")),
            ("tags", lambda: change("nw-rb-postgres-failover", tags=("postgres", "zebra-tag"))),
            ("owner", lambda: change("nw-rb-postgres-failover", owner="priya.raman")),
            ("scope", lambda: change("nw-adr-0017-canary-rollouts", scope=Scope("northwind", "ledger"), owner="sofia.okafor")),
            ("verify", lambda: wb.verify("nw-rb-deploy-rollback", actor="dan.kowalski")),
        ]
        for label, step in steps:
            previous = wb.search_index()
            step()
            index = _equal_to_a_full_build(wb)
            assert index.ids is previous.ids, f"{label}: not patched"
            assert index.lexical("bm25").base is previous.lexical("bm25").base, label
            assert wb.store.authority_generation() == index.generation, label  # the next process reuses it
        previous = wb.search_index()
        f = wb.get("nw-rb-deploy-rollback", principal=lead)
        change("nw-rb-deploy-rollback", links=tuple(f.content.links) + ("nw-pol-incident-severity",))
        index = _equal_to_a_full_build(wb)
        assert index.ids is not previous.ids  # the link graph changed: a full build, PageRank again
        hit = wb.search("zebrafinch", principal=lead, trace=False).hits[0]
        assert hit.id == "nw-rb-deploy-rollback"


def test_a_fresh_process_reuses_pagerank_after_another_process_edited_text_only(sample_workspace, monkeypatch):
    """The stored PageRank carries the digest of its link graph: a process opening after a CLI
    edit of text alone (which builds no index) reuses it; after a link changed it recomputes."""
    from dataclasses import replace

    from workbench.ingest.files import render
    from workbench.retrieval import manager

    calls = []
    real = manager.pagerank
    monkeypatch.setattr(manager, "pagerank", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    with Workbench.open(sample_workspace) as wb:
        wb.search("rollback", principal="dan.kowalski", trace=False)
    with Workbench.open(sample_workspace) as wb:  # `workbench edit`: no index is built
        wb.edit("nw-rb-deploy-rollback", "Roll back with nwctl.", reason="text only", actor="dan.kowalski")
    calls.clear()
    with Workbench.open(sample_workspace) as wb:
        expected = wb.search("rollback", principal="dan.kowalski", trace=False)
        assert calls == [] and wb.store.authority_generation() == wb.store.generation()
        f = wb.get("nw-rb-deploy-rollback", principal="dan.kowalski")
        wb.edit(f.id, render(f.id, replace(f.content, links=f.content.links + ("nw-pol-incident-severity",))),
                reason="a link", actor="dan.kowalski")
    with Workbench.open(sample_workspace) as wb:
        wb.search("rollback", principal="dan.kowalski", trace=False)
        assert calls == [1]
    assert expected.hits


def test_a_shared_store_serves_the_previous_generation_while_another_thread_builds(wb, tmp_path):
    """The team server: a reader never queues behind another thread's build; the writer's own
    refresh (fresh=True) waits for it, so the writer reads its write."""
    import threading

    from conftest import write_fragment

    write_fragment(tmp_path / "in", "nw-one", body="alpha text")
    write_fragment(tmp_path / "in", "nw-two", body="beta text")
    wb.ingest([tmp_path / "in"], actor="marco.bianchi")
    wb.share()
    before = wb.index.refresh()
    wb.edit("nw-one", "gamma text", reason="r", actor="marco.bianchi")
    building, release = threading.Event(), threading.Event()

    def builder():
        with wb.index._lock:  # another thread in the middle of building the next generation
            building.set()
            release.wait(10)

    t = threading.Thread(target=builder)
    t.start()
    building.wait(10)
    assert wb.index.current() is before  # at once, the previous generation
    got = {}
    waiter = threading.Thread(target=lambda: got.setdefault("index", wb.index.current(fresh=True)))
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive()  # the writer's refresh waits for the build
    release.set()
    waiter.join(10)
    t.join(10)
    assert got["index"].generation == wb.store.generation() != before.generation
