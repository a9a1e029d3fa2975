"""Commands for retrieval: search, context, trace, eval and index."""

from __future__ import annotations

import sys

import click

from .inputs import input_path
from .model_commands import OptionalPairOption
from .options import (FLOAT, INT, MultiValueOption, PRINCIPAL_DEFAULT, as_option, command, json_option,
                      open_workbench, scope_option, values)
from .render import emit_json, table

PIPELINES = ("hybrid", "bm25", "dense", "fts", "hybrid-rrf", "hybrid-nopriors", "dense-passages", "hybrid-passages",
             "hybrid-zscore", "hybrid-prf")


def _complete(choices: tuple[str, ...]):
    return lambda ctx, param, incomplete: [c for c in choices if c.startswith(incomplete)]


def retrieval_options(fn=None, *, query_required: bool = True):
    """The query and the options search and context share."""
    if fn is None:
        return lambda f: retrieval_options(f, query_required=query_required)
    for decorate in reversed([
        click.argument("query", required=query_required),
        as_option(f"the principal asking {PRINCIPAL_DEFAULT}"),
        scope_option("working scope: only fragments that apply inside it (org=ORG[,repo=R][,persona=P]"
                     "[,session=S]); pins of this scope come first"),
        click.option("--pipeline", default="hybrid", help="hybrid (default), bm25 or dense",
                     shell_complete=_complete(("hybrid", "bm25", "dense"))),
        click.option("--min-score", type=FLOAT, help="drop candidates whose fused score is below this"),
        click.option("--rerank", metavar="PATH", type=click.Path(),
                     help="re-rank with a cross-encoder from this local folder"),
        click.option("--allow-secret", is_flag=True,
                     help="also serve fragments stored with a secret-guard override (withheld by default)"),
        click.option("--kind", multiple=True, metavar="KIND", help="only fragments of this kind (repeat for any "
                     "of several)"),
        click.option("--tag", multiple=True, metavar="TAG", help="only fragments with this tag (repeat: any of)"),
        click.option("--owner", multiple=True, metavar="PRINCIPAL",
                     help="only fragments owned by this principal (repeat: any of)"),
        click.option("--updated-since", metavar="YYYY-MM-DD", help="only fragments updated on or after this date"),
        click.option("--dense-weight", type=FLOAT, metavar="W", help="weight of the dense score in weighted hybrid "
                     "fusion, 0..1 (default 0.7; 0.3 for a query naming a rare identifier)"),
        click.option("--persona", metavar="P", help="act in persona P (one of yours): its ranking weights "
                     "(ranking.personas in workbench.yaml) and its fragments preferred; never widens what you see"),
        json_option(),
    ]):
        fn = decorate(fn)
    return fn


def _filters(kind, tag, owner, updated_since, dense_weight, min_confidence, persona=None) -> dict:
    out = {"kind": values(kind), "tag": values(tag), "owner": values(owner), "updated_since": updated_since,
           "dense_weight": dense_weight, "min_confidence": min_confidence}
    if persona is not None:   # only when given: an older team server does not know the option
        out["persona"] = persona
    return out


def _progress(stage: str, done: int, total: int) -> None:
    print(f"{stage}: {done}/{total}", file=sys.stderr, flush=True)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else ""
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def work_options(fn):
    """--paths, --diff, --repo and --path-weight: what search and context take about the work at hand."""
    for decorate in reversed([
        click.option("--paths", cls=MultiValueOption, metavar="FILE...",
                     help="repository paths the work touches (space-separated or repeated): adds the fragments "
                          "that apply to, cite or were ingested from them; the query becomes optional"),
        click.option("--diff", "diff", metavar="RANGE|-",
                     help="the files a git range changed (git diff --name-status RANGE in --repo, e.g. "
                          "HEAD~1..HEAD), or '-': a unified diff on standard input"),
        click.option("--repo", metavar="DIR", type=click.Path(),
                     help="the git repository of --diff RANGE and of CODEOWNERS (default: the working folder)"),
        click.option("--path-weight", type=FLOAT, metavar="W",
                     help="weight of the path score against the query's relevance, 0..1 (default 0.6)"),
    ]):
        fn = decorate(fn)
    return fn


