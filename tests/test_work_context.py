"""Context for the work at hand: applies_to globs, the path rule, context --paths / --diff (a real git
repository), a diff on stdin, MCP, scope, Cursor rules and the golden paths: entries."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import write_fragment
from workbench import Workbench
from workbench.errors import UserError
from workbench.ingest.diffs import diff_paths
from workbench.rank import paths as rule


# -- the pure rule ---------------------------------------------------------------------------

def test_globs_match_and_specificity():
    assert rule.glob_match("services/payments/**", "services/payments/stripe_client.py")
    assert rule.glob_match("services/payments/**", "services/payments/a/b.py")
    assert not rule.glob_match("services/payments/*", "services/payments/a/b.py")
    assert rule.glob_match("**/*.py", "x.py") and rule.glob_match("src/", "src/a/b.go")
    assert not rule.glob_match("services/pay*", "services/payments/x.py")
    exact = rule.specificity("services/payments/stripe_client.py", "services/payments/stripe_client.py")
    folder = rule.specificity("services/payments/**", "services/payments/stripe_client.py")
    anywhere = rule.specificity("**", "services/payments/stripe_client.py")
    assert exact == 1.0 > folder > anywhere == 0.0
    for bad in ("/abs/**", "a/../b", "a/**b", "a/[ab].py", "", " x"):
        assert rule.glob_problem(bad), bad
    assert rule.normalise_path("./a//b/../c.py") == "a/c.py"
    for bad in ("/etc/passwd", "../x", "a/../../x", "C:\\x"):
        with pytest.raises(UserError):
            rule.normalise_path(bad)


def test_the_strongest_link_wins_with_its_reason_and_visibility_is_the_callers():
    index = rule.PathIndex([
        rule.Linked("adr", "decision", "ann", applies_to=("services/payments/**",)),
        rule.Linked("exact", "runbook", "ann", applies_to=("services/payments/stripe_client.py",)),
        rule.Linked("cites", "note", "bob", sources=("services/payments/stripe_client.py",)),
        rule.Linked("chunk", "code", "bob", sources=("services/payments/stripe_client.py",), ingested=True),
        rule.Linked("near", "note", "bob", sources=("services/payments/refunds.py",)),
        rule.Linked("far", "note", "bob", sources=("services/ledger/x.py",)),
        rule.Linked("secret", "runbook", "bob", applies_to=("**",)),
        rule.Linked("owned", "runbook", "team"),
    ])
    links = index.links(["services/payments/stripe_client.py"], lambda fid: fid != "secret",
                        owners={"services/payments/stripe_client.py": ["team"]})
    assert "secret" not in links and "far" not in links
    order = rule.order({fid: (link.score, link.paths) for fid, link in links.items()})
    assert order == ["exact", "cites", "adr", "chunk", "near", "owned"]
    assert links["adr"].reason == "applies to services/payments/**"
    assert links["cites"].reason == "cites services/payments/stripe_client.py"
    assert links["chunk"].reason == "ingested from services/payments/stripe_client.py"
    assert links["near"].reason.startswith("cites services/payments/refunds.py, next to")
    assert "CODEOWNERS" in links["owned"].reason
    assert rule.combine(0.9, None) == 0.9
    assert rule.combine(1.0, 0.0, 0.6) == pytest.approx(0.6) and rule.combine(0.0, 1.0, 0.6) == pytest.approx(0.4)


def test_unified_diffs_name_their_files():
    text = ("diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\n--- not a header\n"
            "+++ nor this\n c\ndiff --git a/old.md b/new.md\nrename from old.md\nrename to new.md\n"
            "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n")
    assert diff_paths(text) == ["x.py", "old.md", "new.md", "gone.txt"]
    with pytest.raises(UserError):
        diff_paths("no diff here")


# -- applies_to on both backends ----------------------------------------------------------------

def test_applies_to_is_validated_stored_shown_exported_and_served(backend_config, tmp_path, cli):
    root = tmp_path / "ws"
    Workbench.init(root, config=backend_config).close()
    docs = tmp_path / "docs"
    write_fragment(docs, "pay-runbook", kind="runbook", title="Payments runbook", body="Call the PSP on-call.",
                   extra='applies_to: ["services/payments/**", "sdk/*.py"]\n')
    write_fragment(docs, "ledger-secret", kind="runbook", title="Ledger only", repo="ledger", owner="sofia.okafor",
                   body="Ledger people only.", extra='applies_to: ["services/**"]\n')
    assert cli("ingest", str(docs), "--as", "kb.sync", workspace=root).returncode == 0
    bad = tmp_path / "bad"
    write_fragment(bad, "bad-glob", extra='applies_to: ["/etc/**"]\n')
    r = cli("ingest", str(bad), "--as", "kb.sync", workspace=root)
    assert r.returncode != 0 and "bad-glob.md" in (r.stdout + r.stderr) and "applies_to" in (r.stdout + r.stderr)
    with Workbench.open(root) as wb:
        f = wb.get("pay-runbook", principal="marco.bianchi")
        assert f.content.applies_to() == ("services/payments/**", "sdk/*.py")
        written = wb.export_files(str(tmp_path / "out"), principal="marco.bianchi")
    text = next(p for p in written if p.name == "pay-runbook.md").read_text()
    assert 'applies_to: [services/payments/**, sdk/*.py]' in text or "applies_to:" in text
    from workbench.ingest.files import parse_fragment

    assert parse_fragment(text, file="pay-runbook.md").content.applies_to() == ("services/payments/**", "sdk/*.py")
    shown = cli("show", "pay-runbook", "--as", "marco.bianchi", workspace=root)
    assert "applies to: services/payments/**, sdk/*.py" in shown.stdout
    # hannah.lee sees payments-api? no: she is in checkout-web only; agent.nw-coder is in payments-api
    r = cli("context", "--paths", "services/payments/stripe_client.py", "--as", "agent.nw-coder", "--json",
            workspace=root)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    reasons = {i["id"]: i["reason"] for i in data["fragments"]}
    assert reasons == {"pay-runbook": "applies to services/payments/**"}      # ledger-secret is not his to see
    assert "ledger" not in r.stdout.lower().replace("ledger-secret", "") and "ledger-secret" not in r.stdout
    trace = cli("trace", data["trace_id"], "--as", "agent.nw-coder", "--json", workspace=root)
    settings = json.loads(trace.stdout)["settings"]
    assert settings["paths"] == ["services/payments/stripe_client.py"] and "path_weight" in settings
    # sofia sees both (the more specific glob first)
    both = json.loads(cli("context", "--paths", "services/payments/x.py", "--as", "sofia.okafor", "--json",
                          workspace=root).stdout)
    assert [i["id"] for i in both["fragments"]] == ["pay-runbook", "ledger-secret"]


def test_bad_work_paths_and_ranges_exit_2(sample_workspace, cli, tmp_path):
    for args in (["--paths", "../outside.py"], ["--paths", "/etc/passwd"], ["--diff", "HEAD~1..HEAD", "--repo",
                 str(tmp_path)], ["--diff", "--bad-option"], []):
        r = cli("context", *args, "--as", "marco.bianchi", workspace=sample_workspace)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (args, r.stderr)


# -- a real git repository: context --diff ------------------------------------------------------

def git(repo, *args):
    env = {**os.environ, "GIT_AUTHOR_NAME": "Sofia Okafor", "GIT_AUTHOR_EMAIL": "sofia.okafor@northwind.example",
           "GIT_COMMITTER_NAME": "Sofia Okafor", "GIT_COMMITTER_EMAIL": "sofia.okafor@northwind.example",
           "GIT_AUTHOR_DATE": "2025-01-10T10:00:00", "GIT_COMMITTER_DATE": "2025-01-10T10:00:00"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def test_context_diff_on_a_real_commit_returns_what_governs_the_changed_files(workspace, tmp_path, cli):
    repo = tmp_path / "ledger"
    (repo / "src").mkdir(parents=True)
    (repo / "docs").mkdir()
    git(repo, "init", "-q")
    (repo / "src" / "posting.py").write_text('def post(entry):\n    """Post a balanced entry."""\n    return entry\n')
    (repo / "src" / "fx.py").write_text("def rate():\n    return 1\n")
    (repo / "docs" / "guide.md").write_text("# Guide\n\nHow to run the ledger locally.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first")
    assert cli("ingest", "--git", str(repo), "--scope", "org=northwind,repo=ledger", "--owner", "sofia.okafor",
               workspace=workspace).returncode == 0
    rules = tmp_path / "rules"
    write_fragment(rules, "posting-rules", kind="policy", title="Posting must balance", repo="ledger",
                   owner="sofia.okafor", body="Every entry balances to zero.", extra='applies_to: ["src/posting.py"]\n')
    write_fragment(rules, "fx-rules", kind="decision", title="FX snapshots", repo="ledger", owner="sofia.okafor",
                   body="Rates are snapshotted.", extra='applies_to: ["src/fx.py"]\n')
    assert cli("ingest", str(rules), "--as", "kb.sync", workspace=workspace).returncode == 0
    (repo / "src" / "posting.py").write_text('def post(entry):\n    """Post a balanced entry."""\n    return check(entry)\n')
    git(repo, "commit", "-qam", "second")
    r = cli("context", "--diff", "HEAD~1..HEAD", "--repo", str(repo), "--as", "sofia.okafor", "--json",
            workspace=workspace)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["paths"] == ["src/posting.py"]
    reasons = {i["id"]: i["reason"] for i in data["fragments"]}
    assert reasons["posting-rules"] == "applies to src/posting.py"
    assert [i["id"] for i in data["fragments"]][0] == "posting-rules"
    assert any(fid.startswith("git.") and reason == "ingested from src/posting.py" for fid, reason in reasons.items())
    assert "fx-rules" not in reasons and "why: applies to src/posting.py" in data["fragments"][0]["text"]
    # the same diff on standard input
    patch = git(repo, "diff", "HEAD~1..HEAD")
    piped = cli("context", "--diff", "-", "--as", "sofia.okafor", "--json", input=patch, workspace=workspace)
    assert piped.returncode == 0, piped.stderr
    assert [i["id"] for i in json.loads(piped.stdout)["fragments"]] == [i["id"] for i in data["fragments"]]
    bad = cli("context", "--diff", "HEAD~9..HEAD", "--repo", str(repo), "--as", "sofia.okafor", workspace=workspace)
    assert bad.returncode == 2 and "git diff HEAD~9..HEAD failed" in bad.stderr


# -- the sample: --paths with a query, Cursor rules, eval ------------------------------------------

def test_sample_context_paths_with_a_query_and_cursor_rules(sample_wb):
    r = sample_wb.context("what to check before changing retries", paths=["nwpay/http/retry.py"],
                          principal="marco.bianchi", budget=4000)
    ids = {i.hit.id: i.hit.reason for i in r.fragments + r.avoid}
    assert ids.get("nw-code-retry-with-jitter") == "cites nwpay/http/retry.py"
    assert ids.get("nw-ap-retry-without-idempotency-key") == "applies to nwpay/http/retry.py"
    files, _ = sample_wb.render_agents("cursor-rules", principal="marco.bianchi",
                                       scope="org=northwind,repo=payments-api", budget=100_000)
    declared = [t for t in files.values() if "globs: nwpay/api/ratelimit.*\n" in t]
    assert declared and all("alwaysApply: false" in t for t in declared)


def test_eval_reports_paths_entries_apart(sample_wb):
    from conftest import SAMPLE

    report = sample_wb.eval_golden(str(SAMPLE / "golden.yaml"), pipelines=["bm25"])
    assert report["paths"]["queries"] >= 20 and report["paths"]["recall@10"] >= 0.9
    assert report["bm25"]["queries"] >= 80   # the query entries, as before


# -- MCP --------------------------------------------------------------------------------------

async def test_mcp_context_takes_paths_and_a_diff(sample_workspace):
    from mcp import Client
    from test_mcp import params, text_of

    async with Client(params(sample_workspace, "agent.nw-coder"), read_timeout_seconds=120) as client:
        tools = await client.list_tools()
        context = next(t for t in tools.tools if t.name == "context")
        assert {"paths", "diff"} <= set(context.input_schema["properties"])
        assert "query" not in context.input_schema.get("required", [])
        got = await client.call_tool("context", {"paths": ["nwpay/api/idempotency.py"], "budget": 3000})
        assert not got.is_error, text_of(got)
        reasons = {i["id"]: i.get("reason") for i in got.structured_content["fragments"]}
        assert reasons.get("nw-adr-0007-idempotency-keys") == "cites nwpay/api/idempotency.py"
        assert "why: cites nwpay/api/idempotency.py" in text_of(got)
        diff = "--- a/nwpay/money.py\n+++ b/nwpay/money.py\n@@ -1 +1 @@\n-a\n+b\n"
        via_diff = await client.call_tool("context", {"diff": diff, "budget": 3000})
        assert not via_diff.is_error and via_diff.structured_content["paths"] == ["nwpay/money.py"]
        # tidewater's fragments citing the same kind of path never reach a northwind agent
        other = await client.call_tool("context", {"paths": ["internal/outbox/relay.go"], "budget": 3000})
        assert not other.is_error and "tw-" not in json.dumps(other.structured_content)
        nothing = await client.call_tool("context", {"budget": 100})
        assert nothing.is_error
