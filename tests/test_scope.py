"""Scope is a correctness property: no path shows a fragment outside the caller's scope.

The oracle below is written independently of ``Principal.can_see``; hypothesis generates
principals and checks every read path (list, get, history, diff, versions) against it.

The workspace carries a published context (issue 30): Northwind's set of its payments-api scope,
published, and subscribed by ``SUBSCRIBER``: a member of that scope also receives exactly the
published fragments (``published``), on every path, and nothing else of Northwind.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import BACKENDS, config_for, examples
from workbench import Workbench
from workbench.errors import NotFound
from workbench.models import Principal, Scope

ORGS = {"northwind": (["payments-api", "ledger"], ["backend", "sre"]),
        "tidewater": (["dispatch", "fleet-app"], ["backend", "data"])}
SESSIONS = ["s-1", "s-2"]
OWNERS = {"northwind": "priya.raman", "tidewater": "lena.fischer"}
PUBLISHED_SET = Scope("northwind", "payments-api")        # the set northwind publishes (its owner: priya.raman)
SUBSCRIBER = Scope("tidewater", persona="data")            # the scope that subscribes (led by lena.fischer)


def all_scopes():
    for org, (repos, personas) in ORGS.items():
        for repo, persona, session in itertools.product([None, *repos], [None, *personas], [None, *SESSIONS]):
            yield Scope(org, repo, persona, session)


def fid(scope: Scope) -> str:
    return "f-" + "-".join(v or "x" for v in scope.to_dict().values())


@pytest.fixture(scope="module", params=BACKENDS)
def scoped(request, tmp_path_factory):
    """The same workspace on each store backend (the differential tests run on both)."""
    root = tmp_path_factory.mktemp("scope") / "ws"
    src = root.parent / "src"
    for scope in all_scopes():
        lines = [f"org: {scope.org}"] + [f"{k}: {v}" for k, v in scope.to_dict().items() if v and k != "org"]
        (src / scope.org).mkdir(parents=True, exist_ok=True)
        (src / scope.org / f"{fid(scope)}.md").write_text(
            f"---\nid: {fid(scope)}\nkind: note\ntitle: note in {scope}\nscope: {{{', '.join(lines)}}}\n"
            f"owner: {OWNERS[scope.org]}\napplies_to: [\"deploy/**\"]\n---\n\nshared words about deploys in {scope}\n")
    bench = Workbench.init(root, config=config_for(request.param, request, root.parent / "config"))
    added = 0
    for org, owner in OWNERS.items():  # each org's owner writes their own org's fragments (sessions too)
        report = bench.ingest([src / org], actor=owner)
        assert not report.errors, report.errors
        added += len(report.added)
    assert added == len(list(all_scopes()))
    bench.edit(fid(Scope("northwind")), "second version", reason="v2", actor="priya.raman")
    bench.set_create("pay", scope=str(PUBLISHED_SET), actor="priya.raman")
    bench.publish("pay", actor="priya.raman")
    bench.subscribe("northwind/pay", scope=str(SUBSCRIBER), actor="lena.fischer")
    yield bench
    bench.close()


def oracle(p: Principal, s: Scope, owner: str) -> bool:
    grants_repo = f"{s.org}/{s.repo}" in p.repos or f"{s.org}/*" in p.repos
    grants_persona = f"{s.org}/{s.persona}" in p.personas or f"{s.org}/*" in p.personas
    return (s.org in p.orgs
            and (s.repo is None or grants_repo)
            and (s.persona is None or grants_persona)
            and (s.session is None or s.session in p.sessions or owner == p.name))


def published() -> set[str]:
    """What the published set holds, stated apart from the code: the fragments of its org that apply
    in its scope (no level both set differs), none session-scoped."""
    return {fid(s) for s in all_scopes() if s.org == PUBLISHED_SET.org and s.session is None
            and s.repo in (None, PUBLISHED_SET.repo)}


def expected_for(p: Principal) -> set[str]:
    """What ``p`` sees: its scopes' fragments, and the published ones when it is a member of the
    subscribing scope."""
    seen = {fid(s) for s in all_scopes() if oracle(p, s, OWNERS[s.org])}
    return seen | (published() if oracle(p, SUBSCRIBER, None) else set())


def grants(org_names, kind_index):
    return st.lists(st.sampled_from([f"{o}/{n}" for o in org_names for n in [*ORGS[o][kind_index], "*"]]),
                    unique=True, max_size=4)


principals = st.builds(
    lambda name, orgs, repos, personas, sessions: Principal(name=name, orgs=tuple(orgs), repos=tuple(repos),
                                                            personas=tuple(personas), sessions=tuple(sessions)),
    name=st.sampled_from(["someone", "priya.raman", "lena.fischer"]),
    orgs=st.lists(st.sampled_from(sorted(ORGS)), unique=True, max_size=2),
    repos=grants(sorted(ORGS), 0), personas=grants(sorted(ORGS), 1),
    sessions=st.lists(st.sampled_from(SESSIONS), unique=True, max_size=2))


@settings(max_examples=examples(75), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(principal=principals)
def test_no_read_path_leaks(scoped, principal):
    expected = expected_for(principal)
    listed = {f.id for f in scoped.list(principal=principal)}
    assert listed == expected
    for org in ORGS:  # a --scope filter narrows, it never widens
        within = {f.id for f in scoped.list(principal=principal, scope=Scope(org))}
        assert within == {i for i in expected if f"-{org}-" in i + "-"}
    for scope in all_scopes():
        i = fid(scope)
        if i in expected:
            assert scoped.get(i, principal=principal).id == i
            assert scoped.history(i, principal=principal)
        else:
            for read in (lambda: scoped.get(i, principal=principal),
                         lambda: scoped.get(i, version=1, principal=principal),
                         lambda: scoped.history(i, principal=principal),
                         lambda: scoped.diff(i, 1, 1, principal=principal)):
                with pytest.raises(NotFound, match=f"unknown fragment '{i}'"):
                    read()


WORDS = ["deploys", "shared", "words", "note", "about", "rollback", "kafka", "northwind", "tidewater", "repo"]


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(principal=principals, words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
       k=st.integers(1, 40), pipeline=st.sampled_from(["hybrid", "bm25", "dense"]))
def test_search_context_and_traces_never_leak(scoped, principal, words, k, pipeline):
    query = " ".join(words)
    expected = expected_for(principal)
    result = scoped.search(query, principal=principal, k=k, pipeline=pipeline)
    served = [h.id for h in result.hits + result.avoid]
    assert set(served) <= expected
    # the filter runs before the top-k cut: k hits whenever k visible fragments match
    matching = len(expected) if pipeline != "bm25" else len(
        {f.id for f in scoped.list(principal=principal)} & _lexical_matches(scoped, query))
    assert len(result.hits) == min(k, matching)
    ctx = scoped.context(query, principal=principal, budget=400)
    assert {i.hit.id for i in ctx.fragments + ctx.avoid} <= expected
    # a trace shows its caller everything it served, and is "unknown" to everyone else
    assert {i["id"] for i in scoped.trace(result.trace_id, principal=principal)["served"]} == set(served)
    for viewer in ("priya.raman", "lena.fischer", "grace.kim"):
        if viewer == principal.name:
            continue
        with pytest.raises(NotFound, match="unknown trace"):
            scoped.trace(result.trace_id, principal=viewer)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(principal=principals, words=st.lists(st.sampled_from(WORDS), max_size=3))
def test_search_and_context_by_paths_serve_exactly_what_the_caller_sees(scoped, principal, words):
    """Every fragment applies to deploy/**: search by paths (with or without a query) serves exactly the
    caller's visible fragments (the published ones to a subscriber's member), context a subset."""
    expected = expected_for(principal)
    query = " ".join(words) or None
    result = scoped.search(query, paths=["deploy/app.yaml"], principal=principal, k=100, pipeline="bm25",
                           calibrate=False)
    served = {h.id for h in result.hits + result.avoid}
    assert served == expected if len(expected) <= 100 else served <= expected
    assert all(h.reason == "applies to deploy/**" for h in result.hits)
    ctx = scoped.context(query, paths=["deploy/app.yaml"], principal=principal, budget=400)
    assert {i.hit.id for i in ctx.fragments + ctx.avoid} <= expected
    assert {i["id"] for i in scoped.trace(result.trace_id, principal=principal)["served"]} == served


def _lexical_matches(bench, query: str) -> set[str]:
    index = bench.search_index()
    scores = index.lexical("bm25").scores(query)
    return {index.ids[i] for i in range(len(index.ids)) if scores[i] > 0}


def test_eval_runs_as_the_query_principal(scoped, tmp_path):
    golden = tmp_path / "g.yaml"
    hidden = fid(Scope("tidewater", "dispatch"))
    golden.write_text(f"queries:\n- id: q\n  query: shared words about deploys\n  principal: priya.raman\n"
                      f"  relevant: [{hidden}]\n")
    report = scoped.eval_golden(str(golden), pipelines=["bm25", "dense", "hybrid"])
    assert all(report[p]["recall@100"] == 0.0 for p in ("bm25", "dense", "hybrid"))


def test_principal_rules_by_example():
    p = Principal("marco", orgs=("northwind",), repos=("northwind/payments-api",), personas=("northwind/*",))
    assert p.can_see(Scope("northwind"))
    assert p.can_see(Scope("northwind", repo="payments-api", persona="sre"))
    assert not p.can_see(Scope("northwind", repo="ledger"))
    assert not p.can_see(Scope("tidewater"))
    assert not p.can_see(Scope("northwind", session="s-1"))
    assert p.can_see(Scope("northwind", session="s-1"), owner="marco")
    lead = Principal("l", orgs=("northwind",), lead_of=(Scope("northwind", repo="ledger"),))
    assert lead.leads(Scope("northwind", repo="ledger", persona="sre"))
    assert not lead.leads(Scope("northwind"))


@pytest.mark.parametrize("text,expected", [
    ("org=a", Scope("a")),
    ("org=a,repo=r,persona=p,session=s", Scope("a", "r", "p", "s")),
    (" repo=r , org=a ", Scope("a", "r")),
])
def test_scope_parse(text, expected):
    assert Scope.parse(text) == expected
    assert Scope.parse(str(expected)) == expected


@pytest.mark.parametrize("text", ["", "repo=r", "org=", "org=a,org=b", "org=a,team=x", "a"])
def test_scope_parse_rejects(text):
    from workbench.errors import UserError

    with pytest.raises(UserError):
        Scope.parse(text)


def test_a_subscriber_receives_exactly_the_published_fragments(scoped):
    member = Principal("someone", orgs=("tidewater",), personas=("tidewater/data",))
    assert published() and published() <= expected_for(member)
    assert {f.id for f in scoped.list(principal=member)} == expected_for(member)
    hits = scoped.search("shared words about deploys", principal=member, k=100, pipeline="bm25", calibrate=False).hits
    via = {h.id: h.via for h in hits}
    assert {i for i, v in via.items() if v} == published() & set(via) and len(published() & set(via)) >= 3
    assert set(via.values()) <= {None, "northwind/pay"}
    outside = Principal("someone", orgs=("tidewater",), personas=("tidewater/backend",))
    assert not {f.id for f in scoped.list(principal=outside)} & published()
