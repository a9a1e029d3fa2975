"""Search for the work at hand (``search --paths`` / ``--diff``, the MCP ``search`` tool's ``paths``):
path-linked fragments ranked with the query by rank/paths.py's rule, each hit with its reason, only from
the caller's visibility; and context or search given only paths that finds nothing is an abstention the
gap report shows ("paths: ...")."""

from __future__ import annotations

import json

import pytest

from conftest import write_fragment
from workbench import Workbench

PAYMENTS = "services/payments/stripe_client.py"


@pytest.fixture
def paths_ws(backend_config, tmp_path):
    """A payments runbook that applies to services/payments/**, and a ledger runbook (applies to
    services/**) that only the ledger's people see."""
    root = tmp_path / "ws"
    Workbench.init(root, config=backend_config).close()
    docs = tmp_path / "docs"
    write_fragment(docs, "pay-runbook", kind="runbook", title="Payments runbook",
                   body="Call the PSP on-call when Stripe charges fail.",
                   extra='applies_to: ["services/payments/**"]\n')
    write_fragment(docs, "ledger-secret", kind="runbook", title="Ledger only", repo="ledger", owner="sofia.okafor",
                   body="Ledger people only.", extra='applies_to: ["services/**"]\n')
    for fid, repo, owner in (("pay-cites", "payments-api", "marco.bianchi"),
                             ("ledger-cites", "ledger", "sofia.okafor")):
        write_fragment(docs, fid, title=f"App entry point of {repo}", repo=repo, owner=owner,
                       body="How the app starts.",
                       extra=f"sources:\n  - {{repo: {repo}, path: src/app.py}}\n")
    with Workbench.open(root) as wb:
        assert not wb.ingest([docs], actor="kb.sync").errors
    return root


def test_search_by_paths_ranks_by_the_rule_with_reasons_in_scope_and_traced(paths_ws):
    with Workbench.open(paths_ws) as wb:
        alone = wb.search(paths=[PAYMENTS], principal="agent.nw-coder")
        assert [(h.id, h.reason) for h in alone.hits] == [("pay-runbook", "applies to services/payments/**")]
        assert alone.paths == [PAYMENTS] and alone.to_dict()["paths"] == [PAYMENTS]
        assert alone.to_dict()["hits"][0]["reason"] == "applies to services/payments/**"
        assert "ledger" not in json.dumps(alone.to_dict()).replace("ledger-secret", "") \
            and "ledger-secret" not in json.dumps(alone.to_dict())   # not his to see, not even in a reason
        settings = wb.trace(alone.trace_id, principal="agent.nw-coder")["settings"]
        assert settings["paths"] == [PAYMENTS] and settings["path_weight"] == 0.6
        both = wb.search(paths=["./services/payments/x.py"], principal="sofia.okafor")
        assert [h.id for h in both.hits] == ["pay-runbook", "ledger-secret"]   # the more specific glob first
        asked = wb.search("who do I call when Stripe charges fail", paths=[PAYMENTS], principal="agent.nw-coder")
        hit = next(h for h in asked.hits if h.id == "pay-runbook")
        assert hit.reason == "applies to services/payments/**" and hit.scores["relevance"] is not None
        assert hit.score == pytest.approx(0.6 * hit.scores["path"] + 0.4 * hit.scores["relevance"])
        weighted = wb.search("who do I call when Stripe charges fail", paths=[PAYMENTS], path_weight=1.0,
                             principal="agent.nw-coder")
        assert next(h for h in weighted.hits if h.id == "pay-runbook").score == pytest.approx(hit.scores["path"])


def test_paths_alone_that_find_nothing_are_an_abstention_in_the_gap_report(paths_ws):
    with Workbench.open(paths_ws) as wb:
        composed = wb.context(paths=["docs/unrelated.md"], principal="agent.nw-coder")
        assert composed.abstained and composed.fragments == []
        found = wb.search(paths=["docs/unrelated.md"], principal="agent.nw-coder")
        assert found.hits == []
        answered = wb.context(paths=[PAYMENTS], principal="agent.nw-coder")
        assert not answered.abstained
        report = wb.gaps(principal="agent.nw-coder")
        group = next(g for g in report.groups if g.question == "paths: docs/unrelated.md")
        assert dict(group.kinds) == {"context": 1, "search": 1} and dict(group.reasons) == {"abstained": 2}
        assert not [g for g in report.groups if PAYMENTS in g.question]


def test_search_paths_on_the_sample_agrees_with_context(sample_wb):
    query, paths = "what to check before changing retries", ["nwpay/http/retry.py"]
    found = sample_wb.search(query, paths=paths, principal="marco.bianchi", k=20)
    reasons = {h.id: h.reason for h in found.hits + found.avoid}
    assert reasons.get("nw-code-retry-with-jitter") == "cites nwpay/http/retry.py"
    assert reasons.get("nw-ap-retry-without-idempotency-key") == "applies to nwpay/http/retry.py"
    assert "nw-ap-retry-without-idempotency-key" in [h.id for h in found.avoid]
    composed = sample_wb.context(query, paths=paths, principal="marco.bianchi", budget=100_000)
    served = {i.hit.id: i.hit.reason for i in composed.fragments + composed.avoid if i.hit.reason}
    assert served and all(reasons.get(fid) == why for fid, why in served.items() if fid in reasons)
    scores = [h.score for h in found.hits]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.duckdb_only("the CLI face over the same core")
