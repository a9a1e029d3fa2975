"""No oracles: every statistic behind a caller's scores is computed over what the caller can see.

The decisive test is differential: two real workspaces identical in org A (northwind) and
different only in org B (tidewater), where B piles on A's words and identifiers and links to
A's fragments. For a principal of A, every search pipeline and context call must return the
same ids, order and every score component, bit for bit, in both. Then properties of the
parts: masked BM25 equals BM25 built over the visible documents alone, the DuckDB FTS
scoring equals ``match_bm25``, the numpy PageRank equals networkx's, and dense dot products
do not depend on where a row sits.
"""

from __future__ import annotations

import re
import shutil
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import CONFIG, SAMPLE, examples

NOW = datetime(2026, 6, 1, 12, 0, 0)
ONCE_IN_A = "NWPAY-3107"        # named by exactly one northwind fragment (nw-note-3ds-exemptions)
ONLY_B = "TWDSP-7311"           # named only by the hostile tidewater fragments, many times
QUERIES = [
    f"issuer soft decline {ONCE_IN_A} authentication required",
    f"{ONLY_B} pgbouncer connection pool exhausted",
    "how do we roll back a bad deploy of the ledger service",
]
PRINCIPALS = ["priya.raman", "marco.bianchi"]
SEARCHES = [
    {"pipeline": "hybrid"},
    {"pipeline": "hybrid", "fusion": "rrf"},
    {"pipeline": "bm25"},
    {"pipeline": "dense"},
    {"pipeline": "hybrid", "lexical": "duckdb-fts"},
    {"pipeline": "bm25", "lexical": "duckdb-fts"},
]
HOSTILE = 60
_FRONT = re.compile(r"\A---\n(.*?)\n---\n(.*)\Z", re.S)


def _split(path: Path) -> tuple[dict, str]:
    head, body = _FRONT.match(path.read_text(encoding="utf-8")).groups()
    return yaml.safe_load(head), body


def _copy_org(org: str, out: Path) -> list[Path]:
    """The sample corpus's files of one org, session-scoped ones left out (their rules are not
    what this test is about)."""
    copied = []
    for path in sorted((SAMPLE / "fragments" / org).rglob("*.md")):
        data, _ = _split(path)
        if data["scope"].get("session"):
            continue
        target = out / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copied.append(target)
    return copied


def _hostile(a_files: list[Path], out: Path) -> None:
    """Tidewater fragments made of northwind's text, naming A's identifiers (and B's own,
    heavily), citing A's sources and linking to A's fragments. Their ids interleave with A's,
    so every A fragment sits at another position in the index."""
    out.mkdir(parents=True, exist_ok=True)
    prefixes = ["aa", "nw-adr", "nw-code", "nw-m", "nw-rb", "nw-z", "zz"]
    a_ids = [_split(p)[0]["id"] for p in a_files]
    for j in range(HOSTILE):
        data, body = _split(a_files[j % len(a_files)])
        fid = f"{prefixes[j % len(prefixes)]}-hostile-{j:02d}"
        data.update({"id": fid, "title": f"{data['title']} (copy {j})", "owner": "raj.patel",
                     "scope": {"org": "tidewater", "repo": "dispatch"},
                     "links": [a_ids[(j * 7 + k) % len(a_ids)] for k in range(3)] + ["nw-note-3ds-exemptions"]})
        data.pop("supersedes", None)
        extra = f"\n\nSee {ONCE_IN_A} and {ONLY_B}: pgbouncer connection pool exhausted, roll back the deploy.\n"
        text = "---\n" + yaml.safe_dump(data, sort_keys=False) + "---\n" + body + extra * (1 + j % 3)
        (out / f"{fid}.md").write_text(text, encoding="utf-8")


def _workspace(root: Path, hostile: bool, vectors: dict | None) -> Path:
    from workbench import Workbench

    a = _copy_org("northwind", root / "a")
    _copy_org("tidewater", root / "b")
    folders_b = [root / "b"]
    if hostile:
        _hostile(a, root / "b-hostile")
        folders_b.append(root / "b-hostile")
    ws = root / "ws"
    with Workbench.init(ws, config=CONFIG) as wb:
        for folder, actor in [(root / "a", "priya.raman")] + [(f, "lena.fischer") for f in folders_b]:
            report = wb.ingest([folder], actor=actor)
            assert not report.errors, report.errors
        if vectors:  # the same texts get the same stored vectors: embedding is not under test here
            index = wb.search_index()
            shared = [h for h in dict.fromkeys(index.hashes) if h in vectors]
            wb.store.put_embeddings(wb.embedder.name, shared, np.stack([vectors[h] for h in shared]))
        wb.warm()
        if wb.store.persisted_fts:  # (DuckDB's own full-text index: not on PostgreSQL)
            wb.warm(lexical="duckdb-fts")
    return ws


