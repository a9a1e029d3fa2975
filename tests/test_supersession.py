"""Supersession is first-class: newer beats older, older stays out of context, labels name the
newer version, and authority flows to the newer fragment.

Golden pairs come from the sample corpus itself (every ``supersedes:`` in its files), so a new
pair there is tested too. The two exceptions: a superseder the caller cannot see (the old
fragment is then current for them, and nothing names the invisible one), and a query that
names the old fragment (by id, or by an identifier only it holds).
"""

from __future__ import annotations

import json
import re
from datetime import datetime

import numpy as np
import pytest
import yaml

from conftest import SAMPLE, fragment_text
from workbench import Workbench

NOW = datetime(2026, 12, 1, 12, 0)
PAIRS = []
for _path in sorted((SAMPLE / "fragments").rglob("*.md")):
    _head = yaml.safe_load(re.match(r"\A---\n(.*?)\n---\n", _path.read_text(encoding="utf-8"), re.S).group(1))
    PAIRS += [(_head["id"], old) for old in _head.get("supersedes") or []]


@pytest.fixture(scope="module")
def sample_wb(sample_workspace_template, tmp_path_factory):
    """This module's own copy of the sample workspace: its search and context calls store traces
    (usage), which must not reach the shared template other modules copy (the inbox ranks by use)."""
    import shutil

    target = tmp_path_factory.mktemp("private-sample") / "ws"
    shutil.copytree(sample_workspace_template, target)
    with Workbench.open(target) as bench:
        yield bench


def _viewer(wb, *ids) -> str:
    """A principal who sees every fragment in ``ids`` (the narrowest such, to keep it honest)."""
    fragments = [wb.store.get(i) for i in ids]
    for p in sorted(wb.principals(), key=lambda p: (len(p.orgs), p.name)):
        if p.kind == "person" and all(p.can_see(f.scope, owner=f.owner) for f in fragments):
            return p.name
    raise AssertionError(f"nobody sees {ids}")


def _query_about(old) -> str:
    """The old fragment's own title without its ADR number: the hardest topical query for it."""
    return re.sub(r"^ADR-\d+:\s*", "", old.title)


def test_the_sample_corpus_has_pairs_in_both_orgs():
    assert len(PAIRS) >= 5
    assert {new[:2] for new, _ in PAIRS} == {"nw", "tw"}


@pytest.mark.parametrize("newer,older", PAIRS, ids=[o for _, o in PAIRS])
def test_newer_ranks_above_older_and_older_stays_out_of_context(sample_wb, newer, older):
    old, new = sample_wb.get(older, principal="kb.sync"), sample_wb.get(newer, principal="kb.sync")
    who = _viewer(sample_wb, newer, older)
    query = _query_about(old)
    result = sample_wb.search(query, principal=who, k=20, trace=False)
    ids = [h.id for h in result.hits]
    assert newer in ids, (query, ids)
    if older in ids:                                   # demoted below, and labelled
        assert ids.index(newer) < ids.index(older)
        hit = result.hits[ids.index(older)]
        assert hit.superseded_by == (newer, new.version)
        assert hit.to_dict()["superseded_by"] == {"id": newer, "version": new.version}
    assert all(h.superseded_by is None for h in result.hits if h.id == newer)
    ctx = sample_wb.context(query, principal=who, min_confidence=0.0, budget=100_000)
    served = [i.hit.id for i in ctx.fragments + ctx.avoid]
    assert older not in served and newer in served, served
    assert sample_wb.supersessions(who)[older] == (newer, new.version)