def test_cli_search_paths_table_json_diff_and_bad_input(sample_workspace, cli):
    r = cli("search", "--paths", "nwpay/api/idempotency.py", "--as", "agent.nw-coder", "--json",
            workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["paths"] == ["nwpay/api/idempotency.py"]
    assert {h["id"]: h.get("reason") for h in data["hits"]}["nw-adr-0007-idempotency-keys"] == \
        "cites nwpay/api/idempotency.py"
    shown = cli("search", "--paths", "nwpay/api/idempotency.py", "--as", "agent.nw-coder", workspace=sample_workspace)
    assert shown.returncode == 0, shown.stderr
    line = next(li for li in shown.stdout.splitlines() if "nw-adr-0007-idempotency-keys" in li)
    assert "cites nwpay/api/idempotency.py" in line and " why" in shown.stdout.splitlines()[0]
    traced = cli("trace", data["trace_id"], "--as", "agent.nw-coder", workspace=sample_workspace).stdout
    assert "paths: nwpay/api/idempotency.py" in traced
    assert "nw-adr-0007-idempotency-keys@v" in traced and "why: cites nwpay/api/idempotency.py" in traced
    diff = "--- a/nwpay/money.py\n+++ b/nwpay/money.py\n@@ -1 +1 @@\n-a\n+b\n"
    piped = cli("search", "--diff", "-", "--as", "agent.nw-coder", "--json", input=diff, workspace=sample_workspace)
    assert piped.returncode == 0 and json.loads(piped.stdout)["paths"] == ["nwpay/money.py"], piped.stderr
    for args in (["--paths", "../outside.py"], ["--paths", "/etc/passwd"], []):
        bad = cli("search", *args, "--as", "agent.nw-coder", workspace=sample_workspace)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr, (args, bad.stderr)


async def test_mcp_search_takes_paths_and_stays_in_scope(sample_workspace):
    from mcp import Client
    from test_mcp import params, text_of

    async with Client(params(sample_workspace, "agent.nw-coder"), read_timeout_seconds=120) as client:
        tools = await client.list_tools()
        search = next(t for t in tools.tools if t.name == "search")
        assert {"paths", "diff"} <= set(search.input_schema["properties"])
        assert "query" not in search.input_schema.get("required", [])
        got = await client.call_tool("search", {"paths": ["nwpay/api/idempotency.py"]})
        assert not got.is_error, text_of(got)
        assert got.structured_content["paths"] == ["nwpay/api/idempotency.py"]
        reasons = {h["id"]: h.get("reason") for h in got.structured_content["hits"]}
        assert reasons.get("nw-adr-0007-idempotency-keys") == "cites nwpay/api/idempotency.py"
        assert "why: cites nwpay/api/idempotency.py" in text_of(got)
        other = await client.call_tool("search", {"paths": ["internal/outbox/relay.go"]})
        assert not other.is_error and "tw-" not in json.dumps(other.structured_content)
        assert (await client.call_tool("search", {})).is_error


def test_work_paths_as_the_readme_says_other_repositories_globs_absolute_and_dotdot(paths_ws):
    """Paths match whatever repository a source names; the working scope (and visibility) decides which
    repository's fragments come. Work paths are normalised; absolute ones, ones leaving the repository and
    globs (a pattern no shell expanded) are refused with the reason."""
    from workbench.errors import UserError

    with Workbench.open(paths_ws) as wb:
        def cited(**kw):
            composed = wb.context(paths=["src/app.py"], **kw)
            return {i.hit.id: i.hit.reason for i in composed.fragments}

        assert cited(principal="sofia.okafor") == {"pay-cites": "cites src/app.py", "ledger-cites": "cites src/app.py"}
        assert cited(principal="sofia.okafor", scope="org=northwind,repo=ledger") == \
            {"ledger-cites": "cites src/app.py"}
        assert cited(principal="agent.nw-coder") == {"pay-cites": "cites src/app.py"}   # ledger's is not his
        assert [h.id for h in wb.search(paths=["src/./x/../app.py"], principal="agent.nw-coder").hits] == ["pay-cites"]
        for bad, why in (("/work/src/app.py", "absolute"), ("../src/app.py", "leaves the repository"),
                         ("src/*.py", "a glob"), ("services/**", "a glob"), ("src/app?.py", "a glob")):
            for call in (wb.context, wb.search):
                with pytest.raises(UserError, match=why):
                    call(paths=[bad], principal="agent.nw-coder")
        assert wb.search(paths=["pages/[id].tsx"], principal="agent.nw-coder").hits == []   # a file, not a glob