@pytest.fixture(scope="module")
def twins(tmp_path_factory, sample_workspace_template):
    """(quiet, hostile): workspaces identical in northwind, different in tidewater."""
    from workbench import Workbench

    template = tmp_path_factory.mktemp("template") / "ws"
    shutil.copytree(sample_workspace_template, template)   # the same texts: their vectors are stored there
    with Workbench.open(template) as wb:
        index = wb.search_index()
        vectors = dict(zip(index.hashes, index.vectors()))
    quiet = _workspace(tmp_path_factory.mktemp("quiet"), hostile=False, vectors=vectors)
    hostile = _workspace(tmp_path_factory.mktemp("hostile"), hostile=True, vectors=vectors)
    return quiet, hostile


def _hits(hits) -> list[tuple]:
    return [(h.id, h.rank, h.score, dict(h.scores)) for h in hits]


def _observe(ws: Path) -> dict:
    """Everything a northwind principal can observe through ranking, per call."""
    from workbench import Workbench

    seen: dict = {}
    with Workbench.open(ws) as wb:
        for who in PRINCIPALS:
            for q in QUERIES:
                for kw in SEARCHES:
                    if kw.get("lexical") == "duckdb-fts" and not wb.store.persisted_fts:
                        continue
                    r = wb.search(q, principal=who, k=10, now=NOW, trace=False, **kw)
                    seen[(who, q, tuple(sorted(kw.items())))] = (_hits(r.hits), _hits(r.avoid))
                c = wb.context(q, principal=who, budget=1500, now=NOW)
                seen[(who, q, "context")] = ([(i.hit.id, i.hit.rank, i.hit.score, dict(i.hit.scores), i.text, i.tokens)
                                              for i in (*c.fragments, *c.avoid)], c.used_tokens, c.omitted)
            index = wb.search_index()
            seen[(who, "graph")] = index.graph_authority(index.visible(wb.principal(who)))
    return seen


@pytest.mark.slow
def test_a_principal_observes_nothing_of_another_orgs_fragments(twins):
    from workbench import Workbench
    from workbench.retrieval.pipeline import _rare_identifier

    quiet, hostile = twins
    token = ONCE_IN_A.lower()
    stats = {}
    for ws in (quiet, hostile):
        with Workbench.open(ws) as wb:
            index = wb.search_index()
            bm25 = index.lexical("bm25")
            mask = index.visible(wb.principal("priya.raman"))
            assert bm25.document_frequency(token, mask) == 1
            assert _rare_identifier(bm25, QUERIES[0], mask)          # rare among what priya sees
            unmasked = bm25.scores(QUERIES[1])
            a_scores = {f.id: float(unmasked[i]) for i, f in enumerate(index.fragments_at(range(len(index.ids))))
                        if f.scope.org == "northwind" and unmasked[i] > 0}
            stats[ws] = (bm25.document_frequency(token), dict(wb.store.authority()[1])["nw-note-3ds-exemptions"],
                         a_scores, len(index.ids))
    # the hostile org really does move the whole-workspace statistics ...
    (df_q, auth_q, score_q, n_q), (df_h, auth_h, score_h, n_h) = stats[quiet], stats[hostile]
    assert n_h == n_q + HOSTILE and df_q == 1 and df_h == 1 + HOSTILE
    assert auth_h[0] != auth_q[0] and auth_h[1] > auth_q[1]
    assert score_q and score_h.keys() == score_q.keys() and all(score_h[k] != score_q[k] for k in score_q)
    # ... and nothing a northwind principal observes
    before, after = _observe(quiet), _observe(hostile)
    assert before.keys() == after.keys()
    for key in before:
        assert before[key] == after[key], key
    assert all(before[(who, q, "context")][0] for who in PRINCIPALS for q in QUERIES)
    hybrid = before[("priya.raman", QUERIES[0], (("pipeline", "hybrid"),))][0]
    assert hybrid and hybrid[0][0] == "nw-note-3ds-exemptions" and all(h[0].startswith("nw-") for h in hybrid)
    assert any(h[3]["authority"] > 0 for h in hybrid)


# -- BM25 over a mask ----------------------------------------------------------------------