def test_without_demotion_the_old_fragment_would_win_its_own_title(sample_wb):
    """The demotion is what puts the newer fragment first: scored on relevance alone, the old
    fragment matches its own title better (so the test above is not trivially true)."""
    from dataclasses import replace

    from workbench.models import utcnow
    from workbench.retrieval.pipeline import rank

    index = sample_wb.search_index()
    wins = 0
    for newer, older in PAIRS:
        who = sample_wb.principal(_viewer(sample_wb, newer, older))
        ranking = rank(index, _query_about(sample_wb.get(older, principal="kb.sync")), who,
                       replace(sample_wb.settings(), k=20), now=utcnow())
        fused = ranking.parts["fused"]
        wins += fused[index.pos[older]] > fused[index.pos[newer]]
        assert ranking.final[index.pos[older]] < ranking.final[index.pos[newer]]
    assert wins >= 3


def test_an_invisible_superseder_leaves_the_old_fragment_current(sample_workspace, cli):
    older, newer = "nw-adr-0009-env-var-feature-flags", "nw-adr-0014-feature-flags-flagpole"
    query = "feature flags as environment variables in the Helm values"
    with Workbench.open(sample_workspace) as wb:
        before = wb.search(query, principal="marco.bianchi", k=20, trace=False)
        assert older not in [i.hit.id for i in wb.context(query, principal="marco.bianchi", min_confidence=0.0)
                             .fragments]
        # the newer decision moves to a repo marco cannot see
        text = (SAMPLE / "fragments" / "northwind" / "org" / f"{newer}.md").read_text(encoding="utf-8")
        wb.edit(newer, text.replace("scope: {org: northwind}", "scope: {org: northwind, repo: platform-infra}"),
                reason="platform only", actor="priya.raman")
        version = wb.get(newer, principal="priya.raman").version
        after = wb.search(query, principal="marco.bianchi", k=20, trace=False)
        old_hit = next(h for h in after.hits if h.id == older)
        assert old_hit.superseded_by is None and old_hit.to_dict()["superseded_by"] is None
        assert old_hit.rank <= 3                                  # no longer demoted
        assert older not in [h.id for h in before.hits[:3]]
        ctx = wb.context(query, principal="marco.bianchi")
        assert older in [i.hit.id for i in ctx.fragments]
        # no label names the invisible superseder (the old body's own prose is the author's business)
        assert f"{newer}@v" not in ctx.text() and f"{newer}@v" not in json.dumps(ctx.to_dict())
        assert all(item["superseded_by"] is None for item in ctx.to_dict()["fragments"])
        assert older not in wb.supersessions("marco.bianchi")
        assert wb.superseded_by(older, principal="marco.bianchi") is None
        # priya sees both: for her the old fragment is still superseded
        assert wb.supersessions("priya.raman")[older] == (newer, version)
        assert wb.superseded_by(older, principal="priya.raman") == (newer, version)
    r = cli("show", older, "--as", "marco.bianchi", "--json", workspace=sample_workspace)
    assert r.returncode == 0 and json.loads(r.stdout)["superseded_by"] is None
    r = cli("show", older, "--as", "priya.raman", "--json", workspace=sample_workspace)
    assert json.loads(r.stdout)["superseded_by"] == {"id": newer, "version": version}
    r = cli("show", older, "--as", "priya.raman", workspace=sample_workspace)
    assert f"superseded by {newer}@v{version}" in r.stdout


def test_another_orgs_superseder_changes_nothing_for_this_org(sample_workspace, tmp_path):
    """A tidewater fragment that claims to supersede a northwind one is invisible to northwind:
    northwind's results, scores, confidences and labels do not move (no oracle)."""
    query = "feature flags as environment variables in the Helm values"
    older = "nw-adr-0009-env-var-feature-flags"
    with Workbench.open(sample_workspace) as wb:
        def observe():
            r = wb.search(query, principal="priya.raman", k=20, trace=False, now=NOW)
            c = wb.context(query, principal="priya.raman", min_confidence=0.0, now=NOW)
            return ([(h.id, h.rank, h.score, h.confidence, h.superseded_by, dict(h.scores)) for h in r.hits + r.avoid],
                    [(i.hit.id, i.text) for i in c.fragments + c.avoid], wb.supersessions("priya.raman"))
        before = observe()
        folder = tmp_path / "tw"
        folder.mkdir()
        (folder / "tw-adr-0099-hostile.md").write_text(fragment_text(
            "tw-adr-0099-hostile", kind="decision", title="Feature flags as environment variables, replaced",
            body="Feature flags as environment variables in the Helm values are replaced by this.",
            org="tidewater", repo="dispatch", owner="raj.patel", extra=f"supersedes: [{older}]\n"))
        report = wb.ingest([folder], actor="raj.patel")
        assert report.added == ["tw-adr-0099-hostile"]
        assert older not in wb.supersessions("raj.patel")            # raj cannot see the old one
        assert before == observe()