def _work(query, paths, diff, repo, path_weight) -> dict:
    """The core's work arguments from the options (a diff on stdin read here); UserError without a
    query and without paths or a diff."""
    from ..errors import UserError

    work: dict = {}
    if paths:
        work["paths"] = list(paths)
    if diff == "-":
        from .inputs import read_stdin

        work["diff"] = read_stdin()
    elif diff is not None:
        work["diff_range"] = diff
    if repo is not None:
        work["repo"] = repo
    if path_weight is not None:
        work["path_weight"] = path_weight
    if query is None and not ({"paths", "diff", "diff_range"} & set(work)):
        raise UserError("give a QUERY, --paths FILE... or --diff RANGE|- (or several)")
    return work


@command("search", "Hybrid search over the fragments a principal can see; with --paths or --diff, also what "
         "governs the files the work touches (each hit with its reason).",
         "workbench search \"charged twice when the client retries\" --as agent.nw-coder --explain\n"
         "workbench search --paths nwpay/api/idempotency.py --as agent.nw-coder\n"
         "workbench search \"retries\" --paths nwpay/http/retry.py --as marco.bianchi --json")
@retrieval_options(query_required=False)
@click.option("-k", "k", type=INT, default=10, help="number of hits (default 10)")
@click.option("--lexical", default="bm25", help="lexical backend: bm25 (default; bm25s is an alias) or duckdb-fts",
              shell_complete=_complete(("bm25", "duckdb-fts")))
@click.option("--fusion", default="weighted", help="fusion: weighted (default) or rrf",
              shell_complete=_complete(("weighted", "rrf")))
@click.option("--dense", default="numpy", help="dense path: numpy (default, exact), int8 (quantised scan, its "
              "top candidates re-scored exactly: for large workspaces) or duckdb (exact SQL scan)",
              shell_complete=_complete(("numpy", "int8", "duckdb")))
@click.option("--explain", is_flag=True, help="show each hit's score breakdown and stage timings")
@click.option("--min-confidence", type=FLOAT, metavar="C",
              help="drop hits whose calibrated confidence is below C, 0..1 (default: keep all; pins stay)")
@click.option("--include-archived", is_flag=True,
              help="also rank archived fragments (compressed observations, retired decisions), marked archived")