@settings(max_examples=examples(25), deadline=None)
@given(st.data())
def test_masked_bm25_equals_bm25_built_over_the_visible_documents(data):
    from workbench.rank.bm25 import BM25Matrix

    vocab = 12
    docs = data.draw(st.lists(st.lists(st.integers(0, vocab - 1), min_size=0, max_size=9), min_size=1, max_size=25))
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(docs), max_size=len(docs))), dtype=bool)
    queries = data.draw(st.lists(st.lists(st.integers(-1, vocab), min_size=1, max_size=5), min_size=1, max_size=4))
    arrays = [np.array(d, dtype=np.int64) for d in docs]
    whole = BM25Matrix(arrays, vocab)
    alone = BM25Matrix([a for a, keep in zip(arrays, mask) if keep], vocab)
    for query in queries:
        got = whole.scores(query, mask)
        assert np.array_equal(got[mask], alone.scores(query)) and not got[~mask].any()
        assert np.array_equal(whole.scores(query, np.ones(len(docs), dtype=bool)), whole.scores(query))
    for token in range(-1, vocab + 1):
        assert whole.document_frequency(token, mask) == alone.document_frequency(token)


def test_masked_bm25_equals_bm25s_over_the_visible_documents():
    import bm25s

    from workbench.rank.bm25 import BM25Matrix

    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(30)]
    docs = [list(rng.choice(words, size=rng.integers(1, 20))) for _ in range(200)]
    mask = rng.random(200) < 0.3
    visible = [d for d, keep in zip(docs, mask) if keep]
    vocab = {w: i for i, w in enumerate(words)}
    ours = BM25Matrix([np.array([vocab[t] for t in d]) for d in docs], len(vocab))
    ref = bm25s.BM25()
    ref.index(visible, show_progress=False)
    seen = {t for d in visible for t in d}
    for _ in range(20):
        query = [str(t) for t in rng.choice(sorted(seen), size=rng.integers(1, 4))]
        got = ours.scores([vocab[t] for t in query], mask)[mask]
        assert got == pytest.approx(ref.get_scores(query), rel=1e-5, abs=1e-6)
        assert not np.array_equal(got, ours.scores([vocab[t] for t in query])[mask])  # the mask matters


# -- DuckDB FTS ------------------------------------------------------------------------------

FTS_ONLY = pytest.mark.duckdb_only("the duckdb-fts lexical backend")
FTS_QUERIES = ["pgbouncer connection pool exhausted", "NWPAY-4091 idempotency key", "the rollback of a deploy deploy",
               "kafka consumer lag", "zzzz qqqq"]


@pytest.fixture(scope="module")
def fts_wb(sample_workspace_template, tmp_path_factory):
    """A copy of the sample workspace with its DuckDB FTS index built."""
    from workbench import Workbench

    target = tmp_path_factory.mktemp("fts") / "ws"
    shutil.copytree(sample_workspace_template, target)
    with Workbench.open(target) as wb:
        wb.search_index().lexical("duckdb-fts")
        yield wb


@FTS_ONLY
def test_fts_scores_equal_match_bm25_when_everything_is_visible(fts_wb):
    index = fts_wb.search_index()
    fts = index.lexical("duckdb-fts")
    for query in FTS_QUERIES:
        rows = fts_wb.store._q("SELECT id, score FROM (SELECT id, fts_main_fts_docs.match_bm25(id, ?) AS score "
                                  "FROM fts_docs) WHERE score IS NOT NULL", [query])
        expected = np.zeros(len(index.ids), dtype=np.float32)
        for fid, score in rows:
            expected[index.pos[fid]] = score
        assert fts.scores(query) == pytest.approx(expected, rel=1e-6)
        assert np.array_equal(fts.scores(query, np.ones(len(index.ids), dtype=bool)), fts.scores(query))
        assert bool(rows) == (query != FTS_QUERIES[-1])


@FTS_ONLY
def test_fts_over_a_mask_equals_fts_over_only_the_visible_documents(fts_wb, tmp_path):
    from workbench.store import Store

    index = fts_wb.search_index()
    fts = index.lexical("duckdb-fts")
    mask = index.visible(fts_wb.principal("marco.bianchi"))
    assert 0 < mask.sum() < len(mask)
    alone = Store(tmp_path / "alone.duckdb")
    try:
        visible = np.flatnonzero(mask)
        alone.build_fts([index.ids[i] for i in visible], index.texts_of([int(i) for i in visible]), 1)
        for query in FTS_QUERIES:
            got = fts.scores(query, mask)
            assert not got[~mask].any()
            expected = {fid: s for fid, s in alone._q(
                "SELECT id, score FROM (SELECT id, fts_main_fts_docs.match_bm25(id, ?) AS score FROM fts_docs) "
                "WHERE score IS NOT NULL", [query])}
            assert {index.ids[i]: float(got[i]) for i in np.flatnonzero(got)} == pytest.approx(expected, rel=1e-6)
    finally:
        alone.close()