def test_a_query_naming_the_old_fragment_gets_it_labelled(sample_wb):
    older, newer = "nw-adr-0003-client-retry-tokens", "nw-adr-0007-idempotency-keys"
    version = sample_wb.get(newer, principal="marco.bianchi").version
    label = f"superseded by {newer}@v{version}"
    for query in (f"what did {older} decide", "what was RETRY_TOKEN_CACHE_SIZE for"):
        result = sample_wb.search(query, principal="marco.bianchi", trace=False)
        assert result.hits[0].id == older, (query, [h.id for h in result.hits])
        assert result.hits[0].superseded_by == (newer, version)
        ctx = sample_wb.context(query, principal="marco.bianchi")
        item = next(i for i in ctx.fragments if i.hit.id == older)
        assert label in item.text and label in ctx.text()
        assert item.to_dict()["superseded_by"] == {"id": newer, "version": version}
    # an identifier the old fragment shares with others does not count as naming it
    index = sample_wb.search_index()
    mask = index.visible(sample_wb.principal("marco.bianchi"))
    assert index.lexical("bm25").document_frequency("retry_token", mask) > 1
    ctx = sample_wb.context("retry_token field", principal="marco.bianchi", min_confidence=0.0)
    assert older not in [i.hit.id for i in ctx.fragments]


