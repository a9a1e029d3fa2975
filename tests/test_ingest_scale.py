"""What made ingest fast at 100k fragments must not change what it finds (issue 13, item 6):
SimHash values are the original definition's (the cache holds values computed before), near-duplicate
pairs are exactly those of an all-pairs comparison, the warnings at ingest are the ones that
definition gives for what the actor can see, and the fast front-matter check never accepts what
jsonschema refuses. Speed itself is measured by benchmarks/ingest_scale.py, not asserted here."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest
from conftest import SAMPLE, fragment_text
from hypothesis import given, settings
from hypothesis import strategies as st

WORDS = ("ledger payout refund retry queue webhook idempotency key settlement batch cron replica lag "
         "timeout circuit breaker fleet dispatch route driver shift token rotate secret vault audit "
         "schema migration index vacuum partition backfill alert pager runbook rollback canary").split()


def reference_simhash(text: str, shingle: int = 2) -> int:
    """The original definition, written plainly: each distinct word shingle-gram's 64-bit BLAKE2b
    digest votes +count / -count on each bit; a bit is set when its vote is positive."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    if not words:
        return 0
    grams = Counter(" ".join(words[i:i + shingle]) for i in range(max(1, len(words) - shingle + 1)))
    votes = [0] * 64
    for gram, count in grams.items():
        value = int.from_bytes(hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest(), "big")
        for bit in range(64):
            votes[bit] += count if value >> (63 - bit) & 1 else -count
    return sum(1 << (63 - bit) for bit in range(64) if votes[bit] > 0)


def all_pairs(hashes: dict[str, int], max_distance: int, only=None) -> list[tuple[str, str, int]]:
    """Every pair within ``max_distance``, by comparing every pair."""
    focus = set(only) if only is not None else None
    found = [(a, b, (hashes[a] ^ hashes[b]).bit_count()) for a, b in combinations(sorted(hashes), 2)]
    return sorted(((a, b, d) for a, b, d in found if d <= max_distance
                   and (focus is None or a in focus or b in focus)), key=lambda x: (x[2], x[0], x[1]))