@FTS_ONLY
def test_fts_binds_query_text_and_never_splices_it(fts_wb):
    fts = fts_wb.search_index().lexical("duckdb-fts")
    hostile = "pool'); DROP TABLE fragments; --"
    assert fts.scores(hostile).any()
    assert fts_wb.store._q("SELECT count(*) FROM fragments")[0][0] > 0


# -- PageRank over the visible subgraph -----------------------------------------------------

def _random_graph(rng, n: int):
    ids = [f"f{i:03d}" for i in range(n)]
    edges = [(ids[rng.integers(n)], ids[rng.integers(n)]) for _ in range(rng.integers(0, 3 * n + 1))]
    edges += [(ids[0], "missing")]
    sources = [(ids[rng.integers(n)], f"source:repo/{rng.integers(5)}.py") for _ in range(rng.integers(0, n + 1))]
    return ids, edges, sources


@pytest.mark.parametrize("seed", range(12))
def test_visible_pagerank_equals_networkx_on_the_induced_subgraph(seed):
    from workbench.rank.authority import edge_arrays, pagerank, visible_authority

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    ids, edges, sources = _random_graph(rng, n)
    mask = rng.random(n) < (1.0 if seed == 0 else 0.6)
    links, refs, _ = edge_arrays(ids, edges, sources)
    rank, in_degree, out_degree = visible_authority(mask, links, refs)
    seen = {ids[i] for i in np.flatnonzero(mask)}
    expected = pagerank([i for i in ids if i in seen], [(a, b) for a, b in edges if a in seen and b in seen],
                        source_edges=[(a, b) for a, b in sources if a in seen])
    for i, fid in enumerate(ids):
        if fid in seen:
            assert rank[i] == pytest.approx(expected[fid][0], abs=1e-6)
            assert (in_degree[i], out_degree[i]) == expected[fid][1:]
        else:
            assert rank[i] == 0 and in_degree[i] == 0 and out_degree[i] == 0


def test_visible_pagerank_edge_cases():
    from workbench.rank.authority import edge_arrays, pagerank_arrays, visible_authority

    links, refs, names = edge_arrays(["a", "b"], [("a", "b"), ("a", "b"), ("b", "b")], [("a", "source:x/y")])
    assert names == ["source:x/y"] and links[0].tolist() == [0] and refs[1].tolist() == [0]
    rank, _, _ = visible_authority(np.zeros(2, dtype=bool), links, refs)
    assert not rank.any()
    assert pagerank_arrays(0, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)).size == 0
    lone = pagerank_arrays(3, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    assert lone == pytest.approx([1 / 3] * 3)


def test_authority_is_cached_per_visibility_signature(sample_wb):
    index = sample_wb.search_index()
    priya = index.visible(sample_wb.principal("priya.raman"))
    first = index.authority_for(priya)
    assert index.authority_for(priya.copy()) is first                       # same groups: no recomputation
    assert index.authority_for(index.visible(sample_wb.principal("marco.bianchi"))) is not first
    assert first.max() == pytest.approx(1.0) and not first[~priya].any()
    graph = index.graph_authority(priya)
    assert set(graph) == {index.ids[i] for i in np.flatnonzero(priya)}
    assert sum(v[0] for v in graph.values()) <= 1.0 + 1e-9                   # sources hold the rest
    split = priya.copy()
    split[np.flatnonzero(priya)[0]] = False                                 # a mask that splits a group
    assert index.authority_for(split) is not first and not index.authority_for(split)[~split].any()


# -- dense -----------------------------------------------------------------------------------

def test_dense_scores_do_not_depend_on_where_a_row_sits():
    from workbench.retrieval.pipeline import _dot_rows

    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(1003, 384)).astype(np.float32)
    qv = rng.normal(size=384).astype(np.float32)
    whole = _dot_rows(vectors, qv)
    assert whole == pytest.approx(vectors.astype(np.float64) @ qv.astype(np.float64), rel=1e-4, abs=1e-4)
    for _ in range(30):
        rows = np.sort(rng.choice(1003, size=int(rng.integers(1, 1003)), replace=False))
        assert np.array_equal(_dot_rows(vectors[rows], qv), whole[rows])
        order = rng.permutation(1003)
        assert np.array_equal(_dot_rows(vectors[order], qv), whole[order])