def test_cli_search_shows_the_label(sample_workspace, cli):
    r = cli("search", "nw-adr-0003-client-retry-tokens", "--as", "marco.bianchi", "-k", "3",
            workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    assert "superseded by nw-adr-0007-idempotency-keys@v1" in r.stdout
    r = cli("search", "nw-adr-0003-client-retry-tokens", "--as", "marco.bianchi", "-k", "3", "--json",
            workspace=sample_workspace)
    hits = json.loads(r.stdout)["hits"]
    assert hits[0]["superseded_by"] == {"id": "nw-adr-0007-idempotency-keys", "version": 1}
    assert all(h["superseded_by"] is None for h in hits[1:] if h["id"] != "nw-adr-0003-client-retry-tokens")


def test_supersessions_api_is_per_principal_and_deterministic(sample_workspace, tmp_path):
    with Workbench.open(sample_workspace) as wb:
        nw = wb.supersessions("priya.raman")
        tw = wb.supersessions("lena.fischer")
        assert set(nw) == {old for new, old in PAIRS if new.startswith("nw-")}
        received = {r.fragment_id for r in wb.principal("lena.fischer").received}   # northwind/platform
        assert received and set(tw) == {old for new, old in PAIRS if new.startswith("tw-")
                                        or {new, old} <= received}
        assert all(isinstance(v, tuple) and isinstance(v[1], int) for v in nw.values())
        assert "nw-adr-0003-client-retry-tokens" not in wb.supersessions("hannah.lee")   # cannot see it
        assert set(wb.supersessions("grace.kim")) == set(nw) | set(tw)
        # two superseders: the most recently updated is named; on a tie, the smaller id
        folder = tmp_path / "more"
        folder.mkdir()
        for fid, updated in (("nw-adr-0090-later", "2026-11-01"), ("nw-adr-0091-later", "2026-11-01"),
                             ("nw-adr-0089-earlier", "2026-01-01")):
            (folder / f"{fid}.md").write_text(fragment_text(
                fid, kind="decision", body="Replaces the retry tokens.", repo="payments-api",
                extra=f"supersedes: [nw-adr-0003-client-retry-tokens]\ncreated: 2025-12-01\nupdated: {updated}\n"))
        assert not wb.ingest([folder], actor="marco.bianchi").errors
        assert wb.supersessions("marco.bianchi")["nw-adr-0003-client-retry-tokens"] == ("nw-adr-0090-later", 1)
        assert wb.superseded_by("nw-adr-0003-client-retry-tokens", principal="marco.bianchi") == \
            ("nw-adr-0090-later", 1)
        # archiving every superseder leaves the old fragment superseded (issue 28), named by the archived
        # superseder updated last
        for fid in ("nw-adr-0090-later", "nw-adr-0091-later", "nw-adr-0089-earlier", "nw-adr-0007-idempotency-keys"):
            wb.archive(fid, actor="marco.bianchi", reason="gone")
        last = wb.get("nw-adr-0007-idempotency-keys", principal="marco.bianchi").version
        assert wb.supersessions("marco.bianchi")["nw-adr-0003-client-retry-tokens"] == \
            ("nw-adr-0007-idempotency-keys", last, "archived")


def test_tui_fragment_screen_shows_the_superseded_state(sample_workspace):
    import asyncio

    from tui_support import AppUnderTest, until

    def loaded(app, fid):
        return lambda: getattr(app.screen, "fragment", None) is not None and app.screen.fragment.id == fid \
            and app.pending == 0

    async def run():
        with Workbench.open(sample_workspace) as wb:
            app = AppUnderTest(wb, principal="marco.bianchi", now=NOW, load_model=False)
            async with app.run_test(size=(160, 44)) as pilot:
                app.open_fragment("nw-adr-0003-client-retry-tokens")
                await until(pilot, loaded(app, "nw-adr-0003-client-retry-tokens"))
                await pilot.pause()
                meta = str(app.screen.query_one("#meta").render())
                assert "superseded by nw-adr-0007-idempotency-keys@v1" in meta
                app.open_fragment("nw-adr-0007-idempotency-keys")
                await until(pilot, loaded(app, "nw-adr-0007-idempotency-keys"))
                await pilot.pause()
                assert "superseded by" not in str(app.screen.query_one("#meta").render())

    asyncio.run(run())


# -- authority flows to the newer fragment -----------------------------------------------------

def test_supersedes_passes_authority_to_the_newer_fragment(sample_wb):
    from workbench.rank.authority import visible_authority

    index = sample_wb.search_index()
    mask = index.visible(sample_wb.principal("grace.kim"))
    n_ids = len(index.ids)
    codes = np.unique(np.concatenate([index._links[0] * n_ids + index._links[1],
                                      index._supersedes[0] * n_ids + index._supersedes[1]]))
    as_citation = (codes // n_ids, codes % n_ids)              # the old rule: newer "cites" older
    with_sup, in_with, out_with = visible_authority(mask, index._links, index._sources, index._supersedes)
    cited, in_cited, out_cited = visible_authority(mask, as_citation, index._sources)
    dropped, _, _ = visible_authority(mask, index._links, index._sources)
    for newer, older in PAIRS:
        n, o = index.pos[newer], index.pos[older]
        assert with_sup[n] > dropped[n] and with_sup[n] > cited[n], newer     # the newer gains
        assert with_sup[o] < cited[o], older                   # the older no longer gains from its successor
        assert (in_with[o], out_with[n]) == (in_cited[o], out_cited[n])      # degrees count what is written


@pytest.mark.parametrize("seed", range(6))
def test_visible_pagerank_with_supersedes_equals_networkx(seed):
    from workbench.rank import supersession
    from workbench.rank.authority import edge_arrays, pagerank, visible_authority

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    ids = [f"f{i:03d}" for i in range(n)]
    pos = {fid: i for i, fid in enumerate(ids)}
    edges = [(ids[rng.integers(n)], ids[rng.integers(n)]) for _ in range(rng.integers(0, 2 * n))]
    sup = [(ids[rng.integers(n)], ids[rng.integers(n)]) for _ in range(rng.integers(1, n))]
    sources = [(ids[rng.integers(n)], f"source:r/{rng.integers(4)}.py") for _ in range(rng.integers(0, n))]
    mask = rng.random(n) < 0.7
    links, refs, _ = edge_arrays(ids, edges, sources)
    rank, in_degree, out_degree = visible_authority(mask, links, refs, supersession.edge_arrays(sup, pos))
    seen = {ids[i] for i in np.flatnonzero(mask)}
    expected = pagerank([i for i in ids if i in seen], [(a, b) for a, b in edges if a in seen and b in seen],
                        source_edges=[(a, b) for a, b in sources if a in seen],
                        supersedes=[(a, b) for a, b in sup if a in seen and b in seen])
    for i, fid in enumerate(ids):
        if fid in seen:
            assert rank[i] == pytest.approx(expected[fid][0], abs=1e-6)
            assert (in_degree[i], out_degree[i]) == expected[fid][1:]
        else:
            assert rank[i] == 0


def test_whole_workspace_authority_follows_the_same_rule(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        wb.search_index()
        _, stored = wb.store.authority()
        index = wb.search_index()
        everyone = np.ones(len(index.ids), dtype=bool)
        graph = index.graph_authority(everyone)
        for newer, older in PAIRS:
            assert stored[newer][0] == pytest.approx(graph[newer][0], abs=1e-6)
            assert stored[older][1:] == graph[older][1:]


def test_a_pinned_superseded_fragment_still_reaches_agents_labelled(sample_workspace):
    older, newer = "nw-adr-0003-client-retry-tokens", "nw-adr-0007-idempotency-keys"
    with Workbench.open(sample_workspace) as wb:
        wb.pin(older, scope="org=northwind,repo=payments-api", actor="marco.bianchi", reason="legacy v1 clients")
        ctx = wb.context("kafka consumer lag", principal="marco.bianchi", scope="org=northwind,repo=payments-api")
        pinned = ctx.fragments[0]
        assert pinned.hit.id == older and pinned.hit.scores["pinned"]
        assert f"superseded by {newer}@v1" in pinned.text
        assert [i.hit.id for i in ctx.fragments].count(older) == 1


# -- an archived superseder (issue 28) -----------------------------------------------------------------------

OLD_ADR = "nw-adr-0003-retry-tokens"
NEW_ADR = "nw-adr-0007-keys"


def _adr(fid: str, title: str, body: str, *, repo: str | None = "payments-api", extra: str = "",
         owner: str = "marco.bianchi") -> str:
    from conftest import fragment_text

    return fragment_text(fid, kind="decision", title=title, body=body, repo=repo, extra=extra, owner=owner)


def test_archiving_the_superseder_leaves_what_it_replaced_superseded_and_says_so(backend_config, tmp_path, cli):
    """Archiving ADR-0007 (which supersedes ADR-0003) brought ADR-0003 back into answers without a
    word. Now ADR-0003 stays superseded: withheld from context and agent files, labelled "superseded
    by ...@vN (archived)" where it is shown, and the archive tells the archiver how to bring it back."""
    root, src = tmp_path / "ws", tmp_path / "in"
    Workbench.init(root, config=backend_config).close()
    src.mkdir()
    (src / "old.md").write_text(_adr(OLD_ADR, "ADR-0003: Client retry tokens", "Clients send a retry token; each "
                                     "pod caches retry tokens for ten minutes to drop duplicate payment requests."))
    (src / "new.md").write_text(_adr(NEW_ADR, "ADR-0007: Idempotency keys", "Every payment mutation carries an "
                                     "Idempotency-Key header stored in Postgres for 24 hours.",
                                     extra=f"supersedes: [{OLD_ADR}]\n"))
    assert cli("ingest", str(src), "--as", "marco.bianchi", workspace=root).returncode == 0
    query = "pod cache of client retry tokens for duplicate payment requests"

    def served(wb, who="marco.bianchi"):
        return [i.hit.id for i in wb.context(query, principal=who, min_confidence=0.0).fragments]

    with Workbench.open(root) as wb:
        assert OLD_ADR not in served(wb)
    r = cli("archive", NEW_ADR, "--reason", "payments moved to the ledger's own keys", "--as", "marco.bianchi",
            workspace=root)
    assert r.returncode == 0, r.stderr
    assert f"note: {OLD_ADR} stays superseded by {NEW_ADR} (now archived)" in r.stdout
    with Workbench.open(root) as wb:
        version = wb.get(NEW_ADR, principal="marco.bianchi").version
        assert OLD_ADR not in served(wb)                       # not back in answers
        hit = next(h for h in wb.search(query, principal="marco.bianchi", trace=False).hits if h.id == OLD_ADR)
        assert hit.superseded_by == (NEW_ADR, version, "archived")
        assert hit.superseded_label() == f"superseded by {NEW_ADR}@v{version} (archived)"
        assert hit.to_dict()["superseded_by"] == {"id": NEW_ADR, "version": version, "archived": True}
        assert wb.supersessions("marco.bianchi") == {OLD_ADR: (NEW_ADR, version, "archived")}
        assert wb.superseded_by(OLD_ADR, principal="marco.bianchi") == (NEW_ADR, version, "archived")
        named = wb.context(f"{OLD_ADR} retry tokens", principal="marco.bianchi", min_confidence=0.0)
        assert f"> superseded by {NEW_ADR}@v{version} (archived)" in named.text()   # asked by name: labelled
        files, selection = wb.render_agents("agents-md", scope="org=northwind,repo=payments-api",
                                            principal="marco.bianchi")
        assert OLD_ADR not in files["AGENTS.md"] and selection.superseded == 1
    r = cli("show", OLD_ADR, "--as", "marco.bianchi", workspace=root)
    assert f"superseded by {NEW_ADR}@v{version} (archived)" in r.stdout and "neither is current" in r.stdout
    # bringing it back is explicit: the archived ADR no longer lists it
    text = _adr(NEW_ADR, "ADR-0007: Idempotency keys", "Every payment mutation carries an Idempotency-Key header "
                "stored in Postgres for 24 hours.", extra="status: archived\n")
    with Workbench.open(root) as wb:
        wb.edit(NEW_ADR, text, reason="ADR-0003 applies again", actor="marco.bianchi")
        assert OLD_ADR in served(wb) and wb.supersessions("marco.bianchi") == {}


def test_an_archived_superseder_the_caller_cannot_see_changes_nothing_for_it(workspace, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "old.md").write_text(_adr(OLD_ADR, "ADR-0003: Client retry tokens", "Pods cache client retry tokens.",
                                     repo=None))
    (src / "new.md").write_text(_adr(NEW_ADR, "ADR-0007: Idempotency keys", "Idempotency keys everywhere.",
                                     repo="platform-infra", extra=f"supersedes: [{OLD_ADR}]\n", owner="priya.raman"))
    with Workbench.open(workspace) as wb:
        assert not wb.ingest([src], actor="priya.raman").errors
        wb.archive(NEW_ADR, reason="gone", actor="priya.raman")
        version = wb.get(NEW_ADR, principal="priya.raman").version
        assert wb.supersessions("priya.raman") == {OLD_ADR: (NEW_ADR, version, "archived")}
        assert wb.supersessions("marco.bianchi") == {}            # marco cannot see platform-infra
        assert wb.superseded_by(OLD_ADR, principal="marco.bianchi") is None
        assert wb.replaced_by(NEW_ADR, principal="priya.raman") == [OLD_ADR]