@work_options
def search(query, principal, scope, pipeline, min_score, rerank, allow_secret, kind, tag, owner, updated_since,
           dense_weight, persona, as_json, k, lexical, fusion, dense, explain, min_confidence, include_archived,
           paths, diff, repo, path_weight):
    work = _work(query, paths, diff, repo, path_weight)
    with open_workbench() as wb:
        result = wb.search(query, principal=principal, k=k, pipeline=pipeline, lexical=lexical, fusion=fusion,
                           dense=dense, scope=scope, min_score=min_score, reranker=rerank, allow_secret=allow_secret,
                           **({"include_archived": True} if include_archived else {}), **work,
                           **_filters(kind, tag, owner, updated_since, dense_weight, min_confidence, persona))
    if as_json:
        emit_json(result.to_dict())
        return
    cols = ["#", "id", "kind", "title", "score", "conf"]
    extra = ["lexical", "dense", "coverage", "fused", "freshness", "authority", "pinned"] if explain else ["scope"]
    if explain and result.settings.get("persona"):
        extra.append("persona")
    if explain and result.paths is not None:
        extra += ["path", "relevance"]
    if result.paths is not None:
        extra.append("why")

    def row(h):
        title = h.fragment.title if not h.superseded_by else f"{h.fragment.title} [{h.superseded_label()}]"
        title = title + " [archived]" if h.fragment.status == "archived" else title
        base = [str(h.rank), h.id, h.fragment.kind, title, _fmt(h.score),
                "…" if h.confidence is None else f"{h.confidence:.2f}"]
        where = str(h.fragment.scope) + (f" via {h.via}" if h.via else "")
        cells = [_fmt(h.scores.get(c)) for c in extra if c != "why"] if explain else [where]
        return base + cells + ([h.reason or "query"] if result.paths is not None else [])

    print(table(cols + extra, (row(h) for h in result.hits)) if result.hits else
          "no hits" + (f" (nothing in scope is linked to {len(result.paths)} paths)" if result.paths else ""))
    if result.avoid:
        print("\navoid (anti-patterns that match):")
        print(table(cols + extra, (row(h) for h in result.avoid)))
    for h in [*result.hits, *result.avoid]:
        if h.superseded_by:
            print(f"\n{h.id} is {h.superseded_label()}")
    if explain and result.stages_ms:
        print("\nstages (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in result.stages_ms.items()))
    if explain:
        print("settings: " + ", ".join(f"{k}={v}" for k, v in result.settings.items() if k != "half_life_days"))
    print(f"\ntrace {result.trace_id or 'not stored (read-only workspace)'}")


@command("context", "Compose budgeted, cited context for an agent: pins, ranked fragments, then 'avoid'; with "
         "--paths or --diff, also what governs the files the work touches (each with its reason).",
         "workbench context \"how do I roll back a bad deploy\" --as dan.kowalski --budget 1500\n"
         "workbench context --paths nwpay/api/idempotency.py --as agent.nw-coder\n"
         "git diff main | workbench context \"add a refund endpoint\" --diff - --as agent.nw-coder")
@retrieval_options(query_required=False)
@click.option("--budget", type=INT, default=3200, help="token budget (default 3200, model tokenizer)")
@click.option("--min-confidence", type=FLOAT, metavar="C",
              help="leave out fragments whose calibrated confidence is below C, 0..1 (default: confidence_floor "
                   "of workbench.yaml, else the calibrated floor; pins always stay)")
@work_options
def context(query, principal, scope, pipeline, min_score, rerank, allow_secret, kind, tag, owner, updated_since,
            dense_weight, persona, as_json, budget, min_confidence, paths, diff, repo, path_weight):
    work = _work(query, paths, diff, repo, path_weight)
    with open_workbench() as wb:
        result = wb.context(query, principal=principal, budget=budget, scope=scope, pipeline=pipeline,
                            min_score=min_score, reranker=rerank, allow_secret=allow_secret, **work,
                            **_filters(kind, tag, owner, updated_since, dense_weight, min_confidence, persona))
    if as_json:
        emit_json(result.to_dict())
        return
    print(result.text())
    note = f"; {result.note}" if result.note and result.note != result.notice else ""
    if result.paths is not None:
        chosen = [i for i in [*result.fragments, *result.avoid] if i.hit.reason]
        print(f"\n<!-- {len(result.paths)} paths: " + "; ".join(f"{i.hit.id}: {i.hit.reason}" for i in chosen)
              + (" -->" if chosen else "nothing in scope is linked to them -->"))
    print(f"\n<!-- {result.used_tokens}/{result.budget_tokens} tokens, {len(result.fragments)} fragments, "
          f"{len(result.avoid)} to avoid, {len(result.omitted)} omitted; trace {result.trace_id or 'not stored'}"
          f"{note} -->")


@command("trace", "Show exactly what a search or context call served (ID, or `last`: your latest call).",
         "workbench trace tr_20261130051123_6f1ea3e7 --as dan.kowalski\nworkbench trace last --as dan.kowalski")
@click.argument("id")
@as_option("the principal who made the call (a trace is theirs alone)")
@json_option()
def trace(id, principal, as_json):
    with open_workbench() as wb:
        data = wb.trace(wb.last_trace_id(principal=principal) if id == "last" else id, principal=principal)
    if as_json:
        emit_json(data)
        return
    print(f"trace {data['trace_id']} ({data['kind']}) at {data['created_at']} by {data['principal']}"
          + (f" in {data['scope']}" if data["scope"] else ""))
    print(f"query: {data['query']}")
    s = data["settings"]
    if s.get("paths"):
        print(f"paths: {', '.join(map(str, s['paths']))} (path weight {s.get('path_weight')})")
    print(f"pipeline: {s.get('pipeline')} fusion={s.get('fusion')} lexical={s.get('lexical')} model={s.get('model')} "
          f"chunker={s.get('chunker')}")
    print(table(["section", "rank", "id", "version", "score", "title"],
                ([i["section"], str(i["rank"]), i["id"], str(i["version"]), _fmt(i["score"]), i["title"]]
                 for i in data["served"])))
    for i in data["served"]:   # where an answer came from: archived sources, a compressed summary's sentences
        if i.get("archived"):
            print(f"{i['id']}@v{i['version']} is archived (served with --include-archived)")
        if i.get("reason"):
            print(f"{i['id']}@v{i['version']} why: {i['reason']}")
        for src in i.get("from", ()):
            print(f"{i['id']}@v{i['version']} from {src['source']}: {src['sentence']}")
    if data["hidden"]:
        print(f"({data['hidden']} served items are outside your scope and hidden)")


@command("eval", "Evaluate retrieval on the golden set or a BEIR directory (nDCG@10, recall@10/100, MRR@10).",
         "workbench eval --golden sample_corpus/golden.yaml --pipeline bm25 dense hybrid --compare bm25 hybrid")
@click.option("--golden", metavar="FILE", help="golden queries YAML (e.g. sample_corpus/golden.yaml; '-' for stdin)")
@click.option("--beir", metavar="DIR", help="a BEIR-format directory (corpus.jsonl, queries.jsonl, qrels/)")
@click.option("--split", default="test", help="BEIR qrels split (default test)")
@click.option("--pipeline", cls=MultiValueOption, metavar="NAME...", shell_complete=_complete(PIPELINES),
              help="pipelines, space-separated or repeated: bm25, fts, dense, hybrid, hybrid-rrf, hybrid-nopriors, "
                   "dense-passages, hybrid-passages, hybrid-zscore, hybrid-prf "
                   "(default: bm25 dense hybrid)")
@click.option("--compare", nargs=2, metavar="A B", help="list queries whose top 3 differ between A and B")
@click.option("--cache", metavar="FILE|URL", help="BEIR embedding cache: a DuckDB file (default ~/.cache/workbench/eval.duckdb) "
              "or a postgresql:// URL (the same figures either way)")
@click.option("--abstention", is_flag=True, help="with --beir: workspaces of several sizes where each query is "
              "answerable (its documents kept) or not (removed); answered and abstained rates per size, the prior "
              "against the legacy model")
@click.option("--sizes", metavar="N,N,...", help="with --abstention: workspace sizes in documents, 'all' for the "
              "whole set (default 20,200,2000,all)")
@click.option("--by", "by", type=click.Choice(["persona"]), help="with --golden: also the metrics per persona the "
              "queries are asked in (persona: in golden.yaml, else an agent's own; '-': none)")
@click.option("--compare-models", "compare_models", cls=OptionalPairOption, is_flag=False, flag_value="*",
              metavar="[A B]", help="the golden (or BEIR) figures of two embedding models side by side (default: the "
              "serving model and its shadow; see `workbench model`)")
@json_option()
def eval_(golden, beir, split, pipeline, compare, cache, abstention, sizes, by, compare_models, as_json):
    from ..service import Workbench

    if golden and beir:
        raise click.UsageError("argument --beir: not allowed with argument --golden")
    if not golden and not beir:
        raise click.UsageError("one of the arguments --golden --beir is required")
    if by and not golden:
        raise click.UsageError("--by needs --golden")
    if (abstention or sizes) and not beir:
        raise click.UsageError("--abstention and --sizes need --beir")
    if sizes and not abstention:
        raise click.UsageError("--sizes needs --abstention")
    if abstention:
        report = Workbench.eval_beir(beir, split=split, cache=cache, abstention=True, sizes=_sizes(sizes),
                                     progress=_progress if sys.stderr.isatty() else None)
        if as_json:
            emit_json(report)
        else:
            _print_abstention(report["abstention"])
        return
    pipelines = values(pipeline)
    compare = tuple(compare) if compare else None
    if compare_models is not None:
        from .model_commands import print_comparison

        pair = None if compare_models == "*" else compare_models.split()
        with open_workbench() as wb:
            if golden:
                with input_path(golden, name="golden.yaml") as golden_file:
                    report = wb.compare_models(golden_file, pair, pipelines=pipelines)
            else:
                report = wb.compare_models_beir(beir, pair, split=split, pipelines=pipelines, cache=cache,
                                                progress=_progress if sys.stderr.isatty() else None)
        emit_json(report) if as_json else print_comparison(report)
        return
    if golden:
        with input_path(golden, name="golden.yaml") as golden_file, open_workbench() as wb:
            report = wb.eval_golden(golden_file, pipelines=pipelines, compare=compare)
    else:
        report = Workbench.eval_beir(beir, split=split, pipelines=pipelines, compare=compare, cache=cache,
                                     progress=_progress if sys.stderr.isatty() else None)
    if as_json:
        emit_json(report)
        return
    _print_eval(report, compare)
    if by == "persona":
        _print_by_persona(report)


def _print_by_persona(report: dict) -> None:
    names = [n for n in report if isinstance(report[n], dict) and "by_persona" in report[n]]  # the pipelines
    personas = sorted({p for n in names for p in report[n].get("by_persona", {})}, key=lambda p: (p == "-", p))
    print("\nby persona (nDCG@10 / recall@10, queries; '-': asked in no persona):")
    print(table(["persona", *names, "queries"],
                ([p, *(f"{report[n]['by_persona'][p]['ndcg@10']:.3f} / {report[n]['by_persona'][p]['recall@10']:.3f}"
                       if p in report[n]["by_persona"] else "-" for n in names),
                  str(report[names[0]]["by_persona"].get(p, {}).get("queries", 0))] for p in personas)))


def _sizes(text: str | None) -> list[int | None] | None:
    if not text:
        return None
    out: list[int | None] = []
    for part in text.replace(",", " ").split():
        if part.lower() == "all":
            out.append(None)
        elif part.isdigit() and int(part) >= 2:
            out.append(int(part))
        else:
            raise click.UsageError(f"--sizes: {part!r} is not a number of documents (at least 2) or 'all'")
    return out or None


def _print_abstention(report: dict) -> None:
    models = [k for k in next(iter(report.values())) if isinstance(next(iter(report.values()))[k], dict)]
    head = ["size", "docs", "workspaces", "answerable", "unanswerable", "recall@10"]
    for m in models:
        head += [f"{m} answered", f"{m} w/ relevant", f"{m} abstained"]
    rows = []
    for label, r in report.items():
        row = [label, r["documents"], r["workspaces"], r["answerable"], r["unanswerable"], _fmt(r["recall@10"])]
        for m in models:
            row += [_fmt(r[m]["answered"]), _fmt(r[m]["answered_relevant"]), _fmt(r[m]["abstained"])]
        rows.append(row)
    print(table(head, rows))
    floors = ", ".join(f"{m} {next(iter(report.values()))[m]['floor']}" for m in models)
    print(f"\nanswered: share of answerable queries for which context serves something (w/ relevant: a relevant "
          f"document); abstained: share of unanswerable queries for which it serves nothing. Floors: {floors}")


def _print_eval(report: dict, compare: tuple[str, str] | None) -> None:
    names = [n for n in report if n not in ("compare", "paths", "archived")]
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
    if "paths" in report:
        p = report["paths"]
        print(f"\npaths ({p['queries']} golden entries with paths:, {p.get('with_query', 0)} with a query too; "
              f"context --paths, path weight {p.get('path_weight')}): recall@5 {_fmt(p.get('recall@5'))}, "
              f"recall@10 {_fmt(p.get('recall@10'))}, MRR@10 {_fmt(p.get('mrr@10'))}, hit@5 {_fmt(p.get('hit@5'))}")
    if "archived" in report:   # golden entries marked archived: true, ranked with --include-archived
        arch = report["archived"]
        print(f"\narchived ({arch[names[0]]['queries']} golden entries whose answer is archived; search "
              "--include-archived): " + ", ".join(f"{n} nDCG@10 {_fmt(arch[n].get('ndcg@10'))} / recall@10 "
                                                  f"{_fmt(arch[n].get('recall@10'))}" for n in names if n in arch))
    if "compare" in report:
        a, b = compare
        print(f"\n{len(report['compare'])} queries whose top 3 differ between {a} and {b}:")
        for item in report["compare"]:
            print(f"- {item['query_id']}: {item['query']}\n    {a}: {', '.join(item[a])}\n"
                  f"    {b}: {', '.join(item[b])}")


@command("index", "Prepare retrieval now: citation authority, lexical index, embeddings of new text.",
         "workbench index --progress")
@click.option("--progress", is_flag=True, help="report embedding progress on stderr")
@json_option()
def index(progress, as_json):
    with open_workbench() as wb:
        data = wb.warm(progress=_progress if progress else None)
    if as_json:
        emit_json(data)
    else:
        print(f"index ready: {data['fragments']} fragments, {data['embedded']} newly embedded")


COMMANDS = [search, context, trace, eval_, index]
