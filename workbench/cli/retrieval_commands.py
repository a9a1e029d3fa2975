"""Command definitions for retrieval: search, context, trace, eval and index."""

from __future__ import annotations

import argparse
import sys

from .main import command
from .main import open_workbench as _open
from .render import emit_json, table


def add_retrieval_commands(sub: argparse._SubParsersAction) -> None:
    def cmd(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("query", help="what to look for")
        p.add_argument("--as", dest="principal", metavar="PRINCIPAL",
                       help="the principal asking (default: $WORKBENCH_PRINCIPAL, else default_principal)")
        p.add_argument("--scope", help="working scope: only fragments that apply inside it "
                                       "(org=ORG[,repo=R][,persona=P][,session=S]); pins of this scope come first")
        p.add_argument("--pipeline", default="hybrid", help="hybrid (default), bm25 or dense")
        p.add_argument("--min-score", type=float, help="drop candidates whose fused score is below this")
        p.add_argument("--rerank", metavar="PATH", help="re-rank with a cross-encoder from this local folder")
        p.add_argument("--allow-secret", action="store_true",
                       help="also serve fragments stored with a secret-guard override (withheld by default)")
        p.add_argument("--kind", action="append", metavar="KIND",
                       help="only fragments of this kind (repeat for any of several)")
        p.add_argument("--tag", action="append", metavar="TAG", help="only fragments with this tag (repeat: any of)")
        p.add_argument("--owner", action="append", metavar="PRINCIPAL",
                       help="only fragments owned by this principal (repeat: any of)")
        p.add_argument("--updated-since", metavar="YYYY-MM-DD", help="only fragments updated on or after this date")
        p.add_argument("--dense-weight", type=float, metavar="W",
                       help="weight of the dense score in weighted hybrid fusion, 0..1 (default 0.7; 0.3 for a "
                            "query naming a rare identifier)")
        p.add_argument("--json", action="store_true", help="print the documented JSON instead of text")

    p = cmd("search", "Hybrid search over the fragments a principal can see.")
    common(p)
    p.add_argument("-k", type=int, default=10, help="number of hits (default 10)")
    p.add_argument("--lexical", default="bm25s", help="lexical backend: bm25s (default) or duckdb-fts")
    p.add_argument("--fusion", default="weighted", help="fusion: weighted (default) or rrf")
    p.add_argument("--dense", default="numpy", help="dense path: numpy (default, exact) or duckdb (exact SQL scan)")
    p.add_argument("--explain", action="store_true", help="show each hit's score breakdown and stage timings")
    p.add_argument("--min-confidence", type=float, metavar="C",
                   help="drop hits whose calibrated confidence is below C, 0..1 (default: keep all; pins stay)")

    p = cmd("context", "Compose budgeted, cited context for an agent: pins, ranked fragments, then 'avoid'.")
    common(p)
    p.add_argument("--budget", type=int, default=3200, help="token budget (default 3200, model tokenizer)")
    p.add_argument("--min-confidence", type=float, metavar="C",
                   help="leave out fragments whose calibrated confidence is below C, 0..1 (default: "
                        "confidence_floor of workbench.yaml, else the calibrated floor; pins always stay)")

    p = cmd("trace", "Show exactly what a search or context call served.")
    p.add_argument("id", help="a trace id (printed by search and context)")
    p.add_argument("--as", dest="principal", metavar="PRINCIPAL",
                   help="the principal who made the call (a trace is theirs alone)")
    p.add_argument("--json", action="store_true", help="print the documented JSON instead of text")

    p = cmd("eval", "Evaluate retrieval on the golden set or a BEIR directory (nDCG@10, recall@10/100, MRR@10).")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--golden", metavar="FILE", help="golden queries YAML (e.g. sample_corpus/golden.yaml)")
    src.add_argument("--beir", metavar="DIR", help="a BEIR-format directory (corpus.jsonl, queries.jsonl, qrels/)")
    p.add_argument("--split", default="test", help="BEIR qrels split (default test)")
    p.add_argument("--pipeline", nargs="+", metavar="NAME",
                   help="pipelines: bm25, fts, dense, hybrid, hybrid-rrf, hybrid-nopriors (default: bm25 dense hybrid)")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"), help="list queries whose top 3 differ between A and B")
    p.add_argument("--cache", metavar="FILE", help="BEIR embedding cache (default ~/.cache/workbench/eval.duckdb)")
    p.add_argument("--json", action="store_true", help="print the documented JSON instead of text")

    p = cmd("index", "Prepare retrieval now: citation authority, lexical index, embeddings of new text.")
    p.add_argument("--progress", action="store_true", help="report embedding progress on stderr")
    p.add_argument("--json", action="store_true", help="print the documented JSON instead of text")



def _progress(stage: str, done: int, total: int) -> None:
    print(f"{stage}: {done}/{total}", file=sys.stderr, flush=True)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else ""
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def _filters(args) -> dict:
    return {"kind": args.kind, "tag": args.tag, "owner": args.owner, "updated_since": args.updated_since,
            "dense_weight": args.dense_weight, "min_confidence": args.min_confidence}


@command("search")
def _search(args):
    with _open(args) as wb:
        result = wb.search(args.query, principal=args.principal, k=args.k, pipeline=args.pipeline,
                           lexical=args.lexical, fusion=args.fusion, dense=args.dense, scope=args.scope,
                           min_score=args.min_score, reranker=args.rerank, allow_secret=args.allow_secret,
                           **_filters(args))
    if args.json:
        emit_json(result.to_dict())
        return
    cols = ["#", "id", "kind", "title", "score", "conf"]
    extra = (["lexical", "dense", "coverage", "fused", "freshness", "authority", "pinned"] if args.explain
             else ["scope"])

    def row(h):
        title = h.fragment.title if not h.superseded_by else f"{h.fragment.title} [{h.superseded_label()}]"
        base = [str(h.rank), h.id, h.fragment.kind, title, _fmt(h.score), "…" if h.confidence is None else f"{h.confidence:.2f}"]
        return base + ([_fmt(h.scores.get(c)) for c in extra] if args.explain else [str(h.fragment.scope)])

    print(table(cols + extra, (row(h) for h in result.hits), max_width=48) if result.hits else "no hits")
    if result.avoid:
        print("\navoid (anti-patterns that match):")
        print(table(cols + extra, (row(h) for h in result.avoid), max_width=48))
    for h in [*result.hits, *result.avoid]:
        if h.superseded_by:
            print(f"\n{h.id} is {h.superseded_label()}")
    if args.explain:
        print("\nstages (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in result.stages_ms.items()))
        print("settings: " + ", ".join(f"{k}={v}" for k, v in result.settings.items() if k != "half_life_days"))
    print(f"\ntrace {result.trace_id or 'not stored (read-only workspace)'}")


@command("context")
def _context(args):
    with _open(args) as wb:
        result = wb.context(args.query, principal=args.principal, budget=args.budget, scope=args.scope,
                            pipeline=args.pipeline, min_score=args.min_score, reranker=args.rerank,
                            allow_secret=args.allow_secret, **_filters(args))
    if args.json:
        emit_json(result.to_dict())
        return
    print(result.text())
    print(f"\n<!-- {result.used_tokens}/{result.budget_tokens} tokens, {len(result.fragments)} fragments, "
          f"{len(result.avoid)} to avoid, {len(result.omitted)} omitted; trace {result.trace_id or 'not stored'} -->")


@command("trace")
def _trace(args):
    with _open(args) as wb:
        data = wb.trace(args.id, principal=args.principal)
    if args.json:
        emit_json(data)
        return
    print(f"trace {data['trace_id']} ({data['kind']}) at {data['created_at']} by {data['principal']}"
          + (f" in {data['scope']}" if data["scope"] else ""))
    print(f"query: {data['query']}")
    s = data["settings"]
    print(f"pipeline: {s.get('pipeline')} fusion={s.get('fusion')} lexical={s.get('lexical')} model={s.get('model')} "
          f"chunker={s.get('chunker')}")
    print(table(["section", "rank", "id", "version", "score", "title"],
                ([i["section"], str(i["rank"]), i["id"], str(i["version"]), _fmt(i["score"]), i["title"]]
                 for i in data["served"])))
    if data["hidden"]:
        print(f"({data['hidden']} served items are outside your scope and hidden)")


@command("eval")
def _eval(args):
    from ..service import Workbench

    compare = tuple(args.compare) if args.compare else None
    if args.golden:
        with _open(args) as wb:
            report = wb.eval_golden(args.golden, pipelines=args.pipeline, compare=compare)
    else:
        report = Workbench.eval_beir(args.beir, split=args.split, pipelines=args.pipeline, compare=compare,
                                     cache=args.cache, progress=_progress if sys.stderr.isatty() else None)
    if args.json:
        emit_json(report)
        return
    names = [n for n in report if n != "compare"]
    metrics = ["ndcg@10", "recall@10", "recall@100", "mrr@10", "queries"]
    if any(report[n].get("negatives") for n in names):
        metrics += ["answered", "abstention", "negatives"]
    print(table(["pipeline", *metrics], ([n, *(_fmt(report[n].get(m)) for m in metrics)] for n in names)))
    if "abstention" in metrics:
        print(f"\nabstention: share of the {report[names[0]]['negatives']} negative queries for which context "
              f"serves nothing (confidence floor {report[names[0]]['min_confidence']}); answered: share of the "
              "positive queries whose context keeps a relevant fragment")
    scopes = sorted({s for n in names for s in report[n].get("by_scope", {})})
    if scopes:
        print("\nby scope (nDCG@10 / recall@10):")
        print(table(["scope", *names], ([s, *(f"{report[n]['by_scope'][s]['ndcg@10']:.3f} / "
                                              f"{report[n]['by_scope'][s]['recall@10']:.3f}"
                                              if s in report[n]["by_scope"] else "-" for n in names)]
                                         for s in scopes)))
    if "compare" in report:
        a, b = compare
        print(f"\n{len(report['compare'])} queries whose top 3 differ between {a} and {b}:")
        for item in report["compare"]:
            print(f"- {item['query_id']}: {item['query']}\n    {a}: {', '.join(item[a])}\n    {b}: {', '.join(item[b])}")


@command("index")
def _index(args):
    with _open(args) as wb:
        data = wb.warm(progress=_progress if args.progress else None)
    if args.json:
        emit_json(data)
    else:
        print(f"index ready: {data['fragments']} fragments, {data['embedded']} newly embedded")


def add_bench_command(sub: argparse._SubParsersAction) -> None:
    help = "Benchmark search latency on a synthetic workspace, against the DuckDB-native path."
    p = sub.add_parser("bench", help=help, description=help)
    p.add_argument("--fragments", type=int, default=1000, metavar="N", help="synthetic fragments (default 1000)")
    p.add_argument("--queries", type=int, default=100, metavar="Q", help="queries to time (default 100)")
    p.add_argument("--keep", metavar="DIR", help="build the workspace in DIR and keep it")
    p.add_argument("--json", action="store_true", help="print the documented JSON instead of text")


@command("bench")
def _bench(args):
    from pathlib import Path

    from ..benchmark import run
    from ..errors import UserError

    if args.fragments < 10 or args.queries < 1:
        raise UserError("--fragments must be at least 10 and --queries at least 1")
    result = run(args.fragments, queries=args.queries, workdir=Path(args.keep) if args.keep else None,
                 progress=lambda msg: print(f"bench: {msg}", file=sys.stderr, flush=True))
    if args.json:
        emit_json(result)
        return
    print(f"{result['fragments']} fragments, {result['queries']} queries as 'agent' "
          f"(sees {result['visible_share']:.0%} of the workspace)")
    rows = [["search (end to end)", result["search_ms"]["p50"], result["search_ms"]["p95"],
             result["baseline_search_ms"]["p50"], result["baseline_search_ms"]["p95"]]]
    for stage, v in result["stages_ms"].items():
        b = result["baseline_stages_ms"][stage]
        rows.append([stage, v["p50"], v["p95"], b["p50"], b["p95"]])
    print(table(["stage (ms)", "p50", "p95", "duckdb p50", "duckdb p95"], ([str(c) for c in r] for r in rows)))
    print(f"\nspeed-up at p50 vs DuckDB-native: {result['speedup_p50']}x")
    for key in ("ingest_fragments_per_s", "reingest_unchanged_s", "index_build_s", "edit_rebuild_index_ms",
                "lexical_rebuild_ms", "peak_rss_mb"):
        print(f"{key}: {result[key]}")
    print(f"dense paths: {result['dense_paths']}")
    paint = dict(result["tui_first_paint_s"])
    flow = paint.pop("flow", None)
    print(f"TUI first paint: {paint}")
    if flow:
        print(f"TUI flow (first search after launch, open after 10 s idle, quit): {flow}")
