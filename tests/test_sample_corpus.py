"""The sample corpus is realistic enough to exercise every feature, and the golden set is sound."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

import pytest
import yaml

from conftest import SAMPLE
from workbench import Workbench
from workbench.models import KINDS

CORPUS_DATE = datetime(2026, 11, 30)  # the corpus was written as of this day


@pytest.fixture(scope="module")
def corpus(sample_workspace_template, tmp_path_factory):
    import shutil

    target = tmp_path_factory.mktemp("corpus") / "ws"
    shutil.copytree(sample_workspace_template, target)   # other workers read the template meanwhile
    with Workbench.open(target) as bench:
        yield bench, bench.store.fragments()


def test_ingests_cleanly_with_no_dangling_links(tmp_path):
    from conftest import CONFIG

    with Workbench.init(tmp_path / "ws", config=CONFIG) as bench:
        report = bench.ingest([SAMPLE / "fragments"], actor="kb.sync")
    assert report.errors == []
    # the one warning is the near-duplicate the corpus carries on purpose (a runbook copied into fleet-app)
    assert [w["message"].split(" (")[0] for w in report.warnings] == [
        "near-duplicate: tw-rb-fleet-pgbouncer-pool-exhausted and tw-rb-pgbouncer-pool-exhaustion"]


def test_size_and_spread(corpus):
    _, frags = corpus
    assert len(frags) >= 150
    assert {f.scope.org for f in frags} == {"northwind", "tidewater"}
    assert len({(f.scope.org, f.scope.repo) for f in frags if f.scope.repo}) >= 4
    assert len({(f.scope.org, f.scope.persona) for f in frags if f.scope.persona}) >= 3
    kinds = Counter(f.kind for f in frags)
    assert set(kinds) == set(KINDS)
    assert kinds["anti-pattern"] >= 15
    assert kinds["decision"] >= 15 and kinds["runbook"] >= 15 and kinds["code"] >= 15 and kinds["policy"] >= 8
    assert all(f.owner for f in frags)
    assert len({f.owner for f in frags}) >= 8


def test_anti_patterns_have_dont_why_instead(corpus):
    _, frags = corpus
    for f in frags:
        if f.kind == "anti-pattern":
            assert all(f.content.detail(k) for k in ("dont", "why", "instead")), f.id


def test_superseded_decisions_and_real_links(corpus):
    _, frags = corpus
    ids = {f.id for f in frags}
    superseding = [f for f in frags if f.content.supersedes]
    assert len(superseding) >= 3
    for f in superseding:
        assert set(f.content.supersedes) <= ids
    links = [(f.id, t) for f in frags for t in f.links]
    assert len(links) >= 300 and {t for _, t in links} <= ids


def test_dates_span_two_years_and_old_fragments_are_heavily_cited(corpus):
    _, frags = corpus
    updated = [f.updated_at for f in frags]
    assert max(updated) - min(updated) >= timedelta(days=600)
    in_degree = Counter(t for f in frags for t in f.links)
    stale_cutoff = CORPUS_DATE - timedelta(days=180)
    stale = [f for f in frags if f.status == "active" and f.updated_at < stale_cutoff
             and (f.verified_at is None or f.verified_at < stale_cutoff)]
    assert len(stale) >= 30
    heavily_cited_stale = [f.id for f in stale if in_degree[f.id] >= 6]
    assert len(heavily_cited_stale) >= 5, heavily_cited_stale


def test_golden_queries_are_sound(corpus):
    bench, frags = corpus
    by_id = {f.id: f for f in frags}
    golden = [q for q in yaml.safe_load((SAMPLE / "golden.yaml").read_text())["queries"] if "paths" not in q]
    archived = [q for q in golden if q.get("archived")]   # answered only by an archived observation (issue 31)
    golden = [q for q in golden if not q.get("archived")]
    assert len(archived) >= 5 and all(by_id[fid].status == "archived" and bench.principal(q["principal"]).can_see(
        by_id[fid].scope, owner=by_id[fid].owner) for q in archived for fid in q["relevant"])
    assert len(golden) >= 80
    assert len({q["id"] for q in golden}) == len(golden)
    types = Counter(q["type"] for q in golden)
    assert {"paraphrase", "identifier", "scope", "anti-pattern"} <= set(types)
    assert types["identifier"] >= 10 and types["scope"] >= 10 and types["anti-pattern"] >= 10
    for q in golden:
        principal = bench.principal(q["principal"])
        assert q["query"].strip() and (q["relevant"] or q["type"] == "negative"), q["id"]
        for fid in q["relevant"]:
            f = by_id[fid]
            assert f.status == "active", (q["id"], fid)
            assert principal.can_see(f.scope, owner=f.owner), (q["id"], fid)
    answered_by_anti_patterns = [q for q in golden if any(by_id[i].kind == "anti-pattern" for i in q["relevant"])]
    assert len(answered_by_anti_patterns) >= 10