def clustered_texts(n: int, seed: int) -> list[str]:
    """Paragraphs in clusters: each a base paragraph with 0-3 words replaced, so some pairs are
    near-duplicates and some are not."""
    rng = random.Random(seed)
    bases = [[rng.choice(WORDS) for _ in range(rng.randrange(40, 120))] for _ in range(max(1, n // 6))]
    texts = []
    for _ in range(n):
        words = list(rng.choice(bases))
        for _ in range(rng.randrange(4)):
            words[rng.randrange(len(words))] = rng.choice(WORDS)
        texts.append(" ".join(words) + ".")
    return texts


# -- SimHash and pairs (pure) ---------------------------------------------------------------------

def test_simhash_keeps_the_original_values():
    from workbench.rank.simhash import simhash

    texts = clustered_texts(120, seed=1) + ["", "!!", "one", "Two words", "a b a b a b", "Ünïcödé 42 ß", "x " * 3000]
    texts += [p.read_text(encoding="utf-8") for p in sorted((SAMPLE / "fragments").rglob("*.md"))[:20]]
    assert [simhash(t) for t in texts] == [reference_simhash(t) for t in texts]
    assert [simhash(t, shingle=3) for t in texts[:30]] == [reference_simhash(t, 3) for t in texts[:30]]


@pytest.mark.parametrize("seed", range(6))
def test_near_pairs_are_the_all_pairs_definition(seed):
    from workbench.rank.simhash import near_pairs, simhash

    rng = random.Random(seed)
    texts = clustered_texts(300, seed)
    hashes = {f"f{rng.randrange(10 ** 6):06d}-{i}": simhash(text) for i, text in enumerate(texts)}
    for distance in (0, 3, 5):
        expected = all_pairs(hashes, distance)
        assert near_pairs(hashes, distance) == expected
        assert any(d > 0 for *_, d in expected) or distance == 0  # the texts do make near (not only exact) pairs
        only = rng.sample(sorted(hashes), 25)
        assert near_pairs(hashes, distance, only=only) == all_pairs(hashes, distance, only)
    assert near_pairs(hashes, 3, only=[]) == [] and near_pairs({}, 3) == [] and near_pairs({"a": 1}, 3) == []


def test_near_pairs_with_big_buckets_and_every_distance():
    """Many equal hashes (one huge bucket) and random ones, at distances from 0 to 9."""
    from workbench.rank.simhash import near_pairs

    rng = random.Random(5)
    hashes = {f"same-{i:03d}": 0xDEADBEEF for i in range(60)}
    base = rng.getrandbits(64)
    hashes.update({f"flip-{i:03d}": base ^ (1 << rng.randrange(64)) ^ (1 << rng.randrange(64)) for i in range(80)})
    hashes.update({f"rand-{i:03d}": rng.getrandbits(64) for i in range(80)})
    for distance in range(10):
        assert near_pairs(hashes, distance) == all_pairs(hashes, distance)


# -- near-duplicate warnings at ingest ------------------------------------------------------------

def _expected_warnings(wb, who: str, changed: list[str]) -> list[dict[str, str]]:
    """The all-pairs definition over the active fragments ``who`` can see, pairs involving ``changed``."""
    from workbench import policy
    from workbench.retrieval.index import index_text

    actor = wb.principal(who)
    hashes = {f.id: reference_simhash(index_text(f)) for f in wb.store.fragments(status="active")
              if policy.sees(actor, f)}
    return [{"file": b if b in changed else a,
             "message": f"near-duplicate: {a} and {b} (SimHash distance {d}); see `workbench dedupe --as {who}`"}
            for a, b, d in all_pairs(hashes, 3, only=changed)]


def _near(report) -> list[dict[str, str]]:
    return [w for w in report.warnings if w["message"].startswith("near-duplicate")]


def test_ingest_warns_of_exactly_the_near_duplicates_the_actor_can_see(wb, tmp_path):
    texts = clustered_texts(260, seed=11)
    first, second = tmp_path / "first", tmp_path / "second"
    places = [("payments-api", "marco.bianchi"), ("ledger", "sofia.okafor"), ("checkout-web", "hannah.lee")]
    for i, text in enumerate(texts[:180]):
        repo, owner = places[i % 3]
        first.mkdir(exist_ok=True)
        (first / f"a-{i:03d}.md").write_text(fragment_text(f"a-{i:03d}", title="Runbook", body=text, repo=repo,
                                                           owner=owner), encoding="utf-8")
    report = wb.ingest([first], actor="kb.sync")
    assert not report.errors and len(report.added) == 180
    assert _near(report) == _expected_warnings(wb, "kb.sync", report.added + report.updated)
    assert len(_near(report)) > 10

    # marco sees payments-api and ledger, not checkout-web: new files and edits of his own fragments
    second.mkdir()
    for i, text in enumerate(texts[180:], start=180):
        (second / f"b-{i:03d}.md").write_text(fragment_text(f"b-{i:03d}", title="Runbook", body=text,
                                                            owner="marco.bianchi"), encoding="utf-8")
    for i in range(0, 60, 3):  # payments-api, owned by marco: take another fragment's text
        (second / f"a-{i:03d}.md").write_text(fragment_text(f"a-{i:03d}", title="Runbook", body=texts[i + 1],
                                                            owner="marco.bianchi"), encoding="utf-8")
    report = wb.ingest([second], actor="marco.bianchi")
    assert not report.errors and len(report.added) == 80 and len(report.updated) == 20
    changed = report.added + report.updated
    assert _near(report) == _expected_warnings(wb, "marco.bianchi", changed)
    hidden = {f"a-{i:03d}" for i in range(2, 180, 3)}
    assert not any(h in w["message"] for w in _near(report) for h in hidden)
    assert wb.dedupe(principal="marco.bianchi") == [
        {"a": a, "b": b, "distance": d, "a_title": wb.get(a, principal="marco.bianchi").title,
         "b_title": wb.get(b, principal="marco.bianchi").title, "same_org": True}
        for a, b, d in all_pairs({f.id: reference_simhash(_text(f)) for f in wb.list(principal="marco.bianchi")}, 3)]


def _text(fragment) -> str:
    from workbench.retrieval.index import index_text

    return index_text(fragment)


def test_a_failed_ingest_writes_nothing_and_warns_of_nothing(wb, tmp_path, monkeypatch):
    """All-or-nothing holds with the batched writes: a failure in the last write rolls back the rest."""
    from workbench.store.store import Store

    folder = tmp_path / "f"
    folder.mkdir()
    for i, text in enumerate(clustered_texts(40, seed=3)):
        (folder / f"n-{i:02d}.md").write_text(fragment_text(f"n-{i:02d}", body=text), encoding="utf-8")

    def broken(self, rows, at):
        raise RuntimeError("disk full")
    monkeypatch.setattr(Store, "put_ingested_files", broken)
    with pytest.raises(RuntimeError):
        wb.ingest([folder], actor="kb.sync")
    assert wb.store.counts()["fragments"] == 0 and wb.store.ingested_files() == {}
    monkeypatch.undo()
    assert len(wb.ingest([folder], actor="kb.sync").added) == 40


# -- the fast front-matter check --------------------------------------------------------------

def _validator():
    from workbench.schemas import _validator

    return _validator("fragment")


def test_sample_front_matter_takes_the_fast_path():
    from workbench.ingest.files import load_front_matter, split_front_matter
    from workbench.ingest.schema_check import accepts

    files = sorted((SAMPLE / "fragments").rglob("*.md"))
    assert files
    for path in files:
        data = load_front_matter(split_front_matter(path.read_text(encoding="utf-8"), file=path.name)[0], file="f")
        assert accepts("fragment", data) is True, path


_ids = st.one_of(st.from_regex(r"[a-z0-9][a-z0-9._-]{0,12}", fullmatch=True), st.text(max_size=6),
                 st.just("a..b"), st.just("x" * 129), st.integers(), st.none())
_stamps = st.one_of(st.just("2025-01-02"), st.just("2025-01-02T10:00:00Z"), st.just("2025-1-2"), st.text(max_size=5),
                    st.integers(), st.none())
_names = st.one_of(st.sampled_from(["northwind", "payments-api", "Bad", "", "a" * 130]), st.none(), st.integers())
_strs = st.one_of(st.text(max_size=4), st.just(""), st.just("t" * 201), st.integers(), st.booleans(), st.none())
_lists = st.one_of(st.lists(st.sampled_from(["pci", "ok-tag", "Bad", "", "a..b", "x" * 65]), max_size=4),
                   st.lists(st.integers(), max_size=2), st.just("pci"), st.none())
_sources = st.one_of(st.lists(st.fixed_dictionaries({"path": _strs}, optional={
    "repo": _strs, "commit": st.sampled_from(["abc1234", "XYZ", None, 7]), "lines": st.one_of(
        st.lists(st.one_of(st.integers(-1, 5), st.floats(0, 3), st.booleans()), max_size=3), st.none()),
    "extra": st.just(1)}), max_size=2), st.just({}), st.none())
_front = st.fixed_dictionaries({}, optional={
    "id": _ids, "kind": st.sampled_from(["note", "decision", "anti-pattern", "nope", 3, None]), "title": _strs,
    "scope": st.one_of(st.fixed_dictionaries({}, optional={"org": _names, "repo": _names, "persona": _names,
                                                           "session": _strs, "planet": st.just("x")}),
                       st.just("northwind"), st.none()),
    "owner": _strs, "status": st.sampled_from(["active", "archived", "gone", True]), "tags": _lists,
    "links": st.one_of(st.lists(_ids, max_size=3), st.just(["a", "a"])), "supersedes": st.lists(_ids, max_size=2),
    "sources": _sources, "created": _stamps, "updated": _stamps, "verified": _stamps,
    "dont": _strs, "why": _strs, "instead": _strs, "evidence": _lists, "unknown": st.just(1)})


@settings(max_examples=400, deadline=None)
@given(_front)
def test_the_fast_check_agrees_with_jsonschema(data):
    """Whenever the fast check decides (True or False), jsonschema decides the same."""
    from workbench.ingest.schema_check import accepts

    verdict = accepts("fragment", data)
    assert verdict is None or verdict == _validator().is_valid(data), json.dumps(data, default=str)


def test_the_fast_check_decides_valid_front_matter():
    from workbench.ingest.schema_check import accepts

    good = {"id": "nw-1", "kind": "anti-pattern", "title": "T", "scope": {"org": "northwind", "repo": None},
            "owner": "marco.bianchi", "dont": "a", "why": "b", "instead": "c", "evidence": ["x"],
            "sources": [{"path": "a.py", "lines": [1, 2], "commit": "abc1234"}], "verified": None}
    assert accepts("fragment", good) is True and _validator().is_valid(good)
    for bad in ({**good, "kind": "note"}, {**good, "extra": 1}, {**good, "tags": ["a", "a"]},
                {k: v for k, v in good.items() if k != "why"}):
        assert accepts("fragment", bad) is not True and not _validator().is_valid(bad)


def test_a_schema_keyword_the_fast_check_does_not_know_turns_it_off():
    from workbench.ingest import schema_check

    with pytest.raises(schema_check._Unsupported):
        schema_check.compile_schema({"type": "object", "patternProperties": {"^x": {"type": "string"}}})
    with pytest.raises(schema_check._Unsupported):
        schema_check.compile_schema({"properties": {"a": {"format": "email"}}})
    check = schema_check.compile_schema({"not": {"type": "integer"}})
    assert check(1.0) is None and check(1) is False and check("1") is True


def test_ingest_scale_benchmark_runs(tmp_path):
    """benchmarks/ingest_scale.py, loaded by path, on a few files: the documented figures, no embedding."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("ingest_scale_under_test",
                                                  Path(__file__).resolve().parent.parent / "benchmarks" / "ingest_scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = module.run(200, workdir=tmp_path / "run")
    assert data["initial"]["added"] == 200 and data["reingest_1pct_changed"]["updated"] == data["changed"] == 2
    # the ingest neither loads the model nor embeds (model_loaded is process-wide: not asserted)
    assert data["embedding"]["embedder_calls"] == {"load": 0, "encode": 0, "encode_query": 0}
    assert data["embedding"]["vectors_stored"] == 0
    assert data["initial"]["fragments_per_s"] > 0 and "read_validate" in data["initial"]["phases_s"]
    json.dumps(data)
